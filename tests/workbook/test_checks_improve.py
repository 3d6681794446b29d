"""Notebook 09's checks pass on the reference and fail, naming the case, on plausible wrong code."""

from __future__ import annotations

import numpy as np
import pytest

from raglab.workbook import checks

pytestmark = pytest.mark.usefixtures("references_reachable")


# --- bootstrap_interval ---------------------------------------------------------------------


def interval_right(values, resamples=2000, seed=0):
    values = np.asarray(values, dtype=float)
    if values.size == 0:
        raise ValueError("no values")
    rng = np.random.default_rng(seed)
    means = values[rng.integers(0, values.size, size=(resamples, values.size))].mean(axis=1)
    low, high = np.percentile(means, [2.5, 97.5])
    return float(low), float(high)


def interval_with_choice(values, resamples=2000, seed=0):
    """rng.choice draws the same indices as rng.integers: a correct alternative."""
    if len(values) == 0:
        raise ValueError("no values")
    rng = np.random.default_rng(seed)
    means = rng.choice(np.asarray(values, float), size=(resamples, len(values))).mean(axis=1)
    return tuple(np.percentile(means, [2.5, 97.5]))


def interval_without_replacement(values, resamples=2000, seed=0):
    if len(values) == 0:
        raise ValueError("no values")
    rng = np.random.default_rng(seed)
    means = [rng.permutation(np.asarray(values, float)).mean() for _ in range(resamples)]
    return tuple(np.percentile(means, [2.5, 97.5]))


def interval_90_percent(values, resamples=2000, seed=0):
    if len(values) == 0:
        raise ValueError("no values")
    rng = np.random.default_rng(seed)
    v = np.asarray(values, float)
    means = v[rng.integers(0, v.size, size=(resamples, v.size))].mean(axis=1)
    return tuple(np.percentile(means, [5, 95]))


def interval_normal(values, resamples=2000, seed=0):
    """mean ± 1.96 standard errors: a different interval, not the bootstrap's."""
    if len(values) == 0:
        raise ValueError("no values")
    v = np.asarray(values, float)
    half = 1.96 * v.std() / np.sqrt(v.size)
    return (v.mean() - half, v.mean() + half)


def interval_unseeded(values, resamples=2000, seed=0):
    if len(values) == 0:
        raise ValueError("no values")
    rng = np.random.default_rng()
    v = np.asarray(values, float)
    means = v[rng.integers(0, v.size, size=(resamples, v.size))].mean(axis=1)
    return tuple(np.percentile(means, [2.5, 97.5]))


def interval_no_empty_check(values, resamples=2000, seed=0):
    v = np.asarray(values, float)
    if v.size == 0:
        return (0.0, 0.0)
    return interval_right(values, resamples, seed)


def test_bootstrap_interval_passes_on_correct_code():
    assert checks.check_bootstrap_interval(interval_right).passed
    assert checks.check_bootstrap_interval(interval_with_choice).passed


@pytest.mark.parametrize(
    ("fn", "case", "why"),
    [
        (interval_without_replacement, "hits and misses", "with* replacement"),
        (interval_90_percent, "hits and misses", "too narrow"),
        (interval_normal, "hits and misses", ""),
        (interval_unseeded, None, ""),  # which case fails first is down to chance
        (interval_no_empty_check, "no values", ""),
    ],
)
def test_bootstrap_interval_fails_on_wrong_code(fn, case, why):
    result = checks.check_bootstrap_interval(fn)
    assert not result.passed
    assert case is None or result.case == case
    assert why in result.message


def test_bootstrap_interval_stub_is_not_implemented():
    def stub(values, resamples=2000, seed=0):
        raise NotImplementedError()

    result = checks.check_bootstrap_interval(stub)
    assert not result.passed and "not implemented" in result.message


# --- weighted_rrf -----------------------------------------------------------------------------


def fusion_right(rankings, weights, k, rrf_k=60):
    if len(weights) != len(rankings):
        raise ValueError("one weight per ranking")
    fused = {}
    for ranking, w in zip(rankings, weights):
        for rank, doc in enumerate(ranking, start=1):
            fused[doc] = fused.get(doc, 0.0) + w / (rrf_k + rank)
    return sorted(fused.items(), key=lambda item: (-item[1], item[0]))[:k]


