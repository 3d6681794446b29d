"""The Qdrant store: the same index in a vector database, for corpora that outgrow one file.

`QdrantStore` keeps what `SQLiteStore` keeps — chunks with their vectors, a record per
document, the index's settings — in two Qdrant collections: `<name>_chunks` (one point
per chunk: its unit vector, and the chunk's fields as payload) and `<name>_records` (one
point per document, and one for the settings). It runs in qdrant-client's local mode (a
folder, no server: tests, notebooks, one laptop) or against a Qdrant server (`url=`),
which scales out with sharding and replication.

Access is a payload filter inside the query, never a pass over the results: Qdrant only
ever scores the points whose `tenant` equals the principal's and whose `groups` are
empty or share one with the principal's (the rule of `raglab.access`). Both fields carry
a keyword payload index, so on a server the filter is an index lookup, not a scan.

Same hits as the other stores, ties included: Qdrant picks the candidates (a few more
than k, and more while the last still ties with the k-th), then the candidates are put
in store order (document id, then chunk index) and scored by `raglab.vectors.top_k`, the
code every store scores with — so scores agree to the bit and ties go to store order.
On a server, HNSW search is approximate (`exact=True` asks for exact search).

Qdrant has no transactions, so a transaction here holds its writes back and applies them
when it ends. Subtle: to survive a crash halfway through those writes, the settings point
first lists every document about to change (the *journal*); a journalled document is
invisible — left out of every read and every search — until the last write clears the
journal. A crash leaves those documents missing, never half-written, and the next
`raglab index` re-adds them.
"""

from __future__ import annotations

import time
import uuid
import warnings
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Self

import numpy as np

from raglab.records import Chunk, Hit, Principal
from raglab.stores import (
    META_KEYS,
    DocRecord,
    StoreError,
    _check_dim,
    _checked_meta,
    _checked_query,
    _dim_from_meta,
    _empty_meta,
    _prepare_documents,
    _StoredDocument,
)
from raglab.validation import check_int
from raglab.vectors import normalise, top_k

INSTALL_HINT = "pip install raglab[qdrant]"
FORMAT = "raglab-index"
SCHEMA_VERSION = 1
"""Bumped whenever the payloads change; an index of another version is refused."""

LOCK_WAIT_SECONDS = 10.0
"""How long opening a local folder waits for another process to let go of it (local mode
allows one client per folder at a time: that is its writer lock, readers included)."""

BATCH = 256
"""Points per request: bounds the size of one upload or one page of a scroll."""

TIE_ROOM = 8
"""Candidates fetched beyond k, so that chunks tied with the k-th usually come in one query."""

SCORE_SLACK = 1e-4
"""How far Qdrant's own float32 score may sit from ours: the candidates keep every point
within this of the k-th score, so rounding in Qdrant cannot drop a chunk we would keep."""

_ACCESS_FIELDS = ("tenant", "groups", "doc_id")
"""Payload fields filtered on; each gets a keyword index."""

_NAMESPACE = uuid.UUID("6f1c3e52-8a0e-4d7b-9a57-2f1b0c9d4e11")
"""Point ids are uuid5 of this and a name: the same chunk always gets the same id."""


def _point_id(kind: str, name: str) -> str:
    return str(uuid.uuid5(_NAMESPACE, f"{kind}:{name}"))


_META_ID = _point_id("meta", "")


def _qdrant():
    """qdrant-client, imported only when a Qdrant store is used (an optional dependency)."""
    try:
        import qdrant_client
    except ImportError:
        raise RuntimeError(
            f"the Qdrant store needs the qdrant-client package: {INSTALL_HINT}"
        ) from None
    return qdrant_client


@dataclass
class _Pending:
    """Writes held back by an open transaction, applied when it ends."""

    dim: int | None
    meta: dict[str, Any]
    deleted: set[str] = field(default_factory=set)
    added: dict[str, _StoredDocument] = field(default_factory=dict)


