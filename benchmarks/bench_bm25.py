"""How fast is raglab's BM25 against bm25s and rank_bm25?

A seeded corpus of 100,000 generated documents (~60 words each, Zipfian vocabulary)
and 1,000 queries (2-5 words from the same distribution, so common words with long
posting lists turn up often). Compared, in one run:

- fit time: raglab `BM25().fit(texts)` (tokenising included) against bm25s
  (`method="lucene"`, numpy backend), with its own tokeniser and on pre-tokenised input.
- queries per second, one query at a time, top 10; bm25s also in one batched call.
- rank_bm25's BM25Okapi on the first 10,000 documents, for scale.

Targets: raglab's fit time and queries/s at least equal to bm25s's.
Run: .venv/bin/python benchmarks/bench_bm25.py   (bm25s and rank_bm25 are optional)
"""

from __future__ import annotations

import itertools
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _util import make_words, print_table

from raglab.retrieve.bm25 import BM25, tokenize

N_DOCS = 100_000
N_QUERIES = 1_000
VOCABULARY = 30_000
K = 10
SEED = 0
RANK_BM25_DOCS = 10_000
RANK_BM25_QUERIES = 100


def corpus(seed: int = SEED) -> tuple[list[str], list[str]]:
    """Seeded documents and queries; word r (1-based rank) has probability ∝ 1/r (Zipf)."""
    import random

    rng = np.random.default_rng(seed)
    words = np.array(make_words(VOCABULARY, random.Random(seed)))
    p = 1.0 / np.arange(1, VOCABULARY + 1)
    p /= p.sum()
    lengths = rng.integers(40, 81, size=N_DOCS)  # 60 words on average
    ids = rng.choice(VOCABULARY, size=int(lengths.sum()), p=p)
    bounds = np.concatenate(([0], np.cumsum(lengths)))
    texts = [" ".join(words[ids[a:b]]) for a, b in itertools.pairwise(bounds)]
    q_lengths = rng.integers(2, 6, size=N_QUERIES)
    queries = [" ".join(words[rng.choice(VOCABULARY, size=n, p=p)]) for n in q_lengths]
    return texts, queries


def timed(fn):
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


def per_query(search, queries) -> float:
    """Queries per second, one query at a time."""
    seconds, _ = timed(lambda: [search(q) for q in queries])
    return len(queries) / seconds


def main() -> None:
    texts, queries = corpus()
    print(
        f"{N_DOCS} documents, "
        f"{sum(len(t.split()) for t in texts) / N_DOCS:.0f} words each on average; "
        f"{N_QUERIES} queries, top {K}"
    )
    rows = []
    t_fit, ours = timed(lambda: BM25().fit(texts))
    qps = per_query(lambda q: ours.search(q, K), queries)
    rows.append(["raglab BM25", f"{t_fit:.2f}", "", f"{qps:.0f}", ""])

    try:
        import bm25s
    except ImportError:
        rows.append(["bm25s", "not installed", "", "", ""])
    else:

        def bm25s_fit(tokens):
            model = bm25s.BM25(method="lucene", k1=1.5, b=0.75, backend="numpy")
            model.index(tokens, show_progress=False)
            return model

        t_own, _ = timed(
            lambda: bm25s_fit(bm25s.tokenize(texts, stopwords=None, show_progress=False))
        )
        pre = [tokenize(t) for t in texts]
        t_pre, model = timed(lambda: bm25s_fit(pre))
        q_tokens = [tokenize(q) for q in queries]
        bm_qps = per_query(
            lambda toks: model.retrieve(
                [toks], k=K, show_progress=False, n_threads=0, backend_selection="numpy"
            ),
            q_tokens,
        )
        t_batch, _ = timed(
            lambda: model.retrieve(
                q_tokens, k=K, show_progress=False, n_threads=0, backend_selection="numpy"
            )
        )
        bm_batch = N_QUERIES / t_batch
        rows.append(
            ["bm25s lucene, own tokenizer", f"{t_own:.2f}", f"{t_own / t_fit:.1f}x", "", ""]
        )
        rows.append(
            [
                "bm25s lucene, pre-tokenised",
                f"{t_pre:.2f}",
                f"{t_pre / t_fit:.1f}x",
                f"{bm_qps:.0f}",
                f"{qps / bm_qps:.1f}x",
            ]
        )
        rows.append(
            [
                "bm25s lucene, 1000 queries batched",
                "",
                "",
                f"{bm_batch:.0f}",
                f"{qps / bm_batch:.1f}x",
            ]
        )
        # Same ranking as bm25s on a few queries (scores agree to float32 rounding).
        for q, toks in zip(queries[:20], q_tokens[:20]):
            np.testing.assert_allclose(ours.scores(q), model.get_scores(toks), rtol=1e-5, atol=1e-6)

    try:
        import rank_bm25
    except ImportError:
        rows.append(["rank_bm25", "not installed", "", "", ""])
    else:
        small, few = texts[:RANK_BM25_DOCS], queries[:RANK_BM25_QUERIES]
        t_small, ours_small = timed(lambda: BM25().fit(small))
        qps_small = per_query(lambda q: ours_small.search(q, K), few)
        t_rb, okapi = timed(lambda: rank_bm25.BM25Okapi([tokenize(t) for t in small]))
        rb_qps = per_query(lambda q: np.argsort(-okapi.get_scores(tokenize(q)))[:K], few)
        rows.append(
            [f"raglab BM25, {RANK_BM25_DOCS} docs", f"{t_small:.2f}", "", f"{qps_small:.0f}", ""]
        )
        rows.append(
            [
                f"rank_bm25 BM25Okapi, {RANK_BM25_DOCS} docs",
                f"{t_rb:.2f}",
                f"{t_rb / t_small:.1f}x",
                f"{rb_qps:.0f}",
                f"{qps_small / rb_qps:.0f}x",
            ]
        )

    print_table(
        ["model", "fit s", "raglab fit faster by", "queries/s", "raglab q/s faster by"], rows
    )


if __name__ == "__main__":
    main()
