"""Cold `raglab ask` against corpus size: CPU and wall time, peak memory, index build time.

The command line answers one question per process, so whatever a process rebuilds
before its first answer is paid on every `raglab ask`. For each size this script writes a
generated corpus (deterministic: the same seed gives the same files), indexes it with
`raglab index` (hashing embedder, SQLite store), then times `raglab ask` in fresh
processes (best of --repeat) and reads each child's CPU time and peak resident memory
from `os.wait4` (ru_maxrss). In the same rounds it times the floors: a bare interpreter,
`import numpy` and `raglab --help`. `--raglab NAME=DIR` measures another copy of raglab
(e.g. an older commit) on the same corpora, interleaved with this one, so a before/after
comparison shares the machine's load.

Large sizes take long to index (200,000 documents: 12 minutes on 2 loaded cores), so
the work is resumable: corpora and index files stay in --work, and an index is built again
only when the copy of raglab that reads it refuses it (an older schema, an unfinished first
build). `--build-only` prepares the indexes without asking (run it in the background);
the results file is rewritten after each size, and with `--keep-rows` it keeps the rows
of sizes not measured in this run, so sizes can be measured in separate runs.

    nohup python benchmarks/bench_scale.py --sizes 200000 --build-only > scale.log 2>&1 &
    python benchmarks/bench_scale.py --sizes 2000 20000 200000 \\
        --raglab before=/tmp/raglab-before --out benchmarks/results/scale.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import sqlite3
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

from _util import add_copies_option, compiled, copies, run_measured

ROOT = Path(__file__).resolve().parent.parent
TENANTS = ("acme", "globex", "initech", "umbrella")
GROUPS = ("hr", "eng", "finance", "legal")
QUESTION = "What is the refund policy for damaged equipment in the Berlin office?"
ASKER = ("--tenant", "acme", "--groups", "hr")
DIM = 384  # the hashing embedder's default


def generate(folder: Path, n_docs: int, seed: int = 0) -> None:
    """`n_docs` markdown documents of 60 to 140 words from a Zipf-like vocabulary.

    A quarter of the documents belong to each tenant; half of each tenant's are open to
    all its users, the rest restricted to one group. Already written: left as it is.
    """
    done = folder / ".complete"
    if done.exists() and done.read_text() == f"{n_docs} {seed}":
        return
    rng = random.Random(seed)
    common = [
        "the",
        "a",
        "of",
        "to",
        "and",
        "in",
        "is",
        "for",
        "on",
        "with",
        "by",
        "policy",
        "refund",
        "office",
        "equipment",
    ]
    vocabulary = common + [f"w{i}" for i in range(20_000)]
    weights = [1.0 / (rank + 1) for rank in range(len(vocabulary))]
    for d in range(n_docs):
        tenant = TENANTS[d % len(TENANTS)]
        groups = [] if rng.random() < 0.5 else [rng.choice(GROUPS)]
        words = rng.choices(vocabulary, weights, k=rng.randint(60, 140))
        path = folder / tenant / f"doc{d:07d}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        text = f"---\ntitle: Document {d}\ntenant: {tenant}\ngroups: [{', '.join(groups)}]\n---\n"
        path.write_text(text + "# Document\n\n" + " ".join(words).capitalize() + ".\n")
    done.write_text(f"{n_docs} {seed}")


def raglab(*args: str) -> list[str]:
    return [sys.executable, "-m", "raglab", *args]


FLOORS = {
    "python -c pass": [sys.executable, "-c", "pass"],
    "import numpy": [sys.executable, "-c", "import numpy"],
    "raglab --help": raglab("--help"),
}
"""Start-up without a question, timed in the same rounds as the asks (`floor_cpu_s`)."""


def index_files(index: Path) -> list[Path]:
    """The index file and the files the store keeps beside it (memory-mapped vectors)."""
    return [index, *index.parent.glob(f"{index.name}.*")]


def index_size_mb(index: Path) -> float:
    return sum(f.stat().st_size for f in index_files(index) if f.is_file()) / 1e6


def readable(index: Path, code: Path) -> bool:
    """Whether raglab from `code` opens `index` (not older, not an unfinished first build)."""
    opens = "import sys; from raglab.store.sqlite_store import SQLiteStore; SQLiteStore.open(sys.argv[1])"
    done = subprocess.run(
        [sys.executable, "-c", opens, str(index)],
        env={**os.environ, "PYTHONPATH": str(code)},
        cwd=code,  # `-c` puts the working directory first on the import path
        capture_output=True,
    )
    return done.returncode == 0


def file_limit(n_docs: int, code: Path) -> list[str]:
    """`raglab index`'s option allowing `n_docs` files, for a raglab that limits them."""
    usage = subprocess.run(
        raglab("index", "--help"),
        env={**os.environ, "PYTHONPATH": str(code)},
        cwd=code,
        capture_output=True,
        text=True,
    ).stdout
    return ["--max-files", str(n_docs)] if "--max-files" in usage else []


