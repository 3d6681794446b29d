"""The labelled question set: one JSONL line per question, each checked as it is read.

A question says who asks it (tenant and groups), which documents answer it
(`relevant_docs`, none when it is unanswerable for that user), which must never reach
that user (`leak_docs`) and what kind of question it is. `load_questions` refuses a
malformed file with the file, line and reason, rather than scoring a typo as a silent 0.
"""

from __future__ import annotations

import codecs
import difflib
import json
from collections.abc import Callable, Collection, Iterable
from dataclasses import KW_ONLY, dataclass
from pathlib import Path
from typing import Any

from raglab.records import DEFAULT_TENANT, Principal

__all__ = ["Question", "QuestionSetError", "load_questions"]


class QuestionSetError(ValueError):
    """A question-set file is malformed; the message names the file, the line and the reason."""

    def __init__(self, path: str | Path, line: int, reason: str) -> None:
        super().__init__(f"{path}, line {line}: {reason}")
        self.path = str(path)
        self.line = line
        self.reason = reason


@dataclass(frozen=True, slots=True)
class Question:
    """One labelled question, as one line of a question-set JSONL file.

    `tenant` and `groups` say who asks (the principal the search runs as). `relevant_docs`
    are the ids of the documents that answer it ([] when it is unanswerable for this user);
    `leak_docs` are ids that must never reach this user. `kind` labels the question for the
    per-kind breakdown (e.g. "lookup", "multi-hop", "forbidden"). `must_contain` is an
    answerable question's key fact, as short strings a right answer holds, every one of
    them (case-insensitive, `raglab.evaluation.metrics.holds_key_fact`): ("30 days",) or
    ("E-4417", "replace the ribbon"); () when the question is not scored that way.
    `hops` (a multi-hop question's): the documents its answer needs, in the order a search
    finds them (the second search depends on what the first found); each hop is a tuple of
    the documents that would serve, usually one: (("a.md",), ("b.md", "c.md")).
    Everything after `question` is keyword-only, because `answerable` has no default.
    """

    id: str
    question: str
    _: KW_ONLY
    tenant: str = DEFAULT_TENANT
    groups: tuple[str, ...] = ()
    relevant_docs: tuple[str, ...] = ()
    answerable: bool
    answer: str | None = None
    kind: str | None = None
    leak_docs: tuple[str, ...] = ()
    must_contain: tuple[str, ...] = ()
    hops: tuple[tuple[str, ...], ...] = ()

    def __post_init__(self) -> None:
        # Accept lists (as JSON gives them) but store tuples, so a Question stays immutable.
        for name in ("groups", "relevant_docs", "leak_docs", "must_contain"):
            object.__setattr__(self, name, tuple(getattr(self, name)))
        # A hop written as one id is a hop one document serves.
        hops = tuple((h,) if isinstance(h, str) else tuple(h) for h in self.hops)
        object.__setattr__(self, "hops", hops)

    @property
    def asker(self) -> Principal:
        """The user this question is asked as: its tenant and groups, user id "eval:<id>"."""
        return Principal(f"eval:{self.id}", self.tenant, frozenset(self.groups))


def _is_str_list(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(item, str) for item in value)


def _is_hop_list(value: Any) -> bool:
    """A list of hops, each a document id or a non-empty list of ids (any one serves)."""
    return isinstance(value, list) and all(
        (isinstance(hop, str) and hop) or (_is_str_list(hop) and hop and all(hop)) for hop in value
    )


def _is_fact_list(value: Any) -> bool:
    # subtle: an empty or blank string is in every answer, so it would score any answer right.
    return _is_str_list(value) and all(item.strip() for item in value)


# Field name -> (required?, the check, what the message says it must be).
_FIELDS: dict[str, tuple[bool, Callable[[Any], bool], str]] = {
    "id": (True, lambda v: isinstance(v, str) and v != "", "a non-empty string"),
    "question": (True, lambda v: isinstance(v, str) and v.strip() != "", "a non-empty string"),
    "tenant": (False, lambda v: isinstance(v, str) and v != "", "a non-empty string"),
    "groups": (False, _is_str_list, "a list of strings"),
    "relevant_docs": (False, _is_str_list, "a list of strings"),
    # subtle: bool is checked exactly, so 1/0 or "true" are refused rather than guessed at.
    "answerable": (True, lambda v: isinstance(v, bool), "true or false"),
    "answer": (False, lambda v: v is None or isinstance(v, str), "a string or null"),
    "kind": (False, lambda v: v is None or isinstance(v, str), "a string or null"),
    "leak_docs": (False, _is_str_list, "a list of strings"),
    "must_contain": (False, _is_fact_list, "a list of non-blank strings"),
    "hops": (False, _is_hop_list, "a list of document ids or lists of ids"),
}


