"""The agent's trace as data, text, HTML and a figure."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

from raglab.agent.loop import run_agent
from raglab.records import Principal
from raglab.workbook import viz_agent

QUESTION = "What is the warranty period of the part the troubleshooting guide says to install for error E-101?"
WARRANTY = "globex/policies/warranty.md"


def chain_run(corpus_index):
    return run_agent(QUESTION, corpus_index, Principal("gus", "globex"))


def test_trace_rows_mark_what_is_new_and_what_is_needed(corpus_index):
    run = chain_run(corpus_index)
    rows = viz_agent.trace_rows(run, needed={WARRANTY})
    assert [r.n for r in rows] == [s.n for s in run.steps]
    assert rows[0].call == f"search({QUESTION!r})"
    first = {doc: new for doc, new, _ in rows[0].found}
    assert all(first.values())  # the first step finds everything for the first time
    assert (WARRANTY, False, True) in rows[-1].found  # found again, and needed


def test_trace_text_and_html_say_why_it_stopped(corpus_index):
    run = chain_run(corpus_index)
    text = viz_agent.trace_text(run, needed=(WARRANTY,))
    assert text.splitlines()[-1] == f"stopped: {run.stop_reason}"
    assert f"+* {WARRANTY}" in text
    bundle = viz_agent.TraceView(run, (WARRANTY,))._repr_mimebundle_()
    assert bundle["text/plain"] == text
    assert "<b>stopped:</b>" in bundle["text/html"] and "&#x27;" in bundle["text/html"]


def test_plot_trace_draws_a_row_per_step_and_the_stop_reason(corpus_index):
    run = chain_run(corpus_index)
    fig = viz_agent.plot_trace(run, needed={WARRANTY})
    texts = [t.get_text() for t in fig.axes[0].texts]
    assert sum(t.startswith(f"{s.n}. ") for t in texts for s in run.steps) == len(run.steps)
    assert texts[-2].startswith("stopped: enough evidence") and texts[-1] == viz_agent.LEGEND
    boxes = [t for t in fig.axes[0].texts if t.get_bbox_patch() is not None]
    assert sum(len(s.found) for s in run.steps) == len(boxes)
    thick = [b for b in boxes if b.get_bbox_patch().get_linewidth() == 2.5]
    assert {b.get_text() for b in thick} == {"warranty.md"}
