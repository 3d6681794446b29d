"""Long context against RAG on the sample questions, and as the corpus grows.

    python benchmarks/bench_longcontext.py [--embedders hashing,minilm] [--copies 0,1,2,4,8,16]
                                           [--growth-every 3] [--input-price 3] [--output-price 15]
                                           [--json benchmarks/results/longcontext.json]

Every figure comes from `raglab.evaluation.longcontext` (notebook 13 calls the same functions):

- `comparison`, per embedder: every question of data/questions.jsonl answered from the whole
  corpus its asker may read, in one prompt (`raglab.longcontext`), and through `raglab.ask`
  (an index of the sample corpus with that embedder; the long prompt's answerer scores
  sentences with the same embedder): tokens in and out per question (MiniLM's WordPiece),
  the cost of 1,000 questions at the prices given (illustrative: set yours), the median
  latency of the offline answerer, and the answer figures;
- `positions`: the relevant document moved through the long prompt (hashing);
- `leaks`: the whole corpus pasted for the leak-probe askers, against their own documents;
- `fine_tuning`: a model trained on the questions' answers: who it tells, what it cites,
  what it says after a document changes;
- `growth`: acme's questions (every `--growth-every`-th) on the sample corpus plus copies
  of data/transfer's documents in acme's tenant, hashing: tokens, cost and quality of both.
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from _util import print_table

from raglab.embed.embedders import embedder as make_embedder
from raglab.embed.embedding_cache import cached
from raglab.embed.tokens import wordpiece_counter
from raglab.evaluation import longcontext as lc
from raglab.evaluation.questions import load_questions
from raglab.generate.extractive import ExtractiveGenerator
from raglab.ingest.loaders import load_folder
from raglab.longcontext.cost import Prices
from raglab.longcontext.whole_corpus import DEFAULT_MAX_TOKENS
from raglab.pipeline import Index

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "data"


def rows_table(rows: list[lc.MethodRow], label: str) -> None:
    print_table(
        [
            "",
            "method",
            "tokens in",
            "out",
            "cost/1000",
            "latency ms",
            "cited",
            "abstain",
            "key fact",
            "leaks",
        ],
        [
            [
                label,
                r.method,
                f"{r.input_tokens:,.0f}",
                f"{r.output_tokens:.0f}",
                f"{r.cost_per_1000:.2f}",
                f"{r.latency_ms:.1f}",
                f"{r.answered_with_relevant_citation:.3f}",
                f"{r.abstention_on_unanswerable:.3f}",
                f"{r.key_fact:.3f}",
                r.leaks,
            ]
            for r in rows
        ],
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--embedders", default="hashing,minilm")
    parser.add_argument("--copies", default="0,1,2,4,8,16")
    parser.add_argument("--growth-every", type=int, default=3)
    parser.add_argument("--input-price", type=float, default=3.0)
    parser.add_argument("--output-price", type=float, default=15.0)
    parser.add_argument(
        "--json", type=Path, default=ROOT / "benchmarks" / "results" / "longcontext.json"
    )
    args = parser.parse_args()

    prices = Prices(args.input_price, args.output_price)
    count = wordpiece_counter()
    documents = load_folder(DATA / "corpus").documents
    filler = load_folder(DATA / "transfer" / "corpus").documents
    questions = load_questions(DATA / "questions.jsonl")
    results: dict[str, Any] = {
        "prices_per_million": asdict(prices),
        "max_tokens": DEFAULT_MAX_TOKENS,
        "tokens": "MiniLM's WordPiece, system and user messages",
        "questions": len(questions),
        "comparison": {},
    }

    for name in args.embedders.split(","):
        start = time.perf_counter()
        embedder = cached(make_embedder(name))
        index = Index.from_folder(DATA / "corpus", embedder=embedder)
        generator = ExtractiveGenerator(embedder=embedder)
        rows = lc.compare(
            questions, index, documents, prices=prices, count_tokens=count, generator=generator
        )
        results["comparison"][name] = [asdict(r) for r in rows]
        rows_table(list(rows), name)
        print(f"  ({time.perf_counter() - start:.0f} s)")

    positions = lc.position_sweep(questions, documents, count_tokens=count)
    results["positions"] = [asdict(p) for p in positions]
    print_table(
        ["position", "questions", "cited", "key fact"],
        [
            [
                p.position,
                p.questions,
                f"{p.answered_with_relevant_citation:.3f}",
                f"{p.key_fact:.3f}",
            ]
            for p in positions
        ],
    )

    probes = [q for q in questions if q.leak_docs]
    results["leaks"] = [asdict(r) for r in lc.leak_demo(probes, documents, count_tokens=count)]
    print_table(list(results["leaks"][0]), [list(r.values()) for r in results["leaks"]])

    results["fine_tuning"] = asdict(lc.fine_tune_demo(questions, documents, count_tokens=count))
    print_table(["fine-tuning", "count"], list(results["fine_tuning"].items()))

    acme = [q for q in questions if q.tenant == "acme"][:: args.growth_every]
    copies = [int(c) for c in args.copies.split(",")]
    start = time.perf_counter()
    growth = lc.growth_curve(
        acme, documents, filler, tenant="acme", copies=copies, prices=prices, count_tokens=count
    )
    results["growth_questions"] = len(acme)
    results["growth"] = [asdict(p) for p in growth]
    print_table(
        [
            "copies",
            "documents",
            "fits",
            "long tokens",
            "long cost",
            "long key fact",
            "long ms",
            "rag tokens",
            "rag cost",
            "rag key fact",
        ],
        [
            [
                p.copies,
                p.documents,
                p.fits,
                f"{p.long.input_tokens:,.0f}",
                f"{p.long.cost_per_1000:.2f}",
                f"{p.long.key_fact:.3f}",
                f"{p.long.latency_ms:.0f}",
                f"{p.rag.input_tokens:,.0f}",
                f"{p.rag.cost_per_1000:.2f}",
                f"{p.rag.key_fact:.3f}",
            ]
            for p in growth
        ],
    )
    print(f"  ({time.perf_counter() - start:.0f} s)")
    args.json.write_text(json.dumps(results, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
