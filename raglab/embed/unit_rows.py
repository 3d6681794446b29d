"""Rows scaled to unit length: what every embedder returns, so cosine is a dot product."""

from __future__ import annotations

import numpy as np

ZERO_NORM = 1e-12
"""Below this length a row counts as all-zero: far above float64 rounding noise, far
below the length of any real row (a hashed feature weighs at least 1; an LSA row is a
projection of a unit-length TF-IDF vector)."""


def unit_rows(matrix: np.ndarray) -> np.ndarray:
    """Rows scaled to length 1; rows that are (numerically) zero become exactly zero.

    >>> unit_rows(np.array([[3.0, 4.0], [0.0, 0.0]])).tolist()
    [[0.6, 0.8], [0.0, 0.0]]
    """
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    # Subtle: a row of rounding noise (norm ~1e-17) would blow up into a random unit
    # vector; treat it as "no features" instead.
    safe = np.where(norms > ZERO_NORM, norms, np.inf)
    return matrix / safe
