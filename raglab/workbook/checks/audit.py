"""Checks for notebook 10: the learner's fixes of the assistant's pipeline, and the audit table.

A fix is one method of `AssistantPipeline` (`retrieve`, `prompt`, `ask`, `update`, `load`),
written as a function taking `self`. Its check puts it into the assistant's pipeline and
runs the audit's tests (`raglab.workbook.audit_tests`) there: every test the reference
fix makes pass must pass, then a few cases aimed at the fixes that look right and are not
(filtering after ranking, escaping instead of delimiting, stripping a marker but keeping
the claim). The table's check asks for evidence: each flaw's test must fail on the
assistant's pipeline and pass once the method named in the row is fixed.

    ✅ retrieve: 3 audit tests pass with your retrieve, and 3 more cases
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import numpy as np

from raglab.records import Document, Principal
from raglab.store.access import can_read
from raglab.workbook import ai_pipeline_fixed as fixed
from raglab.workbook.ai_pipeline import AssistantPipeline, sample_documents
from raglab.workbook.audit_tests import FINDS, FLAWS, SEVERITIES, audit_tests
from raglab.workbook.checks.core import (
    NOT_IMPLEMENTED_CASE,
    CheckResult,
    references_hidden,
    show,
    verdict,
)
from raglab.workbook.testrunner import TestResult, run_test

__all__ = [
    "EXERCISES",
    "REFERENCE_FIXES",
    "check_ask",
    "check_audit_table",
    "check_load",
    "check_prompt",
    "check_retrieve",
    "check_update",
]

# The exercise (a method's name) -> the reference fix it is checked against (`FIXES` key).
EXERCISES = ("retrieve", "prompt", "ask", "update", "load")
REFERENCE_FIXES: tuple[Callable, ...] = tuple(fixed.FIXES[name][name] for name in EXERCISES)
SECURITY = ("authorization", "injection")  # flaws that leak data or obey an attacker
ANN = Principal("ann", "acme")


class _Wrong(Exception):
    """A case of a fix's check failed: `args[0]` names it, `args[1]` says why."""


def _pipeline_with(method: str, fn: Callable) -> AssistantPipeline:
    """The assistant's pipeline with the learner's `fn` as `method` (and `load` with the
    reference `save`, which writes down the model that `load` must check)."""
    extra = {"save": fixed.FIXES["load"]["save"]} if method == "load" else {}
    return fixed.with_fixes(**extra, **{method: fn})()


def _check_fix(method: str, fn: Any, cases: Callable[[AssistantPipeline], int]) -> CheckResult:
    """Run the audit tests the reference fix passes, then `cases`, on the fixed pipeline."""
    if not callable(fn):
        return verdict(method, "callable", [f"expected a function, got {show(fn)}"])
    if getattr(fn, "__code__", None) is getattr(fixed.FIXES[method][method], "__code__", 1):
        return verdict(method, "yours", ["that is the reference fix: write your own"])
    must_pass = [t for t in audit_tests() if t.__name__ in fixed.passing_with(method)]
    with references_hidden(fn):
        try:
            pipeline = _pipeline_with(method, fn)
            for test in must_pass:
                result = run_test(test, pipeline)
                if not result.passed:
                    return _test_failed(method, test.__name__, result)
            extra = cases(pipeline)
        except NotImplementedError:
            return verdict(method, NOT_IMPLEMENTED_CASE, [])
        except _Wrong as wrong:
            return verdict(method, wrong.args[0], [wrong.args[1]])
        except Exception as error:  # the learner's code may raise anything: one line
            return verdict(method, "raised", [f"{type(error).__name__}: {error}"])
    return verdict(
        method,
        None,
        [f"{len(must_pass)} audit tests pass with your {method}, and {extra} more cases"],
    )


def _test_failed(method: str, test: str, result: TestResult) -> CheckResult:
    if result.not_implemented:
        return verdict(method, NOT_IMPLEMENTED_CASE, [])
    finds = FINDS.get(test)
    about = f" (it finds {finds!r}: {FLAWS[finds]})" if finds else ""
    return verdict(method, test, [f"{test} fails{about}: {result.message.splitlines()[0]}"])


def _expect(ok: bool, case: str, why: str) -> None:
    if not ok:
        raise _Wrong(case, why)


# --- exercise 1: retrieve ---------------------------------------------------------------


