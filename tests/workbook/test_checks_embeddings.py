"""Notebook 05's checks pass on the reference and fail, naming the case, on plausible wrong code."""

from __future__ import annotations

import hashlib
import math
import re
import zlib

import numpy as np
import pytest

from raglab.retrieve.vectors import cosine as reference_cosine
from raglab.workbook import checks
from raglab.workbook.checks.core import NOT_IMPLEMENTED
from raglab.workbook.checks.embeddings import reference_hash_embed

# --- cosine ---------------------------------------------------------------------------------

pytestmark = pytest.mark.usefixtures("references_reachable")


def cosine_stub(a, b):
    raise NotImplementedError()


def _lengths_ok(a, b):
    if len(a) == 0 or len(b) == 0 or len(a) != len(b):
        raise ValueError(f"lengths {len(a)} and {len(b)}")


def cosine_naive(a, b):
    """No zero rule: 0 / 0 is NaN."""
    _lengths_ok(a, b)
    a, b = np.asarray(a, float), np.asarray(b, float)
    with np.errstate(invalid="ignore", divide="ignore"):
        return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def cosine_naive_clipped(a, b):
    return float(np.clip(cosine_naive(a, b), -1, 1))  # NaN stays NaN


def cosine_unclipped(a, b):
    _lengths_ok(a, b)
    a, b = np.asarray(a, float), np.asarray(b, float)
    norms = np.linalg.norm(a) * np.linalg.norm(b)
    return 0.0 if norms == 0 else float(a @ b / norms)


def cosine_dot_only(a, b):
    """Forgets to divide by the lengths."""
    _lengths_ok(a, b)
    return float(np.clip(np.dot(a, b), -1, 1))


def cosine_zip(a, b):
    """zip() silently drops the extra numbers of the longer vector."""
    dot = sum(x * y for x, y in zip(a, b))
    na, nb = math.sqrt(sum(x * x for x in a)), math.sqrt(sum(y * y for y in b))
    if na == 0 or nb == 0:
        return 0.0
    return max(-1.0, min(1.0, dot / (na * nb)))


def cosine_vague_error(a, b):
    if len(a) != len(b) or not len(a):
        raise ValueError("bad vectors")
    return reference_cosine(a, b)


def cosine_first_norm_twice(a, b):
    """Divides by |a|² instead of |a||b|: not symmetric (and wrong for unequal lengths)."""
    _lengths_ok(a, b)
    a, b = np.asarray(a, float), np.asarray(b, float)
    na = np.linalg.norm(a)
    return 0.0 if na == 0 or not b.any() else float(np.clip(a @ b / na**2, -1, 1))


# An unclipped cosine fails the first case where this processor's rounding pushes a·b / (|a| |b|)
# past 1: which case that is depends on the BLAS build (a@a and norm(a)**2 round differently),
# so the test accepts either, and asks that the message says what to do.
UNCLIPPED = ("cosine(v, v) is 1", "kept within [-1, 1]")


@pytest.mark.parametrize(
    ("fn", "case"),
    [
        (cosine_stub, "not implemented"),
        (cosine_naive, UNCLIPPED),
        (cosine_naive_clipped, "zero vector"),
        (cosine_unclipped, UNCLIPPED),
        (cosine_dot_only, "45 degrees"),
        (cosine_zip, "unequal lengths"),
        (cosine_vague_error, "unequal lengths"),
        (cosine_first_norm_twice, "same direction"),
        ("not a function", "callable"),
    ],
)
def test_cosine_check_fails_on_wrong_code(fn, case, capsys):
    result = checks.check_cosine(fn)
    assert not result.passed
    assert result.case in case if isinstance(case, tuple) else result.case == case
    out = capsys.readouterr().out
    assert out.startswith("❌ cosine")
    if isinstance(case, tuple):
        assert "clip it" in out
    if case == "not implemented":
        assert NOT_IMPLEMENTED in out


def test_cosine_check_reports_the_missing_length_in_the_message(capsys):
    checks.check_cosine(cosine_vague_error)
    out = capsys.readouterr().out
    assert "expected: ValueError naming 3 and 2" in out
    assert "why:      the message should name both lengths (3, 2)" in out


def test_cosine_check_catches_asymmetry():
    def lopsided(a, b):
        value = reference_cosine(a, b)
        return value if list(a) <= list(b) else value * 0.5  # wrong when swapped

    result = checks.check_cosine(lopsided)
    assert not result.passed and "cosine(b, a)" in result.message


