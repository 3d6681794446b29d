"""Notebook 09's checks of sections 4 and 5 pass on the reference and fail on plausible wrong code,
naming the case and, in the learner's terms, the mistake."""

from __future__ import annotations

import re

import numpy as np
import pytest

from raglab.workbook import checks

pytestmark = pytest.mark.usefixtures("references_reachable")


# --- unsupported_numbers ----------------------------------------------------------------------


def numbers_right(sentence, cited_text):
    def numbers(text):
        text = re.sub(r"\[[\d,; ]*\]", " ", text)
        return {n.replace(",", "") for n in re.findall(r"\d+(?:[.,]\d+)*", text)}

    return numbers(sentence) - numbers(cited_text)


def numbers_as_substrings(sentence, cited_text):
    return {n for n in re.findall(r"\d+", sentence) if n not in cited_text}


def numbers_split_at_commas(sentence, cited_text):
    sentence = re.sub(r"\[\d+\]", " ", sentence)
    return set(re.findall(r"\d+", sentence)) - set(re.findall(r"\d+", cited_text))


def numbers_with_markers(sentence, cited_text):
    def numbers(text):
        return {n.replace(",", "") for n in re.findall(r"\d+(?:[.,]\d+)*", text)}

    return numbers(sentence) - numbers(cited_text)


def numbers_reversed(sentence, cited_text):
    return numbers_right(cited_text, sentence)


def numbers_greedy_pattern(sentence, cited_text):
    """[\\d.,]+ takes the full stop after a number with it: '60.' is not '60'."""
    sentence = re.sub(r"\[\d+\]", " ", sentence)

    def numbers(text):
        return {n.replace(",", "") for n in re.findall(r"[\d.,]+", text) if n.strip(".,")}

    return numbers(sentence) - numbers(cited_text)


def numbers_as_list(sentence, cited_text):
    return sorted(numbers_right(sentence, cited_text))


def test_unsupported_numbers_passes_on_correct_code():
    result = checks.check_unsupported_numbers(numbers_right)
    assert result.passed and "random sentences pass" in result.message


@pytest.mark.parametrize(
    ("fn", "case", "why"),
    [
        (numbers_as_substrings, "25 is not 250", "'25' in '250 days' is True"),
        (numbers_split_at_commas, "thousands separators", "'10,000' is 10000"),
        (numbers_with_markers, "a marker is no number", "citation marker"),
        (numbers_reversed, "a changed number", "the other way round"),
        (numbers_greedy_pattern, "the full stop after a number", "'60.' is not a number"),
        (numbers_as_list, "the number is there", "expected a set"),
    ],
)
def test_unsupported_numbers_fails_on_wrong_code(fn, case, why):
    result = checks.check_unsupported_numbers(fn)
    assert not result.passed
    assert result.case == case
    assert why in result.message


def test_unsupported_numbers_stub_is_not_implemented():
    def stub(sentence, cited_text):
        raise NotImplementedError()

    result = checks.check_unsupported_numbers(stub)
    assert not result.passed and "not implemented" in result.message


# --- mmr_select -------------------------------------------------------------------------------


def mmr_right(relevance, similarity, k, lambda_=0.7):
    sim = np.asarray(similarity, dtype=float)
    chosen = []
    while len(chosen) < min(k, len(relevance)):
        best, best_gain = None, None
        for i, rel in enumerate(relevance):
            if i in chosen:
                continue
            penalty = max((sim[i][j] for j in chosen), default=0.0)
            gain = lambda_ * rel - (1 - lambda_) * penalty
            if best_gain is None or gain > best_gain:
                best, best_gain = i, gain
        chosen.append(best)
    return chosen


def mmr_vectorised(relevance, similarity, k, lambda_=0.7):
    """Another correct form: numpy, the running max kept per item."""
    rel = np.asarray(relevance, dtype=float)
    sim = np.asarray(similarity, dtype=float)
    closest = np.zeros(len(rel))
    left = np.ones(len(rel), dtype=bool)
    chosen = []
    while left.any() and len(chosen) < k:
        gain = np.where(left, lambda_ * rel - (1 - lambda_) * closest, -np.inf)
        best = int(np.argmax(gain))
        chosen.append(best)
        left[best] = False
        closest = np.maximum(closest, sim[:, best]) if len(chosen) > 1 else sim[:, best].copy()
    return chosen


def mmr_variant(relevance, similarity, k, lambda_=0.7, *, cost=max, gain=None, ties=False):
    """mmr_right with one thing changed: how the penalty is taken, the gain, the tie rule."""
    chosen = []
    while len(chosen) < min(k, len(relevance)):
        best, best_gain = None, None
        for i, rel in enumerate(relevance):
            if i in chosen:
                continue
            seen = [similarity[i][j] for j in chosen]
            penalty = cost(seen) if seen else 0.0
            g = (gain or (lambda r, p: lambda_ * r - (1 - lambda_) * p))(rel, penalty)
            if best_gain is None or g > best_gain or (ties and g == best_gain):
                best, best_gain = i, g
        chosen.append(best)
    return chosen


