"""PCA to 2D of 5,000 x 384 vectors: raglab's hand-written `fit_pca` against scikit-learn.

Both fit the same unit vectors (three loose groups, like chunks of a few documents) and
project them; the figures are the best of several runs, taken in turn so that both sides
see the same moments of a shared machine. The two must agree (up to each axis's sign)
before they are timed. scikit-learn's solver choice is its default ("auto"); its "full"
SVD, what raglab used before, is timed too. Target: raglab >= 1.0x scikit-learn's default.
Skips cleanly when scikit-learn is not installed.
Run: .venv/bin/python benchmarks/bench_pca.py
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _util import print_table

from raglab.retrieve.vectors import normalise
from raglab.workbook.projection import fit_pca

N, DIM = 5_000, 384
REPEATS = 15
SEED = 0


def vectors() -> np.ndarray:
    rng = np.random.default_rng(SEED)
    centres = rng.normal(size=(3, DIM)) * 0.5
    return normalise(centres[np.arange(N) % 3] + rng.normal(size=(N, DIM)))


def best_of_interleaved(fns: dict[str, Callable[[], object]]) -> dict[str, float]:
    """The best time of each fn(), in ms, running them in turn."""
    best = dict.fromkeys(fns, float("inf"))
    for _ in range(REPEATS):
        for name, fn in fns.items():
            start = time.perf_counter()
            fn()
            best[name] = min(best[name], time.perf_counter() - start)
    return {name: seconds * 1e3 for name, seconds in best.items()}


def main() -> None:
    try:
        from sklearn.decomposition import PCA
    except ImportError:
        print("scikit-learn is not installed (pip install scikit-learn): skipped")
        return
    x = vectors()
    ours = fit_pca(x).transform(x)
    theirs = PCA(n_components=2).fit_transform(x)
    signs = np.sign(np.sum(ours * theirs, axis=0))
    np.testing.assert_allclose(ours, theirs * signs, atol=1e-4)
    ms = best_of_interleaved(
        {
            "scikit-learn PCA(2), solver auto": lambda: PCA(n_components=2).fit_transform(x),
            "scikit-learn PCA(2), solver full": lambda: PCA(
                n_components=2, svd_solver="full"
            ).fit_transform(x),
            "raglab fit_pca + transform": lambda: fit_pca(x).transform(x),
        }
    )
    base = ms["scikit-learn PCA(2), solver auto"]
    print(f"PCA to 2D of {N} x {DIM} float32 unit vectors, best of {REPEATS}")
    print_table(
        ["fit + project", "ms", "speed vs scikit-learn auto (target >= 1.0)"],
        [[name, f"{t:.1f}", f"{base / t:.2f}"] for name, t in ms.items()],
    )


if __name__ == "__main__":
    main()
