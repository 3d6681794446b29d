"""raglab.workbook.viz_audit: the comparison's rows are right, the table and the counts say them, and the
figure draws the counts (Agg)."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import pytest
from matplotlib.figure import Figure

from raglab import Answer, Principal
from raglab.evaluation import Question
from raglab.records import Chunk, Citation, Hit
from raglab.workbook.viz_audit import (
    COUNTS,
    Compared,
    compare,
    comparison_table,
    plot_comparison,
    summarise,
)

PAY = Hit(Chunk("hr/pay.md", 0, "Bands are secret.", 0, 17, tenant="acme", groups=("hr",)), 1.0)
LEAVE = Hit(Chunk("leave.md", 0, "25 days.", 0, 8, tenant="acme"), 0.5)
PROBE = Question(
    "q9", "What are the pay bands?", tenant="acme", answerable=False, leak_docs=("hr/pay.md",)
)
DEMO = Question(
    "q1", "How much leave?", tenant="acme", relevant_docs=("leave.md",), answerable=True
)


def leaky(question: str, asker: Principal) -> Answer:
    hits = (LEAVE, PAY)
    return Answer("25 days [1]. More in [3].", (Citation(1, LEAVE),), hits)


def careful(question: str, asker: Principal) -> Answer:
    if "pay" in question:
        return Answer(
            "I can't answer that from the provided sources.", (), (LEAVE,), abstained=True
        )
    return Answer("25 days [1].", (Citation(1, LEAVE),), (LEAVE,))


@pytest.fixture
def rows():
    return compare([DEMO, PROBE], {"leaky": leaky, "careful": careful})


def test_compare_records_citations_invalid_markers_and_leaks(rows):
    by = {(r.question.id, r.pipeline): r for r in rows}
    assert [(r.question.id, r.pipeline) for r in rows] == [
        ("q1", "leaky"), ("q1", "careful"), ("q9", "leaky"), ("q9", "careful"),
    ]  # fmt: skip
    assert by["q1", "leaky"].cited == ("leave.md",) and by["q1", "leaky"].invalid == (3,)
    assert by["q9", "leaky"].leaked == ("hr/pay.md",)  # it reached the prompt
    assert by["q9", "careful"].leaked == () and by["q9", "careful"].abstained


def test_compare_asks_as_the_questions_user():
    seen = []
    compare([Question("q", "?", tenant="globex", groups=("hr",), answerable=False)],
            {"p": lambda q, asker: seen.append(asker) or Answer("x")})  # fmt: skip
    assert seen == [Principal("u", "globex", {"hr"})]


def test_summarise_counts_per_pipeline(rows):
    table = summarise(rows)
    assert list(table) == ["leaky", "careful"]
    assert table["leaky"] == dict(zip(COUNTS, (2, 1, 2, 1)))
    assert table["careful"] == dict(zip(COUNTS, (1, 1, 0, 0)))


def test_the_table_shows_each_question_once_and_flags_what_went_wrong(rows):
    text = comparison_table(rows)
    assert text.count("q9 What are the pay bands?  (acme)") == 1
    assert "markers pointing nowhere [3]" in text and "LEAKED hr/pay.md" in text
    assert text.split("\n\n")[0].count("\n") == 4  # a heading, two lines per pipeline


def test_a_long_answer_is_cut_in_the_table():
    q = Question("q", "?", answerable=False)
    line = comparison_table([Compared("p", q, "word " * 40, False, (), (), ())]).split("\n")[1]
    assert line.endswith("…") and len(line.split("p", 1)[1].strip()) == 60


def test_plot_comparison_draws_one_bar_per_pipeline_and_count(rows):
    fig = plot_comparison(rows, title="t")
    assert isinstance(fig, Figure)
    widths = [bar.get_width() for bar in fig.axes[0].patches]
    assert widths == [2, 1, 2, 1, 1, 1, 0, 0]  # leaky's four counts, then careful's


def test_plot_comparison_refuses_nothing():
    with pytest.raises(ValueError, match="no rows were compared"):
        plot_comparison([])
