"""A question cannot exhaust the machine: it is bounded, and what it costs grows with its length.

A question of many distinct words once cost the offline answerer time and memory in the
square of its length (every pair of its words was listed: 24 KB took 22 s and 1.1 GB). Now
there is a documented maximum (`MAX_QUESTION_CHARS`, checked by `check_question`), and every
feature of the answerer costs time and memory in proportion to the question's length.
"""

from __future__ import annotations

import random
import tracemalloc
from dataclasses import replace
from itertools import combinations

import pytest
from hypothesis import given
from hypothesis import strategies as st

import raglab
from raglab import Chunk, Hit, Principal
from raglab.generate.abstention import together
from raglab.generate.evidence import Evidence
from raglab.generate.extractive import ExtractiveGenerator
from raglab.generate.prompting import MAX_QUESTION_CHARS, build_prompt, check_question
from raglab.ingest.stems import content_stems

LEAVE = "Every full-time employee receives 25 working days of annual leave per calendar year."


def random_words(count: int, seed: int = 17) -> str:
    """`count` distinct made-up words: every one a new stem for the answerer."""
    rng = random.Random(seed)
    words = {"".join(rng.choices("bcdfghjklmnpqrstvwxz", k=8)) for _ in range(2 * count)}
    return " ".join(sorted(words)[:count])


# --- the bound ---------------------------------------------------------------------------------


def test_a_question_within_the_bound_is_returned_as_is():
    question = "How many days of annual leave do I get? " * 10
    assert check_question(question) is question
    assert check_question("x" * MAX_QUESTION_CHARS) == "x" * MAX_QUESTION_CHARS


def test_a_question_beyond_the_bound_gets_a_clear_error():
    with pytest.raises(
        ValueError,
        match=r"^question is 125,000 characters long; raglab answers questions of at most "
        r"2,000 \(MAX_QUESTION_CHARS\): ask about one thing at a time$",
    ):
        check_question("a" * 125_000)


@pytest.mark.parametrize("blank", ["", "   ", "\n\t"])
def test_a_blank_question_is_refused(blank):
    with pytest.raises(ValueError, match="question must not be empty"):
        check_question(blank)


def test_a_question_that_is_no_string_is_refused():
    with pytest.raises(TypeError, match="question must be a str"):
        check_question(b"How many days?")


def test_build_prompt_refuses_a_question_beyond_the_bound():
    hit = Hit(Chunk("leave.md", 0, LEAVE, 0, len(LEAVE)), 1.0)
    with pytest.raises(ValueError, match=r"MAX_QUESTION_CHARS"):
        build_prompt("leave " * 1000, [hit])


@pytest.fixture(scope="module")
def leave_index(tmp_path_factory):
    folder = tmp_path_factory.mktemp("corpus")
    (folder / "leave.md").write_text(f"# Leave\n\n{LEAVE}\n", encoding="utf-8")
    return raglab.Index.from_folder(folder)


def test_raglab_ask_refuses_a_question_beyond_the_bound(leave_index):
    question = "How many days of leave " + random_words(400)
    assert len(question) > MAX_QUESTION_CHARS
    with pytest.raises(ValueError, match=r"MAX_QUESTION_CHARS"):
        raglab.ask(question, leave_index, Principal("u", "default"))


def test_raglab_ask_refuses_a_long_question_before_any_retrieval(leave_index, monkeypatch):
    def no_search(*args, **kwargs):
        raise AssertionError("retrieval ran for a question beyond the bound")

    monkeypatch.setattr(type(leave_index), "search", no_search)
    with pytest.raises(ValueError, match=r"MAX_QUESTION_CHARS"):
        raglab.ask("leave " * 1000, leave_index, Principal("u", "default"))


# --- what a long question costs ------------------------------------------------------------------


def peak_bytes(work) -> int:
    tracemalloc.start()
    try:
        work()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_the_answerer_costs_memory_in_proportion_to_the_question():
    """1,500 distinct words: listing their pairs took over 200 MB; the features now take a
    few megabytes, whatever the words. (The prompt is built with a short question, then
    given the long one: the bound would refuse it, and the answerer must not rely on that.)"""
    hit = Hit(Chunk("leave.md", 0, LEAVE, 0, len(LEAVE)), 1.0)
    prompt = build_prompt("How many days of annual leave?", [hit])
    answerer = ExtractiveGenerator()
    long_question = "How many days of annual leave " + random_words(1500)
    peak = peak_bytes(lambda: answerer.decide(replace(prompt, question=long_question)))
    assert peak < 30 * 2**20


def reference_together(question: str, chosen: list[Evidence]) -> float:
    """The feature as first written: every pair of the question's stems, listed."""
    wanted = sorted(content_stems(question))
    if not wanted:
        return 0.0
    pairs = [set(p) for p in combinations(wanted, 2)] or [set(wanted)]
    return sum(any(p <= e.stems for e in chosen) for p in pairs) / len(pairs)


WORDS = ["leave", "days", "annual", "parking", "bicycle", "cost", "office", "berlin", "vpn"]


@given(
    st.lists(st.sampled_from(WORDS), max_size=8),
    st.lists(st.lists(st.sampled_from(WORDS), max_size=6), max_size=4),
)
def test_together_counts_the_pairs_it_no_longer_lists(question_words, sentences):
    question = " ".join(question_words)
    chosen = [
        Evidence(1, i, " ".join(s), content_stems(" ".join(s))) for i, s in enumerate(sentences)
    ]
    assert together(question, chosen) == reference_together(question, chosen)
