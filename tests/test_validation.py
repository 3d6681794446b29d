"""One check for every scalar a caller passes: the helper, then every public entry point."""

from __future__ import annotations

import math
import re
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import raglab
from raglab.embed.minilm import MiniLMEmbedder
from raglab.validation import check_int, check_number, check_texts

CORPUS = Path(__file__).resolve().parent.parent / "data" / "corpus"

# --- the helper ---------------------------------------------------------------------------


@pytest.mark.parametrize("value", [1, 7, np.int64(3), np.uint8(2)])
def test_check_int_returns_a_plain_int(value):
    result = check_int("k", value, minimum=1)
    assert result == value and type(result) is int


@pytest.mark.parametrize(
    ("value", "error", "message"),
    [
        (0, ValueError, "k must be an integer from 1 to 5 (got k=0)"),
        (6, ValueError, "k must be an integer from 1 to 5 (got k=6)"),
        (2.0, TypeError, "k must be an integer from 1 to 5 (got k=2.0)"),
        (True, TypeError, "k must be an integer from 1 to 5 (got k=True)"),
        ("3", TypeError, "k must be an integer from 1 to 5 (got k='3')"),
        (None, TypeError, "k must be an integer from 1 to 5 (got k=None)"),
    ],
)
def test_check_int_refuses(value, error, message):
    with pytest.raises(error, match=re.escape(message)):
        check_int("k", value, minimum=1, maximum=5)


def test_check_int_without_bounds_checks_the_type_only():
    assert check_int("seed", -4) == -4
    with pytest.raises(TypeError, match=re.escape("seed must be an integer (got seed=0.5)")):
        check_int("seed", 0.5)


@pytest.mark.parametrize("value", [0.25, 1, np.float32(0.5)])
def test_check_number_returns_a_float(value):
    result = check_number("b", value, minimum=0, maximum=1)
    assert result == value and type(result) is float


@pytest.mark.parametrize(
    ("value", "error", "message"),
    [
        (0, ValueError, "timeout must be a finite number > 0 (got timeout=0)"),
        (math.nan, ValueError, "timeout must be a finite number > 0 (got timeout=nan)"),
        (math.inf, ValueError, "timeout must be a finite number > 0 (got timeout=inf)"),
        (True, TypeError, "timeout must be a finite number > 0 (got timeout=True)"),
        ("3", TypeError, "timeout must be a finite number > 0 (got timeout='3')"),
    ],
)
def test_check_number_refuses(value, error, message):
    with pytest.raises(error, match=re.escape(message)):
        check_number("timeout", value, above=0)


def test_check_texts_takes_any_iterable_of_strings():
    assert check_texts("texts", ("a", "b")) == ["a", "b"]
    assert check_texts("texts", (t for t in ["a"])) == ["a"]
    assert check_texts("texts", np.array(["a", "b"])) == ["a", "b"]


@pytest.mark.parametrize(
    ("texts", "message"),
    [
        ("refund policy", "texts must be a list of strings (got texts='refund policy')"),
        (b"refund", "texts must be a list of strings (got texts=b'refund')"),
        (3, "texts must be a list of strings (got texts=3)"),
        (["ok", 7], "texts[1] must be a str (got int: 7)"),
    ],
)
def test_check_texts_refuses(texts, message):
    with pytest.raises(TypeError, match=re.escape(message)):
        check_texts("texts", texts)


# --- every public entry point that takes a scalar -----------------------------------------

_MODEL_DIR = Path(tempfile.gettempdir()) / "raglab-validation-never-read"
_NEVER_CREATED = _MODEL_DIR / "never.db"  # the dim check runs before the file is touched


def _bm25() -> raglab.BM25:
    return raglab.BM25().fit(["the cat sat", "a dog ran"])


def _retriever() -> raglab.Retriever:
    return raglab.Retriever(raglab.MemoryStore(), raglab.HashingEmbedder())


def _generator(**options: Any) -> raglab.OpenAIChatGenerator:
    return raglab.OpenAIChatGenerator("http://localhost:1/v1", "m", **options)


