"""How raglab's records map onto Qdrant: point ids, payloads, filters, and the client.

Kept apart from `raglab.store.qdrant_store`, which reads as the store's logic; everything here
is the translation to qdrant-client's types (imported lazily: it is optional).
"""

from __future__ import annotations

import dataclasses
import time
import uuid
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from raglab.ingest.stems import chunk_stems
from raglab.records import Chunk, DocRecord, Partition, Principal
from raglab.store.errors import StoreError

INSTALL_HINT = "pip install raglab[qdrant]"

BATCH = 256
"""Points per request: bounds the size of one upload or one page of a scroll."""

KEYWORD_FIELDS = ("tenant", "groups", "doc_id", "stems")
"""Payload fields the queries filter on; each gets a keyword index. `stems`: the content
stems of the chunk's title, heading and text, which the answerer looks up
(`QdrantStore.known_stems`)."""

TERMS = "terms"
"""The payload field of a chunk's term ids (its sparse vector's indices), integer-indexed:
server keyword search counts in it how many readable chunks hold a word
(`raglab.store.qdrant_search`)."""

CHUNK_FIELDS = [field.name for field in dataclasses.fields(Chunk)]
"""The payload fields a chunk is read back from: reads ask for these alone, not for the
stems and term ids its point also holds to be filtered on."""

LOCK_WAIT_SECONDS = 10.0
"""How long opening a local folder waits for another process to let go of it (local mode
allows one client per folder at a time: that is its writer lock, readers included)."""

_NAMESPACE = uuid.UUID("6f1c3e52-8a0e-4d7b-9a57-2f1b0c9d4e11")
"""Point ids are uuid5 of this and a name: the same chunk always gets the same id."""

Item = TypeVar("Item", Chunk, DocRecord)


def qdrant() -> Any:
    """qdrant-client, imported only when a Qdrant store is used (an optional dependency)."""
    try:
        import qdrant_client
    except ImportError:
        raise RuntimeError(
            f"the Qdrant store needs the qdrant-client package: {INSTALL_HINT}"
        ) from None
    return qdrant_client


def point_id(kind: str, name: str) -> str:
    """The id of the point holding a chunk, a document record or the settings ("meta")."""
    return str(uuid.uuid5(_NAMESPACE, f"{kind}:{name}"))


META_ID = point_id("meta", "")

SPARSE_NAME = "bm25"
"""The name of each chunk point's sparse vector (`raglab.store.qdrant_search`)."""


# ---------------------------------------------------------------------------- points


def point(kind: str, item: DocRecord) -> Any:
    """A document record as a Qdrant point (no vector)."""
    payload = {**dataclasses.asdict(item), "groups": list(item.groups), "kind": kind}
    return qdrant().models.PointStruct(id=point_id(kind, item.id), vector={}, payload=payload)


def chunk_point(chunk: Chunk, vector: np.ndarray, sparse: Any, avgdl: float, length: int) -> Any:
    """A chunk as a Qdrant point: its unit vector (unnamed), its BM25 sparse vector (named
    `SPARSE_NAME`) and that vector's term ids (`TERMS`), its length in tokens, the avgdl
    its sparse vector was written with, and its content stems."""
    payload = {**dataclasses.asdict(chunk), "groups": list(chunk.groups)}
    vectors = {"": vector.tolist(), SPARSE_NAME: sparse}
    stems = sorted(chunk_stems(chunk))
    extra = {"kind": "chunk", "length": length, "avgdl": avgdl, "stems": stems}
    extra[TERMS] = list(sparse.indices)
    return qdrant().models.PointStruct(
        id=point_id("chunk", chunk.id), vector=vectors, payload={**payload, **extra}
    )


def dense(vector: Any) -> list[float]:
    """The unnamed dense vector of a point read with its vectors (a dict once it has two)."""
    values: list[float] = vector[""] if isinstance(vector, dict) else vector
    return values


def meta_point(payload: dict[str, Any]) -> Any:
    return qdrant().models.PointStruct(id=META_ID, vector={}, payload=payload)


def from_payload(cls: type[Item], payload: dict[str, Any]) -> Item:
    """The chunk or record a payload holds (groups back to a tuple, "kind" left out)."""
    fields = {f.name: payload[f.name] for f in dataclasses.fields(cls)}
    return cls(**{**fields, "groups": tuple(payload["groups"])})


def store_order(chunk: Chunk) -> tuple[str, int]:
    """Every store's order: document id, then chunk index (Python str order = SQLite's)."""
    return chunk.doc_id, chunk.index


# ---------------------------------------------------------------------------- filters


def field_is(key: str, value: str | int) -> Any:
    models = qdrant().models
    return models.FieldCondition(key=key, match=models.MatchValue(value=value))


def field_in(key: str, values: Sequence[str]) -> Any:
    models = qdrant().models
    return models.FieldCondition(key=key, match=models.MatchAny(any=list(values)))


def readable_filter(principal: Principal | None, hidden: Sequence[str] = ()) -> Any:
    """The Qdrant filter for the chunks `principal` may read (all, if None), less `hidden` documents.

    The access rule of `raglab.store.access`: the principal's tenant, and no groups or a shared one.
    Public as `raglab.store.qdrant_store.readable_filter`.
    """
    models = qdrant().models
    must_not = [field_in("doc_id", hidden)] if hidden else None
    if principal is None:
        return models.Filter(must_not=must_not)
    open_to_all = models.IsEmptyCondition(is_empty=models.PayloadField(key="groups"))
    in_a_group = [field_in("groups", sorted(principal.groups))] if principal.groups else []
    return models.Filter(
        must=[field_is("tenant", principal.tenant)],
        should=[open_to_all, *in_a_group],  # at least one of them
        must_not=must_not,
    )


