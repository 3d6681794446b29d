"""The two lifecycles wired together.

Indexing (when documents change):  folder -> load -> chunk -> embed -> store -> calibrate
                                   the answerer (`calibrate`: its null distribution per tenant).
Query (every question):            question -> expand -> retrieve (dense, BM25; access and
                                   versions first) -> fuse -> rerank -> diversify -> prompt
                                   -> generate -> verify citations -> Answer.

`Index` is the indexing path; `ask` is the query path: `raglab.query` composes its steps
up to the hits, once; `answer_from` the rest. Each line is one boundary, so a learner can
swap any one of them and see what changes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from raglab.embed.embedders import Embedder
from raglab.embed.embedders import embedder as make_embedder
from raglab.embed.reading import sentence_embedding
from raglab.generate.abstention import KnownStems
from raglab.generate.citations import verify_citations
from raglab.generate.extractive import ExtractiveGenerator
from raglab.generate.generation import Generator, is_abstention
from raglab.generate.null_calibration import NullCalibration, null_questions
from raglab.generate.prompting import build_prompt, check_question
from raglab.ingest.chunking import Chunker
from raglab.ingest.limits import DEFAULT_MAX_CHUNKS, within_chunk_limit
from raglab.ingest.loaders import DEFAULT_MAX_BYTES, DEFAULT_MAX_FILES, DocumentError, load_folder
from raglab.query import FitCache, Retriever
from raglab.records import Answer, Confidence, Hit, Principal
from raglab.retrieve.diversity import Diversity
from raglab.retrieve.fusion import Fusion, default_fusion
from raglab.retrieve.query_expansion import QueryExpansion
from raglab.retrieve.rerank import default_reranker
from raglab.store.errors import StoreError
from raglab.store.indexing import SyncReport, check_embedder, sync
from raglab.store.memory import MemoryStore
from raglab.store.protocol import VectorStore
from raglab.store.sqlite_store import SQLiteStore
from raglab.text import fingerprint

if TYPE_CHECKING:
    from raglab.store.qdrant_store import QdrantStore

DEFAULT_EMBEDDER = "hashing"
DEFAULT_METHOD = "hybrid"
DEFAULT_K = 5
BACKENDS = ("sqlite", "qdrant")


@dataclass(frozen=True, slots=True)
class Limits:
    """What one indexing run may read: `raglab.ingest.loaders` and `raglab.ingest.limits` explain each."""

    max_bytes: int = DEFAULT_MAX_BYTES
    max_files: int = DEFAULT_MAX_FILES
    max_chunks: int = DEFAULT_MAX_CHUNKS
    secrets: str = "refuse"


"""Where an index on disk lives: one SQLite file, or Qdrant (a local folder or a server)."""


@dataclass
class Index:
    """A searchable corpus: a store of chunk vectors and the embedder that made them.

    For a fittable embedder (LSA), `embedder` is the unfitted one: each access partition's
    vectors are made by its own fit (`raglab.store.indexing`), and a question is embedded
    by the fit of each partition its asker may read; the retrievers make the fits
    (`Index.retriever(...).embedders_for(principal)`) and share them through the index's
    caches.
    """

    store: VectorStore
    embedder: Embedder
    report: SyncReport | None = None
    load_errors: tuple[DocumentError, ...] = ()
    warnings: tuple[DocumentError, ...] = ()  # loaded, but changed or doubtful (`LoadResult`)
    fusion: Fusion | None = None  # hybrid search's fusion; None: the embedder's default
    _retrievers: dict[tuple[str, float | None], Retriever] = field(
        default_factory=dict, init=False, repr=False
    )
    _fits: FitCache[Embedder] = field(default_factory=FitCache, init=False, repr=False)

    @classmethod
    def from_folder(
        cls,
        folder: str | Path,
        *,
        embedder: str | Embedder = DEFAULT_EMBEDDER,
        chunker: Chunker | Callable[[dict[str, Any] | None], Chunker] | None = None,
        path: str | Path | None = None,
        backend: str = "sqlite",
        qdrant_url: str | None = None,
        limits: Limits | None = None,
        fusion: Fusion | None = None,
    ) -> Index:
        """Load, chunk and embed every document in `folder`.

        In memory by default; with `path`, into an index on disk, incrementally: only
        new or changed documents are chunked and embedded again. `backend` "sqlite": `path`
        is a file; "qdrant": a folder (Qdrant's local mode), or with `qdrant_url` the
        index's name on that server. Files that fail to load are reported in
        `load_errors` and the rest are indexed. `limits` bounds what is read and indexed
        (`Limits`: file size and count, chunks per document, what to do with secrets);
        files loaded with a secret cut out, or with a doubtful `supersedes`, in `warnings`.
        `chunker`: a `Chunker` (default `Chunker()`), or a function that makes one from the
        chunker settings the index at `path` records (None for a new index), read in the
        same opening of the index that writes it. `fusion`: how hybrid search fuses its two
        rankings (default: `default_fusion`).
        """
        limits = limits or Limits()
        new = path is None or (qdrant_url is None and not Path(path).exists())
        if callable(chunker) and new:
            chunker = chunker(None)  # nothing recorded: a bad choice fails before a file is made
        choose = chunker if callable(chunker) else lambda _: chunker or Chunker()
        loaded = load_folder(
            folder, max_bytes=limits.max_bytes, max_files=limits.max_files, secrets=limits.secrets
        )
        embedder = make_embedder(embedder) if isinstance(embedder, str) else embedder

        def index(
            store: VectorStore, recorded: dict[str, Any] | None
        ) -> tuple[SyncReport, list[DocumentError]]:
            """Chunk (within the limits) and sync; returns the report and the refused files."""
            cutter = choose(recorded)
            if cutter.kind == "semantic" and cutter.embedding is None:  # the index's own embedder
                cutter = replace(cutter, embedding=sentence_embedding(embedder))
            documents, too_long = within_chunk_limit(loaded.documents, cutter, limits.max_chunks)
            return sync(store, documents, chunker=cutter, embedder=embedder), too_long

        if path is None:
            store: VectorStore = MemoryStore()
            report, too_long = index(store, None)
            recalibrate(cls(store, report.embedder, fusion=fusion))
        else:  # one writer at a time; a first build shows up whole or not at all
            kind, options = store_class(backend, qdrant_url)
            with kind.writing(path, **options) as store:
                report, too_long = index(store, store.meta["chunker"])
                if isinstance(store, SQLiteStore):  # it reads its own writes: one commit
                    recalibrate(cls(store, report.embedder, fusion=fusion))
            recalibrate(cls(store, report.embedder, fusion=fusion))  # Qdrant: once they land
        errors = tuple(sorted([*loaded.errors, *too_long], key=lambda error: error.path))
        return cls(store, report.embedder, report, errors, loaded.warnings, fusion)

    @classmethod
    def open(
        cls,
        path: str | Path,
        *,
        embedder: str | Embedder | None = None,
        backend: str = "sqlite",
        qdrant_url: str | None = None,
        qdrant_keyword: str | None = None,
    ) -> Index:
        """Open an index written by `from_folder(..., path=...)` or `raglab index`.

        `backend` and `qdrant_url` say where it lives, as for `from_folder`;
        `qdrant_keyword` how a Qdrant index ranks by keyword ("exact", the default, or
        "server": `raglab.store.qdrant_search`).

        The embedder is rebuilt from the name stored in the file — or give the one the
        index was built with, when it had non-default settings — and checked against the
        stored id, dimension and version (for a fittable embedder, the version of each
        partition's fit, when a user of it first asks); a mismatch is refused, never silently
        compared.
        """
        kind, options = store_class(backend, qdrant_url)
        if qdrant_keyword is not None:
            if backend != "qdrant":
                raise ValueError("qdrant_keyword applies to a Qdrant index (backend='qdrant')")
            options["keyword"] = qdrant_keyword
        store = kind.open(path, **options)
        embedder = store.meta["embedder_name"] if embedder is None else embedder
        if embedder is None:  # made by hand, or left by a raglab that built in two steps
            name = store.path if backend == "qdrant" else f"index file {str(path)!r}"
            raise StoreError(
                f"{name} is incomplete (it records no embedder): run raglab index again"
            )
        embedder = make_embedder(embedder) if isinstance(embedder, str) else embedder
        # A fittable embedder's per-partition fits are checked when a partition is first asked.
        check_embedder(store, embedder)
        return cls(store, embedder)

    @property
    def chunker_params(self) -> dict[str, Any] | None:
        """The chunker settings the index was built with (`Chunker.params()`), as recorded."""
        params: dict[str, Any] | None = self.store.meta["chunker"]
        return params

    def document_ids(self) -> frozenset[str]:
        """The ids of the documents the index holds."""
        return frozenset(self.store.documents())

    def retriever(
        self,
        method: str = DEFAULT_METHOD,
        *,
        min_score: float | None = None,
        diversity: Diversity | None = None,
        expansion: QueryExpansion | None = None,
    ) -> Retriever:
        """The retriever for `method`, built once and reused (it caches what it fits).

        Hybrid search fuses by the index's `fusion`, or as the embedder's default says
        (`raglab.retrieve.fusion.default_fusion`), and reranks with the shipped reranker for
        the embedder when its held-out figures enabled it
        (`raglab.retrieve.rerank.default_reranker`). `diversity` and `expansion` are the
        retriever's options (`raglab.query.Retriever`), given to a copy with the same caches.
        """
        key = (method, min_score)
        if key not in self._retrievers:
            hybrid = method == "hybrid"
            reranker = default_reranker(self.embedder.name) if hybrid else None
            self._retrievers[key] = Retriever(
                self.store,
                self.embedder,
                method,
                min_score,
                fits=self._fits,
                fusion=(self.fusion or default_fusion(self.embedder.name)) if hybrid else None,
                reranker=reranker,
            )
        retriever = self._retrievers[key]
        if diversity is None and expansion is None:
            return retriever
        return replace(retriever, diversity=diversity, expansion=expansion)

    def search(
        self,
        question: str,
        principal: Principal,
        *,
        k: int = DEFAULT_K,
        method: str = DEFAULT_METHOD,
        min_score: float | None = None,
        diversity: Diversity | None = None,
        expansion: QueryExpansion | None = None,
    ) -> list[Hit]:
        """The top-k chunks `principal` may read, ranked for `question` by `method`: the
        query path of `raglab.query` (expand, retrieve, fuse, rerank, diversify)."""
        retriever = self.retriever(
            method, min_score=min_score, diversity=diversity, expansion=expansion
        )
        return retriever.search(question, principal, k)


def store_class(
    backend: str, qdrant_url: str | None
) -> tuple[type[SQLiteStore] | type[QdrantStore], dict[str, Any]]:
    """The store class for an index on disk and the options it opens with."""
    if backend not in BACKENDS:
        raise ValueError(f"unknown store {backend!r}; choose from: {', '.join(BACKENDS)}")
    if backend == "sqlite":
        if qdrant_url is not None:
            raise ValueError("a Qdrant server URL needs the qdrant store, not sqlite")
        return SQLiteStore, {}
    from raglab.store.qdrant_store import QdrantStore  # qdrant-client is optional: imported here

    return QdrantStore, {"url": qdrant_url}


def answer_embedder(index: Index, principal: Principal, method: str) -> Embedder | None:
    """The embedder the answerer scores sentences with: the index's embedder.

    For LSA, the fit of the tenant's public partition, which learned only what every user
    of the tenant may read (`Retriever.embedder_for`); None when it has no public chunk.
    """
    return index.retriever(method).embedder_for(principal.tenant)


def default_answerer(index: Index, principal: Principal, method: str) -> ExtractiveGenerator:
    """The offline answerer `ask` uses for `principal`: it scores sentences with
    `answer_embedder`, knows the words of the documents the principal may read
    (`raglab.generate.abstention.vocabulary`), never anyone else's, and reads its scores
    against the index's calibration for the principal's tenant (`calibration_for`)."""
    return ExtractiveGenerator(
        embedder=answer_embedder(index, principal, method),
        known_words=known_words(index, principal),
        calibration=calibration_for(index, principal),
    )


def known_words(index: Index, principal: Principal) -> KnownStems:
    """The words of the documents `principal` may read, as a lookup: the store is asked
    about the question's words alone (`VectorStore.known_stems`), never read whole."""
    return KnownStems(partial(index.store.known_stems, principal))


# --- per-index calibration of the answerer (`raglab.generate.null_calibration`) ---------------

CALIBRATION_USER = "raglab:calibration"
"""Who asks the null questions: a reader of one tenant in no group."""


def calibrate(index: Index, method: str = DEFAULT_METHOD) -> dict[str, Any]:
    """The answerer's null distribution for each tenant of `index`, as stored in its meta.

    Each tenant's null questions are made from, and asked over, the chunks a reader of the
    tenant in no group may read: what every reader of the tenant may read. A group's
    documents never enter it, so the numbers a reader's answer is judged against carry
    nothing of a document they cannot read (scripts/attacks/calibration.py tries).
    `documents` fingerprints the documents it was computed on (`sync` drops a calibration
    when they change, and `from_folder` computes it again).
    """
    records = index.store.documents()
    tenants: dict[str, Any] = {}
    for tenant in sorted({record.tenant for record in records.values()}):
        reader = Principal(CALIBRATION_USER, tenant)
        questions = null_questions(index.store.chunks(reader))
        if not questions:
            continue  # nothing every reader may read: this tenant's answers stay uncalibrated
        answerer = replace(default_answerer(index, reader, method), calibration=None)
        null = [
            answerer.decide(build_prompt(q, index.search(q, reader, method=method))).features
            for q in questions
        ]
        tenants[tenant] = NullCalibration.of(null).as_json()
    documents = [f"{r.id}|{r.version}|{r.hash}|{r.tenant}|{r.groups}" for r in records.values()]
    return {"documents": fingerprint(documents), "method": method, "tenants": tenants}


def recalibrate(index: Index) -> None:
    """Store a new calibration when the index has none (new, or `sync` changed it)."""
    if index.store.meta["calibration"] is None and len(index.store):
        index.store.set_meta({"calibration": calibrate(index)})


def calibration_for(index: Index, principal: Principal) -> NullCalibration | None:
    """The index's null distribution for `principal`'s tenant; None when it has none."""
    stored = index.store.meta["calibration"]
    tenant = (stored or {}).get("tenants", {}).get(principal.tenant)
    return None if tenant is None else NullCalibration.from_json(tenant)


def ask(
    question: str,
    index: Index,
    principal: Principal,
    *,
    k: int = DEFAULT_K,
    method: str = DEFAULT_METHOD,
    generator: Generator | None = None,
    max_chars: int = 6000,
    max_tokens: int | None = None,
    order: str = "rank",
    diversity: Diversity | None = None,
    expansion: QueryExpansion | None = None,
) -> Answer:
    """Answer `question` for `principal` from `index`, with verified citations.

    `method` is how chunks are ranked: "dense", "bm25" or "hybrid" (`raglab.query`).
    Without a `generator`, the offline `ExtractiveGenerator` answers, scoring sentences
    with the index's own embedder (`default_answerer`).

    The answer's `[n]` markers are checked against what was retrieved for this question:
    a marker pointing anywhere else is reported in `Answer.invalid_citations`.
    `max_tokens` (counted with MiniLM's WordPiece) and `order` ("rank" or "ends") are
    `build_prompt`'s: a model's context window is counted in its own tokens.
    `diversity` and `expansion` change how chunks are chosen (`Index.search`).
    """
    check_question(question)  # before any work: a bounded question keeps every step bounded
    # expand, retrieve (dense, BM25), fuse, rerank, diversify: k is checked and every
    # depth decided once, where the query path starts (`raglab.query.QueryPlan`)
    hits = index.search(
        question, principal, k=k, method=method, diversity=diversity, expansion=expansion
    )
    if generator is None:
        generator = default_answerer(index, principal, method)
    # prompt, generate, verify the citations
    return answer_from(
        question, hits, generator, max_chars=max_chars, max_tokens=max_tokens, order=order
    )


def answer_from(
    question: str,
    hits: Sequence[Hit],
    generator: Generator,
    *,
    max_chars: int = 6000,
    max_tokens: int | None = None,
    order: str = "rank",
) -> Answer:
    """The query path after retrieval: prompt, generate, verify the citations (see `ask`).

    Apart from `ask` so that another retrieval (a reranker, notebook 09's steps) can be
    answered exactly as `ask` answers.
    """
    prompt = build_prompt(question, hits, max_chars=max_chars, max_tokens=max_tokens, order=order)
    confidence = None
    if isinstance(generator, ExtractiveGenerator):  # it says how sure it is
        decision = generator.decide(prompt)
        text, confidence = decision.text, Confidence(decision.level, decision.probability)
    else:
        text = generator.generate(prompt)
    report = verify_citations(text, prompt.sources)
    return Answer(
        text=text,
        citations=report.citations,
        retrieved=prompt.sources,
        abstained=is_abstention(text),
        invalid_citations=report.invalid,
        confidence=confidence,
    )
