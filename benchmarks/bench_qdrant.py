"""The Qdrant store's keyword modes against the SQLite store: same answers? faster cold?

Quality, on the sample corpus and `raglab eval`'s questions (hashing embedder): for each
system, nDCG@10 and recall@5 as `raglab eval` scores them, how many questions get the same
top 5 chunks as the SQLite store, and how many the same answer (text and citations; and
fully equal: every retrieved hit and its score too). The systems:
- sqlite: the reference;
- qdrant-exact: the Qdrant store's default, BM25 fitted client-side (`keyword="exact"`);
- qdrant-server: BM25 as sparse vectors ranked in Qdrant (`keyword="server"`), fused by
  `raglab.query` (what `raglab ask --qdrant-keyword server` runs);
- qdrant-fused: `QdrantStore.hybrid_search`, dense and sparse fused by RRF in Qdrant.

Speed: a generated corpus (`bench_scale.generate`, 2,000 documents), indexed once with
`raglab index --store qdrant`, then cold `raglab ask` in fresh processes, exact and server
interleaved, best of --repeat, with the load average beside the figures.

    python benchmarks/bench_qdrant.py --docs 2000 --repeat 5 --out benchmarks/results/qdrant.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_scale import ASKER, QUESTION, generate, raglab, run_measured

ROOT = Path(__file__).resolve().parent.parent
METHODS = ("bm25", "hybrid")


def quality(work: Path) -> dict:
    from raglab import Index
    from raglab.evaluation import evaluate, load_questions
    from raglab.pipeline import answer_from, ask, default_answerer
    from raglab.samples import sample_corpus, sample_questions

    sqlite = Index.from_folder(sample_corpus(), path=work / "sample.sqlite")
    qdrant = Index.from_folder(sample_corpus(), path=work / "sample.qdrant", backend="qdrant")
    questions = load_questions(sample_questions(), doc_ids=sqlite.store.documents())

    def fused(q, depth):
        query = qdrant.retriever("hybrid").embedder_for(q.asker.tenant).embed([q.question])[0]
        return qdrant.store.hybrid_search(query, q.question, q.asker, depth)

    def searcher(index, method, keyword):
        def search(q, depth):
            if keyword == "fused":
                return fused(q, depth)
            if index is qdrant:
                index.store.keyword = keyword
            return index.search(q.question, q.asker, k=depth, method=method)

        return search

    def answerer(index, method, keyword):
        def answer(q):
            if keyword == "fused":
                hits = fused(q, 5)
                return answer_from(q.question, hits, default_answerer(qdrant, q.asker, method))
            if index is qdrant:
                index.store.keyword = keyword
            return ask(q.question, index, q.asker, k=5, method=method)

        return answer

    systems = {
        "sqlite": (sqlite, None),
        "qdrant-exact": (qdrant, "exact"),
        "qdrant-server": (qdrant, "server"),
        "qdrant-fused": (qdrant, "fused"),
    }
    rows = []
    for method in METHODS:
        reference = {}
        for name, (index, keyword) in systems.items():
            if keyword == "fused" and method != "hybrid":
                continue
            search, answer = searcher(index, method, keyword), answerer(index, method, keyword)
            report = evaluate(questions, search=search, answer=answer, k=5, retriever=method)
            tops = {q.id: [h.chunk.id for h in search(q, 5)] for q in questions}
            answers = {q.id: answer(q) for q in questions}
            reference = reference or {"tops": tops, "answers": answers}
            same_text = sum(said(a) == said(reference["answers"][i]) for i, a in answers.items())
            summary = report.as_dict()
            rows.append(
                {
                    "method": method,
                    "system": name,
                    "ndcg@10": round(summary["ndcg@10"], 4),
                    "recall@k": round(summary["recall@k"], 4),
                    "leaks": summary["leaks"],
                    "top5_identical": sum(tops[i] == reference["tops"][i] for i in tops),
                    "answers_same_text_and_cited_spans": same_text,
                    "answers_fully_identical": sum(
                        a == reference["answers"][i] for i, a in answers.items()
                    ),
                    "questions": len(questions),
                }
            )
            print(rows[-1], flush=True)
    qdrant.store.close()
    return {"rows": rows, "collisions": collisions(sqlite)}


def said(answer) -> tuple:
    """What a reader sees of an answer: its text and the spans it cites (not their scores)."""
    return answer.text, [(c.n, c.hit.chunk.id) for c in answer.citations]


def collisions(index) -> dict:
    """Distinct words of the sample corpus and how many share a 32-bit term id."""
    from raglab.store.qdrant_search import term_id
    from raglab.text import tokenize

    words = {w for chunk in index.store.chunks() for w in tokenize(chunk.text)}
    ids = {term_id(w) for w in words}
    return {"distinct_words": len(words), "colliding_words": len(words) - len(ids)}


def cold_ask(work: Path, n_docs: int, repeat: int) -> dict:
    corpus, index = work / "corpus", work / "gen.qdrant"
    generate(corpus, n_docs)
    build = run_measured(
        raglab("index", str(corpus), "--store", "qdrant", "--index", str(index)), ROOT
    )
    ask = raglab("ask", QUESTION, "--store", "qdrant", "--index", str(index), *ASKER)
    modes = {"exact": ask, "server": [*ask, "--qdrant-keyword", "server"]}
    best = {mode: (float("inf"),) * 3 for mode in modes}
    for _ in range(repeat):  # interleaved: both modes share the machine's load
        for mode, command in modes.items():
            best[mode] = min(best[mode], run_measured(command, ROOT))
    return {
        "docs": n_docs,
        "index_build_s": round(build[0], 2),
        **first_keyword_search(index, repeat),
        **{
            f"{mode}_{what}": round(value, 3)
            for mode, figures in best.items()
            for what, value in zip(("wall_s", "cpu_s", "peak_mb"), figures)
        },
    }


def first_keyword_search(index: Path, repeat: int) -> dict:
    """In one process, the keyword side of a cold ask alone: the index opened (not timed),
    then the first keyword search (exact: read the readable chunks and fit BM25; server:
    one sparse query), modes interleaved, best of `repeat`."""
    from raglab import Index, Principal

    principal = Principal("bench", ASKER[1], {ASKER[3]})
    best = {"exact": float("inf"), "server": float("inf")}
    for _ in range(repeat):
        for mode in best:
            opened = Index.open(index, backend="qdrant")
            opened.store.keyword = mode
            start = time.perf_counter()
            opened.retriever("hybrid").keyword(QUESTION, principal, 20)
            best[mode] = min(best[mode], time.perf_counter() - start)
            opened.store.close()
    return {f"first_keyword_search_{mode}_s": round(s, 4) for mode, s in best.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        load_before = os.getloadavg()[0]
        result = {
            "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
            "python": platform.python_version(),
            "embedder": "hashing",
            "quality": quality(Path(tmp)),
            "cold_ask": cold_ask(Path(tmp), args.docs, args.repeat),
            "load_average": [round(load_before, 2), round(os.getloadavg()[0], 2)],
        }
    print(json.dumps(result, indent=2))
    if args.out:
        args.out.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
