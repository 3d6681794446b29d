"""The indexing step: bring a store up to date with a corpus.

`sync` re-chunks and re-embeds only new or changed documents and deletes removed ones,
in one transaction; `check_embedder` refuses to query an index with an embedder other
than the one that built it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Protocol

import numpy as np

from raglab.embedders import Embedder
from raglab.records import Chunk, Document
from raglab.stores import (
    DocRecord,
    EmbedderMismatch,
    SyncReport,
    VectorStore,
    _checked_meta,
)


def check_embedder(store: VectorStore, embedder: Embedder) -> None:
    """Refuse to query `store` with an embedder other than the one that built it.

    Name, dim and version must all match what the index recorded: vectors from two
    different models are not comparable, even when their lengths agree. An index with no
    embedder recorded (filled by hand with `add`) is checked on its dim alone.
    """
    meta = store.meta
    given = (embedder.name, embedder.dim, embedder.version)
    where = f"index {str(store.path)!r}" if hasattr(store, "path") else "the index"
    if meta["embedder_name"] is None:
        if store.dim is not None and embedder.dim != store.dim:
            raise EmbedderMismatch(
                f"{where} holds vectors of dimension {store.dim} but embedder {embedder.name!r} "
                f"makes dimension {embedder.dim}"
            )
        return
    stored = (meta["embedder_name"], meta["embedder_dim"], meta["embedder_version"])
    if stored != given:
        raise EmbedderMismatch(
            f"{where} was built with embedder {_describe(*stored)} but the given embedder is "
            f"{_describe(*given)}; query with the embedder that built the index, or rebuild it"
        )


def _describe(name: str, dim: int, version: str) -> str:
    return f"{name!r} (dim={dim}, version={version!r})"


# ---------------------------------------------------------------------------- sync


class _Chunker(Protocol):
    def split(self, doc: Document) -> list[Chunk]: ...

    def params(self) -> dict[str, Any]: ...


def sync(
    store: VectorStore, documents: Iterable[Document], *, chunker: _Chunker, embedder: Embedder
) -> SyncReport:
    """Bring `store` up to date with `documents`, embedding only what changed.

    Each document's record (version, content hash, tenant, groups, title) is compared with
    the stored one: new documents are added, changed ones re-chunked and re-embedded,
    documents no longer present deleted with their chunks and vectors, and the rest left
    untouched. Access metadata counts as a change: a document moved to another group is
    re-indexed even when its text did not change.

    Everything is re-chunked and re-embedded when the chunker's params changed, or when
    the embedder's version differs from the stored one. A fittable embedder (one with
    `.fit`) is first fitted on every chunk text of the new corpus, in store order: a
    fitted model changes with its corpus, so when the fit gives a new version, every
    stored vector is out of date and every chunk is re-embedded.

    Chunking and embedding happen before the store is touched, and the writes run in one
    transaction: if anything fails, the previous index stays as it was.
    An embedder with another name or dim than the index's is refused (`EmbedderMismatch`).
    """
    docs = _unique_documents(documents)
    stored, meta = store.documents(), store.meta
    params = _checked_meta({"chunker": chunker.params()}, {})["chunker"]
    split: dict[str, list[Chunk]] = {}
    if hasattr(embedder, "fit"):
        split = {doc.id: _split_checked(chunker, doc) for doc in docs.values()}
        embedder = embedder.fit([chunk.text for doc_id in docs for chunk in split[doc_id]])
    _refuse_other_embedder(store, meta, embedder)
    rebuilt = _rebuild_reason(meta, params, embedder) if stored else ""

    records = {doc_id: DocRecord.of(doc) for doc_id, doc in docs.items()}
    added = [doc_id for doc_id in records if doc_id not in stored]
    kept = [doc_id for doc_id in records if doc_id in stored]
    updated = [doc_id for doc_id in kept if rebuilt or stored[doc_id] != records[doc_id]]
    unchanged = [doc_id for doc_id in kept if not rebuilt and stored[doc_id] == records[doc_id]]
    removed = sorted(set(stored) - set(records))

    to_write = sorted(added + updated)
    chunks = [
        chunk
        for doc_id in to_write
        for chunk in split.get(doc_id) or _split_checked(chunker, docs[doc_id])
    ]
    vectors = _embed_checked(embedder, [chunk.text for chunk in chunks])
    with store.transaction():
        for doc_id in removed + updated:
            store.delete_document(doc_id)
        store.add(chunks, vectors, documents=[records[doc_id] for doc_id in to_write])
        store.set_meta(
            {
                "embedder_name": embedder.name,
                "embedder_dim": embedder.dim,
                "embedder_version": embedder.version,
                "chunker": params,
            }
        )
    return SyncReport(
        tuple(added),
        tuple(updated),
        tuple(removed),
        tuple(unchanged),
        embedder,
        len(chunks),
        rebuilt,
    )


def _unique_documents(documents: Iterable[Document]) -> dict[str, Document]:
    """Documents by id, sorted by id (store order); a repeated id is an error."""
    by_id: dict[str, Document] = {}
    for doc in documents:
        if doc.id in by_id:
            raise ValueError(f"document id {doc.id!r} appears twice in the corpus")
        by_id[doc.id] = doc
    return {doc_id: by_id[doc_id] for doc_id in sorted(by_id)}


def _split_checked(chunker: _Chunker, doc: Document) -> list[Chunk]:
    """The chunker's chunks for `doc`, checked: right document, access metadata, offsets."""
    chunks = list(chunker.split(doc))
    for chunk in chunks:
        if (
            chunk.doc_id != doc.id
            or chunk.tenant != doc.tenant
            or set(chunk.groups) != set(doc.groups)
        ):
            raise ValueError(
                f"chunker returned chunk {chunk.id!r} (tenant {chunk.tenant!r}, groups "
                f"{chunk.groups}) for document {doc.id!r} (tenant {doc.tenant!r}, groups "
                f"{doc.groups}): chunks must carry "
                "their document's id and access metadata"
            )
        if doc.text[chunk.start : chunk.end] != chunk.text:
            raise ValueError(
                f"chunker returned chunk {chunk.id!r} whose text is not "
                f"doc.text[{chunk.start}:{chunk.end}]"
            )
    return chunks


