"""The reference fixes of notebook 10: the assistant's pipeline, one method at a time.

Each function below is a method of `AssistantPipeline` rewritten with the engine's own
boundary for the job — the access rule before ranking, the prompt boundary and budget,
citation checking, re-indexing a changed document, the embedder's record — and
`FixedPipeline` is the pipeline with all of them. `with_fixes` builds the pipeline with
only some, which is how the audit shows that each test finds the flaw it names.

>>> from raglab import Principal
>>> print(FixedPipeline().ask("How many vacation days do I get?", Principal("ann", "acme")).text)
Every full-time employee receives 25 working days of annual leave (vacation) per calendar year [1].
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from functools import cache
from pathlib import Path

from raglab.embed.embedders import Embedder
from raglab.embed.tokens import approx_tokens
from raglab.generate.citations import parse_citations, verify_citations
from raglab.generate.generation import ABSTENTION, is_abstention
from raglab.generate.prompting import Prompt, build_prompt
from raglab.records import Answer, Document, Hit, Principal
from raglab.retrieve.vectors import top_k
from raglab.store.access import can_read
from raglab.store.errors import EmbedderMismatch
from raglab.workbook.ai_pipeline import AssistantPipeline

__all__ = ["CONTEXT_BUDGET", "FIXES", "FixedPipeline", "passing_with", "with_fixes"]

CONTEXT_BUDGET = 1000
"""Tokens of source text per prompt (`approx_tokens`): the stand-in model's 2,048-token
window must also hold the rules, the blocks' tags, the question and the answer."""

MODEL_FILE = "model.json"  # where `save` writes down the embedder that made the vectors


def retrieve(self, question: str, principal: Principal, k: int = 5) -> list[Hit]:
    """The k chunks `principal` may read that are most similar to the question.

    The access rule (tenant and groups) chooses the rows first; only those are ranked.
    """
    readable = [row for row, chunk in enumerate(self.chunks) if can_read(principal, chunk)]
    if not readable or k < 1:
        return []
    query = self.embedder.embed([question])[0]
    rows, scores = top_k(query, self.vectors[readable], min(k, len(readable)))
    return [Hit(self.chunks[readable[row]], float(score)) for row, score in zip(rows, scores)]


def prompt(self, question: str, hits: Sequence[Hit]) -> Prompt:
    """The engine's prompt: sources as data in blocks no text can close, within a budget."""
    return build_prompt(question, hits, max_tokens=CONTEXT_BUDGET, count_tokens=approx_tokens)


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def ask(self, question: str, principal: Principal, k: int = 5) -> Answer:
    """The answer with its markers checked: a sentence citing no given source is dropped
    (and its marker reported in `invalid_citations`); nothing left is an abstention."""
    hits = self.retrieve(question, principal, k)
    prompt = self.prompt(question, hits)
    text = self.model.generate(prompt)
    invalid = verify_citations(text, prompt.sources).invalid
    if invalid:
        kept = [s for s in _SENTENCE_END.split(text) if not set(parse_citations(s)) & set(invalid)]
        text = " ".join(kept) or ABSTENTION
    report = verify_citations(text, prompt.sources)
    return Answer(text, report.citations, prompt.sources, is_abstention(text), invalid)


def update(self, document: Document) -> None:
    """Re-index an edited document: its old chunks and vectors go, its new ones are embedded."""
    keep = [row for row, chunk in enumerate(self.chunks) if chunk.doc_id != document.id]
    self.chunks = [self.chunks[row] for row in keep]
    self.vectors = self.vectors[keep]
    self.add([document])


def save(self, path: str | Path) -> None:
    """The assistant's files, and the embedder that made the vectors beside them."""
    AssistantPipeline.save(self, path)
    (Path(path) / MODEL_FILE).write_text(json.dumps(model_record(self.embedder)), encoding="utf-8")


def model_record(embedder: Embedder) -> dict[str, object]:
    """What identifies the vectors' model: name, vector length and version."""
    return {"name": embedder.name, "dim": embedder.dim, "version": embedder.version}


def load(self, path: str | Path, *, embedder: Embedder | None = None) -> AssistantPipeline:
    """The saved index, if `embedder` is the one that built it; else `EmbedderMismatch`."""
    embedder = embedder or self.embedder
    record_file = Path(path) / MODEL_FILE
    if not record_file.is_file():
        raise EmbedderMismatch(f"index {str(path)!r} records no embedder: build it again")
    saved, given = json.loads(record_file.read_text(encoding="utf-8")), model_record(embedder)
    if saved != given:
        raise EmbedderMismatch(
            f"index {str(path)!r} was built with {saved} but is being queried with {given}"
        )
    return AssistantPipeline.load(self, path, embedder=embedder)


# Fix name (the method, or methods, it rewrites) -> the reference methods.
FIXES: dict[str, dict[str, Callable]] = {
    "retrieve": {"retrieve": retrieve},
    "prompt": {"prompt": prompt},
    "ask": {"ask": ask},
    "update": {"update": update},
    "load": {"save": save, "load": load},
}


def with_fixes(*names: str, **methods: Callable) -> type[AssistantPipeline]:
    """`AssistantPipeline` with the reference fixes `names` and the given `methods` in place.

    >>> with_fixes("retrieve").retrieve is retrieve
    True
    """
    unknown = [name for name in names if name not in FIXES]
    if unknown:
        raise ValueError(f"unknown fix {unknown[0]!r}; choose from: {', '.join(FIXES)}")
    body = {method: fn for name in names for method, fn in FIXES[name].items()}
    label = "+".join([*names, *methods]) or "none"
    return type(f"AssistantPipeline[{label}]", (AssistantPipeline,), {**body, **methods})


@cache
def passing_with(*names: str) -> frozenset[str]:
    """The names of the audit tests that pass on the pipeline with the reference fixes `names`.

    Run once per set of fixes (the tests are deterministic): the checks of notebook 10 and
    its table of which fix turns which test green share the runs.
    """
    from raglab.workbook.audit_tests import audit_tests
    from raglab.workbook.testrunner import run_test

    pipeline = with_fixes(*names)()
    return frozenset(test.__name__ for test in audit_tests() if run_test(test, pipeline).passed)


FixedPipeline = with_fixes(*FIXES)
FixedPipeline.__name__ = FixedPipeline.__qualname__ = "FixedPipeline"
FixedPipeline.__doc__ = "The assistant's pipeline with every reference fix."
