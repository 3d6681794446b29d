"""Retrieval on a public BEIR-style benchmark, at document level: every fusion against its halves.

    python benchmarks/bench_beir.py DATASET [--split test] [--embedders hashing,lsa,minilm]
                                    [--json benchmarks/results/beir.json] [--docs DIR]

DATASET is a folder in BEIR's layout: `corpus.jsonl` (one `{"_id", "title", "text"}` a
line), `queries.jsonl` (`{"_id", "text"}`) and `qrels/<split>.tsv` (query-id, corpus-id,
score, after a header line; a score above 0 is relevant). The dataset never enters the
repository (public benchmarks carry their own licences): only the figures do.

raglab's own engine indexes it as a user would: each corpus entry becomes one document,
`# title` then the text, written to a folder (`--docs`, a temporary one by default) and
indexed by `Index.from_folder` with the default chunker and limits. Every question is
scored at document level, as `raglab eval` scores (a document at its best chunk's rank).
Per embedder, the rows are:

- bm25, dense: one ranker alone;
- rrf: plain reciprocal rank fusion (both votes equal); rrf w=…, minmax w=…: weighted
  fusion, `w` the dense side's share (`raglab.retrieve.fusion`);
- default: `Index.search` exactly as `raglab ask` / `raglab eval` run it (the default
  fusion for the embedder, and its reranker when the shipped one is enabled);
- reranked: the shipped learned reranker for the embedder (`raglab.retrieve.rerank`), enabled or
  not, over the default fusion's top 30.

Each row has nDCG@10 and recall@10 and, against BM25 alone, the paired bootstrap interval
of the nDCG@10 difference (`raglab.evaluation.bootstrap.paired_difference`). MiniLM embeds thousands
of abstracts slowly on a laptop CPU: the embedding cache (on by default, `--no-cache` to
embed everything again) makes a second run quick, and a progress line on stderr (when it
is a terminal; `--quiet` for none) shows how far the embedding and the questions are.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from _util import print_table

from raglab.embed.embedders import Embedder, embedder
from raglab.embed.embedding_cache import cached
from raglab.evaluation import EvalReport, Question, evaluate
from raglab.evaluation.bootstrap import paired_difference
from raglab.evaluation.tuning import collect_rankings, fused_search, reranked_search
from raglab.ingest.chunking import Chunker
from raglab.pipeline import Index
from raglab.progress import Reporter, TerminalProgress
from raglab.records import Hit
from raglab.retrieve.fusion import Fusion, Rankings, default_fusion
from raglab.retrieve.rerank import load_reranker

DEPTH = 480
"""Chunks kept per ranker and question: `evaluate` asks for 30 chunks (3 per document
wanted), hybrid search fuses 4 times as many, and twice as deep again when 30 chunks hold
fewer than 10 documents; 480 leaves room for two doublings."""

WHOLE = 1_000_000
"""A chunk size no abstract reaches: `--whole-documents` keeps each document one chunk."""

WEIGHTS = (0.1, 0.3, 0.5, 0.7)
"""The dense weights tried for weighted RRF and min-max fusion (0.5 RRF is plain RRF)."""

Search = Callable[[Question, int], Sequence[Hit]]


# --- the dataset ---------------------------------------------------------------------------


def _jsonl(path: Path) -> list[dict]:
    if not path.is_file():
        sys.exit(f"bench_beir: {path} not found: a BEIR dataset folder holds it")
    rows = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if line.strip():
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as error:
                sys.exit(f"bench_beir: {path}, line {n}: not JSON ({error.msg})")
    return rows


def _qrels(path: Path) -> dict[str, set[str]]:
    if not path.is_file():
        sys.exit(f"bench_beir: {path} not found: give --split a name under qrels/")
    relevant: dict[str, set[str]] = {}
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        fields = line.split("\t")
        if n == 1 and not fields[-1].strip().lstrip("-").isdigit():
            continue  # the header line
        if len(fields) != 3:
            sys.exit(f"bench_beir: {path}, line {n}: expected query-id, corpus-id, score")
        if int(fields[2]) > 0:
            relevant.setdefault(fields[0], set()).add(fields[1])
    return relevant


def file_name(corpus_id: str) -> str:
    """A corpus id as a file name raglab's loader accepts (unsafe characters become _).

    >>> file_name("4983"), file_name("a/b c")
    ('4983.md', 'a_b_c.md')
    """
    return re.sub(r"[^A-Za-z0-9._-]", "_", corpus_id) + ".md"


def export(dataset: Path, split: str, docs: Path) -> list[Question]:
    """Write the corpus to `docs` as one `.md` file per entry; the split's questions."""
    corpus = _jsonl(dataset / "corpus.jsonl")
    names: dict[str, str] = {}
    docs.mkdir(parents=True, exist_ok=True)
    for row in corpus:
        name = file_name(str(row["_id"]))
        if name in names.values():
            sys.exit(f"bench_beir: two corpus ids give the file name {name}")
        names[str(row["_id"])] = name
        title = " ".join(str(row.get("title") or "").split())
        text = f"# {title}\n\n{row['text']}\n" if title else f"{row['text']}\n"
        (docs / name).write_text(text, encoding="utf-8")
    queries = {str(row["_id"]): str(row["text"]) for row in _jsonl(dataset / "queries.jsonl")}
    questions = []
    for qid, relevant in sorted(_qrels(dataset / "qrels" / f"{split}.tsv").items()):
        wanted = [names[doc] for doc in sorted(relevant) if doc in names]
        if qid in queries and wanted:
            questions.append(Question(qid, queries[qid], relevant_docs=wanted, answerable=True))
    return questions


