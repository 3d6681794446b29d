"""A progress line inside a notebook cell, that leaves nothing behind when the work is done.

A cell that runs for more than a few seconds should not look hung. `CellProgress` is a
`raglab.progress.Reporter` for a notebook: it shows one line under the cell, updates it
in place, and empties it when the work is finished. The cell's saved output is then an
empty display, on every run: the line never enters a diff, and nbval (which reads the
first display and ignores its updates) sees the same empty display as the saved one.

    from raglab.workbook.cell_progress import CellProgress, with_progress
    index = Index.from_folder(folder, embedder=minilm, progress=CellProgress())
    maps = [draw(seed) for seed in with_progress((0, 1), "drawing t-SNE maps", "maps")]
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

from raglab.progress import Progress, describe

T = TypeVar("T")

EMPTY = {"text/plain": ""}
"""What the line shows before the first report and after the last."""


class CellProgress:
    """One line under the running cell, redrawn at most every `every` seconds, emptied at
    the end. Outside a notebook (no IPython), it shows nothing."""

    def __init__(self, *, every: float = 0.25, clock: Callable[[], float] = time.monotonic):
        self.every, self.clock = every, clock
        self._started: dict[str, float] = {}
        self._drawn = float("-inf")
        self._handle = _display_handle()

    def __call__(self, event: Progress) -> None:
        if self._handle is None or event.total <= 0:
            return
        now = self.clock()
        started = self._started.setdefault(event.task, now)
        if event.done >= event.total:
            del self._started[event.task]
            self._handle.update(EMPTY, raw=True)
        elif now - self._drawn >= self.every:
            self._drawn = now
            self._handle.update({"text/plain": describe(event, now - started)}, raw=True)


def with_progress(items: Sequence[T], task: str, unit: str) -> Iterator[T]:
    """The items, one by one, with a `CellProgress` line counting them (like tqdm)."""
    report = CellProgress(every=0.0)
    for done, item in enumerate(items):
        report(Progress(task, done, len(items), unit))
        yield item
    report(Progress(task, len(items), len(items), unit))


def _display_handle() -> Any:
    """An empty display under the running cell, to update; None outside IPython."""
    try:
        from IPython import get_ipython
        from IPython.display import display
    except ImportError:
        return None
    if get_ipython() is None:
        return None
    return display(EMPTY, raw=True, display_id=True)
