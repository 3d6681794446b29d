"""Small helpers shared by the benchmark scripts (timing, tables, generated text).

The machine running a benchmark is often shared and noisy, so every figure is the best
of a few repeats, and the scripts compare things measured in the same run (ratios).
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any


def best_time(fn: Callable[[], Any], *, repeat: int = 5) -> float:
    """The fastest of `repeat` runs of `fn()`, in seconds (the least disturbed by noise)."""
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def timed(fn: Callable[..., Any], seconds: list[float]) -> Callable[..., Any]:
    """`fn`, appending the wall time of each call to `seconds` (one figure per question)."""

    def call(*args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        result = fn(*args, **kwargs)
        seconds.append(time.perf_counter() - start)
        return result

    return call


def run_measured(command: list[str], code: Path) -> tuple[float, float, float]:
    """Run `command` with raglab from `code`: (wall s, CPU s, the child's peak resident MB).

    CPU time (user + system, from `os.wait4`) is what a loaded machine distorts least: wall
    time also counts the time spent waiting for a core. A failing command raises, with the
    end of its stderr.
    """
    env = {**os.environ, "PYTHONPATH": str(code)}
    # stderr to a file, not a pipe: a child that writes more than a pipe holds (a warning
    # per skipped file) would wait forever for a reader that waits for it to end.
    with tempfile.TemporaryFile() as stderr:
        start = time.perf_counter()
        child = subprocess.Popen(  # cwd too: `python -m` puts it first on the import path
            command, env=env, cwd=code, stdout=subprocess.DEVNULL, stderr=stderr
        )
        _, status, usage = os.wait4(child.pid, 0)
        elapsed = time.perf_counter() - start
        child.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
        if child.returncode:
            stderr.seek(0)
            raise RuntimeError(f"{' '.join(command)} failed: {stderr.read().decode()[-2000:]}")
    return elapsed, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024  # kB on Linux


def compiled(code: Path) -> Path:
    """`code`, with raglab's modules compiled to bytecode, as an installed copy would be.

    Without it every child of a benchmark compiles raglab again (PYTHONDONTWRITEBYTECODE, a
    read-only checkout), and the start-up it measures is not a user's start-up.
    """
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(code / "raglab")], check=True)
    return code


def add_copies_option(parser: argparse.ArgumentParser) -> None:
    """`--raglab NAME=DIR`: another copy of raglab (an older commit) measured alongside."""
    parser.add_argument(
        "--raglab",
        action="append",
        default=[],
        metavar="NAME=DIR",
        help="another copy of raglab to measure alongside this one (repeatable)",
    )


def copies(args: argparse.Namespace, current: Path) -> dict[str, Path]:
    """Version name -> the folder holding its raglab: "current", then each `--raglab`."""
    return {"current": current} | {
        name: Path(folder) for name, folder in (spec.split("=", 1) for spec in args.raglab)
    }


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