def fusion_ignores_weights(rankings, weights, k, rrf_k=60):
    return fusion_right(rankings, [1.0] * len(rankings), k, rrf_k)


def fusion_weight_on_rank(rankings, weights, k, rrf_k=60):
    if len(weights) != len(rankings):
        raise ValueError("one weight per ranking")
    fused = {}
    for ranking, w in zip(rankings, weights):
        for rank, doc in enumerate(ranking, start=1):
            fused[doc] = fused.get(doc, 0.0) + 1 / (rrf_k + w * rank)
    return sorted(fused.items(), key=lambda item: (-item[1], item[0]))[:k]


def fusion_ranks_from_zero(rankings, weights, k, rrf_k=60):
    if len(weights) != len(rankings):
        raise ValueError("one weight per ranking")
    fused = {}
    for ranking, w in zip(rankings, weights):
        for rank, doc in enumerate(ranking):
            fused[doc] = fused.get(doc, 0.0) + w / (rrf_k + rank)
    return sorted(fused.items(), key=lambda item: (-item[1], item[0]))[:k]


def fusion_zip_silently(rankings, weights, k, rrf_k=60):
    """zip stops at the shorter list: a missing weight drops a ranking unnoticed."""
    fused = {}
    for ranking, w in zip(rankings, weights):
        for rank, doc in enumerate(ranking, start=1):
            fused[doc] = fused.get(doc, 0.0) + w / (rrf_k + rank)
    return sorted(fused.items(), key=lambda item: (-item[1], item[0]))[:k]


def fusion_ties_by_insertion(rankings, weights, k, rrf_k=60):
    if len(weights) != len(rankings):
        raise ValueError("one weight per ranking")
    fused = {}
    for ranking, w in zip(rankings, weights):
        for rank, doc in enumerate(ranking, start=1):
            fused[doc] = fused.get(doc, 0.0) + w / (rrf_k + rank)
    return sorted(fused.items(), key=lambda item: -item[1])[:k]


def test_weighted_rrf_passes_on_correct_code():
    assert checks.check_weighted_rrf(fusion_right).passed


@pytest.mark.parametrize(
    ("fn", "case"),
    [
        (fusion_ignores_weights, "a heavier list wins"),
        (fusion_weight_on_rank, "a heavier list wins"),
        (fusion_ranks_from_zero, "weights of 1 are plain RRF"),
        (fusion_zip_silently, "one weight per list"),
        (fusion_ties_by_insertion, "ties by id"),
    ],
)
def test_weighted_rrf_fails_on_wrong_code(fn, case):
    result = checks.check_weighted_rrf(fn)
    assert not result.passed
    assert result.case == case


# --- shortest_span ----------------------------------------------------------------------------


def span_right(terms, tokens):
    wanted = set(terms) & set(tokens)
    if not wanted:
        return 0
    best = len(tokens)
    for i in range(len(tokens)):
        seen = set()
        for j in range(i, len(tokens)):
            if tokens[j] in wanted:
                seen.add(tokens[j])
            if seen == wanted:
                best = min(best, j - i + 1)
                break
    return best


def span_first_occurrences(terms, tokens):
    places = [tokens.index(t) for t in terms if t in tokens]
    return max(places) - min(places) + 1 if places else 0


def span_needs_every_term(terms, tokens):
    if not set(terms) <= set(tokens):
        return 0
    return span_right(terms, tokens)


def span_off_by_one(terms, tokens):
    span = span_right(terms, tokens)
    return span - 1 if span else 0


def span_as_float(terms, tokens):
    return float(span_right(terms, tokens))


def test_shortest_span_passes_on_correct_code():
    assert checks.check_shortest_span(span_right).passed


@pytest.mark.parametrize(
    ("fn", "case", "why"),
    [
        (span_first_occurrences, "a later, closer pair", ""),
        (span_needs_every_term, "only the terms that occur", "count the terms that do"),
        (span_off_by_one, "side by side", "one short"),
        (span_as_float, "side by side", "whole number"),
    ],
)
def test_shortest_span_fails_on_wrong_code(fn, case, why):
    result = checks.check_shortest_span(fn)
    assert not result.passed
    assert result.case == case
    assert why in result.message
