"""Exact against approximate (HNSW) search: recall@10 against speed, and what grows with N.

Exact search is the engine's `top_k` (`raglab.retrieve._fast`, what the stores call) over a `UnitMatrix` (every row scored); approximate search
is hnswlib's HNSW graph (the algorithm Qdrant uses), over the same unit rows with the inner
product. For each index (M, ef_construction) and each ef_search:

- recall@10: the share of the exact top 10 that HNSW returns, over QUERIES queries;
- latency and queries/s, one query at a time on ONE core (BLAS and hnswlib both limited to
  one thread, so neither wins by taking the other's core);
- build time (one thread, so the graph is the same on every run) and the index's bytes per
  vector (hnswlib's saved index: the vectors, the graph's links, the labels).

Then how each side grows: the M=16 index is built in stages (25k, 50k, 100k vectors), which
is also the cost of inserting into an index that exists (re-index by insertion), and the
exact and HNSW latencies are measured at each size.

The machine is shared: every timing is the best of REPEATS rounds, and each round times
every configuration, interleaved, so load hits them alike. The load average is recorded.

The vectors are synthetic (`raglab.workbook.viz_scale.clustered_unit_vectors`: 1,000 topics of
uneven size, subtopics, a common direction; cosines shaped like MiniLM's on prose), and
the queries are drawn like the documents. What that hides: real corpora hold near-
duplicates (overlap windows, boilerplate) and have a lower intrinsic dimension, which
makes HNSW's job easier; real questions are short and sit apart from the documents (the
query-document gap), which makes it harder. Check recall on your own vectors before
trusting any ef_search from here.

Run (hnswlib is not a raglab dependency; install it into a venv of your own):
    python -m venv ../hnsw-venv && ../hnsw-venv/bin/pip install hnswlib numpy scikit-learn
    PYTHONPATH=$PWD ../hnsw-venv/bin/python benchmarks/bench_hnsw.py
It writes benchmarks/results/hnsw.json, which notebook 11 draws. `--vectors 20000` for a
quick try (it then writes nothing unless --out is given).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from importlib import metadata
from pathlib import Path

import hnswlib
import numpy as np
from threadpoolctl import threadpool_limits

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _util import print_table

from raglab.retrieve._fast import top_k  # what the stores call: the reference's answer, faster
from raglab.retrieve.vectors import UnitMatrix
from raglab.workbook.checks.scale import reference_knn_recall as recall_at_k  # notebook 11's
from raglab.workbook.viz_scale import clustered_unit_vectors

VECTORS, DIM, K = 100_000, 384, 10
QUERIES = 500  # for recall and HNSW timing
EXACT_QUERIES = 100  # exact search reads every row: fewer queries time it just as well
REPEATS = 3
SEED = 0
INDEXES = ((8, 100), (16, 50), (16, 100), (32, 100))  # (M, ef_construction)
EF_SEARCH = (10, 16, 32, 64, 128, 256)
GROWTH = (25_000, 50_000, 100_000)  # the M=16, ef_construction=100 index, built in stages
GROWN = (16, 100)  # the index built in stages, reused by the sweep (a graph built in one go
# with one thread is the same graph)
GROWTH_EF = 64
OUT = Path(__file__).resolve().parent / "results" / "hnsw.json"


def seconds_per_query(search: Callable[[np.ndarray], object], queries: np.ndarray) -> float:
    """Mean seconds per query, one query at a time (the latency a single asker sees)."""
    start = time.perf_counter()
    for q in queries:
        search(q)
    return (time.perf_counter() - start) / len(queries)


def build(vectors: np.ndarray, m: int, ef_construction: int) -> tuple[hnswlib.Index, float]:
    index = hnswlib.Index(space="ip", dim=vectors.shape[1])
    index.init_index(
        max_elements=len(vectors), M=m, ef_construction=ef_construction, random_seed=SEED
    )
    start = time.perf_counter()
    index.add_items(vectors, np.arange(len(vectors)), num_threads=1)
    return index, time.perf_counter() - start


def bytes_per_vector(index: hnswlib.Index) -> float:
    """The saved index's size per vector: what it holds in memory, the vectors included."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "index.bin"
        index.save_index(str(path))
        return path.stat().st_size / index.get_current_count()


