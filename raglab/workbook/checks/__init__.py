"""Learner-facing checks, one per exercise, with a short, friendly verdict.

    from raglab.workbook import checks
    checks.check_chunk(chunk)        # ✅ chunk: all 14 cases and 200 random texts pass

Each notebook's checks live in their own module; `CHECKS` maps every exercise id to its
check, and the grader (`raglab grade`) uses it to re-run the checks itself.
"""

from collections.abc import Callable

from raglab.chunking import chunk as _chunk
from raglab.workbook.checks import chunking, contracts, design, understand
from raglab.workbook.checks.chunking import (
    check_chunk,
    check_chunk_sections,
    check_split_sections,
    reference_sections,
)
from raglab.workbook.checks.contracts import *  # noqa: F403 — each module lists its checks in __all__
from raglab.workbook.checks.core import CheckFailed, CheckResult, ReferenceHidden
from raglab.workbook.checks.design import *  # noqa: F403
from raglab.workbook.checks.understand import *  # noqa: F403

CHECKS: dict[str, Callable[[Callable], CheckResult]] = {
    **understand.CHECKS,  # 01
    **contracts.CHECKS,  # 02
    **design.CHECKS,  # 03
    **chunking.CHECKS,  # 04
}

# The reference implementation of each exercise. While a check runs the learner's function,
# every name bound to one of these is a stand-in that raises (core.references_hidden).
REFERENCES: tuple[Callable, ...] = (
    understand.reference_cited_doc_ids,  # 01
    contracts.reference_chunk_violations,  # 02
    design.reference_search_readable,  # 03
    _chunk,  # 04
    reference_sections,
)

__all__ = [  # noqa: F405 — plus every name in the notebook modules' __all__
    *understand.__all__,
    *contracts.__all__,
    *design.__all__,
    "CHECKS",
    "CheckFailed",
    "CheckResult",
    "REFERENCES",
    "ReferenceHidden",
    "check_chunk",
    "check_chunk_sections",
    "check_split_sections",
    "reference_sections",
]
