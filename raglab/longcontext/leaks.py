"""What a prompt shows a reader that they may not read.

A model can quote anything in its prompt. Paste the whole corpus for a reader of one tenant
and every other tenant's documents, and every group document the reader is not in, are one
question away. `pasted_whole_corpus` is that mistake, named for it (the notebook shows its
cost); `raglab.longcontext.whole_corpus.long_context_sources` is the right way, and
`leak_count` measures either.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from raglab.ingest.sentences import candidate_sentences
from raglab.longcontext.whole_corpus import document_hit
from raglab.records import Answer, Document, Hit, Principal
from raglab.store.access import can_read


@dataclass(frozen=True, slots=True)
class LeakCount:
    """What a reader was shown but may not read: documents in the prompt, their quotable
    sentences, and the sources the answer cited among them."""

    documents: int
    sentences: int
    cited: int


def pasted_whole_corpus(documents: Iterable[Document]) -> tuple[Hit, ...]:
    """Every document, whoever asks: the leak. Never answer a reader from this."""
    return tuple(document_hit(doc) for doc in sorted(documents, key=lambda d: d.id))


def forbidden(sources: Iterable[Hit], principal: Principal) -> tuple[Hit, ...]:
    """The sources `principal` may not read."""
    return tuple(hit for hit in sources if not can_read(principal, hit.chunk))


def leak_count(answer: Answer, principal: Principal) -> LeakCount:
    """How much of what `answer` was given (and cited) `principal` may not read."""
    shown = forbidden(answer.retrieved, principal)
    cited = {c.hit.chunk.doc_id for c in answer.citations if not can_read(principal, c.hit.chunk)}
    return LeakCount(len(shown), len(candidate_sentences(shown)), len(cited))
