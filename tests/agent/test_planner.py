"""The offline planner: shapes, names handed on, refined queries, stop reasons."""

from __future__ import annotations

import pytest

from raglab.agent.loop import run_agent
from raglab.agent.planner import decompose, names_in
from raglab.records import Principal

GLOBEX = Principal("gus", "globex")


@pytest.mark.parametrize(
    ("question", "shape", "parts"),
    [
        ("How many vacation days do I get?", "single", ["How many vacation days do I get"]),
        (
            "How soon must I report it, and how long before it is wiped?",
            "and",
            ["How soon must I report it", "how long before it is wiped"],
        ),
        (
            "Which has a longer warranty, the GX-T100 or the GX-T200-PRO?",
            "comparison",
            ["Which has a longer warranty GX-T100", "Which has a longer warranty GX-T200-PRO"],
        ),
        (
            "What is the street address of the office that Project Juniper moves support to?",
            "chain",
            [
                "office that Project Juniper moves support to",
                "What is the street address of the office",
            ],
        ),
        # a clause of fewer than three content words is no chain; a named thing needs no lookup
        ("When do I need a note from the doctor when I'm ill?", "single", None),
        ("Does the GX-T200-PRO work with Apple HomeKit?", "single", None),
    ],
)
def test_decompose_reads_the_common_shapes(question, shape, parts):
    plan = decompose(question)
    assert plan.shape == shape
    if parts is not None:
        assert [p.text for p in plan.parts] == parts


def test_names_in_prefers_codes_and_skips_stopwords():
    assert names_in("If your system has no C-wire, install the GX-PA24 adapter.") == ["GX-PA24"]
    assert names_in(" Pro: 25 months") == ["Pro", "25"]  # a table cell, as split at ";"


def test_a_chain_searches_again_with_the_code_the_first_search_found(corpus_index):
    question = "What is the warranty period of the part the troubleshooting guide says to install for error E-101?"
    run = run_agent(question, corpus_index, GLOBEX)
    queries = [step.action.query for step in run.steps]
    assert queries[0] == question
    assert "GX-PA24" in queries[-1] and "GX-PA24" not in question
    assert "globex/policies/warranty.md" in run.steps[-1].found
    assert run.stop_reason.startswith("enough evidence for every part")
    assert "1 year" in run.answer.text and run.answer.verified


def test_an_ordinary_question_stops_after_one_step(corpus_index):
    run = run_agent("How many vacation days do I get?", corpus_index, Principal("ana", "acme"))
    assert len(run.steps) == 1
    assert run.stop_reason == "enough evidence for every part (1)"
