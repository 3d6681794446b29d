"""Derived files beside an index: raglab deletes only what it wrote, never leaves a
half-written file where a reader can find it, never lets one decide who reads what; a full
disk or a read-only index is one clear line, and the index stays as it was."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import sysconfig
from pathlib import Path

from attacks.common import CORPUS, ROOT, run, traceback_in


def users_files_beside_the_index(tmp: Path) -> str:
    """`raglab index --index NAME` twice, with the user's own NAME.x.y.npy files beside it."""
    index = tmp / "corpus.sqlite"
    mine = ["corpus.sqlite.backup.old.npy", "corpus.sqlite.2024.final.npy"]
    for name in mine:
        (tmp / name).write_bytes(b"mine")
    for _ in range(2):
        result = run("index", str(CORPUS), "--index", str(index))
        if result.returncode != 0 or traceback_in(result):
            return f"FAILED: raglab index: {result.stderr.strip()[-100:]}"
    lost = [name for name in mine if not (tmp / name).exists()]
    return f"FAILED: raglab index deleted {lost}" if lost else "held"


def half_written_files(tmp: Path) -> str:
    """After indexing, no temporary file is left and every .npy beside the index loads whole."""
    import numpy as np

    index = tmp / "corpus.sqlite"
    result = run("index", str(CORPUS), "--index", str(index))
    if result.returncode != 0:
        return f"FAILED: raglab index: {result.stderr.strip()[-100:]}"
    ask = run("ask", "How many vacation days do I get?", "--index", str(index), "--tenant", "acme")
    if ask.returncode != 0:
        return f"FAILED: raglab ask: {ask.stderr.strip()[-100:]}"
    leftovers = [p.name for p in tmp.glob(".corpus.sqlite.*")]
    if leftovers:
        return f"FAILED: temporary files left: {leftovers}"
    for path in tmp.glob("corpus.sqlite.*.npy"):
        np.load(path)  # raises on a truncated file
    return "held"


# -- 15c: the vector files beside the index decide nothing


def readers_questions(index: Path, folder: Path) -> Path:
    """For a user of acme and one of globex, both without groups, each document's title as
    a question: the document is what they should find if they may read it, else a leak."""
    with sqlite3.connect(index) as con:
        documents = list(con.execute("SELECT id, tenant, groups, title FROM documents"))
    lines = []
    for tenant in ("acme", "globex"):
        forbidden = [doc_id for doc_id, t, groups, _ in documents if t != tenant or groups != "[]"]
        for n, (doc_id, _, _, title) in enumerate(documents):
            readable = doc_id not in forbidden
            lines.append(
                {
                    "id": f"{tenant}{n}",
                    "question": title,
                    "tenant": tenant,
                    "groups": [],
                    "relevant_docs": [doc_id] if readable else [],
                    "answerable": readable,
                    "leak_docs": forbidden,
                }
            )
    path = folder / "questions.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def dense_eval(index: Path, questions: Path) -> dict | str:
    """`raglab eval` of the dense search (the vector files' path): its report, or its error."""
    result = run(
        *("eval", "--index", str(index), "--questions", str(questions)),
        *("--retriever", "dense", "--k", "10", "--retrieval-only", "--json"),
    )
    report: dict = json.loads(result.stdout) if result.returncode == 0 else {}
    return report or f"raglab eval: {result.stderr.strip()[-100:]}"


def wrong_after(tamper: str, index: Path, questions: Path, honest: dict) -> str | None:
    """What the users got wrong after `tamper`: a leak, or documents they may read lost."""
    report = dense_eval(index, questions)
    if isinstance(report, str):
        return f"{tamper}: {report}"
    if report["leaks"]:
        return f"{tamper}: {report['leaks']} chunks users may not read reached them"
    if report["recall@k"] != honest["recall@k"]:
        return f"{tamper}: recall of what they may read {honest['recall@k']:.2f} -> {report['recall@k']:.2f}"
    return None


def without_groups(corpus: Path, folder: Path) -> Path:
    """The same documents, every one readable by its whole tenant."""
    shutil.copytree(corpus, folder)
    for path in folder.rglob("*.md"):
        lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
        path.write_text("".join(x for x in lines if not x.startswith("groups:")), "utf-8")
    return folder


