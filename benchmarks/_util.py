"""Small helpers shared by the benchmark scripts (timing, tables, generated text).

The machine running a benchmark is often shared and noisy, so every figure is the best
of a few repeats, and the scripts compare things measured in the same run (ratios).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence
from typing import Any


def best_time(fn: Callable[[], Any], *, repeat: int = 5) -> float:
    """The fastest of `repeat` runs of `fn()`, in seconds (the least disturbed by noise)."""
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def print_table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> None:
    """Print a small aligned table (markdown-compatible)."""
    cells = [[str(h) for h in header]] + [[str(c) for c in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]
    for n, row in enumerate(cells):
        print("| " + " | ".join(c.ljust(w) for c, w in zip(row, widths)) + " |")
        if n == 0:
            print("|" + "|".join("-" * (w + 2) for w in widths) + "|")


def make_words(n: int, rng: random.Random) -> list[str]:
    """`n` distinct made-up lowercase words of 1 to 10 letters."""
    words: dict[str, None] = {}
    while len(words) < n:
        length = rng.randint(1, 10)
        words["".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(length))] = None
    return list(words)


def zipf_weights(n: int, exponent: float = 1.0) -> list[float]:
    """Zipf's law: the r-th most common word has weight 1 / r**exponent."""
    return [1.0 / (rank**exponent) for rank in range(1, n + 1)]
