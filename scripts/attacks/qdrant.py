"""The Qdrant store (local mode, a folder): no score moved by what the asker may not read, and
no state an index can be left in (emptied, or killed mid-update) that the next
`raglab index` cannot take up again."""

from __future__ import annotations

import json
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import raglab
from attacks.common import corpus_with, run, traceback_in

QDRANT = ("--store", "qdrant")


def _index(folder: Path, index: Path) -> subprocess.CompletedProcess:
    return run("index", str(folder), *QDRANT, "--index", str(index), timeout=600)


def _retrieved(index: Path, question: str, *asker: str, keyword: str = "exact") -> list:
    """(doc id, score) of every chunk `raglab ask --json` retrieved, or the error it printed."""
    options = ("--qdrant-keyword", keyword, "--json", *asker)
    result = run("ask", question, *QDRANT, "--index", str(index), *options)
    if result.returncode != 0 or traceback_in(result):
        return [f"error: {result.stderr.strip()[-100:]}"]
    return [(hit["doc_id"], hit["score"]) for hit in json.loads(result.stdout)["retrieved"]]


# ---------------------------------------------------------------------------- 17a no oracle

RESTRICTED = {  # a tenant whose every document has groups, and one with open documents
    "acme/refunds.md": "---\ntenant: acme\ngroups: [hr]\n---\nA refund for a laptop takes a week.",
    "acme/payroll.md": "---\ntenant: acme\ngroups: [hr]\n---\nRefund claims go to payroll.",
    "globex/faq.md": "---\ntenant: globex\n---\nA laptop refund needs the receipt.",
    "globex/desk.md": "---\ntenant: globex\n---\nThe help desk opens at nine.",
}
BOARD = (
    "---\ntenant: acme\ngroups: [board]\n---\nThe zyxwv merger: refund "
    + "the quarterly figures " * 30
)
ASKERS = {
    "acme hr": ("--tenant", "acme", "--groups", "hr"),
    "globex": ("--tenant", "globex"),
}


def server_keyword_oracle(tmp: Path) -> str:
    """A [board] document with a word no one else uses, added: do the server-mode keyword
    scores of users outside [board] (its tenant's hr group, another tenant) move?"""
    folder, index = corpus_with(tmp, RESTRICTED), tmp / "q"

    def scores() -> dict:
        return {
            (who, retriever): _retrieved(
                index, "zyxwv refund laptop", *asker, "--retriever", retriever, keyword="server"
            )
            for who, asker in ASKERS.items()
            for retriever in ("bm25", "hybrid")
        }

    if _index(folder, index).returncode != 0:
        return "FAILED: raglab index"
    before = scores()
    (folder / "acme" / "board.md").write_text(BOARD, encoding="utf-8")
    if _index(folder, index).returncode != 0:
        return "FAILED: raglab index, after the board document"
    board = _retrieved(index, "zyxwv", "--tenant", "acme", "--groups", "board", keyword="server")
    if not board or board[0][0] != "acme/board.md":
        return f"FAILED: the attack did not reach the index ({board})"
    moved = [
        f"{who} {retriever}"
        for (who, retriever), hits in scores().items()
        if hits != before[(who, retriever)]
    ]
    return f"FAILED: the board document moved the scores of {moved}" if moved else "held"


# ---------------------------------------------------------------------------- 17b emptied

SMALL = {
    "acme/open.md": "---\ntenant: acme\n---\nParking is free. Refunds take a week.",
    "acme/hr.md": "---\ntenant: acme\ngroups: [hr]\n---\nSalaries are reviewed each March.",
    "globex/faq.md": "---\ntenant: globex\n---\nError E-204 means the licence has expired.",
}
QUESTIONS = {
    "When are salaries reviewed?": ("--tenant", "acme", "--groups", "hr"),
    "How long do refunds take?": ("--tenant", "acme"),
    "What does error E-204 mean?": ("--tenant", "globex"),
}


def _answers(index: Path) -> list:
    return [_retrieved(index, q, *asker) for q, asker in QUESTIONS.items()]


def _write(folder: Path, files: dict[str, str]) -> None:
    shutil.rmtree(folder, ignore_errors=True)
    for name, text in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text, encoding="utf-8")


