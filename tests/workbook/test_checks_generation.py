"""Notebook 07's checks pass on the reference and fail, naming the case, on plausible wrong code."""

from __future__ import annotations

import html
import itertools
import math
import re
import uuid

import numpy as np
import pytest

import raglab.text as raglab_text
from raglab.generate.citations import parse_citations
from raglab.generate.prompting import fold
from raglab.records import content_hash
from raglab.workbook import checks
from raglab.workbook.checks.generation import (
    layout,
    reference_decide,
    reference_delimit,
    reference_markers,
)

pytestmark = pytest.mark.usefixtures("references_reachable")


def stub(*args):
    raise NotImplementedError()


# --- delimit ----------------------------------------------------------------------------------


def checked_code(question, texts, candidates):
    """The first candidate found in no text, as written or folded."""
    seen = [form for t in [question, *texts] for form in (t.casefold(), fold(t))]
    return next(c for c in candidates if not any(c in form for form in seen))


def delimit_own_hash(question, texts):
    """A learner's correct version: its own hash, checked against the folded texts."""
    candidates = (content_hash("|".join([str(n), question, *texts])) for n in itertools.count())
    return layout(question, texts, checked_code(question, texts, candidates))


def delimit_fixed_tag(question, texts):
    """The old way: plain <source> tags, so a document can close its block."""
    blocks = [f'<source id="{n}">\n{t}\n</source>' for n, t in enumerate(texts, 1)]
    return "\n\n".join([*blocks, f"Question: {question}"])


def delimit_escaped(question, texts):
    """A code, but the texts escaped: the model no longer reads the document as written."""
    return layout(
        question, [html.escape(t) for t in texts], content_hash(question + "".join(texts))
    )


def delimit_constant_code(question, texts):
    return layout(question, texts, "5eed5eed")


def delimit_random_code(question, texts):
    return layout(question, texts, uuid.uuid4().hex)


def delimit_unfolded(question, texts):
    """Checks the code against the texts as written only, over candidates a document can
    learn (they do not depend on the content): a full-width copy of the code gets through."""
    candidates = (content_hash(str(n)) for n in itertools.count())
    seen = [t.casefold() for t in [question, *texts]]
    return layout(question, texts, next(c for c in candidates if not any(c in s for s in seen)))


def delimit_question_first(question, texts):
    code = content_hash(question + "".join(texts))
    message = layout(question, texts, code)
    return f"Question: {question}\n\n" + message[: -len(f"\n\nQuestion: {question}")]


def delimit_from_zero(question, texts):
    code = content_hash(question + "".join(texts))
    return layout(question, texts, code).replace(' id="1">', ' id="0">', 1)


def delimit_short_code(question, texts):
    return layout(question, texts, content_hash(question + "".join(texts))[:4])


def test_delimit_passes_on_the_reference_and_on_another_correct_version():
    from raglab.workbook.checks import generation

    assert checks.check_delimit(reference_delimit).passed
    assert checks.check_delimit(delimit_own_hash).passed
    # The planted candidate is gone afterwards, from the check's own module too.
    assert generation.content_hash is raglab_text.content_hash is content_hash


@pytest.mark.parametrize(
    ("wrong", "case", "why"),
    [
        (stub, "not implemented", None),
        (delimit_fixed_tag, "one source", "<source-CODE"),
        (delimit_escaped, "one source", "unchanged"),
        (delimit_constant_code, "one source", "quotes </source-5eed5eed> as written"),
        (delimit_random_code, "one source", "must not be random"),
        (delimit_unfolded, "one source", "in full-width letters"),
        (delimit_question_first, "one source", "first tag"),
        (delimit_from_zero, "one source", "first tag"),
        (delimit_short_code, "one source", "8 or more"),
    ],
)
def test_delimit_fails_on_plausible_wrong_code(wrong, case, why, capsys):
    result = checks.check_delimit(wrong)
    assert not result.passed and result.case == case
    if why:
        assert why in capsys.readouterr().out


def delimit_unchecked(question, texts):
    """The hint's hash of everything, never checked against the texts: a document cannot name
    it in advance, but nothing stops a text that happens to hold it."""
    return layout(question, texts, content_hash("\x00".join([question, *texts])))


def delimit_checked_as_written(question, texts):
    """Checks its candidates against the texts as written only, not folded."""
    seen = [t.casefold() for t in [question, *texts]]
    for n in itertools.count():
        code = content_hash("\x00".join([str(n), question, *texts]))
        if not any(code in form for form in seen):
            return layout(question, texts, code)
    raise AssertionError("unreachable")


