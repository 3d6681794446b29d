"""Tests for raglab.retrieve.vectors: normalise, cosine, top_k, UnitMatrix and the tie rule.

Every top_k test runs on both implementations: the reference a learner reads
(`vectors.top_k`) and the one the stores call (`raglab.retrieve._fast.top_k`);
tests/retrieve/test_fast.py compares the two directly on random inputs.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import raglab.retrieve._fast as fast
from raglab.retrieve.vectors import (
    TopK,
    UnitMatrix,
    cosine,
    exact_scores,
    normalise,
    select_top_k,
    top_k,
)

both = pytest.mark.parametrize("search", [top_k, fast.top_k], ids=["reference", "fast"])

# ---------------------------------------------------------------------------
# normalise
# ---------------------------------------------------------------------------


def test_normalise_rows_to_unit_length_as_float32():
    out = normalise([[3.0, 4.0], [0.0, 5.0]])
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, [[0.6, 0.8], [0.0, 1.0]], rtol=1e-6)


def test_normalise_keeps_zero_rows_zero():
    out = normalise([[0.0, 0.0], [1.0, 1.0]])
    assert np.all(np.isfinite(out))
    np.testing.assert_array_equal(out[0], [0.0, 0.0])


def test_normalise_a_single_vector():
    out = normalise(np.array([0.0, -2.0]))
    assert out.shape == (2,)
    np.testing.assert_array_equal(out, [0.0, -1.0])


def test_normalise_leaves_the_input_untouched():
    vectors = np.array([[3.0, 4.0]], dtype=np.float32)
    normalise(vectors)
    np.testing.assert_array_equal(vectors, [[3.0, 4.0]])


def test_normalise_refuses_3d_arrays():
    with pytest.raises(
        ValueError, match=r"vectors must be 1-D or 2-D \(got an array of shape \(1, 1, 2\)\)"
    ):
        normalise(np.zeros((1, 1, 2)))


# ---------------------------------------------------------------------------
# cosine
# ---------------------------------------------------------------------------


def test_cosine_hand_worked():
    assert cosine([1, 0], [0, 1]) == 0.0
    assert cosine([1, 2], [2, 4]) == pytest.approx(1.0)
    assert cosine([1, 0], [-3, 0]) == pytest.approx(-1.0)
    assert cosine([1, 1], [1, 0]) == pytest.approx(1 / math.sqrt(2))


def test_cosine_is_a_python_float_within_minus_one_and_one():
    value = cosine(np.array([0.1, 0.2, 0.3], dtype=np.float32), [0.1, 0.2, 0.3])
    assert type(value) is float
    assert -1.0 <= value <= 1.0


def test_cosine_with_a_zero_vector_is_zero():
    assert cosine([0, 0], [1, 2]) == 0.0
    assert cosine([1, 2], [0, 0]) == 0.0
    assert cosine([0, 0], [0, 0]) == 0.0


@pytest.mark.parametrize(
    ("a", "b", "message"),
    [
        ([], [], r"non-empty vectors \(got lengths 0 and 0\)"),
        ([1.0], [], r"non-empty vectors \(got lengths 1 and 0\)"),
        ([1.0, 2.0], [1.0, 2.0, 3.0], r"equal length \(got lengths 2 and 3\)"),
        ([[1.0, 2.0]], [1.0, 2.0], r"two 1-D vectors \(got shapes \(1, 2\) and \(2,\)\)"),
    ],
)
def test_cosine_refuses_bad_vectors(a, b, message):
    with pytest.raises(ValueError, match=message):
        cosine(a, b)


# ---------------------------------------------------------------------------
# top_k: contract
# ---------------------------------------------------------------------------


@both
def test_top_k_hand_worked(search):
    vectors = [[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]
    indices, scores = search([1.0, 0.0], vectors, 2)
    assert indices.tolist() == [0, 2]
    assert indices.dtype == np.int64 and scores.dtype == np.float32
    np.testing.assert_allclose(scores, [1.0, 1 / math.sqrt(2)], rtol=1e-6)


@both
def test_top_k_is_cosine_so_length_does_not_matter(search):
    indices, scores = search([1.0, 0.0], [[0.5, 0.5], [100.0, 1.0], [0.1, 0.0]], 3)
    assert indices.tolist() == [2, 1, 0]
    assert scores[0] == pytest.approx(1.0)


@both
def test_ties_go_to_the_lower_index(search):
    vectors = [[0.0, 1.0], [1.0, 0.0], [0.0, 1.0], [1.0, 0.0], [1.0, 0.0]]
    indices, scores = search([1.0, 0.0], vectors, 2)
    assert indices.tolist() == [1, 3]
    assert scores.tolist() == [1.0, 1.0]
    indices, _ = search([1.0, 0.0], vectors, 4)
    assert indices.tolist() == [1, 3, 4, 0]


@both
def test_k_larger_than_n_returns_everything_ranked(search):
    indices, scores = search([1.0, 0.0], [[0.0, 1.0], [1.0, 0.0]], 10)
    assert indices.tolist() == [1, 0]
    assert scores.shape == (2,)


@both
def test_no_vectors_give_empty_results(search):
    indices, scores = search([1.0, 0.0], np.zeros((0, 2), dtype=np.float32), 3)
    assert indices.shape == (0,) and scores.shape == (0,)


@both
@pytest.mark.parametrize("k", [0, -1])
def test_k_must_be_positive(search, k):
    with pytest.raises(ValueError, match=rf"k must be an integer >= 1 \(got k={k}\)"):
        search([1.0], [[1.0]], k)


@both
def test_k_must_be_an_integer(search):
    with pytest.raises(TypeError):
        search([1.0], [[1.0]], 1.5)


@both
def test_query_of_the_wrong_length_is_refused(search):
    with pytest.raises(
        ValueError,
        match=r"query must be a 1-D vector or a 2-D block of rows of length 3 \(got shape \(2,\)\)",
    ):
        search([1.0, 0.0], np.ones((4, 3)), 1)
    with pytest.raises(ValueError, match=r"rows of length 2 \(got shape \(1, 1, 2\)\)"):
        search([[[1.0, 0.0]]], np.ones((4, 2)), 1)
    with pytest.raises(ValueError, match=r"a 2-D array of rows \(got shape \(2,\)\)"):
        search([1.0, 0.0], np.ones(2), 1)
    with pytest.raises(ValueError, match=r"a 1-D vector of length 2 \(got shape \(1, 2\)\)"):
        UnitMatrix(np.ones((4, 2))).scores([[1.0, 0.0]])


@both
def test_top_k_is_a_named_pair(search):
    result = search([1.0, 0.0], [[0.0, 1.0], [1.0, 0.0]], 1)
    assert isinstance(result, TopK) and isinstance(result, tuple)
    indices, scores = result
    assert result.indices is indices and result.scores is scores
    assert (indices.tolist(), scores.tolist()) == ([1], [1.0])


@both
def test_a_block_of_queries_gives_one_result_per_query(search):
    rng = np.random.default_rng(3)
    vectors = rng.normal(size=(200, 8))
    queries = rng.normal(size=(5, 8))
    for path in (vectors, UnitMatrix(vectors)):
        indices, scores = search(queries, path, 4)
        assert indices.shape == scores.shape == (5, 4) and indices.dtype == np.int64
        for i, query in enumerate(queries):
            one = search(query, path, 4)
            np.testing.assert_array_equal(indices[i], one.indices)
            np.testing.assert_array_equal(scores[i], one.scores)


@both
def test_a_block_of_queries_at_the_edges(search):
    indices, scores = search(np.zeros((0, 2)), [[1.0, 0.0]], 3)
    assert indices.shape == scores.shape == (0, 1)
    indices, scores = search([[1.0, 0.0], [0.0, 1.0]], np.zeros((0, 2)), 3)
    assert indices.shape == scores.shape == (2, 0)


@both
def test_non_finite_query_is_refused(search):
    with pytest.raises(ValueError, match="query must be finite"):
        search([np.nan, 0.0], np.ones((4, 2)), 1)


@both
def test_zero_query_scores_zero_everywhere_and_keeps_index_order(search):
    indices, scores = search([0.0, 0.0], [[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]], 2)
    assert indices.tolist() == [0, 1]
    assert scores.tolist() == [0.0, 0.0]


@both
def test_zero_rows_score_zero(search):
    indices, scores = search([1.0, 0.0], [[0.0, 0.0], [-1.0, 0.0]], 2)
    assert indices.tolist() == [0, 1]
    assert scores.tolist() == [0.0, -1.0]


@both
def test_tiny_and_huge_rows_are_measured_in_float64(search):
    # In float32, 1e-30² vanishes and 1e30² overflows: the cosines must not.
    vectors = [[1e-30, 0.0], [0.0, 1e30], [3e-30, 3e-30], [-1e30, 0.0]]
    indices, scores = search([1.0, 1.0], vectors, 4)
    assert indices.tolist() == [2, 0, 1, 3]
    np.testing.assert_allclose(scores, [1.0, 0.5**0.5, 0.5**0.5, -(0.5**0.5)], rtol=1e-6)


# ---------------------------------------------------------------------------
# Rows known to be unit: UnitMatrix and normalised=True
# ---------------------------------------------------------------------------


def test_unit_matrix_stores_unit_rows_once_read_only():
    m = UnitMatrix(np.array([[3.0, 4.0], [0.0, 0.0]]))
    assert m.rows.dtype == np.float32 and m.rows.flags.c_contiguous
    np.testing.assert_allclose(np.linalg.norm(m.rows, axis=1), [1.0, 0.0], rtol=1e-6)
    assert (len(m), m.dim) == (2, 2)
    with pytest.raises(ValueError):
        m.rows[0, 0] = 1.0


def test_unit_matrix_refuses_bad_rows():
    with pytest.raises(ValueError, match=r"2-D array of rows \(got shape \(3,\)\)"):
        UnitMatrix(np.ones(3))
    with pytest.raises(ValueError, match="must be finite"):
        UnitMatrix(np.array([[1.0, np.inf]]))


@both
def test_all_paths_agree(search):
    # Plain rows are normalised, then scored: exactly what a UnitMatrix holds.
    rng = np.random.default_rng(7)
    vectors = rng.normal(size=(300, 16)) * rng.uniform(0.1, 10.0, size=(300, 1))
    query = rng.normal(size=16)
    unit = UnitMatrix(vectors)
    plain = search(query, vectors, 12)
    matrix = search(query, unit, 12)
    promised = search(query, unit.rows, 12, normalised=True)
    for result in (plain, matrix, unit.top_k(query, 12)):
        np.testing.assert_array_equal(result.indices, promised.indices)
        np.testing.assert_array_equal(result.scores, promised.scores)
    np.testing.assert_array_equal(unit.scores(query)[promised.indices], promised.scores)


@both
@pytest.mark.parametrize("n", [7, 1003, 4099])
def test_identical_rows_tie_exactly_wherever_they_sit(search, n):
    # Matrix-vector products in BLAS work on blocks of rows (and split them over threads),
    # so identical rows can differ in the last bit; top_k must score them identically.
    rng = np.random.default_rng(n)
    row = rng.normal(size=384).astype(np.float32)
    vectors = np.tile(row, (n, 1))
    query = rng.normal(size=384)
    for path in (vectors, UnitMatrix(vectors)):
        indices, scores = search(query, path, 5)
        assert indices.tolist() == [0, 1, 2, 3, 4]
        assert len(set(scores.tolist())) == 1
    assert len(np.unique(UnitMatrix(vectors).scores(query))) == 1


# ---------------------------------------------------------------------------
# Against slow, obviously correct references
# ---------------------------------------------------------------------------


def reference_select(scores: np.ndarray, k: int) -> list[int]:
    """Sort every index by (-score, index) and keep the first k."""
    return sorted(range(len(scores)), key=lambda i: (-scores[i], i))[:k]


@settings(max_examples=300, deadline=None)
@given(
    # Few distinct values, so ties are everywhere, including at the k-th place.
    scores=hnp.arrays(
        np.float32, st.integers(0, 60), elements=st.sampled_from([-1.0, 0.0, 0.25, 0.5, 1.0])
    ),
    k=st.integers(1, 70),
)
def test_select_top_k_matches_a_full_sort(scores, k):
    indices, top = select_top_k(scores, k)
    expected = reference_select(scores, k)
    assert indices.tolist() == expected
    np.testing.assert_array_equal(top, scores[expected])


finite = st.floats(-4, 4, allow_nan=False, width=32)


@both
@settings(max_examples=200, deadline=None)
@given(
    data=st.integers(1, 8).flatmap(
        lambda dim: st.tuples(
            hnp.arrays(np.float32, (dim,), elements=finite),
            hnp.arrays(np.float32, st.tuples(st.integers(0, 40), st.just(dim)), elements=finite),
        )
    ),
    k=st.integers(1, 50),
)
def test_top_k_matches_a_slow_cosine_reference(search, data, k):
    query, vectors = data
    reference = np.array([cosine(query, row) for row in vectors])  # float64, one by one
    for path in (vectors, UnitMatrix(vectors)):
        indices, scores = search(query, path, k)
        assert len(indices) == min(k, len(vectors))
        assert len(set(indices.tolist())) == len(indices)
        # Scores are the cosines (to float32 rounding) and come best first, ties by index.
        np.testing.assert_allclose(scores, reference[indices], atol=1e-5)
        assert all(
            (a > b) or (a == b and i < j)
            for (i, a), (j, b) in zip(zip(indices, scores), zip(indices[1:], scores[1:]))
        )
        # The chosen set is the best one, up to float32 rounding at the boundary.
        best = np.sort(reference)[::-1][: len(indices)]
        np.testing.assert_allclose(np.sort(reference[indices])[::-1], best, atol=1e-5)


@both
def test_top_k_is_select_top_k_over_every_exact_score(search):
    rng = np.random.default_rng(10)
    vectors = rng.normal(size=(3001, 64)) * rng.uniform(0.5, 2.0, size=(3001, 1))
    vectors[::7] = vectors[0]  # plenty of exact ties
    unit = normalise(vectors)
    for query in (rng.normal(size=64), vectors[0], vectors[5]):
        expected = select_top_k(exact_scores(unit, normalise(query)), 9)
        for path, options in ((vectors, {}), (unit, {"normalised": True})):
            got = search(query, path, 9, **options)
            np.testing.assert_array_equal(got.indices, expected.indices)
            np.testing.assert_array_equal(got.scores, expected.scores)


@both
def test_planted_duplicates_among_many_rows_tie_exactly(search):
    rng = np.random.default_rng(11)
    vectors = rng.normal(size=(5001, 384)).astype(np.float32)
    positions = [3, 998, 999, 2500, 5000]
    vectors[positions] = vectors[17]
    for path in (vectors, UnitMatrix(vectors)):
        indices, scores = search(vectors[17], path, 6)
        assert indices.tolist() == [3, 17, 998, 999, 2500, 5000]
        assert len(set(scores.tolist())) == 1


# ---------------------------------------------------------------------------
# Plain arrays: lengths measured on every call (never a stale cache)
# ---------------------------------------------------------------------------


@both
@pytest.mark.parametrize("batched", [False, True])
def test_an_array_changed_in_place_is_searched_as_it_is_now(search, batched):
    # A cache of row lengths keyed by the array would miss these edits: row 40 now points
    # along the query but is short, row 7 (the old best) is turned away, row 3 is scaled.
    rng = np.random.default_rng(17)
    vectors = rng.normal(size=(2000, 32)).astype(np.float32)
    query = rng.normal(size=32).astype(np.float32)
    queries = np.stack([query, -query]) if batched else query
    search(queries, vectors, 5)
    vectors[7] = query * 3.0
    first = search(queries, vectors, 5)
    vectors[40] = query * 1e-3
    vectors[7] = -query
    vectors[3] *= 50.0
    second = search(queries, vectors, 5)
    fresh = search(queries, vectors.copy(), 5)
    best = first.indices[0][0] if batched else first.indices[0]
    assert best == 7
    np.testing.assert_array_equal(second.indices, fresh.indices)
    np.testing.assert_array_equal(second.scores, fresh.scores)
    one = second.indices[0] if batched else second.indices
    assert one[0] == 40 and 7 not in one.tolist()
    if batched:
        assert second.indices[1][0] == 7  # the other query, -query, now finds row 7 first


# ---------------------------------------------------------------------------
# The batched form: a block of queries is exactly the queries one at a time
# ---------------------------------------------------------------------------


def tied_rows(n: int, dim: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Rows with many exact copies (ties everywhere) and queries that hit them."""
    rng = np.random.default_rng(seed)
    rows = rng.normal(size=(n, dim)).astype(np.float32) * rng.uniform(0.2, 5.0, size=(n, 1))
    rows = rows.astype(np.float32)
    rows[::5] = rows[1]  # a fifth of the rows are copies of row 1
    rows[2::11] = rows[2]  # and every 11th from row 2 copies of row 2
    rows[-1] = 0.0
    queries = np.vstack([rows[1], rows[2], rng.normal(size=(4, dim)), np.zeros((1, dim))])
    return rows, queries.astype(np.float32)


