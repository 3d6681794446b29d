"""Learner-facing checks, one per exercise, with a short, friendly verdict.

    from raglab import checks
    checks.check_chunk(chunk)        # ✅ chunk: all 14 cases and 200 random texts pass

Each notebook's checks live in their own module; `CHECKS` maps every exercise id to its
check, and the grader (`raglab grade`) uses it to re-run the checks itself.
"""

from collections.abc import Callable

from raglab.checks import chunking, contracts, design, embeddings, retrieval, understand
from raglab.checks.chunking import (
    check_chunk,
    check_chunk_sections,
    check_split_sections,
    reference_sections,
)
from raglab.checks.contracts import *  # noqa: F403 — each module lists its checks in __all__
from raglab.checks.core import CheckResult
from raglab.checks.design import *  # noqa: F403
from raglab.checks.embeddings import *  # noqa: F403
from raglab.checks.retrieval import *  # noqa: F403
from raglab.checks.understand import *  # noqa: F403

CHECKS: dict[str, Callable[[Callable], CheckResult]] = {
    **understand.CHECKS,  # 01
    **contracts.CHECKS,  # 02
    **design.CHECKS,  # 03
    **chunking.CHECKS,  # 04
    **embeddings.CHECKS,  # 05
    **retrieval.CHECKS,  # 06
}

__all__ = [  # noqa: F405 — plus every name in the notebook modules' __all__
    *understand.__all__,
    *contracts.__all__,
    *design.__all__,
    *embeddings.__all__,
    *retrieval.__all__,
    "CHECKS",
    "CheckResult",
    "check_chunk",
    "check_chunk_sections",
    "check_split_sections",
    "reference_sections",
]
