"""Derived files beside an index: raglab deletes only what it wrote, and never leaves a
half-written file where a reader can find it."""

from __future__ import annotations

from pathlib import Path

from attacks.common import CORPUS, run, traceback_in


def users_files_beside_the_index(tmp: Path) -> str:
    """`raglab index --index NAME` twice, with the user's own NAME.x.y.npy files beside it."""
    index = tmp / "corpus.sqlite"
    mine = ["corpus.sqlite.backup.old.npy", "corpus.sqlite.2024.final.npy"]
    for name in mine:
        (tmp / name).write_bytes(b"mine")
    for _ in range(2):
        result = run("index", str(CORPUS), "--index", str(index))
        if result.returncode != 0 or traceback_in(result):
            return f"FAILED: raglab index: {result.stderr.strip()[-100:]}"
    lost = [name for name in mine if not (tmp / name).exists()]
    return f"FAILED: raglab index deleted {lost}" if lost else "held"


def half_written_files(tmp: Path) -> str:
    """After indexing, no temporary file is left and every .npy beside the index loads whole."""
    import numpy as np

    index = tmp / "corpus.sqlite"
    result = run("index", str(CORPUS), "--index", str(index))
    if result.returncode != 0:
        return f"FAILED: raglab index: {result.stderr.strip()[-100:]}"
    ask = run("ask", "How many vacation days do I get?", "--index", str(index), "--tenant", "acme")
    if ask.returncode != 0:
        return f"FAILED: raglab ask: {ask.stderr.strip()[-100:]}"
    leftovers = [p.name for p in tmp.glob(".corpus.sqlite.*")]
    if leftovers:
        return f"FAILED: temporary files left: {leftovers}"
    for path in tmp.glob("corpus.sqlite.*.npy"):
        np.load(path)  # raises on a truncated file
    return "held"


ATTACKS = [
    ("15a the user's own NAME.x.y.npy beside `--index NAME`", users_files_beside_the_index),
    ("15b vector files whole, no temporary file left", half_written_files),
]