def build(n_docs: int, name: str, code: Path, work: Path) -> tuple[Path, float | None]:
    """The index of the `n_docs` corpus for raglab from `code`, and its build time in s.

    An index left by an earlier run is kept when that raglab reads it; its build time is
    the one recorded then (None if none was).
    """
    docs = work / f"docs-{n_docs}"
    generate(docs, n_docs)
    index, timing = work / f"{name}-{n_docs}.sqlite", work / f"{name}-{n_docs}.build_s"
    if not (index.exists() and readable(index, code)):
        for old in [*index_files(index), timing]:
            old.unlink(missing_ok=True)
        print(f"{n_docs} docs, {name}: indexing ({time.strftime('%H:%M:%S')})", flush=True)
        command = raglab("index", str(docs), "--index", str(index), *file_limit(n_docs, code))
        build_s, _, _ = run_measured(command, code)
        timing.write_text(str(build_s))
    build_s = float(timing.read_text()) if timing.exists() else None
    took = "?" if build_s is None else f"{build_s:.1f}"
    print(f"{n_docs} docs, {name}: indexed in {took} s", flush=True)
    return index, build_s


def ask(
    built: dict[str, tuple[Path, float | None]], versions: dict[str, Path], repeat: int
) -> tuple[dict[str, tuple[float, float, float]], dict[str, float]]:
    """Best (wall s, CPU s) and the highest peak MB of cold asks per version, and the best
    CPU s of each floor, every command taking its turn in each round (the same load)."""
    best = {name: (float("inf"), float("inf"), 0.0) for name in versions}
    floors = dict.fromkeys(FLOORS, float("inf"))
    for _ in range(repeat):
        for name, code in versions.items():
            command = raglab("ask", QUESTION, "--index", str(built[name][0]), *ASKER)
            wall, cpu, rss = run_measured(command, code)
            before = best[name]
            best[name] = (min(before[0], wall), min(before[1], cpu), max(before[2], rss))
        for what, command in FLOORS.items():
            floors[what] = min(floors[what], run_measured(command, versions["current"])[1])
    return best, floors


def measure(n_docs: int, versions: dict[str, Path], work: Path, repeat: int) -> list[dict]:
    """One row per version for a corpus of `n_docs` documents (indexes built if needed)."""
    built = {name: build(n_docs, name, code, work) for name, code in versions.items()}
    load = [round(x, 2) for x in os.getloadavg()]
    best, floors = ask(built, versions, repeat)
    n_chunks = chunk_count(built["current"][0])
    rows = []
    for name in versions:
        index, build_s = built[name]
        wall, cpu, rss = best[name]
        row = {
            "version": name,
            "documents": n_docs,
            "chunks": n_chunks,
            "vector_bytes": n_chunks * DIM * 4,
            "cold_ask_s": round(wall, 3),
            "cold_ask_cpu_s": round(cpu, 3),
            "peak_rss_mb": round(rss, 1),
            "index_build_s": None if build_s is None else round(build_s, 1),
            "index_mb": round(index_size_mb(index), 1),
            "floor_cpu_s": {what: round(t, 3) for what, t in floors.items()},
            "load_average": load,
            "date": datetime.now(UTC).isoformat(timespec="seconds"),
        }
        rows.append(row)
        print(json.dumps(row), flush=True)
    return rows


def chunk_count(index: Path) -> int:
    with sqlite3.connect(index) as con:
        return con.execute("SELECT COUNT(*) FROM chunks").fetchone()[0]


def write_results(out: Path, rows: list[dict], args: argparse.Namespace, load: list[float]) -> None:
    """`out` with `rows`; with --keep-rows, also its rows of (version, size) not measured now.

    The floors at the top are those measured with the largest corpus of this run.
    """
    kept = json.loads(out.read_text()) if args.keep_rows and out.exists() else {}
    measured = {(row["version"], row["documents"]) for row in rows}
    old = [
        row
        for row in kept.get("rows", []) + kept.get("compared", [])
        if (row["version"], row["documents"]) not in measured
    ]
    every = sorted(old + rows, key=lambda row: row["documents"])
    result = {
        "rows": [row for row in every if row["version"] == "current"],
        "compared": [row for row in every if row["version"] != "current"],
        "question": QUESTION,
        "asker": " ".join(ASKER),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, {platform.platform()}, "
        f"Python {platform.python_version()}",
        "load_average": load,
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "floor_cpu_s": rows[-1]["floor_cpu_s"],
        "notes": args.notes,
    }
    if not result["compared"]:  # the figure draws "before" only when there is one
        del result["compared"]
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"written to {out}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[2000, 20000, 200000])
    parser.add_argument("--repeat", type=int, default=5, help="cold asks per version (best of)")
    add_copies_option(parser)
    parser.add_argument(
        "--build-only", action="store_true", help="generate and index only; measure nothing"
    )
    parser.add_argument(
        "--keep-rows",
        action="store_true",
        help="keep the rows of --out for sizes (and versions) not measured in this run",
    )
    parser.add_argument("--notes", default="", help="what a reader of the results should know")
    parser.add_argument("--work", type=Path, default=Path("/tmp/raglab-scale"))
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks/results/scale.json")
    args = parser.parse_args()
    versions = copies(args, ROOT)
    versions = {name: compiled(code) for name, code in versions.items()}
    args.work.mkdir(parents=True, exist_ok=True)
    load = [round(x, 2) for x in os.getloadavg()]
    rows: list[dict] = []
    for n_docs in sorted(args.sizes):
        if args.build_only:
            for name, code in versions.items():
                build(n_docs, name, code, args.work)
            continue
        rows += measure(n_docs, versions, args.work, args.repeat)
        write_results(args.out, rows, args, load)  # after each size: a long run keeps its rows


if __name__ == "__main__":
    main()
