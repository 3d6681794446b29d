"""The indexing step: bring a store up to date with a corpus.

`sync` re-chunks and re-embeds only new or changed documents and deletes removed ones,
in one transaction; `check_embedder` refuses to query an index with an embedder other
than the one that built it.

Who may read a chunk decides what its score may depend on, learned embedders included.
An embedder that learns its space from a corpus (it has `fit`, like LSA) is fitted once
per access partition (`raglab.records.Partition`: one tenant, one set of groups), on the
partition's own chunks and its tenant's public chunks (`fit_chunks`), in store order:
exactly what every reader of the partition may read, and nothing else. A chunk's vector
is made by its partition's fit; a question is embedded once per partition its asker may
read (`partition_embedder`), and each partition's chunks are scored with their own fit's
vector of it (`raglab.query.Retriever.dense`, through the store's `partition` filter).

So a score depends only on text every reader of the scored chunk may read. A document of
"board" shapes the fit of the "board" partition alone: a user outside "board" is never
scored with it (their partitions' fits never saw it), and a public chunk is always scored
with the public fit, by every user. Nothing another tenant indexes, nor another group of
the same tenant, reaches a user's model, vectors or scores; BM25 holds the same rule,
fitted on the principal's readable chunks alone (`raglab.store.keyword`, or the SQLite
store's postings per access partition).

Why not one fit per tenant on its public chunks alone (no restricted text either, and one
space for every user)? The vectors of a restricted document would then know only the
public words, and its own readers would find it lower: measured on the sample questions
in ARCHITECTURE.md ("The two visibility rules"). The price of a fit per partition: each
one learns its tenant's public chunks again, a question is embedded once per partition
its asker may read, and cosines from different fits are ranked together.

The index records one version per partition (`meta`'s `embedder_version` maps tenant ->
groups as JSON -> version): which fit made which vectors. A partition whose fit did not
change keeps its vectors; a changed public partition changes every fit of its tenant. An
embedder without `fit` (hashing, minilm) embeds a text the same way whatever the corpus:
one version for the whole index, nothing per partition.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from raglab.embed.embedders import Embedder, is_fittable
from raglab.progress import Progress, Reporter
from raglab.records import Chunk, DocRecord, Document, Partition
from raglab.store.errors import EmbedderMismatch
from raglab.store.protocol import VectorStore
from raglab.store.versions import supersession
from raglab.store.writes import checked_meta


def fit_chunks(chunks: Iterable[Chunk], part: Partition) -> list[Chunk]:
    """The chunks the fit of partition `part` learns from, in the order given (store order):
    its own and its tenant's public ones, which every reader of `part` may read."""
    public = Partition(part.tenant)
    return [chunk for chunk in chunks if Partition.of(chunk) in (part, public)]


def partition_embedder(
    store: VectorStore, embedder: Embedder, part: Partition, texts: Sequence[str]
) -> Embedder:
    """The embedder that made the vectors of partition `part` in `store`, to embed questions.

    `embedder` itself, unless it is fittable: then its fit on `texts` (the texts of
    `fit_chunks` in store order, exactly what `sync` fitted it on), checked against the
    version the index recorded for `part`.
    """
    if not is_fittable(embedder):
        return embedder
    fitted = _fit(embedder, part, texts)
    check_embedder(store, fitted, partition=part)
    return fitted


def check_embedder(
    store: VectorStore, embedder: Embedder, *, partition: Partition | None = None
) -> None:
    """Refuse to query `store` with an embedder other than the one that built it.

    Name, dim and version must all match what the index recorded: vectors from two
    different models are not comparable, even when their lengths agree. An index with no
    embedder recorded (filled by hand with `add`) is checked on its dim alone.

    An index built with a fittable embedder records one version per access partition
    (each partition's fit): with `partition`, `embedder` is checked as that partition's
    fit; without, only its name and dim are checked.
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
    if isinstance(recorded, dict) and partition is None:  # fitted per partition: name and dim
        recorded = version = None
    elif _per_partition(recorded) and partition is not None:  # this partition's fit
        recorded = recorded.get(partition.tenant, {}).get(partition.groups_json, "none recorded")
        where += f" (tenant {partition.tenant!r}, groups {list(partition.groups)})"
    elif is_fittable(embedder) and name == embedder.name:
        raise EmbedderMismatch(
            f"{where} holds a {name!r} fit that is not per access partition (an older raglab "
            "made it): rebuild it, so that each partition gets a fit of its own"
        )
    if (name, dim, recorded) != (embedder.name, embedder.dim, version):
        raise EmbedderMismatch(
            f"{where} was built with embedder {_describe(name, dim, recorded)} but the given "
            f"embedder is {_describe(embedder.name, embedder.dim, version)}; query with the "
            "embedder that built the index, or rebuild it"
        )


def _per_partition(recorded: object) -> bool:
    """Whether a recorded `embedder_version` holds one version per access partition
    (tenant -> groups -> version), as `sync` writes it for a fittable embedder."""
    return isinstance(recorded, dict) and all(isinstance(v, dict) for v in recorded.values())


def _describe(name: str, dim: int | None, version: str | None) -> str:
    """How a message names an embedder; version None: one fit per partition, not named."""
    settings = "fitted per access partition" if version is None else f"version={version!r}"
    return f"{name!r} (dim={dim}, {settings})"


def _fit(embedder: Any, part: Partition, texts: Sequence[str]) -> Embedder:
    """`embedder` fitted on one partition's texts; a failed fit names the partition."""
    try:
        fitted: Embedder = embedder.fit(texts)
        return fitted
    except ValueError as error:
        raise ValueError(
            f"cannot fit embedder {embedder.name!r} on the chunks of tenant {part.tenant!r}, "
            f"groups {list(part.groups)}: {error}"
        ) from None


