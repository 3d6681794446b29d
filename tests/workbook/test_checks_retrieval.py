"""Notebook 06's checks pass on the reference and fail, naming the case, on plausible wrong code."""

from __future__ import annotations

import math
import re
from collections import Counter

import numpy as np
import pytest

import raglab
from raglab.workbook import checks
from raglab.workbook.checks.retrieval import reference_filtered_top_k, reference_rrf

# --- top_k ------------------------------------------------------------------------------------

pytestmark = pytest.mark.usefixtures("references_reachable")


def _cosines(query, vectors):
    q = np.asarray(query, float)
    m = np.asarray(vectors, float)
    norms = np.linalg.norm(m, axis=1) * np.linalg.norm(q)
    return np.divide(m @ q, norms, out=np.zeros(len(m)), where=norms > 0)


def top_k_dot(query, vectors, k):
    """Dot product, not cosine: long rows win."""
    if k <= 0:
        raise ValueError("k")
    scores = np.asarray(vectors, float) @ np.asarray(query, float)
    order = np.argsort(-scores, kind="stable")[:k]
    return order, scores[order]


def top_k_unstable(query, vectors, k):
    """argsort without a stable sort, reversed: ties come out by the higher index."""
    if k <= 0:
        raise ValueError("k")
    scores = _cosines(query, vectors)
    order = np.argsort(scores, kind="stable")[::-1][:k]
    return order, scores[order]


def top_k_no_k_check(query, vectors, k):
    scores = _cosines(query, vectors)
    order = np.argsort(-scores, kind="stable")[: max(k, 0)]
    return order, scores[order]


def top_k_argpartition_unsorted(query, vectors, k):
    """argpartition alone: the right rows, in no particular order."""
    if k <= 0:
        raise ValueError("k")
    scores = _cosines(query, vectors)
    if k >= len(scores):
        order = np.arange(len(scores))
    else:
        order = np.argpartition(-scores, k - 1)[:k]
    return order, scores[order]


def top_k_reference_like(query, vectors, k):
    if k <= 0:
        raise ValueError("k")
    scores = _cosines(query, vectors)
    order = np.argsort(-scores, kind="stable")[:k]
    return order.tolist(), scores[order].tolist()


@pytest.mark.parametrize(
    ("fn", "case"),
    [
        (top_k_dot, "best first"),
        (top_k_unstable, "ties by lower index"),
        (top_k_no_k_check, "k = 0"),
        (top_k_argpartition_unsorted, "k larger than n"),
    ],
)
def test_top_k_check_fails_on_wrong_code(fn, case):
    result = checks.check_top_k(fn)
    assert not result.passed and result.case == case, result.message


def test_top_k_check_passes_on_the_engine_and_on_a_plain_argsort(capsys):
    assert checks.check_top_k(raglab.top_k).passed
    assert checks.check_top_k(top_k_reference_like).passed
    assert capsys.readouterr().out.startswith("✅ top_k: all ")


def test_top_k_check_explains_the_order(capsys):
    checks.check_top_k(top_k_unstable)
    assert "equal scores must come in the order of the lower index" in capsys.readouterr().out


# --- bm25_scores --------------------------------------------------------------------------------

TOKEN = re.compile(r"\w+")


def bm25_with(idf, *, saturation=None, query_tokens=lambda q: TOKEN.findall(q.lower())):
    def bm25_scores(query, texts, k1=1.5, b=0.75):
        docs = [TOKEN.findall(t.lower()) for t in texts]
        n = len(docs)
        avgdl = sum(map(len, docs)) / n
        df = Counter(w for d in docs for w in set(d))
        scores = []
        for d in docs:
            tf = Counter(d)
            total = 0.0
            for w in query_tokens(query):
                if tf[w]:
                    f = tf[w]
                    norm = (
                        saturation(f, len(d), avgdl, k1, b)
                        if saturation
                        else f / (f + k1 * (1 - b + b * len(d) / avgdl))
                    )
                    total += idf(df[w], n) * norm
            scores.append(total)
        return np.array(scores)

    return bm25_scores


