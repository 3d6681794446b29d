"""The graph wing: extraction, communities, summaries, and the reader's graph holds only
what the reader may read (the attacks of scripts/attacks/graph.py, in process)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from raglab import Index, Principal
from raglab.embed.tokens import approx_tokens
from raglab.graph.building import build_graph, sentences_of
from raglab.graph.communities import groups_of, label_propagation
from raglab.graph.entities import candidates, relation_kind
from raglab.graph.reader import GraphIndex
from raglab.graph.search import global_search, graph_ask, local_search
from raglab.records import Chunk

CANARY = "zebracanary"


def chunk(doc_id: str, text: str, *, tenant: str = "acme", groups: tuple[str, ...] = ()) -> Chunk:
    return Chunk(doc_id, 0, text, 0, len(text), tenant=tenant, groups=groups)


def test_codes_teams_and_names_are_found_and_a_first_word_is_marked():
    found = {
        (c.name, c.kind, c.initial) for c in candidates("Report E-204 to the IT desk in Berlin.")
    }
    assert found == {
        ("Report", "name", True),
        ("E-204", "code", False),
        ("IT desk", "team", False),
        ("Berlin", "name", False),
    }


def test_a_relation_is_typed_only_when_a_pattern_names_it():
    assert relation_kind(" is replaced by ") == "replaces"
    assert relation_kind(" and ") == "co-occurs"


def test_a_first_word_is_an_entity_only_when_it_is_also_met_inside_a_sentence():
    graph = build_graph(
        sentences_of(
            [
                chunk(
                    "a.md",
                    "Submit claims in Ledgerly today. Ledgerly pays. Use Ledgerly and Pulse.",
                )
            ]
        )
    )
    assert "submit" not in graph.entities and {"ledgerly", "pulse"} <= set(graph.entities)
    assert graph.relations[("ledgerly", "pulse")].weight == 1


def test_label_propagation_splits_two_triangles_joined_by_a_thin_edge():
    edges = {
        ("a", "b"): 1,
        ("b", "c"): 1,
        ("a", "c"): 1,
        ("c", "d"): 0.5,
        ("d", "e"): 1,
        ("e", "f"): 1,
        ("d", "f"): 1,
    }
    assert groups_of(label_propagation(edges)) == [["a", "b", "c"], ["d", "e", "f"]]


def test_label_propagation_is_deterministic_whatever_the_order_of_the_edges():
    edges = {(f"n{i}", f"n{(i * 7) % 13}"): 1.0 + i % 3 for i in range(13)}
    reordered = dict(reversed(list(edges.items())))
    assert label_propagation(edges) == label_propagation(reordered)


def test_no_edges_no_labels():
    assert label_propagation({}) == {}


PUBLIC = "---\ntitle: Tools\ntenant: acme\nversion: 1\n---\nStaff use Pulse and DeskMate in Berlin. Leeds uses Pulse and DeskMate too.\n"
BOARD = f"---\ntitle: Board\ntenant: acme\ngroups: [board]\nversion: 1\n---\nPulse and DeskMate move to {CANARY} in Berlin and Leeds.\n"


@pytest.fixture(scope="module")
def board_index(tmp_path_factory):
    folder = tmp_path_factory.mktemp("corpus")
    (folder / "acme").mkdir()
    (folder / "acme" / "tools.md").write_text(PUBLIC, encoding="utf-8")
    (folder / "acme" / "board.md").write_text(BOARD, encoding="utf-8")
    return Index.from_folder(folder)


@pytest.mark.parametrize("search", [global_search, local_search])
def test_a_summary_never_quotes_a_document_its_reader_may_not_read(board_index, search):
    graphs = GraphIndex(board_index)
    question = "What about Pulse, DeskMate, Berlin and Leeds?"
    outsider = search(question, graphs.view(Principal("bob", "acme")), count=approx_tokens)
    member = search(
        question, graphs.view(Principal("ann", "acme", frozenset({"board"}))), count=approx_tokens
    )
    assert CANARY not in outsider.text and "acme/board.md" not in {
        h.chunk.doc_id for h in outsider.retrieved
    }
    assert CANARY in member.text  # the document is in its own readers' graph: the test can fail
    view = graphs.view(Principal("bob", "acme"))
    assert all(CANARY not in s.text() for s in view.summaries)
    assert view.doc_ids() == ["acme/tools.md"]


def test_a_graph_built_over_every_chunk_would_leak(board_index):
    """What the per-reader graph prevents: built from all chunks, the outsider's summary quotes the board."""
    graph = build_graph(sentences_of(board_index.store.chunks()))
    assert any(CANARY in s.text for s in graph.sentences)


def test_answers_are_cited_and_verified_or_abstain(board_index):
    graphs = GraphIndex(board_index)
    answer = graph_ask(
        "What about Pulse?", graphs, Principal("bob", "acme"), mode="local", count=approx_tokens
    )
    assert answer.verified and answer.citations and not answer.abstained
    nothing = graph_ask(
        "What about Zanzibar?", graphs, Principal("bob", "acme"), mode="local", count=approx_tokens
    )
    assert nothing.abstained and nothing.citations == ()
    with pytest.raises(ValueError, match="unknown graph search 'wide'; choose from: global, local"):
        graph_ask("x?", graphs, Principal("bob", "acme"), mode="wide", count=approx_tokens)


def test_a_budget_is_kept(board_index):
    graphs = GraphIndex(board_index)
    answer = global_search(
        "Pulse DeskMate Berlin Leeds?",
        graphs.view(Principal("bob", "acme")),
        count=approx_tokens,
        max_tokens=30,
    )
    assert approx_tokens(answer.text) <= 30 + len(answer.text.splitlines())


OLD = f"---\ntitle: Tools 2023\ntenant: acme\nversion: 1\n---\nPulse and DeskMate ran from {CANARY} in Berlin.\n"
NEW = PUBLIC.replace("version: 1\n", "version: 2\nsupersedes: [acme/old.md]\n")
OTHER = BOARD.replace("groups: [board]\n", "").replace("tenant: acme", "tenant: globex")


@pytest.mark.parametrize(
    ("files", "hidden"),
    [
        ({"acme/new.md": NEW, "acme/old.md": OLD}, "acme/old.md"),  # superseded for its readers
        ({"acme/tools.md": PUBLIC, "globex/board.md": OTHER}, "globex/board.md"),  # another tenant
    ],
    ids=["superseded", "other tenant"],
)
def test_a_readers_graph_leaves_out_what_their_searches_never_see(tmp_path, files, hidden):
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text, encoding="utf-8")
    graphs = GraphIndex(Index.from_folder(tmp_path))
    view = graphs.view(Principal("bob", "acme"))
    assert hidden not in view.doc_ids() and view.doc_ids()
    assert not any(CANARY in s.text for s in view.graph.sentences)


@given(
    st.dictionaries(
        st.tuples(st.sampled_from("abcdefgh"), st.sampled_from("abcdefgh")).filter(
            lambda pair: pair[0] < pair[1]
        ),
        st.sampled_from([0.5, 1.0, 2.0, 3.0]),
        max_size=20,
    ),
    st.randoms(use_true_random=False),
)
def test_label_propagation_labels_every_node_with_a_node_whatever_the_edge_order(edges, rng):
    labels = label_propagation(edges)
    nodes = {n for pair in edges for n in pair}
    assert set(labels) == nodes and set(labels.values()) <= nodes
    shuffled = list(edges.items())
    rng.shuffle(shuffled)
    flipped = {(b, a): w for (a, b), w in shuffled}  # the same undirected graph
    assert label_propagation(dict(shuffled)) == labels == label_propagation(flipped)
