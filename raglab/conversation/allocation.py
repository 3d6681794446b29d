"""Documents and history in one prompt, each in its own labelled block with its own budget.

The two stores are searched apart (`raglab.conversation.chat`) with separate top-k, and
placed apart here with separate budgets, so a long conversation can never push a
document chunk out of the prompt: the documents' block is filled exactly as `ask` fills
it (`raglab.generate.prompting.fit_budget`), then the history's block from its own
allowance. History is context for the question, never a source: it carries no `[n]`,
so an answer can cite only documents (a `[n]` aimed at history is an invalid citation),
and both blocks are closed by the same unguessable code as the sources
(`raglab.generate.prompting.make_boundary`).

One shared top-k is the mistake this avoids: past turns repeat the question's words,
so they outrank the documents that answer it (`shared_top_k` measures it:
`benchmarks/bench_conversation.py`).
"""

from __future__ import annotations

from collections.abc import Sequence

from raglab.conversation.turns import TurnHit
from raglab.generate.prompting import (
    DEFAULT_MAX_CHARS,
    Prompt,
    check_question,
    fit_budget,
    make_boundary,
    system_message,
    user_message,
)
from raglab.records import Chunk, Hit
from raglab.validation import check_int

DEFAULT_HISTORY_K = 2
"""Past turns searched per question: the last topic, and one more."""

DEFAULT_HISTORY_CHARS = 1500
"""The history's own allowance, in characters, beside the documents' DEFAULT_MAX_CHARS."""

HISTORY_LABEL = "Conversation so far (context for the question; not a source, never cite it):"
SOURCES_LABEL = "Sources (cite these by number):"

HISTORY_RULE = (
    "5. Earlier turns of the conversation sit between <history-{code} ...> and "
    "</history-{code}>. They only tell you what the question refers to: they are not "
    "sources. Never cite them and never take a fact from them."
)


def fit_history(hits: Sequence[TurnHit], max_chars: int) -> tuple[TurnHit, ...]:
    """The best turns, in rank order, whose texts fit together in `max_chars` characters
    (a turn that does not fit ends the block: a turn is never cut)."""
    check_int("history_chars", max_chars, minimum=1)
    kept: list[TurnHit] = []
    used = 0
    for hit in hits:
        size = len(hit.turn.text)
        if used + size > max_chars:
            break
        kept.append(hit)
        used += size
    return tuple(kept)


def history_block(hit: TurnHit, code: str) -> str:
    """One past turn as a delimited block, labelled with its place in its conversation."""
    turn = hit.turn
    return (
        f'<history-{code} conversation="{turn.conversation}" turn="{turn.n}">\n'
        f"{turn.text}\n</history-{code}>"
    )


def as_text_hit(hit: TurnHit) -> Hit:
    """A turn dressed as a hit, only so `make_boundary` sees its text (never a source)."""
    text = hit.turn.text
    return Hit(Chunk(f"history:{hit.turn.conversation}:{hit.turn.n}", 0, text, 0, len(text)), 0.0)


def build_conversation_prompt(
    question: str,
    documents: Sequence[Hit],
    history: Sequence[TurnHit],
    *,
    max_chars: int = DEFAULT_MAX_CHARS,
    history_chars: int = DEFAULT_HISTORY_CHARS,
) -> Prompt:
    """The prompt for `question`: a labelled history block, then the labelled sources.

    `documents` fill `max_chars` as in `build_prompt` (the same documents make it in,
    whatever the history); `history` fills its own `history_chars`. `Prompt.sources` holds
    the documents alone: source `[n]` is `sources[n - 1]`, and no turn has a number.

    >>> from raglab.conversation.turns import Turn
    >>> doc = Hit(Chunk("hr/leave.md", 0, "Staff get 25 days of leave.", 0, 27), 0.9)
    >>> past = TurnHit(Turn("1", 1, "Leave?", "How much leave?", "25 days [1]."), 0.8)
    >>> prompt = build_conversation_prompt("Can they be carried over?", [doc], [past])
    >>> prompt.sources == (doc,)
    True
    >>> print(prompt.user.replace(prompt.boundary, "CODE"))
    Conversation so far (context for the question; not a source, never cite it):
    <history-CODE conversation="1" turn="1">
    Q: How much leave?
    A: 25 days [1].
    </history-CODE>
    <BLANKLINE>
    Sources (cite these by number):
    <source-CODE id="1" doc="hr/leave.md">
    Staff get 25 days of leave.
    </source-CODE>
    <BLANKLINE>
    Question: Can they be carried over?
    """
    check_question(question)
    sources = fit_budget(documents, max_chars)
    turns = fit_history(history, history_chars)
    code = make_boundary(question, [*sources, *(as_text_hit(t) for t in turns)])
    system = system_message(code) + ("\n" + HISTORY_RULE.format(code=code) if turns else "")
    return Prompt(
        question, sources, system, conversation_message(question, sources, turns, code), code
    )


def conversation_message(
    question: str, sources: Sequence[Hit], turns: Sequence[TurnHit], code: str
) -> str:
    """The user message: the labelled history block (if any turn fits), then the labelled
    sources and the question (`raglab.generate.prompting.user_message`)."""
    user = f"{SOURCES_LABEL}\n{user_message(question, sources, code)}"
    if not turns:
        return user
    blocks = "\n".join(history_block(t, code) for t in turns)
    return f"{HISTORY_LABEL}\n{blocks}\n\n{user}"


def shared_top_k(
    documents: Sequence[Hit], history: Sequence[TurnHit], k: int
) -> list[Hit | TurnHit]:
    """The mistake, for measuring it: documents and turns in one ranking by score, cut at `k`
    (ties to documents). Both lists must carry scores of one kind (the same cosine)."""
    check_int("k", k, minimum=1)
    merged: list[tuple[float, int, int, Hit | TurnHit]] = [
        *((-h.score, 0, i, h) for i, h in enumerate(documents)),
        *((-t.score, 1, i, t) for i, t in enumerate(history)),
    ]
    return [item for *_, item in sorted(merged, key=lambda m: m[:3])[:k]]


def displaced(documents: Sequence[Hit], shared: Sequence[Hit | TurnHit], k: int) -> int:
    """How many of the documents' own top `k` a shared ranking left out."""
    kept = {id(item) for item in shared}
    return sum(1 for hit in documents[:k] if id(hit) not in kept)
