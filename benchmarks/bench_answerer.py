"""The answerer as a user meets it: `raglab.ask` with the defaults, on corpora it was fitted on and not.

    python benchmarks/bench_answerer.py [--corpus NAME=FOLDER ...] [--held-out NAME ...]
                                        [--embedders hashing,minilm] [--curve]
                                        [--json benchmarks/results/answerer.json]
                                        [--details DIR]

A FOLDER holds `corpus/` and `questions.jsonl`, as data/ and data/transfer/ do (and what
benchmarks/squad_to_raglab.py writes for SQuAD 2.0, kept outside the repository). Default: `sample=data` and `transfer=data/transfer`,
with only the held-out half of the sample questions (`--held-out sample`: the half
scripts/fit_abstention.py never fitted on, `raglab.evaluation.calibration.split_questions`).

Each corpus is indexed in memory with each embedder, and every question is asked through
`raglab.pipeline.ask` with the defaults, as its own principal (tenant and groups). Per
corpus and embedder, over the answerable questions:

- false abstention: refused although answerable;
- answered with the key fact: the answer cites a relevant document and its text holds
  every `must_contain` string (`raglab.evaluation.metrics.holds_key_fact`; the answer's
  text, not the cited chunk, which holds the fact whenever retrieval worked);
- relevant citation, fact missing: cites a relevant document, the fact is not in the text;

and over the unanswerable ones: abstention, overall and per kind (near_miss, off_topic,
leak_probe, ...). Then leaks (answers citing a document in `leak_docs` or one the asker may
not read), the share of answers whose every citation is verified, recall@5 (is the loss
retrieval's or the answerer's?) and the mean latency of one `ask`.

`--curve` prints, for an answerer that decides with a threshold on a probability (today's
`ExtractiveGenerator`: `decide(prompt)` gives `probability` and the `draft` it would give),
false abstention against abstention on unanswerable at thresholds 0.05 … 0.95.
`--details DIR` writes one JSONL file per corpus and embedder: each question's outcome and
answer, to read which questions fail and why.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from _util import print_table, timed

from raglab.evaluation import EvalReport, Question, evaluate, holds_key_fact, load_questions
from raglab.evaluation.calibration import split_questions
from raglab.evaluation.runner import QuestionResult
from raglab.generate.citations import verify_citations
from raglab.generate.prompting import build_prompt
from raglab.pipeline import DEFAULT_K, DEFAULT_METHOD, Index, ask, default_answerer
from raglab.store.access import can_read

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_CORPORA = {"sample": ROOT / "data", "transfer": ROOT / "data" / "transfer"}
THRESHOLDS = [round(0.05 * i, 2) for i in range(1, 20)]


@dataclass(frozen=True, slots=True)
class Corpus:
    """A folder to index and the questions to ask of it (all, or the held-out half)."""

    name: str
    folder: Path
    held_out: bool


def outcome(result: QuestionResult) -> str:
    """One question's outcome, in the words of the report's columns."""
    if not result.question.answerable:
        return "abstained" if result.abstained else "answered"
    if result.abstained:
        return "abstained"
    if not result.cited_relevant:
        return "wrong citation"
    if result.key_fact is None:
        return "relevant citation"
    return "key fact" if result.key_fact else "fact missing"


def leaked_citations(result: QuestionResult) -> list[str]:
    """Cited documents the asker must not see: named in `leak_docs`, or not readable."""
    assert result.answer is not None
    q = result.question
    return [
        c.hit.chunk.doc_id
        for c in result.answer.citations
        if c.hit.chunk.doc_id in q.leak_docs or not can_read(q.asker, c.hit.chunk)
    ]


def _share(part: int, whole: int) -> float | None:
    return round(part / whole, 3) if whole else None


def figures(report: EvalReport, seconds: Sequence[float]) -> dict[str, Any]:
    """The report's figures for one corpus and embedder, as JSON-ready values."""
    results = report.per_question
    answerable = [r for r in results if r.question.answerable]
    with_fact = [r for r in answerable if r.question.must_contain]
    unanswerable = [r for r in results if not r.question.answerable]
    outcomes = [outcome(r) for r in answerable]
    answered = [r for r in results if not r.abstained]
    by_kind: dict[str, list[bool]] = {}
    for r in unanswerable:
        by_kind.setdefault(r.question.kind or "unanswerable", []).append(bool(r.abstained))
    missing = sum(r.key_fact is False and bool(r.cited_relevant) for r in with_fact)
    return {
        "questions": len(results),
        "answerable": len(answerable),
        "answerable_with_key_fact": len(with_fact),
        "unanswerable": len(unanswerable),
        "recall@5": None if report.recall_at_k is None else round(report.recall_at_k, 3),
        "false_abstention": _share(outcomes.count("abstained"), len(answerable)),
        "answered_with_key_fact": _share(sum(bool(r.key_fact) for r in with_fact), len(with_fact)),
        "relevant_citation_fact_missing": _share(missing, len(with_fact)),
        "answered_with_relevant_citation": _share(
            sum(bool(r.cited_relevant) for r in answerable), len(answerable)
        ),
        "abstention_on_unanswerable": _share(
            sum(bool(r.abstained) for r in unanswerable), len(unanswerable)
        ),
        "abstention_by_kind": {
            kind: _share(sum(flags), len(flags)) for kind, flags in sorted(by_kind.items())
        },
        "leaks": sum(len(leaked_citations(r)) for r in results),
        "citations_verified": _share(
            sum(bool(r.citations_verified) for r in answered), len(answered)
        ),
        "ask_ms_mean": round(1000 * statistics.fmean(seconds), 1),
        "ask_ms_median": round(1000 * statistics.median(seconds), 1),  # the first ask loads things
        "counts": {
            "answerable": dict(sorted((o, outcomes.count(o)) for o in set(outcomes))),
            "unanswerable_abstained": sum(bool(r.abstained) for r in unanswerable),
        },
    }


