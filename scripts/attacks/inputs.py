"""Inputs that exhaust or confuse the loader: a folder that cannot be walked, file names that
take over a terminal, credentials in shapes the screen missed and ordinary documents it
refused, and an embedding cache that leaks or poisons."""

from __future__ import annotations

import json
import os
import sqlite3
import stat
from pathlib import Path

import raglab
from attacks.common import CORPUS, QUESTIONS, corpus_with, run, traceback_in

PARKING = {"ok.md": "Parking is free for visitors on weekends."}


def _index(folder: Path, tmp: Path, *options: str):
    """`raglab index FOLDER --json`: the run and, when it printed one, its JSON report."""
    result = run("index", str(folder), "--index", str(tmp / "index.sqlite"), "--json", *options)
    try:
        report = json.loads(result.stdout)
    except json.JSONDecodeError:
        report = None
    return result, report


def _deep_folder(root: Path, depth: int) -> Path:
    """A chain of `depth` folders named d, made one level at a time (no recursion)."""
    path = str(root)
    for _ in range(depth):
        path = os.path.join(path, "d")
        os.mkdir(path)
    return Path(path)


def _remove_deep(root: Path, depth: int) -> None:
    """Remove what `_deep_folder` made bottom-up (shutil.rmtree recurses once per level)."""
    levels = [os.path.join(root, *["d"] * n) for n in range(1, depth + 1)]
    for folder in reversed(levels):
        for name in os.listdir(folder):
            os.unlink(os.path.join(folder, name))
        os.rmdir(folder)


def link_loop_and_deep_folder(tmp: Path) -> str:
    folder = corpus_with(tmp, PARKING)
    os.symlink("b.md", folder / "a.md")
    os.symlink("a.md", folder / "b.md")
    depth = 1_200
    (_deep_folder(folder, depth) / "deep.md").write_text("Deep.", encoding="utf-8")
    try:
        result, report = _index(folder, tmp)
    finally:
        _remove_deep(folder, depth)
    if traceback_in(result) or report is None:
        return f"FAILED: nothing indexed: {result.stderr.strip().splitlines()[-1][:90]!r}"
    if report["added"] != ["ok.md"]:
        return f"FAILED: indexed {report['added']}"
    named = [name for name in ("a.md", "b.md", "d/d/") if name not in result.stderr]
    return f"FAILED: no warning names {', '.join(named)}" if named else "held"


FORGED = "a\nraglab: warning: all clear\x1b[2J\x1b]0;owned\x07.md"
"""A name that prints a fake warning line, clears the screen and retitles the terminal."""


def hostile_file_names_in_messages(tmp: Path) -> str:
    folder = corpus_with(tmp, {**PARKING, FORGED: "key AKIAIOSFODNN7EXAMPLE\n"})
    (folder / "ev\u202eil").mkdir()
    os.symlink("ev\u202eil/x.md", folder / "ev\u202eil" / "x.md")  # a loop, under a bidi name
    result = run("ask", "Is parking free?", "--docs", str(folder))
    raw = [c for c in ("\x1b", "\x07", "\u202e") if c in result.stderr]
    forged = [
        line for line in result.stderr.splitlines() if line.startswith("raglab: warning: all")
    ]
    if traceback_in(result):
        return "FAILED: traceback"
    if raw or forged:
        return (
            f"FAILED: printed raw: {', '.join(map(repr, raw))}{' and a forged line' * bool(forged)}"
        )
    return "held"


SECRETS = [  # (the line in an ops note, the secret in it, a question that retrieves it)
    ("Connect with postgres://app:Pg-5ecret-42@db.internal/prod.", "Pg-5ecret-42", "connect"),
    ("The reporting job uses db_pass = Db-Pa55-2024 nightly.", "Db-Pa55-2024", "reporting job"),
    ("Das Passwort: Sommer-2024!x für den Drucker.", "Sommer-2024!x", "Passwort Drucker"),
    ("Le mot de passe : Soleil#2024 pour le wifi.", "Soleil#2024", "mot de passe wifi"),
    ("数据库密码：Xia2024ab", "Xia2024ab", "数据库密码"),
]


def credentials_in_missed_shapes(tmp: Path) -> str:
    docs = {f"ops{n}.md": f"# Ops note {n}\n\n{line}\n" for n, (line, _, _) in enumerate(SECRETS)}
    folder = corpus_with(tmp, {**PARKING, **docs})
    leaked = []
    for policy in ("refuse", "redact"):
        for _, secret, question in SECRETS:
            result = run("ask", question, "--docs", str(folder), "--secrets", policy, "--json")
            if secret in result.stdout + result.stderr:
                leaked.append(f"{secret} ({policy})")
    return f"FAILED: {len(leaked)} quoted: {', '.join(leaked[:3])}" if leaked else "held"


ORDINARY = {
    "tregs.md": "# CD4+CD25+Foxp3+Regulatory T Cells Protect Endothelial Function\n\nAbstract.",
    "ips.md": "More efficient than standard Oct4/Sox2/Klf4/Myc-mediated methods.",
    "heathrow.md": "[3] Library note, p.4 www.parliament.uk/briefing-papers/SN03760.pdf",
    "soft.md": "[3] www.parlia\u00adment.uk/brief\u00ading-pa\u00adpers/SN0\u00ad3760.pdf",
    "trade.md": "www.nytimes.com/2003/11/11/world/panama-challenges-miami-as-free-trade-hub.html",
}


