"""While a check runs the learner's function, the reference cannot be reached; under
nbgrader a failing check raises."""

from __future__ import annotations

import pytest

import raglab
import raglab.ingest.chunking as reference
from raglab.workbook import checks

_alias = reference.chunk


def _wrapper(text, size=800, overlap=100):
    return reference.chunk(text, size, overlap)


def _reimport(text, size=800, overlap=100):
    import raglab.ingest.chunking as other

    return other.chunk(text, size=size, overlap=overlap)


def _through_a_global(text, size=800, overlap=100):
    return _alias(text, size, overlap)


def _through_the_package(text, size=800, overlap=100):
    return raglab.chunk(text, size=size, overlap=overlap)


def _closure():
    hidden = reference.chunk

    def chunk(text, size=800, overlap=100):
        return hidden(text, size, overlap)

    return chunk


@pytest.mark.parametrize(
    "fn",
    [_wrapper, _reimport, _through_a_global, _through_the_package, _closure(), reference.chunk],
    ids=["wrapper", "re-import", "global alias", "package name", "closure", "the reference itself"],
)
def test_the_reference_is_unreachable_while_a_check_runs(fn, capsys):
    result = checks.check_chunk(fn)
    assert not result.passed
    assert "the reference `chunk` is not available while checking" in capsys.readouterr().out
    # ... and everything is back in place afterwards.
    assert reference.chunk("abcdef", 4, 1) == ["abcd", "def"] and raglab.chunk is reference.chunk


def test_under_nbgrader_a_failing_check_raises_with_its_message(monkeypatch, capsys):
    monkeypatch.setenv("NBGRADER_EXECUTION", "autograde")
    with pytest.raises(checks.CheckFailed, match="not implemented yet"):
        checks.check_chunk(
            lambda text, size=800, overlap=100: (_ for _ in ()).throw(NotImplementedError())
        )
    assert checks.check_chunk(reference_copy).passed  # a passing check stays quiet


def reference_copy(text, size=800, overlap=100):
    if size <= 0 or overlap < 0 or overlap >= size:
        raise ValueError("bad size or overlap")
    out, start = [], 0
    while start < len(text):
        out.append(text[start : start + size])
        if start + size >= len(text):
            break
        start += size - overlap
    return out


def _bootstrap_through_the_engine(values, resamples=2000, seed=0):
    import numpy as np

    from raglab.evaluation.bootstrap import resample_means

    return tuple(np.percentile(resample_means(values, resamples=resamples, seed=seed), [2.5, 97.5]))


def _bootstrap_wrapper(values, resamples=2000, seed=0):
    from raglab.evaluation.bootstrap import bootstrap_ci

    ci = bootstrap_ci(values, resamples=resamples, seed=seed)
    return (ci.low, ci.high)


def _fusion_wrapper(rankings, weights, k, rrf_k=60):
    from raglab.workbook.checks.improve import reference_weighted_rrf

    return reference_weighted_rrf(rankings, weights, k, rrf_k)


def _span_wrapper(terms, tokens):
    from raglab.retrieve.rerank import shortest_span

    return shortest_span(terms, tokens)


@pytest.mark.parametrize(
    ("check", "fn"),
    [
        (checks.check_bootstrap_interval, _bootstrap_through_the_engine),
        (checks.check_bootstrap_interval, _bootstrap_wrapper),
        (checks.check_weighted_rrf, _fusion_wrapper),
        (checks.check_shortest_span, _span_wrapper),
    ],
    ids=["resample_means", "bootstrap_ci", "weighted_rrf", "shortest_span"],
)
def test_notebook_09s_references_are_unreachable_while_a_check_runs(check, fn, capsys):
    assert not check(fn).passed
    assert "is not available while checking" in capsys.readouterr().out


def _top_k_through_the_stores_fast_path(query, vectors, k):
    from raglab.retrieve._fast import top_k

    return top_k(query, vectors, k)


def test_the_engines_fast_top_k_is_unreachable_while_the_top_k_check_runs(capsys):
    # The stores' top_k gives the reference's answer faster: calling it is not writing top_k.
    assert not checks.check_top_k(_top_k_through_the_stores_fast_path).passed
    assert "is not available while checking" in capsys.readouterr().out