def details(report: EvalReport) -> list[dict[str, Any]]:
    """Each question's outcome and answer, for reading the failures."""
    rows = []
    for r in report.per_question:
        assert r.answer is not None
        rows.append(
            {
                "id": r.question.id,
                "kind": r.question.kind,
                "outcome": outcome(r),
                "question": r.question.question,
                "must_contain": list(r.question.must_contain),
                "relevant_docs": list(r.question.relevant_docs),
                "retrieved_relevant": bool(
                    set(r.ranked_doc_ids[:5]) & set(r.question.relevant_docs)
                ),
                "answer": r.answer.text,
                "cited": [c.hit.chunk.doc_id for c in r.answer.citations],
            }
        )
    return rows


def run(corpus: Corpus, embedder: str) -> tuple[EvalReport, list[float], Index, list[Question]]:
    """Index `corpus` with `embedder` and ask every question; the report and each ask's time."""
    index = Index.from_folder(corpus.folder / "corpus", embedder=embedder)
    if index.load_errors:
        sys.exit(f"bench_answerer: {corpus.folder}: {index.load_errors[0]}")
    questions = load_questions(corpus.folder / "questions.jsonl", doc_ids=index.document_ids())
    if corpus.held_out:
        questions = split_questions(questions)[1]
    seconds: list[float] = []
    answer = timed(lambda q: ask(q.question, index, q.asker), seconds)
    report = evaluate(
        questions,
        search=lambda q, depth: index.search(q.question, q.asker, k=depth),
        answer=answer,
        k=5,
        embedder=embedder,
    )
    return report, seconds, index, questions


# --- the curve ------------------------------------------------------------------------------


def curve(index: Index, questions: Sequence[Question]) -> list[dict[str, Any]] | None:
    """False abstention against abstention on unanswerable, one point per threshold.

    None when the default answerer decides without a probability and a threshold.
    Each question is decided once: its probability, and the answer it would give if it
    answered (`draft`); at threshold t it answers when the probability reaches t.
    """
    probe = default_answerer(index, questions[0].asker, DEFAULT_METHOD)
    if not callable(getattr(probe, "decide", None)) or getattr(probe, "rule", None) is None:
        return None
    decided = []  # (question, probability, the draft holds the key fact with a relevant citation)
    for q in questions:
        hits = index.search(q.question, q.asker, k=DEFAULT_K, method=DEFAULT_METHOD)
        prompt = build_prompt(q.question, hits)
        decision = default_answerer(index, q.asker, DEFAULT_METHOD).decide(prompt)
        cited = {
            c.hit.chunk.doc_id for c in verify_citations(decision.draft, prompt.sources).citations
        }
        right = bool(cited & set(q.relevant_docs)) and bool(q.must_contain)
        right = right and holds_key_fact(decision.draft, q.must_contain)
        decided.append((q, decision.probability if decision.draft else -1.0, right))
    answerable = [d for d in decided if d[0].answerable]
    with_fact = [d for d in answerable if d[0].must_contain]
    unanswerable = [d for d in decided if not d[0].answerable]
    points = []
    for t in THRESHOLDS:
        points.append(
            {
                "threshold": t,
                "false_abstention": _share(sum(p < t for _, p, _ in answerable), len(answerable)),
                "answered_with_key_fact": _share(
                    sum(p >= t and right for _, p, right in with_fact), len(with_fact)
                ),
                "abstention_on_unanswerable": _share(
                    sum(p < t for _, p, _ in unanswerable), len(unanswerable)
                ),
            }
        )
    return points


def rule_threshold(index: Index, question: Question) -> float | None:
    """The threshold today's answerer applies for this index's embedder, if it has one."""
    rule = getattr(default_answerer(index, question.asker, DEFAULT_METHOD), "rule", None)
    threshold = getattr(rule, "threshold", None)
    return threshold if isinstance(threshold, float) else None


