"""Speed of raglab.minilm's numpy MiniLM, and of sentence-transformers when it is installed.

    python benchmarks/bench_neural.py [--threads 1]

From the project's .venv it times the numpy forward pass. From an environment that also
holds sentence-transformers and torch (.venv-ref, see scripts/make_minilm_reference.py) it
times that too, on the same sentences and thread count, and prints the ratio. The machine
is shared and noisy: compare figures from one run, not across runs.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--threads", type=int, default=1, help="BLAS / torch threads")
    return parser.parse_args()


ARGS = parse_args()
# Thread counts must be set before numpy (and its BLAS) is first imported.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = str(ARGS.threads)
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
sys.path.insert(0, str(ROOT))  # runs from an environment where raglab is not installed too

import numpy as np

from raglab.minilm import MiniLMEmbedder, find_model_dir

# (label, sentences, words each): short queries, and chunks the size of raglab's default
# 800-character chunk.
WORKLOADS = [("short", 500, 36), ("chunk", 64, 140)]

COLD_NUMPY = "from raglab.minilm import MiniLMEmbedder; MiniLMEmbedder().embed(['hello'])"
COLD_ST = (
    "from sentence_transformers import SentenceTransformer; from raglab.minilm import "
    "find_model_dir; SentenceTransformer(str(find_model_dir()), device='cpu').encode(['hello'])"
)


def sentences(n: int, words: int) -> list[str]:
    """`n` deterministic sentences of `words` words cut from the sample corpus."""
    text = " ".join(p.read_text(encoding="utf-8") for p in sorted((ROOT / "data").rglob("*.md")))
    pool = text.split() or ["retrieval", "augmented", "generation"]
    rng = np.random.default_rng(0)
    starts = rng.integers(0, max(1, len(pool) - words), size=n)
    return [" ".join(pool[s : s + words]) for s in starts]


def cold_seconds(statement: str) -> float:
    """Wall time of `statement` in a fresh interpreter: imports, loading, one sentence."""
    code = (
        f"import time; t = time.perf_counter(); import sys; sys.path.insert(0, {str(ROOT)!r}); "
        f"{statement}; print(time.perf_counter() - t)"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return float(run.stdout.strip().splitlines()[-1])


def timed(fn) -> tuple[float, object]:
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux reports KiB


def main() -> None:
    try:
        import torch
        from sentence_transformers import SentenceTransformer
    except ImportError:
        model = None
    else:
        torch.set_num_threads(ARGS.threads)
        model = SentenceTransformer(str(find_model_dir()), device="cpu")

    embedder = MiniLMEmbedder()
    embedder.embed(["warm up"])  # load outside the timing
    rows = [
        (
            "numpy cold start (import + load + sha256 + 1 sentence)",
            f"{cold_seconds(COLD_NUMPY):.2f} s",
        )
    ]
    if model is not None:
        rows.append(("sentence-transformers cold start (same)", f"{cold_seconds(COLD_ST):.2f} s"))
    for label, n, words in WORKLOADS:
        texts = sentences(n, words)
        tokens = np.mean([len(embedder.tokenize(t)) for t in texts])
        name = f"{label}: {n} × {tokens:.0f} tokens"
        tok_s, _ = timed(lambda: [embedder.tokenize(t) for t in texts])  # noqa: B023
        numpy_s, ours = timed(lambda: embedder.embed(texts))  # noqa: B023
        rows.append((f"{name}, WordPiece alone (words cached)", f"{n / tok_s:,.0f} sentences/s"))
        rows.append((f"{name}, numpy embed", f"{n / numpy_s:.1f} sentences/s"))
        if model is None:
            continue
        st_s, theirs = timed(lambda: model.encode(texts, batch_size=32))  # noqa: B023
        rows.append((f"{name}, sentence-transformers", f"{n / st_s:.1f} sentences/s"))
        rows.append((f"{name}, numpy time / s-t time", f"{numpy_s / st_s:.2f}"))
        rows.append((f"{name}, min cosine numpy vs s-t", f"{np.sum(ours * theirs, 1).min():.6f}"))
    if model is None:
        rows.append(("sentence-transformers", "not installed here (run from .venv-ref)"))
    both = "" if model is None else " (numpy + sentence-transformers in one process)"
    rows.append((f"peak memory{both}", f"{peak_mb():.0f} MB"))
    print(f"all-MiniLM-L6-v2, {ARGS.threads} thread(s)")
    width = max(len(label) for label, _ in rows)
    for label, value in rows:
        print(f"  {label:<{width}}  {value}")


if __name__ == "__main__":
    main()
