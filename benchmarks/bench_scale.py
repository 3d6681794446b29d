"""Cold `raglab ask` against corpus size: wall time, peak memory, index build time and size.

The command line answers one question per process, so whatever a process rebuilds
before its first answer is paid on every `raglab ask`. For each size this script writes a
generated corpus (deterministic: the same seed gives the same files), indexes it with
`raglab index` (hashing embedder, SQLite store), then times `raglab ask` in fresh
processes (best of --repeat) and reads each child's peak resident memory from
`os.wait4` (ru_maxrss). `--raglab DIR` measures another copy of raglab (e.g. an older
commit) on the same corpora, interleaved with this one, so a before/after comparison
shares the machine's load.

    python benchmarks/bench_scale.py --sizes 2000 20000 200000 \\
        --raglab before=/tmp/raglab-before --out benchmarks/results/scale.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

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


def run_measured(command: list[str], code: Path) -> tuple[float, float, float]:
    """Run `command` with raglab from `code`: (wall s, CPU s, the child's peak resident MB).

    CPU time (user + system) is what a loaded machine distorts least: wall time also
    counts the time spent waiting for a core.
    """
    env = {**os.environ, "PYTHONPATH": str(code)}
    start = time.perf_counter()
    child = subprocess.Popen(  # cwd too: `python -m` puts it first on the import path
        command, env=env, cwd=code, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    _, status, usage = os.wait4(child.pid, 0)
    elapsed = time.perf_counter() - start
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode:
        raise RuntimeError(f"{' '.join(command)} failed: {child.stderr.read().decode()[-2000:]}")
    return elapsed, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024  # kB on Linux


def raglab(*args: str) -> list[str]:
    return [sys.executable, "-m", "raglab", *args]


def index_size_mb(index: Path) -> float:
    """The index file and the files the store keeps beside it (memory-mapped vectors)."""
    files = [index, *index.parent.glob(f"{index.name}.*")]
    return sum(f.stat().st_size for f in files if f.is_file()) / 1e6


def measure(
    sizes: list[int], versions: dict[str, Path], work: Path, repeat: int, keep: bool
) -> list[dict]:
    rows = []
    for n_docs in sizes:
        docs = work / f"docs-{n_docs}"
        generate(docs, n_docs)
        built = {}
        for name, code in versions.items():
            index = work / f"{name}-{n_docs}.sqlite"
            timing = work / f"{name}-{n_docs}.build_s"
            if not (keep and index.exists() and timing.exists()):
                for old in [index, *index.parent.glob(f"{index.name}.*")]:
                    old.unlink(missing_ok=True)
                build_s, _, _ = run_measured(
                    raglab("index", str(docs), "--index", str(index)), code
                )
                timing.write_text(str(build_s))
            build_s = float(timing.read_text())
            built[name] = (index, build_s)
            print(f"{n_docs} docs, {name}: indexed in {build_s:.1f} s", flush=True)
        best = {name: (1e9, 1e9, 0.0) for name in versions}
        for _ in range(repeat):  # interleaved: every version sees the same load
            for name, code in versions.items():
                command = raglab("ask", QUESTION, "--index", str(built[name][0]), *ASKER)
                wall, cpu, rss = run_measured(command, code)
                before = best[name]
                best[name] = (min(before[0], wall), min(before[1], cpu), max(before[2], rss))
        n_chunks = chunk_count(built[next(iter(versions))][0])
        for name in versions:
            index, build_s = built[name]
            row = {
                "version": name,
                "documents": n_docs,
                "chunks": n_chunks,
                "vector_bytes": n_chunks * DIM * 4,
                "cold_ask_s": round(best[name][0], 3),
                "cold_ask_cpu_s": round(best[name][1], 3),
                "peak_rss_mb": round(best[name][2], 1),
                "index_build_s": round(build_s, 1),
                "index_mb": round(index_size_mb(index), 1),
            }
            rows.append(row)
            print(json.dumps(row), flush=True)
    return rows


def chunk_count(index: Path) -> int:
    import sqlite3

    with sqlite3.connect(index) as con:
        return con.execute("SELECT COUNT(*) FROM chunks").fetchone()[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[2000, 20000, 200000])
    parser.add_argument("--repeat", type=int, default=3, help="cold asks per version (best of)")
    parser.add_argument(
        "--raglab",
        action="append",
        default=[],
        metavar="NAME=DIR",
        help="another copy of raglab to measure alongside this one (repeatable)",
    )
    parser.add_argument(
        "--keep-index", action="store_true", help="reuse indexes (and build times) left in --work"
    )
    parser.add_argument("--work", type=Path, default=Path("/tmp/raglab-scale"))
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks/results/scale.json")
    args = parser.parse_args()
    versions = {"current": ROOT} | {
        name: Path(folder) for name, folder in (spec.split("=", 1) for spec in args.raglab)
    }
    args.work.mkdir(parents=True, exist_ok=True)
    load_before = os.getloadavg()
    rows = measure(args.sizes, versions, args.work, args.repeat, args.keep_index)
    result = {
        "rows": [row for row in rows if row["version"] == "current"],
        "compared": [row for row in rows if row["version"] != "current"],
        "question": QUESTION,
        "asker": " ".join(ASKER),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, {platform.platform()}, "
        f"Python {platform.python_version()}",
        "load_average": [round(x, 2) for x in load_before],
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"written to {args.out}")


if __name__ == "__main__":
    main()