# --- the rows ------------------------------------------------------------------------------


def _stored(rankings: dict[str, Rankings], pick: Callable[[Rankings], Sequence[Hit]]) -> Search:
    def search(q: Question, k: int) -> Sequence[Hit]:
        found = pick(rankings[q.id])
        if k > len(found) == DEPTH:  # subtle: a cut list would rank too few documents
            raise RuntimeError(f"question {q.id} needs {k} chunks; raise DEPTH ({DEPTH})")
        return found[:k]

    return search


def _deep_enough(rankings: dict[str, Rankings], search: Search) -> Search:
    def checked(q: Question, k: int) -> Sequence[Hit]:
        r = rankings[q.id]
        if 4 * k > DEPTH and DEPTH in (len(r.dense), len(r.keyword)):
            raise RuntimeError(f"question {q.id} needs {4 * k} chunks; raise DEPTH ({DEPTH})")
        return search(q, k)

    return checked


def searches(index: Index, rankings: dict[str, Rankings]) -> dict[str, Search]:
    """Every row's search for one index: single rankers, fusions, the default, the reranker."""
    rows: dict[str, Search] = {
        "bm25": _stored(rankings, lambda r: r.keyword),
        "dense": _stored(rankings, lambda r: r.dense),
    }
    fusions = [Fusion("rrf", 0.5), *(Fusion(m, w) for m in ("rrf", "minmax") for w in WEIGHTS)]
    for fusion in dict.fromkeys(fusions):
        label = "rrf" if fusion == Fusion() else str(fusion)
        rows[label] = _deep_enough(rankings, fused_search(rankings, fusion))
    rows["default"] = lambda q, k: index.search(q.question, q.asker, k=k)
    fusion = default_fusion(index.embedder.name)
    rows["reranked"] = reranked_search(rankings, fusion, load_reranker(index.embedder.name))
    return rows


def _embedder(name: str, cache: bool) -> Embedder:
    made = embedder(name)
    return (
        cached(made) if cache else made
    )  # a fittable one is never cached: its fit is the corpus's