class QdrantStore:
    """Chunks, vectors, document records and settings in Qdrant (local folder or server).

    Make one with `QdrantStore.create(path)`, reopen it with `QdrantStore.open(path)`, or
    write with `QdrantStore.writing(path)`. `path` is a local folder; with `url=`, it is
    the name of the index's collections on that server. Reads see what has been
    committed: writes inside a `transaction()` land together when it ends.
    """

    def __init__(self, client: Any, name: str, where: str, *, exact: bool = False) -> None:
        """Use `create`, `open` or `writing`; this wraps an already checked client."""
        self.path = where  # how messages name the index (check_embedder reads it too)
        self.exact = exact
        self._client = client
        self._chunks_name, self._records_name = f"{name}_chunks", f"{name}_records"
        self._pending: _Pending | None = None
        self._depth = 0

    def __repr__(self) -> str:
        return f"QdrantStore({self.path!r}, dim={self.dim}, chunks={len(self)})"

    # -- opening

    @classmethod
    def create(cls, path: str | Path, *, url: str | None = None, dim: int | None = None) -> Self:
        """A new, empty index (refused if one is there already)."""
        client, name, where = _connect(path, url, must_exist=False)
        store = cls(client, name, where)
        if client.collection_exists(store._records_name):
            store.close()
            raise StoreError(f"{where} already exists; open it, or remove it first")
        store._create(_check_dim(dim))
        return store

    @classmethod
    def open(cls, path: str | Path, *, url: str | None = None, exact: bool = False) -> Self:
        """An existing index; `StoreError` if it is missing or not a raglab index."""
        client, name, where = _connect(path, url, must_exist=True)
        store = cls(client, name, where, exact=exact)
        try:
            if not client.collection_exists(store._records_name):
                raise StoreError(f"{where} is not a raglab index (no {name!r} collections)")
            store._read_meta()  # checks the format marker and the schema version
        except BaseException:
            store.close()
            raise
        return store

    @classmethod
    def open_or_create(cls, path: str | Path, *, url: str | None = None) -> Self:
        client, name, where = _connect(path, url, must_exist=False)
        store = cls(client, name, where)
        if not client.collection_exists(store._records_name):
            store._create(None)
        store._read_meta()
        return store

    @classmethod
    @contextmanager
    def writing(cls, path: str | Path, *, url: str | None = None) -> Iterator[Self]:
        """The index at `path` (created if missing), its writes applied together at the end."""
        store = cls.open_or_create(path, url=url)
        try:
            with store.transaction():
                yield store
        except BaseException:
            store.close()
            raise

    def close(self) -> None:
        self._client.close()  # in local mode, this lets go of the folder

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _create(self, dim: int | None) -> None:
        self._client.create_collection(self._records_name, vectors_config={})
        self._write_meta({**_empty_meta(), "dim": dim, "journal": []})

    # -- reading (committed state only)

    @property
    def dim(self) -> int | None:
        return self._read_meta()["dim"]

    @property
    def meta(self) -> dict[str, Any]:
        stored = self._read_meta()
        return {key: stored.get(key) for key in META_KEYS}

    def __len__(self) -> int:
        if not self._client.collection_exists(self._chunks_name):
            return 0
        hidden = self._hidden(self._read_meta())
        return self._client.count(self._chunks_name, count_filter=hidden, exact=True).count

    def documents(self) -> dict[str, DocRecord]:
        journal = set(self._read_meta()["journal"])
        kind = self._match("kind", "document")
        records = [_record(p.payload) for p in self._scroll(self._records_name, kind)]
        return {r.id: r for r in sorted(records, key=lambda r: r.id) if r.id not in journal}

    def chunks(self, principal: Principal | None = None) -> list[Chunk]:
        """Every chunk in store order (document id, then chunk index), or those `principal` may read."""
        meta = self._read_meta()
        if not self._client.collection_exists(self._chunks_name):
            return []
        points = self._scroll(self._chunks_name, self._readable(principal, meta))
        return sorted((_chunk(p.payload) for p in points), key=_store_order)

    def search(
        self, query: np.ndarray, principal: Principal, k: int, *, min_score: float | None = None
    ) -> list[Hit]:
        """Qdrant finds the candidates among the chunks `principal` may read; raglab ranks them."""
        k = check_int("k", k, minimum=1)
        meta = self._read_meta()
        q = normalise(_checked_query(query, meta["dim"]))
        if not self._client.collection_exists(self._chunks_name):
            return []
        points = self._candidates(q, self._readable(principal, meta), k)
        if not points:
            return []
        # Store order first, so that `top_k`'s tie rule (lower row first) is store order.
        pairs = sorted(
            ((_chunk(p.payload), p.vector) for p in points), key=lambda c: _store_order(c[0])
        )
        rows = np.array([vector for _, vector in pairs], dtype=np.float32)
        positions, scores = top_k(q, rows, k, normalised=True)
        hits = [Hit(pairs[p][0], float(s)) for p, s in zip(positions, scores)]
        return hits if min_score is None else [hit for hit in hits if hit.score >= min_score]

    def _candidates(self, q: np.ndarray, readable: Any, k: int) -> list[Any]:
        """The best points by Qdrant's score: at least k, and every one tied with the k-th."""
        models = _qdrant().models
        limit = k + TIE_ROOM
        while True:
            points = self._client.query_points(
                self._chunks_name,
                query=q.tolist(),
                query_filter=readable,  # access decided inside the query, before scoring
                limit=limit,
                with_payload=True,
                with_vectors=True,
                search_params=models.SearchParams(exact=self.exact),
            ).points
            if len(points) < limit or points[-1].score < points[k - 1].score - SCORE_SLACK:
                return points
            limit *= 2  # the last candidate may still tie with the k-th: look further

    # -- writing

    def add(
        self, chunks: Sequence[Chunk], vectors: np.ndarray, *, documents: Iterable[DocRecord] = ()
    ) -> None:
        documents = list(documents)
        with self.transaction():
            pending = self._writes()
            ids = {chunk.doc_id for chunk in chunks} | {record.id for record in documents}
            existing = (self._committed(ids) - pending.deleted) | set(pending.added)
            dim, stored = _prepare_documents(chunks, vectors, documents, pending.dim, existing)
            pending.dim = dim
            pending.added.update((doc.record.id, doc) for doc in stored)

    def delete_document(self, doc_id: str) -> int:
        with self.transaction():
            pending = self._writes()
            if doc_id in pending.added:
                return len(pending.added.pop(doc_id).chunks)
            if doc_id in pending.deleted:
                return 0
            pending.deleted.add(doc_id)
            return self._count_chunks(doc_id)

    def set_meta(self, meta: Mapping[str, Any]) -> None:
        with self.transaction():
            pending = self._writes()
            updated = _checked_meta(meta, pending.meta)
            pending.dim = _dim_from_meta(updated, pending.dim)
            pending.meta = updated

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """Writes inside are held back and applied when the outermost transaction ends;
        on an exception they are dropped, and the index stays as it was."""
        if self._depth == 0:
            stored = self._read_meta()
            self._pending = _Pending(stored["dim"], {key: stored.get(key) for key in META_KEYS})
        self._depth += 1
        try:
            yield
        except BaseException:
            if self._depth == 1:
                self._pending = None
            raise
        finally:
            self._depth -= 1
        if self._depth == 0:
            pending, self._pending = self._pending, None
            if pending is not None:
                self._commit(pending)

    def _commit(self, pending: _Pending) -> None:
        """Apply held-back writes; documents being changed stay hidden until the last write."""
        journal = set(self._read_meta()["journal"])  # left by a commit that never finished
        touched = pending.deleted | set(pending.added) | journal
        settings = {**pending.meta, "dim": pending.dim}
        if touched:
            self._write_meta({**settings, "journal": sorted(touched)})
        gone = sorted(pending.deleted | journal)
        for start in range(0, len(gone), BATCH):
            self._delete_documents(gone[start : start + BATCH])
        docs = [pending.added[doc_id] for doc_id in sorted(pending.added)]
        if any(doc.chunks for doc in docs):
            self._ensure_chunk_collection(pending.dim)
            self._upsert(self._chunks_name, [p for doc in docs for p in _chunk_points(doc)])
        self._upsert(self._records_name, [_record_point(doc.record) for doc in docs])
        self._write_meta({**settings, "journal": []})

    # -- internals

    def _writes(self) -> _Pending:
        """The writes held back by the open transaction (each write opens one)."""
        if self._pending is None:
            raise RuntimeError("no transaction is open")
        return self._pending

    def _read_meta(self) -> dict[str, Any]:
        found = self._client.retrieve(self._records_name, [_META_ID], with_payload=True)
        meta = found[0].payload if found else {}
        if meta.get("format") != FORMAT:
            raise StoreError(f"{self.path} is not a raglab index (no {FORMAT!r} marker)")
        version = meta.get("schema_version")
        if version != SCHEMA_VERSION:
            raise StoreError(
                f"{self.path} has schema version {version!r}; this raglab reads "
                f"{SCHEMA_VERSION}: rebuild the index, or use the raglab that made it"
            )
        return meta

    def _write_meta(self, values: Mapping[str, Any]) -> None:
        payload = {**values, "kind": "meta", "format": FORMAT, "schema_version": SCHEMA_VERSION}
        models = _qdrant().models
        self._upsert(
            self._records_name, [models.PointStruct(id=_META_ID, vector={}, payload=payload)]
        )

    def _ensure_chunk_collection(self, dim: int | None) -> None:
        if self._client.collection_exists(self._chunks_name):
            return
        models = _qdrant().models
        # DOT, not COSINE: rows and queries are unit length already, and Qdrant would
        # otherwise re-normalise the vectors it stores (the bits would differ from ours).
        config = models.VectorParams(size=dim, distance=models.Distance.DOT)
        self._client.create_collection(self._chunks_name, vectors_config=config)
        with warnings.catch_warnings():  # local mode warns that it scans without indexes
            warnings.simplefilter("ignore", UserWarning)
            for name in _ACCESS_FIELDS:
                self._client.create_payload_index(
                    self._chunks_name, name, field_schema=models.PayloadSchemaType.KEYWORD
                )

    def _readable(self, principal: Principal | None, meta: dict[str, Any]) -> Any:
        """The filter for the chunks `principal` may read (all, if None), journal left out."""
        models = _qdrant().models
        hidden = self._hidden(meta)
        if principal is None:
            return hidden
        open_to_all = models.IsEmptyCondition(is_empty=models.PayloadField(key="groups"))
        in_a_group = models.FieldCondition(
            key="groups", match=models.MatchAny(any=sorted(principal.groups))
        )
        return models.Filter(
            must=[self._match("tenant", principal.tenant)],
            should=[open_to_all, in_a_group] if principal.groups else [open_to_all],
            must_not=hidden.must_not if hidden else None,
        )

    def _hidden(self, meta: dict[str, Any]) -> Any:
        """A filter leaving out the chunks of journalled documents, or None when there are none."""
        if not meta["journal"]:
            return None
        models = _qdrant().models
        match = models.MatchAny(any=meta["journal"])
        return models.Filter(must_not=[models.FieldCondition(key="doc_id", match=match)])

    def _match(self, key: str, value: str) -> Any:
        models = _qdrant().models
        return models.Filter(
            must=[models.FieldCondition(key=key, match=models.MatchValue(value=value))]
        )

    def _committed(self, doc_ids: set[str]) -> set[str]:
        """Those of `doc_ids` that have a committed, visible record."""
        journal = set(self._read_meta()["journal"])
        ordered = sorted(doc_ids)
        found = set()
        for start in range(0, len(ordered), BATCH):
            ids = [_point_id("document", d) for d in ordered[start : start + BATCH]]
            found |= {p.payload["id"] for p in self._client.retrieve(self._records_name, ids)}
        return found - journal

    def _count_chunks(self, doc_id: str) -> int:
        if doc_id in self._read_meta()["journal"] or not self._client.collection_exists(
            self._chunks_name
        ):
            return 0
        return self._client.count(
            self._chunks_name, count_filter=self._match("doc_id", doc_id)
        ).count

    def _delete_documents(self, doc_ids: list[str]) -> None:
        models = _qdrant().models
        ids = [_point_id("document", d) for d in doc_ids]
        self._client.delete(self._records_name, points_selector=models.PointIdsList(points=ids))
        if self._client.collection_exists(self._chunks_name):
            of_docs = models.Filter(
                must=[models.FieldCondition(key="doc_id", match=models.MatchAny(any=doc_ids))]
            )
            self._client.delete(
                self._chunks_name, points_selector=models.FilterSelector(filter=of_docs)
            )

    def _upsert(self, collection: str, points: list[Any]) -> None:
        for start in range(0, len(points), BATCH):
            self._client.upsert(collection, points=points[start : start + BATCH], wait=True)

    def _scroll(self, collection: str, scroll_filter: Any) -> list[Any]:
        points, offset = [], None
        while True:
            page, offset = self._client.scroll(
                collection, scroll_filter=scroll_filter, limit=BATCH * 4, offset=offset
            )
            points.extend(page)
            if offset is None:
                return points


