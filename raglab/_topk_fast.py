"""The fast screen behind `raglab.vectors.top_k`: BLAS first, exact scores only near the top.

Private: `top_k` gives exactly `select_top_k(exact_scores(rows, q), k)`, bit for bit; this
module only makes it cheaper, and tests/test_vectors.py checks that the two agree.

Subtle: the fastest way to score all rows is BLAS (`rows @ q`), but BLAS works on
blocks of rows and splits them over threads, so two identical rows can get scores
that differ in the last bit, and the tie rule would then depend on where a row sits
and on the thread count. So BLAS only screens: every row within the rounding tolerance
of the k-th fast score is kept, the caller rescores those rows with einsum (which treats
each row the same way) and applies the tie rule to the exact scores.
"""

from __future__ import annotations

import numpy as np


def rows_near_the_top(fast: np.ndarray, k: int, dim: int) -> np.ndarray | None:
    """The rows whose exact score could reach the exact top `k`, ascending; None for all.

    `fast` holds every row's fast (BLAS) cosine, each within `rounding_tolerance(dim)`
    of its exact value. None means screening would save nothing: too many rows are near
    the top (e.g. a zero query, where every row scores 0), so score them all.
    """
    n = fast.shape[0]
    if k >= n:
        return None
    kth = -np.partition(-fast, k - 1)[k - 1]
    # A row whose exact score could reach the exact k-th score: within two tolerances
    # (one for its own fast score, one for the k-th's) of the fast k-th score.
    near = np.flatnonzero(fast >= kth - 2 * rounding_tolerance(dim))
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
