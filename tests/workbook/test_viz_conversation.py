"""raglab.workbook.viz_conversation: the data behind the figure is right, and it draws (Agg)."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

from matplotlib.figure import Figure

from raglab.conversation.chat import ChatSession
from raglab.conversation.history import MemoryHistory
from raglab.records import Principal
from raglab.workbook.viz_conversation import (
    TurnView,
    conversation_table,
    plot_conversation,
    turn_views,
)


def test_turn_views_say_what_each_turn_read(corpus_index):
    session = ChatSession(corpus_index, MemoryHistory(), Principal("ann", "globex"))
    turns = [session.ask(q) for q in ("What does error E-204 mean?", "How do I fix it?")]
    first, second = turn_views(turns)
    assert (first.n, first.history, second.history) == (1, (), (1,))
    assert second.standalone != second.question
    cited = [doc for doc, is_cited in second.documents if is_cited]
    assert cited and set(cited) == {c.hit.chunk.doc_id for c in turns[1].answer.citations}
    assert len({doc for doc, _ in second.documents}) == len(second.documents)  # one per document


def test_the_table_and_the_figure():
    views = [
        TurnView(1, "Q one?", "Q one?", (("a.md", True), ("b.md", False)), ()),
        TurnView(2, "And?", "And? (one)", (("a.md", False),), (1,)),
    ]
    assert conversation_table(views).splitlines() == [
        "turn 1: Q one?",
        "  documents: a.md*, b.md",
        "  history:   (none)",
        "turn 2: And?",
        "  searched: And? (one)",
        "  documents: a.md",
        "  history:   turn 1",
    ]
    fig = plot_conversation(views, title="t")
    assert isinstance(fig, Figure)
    left, right = fig.axes
    assert [t.get_text() for t in left.get_xticklabels()] == ["a.md", "b.md"]
    assert [t.get_text() for t in right.get_xticklabels()] == ["turn 1"]
    assert len(left.collections) == 3 and len(right.collections) == 2