# (entry point, the parameter's name, the rule as the message says it, a call with the value)
INT_ENTRY_POINTS: list[tuple[str, str, str, Callable[[Any], object]]] = [
    ("chunk", "size", "an integer >= 1", lambda v: raglab.chunk("text", size=v, overlap=0)),
    ("chunk", "overlap", "an integer >= 0", lambda v: raglab.chunk("text", size=10, overlap=v)),
    ("Chunker", "size", "an integer >= 1", lambda v: raglab.Chunker(size=v, overlap=0)),
    ("Chunker", "overlap", "an integer >= 0", lambda v: raglab.Chunker(overlap=v)),
    ("top_k", "k", "an integer >= 1", lambda v: raglab.top_k([1.0], [[1.0]], v)),
    ("BM25.search", "k", "an integer >= 1", lambda v: _bm25().search("cat", v)),
    ("HashingEmbedder", "dim", "an integer >= 1", lambda v: raglab.HashingEmbedder(dim=v)),
    ("LSAEmbedder", "dim", "an integer >= 1", lambda v: raglab.LSAEmbedder(dim=v)),
    ("LSAEmbedder", "seed", "an integer", lambda v: raglab.LSAEmbedder(seed=v)),
    (
        "MiniLMEmbedder",
        "batch_size",
        "an integer >= 1",
        lambda v: MiniLMEmbedder(_MODEL_DIR, batch_size=v),
    ),
    (
        "MiniLMEmbedder",
        "max_tokens",
        "an integer from 2 to 512",
        lambda v: MiniLMEmbedder(_MODEL_DIR, max_tokens=v),
    ),
    ("MemoryStore", "dim", "an integer >= 1", lambda v: raglab.MemoryStore(dim=v)),
    (
        "SQLiteStore.create",
        "dim",
        "an integer >= 1",
        lambda v: raglab.SQLiteStore.create(_NEVER_CREATED, dim=v),
    ),
    (
        "MemoryStore.search",
        "k",
        "an integer >= 1",
        lambda v: raglab.MemoryStore(dim=2).search(np.ones(2), raglab.Principal("u"), v),
    ),
    (
        "Retriever.search",
        "k",
        "an integer >= 1",
        lambda v: _retriever().search("q", raglab.Principal("u"), k=v),
    ),
    (
        "reciprocal_rank_fusion",
        "k",
        "an integer >= 1",
        lambda v: raglab.reciprocal_rank_fusion([], v),
    ),
    (
        "reciprocal_rank_fusion",
        "rrf_k",
        "an integer >= 0",
        lambda v: raglab.reciprocal_rank_fusion([], 3, rrf_k=v),
    ),
    ("recall_at_k", "k", "an integer >= 1", lambda v: raglab.recall_at_k(["a"], {"a"}, v)),
    ("hit_rate_at_k", "k", "an integer >= 1", lambda v: raglab.hit_rate_at_k(["a"], {"a"}, v)),
    ("ndcg_at_k", "k", "an integer >= 1", lambda v: raglab.ndcg_at_k(["a"], {"a"}, v)),
    (
        "evaluate",
        "k",
        "an integer >= 1",
        lambda v: raglab.evaluate([], search=None, answer=None, k=v),
    ),  # type: ignore[arg-type]
    (
        "ExtractiveGenerator",
        "max_sentences",
        "an integer >= 1",
        lambda v: raglab.ExtractiveGenerator(max_sentences=v),
    ),
    ("OpenAIChatGenerator", "max_bytes", "an integer >= 1", lambda v: _generator(max_bytes=v)),
    (
        "build_prompt",
        "max_chars",
        "an integer >= 1",
        lambda v: raglab.build_prompt("q?", [], max_chars=v),
    ),
    (
        "load_file",
        "max_bytes",
        "an integer >= 1",
        lambda v: raglab.load_file(CORPUS / "x.md", root=CORPUS, max_bytes=v),
    ),
    (
        "load_folder",
        "max_bytes",
        "an integer >= 1",
        lambda v: raglab.load_folder(CORPUS, max_bytes=v),
    ),
]