# --- the command ----------------------------------------------------------------------------


def corpora(args: argparse.Namespace) -> list[Corpus]:
    """The corpora asked for: `--corpus NAME=FOLDER` (default: the sample and the transfer set)."""
    named = DEFAULT_CORPORA.copy() if not args.corpus else {}
    for spec in args.corpus:
        name, sep, folder = spec.partition("=")
        if not sep or not name or not folder:
            sys.exit(f"bench_answerer: --corpus {spec!r}: expected NAME=FOLDER")
        named[name] = Path(folder)
    for name, folder in named.items():
        for part in ("corpus", "questions.jsonl"):
            if not (folder / part).exists():
                sys.exit(f"bench_answerer: --corpus {name}: {folder / part} not found")
    return [Corpus(name, folder, name in args.held_out) for name, folder in named.items()]


def label(corpus: Corpus) -> str:
    return f"{corpus.name} (held-out half)" if corpus.held_out else corpus.name


def _count(fig: dict[str, Any], key: str, whole: str) -> str:
    value = fig[key]
    return "n/a" if value is None else f"{value:.3f} ({round(value * fig[whole])}/{fig[whole]})"


def print_figures(results: dict[str, dict[str, dict[str, Any]]]) -> None:
    rows = []
    for name, by_embedder in results.items():
        for embedder, fig in by_embedder.items():
            kinds = ", ".join(f"{k} {v:.2f}" for k, v in fig["abstention_by_kind"].items())
            rows.append(
                [
                    name,
                    embedder,
                    _count(fig, "false_abstention", "answerable"),
                    _count(fig, "answered_with_key_fact", "answerable_with_key_fact"),
                    _count(fig, "relevant_citation_fact_missing", "answerable_with_key_fact"),
                    _count(fig, "abstention_on_unanswerable", "unanswerable"),
                    kinds,
                    fig["leaks"],
                    fig["citations_verified"],
                    fig["recall@5"],
                    f"{fig['ask_ms_mean']} ({fig['ask_ms_median']})",
                ]
            )
    print_table(
        [
            "corpus",
            "embedder",
            "false abstention",
            "key fact",
            "relevant, fact missing",
            "abstention (unanswerable)",
            "by kind",
            "leaks",
            "verified",
            "recall@5",
            "ask ms: mean (median)",
        ],
        rows,
    )


def print_curve(name: str, embedder: str, points: list[dict[str, Any]], today: float | None):
    print(f"\n{name}, {embedder}: the curve (today's threshold {today})")
    print_table(
        ["threshold", "false abstention", "key fact", "abstention (unanswerable)"],
        [
            [
                p["threshold"],
                p["false_abstention"],
                p["answered_with_key_fact"],
                p["abstention_on_unanswerable"],
            ]
            for p in points
        ],
    )


def save(path: Path, results: dict[str, dict[str, dict[str, Any]]]) -> None:
    """Merge this run into the JSON file: one entry per corpus, one per embedder in it."""
    out = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    out["about"] = (
        "raglab.ask with the defaults over labelled questions, per corpus and embedder; "
        "written by benchmarks/bench_answerer.py"
    )
    stored = out.setdefault("corpora", {})
    for name, by_embedder in results.items():
        stored.setdefault(name, {}).update(by_embedder)
    path.write_text(json.dumps(out, indent=1, sort_keys=True) + "\n", encoding="utf-8")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpus", action="append", default=[], metavar="NAME=FOLDER")
    parser.add_argument(
        "--held-out",
        nargs="*",
        default=["sample"],
        metavar="NAME",
        help="corpora asked only their held-out half (default: sample)",
    )
    parser.add_argument("--embedders", default="hashing,minilm")
    parser.add_argument("--curve", action="store_true", help="print the threshold curve too")
    parser.add_argument("--json", type=Path, help="merge the figures into this file")
    parser.add_argument("--details", type=Path, help="write each question's outcome here")
    args = parser.parse_args(argv)
    names = [n.strip() for n in args.embedders.split(",") if n.strip()]
    results: dict[str, dict[str, dict[str, Any]]] = {}
    for corpus in corpora(args):
        for embedder in names:
            report, seconds, index, questions = run(corpus, embedder)
            fig = figures(report, seconds)
            if args.curve:
                points = curve(index, questions)
                if points is None:
                    print(f"{corpus.name}, {embedder}: the answerer has no threshold: no curve")
                else:
                    fig["curve"] = points
                    print_curve(
                        label(corpus), embedder, points, rule_threshold(index, questions[0])
                    )
            results.setdefault(label(corpus), {})[embedder] = fig
            if args.details:
                args.details.mkdir(parents=True, exist_ok=True)
                out = args.details / f"{corpus.name}-{embedder}.jsonl"
                out.write_text("".join(json.dumps(row) + "\n" for row in details(report)), "utf-8")
    print()
    print_figures(results)
    if args.json:
        save(args.json, results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
