"""The attacks after the first round, one module per class of attack (leaks, data loss, a
hostile class, exhausting inputs, citations, the LLM client). Each module lists its attacks in
`ATTACKS`, as (name, function of a fresh temporary folder -> "held" or "FAILED: why");
`scripts/attack.py` runs them after its own."""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from pathlib import Path

Attack = tuple[str, Callable[[Path], str]]


def discovered() -> list[Attack]:
    """Every module's ATTACKS, modules in name order (common.py holds helpers, no attacks)."""
    attacks: list[Attack] = []
    for module in sorted(m.name for m in pkgutil.iter_modules(__path__)):
        attacks += getattr(importlib.import_module(f"{__name__}.{module}"), "ATTACKS", [])
    return attacks
