"""Retrieval as tools an agent calls: `search`, `keyword`, `read`, `documents`.

Every tool runs as the asker: the `Toolbox` is built with the principal and no tool takes
one as an argument, so neither the planner nor a model can ask as anyone else. A document
the asker may not read and a document that does not exist give the same empty answer, so
`read` cannot even tell them whether another tenant's document exists.

Each call is one step and costs the tokens of the text it returns (4 characters a token,
`raglab.embed.tokens.approx_tokens`); `Budget` bounds both, and the loop stops when either
is spent.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from raglab.embed.tokens import approx_tokens
from raglab.records import Chunk, Hit, Principal
from raglab.validation import check_int

if TYPE_CHECKING:
    from raglab.pipeline import Index

TOOLS = ("search", "keyword", "read", "documents")
"""What an agent may call; `Action.tool` may also be "stop"."""

MAX_K = 20
"""The most hits one call returns: a planner cannot read the whole index in one step."""

MAX_QUERY_CHARS = 500


@dataclass(frozen=True, slots=True)
class Budget:
    """How much one run may spend: tool calls (`steps`) and tokens of returned text."""

    steps: int = 4
    tokens: int = 4000

    def __post_init__(self) -> None:
        check_int("steps", self.steps, minimum=1)
        check_int("tokens", self.tokens, minimum=1)


@dataclass(frozen=True, slots=True)
class Action:
    """The planner's next move: a tool and its arguments, or "stop"; `why` is shown in
    the trace. There is no principal here: the toolbox already knows who asks."""

    tool: str
    query: str = ""
    doc_id: str = ""
    k: int = 5
    why: str = ""

    def __post_init__(self) -> None:
        if self.tool not in (*TOOLS, "stop"):
            raise ValueError(f"unknown tool {self.tool!r}; choose from: {', '.join(TOOLS)}, stop")
        check_int("k", self.k, minimum=1, maximum=MAX_K)

    @property
    def argument(self) -> str:
        """What the call was about, as the trace shows it."""
        return self.doc_id if self.tool == "read" else self.query


@dataclass
class Toolbox:
    """The tools of one index, for one asker. `method` ranks `search` (as `raglab.ask` does)."""

    index: Index
    principal: Principal
    method: str = "hybrid"

    def call(self, action: Action) -> list[Hit]:
        """Run one action's tool; what it returns as hits (a read's chunks score 1.0)."""
        if action.tool == "search":
            return self.search(action.query, action.k)
        if action.tool == "keyword":
            return self.keyword(action.query, action.k)
        if action.tool == "read":
            return [Hit(chunk, 1.0) for chunk in self.read(action.doc_id)]
        if action.tool == "documents":
            return []
        raise ValueError(f"{action.tool!r} is not a tool call")

    def search(self, query: str, k: int = 5) -> list[Hit]:
        """The query path of `raglab.ask` (hybrid by default) over what the asker may read."""
        query = _checked_query(query)
        return self.index.search(query, self.principal, k=min(k, MAX_K), method=self.method)

    def keyword(self, query: str, k: int = 5) -> list[Hit]:
        """BM25 alone: exact words and codes (`E-402`, `GX-PA24`) over what the asker may read."""
        query = _checked_query(query)
        return self.index.search(query, self.principal, k=min(k, MAX_K), method="bm25")

    def read(self, doc_id: str) -> list[Chunk]:
        """Every chunk of `doc_id` the asker may read, in order; [] for a document they may
        not read or that does not exist (the same answer, so it reveals nothing)."""
        return [c for c in self.index.store.chunks(self.principal) if c.doc_id == doc_id]

    def documents(self) -> list[tuple[str, str]]:
        """(id, title) of every document the asker may read, by id."""
        titles = {c.doc_id: c.title for c in self.index.store.chunks(self.principal)}
        return sorted(titles.items())


def _checked_query(query: str) -> str:
    if not isinstance(query, str) or not query.strip():
        raise ValueError("a search needs a non-empty query")
    return query[:MAX_QUERY_CHARS]


def cost(hits: list[Hit]) -> int:
    """The tokens a tool's result costs: its text, 4 characters a token."""
    return sum(approx_tokens(hit.chunk.text) for hit in hits)