@both
@pytest.mark.parametrize(("n", "k"), [(6, 3), (6, 10), (3000, 1), (3000, 7), (3000, 700)])
def test_a_block_of_queries_equals_one_query_at_a_time_bit_for_bit(search, n, k):
    rows, queries = tied_rows(n, 24, seed=n + k)
    unit = UnitMatrix(rows)
    for path, options in ((rows, {}), (unit, {}), (unit.rows, {"normalised": True})):
        block = search(queries, path, k, **options)
        assert block.indices.shape == block.scores.shape == (len(queries), min(k, n))
        for i, query in enumerate(queries):
            one = search(query, path, k, **options)
            np.testing.assert_array_equal(block.indices[i], one.indices)
            np.testing.assert_array_equal(block.scores[i], one.scores)


@both
def test_a_block_of_queries_keeps_the_tie_rule(search):
    rows, queries = tied_rows(3000, 24, seed=1)
    indices, scores = search(queries[:2], rows, 6)
    for i, row in enumerate((1, 2)):
        copies = np.flatnonzero((rows == rows[row]).all(axis=1))
        np.testing.assert_array_equal(indices[i], copies[:6])  # the copies, in index order
        assert len(set(scores[i].tolist())) == 1
    np.testing.assert_array_equal(search(queries[-1:], rows, 4).indices, [[0, 1, 2, 3]])


@both
@pytest.mark.parametrize("k", [0, -3])
def test_a_block_of_queries_refuses_k_below_one(search, k):
    with pytest.raises(ValueError, match=rf"k must be an integer >= 1 \(got k={k}\)"):
        search(np.ones((3, 2)), np.ones((5, 2)), k)
