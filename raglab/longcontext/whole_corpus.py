"""The long prompt: every document a principal may read, whole, in one prompt.

What you paste is what the model can see. So the long prompt is built from the same two
visibility rules as retrieval (ARCHITECTURE.md, "The two visibility rules"): the documents
`principal` may read (`raglab.store.access.can_read`), without those a newer readable version
supersedes (`raglab.store.versions`). Nothing else can enter it: `long_context_sources` is
the only door, and `ask_long_context` takes the documents and the principal, never sources.

Each document is one source, cited as a whole (`[n]` is a document). The prompt is counted in
tokens (MiniLM's WordPiece by default, `raglab.embed.tokens`) and refused over `max_tokens`
with a message that says by how much: a long prompt is never cut silently, since the part
cut off might be the answer.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from raglab.embed.embedders import embedder as make_embedder
from raglab.embed.tokens import TokenCount, wordpiece_counter
from raglab.generate.extractive import ExtractiveGenerator
from raglab.generate.generation import Generator
from raglab.generate.prompting import Prompt, build_prompt
from raglab.pipeline import answer_from
from raglab.records import Answer, Chunk, Document, Hit, Principal
from raglab.store.access import can_read
from raglab.store.versions import hidden_documents, supersession
from raglab.validation import check_int

DEFAULT_MAX_TOKENS = 200_000
"""The seed's rule of thumb: a knowledge base under about 200,000 tokens can often go
straight into the prompt. A model's own context window is the real limit: set yours."""


class OverBudget(ValueError):
    """The long prompt has more tokens than the budget allows."""


@dataclass(frozen=True, slots=True)
class LongPrompt:
    """A long prompt and its size in tokens (system and user messages together)."""

    prompt: Prompt
    tokens: int


def readable_documents(documents: Iterable[Document], principal: Principal) -> tuple[Document, ...]:
    """The documents `principal` may read and is answered from, sorted by id.

    Access first, then versions: a document superseded by one the principal may read is
    left out, as retrieval leaves it out (`raglab.store.eligibility`).
    """
    documents = tuple(documents)
    readable = [doc for doc in documents if can_read(principal, doc)]
    hidden = hidden_documents(supersession(documents), readable={doc.id for doc in readable})
    return tuple(sorted((doc for doc in readable if doc.id not in hidden), key=lambda d: d.id))


def document_hit(doc: Document) -> Hit:
    """A whole document as one source of a prompt (chunk 0, all of its text)."""
    chunk = Chunk(
        doc.id,
        0,
        doc.text,
        0,
        len(doc.text),
        title=doc.title,
        tenant=doc.tenant,
        groups=doc.groups,
        doc_version=doc.version,
    )
    return Hit(chunk, 1.0)  # nothing was ranked: every source counts the same


def long_context_sources(documents: Iterable[Document], principal: Principal) -> tuple[Hit, ...]:
    """Every document `principal` may read, whole, one source each, in document-id order."""
    return tuple(document_hit(doc) for doc in readable_documents(documents, principal))


def long_context_prompt(
    question: str,
    sources: Sequence[Hit],
    *,
    max_tokens: int = DEFAULT_MAX_TOKENS,
    count_tokens: TokenCount | None = None,
) -> LongPrompt:
    """The prompt holding all of `sources`, in their order, and its token count.

    Raises `OverBudget` when the prompt (instructions, sources, question) has more than
    `max_tokens` tokens: nothing is dropped to make it fit.
    """
    max_tokens = check_int("max_tokens", max_tokens, minimum=1)
    count = count_tokens or wordpiece_counter()
    room = max(1, sum(len(hit.chunk.text) for hit in sources))  # every source fits whole
    prompt = build_prompt(question, sources, max_chars=room)
    tokens = count(prompt.system) + count(prompt.user)
    if tokens > max_tokens:
        raise OverBudget(
            f"the long prompt is {tokens:,} tokens ({len(sources)} documents), over the "
            f"budget of max_tokens={max_tokens:,} by {tokens - max_tokens:,}: retrieve the "
            f"relevant chunks instead (raglab.ask), or raise the budget if your model's "
            f"context window allows"
        )
    return LongPrompt(prompt, tokens)


def default_generator() -> ExtractiveGenerator:
    """The offline answerer, scoring sentences with the hashing embedder (ask's default)."""
    return ExtractiveGenerator(embedder=make_embedder("hashing"))


def ask_long_context(
    question: str,
    documents: Iterable[Document],
    principal: Principal,
    *,
    max_tokens: int = DEFAULT_MAX_TOKENS,
    generator: Generator | None = None,
    count_tokens: TokenCount | None = None,
) -> Answer:
    """Answer `question` for `principal` from every document they may read, in one prompt.

    The same `Answer` as `raglab.ask`: `retrieved` holds every pasted document (source
    `[n]` is `retrieved[n - 1]`), and each `[n]` is verified against them. `OverBudget`
    when the readable corpus does not fit `max_tokens`.
    """
    sources = long_context_sources(documents, principal)
    long = long_context_prompt(question, sources, max_tokens=max_tokens, count_tokens=count_tokens)
    return answer_long_prompt(long, generator or default_generator())


def answer_long_prompt(long: LongPrompt, generator: Generator) -> Answer:
    """The answer to a long prompt already built (and budget-checked), citations verified."""
    prompt = long.prompt
    room = max(1, sum(len(hit.chunk.text) for hit in prompt.sources))
    return answer_from(prompt.question, prompt.sources, generator, max_chars=room)
