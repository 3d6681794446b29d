"""A bigger corpus, grown deterministically from a small one, to see how cost and quality move.

`grown` adds copies of filler documents (another corpus: their texts are no answer to the
questions asked) to a reader's tenant, each copy under a new id. The documents that answer
the questions stay once, so a bigger corpus only adds what a long prompt must carry and a
retriever must look past.

>>> from raglab.records import Document
>>> base = [Document("acme/leave.md", "Staff get 25 days.", tenant="acme")]
>>> filler = [Document("town/hours.md", "Open at nine.", tenant="town")]
>>> [(d.id, d.tenant) for d in grown(base, filler, copies=2, tenant="acme")]
[('acme/leave.md', 'acme'), ('acme/grown-1/town/hours.md', 'acme'), ('acme/grown-2/town/hours.md', 'acme')]
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from raglab.records import Document
from raglab.validation import check_int


def grown(
    documents: Sequence[Document], filler: Sequence[Document], *, copies: int, tenant: str
) -> list[Document]:
    """`documents`, then `copies` copies of `filler`, every copy public in `tenant`.

    A copy keeps its text and title; its id is `<tenant>/grown-<i>/<id>`, and it supersedes
    nothing (a filler's versions must not hide a real document).
    """
    check_int("copies", copies, minimum=0)
    extra = [
        replace(doc, id=f"{tenant}/grown-{i}/{doc.id}", tenant=tenant, groups=(), supersedes=())
        for i in range(1, copies + 1)
        for doc in sorted(filler, key=lambda d: d.id)
    ]
    return [*documents, *extra]