@pytest.mark.parametrize(
    ("wrong", "how"),
    [(delimit_unchecked, "as written"), (delimit_checked_as_written, "in full-width letters")],
)
def test_delimit_hands_a_candidate_a_text_holds_and_quotes_the_learners_code(wrong, how, capsys):
    from raglab.workbook.checks.generation import PLANTED, PLANTED_CASE

    result = checks.check_delimit(wrong)
    assert not result.passed and result.case == PLANTED_CASE
    out = capsys.readouterr().out
    got = re.search(r"got: +'<source-(\w+)", out)[1]  # the code of the message shown
    assert got == PLANTED
    assert f"your CODE {PLANTED!r} is the first candidate content_hash gave" in out
    assert f"the second text holds it ({how})" in out
    assert raglab_text.content_hash is content_hash  # put back after the check


def test_delimit_with_its_own_hashing_is_judged_by_the_attacks_alone():
    """A function that never calls content_hash cannot be handed a candidate: it passes when
    it checks its own candidates, as delimit_own_hash does with content_hash."""

    def blake(question, texts):
        import hashlib

        candidates = (
            hashlib.blake2b("\x00".join([str(n), question, *texts]).encode()).hexdigest()[:16]
            for n in itertools.count()
        )
        return layout(question, texts, checked_code(question, texts, candidates))

    assert checks.check_delimit(blake).passed


def test_a_random_code_is_quoted_as_the_learners_two_codes(capsys):
    checks.check_delimit(delimit_random_code)
    out = capsys.readouterr().out
    got = re.search(r"got: +'<source-(\w+)", out)[1]
    first, second = re.search(
        r"used CODE '(\w+)', .* gave CODE '(\w+)' the second time", out
    ).groups()
    assert second == got != first


def test_delimit_catches_an_escape_list_on_the_look_alike_attacks(capsys):
    """An escape list removes what it recognises: the document no longer reads as written."""

    def escape_list(question, texts):
        code = content_hash(question + "".join(texts))
        cleaned = [t.replace("</source>", "") for t in texts]
        return layout(question, cleaned, code)

    result = checks.check_delimit(escape_list)
    assert not result.passed and result.case == "a forged closing tag stays inside its block"


def test_the_attacks_look_like_closing_tags_once_folded():
    from raglab.workbook.checks.generation import ATTACKS

    assert "</source>" not in ATTACKS[2] and "</source>" in fold(ATTACKS[2])
    assert "</source>" not in ATTACKS[3] and "</source>" in fold(ATTACKS[3])


# --- verify_markers ------------------------------------------------------------------------------


def markers_set_order(answer, n_sources):
    """Numbers collected into sets: duplicates gone, but the order lost."""
    numbers = [
        int(n) for m in re.findall(r"\[([\d,;\s-]+)\]", answer) for n in re.findall(r"-?\d+", m)
    ]
    return sorted({n for n in numbers if 1 <= n <= n_sources}), sorted(
        {n for n in numbers if not 1 <= n <= n_sources}
    )


def markers_single_only(answer, n_sources):
    """Only [n] with one number: [1, 2] is missed."""
    valid, invalid = [], []
    for n in map(int, re.findall(r"\[(-?\d+)\]", answer)):
        target = valid if 1 <= n <= n_sources else invalid
        if n not in target:
            target.append(n)
    return valid, invalid


def markers_zero_based(answer, n_sources):
    """Sources counted from 0: [0] passes and [n_sources] is refused."""
    valid, invalid = reference_markers(answer, n_sources + 1)
    shifted = [n for n in valid if n < n_sources] + [n for n in invalid if n == 0]
    return [n for n in dict.fromkeys(shifted) if n >= 0], [n for n in invalid if n != 0]


def markers_no_bounds(answer, n_sources):
    """Every marker counted as valid: a fabricated [7] passes."""
    return list(dict.fromkeys(parse_citations(answer))), []


def markers_with_duplicates(answer, n_sources):
    numbers = [int(n) for m in re.findall(r"\[\s*(-?\d+(?:\s*[,;]\s*-?\d+)*)\s*\]", answer)
               for n in re.findall(r"-?\d+", m)]  # fmt: skip
    return [n for n in numbers if 1 <= n <= n_sources], [
        n for n in numbers if not 1 <= n <= n_sources
    ]


def markers_with_ranges(answer, n_sources):
    """[1-3] read as the markers 1, -3 (or a range): not a marker in the engine's forms."""
    numbers = [int(n) for m in re.findall(r"\[([^\]]*)\]", answer) for n in re.findall(r"-?\d+", m)]
    unique = list(dict.fromkeys(numbers))
    return [n for n in unique if 1 <= n <= n_sources], [
        n for n in unique if not 1 <= n <= n_sources
    ]


