"""Vector maths for dense retrieval: normalise, cosine, and an exact top-k.

Cosine similarity compares directions, not lengths:

    cosine(a, b) = a · b / (|a| |b|)

When every stored row already has length 1 (a *unit* row), cosine is a plain dot
product, so a search is one matrix-vector product: `scores = rows @ query`. The stores
keep unit rows for exactly this reason; `UnitMatrix` (or `top_k(..., normalised=True)`)
skips measuring row lengths. `top_k` on a plain array measures them on every call (in the
same pass over memory as the products), so it is exact for rows of any length and never
stale: an array changed in place between two calls is searched as it is now.

Exact top-k is "score every row, keep the k best": `select_top_k(exact_scores(...), k)`.
`top_k` returns exactly that, bit for bit; it only avoids computing most exact scores,
by screening the rows with a faster product first (`raglab.retrieve._topk_fast` explains how).

Ranking rule, used by every ranked list in raglab: higher score first, and equal scores
in the order of the lower index. `select_top_k(scores, k)` applies it to any scores.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
from numpy.typing import ArrayLike

from raglab.retrieve._topk_fast import (
    products_and_lengths,
    products_in_groups,
    row_lengths,
    rows_near_the_top,
)
from raglab.validation import check_int

__all__ = ["TopK", "UnitMatrix", "cosine", "exact_scores", "normalise", "select_top_k", "top_k"]


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
    norms = _row_norms(rows)
    np.divide(rows, norms[:, None], out=rows, where=norms[:, None] > 0)
    return array


def _row_norms(rows: np.ndarray) -> np.ndarray:
    """The Euclidean length of each row of a 2-D array, in float64.

    float64 keeps squares of very small or very large float32 values from vanishing or
    overflowing (searches use float32 lengths, `raglab.retrieve._topk_fast.row_lengths`, and
    redo only such rows this way).
    """
    # einsum forms each row's sum of squares without a temporary matrix of squares.
    return np.sqrt(np.einsum("ij,ij->i", rows, rows, dtype=np.float64))


def cosine(a: ArrayLike, b: ArrayLike) -> float:
    """Cosine similarity of two vectors of the same length, in [-1, 1].

    0.0 when either vector is all zeros (no direction, so no similarity).
    Computed in float64, so it can serve as the reference for the fast paths.

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
        # (Partitioning the negated scores at k - 1 is measurably faster than partitioning
        # the scores at n - k when many of them are equal, e.g. BM25's zeros.)
        kth = -np.partition(-scores, k - 1)[k - 1]
        above = np.flatnonzero(scores > kth)
        at = np.flatnonzero(scores == kth)[: k - above.size]
        chosen = np.sort(np.concatenate((above, at)))
    # A stable sort keeps equal scores in ascending index order.
    order = chosen[np.argsort(-scores[chosen], kind="stable")]
    return TopK(order.astype(np.int64, copy=False), scores[order])


def exact_scores(rows: np.ndarray, q: np.ndarray, norms: np.ndarray | None = None) -> np.ndarray:
    """Cosine of the unit query `q` with each row (float32), every row computed the same way.

    `norms` None: the rows have unit length (or are zero), so cosine is the dot product;
    otherwise `norms` holds each row's length. einsum treats each row alike, so identical
    rows get identical scores (a BLAS product need not: see `raglab.retrieve._topk_fast`).
    """
    return _cosines(np.einsum("ij,j->i", rows, q), rows, q, norms)


def _cosines(
    dots: np.ndarray, rows: np.ndarray, q: np.ndarray, norms: np.ndarray | None
) -> np.ndarray:
    """Cosines from the dot products of `q` with each row: divide by the row lengths."""
    if norms is None:
        return dots
    np.divide(dots, norms, out=dots, where=norms > 0)  # a zero row's dot is 0 already
    odd = np.flatnonzero(~((norms > _SAFE_NORMS[0]) & (norms < _SAFE_NORMS[1])))
    if odd.size:  # rare: zero, tiny or huge rows, redone in float64
        wide = rows[odd].astype(np.float64)
        wide_norms = _row_norms(wide)
        wide_dots = np.einsum("ij,j->i", wide, q.astype(np.float64))
        dots[odd] = np.divide(
            wide_dots, wide_norms, out=np.zeros_like(wide_dots), where=wide_norms > 0
        )
    return dots


# Row lengths outside this range are recomputed in float64: in float32, the squares of
# values below ~1e-19 vanish and those above ~1e19 overflow (and zero rows land here too).
_SAFE_NORMS = (1e-15, 1e15)


