"""The loop: the same Answer record as ask, budgets, stop reasons, what it gathered."""

from __future__ import annotations

from raglab.agent.loop import run_agent
from raglab.agent.tools import Action, Budget
from raglab.pipeline import ask
from raglab.records import Principal

ACME = Principal("ana", "acme")


class Always:
    """A planner that searches the same query forever: only a budget stops it."""

    def decide(self, question, steps):
        return Action("search", f"{question} {len(steps)}", k=5, why="again")


def test_a_one_step_run_answers_exactly_as_ask(corpus_index):
    question = "How many vacation days do I get?"
    run = run_agent(question, corpus_index, ACME)
    assert run.answer == ask(question, corpus_index, ACME)
    assert list(run.retrieved) == list(run.answer.retrieved)


def test_the_step_budget_stops_a_planner_that_never_stops(corpus_index):
    run = run_agent("vacation days", corpus_index, ACME, planner=Always(), budget=Budget(steps=3))
    assert len(run.steps) == 3
    assert run.stop_reason == "step budget spent (3 steps)"


def test_the_token_budget_stops_it_sooner(corpus_index):
    run = run_agent("vacation days", corpus_index, ACME, planner=Always(), budget=Budget(tokens=50))
    assert len(run.steps) == 1
    assert run.stop_reason.startswith("token budget spent")


def test_everything_gathered_is_readable_and_each_chunk_listed_once(corpus_index):
    run = run_agent("salary bands for a staff engineer", corpus_index, ACME, planner=Always())
    ids = [hit.chunk.id for hit in run.retrieved]
    assert len(ids) == len(set(ids))
    assert all(hit.chunk.tenant == "acme" and not hit.chunk.groups for hit in run.retrieved)
    assert run.answer.verified
