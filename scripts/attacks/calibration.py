"""Leaks through the answerer's calibration: the null distribution an index keeps for each
tenant (`raglab.pipeline.calibrate`) must not carry what a reader may not read."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from attacks.common import board_document_moves, run

# A [board] document in acme's words, and in the common words null questions are made with
# (`STAND_INS`): counted in the calibration, it would change acme's null questions and move
# every acme answer's confidence.
BOARD_DOCUMENT = (
    "---\ntenant: acme\ngroups: [board]\n---\n# Board minutes\n\n"
    "The board cut vacation days to 10 from next year and will stop the laptop allowance. "
    "Expense claims above 50 euros now need a board member's approval. "
    "The warranty, pension, helmet and passport rules are under review by the board. "
    "Staff parking, the gym and the bicycle scheme close in March.\n"
)
QUESTIONS = (
    "How many vacation days do I get?",
    "Who approves an expense claim?",
    "What is the warranty on my laptop?",
)


def _answers(where: list[str], groups: list[str]) -> list[dict]:
    """What an acme user gets for each question: the text and how sure it is."""
    seen = []
    for question in QUESTIONS:
        result = run("ask", question, *where, "--tenant", "acme", *groups, "--json")
        if result.returncode != 0:
            raise RuntimeError(result.stderr.strip()[-100:])
        answer = json.loads(result.stdout)
        seen.append({"answer": answer["answer"], "confidence": answer["confidence"]})
    return seen


def _stored_calibration(index: Path) -> dict:
    with sqlite3.connect(index) as con:
        (value,) = con.execute("SELECT value FROM meta WHERE key = 'calibration'").fetchone()
    stored: dict = json.loads(value)
    return stored


def board_document_through_calibration(tmp: Path) -> str:
    """A [board] document moves neither acme's stored calibration nor any answer (text or
    confidence) of an acme user outside board, in memory (`--docs`) and in an index file."""
    moved, indexes = board_document_moves(tmp, BOARD_DOCUMENT, _answers)
    plain, with_board = (_stored_calibration(index) for index in indexes.values())
    if plain["documents"] == with_board["documents"]:
        return "FAILED: the calibration was not computed again when a document was added"
    if plain["tenants"]["acme"] != with_board["tenants"]["acme"]:
        return "FAILED: the board document moved acme's stored calibration"
    return f"FAILED: the board document moved what {moved} get" if moved else "held"


ATTACKS = [
    ("18k a [board] document through the answerer's calibration, users outside board",
     board_document_through_calibration),
]  # fmt: skip
