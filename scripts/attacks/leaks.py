"""Leaks within a tenant: what a user may not read must not move what they see."""

from __future__ import annotations

import json
from pathlib import Path

from attacks.common import board_document_moves, run

BOARD_WORD = "kestrelwing"
BOARD_DOCUMENT = (
    "---\ntenant: acme\ngroups: [board]\n---\n# Board minutes\n\n"
    f"Project {BOARD_WORD}: the board approved the {BOARD_WORD} acquisition. "
    f"{BOARD_WORD} changes vacation days, laptops and the expenses policy.\n"
)
QUESTION = f"Is the {BOARD_WORD} acquisition why vacation days and laptops are changing?"


def _seen(where: list[str], groups: list[str]) -> dict:
    """What an acme user sees for QUESTION: the answer, and each source with its dense score."""
    result = run(
        "ask", QUESTION, *where, "--tenant", "acme", *groups, "--retriever", "dense",
        "--k", "10", "--json",
    )  # fmt: skip
    if result.returncode != 0:
        raise RuntimeError(result.stderr.strip()[-100:])
    seen = json.loads(result.stdout)
    return {"answer": seen["answer"], "retrieved": seen["retrieved"]}


def board_word_through_lsa(tmp: Path) -> str:
    """LSA: a [board] document's own word moves no dense score of a user outside board.

    The same question, the same users, before and after the board document is indexed,
    in memory (`--docs`) and in an index file (`raglab index`)."""
    moved, _ = board_document_moves(tmp, BOARD_DOCUMENT, _seen, ("--embedder", "lsa"))
    return f"FAILED: the board document moved what {moved} see" if moved else "held"


ATTACKS = [
    ("18a a [board] word through LSA's dense scores, users outside board", board_word_through_lsa),
]
