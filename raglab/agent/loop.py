"""The agent's loop: ask the planner, call the tool as the asker, check, again; then answer.

    planner.decide(question, steps) ─► Action ─► Toolbox (the asker's principal) ─► Step
         ▲                                                                        │
         └──────────── until "stop", or the step or token budget is spent ◄───────┘

The answer comes from the ordinary answerer over everything the steps gathered, part by
part (`raglab.agent.answering`), so it is the same `Answer` record as `raglab.ask`'s, its
citations verified against those chunks.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

from raglab.agent.answering import answer_parts
from raglab.agent.planner import RulePlanner, gathered
from raglab.agent.tools import Action, Budget, Toolbox, cost
from raglab.agent.trace import AgentRun, Step
from raglab.generate.generation import Generator
from raglab.generate.prompting import check_question
from raglab.pipeline import DEFAULT_METHOD, default_answerer
from raglab.records import Principal

if TYPE_CHECKING:
    from raglab.pipeline import Index


class Planner(Protocol):
    """Decides the next action from the question and the steps so far."""

    def decide(self, question: str, steps: Sequence[Step]) -> Action: ...


def run_agent(
    question: str,
    index: Index,
    principal: Principal,
    *,
    planner: Planner | None = None,
    budget: Budget | None = None,
    method: str = DEFAULT_METHOD,
    generator: Generator | None = None,
    max_chars: int | None = None,
) -> AgentRun:
    """Answer `question` for `principal` by searching as many times as the planner needs.

    `planner`: `RulePlanner()` (offline) by default, or `raglab.agent.model_planner.ModelPlanner`.
    Every tool runs as `principal`; `budget` bounds the steps and the tokens they return.
    `max_chars`: the prompt's budget of source text (None: all that was gathered, which the
    token budget already bounds, so source `[n]` is `AgentRun.retrieved[n - 1]`).
    """
    check_question(question)
    planner = planner or RulePlanner()
    budget = budget or Budget()
    tools = Toolbox(index, principal, method)
    steps: list[Step] = []
    while True:
        reason = _spent(steps, budget)
        if reason:
            break
        action = planner.decide(question, steps)
        if action.tool == "stop":
            reason = action.why or "the planner stopped"
            break
        steps.append(_run(len(steps) + 1, action, tools, steps))
    hits = gathered(steps)
    generator = generator or default_answerer(index, principal, method)
    room = max(6000, sum(len(hit.chunk.text) for hit in hits)) if max_chars is None else max_chars
    answer = answer_parts(question, hits, generator, max_chars=room)
    transcript = tuple(getattr(planner, "transcript", ()))
    return AgentRun(question, answer, tuple(steps), reason, tuple(hits), transcript)


def _spent(steps: Sequence[Step], budget: Budget) -> str:
    if len(steps) >= budget.steps:
        return f"step budget spent ({budget.steps} steps)"
    tokens = sum(step.tokens for step in steps)
    if tokens >= budget.tokens:
        return f"token budget spent ({tokens} of {budget.tokens} tokens)"
    return ""


def _run(n: int, action: Action, tools: Toolbox, before: Sequence[Step]) -> Step:
    start = time.perf_counter()
    hits = tools.call(action)
    listing = tuple(tools.documents()) if action.tool == "documents" else ()
    seen = {hit.chunk.id for hit in gathered(before)}
    new = sum(hit.chunk.id not in seen for hit in hits)
    tokens = cost(hits) + sum(len(i) + len(t) for i, t in listing) // 4
    return Step(n, action, tuple(hits), new, tokens, time.perf_counter() - start, listing)
