"""What an agent run leaves behind: each step (the call, why, what it found) and why it stopped."""

from __future__ import annotations

from dataclasses import dataclass

from raglab.agent.tools import Action
from raglab.records import Answer, Hit


@dataclass(frozen=True, slots=True)
class Step:
    """One tool call: the action (with the planner's reason), what it returned, its cost.

    `hits`: what the call returned, best first; `new`: how many of them no earlier step
    had found; `listing`: the (id, title) pairs a `documents` call returned.
    """

    n: int
    action: Action
    hits: tuple[Hit, ...] = ()
    new: int = 0
    tokens: int = 0
    seconds: float = 0.0
    listing: tuple[tuple[str, str], ...] = ()

    @property
    def found(self) -> tuple[str, ...]:
        """The documents this step's hits come from, in rank order, each once."""
        return tuple(dict.fromkeys(hit.chunk.doc_id for hit in self.hits))


@dataclass(frozen=True, slots=True)
class AgentRun:
    """A whole run: the answer, the steps, why it stopped, and everything it gathered.

    `retrieved`: every distinct chunk any step returned, in the order first found.
    `transcript`: what a model planner was sent and replied, turn by turn (empty offline).
    """

    question: str
    answer: Answer
    steps: tuple[Step, ...]
    stop_reason: str
    retrieved: tuple[Hit, ...]
    transcript: tuple[str, ...] = ()

    @property
    def tokens(self) -> int:
        return sum(step.tokens for step in self.steps)

    def describe(self) -> str:
        """The trace as text: one line per step, then why it stopped."""
        lines = []
        for step in self.steps:
            a = step.action
            call = "documents()" if a.tool == "documents" else f"{a.tool}({a.argument!r})"
            found = ", ".join(step.found) or "nothing"
            lines.append(f"{step.n}. {call} — {a.why}\n   found: {found} ({step.new} new)")
        lines.append(f"stopped: {self.stop_reason}")
        return "\n".join(lines)
