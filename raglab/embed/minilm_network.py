"""The MiniLM network as a numpy forward pass: token ids in, one unit vector per text out.

`raglab.embed.minilm` finds and checks the weights and wraps this as an embedder; notebook 05
shows the same steps in a dozen plain lines. This version computes the same numbers
(float32 rounding aside) with three habits that make numpy fast:

- **No padding.** The texts of a batch are laid end to end, one row per token. Every step
  but attention treats tokens one by one, so it runs on all rows at once; attention runs
  text by text on that text's own rows. Nothing is spent on padding, and there is no mask
  to forget.
- **Blocks sized for the work.** After attention, BLOCK_ROWS tokens at a time go through
  the rest of the layer (projection, residual, layer norm, feed-forward, residual, layer
  norm) in buffers reused from block to block; GELU's many passes run on GELU_ROWS of
  them at a time, while they sit in the CPU cache.
- **Fewer passes over memory.** 1/√32 is folded into the query weights once; GELU is one
  short formula; layer-norm statistics are matrix-vector products.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from raglab._threads import in_parallel, one_blas_thread_each

# The architecture, from the model's config.json (fixed by raglab.embed.minilm's checksum).
HIDDEN = 384  # numbers per token, and the size of the text's vector
HEADS = 12  # attention heads, each looking at HEAD_DIM numbers
HEAD_DIM = HIDDEN // HEADS
FFN = 1536  # the feed-forward step widens each token to this many numbers
LAYERS = 6
LAYER_NORM_EPS = 1e-12

# Tokens per block after attention. The matrix products want many rows (BLAS runs a
# 128-row product ~30% slower per number than a 1024-row one); GELU's ~20 passes want
# few, so that its array (GELU_ROWS × FFN float32, 768 KB) stays in the CPU's cache.
BLOCK_ROWS = 1024
GELU_ROWS = 128


@dataclass(frozen=True, slots=True)
class Layer:
    """One encoder layer. Linear weights are stored (out, in): apply with `x @ w.T`."""

    qkv_w: np.ndarray  # query (already scaled by 1/√HEAD_DIM), key and value, stacked
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
class Weights:
    word: np.ndarray
    position: np.ndarray
    token_type: np.ndarray
    norm_w: np.ndarray
    norm_b: np.ndarray
    layers: tuple[Layer, ...]


def weights_from_tensors(t: dict[str, np.ndarray]) -> Weights:
    """Name the tensors (no 'bert.' prefix; the pooler is never used), as float32 copies."""

    def get(name: str) -> np.ndarray:
        return np.array(t[name], dtype=np.float32)  # a copy: aligned, writable, owned

    def layer(i: int) -> Layer:
        p = f"encoder.layer.{i}."
        att = p + "attention.self."
        # Scores are q·k / √HEAD_DIM: scaling the query's weights once saves a pass per text.
        scale = np.float32(1.0 / math.sqrt(HEAD_DIM))
        q_w, q_b = get(att + "query.weight") * scale, get(att + "query.bias") * scale
        return Layer(
            qkv_w=np.concatenate([q_w, get(att + "key.weight"), get(att + "value.weight")]),
            qkv_b=np.concatenate([q_b, get(att + "key.bias"), get(att + "value.bias")]),
            attn_out_w=get(p + "attention.output.dense.weight"),
            attn_out_b=get(p + "attention.output.dense.bias"),
            attn_norm_w=get(p + "attention.output.LayerNorm.weight"),
            attn_norm_b=get(p + "attention.output.LayerNorm.bias"),
            ffn_in_w=get(p + "intermediate.dense.weight"),
            ffn_in_b=get(p + "intermediate.dense.bias"),
            ffn_out_w=get(p + "output.dense.weight"),
            ffn_out_b=get(p + "output.dense.bias"),
            ffn_norm_w=get(p + "output.LayerNorm.weight"),
            ffn_norm_b=get(p + "output.LayerNorm.bias"),
        )

    e = "embeddings."
    return Weights(
        word=get(e + "word_embeddings.weight"),
        position=get(e + "position_embeddings.weight"),
        token_type=get(e + "token_type_embeddings.weight"),
        norm_w=get(e + "LayerNorm.weight"),
        norm_b=get(e + "LayerNorm.bias"),
        layers=tuple(layer(i) for i in range(LAYERS)),
    )


# ─── The pieces ────────────────────────────────────────────────────────────────────────────

_MEAN = np.full(HIDDEN, 1.0 / HIDDEN, dtype=np.float32)  # x @ _MEAN: each row's mean


def layer_norm_(x: np.ndarray, weight: np.ndarray, bias: np.ndarray) -> np.ndarray:
    """In place: each row to mean 0 and variance 1, then the learned weight and bias."""
    x -= (x @ _MEAN)[:, None]  # a matrix-vector product: BLAS, not a slow row reduction
    var = np.einsum("ij,ij->i", x, x) / np.float32(HIDDEN)  # no x*x temporary
    x *= (1.0 / np.sqrt(var + np.float32(LAYER_NORM_EPS)))[:, None]
    x *= weight
    x += bias
    return x


# The Handbook of Mathematical Functions, formula 7.1.26: for z >= 0,
# erf(z) = 1 - (a1 t + a2 t² + ... + a5 t⁵) exp(-z²) with t = 1 / (1 + p z), within 1.5e-7.
# numpy has no erf, and GELU's tanh approximation is off by 5e-4: this model was trained
# with the exact erf form.
_ERF_P = 0.3275911
_ERF_A = (0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429)


def gelu_(x: np.ndarray, scratch: np.ndarray | None = None) -> np.ndarray:
    """GELU in place: x · Φ(x), with Φ(x) = (1 + erf(x / √2)) / 2 (float32 throughout).

    Written as max(x, 0) − |x| · (1 − erf(|x| / √2)) / 2, which equals x · Φ(x) for either
    sign of x, and the formula above gives 1 − erf directly. `scratch`, if given, is a
    (4, *x.shape) float32 buffer to reuse instead of allocating four arrays.

    >>> [round(v, 5) for v in gelu_(np.array([-1.0, 0.0, 2.0], dtype=np.float32)).tolist()]
    [-0.15866, 0.0, 1.9545]
    """
    a, t, poly, e = np.empty((4, *x.shape), dtype=np.float32) if scratch is None else scratch
    np.abs(x, out=a)
    np.multiply(a, _ERF_P / math.sqrt(2.0), out=t)  # p·z with z = |x|/√2
    t += 1.0
    np.reciprocal(t, out=t)
    np.multiply(t, _ERF_A[4] / 2, out=poly)  # Horner's rule; the /2 is Φ's factor, folded in
    for coefficient in reversed(_ERF_A[:4]):
        poly += coefficient / 2
        poly *= t
    np.multiply(a, a, out=e)
    e *= -0.5  # exp(-z²) = exp(-x²/2)
    np.exp(e, out=e)
    poly *= e
    poly *= a
    np.maximum(x, 0.0, out=x)
    x -= poly
    return x


def softmax_(scores: np.ndarray) -> np.ndarray:
    """Softmax over the last axis, in place. Subtracting the row max keeps exp() finite."""
    scores -= scores.max(axis=-1, keepdims=True)
    np.exp(scores, out=scores)
    scores /= scores.sum(axis=-1, keepdims=True)
    return scores


def _attention(qkv: np.ndarray) -> np.ndarray:
    """Self-attention of one text over its own tokens: (n, 3·HIDDEN) -> (n, HIDDEN)."""
    n = qkv.shape[0]
    q, k, v = qkv.reshape(n, 3, HEADS, HEAD_DIM).transpose(1, 2, 0, 3)  # 3 × (heads, n, dim)
    scores = q @ k.transpose(0, 2, 1)  # (heads, n, n); the 1/√dim is in q already
    scores -= scores.max(axis=-1, keepdims=True)
    np.exp(scores, out=scores)
    # Dividing by the row sums after multiplying by v touches (n, 32) numbers, not (n, n).
    context: np.ndarray = scores @ v
    context /= scores.sum(axis=-1, keepdims=True)
    return context.transpose(1, 0, 2).reshape(n, HIDDEN)


def _rest_of_layer_(x: np.ndarray, context: np.ndarray, layer: Layer, wide: np.ndarray) -> None:
    """In place on a block of rows: everything after attention. `wide` is scratch space."""
    rows = x.shape[0]
    attended = context @ layer.attn_out_w.T
    attended += layer.attn_out_b
    attended += x  # residual connection
    layer_norm_(attended, layer.attn_norm_w, layer.attn_norm_b)
    hidden = np.matmul(attended, layer.ffn_in_w.T, out=wide[:rows])
    scratch = np.empty((4, GELU_ROWS, FFN), dtype=np.float32)
    for start in range(0, rows, GELU_ROWS):
        part = hidden[start : start + GELU_ROWS]
        part += layer.ffn_in_b
        gelu_(part, scratch[:, : part.shape[0]])
    np.matmul(hidden, layer.ffn_out_w.T, out=x)
    x += layer.ffn_out_b
    x += attended  # residual connection
    layer_norm_(x, layer.ffn_norm_w, layer.ffn_norm_b)


def _encoder_layer_(x: np.ndarray, spans: Sequence[tuple[int, int]], layer: Layer) -> None:
    """One layer, in place on the packed rows `x`; `spans` are each text's (start, end) rows."""
    qkv = x @ layer.qkv_w.T
    qkv += layer.qkv_b
    context = np.empty_like(x)
    for start, end in spans:
        context[start:end] = _attention(qkv[start:end])
    wide = np.empty((BLOCK_ROWS, FFN), dtype=np.float32)
    for start in range(0, x.shape[0], BLOCK_ROWS):
        block = slice(start, start + BLOCK_ROWS)
        _rest_of_layer_(x[block], context[block], layer, wide)


