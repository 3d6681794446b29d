"""Chunking strategies measured: chars, structure, semantic × context header off/on × embedder.

    python benchmarks/bench_chunking.py [--beir DIR ...] [--embedders hashing,minilm]
        [--questions 150] [--documents 1000] [--json benchmarks/results/chunking.json]

results/chunking.json: the sample, then `--beir SCIFACT --questions 150 --documents 850`
and `--beir SQUAD --questions 80 --documents 300` (all 166 documents), embedding cache on.

The sample corpus is scored on both halves of its questions (`split_questions`: "fit",
the half a default may be chosen on, and "held-out"); each `--beir` folder (BEIR's
layout, read by `bench_beir.export`; the data never enters the repository) on a
deterministic subsample: `--questions` questions in the order of a hash of their id,
every document they need, and distractors in the same hashed order up to `--documents`
documents. A ranked document whose id is the question's own is dropped (BEIR's
`ignore_identical_ids`: ArguAna's questions are arguments of its corpus).

Per cell, at document level (a document at its best chunk's rank): nDCG@10 and recall@20
for dense, bm25 and the default search (`Index.search`, as `raglab ask` runs it); for a
contextual cell, the reduction in top-20 failures (1 − recall@20) against the same
chunker without context, with its paired bootstrap interval (the questions resampled,
both sides on the same draws); indexing time, chunks, and the characters indexed.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
from _util import print_table
from bench_beir import export, file_name

from raglab.embed.embedders import Embedder, embedder
from raglab.embed.embedding_cache import cached
from raglab.evaluation import Question, load_questions
from raglab.evaluation.bootstrap import paired_difference, resample_means
from raglab.evaluation.calibration import split_questions
from raglab.evaluation.metrics import ndcg_at_k, recall_at_k
from raglab.evaluation.runner import rank_documents
from raglab.ingest.chunking import KINDS, Chunker
from raglab.pipeline import Index
from raglab.samples import sample_corpus, sample_questions
from raglab.text import content_hash

METHODS = ("dense", "bm25", "hybrid")
"""hybrid is `Index.search`'s default: the embedder's default fusion (and reranker)."""

RECALL_AT = 20
"""The seed's "top-20 retrieval failures": a question fails when a relevant document is
missing from the first 20."""

Scores = dict[str, list[float]]  # metric -> one value per question


def _hashed(ids: Sequence[str], salt: str) -> list[str]:
    return sorted(ids, key=lambda i: content_hash(f"{salt}:{i}"))


def subsample(
    folder: Path, questions: list[Question], n_questions: int, n_documents: int, into: Path
) -> list[Question]:
    """The first `n_questions` in hashed order, their documents, distractors up to `n_documents`."""
    by_id = {q.id: q for q in questions}
    kept_q = [by_id[i] for i in _hashed(list(by_id), "questions")[:n_questions]]
    names = sorted(p.name for p in folder.glob("*.md"))
    own = {file_name(q.id) for q in kept_q} & set(names)  # a question that is a document
    needed = {doc for q in kept_q for doc in q.relevant_docs} | own
    distractors = [n for n in _hashed(names, "documents") if n not in needed]
    keep = [n for n in names if n in needed] + distractors[: max(n_documents - len(needed), 0)]
    into.mkdir(parents=True)
    for name in keep:
        shutil.copy(folder / name, into / name)
    return kept_q


def _embedder(name: str) -> Embedder:
    return cached(embedder(name))  # sentences and chunks shared across the strategies


def score(index: Index, questions: Sequence[Question], method: str) -> Scores:
    """nDCG@10 and recall@20 of each question, a question's own document left out."""
    out: Scores = {"ndcg@10": [], f"recall@{RECALL_AT}": []}
    for q in questions:

        def search(depth: int, q: Question = q) -> list:
            hits = index.search(q.question, q.asker, k=depth, method=method)
            return [hit for hit in hits if hit.chunk.doc_id != file_name(q.id)]

        ranked = list(rank_documents(search, RECALL_AT))
        out["ndcg@10"].append(ndcg_at_k(ranked, q.relevant_docs, 10))
        out[f"recall@{RECALL_AT}"].append(recall_at_k(ranked, q.relevant_docs, RECALL_AT))
    return out


