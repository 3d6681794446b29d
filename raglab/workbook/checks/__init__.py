"""Learner-facing checks, one per exercise, with a short, friendly verdict.

    from raglab.workbook import checks
    checks.check_chunk(chunk)        # ✅ chunk: all 14 cases and 200 random texts pass

Each notebook's checks live in their own module; `CHECKS` maps every exercise id to its
check, and the grader (`raglab grade`) uses it to re-run the checks itself.
"""

from collections.abc import Callable

from raglab.evaluation.bootstrap import resample_means as _resample_means
from raglab.generate.citations import parse_citations as _parse_citations
from raglab.ingest.chunking import chunk as _chunk
from raglab.retrieve._fast import top_k as _fast_top_k
from raglab.retrieve.vectors import cosine as _cosine
from raglab.retrieve.vectors import top_k as _top_k
from raglab.workbook.checks import (
    agent,
    audit,
    chunking,
    contracts,
    conversation,
    design,
    embeddings,
    generation,
    graph,
    improve,
    improve_more,
    improve_versions,
    longcontext,
    retrieval,
    scale,
    testing,
    understand,
)
from raglab.workbook.checks.agent import *  # noqa: F403
from raglab.workbook.checks.audit import *  # noqa: F403 — each module lists its checks in __all__
from raglab.workbook.checks.chunking import (
    check_chunk,
    check_chunk_sections,
    check_context_header,
    check_split_sections,
    reference_context_header,
    reference_sections,
)
from raglab.workbook.checks.contracts import *  # noqa: F403
from raglab.workbook.checks.conversation import *  # noqa: F403
from raglab.workbook.checks.core import CheckFailed, CheckResult, ReferenceHidden, hide_references
from raglab.workbook.checks.design import *  # noqa: F403
from raglab.workbook.checks.embeddings import *  # noqa: F403
from raglab.workbook.checks.generation import *  # noqa: F403
from raglab.workbook.checks.graph import *  # noqa: F403
from raglab.workbook.checks.improve import *  # noqa: F403
from raglab.workbook.checks.improve_more import *  # noqa: F403
from raglab.workbook.checks.improve_versions import *  # noqa: F403
from raglab.workbook.checks.longcontext import *  # noqa: F403
from raglab.workbook.checks.retrieval import *  # noqa: F403
from raglab.workbook.checks.scale import *  # noqa: F403
from raglab.workbook.checks.testing import *  # noqa: F403
from raglab.workbook.checks.understand import *  # noqa: F403

CHECKS: dict[str, Callable[[Callable], CheckResult]] = {
    **understand.CHECKS,  # 01
    **contracts.CHECKS,  # 02
    **design.CHECKS,  # 03
    **chunking.CHECKS,  # 04
    **embeddings.CHECKS,  # 05
    **retrieval.CHECKS,  # 06
    **generation.CHECKS,  # 07
    **testing.CHECKS,  # 08
    **improve.CHECKS,  # 09
    **improve_more.CHECKS,
    **improve_versions.CHECKS,
    **audit.CHECKS,  # 10
    **scale.CHECKS,  # 11
    **conversation.CHECKS,  # 12
    **graph.CHECKS,  # 13
    **agent.CHECKS,  # 13
    **longcontext.CHECKS,  # 13
}

# The reference implementation of each exercise. While a check runs the learner's function,
# every name bound to one of these is a stand-in that raises (core.references_hidden).
REFERENCES: tuple[Callable, ...] = (
    understand.reference_cited_doc_ids,  # 01
    contracts.reference_chunk_violations,  # 02
    design.reference_search_readable,  # 03
    _chunk,  # 04
    reference_sections,
    reference_context_header,
    _cosine,  # 05
    embeddings.reference_hash_embed,
    _top_k,  # 06
    _fast_top_k,  # the engine's own top_k (what the stores call): the same answer, so hidden too
    retrieval.BM25,
    retrieval.reciprocal_rank_fusion,
    retrieval.reference_rrf,
    retrieval.reference_filtered_top_k,
    generation.make_boundary,  # 07
    generation.reference_delimit,
    generation.verify_citations,
    _parse_citations,
    generation.reference_decide,
    generation.AbstentionRule,
    generation.reference_markers,
    improve.bootstrap_ci,  # 09
    improve.reference_bootstrap_interval,
    _resample_means,
    improve.weighted_rrf,
    improve.reference_weighted_rrf,
    improve.shortest_span,
    improve_more.unsupported_numbers,
    improve_more.mmr,
    improve_more.reference_mmr_select,
    improve_versions.hidden_documents,
    improve_versions.supersession,
    improve_versions.reference_hidden_versions,
    *audit.REFERENCE_FIXES,  # 10
    scale.reference_knn_recall,  # 11
    *conversation.REFERENCES,  # 12
    graph.reference_label_propagation,  # 13 (the engine's own)
    agent.reference_missing_parts,  # 13
    agent.missing,  # the engine's own check: the same answer, so hidden too
    agent.meets,
    longcontext.long_context_cost,  # 13
)

# Exercise function -> the references it may call: an exercise that builds on an earlier
# one may use that one's reference (filtering first, then ranking with top_k, is the lesson).
BUILDS_ON: dict[str, tuple[Callable, ...]] = {
    "search_readable": (
        _cosine,
        _top_k,
        _fast_top_k,
    ),  # 03: the filter is the exercise, not the ranking
    "top_k": (_cosine,),
    "filtered_top_k": (_cosine, _top_k, _fast_top_k),
    # 10: a fix is built from the engine's parts (and the pipeline runs on them): all but
    # the reference fixes themselves
    **{
        name: tuple(r for r in REFERENCES if r not in audit.REFERENCE_FIXES)
        for name in audit.EXERCISES
    },
}

hide_references(REFERENCES, BUILDS_ON)

__all__ = [
    *agent.__all__,
    *audit.__all__,
    *understand.__all__,
    *contracts.__all__,
    *conversation.__all__,
    *design.__all__,
    *embeddings.__all__,
    *generation.__all__,
    *graph.__all__,
    *improve.__all__,
    *improve_more.__all__,
    *improve_versions.__all__,
    *longcontext.__all__,
    *retrieval.__all__,
    *scale.__all__,
    *testing.__all__,
    "BUILDS_ON",
    "CHECKS",
    "CheckFailed",
    "CheckResult",
    "REFERENCES",
    "ReferenceHidden",
    "check_chunk",
    "check_chunk_sections",
    "check_split_sections",
    "check_context_header",
    "reference_sections",
]
