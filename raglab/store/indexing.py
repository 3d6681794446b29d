"""The indexing step: bring a store up to date with a corpus.

`sync` re-chunks and re-embeds only new or changed documents and deletes removed ones,
in one transaction; `check_embedder` refuses to query an index with an embedder other
than the one that built it.

Tenants are isolated by construction, learned embedders included. An embedder that
learns its space from a corpus (it has `fit`, like LSA) is fitted once per tenant, on
that tenant's chunks alone, in store order. Tenant T's vectors are made by T's fit; a
question from T is embedded by T's fit (`tenant_embedder`) and scored against T's chunks
only (the store's access filter). Nothing another tenant indexes reaches T's model, T's
vectors or T's scores. The index records one version per tenant (`meta`'s
`embedder_version` maps tenant -> version), and a tenant whose fit did not change keeps
its vectors. An embedder without `fit` (hashing, minilm) embeds a text the same way
whatever the corpus: one version for the whole index, nothing per tenant.

What does not hold within a tenant: groups are an access rule, not a model boundary. A
user only ever sees chunks of their own groups, but the tenant's fit is learned from all
of its chunks, so a document restricted to "hr" shapes the space in which every user of
the tenant is scored: it can move their scores, never what they may read. BM25 has no
such limit, since it is fitted at query time on the principal's readable chunks alone
(`raglab.store.keyword`, or the SQLite store's postings per access partition).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from raglab.embed.embedders import Embedder, is_fittable
from raglab.records import Chunk, DocRecord, Document
from raglab.store.errors import EmbedderMismatch
from raglab.store.protocol import VectorStore
from raglab.store.versions import supersession
from raglab.store.writes import checked_meta


def tenant_embedder(
    store: VectorStore, embedder: Embedder, tenant: str, texts: Sequence[str]
) -> Embedder:
    """The embedder that made `tenant`'s vectors in `store`, to embed that tenant's questions.

    `embedder` itself, unless it is fittable: then its fit on `texts` (the tenant's chunk
    texts in store order, exactly what `sync` fitted it on), checked against the version
    the index recorded for `tenant`.
    """
    if not is_fittable(embedder):
        return embedder
    fitted = _fit(embedder, tenant, texts)
    check_embedder(store, fitted, tenant=tenant)
    return fitted


def check_embedder(store: VectorStore, embedder: Embedder, *, tenant: str | None = None) -> None:
    """Refuse to query `store` with an embedder other than the one that built it.

    Name, dim and version must all match what the index recorded: vectors from two
    different models are not comparable, even when their lengths agree. An index with no
    embedder recorded (filled by hand with `add`) is checked on its dim alone.

    An index built with a fittable embedder records one version per tenant (each tenant's
    fit): with `tenant`, `embedder` is checked as that tenant's fit; without, only its
    name and dim are checked.
    """
    meta = store.meta
    where = f"index {str(store.path)!r}" if hasattr(store, "path") else "the index"
    if meta["embedder_name"] is None:
        if store.dim is not None and embedder.dim != store.dim:
            raise EmbedderMismatch(
                f"{where} holds vectors of dimension {store.dim} but embedder {embedder.name!r} "
                f"makes dimension {embedder.dim}"
            )
        return
    name, dim, recorded = meta["embedder_name"], meta["embedder_dim"], meta["embedder_version"]
    version: str | None = embedder.version
    if isinstance(recorded, dict) and tenant is None:  # fitted per tenant: name and dim only
        recorded = version = None
    elif isinstance(recorded, dict):  # the version of this tenant's fit
        recorded = recorded.get(tenant, "none recorded")
        where += f" (tenant {tenant!r})"
    elif is_fittable(embedder) and name == embedder.name:
        raise EmbedderMismatch(
            f"{where} holds one {name!r} fit for every tenant at once (an older raglab made "
            "it): rebuild it, so that each tenant gets a fit of its own"
        )
    if (name, dim, recorded) != (embedder.name, embedder.dim, version):
        raise EmbedderMismatch(
            f"{where} was built with embedder {_describe(name, dim, recorded)} but the given "
            f"embedder is {_describe(embedder.name, embedder.dim, version)}; query with the "
            "embedder that built the index, or rebuild it"
        )


def _describe(name: str, dim: int | None, version: str | None) -> str:
    """How a message names an embedder; version None: one fit per tenant, not named."""
    settings = "fitted per tenant" if version is None else f"version={version!r}"
    return f"{name!r} (dim={dim}, {settings})"


def _fit(embedder: Any, tenant: str, texts: Sequence[str]) -> Embedder:
    """`embedder` fitted on one tenant's texts; a failed fit names the tenant."""
    try:
        fitted: Embedder = embedder.fit(texts)
        return fitted
    except ValueError as error:
        raise ValueError(
            f"cannot fit embedder {embedder.name!r} on the chunks of tenant {tenant!r}: {error}"
        ) from None