# ---------------------------------------------------------------------------- payloads


def _store_order(chunk: Chunk) -> tuple[str, int]:
    return chunk.doc_id, chunk.index


def _chunk_points(doc: _StoredDocument) -> list[Any]:
    models = _qdrant().models
    return [
        models.PointStruct(
            id=_point_id("chunk", chunk.id), vector=vector.tolist(), payload=_chunk_payload(chunk)
        )
        for chunk, vector in zip(doc.chunks, doc.vectors)
    ]


def _chunk_payload(chunk: Chunk) -> dict[str, Any]:
    return {
        "doc_id": chunk.doc_id,
        "index": chunk.index,
        "text": chunk.text,
        "start": chunk.start,
        "end": chunk.end,
        "heading": chunk.heading,
        "title": chunk.title,
        "tenant": chunk.tenant,
        "groups": list(chunk.groups),
        "doc_version": chunk.doc_version,
    }


def _chunk(payload: dict[str, Any]) -> Chunk:
    fields = {**payload, "groups": tuple(payload["groups"])}
    return Chunk(**fields)


def _record_point(record: DocRecord) -> Any:
    models = _qdrant().models
    payload = {
        "kind": "document",
        "id": record.id,
        "version": record.version,
        "hash": record.hash,
        "tenant": record.tenant,
        "groups": list(record.groups),
        "title": record.title,
    }
    return models.PointStruct(id=_point_id("document", record.id), vector={}, payload=payload)