def build(folder: Path, name: str, chunker: Chunker) -> tuple[Index, dict]:
    started = time.perf_counter()
    index = Index.from_folder(folder, embedder=_embedder(name), chunker=chunker)
    seconds = time.perf_counter() - started
    chunks = index.store.chunks()
    cost = {
        "index_s": round(seconds, 1),
        "chunks": len(chunks),
        "indexed_kchars": round(sum(len(c.indexed_text) for c in chunks) / 1000, 1),
        "header_kchars": round(sum(len(c.context) for c in chunks) / 1000, 1),
    }
    return index, cost


def failure_reduction(plain: list[float], contextual: list[float]) -> list[float] | None:
    """1 − failures(contextual) / failures(plain), failures = mean(1 − recall@20), and its
    95% paired bootstrap interval (both sides resampled on the same draws); None when the
    plain chunker fails no question (nothing to reduce)."""
    before, after = 1 - np.asarray(plain), 1 - np.asarray(contextual)
    if before.sum() == 0:
        return None
    b, a = resample_means(before), resample_means(after)
    ratios = 1 - a[b > 0] / b[b > 0]
    low, high = np.percentile(ratios, [2.5, 97.5])
    return [round(float(1 - after.mean() / before.mean()), 3), round(low, 3), round(high, 3)]


def _interval(before: list[float], after: list[float]) -> list[float]:
    d = paired_difference(before, after)
    return [round(d.mean, 4), round(d.low, 4), round(d.high, 4)]


def run_dataset(folder: Path, sets: dict[str, list[Question]], names: list[str]) -> dict:
    """Every cell for one corpus: embedder -> strategy -> question set -> method -> figures."""
    out: dict = {}
    for name in names:
        for kind in KINDS:
            for contextual in (False, True):
                label = f"{kind}{' +context' if contextual else ''}"
                index, cost = build(folder, name, Chunker(kind=kind, contextual=contextual))
                cell = out.setdefault(name, {}).setdefault(label, {"cost": cost})
                for set_name, questions in sets.items():
                    for method in METHODS:
                        cell.setdefault(set_name, {})[method] = score(index, questions, method)
                print(f"  {name} {label}: {cost}", file=sys.stderr, flush=True)
    return _summarise(out)


def _summarise(raw: dict) -> dict:
    """Means, and the paired comparisons: +context against the same chunker, semantic
    against structure."""
    recall = f"recall@{RECALL_AT}"
    summary: dict = {}
    for name, strategies in raw.items():
        for label, cell in strategies.items():
            row = summary.setdefault(name, {}).setdefault(label, {"cost": cell["cost"]})
            for set_name in (s for s in cell if s != "cost"):
                for method, scores in cell[set_name].items():
                    figures = {m: round(float(np.mean(v)), 4) for m, v in scores.items()}
                    plain_label = label.removesuffix(" +context")
                    if plain_label != label:
                        plain = strategies[plain_label][set_name][method]
                        figures["fewer_failures"] = failure_reduction(plain[recall], scores[recall])
                        figures["ndcg_vs_plain"] = _interval(plain["ndcg@10"], scores["ndcg@10"])
                    if label.startswith("semantic"):
                        base = strategies[label.replace("semantic", "structure")][set_name][method]
                        figures["fewer_failures_vs_structure"] = failure_reduction(
                            base[recall], scores[recall]
                        )
                        figures["ndcg_vs_structure"] = _interval(base["ndcg@10"], scores["ndcg@10"])
                    row.setdefault(set_name, {})[method] = figures
    return summary


def _beir_sets(dataset: Path, n_questions: int, n_documents: int, temp: Path) -> tuple[Path, dict]:
    every = temp / f"{dataset.name}-all"
    questions = export(dataset, "test", every)
    docs = temp / dataset.name
    kept = subsample(every, questions, n_questions, n_documents, docs)
    return docs, {"test": kept}


