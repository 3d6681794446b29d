"""Labelled examples for the abstention rule: a fair split, and what the answerer would do.

A rule fitted and judged on the same questions looks better than it is. So the labelled
questions are split in two (`split_questions`): the rule is fitted on one half
(`scripts/fit_abstention.py`) and its figures are reported on the other, which it never saw.

`collect_examples` asks every question through an index, exactly as `raglab.ask` does, and
records what the rule sees (`AnswerFeatures`) and whether the answer the answerer would
give is right: it cites a document the question lists as relevant and, when the question
names its key fact (`must_contain`), its quotes hold that fact.

A rule fitted on one corpus learns that corpus's scores. So `scripts/fit_abstention.py`
fits on several corpora at once and judges each one with the rule fitted on the others
(leave one corpus out): the figure a learner's own documents can expect.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from raglab.evaluation.metrics import holds_key_fact
from raglab.evaluation.runner import Question
from raglab.generate.abstention import FEATURES, AbstentionRule, Example, profile_of
from raglab.generate.prompting import build_prompt
from raglab.pipeline import DEFAULT_K, DEFAULT_METHOD, Index, default_answerer
from raglab.records import Principal
from raglab.text import content_hash

__all__ = ["collect_examples", "split_questions"]


def split_questions(
    questions: Sequence[Question], *, salt: str = "raglab-abstention"
) -> tuple[list[Question], list[Question]]:
    """(fit, held out): every other question of each kind, in a fixed pseudo-random order.

    Within each kind (and answerable or not), questions are ordered by a hash of their id
    and `salt`, and dealt alternately into the two halves, so both halves hold every kind
    in the same proportion. Deterministic: the same ids give the same split on every machine.

    >>> from raglab.evaluation.runner import Question
    >>> qs = [Question(f"q{i}", "?", answerable=False) for i in range(4)]
    >>> [[q.id for q in half] for half in split_questions(qs)]
    [['q2', 'q3'], ['q1', 'q0']]
    """
    strata: dict[tuple[str, bool], list[Question]] = {}
    for q in questions:
        strata.setdefault((q.kind or "", q.answerable), []).append(q)
    fit: list[Question] = []
    held_out: list[Question] = []
    for key in sorted(strata):
        ordered = sorted(strata[key], key=lambda q: content_hash(f"{salt}:{q.id}"))
        fit += ordered[0::2]
        held_out += ordered[1::2]
    return fit, held_out


def collect_examples(
    index: Index,
    questions: Sequence[Question],
    *,
    method: str = DEFAULT_METHOD,
    k: int = DEFAULT_K,
    use_embedder: bool = True,
) -> list[Example]:
    """What the default answerer sees and would answer for each question (see `Example`).

    `use_embedder=False` scores by words alone (the "words" profile). The rule is not
    applied here: an example records the answer the answerer *would* give, right or not.
    """
    examples = []
    for q in questions:
        principal = Principal(f"calibration:{q.id}", q.tenant, frozenset(q.groups))
        hits = index.search(q.question, principal, k=k, method=method)
        prompt = build_prompt(q.question, hits)
        answerer = default_answerer(index, principal, method)  # as `raglab.ask` answers
        embedder = answerer.embedder if use_embedder else None
        # Any rule of the embedder's profile makes the answerer score with the embedder; the
        # rule's own numbers do not matter here (the rule is what these examples fit).
        rule = AbstentionRule(profile_of(embedder), (0.0,) * len(FEATURES), 0.0, 0.5)
        generator = replace(answerer, embedder=embedder, rule=rule)
        decision = generator.decide(prompt)
        cited = {prompt.sources[e.n - 1].chunk.doc_id for e in decision.chosen}
        has_fact = not q.must_contain or holds_key_fact(decision.draft, q.must_contain)
        correct = q.answerable and bool(cited & set(q.relevant_docs)) and has_fact
        examples.append(Example(q.id, decision.features, q.answerable, correct))
    return examples
