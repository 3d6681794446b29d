"""The generator protocol and the abstention rule every generator shares."""

import pytest

from raglab.generate.extractive import ExtractiveGenerator
from raglab.generate.generation import ABSTENTION, Generator, is_abstention
from raglab.generate.openai_http import OpenAIChatGenerator

# --- abstention ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        ABSTENTION,
        "I can\u2019t answer that from the provided sources.",
        "i cannot answer that from the provided sources",
        '  "I can\'t answer that from the provided sources."  ',
        "I can't answer that from the provided sources. The sources cover leave only.",
    ],
)
def test_is_abstention_accepts_cosmetic_variants(text):
    assert is_abstention(text)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "Leave is 25 days [1].",
        "I can't answer that from the provided sources alone, but [1] says 25 days.",
        "Unfortunately I can't answer that from the provided sources.",
    ],
)
def test_is_abstention_rejects_answers(text):
    assert not is_abstention(text)


def test_both_generators_satisfy_the_protocol():
    assert isinstance(ExtractiveGenerator(), Generator)
    assert isinstance(OpenAIChatGenerator("http://127.0.0.1:1/v1", "m"), Generator)


class Says:
    """A generator that always answers `text`, whatever the prompt."""

    def __init__(self, text: str) -> None:
        self.text = text

    def generate(self, prompt) -> str:
        return self.text


@pytest.mark.parametrize("text", ["", "   ", "Leave is 25 days."])
def test_an_empty_or_uncited_answer_from_any_generator_is_not_verified(corpus_index, text):
    from raglab.pipeline import ask
    from raglab.records import Principal

    answer = ask(
        "How many days of leave?", corpus_index, Principal("u", "acme"), generator=Says(text)
    )
    assert not answer.verified and not answer.abstained
