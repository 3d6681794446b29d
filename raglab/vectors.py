"""Vector maths for dense retrieval: normalise, cosine, and an exact top-k.

Cosine similarity compares directions, not lengths:

    cosine(a, b) = a · b / (|a| |b|)

When every stored row already has length 1 (a *unit* row), cosine is a plain dot
product, so a search is one matrix-vector product: `scores = rows @ query`. The stores
keep unit rows for exactly this reason; `UnitMatrix` (or `top_k(..., normalised=True)`)
is the fast path they call, and `top_k` on a plain array still works.

Ranking rule, used by every ranked list in raglab: higher score first, and equal scores
in the order of the lower index. `select_top_k(scores, k)` applies it to any scores.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

__all__ = ["UnitMatrix", "cosine", "normalise", "select_top_k", "top_k"]


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


def _row_norms(rows: np.ndarray, dtype: type = np.float64) -> np.ndarray:
    """The Euclidean length of each row of a 2-D array.

    float64 (the default) keeps squares of very small or very large float32 values from
    vanishing or overflowing; float32 is ten times faster and fine for embeddings.
    """
    # einsum forms each row's sum of squares without a temporary matrix of squares.
    return np.sqrt(np.einsum("ij,ij->i", rows, rows, dtype=dtype))


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


def _check_k(k: int) -> int:
    k = operator.index(k)  # accepts numpy integers, refuses floats
    if k <= 0:
        raise ValueError(f"k must be >= 1 (got k={k})")
    return k


def select_top_k(scores: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The `k` best of `scores`: (indices as int64, their scores), best first.

    Equal scores come in the order of the lower index. `k` larger than the number of
    scores returns them all. No full sort: `np.partition` finds the k-th best score,
    and only the scores at that boundary need the tie rule.

    >>> select_top_k(np.array([0.5, 0.9, 0.5, 0.5], dtype=np.float32), 3)
    (array([1, 0, 2]), array([0.9, 0.5, 0.5], dtype=float32))
    """
    k = _check_k(k)
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
    return order.astype(np.int64, copy=False), scores[order]


@dataclass(frozen=True, slots=True, eq=False)
class UnitMatrix:
    """Rows normalised once to unit length (float32, read-only): the fast search path.

    Build it when vectors are stored, then search it for every query; a search reads
    the rows once. Zero rows stay zero and score 0 against any query.

    >>> m = UnitMatrix([[1.0, 0.0], [0.0, 2.0], [1.0, 1.0]])
    >>> m.top_k([0.0, 1.0], 2)
    (array([1, 2]), array([1.        , 0.70710677], dtype=float32))
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
        return _scores(self.rows, _unit_query(query, self.dim), None, fast=False)

    def top_k(self, query: ArrayLike, k: int) -> tuple[np.ndarray, np.ndarray]:
        """The `k` rows most similar to `query`: (indices, cosine scores), best first."""
        return _search(self.rows, _unit_query(query, self.dim), k, None)


def top_k(
    query: ArrayLike, vectors: ArrayLike | UnitMatrix, k: int, *, normalised: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """Exact cosine top-k: (indices as int64, float32 scores), best first.

    Equal scores come in the order of the lower index; `k` larger than the number of
    vectors returns them all; `k <= 0` is a ValueError. Rows must be finite (a
    `UnitMatrix` checks this once; plain arrays are not re-checked on every query).

    - `vectors` a `UnitMatrix`: the fast path (rows normalised once, at build time).
    - `normalised=True`: the caller promises the rows already have unit length (or are
      zero), e.g. rows from `normalise()` kept by a store; no per-query normalising.
    - otherwise any array of rows: their lengths are computed for this query (a second
      pass over the matrix), so cosine is exact for rows of any length.

    >>> top_k([1.0, 0.0], [[0.0, 3.0], [2.0, 0.0], [5.0, 0.0]], 2)
    (array([1, 2]), array([1., 1.], dtype=float32))
    """
    if isinstance(vectors, UnitMatrix):
        return vectors.top_k(query, k)
    rows = np.asarray(vectors, dtype=np.float32)
    if rows.ndim != 2:
        raise ValueError(f"vectors must be a 2-D array of rows (got shape {rows.shape})")
    q = _unit_query(query, rows.shape[1])
    norms = None if normalised else _row_norms(rows, np.float32)
    return _search(rows, q, k, norms)


def _unit_query(query: ArrayLike, dim: int) -> np.ndarray:
    """The query as a unit float32 vector of length `dim` (all zeros stays all zeros)."""
    q = np.asarray(query, dtype=np.float32)
    if q.ndim != 1 or q.shape[0] != dim:
        raise ValueError(f"query must be a 1-D vector of length {dim} (got shape {q.shape})")
    if not np.isfinite(q).all():
        raise ValueError("query must be finite (found NaN or infinity)")
    return normalise(q)


def _search(
    rows: np.ndarray, q: np.ndarray, k: int, norms: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray]:
    """Top-k in two steps: a fast screen of every row, then exact scores near the top.

    Subtle: the fastest way to score all rows is BLAS (`rows @ q`), but BLAS works on
    blocks of rows and splits them over threads, so two identical rows can get scores
    that differ in the last bit, and the tie rule would then depend on where a row sits
    and on the thread count. So BLAS only screens: every row within the rounding
    tolerance of the k-th fast score is rescored with einsum, which treats each row the
    same way, and the tie rule is applied to those exact scores. The result equals
    `select_top_k` over einsum scores of all rows, bit for bit, with any BLAS setup.
    """
    k = _check_k(k)
    n, dim = rows.shape
    if k < n:
        fast = _scores(rows, q, norms, fast=True)
        kth = -np.partition(-fast, k - 1)[k - 1]
        # A row whose exact score could reach the exact k-th score: within two tolerances
        # (one for its own fast score, one for the k-th's) of the fast k-th score.
        near = np.flatnonzero(fast >= kth - 2 * _rounding_tolerance(dim))
        if near.size <= n // 8:  # usually k or a few more; else (e.g. a zero query) redo all
            sub_norms = None if norms is None else norms[near]
            exact = _scores(rows[near], q, sub_norms, fast=False)
            chosen, scores = select_top_k(exact, k)  # `near` is ascending: ties stay by index
            return near[chosen], scores
    return select_top_k(_scores(rows, q, norms, fast=False), k)


def _rounding_tolerance(dim: int) -> float:
    """How far apart two float32 cosines of the same unit vectors can be, summed in any order.

    Each is within γ_d = d·u/(1 − d·u) of the exact value, u = 2^-24 (Higham, "Accuracy
    and Stability of Numerical Algorithms", 2nd ed., §3.1; Cauchy–Schwarz bounds
    Σ|a_i b_i| by |a||b| = 1): 2·d·u apart at most. Doubled again to cover the rounding
    of row lengths and divisions: d·2^-22 (9e-5 for 384 dimensions).
    """
    return dim * 2.0**-22


def _scores(rows: np.ndarray, q: np.ndarray, norms: np.ndarray | None, *, fast: bool) -> np.ndarray:
    """Cosine of the unit query `q` with each row (float32).

    `norms` None: the rows have unit length, so cosine is the dot product. `fast=True`
    uses BLAS (fastest, may differ in the last bit between identical rows); `fast=False`
    uses einsum (every row computed the same way: identical rows, identical scores).
    """
    dots = rows @ q if fast else np.einsum("ij,j->i", rows, q)
    if norms is not None:
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