def test_verify_markers_passes_on_the_reference():
    assert checks.check_verify_markers(reference_markers).passed


@pytest.mark.parametrize(
    ("wrong", "case"),
    [
        (stub, "not implemented"),
        (markers_set_order, "duplicates once, first order kept"),
        (markers_single_only, "a list in one pair of brackets"),
        (markers_zero_based, "adjacent markers"),
        (markers_no_bounds, "beyond the sources"),
        (markers_with_duplicates, "duplicates once, first order kept"),
        (markers_with_ranges, "not markers"),
    ],
)
def test_verify_markers_fails_on_plausible_wrong_code(wrong, case):
    result = checks.check_verify_markers(wrong)
    assert not result.passed and result.case == case


# --- decide ---------------------------------------------------------------------------------------


def z_of(features, weights, intercept):
    return intercept + sum(w * x for w, x in zip(features, weights))


def decide_right(features, weights, intercept, threshold):
    if len(features) != len(weights):
        raise ValueError("lengths")
    p = 1 / (1 + math.exp(-z_of(features, weights, intercept)))
    return p, p >= threshold


def decide_numpy(features, weights, intercept, threshold):
    """Another correct version: numpy throughout (a numpy bool is a fine answer)."""
    f, w = np.asarray(features, float), np.asarray(weights, float)
    if f.shape != w.shape:
        raise ValueError("lengths")
    p = 1 / (1 + np.exp(-(intercept + f @ w)))
    return float(p), p >= threshold


def decide_strict(features, weights, intercept, threshold):
    p, _ = decide_right(features, weights, intercept, threshold)
    return p, p > threshold


def decide_on_z(features, weights, intercept, threshold):
    """No sigmoid: the raw score compared with a probability threshold."""
    z = z_of(features, weights, intercept)
    return z, z >= threshold


def decide_no_intercept(features, weights, intercept, threshold):
    return decide_right(features, weights, 0.0, threshold)


def decide_sign_flipped(features, weights, intercept, threshold):
    p, _ = decide_right(features, weights, intercept, threshold)
    return 1 - p, 1 - p >= threshold


def decide_zip_silently(features, weights, intercept, threshold):
    """zip() stops at the shorter list: a missing weight goes unnoticed."""
    p = 1 / (1 + math.exp(-z_of(features, weights, intercept)))
    return p, p >= threshold


def decide_declines_everything(features, weights, intercept, threshold):
    p, _ = decide_right(features, weights, intercept, threshold)
    return p, False


def test_decide_passes_on_the_reference_and_on_other_correct_versions():
    assert checks.check_decide(reference_decide).passed
    assert checks.check_decide(decide_right).passed
    assert checks.check_decide(decide_numpy).passed


@pytest.mark.parametrize(
    ("wrong", "case", "why"),
    [
        (stub, "not implemented", None),
        (decide_strict, "equal to the threshold answers", ">=, not >"),
        (decide_on_z, "no evidence either way: one half", "that is z itself"),
        (decide_no_intercept, "the intercept counts", "should be"),
        (decide_sign_flipped, "the intercept counts", "should be"),
        (decide_zip_silently, "features and weights of different lengths", None),
        (decide_declines_everything, "no evidence either way: one half", "the answer is True"),
    ],
)
def test_decide_fails_on_plausible_wrong_code(wrong, case, why, capsys):
    result = checks.check_decide(wrong)
    assert not result.passed and result.case == case
    if why:
        assert why in capsys.readouterr().out


def test_decide_is_judged_on_every_question_of_both_corpora():
    from raglab.samples import sample_questions, transfer_questions
    from raglab.workbook.checks.generation import corpus_decide_cases

    names = [case.name for case in corpus_decide_cases()]
    expected = {"sample": sample_questions(), "second corpus": transfer_questions()}
    for corpus, questions in expected.items():
        wanted = sum(1 for line in questions.read_text("utf-8").splitlines() if line.strip())
        assert sum(name.startswith(f"{corpus},") for name in names) == wanted


def test_decide_fails_when_it_is_wrong_on_the_second_corpus_alone(capsys):
    from raglab.workbook.checks.generation import corpus_decide_cases

    target = next(c for c in corpus_decide_cases() if c.name.startswith("second corpus,"))

    def wrong_there(features, weights, intercept, threshold):
        p, answer = decide_right(features, weights, intercept, threshold)
        return (p, not answer) if list(features) == target.args[0] else (p, answer)

    result = checks.check_decide(wrong_there)
    assert not result.passed and result.case.startswith("second corpus,")