def test_cosine_check_passes_on_the_reference(capsys):
    assert checks.check_cosine(reference_cosine).passed
    assert capsys.readouterr().out.startswith("✅ cosine: all ")


def test_cosine_check_accepts_a_numpy_float_result():
    assert checks.check_cosine(lambda a, b: np.float32(reference_cosine(a, b))).passed


# --- hash_embed -------------------------------------------------------------------------------

WORD = re.compile(r"\w+")


def _signed_buckets(words, dim, bucket_of):
    if dim < 1:
        raise ValueError(f"dim={dim}")
    v = np.zeros(dim)
    for w in words:
        bucket, sign = bucket_of(w, dim)
        v[bucket] += sign
    n = np.linalg.norm(v)
    return v / n if n else v


def _blake(word):
    return int.from_bytes(hashlib.blake2b(word.encode(), digest_size=8).digest(), "little")


def embed_builtin_hash(text, dim=64):
    """Python's hash(): salted per process, so the buckets differ from the recipe's."""
    return _signed_buckets(
        WORD.findall(text.lower()), dim, lambda w, d: (hash(w) % d, 1.0 if hash(w) >= 0 else -1.0)
    )


def embed_crc32(text, dim=64):
    """Stable, but not the recipe's hash."""
    return _signed_buckets(
        WORD.findall(text.lower()), dim, lambda w, d: (zlib.crc32(w.encode()) % d, 1.0)
    )


def embed_unsigned(text, dim=64):
    return _signed_buckets(WORD.findall(text.lower()), dim, lambda w, d: (_blake(w) % d, 1.0))


def embed_not_normalised(text, dim=64):
    v = reference_hash_embed(text, dim) * 3.0
    return v


def embed_nan_for_empty(text, dim=64):
    v = np.zeros(dim)
    for w in WORD.findall(text.lower()):
        h = _blake(w)
        v[h % dim] += 1.0 if h >> 63 == 0 else -1.0
    with np.errstate(invalid="ignore"):
        return v / np.linalg.norm(v)


def _recipe_bucket(word, dim):
    h = _blake(word)
    return h % dim, 1.0 if h >> 63 == 0 else -1.0


def embed_no_lowercase(text, dim=64):
    words = WORD.findall(text)
    return _signed_buckets(words, dim, _recipe_bucket)


def embed_split_on_spaces(text, dim=64):
    words = text.lower().split()
    return _signed_buckets(words, dim, _recipe_bucket)


def embed_set_of_words(text, dim=64):
    words = sorted(set(WORD.findall(text.lower())))
    return _signed_buckets(words, dim, _recipe_bucket)


def embed_no_dim_check(text, dim=64):
    return reference_hash_embed(text, max(dim, 1))


@pytest.mark.parametrize(
    ("fn", "case"),
    [
        (embed_builtin_hash, None),  # which case fails first depends on the process's salt
        (embed_crc32, "one word"),
        (embed_unsigned, "one word"),
        (embed_not_normalised, "one word"),
        (embed_nan_for_empty, "empty text"),
        (embed_no_lowercase, "lowercase first"),
        (embed_split_on_spaces, "words, not punctuation"),
        (embed_set_of_words, "a repeated word counts twice"),
        (embed_no_dim_check, "dim 0"),
    ],
)
def test_hash_embed_check_fails_on_wrong_code(fn, case):
    result = checks.check_hash_embed(fn)
    assert not result.passed and result.case == (case or result.case), result.message


def test_hash_embed_check_passes_on_the_reference_and_on_lists(capsys):
    assert checks.check_hash_embed(reference_hash_embed).passed
    assert checks.check_hash_embed(lambda t, dim=64: reference_hash_embed(t, dim).tolist()).passed
    assert capsys.readouterr().out.startswith("✅ hash_embed: all ")


def test_reference_hash_embed_is_the_documented_recipe():
    v = reference_hash_embed("Refund refund", dim=8)
    h = _blake("refund")
    expected = np.zeros(8)
    expected[h % 8] = 1.0 if h >> 63 == 0 else -1.0
    np.testing.assert_array_equal(v, expected)
    assert not reference_hash_embed("?!", dim=4).any()
    with pytest.raises(ValueError, match="dim must be an integer >= 1"):
        reference_hash_embed("x", dim=0)


def test_notebook_05_checks_are_registered():
    assert checks.CHECKS["cosine"] is checks.check_cosine
    assert checks.CHECKS["hash_embed"] is checks.check_hash_embed
