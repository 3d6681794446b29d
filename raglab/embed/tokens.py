"""Counting tokens: the unit a model's context window is measured in.

A model reads tokens, not characters, and every model family cuts text its own way:
BERT-style encoders (MiniLM) use WordPiece, GPT models byte-level BPE (tiktoken's
cl100k / o200k), Llama and Mistral SentencePiece vocabularies of their own. The same
sentence is a different number of tokens for each, so a token budget is exact only for
the tokenizer of the model that reads the prompt; for any other model it is an estimate.

raglab ships one real tokenizer, MiniLM's WordPiece (`raglab.embed.wordpiece`). Its vocabulary
comes with the MiniLM weights, which `make lab` and `make test` install; where they are
missing, `wordpiece_counter` raises `ModelNotFound` with the install command, and
`approx_tokens` (about four characters a token, for English) is there to choose instead,
by name — never as a silent fallback.

>>> approx_tokens("Staff get 25 days of annual leave.")
9
"""

from __future__ import annotations

import hashlib
import math
import sys
from collections.abc import Callable
from pathlib import Path

from raglab.embed.wordpiece import WordPieceTokenizer

TokenCount = Callable[[str], int]
"""A token counter: text -> how many tokens a model's tokenizer makes of it."""

CHARS_PER_TOKEN = 4
"""English prose averages about four characters a token under GPT-style BPE vocabularies."""

_TOKENIZERS: dict[Path, WordPieceTokenizer] = {}  # loaded once per vocabulary folder


def approx_tokens(text: str) -> int:
    """An estimate with no tokenizer: one token per `CHARS_PER_TOKEN` characters, rounded up."""
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def wordpiece_tokenizer(model_dir: str | Path | None = None) -> WordPieceTokenizer:
    """MiniLM's WordPiece tokenizer, its vocabulary read from the installed weights' folder.

    Only `vocab.txt` (232 KB) is read, never the 90 MB of weights. Raises
    `raglab.embed.minilm.ModelNotFound` (with the install command) when the weights are not
    installed, and `ModelChecksumError` when the vocabulary is another model's.
    """
    from raglab.embed import minilm  # numpy only; the weights themselves are not loaded

    folder = minilm.find_model_dir(model_dir)
    if folder not in _TOKENIZERS:
        path = folder / minilm.VOCAB_FILE
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        if digest != minilm.VOCAB_SHA256:
            raise minilm.ModelChecksumError(
                f"{path} has sha256 {digest[:12]}… but MiniLM's vocabulary has "
                f"{minilm.VOCAB_SHA256[:12]}…: reinstall with {minilm.INSTALL_COMMAND}"
            )
        _TOKENIZERS[folder] = WordPieceTokenizer.from_file(path)
    return _TOKENIZERS[folder]


def wordpiece_counter(model_dir: str | Path | None = None) -> TokenCount:
    """A counter of MiniLM's word pieces (no [CLS] / [SEP]: a prompt's text adds none).

    >>> count = wordpiece_counter()  # doctest: +SKIP
    >>> count("Unaffable employees!")  # doctest: +SKIP
    5
    """
    tokenizer = wordpiece_tokenizer(model_dir)

    def count(text: str) -> int:
        # encode() frames the pieces with [CLS] ... [SEP] and cuts at max_tokens: no cut here.
        return len(tokenizer.encode(text, max_tokens=sys.maxsize)) - 2

    return count
