"""`raglab ask --agent`: the loop on the command line, its trace in --json."""

from __future__ import annotations

import json

from tests.test_cli import CORPUS, raglab

QUESTION = "What is the warranty period of the part the troubleshooting guide says to install for error E-101?"


def test_ask_agent_json_adds_the_trace_and_everything_retrieved():
    out = json.loads(
        raglab("ask", QUESTION, "--docs", CORPUS, "--tenant", "globex", "--agent", "--json").stdout
    )
    assert {"answer", "abstained", "citations", "retrieved", "trace", "stop_reason"} <= set(out)
    assert [step["step"] for step in out["trace"]] == list(range(1, len(out["trace"]) + 1))
    assert out["trace"][0]["query"] == QUESTION and "GX-PA24" in out["trace"][-1]["query"]
    every = {(h["doc_id"], h["start"]) for step in out["trace"] for h in step["retrieved"]}
    assert {(h["doc_id"], h["start"]) for h in out["retrieved"]} == every
    assert all(h["doc_id"].startswith("globex/") for h in out["retrieved"])
    for citation in out["citations"]:  # [n] is the n-th of everything retrieved
        source = out["retrieved"][citation["n"] - 1]
        assert (source["doc_id"], source["start"]) == (citation["doc_id"], citation["start"])
    assert out["stop_reason"].startswith("enough evidence")


def test_ask_agent_prints_the_trace_then_the_answer():
    out = raglab("ask", QUESTION, "--docs", CORPUS, "--tenant", "globex", "--agent").stdout
    assert out.startswith("1. search(") and "stopped: enough evidence" in out
    assert "Sources:" in out