def _sample_sets() -> tuple[Path, dict]:
    questions = [q for q in load_questions(sample_questions()) if q.relevant_docs]
    fit, held_out = split_questions(questions)
    return sample_corpus(), {"fit": fit, "held-out": held_out}


def _print(dataset: str, results: dict) -> None:
    for name, strategies in results.items():
        for set_name in (s for s in next(iter(strategies.values())) if s != "cost"):
            print(f"\n{dataset} / {set_name} / {name}: nDCG@10 and recall@{RECALL_AT}")
            rows = []
            for label, row in strategies.items():
                cells = [
                    f"{row[set_name][m]['ndcg@10']:.3f} {row[set_name][m][f'recall@{RECALL_AT}']:.3f}"
                    for m in METHODS
                ]
                rows.append([label, *cells, f"{row['cost']['index_s']}s"])
            print_table(["strategy", *METHODS, "index"], rows)


def markdown_table(results: dict, method: str = "hybrid") -> str:
    """The README's table from a results file: one row per embedder and strategy, per
    dataset nDCG@10, recall@20 and the reduction in top-20 failures against the same
    chunker without context (with its 95% interval)."""
    sets = [(d, "held-out" if d == "sample" else "test") for d in results]
    head = ["embedder", "strategy", *(f"{d} nDCG@10 / R@20 / fewer failures" for d, _ in sets)]
    names = sorted({n for d in results for n in results[d]})
    lines = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for name in names:
        labels = list(next(iter(results.values()))[name]["strategies"])
        for label in labels:
            cells = []
            for dataset, set_name in sets:
                row = results[dataset][name]["strategies"][label][set_name][method]
                cell = f"{row['ndcg@10']:.3f} / {row[f'recall@{RECALL_AT}']:.3f}"
                if row.get("fewer_failures") is None and "fewer_failures" in row:
                    cell += " / no failures"
                elif "fewer_failures" in row:
                    mean, low, high = row["fewer_failures"]
                    cell += f" / {mean:+.0%} [{low:+.0%}, {high:+.0%}]"
                cells.append(cell)
            lines.append(f"| {name} | {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--beir", type=Path, action="append", default=[], help="a BEIR folder")
    parser.add_argument("--no-sample", action="store_true", help="leave out the sample corpus")
    parser.add_argument("--embedders", default="hashing,minilm")
    parser.add_argument("--questions", type=int, default=150)
    parser.add_argument("--documents", type=int, default=1000)
    parser.add_argument("--json", type=Path, help="merge the figures into this file")
    parser.add_argument("--table", type=Path, help="print a results file as markdown, and stop")
    parser.add_argument("--method", choices=METHODS, default="hybrid", help="for --table")
    args = parser.parse_args(argv)
    if args.table:
        print(markdown_table(json.loads(args.table.read_text(encoding="utf-8")), args.method))
        return 0
    names = [n.strip() for n in args.embedders.split(",") if n.strip()]
    loaders: list[tuple[str, Callable[[Path], tuple[Path, dict]]]] = []
    if not args.no_sample:
        loaders.append(("sample", lambda temp: _sample_sets()))
    for dataset in args.beir:
        loaders.append(
            (
                dataset.name,
                lambda temp, d=dataset: _beir_sets(d, args.questions, args.documents, temp),
            )
        )
    for label, load in loaders:
        with tempfile.TemporaryDirectory() as temp:
            folder, sets = load(Path(temp))
            results = run_dataset(folder, sets, names)
            documents = len(list(folder.rglob("*.md")))
        _print(label, results)
        if args.json:
            _save(args.json, label, sets, documents, results)
    return 0


def _save(path: Path, dataset: str, sets: dict, documents: int, results: dict) -> None:
    """Merge into `path`: dataset -> embedder -> its sample's size and every strategy."""
    out = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    questions = {name: len(qs) for name, qs in sets.items()}
    for name, strategies in results.items():
        out.setdefault(dataset, {})[name] = {
            "documents": documents,
            "questions": questions,
            "strategies": strategies,
        }
    path.write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    sys.exit(main())
