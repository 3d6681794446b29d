"""Per-index calibration (`raglab.pipeline.calibrate`): stored with the index, computed
again when its documents change, and never from a document a reader may not read."""

import shutil
from pathlib import Path

from raglab import HashingEmbedder, Index, Principal, ask
from raglab.ingest.chunking import Chunker
from raglab.ingest.loaders import load_folder
from raglab.pipeline import calibrate, calibration_for
from raglab.store.indexing import sync
from raglab.store.memory import MemoryStore

CORPUS = Path(__file__).resolve().parent.parent / "data" / "corpus"
BOARD = (
    "---\ntenant: acme\ngroups: [board]\n---\n# Board minutes\n\n"
    "The board approved the merger with Kestrelwing Holdings on Monday. "
    "Vacation days, laptops and travel budgets change after the merger closes.\n"
)
NEW_POLICY = (
    "---\ntenant: acme\n---\n# Bicycle policy\n\nStaff may park bicycles in the basement rack.\n"
)


def _copy(tmp_path: Path) -> Path:
    folder = tmp_path / "corpus"
    shutil.copytree(CORPUS / "acme", folder / "acme")
    return folder


def test_every_tenant_with_public_documents_is_calibrated(corpus_index):
    stored = corpus_index.store.meta["calibration"]
    assert sorted(stored["tenants"]) == sorted(
        {r.tenant for r in corpus_index.store.documents().values()}
    )
    assert calibration_for(corpus_index, Principal("u", "acme")) is not None
    assert calibration_for(corpus_index, Principal("u", "nobody")) is None


def test_the_index_file_keeps_its_calibration_and_sync_computes_it_again(tmp_path):
    folder, path = _copy(tmp_path), tmp_path / "index.sqlite"
    first = Index.from_folder(folder, path=path).store.meta["calibration"]
    assert Index.open(path).store.meta["calibration"] == first
    assert Index.from_folder(folder, path=path).store.meta["calibration"] == first  # unchanged
    (folder / "acme" / "bicycles.md").write_text(NEW_POLICY, encoding="utf-8")
    changed = Index.from_folder(folder, path=path).store.meta["calibration"]
    assert changed["documents"] != first["documents"]
    assert changed == calibrate(Index.open(path))


def test_a_group_document_changes_no_calibration_a_reader_outside_it_is_judged_by(tmp_path):
    folder = _copy(tmp_path)
    before = Index.from_folder(folder)
    (folder / "acme" / "board.md").write_text(BOARD, encoding="utf-8")
    after = Index.from_folder(folder)
    assert (
        before.store.meta["calibration"]["documents"]
        != after.store.meta["calibration"]["documents"]
    )
    for groups in ((), ("hr",), ("board",)):
        reader = Principal("u", "acme", groups)
        assert calibration_for(before, reader) == calibration_for(after, reader)


def test_sync_drops_the_calibration_when_a_document_changes():
    store = MemoryStore()
    documents = load_folder(CORPUS / "acme").documents
    sync(store, documents, chunker=Chunker(), embedder=HashingEmbedder())
    store.set_meta({"calibration": {"documents": "old", "tenants": {}}})
    sync(store, documents, chunker=Chunker(), embedder=HashingEmbedder())  # nothing changed
    assert store.meta["calibration"] == {"documents": "old", "tenants": {}}
    sync(store, documents[1:], chunker=Chunker(), embedder=HashingEmbedder())
    assert store.meta["calibration"] is None


def test_an_uncalibrated_index_still_answers():
    store = MemoryStore()  # filled by sync alone: nobody calibrated it
    sync(store, load_folder(CORPUS).documents, chunker=Chunker(), embedder=HashingEmbedder())
    answer = ask(
        "What does error E-204 mean?", Index(store, HashingEmbedder()), Principal("u", "globex")
    )
    assert answer.confidence is not None and not answer.abstained and answer.verified
