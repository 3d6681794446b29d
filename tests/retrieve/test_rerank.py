"""The rerankers: features by hand, the learned model, the shipped weights."""

from __future__ import annotations

import pytest

from raglab import Chunk, Hit, Index, Principal, Retriever, sample_corpus
from raglab.retrieve import rerank as rerank_module
from raglab.retrieve.fusion import Fusion, Rankings
from raglab.retrieve.rerank import (
    FEATURES,
    LinearReranker,
    candidates,
    default_reranker,
    features,
    load_reranker,
    proximity,
    shortest_span,
    stored_figures,
)


def chunk(doc: str, text: str, title: str = "", heading: str = "") -> Chunk:
    return Chunk(doc, 0, text, 0, len(text), heading=heading, title=title)


LEAVE = chunk("leave.md", "Annual leave is 25 days. Leave carries over.", "Leave policy")
VPN = chunk("vpn.md", "Connect the VPN before you open the wiki.", "VPN")
TRAVEL = chunk("travel.md", "Days abroad: the meal allowance is paid.", "Travel")
RANKINGS = Rankings(
    dense=(Hit(VPN, 0.6), Hit(LEAVE, 0.5), Hit(TRAVEL, 0.1)),
    keyword=(Hit(LEAVE, 7.0), Hit(TRAVEL, 3.5)),
)


@pytest.mark.parametrize(
    ("terms", "tokens", "span"),
    [
        ({"a", "b"}, ["a", "b"], 2),
        ({"a", "b"}, ["a", "x", "x", "b", "x", "a", "b"], 2),
        ({"a", "z"}, ["x", "a", "x"], 1),  # only the terms that occur count
        ({"z"}, ["a", "b"], 0),
        ({"a"}, [], 0),
        ({"a", "b", "c"}, ["c", "a", "a", "x", "b", "c"], 4),
    ],
)
def test_shortest_span(terms, tokens, span):
    assert shortest_span(terms, tokens) == span


def test_proximity_is_one_for_neighbours_and_smaller_for_scattered_terms():
    stems = frozenset({"annual", "leav"})
    assert proximity(stems, "annual leave") == 1.0
    assert proximity(stems, "annual pay, sick pay and then leave") == pytest.approx(2 / 7)
    assert proximity(stems, "nothing here") == 0.0


def test_candidates_carry_both_rankers_view_of_each_chunk():
    found = candidates(RANKINGS, Fusion(), depth=3)
    by_doc = {c.hit.chunk.doc_id: c for c in found}
    assert [c.fused_rank for c in found] == [1, 2, 3]
    assert (by_doc["leave.md"].dense_rank, by_doc["leave.md"].bm25_rank) == (2, 1)
    assert (by_doc["vpn.md"].bm25_rank, by_doc["vpn.md"].bm25_score) == (0, 0.0)  # absent


def test_features_by_hand():
    found = candidates(RANKINGS, Fusion(), depth=3)
    x = features("How many days of annual leave?", found)
    assert x.shape == (3, len(FEATURES))
    row = dict(zip(FEATURES, x[[c.hit.chunk.doc_id for c in found].index("leave.md")]))
    # stems of the question: day, annual, leav
    assert row["bm25"] == 1.0 and row["bm25_rank"] == 1.0 and row["dense_rank"] == 0.5
    assert row["dense"] == pytest.approx(0.5)
    assert row["title_match"] == pytest.approx(1 / 3)  # "Leave policy" holds leav
    assert row["coverage"] == 1.0
    assert row["proximity"] == pytest.approx(3 / 5)  # "Annual leave is 25 days": 3 stems in 5
    assert features("anything", []).shape == (0, len(FEATURES))


def test_a_linear_reranker_orders_by_its_weighted_features():
    found = candidates(RANKINGS, Fusion(), depth=3)
    zeros = (0.0,) * len(FEATURES)
    ones = (1.0,) * len(FEATURES)
    coverage_only = tuple(1.0 if f == "coverage" else 0.0 for f in FEATURES)
    reranker = LinearReranker(coverage_only, zeros, ones)
    top = reranker.rerank("How many days of annual leave?", found, 2)
    assert [h.chunk.doc_id for h in top] == ["leave.md", "travel.md"]
    # All weights 0: every score ties, and the fused order stays.
    flat = LinearReranker(zeros, zeros, ones).rerank("leave", found, 3)
    assert [h.chunk.id for h in flat] == [c.hit.chunk.id for c in found]


def test_a_reranker_needs_one_number_per_feature():
    with pytest.raises(ValueError, match=f"weights must hold {len(FEATURES)} numbers"):
        LinearReranker((1.0,), (0.0,) * len(FEATURES), (1.0,) * len(FEATURES))


def test_the_shipped_weights_load_and_are_enabled_only_when_held_out_figures_allow():
    for profile in ("hashing", "lsa", "minilm"):
        entry = stored_figures(profile)
        assert entry["features"] == list(FEATURES)
        held = entry["held_out"]
        no_worse = all(held["reranked"][m] >= held["hybrid"][m] for m in held["hybrid"])
        mean, low, high = held["ndcg@10_gain"]
        assert low <= mean <= high
        assert entry["enabled"] == (no_worse and low > 0)
        assert (default_reranker(profile) is not None) == entry["enabled"]
        assert load_reranker(profile).weights == tuple(entry["weights"])
    with pytest.raises(KeyError, match="no reranker fitted for 'nope'"):
        load_reranker("nope")
    assert default_reranker("nope") is None


def test_an_enabled_reranker_is_used_by_the_index_for_hybrid_search(monkeypatch):
    stored = rerank_module._stored()
    entry = stored["rerankers"]["hashing"] | {"enabled": True}
    monkeypatch.setattr(
        rerank_module, "_stored", lambda: stored | {"rerankers": {"hashing": entry}}
    )
    index = Index.from_folder(sample_corpus(), embedder="hashing")
    assert index.retriever("hybrid").reranker == load_reranker("hashing")
    assert index.retriever("dense").reranker is None
    ann = Principal("ann", "acme")
    hits = index.search("How many vacation days do I get?", ann, k=5)
    assert len(hits) == 5 and all(h.chunk.tenant == "acme" for h in hits)


def test_a_reranker_reads_both_rankings_so_it_needs_hybrid_search():
    index = Index.from_folder(sample_corpus(), embedder="hashing")
    with pytest.raises(ValueError, match="method must be 'hybrid'"):
        Retriever(index.store, index.embedder, "dense", reranker=load_reranker("hashing"))
