"""How close is the engine's exact top-k to the memory-bandwidth bound?

The stores search with `raglab.retrieve._fast.top_k` (written `top_k` below): the answer
of the reference a learner reads, `raglab.retrieve.vectors.top_k`, computed with a BLAS
screen that scores few rows exactly. Both are timed; the reference scores every row.

One query at a time over 200,000 x 384 float32 unit rows (307 MB, far larger than any
cache), top 10. A search has to read the whole matrix once, so the bound is the time to
read it once, measured in the same run. Several ways to read it are timed and the
FASTEST is taken as the bound, since each of them is an honest lower limit only if
nothing reads faster:

- `M.sum()`: numpy's pairwise summation; simple, but does more than read (not the bound here).
- `M @ ones`: BLAS gemv, the same kernel `top_k` screens with, with the BLAS threads
  available (more than one core can pull from memory at once).
- `einsum("ij,j->i", M, ones)`: numpy's own single-threaded loop.
- `dot(M.ravel(), ones)`: one long BLAS dot product.

Rows of the table: the engine's paths, the reference on unit rows, and the plain
`M @ q` + argpartition for comparison. Both the default BLAS thread count and a single
BLAS thread are measured (threadpoolctl, which comes with scikit-learn). Target:
`top_k(q, UnitMatrix, k)` at >= 0.9 of the bound.

Then two ratios, each side measured in the same run, interleaved, best of several:
- `top_k(q, plain array, k)` (exact cosine, row lengths measured on every call) against
  plain numpy `M @ q` + argpartition + sort of the k on the same plain array (which ranks
  by dot product and has no tie rule). Target >= 0.9.
- a block of queries, `top_k(Q, UnitMatrix, k)`, against plain numpy (one gemm `Q @ M.T`,
  argpartition and sort of each row's k) and against faiss `IndexFlatIP.search` on the
  same unit rows (faiss only when installed). Target >= 0.8 of faiss.
Threads: `top_k` on a plain array shares its blocks over the threads BLAS was given in
the environment (`raglab._threads`), not over threadpoolctl's limit, so the "BLAS
threads: 1" tables still let it use every core. For a fair one-thread comparison run
the whole process with one thread:
    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/bench_topk.py
Run: .venv/bin/python benchmarks/bench_topk.py
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _util import print_table

from raglab.retrieve._fast import top_k
from raglab.retrieve.vectors import UnitMatrix
from raglab.retrieve.vectors import top_k as reference_top_k

try:  # imported here, so that the thread limits below reach its OpenMP and BLAS too
    import faiss
except ImportError:
    faiss = None

N, DIM, K = 200_000, 384, 10
ROUNDS = 25
SEED = 0
BATCH = 64  # queries in the batched comparison
REPEATS = 15  # best of: the machine is shared, the least disturbed run is the honest one


def median_ms(fn: Callable[[int], object], rounds: int = ROUNDS) -> float:
    """Median time of fn(i) for i in range(rounds), in milliseconds."""
    times = []
    for i in range(rounds):
        start = time.perf_counter()
        fn(i)
        times.append(time.perf_counter() - start)
    return float(np.median(times)) * 1e3


def naive(matrix: np.ndarray, q: np.ndarray, k: int) -> np.ndarray:
    """The usual one-liner: scores by BLAS, argpartition, sort the k (no exact tie rule)."""
    scores = matrix @ q
    top = np.argpartition(-scores, k - 1)[:k]
    return top[np.argsort(-scores[top])]


def measure(
    unit: UnitMatrix, plain: np.ndarray, queries: np.ndarray
) -> tuple[float, str, list[list[str]]]:
    rows = unit.rows
    ones = np.ones(DIM, dtype=np.float32)
    flat, flat_ones = rows.ravel(), np.ones(rows.size, dtype=np.float32)
    readers = {
        "M.sum()": lambda i: rows.sum(),
        "M @ ones (BLAS gemv)": lambda i: rows @ ones,
        "einsum(M, ones)": lambda i: np.einsum("ij,j->i", rows, ones),
        "dot(M.ravel(), ones)": lambda i: np.dot(flat, flat_ones),
    }
    reads = {name: median_ms(fn) for name, fn in readers.items()}
    bound_name = min(reads, key=reads.get)
    bound = reads[bound_name]
    searches = {
        "top_k(q, UnitMatrix, k)": lambda i: top_k(queries[i], unit, K),
        "top_k(q, rows, k, normalised=True)": lambda i: top_k(queries[i], rows, K, normalised=True),
        "top_k(q, plain array, k)": lambda i: top_k(queries[i], plain, K),
        "plain M @ q + argpartition": lambda i: naive(rows, queries[i], K),
        "reference top_k(q, rows, k, normalised=True)": lambda i: reference_top_k(
            queries[i], rows, K, normalised=True
        ),
    }
    table = [[f"read once: {name}", f"{ms:.2f}", f"{bound / ms:.2f}"] for name, ms in reads.items()]
    for name, fn in searches.items():
        ms = median_ms(fn)
        table.append([name, f"{ms:.2f}", f"{bound / ms:.2f}"])
    return bound, bound_name, table


def best_of_interleaved(fns: dict[str, Callable[[int], object]], repeats: int) -> dict[str, float]:
    """The best time of each fn(i), in ms, running them in turn so that both sides of a
    ratio see the same moments of a noisy machine."""
    best = dict.fromkeys(fns, float("inf"))
    for i in range(repeats):
        for name, fn in fns.items():
            start = time.perf_counter()
            fn(i)
            best[name] = min(best[name], time.perf_counter() - start)
    return {name: seconds * 1e3 for name, seconds in best.items()}


def plain_ratio(plain: np.ndarray, queries: np.ndarray) -> list[list[str]]:
    """top_k on a plain (not normalised) array against plain numpy on the same array."""
    ms = best_of_interleaved(
        {
            "plain M @ q + argpartition": lambda i: naive(plain, queries[i], K),
            "top_k(q, plain array, k)": lambda i: top_k(queries[i], plain, K),
        },
        REPEATS,
    )
    base = ms["plain M @ q + argpartition"]
    return [[name, f"{t:.1f}", f"{base / t:.2f}"] for name, t in ms.items()]


def naive_block(matrix: np.ndarray, block: np.ndarray, k: int) -> np.ndarray:
    """`naive` for a block of queries: one gemm, then argpartition and sort of each row's k."""
    scores = block @ matrix.T
    top = np.argpartition(-scores, k - 1, axis=1)[:, :k]
    order = np.argsort(-np.take_along_axis(scores, top, axis=1), axis=1)
    return np.take_along_axis(top, order, axis=1)


