"""The `raglab` command, run as a user would: in a subprocess."""

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "data" / "corpus"
QUESTIONS = ROOT / "data" / "questions.jsonl"


def raglab(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    result = subprocess.run(
        [sys.executable, "-m", "raglab", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    if check:
        assert result.returncode == 0, result.stderr
    return result


def test_help_lists_every_command_in_its_main_list():
    out = raglab("--help").stdout
    listing = out[out.index("COMMAND\n") : out.index("\noptions:")]
    listed = re.findall(r"^    (\w+)", listing, re.MULTILINE)  # a wrapped help sits deeper
    assert listed == ["ask", "index", "eval", "chat", "exercises", "grade", "progress"]


def test_help_examples_can_be_pasted_into_a_shell():
    examples = raglab("--help").stdout.split("examples:\n")[1]
    # Each line is a whole command, or the continuation of a line ending in a pipe: the
    # printf example keeps its \n escapes instead of breaking inside its quotes.
    lines = examples.splitlines()
    for before, line in zip(["|", *lines], lines, strict=False):
        assert line.startswith("  raglab ") or line.startswith("  printf ") or before.endswith("|")


@pytest.mark.parametrize("command", ["exercises", "grade", "progress"])
def test_each_workbook_command_listed_answers_its_own_help(command):
    assert raglab(command, "--help").stdout.startswith(f"usage: raglab {command}")


def test_ask_json_has_answer_citations_and_retrieved():
    out = raglab(
        "ask", "What does error E-204 mean?", "--docs", CORPUS, "--tenant", "globex", "--json"
    ).stdout
    answer = json.loads(out)
    assert set(answer) >= {"answer", "abstained", "citations", "retrieved"}
    assert answer["abstained"] is False and answer["verified"] is True
    assert answer["citations"]
    retrieved = {(r["doc_id"], r["start"], r["end"]) for r in answer["retrieved"]}
    for citation in answer["citations"]:
        assert set(citation) == {"n", "doc_id", "start", "end", "score"}
        assert f"[{citation['n']}]" in answer["answer"]
        assert (citation["doc_id"], citation["start"], citation["end"]) in retrieved
        assert answer["retrieved"][citation["n"] - 1]["doc_id"] == citation["doc_id"]


@pytest.mark.parametrize(
    ("mode", "question"),
    [
        ("global", "Which Globex products and accessories are mentioned across the site?"),
        ("local", "What does error E-204 mean?"),
    ],
)
def test_ask_graph_json_has_the_fields_of_ask_json_and_only_the_readers_documents(mode, question):
    def fields(*extra: str) -> dict:
        out = raglab("ask", question, "--docs", CORPUS, "--tenant", "globex", "--json", *extra)
        return json.loads(out.stdout)

    plain, graph = fields(), fields("--graph", mode, "--max-tokens", "200")
    assert set(graph) == set(plain)
    assert graph["abstained"] is False and graph["verified"] is True and graph["citations"]
    for citation in graph["citations"]:
        assert set(citation) == {"n", "doc_id", "start", "end", "score"}
        assert f"[{citation['n']}]" in graph["answer"]
        assert graph["retrieved"][citation["n"] - 1]["doc_id"] == citation["doc_id"]
    restricted = ("globex/internal/", "globex/partners/")
    assert all(r["doc_id"].startswith("globex/") for r in graph["retrieved"])
    assert not any(r["doc_id"].startswith(restricted) for r in graph["retrieved"])


def test_ask_graph_refuses_a_language_model_and_an_unknown_mode():
    refused = raglab(
        "ask",
        "Which tools?",
        "--docs",
        CORPUS,
        "--graph",
        "global",
        "--llm-url",
        "http://127.0.0.1:9/v1",
        "--llm-model",
        "m",
        check=False,
    )
    assert refused.returncode != 0 and "--graph answers offline" in refused.stderr
    unknown = raglab("ask", "x?", "--docs", CORPUS, "--graph", "wide", check=False)
    assert unknown.returncode != 0 and "invalid choice: 'wide'" in unknown.stderr
    both = raglab("ask", "x?", "--docs", CORPUS, "--graph", "global", "--agent", check=False)
    assert both.returncode != 0 and "--agent and --graph" in both.stderr


def test_ask_prints_answer_and_sources():
    out = raglab(
        "ask", "What does error E-204 mean?", "--docs", CORPUS, "--tenant", "globex"
    ).stdout
    assert "Sources:" in out and "globex/" in out


def test_cross_tenant_request_sees_only_own_tenant():
    out = raglab(
        "ask",
        "What is the reseller price of the GX-T200-PRO?",
        "--docs",
        CORPUS,
        "--tenant",
        "acme",
        "--k",
        "10",
        "--json",
    ).stdout
    answer = json.loads(out)
    assert all(r["doc_id"].startswith("acme/") for r in answer["retrieved"])


def test_index_then_ask_from_the_index_file(tmp_path):
    index = tmp_path / "corpus.sqlite"
    first = json.loads(raglab("index", CORPUS, "--index", index, "--json").stdout)
    assert len(first["added"]) >= 25 and first["unchanged"] == 0
    again = json.loads(raglab("index", CORPUS, "--index", index, "--json").stdout)
    assert (
        again["added"] == []
        and again["updated"] == []
        and again["unchanged"] == len(first["added"])
    )
    out = raglab(
        "ask", "What does error E-204 mean?", "--index", index, "--tenant", "globex", "--json"
    ).stdout
    assert json.loads(out)["citations"]


def test_eval_json_reports_the_contract_keys():
    out = raglab(
        "eval", "--docs", CORPUS, "--questions", QUESTIONS, "--retriever", "bm25", "--json"
    ).stdout
    report = json.loads(out)
    for key in (
        "questions",
        "k",
        "recall@k",
        "mrr",
        "ndcg@10",
        "abstention_on_unanswerable",
        "false_abstention",
        "leaks",
        "retriever",
        "embedder",
    ):
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
    [
        ["ask", "q", "--docs", str(CORPUS), "--k", "0"],
        ["ask", "q", "--docs", str(CORPUS), "--retriever", "x"],
        ["ask", "q"],
        ["eval", "--docs", str(CORPUS)],
    ],
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


# --- the chunker options and retrieval-only evaluation -----------------------------------------

CHARS_300 = {"kind": "chars", "size": 300, "overlap": 30, "version": 1}


def test_chunker_options_are_recorded_by_the_index_and_kept_on_update(tmp_path):
    from raglab.store.sqlite_store import SQLiteStore

    index = tmp_path / "corpus.sqlite"
    options = ("--chunker", "chars", "--chunk-size", "300", "--overlap", "30")
    built = json.loads(raglab("index", CORPUS, "--index", index, *options, "--json").stdout)
    assert built["chunker"] == CHARS_300
    with SQLiteStore.open(index) as store:
        assert store.meta["chunker"] == CHARS_300
        assert max(chunk.end - chunk.start for chunk in store.chunks()) <= 300
    # Options left out keep the index's own: an update does not re-cut everything.
    again = json.loads(raglab("index", CORPUS, "--index", index, "--json").stdout)
    assert again["chunker"] == CHARS_300 and again["rebuilt"] == ""
    assert again["updated"] == [] and again["unchanged"] == len(built["added"])
    # Another size re-cuts and re-embeds every document, and is recorded.
    resized = raglab("index", CORPUS, "--index", index, "--chunk-size", "400", "--json").stdout
    resized = json.loads(resized)
    assert resized["chunker"] == {**CHARS_300, "size": 400}
    assert "chunker params changed" in resized["rebuilt"]
    assert sorted(resized["updated"]) == sorted(built["added"])


def test_ask_and_eval_refuse_chunker_options_an_index_was_not_built_with(tmp_path):
    index = tmp_path / "corpus.sqlite"
    options = ("--chunker", "chars", "--chunk-size", "300", "--overlap", "30")
    raglab("index", CORPUS, "--index", index, *options)
    question = ("ask", "What does error E-204 mean?", "--index", index, "--tenant", "globex")
    for args in (
        [*question, "--chunk-size", "400"],
        ["eval", "--index", index, "--questions", QUESTIONS, "--chunker", "structure"],
    ):
        result = raglab(*args, check=False)
        assert result.returncode == 1 and "Traceback" not in result.stderr
        [line] = result.stderr.strip().splitlines()
        assert "was built with chunker kind='chars', size=300, overlap=30" in line
        assert "--chunk-size" in line and str(index) in line
    # The options it was built with (all or some of them) are accepted.
    raglab(*question, "--chunk-size", "300")
    raglab(*question, *options)


def test_ask_with_docs_cuts_with_the_chunker_options():
    question = ("ask", "What does error E-204 mean?", "--docs", CORPUS, "--tenant", "globex")
    options = ("--chunker", "chars", "--chunk-size", "120", "--overlap", "20")
    small = json.loads(raglab(*question, *options, "--json").stdout)
    default = json.loads(raglab(*question, "--json").stdout)
    assert all(r["end"] - r["start"] <= 120 for r in small["retrieved"])
    assert max(r["end"] - r["start"] for r in default["retrieved"]) > 120


@pytest.mark.parametrize(
    "args, message",
    [
        (["--overlap", "300"], "overlap must be < size (got overlap=300, size=300)"),
        (["--overlap", "-1"], "overlap must be an integer >= 0 (got overlap=-1)"),
        (
            ["--chunker", "semantic", "--embedder", "lsa"],
            "semantic chunking needs an embedder that does not learn from the chunks (got 'lsa')",
        ),
    ],
)
def test_bad_chunker_options_give_one_line_error(args, message):
    result = raglab("ask", "q", "--docs", CORPUS, "--chunk-size", "300", *args, check=False)
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert message in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_bad_chunker_choice_or_size_is_a_usage_error():
    for args in (["--chunker", "words"], ["--chunk-size", "0"]):
        result = raglab("eval", "--docs", CORPUS, "--questions", QUESTIONS, *args, check=False)
        assert result.returncode == 2 and "Traceback" not in result.stderr


def _eval_in_process(monkeypatch, capsys, *extra: str) -> tuple[dict, int, float]:
    """`raglab eval` run in this process: its JSON report, the answers asked, the seconds."""
    import time

    import raglab.pipeline
    from raglab.cli import main

    asked = []
    real_ask = raglab.pipeline.ask

    def counting_ask(*args, **kwargs):
        asked.append(args[0])
        return real_ask(*args, **kwargs)

    monkeypatch.setattr(raglab.pipeline, "ask", counting_ask)
    argv = ["eval", "--docs", str(CORPUS), "--questions", str(QUESTIONS), "--retriever", "bm25"]
    start = time.perf_counter()
    assert main([*argv, "--json", *extra]) == 0
    seconds = time.perf_counter() - start
    return json.loads(capsys.readouterr().out), len(asked), seconds


def test_eval_retrieval_only_asks_for_no_answer_and_reports_no_answer_metrics(monkeypatch, capsys):
    # Retrieval only runs first, so it pays for the cold start; each timing is the best of two.
    alone, alone_asked, alone_seconds = _eval_in_process(monkeypatch, capsys, "--retrieval-only")
    full, full_asked, full_seconds = _eval_in_process(monkeypatch, capsys)
    alone_seconds = min(alone_seconds, _eval_in_process(monkeypatch, capsys, "--retrieval-only")[2])
    full_seconds = min(full_seconds, _eval_in_process(monkeypatch, capsys)[2])
    assert (full_asked, alone_asked) == (full["questions"], 0)
    answer_metrics = {
        "abstention_on_unanswerable",
        "false_abstention",
        "citations_verified",
        "answered_with_relevant_citation",
    }
    assert answer_metrics <= set(full) and not answer_metrics & set(alone)
    assert {key: full[key] for key in alone} == alone  # the retrieval figures are the same
    # Faster: no answer is generated (on the sample data about 2x end to end).
    assert alone_seconds < full_seconds, (alone_seconds, full_seconds)


def test_ask_keeps_the_sources_within_a_token_budget_in_the_order_asked():
    question = "How many vacation days do I get?"
    wide = json.loads(
        raglab("ask", question, "--docs", CORPUS, "--tenant", "acme", "--json").stdout
    )
    tight = json.loads(
        raglab(
            "ask", question, "--docs", CORPUS, "--tenant", "acme", "--json",
            "--max-tokens", "150", "--order", "ends",
        ).stdout
    )  # fmt: skip
    assert 1 <= len(tight["retrieved"]) < len(wide["retrieved"])
    assert tight["retrieved"][0] == wide["retrieved"][0]  # the best stays first in either order
    assert tight["verified"] is True
    bad = raglab("ask", question, "--docs", CORPUS, "--max-tokens", "0", check=False)
    assert bad.returncode == 2 and "--max-tokens" in bad.stderr


def test_sources_print_a_hostile_file_name_and_heading_escaped():
    from raglab.cli.answers import format_answer
    from raglab.records import Answer, Chunk, Citation, Hit

    chunk = Chunk("p\x1b[31mark.md", 0, "Ten days.", 0, 9, heading="Leave\nraglab: warning: x")
    hit = Hit(chunk, 1.0)
    printed = format_answer(
        Answer("Ten days. [1]", citations=(Citation(1, hit),), retrieved=(hit,))
    )
    assert "\x1b" not in printed and "p\\x1b[31mark.md" in printed
    assert "\nraglab: warning" not in printed


def _corpus_copy(tmp_path):
    import shutil

    corpus = tmp_path / "corpus"
    shutil.copytree(ROOT / "data" / "corpus", corpus)
    return corpus


def test_eval_refuses_a_misnamed_relevant_document_before_indexing_anything(
    tmp_path, monkeypatch, capsys
):
    from raglab.cli import main
    from raglab.pipeline import Index

    def no_indexing(*args, **kwargs):
        raise AssertionError("the corpus was indexed before the question set was checked")

    monkeypatch.setattr(Index, "from_folder", no_indexing)
    questions = tmp_path / "q.jsonl"
    line = {"id": "q1", "question": "Leave?", "tenant": "acme", "answerable": True}
    questions.write_text(json.dumps({**line, "relevant_docs": ["acme/policies/leav.md"]}) + "\n")
    assert main(["eval", "--docs", str(_corpus_copy(tmp_path)), "--questions", str(questions)]) != 0
    err = capsys.readouterr().err
    assert "not a document of the corpus" in err and "did you mean 'acme/policies/leave.md'" in err


def _with_a_refused_relevant_document(tmp_path: Path) -> tuple[Path, Path]:
    """The sample corpus plus a note the credential screen refuses, and two questions: q1
    answerable only from that note, q2 from the leave policy."""
    corpus = _corpus_copy(tmp_path)
    (corpus / "acme" / "note.md").write_text('Deploy with password = "Xk9#mQ2vL7pZ"\n')
    questions = tmp_path / "q.jsonl"
    lines = [
        {"id": "q1", "question": "Deploy password?", "relevant_docs": ["acme/note.md"]},
        {"id": "q2", "question": "Vacation days?", "relevant_docs": ["acme/policies/leave.md"]},
    ]
    questions.write_text(
        "".join(json.dumps({**q, "tenant": "acme", "answerable": True}) + "\n" for q in lines)
    )
    return corpus, questions


def test_eval_names_a_relevant_document_refused_at_load_and_goes_on(tmp_path, capsys):
    from raglab.cli import main

    corpus, questions = _with_a_refused_relevant_document(tmp_path)
    argv = ["eval", "--docs", str(corpus), "--questions", str(questions), "--retrieval-only"]
    assert main([*argv, "--json"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["questions"] == 2
    assert "question q1 names acme/note.md, which was refused at load" in err


def test_eval_counts_a_question_answerable_only_from_a_refused_document_apart(tmp_path, capsys):
    from raglab.cli import main

    corpus, questions = _with_a_refused_relevant_document(tmp_path)
    argv = ["eval", "--docs", str(corpus), "--questions", str(questions)]
    assert main([*argv, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert (report["answerable"], report["unanswerable"]) == (1, 1)
    assert report["unanswerable_by_refusal"] == 1
    assert report["recall@k"] == 1.0  # q1's refused document is not a retrieval miss
    assert main(argv) == 0
    assert "of which by refusal at load  " in capsys.readouterr().out


def test_contextual_and_semantic_chunks_are_recorded_and_a_mismatch_refused(tmp_path):
    from raglab.store.sqlite_store import SQLiteStore

    index = tmp_path / "corpus.sqlite"
    built = raglab(
        "index", CORPUS, "--index", index, "--chunker", "semantic", "--contextual", "--json"
    )
    recorded = json.loads(built.stdout)["chunker"]
    assert recorded["kind"] == "semantic" and recorded["contextual"] is True
    with SQLiteStore.open(index) as store:
        assert all(chunk.context for chunk in store.chunks() if chunk.title)
    question = ("ask", "What does error E-204 mean?", "--index", index, "--tenant", "globex")
    result = raglab(*question, "--no-contextual", check=False)
    assert result.returncode == 1 and "Traceback" not in result.stderr
    [line] = result.stderr.strip().splitlines()
    assert "kind='semantic'" in line and "contextual=True" in line and "--contextual" in line
    answer = json.loads(raglab(*question, "--contextual", "--json").stdout)
    for cited in answer["retrieved"]:  # offsets point into the document, not the header
        assert cited["end"] - cited["start"] > 0