def _parse_question(line: str) -> Question:
    """One JSONL line -> Question. Raises ValueError with the reason only (no file, no line)."""
    try:
        obj = json.loads(line)
    except json.JSONDecodeError as err:
        raise ValueError(f"bad JSON: {err.msg} (column {err.colno})") from None
    if not isinstance(obj, dict):
        raise ValueError(f"expected a JSON object, got {type(obj).__name__}")
    unknown = sorted(set(obj) - set(_FIELDS))
    if unknown:
        # Refused rather than ignored: a typo such as "leak_doc" would silently drop a check.
        raise ValueError(f"unknown field {unknown[0]!r} (known fields: {', '.join(_FIELDS)})")
    for name, (required, is_valid, must_be) in _FIELDS.items():
        if name not in obj:
            if required:
                raise ValueError(f"missing field {name!r}")
        elif not is_valid(obj[name]):
            raise ValueError(f"field {name!r} must be {must_be} (got {obj[name]!r})")
    if obj["answerable"] and not obj.get("relevant_docs"):
        raise ValueError(
            f"question {obj['id']!r} is answerable but has no relevant_docs "
            "(list the documents that answer it, or set answerable to false)"
        )
    if obj.get("must_contain") and not obj["answerable"]:
        raise ValueError(
            f"question {obj['id']!r} is unanswerable but has must_contain "
            "(a key fact belongs to an answerable question)"
        )
    _check_hops(obj)
    return Question(**obj)


def _check_hops(obj: dict[str, Any]) -> None:
    """A multi-hop question's hops: two or more, each among its relevant_docs."""
    hops = obj.get("hops", [])
    if hops and not obj["answerable"]:
        raise ValueError(f"question {obj['id']!r} is unanswerable but has hops")
    if len(hops) == 1:
        raise ValueError(f"question {obj['id']!r} has one hop (a multi-hop question needs two)")
    relevant = set(obj.get("relevant_docs", []))
    for hop in hops:
        for doc in [hop] if isinstance(hop, str) else hop:
            if doc not in relevant:
                raise ValueError(
                    f"question {obj['id']!r}: hop document {doc!r} is not in its relevant_docs"
                )


def load_questions(path: str | Path, *, doc_ids: Collection[str] | None = None) -> list[Question]:
    """Read a question set: JSONL, one question object a line, blank lines skipped.

    Raises `QuestionSetError` naming the file, the line number and the reason for bytes
    that are not UTF-8, bad JSON, a missing or unknown field, a wrong type, an answerable
    question with no relevant_docs, or a duplicate id. With `doc_ids` (the corpus's
    document ids, once it is known), a `relevant_docs` or `leak_docs` entry naming a
    document not among them is an error too: a typo would otherwise score a silent 0.
    """
    questions: list[Question] = []
    first_line_of: dict[str, int] = {}
    for number, line in _numbered_lines(path):
        if not line.strip():
            continue
        try:
            question = _parse_question(line)
            if doc_ids is not None:
                _check_doc_ids(question, doc_ids)
        except ValueError as err:
            raise QuestionSetError(path, number, str(err)) from None
        if question.id in first_line_of:
            first = first_line_of[question.id]
            reason = f"duplicate id {question.id!r} (first seen on line {first})"
            raise QuestionSetError(path, number, reason)
        first_line_of[question.id] = number
        questions.append(question)
    return questions


def _numbered_lines(path: str | Path) -> Iterable[tuple[int, str]]:
    """(line number, text) for each line of the file, each checked to be UTF-8 on its own."""
    data = Path(path).read_bytes().removeprefix(codecs.BOM_UTF8)
    for number, raw in enumerate(data.split(b"\n"), start=1):
        try:
            yield number, raw.decode("utf-8")
        except UnicodeDecodeError as err:
            reason = f"not valid UTF-8 (byte 0x{raw[err.start]:02x} at column {err.start + 1})"
            raise QuestionSetError(path, number, reason) from None


def _check_doc_ids(question: Question, doc_ids: Collection[str]) -> None:
    """Refuse a relevant_docs or leak_docs entry that names no document of the corpus."""
    for name in ("relevant_docs", "leak_docs"):
        for doc in getattr(question, name):
            if doc not in doc_ids:
                close = difflib.get_close_matches(doc, list(doc_ids), n=1)
                hint = f" (did you mean {close[0]!r}?)" if close else ""
                raise ValueError(
                    f"{name} names {doc!r}, which is not a document of the corpus{hint}"
                )