def vector_files_edited_or_swapped(tmp: Path) -> str:
    """The partition column of `*.rows.npy` rewritten, or the files of an index of the same
    documents without groups swapped in; then users without groups of two tenants ask for
    every document: none they may not read, and as many they may read as before."""
    import numpy as np

    index, other = tmp / "corpus.sqlite", tmp / "other.sqlite"
    for folder, path in ((CORPUS, index), (without_groups(CORPUS, tmp / "open"), other)):
        result = run("index", str(folder), "--index", str(path))
        if result.returncode != 0:
            return f"FAILED: raglab index: {result.stderr.strip()[-100:]}"
    questions = readers_questions(index, tmp)
    honest = dense_eval(index, questions)
    if isinstance(honest, str):
        return f"FAILED: {honest}"
    (rows,) = tmp.glob("corpus.sqlite.*.rows.npy")
    original = rows.read_bytes()
    with sqlite3.connect(index) as con:
        public = dict(con.execute("SELECT tenant, id FROM parts WHERE groups = '[]'"))
    failures = []
    for tenant in ("acme", "globex"):
        edited = np.load(rows)
        edited[:, 1] = public[tenant]  # every chunk of every tenant in this tenant's public part
        np.save(rows, edited)
        tamper = f"every row in {tenant}'s public partition"
        failures.append(wrong_after(tamper, index, questions, honest))
        rows.write_bytes(original)
    for kind in ("rows", "vectors"):
        (ours,) = tmp.glob(f"corpus.sqlite.*.{kind}.npy")
        (theirs,) = tmp.glob(f"other.sqlite.*.{kind}.npy")
        shutil.copyfile(theirs, ours)
    failures.append(wrong_after("another index's files", index, questions, honest))
    failed = [f for f in failures if f]
    return "FAILED: " + "; ".join(failed) if failed else "held"


# -- 15d: a full disk during an update


def bulk_corpus(tmp: Path) -> Path:
    """The sample corpus and 40 more documents: an update a 2 MB disk has no room for."""
    folder = tmp / "docs"
    shutil.copytree(CORPUS, folder)
    for i in range(40):
        words = " ".join(f"word{i}x{j}" for j in range(600))
        (folder / f"bulk{i:02}.md").write_text(f"# Bulk {i}\n\n{words}\n")
    return folder


def full_disk_during_an_update(tmp: Path) -> str:
    """`raglab index` runs out of disk halfway through an update, on a real (tmpfs) disk."""
    if os.geteuid() != 0:
        return "skipped (needs root)"
    disk = tmp / "disk"
    disk.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(disk)],
        capture_output=True,
        text=True,
    )
    if mounted.returncode != 0:
        return f"skipped (cannot mount a tmpfs: {mounted.stderr.strip()[:60]})"
    try:
        return _fill_the_disk(tmp, disk / "corpus.sqlite")
    finally:
        subprocess.run(["umount", str(disk)], check=True)


def _fill_the_disk(tmp: Path, index: Path) -> str:
    question = ["ask", "How many vacation days do I get?", "--tenant", "acme", "--json"]
    if run("index", str(CORPUS), "--index", str(index)).returncode != 0:
        return "FAILED: the first raglab index did not fit in 2 MB"
    before, files = run(*question, "--index", str(index)).stdout, sorted(index.parent.iterdir())
    result = run("index", str(bulk_corpus(tmp)), "--index", str(index))
    said = result.stderr.strip()
    if result.returncode == 0:
        return "FAILED: the update fitted after all (make it bigger)"
    if traceback_in(result) or "\n" in said or "no space left" not in said:
        return f"FAILED: raglab index said {said[-120:]!r}"
    if "corrupt" in said or "delete it" in said:
        return f"FAILED: an intact index called corrupt: {said[-100:]!r}"
    if sorted(index.parent.iterdir()) != files:
        return f"FAILED: files changed on the full disk: {[p.name for p in index.parent.iterdir()]}"
    after = run(*question, "--index", str(index))
    if after.returncode != 0 or after.stdout != before:
        return f"FAILED: raglab ask after the failed update: {after.stderr.strip()[-100:]}"
    return "held"


# -- 15e: a read-only index


USER = "raglabtest"