def emptied_partitions(tmp: Path) -> str:
    """Every document (the folder left with an empty file), a tenant's, a group's removed
    and indexed, then put back: does each `raglab index` succeed, and answer as fresh?"""
    folder = tmp / "docs"
    _write(folder, SMALL)
    if _index(folder, tmp / "fresh").returncode != 0:
        return "FAILED: raglab index"
    expected = _answers(tmp / "fresh")
    removals = {
        "every document": list(SMALL),
        "a tenant": ["globex/faq.md"],
        "a group": ["acme/hr.md"],
    }
    failed = []
    for label, removed in removals.items():
        index = tmp / label.replace(" ", "_")
        _write(folder, SMALL)
        _index(folder, index)
        _write(folder, {k: v for k, v in SMALL.items() if k not in removed} or {"empty.md": ""})
        emptied = _index(folder, index)
        _write(folder, SMALL)
        back = _index(folder, index)
        for result in (emptied, back):
            if result.returncode != 0 or traceback_in(result):
                failed.append(f"{label}: {result.stderr.strip()[-60:]!r}")
                break
        else:
            if _answers(index) != expected:
                failed.append(f"{label}: answers differ from a fresh index")
    return f"FAILED: {'; '.join(failed)}" if failed else "held"


# ---------------------------------------------------------------------------- 17c kill -9


def _corpus(folder: Path, n_docs: int, seed: int) -> None:
    """`n_docs` documents of two tenants, a third restricted to a group; `seed` picks words."""
    rng = random.Random(seed)
    words = ["refund", "laptop", "policy", "office"] + [f"w{i}" for i in range(400)]
    files = {}
    for d in range(n_docs):
        tenant = ("acme", "globex")[d % 2]
        groups = "[hr]" if d % 3 == 0 else "[]"
        text = " ".join(rng.choice(words) for _ in range(rng.randint(40, 120)))
        files[f"{tenant}/doc{d:04d}.md"] = (
            f"---\ntenant: {tenant}\ngroups: {groups}\n---\n# Document {d}\n\n{text}.\n"
        )
    _write(folder, files)


def _killed_at(folder: Path, index: Path, seconds: float) -> None:
    """`raglab index` started, then killed with SIGKILL after `seconds`."""
    command = [sys.executable, "-m", "raglab", "index", str(folder), *QDRANT, "--index", str(index)]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(seconds)
    process.send_signal(signal.SIGKILL)
    process.wait()


def _contents(index: Path) -> tuple:
    """Every document record and chunk the index holds (the folder is let go of at once)."""
    opened = raglab.Index.open(index, backend="qdrant")
    try:
        return opened.store.documents(), opened.store.chunks()
    finally:
        opened.store.close()


KILL_AT = (0.3, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95)
"""When to kill, as fractions of how long an uninterrupted `raglab index` took."""


def killed_mid_update(tmp: Path) -> str:
    """`raglab index` of 300 documents killed with SIGKILL at several moments, in a first
    build and in an update (a third changed, a sixth removed, 60 added); then indexed again:
    does it succeed, hold no chunk of a removed document and lose none of the others, and
    answer as a fresh index of the folder does?"""
    first, update = tmp / "first", tmp / "update"
    _corpus(first, 300, seed=1)
    _corpus(update, 360, seed=1)
    changed = sorted(update.rglob("*.md"))
    for path in changed[::3]:  # a third rewritten
        path.write_text(path.read_text(encoding="utf-8") + "\nAmended.\n", encoding="utf-8")
    for path in changed[1::6]:  # a sixth removed
        path.unlink()
    built = tmp / "built"
    started = time.monotonic()
    if _index(first, built).returncode != 0:
        return "FAILED: raglab index"
    took = time.monotonic() - started
    failed = []
    for label, folder, before in (("first build", first, None), ("update", update, built)):
        fresh = tmp / f"fresh-{label}"
        _index(folder, fresh)
        expected = _contents(fresh), _retrieved(fresh, "refund laptop policy", "--tenant", "acme")
        for fraction in KILL_AT:
            index = tmp / f"{label}-{fraction}"
            if before is not None:
                shutil.copytree(before, index)
            _killed_at(folder, index, took * fraction)
            again = _index(folder, index)
            if again.returncode != 0 or traceback_in(again):
                failed.append(f"{label} at {fraction:.0%}: {again.stderr.strip()[-60:]!r}")
                continue
            asked = _retrieved(index, "refund laptop policy", "--tenant", "acme")
            if (_contents(index), asked) != expected:
                failed.append(f"{label} at {fraction:.0%}: not what a fresh index holds")
    return f"FAILED: {'; '.join(failed[:3])} ({len(failed)} of 14)" if failed else "held"


ATTACKS = [
    ("17a Qdrant server keyword: a [board] document, a word only it holds", server_keyword_oracle),
    ("17b Qdrant index emptied (every document, a tenant, a group), then back", emptied_partitions),
    ("17c Qdrant `raglab index` killed -9 at 7 moments (first build, update)", killed_mid_update),
]