def ordinary_documents_refused(tmp: Path) -> str:
    folder = corpus_with(tmp, ORDINARY)
    problems = []
    for policy in ("refuse", "redact"):
        (tmp / policy).mkdir()
        result, report = _index(folder, tmp / policy, "--secrets", policy)
        lost = [name for name in ORDINARY if name in result.stderr]
        if lost or traceback_in(result) or report is None:
            problems.append(f"{policy}: {', '.join(lost) or result.stderr.strip()[-60:]}")
        if "load with --secrets redact" in result.stderr and policy == "redact":
            problems.append("redact: its message advises --secrets redact")
    return f"FAILED: {'; '.join(problems)}" if problems else "held"


def readable_embedding_cache(tmp: Path) -> str:
    old = os.umask(0o022)  # the usual umask: what a user gets without thinking about it
    try:
        fresh = tmp / "fresh"
        raglab.cached(raglab.embedder("hashing"), fresh).embed(["the merger code word"])
        stale = tmp / "stale"  # a cache left by an older version, readable by all
        raglab.cached(raglab.embedder("hashing"), stale).embed(["the merger code word"])
        stale.chmod(0o755)
        for path in stale.iterdir():
            path.chmod(0o644)
        raglab.cached(raglab.embedder("hashing"), stale).embed(["another text"])
    finally:
        os.umask(old)
    readable = [
        f"{path.relative_to(tmp)} {stat.S_IMODE(path.stat().st_mode):o}"
        for path in (fresh, *fresh.iterdir(), stale, *stale.iterdir())
        if stat.S_IMODE(path.stat().st_mode) & 0o077
    ]
    return f"FAILED: readable by others: {', '.join(readable)}" if readable else "held"


def nan_in_embedding_cache(tmp: Path) -> str:
    folder = corpus_with(tmp, PARKING)
    embedder = raglab.cached(raglab.embedder("hashing"), tmp / "cache")
    raglab.Index.from_folder(folder, embedder=embedder)
    with sqlite3.connect(embedder.path) as db:
        nan = b"\x00\x00\xc0\x7f" * embedder.dim  # float32 NaN, little-endian
        db.execute("UPDATE vectors SET vector = ?", (nan,))
    db.close()
    try:
        index = raglab.Index.from_folder(
            folder, embedder=raglab.cached(embedder.inner, tmp / "cache")
        )
        hits = index.search("Is parking free?", raglab.Principal("ann"), k=1)
    except Exception as error:  # the attack reports what broke
        return f"FAILED: indexing broke: {type(error).__name__}: {str(error)[:60]}"
    return "held" if hits and hits[0].score == hits[0].score else "FAILED: a NaN score came back"


class _OtherModel:
    """Vectors as wide as hashing's, from another model: its cache file must never serve hashing."""

    name, version, dim = "other-model", "1", raglab.embedder("hashing").dim

    def embed(self, texts):
        return raglab.embedder("hashing").embed([t[::-1] for t in texts])


def damaged_embedding_cache(tmp: Path) -> str:
    """The cache on by default meets a truncated file, then another model's file under the
    hashing file's name: `raglab eval` must score exactly as with --no-cache, without a crash."""
    env = {**os.environ, "RAGLAB_CACHE_DIR": str(tmp / "cache")}
    args = ("eval", "--docs", str(CORPUS), "--questions", str(QUESTIONS), "--retrieval-only")
    plain = run(*args, "--json", "--no-cache", env=env)
    run(*args, env=env)  # fills the cache
    [hashing] = (tmp / "cache").glob("hashing-*.sqlite")
    hashing.write_bytes(hashing.read_bytes()[: hashing.stat().st_size // 2])
    truncated = run(*args, "--json", env=env)
    other = raglab.cached(_OtherModel(), tmp / "other")  # type: ignore[arg-type]
    other.embed([chunk.indexed_text for chunk in raglab.Index.from_folder(CORPUS).store.chunks()])
    hashing.write_bytes(other.path.read_bytes())
    foreign = run(*args, "--json", env=env)
    problems = [
        f"{label}: {result.stderr.strip()[-80:] if result.returncode else 'other scores'}"
        for label, result in (("truncated", truncated), ("another model's file", foreign))
        if result.returncode or traceback_in(result) or result.stdout != plain.stdout
    ]
    return f"FAILED: {'; '.join(problems)}" if problems else "held"


ATTACKS = [
    ("12a a symbolic link loop and a 1,200-level folder in the docs", link_loop_and_deep_folder),
    (
        "12b file names with a newline, escape sequences, bidi in messages",
        hostile_file_names_in_messages,
    ),
    (
        "12c password in a URL, db_pass =, Passwort:, mot de passe, 密码",
        credentials_in_missed_shapes,
    ),
    (
        "12d public-corpus documents (CD4+CD25+Foxp3+, URLs, soft hyphens)",
        ordinary_documents_refused,
    ),
    (
        "12e embedding cache readable by others (new, and left by an old version)",
        readable_embedding_cache,
    ),
    ("12f a NaN entry in the embedding cache, then index", nan_in_embedding_cache),
    (
        "12g a truncated cache file, then another model's file under its name",
        damaged_embedding_cache,
    ),
]
