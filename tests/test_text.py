"""Tests for raglab.text: one tokenizer, one stopword list, one markdown reader, one hash."""

from __future__ import annotations

from itertools import pairwise
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import raglab
from raglab.embed import hashing
from raglab.embed.hashing import content_words
from raglab.embed.lsa import _tfidf
from raglab.generate import extractive
from raglab.generate.extractive import text_units
from raglab.ingest.chunking import split_sections
from raglab.ingest.loaders import load_file
from raglab.ingest.stems import content_stems
from raglab.records import Document
from raglab.text import (
    STOPWORDS,
    content_hash,
    fingerprint,
    markdown_lines,
    stable_hash,
    tokenize,
)

# ------------------------------------------------------------------------------ words


def test_tokenize_is_lowercase_word_runs_with_one_letter_words_kept():
    words = ["i", "can", "t", "e", "204", "naïve_café", "5"]
    assert tokenize("I can't: E-204, naïve_Café 5") == words
    assert tokenize("") == [] and tokenize("?!") == []


def test_tokenize_is_public_and_is_what_bm25_uses():
    assert raglab.tokenize is tokenize
    assert raglab.BM25().tokenizer is tokenize


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=60))
def test_lsa_reads_the_same_words(text):
    """LSA's TF-IDF sees exactly `tokenize`'s words (then their pairs), whatever the text."""
    words = tokenize(text)
    assert _tfidf().build_analyzer()(text) == words + [f"{a} {b}" for a, b in pairwise(words)]


# -------------------------------------------------------------------------- stopwords


def test_one_stopword_list():
    assert hashing.STOPWORDS is STOPWORDS is extractive.STOPWORDS


@pytest.mark.parametrize("word", sorted(STOPWORDS))
def test_embedder_and_answerer_drop_the_same_words(word):
    # The two lists used to differ by 29 words ("not", "get", "many", "herself", ...).
    assert content_words(f"{word} refund") == ["refund"]
    assert content_stems(f"{word} refund") == {"refund"}


# ------------------------------------------------------------------ markdown structure

# A code block holding a shorter fence of the same kind, or a fence of the other kind,
# and a "# comment": all code. Only "# Real title" is a heading.
NESTED_FENCES = [("````", "```"), ("~~~", "```"), ("```", "~~~"), ("~~~~", "~~~")]


def _with_code_block(outer: str, inner: str) -> str:
    return (
        f"Intro.\n\n{outer}markdown\n{inner}\n# comment\n{inner}\n{outer}\n\n"
        "After the code.\n\n# Real title\n\nBody.\n"
    )


@pytest.mark.parametrize(("outer", "inner"), NESTED_FENCES)
def test_loader_chunker_and_answerer_agree_on_code_blocks(tmp_path: Path, outer, inner):
    text = _with_code_block(outer, inner)
    assert [line.title for line in markdown_lines(text) if line.kind == "heading"] == ["Real title"]
    # The chunker: one section before the heading, one from it.
    assert [heading for heading, _, _ in split_sections(text)] == ["", "Real title"]
    # The loader: the title is the first heading outside code.
    (tmp_path / "guide.md").write_text(text, encoding="utf-8")
    assert load_file(tmp_path / "guide.md", root=tmp_path).title == "Real title"
    # The answerer: no "comment" heading above the text after the code.
    assert [(u.heading, u.text) for u in text_units(text)] == [
        ("", "Intro."),
        ("", "After the code."),
        ("Real title", "Body."),
    ]


def test_markdown_lines_cover_the_text_with_offsets():
    text = "# A\n\n```py\n# x\n```\ntext"
    lines = list(markdown_lines(text))
    assert [(line.kind, line.text) for line in lines] == [
        ("heading", "# A"),
        ("text", ""),
        ("fence", "```py"),
        ("code", "# x"),
        ("fence", "```"),
        ("text", "text"),
    ]
    assert all(text[line.start : line.start + len(line.text)] == line.text for line in lines)


def test_an_unclosed_fence_runs_to_the_end():
    assert [line.kind for line in markdown_lines("```\n# a\n~~~")] == ["fence", "code", "code"]


@pytest.mark.parametrize(
    ("line", "level", "title"),
    [
        ("# A", 1, "A"),
        ("###### F", 6, "F"),
        ("   ## B ##", 2, "B"),
        ("#", 1, ""),
        ("# C#", 1, "C#"),
        ("#\tTabbed", 1, "Tabbed"),
        ("## Windows\r", 2, "Windows"),
    ],
)
def test_headings(line, level, title):
    [md] = markdown_lines(line)
    assert (md.kind, md.level, md.title) == ("heading", level, title)


@pytest.mark.parametrize("line", ["#hashtag", "####### seven", "    # indented code", "\t# tab"])
def test_not_headings(line):
    assert [md.kind for md in markdown_lines(line)] == ["text"]


def reference_lines(text: str) -> list[tuple[str, int, str]]:
    """(kind, level, title) per line, written out plainly without regexes: the check."""
    out = []
    fence_char, fence_len = "", 0
    for line in text.split("\n"):
        rest = line.lstrip(" ")
        indent = len(line) - len(rest)
        run = len(rest) - len(rest.lstrip(rest[:1])) if rest[:1] in ("`", "~") else 0
        is_fence = indent <= 3 and run >= 3
        if fence_char:
            closes = is_fence and rest[0] == fence_char and run >= fence_len
            fence_char = "" if closes else fence_char
            out.append(("fence" if closes else "code", 0, ""))
            continue
        if is_fence:
            fence_char, fence_len = rest[0], run
            out.append(("fence", 0, ""))
            continue
        hashes = len(rest) - len(rest.lstrip("#"))
        after = rest[hashes:]
        if indent <= 3 and 1 <= hashes <= 6 and (after == "" or after[0] in " \t"):
            title = after.strip(" \t")
            without_closing = title.rstrip("#")
            if without_closing == "" or without_closing[-1] in " \t":
                title = without_closing.strip(" \t")
            out.append(("heading", hashes, title))
        else:
            out.append(("text", 0, ""))
    return out


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet=" \t#`~ab\n", max_size=120))
def test_markdown_lines_agree_with_a_plain_reference(text):
    assert [(md.kind, md.level, md.title) for md in markdown_lines(text)] == reference_lines(text)


# ------------------------------------------------------------------------------ hashes


def test_one_stable_hash():
    assert content_hash("hello") == "a7b6eda801e5347d"  # the same on every machine
    assert stable_hash("hello") == int.from_bytes(bytes.fromhex(content_hash("hello")), "little")
    assert Document("a.md", "hello").hash == content_hash("hello")
    assert fingerprint(["ab", "c"]) != fingerprint(["a", "bc"])
    assert fingerprint([]) != fingerprint([""])
