"""raglab: a small, readable, offline RAG engine — one module per boundary.

    >>> import raglab
    >>> raglab.chunk("abcdefghij", size=4, overlap=1)
    ['abcd', 'defg', 'ghij']

Every public name below is importable from `raglab` (`raglab.chunk`, `from raglab import
Index`), but `import raglab` loads none of the modules yet: a name's module is imported the
first time the name is used (PEP 562's module `__getattr__`). The `raglab` command answers
one question per process, so a process should load only what its command needs, not every
module of the engine; heavy libraries (scikit-learn, matplotlib, ipywidgets) load later
still, inside the functions that use them.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

__version__ = "0.1.0"

PUBLIC = {
    "generate.abstention": (
        "AbstentionRule",
        "AnswerFeatures",
        "CurvePoint",
        "Example",
        "fit_rule",
        "load_rule",
        "precision_abstention_curve",
    ),
    "store.access": ("can_read", "eligible_rows"),
    "retrieve.bm25": ("BM25", "tokenize"),
    "evaluation.calibration": ("collect_examples", "split_questions"),
    "ingest.chunking": ("Chunker", "chunk"),
    "generate.citations": ("CitationReport", "parse_citations", "verify_citations"),
    "ingest.credentials": ("find_secrets", "redact"),
    "retrieve.diversity": ("Diversity", "dedup", "mmr"),
    "retrieve.fusion": ("reciprocal_rank_fusion",),
    "embed.embedders": (
        "Embedder",
        "HashingEmbedder",
        "LSAEmbedder",
        "available_embedders",
        "embedder",
    ),
    "embed.embedding_cache": ("CachedEmbedder", "cached"),
    "evaluation.runner": (
        "EvalReport",
        "Question",
        "evaluate",
        "hit_rate_at_k",
        "load_questions",
        "mrr",
        "ndcg_at_k",
        "recall_at_k",
    ),
    "generate.evidence": ("Evidence",),
    "generate.extractive": ("Decision", "ExtractiveGenerator"),
    "generate.generation": ("Generator", "is_abstention"),
    "store.indexing": ("sync",),
    "ingest.limits": ("within_chunk_limit",),
    "ingest.loaders": ("CorpusError", "DocumentError", "load_file", "load_folder"),
    "generate.openai_http": ("GenerationError", "OpenAIChatGenerator"),
    "generate.llm_rewrite": ("LLMRewriter",),
    "pipeline": ("Index", "Limits", "ask"),
    "query": ("METHODS", "Retriever"),
    "profiles": ("Profile", "ProfileError", "ProfileMismatch", "available_profiles", "profile"),
    "generate.prompting": ("ABSTENTION", "Prompt", "build_prompt"),
    "retrieve.query_expansion": ("QueryExpansion", "feedback_terms"),
    "records": ("Answer", "Chunk", "Citation", "Confidence", "Document", "Hit", "Principal"),
    "samples": ("sample_corpus", "sample_questions"),
    "store.sqlite_store": ("SQLiteStore",),
    "store.errors": ("DimensionMismatch", "EmbedderMismatch", "StoreError"),
    "store.memory": ("MemoryStore",),
    "store.protocol": ("VectorStore",),
    "retrieve.vectors": ("cosine", "normalise", "top_k"),
    "store.versions": ("hidden_documents", "supersession"),
}
"""The public API: each module of the engine and the names it gives `raglab`."""

_HOME = {name: module for module, names in PUBLIC.items() for name in names}

__all__ = sorted(_HOME)


def __getattr__(name: str) -> Any:
    """`raglab.NAME`: the public name, from its module (imported now if it is not yet).

    subtle: the value is looked up on every use, never stored here. A workbook check swaps
    a reference (`raglab.ingest.chunking.chunk`) for a stand-in while the learner's code runs; a
    copy kept in this module would go on pointing at whichever one was there first.
    """
    if name not in _HOME:
        raise AttributeError(f"module 'raglab' has no attribute {name!r}")
    return getattr(import_module(f"raglab.{_HOME[name]}"), name)


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
