"""A notebook cell's progress line (raglab.workbook.cell_progress): shown while the work
runs, empty when it is done, so the saved output is the same on every run."""

from __future__ import annotations

from raglab.progress import Progress
from raglab.workbook import cell_progress
from raglab.workbook.cell_progress import EMPTY, CellProgress, with_progress


class Handle:
    """What IPython's `display(..., display_id=True)` returns, recording every update."""

    def __init__(self) -> None:
        self.shown: list[str] = []

    def update(self, data: dict, raw: bool) -> None:
        assert raw
        self.shown.append(data["text/plain"])


def test_the_line_is_updated_then_emptied(monkeypatch):
    handle = Handle()
    monkeypatch.setattr(cell_progress, "_display_handle", lambda: handle)
    assert list(with_progress(["a", "b", "c"], "drawing maps", "maps")) == ["a", "b", "c"]
    assert handle.shown[0] == "drawing maps 0/3 maps"
    assert handle.shown[1].startswith("drawing maps 1/3 maps")
    assert len(handle.shown) == 4 and handle.shown[-1] == EMPTY["text/plain"] == ""


def test_outside_a_notebook_it_shows_nothing_and_does_not_fail():
    report = CellProgress()  # no IPython kernel under pytest
    assert report._handle is None
    report(Progress("embedding", 1, 2, "chunks"))
    assert list(with_progress([1, 2], "counting", "numbers")) == [1, 2]
