"""The labelled conversations: one JSONL line per conversation, each checked as it is read.

A line: `id`, `tenant`, `groups`, `user` (the principal), `split` ("dev": seen while the
rewrite rules were written; "heldout": written after them, never used to change them),
and `turns`, 2 to 4 of them, each `{"question", "standalone", "relevant_docs", "kind"}`.
A follow-up's `standalone` is its gold rewrite; `kind` says its shape: "first",
"pronoun", "ellipsis", "ordinal", "implicit" (leans on the last turn with no word that
shows it), "back" (refers two turns back): these must be rewritten; "switch" (a new
topic) and "self-contained" must not (their `standalone` is the question itself).
A malformed line is refused with the file and line (`ConversationSetError`).
"""

from __future__ import annotations

import json
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from raglab.records import Principal

KINDS = ("first", "pronoun", "ellipsis", "ordinal", "implicit", "back", "switch", "self-contained")
KEEP_AS_ASKED = ("first", "switch", "self-contained")
"""The kinds whose standalone form is the question itself: a rewrite must leave them alone."""
SPLITS = ("dev", "heldout")


class ConversationSetError(ValueError):
    """A conversations file is malformed; the message names the file, the line and the reason."""

    def __init__(self, path: str | Path, line: int, reason: str) -> None:
        super().__init__(f"{path}:{line}: {reason}")


@dataclass(frozen=True, slots=True)
class LabelledTurn:
    question: str
    standalone: str
    relevant_docs: tuple[str, ...]
    kind: str

    @property
    def must_rewrite(self) -> bool:
        return self.kind not in KEEP_AS_ASKED


@dataclass(frozen=True, slots=True)
class Conversation:
    id: str
    tenant: str
    groups: tuple[str, ...]
    user: str
    split: str
    turns: tuple[LabelledTurn, ...]

    @property
    def principal(self) -> Principal:
        return Principal(self.user, self.tenant, frozenset(self.groups))


def _text(value: Any, name: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{name} must be a non-empty string (got {value!r})")
    return value


def _texts(value: Any, name: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise ValueError(f"{name} must be a list of non-empty strings (got {value!r})")
    return tuple(value)


def _turn(value: Any, n: int, doc_ids: Collection[str] | None) -> LabelledTurn:
    if not isinstance(value, dict):
        raise ValueError(f"turn {n} must be an object (got {value!r})")
    unknown = sorted(set(value) - {"question", "standalone", "relevant_docs", "kind"})
    if unknown:
        raise ValueError(f"turn {n} has unknown fields: {', '.join(unknown)}")
    question = _text(value.get("question"), f"turn {n}: question")
    standalone = _text(value.get("standalone"), f"turn {n}: standalone")
    kind = value.get("kind")
    if kind not in KINDS or (kind == "first") != (n == 1):
        raise ValueError(
            f"turn {n}: kind must be 'first' for turn 1, else one of {', '.join(KINDS[1:])} "
            f"(got {kind!r})"
        )
    if kind in KEEP_AS_ASKED and standalone != question:
        raise ValueError(f"turn {n}: a {kind} turn's standalone must be the question itself")
    docs = _texts(value.get("relevant_docs"), f"turn {n}: relevant_docs")
    if not docs:
        raise ValueError(f"turn {n}: relevant_docs must name at least one document")
    missing = sorted(set(docs) - set(doc_ids)) if doc_ids is not None else []
    if missing:
        raise ValueError(f"turn {n}: unknown documents: {', '.join(missing)}")
    return LabelledTurn(question, standalone, docs, kind)


def _conversation(line: str, doc_ids: Collection[str] | None) -> Conversation:
    try:
        value = json.loads(line)
    except json.JSONDecodeError as error:
        raise ValueError(f"not JSON ({error.msg})") from None
    if not isinstance(value, dict):
        raise ValueError("a line must be a JSON object")
    turns = value.get("turns")
    if not isinstance(turns, list) or not 2 <= len(turns) <= 4:
        raise ValueError(f"turns must be a list of 2 to 4 turns (got {turns!r})")
    split = value.get("split")
    if split not in SPLITS:
        raise ValueError(f"split must be one of {', '.join(SPLITS)} (got {split!r})")
    return Conversation(
        _text(value.get("id"), "id"),
        _text(value.get("tenant"), "tenant"),
        _texts(value.get("groups", []), "groups"),
        _text(value.get("user"), "user"),
        split,
        tuple(_turn(t, n, doc_ids) for n, t in enumerate(turns, start=1)),
    )


def load_conversations(
    path: str | Path, *, doc_ids: Collection[str] | None = None
) -> list[Conversation]:
    """Every conversation of the file at `path`; `doc_ids`, when given, are the documents
    that exist (a relevant document outside them is an error). Ids must be unique."""
    found: list[Conversation] = []
    with open(path, encoding="utf-8") as lines:
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                conversation = _conversation(line, doc_ids)
                if any(c.id == conversation.id for c in found):
                    raise ValueError(f"id {conversation.id!r} is used twice")
            except ValueError as error:
                raise ConversationSetError(path, number, str(error)) from None
            found.append(conversation)
    return found
