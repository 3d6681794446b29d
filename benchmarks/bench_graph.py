"""GraphRAG's global search against chunk retrieval on the corpus-wide questions, and its price.

    python benchmarks/bench_graph.py [--tokens 400] [--json benchmarks/results/graph.json]

The sample corpus is indexed in memory with the default embedder; every question of
data/questions_global.jsonl is answered by global search over the asker's community
summaries and compared with chunk retrieval within the same WordPiece budget
(`raglab.evaluation.global_questions`). Questions g01-g10 are the ones the method was
fixed on; g11-g20 were written after it was fixed (two batches of five, the method
unchanged between them), and are reported apart.

The price: the time to extract the graph (once per access partition) and to build each
reader's graph, communities and summaries; the graph's size; the tokens a global search's
map step reads (every summary of the reader: with a language model, that many tokens of
map calls per question).
"""

from __future__ import annotations

import argparse
import json
import os
import time
from dataclasses import asdict
from pathlib import Path

from raglab import Index, sample_corpus
from raglab.embed.tokens import wordpiece_counter
from raglab.evaluation.global_questions import compare_global
from raglab.evaluation.questions import load_questions
from raglab.graph.reader import GraphIndex
from raglab.samples import sample_global_questions

HELD_OUT = {f"g{n}" for n in range(11, 21)}


def totals(rows: list[dict]) -> dict:
    points = sum(r["key_points"] for r in rows)
    graph, chunks, ask = (sum(r[k] for r in rows) for k in ("graph", "chunks", "ask"))
    return {
        "questions": len(rows),
        "key_points": points,
        "graph": graph,
        "chunks": chunks,
        "ask": ask,
        "ask_abstained": sum(r["ask_abstained"] for r in rows),
        "graph_vs_chunks": round(graph / chunks, 2) if chunks else None,
        "graph_docs_mean": round(sum(r["graph_docs"] for r in rows) / len(rows), 2),
        "chunk_docs_mean": round(sum(r["chunk_docs"] for r in rows) / len(rows), 2),
        "graph_tokens_mean": round(sum(r["graph_tokens"] for r in rows) / len(rows), 1),
        "chunk_tokens_mean": round(sum(r["chunk_tokens"] for r in rows) / len(rows), 1),
        "leaks": sum(r["leaks"] for r in rows),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=400)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    count = wordpiece_counter()
    questions = load_questions(sample_global_questions())

    start = time.perf_counter()
    index = Index.from_folder(sample_corpus())
    index_s = time.perf_counter() - start
    graphs = GraphIndex(index)
    start = time.perf_counter()
    partitions = graphs.partitions()
    extract_s = time.perf_counter() - start
    readers, build_s = {}, 0.0
    for q in questions:
        start = time.perf_counter()
        view = graphs.view(q.asker)
        build_s += time.perf_counter() - start
        readers[(q.tenant, tuple(q.groups))] = view
    views = [
        {
            "tenant": tenant,
            "groups": list(groups),
            "documents": len(view.doc_ids()),
            "entities": len(view.graph.entities),
            "relations": len(view.graph.relations),
            "communities": len(view.communities),
            "summary_sentences": sum(len(s.sentences) for s in view.summaries),
            "summary_tokens": sum(count(s.text()) for s in view.summaries),
        }
        for (tenant, groups), view in sorted(readers.items())
    ]
    rows = [
        asdict(r)
        for r in compare_global(index, graphs, questions, count=count, max_tokens=args.tokens)
    ]
    result = {
        "setup": {
            "corpus": "data/corpus",
            "questions": "data/questions_global.jsonl",
            "embedder": index.embedder.name,
            "token_budget": args.tokens,
            "tokens": "MiniLM WordPiece",
            "held_out": sorted(HELD_OUT),
            "load_average": round(os.getloadavg()[0], 1),
        },
        "indexing": {
            "chunk_index_s": round(index_s, 3),
            "graph_extract_s": round(extract_s, 3),
            "graph_build_s_all_readers": round(build_s, 3),
            "partitions": len(partitions),
            "sentences": sum(len(s) for s in partitions.values()),
            "chunks": len(index.store.chunks()),
        },
        "readers": views,
        "rows": rows,
        "development": totals([r for r in rows if r["id"] not in HELD_OUT]),
        "held_out": totals([r for r in rows if r["id"] in HELD_OUT]),
        "all": totals(rows),
    }
    text = json.dumps(result, indent=1, ensure_ascii=False)
    if args.json:
        args.json.write_text(text + "\n", encoding="utf-8")
    for name in ("development", "held_out", "all"):
        print(name, json.dumps(result[name]))


if __name__ == "__main__":
    main()
