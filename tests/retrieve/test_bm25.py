"""Tests for raglab.retrieve.bm25: the tokenizer, the BM25 formulas and the BM25 model."""

from __future__ import annotations

import math
import random
import re

import numpy as np
import pytest

from raglab.retrieve.bm25 import BM25, lucene_idf, term_saturation, tokenize

CORPUS = ["the cat sat", "the dog sat down", "a cat and a cat"]  # lengths 3, 4, 5; avgdl 4

# ---------------------------------------------------------------------------
# tokenize
# ---------------------------------------------------------------------------


def test_tokens_are_lowercase_words_with_one_letter_words_kept():
    assert tokenize("A Cat, a HAT!") == ["a", "cat", "a", "hat"]


def test_tokens_split_on_punctuation_and_keep_digits_and_accents():
    assert tokenize("E-204: café_2 costs 5€") == ["e", "204", "café_2", "costs", "5"]


def test_no_stopword_list():
    assert tokenize("the and of") == ["the", "and", "of"]


def test_empty_text_has_no_tokens():
    assert tokenize("") == [] and tokenize(" ...! ") == []


# ---------------------------------------------------------------------------
# The formulas
# ---------------------------------------------------------------------------


def test_lucene_idf_by_hand():
    np.testing.assert_allclose(
        lucene_idf(np.array([1, 2, 3]), 3),
        [math.log(1 + 2.5 / 1.5), math.log(1 + 1.5 / 2.5), math.log(1 + 0.5 / 3.5)],
    )


@pytest.mark.parametrize("n_docs", [1, 2, 3, 100])
def test_lucene_idf_is_positive_even_for_a_word_in_every_document(n_docs):
    df = np.arange(1, n_docs + 1)
    assert np.all(lucene_idf(df, n_docs) > 0)


def test_term_saturation_by_hand():
    # k1 = 1.5, b = 0.75, |d| = 3, avgdl = 4: 1 / (1 + 1.5 * (0.25 + 0.75 * 0.75)).
    value = term_saturation(np.array([1]), np.array([3]), 4.0, k1=1.5, b=0.75)
    assert value[0] == pytest.approx(1 / 2.21875)


def test_term_saturation_grows_with_tf_but_stays_below_one():
    values = term_saturation(np.arange(1, 50), np.full(49, 10), 10.0, k1=1.2, b=0.75)
    assert np.all(np.diff(values) > 0) and np.all(values < 1)


def test_b_zero_ignores_length_and_k1_zero_ignores_repeats():
    assert term_saturation(np.array([1, 1]), np.array([1, 99]), 10.0, k1=1.5, b=0.0).tolist() == [
        0.4,
        0.4,
    ]
    assert term_saturation(np.array([1, 7]), np.array([3, 9]), 10.0, k1=0.0, b=0.75).tolist() == [
        1.0,
        1.0,
    ]


# ---------------------------------------------------------------------------
# BM25 on a hand-worked 3-document corpus
# ---------------------------------------------------------------------------


def test_three_documents_by_hand():
    bm25 = BM25(k1=1.5, b=0.75).fit(CORPUS)
    idf_cat = math.log(1 + (3 - 2 + 0.5) / (2 + 0.5))  # "cat" is in 2 of 3 documents
    expected = [
        idf_cat * 1 / (1 + 1.5 * (0.25 + 0.75 * 3 / 4)),  # tf 1, |d| 3
        0.0,  # no "cat"
        idf_cat * 2 / (2 + 1.5 * (0.25 + 0.75 * 5 / 4)),  # tf 2, |d| 5
    ]
    scores = bm25.scores("cat")
    assert scores.dtype == np.float32 and scores.shape == (3,)
    np.testing.assert_allclose(scores, expected, rtol=1e-6)
    indices, top = bm25.search("cat", 2)
    assert indices.tolist() == [2, 0]
    np.testing.assert_allclose(top, [expected[2], expected[0]], rtol=1e-6)