def _refuse_other_embedder(store: VectorStore, meta: dict[str, Any], embedder: Embedder) -> None:
    """An index holds one embedder's vectors: another name or dim is refused, never mixed in."""
    name_differs = meta["embedder_name"] is not None and meta["embedder_name"] != embedder.name
    dim_differs = store.dim is not None and store.dim != embedder.dim
    if name_differs or dim_differs:
        stored = _describe(meta["embedder_name"], store.dim, meta["embedder_version"])
        raise EmbedderMismatch(
            f"the index was built with embedder {stored} but sync was given "
            f"{_describe(embedder.name, embedder.dim, embedder.version)}; "
            "build a new index for another embedder"
        )


def _rebuild_reason(meta: dict[str, Any], params: dict[str, Any], embedder: Embedder) -> str:
    """Why every stored chunk is out of date, or "" when only changed documents are."""
    if meta["embedder_version"] is None:
        return "the index records no embedder"
    if meta["embedder_version"] != embedder.version:
        return f"embedder version changed ({meta['embedder_version']!r} -> {embedder.version!r})"
    if meta["chunker"] != params:
        return f"chunker params changed ({meta['chunker']} -> {params})"
    return ""


def _embed_checked(embedder: Embedder, texts: list[str]) -> np.ndarray:
    """The embedder's vectors for `texts`, checked to be one row of `embedder.dim` per text."""
    if not texts:
        return np.zeros((0, embedder.dim), dtype=np.float32)
    vectors = np.asarray(embedder.embed(texts), dtype=np.float32)
    if vectors.shape != (len(texts), embedder.dim):
        raise ValueError(
            f"embedder {embedder.name!r} returned shape {vectors.shape} for {len(texts)} texts "
            f"(expected ({len(texts)}, {embedder.dim}))"
        )
    return vectors
