"""A language model as the query rewriter: rewrites of the question, and a HyDE passage.

The rule-based rewrites of `raglab.retrieve.query_expansion` draw on the asker's own
chunks; a model draws on what it knows of the words people use (`LLMRewriter`). It is a
`raglab.retrieve.query_expansion.Rewriter`: give it to `QueryExpansion(rewriter=...)`,
and the query path searches its rewrites beside the others and fuses the rankings.
The model sees only the question, never the documents.
"""

from __future__ import annotations

from dataclasses import dataclass

from raglab.generate.generation import Generator
from raglab.generate.llm_env import model_from_env
from raglab.generate.prompting import Prompt

MAX_QUERY_CHARS = 1000
"""The longest rewrite used: a model that rambles cannot make a query of a whole page."""

REWRITE_INSTRUCTIONS = (
    "You rewrite search questions. Reply with {n} different rewrites of the user's question, "
    "one per line, no numbering, no commentary. Use other words a policy or manual might use."
)
HYDE_INSTRUCTIONS = (
    "Write one short paragraph, as it might appear in a company handbook or product manual, "
    "that answers the user's question. Plain text, no preamble."
)


@dataclass(frozen=True, slots=True)
class LLMRewriter:
    """Rewrites (and a HyDE passage) written by a language model (`raglab.generate.generation.Generator`).

    `n` rewrites are asked for; `hyde` adds the model's imagined answer as one more query
    (Gao et al. 2022: it reads like the documents, so it lands near them). Only the
    question is sent. At most `n` lines are used, each cut to `MAX_QUERY_CHARS`.
    """

    generator: Generator
    n: int = 3
    hyde: bool = False

    def rewrites(self, question: str) -> list[str]:
        lines = self._ask(REWRITE_INSTRUCTIONS.format(n=self.n), question).splitlines()
        found = [line.strip(" -*\t0123456789.)") for line in lines]
        queries = [line[:MAX_QUERY_CHARS] for line in found if line][: self.n]
        if self.hyde:
            queries.append(self._ask(HYDE_INSTRUCTIONS, question).strip()[:MAX_QUERY_CHARS])
        return queries

    def _ask(self, instructions: str, question: str) -> str:
        prompt = Prompt(question, (), instructions, question, boundary="")
        return self.generator.generate(prompt)


def rewriter_from_env(*, hyde: bool = False) -> LLMRewriter | None:
    """An `LLMRewriter` for the model the environment configures (`llm_env.model_from_env`),
    or None when RAGLAB_LLM_URL is not set: offline, rules only."""
    generator = model_from_env()
    return None if generator is None else LLMRewriter(generator, hyde=hyde)