def test_several_query_words_add_up():
    bm25 = BM25().fit(CORPUS)
    np.testing.assert_allclose(
        bm25.scores("the sat"), bm25.scores("the") + bm25.scores("sat"), rtol=1e-6
    )
    idf = math.log(1.6)  # "the" and "sat" are each in 2 of 3 documents
    np.testing.assert_allclose(
        bm25.scores("the sat"), [2 * idf / 2.21875, 2 * idf * 0.4, 0.0], rtol=1e-6
    )


def test_a_repeated_query_word_counts_each_time():
    bm25 = BM25().fit(CORPUS)
    np.testing.assert_allclose(bm25.scores("cat cat"), 2 * bm25.scores("cat"), rtol=1e-6)


def test_query_is_tokenized_like_the_texts():
    bm25 = BM25().fit(CORPUS)
    np.testing.assert_array_equal(bm25.scores("CAT!"), bm25.scores("cat"))


def test_learned_attributes():
    bm25 = BM25().fit(CORPUS)
    assert list(bm25.vocabulary_) == sorted(bm25.vocabulary_)  # sorted: stable word ids
    assert bm25.n_docs_ == 3 and bm25.avgdl_ == 4.0
    assert bm25.doc_lengths_.tolist() == [3, 4, 5]
    assert bm25.idf_[bm25.vocabulary_["cat"]] == pytest.approx(math.log(1.6))


def test_unknown_words_and_empty_queries_score_zero():
    bm25 = BM25().fit(CORPUS)
    assert bm25.scores("zebra").tolist() == [0.0, 0.0, 0.0]
    assert bm25.scores("").tolist() == [0.0, 0.0, 0.0]
    np.testing.assert_array_equal(bm25.scores("zebra cat"), bm25.scores("cat"))


# ---------------------------------------------------------------------------
# Edges: 0, 1 and 2 documents; empty texts
# ---------------------------------------------------------------------------


def test_fitting_no_texts_gives_an_empty_model():
    bm25 = BM25().fit([])
    assert bm25.n_docs_ == 0
    assert bm25.scores("anything").shape == (0,)
    indices, scores = bm25.search("anything", 5)
    assert indices.shape == (0,) and scores.shape == (0,)


def test_one_document():
    bm25 = BM25().fit(["holiday rules"])
    # idf = ln(1 + 0.5 / 1.5) > 0, and |d| = avgdl, so tf part = 1 / (1 + k1).
    assert bm25.scores("holiday")[0] == pytest.approx(math.log(4 / 3) / 2.5, rel=1e-6)


def test_two_documents_never_score_zero_for_a_matching_word():
    # With the classic idf a word in one of two documents gets idf 0 (rank_bm25 scores 0).
    bm25 = BM25().fit(["red apple", "green apple"])
    assert bm25.scores("red")[0] > 0 and bm25.scores("red")[1] == 0
    assert np.all(bm25.scores("apple") > 0)  # in both documents: still positive
    assert bm25.search("red apple", 1)[0].tolist() == [0]


def test_texts_without_words_are_allowed():
    bm25 = BM25().fit(["", "!!!", "cat"])
    assert bm25.doc_lengths_.tolist() == [0, 0, 1]
    assert bm25.scores("cat")[2] > 0 and bm25.scores("cat")[:2].tolist() == [0.0, 0.0]
    assert BM25().fit(["", "..."]).scores("cat").tolist() == [0.0, 0.0]


# ---------------------------------------------------------------------------
# search: ordering, k, errors
# ---------------------------------------------------------------------------


def test_equal_scores_go_to_the_lower_index():
    bm25 = BM25().fit(["dog", "cat", "cat", "dog", "cat"])
    assert bm25.search("cat", 2)[0].tolist() == [1, 2]


def test_search_returns_min_k_n_including_zero_scores():
    bm25 = BM25().fit(CORPUS)
    indices, scores = bm25.search("cat", 10)
    assert indices.tolist() == [2, 0, 1] and scores[-1] == 0.0
    assert indices.dtype == np.int64