# ---------------------------------------------------------------------------- sync


@dataclass(frozen=True, slots=True)
class SyncReport:
    """What `sync` did, by document id (each tuple sorted).

    `embedder` is the one given (a fittable one stays unfitted: each access partition has
    its own fit, see the module docstring). `embedded` counts the chunks written with a new vector;
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


PROGRESS_BATCH = 32
"""Texts embedded between two progress reports: one MiniLM batch (a second or three on a
laptop's CPU), so that reporting never changes how texts are batched."""


def sync(
    store: VectorStore,
    documents: Iterable[Document],
    *,
    chunker: _Chunker,
    embedder: Embedder,
    progress: Reporter | None = None,
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
    embedded, and re-chunking leaves the chunks that came out the same alone. A fittable
    embedder is fitted per access partition, on the texts of `fit_chunks` in store order
    (see the module docstring): when a partition's fit gives a new version, every vector
    of that partition is re-embedded, and the other partitions keep theirs.

    Chunking and embedding happen before the store is touched, and the writes run in one
    transaction: if anything fails, the previous index stays as it was. `progress`, when
    given, hears how many chunks are embedded every `PROGRESS_BATCH` texts
    (`raglab.progress`). An embedder with another name or dim than the index's is refused (`EmbedderMismatch`).
    """
    docs = _unique_documents(documents)
    stored, meta = store.documents(), store.meta
    params = checked_meta({"chunker": chunker.params()}, {})["chunker"]
    _refuse_other_embedder(store, meta, embedder)
    split: dict[str, list[Chunk]] = {}
    fits: dict[Partition, Embedder] = {}  # partition -> its fit; stays empty unless fittable
    if is_fittable(embedder):
        split = {doc.id: _split_checked(chunker, doc) for doc in docs.values()}
        fits = _fit_per_partition(embedder, split)
    everything = _rebuild_reason(meta, params, embedder) if stored else ""
    refitted = set() if everything else _refitted_partitions(meta, fits, stored)
    records = {doc_id: DocRecord.of(doc) for doc_id, doc in docs.items()}

    def is_current(doc_id: str) -> bool:
        """Stored as it is now, by the embedder (and partition fit) in use."""
        same_record = stored[doc_id] == records[doc_id]
        return same_record and not everything and Partition.of(docs[doc_id]) not in refitted

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
    stored_vectors = _stored_vectors(store, meta, embedder) if chunks else {}
    vectors, reused = _embed_chunks(embedder, fits, chunks, stored_vectors, progress)
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
                # the answerer's calibration describes the documents it was computed on
                **({"calibration": None} if to_write or removed else {}),
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


def _version_to_record(
    embedder: Embedder, fits: dict[Partition, Embedder]
) -> str | dict[str, dict[str, str]]:
    """What `meta["embedder_version"]` holds: the version, or each partition's fit's version
    (tenant -> groups as JSON -> version)."""
    if not is_fittable(embedder):
        return embedder.version
    recorded: dict[str, dict[str, str]] = {}
    for part, fit in fits.items():
        recorded.setdefault(part.tenant, {})[part.groups_json] = fit.version
    return recorded


def _fit_per_partition(
    embedder: Embedder, split: dict[str, list[Chunk]]
) -> dict[Partition, Embedder]:
    """The embedder fitted for each access partition that has chunks, on `fit_chunks`.

    Store order is by document id, then chunk index: the order in which the query path
    reads the chunks back (`raglab.query`), so both make the same fit.
    """
    by_tenant: dict[str, list[Chunk]] = {}
    for doc_id in sorted(split):
        chunks = sorted(split[doc_id], key=lambda chunk: chunk.index)
        for chunk in chunks:
            by_tenant.setdefault(chunk.tenant, []).append(chunk)
    return {
        part: _fit(embedder, part, [chunk.indexed_text for chunk in fit_chunks(chunks, part)])
        for tenant, chunks in sorted(by_tenant.items())
        for part in sorted({Partition.of(chunk) for chunk in chunks})
    }


def _recorded_version(meta: dict[str, Any], part: Partition) -> str | None:
    """The version the index records for the fit of partition `part` (None: none)."""
    recorded = meta["embedder_version"]
    if not _per_partition(recorded):
        return None
    version: str | None = recorded.get(part.tenant, {}).get(part.groups_json)
    return version


def _refitted_partitions(
    meta: dict[str, Any], fits: dict[Partition, Embedder], stored: dict[str, DocRecord]
) -> set[Partition]:
    """Partitions with stored chunks whose fit changed: all their vectors are out of date."""
    stored_parts = {Partition.of(record) for record in stored.values()}
    return {
        part
        for part, fit in fits.items()
        if part in stored_parts and _recorded_version(meta, part) != fit.version
    }


def _refit_reason(parts: set[Partition]) -> str:
    if not parts:
        return ""
    named = ", ".join(f"{part.tenant!r} {list(part.groups)}" for part in sorted(parts))
    return f"embedder refitted on the chunks of partition(s) {named}"


def _stored_vectors(
    store: VectorStore, meta: dict[str, Any], embedder: Embedder
) -> dict[tuple[str, str], np.ndarray]:
    """The store's vectors by (version of the model that made them, text).

    The embedding cache: a vector is reused only when both its text and the model that
    made it are unchanged — the same embedder name and dim, and the same version: the
    index's, or for a fittable embedder the one recorded for the chunk's partition (a fit's
    version names the texts it learned, so an equal version is an equal model). The text
    itself is the key: no hash collision can hand back another text's vector.
    """
    if (meta["embedder_name"], meta["embedder_dim"]) != (embedder.name, embedder.dim):
        return {}
    vectors = store.vectors()
    cache: dict[tuple[str, str], np.ndarray] = {}
    for row, chunk in enumerate(store.chunks()):
        version = (
            _recorded_version(meta, Partition.of(chunk))
            if is_fittable(embedder)
            else meta["embedder_version"]
        )
        if isinstance(version, str):
            cache.setdefault((version, chunk.indexed_text), vectors[row])
    return cache


def _embed_chunks(
    embedder: Embedder,
    fits: dict[Partition, Embedder],
    chunks: list[Chunk],
    stored: dict[tuple[str, str], np.ndarray],
    progress: Reporter | None = None,
) -> tuple[np.ndarray, int]:
    """(one vector per chunk, how many were taken from `stored` instead of embedded).

    A chunk is embedded by `embedder`, or by its partition's fit when there are `fits`;
    `PROGRESS_BATCH` texts at a time, each batch reported to `progress`.
    """
    vectors = np.zeros((len(chunks), embedder.dim), dtype=np.float32)
    to_embed: dict[str, list[int]] = {}  # model version -> rows
    models: dict[str, Embedder] = {}
    for row, chunk in enumerate(chunks):
        model = fits[Partition.of(chunk)] if fits else embedder
        if (model.version, chunk.indexed_text) in stored:
            vectors[row] = stored[(model.version, chunk.indexed_text)]
        else:
            to_embed.setdefault(model.version, []).append(row)
            models[model.version] = model
    reused = len(chunks) - sum(map(len, to_embed.values()))
    done, found_before = reused, _found_in_cache(embedder)

    def report() -> None:
        if progress is not None:
            cached = reused + _found_in_cache(embedder) - found_before
            progress(Progress("embedding", done, len(chunks), "chunks", cached))

    report()
    for version, rows in to_embed.items():
        for start in range(0, len(rows), PROGRESS_BATCH):
            batch = rows[start : start + PROGRESS_BATCH]
            texts = [chunks[row].indexed_text for row in batch]
            vectors[batch] = _embed_checked(models[version], texts)
            done += len(batch)
            report()
    return vectors, reused


def _found_in_cache(embedder: Embedder) -> int:
    """How many vectors the embedding cache has handed back so far (0 without one).

    Read by name (`CachedEmbedder.counts.found`), not by importing the cache's module: the
    query path, which imports this one, must not load what only indexing needs.
    """
    return int(getattr(getattr(embedder, "counts", None), "found", 0))


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
        version = None if isinstance(recorded, dict) else recorded  # a dict: one per partition
        stored = _describe(meta["embedder_name"], store.dim, version)
        raise EmbedderMismatch(
            f"the index was built with embedder {stored} but sync was given "
            f"{_describe(embedder.name, embedder.dim, embedder.version)}; "
            "build a new index for another embedder"
        )


def _rebuild_reason(meta: dict[str, Any], params: dict[str, Any], embedder: Embedder) -> str:
    """Why every stored chunk is out of date, or "" when only changed documents (or
    partitions) are."""
    recorded = meta["embedder_version"]
    if recorded is None:
        return "the index records no embedder"
    if is_fittable(embedder) and not _per_partition(recorded):
        return (
            "the index's embedder fits are not per access partition: each partition now "
            "gets its own"
        )
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