def run(
    docs: Path,
    questions: list[Question],
    name: str,
    chunker: Chunker,
    *,
    cache: bool = True,
    progress: Reporter | None = None,
) -> dict:
    """Index `docs` with embedder `name`; every row's figures."""
    started = time.perf_counter()
    made = _embedder(name, cache)
    index = Index.from_folder(docs, embedder=made, chunker=chunker, progress=progress)
    built = time.perf_counter() - started
    retriever = index.retriever("dense")
    rankings = collect_rankings(
        retriever.dense, retriever.keyword, questions, depth=DEPTH, progress=progress
    )
    reports: dict[str, EvalReport] = {
        label: evaluate(questions, search=search, k=10, embedder=name)
        for label, search in searches(index, rankings).items()
    }
    bm25 = [r.ndcg_at_10 for r in reports["bm25"].per_question]
    rows = {}
    for label, report in reports.items():
        gain = paired_difference(bm25, [r.ndcg_at_10 for r in report.per_question])
        rows[label] = {
            "ndcg@10": round(report.ndcg_at_10 or 0.0, 4),
            "recall@10": round(report.recall_at_k or 0.0, 4),
            "vs_bm25": [round(gain.mean, 4), round(gain.low, 4), round(gain.high, 4)],
        }
    return {
        "documents": len(index.store.documents()),
        "chunks": len(index.store.chunks()),
        "refused_at_load": [str(error) for error in index.load_errors],
        "default_fusion": str(default_fusion(index.embedder.name)),
        "index_s": round(built, 1),
        "rows": rows,
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("dataset", type=Path, help="a BEIR dataset folder")
    parser.add_argument("--split", default="test", help="qrels/SPLIT.tsv (default: test)")
    parser.add_argument("--embedders", default="hashing,lsa,minilm")
    parser.add_argument("--docs", type=Path, help="where the corpus is written (default: temp)")
    parser.add_argument("--json", type=Path, help="write the figures here")
    parser.add_argument(
        "--whole-documents",
        action="store_true",
        help="one chunk per document (default: raglab's default chunker)",
    )
    parser.add_argument("--no-cache", action="store_true", help="no embedding cache")
    parser.add_argument("--quiet", action="store_true", help="no progress line on stderr")
    args = parser.parse_args(argv)
    progress = None if args.quiet else TerminalProgress()
    chunker = Chunker(size=WHOLE) if args.whole_documents else Chunker()
    names = [n.strip() for n in args.embedders.split(",") if n.strip()]
    with tempfile.TemporaryDirectory() as temp:
        docs = args.docs or Path(temp) / "docs"
        questions = export(args.dataset, args.split, docs)
        if not questions:
            sys.exit(f"bench_beir: no question of split {args.split!r} has a relevant document")
        results = {
            name: run(docs, questions, name, chunker, cache=not args.no_cache, progress=progress)
            for name in names
        }
    labels = list(next(iter(results.values()))["rows"])
    print(f"{args.dataset.name} ({args.split}), {len(questions)} questions, {chunker.params()}")
    print("nDCG@10")
    print_table(
        ["row", *names],
        [
            [label, *(f"{results[n]['rows'][label]['ndcg@10']:.3f}" for n in names)]
            for label in labels
        ],
    )
    if args.json:
        save(args.json, args, len(questions), chunker, results)
    return 0


def save(path: Path, args: argparse.Namespace, questions: int, chunker: Chunker, results: dict):
    """Merge this run into the JSON file: one entry per chunking, one per embedder in it."""
    out = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    if out.get("dataset", args.dataset.name) != args.dataset.name or out.get("split") not in (
        None,
        args.split,
    ):
        sys.exit(f"bench_beir: {path} holds another dataset or split; give another --json")
    out.update(dataset=args.dataset.name, split=args.split, questions=questions)
    run = out.setdefault("runs", {}).setdefault(
        "whole documents" if args.whole_documents else "default chunker", {}
    )
    run["chunker"] = chunker.params()
    run.setdefault("embedders", {}).update(results)
    path.write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
