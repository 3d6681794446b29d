"""Reading a store whose chunks and vectors fit in memory: one snapshot per state of the store.

The memory store always reads this way, the SQLite store inside a write and for
`chunks()` and `vectors()`. Search filters first and scores second: only the rows the
principal is answered from (`raglab.store.eligibility`: access, then versions) are taken
out of the matrix and scored, so a chunk the principal may not read (or a superseded
version) can neither be returned nor push another chunk out of the top-k.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from raglab.records import Chunk, DocRecord, Hit, Partition, Principal
from raglab.retrieve._fast import top_k  # the reference's answer, faster
from raglab.store.eligibility import Eligibility
from raglab.store.errors import DimensionMismatch
from raglab.store.keyword import ChunkKeywords
from raglab.validation import check_int


class Snapshot:
    """A store's chunks and vectors as one matrix, rebuilt after every write.

    Who is answered from which rows is its `eligibility` (access, then versions); keyword
    search and the asker's words come from its `keywords`. Searching one principal's rows
    means copying them out of the matrix (`matrix[rows]`). The copies are kept per asker
    while their rows add up to at most one matrix, so memory stays bounded at twice the
    vectors, and a principal who may read every row uses the matrix itself.
    """

    __slots__ = ("_blocks", "eligibility", "keywords", "matrix")

    def __init__(
        self,
        chunks: tuple[Chunk, ...],
        matrix: np.ndarray,
        superseded: Mapping[str, Sequence[str]] | None,
        documents: Mapping[str, DocRecord],
    ) -> None:
        self.matrix = matrix
        self.eligibility = Eligibility(chunks, superseded, documents)
        self.keywords = ChunkKeywords(self.eligibility)
        # by `eligibility.key` and partition
        self._blocks: dict[tuple[str, tuple[str, ...], Partition | None], np.ndarray] = {}

    @property
    def chunks(self) -> Sequence[Chunk]:
        return self.eligibility.chunks

    def eligible(
        self, principal: Principal, part: Partition | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """The rows `principal` is answered from (those of access partition `part` alone,
        if given) and their vectors (the only ones scored)."""
        if part is None:
            rows = self.eligibility.rows(principal)
        else:
            rows = self.eligibility.rows_in(principal, part)
        if len(rows) == len(self.chunks):
            return rows, self.matrix
        key = (*self.eligibility.key(principal), part)
        if key not in self._blocks:
            self._make_room(len(rows))
            self._blocks[key] = self.matrix[rows]
        return rows, self._blocks[key]

    def _make_room(self, n_rows: int) -> None:
        """Drop the oldest copies until `n_rows` more fit in one matrix's worth of rows."""
        while self._blocks and sum(map(len, self._blocks.values())) + n_rows > len(self.chunks):
            del self._blocks[next(iter(self._blocks))]


def _search(
    snapshot: Snapshot,
    dim: int | None,
    query: np.ndarray,
    principal: Principal,
    k: int,
    min_score: float | None,
    part: Partition | None,
) -> list[Hit]:
    """Filter, then score: cosine of `query` with the eligible rows only (of partition
    `part` alone, if given), top-k, best first."""
    k = check_int("k", k, minimum=1)
    q = checked_query(query, dim)
    rows, block = snapshot.eligible(principal, part)
    if not len(rows):
        return []
    # Rows are stored unit length, so cosine is one dot product per eligible row; ties
    # go to the lower position, which is store order because `rows` is ascending.
    positions, scores = top_k(q, block, k, normalised=True)
    hits = [Hit(snapshot.chunks[rows[p]], float(s)) for p, s in zip(positions, scores)]
    return hits if min_score is None else [hit for hit in hits if hit.score >= min_score]


def checked_query(query: np.ndarray, dim: int | None) -> np.ndarray:
    q = np.asarray(query, dtype=np.float32)
    if q.ndim != 1:
        raise ValueError(f"query must be one vector (a 1-D array), got shape {q.shape}")
    if dim is not None and q.shape[0] != dim:
        raise DimensionMismatch(
            f"query has dimension {q.shape[0]} but the store holds vectors of dimension {dim}"
        )
    if not np.isfinite(q).all():
        raise ValueError("query contains NaN or infinity")
    return q


class SnapshotReads:
    """Reading, shared by both stores: each keeps a `Snapshot` of its chunks and vectors."""

    _dim: int | None

    def _current(self) -> Snapshot:
        raise NotImplementedError  # each store builds its snapshot its own way

    def chunks(self, principal: Principal | None = None) -> list[Chunk]:
        snapshot = self._current()
        if principal is None:
            return list(snapshot.chunks)
        return [snapshot.chunks[row] for row in snapshot.eligibility.rows(principal)]

    def vectors(self) -> np.ndarray:
        return self._current().matrix

    def search(
        self,
        query: np.ndarray,
        principal: Principal,
        k: int,
        *,
        min_score: float | None = None,
        partition: Partition | None = None,
    ) -> list[Hit]:
        return _search(self._current(), self._dim, query, principal, k, min_score, partition)

    def keyword_search(
        self, question: str, principal: Principal, k: int, *, min_score: float = 0.0
    ) -> list[Hit]:
        k = check_int("k", k, minimum=1)
        return self._current().keywords.search(question, principal, k, min_score=min_score)

    def known_stems(self, principal: Principal, stems: Iterable[str]) -> frozenset[str]:
        return self._current().keywords.known_stems(principal, stems)