def hnsw_search(index: hnswlib.Index, ef: int) -> Callable[[np.ndarray], object]:
    def search(q: np.ndarray) -> object:
        index.set_ef(ef)
        return index.knn_query(q, k=K, num_threads=1)

    return search


def sweep(vectors: np.ndarray, queries: np.ndarray, grown: tuple[hnswlib.Index, float]) -> dict:
    """Every index and ef_search against exact search, on all the vectors."""
    matrix = UnitMatrix(vectors)
    start = time.perf_counter()
    UnitMatrix(vectors)  # exact search's whole "index": the rows, normalised once
    exact_build = time.perf_counter() - start
    exact = top_k(queries, matrix, K).indices
    indexes = []
    for m, ef_construction in INDEXES:
        if (m, ef_construction) == GROWN:
            index, seconds = grown
        else:
            index, seconds = build(vectors, m, ef_construction)
        print(f"built M={m} ef_construction={ef_construction} in {seconds:.1f} s", flush=True)
        indexes.append(
            {"M": m, "ef_construction": ef_construction, "index": index, "build_s": seconds}
        )
    recall = {
        (i, ef): recall_at_k(hnsw_search(entry["index"], ef)(queries)[0], exact)
        for i, entry in enumerate(indexes)
        for ef in EF_SEARCH
    }
    exact_search = lambda q: top_k(q, matrix, K)  # noqa: E731
    timings = interleaved(
        {
            "exact": (exact_search, queries[:EXACT_QUERIES]),
            **{
                (i, ef): (hnsw_search(entry["index"], ef), queries)
                for i, entry in enumerate(indexes)
                for ef in EF_SEARCH
            },
        }
    )
    return {
        "exact": {
            "latency_ms": timings["exact"] * 1e3,
            "queries_per_s": 1 / timings["exact"],
            "build_s": exact_build,
            "bytes_per_vector": matrix.rows.itemsize * DIM,
        },
        "hnsw": [
            {
                "M": entry["M"],
                "ef_construction": entry["ef_construction"],
                "build_s": entry["build_s"],
                "bytes_per_vector": bytes_per_vector(entry["index"]),
                "searches": [
                    {
                        "ef_search": ef,
                        "recall_at_10": recall[(i, ef)],
                        "latency_ms": timings[(i, ef)] * 1e3,
                        "queries_per_s": 1 / timings[(i, ef)],
                    }
                    for ef in EF_SEARCH
                ],
            }
            for i, entry in enumerate(indexes)
        ],
    }


def interleaved(jobs: dict) -> dict:
    """Best seconds per query of each job over REPEATS rounds, every job in every round."""
    best = {name: float("inf") for name in jobs}
    for _ in range(REPEATS):
        for name, (search, queries) in jobs.items():
            best[name] = min(best[name], seconds_per_query(search, queries))
    return best


