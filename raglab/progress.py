"""Progress of long work: the engine says how far it got, its caller decides what to show.

The engine never prints. A long step — embedding the chunks of an index
(`raglab.store.indexing.sync`), asking the questions of an evaluation
(`raglab.evaluation.runner.evaluate`) — takes `progress=`, a function it calls with a
`Progress` after each batch of work; the default, None, keeps it silent. The command
line passes a `TerminalProgress`, which redraws one line on stderr when stderr is a
terminal, and writes nothing when it is piped or redirected to a file (a log full of
redrawn lines helps no one).

>>> import io
>>> shown = io.StringIO()
>>> shown.isatty = lambda: True  # a terminal
>>> report = TerminalProgress(shown, every=0.0, clock=iter([0.0, 2.0, 4.0]).__next__)
>>> report(Progress("embedding", 0, 200, "chunks"))
>>> report(Progress("embedding", 100, 200, "chunks", cached=40))
>>> shown.getvalue().split("\\r")[-1]
'embedding 100/200 chunks, 50/s, 0:02 left, 40 from cache\\x1b[K'
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TextIO

__all__ = ["Progress", "Reporter", "TerminalProgress", "describe"]


@dataclass(frozen=True, slots=True)
class Progress:
    """`done` of `total` `unit`s of `task` are finished; `cached` of them came from a cache
    (vectors the index or the embedding cache already held) instead of being computed."""

    task: str
    done: int
    total: int
    unit: str
    cached: int = 0


Reporter = Callable[[Progress], None]
"""What a long step calls after each batch of work."""


def describe(event: Progress, elapsed: float) -> str:
    """One line: how far, how fast, how long still (at the rate so far), how much was cached.

    >>> describe(Progress("evaluating", 30, 30, "questions"), elapsed=6.0)
    'evaluating 30/30 questions, 5.0/s, done in 0:06'
    """
    line = f"{event.task} {event.done:,}/{event.total:,} {event.unit}"
    rate = event.done / elapsed if elapsed > 0 else 0.0
    if rate > 0:
        line += f", {rate:,.0f}/s" if rate >= 10 else f", {rate:.1f}/s"
    if event.done >= event.total:
        line += f", done in {_clock(elapsed)}"
    elif rate > 0:
        line += f", {_clock((event.total - event.done) / rate)} left"
    if event.cached:
        line += f", {event.cached:,} from cache"
    return line


def _clock(seconds: float) -> str:
    minutes, secs = divmod(round(seconds), 60)
    return (
        f"{minutes // 60}:{minutes % 60:02d}:{secs:02d}"
        if minutes >= 60
        else f"{minutes}:{secs:02d}"
    )


class TerminalProgress:
    """A `Reporter` that redraws one line on a terminal (`stream`, default stderr), at most
    once every `every` seconds and once more when a task finishes; nothing on a stream that
    is not a terminal. `clock` is for tests."""

    def __init__(
        self,
        stream: TextIO | None = None,
        *,
        every: float = 0.2,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.every, self.clock = every, clock
        self._started: dict[str, float] = {}  # task -> when its first report came
        self._drawn = float("-inf")

    def __call__(self, event: Progress) -> None:
        if event.total <= 0 or not self.stream.isatty():
            return
        now = self.clock()
        started = self._started.setdefault(event.task, now)
        finished = event.done >= event.total
        if not finished and now - self._drawn < self.every:
            return
        self._drawn = now
        end = "\n" if finished else ""  # the finished line stays; the next task starts below
        self.stream.write(f"\r{describe(event, now - started)}\x1b[K{end}")
        self.stream.flush()
        if finished:
            del self._started[event.task]  # the same task run again starts its own clock
