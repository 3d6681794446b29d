"""raglab.longcontext: a document moved through the prompt, a corpus grown, what a prompt leaks."""

from __future__ import annotations

import doctest

import pytest

from raglab.ingest.loaders import load_folder
from raglab.longcontext import growth, position
from raglab.longcontext.growth import grown
from raglab.longcontext.leaks import LeakCount, forbidden, leak_count, pasted_whole_corpus
from raglab.longcontext.position import move_to, place
from raglab.longcontext.whole_corpus import (
    answer_long_prompt,
    ask_long_context,
    default_generator,
    long_context_prompt,
)
from raglab.records import Chunk, Document, Hit, Principal
from tests.conftest import CORPUS

HITS = [Hit(Chunk(f"{d}.md", 0, d, 0, 1), 1.0) for d in "abcdefghi"]


@pytest.fixture(scope="module")
def documents():
    return load_folder(CORPUS).documents


def test_doctests_pass():
    assert doctest.testmod(position).failed == 0
    assert doctest.testmod(growth).failed == 0


@pytest.mark.parametrize(("where", "at"), [(0.0, 0), (0.25, 2), (0.5, 4), (0.75, 6), (1.0, 8)])
def test_a_document_moves_to_its_relative_place_and_the_rest_keep_their_order(where, at):
    moved = move_to(HITS, "e.md", where)
    assert [h.chunk.doc_id for h in moved].index("e.md") == at
    assert [h for h in moved if h.chunk.doc_id != "e.md"] == [
        h for h in HITS if h.chunk.doc_id != "e.md"
    ]


def test_positions_outside_0_to_1_and_missing_documents_are_refused():
    with pytest.raises(ValueError, match="position"):
        place(1.5, 3)
    with pytest.raises(ValueError, match="'z.md' is not among the prompt's sources"):
        move_to(HITS, "z.md", 0.5)


def test_grown_copies_are_public_in_the_tenant_unique_and_supersede_nothing():
    filler = [
        Document("t/a.md", "A.", tenant="t", groups=("g",)),
        Document("t/b.md", "B.", tenant="t", supersedes=("t/a.md",)),
    ]
    docs = grown([Document("x/base.md", "Base.", tenant="x")], filler, copies=3, tenant="x")
    assert len(docs) == 1 + 3 * 2
    assert len({d.id for d in docs}) == len(docs)
    assert all(d.tenant == "x" and d.groups == () and d.supersedes == () for d in docs)
    assert grown(docs[:1], filler, copies=0, tenant="x") == docs[:1]
    with pytest.raises(ValueError, match="copies"):
        grown(docs, filler, copies=-1, tenant="x")


def test_pasting_the_whole_corpus_shows_a_reader_what_they_may_not_read(documents):
    reader = Principal("u", "acme")
    question = "What is the salary band for a senior engineer?"
    pasted = long_context_prompt(question, pasted_whole_corpus(documents))
    leaked = answer_long_prompt(pasted, default_generator())
    count = leak_count(leaked, reader)
    shown = forbidden(pasted.prompt.sources, reader)
    assert count.documents == len(shown) > 20  # other tenants and acme's group documents
    assert count.sentences > 100
    assert count.cited == 1 and "€66,000" in leaked.text  # the hr document, quoted to anyone

    filtered = ask_long_context(question, documents, reader)
    assert leak_count(filtered, reader) == LeakCount(documents=0, sentences=0, cited=0)
    assert "€66,000" not in filtered.text