lucene = bm25_with(lambda df, n: math.log(1 + (n - df + 0.5) / (df + 0.5)))
classic_idf = bm25_with(lambda df, n: math.log((n - df + 0.5) / (df + 0.5)))
plain_idf = bm25_with(lambda df, n: math.log(n / df))
no_length = bm25_with(
    lambda df, n: math.log(1 + (n - df + 0.5) / (df + 0.5)),
    saturation=lambda f, dl, avg, k1, b: f / (f + k1),
)
unique_query = bm25_with(
    lambda df, n: math.log(1 + (n - df + 0.5) / (df + 0.5)),
    query_tokens=lambda q: sorted(set(TOKEN.findall(q.lower()))),
)
case_sensitive = bm25_with(
    lambda df, n: math.log(1 + (n - df + 0.5) / (df + 0.5)), query_tokens=lambda q: TOKEN.findall(q)
)


@pytest.mark.parametrize(
    ("fn", "case"),
    [
        (classic_idf, "one text, one word"),
        (plain_idf, "one text, one word"),
        (no_length, "rare words weigh more"),
        (unique_query, "repeated query word counts twice"),
        (case_sensitive, "lowercase words, no punctuation"),
    ],
)
def test_bm25_check_fails_on_wrong_code(fn, case):
    result = checks.check_bm25_scores(fn)
    assert not result.passed and result.case == case, result.message


def test_bm25_check_passes_on_a_from_scratch_lucene_bm25(capsys):
    assert checks.check_bm25_scores(lucene).passed
    assert capsys.readouterr().out.startswith("✅ bm25_scores: all ")


# --- rrf ---------------------------------------------------------------------------------------


def rrf_with(*, start=1, tie=lambda item: item[0], total=True):
    def rrf(rankings, k, rrf_k=60):
        fused = {}
        for ranking in rankings:
            for rank, doc in enumerate(ranking, start=start):
                add = 1 / (rrf_k + rank)
                fused[doc] = fused.get(doc, 0) + add if total else max(fused.get(doc, 0), add)
        return sorted(fused.items(), key=lambda item: (-item[1], tie(item)))[:k]

    return rrf


@pytest.mark.parametrize(
    ("fn", "case"),
    [
        (rrf_with(start=0), "one list keeps its order"),
        (rrf_with(tie=lambda item: 0), "ties by id"),
        (rrf_with(total=False), "agreement wins"),
        (lambda rankings, k, rrf_k=60: reference_rrf(rankings, 99), "agreement wins"),
    ],
)
def test_rrf_check_fails_on_wrong_code(fn, case):
    result = checks.check_rrf(fn)
    assert not result.passed and result.case == case, result.message


def test_rrf_check_passes_on_a_from_scratch_fusion():
    assert checks.check_rrf(rrf_with()).passed
    assert checks.check_rrf(reference_rrf).passed


# --- filtered_top_k ------------------------------------------------------------------------------


def filter_after_scoring(query, vectors, chunks, principal, k):
    """The leak's cure done late: top-k over everything, then drop what the user may not read."""
    rows, _ = raglab.top_k(query, vectors, k)
    return [int(r) for r in rows if raglab.can_read(principal, chunks[r])]


def no_filter(query, vectors, chunks, principal, k):
    return raglab.top_k(query, vectors, k)[0].tolist()


def tenant_only(query, vectors, chunks, principal, k):
    rows = [i for i, c in enumerate(chunks) if c.tenant == principal.tenant]
    if not rows:
        return []
    picked, _ = raglab.top_k(query, np.asarray(vectors)[rows], k)
    return [rows[p] for p in picked]


@pytest.mark.parametrize(
    ("fn", "case", "why"),
    [
        (no_filter, "another tenant's chunks score higher", "a leak"),
        (filter_after_scoring, "another tenant's chunks score higher", "filter first"),
        (tenant_only, "another tenant's chunks score higher", "a leak"),
    ],
)
def test_filter_check_fails_on_wrong_code(fn, case, why):
    result = checks.check_filtered_top_k(fn)
    assert not result.passed and result.case == case, result.message
    assert why in result.message


def test_filter_check_passes_on_filter_then_score():
    assert checks.check_filtered_top_k(reference_filtered_top_k).passed


def test_notebook_06_checks_are_registered():
    assert {"top_k", "bm25_scores", "rrf", "filtered_top_k"} <= set(checks.CHECKS)
