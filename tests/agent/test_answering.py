"""The agent's answer: each part answered over the same sources, joined once, verified."""

from __future__ import annotations

import pytest

from raglab.agent.answering import answer_parts, merged
from raglab.agent.loop import run_agent
from raglab.agent.planner import gathered
from raglab.agent.tools import Action
from raglab.generate.prompting import ABSTENTION
from raglab.pipeline import answer_from, default_answerer
from raglab.records import Answer, Chunk, Hit, Principal

HITS = (Hit(Chunk("a.md", 0, "Probation lasts 6 months.", 0, 25), 1.0),
        Hit(Chunk("b.md", 0, "The allowance is €400.", 0, 22), 0.9))  # fmt: skip


def test_merged_joins_the_parts_once_and_verifies_every_marker():
    first = Answer("Probation lasts 6 months [1].", retrieved=HITS)
    second = Answer("The allowance is €400 [2]. Probation lasts 6 months [1].", retrieved=HITS)
    answer = merged([first, second])
    assert answer.text == "Probation lasts 6 months [1]. The allowance is €400 [2]."
    assert [c.n for c in answer.citations] == [1, 2] and answer.verified


def test_merged_refuses_parts_built_from_different_sources():
    with pytest.raises(ValueError, match="different sources"):
        merged([Answer("x [1].", retrieved=HITS), Answer("y [1].", retrieved=HITS[:1])])


def test_merged_of_abstentions_is_an_abstention():
    answer = merged([Answer(ABSTENTION, retrieved=HITS, abstained=True)] * 2)
    assert answer.abstained


def test_a_two_part_question_quotes_a_sentence_for_each_part(corpus_index):
    asker = Principal("ana", "acme")
    question = "How long is probation, and how much is the home office allowance?"
    hits = gathered(run_agent(question, corpus_index, asker).steps)
    answerer = default_answerer(corpus_index, asker, "hybrid")
    answer = answer_parts(question, hits, answerer)
    assert "6 months" in answer.text and "€400" in answer.text and answer.verified
    # the same sources as the whole question's answer, so [n] means the same chunk
    assert answer.retrieved == answer_from(question, hits, answerer).retrieved


class Listing:
    def decide(self, question, steps):
        if steps:
            return Action("stop", why="listed")
        return Action("documents", why="what may I read?")


def test_a_documents_step_lists_what_the_asker_may_read_and_costs_tokens(corpus_index):
    run = run_agent("What is there?", corpus_index, Principal("gus", "globex"), planner=Listing())
    (step,) = run.steps
    ids = [doc_id for doc_id, _ in step.listing]
    assert "globex/policies/warranty.md" in ids and all(i.startswith("globex/") for i in ids)
    assert "globex/partners/reseller-price-list.md" not in ids and step.tokens > 0
    assert run.stop_reason == "listed" and run.answer.abstained
