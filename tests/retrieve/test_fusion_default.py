"""The default fusion: a lexical embedder's hybrid search ranks as BM25 does; others fuse
scores (min-max, equal weights)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from raglab import Chunk, Hit, Index, load_questions, sample_corpus, sample_questions
from raglab.embed.embedders import available_embedders
from raglab.retrieve.fusion import KEYWORD_LED, LEXICAL_EMBEDDERS, SCORE_LED, Fusion, default_fusion


def test_lexical_embedders_get_the_keyword_led_fusion_and_the_others_score_fusion():
    assert LEXICAL_EMBEDDERS.issubset(available_embedders())  # names that exist, not typos
    for name in available_embedders():
        expected = KEYWORD_LED if name in {"hashing", "lsa"} else SCORE_LED
        assert default_fusion(name) == expected
    assert default_fusion("a-neural-model-of-yours") == SCORE_LED == Fusion("minmax", 0.5)


def _hits(ids: list[str]) -> list[Hit]:
    return [Hit(Chunk(i, 0, i, 0, 1), float(len(ids) - n)) for n, i in enumerate(ids)]


@settings(max_examples=200, deadline=None)
@given(
    dense=st.lists(st.sampled_from("abcdefghij"), unique=True, max_size=10),
    keyword=st.lists(st.sampled_from("abcdefghij"), unique=True, max_size=10),
    k=st.integers(1, 12),
)
def test_keyword_led_keeps_bm25s_order_and_only_fills_the_places_bm25_left_empty(dense, keyword, k):
    fused = [h.chunk.doc_id for h in KEYWORD_LED.fuse(_hits(dense), _hits(keyword), k)]
    assert fused[: len(keyword)] == keyword[:k]  # BM25's ranking, untouched
    assert set(fused[len(keyword) :]) <= set(dense) - set(keyword)  # then what only dense found
    assert len(fused) == min(k, len(set(dense) | set(keyword)))


@pytest.fixture(scope="module")
def hashing_index():
    return Index.from_folder(sample_corpus(), embedder="hashing")


def test_the_default_pipeline_with_a_lexical_embedder_never_ranks_below_bm25(hashing_index):
    # Regression: hybrid search used plain RRF for every embedder; with hashing, on 5,183
    # public abstracts, that scored nDCG@10 0.572 against BM25 alone's 0.665.
    for q in load_questions(sample_questions()):
        bm25 = hashing_index.search(q.question, q.asker, k=10, method="bm25")
        hybrid = hashing_index.search(q.question, q.asker, k=10)  # the default method
        assert [h.chunk.id for h in hybrid][: len(bm25)] == [h.chunk.id for h in bm25], q.id


def test_a_neural_embedders_index_fuses_scores_with_equal_weights():
    from raglab.embed.embedders import HashingEmbedder

    class Neural(HashingEmbedder):  # the hashing vectors under another embedder's name
        @property
        def name(self) -> str:
            return "minilm-like"

    index = Index.from_folder(sample_corpus(), embedder=Neural())
    assert index.retriever("hybrid").fusion == SCORE_LED != Fusion()
    assert index.retriever("dense").fusion is None


def test_an_index_can_be_given_its_fusion():
    index = Index.from_folder(sample_corpus(), embedder="hashing", fusion=Fusion())
    assert index.retriever("hybrid").fusion == Fusion() != default_fusion("hashing")
    question, asker = (
        "How many vacation days do I get?",
        load_questions(sample_questions())[0].asker,
    )
    by_rrf = index.search(question, asker, k=3)
    default = Index(index.store, index.embedder).search(question, asker, k=3)
    assert by_rrf != default  # the same store, fused two ways
