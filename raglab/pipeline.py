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

from raglab.embed.embedders import Embedder, is_fittable
from raglab.embed.embedders import embedder as make_embedder
from raglab.embed.reading import sentence_embedding
from raglab.generate.abstention import KnownStems, load_rule
from raglab.generate.citations import verify_citations
from raglab.generate.extractive import ExtractiveGenerator
from raglab.generate.generation import Generator, is_abstention
from raglab.generate.null_calibration import NullCalibration, null_questions
from raglab.generate.prompting import Prompt, build_prompt, check_question
from raglab.ingest.chunking import Chunker
from raglab.ingest.limits import DEFAULT_MAX_CHUNKS, within_chunk_limit
from raglab.ingest.loaders import DEFAULT_MAX_BYTES, DEFAULT_MAX_FILES, DocumentError, load_folder
from raglab.profiles import Profile, ProfileMismatch, from_record, overridden, refusal
from raglab.profiles import profile as find_profile
from raglab.progress import Reporter
from raglab.query import FitCache, Retriever
from raglab.records import Answer, Confidence, Hit, Principal
from raglab.retrieve.diversity import Diversity
from raglab.retrieve.fusion import Fusion, default_fusion
from raglab.retrieve.query_expansion import QueryExpansion
from raglab.retrieve.rerank import Reranker, default_reranker, load_reranker
from raglab.store.errors import StoreError
from raglab.store.indexing import SyncReport, check_embedder, sync
from raglab.store.memory import MemoryStore
from raglab.store.protocol import VectorStore
from raglab.store.sqlite_store import SQLiteStore
from raglab.text import fingerprint