def _retrieve_cases(pipeline: AssistantPipeline) -> int:
    question, bob = "What is the salary band for a senior engineer?", Principal("bob", "acme")
    hits = pipeline.retrieve(question, bob, k=5)
    expected = fixed.FIXES["retrieve"]["retrieve"](pipeline, question, bob, 5)
    ids, want = [h.chunk.id for h in hits], [h.chunk.id for h in expected]
    _expect(
        len(hits) == 5,
        "k hits",
        f"bob may read hundreds of chunks, and got {len(hits)} of 5: ranked first and filtered "
        "after, the top 5 lose every chunk he may not read — choose the readable rows first",
    )
    _expect(all(can_read(bob, h.chunk) for h in hits), "readable", f"bob got {ids}")
    _expect(ids == want, "best first", f"expected {want}, got {ids}")
    few = pipeline.retrieve(question, Principal("u", "nobody"), k=5)
    _expect(few == [], "no readable chunk", f"a tenant with no documents got {show(few)}")
    return 3


def check_retrieve(fn: Any) -> CheckResult:
    """Check a learner's `retrieve(self, question, principal, k=5)`: access before ranking."""
    return _check_fix("retrieve", fn, _retrieve_cases)


# --- exercise 2: prompt -------------------------------------------------------------------


def _prompt_cases(pipeline: AssistantPipeline) -> int:
    question = "How many vacation days do I get?"
    hits = pipeline.retrieve(question, ANN, k=5)
    prompt = pipeline.prompt(question, hits)
    _expect(
        [h.chunk.id for h in prompt.sources] == [h.chunk.id for h in hits],
        "five short sources",
        "five sources well within the budget must all reach the prompt",
    )
    missing = [h.chunk.id for h in hits if h.chunk.text not in prompt.user]
    _expect(
        missing == [], "text unchanged", f"the text of {missing} is not in the prompt as written"
    )
    _expect(prompt.user.rstrip().endswith(question), "question last", "the question goes last")
    return 3


def check_prompt(fn: Any) -> CheckResult:
    """Check a learner's `prompt(self, question, hits)`: sources as data, within a budget."""
    return _check_fix("prompt", fn, _prompt_cases)


# --- exercise 3: ask ----------------------------------------------------------------------


def _ask_cases(pipeline: AssistantPipeline) -> int:
    answer = pipeline.ask("How many vacation days do I get?", ANN)
    reference = fixed.FIXES["ask"]["ask"](pipeline, "How many vacation days do I get?", ANN)
    _expect(
        answer.invalid_citations == reference.invalid_citations,
        "flagged",
        f"the model cited {list(reference.invalid_citations)}, which points at no source: "
        f"report it in invalid_citations (got {answer.invalid_citations})",
    )
    _expect(
        answer.text == reference.text,
        "the claim goes too",
        f"expected {reference.text!r}, got {answer.text!r}: a sentence whose only marker "
        "points nowhere claims something no source was shown to support — drop it",
    )
    _expect(
        [c.n for c in answer.citations] == [c.n for c in reference.citations],
        "citations",
        f"expected citations {[c.n for c in reference.citations]}, got {[c.n for c in answer.citations]}",
    )
    return 3


def check_ask(fn: Any) -> CheckResult:
    """Check a learner's `ask(self, question, principal, k=5)`: markers checked."""
    return _check_fix("ask", fn, _ask_cases)


# --- exercise 4: update -------------------------------------------------------------------


def _update_cases(pipeline: AssistantPipeline) -> int:
    pipeline = copy.deepcopy(pipeline)
    doc = next(d for d in sample_documents() if d.id == "acme/it/vpn.md")
    longer = Document(
        doc.id, doc.text + "\n\n## Travel\n\nUse the VPN in hotels too.", tenant="acme"
    )
    pipeline.update(longer)
    rows = [row for row, c in enumerate(pipeline.chunks) if c.doc_id == doc.id]
    want = pipeline.chunker.split(longer)
    got = [pipeline.chunks[row].text for row in rows]
    _expect(got == [c.text for c in want], "chunks", f"expected the new chunks of {doc.id}")
    _expect(len(pipeline.vectors) == len(pipeline.chunks), "one vector a chunk", "rows differ")
    fresh = pipeline.embedder.embed(got)
    _expect(np.allclose(pipeline.vectors[rows], fresh, atol=1e-6), "vectors", "stale vectors")
    return 3


