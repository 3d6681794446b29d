"""Each model profile measured on the labelled questions: one table, one row per profile.

    python benchmarks/bench_profiles.py [--profiles offline-fast,offline-neural,llm]
                                        [--out benchmarks/results/profiles.json]

Each profile (`raglab/profiles.toml`) indexes the sample corpus into a SQLite file of its
own, then every question of data/questions.jsonl goes through the evaluation runner
(`raglab.evaluation.evaluate`, as `raglab eval --profile NAME` does): its search is
`Index.search` and its answer `raglab.ask`, both with the profile's settings. Per profile:
recall@5 and nDCG@10 (answerable questions), answered with a relevant citation (answerable),
abstention on the unanswerable ones, false abstention, leaks, the median wall time of one
`ask` (the index open and warm: retrieval, prompt, answer, citations checked), the time to
index, and the index's size on disk (the SQLite file and the vector files beside it).

The `llm` profile asks the OpenAI-compatible server in RAGLAB_LLM_URL when it is set. When
it is not, its answers come from `raglab.workbook.scripted_model.ScriptedModel`, notebook
10's offline stand-in (it quotes like the extractive answerer, with the words-only rule, and
adds a citation of its own): its retrieval columns are the profile's, its answer columns
measure the plumbing, not a language model. The JSON says which (`answered_by`).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def index_bytes(path: Path) -> int:
    """The index file and the files raglab keeps beside it (`<file>.*`: vectors, rows)."""
    return sum(p.stat().st_size for p in path.parent.iterdir() if p.name.startswith(path.name))


def measure(name: str, work: Path) -> dict:
    from _util import timed

    from raglab import Index, ask
    from raglab.evaluation import evaluate, load_questions
    from raglab.profiles import profile
    from raglab.samples import sample_corpus, sample_questions

    chosen = profile(name)
    path = work / f"{name}.sqlite"
    start = time.perf_counter()
    Index.from_folder(sample_corpus(), path=path, profile=chosen).store.close()
    index_s = time.perf_counter() - start
    index = Index.open(path)
    questions = load_questions(sample_questions(), doc_ids=index.document_ids())

    generator, answered_by = None, chosen.answerer
    if chosen.answerer == "openai" and not os.environ.get("RAGLAB_LLM_URL"):
        from raglab.workbook.scripted_model import ScriptedModel

        generator, answered_by = ScriptedModel(), "scripted stand-in (no RAGLAB_LLM_URL)"
    elif chosen.answerer == "openai":
        answered_by = f"{os.environ.get('RAGLAB_LLM_MODEL')} at {os.environ['RAGLAB_LLM_URL']}"

    seconds: list[float] = []
    answer = timed(lambda q: ask(q.question, index, q.asker, generator=generator), seconds)

    report = evaluate(
        questions,
        search=lambda q, depth: index.search(q.question, q.asker, k=depth),
        answer=answer,
        k=index.k,
        retriever=index.method,
        embedder=index.embedder.name,
    )
    size = index_bytes(path)
    index.store.close()
    return {
        "embedder": chosen.embedder,
        "chunks": f"{chosen.chunker_kind} {chosen.chunk_tokens}/{chosen.overlap_tokens} tokens "
        f"= {chosen.chunk_chars}/{chosen.overlap_chars} chars",
        "k": chosen.k,
        "fusion": str(chosen.fusion_rule()),
        "reranker": chosen.reranker,
        "answered_by": answered_by,
        "context": f"{chosen.context_tokens} {chosen.context_tokenizer} tokens",
        "questions": report.questions,
        "recall@5": round(report.recall_at_k or 0.0, 4),
        "ndcg@10": round(report.ndcg_at_10 or 0.0, 4),
        "answered_with_citation": round(report.answered_with_relevant_citation or 0.0, 4),
        "abstention_on_unanswerable": round(report.abstention_on_unanswerable or 0.0, 4),
        "false_abstention": round(report.false_abstention or 0.0, 4),
        "leaks": report.leaks,
        "ask_p50_ms": round(1000 * statistics.median(seconds), 1),
        "index_s": round(index_s, 1),
        "index_mb": round(size / 1e6, 2),
    }


COLUMNS = (
    ("recall@5", "recall@5", "{:.3f}"),
    ("ndcg@10", "nDCG@10", "{:.3f}"),
    ("answered_with_citation", "answered with citation", "{:.3f}"),
    ("abstention_on_unanswerable", "abstention (unanswerable)", "{:.3f}"),
    ("false_abstention", "false abstention", "{:.3f}"),
    ("ask_p50_ms", "ask p50 ms", "{:.0f}"),
    ("index_mb", "index MB", "{:.2f}"),
)


def table(rows: dict[str, dict]) -> str:
    """The README's table, in markdown."""
    head = "| profile | " + " | ".join(title for _, title, _ in COLUMNS) + " |"
    lines = [head, "|" + " --- |" * (len(COLUMNS) + 1)]
    for name, row in rows.items():
        cells = [form.format(row[key]) for key, _, form in COLUMNS]
        lines.append(f"| `{name}` | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--profiles", default="offline-fast,offline-neural,llm")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks/results/profiles.json")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as work:
        rows = {name: measure(name, Path(work)) for name in args.profiles.split(",")}
    print(table(rows))
    result = {
        "about": __doc__.split("\n\n")[0],
        "date": datetime.now(UTC).strftime("%Y-%m-%d"),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
        "profiles": rows,
    }
    args.out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