# ---------------------------------------------------------------------------- sync


@dataclass(frozen=True, slots=True)
class SyncReport:
    """What `sync` did, by document id (each tuple sorted).

    `embedder` is the one given (a fittable one stays unfitted: each tenant has its own
    fit, see the module docstring). `embedded` counts the chunks written with a new vector;
    `reused` says how many of them took a vector already in the store (same text, same
    model) instead of calling the embedder; `rebuilt` says why unchanged documents were
    re-indexed too ("" when only changed documents were); `chunker`, the params of the
    chunker that cut them (`Chunker.params()`).
    """

    added: tuple[str, ...]
    updated: tuple[str, ...]
    removed: tuple[str, ...]
    unchanged: tuple[str, ...]
    embedder: Embedder
    embedded: int = 0
    rebuilt: str = ""
    reused: int = 0
    chunker: Mapping[str, object] = field(default_factory=dict)


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

    Everything is re-chunked when the chunker's params changed, and re-embedded when the
    embedder's version differs from the stored one. A chunk whose text is already in the
    store, embedded by the same model, takes the stored vector instead of being embedded
    again (`_stored_vectors`): after an edit only the chunks whose text changed are
    embedded, and re-chunking leaves the chunks that came out the same alone. A fittable embedder is fitted per
    tenant, on that tenant's chunk texts in store order (see the module docstring): when a
    tenant's fit gives a new version, every vector of that tenant is re-embedded, and the
    other tenants keep theirs.

    Chunking and embedding happen before the store is touched, and the writes run in one
    transaction: if anything fails, the previous index stays as it was.
    An embedder with another name or dim than the index's is refused (`EmbedderMismatch`).
    """
    docs = _unique_documents(documents)
    stored, meta = store.documents(), store.meta
    params = checked_meta({"chunker": chunker.params()}, {})["chunker"]
    _refuse_other_embedder(store, meta, embedder)
    split: dict[str, list[Chunk]] = {}
    fits: dict[str, Embedder] = {}  # tenant -> its fit; stays empty unless fittable
    if is_fittable(embedder):
        split = {doc.id: _split_checked(chunker, doc) for doc in docs.values()}
        fits = _fit_per_tenant(embedder, docs, split)
    everything = _rebuild_reason(meta, params, embedder) if stored else ""
    refitted = set() if everything else _refitted_tenants(meta, fits, stored)
    records = {doc_id: DocRecord.of(doc) for doc_id, doc in docs.items()}

    def is_current(doc_id: str) -> bool:
        """Stored as it is now, by the embedder (and tenant fit) in use."""
        same_record = stored[doc_id] == records[doc_id]
        return same_record and not everything and docs[doc_id].tenant not in refitted

    added = [doc_id for doc_id in records if doc_id not in stored]
    kept = [doc_id for doc_id in records if doc_id in stored]
    updated = [doc_id for doc_id in kept if not is_current(doc_id)]
    unchanged = [doc_id for doc_id in kept if is_current(doc_id)]
    removed = sorted(set(stored) - set(records))

    to_write = sorted(added + updated)
    chunks = [
        chunk
        for doc_id in to_write
        for chunk in (split[doc_id] if doc_id in split else _split_checked(chunker, docs[doc_id]))
    ]
    stored_vectors = _stored_vectors(store, meta, embedder, fits) if chunks else {}
    vectors, reused = _embed_chunks(embedder, fits, chunks, stored_vectors)
    with store.transaction():
        for doc_id in removed + updated:
            store.delete_document(doc_id)
        store.add(chunks, vectors, documents=[records[doc_id] for doc_id in to_write])
        store.set_meta(
            {
                "embedder_name": embedder.name,
                "embedder_dim": embedder.dim,
                "embedder_version": _version_to_record(embedder, fits),
                "chunker": params,
                "superseded": supersession(docs.values()),
            }
        )
    return SyncReport(
        tuple(added),
        tuple(updated),
        tuple(removed),
        tuple(unchanged),
        embedder,
        len(chunks),
        everything or _refit_reason(refitted),
        reused,
        chunker.params(),
    )


def _version_to_record(embedder: Embedder, fits: dict[str, Embedder]) -> str | dict[str, str]:
    """What `meta["embedder_version"]` holds: the version, or each tenant's fit's version."""
    if is_fittable(embedder):
        return {tenant: fit.version for tenant, fit in fits.items()}
    return embedder.version


def _fit_per_tenant(
    embedder: Embedder, docs: dict[str, Document], split: dict[str, list[Chunk]]
) -> dict[str, Embedder]:
    """The embedder fitted on each tenant's chunk texts alone, in store order.

    Store order is by document id, then chunk index: the order in which the query path
    reads a tenant's chunks back (`tenant_embedder`), so both make the same fit.
    """
    texts: dict[str, list[str]] = {}
    for doc_id, doc in docs.items():  # sorted by id
        chunks = sorted(split[doc_id], key=lambda chunk: chunk.index)
        texts.setdefault(doc.tenant, []).extend(chunk.indexed_text for chunk in chunks)
    return {
        tenant: _fit(embedder, tenant, tenant_texts)
        for tenant, tenant_texts in sorted(texts.items())
        if tenant_texts  # a tenant of empty documents has no chunk to embed
    }


def _refitted_tenants(
    meta: dict[str, Any], fits: dict[str, Embedder], stored: dict[str, DocRecord]
) -> set[str]:
    """Tenants with stored chunks whose fit changed: all their vectors are out of date."""
    recorded = meta["embedder_version"] if isinstance(meta["embedder_version"], dict) else {}
    stored_tenants = {record.tenant for record in stored.values()}
    return {
        tenant
        for tenant, fit in fits.items()
        if tenant in stored_tenants and recorded.get(tenant) != fit.version
    }


def _refit_reason(tenants: set[str]) -> str:
    if not tenants:
        return ""
    return f"embedder refitted on the chunks of tenant(s) {', '.join(map(repr, sorted(tenants)))}"


def _stored_vectors(
    store: VectorStore, meta: dict[str, Any], embedder: Embedder, fits: dict[str, Embedder]
) -> dict[tuple[str, str], np.ndarray]:
    """The store's vectors that the embedder in use would make again, by (tenant, text).

    The embedding cache: a vector is reused only when both its text and the model that
    made it are unchanged — the same embedder name, dim and version; for a fittable
    embedder, the same tenant and the same version of that tenant's fit, so one tenant's
    fitted vectors never serve another (the tenant is "" for other embedders, whose
    vectors do not depend on the corpus). The text itself is the key: no hash collision
    can hand back another text's vector.
    """
    if (meta["embedder_name"], meta["embedder_dim"]) != (embedder.name, embedder.dim):
        return {}
    recorded = meta["embedder_version"]
    if is_fittable(embedder):
        recorded = recorded if isinstance(recorded, dict) else {}
        tenants = {tenant for tenant, fit in fits.items() if recorded.get(tenant) == fit.version}
        if not tenants:
            return {}
    elif recorded != embedder.version:
        return {}
    vectors = store.vectors()
    cache: dict[tuple[str, str], np.ndarray] = {}
    for row, chunk in enumerate(store.chunks()):
        scope = chunk.tenant if fits else ""
        if not fits or scope in tenants:
            cache.setdefault((scope, chunk.indexed_text), vectors[row])
    return cache


def _embed_chunks(
    embedder: Embedder,
    fits: dict[str, Embedder],
    chunks: list[Chunk],
    stored: dict[tuple[str, str], np.ndarray],
) -> tuple[np.ndarray, int]:
    """(one vector per chunk, how many were taken from `stored` instead of embedded).

    A chunk is embedded by `embedder`, or by its tenant's fit when there are `fits`.
    """
    vectors = np.zeros((len(chunks), embedder.dim), dtype=np.float32)
    to_embed: dict[str, list[int]] = {}  # tenant ("" without fits) -> rows
    for row, chunk in enumerate(chunks):
        scope = chunk.tenant if fits else ""
        if (scope, chunk.indexed_text) in stored:
            vectors[row] = stored[(scope, chunk.indexed_text)]
        else:
            to_embed.setdefault(scope, []).append(row)
    for scope, rows in to_embed.items():
        model = fits[scope] if fits else embedder
        vectors[rows] = _embed_checked(model, [chunks[row].indexed_text for row in rows])
    return vectors, len(chunks) - sum(map(len, to_embed.values()))


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
        recorded = meta["embedder_version"]
        version = None if isinstance(recorded, dict) else recorded  # a dict: one per tenant
        stored = _describe(meta["embedder_name"], store.dim, version)
        raise EmbedderMismatch(
            f"the index was built with embedder {stored} but sync was given "
            f"{_describe(embedder.name, embedder.dim, embedder.version)}; "
            "build a new index for another embedder"
        )


def _rebuild_reason(meta: dict[str, Any], params: dict[str, Any], embedder: Embedder) -> str:
    """Why every stored chunk is out of date, or "" when only changed documents (or tenants) are."""
    recorded = meta["embedder_version"]
    if recorded is None:
        return "the index records no embedder"
    if is_fittable(embedder) and not isinstance(recorded, dict):
        return "the index holds one embedder fit for every tenant: each tenant now gets its own"
    if not is_fittable(embedder) and recorded != embedder.version:
        return f"embedder version changed ({recorded!r} -> {embedder.version!r})"
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
