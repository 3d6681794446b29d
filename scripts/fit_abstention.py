"""Fit the extractive answerer's abstention rules and write raglab/generate/abstention_rules.json.

    PYTHONPATH=$PWD python scripts/fit_abstention.py            # every profile
    PYTHONPATH=$PWD python scripts/fit_abstention.py --profiles words hashing
    PYTHONPATH=$PWD python scripts/fit_abstention.py --judge squad=/path/to/squad2

For each profile (an embedder, or "words" for an answerer without one) it indexes each
fitting corpus (the sample corpus, data/ , and the second one, data/transfer/), asks every
labelled question as `raglab.ask` does, and fits one rule on all of them, each corpus
weighing the same (`raglab.generate.abstention.fit_rule`). Figures are leave one corpus
out: each corpus judged by a rule fitted on the others alone, as a learner's own documents
would be. `--judge NAME=DIR` adds a corpus (DIR/corpus, DIR/questions.jsonl) that is judged
only, never fitted on. Deterministic: the same data gives the same file.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from raglab.evaluation import load_questions
from raglab.evaluation.calibration import collect_examples
from raglab.generate.abstention import (
    RULES_FILE,
    WORDS_PROFILE,
    AbstentionRule,
    Example,
    fit_rule,
    rule_as_dict,
)
from raglab.pipeline import Index
from raglab.samples import sample_corpus, sample_questions, transfer_corpus, transfer_questions

ROOT = Path(__file__).resolve().parent.parent
PROFILES = (WORDS_PROFILE, "hashing", "lsa", "minilm")
FITTING = {
    "sample": (sample_corpus(), sample_questions()),
    "transfer": (transfer_corpus(), transfer_questions()),
}


def figures(examples: Sequence[Example], rule: AbstentionRule) -> dict[str, float | None]:
    """The figures `raglab ask` would give over `examples`: only a true abstention counts
    as one (a cautious answer is an answer)."""
    answerable = [e for e in examples if e.answerable]
    unanswerable = [e for e in examples if not e.answerable]
    abstains = [rule.level(rule.probability(e.features)) == "abstained" for e in examples]
    refused = dict(zip((e.question_id for e in examples), abstains))
    share = lambda hits, of: round(hits / len(of), 3) if of else None  # noqa: E731
    return {
        "false_abstention": share(sum(refused[e.question_id] for e in answerable), answerable),
        "answered_with_key_fact": share(
            sum(e.correct and not refused[e.question_id] for e in answerable), answerable
        ),
        "abstention_on_unanswerable": share(
            sum(refused[e.question_id] for e in unanswerable), unanswerable
        ),
    }


def examples_of(profile: str, corpus: Path, questions: Path) -> list[Example]:
    embedder = "hashing" if profile == WORDS_PROFILE else profile
    index = Index.from_folder(corpus, embedder=embedder)
    return collect_examples(index, load_questions(questions), use_embedder=profile != WORDS_PROFILE)


def fit(profile: str, corpora: dict[str, list[Example]]) -> AbstentionRule:
    examples = [e for c in sorted(corpora) for e in corpora[c]]
    names = [c for c in sorted(corpora) for _ in corpora[c]]
    return fit_rule(examples, profile=profile, corpora=names)


def fit_profile(profile: str, judged: dict[str, tuple[Path, Path]]) -> dict:
    """Fit one profile on every fitting corpus; figures leave one corpus out."""
    fitting = {name: examples_of(profile, *paths) for name, paths in FITTING.items()}
    rule = fit(profile, fitting)
    left_out = {
        name: figures(examples, fit(profile, {c: e for c, e in fitting.items() if c != name}))
        for name, examples in fitting.items()
    }
    for name, paths in judged.items():
        left_out[name] = figures(examples_of(profile, *paths), rule)
    return rule_as_dict(rule) | {
        "fitted_on": {name: len(examples) for name, examples in fitting.items()},
        "left_out": left_out,
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profiles", nargs="+", choices=PROFILES, default=list(PROFILES))
    parser.add_argument("--judge", nargs="*", default=[], metavar="NAME=DIR")
    parser.add_argument("--out", type=Path, default=ROOT / "raglab" / "generate" / RULES_FILE)
    args = parser.parse_args(argv)
    judged = {}
    for item in args.judge:
        name, _, folder = item.partition("=")
        judged[name] = (Path(folder) / "corpus", Path(folder) / "questions.jsonl")
    stored = json.loads(args.out.read_text("utf-8")) if args.out.exists() else {"rules": {}}
    for profile in args.profiles:
        stored["rules"][profile] = fitted = fit_profile(profile, judged)
        print(f"{profile}: left out {fitted['left_out']}", file=sys.stderr)
    stored["rules"] = dict(sorted(stored["rules"].items()))
    stored["about"] = (
        "Abstention rules of raglab's extractive answerer, one per embedder profile; "
        "written by scripts/fit_abstention.py (fitted on data/ and data/transfer/, each "
        "corpus weighing the same; figures leave one corpus out)."
    )
    args.out.write_text(json.dumps(stored, indent=2, sort_keys=True) + "\n", "utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
