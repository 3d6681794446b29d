"""The labelled conversations: the shipped file, and a malformed line named by file:line."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from raglab.conversation.conversations import ConversationSetError, load_conversations
from raglab.ingest.loaders import candidate_ids
from raglab.samples import sample_conversations, sample_corpus


def test_the_shipped_conversations_load_and_cover_every_shape():
    conversations = load_conversations(
        sample_conversations(), doc_ids=candidate_ids(sample_corpus())
    )
    assert len(conversations) >= 30
    assert all(2 <= len(c.turns) <= 4 for c in conversations)
    kinds = Counter(t.kind for c in conversations for t in c.turns[1:])
    for kind in ("pronoun", "ellipsis", "ordinal", "back", "switch", "self-contained"):
        assert kinds[kind] >= 2, kind
    splits = Counter(c.split for c in conversations)
    assert splits["heldout"] >= len(conversations) // 3
    assert {c.tenant for c in conversations} == {"acme", "globex", "default"}
    assert any(c.groups for c in conversations)


GOOD = {
    "id": "x",
    "tenant": "acme",
    "groups": [],
    "user": "u",
    "split": "dev",
    "turns": [
        {"question": "Leave?", "standalone": "Leave?", "relevant_docs": ["a.md"], "kind": "first"},
        {
            "question": "And then?",
            "standalone": "Leave then?",
            "relevant_docs": ["a.md"],
            "kind": "ellipsis",
        },
    ],
}


def with_turn2(**changes):
    line = json.loads(json.dumps(GOOD))
    line["turns"][1].update(changes)
    return line


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ({**GOOD, "turns": GOOD["turns"][:1]}, "turns must be a list of 2 to 4 turns"),
        ({**GOOD, "split": "test"}, "split must be one of dev, heldout"),
        (with_turn2(kind="first"), "turn 2: kind must be 'first' for turn 1"),
        (
            with_turn2(kind="switch"),
            "turn 2: a switch turn's standalone must be the question itself",
        ),
        (with_turn2(relevant_docs=[]), "turn 2: relevant_docs must name at least one document"),
        (with_turn2(relevant_docs=["nope.md"]), "turn 2: unknown documents: nope.md"),
        (with_turn2(answer="x"), "turn 2 has unknown fields: answer"),
        ({**GOOD, "user": ""}, "user must be a non-empty string"),
    ],
)
def test_a_malformed_line_is_named_by_file_and_line(tmp_path, line, message):
    path = tmp_path / "c.jsonl"
    path.write_text(json.dumps(GOOD).replace('"x"', '"y"') + "\n\n" + json.dumps(line) + "\n")
    with pytest.raises(ConversationSetError, match=rf"^{path}:3: ") as error:
        load_conversations(path, doc_ids={"a.md"})
    assert message in str(error.value)


def test_ids_are_unique_and_json_is_checked(tmp_path):
    path = tmp_path / "c.jsonl"
    path.write_text(json.dumps(GOOD) + "\n" + json.dumps(GOOD) + "\n{oops\n")
    with pytest.raises(ConversationSetError, match=r":2: id 'x' is used twice"):
        load_conversations(path)


def test_every_relevant_document_is_readable_by_the_conversations_principal():
    from raglab.ingest.loaders import load_folder
    from raglab.store.access import can_read

    documents = {d.id: d for d in load_folder(sample_corpus()).documents}
    unreadable = [
        (c.id, n, doc)
        for c in load_conversations(sample_conversations())
        for n, turn in enumerate(c.turns, start=1)
        for doc in turn.relevant_docs
        if not can_read(c.principal, documents[doc])
    ]
    assert unreadable == []
