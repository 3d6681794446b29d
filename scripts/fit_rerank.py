"""Fit the learned reranker and write raglab/retrieve/rerank_weights.json.

    PYTHONPATH=$PWD python scripts/fit_rerank.py                 # every profile
    PYTHONPATH=$PWD python scripts/fit_rerank.py --profiles hashing

For each embedder it indexes the sample corpus, searches every labelled question of
data/questions.jsonl (dense and BM25, once, deep), fits the reranker on one half of the
questions (`raglab.evaluation.calibration.split_questions`) and measures hybrid search with and
without it on the other half, which the fit never saw — retrieval, and the offline
answerer's answers to what it retrieved. `enabled` is true only when the reranker lowers
none of nDCG@10, MRR@5, recall@5, answered with a relevant citation and abstention there,
and its nDCG@10 gain is shown to be real (the paired bootstrap interval lies above 0): a reranker that makes things worse stays
off. Profiles not fitted in this run keep their stored entry. Deterministic.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from raglab.embed.embedders import embedder as make_embedder
from raglab.embed.embedding_cache import cached
from raglab.evaluation import load_questions
from raglab.evaluation.bootstrap import paired_difference
from raglab.evaluation.calibration import split_questions
from raglab.evaluation.improvement import Measurement, measure
from raglab.evaluation.tuning import (
    collect_rankings,
    fit_reranker,
    fused_search,
    reranked_search,
    training_rows,
)
from raglab.pipeline import Index, answer_from, default_answerer
from raglab.retrieve.fusion import Fusion
from raglab.retrieve.rerank import WEIGHTS_FILE
from raglab.samples import sample_corpus, sample_questions

ROOT = Path(__file__).resolve().parent.parent
PROFILES = ("hashing", "lsa", "minilm")
DEPTH = 200  # every ranking searched this deep once: deeper than any candidate list needs


JUDGED = ("ndcg@10", "mrr@5", "recall@5", "answered_with_citation", "abstention")
"""The held-out figures a reranker may not lower: retrieval, and the answers built on it."""


def figures(m: Measurement) -> dict[str, float]:
    return {metric: round(m.interval(metric).mean, 4) for metric in JUDGED}


def fit_profile(profile: str, questions: list) -> dict:
    embedder = cached(make_embedder(profile))
    index = Index.from_folder(sample_corpus(), embedder=embedder)
    retriever = index.retriever("hybrid")
    rankings = collect_rankings(retriever.dense, retriever.keyword, questions, depth=DEPTH)
    fit_half, held_out = split_questions(questions)
    fusion = Fusion()
    x, labels = training_rows(rankings, fit_half, fusion)
    reranker = fit_reranker(x, labels, profile=profile)
    entry = reranker.as_dict() | {"fitted_on": len(fit_half), "candidates": len(labels)}

    def answer(q, hits):  # as raglab.ask answers, for the question's own user
        return answer_from(q.question, hits, default_answerer(index, q.asker, "hybrid"))

    for name, half in (("fitting_half", fit_half), ("held_out", held_out)):
        before = measure("hybrid", half, search=fused_search(rankings, fusion), answer=answer)
        search = reranked_search(rankings, fusion, reranker)
        after = measure("reranked", half, search=search, answer=answer)
        gain = paired_difference(before.values("ndcg@10"), after.values("ndcg@10"))
        entry[name] = {
            "hybrid": figures(before),
            "reranked": figures(after),
            "ndcg@10_gain": [round(gain.mean, 4), round(gain.low, 4), round(gain.high, 4)],
        }
    held = entry["held_out"]
    no_worse = all(held["reranked"][m] >= held["hybrid"][m] for m in JUDGED)
    entry["enabled"] = no_worse and held["ndcg@10_gain"][1] > 0
    return entry


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--profiles", nargs="+", choices=PROFILES, default=list(PROFILES))
    args = parser.parse_args(argv)
    path = ROOT / "raglab" / "retrieve" / WEIGHTS_FILE
    stored = json.loads(path.read_text("utf-8")) if path.exists() else {"rerankers": {}}
    questions = load_questions(sample_questions())
    for profile in args.profiles:
        entry = fit_profile(profile, questions)
        stored["rerankers"][profile] = entry
        held = entry["held_out"]
        print(
            f"{profile}: held out {held['hybrid']} -> {held['reranked']}; enabled {entry['enabled']}"
        )
    stored["about"] = (
        "raglab's learned rerankers, one per embedder; written by scripts/fit_rerank.py "
        "(fitted on one half of data/questions.jsonl, figures on both halves; enabled only "
        "when no held-out figure gets worse, answers included, and the nDCG@10 gain "
        "[mean, low, high] lies above 0)."
    )
    stored["rerankers"] = dict(sorted(stored["rerankers"].items()))
    path.write_text(json.dumps(stored, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
