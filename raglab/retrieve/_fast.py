"""The engine's exact top-k: the reference's answer, computing few exact scores.

Private. `top_k` here takes the same arguments as `raglab.retrieve.vectors.top_k` and
returns the same indices and the same scores, bit for bit; tests/retrieve/test_fast.py
checks it on random inputs (ties, zero rows and rows of any length included). The stores
call it on every search; a learner reads the reference.

Subtle: the fastest way to score every row is BLAS (`rows @ q`), but BLAS works on blocks
of rows and splits them over threads, so two identical rows can get scores that differ in
the last bit, and the tie rule would then depend on where a row sits and on the thread
count. So BLAS only screens: every row within the rounding tolerance of the k-th fast
score is kept (usually k or a few more), and only those rows get the reference's exact
score (`vectors.exact_scores`), to which the tie rule is applied.

Reading the matrix from memory is the cost of a search (the arithmetic is cheap), so
everything here reads it as few times as possible: one pass for a query over rows of any
length (products and row lengths block by block, `products_and_lengths`), one gemm pass
per group of queries for a block of them (`products_in_groups`).
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
from numpy.typing import ArrayLike

from raglab._threads import in_parallel
from raglab.retrieve.vectors import (
    TopK,
    UnitMatrix,
    exact_scores,
    normalise,
    row_lengths,
    search_inputs,
    select_top_k,
)

# Rows per block in `products_and_lengths`: 512 rows of 384 float32 are 768 KB, which
# stays in a core's L2 cache between the two reads of the block.
BLOCK_ROWS = 512
# Fast scores held at once by `products_in_groups` (float32): 2^23 of them are 32 MB.
GROUP_SCORES = 2**23
# Fast row lengths outside this range are recomputed in float64: in float32, the squares
# of values below ~1e-19 vanish and those above ~1e19 overflow (zero rows land here too).
SAFE_LENGTHS = (1e-15, 1e15)


def top_k(
    query: ArrayLike, vectors: ArrayLike | UnitMatrix, k: int, *, normalised: bool = False
) -> TopK:
    """`raglab.retrieve.vectors.top_k`: the same arguments, the same answer, faster."""
    rows, queries, k, normalised = search_inputs(query, vectors, k, normalised=normalised)
    if queries.ndim == 1:
        if normalised:
            fast = rows @ queries
        else:
            fast = cosines(*products_and_lengths(rows, queries), rows, queries)
        return _screened_top_k(rows, queries, k, fast, normalised=normalised)
    lengths = None if normalised else fast_lengths(rows)
    width = min(k, rows.shape[0])
    indices = np.empty((queries.shape[0], width), dtype=np.int64)
    scores = np.empty((queries.shape[0], width), dtype=np.float32)
    for first, group in products_in_groups(rows, queries):
        for i, dots in enumerate(group, start=first):
            fast = dots if lengths is None else cosines(dots, lengths, rows, queries[i])
            indices[i], scores[i] = _screened_top_k(
                rows, queries[i], k, fast, normalised=normalised
            )
    return TopK(indices, scores)


def _screened_top_k(
    rows: np.ndarray, q: np.ndarray, k: int, fast: np.ndarray, *, normalised: bool
) -> TopK:
    """The reference's top `k` for the unit query `q`, scoring exactly only the rows whose
    fast cosine (`fast`, one per row) is near the top."""
    near = rows_near_the_top(fast, k, rows.shape[1])
    if near is None:  # screening would save nothing: score every row, as the reference does
        return select_top_k(_reference_scores(rows, q, normalised=normalised), k)
    chosen, scores = select_top_k(_reference_scores(rows[near], q, normalised=normalised), k)
    return TopK(near[chosen], scores)  # `near` is ascending, so ties stay in index order


def _reference_scores(rows: np.ndarray, q: np.ndarray, *, normalised: bool) -> np.ndarray:
    """The scores `vectors.top_k` gives these rows (each row's score is its own alone)."""
    return exact_scores(rows if normalised else normalise(rows), q)


def _row_dots(a: np.ndarray, b: np.ndarray, out: np.ndarray) -> None:
    """`out[i] = a[i] · b[i]` (or `a[i] · b` for a 1-D `b`), row by row, on one thread."""
    if hasattr(np, "vecdot"):  # numpy >= 2: one BLAS dot per row, at memory speed
        np.vecdot(a, b, out=out)
    else:
        np.einsum("ij,ij->i" if b.ndim == 2 else "ij,j->i", a, b, out=out)


def fast_lengths(rows: np.ndarray) -> np.ndarray:
    """Each row's Euclidean length in float32, for screening (`cosines` mends the rows
    whose float32 length cannot be trusted, so their overflow is no error)."""
    squares = np.empty(rows.shape[0], dtype=np.float32)
    with np.errstate(over="ignore"):
        _row_dots(rows, rows, squares)
    return np.sqrt(squares, out=squares)


def products_and_lengths(rows: np.ndarray, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """`rows @ q` and `fast_lengths(rows)` in one pass over memory, on all threads.

    Two separate calls would read the whole matrix twice; block by block, the second
    read of each block comes from the cache. The blocks are shared out over the threads
    (`raglab._threads`): each thread reads its own rows with one-row dot products, so
    the lengths are computed on every core, not only the products. (A BLAS `block @ q`
    would split each small block over the threads again, and pay for it in waiting.)
    """
    n = rows.shape[0]
    dots = np.empty(n, dtype=np.float32)
    squares = np.empty(n, dtype=np.float32)

    def one_share(share: range) -> None:
        with np.errstate(over="ignore"):  # per thread; `cosines` mends overflowing rows
            for start in range(share.start, share.stop, BLOCK_ROWS):
                block = slice(start, min(start + BLOCK_ROWS, share.stop))
                _row_dots(rows[block], q, dots[block])
                _row_dots(rows[block], rows[block], squares[block])

    in_parallel(one_share, n, align=BLOCK_ROWS)
    return dots, np.sqrt(squares, out=squares)


def cosines(dots: np.ndarray, lengths: np.ndarray, rows: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Fast cosines of the unit query `q`, in place in `dots`: each dot over its row's length.

    Rows whose float32 length cannot be trusted (zero, tiny or huge) are redone in float64.
    """
    np.divide(dots, lengths, out=dots, where=lengths > 0)  # a zero row's dot is 0 already
    odd = np.flatnonzero(~((lengths > SAFE_LENGTHS[0]) & (lengths < SAFE_LENGTHS[1])))
    if odd.size:  # rare
        wide = rows[odd].astype(np.float64)
        wide_lengths = row_lengths(wide)
        wide_dots = wide @ q.astype(np.float64)
        dots[odd] = np.divide(
            wide_dots, wide_lengths, out=np.zeros_like(wide_dots), where=wide_lengths > 0
        )
    return dots


def products_in_groups(rows: np.ndarray, queries: np.ndarray) -> Iterator[tuple[int, np.ndarray]]:
    """(first query's number, `queries[group] @ rows.T`) for consecutive groups of queries.

    One gemm per group reads the matrix once for all of the group's queries; the group
    size keeps the block of scores within `GROUP_SCORES`.
    """
    size = max(1, GROUP_SCORES // max(rows.shape[0], 1))
    for start in range(0, queries.shape[0], size):
        with np.errstate(over="ignore"):  # huge rows: `cosines` mends them
            products = queries[start : start + size] @ rows.T
        yield start, products


def rows_near_the_top(fast: np.ndarray, k: int, dim: int) -> np.ndarray | None:
    """The rows whose exact score could reach the exact top `k`, ascending; None for all.

    `fast` holds every row's fast cosine, each within `rounding_tolerance(dim)` of its
    exact value. None means screening would save nothing: too many rows are near the top
    (e.g. a zero query, where every row scores 0), so score them all.
    """
    n = fast.shape[0]
    if k >= n:
        return None
    slack = 2 * rounding_tolerance(dim)
    # Partitioning all n scores is the slow part; a sample's k-th best is a lower bound
    # of the k-th best of all, so only the scores above it (less the slack) need it.
    step = max(1, int(np.sqrt(n / k)))
    sample = fast[::step]
    if sample.size > k:
        floor = -np.partition(-sample, k - 1)[k - 1]
        candidates = np.flatnonzero(fast >= floor - slack)
    else:
        candidates = np.arange(n)
    kth = -np.partition(-fast[candidates], k - 1)[k - 1]
    # A row whose exact score could reach the exact k-th score: within two tolerances
    # (one for its own fast score, one for the k-th's) of the fast k-th score.
    near = candidates[fast[candidates] >= kth - slack]
    return near if near.size <= n // 8 else None  # usually k or a few more


def rounding_tolerance(dim: int) -> float:
    """How far a fast float32 cosine can be from the exact one, for `dim` dimensions.

    A float32 dot product of two unit vectors, summed in any order, is within
    γ_d = d·u/(1 − d·u) of the true value, u = 2^-24 (Higham, "Accuracy and Stability of
    Numerical Algorithms", 2nd ed., §3.1; Cauchy–Schwarz bounds Σ|a_i b_i| by |a||b| = 1),
    and so is the exact score: 2·d·u apart at most. Doubled again to cover the rounding
    of row lengths, divisions and the unit rows: d·2^-22 (9e-5 for 384 dimensions).

    >>> rounding_tolerance(384) == 384 / 2**22
    True
    """
    return dim * 2.0**-22