def within_partition(shown: Any, part: Partition) -> Any:
    """The filter `shown`, narrowed to the chunks of access partition `part`: its tenant and
    exactly its groups (each of them, and no more values than it has)."""
    models = qdrant().models
    if part.groups:
        count = models.ValuesCount(lte=len(part.groups))
        groups = [
            *(field_is("groups", group) for group in part.groups),
            models.FieldCondition(key="groups", values_count=count),
        ]
    else:
        groups = [models.IsEmptyCondition(is_empty=models.PayloadField(key="groups"))]
    return models.Filter(must=[shown, field_is("tenant", part.tenant), *groups])


# ---------------------------------------------------------------------------- collections


def create_chunk_collection(client: Any, name: str, dim: int | None) -> None:
    """The chunks' collection (if missing): a unit vector and a BM25 sparse vector a point;
    and its payload indexes (those missing: a crash may have come between the two)."""
    models = qdrant().models
    if not client.collection_exists(name):
        # DOT, not COSINE: rows and queries are unit length already, and Qdrant would
        # otherwise re-normalise the vectors it stores (the bits would differ from ours).
        config = models.VectorParams(size=dim, distance=models.Distance.DOT)
        # No IDF modifier: raglab weighs the query by idf itself, counted under the asker's
        # access filter (`raglab.store.qdrant_search`), never by the server's statistics.
        sparse = {SPARSE_NAME: models.SparseVectorParams()}
        client.create_collection(name, vectors_config=config, sparse_vectors_config=sparse)
    schemas = dict.fromkeys(KEYWORD_FIELDS, models.PayloadSchemaType.KEYWORD)
    schemas[TERMS] = models.PayloadSchemaType.INTEGER
    indexed = client.get_collection(name).payload_schema
    with warnings.catch_warnings():  # local mode warns that it scans without indexes
        warnings.simplefilter("ignore", UserWarning)
        for field, schema in schemas.items():
            if field not in indexed:
                client.create_payload_index(name, field, field_schema=schema)


def delete_documents(client: Any, records: str, chunks: str, doc_ids: Sequence[str]) -> None:
    """Delete the records and the chunks of `doc_ids`, BATCH documents a request."""
    models = qdrant().models
    for start in range(0, len(doc_ids), BATCH):
        batch = list(doc_ids[start : start + BATCH])
        ids = [point_id("document", d) for d in batch]
        client.delete(records, points_selector=models.PointIdsList(points=ids))
        if client.collection_exists(chunks):
            of_docs = models.Filter(must=[field_in("doc_id", batch)])
            client.delete(chunks, points_selector=models.FilterSelector(filter=of_docs))


def count(client: Any, collection: str, where: Any) -> int:
    """How many points of `collection` the filter `where` lets through (an exact count)."""
    found: int = client.count(collection, count_filter=where, exact=True).count
    return found


def upsert(client: Any, collection: str, points: list[Any]) -> None:
    for start in range(0, len(points), BATCH):
        client.upsert(collection, points=points[start : start + BATCH], wait=True)


def scroll(
    client: Any, collection: str, scroll_filter: Any, *, vectors: Any = False, payload: Any = True
) -> list[Any]:
    """Every point `scroll_filter` lets through, read a page at a time."""
    points, offset = [], None
    while True:
        page, offset = client.scroll(
            collection,
            scroll_filter=scroll_filter,
            limit=BATCH * 4,
            offset=offset,
            with_vectors=vectors,
            with_payload=payload,
        )
        points.extend(page)
        if offset is None:
            return points


# ---------------------------------------------------------------------------- connecting


def connect(path: str | Path, url: str | None, *, must_exist: bool) -> tuple[Any, str, str]:
    """(client, collections' name, how messages name the index) for a folder or a server."""
    if url is not None:
        name, where = str(path), f"Qdrant index {str(path)!r} at {url}"
        # Reachability is checked just below, with a clearer message than the version check's.
        client = qdrant().QdrantClient(url=url, check_compatibility=False)
        try:
            exists = client.collection_exists(f"{name}_records")
        except Exception as error:  # connection refused, timeout, TLS, HTTP errors
            raise StoreError(f"cannot reach the Qdrant server at {url} ({error})") from None
        if must_exist and not exists:
            raise StoreError(f"{where} does not exist: run raglab index first")
        return client, name, where
    folder = Path(path)
    where = f"index folder {str(folder)!r}"
    if folder.exists() and not folder.is_dir():
        raise StoreError(f"{where} is not a folder")
    if must_exist and not folder.exists():
        raise StoreError(f"{where} does not exist")
    if folder.exists() and any(folder.iterdir()) and not (folder / "meta.json").is_file():
        # Never write Qdrant's files into someone's own folder.
        raise StoreError(f"{where} is not a raglab index (not a Qdrant folder: no meta.json)")
    return _local_client(folder, where), "raglab", where


def _local_client(folder: Path, where: str) -> Any:
    """A local-mode client, waiting up to LOCK_WAIT_SECONDS for another process to let go."""
    deadline = time.monotonic() + LOCK_WAIT_SECONDS
    while True:
        try:
            return qdrant().QdrantClient(path=str(folder))
        except RuntimeError as error:
            if "already accessed" not in str(error):
                raise
            if time.monotonic() > deadline:
                raise StoreError(
                    f"{where} is in use by another process (waited {LOCK_WAIT_SECONDS:g} s; a "
                    "local Qdrant folder is open in one store at a time, so an index still open "
                    "in this process counts too): try again when it has finished, or run a "
                    "Qdrant server and use --qdrant-url"
                ) from None
            time.sleep(0.1)