def mmr_no_redundancy(relevance, similarity, k, lambda_=0.7):
    return mmr_variant(relevance, similarity, k, lambda_, cost=lambda seen: 0.0)


def mmr_sum_penalty(relevance, similarity, k, lambda_=0.7):
    return mmr_variant(relevance, similarity, k, lambda_, cost=sum)


def mmr_last_only(relevance, similarity, k, lambda_=0.7):
    return mmr_variant(relevance, similarity, k, lambda_, cost=lambda seen: seen[-1])


def mmr_lambda_swapped(relevance, similarity, k, lambda_=0.7):
    gain = lambda r, p: (1 - lambda_) * r - lambda_ * p  # noqa: E731
    return mmr_variant(relevance, similarity, k, lambda_, gain=gain)


def mmr_later_ties(relevance, similarity, k, lambda_=0.7):
    return mmr_variant(relevance, similarity, k, lambda_, ties=True)


def mmr_picks_again(relevance, similarity, k, lambda_=0.7):
    """Never removes a chosen item from the candidates."""
    chosen = []
    for _ in range(min(k, len(relevance))):
        gains = [
            lambda_ * rel - (1 - lambda_) * max((similarity[i][j] for j in chosen), default=0.0)
            for i, rel in enumerate(relevance)
        ]
        chosen.append(int(np.argmax(gains)))
    return chosen


def mmr_always_k(relevance, similarity, k, lambda_=0.7):
    picks = mmr_right(relevance, similarity, k, lambda_)
    return picks + [picks[-1]] * (k - len(picks))


def test_mmr_select_passes_on_correct_code():
    for fn in (mmr_right, mmr_vectorised):
        result = checks.check_mmr_select(fn)
        assert result.passed and "random item sets pass" in result.message


@pytest.mark.parametrize(
    ("fn", "case", "why"),
    [
        (mmr_no_redundancy, "a near copy gives way", "plain ranking by relevance"),
        (mmr_sum_penalty, "like two chosen items, a little each", "not the sum"),
        (mmr_last_only, "redundant with an earlier pick", "not only to the one chosen last"),
        (mmr_lambda_swapped, "λ = 1 is the plain ranking", "λ weighs relevance"),
        (mmr_later_ties, "ties go to the lower index", "lower index"),
        (mmr_picks_again, "λ = 1 is the plain ranking", "picked twice"),
        (mmr_always_k, "k larger than the items", "picked twice"),
    ],
)
def test_mmr_select_fails_on_wrong_code(fn, case, why):
    result = checks.check_mmr_select(fn)
    assert not result.passed
    assert result.case == case
    assert why in result.message


def test_mmr_select_stub_is_not_implemented():
    def stub(relevance, similarity, k, lambda_=0.7):
        raise NotImplementedError()

    result = checks.check_mmr_select(stub)
    assert not result.passed and "not implemented" in result.message


# --- hidden_versions --------------------------------------------------------------------------


def versions_right(supersedes, readable):
    hidden = set()
    for new in readable:
        todo, seen = list(supersedes.get(new, [])), set()
        while todo:
            old = todo.pop()
            if old not in seen:
                seen.add(old)
                todo.extend(supersedes.get(old, []))
        hidden |= seen & set(readable)
    return hidden


def versions_ignore_access(supersedes, readable):
    return versions_right(supersedes, set(readable) | set(supersedes)) & set(readable)


def versions_unreadable_too(supersedes, readable):
    hidden = set()
    for new in readable:
        todo = list(supersedes.get(new, []))
        while todo:
            old = todo.pop()
            hidden.add(old)
            todo.extend(supersedes.get(old, []))
    return hidden


def versions_hide_the_newer(supersedes, readable):
    return {new for new, olds in supersedes.items() if new in readable and olds}


def versions_direct_only(supersedes, readable):
    return {old for new, olds in supersedes.items() if new in readable for old in olds} & set(
        readable
    )


def versions_as_list(supersedes, readable):
    return sorted(versions_right(supersedes, readable))


def test_hidden_versions_passes_on_correct_code():
    result = checks.check_hidden_versions(versions_right)
    assert result.passed and "random corpora pass" in result.message


@pytest.mark.parametrize(
    ("fn", "case", "why"),
    [
        (versions_ignore_access, "the reader may not read the newer one", "may read"),
        (versions_unreadable_too, "only readable documents are hidden", "only documents in"),
        (versions_hide_the_newer, "the newer version hides the older", "the other way round"),
        (versions_direct_only, "a chain through a page the reader may not read", "chains"),
        (versions_as_list, "the newer version hides the older", "expected a set"),
    ],
)
def test_hidden_versions_fails_on_wrong_code(fn, case, why):
    result = checks.check_hidden_versions(fn)
    assert not result.passed
    assert result.case == case
    assert why in result.message


def test_hidden_versions_stub_is_not_implemented():
    def stub(supersedes, readable):
        raise NotImplementedError()

    result = checks.check_hidden_versions(stub)
    assert not result.passed and "not implemented" in result.message
