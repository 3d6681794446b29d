"""Tests for raglab.retrieve._fast: the engine's top-k gives the reference's answer.

The reference (`raglab.retrieve.vectors.top_k`) scores every row and keeps the k best;
the fast one screens the rows with BLAS and scores only those near the top. On random
inputs, ties and zero rows included, both must return the same rows in the same order
and the same scores (the scores are compared with a tolerance, so that no verdict rests
on one processor's rounding; the rows must be identical).
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import raglab._threads
import raglab.retrieve._fast as fast
from raglab.retrieve import vectors
from raglab.retrieve._fast import (
    fast_lengths,
    products_and_lengths,
    rounding_tolerance,
    rows_near_the_top,
)
from raglab.retrieve.vectors import UnitMatrix, exact_scores, normalise, select_top_k

# ---------------------------------------------------------------------------
# The same answer as the reference, on random inputs
# ---------------------------------------------------------------------------

# Small integers make exact ties (and zero rows); extreme scales make rows whose length
# float32 cannot square (1e-25² vanishes, 1e25² overflows).
ELEMENTS = st.one_of(st.integers(-2, 2).map(float), st.floats(-4, 4, allow_nan=False, width=32))
SCALES = st.sampled_from([1.0, 2.0, 0.5, 3.0, 1e-25, 1e25, 0.0])


@st.composite
def searches(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray, int, bool]:
    """(query or block of queries, rows, k, normalised).

    Mostly distinct random rows (so that the screen keeps few of them and is used: it
    gives up when more than an eighth of the rows are near the top), with copies of a
    few drawn directions at several lengths planted among them: ties, zero rows, and
    rows of extreme length, where the queries look.
    """
    dim = draw(st.integers(1, 12))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    rows = rng.normal(size=(draw(st.integers(0, 400)), dim)).astype(np.float32)
    pool = draw(
        hnp.arrays(np.float32, st.tuples(st.integers(1, 4), st.just(dim)), elements=ELEMENTS)
    )
    if len(rows):
        for _ in range(draw(st.integers(0, 30))):
            row = draw(st.integers(0, len(rows) - 1))
            rows[row] = pool[draw(st.integers(0, len(pool) - 1))] * draw(SCALES)
    normalised = draw(st.booleans())
    if normalised:
        rows = normalise(rows)  # the promise `normalised=True` makes, kept
    one_query = st.one_of(
        hnp.arrays(np.float32, (dim,), elements=ELEMENTS),
        st.sampled_from(list(pool)),  # points straight at the planted rows: ties at the top
        st.just(np.zeros(dim, np.float32)),
    )
    queries = draw(st.lists(one_query, min_size=1, max_size=4))
    query = queries[0] if draw(st.booleans()) else np.stack(queries)
    return query, rows, draw(st.integers(1, 30)), normalised


def assert_same_answer(got: vectors.TopK, expected: vectors.TopK) -> None:
    np.testing.assert_array_equal(got.indices, expected.indices)  # same rows, same tie order
    assert got.scores.dtype == expected.scores.dtype == np.float32
    np.testing.assert_allclose(got.scores, expected.scores, rtol=0, atol=1e-6)


@settings(max_examples=300, deadline=None)
@given(search=searches())
def test_fast_top_k_gives_the_reference_answer(search):
    query, rows, k, normalised = search
    expected = vectors.top_k(query, rows, k, normalised=normalised)
    assert_same_answer(fast.top_k(query, rows, k, normalised=normalised), expected)


@settings(max_examples=100, deadline=None)
@given(search=searches())
def test_fast_top_k_gives_the_reference_answer_on_a_unit_matrix(search):
    query, rows, k, _ = search
    matrix = UnitMatrix(rows)
    assert_same_answer(fast.top_k(query, matrix, k), vectors.top_k(query, matrix, k))


@pytest.mark.parametrize("n", [10, 257, 3001, 20_000])
def test_fast_top_k_gives_the_reference_answer_on_many_rows(n):
    rng = np.random.default_rng(n)
    rows = (rng.normal(size=(n, 64)) * rng.uniform(0.5, 2.0, size=(n, 1))).astype(np.float32)
    rows[::7] = rows[0]  # plenty of exact ties
    rows[3::50] = 0.0
    unit = normalise(rows)
    queries = np.stack([rng.normal(size=64), rows[0], rows[5], np.zeros(64)])
    for query in (*queries, queries):
        for matrix, options in ((rows, {}), (unit, {"normalised": True})):
            expected = vectors.top_k(query, matrix, 9, **options)
            assert_same_answer(fast.top_k(query, matrix, 9, **options), expected)


def test_the_learner_s_path_loads_no_speed_code():
    code = (
        "import sys, raglab, raglab.retrieve.vectors, raglab.retrieve.bm25;"
        "raglab.top_k([1.0, 0.0], [[0.0, 1.0]], 1);"
        "print(sorted(m for m in sys.modules if m in ('raglab._threads', 'raglab.retrieve._fast')))"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert loaded.stdout.strip() == "[]"


# ---------------------------------------------------------------------------
# The screen: few rows scored exactly, never a winner dropped
# ---------------------------------------------------------------------------


def test_the_screen_keeps_few_rows_and_never_drops_a_winner():
    rng = np.random.default_rng(2)
    unit = UnitMatrix(rng.normal(size=(4000, 32)))
    query = normalise(rng.normal(size=32))
    screened = unit.rows @ query  # BLAS
    near = rows_near_the_top(screened, 10, 32)
    assert near is not None and 10 <= near.size < 100  # the fast path is really taken
    best = select_top_k(exact_scores(unit.rows, query), 10).indices
    assert set(best.tolist()) <= set(near.tolist())
    assert rows_near_the_top(np.zeros(4000, dtype=np.float32), 10, 32) is None  # all tied


@settings(max_examples=200, deadline=None)
@given(
    screened=hnp.arrays(
        np.float32,
        st.integers(2, 3000),
        elements=st.sampled_from([-0.5, 0.0, 0.1, 0.10001, 0.3, 0.9, 0.90003, 1.0]),
    ),
    k=st.integers(1, 40),
)
def test_the_screen_keeps_exactly_the_rows_near_the_k_th_score(screened, k):
    near = rows_near_the_top(screened, k, 384)
    if k >= screened.size:
        assert near is None
        return
    kth = np.sort(screened)[::-1][k - 1]
    expected = np.flatnonzero(screened >= kth - 2 * rounding_tolerance(384))
    if near is None:
        assert expected.size > screened.size // 8  # gave up only when screening saves nothing
    else:
        np.testing.assert_array_equal(near, expected)


def test_results_do_not_depend_on_the_blas_thread_count():
    threadpoolctl = pytest.importorskip("threadpoolctl")
    rng = np.random.default_rng(5)
    rows = np.repeat(rng.normal(size=(50, 96)).astype(np.float32), 40, axis=0)
    rng.shuffle(rows)
    unit = UnitMatrix(rows)
    results = []
    for threads in (1, 2):
        with threadpoolctl.threadpool_limits(limits=threads, user_api="blas"):
            results.append(fast.top_k(rows[0], unit, 25))
    assert_same_answer(results[1], results[0])


# ---------------------------------------------------------------------------
# One pass over plain rows: products and lengths, shared over threads
# ---------------------------------------------------------------------------


def test_products_and_lengths_equal_the_separate_passes_across_blocks():
    rng = np.random.default_rng(13)
    rows = rng.normal(size=(1300, 48)).astype(np.float32)  # 1300 rows: three blocks of 512
    q = normalise(rng.normal(size=48))
    dots, lengths = products_and_lengths(rows, q)
    np.testing.assert_array_equal(lengths, fast_lengths(rows))  # row by row, bit for bit
    np.testing.assert_allclose(lengths, np.linalg.norm(rows, axis=1), rtol=1e-5)
    np.testing.assert_allclose(dots, rows @ q, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_plain_rows_give_the_same_answer_on_any_number_of_threads(monkeypatch, threads):
    # The blocks are shared out over the threads: every share must be read, and the
    # result must not depend on how many shares there are.
    monkeypatch.setattr(raglab._threads, "thread_count", lambda: threads)
    rng = np.random.default_rng(14)
    rows = np.repeat(rng.normal(size=(300, 48)).astype(np.float32), 5, axis=0)  # ties
    rows *= rng.uniform(0.5, 3.0, size=(1500, 1)).astype(np.float32)  # not unit rows
    q = normalise(rng.normal(size=48))
    dots, lengths = products_and_lengths(rows, q)
    np.testing.assert_array_equal(lengths, fast_lengths(rows))
    np.testing.assert_allclose(dots, rows @ q, rtol=1e-5, atol=1e-5)
    assert_same_answer(fast.top_k(q, rows, 40), vectors.top_k(q, rows, 40))


def test_a_block_larger_than_one_group_of_scores(monkeypatch):
    # Queries are scored in groups (bounded memory); results must not depend on the cut.
    rng = np.random.default_rng(4)
    rows = np.repeat(rng.normal(size=(100, 16)).astype(np.float32), 5, axis=0)
    queries = np.vstack([rows[:3], rng.normal(size=(4, 16)), np.zeros((1, 16))])
    whole = fast.top_k(queries, rows, 5)
    monkeypatch.setattr(fast, "GROUP_SCORES", 1000)  # two queries per group of 500 rows
    grouped = fast.top_k(queries, rows, 5)
    np.testing.assert_array_equal(whole.indices, grouped.indices)
    np.testing.assert_array_equal(whole.scores, grouped.scores)
    assert_same_answer(grouped, vectors.top_k(queries, rows, 5))
