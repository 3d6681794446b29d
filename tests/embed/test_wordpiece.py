"""raglab.embed.wordpiece: BERT's uncased WordPiece tokenizer, by hand on a tiny vocabulary.

Agreement with Hugging Face's ids on real text is tested with the MiniLM weights, in
tests/embed/test_minilm.py.
"""

from __future__ import annotations

import doctest

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from raglab.embed import wordpiece
from raglab.embed.wordpiece import WordPieceTokenizer

TINY_VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "un", "##aff", "##able", "!", ",",
              "cafe", "東", "京", "$", "5", "a", "##b"]  # fmt: skip


@pytest.fixture
def tiny() -> WordPieceTokenizer:
    return WordPieceTokenizer({token: i for i, token in enumerate(TINY_VOCAB)})


def ids(*tokens: str) -> list[int]:
    return [TINY_VOCAB.index(t) for t in tokens]


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        ("", []),
        ("Unaffable!", ["un", "##aff", "##able", "!"]),
        ("  CAFÉ,café ", ["cafe", ",", "cafe"]),  # lowercase, accents stripped, comma split
        ("東京", ["東", "京"]),  # each CJK ideograph is a word
        ("$5", ["$", "5"]),  # ASCII symbols count as punctuation
        ("un\u200baff", ["un", "##aff"]),  # the zero-width space is dropped: one word
        ("un\taff\nable", ["un", "[UNK]", "[UNK]"]),  # pieces after '##' only inside a word
        ("abbb", ["a", "##b", "##b", "##b"]),
        ("abc", ["[UNK]"]),  # one piece missing: the whole word is unknown
        ("a" + "b" * 100, ["[UNK]"]),  # over 100 characters: unknown without trying
        ("[CLS]un[cls]", ["[CLS]", "un", "[UNK]", "[UNK]", "[UNK]"]),  # "[cls]" is 3 words
    ],
)
def test_tokenizer_by_hand(tiny: WordPieceTokenizer, text: str, tokens: list[str]):
    assert tiny.encode(text) == ids("[CLS]", *tokens, "[SEP]")


def test_tokenizer_truncates_keeping_cls_and_sep(tiny: WordPieceTokenizer):
    assert tiny.encode("un un un un", max_tokens=4) == ids("[CLS]", "un", "un", "[SEP]")


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=60), st.integers(min_value=2, max_value=20))
def test_tokenizer_always_frames_and_bounds(text: str, max_tokens: int):
    tokenizer = WordPieceTokenizer({token: i for i, token in enumerate(TINY_VOCAB)})
    out = tokenizer.encode(text, max_tokens)
    assert out[0] == 2 and out[-1] == 3 and len(out) <= max_tokens
    assert all(0 <= i < len(TINY_VOCAB) for i in out)


ASCII = st.text(st.characters(max_codepoint=127), max_size=80)


@settings(max_examples=300, deadline=None)
@given(ASCII)
def test_ascii_fast_path_equals_the_general_rules(text: str):
    tokenizer = WordPieceTokenizer({token: i for i, token in enumerate(TINY_VOCAB)})
    general = "".join(
        " " if wordpiece._char_class(c) == "space" else c
        for c in text
        if wordpiece._char_class(c) != "drop"
    ).lower()
    assert tokenizer.normalise(text) == general
    assert tokenizer.words(text) == tokenizer._split_words(general)


def test_docstring_examples_run():
    result = doctest.testmod(wordpiece)
    assert result.failed == 0 and result.attempted >= 2
