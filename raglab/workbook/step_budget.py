"""Stop code that runs too long by counting the lines it executes: an endless loop ends.

Works in any thread and on every platform, unlike an alarm signal. Raising from a trace
function raises inside the traced frame, and Python then removes the tracer.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager


class Endless(BaseException):
    """Raised when the budget runs out. A BaseException, so a learner's
    `except Exception:` inside the loop cannot swallow it."""


@contextmanager
def step_budget(limit: int, *, counted: Callable[[str], bool] | None = None) -> Iterator[None]:
    """Raise `Endless` in the code run inside this block after `limit` executed lines.

    `counted(filename)` says whose lines count (default: every line). subtle: returning
    None for an uncounted frame's "call" event turns line tracing off for that frame, so
    library code called from the block runs at nearly full speed.
    """
    steps = 0
    verdicts: dict[str, bool] = {}

    def count_lines(frame, event, arg):
        nonlocal steps
        if event == "line":
            steps += 1
            if steps > limit:
                raise Endless
        return count_lines

    tracer = count_lines
    if counted is not None:

        def on_call(frame, event, arg):
            filename = frame.f_code.co_filename
            if filename not in verdicts:
                verdicts[filename] = counted(filename)
            return count_lines if verdicts[filename] else None

        tracer = on_call

    previous = sys.gettrace()
    sys.settrace(tracer)
    try:
        yield
    finally:
        sys.settrace(previous)
