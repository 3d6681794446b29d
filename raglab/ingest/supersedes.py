"""The load-time rule of `supersedes`: what a document may name as the version it replaces.

A document's front matter may name older documents it replaces (`supersedes: [old.md]`);
`raglab.store.versions` hides them at retrieval. Before that, at load, three things must hold:
an id names not the document itself, it names a document of the same tenant (no tenant can
hide another's documents), and no chain of supersedes comes back to where it started (else no
version is the newest). A document breaking a rule is refused with the reason. An id naming
no file of the corpus only earns a warning: the old version was perhaps deleted.

>>> from raglab.records import Document
>>> docs = [Document("a.md", "x", supersedes=("b.md",)), Document("b.md", "y", supersedes=("a.md",))]
>>> sorted(supersedes_problems(docs))
['a.md', 'b.md']
>>> unknown_targets([Document("new.md", "y", supersedes=("gone.md",))], {"new.md"})["new.md"][:30]
"supersedes names 'gone.md', wh"
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

from raglab.records import Document


def supersedes_problems(documents: Sequence[Document]) -> dict[str, str]:
    """A reason for each document whose `supersedes` breaks a rule (module docstring)."""
    by_id = {doc.id: doc for doc in documents}
    problems: dict[str, str] = {}
    for doc in documents:
        for old in doc.supersedes:
            reason = _problem(doc, old, by_id)
            if reason:
                problems[doc.id] = reason
                break
    for doc_id in _on_cycles(documents):
        problems.setdefault(
            doc_id,
            "refused: its supersedes chain comes back to itself, so no version is the newest; "
            "remove one of the supersedes entries",
        )
    return problems


def unknown_targets(documents: Sequence[Document], known_ids: Collection[str]) -> dict[str, str]:
    """A warning for each document whose `supersedes` names a file not in the corpus.

    `known_ids` holds every document id of the corpus folder, loaded or refused. The
    document still loads: the old version was perhaps deleted, and a missing file
    answers nothing. But a typo would leave the real old version answering, so say so.
    """
    warnings = {}
    for doc in documents:
        missing = [old for old in doc.supersedes if old not in known_ids]
        if missing:
            warnings[doc.id] = (
                f"supersedes names {', '.join(map(repr, missing))}, which is no document of "
                "this corpus (ids are paths relative to the corpus folder): it hides nothing; "
                "if that is a typo, the version it meant still answers"
            )
    return warnings


def _problem(doc: Document, old: str, by_id: Mapping[str, Document]) -> str:
    if old == doc.id:
        return f"refused: supersedes names the document itself ({old!r})"
    target = by_id.get(old)
    if target is not None and target.tenant != doc.tenant:
        return (
            f"refused: supersedes names {old!r} of tenant {target.tenant!r}, but this document "
            f"is of tenant {doc.tenant!r}; a document supersedes only its own tenant's documents"
        )
    return ""


def _on_cycles(documents: Sequence[Document]) -> list[str]:
    """Ids of the documents from which a chain of supersedes leads back to themselves."""
    edges = {doc.id: [old for old in doc.supersedes if old != doc.id] for doc in documents}
    on_cycle = []
    for start in sorted(edges):
        seen: set[str] = set()
        todo = list(edges[start])
        while todo:
            doc_id = todo.pop()
            if doc_id == start:
                on_cycle.append(start)
                break
            if doc_id not in seen:
                seen.add(doc_id)
                todo.extend(edges.get(doc_id, ()))
    return on_cycle