def growth(
    vectors: np.ndarray, queries: np.ndarray, sizes: Sequence[int]
) -> tuple[list[dict], hnswlib.Index, float]:
    """Build the GROWN index in stages; at each size, exact and HNSW latency and recall.

    Returns the rows, the index on all the vectors, and its total build time.
    """
    m, ef_construction = GROWN
    index = hnswlib.Index(space="ip", dim=vectors.shape[1])
    index.init_index(max_elements=sizes[-1], M=m, ef_construction=ef_construction, random_seed=SEED)
    rows, built, total = [], 0, 0.0
    for n in sizes:
        start = time.perf_counter()
        index.add_items(vectors[built:n], np.arange(built, n), num_threads=1)
        added = time.perf_counter() - start
        total += added
        matrix = UnitMatrix(vectors[:n])
        exact = top_k(queries, matrix, K).indices
        search = hnsw_search(index, GROWTH_EF)
        timings = interleaved(
            {
                "exact": (lambda q, m=matrix: top_k(q, m, K), queries[:EXACT_QUERIES]),
                "hnsw": (search, queries),
            }
        )
        rows.append(
            {
                "vectors": n,
                "exact_latency_ms": timings["exact"] * 1e3,
                "hnsw_latency_ms": timings["hnsw"] * 1e3,
                "hnsw_recall_at_10": recall_at_k(search(queries)[0], exact),
                "build_s": total,
                "insert_ms_per_vector": added / (n - built) * 1e3,
            }
        )
        print(f"grown to {n:,}: {rows[-1]}", flush=True)
        built = n
    return rows, index, total


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vectors", type=int, default=VECTORS)
    parser.add_argument("--out", type=Path, default=None, help=f"default: {OUT} at full size")
    args = parser.parse_args(argv)
    out = args.out or (OUT if args.vectors == VECTORS else None)
    sizes = [n for n in GROWTH if n < args.vectors] + [args.vectors]
    start = time.perf_counter()
    data = clustered_unit_vectors(args.vectors, queries=QUERIES, dim=DIM, seed=SEED)
    print(f"{args.vectors:,} synthetic vectors in {time.perf_counter() - start:.1f} s", flush=True)
    with threadpool_limits(limits=1):  # one core for exact search too
        grown, index, seconds = growth(data.vectors, data.queries, sizes)
        results = sweep(data.vectors, data.queries, (index, seconds))
        results["growth"] = grown
    results["growth_ef_search"] = GROWTH_EF
    results["growth_index"] = {"M": GROWN[0], "ef_construction": GROWN[1]}
    results["setup"] = {
        "vectors": args.vectors,
        "dim": DIM,
        "k": K,
        "queries": QUERIES,
        "exact_queries": EXACT_QUERIES,
        "repeats": REPEATS,
        "threads": 1,
        "data": "raglab.workbook.viz_scale.clustered_unit_vectors(seed=0): 1,000 topics, unit float32",
        "exact": "raglab.retrieve._fast.top_k over a UnitMatrix",
        "library": f"hnswlib {metadata.version('hnswlib')}, space='ip'",
        "numpy": np.__version__,
        "python": platform.python_version(),
        "load_average": [round(x, 2) for x in os.getloadavg()],
    }
    report(results)
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
        print(f"wrote {out}")
    return 0


def report(results: dict) -> None:
    exact = results["exact"]
    print(
        f"\nexact: {exact['latency_ms']:.2f} ms/query, {exact['queries_per_s']:,.0f} queries/s, "
        f"{exact['bytes_per_vector']:.0f} B/vector, build {exact['build_s']:.2f} s"
    )
    rows = []
    for index in results["hnsw"]:
        for s in index["searches"]:
            rows.append(
                [
                    index["M"],
                    index["ef_construction"],
                    s["ef_search"],
                    f"{s['recall_at_10']:.3f}",
                    f"{s['latency_ms']:.3f}",
                    f"{s['queries_per_s']:,.0f}",
                    f"{s['queries_per_s'] / exact['queries_per_s']:.0f}x",
                    f"{index['build_s']:.1f}",
                    f"{index['bytes_per_vector']:.0f}",
                ]
            )
    header = [
        "M",
        "efC",
        "ef",
        "recall@10",
        "ms/query",
        "queries/s",
        "vs exact",
        "build s",
        "B/vector",
    ]
    print_table(header, rows)
    print()
    growth_rows = [
        [
            f"{g['vectors']:,}",
            f"{g['exact_latency_ms']:.2f}",
            f"{g['hnsw_latency_ms']:.3f}",
            f"{g['hnsw_recall_at_10']:.3f}",
            f"{g['build_s']:.1f}",
            f"{g['insert_ms_per_vector']:.3f}",
        ]
        for g in results["growth"]
    ]
    print_table(
        ["vectors", "exact ms", "HNSW ms", "HNSW recall@10", "build s (cum.)", "insert ms/vector"],
        growth_rows,
    )
    print(f"load average: {results['setup']['load_average']}")


if __name__ == "__main__":
    raise SystemExit(main())
