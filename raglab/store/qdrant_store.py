"""The Qdrant store: the same index in a vector database, for corpora that outgrow one file.

`QdrantStore` keeps what `SQLiteStore` keeps in two Qdrant collections: `<name>_chunks`
(a point per chunk: its unit vector, the chunk's fields as payload) and `<name>_records`
(a point per document, and one for the settings). It runs in qdrant-client's local mode
(a folder, no server) or against a Qdrant server (`url=`), which scales out with sharding
and replication.

Access is a payload filter inside the query, never a pass over the results: Qdrant only
scores points of the principal's tenant whose groups are empty or shared with the
principal (`raglab.store.access`'s rule), on keyword-indexed payload fields:
`readable_filter(principal)` is that filter.

Same hits as the other stores, ties included: Qdrant picks the candidates (a few more
than k, and more while the last still ties with the k-th); they are put in store order
(document id, then chunk index) and scored by `raglab.retrieve.vectors.top_k`, as every store
scores. On a server, HNSW search is approximate (`exact=True` asks for exact search).

Keyword search: each chunk also holds a BM25 sparse vector. By default (`keyword="exact"`)
BM25 is still fitted here on the asker's readable chunks (`raglab.store.keyword`), for
scores identical to the other stores'; `keyword="server"` ranks in Qdrant instead
(`raglab.store.qdrant_search`, which says why that is not the default).

Qdrant has no transactions, so a transaction holds its writes back and applies them at
its end, under a journal (`raglab.store.qdrant_commit`): a crash leaves the documents it
was changing missing, never half-written, and the next `raglab index` re-adds them. That
may be every document (an index holding no chunk is an ordinary index), and a crash while
the index was being created leaves an empty records collection, which the next writer
takes up as a new index.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Self

import numpy as np

from raglab.records import Chunk, DocRecord, Hit, Partition, Principal
from raglab.retrieve.vectors import normalise
from raglab.store._qdrant_points import (
    CHUNK_FIELDS,
    META_ID,
    connect,
    count,
    dense,
    field_is,
    from_payload,
    meta_point,
    qdrant,
    readable_filter,
    scroll,
    store_order,
    upsert,
    within_partition,
)
from raglab.store.eligibility import Eligibility
from raglab.store.errors import StoreError
from raglab.store.keyword import ChunkKeywords
from raglab.store.protocol import META_KEYS
from raglab.store.qdrant_commit import Pending, commit
from raglab.store.qdrant_search import (
    KEYWORD_MODES,
    counted_stems,
    dense_hits,
    hybrid_hits,
    keyword_hits,
)
from raglab.store.snapshot import checked_query
from raglab.store.versions import hidden_from
from raglab.store.writes import (
    check_dim,
    checked_meta,
    dim_from_meta,
    empty_meta,
    prepare_documents,
)
from raglab.validation import check_int

FORMAT = "raglab-index"
SCHEMA_VERSION = 5
"""Bumped whenever the points change (2: each chunk has a BM25 sparse vector; 3: and its
content stems; 4: and its context header; 5: and its term ids, its sparse vector's avgdl its
access partition's, and no IDF modifier, raglab weighing the query itself); an index of
another version is refused."""


class QdrantStore:
    """Chunks, vectors, document records and settings in Qdrant (local folder or server).

    Make one with `QdrantStore.create(path)`, reopen it with `QdrantStore.open(path)`, or
    write with `QdrantStore.writing(path)`. `path` is a local folder; with `url=`, it is
    the name of the index's collections on that server. Reads see what has been
    committed: writes inside a `transaction()` land together when it ends. A local folder
    is open in one store at a time: `close()` it before opening it again.
    """

    def __init__(
        self, client: Any, name: str, where: str, *, exact: bool = False, keyword: str = "exact"
    ) -> None:
        """Use `create`, `open` or `writing`; this wraps an already checked client."""
        if keyword not in KEYWORD_MODES:
            choices = ", ".join(KEYWORD_MODES)
            raise ValueError(f"unknown keyword mode {keyword!r}; choose from: {choices}")
        self.path = where  # how messages name the index (check_embedder reads it too)
        self.exact = exact
        self.keyword = keyword
        self._client = client
        self._name = name
        self._chunks_name, self._records_name = f"{name}_chunks", f"{name}_records"
        self._pending: Pending | None = None
        self._depth = 0
        self._listed: tuple[str | None, ChunkKeywords] | None = None  # see _listing()

    def __repr__(self) -> str:
        return f"QdrantStore({self.path!r}, dim={self.dim}, chunks={len(self)})"

    # -- opening

    @classmethod
    def create(cls, path: str | Path, *, url: str | None = None, dim: int | None = None) -> Self:
        """A new, empty index (refused if one is there already)."""
        client, name, where = connect(path, url, must_exist=False)
        store = cls(client, name, where)
        if client.collection_exists(store._records_name):
            store.close()
            raise StoreError(f"{where} already exists; open it, or remove it first")
        store._create(check_dim(dim))
        return store

    @classmethod
    def open(
        cls,
        path: str | Path,
        *,
        url: str | None = None,
        exact: bool = False,
        keyword: str = "exact",
    ) -> Self:
        """An existing index; `StoreError` if it is missing or not a raglab index.

        `keyword="server"` ranks by keyword in Qdrant (`keyword_search`; see
        `raglab.store.qdrant_search`); "exact", the default, fits BM25 here, as every store.
        """
        client, name, where = connect(path, url, must_exist=True)
        store = cls(client, name, where, exact=exact, keyword=keyword)
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
        client, name, where = connect(path, url, must_exist=False)
        store = cls(client, name, where)
        try:
            records = store._records_name
            # An empty records collection is a creation cut short before its settings point.
            if not client.collection_exists(records) or not count(client, records, None):
                store._create(None)
            store._read_meta()
        except BaseException:
            store.close()
            raise
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

    def sibling(self, suffix: str) -> tuple[Any, str]:
        """This index's client and the name `<name>_<suffix>` of a collection of its own, for
        data that travels with the index but is none of its chunks (the conversation history:
        `raglab.conversation.qdrant_history`). A local folder has one client at a time."""
        return self._client, f"{self._name}_{suffix}"

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _create(self, dim: int | None) -> None:
        if not self._client.collection_exists(self._records_name):
            self._client.create_collection(self._records_name, vectors_config={})
        self._write_meta({**empty_meta(), "dim": dim, "journal": []})

    # -- reading (committed state only)

    @property
    def dim(self) -> int | None:
        dim: int | None = self._read_meta()["dim"]
        return dim

    @property
    def meta(self) -> dict[str, Any]:
        stored = self._read_meta()
        return {key: stored.get(key) for key in META_KEYS}

    def __len__(self) -> int:
        if not self._client.collection_exists(self._chunks_name):
            return 0
        return count(
            self._client, self._chunks_name, readable_filter(None, self._read_meta()["journal"])
        )

    def documents(self) -> dict[str, DocRecord]:
        journal = set(self._read_meta()["journal"])
        kind = qdrant().models.Filter(must=[field_is("kind", "document")])
        records = [
            from_payload(DocRecord, p.payload)
            for p in scroll(self._client, self._records_name, kind)
        ]
        return {r.id: r for r in sorted(records, key=lambda r: r.id) if r.id not in journal}

    def chunks(self, principal: Principal | None = None) -> list[Chunk]:
        """Every chunk in store order (document id, then chunk index), or those `principal` is
        answered from (readable, not superseded for them: `raglab.store.eligibility`).

        What exact BM25 and a fitted embedder need (a search never needs them: Qdrant
        filters and scores)."""
        eligibility = self._listing().eligibility
        if principal is None:
            return list(eligibility.chunks)
        return [eligibility.chunks[row] for row in eligibility.rows(principal)]

    def vectors(self) -> np.ndarray:
        """Every vector in store order, one read-only row per chunk of `chunks()`.

        Read from the server each time: only `sync` asks, to reuse vectors of unchanged text.
        """
        meta = self._read_meta()
        points = []
        if self._client.collection_exists(self._chunks_name):
            every = readable_filter(None, meta["journal"])
            points = scroll(
                self._client, self._chunks_name, every, vectors=[""], payload=CHUNK_FIELDS
            )
            points.sort(key=lambda p: store_order(from_payload(Chunk, p.payload)))
        rows = [dense(p.vector) for p in points]
        # Subtle: an index may hold no chunk (every document removed, or every one hidden by
        # a commit cut short) and still have its dim.
        empty = np.zeros((0, meta["dim"] or 0), dtype=np.float32)
        matrix = np.array(rows, dtype=np.float32) if rows else empty
        matrix.flags.writeable = False
        return matrix

    def keyword_search(
        self, question: str, principal: Principal, k: int, *, min_score: float = 0.0
    ) -> list[Hit]:
        """The top-k chunks `principal` is answered from by BM25, scoring above `min_score`.

        `keyword="exact"` (the default): BM25 fitted here on the chunks `principal` may read
        (`raglab.store.keyword`), scores identical to the other stores'. "server": ranked in
        Qdrant by sparse vectors (`raglab.store.qdrant_search` says how, and why it is not
        the default)."""
        k = check_int("k", k, minimum=1)
        if self.keyword == "exact":
            return self._listing().search(question, principal, k, min_score=min_score)
        _, readable, shown = self._filters(principal)
        where = {"readable": readable, "shown": shown}
        return keyword_hits(self._client, self._chunks_name, question, k, min_score, **where)

    def known_stems(self, principal: Principal, stems: Iterable[str]) -> frozenset[str]:
        """Those of the content `stems` that a chunk `principal` may read uses.

        With `keyword="server"`, one count a stem in Qdrant, the access filter inside it, so
        a cold ask reads no chunk beyond its hits; "exact" has read the asker's chunks for
        BM25 already, and looks the stems up in them."""
        if self.keyword == "exact":
            return self._listing().known_stems(principal, stems)
        readable = readable_filter(principal, self._read_meta()["journal"])
        return counted_stems(self._client, self._chunks_name, readable, stems)

    def hybrid_search(
        self, query: np.ndarray, question: str, principal: Principal, k: int
    ) -> list[Hit]:
        """The top-k chunks by dense and BM25 rankings fused with RRF in one Qdrant query,
        among the chunks `principal` may read, less the documents hidden from them."""
        k = check_int("k", k, minimum=1)
        meta, readable, shown = self._filters(principal)
        q = normalise(checked_query(query, meta["dim"]))
        where = {"readable": readable, "shown": shown, "exact": self.exact}
        return hybrid_hits(self._client, self._chunks_name, q, question, k, **where)

    def _listing(self) -> ChunkKeywords:
        """Every chunk in store order, with who is answered from which (`eligibility`): read
        once per version of the index and kept, as the SQLite store does."""
        meta = self._read_meta()
        if self._listed is None or self._listed[0] != meta.get("generation"):
            chunks: list[Chunk] = []
            if self._client.collection_exists(self._chunks_name):
                every = readable_filter(None, meta["journal"])
                points = scroll(self._client, self._chunks_name, every, payload=CHUNK_FIELDS)
                chunks = sorted((from_payload(Chunk, p.payload) for p in points), key=store_order)
            eligibility = Eligibility(chunks, meta.get("superseded"), self.documents())
            self._listed = (meta.get("generation"), ChunkKeywords(eligibility))
        return self._listed[1]

    def _filters(self, principal: Principal) -> tuple[dict[str, Any], Any, Any]:
        """The settings, and two Qdrant filters: the chunks `principal` may read, and those
        less the documents hidden from them (`raglab.store.versions`), which a search ranks.

        The documents are read only when a document supersedes another."""
        meta = self._read_meta()
        superseded = meta.get("superseded")
        hidden = hidden_from(principal, superseded, self.documents()) if superseded else ()
        readable = readable_filter(principal, meta["journal"])
        return meta, readable, readable_filter(principal, [*meta["journal"], *sorted(hidden)])

    def search(
        self,
        query: np.ndarray,
        principal: Principal,
        k: int,
        *,
        min_score: float | None = None,
        partition: Partition | None = None,
    ) -> list[Hit]:
        """Qdrant finds the candidates among the chunks `principal` may read; raglab ranks them."""
        k = check_int("k", k, minimum=1)
        meta, _, shown = self._filters(principal)
        if partition is not None:
            shown = within_partition(shown, partition)
        q = checked_query(query, meta["dim"])
        if not self._client.collection_exists(self._chunks_name):
            return []
        hits = dense_hits(self._client, self._chunks_name, q, shown, k, self.exact)
        return hits if min_score is None else [hit for hit in hits if hit.score >= min_score]

    # -- writing

    def add(
        self, chunks: Sequence[Chunk], vectors: np.ndarray, *, documents: Iterable[DocRecord] = ()
    ) -> None:
        documents = list(documents)
        with self.transaction():
            pending = self._writes()
            ids = {chunk.doc_id for chunk in chunks} | {record.id for record in documents}
            existing = (set(self.documents()) & (ids - pending.deleted)) | set(pending.added)
            dim, stored = prepare_documents(chunks, vectors, documents, pending.dim, existing)
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
            updated = checked_meta(meta, pending.meta)
            pending.dim = dim_from_meta(updated, pending.dim)
            pending.meta = updated

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """Writes inside are held back and applied when the outermost transaction ends;
        on an exception they are dropped, and the index stays as it was."""
        if self._depth == 0:
            stored = self._read_meta()
            self._pending = Pending(stored["dim"], {key: stored.get(key) for key in META_KEYS})
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
            if pending is not None:  # the journal may hold documents of a commit cut short
                journal = self._read_meta()["journal"]
                names = (self._records_name, self._chunks_name)
                commit(self._client, names, pending, journal, self._write_meta)

    # -- internals

    def _writes(self) -> Pending:
        """The writes held back by the open transaction (each write opens one)."""
        if self._pending is None:
            raise RuntimeError("no transaction is open")
        return self._pending

    def _read_meta(self) -> dict[str, Any]:
        found = self._client.retrieve(self._records_name, [META_ID], with_payload=True)
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
        payload["generation"] = uuid.uuid4().hex  # new with every write: cached reads expire
        upsert(self._client, self._records_name, [meta_point(payload)])

    def _count_chunks(self, doc_id: str) -> int:
        """The chunks `doc_id` has in the index as committed (0 while it is journalled)."""
        meta = self._read_meta()
        if doc_id in meta["journal"] or not self._client.collection_exists(self._chunks_name):
            return 0
        return count(
            self._client,
            self._chunks_name,
            qdrant().models.Filter(must=[field_is("doc_id", doc_id)]),
        )