def check_update(fn: Any) -> CheckResult:
    """Check a learner's `update(self, document)`: a changed text is embedded again."""
    return _check_fix("update", fn, _update_cases)


# --- exercise 5: load ---------------------------------------------------------------------


def _load_cases(pipeline: AssistantPipeline) -> int:
    import tempfile

    from raglab.embed.embedders import HashingEmbedder

    with tempfile.TemporaryDirectory() as folder:
        AssistantPipeline.save(pipeline, folder)  # the assistant's save: no model written down
        try:
            pipeline.load(folder, embedder=pipeline.embedder)
        except ValueError:
            pass
        else:
            raise _Wrong("no record", "an index that records no model must be refused")
        pipeline.save(folder)
        try:
            pipeline.load(folder, embedder=HashingEmbedder(dim=128))
        except ValueError:
            return 2
        raise _Wrong("another length", "vectors of 384 numbers queried with 128 must be refused")


def check_load(fn: Any) -> CheckResult:
    """Check a learner's `load(self, path, *, embedder=None)`: the saved model is checked."""
    return _check_fix("load", fn, _load_cases)


# --- exercise 6: the audit table ------------------------------------------------------------


def _rows(table: Any) -> list[tuple[str, str, str, str]] | str:
    """The table as rows of four strings, or a message saying why it is not."""
    if not isinstance(table, (list, tuple)):
        return f"expected a list of rows, got a {type(table).__name__}"
    for row in table:
        if not (isinstance(row, tuple) and len(row) == 4 and all(isinstance(v, str) for v in row)):
            return f"each row is (flaw, test, severity, fix), four strings; got {show(row)}"
    return list(table)


def _evidence(test: str, fix: str) -> str | None:
    """None when `test` fails on the assistant's pipeline and passes with `fix`, else why."""
    if test in fixed.passing_with():
        return f"{test} passes on the assistant's pipeline: it found nothing"
    if test not in fixed.passing_with(fix):
        return f"with {fix} fixed, {test} still fails: that fix is not what turns it green"
    return None


def check_audit_table(table: Any) -> CheckResult:
    """Check a learner's `AUDIT`: (flaw, test that found it, severity, fix) for every flaw."""
    name = "audit_table"
    if table is None or table is Ellipsis or table == []:
        return verdict(name, NOT_IMPLEMENTED_CASE, [])
    rows = _rows(table)
    if isinstance(rows, str):
        return verdict(name, "rows", [rows])
    flaws = [row[0] for row in rows]
    for flaw in flaws:
        if flaw not in FLAWS or flaws.count(flaw) > 1:
            why = "twice" if flaw in FLAWS else f"not a flaw; choose from {', '.join(FLAWS)}"
            return verdict(name, flaw, [f"{flaw!r} is {why}"])
    missing = [flaw for flaw in FLAWS if flaw not in flaws]
    if missing:
        return verdict(name, "every flaw", [f"no row for {missing[0]!r}: {FLAWS[missing[0]]}"])
    for flaw, test, severity, fix in rows:
        if severity not in SEVERITIES:
            return verdict(
                name, flaw, [f"severity {severity!r}: choose from {', '.join(SEVERITIES)}"]
            )
        if flaw in SECURITY and severity not in SEVERITIES[:2]:
            return verdict(name, flaw, [f"{FLAWS[flaw]}: an attacker's gain is at least 'high'"])
        if test not in FINDS:
            return verdict(name, flaw, [f"{test!r} is not one of the audit's tests"])
        if fix not in fixed.FIXES:
            return verdict(name, flaw, [f"fix {fix!r}: choose from {', '.join(fixed.FIXES)}"])
        problem = _evidence(test, fix)
        if problem is None and FINDS[test] != flaw:
            problem = f"{test} fails for another flaw, {FINDS[test]!r}"
        if problem is not None:
            return verdict(name, flaw, [problem])
    return verdict(
        name, None, [f"all {len(FLAWS)} flaws found, each test red before its fix and green after"]
    )


CHECKS: dict[str, Callable[[Any], CheckResult]] = {
    "retrieve": check_retrieve,
    "prompt": check_prompt,
    "ask": check_ask,
    "update": check_update,
    "load": check_load,
    "audit_table": check_audit_table,
}
