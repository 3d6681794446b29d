"""Speed of raglab's numpy MiniLM against sentence-transformers, on the same texts and threads.

    python benchmarks/bench_neural.py [--threads 1 2]

Two workloads: short questions (a sentence of the sample corpus each), and the texts an
index really embeds, the sample corpus cut by raglab's default chunker (800 characters,
100 overlapping). Each thread count runs in its own process, since BLAS reads its thread
count when numpy is first imported; sentence-transformers gets the same count
(torch.set_num_threads). Each figure is the best of two timed runs, the two embedders
alternating, because the machine is shared and noisy: compare ratios from one run.

Run it from an environment that also holds sentence-transformers and torch (CPU), for
example `python3 -m venv .venv-ref && .venv-ref/bin/pip install torch==2.13.0
sentence-transformers -e .`; without them only the numpy figures are printed.
The model is built from the local weights raglab uses (no download).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
REPEATS = 2


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2], help="thread counts")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    return parser.parse_args()


def workloads() -> dict[str, list[str]]:
    """label -> texts, both from the sample corpus in data/."""
    from raglab import chunk

    texts = [p.read_text(encoding="utf-8") for p in sorted((ROOT / "data").rglob("*.md"))]
    sentences = [
        line.strip()
        for text in texts
        for line in text.replace(". ", ".\n").split("\n")
        if len(line.split()) >= 6
    ]
    chunks = [piece for text in texts for piece in chunk(text, 800, 100)]
    return {"short": sentences[:300], "chunk": chunks}


def timed(fn) -> tuple[float, object]:
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


def worker(threads: int) -> dict:
    """Timings at `threads` threads; run in a fresh process (see main)."""
    import numpy as np

    from raglab.embed.minilm import MiniLMEmbedder, find_model_dir

    embedder = MiniLMEmbedder()
    embedder.embed(["warm up"])  # load outside the timing
    try:
        import torch
        from sentence_transformers import SentenceTransformer
    except ImportError:
        model = None
    else:
        torch.set_num_threads(threads)
        model = SentenceTransformer(str(find_model_dir()), device="cpu")
        model.encode(["warm up"])
    results = {}
    for label, texts in workloads().items():
        row = {"texts": len(texts), "chars": float(np.mean([len(t) for t in texts]))}
        row["tokens"] = float(np.mean([len(embedder.tokenize(t)) for t in texts]))
        times = {"numpy": float("inf"), "st": float("inf")}
        for _ in range(REPEATS):  # alternate, so both see the same noise
            numpy_s, ours = timed(lambda: embedder.embed(texts))  # noqa: B023
            times["numpy"] = min(times["numpy"], numpy_s)
            if model is not None:
                st_s, theirs = timed(
                    lambda: model.encode(texts, batch_size=32, normalize_embeddings=True)  # noqa: B023
                )
                times["st"] = min(times["st"], st_s)
        tokenizer = MiniLMEmbedder()  # a fresh word cache: tokenizing as a first embed does
        tokenizer_s, _ = timed(lambda: [tokenizer.tokenize(t) for t in texts])  # noqa: B023
        row["numpy_per_s"] = len(texts) / times["numpy"]
        row["tokenizer_share"] = tokenizer_s / times["numpy"]
        if model is not None:
            row["st_per_s"] = len(texts) / times["st"]
            row["min_cosine"] = float(np.sum(ours * theirs, axis=1).min())
        results[label] = row
    return results


def run_worker(threads: int) -> dict:
    env = dict(os.environ, HF_HUB_OFFLINE="1", HF_HUB_DISABLE_PROGRESS_BARS="1")
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        env[var] = str(threads)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    run = subprocess.run(
        [sys.executable, __file__, "--worker", "--threads", str(threads)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(run.stdout.strip().splitlines()[-1])


def main() -> None:
    args = parse_args()
    if args.worker:
        print(json.dumps(worker(args.threads[0])))
        return
    sys.path.insert(0, str(Path(__file__).parent))
    from _util import print_table

    print("all-MiniLM-L6-v2: raglab's numpy forward pass against sentence-transformers")
    header = ["texts", "threads", "numpy texts/s", "s-t texts/s", "numpy / s-t",
              "min cosine", "WordPiece share"]  # fmt: skip
    rows = []
    for threads in args.threads:
        for label, r in run_worker(threads).items():
            st = r.get("st_per_s")
            rows.append(
                (
                    f"{label}: {r['texts']} × {r['chars']:.0f} chars ({r['tokens']:.0f} tokens)",
                    threads,
                    f"{r['numpy_per_s']:.1f}",
                    "—" if st is None else f"{st:.1f}",
                    "—" if st is None else f"{r['numpy_per_s'] / st:.2f}x",
                    "—" if st is None else f"{r['min_cosine']:.6f}",
                    f"{r['tokenizer_share']:.0%}",
                )
            )
            print("  ", " | ".join(map(str, rows[-1])), flush=True)  # progress: runs are slow
    print_table(header, rows)


if __name__ == "__main__":
    main()
