"""How the Qdrant store commits: writes held back, then applied under a journal.

Qdrant has no transactions, so `QdrantStore.transaction` holds its writes back
(`Pending`) and `commit` applies them when the outermost transaction ends. Subtle: the
settings point first lists every document about to change (the *journal*); a journalled
document is left out of every read and search until the last write clears the journal.
A crash leaves those documents missing, never half-written, and the next `raglab index`
re-adds them (a commit also finishes the journal a commit cut short left behind).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from raglab.store._qdrant_points import (
    create_chunk_collection,
    delete_documents,
    point,
    scroll,
    upsert,
)
from raglab.store.qdrant_search import SPARSE_FIELDS, chunk_points, rewrite_stale
from raglab.store.writes import StoredDocument


@dataclass
class Pending:
    """Writes held back by an open transaction, applied when it ends."""

    dim: int | None
    meta: dict[str, Any]
    deleted: set[str] = field(default_factory=set)
    added: dict[str, StoredDocument] = field(default_factory=dict)


def commit(
    client: Any,
    names: tuple[str, str],
    pending: Pending,
    journal: Iterable[str],
    write_meta: Callable[[dict[str, Any]], None],
) -> None:
    """Apply held-back writes to the (records, chunks) collections `names`; the documents
    being changed, and those of the `journal` left by a commit that never finished, stay
    hidden until the last write. `write_meta` writes the settings point."""
    records, chunks = names
    left = set(journal)
    touched = pending.deleted | set(pending.added) | left
    settings = {**pending.meta, "dim": pending.dim}
    if touched:
        write_meta({**settings, "journal": sorted(touched)})
    delete_documents(client, records, chunks, sorted(pending.deleted | left))
    docs = [pending.added[doc_id] for doc_id in sorted(pending.added)]
    if any(doc.chunks for doc in docs):
        create_chunk_collection(client, chunks, pending.dim)
    if client.collection_exists(chunks):
        write_chunks(client, chunks, docs)
    upsert(client, records, [point("document", doc.record) for doc in docs])
    write_meta({**settings, "journal": []})


def write_chunks(client: Any, collection: str, docs: list[StoredDocument]) -> None:
    """Upsert the chunks of `docs`, then rewrite the sparse vectors of the chunks kept
    whose tenant's avgdl moved (`raglab.store.qdrant_search`)."""
    kept = scroll(client, collection, None, payload=list(SPARSE_FIELDS))
    added = [(c, v) for doc in docs for c, v in zip(doc.chunks, doc.vectors)]
    points, avgdl = chunk_points(added, kept)
    upsert(client, collection, points)
    rewrite_stale(client, collection, kept, avgdl)