if TYPE_CHECKING:
    from raglab.embed.tokens import TokenCount
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
    fusion: Fusion | None = (
        None  # hybrid search's fusion; None: the profile's, else the embedder's default
    )
    profile: Profile | None = (
        None  # the profile its queries use (`raglab.profiles`); None: the defaults
    )
    _retrievers: dict[tuple[str, float | None], Retriever] = field(
        default_factory=dict, init=False, repr=False
    )
    _fits: FitCache[Embedder] = field(default_factory=FitCache, init=False, repr=False)

    @classmethod
    def from_folder(
        cls,
        folder: str | Path,
        *,
        embedder: str | Embedder | None = None,
        chunker: Chunker | Callable[[dict[str, Any] | None], Chunker] | None = None,
        path: str | Path | None = None,
        backend: str = "sqlite",
        qdrant_url: str | None = None,
        limits: Limits | None = None,
        fusion: Fusion | None = None,
        profile: str | Profile | None = None,
        progress: Reporter | None = None,
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
        rankings (default: the profile's, else `default_fusion`).

        `profile` (a `raglab.profiles.Profile` or its name) gives the embedder, the chunker
        and every query setting at once; `embedder` and `chunker`, when given, override its
        own, and the index records the profile with what overrode it. Without one: the
        hashing embedder and `Chunker()`, or what an index at `path` recorded.
        `progress` hears how the embedding goes (`raglab.progress`; default: nothing is
        reported).
        """
        limits = limits or Limits()
        chosen = None if profile is None else find_profile(profile)
        new = path is None or (qdrant_url is None and not Path(path).exists())
        if callable(chunker) and new:
            chunker = chunker(None)  # nothing recorded: a bad choice fails before a file is made
        loaded = load_folder(
            folder, max_bytes=limits.max_bytes, max_files=limits.max_files, secrets=limits.secrets
        )

        def index(
            store: VectorStore, recorded: dict[str, Any] | None
        ) -> tuple[SyncReport, list[DocumentError]]:
            """Chunk (within the limits) and sync; returns the report and the refused files."""
            # An update without a profile keeps the one the index recorded.
            base = chosen or recorded_profile(store.meta, "the index")
            model = profile_embedder(embedder, base)
            if callable(chunker):
                cutter = chunker(recorded)
            else:
                cutter = chunker or (base.chunker() if base else Chunker())
            if cutter.kind == "semantic" and cutter.embedding is None:  # the index's own embedder
                cutter = replace(cutter, embedding=sentence_embedding(model))
            documents, too_long = within_chunk_limit(
                loaded.documents, cutter, limits.max_chunks, progress
            )
            report = sync(store, documents, chunker=cutter, embedder=model, progress=progress)
            record_profile(store, base, report)
            return report, too_long

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
        recorded = recorded_profile(store.meta, "the index")
        return cls(store, report.embedder, report, errors, loaded.warnings, fusion, recorded)

    @classmethod
    def open(
        cls,
        path: str | Path,
        *,
        embedder: str | Embedder | None = None,
        backend: str = "sqlite",
        qdrant_url: str | None = None,
        qdrant_keyword: str | None = None,
        profile: str | Profile | None = None,
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

        Its queries use the profile it recorded (`raglab.profiles`), or `profile`: one whose
        embedder or chunking differs from the index's is refused (`ProfileMismatch`, saying
        what differs and what to run).
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
        recorded = recorded_profile(store.meta, f"index {str(path)!r}")
        if profile is None:
            return cls(store, embedder, profile=recorded)
        chosen = find_profile(profile)
        mismatch = refusal(chosen, store.meta, str(path))
        if mismatch is not None:
            store.close()
            raise mismatch
        return cls(store, embedder, profile=chosen)

    @property
    def chunker_params(self) -> dict[str, Any] | None:
        """The chunker settings the index was built with (`Chunker.params()`), as recorded."""
        params: dict[str, Any] | None = self.store.meta["chunker"]
        return params

    def with_profile(self, profile: str | Profile) -> Index:
        """This index, its queries made with `profile`; refused (`ProfileMismatch`) when the
        profile's embedder or chunking is not the index's own."""
        chosen = find_profile(profile)
        mismatch = refusal(chosen, self.store.meta, None)
        if mismatch is not None:
            raise mismatch
        return replace(self, profile=chosen)

    @property
    def k(self) -> int:
        """How many chunks a question gets by default: the profile's k, else `DEFAULT_K`."""
        return self.profile.k if self.profile else DEFAULT_K

    @property
    def method(self) -> str:
        """How chunks are ranked by default: the profile's retriever, else `DEFAULT_METHOD`."""
        return self.profile.retriever if self.profile else DEFAULT_METHOD

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
            self._retrievers[key] = Retriever(
                self.store,
                self.embedder,
                method,
                min_score,
                fits=self._fits,
                fusion=self._fusion() if hybrid else None,
                reranker=self._reranker() if hybrid else None,
            )
        retriever = self._retrievers[key]
        if diversity is None and expansion is None:
            return retriever
        return replace(retriever, diversity=diversity, expansion=expansion)

    def _fusion(self) -> Fusion:
        """The fusion given, else the profile's, else the embedder's default."""
        if self.fusion is not None:
            return self.fusion
        return self.profile.fusion_rule() if self.profile else default_fusion(self.embedder.name)

    def _reranker(self) -> Reranker | None:
        """The profile's choice (the shipped reranker for the embedder, or none), else the
        shipped one when its held-out figures enabled it."""
        if self.profile is None:
            return default_reranker(self.embedder.name)
        return load_reranker(self.embedder.name) if self.profile.reranker else None

    def search(
        self,
        question: str,
        principal: Principal,
        *,
        k: int | None = None,
        method: str | None = None,
        min_score: float | None = None,
        diversity: Diversity | None = None,
        expansion: QueryExpansion | None = None,
    ) -> list[Hit]:
        """The top-k chunks `principal` may read, ranked for `question` by `method`: the
        query path of `raglab.query` (expand, retrieve, fuse, rerank, diversify). `k` and
        `method` left out: the profile's (`Index.k`, `Index.method`)."""
        retriever = self.retriever(
            method or self.method, min_score=min_score, diversity=diversity, expansion=expansion
        )
        return retriever.search(question, principal, self.k if k is None else k)


def recorded_profile(meta: dict[str, Any], where: str) -> Profile | None:
    """The profile an index recorded in its meta (`record_profile`), or None."""
    record = meta["profile"]
    return None if record is None else from_record(record, where)


def record_profile(store: VectorStore, base: Profile | None, report: SyncReport) -> None:
    """Record in the index the profile it was built with and the settings that overrode it,
    read off what `sync` used (nothing without a profile)."""
    if base is not None:
        replaced = overridden(base, report.embedder.name, report.chunker)
        store.set_meta({"profile": {**base.as_dict(), "overridden": replaced}})


def profile_embedder(given: str | Embedder | None, base: Profile | None) -> Embedder:
    """The embedder given, else the profile's, else `DEFAULT_EMBEDDER`; a profile's is
    checked to be the version the profile was made for."""
    chosen = given if given is not None else base.embedder if base else DEFAULT_EMBEDDER
    model = make_embedder(chosen) if isinstance(chosen, str) else chosen
    if base is not None:
        check_version(base, model)
    return model


def check_version(chosen: Profile, embedder: Embedder) -> None:
    """Refuse to index with a profile made for another version of its embedder."""
    if embedder.name != chosen.embedder or is_fittable(embedder):
        return  # overridden by another embedder; a learned one has a version per fit
    if chosen.embedder_version is not None and embedder.version != chosen.embedder_version:
        raise ProfileMismatch(
            f"profile {chosen.name!r} was made for {chosen.embedder} version "
            f"{chosen.embedder_version}, but this raglab's is {embedder.version}: "
            "update the profile's embedder_version (its chunk sizes and calibration may no longer fit)"
        )


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
    against the index's calibration for the principal's tenant (`calibration_for`). With a
    profile, the profile's abstention rule decides."""
    rule = index.profile.abstention_rule if index.profile else None
    return ExtractiveGenerator(
        embedder=answer_embedder(index, principal, method),
        known_words=known_words(index, principal),
        rule=None if rule is None else load_rule(rule),
        calibration=calibration_for(index, principal),
    )


def profile_answerer(index: Index, principal: Principal, method: str) -> Generator:
    """The answerer of the index's profile: its model, or the offline extractive one."""
    if index.profile is not None and index.profile.answerer == "openai":
        return index.profile.model()
    return default_answerer(index, principal, method)


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
    k: int | None = None,
    method: str | None = None,
    generator: Generator | None = None,
    max_chars: int = 6000,
    max_tokens: int | None = None,
    count_tokens: TokenCount | None = None,
    order: str = "rank",
    diversity: Diversity | None = None,
    expansion: QueryExpansion | None = None,
    profile: str | Profile | None = None,
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

    `profile` (`raglab.profiles`; default: the one the index recorded) gives `k`, `method`,
    the answerer and the token budget (`max_tokens` counted by its `count_tokens`); each of
    those given here overrides the profile's. A profile whose embedder or chunking is not
    the index's own is refused (`ProfileMismatch`). Without a profile: k 5, hybrid, the
    extractive answerer, no token budget.
    """
    check_question(question)  # before any work: a bounded question keeps every step bounded
    if profile is not None and find_profile(profile) != index.profile:
        index = index.with_profile(profile)
    method = method or index.method
    if index.profile is not None and max_tokens is None:
        max_tokens = index.profile.context_tokens
        count_tokens = count_tokens or index.profile.count_tokens()
    # expand, retrieve (dense, BM25), fuse, rerank, diversify: k is checked and every
    # depth decided once, where the query path starts (`raglab.query.QueryPlan`)
    hits = index.search(
        question, principal, k=k, method=method, diversity=diversity, expansion=expansion
    )
    if generator is None:
        generator = profile_answerer(index, principal, method)
    # prompt, generate, verify the citations
    return answer_from(
        question,
        hits,
        generator,
        max_chars=max_chars,
        max_tokens=max_tokens,
        count_tokens=count_tokens,
        order=order,
    )


def answer_from(
    question: str,
    hits: Sequence[Hit],
    generator: Generator,
    *,
    max_chars: int = 6000,
    max_tokens: int | None = None,
    count_tokens: TokenCount | None = None,
    order: str = "rank",
) -> Answer:
    """The query path after retrieval: prompt, generate, verify the citations (see `ask`).

    Apart from `ask` so that another retrieval (a reranker, notebook 09's steps) can be
    answered exactly as `ask` answers.
    """
    prompt = build_prompt(
        question,
        hits,
        max_chars=max_chars,
        max_tokens=max_tokens,
        count_tokens=count_tokens,
        order=order,
    )
    return answer_prompt(prompt, generator)


def answer_prompt(prompt: Prompt, generator: Generator) -> Answer:
    """Generate from a built prompt and verify the citations against its sources (a
    conversation builds its own prompt, with a history block: `raglab.conversation`)."""
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
