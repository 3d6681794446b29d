"""The `raglab` command, run as a user would: in a subprocess."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "data" / "corpus"
QUESTIONS = ROOT / "data" / "questions.jsonl"


def raglab(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    result = subprocess.run(
        [sys.executable, "-m", "raglab", *map(str, args)], capture_output=True, text=True, timeout=120
    )
    if check:
        assert result.returncode == 0, result.stderr
    return result


def test_help_lists_every_command():
    out = raglab("--help").stdout
    for command in ("ask", "index", "eval", "exercises", "grade"):
        assert command in out


def test_ask_json_has_answer_citations_and_retrieved():
    out = raglab("ask", "What does error E-204 mean?", "--docs", CORPUS, "--tenant", "globex", "--json").stdout
    answer = json.loads(out)
    assert set(answer) >= {"answer", "abstained", "citations", "retrieved"}
    assert answer["abstained"] is False
    assert answer["citations"]
    retrieved = {(r["doc_id"], r["start"], r["end"]) for r in answer["retrieved"]}
    for citation in answer["citations"]:
        assert set(citation) == {"n", "doc_id", "start", "end", "score"}
        assert f"[{citation['n']}]" in answer["answer"]
        assert (citation["doc_id"], citation["start"], citation["end"]) in retrieved
        assert answer["retrieved"][citation["n"] - 1]["doc_id"] == citation["doc_id"]


def test_ask_prints_answer_and_sources():
    out = raglab("ask", "What does error E-204 mean?", "--docs", CORPUS, "--tenant", "globex").stdout
    assert "Sources:" in out and "globex/" in out


def test_cross_tenant_request_sees_only_own_tenant():
    out = raglab("ask", "What is the reseller price of the GX-T200-PRO?", "--docs", CORPUS,
                 "--tenant", "acme", "--k", "10", "--json").stdout
    answer = json.loads(out)
    assert all(r["doc_id"].startswith("acme/") for r in answer["retrieved"])


def test_index_then_ask_from_the_index_file(tmp_path):
    index = tmp_path / "corpus.sqlite"
    first = json.loads(raglab("index", CORPUS, "--index", index, "--json").stdout)
    assert len(first["added"]) >= 25 and first["unchanged"] == 0
    again = json.loads(raglab("index", CORPUS, "--index", index, "--json").stdout)
    assert again["added"] == [] and again["updated"] == [] and again["unchanged"] == len(first["added"])
    out = raglab("ask", "What does error E-204 mean?", "--index", index, "--tenant", "globex", "--json").stdout
    assert json.loads(out)["citations"]


def test_eval_json_reports_the_contract_keys():
    out = raglab("eval", "--docs", CORPUS, "--questions", QUESTIONS, "--retriever", "bm25", "--json").stdout
    report = json.loads(out)
    for key in ("questions", "k", "recall@k", "mrr", "ndcg@10", "abstention_on_unanswerable",
                "false_abstention", "leaks", "retriever", "embedder"):
        assert key in report
    assert report["retriever"] == "bm25" and report["embedder"] == "hashing"
    assert report["leaks"] == 0
    assert report["recall@k"] > 0.8


@pytest.mark.parametrize(
    "args, message",
    [
        (["ask", "q", "--docs", "no/such/folder"], "no/such/folder"),
        (["ask", "q", "--index", "no/such/file.sqlite"], "file.sqlite"),
        (["eval", "--docs", str(CORPUS), "--questions", "missing.jsonl"], "missing.jsonl"),
        (["ask", "q", "--docs", str(CORPUS), "--llm-url", "http://localhost:1"], "--llm-model"),
    ],
)
def test_bad_input_gives_one_line_error(args, message):
    result = raglab(*args, check=False)
    assert result.returncode != 0
    assert message in result.stderr
    assert "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize(
    "args",
    [["ask", "q", "--docs", str(CORPUS), "--k", "0"], ["ask", "q", "--docs", str(CORPUS), "--retriever", "x"],
     ["ask", "q"], ["eval", "--docs", str(CORPUS)]],
)
def test_bad_arguments_exit_with_usage_error(args):
    result = raglab(*args, check=False)
    assert result.returncode == 2
    assert "Traceback" not in result.stderr


def test_a_bad_file_is_skipped_and_named_while_the_rest_loads(tmp_path):
    (tmp_path / "good.md").write_text("Refunds take 14 days.", encoding="utf-8")
    (tmp_path / "bad.md").write_bytes(b"\xff\xfe\x00binary")
    result = raglab("ask", "How long do refunds take?", "--docs", tmp_path, "--json")
    assert "bad.md" in result.stderr
    assert json.loads(result.stdout)["retrieved"][0]["doc_id"] == "good.md"
