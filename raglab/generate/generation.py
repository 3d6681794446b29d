"""Generators: from a prompt to an answer with `[n]` citations, or an explicit abstention.

One protocol, one verb: `Generator.generate(prompt) -> str`. Two implementations, each in
its own module:

- `raglab.generate.extractive.ExtractiveGenerator` (the offline default): no model at all; it
  quotes the source sentences that best support the question and cites each one.
- `raglab.generate.openai_http.OpenAIChatGenerator`: any server that speaks the OpenAI
  chat-completions protocol (Ollama, llama.cpp's server, vLLM, OpenAI).

Both abstain with the same fixed sentence, `ABSTENTION`, so `is_abstention` can tell.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from raglab.generate.prompting import ABSTENTION, Prompt

__all__ = ["ABSTENTION", "Generator", "is_abstention"]


@runtime_checkable
class Generator(Protocol):
    """Anything that turns a prompt into answer text (with `[n]` markers, or ABSTENTION)."""

    def generate(self, prompt: Prompt) -> str: ...


def _normalise(text: str) -> str:
    """Lower case, straight apostrophes, one space, no surrounding quotes or end stop."""
    text = (
        text.lower().replace("\u2019", "'").replace("cannot", "can't").replace("can not", "can't")
    )
    return " ".join(text.split()).strip("\"'` ").rstrip(".!")


def is_abstention(text: str) -> bool:
    """True when `text` is the abstention sentence, give or take cosmetics.

    Accepted: letter case, a curly apostrophe, "cannot" for "can't", extra spaces,
    surrounding quotes, a missing full stop — what a model changes without meaning to.
    Also accepted: the sentence followed by more text, as long as the sentence is
    complete (a model that opens by declining has not answered from the sources).

    >>> is_abstention("I can't answer that from the provided sources.")
    True
    >>> is_abstention("  I cannot answer that from the provided sources  ")
    True
    >>> is_abstention("I can't answer that from the provided sources alone, but [1] says 5.")
    False
    """
    sentence, said = _normalise(ABSTENTION), _normalise(text)
    if not said.startswith(sentence):
        return False
    rest = said[len(sentence) :]
    return rest == "" or rest[0] in ".!"  # the sentence ended there