NUMBER_ENTRY_POINTS: list[tuple[str, str, str, Callable[[Any], object]]] = [
    ("BM25", "k1", "a finite number >= 0", lambda v: raglab.BM25(k1=v)),
    ("BM25", "b", "a finite number from 0 to 1", lambda v: raglab.BM25(b=v)),
    (
        "ExtractiveGenerator",
        "min_support",
        "a finite number from 0 to 1",
        lambda v: raglab.ExtractiveGenerator(min_support=v),
    ),
    (
        "OpenAIChatGenerator",
        "timeout",
        "a finite number from 0.001 to 3600",
        lambda v: _generator(timeout=v),
    ),
    (
        "OpenAIChatGenerator",
        "temperature",
        "a finite number from 0 to 2",
        lambda v: _generator(temperature=v),
    ),
]

WRONG_TYPES = [True, "3", None]


def _bad_ints(rule: str) -> list[tuple[object, type[Exception]]]:
    """Values that break `rule`: out of its bounds (ValueError), of a wrong type (TypeError)."""
    low = re.search(r"(?:>=|from) (\d+)", rule)
    high = re.search(r"to (\d+)", rule)
    out_of_range = [int(low[1]) - 1] if low else []
    out_of_range += [int(high[1]) + 1] if high else []
    out_of_range += [v for v in (0, -1) if low and v < int(low[1]) and v not in out_of_range]
    return [(v, ValueError) for v in out_of_range] + [(v, TypeError) for v in [1.5, *WRONG_TYPES]]


def _bad_numbers(rule: str) -> list[tuple[object, type[Exception]]]:
    low = re.search(r"(?:>=|>|from) (\d+)", rule)
    high = re.search(r"to (\d+)", rule)
    out_of_range: list[object] = [math.nan, math.inf, -1.5]
    out_of_range += [int(low[1])] if low and "> " in rule and ">=" not in rule else []
    out_of_range += [int(high[1]) + 0.5] if high else []
    return [(v, ValueError) for v in out_of_range] + [(v, TypeError) for v in WRONG_TYPES]


# dim=None is allowed there: the first vectors added set the store's dim.
NONE_ALLOWED = {("MemoryStore", "dim"), ("SQLiteStore.create", "dim")}

CASES = [
    pytest.param(call, name, rule, value, error, id=f"{where}({name}={value!r})")
    for bad_values, entry_points in [
        (_bad_ints, INT_ENTRY_POINTS),
        (_bad_numbers, NUMBER_ENTRY_POINTS),
    ]
    for where, name, rule, call in entry_points
    for value, error in bad_values(rule)
    if not (value is None and (where, name) in NONE_ALLOWED)
]


@pytest.mark.parametrize(("call", "name", "rule", "value", "error"), CASES)
def test_every_entry_point_refuses_a_bad_scalar_in_one_shape(call, name, rule, value, error):
    message = f"{name} must be {rule} (got {name}={value!r})"
    with pytest.raises(error, match=f"^{re.escape(message)}$"):
        call(value)
    assert not _NEVER_CREATED.exists()


@pytest.mark.parametrize(
    "embed",
    [
        pytest.param(lambda t: raglab.HashingEmbedder().embed(t), id="HashingEmbedder.embed"),
        pytest.param(lambda t: raglab.LSAEmbedder().embed(t), id="LSAEmbedder.embed"),
        pytest.param(lambda t: raglab.LSAEmbedder().fit(t), id="LSAEmbedder.fit"),
        pytest.param(lambda t: raglab.BM25().fit(t), id="BM25.fit"),
    ],
)
def test_every_text_entry_point_refuses_one_string(embed):
    message = "texts must be a list of strings (got texts='refund policy')"
    with pytest.raises(TypeError, match=f"^{re.escape(message)}$"):
        embed("refund policy")
    with pytest.raises(TypeError, match=re.escape("texts[1] must be a str (got int: 7)")):
        embed(["ok", 7])
