"""A conversation end to end: ChatSession over the sample corpus, and `raglab chat`."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from raglab.conversation.chat import NOT_GROUNDED, ChatSession
from raglab.conversation.history import MemoryHistory
from raglab.records import Principal

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "data" / "corpus"
ANN = Principal("ann", "globex")


def test_a_follow_up_is_answered_from_the_right_document(corpus_index):
    session = ChatSession(corpus_index, MemoryHistory(), ANN)
    first = session.ask("What does error E-204 mean?")
    follow = session.ask("How do I fix it?")
    assert not first.rewrite.rewritten and follow.rewrite.rewritten
    assert "E-204" in follow.rewrite.standalone
    cited = {c.hit.chunk.doc_id for c in follow.answer.citations}
    assert "globex/support/troubleshooting.md" in cited and follow.grounded
    assert [(h.turn.n, h.turn.question) for h in follow.history] == [
        (1, "What does error E-204 mean?")
    ]
    assert [t.n for t in session.turns()] == [1, 2]


def test_each_turn_is_kept_with_its_standalone_question_and_citations(corpus_index):
    history = MemoryHistory()
    session = ChatSession(corpus_index, history, ANN, clock=lambda: "2025-01-01T00:00:00+00:00")
    session.ask("What does error E-204 mean?")
    kept = history.turns(ANN, session.conversation)[0]
    assert kept.cited[0] == "globex/support/troubleshooting.md"
    assert kept.time == "2025-01-01T00:00:00+00:00"


def test_another_user_gets_the_same_answer_whatever_ann_said(corpus_index):
    history = MemoryHistory()
    bob = Principal("bob", "globex")
    before = ChatSession(corpus_index, history, bob).ask("How do I fix it?")
    history.forget(bob)
    ann = ChatSession(corpus_index, history, ANN)
    ann.ask("What does error E-204 mean?")
    after = ChatSession(corpus_index, history, bob).ask("How do I fix it?")
    assert (after.answer, after.rewrite, after.history) == (before.answer, before.rewrite, ())


class Uncited:
    def generate(self, prompt):
        return "As you said before, 99 days."


def test_an_answer_citing_no_document_says_it_is_not_grounded(corpus_index):
    session = ChatSession(corpus_index, MemoryHistory(), ANN, generator=Uncited())
    turn = session.ask("What does error E-204 mean?")
    assert not turn.grounded and turn.answer.text.endswith(NOT_GROUNDED)


def test_forget_starts_a_new_conversation(corpus_index):
    history = MemoryHistory()
    session = ChatSession(corpus_index, history, ANN)
    session.ask("What does error E-204 mean?")
    assert session.conversation == "1"
    assert session.forget() == 1
    assert session.conversation == "1" and history.conversations(ANN) == []
    session.ask("What is E-612?")
    assert ChatSession(corpus_index, history, ANN).conversation == "2"


def test_history_k_is_checked(corpus_index):
    with pytest.raises(ValueError, match="history_k"):
        ChatSession(corpus_index, MemoryHistory(), ANN, history_k=0)


# -- raglab chat


def chat(*args: str, stdin: str = "") -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "raglab", "chat", *args],
        input=stdin,
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "PYTHONPATH": str(ROOT), "RAGLAB_LLM_URL": ""},
    )


@pytest.fixture(scope="module")
def index_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("chat") / "corpus.sqlite"
    subprocess.run(
        [sys.executable, "-m", "raglab", "index", str(CORPUS), "--index", str(path)],
        check=True,
        capture_output=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    return path


def test_raglab_chat_piped_prints_one_json_object_per_turn(index_file):
    ann = ("--index", str(index_file), "--tenant", "globex", "--user", "ann")
    result = chat(
        *ann,
        "--json",
        stdin="What does error E-204 mean?\n\nHow do I fix it?\n/sources\n/quit\nignored\n",
    )
    assert result.returncode == 0, result.stderr
    first, second, sources = (json.loads(line) for line in result.stdout.splitlines())
    for field in (
        "answer",
        "abstained",
        "citations",
        "retrieved",
        "standalone",
        "history",
        "grounded",
    ):
        assert field in first
    assert second["standalone"] != "How do I fix it?" and second["rewrite"]["rewritten"]
    assert [h["turn"] for h in second["history"]] == [1]
    assert sources["command"] == "/sources" and sources["retrieved"] == second["retrieved"]
    listed = json.loads(chat(*ann, "--list", "--json").stdout)["conversations"]
    assert [(c["conversation"], c["turns"]) for c in listed] == [("1", 2)]
    bob = chat(
        "--index", str(index_file), "--tenant", "globex", "--user", "bob", "--list", "--json"
    )
    assert json.loads(bob.stdout) == {"conversations": []}
    forgot = chat(*ann, "--forget")
    assert "2 turns" in forgot.stdout
    with sqlite3.connect(index_file) as con:
        assert con.execute("SELECT COUNT(*) FROM turns").fetchone() == (0,)


def test_raglab_chat_text_shows_the_rewrite_and_forgets_in_the_conversation(index_file):
    ann = ("--index", str(index_file), "--tenant", "globex", "--user", "cat")
    result = chat(*ann, stdin="What does error E-204 mean?\nHow do I fix it?\n/forget\n/nope\n")
    assert result.returncode == 0, result.stderr
    assert "(searched as: How do I fix it? (" in result.stdout
    assert "forgot 2 turns" in result.stdout and "unknown command '/nope'" in result.stderr
    assert chat(*ann, "--list").stdout == ""


def test_a_bad_question_does_not_end_the_conversation(index_file):
    long = "why " * 600
    result = chat(
        "--index",
        str(index_file),
        "--tenant",
        "globex",
        "--user",
        "dan",
        stdin=f"{long}\nWhat is E-612?\n",
    )
    assert result.returncode == 0 and "2,399 characters" in result.stderr
    assert "E-612" in result.stdout


def test_raglab_chat_on_qdrant_keeps_the_history_in_a_collection_of_its_own(tmp_path):
    pytest.importorskip("qdrant_client")
    folder = tmp_path / "corpus.qdrant"
    subprocess.run(
        [sys.executable, "-m", "raglab", "index", str(CORPUS), "--store", "qdrant", "--index", str(folder)],
        check=True, capture_output=True, env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    ann = ("--index", str(folder), "--store", "qdrant", "--tenant", "globex", "--user", "ann")
    result = chat(*ann, "--json", stdin="What does error E-204 mean?\nHow do I fix it?\n")
    assert result.returncode == 0, result.stderr
    second = json.loads(result.stdout.splitlines()[1])
    assert [h["turn"] for h in second["history"]] == [1] and second["rewrite"]["rewritten"]
    bob = ("--index", str(folder), "--store", "qdrant", "--tenant", "globex", "--user", "bob")
    assert json.loads(chat(*bob, "--list", "--json").stdout) == {"conversations": []}
    assert "2 turns" in chat(*ann, "--forget").stdout
    assert json.loads(chat(*ann, "--list", "--json").stdout) == {"conversations": []}


def test_raglab_chat_forgets_one_conversation_and_keeps_the_others(index_file):
    eve = ("--index", str(index_file), "--tenant", "globex", "--user", "eve")
    chat(*eve, stdin="What does error E-204 mean?\n")
    chat(*eve, stdin="What is E-612?\nHow do I fix it?\n")
    listed = json.loads(chat(*eve, "--list", "--json").stdout)["conversations"]
    assert [(c["conversation"], c["turns"]) for c in listed] == [("1", 1), ("2", 2)]
    forgot = json.loads(chat(*eve, "--forget-conversation", "1", "--json").stdout)
    assert forgot == {"forgotten": 1, "conversation": "1"}
    listed = json.loads(chat(*eve, "--list", "--json").stdout)["conversations"]
    assert [c["conversation"] for c in listed] == ["2"]
    again = chat(*eve, "--conversation", "2", "--json", stdin="Can I postpone it?\n")
    assert json.loads(again.stdout)["turn"] == 3


def test_raglab_chat_refuses_a_profile_that_does_not_match_its_index(index_file):
    # The index was built with the default (hashing) settings; offline-neural embeds with
    # MiniLM: refused before any turn is kept, with what to run instead.
    refused = chat(
        "--index", str(index_file), "--tenant", "globex", "--user", "ann",
        "--profile", "offline-neural", stdin="What does error E-204 mean?\n",
    )  # fmt: skip
    assert refused.returncode == 1
    assert "offline-neural" in refused.stderr and "re-index with" in refused.stderr
    assert refused.stdout == ""