def batched_ratio(unit: UnitMatrix, block: np.ndarray) -> list[list[str]]:
    """top_k over a block of queries against plain numpy and (when installed) faiss
    IndexFlatIP's batched search; the ratio column is each one's speed against numpy's."""
    fns = {
        f"plain Q @ M.T + argpartition ({BATCH} queries)": lambda i: naive_block(
            unit.rows, block, K
        )
    }
    if faiss is not None:
        index = faiss.IndexFlatIP(DIM)
        index.add(unit.rows)
        fns[f"faiss IndexFlatIP.search ({BATCH} queries)"] = lambda i: index.search(block, K)
    fns[f"top_k(Q, UnitMatrix, k) ({BATCH} queries)"] = lambda i: top_k(block, unit, K)
    ms = best_of_interleaved(fns, 5)
    base = next(iter(ms.values()))
    table = [[name, f"{t:.1f}", f"{base / t:.2f}"] for name, t in ms.items()]
    if faiss is not None:
        agree = float(np.mean(top_k(block, unit, K).indices == index.search(block, K)[1]))
        table.append([f"same indices as faiss: {agree:.1%}", "", ""])
    return table


def ratios(plain: np.ndarray, unit: UnitMatrix, queries: np.ndarray, block: np.ndarray) -> None:
    print(f"\none query, best of {REPEATS} (target >= 0.9)")
    print_table(["operation", "ms", "speed vs plain numpy"], plain_ratio(plain, queries))
    missing = "" if faiss is not None else "; faiss not installed (pip install faiss-cpu)"
    print(f"\nbatched, best of 5 (target >= 0.8 of faiss){missing}")
    print_table(["operation", "ms", "speed vs plain numpy"], batched_ratio(unit, block))


def main() -> None:
    rng = np.random.default_rng(SEED)
    plain = rng.standard_normal((N, DIM), dtype=np.float32)
    unit = UnitMatrix(plain)
    queries = rng.standard_normal((max(ROUNDS, REPEATS), DIM), dtype=np.float32)
    block = UnitMatrix(rng.standard_normal((BATCH, DIM), dtype=np.float32)).rows
    for q in queries[:5]:  # the engine's top-k gives the reference's answer
        expected = reference_top_k(q, unit, K)
        got = top_k(q, unit, K)
        assert np.array_equal(got[0], expected[0]) and np.array_equal(got[1], expected[1])

    try:
        from threadpoolctl import threadpool_info, threadpool_limits
    except ImportError:
        settings = [("default BLAS threads", contextlib.nullcontext)]
    else:
        default = max(
            (p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"), default=1
        )
        settings = [
            (f"BLAS threads: {default} (default)", contextlib.nullcontext),
            ("BLAS threads: 1", lambda: threadpool_limits(limits=1)),
        ]
    print(
        f"{N} x {DIM} float32 unit rows ({N * DIM * 4 / 1e6:.0f} MB), k={K}, "
        f"median of {ROUNDS} queries"
    )
    for label, context in settings:
        with context():
            bound, bound_name, table = measure(unit, plain, queries)
        print(
            f"\n{label}; bound = fastest read = {bound_name}: {bound:.2f} ms "
            f"({N * DIM * 4 / 1e6 / bound:.0f} GB/s)"
        )
        print_table(
            ["operation", "ms", "fraction of bound (target >= 0.9 for top_k(q, UnitMatrix, k))"],
            table,
        )
        with context():
            ratios(plain, unit, queries, block)


if __name__ == "__main__":
    main()
