"""The fast screen behind `raglab.retrieve.vectors.top_k`: BLAS first, exact scores only near the top.

Private: `top_k` gives exactly `select_top_k(exact_scores(rows, q, norms), k)`, bit for bit;
this module only makes it cheaper, and tests/retrieve/test_vectors.py checks that the two agree.

Subtle: the fastest way to score all rows is BLAS (`rows @ q`), but BLAS works on
blocks of rows and splits them over threads, so two identical rows can get scores
that differ in the last bit, and the tie rule would then depend on where a row sits
and on the thread count. So BLAS only screens: every row within the rounding tolerance
of the k-th fast score is kept, the caller rescores those rows with einsum (which treats
each row the same way) and applies the tie rule to the exact scores.

Reading the matrix from memory is the cost of a search (the arithmetic is cheap), so
everything here reads it as few times as possible: one pass for a query over rows of any
length (products and row lengths block by block, `products_and_lengths`), one gemm pass
per group of queries for a block of them (`products_in_groups`).
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from raglab._threads import in_parallel

# Rows per block in `products_and_lengths`: 512 rows of 384 float32 are 768 KB, which
# stays in a core's L2 cache between the two reads of the block.
BLOCK_ROWS = 512
# Fast scores held at once by `products_in_groups` (float32): 2^23 of them are 32 MB.
GROUP_SCORES = 2**23


def _row_dots(a: np.ndarray, b: np.ndarray, out: np.ndarray) -> None:
    """`out[i] = a[i] · b[i]` (or `a[i] · b` for a 1-D `b`), row by row, on one thread."""
    if hasattr(np, "vecdot"):  # numpy >= 2: one BLAS dot per row, at memory speed
        np.vecdot(a, b, out=out)
    else:
        np.einsum("ij,ij->i" if b.ndim == 2 else "ij,j->i", a, b, out=out)


def row_lengths(rows: np.ndarray) -> np.ndarray:
    """Each row's Euclidean length in float32, computed row by row (a row's length does
    not depend on where it sits, so a block's lengths equal the whole matrix's)."""
    squares = np.empty(rows.shape[0], dtype=np.float32)
    _row_dots(rows, rows, squares)
    return np.sqrt(squares, out=squares)


def products_and_lengths(rows: np.ndarray, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """`rows @ q` and `row_lengths(rows)` in one pass over memory, on all threads.

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
        for start in range(share.start, share.stop, BLOCK_ROWS):
            block = slice(start, min(start + BLOCK_ROWS, share.stop))
            _row_dots(rows[block], q, dots[block])
            _row_dots(rows[block], rows[block], squares[block])

    in_parallel(one_share, n, align=BLOCK_ROWS)
    return dots, np.sqrt(squares, out=squares)


def products_in_groups(rows: np.ndarray, queries: np.ndarray) -> Iterator[tuple[int, np.ndarray]]:
    """(first query's number, `queries[group] @ rows.T`) for consecutive groups of queries.

    One gemm per group reads the matrix once for all of the group's queries; the group
    size keeps the block of scores within `GROUP_SCORES`.
    """
    size = max(1, GROUP_SCORES // max(rows.shape[0], 1))
    for start in range(0, queries.shape[0], size):
        yield start, queries[start : start + size] @ rows.T


def rows_near_the_top(fast: np.ndarray, k: int, dim: int) -> np.ndarray | None:
    """The rows whose exact score could reach the exact top `k`, ascending; None for all.

    `fast` holds every row's fast (BLAS) cosine, each within `rounding_tolerance(dim)`
    of its exact value. None means screening would save nothing: too many rows are near
    the top (e.g. a zero query, where every row scores 0), so score them all.
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
    """How far apart two float32 cosines of the same unit vectors can be, summed in any order.

    Each is within γ_d = d·u/(1 − d·u) of the exact value, u = 2^-24 (Higham, "Accuracy
    and Stability of Numerical Algorithms", 2nd ed., §3.1; Cauchy–Schwarz bounds
    Σ|a_i b_i| by |a||b| = 1): 2·d·u apart at most. Doubled again to cover the rounding
    of row lengths and divisions: d·2^-22 (9e-5 for 384 dimensions).

    >>> rounding_tolerance(384) == 384 / 2**22
    True
    """
    return dim * 2.0**-22
