"""Versions: a document that supersedes others hides them from retrieval.

A new policy names the one it replaces in its front matter:

    ---
    title: Expenses policy 2025
    tenant: acme
    supersedes: [acme/policies/expenses-2023.md]
    ---

The old file stays in the corpus (claims for old costs are still judged by it), but it no
longer answers: the 2023 limits cannot answer a question about 2025. Two rules keep this
safe, one at load and one at retrieval:

- at load (`raglab.ingest.supersedes`): an id names not the document itself, a document of
  the same tenant, and no chain of supersedes comes back to where it started. A document
  breaking a rule is refused (the loader names it and the reason). An id naming no file
  (the old version deleted, or a typo) hides nothing: the loader warns;
- at retrieval (`hidden_documents`): a document is hidden from a principal only when a
  document superseding it (directly or through a chain) is one *that principal may read*.
  Access stays first: a document the asker may not read can neither answer nor hide
  another one, so no tenant's or group's document can make another's disappear. The store
  applies the rule where it applies access, before scoring (`raglab.store.eligibility`).

The index records who supersedes whom (`supersession`, kept in the store's meta by
`raglab.store.indexing.sync`), so an index file honours it without the corpus folder.

>>> from raglab.records import Document
>>> docs = [Document("old.md", "x"), Document("new.md", "y", supersedes=("old.md",))]
>>> supersession(docs)
{'old.md': ['new.md']}
>>> sorted(hidden_documents(supersession(docs), readable={"old.md", "new.md"}))
['old.md']
>>> sorted(hidden_documents(supersession(docs), readable={"old.md"}))
[]
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence

from raglab.records import DocRecord, Document, Principal
from raglab.store.access import can_read


def supersession(documents: Iterable[Document]) -> dict[str, list[str]]:
    """For each superseded document id, every document id that supersedes it, through chains.

    If c supersedes b and b supersedes a, then a is superseded by b and c. Lists are
    sorted; ids named but not among `documents` are kept (they hide nothing, harmlessly).
    """
    direct: dict[str, set[str]] = {}
    for doc in documents:
        for old in doc.supersedes:
            direct.setdefault(old, set()).add(doc.id)
    closed: dict[str, list[str]] = {}
    for old in sorted(direct):
        newer: set[str] = set()
        todo = list(direct[old])
        while todo:
            doc_id = todo.pop()
            if doc_id not in newer and doc_id != old:
                newer.add(doc_id)
                todo.extend(direct.get(doc_id, ()))
        closed[old] = sorted(newer)
    return closed


def hidden_documents(
    superseded: Mapping[str, Sequence[str]], *, readable: Collection[str]
) -> frozenset[str]:
    """The readable documents a principal must not be answered from: superseded by a readable one.

    `superseded` maps an id to the ids superseding it (`supersession`); `readable` holds
    the ids of the documents the principal may read. A document superseded only by
    documents the principal cannot read stays visible to that principal.
    """
    readable = set(readable)
    return frozenset(
        old
        for old, newer in superseded.items()
        if old in readable and any(doc_id in readable for doc_id in newer)
    )


# ---------------------------------------------------------------------------- at retrieval


def hidden_from(
    principal: Principal,
    superseded: Mapping[str, Sequence[str]],
    documents: Mapping[str, DocRecord],
) -> frozenset[str]:
    """The documents hidden from `principal`, given the store's `superseded` map (`supersession`)
    and every document's record: `hidden_documents` over the documents `principal` may read.

    A store applies it with access, before scoring (`raglab.store.eligibility`).
    """
    if not superseded:  # the common case: nothing to read
        return frozenset()
    readable = {doc_id for doc_id, record in documents.items() if can_read(principal, record)}
    return hidden_documents(superseded, readable=readable)