def forward(weights: Weights, rows: Sequence[Sequence[int]]) -> np.ndarray:
    """One unit-length float32 vector per row of token ids ([CLS] … [SEP] included).

    With more than one thread (`raglab._threads`), each thread runs the whole network on
    its share of the texts: texts never look at each other, so the shares are independent,
    and every step runs on every core — not only the big matrix products BLAS would split.
    """
    out = np.empty((len(rows), HIDDEN), dtype=np.float32)

    def one_share(share: range) -> None:
        out[share.start : share.stop] = _forward_on_one_thread(
            weights, rows[share.start : share.stop]
        )

    with one_blas_thread_each():
        in_parallel(one_share, len(rows))
    return out


def _forward_on_one_thread(weights: Weights, rows: Sequence[Sequence[int]]) -> np.ndarray:
    """`forward` for a few texts, on the calling thread."""
    lengths = np.array([len(row) for row in rows])
    ends = np.cumsum(lengths)
    starts = ends - lengths
    ids = np.concatenate([np.asarray(row, dtype=np.int64) for row in rows])
    positions = np.arange(len(ids)) - np.repeat(starts, lengths)  # 0, 1, … within each text
    x = weights.word[ids] + weights.position[positions]
    x += weights.token_type[0]  # every token is "sentence A"; the row is not zero
    layer_norm_(x, weights.norm_w, weights.norm_b)
    spans = list(zip(starts.tolist(), ends.tolist()))
    for layer in weights.layers:
        _encoder_layer_(x, spans, layer)
    pooled: np.ndarray = np.add.reduceat(x, starts, axis=0) / lengths[:, None].astype(np.float32)
    norms = np.linalg.norm(pooled, axis=1, keepdims=True)
    unit: np.ndarray = pooled / np.maximum(norms, 1e-12)
    return unit.astype(np.float32)
