"""raglab: a small, readable, offline RAG engine — one module per boundary.

    >>> import raglab
    >>> raglab.chunk("abcdefghij", size=4, overlap=1)
    ['abcd', 'defg', 'ghij']

Heavy libraries (scikit-learn, matplotlib, ipywidgets) load only inside the functions that
use them, so `import raglab` stays quick.
"""

from raglab.abstention import (
    AbstentionRule,
    AnswerFeatures,
    CurvePoint,
    Example,
    fit_rule,
    load_rule,
    precision_abstention_curve,
)
from raglab.access import can_read, eligible_rows
from raglab.bm25 import BM25, tokenize
from raglab.calibration import collect_examples, split_questions
from raglab.chunking import Chunker, chunk
from raglab.citations import CitationReport, parse_citations, verify_citations
from raglab.credentials import find_secrets, redact
from raglab.diversity import Diversity, dedup, mmr
from raglab.embedders import Embedder, HashingEmbedder, LSAEmbedder, available_embedders, embedder
from raglab.embedding_cache import CachedEmbedder, cached
from raglab.evaluation import (
    EvalReport,
    Question,
    evaluate,
    hit_rate_at_k,
    load_questions,
    mrr,
    ndcg_at_k,
    recall_at_k,
)
from raglab.evidence import Evidence
from raglab.extractive import Decision, ExtractiveGenerator
from raglab.generation import Generator, is_abstention
from raglab.indexing import sync
from raglab.limits import within_chunk_limit
from raglab.loaders import CorpusError, DocumentError, load_file, load_folder
from raglab.openai_http import GenerationError, OpenAIChatGenerator
from raglab.pipeline import Index, Limits, ask
from raglab.prompting import ABSTENTION, Prompt, build_prompt
from raglab.query_expansion import LLMRewriter, QueryExpansion, feedback_terms
from raglab.records import Answer, Chunk, Citation, Document, Hit, Principal
from raglab.retrieval import METHODS, Retriever, reciprocal_rank_fusion
from raglab.samples import sample_corpus, sample_questions
from raglab.sqlite_store import SQLiteStore
from raglab.stores import (
    DimensionMismatch,
    EmbedderMismatch,
    MemoryStore,
    StoreError,
    VectorStore,
)
from raglab.vectors import cosine, normalise, top_k
from raglab.versions import hidden_documents, supersession

__version__ = "0.1.0"

__all__ = [
    "ABSTENTION",
    "BM25",
    "METHODS",
    "AbstentionRule",
    "Answer",
    "AnswerFeatures",
    "CachedEmbedder",
    "Chunk",
    "Chunker",
    "Citation",
    "CitationReport",
    "CorpusError",
    "CurvePoint",
    "Decision",
    "DimensionMismatch",
    "Diversity",
    "Document",
    "DocumentError",
    "Embedder",
    "EmbedderMismatch",
    "EvalReport",
    "Evidence",
    "Example",
    "ExtractiveGenerator",
    "GenerationError",
    "Generator",
    "HashingEmbedder",
    "Hit",
    "Index",
    "LLMRewriter",
    "LSAEmbedder",
    "Limits",
    "MemoryStore",
    "OpenAIChatGenerator",
    "Principal",
    "Prompt",
    "QueryExpansion",
    "Question",
    "Retriever",
    "SQLiteStore",
    "StoreError",
    "VectorStore",
    "ask",
    "available_embedders",
    "build_prompt",
    "cached",
    "can_read",
    "chunk",
    "collect_examples",
    "cosine",
    "dedup",
    "eligible_rows",
    "embedder",
    "evaluate",
    "feedback_terms",
    "find_secrets",
    "fit_rule",
    "hidden_documents",
    "hit_rate_at_k",
    "is_abstention",
    "load_file",
    "load_folder",
    "load_questions",
    "load_rule",
    "mmr",
    "mrr",
    "ndcg_at_k",
    "normalise",
    "parse_citations",
    "precision_abstention_curve",
    "recall_at_k",
    "reciprocal_rank_fusion",
    "redact",
    "sample_corpus",
    "sample_questions",
    "split_questions",
    "supersession",
    "sync",
    "tokenize",
    "top_k",
    "verify_citations",
    "within_chunk_limit",
]