def _record(payload: dict[str, Any]) -> DocRecord:
    return DocRecord(
        payload["id"],
        payload["version"],
        payload["hash"],
        payload["tenant"],
        tuple(payload["groups"]),
        payload["title"],
    )


# ---------------------------------------------------------------------------- connecting


def _connect(path: str | Path, url: str | None, *, must_exist: bool) -> tuple[Any, str, str]:
    """(client, collection name, how messages name the index) for a folder or a server."""
    qdrant = _qdrant()
    if url is not None:
        name = str(path)
        client = qdrant.QdrantClient(url=url)
        where = f"Qdrant index {name!r} at {url}"
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
    is_qdrant = (folder / "meta.json").is_file()
    if must_exist and not folder.exists():
        raise StoreError(f"{where} does not exist")
    if folder.exists() and any(folder.iterdir()) and not is_qdrant:
        # Never write Qdrant's files into someone's own folder.
        raise StoreError(f"{where} is not a raglab index (not a Qdrant folder: no meta.json)")
    return _local_client(qdrant, folder, where), "raglab", where


def _local_client(qdrant: Any, folder: Path, where: str) -> Any:
    """A local-mode client, waiting up to LOCK_WAIT_SECONDS for another process to let go."""
    deadline = time.monotonic() + LOCK_WAIT_SECONDS
    while True:
        try:
            return qdrant.QdrantClient(path=str(folder))
        except RuntimeError as error:
            if "already accessed" not in str(error):
                raise
            if time.monotonic() > deadline:
                raise StoreError(
                    f"{where} is in use by another process (waited {LOCK_WAIT_SECONDS:g} s; a "
                    "local Qdrant folder takes one process at a time): try again when it has "
                    "finished, or run a Qdrant server and use --qdrant-url"
                ) from None
            time.sleep(0.1)
