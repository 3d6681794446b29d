"""Fit the extractive answerer's abstention rules and write raglab/generate/abstention_rules.json.

    PYTHONPATH=$PWD python scripts/fit_abstention.py            # every profile
    PYTHONPATH=$PWD python scripts/fit_abstention.py --profiles words hashing

For each profile (an embedder, or "words" for an answerer without one) it indexes the
sample corpus, asks every labelled question of data/questions.jsonl as `raglab.ask` does,
fits a rule on one half of the questions (`raglab.evaluation.calibration.split_questions`) and
prints the figures on the other half, which the fit never saw, and on the whole set.
Profiles not fitted in this run keep their stored rule. Deterministic: the same data
gives the same file.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from raglab.evaluation import load_questions
from raglab.evaluation.calibration import collect_examples, split_questions
from raglab.generate.abstention import (
    RULES_FILE,
    WORDS_PROFILE,
    AbstentionRule,
    Example,
    fit_rule,
    precision_abstention_curve,
    rule_as_dict,
)
from raglab.pipeline import Index
from raglab.samples import sample_corpus, sample_questions

ROOT = Path(__file__).resolve().parent.parent
PROFILES = (WORDS_PROFILE, "hashing", "lsa", "minilm")


def figures(examples: Sequence[Example], rule: AbstentionRule) -> dict[str, float | None]:
    """The rule's figures at its own threshold over `examples`."""
    (point,) = precision_abstention_curve(examples, rule, [rule.threshold])
    return {
        "answered_with_relevant_citation": round(point.answered_correctly, 3),
        "abstention_on_unanswerable": point.abstention_on_unanswerable,
        "precision": None if point.precision is None else round(point.precision, 3),
    }


def fit_profile(profile: str, questions: list) -> dict:
    """Fit one profile; return the rule and its figures as JSON-ready values."""
    embedder = "hashing" if profile == WORDS_PROFILE else profile
    index = Index.from_folder(sample_corpus(), embedder=embedder)
    fit_half, held_out = split_questions(questions)
    use_embedder = profile != WORDS_PROFILE
    fit_examples = collect_examples(index, fit_half, use_embedder=use_embedder)
    held_examples = collect_examples(index, held_out, use_embedder=use_embedder)
    rule = fit_rule(fit_examples, profile=profile)
    return rule_as_dict(rule) | {
        "fitted_on": len(fit_examples),
        "held_out": figures(held_examples, rule),
        "fitting_half": figures(fit_examples, rule),
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profiles", nargs="+", choices=PROFILES, default=list(PROFILES))
    parser.add_argument("--out", type=Path, default=ROOT / "raglab" / "generate" / RULES_FILE)
    args = parser.parse_args(argv)
    questions = load_questions(sample_questions())
    stored = json.loads(args.out.read_text("utf-8")) if args.out.exists() else {"rules": {}}
    for profile in args.profiles:
        stored["rules"][profile] = fitted = fit_profile(profile, questions)
        print(f"{profile}: held out {fitted['held_out']}", file=sys.stderr)
    stored["rules"] = dict(sorted(stored["rules"].items()))
    stored["about"] = (
        "Abstention rules of raglab's extractive answerer, one per embedder profile; "
        "written by scripts/fit_abstention.py (fitted on one half of data/questions.jsonl, "
        "figures on the other half)."
    )
    args.out.write_text(json.dumps(stored, indent=2, sort_keys=True) + "\n", "utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
