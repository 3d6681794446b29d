"""Embedding throughput of the built-in embedders on ~2,000 short paragraphs.

    python benchmarks/bench_embedders.py [--texts 2000] [--repeat 3]

The paragraphs are generated from a fixed seed out of support/HR vocabulary, so every
run embeds the same texts. Timings on a shared machine are noisy: compare the rows of
one run with each other (the ratio column), not with another run's.
"""

from __future__ import annotations

import argparse
import random
import time
from collections.abc import Callable

from raglab.embed.embedders import HashingEmbedder, LSAEmbedder

SUBJECTS = ["employees", "customers", "managers", "the support team", "contractors", "new starters"]
VERBS = [
    "must submit",
    "can request",
    "should review",
    "may cancel",
    "need to confirm",
    "will receive",
]
OBJECTS = [
    "a refund",
    "annual leave",
    "travel expenses",
    "a password reset",
    "the parking permit",
    "sick leave",
    "an invoice",
    "the shipping label",
    "a replacement device",
    "overtime pay",
]
TAILS = [
    "within 14 days",
    "before the end of the month",
    "through the portal",
    "with receipts attached",
    "after approval from their manager",
    "by email",
    "using the mobile app",
    "when the order ships",
]


def paragraphs(n: int, *, seed: int = 0) -> list[str]:
    """`n` paragraphs of 4-6 sentences each (roughly 35-65 words), the same for a given seed."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        sentences = [
            f"{rng.choice(SUBJECTS).capitalize()} {rng.choice(VERBS)} "
            f"{rng.choice(OBJECTS)} {rng.choice(TAILS)}."
            for _ in range(rng.randint(3, 5))
        ]
        # A ticket number and a product code per paragraph: words never seen before, as
        # in real text, so the "cold cache" row really hashes new words.
        ticket, model = rng.randint(10000, 99999), rng.randint(100, 999)
        sentences.append(f"Ticket {ticket} concerns model X{model}.")
        out.append(" ".join(sentences))
    return out


def best_time(run: Callable[[], object], repeat: int) -> float:
    """Fastest of `repeat` runs, in seconds (the least disturbed by other processes)."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--texts", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    texts = paragraphs(args.texts)
    words = sum(len(t.split()) for t in texts) / len(texts)
    print(f"{len(texts)} paragraphs, {words:.0f} words on average, best of {args.repeat}\n")

    def cold_hashing() -> None:
        # A new vocabulary every time: clear the per-word hash caches first.
        from raglab.embed import hashing

        for cached in (hashing._word_hash, hashing._bigram_hash, hashing._char_hashes):
            cached.cache_clear()
        HashingEmbedder().embed(texts)

    lsa = LSAEmbedder().fit(texts)
    rows = [
        ("hashing embed (cold cache)", cold_hashing),
        ("hashing embed (warm cache)", lambda: HashingEmbedder().embed(texts)),
        ("lsa fit", lambda: LSAEmbedder().fit(texts)),
        ("lsa embed (fitted)", lambda: lsa.embed(texts)),
    ]
    results = [(label, best_time(run, args.repeat)) for label, run in rows]
    slowest = max(seconds for _, seconds in results)
    print(f"{'step':<28}{'seconds':>9}{'texts/s':>10}{'vs slowest':>12}")
    for label, seconds in results:
        print(f"{label:<28}{seconds:>9.3f}{len(texts) / seconds:>10.0f}{slowest / seconds:>11.1f}x")


if __name__ == "__main__":
    main()
