"""Vector maths for dense retrieval: normalise, cosine, and an exact top-k.

Cosine similarity compares directions, not lengths:

    cosine(a, b) = a · b / (|a| |b|)

Scale every vector to length 1 (a *unit* vector) and the lengths are 1: cosine is a plain
dot product. So `top_k` normalises the query and the rows, scores every row with one dot
product each, and keeps the k best. The stores keep unit rows for exactly this reason, and
say so with `normalised=True` (or a `UnitMatrix`): their rows need no normalising again.

Ranking rule, used by every ranked list in raglab: higher score first, and equal scores
in the order of the lower index. `select_top_k(scores, k)` applies it to any scores.

This module is the reference, written to be read. The engine's stores search with
`raglab.retrieve._fast.top_k` instead: the same arguments and the same answer (tested on
random inputs), computing far fewer exact scores.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
from numpy.typing import ArrayLike

from raglab.validation import check_int

__all__ = [
    "TopK",
    "UnitMatrix",
    "cosine",
    "exact_scores",
    "normalise",
    "select_top_k",
    "top_k",
]


class TopK(NamedTuple):
    """The k best rows, best first: `indices` (int64) and their `scores` (float32).

    It unpacks like the pair it is: `indices, scores = top_k(query, vectors, k)`.
    For a 2-D block of queries both are 2-D, one row per query.
    """

    indices: np.ndarray
    scores: np.ndarray


def normalise(vectors: ArrayLike) -> np.ndarray:
    """Scale each row (or a single 1-D vector) to length 1, as float32.

    A zero row stays zero: it has no direction, and dividing by 0 would give NaN.

    >>> normalise([[3.0, 4.0], [0.0, 0.0]])
    array([[0.6, 0.8],
           [0. , 0. ]], dtype=float32)
    >>> normalise([0.0, 2.0])
    array([0., 1.], dtype=float32)
    """
    array = np.array(vectors, dtype=np.float32)  # a copy: the caller's array is untouched
    if array.ndim not in (1, 2):
        raise ValueError(f"vectors must be 1-D or 2-D (got an array of shape {array.shape})")
    rows = array.reshape(1, -1) if array.ndim == 1 else array
    lengths = row_lengths(rows)
    np.divide(rows, lengths[:, None], out=rows, where=lengths[:, None] > 0)
    return array


def row_lengths(rows: np.ndarray) -> np.ndarray:
    """The Euclidean length of each row of a 2-D array, in float64.

    float64, because the square of a very small float32 vanishes (1e-30² is 0 in float32)
    and the square of a very large one overflows (1e30² is infinity).
    """
    # einsum forms each row's sum of squares without a temporary matrix of squares.
    lengths: np.ndarray = np.sqrt(np.einsum("ij,ij->i", rows, rows, dtype=np.float64))
    return lengths


def cosine(a: ArrayLike, b: ArrayLike) -> float:
    """Cosine similarity of two vectors of the same length, in [-1, 1].

    0.0 when either vector is all zeros (no direction, so no similarity).
    Computed in float64.

    >>> cosine([1, 0], [1, 1])
    0.7071067811865475
    >>> cosine([1, 2], [0, 0])
    0.0
    """
    x = np.asarray(a, dtype=np.float64)
    y = np.asarray(b, dtype=np.float64)
    if x.ndim != 1 or y.ndim != 1:
        raise ValueError(f"cosine needs two 1-D vectors (got shapes {x.shape} and {y.shape})")
    if x.size == 0 or y.size == 0:
        raise ValueError(f"cosine needs non-empty vectors (got lengths {x.size} and {y.size})")
    if x.size != y.size:
        raise ValueError(
            f"cosine needs vectors of equal length (got lengths {x.size} and {y.size})"
        )
    norms = float(np.linalg.norm(x)) * float(np.linalg.norm(y))
    if norms == 0.0:
        return 0.0
    # Rounding can push |a·b| / (|a||b|) a hair past 1; clip so callers can trust the range.
    return float(np.clip(np.dot(x, y) / norms, -1.0, 1.0))


def exact_scores(unit_rows: np.ndarray, unit_query: np.ndarray) -> np.ndarray:
    """Cosine of a unit query with each unit (or zero) row: one dot product per row, float32.

    Subtle: einsum computes every row's dot product the same way, so identical rows get
    identical scores and the tie rule decides between them. A BLAS product (`rows @ q`)
    works on blocks of rows, split over threads, and two identical rows can come out a
    last bit apart, depending on where they sit.
    """
    scores: np.ndarray = np.einsum("ij,j->i", unit_rows, unit_query)
    return scores


def select_top_k(scores: np.ndarray, k: int) -> TopK:
    """The `k` best of `scores`: (indices as int64, their scores), best first.

    Equal scores come in the order of the lower index. `k` larger than the number of
    scores returns them all. No full sort: `np.partition` finds the k-th best score,
    and only the scores at that boundary need the tie rule.

    >>> select_top_k(np.array([0.5, 0.9, 0.5, 0.5], dtype=np.float32), 3)
    TopK(indices=array([1, 0, 2]), scores=array([0.9, 0.5, 0.5], dtype=float32))
    """
    k = check_int("k", k, minimum=1)
    n = scores.shape[0]
    if k >= n:
        chosen = np.arange(n, dtype=np.int64)
    else:
        # The k-th best score: everything strictly above it is in; of the scores equal
        # to it, the lowest indices fill the remaining places (the tie rule).
        kth = -np.partition(-scores, k - 1)[k - 1]
        above = np.flatnonzero(scores > kth)
        at = np.flatnonzero(scores == kth)[: k - above.size]
        chosen = np.sort(np.concatenate((above, at)))
    # A stable sort keeps equal scores in ascending index order.
    order = chosen[np.argsort(-scores[chosen], kind="stable")]
    return TopK(order.astype(np.int64, copy=False), scores[order])


def top_k(
    query: ArrayLike, vectors: ArrayLike | UnitMatrix, k: int, *, normalised: bool = False
) -> TopK:
    """Exact cosine top-k: `TopK(indices as int64, float32 scores)`, best first.

    Equal scores come in the order of the lower index; `k` larger than the number of
    vectors returns them all; `k <= 0` is a ValueError. Rows must be finite (a
    `UnitMatrix` checks this once; plain arrays are not re-checked on every query).
    A 2-D block of queries gives one result per query: 2-D indices and scores, one row
    per query, exactly the results of one query at a time.

    `normalised=True` (or a `UnitMatrix`) is the caller's promise that every row already
    has length 1 (or is zero), e.g. rows from `normalise()` kept by a store: cosine is
    then the dot product, with no normalising on every call.

    >>> top_k([1.0, 0.0], [[0.0, 3.0], [2.0, 0.0], [5.0, 0.0]], 2)
    TopK(indices=array([1, 2]), scores=array([1., 1.], dtype=float32))
    >>> top_k([[1.0, 0.0], [0.0, 1.0]], [[0.0, 3.0], [2.0, 0.0]], 1).indices
    array([[1],
           [0]])
    """
    rows, queries, k, normalised = search_inputs(query, vectors, k, normalised=normalised)
    unit_rows = rows if normalised else normalise(rows)
    if queries.ndim == 1:
        return select_top_k(exact_scores(unit_rows, queries), k)
    found = [select_top_k(exact_scores(unit_rows, q), k) for q in queries]
    shape = (len(found), min(k, len(rows)))  # one row per query, even for none
    return TopK(
        np.array([f.indices for f in found], dtype=np.int64).reshape(shape),
        np.array([f.scores for f in found], dtype=np.float32).reshape(shape),
    )


def search_inputs(
    query: ArrayLike, vectors: ArrayLike | UnitMatrix, k: int, *, normalised: bool
) -> tuple[np.ndarray, np.ndarray, int, bool]:
    """`top_k`'s arguments, checked: (float32 rows, the unit query or block of them, k,
    whether the rows are unit), or a clear error naming what is wrong."""
    if isinstance(vectors, UnitMatrix):
        rows, normalised = vectors.rows, True
    else:
        rows = np.asarray(vectors, dtype=np.float32)
        if rows.ndim != 2:
            raise ValueError(f"vectors must be a 2-D array of rows (got shape {rows.shape})")
    queries = _unit_query(query, rows.shape[1])
    return rows, queries, check_int("k", k, minimum=1), normalised


def _unit_query(query: ArrayLike, dim: int, *, batched: bool = True) -> np.ndarray:
    """The query (or, if `batched`, a 2-D block of queries) as unit float32 rows of length `dim`."""
    q = np.asarray(query, dtype=np.float32)
    if q.ndim not in ((1, 2) if batched else (1,)) or q.shape[-1] != dim:
        shape = "a 1-D vector or a 2-D block of rows" if batched else "a 1-D vector"
        raise ValueError(f"query must be {shape} of length {dim} (got shape {q.shape})")
    if not np.isfinite(q).all():
        raise ValueError("query must be finite (found NaN or infinity)")
    return normalise(q)  # all zeros stays all zeros


@dataclass(frozen=True, slots=True, eq=False)
class UnitMatrix:
    """Rows normalised once to unit length (float32, read-only), searched many times.

    Build it when vectors are stored, then search it for every query: cosine is then one
    dot product per row. Zero rows stay zero and score 0 against any query.

    >>> m = UnitMatrix([[1.0, 0.0], [0.0, 2.0], [1.0, 1.0]])
    >>> m.top_k([0.0, 1.0], 2)
    TopK(indices=array([1, 2]), scores=array([1.        , 0.70710677], dtype=float32))
    """

    rows: np.ndarray

    def __post_init__(self) -> None:
        rows = np.asarray(self.rows)
        if rows.ndim != 2:
            raise ValueError(f"UnitMatrix needs a 2-D array of rows (got shape {rows.shape})")
        if not np.isfinite(rows).all():
            raise ValueError("UnitMatrix rows must be finite (found NaN or infinity)")
        unit = np.ascontiguousarray(normalise(rows))
        unit.flags.writeable = False  # shared by every search: nobody may change it
        object.__setattr__(self, "rows", unit)

    def __len__(self) -> int:
        return int(self.rows.shape[0])

    @property
    def dim(self) -> int:
        """The number of dimensions (columns)."""
        return int(self.rows.shape[1])

    def scores(self, query: ArrayLike) -> np.ndarray:
        """Cosine of `query` with every row (float32), in row order."""
        return exact_scores(self.rows, _unit_query(query, self.dim, batched=False))

    def top_k(self, query: ArrayLike, k: int) -> TopK:
        """The `k` rows most similar to `query` (or to each row of a 2-D block of queries)."""
        return top_k(query, self, k)