@dataclass(frozen=True, slots=True, eq=False)
class UnitMatrix:
    """Rows normalised once to unit length (float32, read-only): the fast search path.

    Build it when vectors are stored, then search it for every query; a search reads
    the rows once. Zero rows stay zero and score 0 against any query.

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
        return self.rows.shape[0]

    @property
    def dim(self) -> int:
        """The number of dimensions (columns)."""
        return self.rows.shape[1]

    def scores(self, query: ArrayLike) -> np.ndarray:
        """Cosine of `query` with every row (float32), in row order."""
        return exact_scores(self.rows, _unit_query(query, self.dim, batched=False))

    def top_k(self, query: ArrayLike, k: int) -> TopK:
        """The `k` rows most similar to `query` (or to each row of a 2-D block of queries)."""
        return _top_k_each(self.rows, _unit_query(query, self.dim), k, unit=True)


def top_k(
    query: ArrayLike, vectors: ArrayLike | UnitMatrix, k: int, *, normalised: bool = False
) -> TopK:
    """Exact cosine top-k: `TopK(indices as int64, float32 scores)`, best first.

    Equal scores come in the order of the lower index; `k` larger than the number of
    vectors returns them all; `k <= 0` is a ValueError. Rows must be finite (a
    `UnitMatrix` checks this once; plain arrays are not re-checked on every query).
    A 2-D block of queries gives one result per query: 2-D indices and scores, one row
    per query (the batched form), exactly the rows and scores of one query at a time.

    - `vectors` a `UnitMatrix`: rows normalised once, at build time.
    - `normalised=True`: the caller promises the rows already have unit length (or are
      zero), e.g. rows from `normalise()` kept by a store; no row lengths are measured.
    - otherwise any array of rows: their lengths are measured on every call, in the
      same pass over memory as the products, so cosine is exact for rows of any length
      and changing the array between calls can never give a stale answer.

    >>> top_k([1.0, 0.0], [[0.0, 3.0], [2.0, 0.0], [5.0, 0.0]], 2)
    TopK(indices=array([1, 2]), scores=array([1., 1.], dtype=float32))
    >>> top_k([[1.0, 0.0], [0.0, 1.0]], [[0.0, 3.0], [2.0, 0.0]], 1).indices
    array([[1],
           [0]])
    """
    if isinstance(vectors, UnitMatrix):
        return vectors.top_k(query, k)
    rows = np.asarray(vectors, dtype=np.float32)
    if rows.ndim != 2:
        raise ValueError(f"vectors must be a 2-D array of rows (got shape {rows.shape})")
    return _top_k_each(rows, _unit_query(query, rows.shape[1]), k, unit=normalised)


def _unit_query(query: ArrayLike, dim: int, *, batched: bool = True) -> np.ndarray:
    """The query (or, if `batched`, a 2-D block of queries) as unit float32 rows of length `dim`."""
    q = np.asarray(query, dtype=np.float32)
    if q.ndim not in ((1, 2) if batched else (1,)) or q.shape[-1] != dim:
        shape = "a 1-D vector or a 2-D block of rows" if batched else "a 1-D vector"
        raise ValueError(f"query must be {shape} of length {dim} (got shape {q.shape})")
    if not np.isfinite(q).all():
        raise ValueError("query must be finite (found NaN or infinity)")
    return normalise(q)  # all zeros stays all zeros


def _top_k_each(rows: np.ndarray, queries: np.ndarray, k: int, *, unit: bool) -> TopK:
    """The exact top `k` for one unit query, or for each row of a 2-D block of them.

    `unit`: the rows have unit length (or are zero), so no lengths are measured.
    """
    k = check_int("k", k, minimum=1)
    if queries.ndim == 1:
        if unit:
            dots, norms = rows @ queries, None
        else:
            dots, norms = products_and_lengths(rows, queries)
        return _screened_top_k(rows, queries, k, norms, dots)
    norms = None if unit else row_lengths(rows)
    width = min(k, rows.shape[0])
    indices = np.empty((queries.shape[0], width), dtype=np.int64)
    scores = np.empty((queries.shape[0], width), dtype=np.float32)
    for first, group in products_in_groups(rows, queries):
        for i, dots in enumerate(group, start=first):
            indices[i], scores[i] = _screened_top_k(rows, queries[i], k, norms, dots)
    return TopK(indices, scores)


def _screened_top_k(
    rows: np.ndarray, q: np.ndarray, k: int, norms: np.ndarray | None, dots: np.ndarray
) -> TopK:
    """`select_top_k(exact_scores(rows, q, norms), k)`, bit for bit, scoring few rows exactly.

    `dots` are fast BLAS products `rows @ q` (overwritten): they only screen the rows,
    and only those that could reach the top k (usually k or a few more) get an exact
    score. See `raglab.retrieve._topk_fast`.
    """
    near = rows_near_the_top(_cosines(dots, rows, q, norms), k, rows.shape[1])
    if near is None:
        return select_top_k(exact_scores(rows, q, norms), k)
    near_norms = None if norms is None else norms[near]
    chosen, scores = select_top_k(exact_scores(rows[near], q, near_norms), k)
    return TopK(near[chosen], scores)  # `near` is ascending, so ties stay in index order