@pytest.mark.parametrize("k", [0, -3])
def test_search_needs_a_positive_k(k):
    with pytest.raises(ValueError, match=rf"k must be an integer >= 1 \(got k={k}\)"):
        BM25().fit(CORPUS).search("cat", k)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"k1": -0.1}, r"k1 must be a finite number >= 0 \(got k1=-0.1\)"),
        ({"k1": float("inf")}, r"k1 must be a finite number >= 0 \(got k1=inf\)"),
        ({"b": 1.5}, r"b must be a finite number from 0 to 1 \(got b=1.5\)"),
        ({"b": -0.5}, r"b must be a finite number from 0 to 1 \(got b=-0.5\)"),
    ],
)
def test_parameters_are_checked_at_construction(kwargs, message):
    with pytest.raises(ValueError, match=message):
        BM25(**kwargs)


def test_using_an_unfitted_model_is_a_clear_error():
    with pytest.raises(RuntimeError, match=r"not fitted yet: call \.fit\(texts\) first"):
        BM25().scores("cat")


def test_fitting_one_string_instead_of_a_list_is_refused():
    with pytest.raises(
        TypeError, match=re.escape("texts must be a list of strings (got texts='the cat sat')")
    ):
        BM25().fit("the cat sat")


def test_fit_returns_self_and_refitting_replaces_everything():
    bm25 = BM25()
    assert bm25.fit(CORPUS) is bm25
    bm25.fit(["only one text"])
    assert bm25.n_docs_ == 1 and "cat" not in bm25.vocabulary_


def test_a_custom_tokenizer_is_used_for_texts_and_queries():
    bm25 = BM25(tokenizer=str.split).fit(["E-204 error", "E 204"])
    assert bm25.search("E-204", 1)[0].tolist() == [0]
    assert bm25.scores("E-204")[1] == 0.0


# ---------------------------------------------------------------------------
# Cross-checks against the field's libraries (make test-reference)
# ---------------------------------------------------------------------------


def _random_corpus(seed: int = 3, n_docs: int = 60) -> list[str]:
    rng = random.Random(seed)
    words = [f"w{i}" for i in range(40)]
    weights = [1 / (r + 1) for r in range(len(words))]  # Zipf-like: some words everywhere
    return [" ".join(rng.choices(words, weights, k=rng.randint(1, 30))) for _ in range(n_docs)]


@pytest.mark.reference
def test_scores_equal_bm25s_lucene():
    bm25s = pytest.importorskip("bm25s")
    texts = _random_corpus()
    ours = BM25(k1=1.5, b=0.75).fit(texts)
    # Pre-tokenised input, so both libraries see exactly the same tokens.
    theirs = bm25s.BM25(method="lucene", k1=1.5, b=0.75)
    theirs.index([tokenize(t) for t in texts], show_progress=False)
    rng = random.Random(4)
    queries = ["w0", "w39", "w1 w2 w2", "w5 w17 w30 w0"] + [
        " ".join(rng.choices(sorted(ours.vocabulary_), k=rng.randint(1, 5))) for _ in range(30)
    ]
    for query in queries:
        np.testing.assert_allclose(
            ours.scores(query),
            theirs.get_scores(tokenize(query)),
            rtol=2e-6,
            atol=1e-7,
            err_msg=query,
        )


@pytest.mark.reference
def test_single_word_rankings_agree_with_rank_bm25():
    """rank_bm25's BM25Okapi uses the classic idf, ln((N - df + 0.5) / (df + 0.5)) (floored
    for words in over half the texts) and the (k1 + 1) factor. For a one-word query the
    idf is a constant factor, so wherever that idf is positive (df < N / 2) the rankings
    must agree. With several words they may differ: the two idfs weigh rare and common
    words differently, so the sums can order documents differently.
    """
    rank_bm25 = pytest.importorskip("rank_bm25")
    texts = _random_corpus()
    ours = BM25(k1=1.5, b=0.75).fit(texts)
    theirs = rank_bm25.BM25Okapi([tokenize(t) for t in texts], k1=1.5, b=0.75)
    df = {w: sum(w in tokenize(t) for t in texts) for w in ours.vocabulary_}
    checked = 0
    for word in sorted(w for w, n in df.items() if n < len(texts) / 2):
        their_scores = np.asarray(theirs.get_scores([word]))
        their_order = sorted(range(len(texts)), key=lambda i: (-their_scores[i], i))
        assert ours.search(word, len(texts))[0].tolist() == their_order, word
        checked += 1
    assert checked >= 10