def as_user(tmp: Path) -> tuple[list[str], dict[str, str]] | str:
    """The command prefix and environment that run raglab as a user file modes apply to
    (this process itself unless it is root), or why there is none."""
    home = tmp / "home"
    home.mkdir()
    env = {**os.environ, "HOME": str(home), "RAGLAB_CACHE_DIR": str(home / "cache")}
    if os.geteuid() != 0:
        return [sys.executable, "-m", "raglab"], env
    if subprocess.run(["id", USER], capture_output=True).returncode != 0:
        subprocess.run(["useradd", "-M", USER], check=True)
    shutil.chown(home, USER)
    os.chmod(tmp, 0o755)
    # An interpreter the user may run: ours may sit under /root; the same Python version
    # elsewhere reads our packages through PYTHONPATH.
    paths = os.pathsep.join([str(ROOT), sysconfig.get_paths()["purelib"]])
    env = {**env, "PYTHONPATH": paths}
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    for python in (sys.executable, shutil.which(version), f"/usr/bin/{version}"):
        prefix = ["runuser", "-u", USER, "--", str(python)]
        probe = [*prefix, "-c", "import numpy, raglab"]
        if python and subprocess.run(probe, env=env, capture_output=True).returncode == 0:
            return [*prefix, "-m", "raglab"], env
    return f"skipped (no Python that user {USER} may run)"


def read_only_index(tmp: Path) -> str:
    """An index file of mode 0444 in a folder its reader may not write: asking works (with
    and without the vector files beside it), and indexing into it says it cannot write, in
    one line; so does indexing into a writable file in a read-only folder."""
    user = as_user(tmp)
    if isinstance(user, str):
        return user
    command, env = user
    folder, index = tmp / "ro", tmp / "ro" / "corpus.sqlite"
    folder.mkdir()
    docs = tmp / "docs"
    shutil.copytree(CORPUS, docs)
    if run("index", str(docs), "--index", str(index)).returncode != 0:
        return "FAILED: raglab index (as the owner)"
    question = ["ask", "How many vacation days do I get?", "--tenant", "acme", "--json"]
    expected = run(*question, "--index", str(index)).stdout
    (docs / "acme" / "benefits.md").unlink()  # an update that deletes, then adds
    (docs / "new.md").write_text("# Parking\n\nThe car park opens at seven.\n")

    def raglab(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [*command, *args], capture_output=True, text=True, env=env, timeout=120
        )

    def index_refused(reason: str) -> str | None:
        result = raglab("index", str(docs), "--index", str(index))
        said = result.stderr.strip()
        one_line = result.returncode != 0 and not traceback_in(result) and "\n" not in said
        if one_line and said.startswith(f"raglab: error: index file {str(index)!r} {reason}"):
            return None
        return f"raglab index into it ({reason}?) said {said[-120:]!r}"

    os.chmod(index, 0o444)
    os.chmod(folder, 0o555)
    try:
        if (asked := raglab(*question, "--index", str(index))).stdout != expected:
            return f"FAILED: raglab ask: {asked.stderr.strip()[-120:]!r}"
        if failed := index_refused("cannot be written: it is read-only"):
            return f"FAILED: {failed}"
        os.chmod(folder, 0o755)
        for path in folder.glob("corpus.sqlite.*.npy"):
            path.unlink()
        os.chmod(folder, 0o555)
        if (asked := raglab(*question, "--index", str(index))).stdout != expected:
            return f"FAILED: raglab ask without the vector files: {asked.stderr.strip()[-120:]!r}"
        if os.geteuid() == 0:
            shutil.chown(index, USER)
        os.chmod(index, 0o644)
        if failed := index_refused("cannot be written: its folder is read-only"):
            return f"FAILED: {failed}"
    finally:
        os.chmod(folder, 0o755)
    return "held"


ATTACKS = [
    ("15a the user's own NAME.x.y.npy beside `--index NAME`", users_files_beside_the_index),
    ("15b vector files whole, no temporary file left", half_written_files),
    ("15c vector files edited or swapped: who reads what", vector_files_edited_or_swapped),
    ("15d disk full during `raglab index` (a 2 MB tmpfs)", full_disk_during_an_update),
    ("15e a read-only index: ask, and index into it", read_only_index),
]
