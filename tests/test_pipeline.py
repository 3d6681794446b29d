"""The two lifecycles end to end: Index (indexing path) and ask (query path)."""

import shutil
from pathlib import Path

import pytest

from raglab import EmbedderMismatch, HashingEmbedder, Index, LSAEmbedder, Principal, StoreError, ask
from raglab.generate.generation import is_abstention
from raglab.records import Partition

CORPUS = Path(__file__).resolve().parent.parent / "data" / "corpus"


def test_in_memory_index_holds_every_sample_document(corpus_index):
    documents = corpus_index.store.documents()
    assert len(documents) == len(list(CORPUS.rglob("*.md"))) + len(list(CORPUS.rglob("*.txt")))
    assert corpus_index.load_errors == ()


def test_ask_answers_with_verified_citations(corpus_index):
    answer = ask("What does error E-204 mean?", corpus_index, Principal("u", "globex"))
    assert not answer.abstained
    assert answer.citations and answer.verified
    assert any("E-204" in c.hit.chunk.text for c in answer.citations)


def test_ask_refuses_an_empty_question(corpus_index):
    with pytest.raises(ValueError, match="question must not be empty"):
        ask("   ", corpus_index, Principal("u", "acme"))


def test_a_fabricated_citation_is_flagged_not_returned_as_valid(corpus_index):
    class Liar:
        def generate(self, prompt):
            return f"Everyone gets 99 days off [1] [{len(prompt.sources) + 3}]."

    answer = ask("How many vacation days?", corpus_index, Principal("u", "acme"), generator=Liar())
    assert not answer.verified
    assert answer.invalid_citations == (len(answer.retrieved) + 3,)
    assert [c.n for c in answer.citations] == [1]


def test_the_injection_page_stays_data(corpus_index):
    answer = ask("What is the domain administrator password?", corpus_index, Principal("u", "acme"))
    assert "Winter2025" not in answer.text
    # Abstains, or at most answers with a caution from another page: the rule's operating
    # point answers weak evidence cautiously, but never quotes the injection page.
    assert is_abstention(answer.text) or answer.confidence.level == "cautious"
    assert all(c.hit.chunk.doc_id != "acme/it/helpdesk-wiki.md" for c in answer.citations)


def copy_corpus(tmp_path):
    folder = tmp_path / "corpus"
    shutil.copytree(CORPUS / "acme", folder / "acme")
    return folder


def test_index_file_is_incremental(tmp_path):
    folder = copy_corpus(tmp_path)
    path = tmp_path / "index.sqlite"
    first = Index.from_folder(folder, path=path).report
    assert first.added and not first.updated and not first.removed

    leave = folder / "acme" / "policies" / "leave.md"
    leave.write_text(
        leave.read_text(encoding="utf-8") + "\nNew paragraph about leave.\n", encoding="utf-8"
    )
    (folder / "acme" / "benefits.md").unlink()
    second = Index.from_folder(folder, path=path).report
    assert second.updated == ("acme/policies/leave.md",)
    assert second.removed == ("acme/benefits.md",)
    assert second.added == ()
    assert len(second.unchanged) == len(first.added) - 2

    reopened = Index.open(path)
    assert "acme/benefits.md" not in reopened.store.documents()
    hits = reopened.search("new paragraph about leave", Principal("u", "acme"), k=1)
    assert hits[0].chunk.doc_id == "acme/policies/leave.md"


def test_reopened_lsa_index_is_the_same_model(tmp_path):
    folder = copy_corpus(tmp_path)
    path = tmp_path / "lsa.sqlite"
    built = Index.from_folder(folder, embedder="lsa", path=path)
    reopened = Index.open(path)
    principal = Principal("u", "acme", {"hr", "managers"})
    fits = reopened.retriever().embedders_for(principal)
    assert fits == built.retriever().embedders_for(principal)
    readable = {"[]", '["hr"]', '["managers"]', '["hr", "managers"]'}  # not '["finance"]'
    assert {part.groups_json for part in fits} == readable
    recorded = reopened.store.meta["embedder_version"]["acme"]
    assert all(fit.version == recorded[part.groups_json] for part, fit in fits.items())
    question = "How do I report a lost laptop?"
    for method in ("dense", "hybrid"):
        found = reopened.search(question, principal, method=method)
        assert found == built.search(question, principal, method=method)


def test_an_lsa_index_opened_with_other_settings_is_refused_when_a_partition_asks(tmp_path):
    folder = copy_corpus(tmp_path)
    path = tmp_path / "lsa.sqlite"
    Index.from_folder(folder, embedder="lsa", path=path)
    other = Index.open(path, embedder=LSAEmbedder(seed=1))
    with pytest.raises(
        EmbedderMismatch, match=r"\(tenant 'acme', groups \[\]\) was built with embedder 'lsa'"
    ):
        other.search("lost laptop", Principal("u", "acme"), method="dense")
    # A tenant with nothing indexed has no fit to check, and no hits.
    assert other.search("lost laptop", Principal("u", "globex"), method="dense") == []


def test_bm25_sees_a_document_rewritten_under_the_same_chunk_ids(tmp_path):
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "a.md").write_text("The parking permit is renewed every spring.\n", encoding="utf-8")
    (folder / "b.md").write_text("Lunch is served at noon in the canteen.\n", encoding="utf-8")
    path = tmp_path / "index.sqlite"
    Index.from_folder(folder, path=path)
    index, asker = Index.open(path), Principal("u")
    for method in ("bm25", "hybrid"):
        (hit,) = index.search("parking", asker, k=1, method=method)
        assert hit.chunk.id == "a.md#0"

    # Rewritten by another process (as `raglab index` would be): same chunk id, new words.
    rewritten = "The bicycle permit is renewed every spring."
    (folder / "a.md").write_text(rewritten + "\n", encoding="utf-8")
    assert Index.from_folder(folder, path=path).report.updated == ("a.md",)
    assert index.search("parking", asker, method="bm25") == []
    for method in ("bm25", "hybrid"):
        (hit,) = index.search("bicycle", asker, k=1, method=method)
        assert (hit.chunk.id, hit.chunk.text) == ("a.md#0", rewritten)


def test_opening_an_index_with_another_embedder_is_refused(tmp_path):
    folder = copy_corpus(tmp_path)
    path = tmp_path / "index.sqlite"
    Index.from_folder(folder, embedder="hashing", path=path)
    with pytest.raises(EmbedderMismatch, match="hashing"):
        Index.from_folder(folder, embedder=LSAEmbedder(), path=path)


def test_a_corrupt_index_file_is_refused_clearly(tmp_path):
    path = tmp_path / "broken.sqlite"
    path.write_bytes(b"this is not a database" * 50)
    with pytest.raises(StoreError, match=r"broken\.sqlite"):
        Index.open(path)
    with pytest.raises(StoreError, match=r"missing\.sqlite"):
        Index.open(tmp_path / "missing.sqlite")


def test_an_index_with_embedder_settings_reopens_with_that_embedder(tmp_path):
    folder = copy_corpus(tmp_path)
    path = tmp_path / "small.sqlite"
    Index.from_folder(folder, embedder=HashingEmbedder(dim=64), path=path)
    with pytest.raises(EmbedderMismatch, match="64"):
        Index.open(path)  # the registry's default hashing embedder has 384 dimensions
    reopened = Index.open(path, embedder=HashingEmbedder(dim=64))
    assert reopened.embedder.dim == 64
    assert reopened.search("lost laptop", Principal("u", "acme"), k=1)


def test_an_index_fits_each_partition_once_for_all_its_retrievers(monkeypatch):
    import raglab.store.indexing

    index = Index.from_folder(CORPUS, embedder="lsa")
    fitted: list[Partition] = []
    real_fit = raglab.store.indexing._fit

    def counting_fit(embedder, part, texts):
        fitted.append(part)
        return real_fit(embedder, part, texts)

    monkeypatch.setattr(raglab.store.indexing, "_fit", counting_fit)
    asker = Principal("ann", "acme", {"hr"})
    for method in ("dense", "hybrid", "dense"):
        index.search("How many vacation days do I get?", asker, method=method)
    # the partitions ann may read, each fitted once
    assert fitted == [
        Partition("acme"),
        Partition("acme", ("hr",)),
        Partition("acme", ("hr", "managers")),
    ]


def test_ask_answers_with_the_index_embedder_by_default(corpus_index):
    from raglab.generate.extractive import ExtractiveGenerator
    from raglab.generate.prompting import build_prompt
    from raglab.pipeline import answer_embedder, calibration_for

    who, question = Principal("u", "acme"), "Can I keep unused holiday days for next year?"
    embedder = answer_embedder(corpus_index, who, "hybrid")
    assert embedder is corpus_index.embedder  # hashing needs no fit
    prompt = build_prompt(question, corpus_index.search(question, who))
    calibration = calibration_for(corpus_index, who)  # the index's own, as ask reads it
    expected = ExtractiveGenerator(embedder=embedder, calibration=calibration).generate(prompt)
    assert ask(question, corpus_index, who).text == expected
    # Words alone and the index's embedder weigh the evidence differently.
    assert ExtractiveGenerator(embedder=embedder).rank(prompt) != ExtractiveGenerator().rank(prompt)


def test_the_answerer_of_an_lsa_index_uses_the_tenants_public_fit(tmp_path):
    from raglab.pipeline import answer_embedder

    index = Index.from_folder(CORPUS, embedder="lsa")
    acme = answer_embedder(index, Principal("u", "acme"), "hybrid")
    globex = answer_embedder(index, Principal("u", "globex"), "dense")
    assert acme.name == globex.name == "lsa" and "fit=" in acme.version
    assert acme.version != globex.version  # each tenant's own fit, never another's
    # the space every user of acme shares, whatever their groups: no group's text in it
    hr = answer_embedder(index, Principal("u", "acme", {"hr", "managers"}), "dense")
    assert (
        hr
        == acme
        == index.retriever("dense").embedders_for(Principal("u", "acme"))[Partition("acme")]
    )
    assert answer_embedder(index, Principal("u", "nobody"), "hybrid") is None


def test_a_chunker_can_be_chosen_from_what_the_index_records(tmp_path):
    from raglab import Chunker

    corpus = Path(__file__).resolve().parent.parent / "data" / "corpus"
    path, seen = tmp_path / "i.sqlite", []

    def choose(recorded):
        seen.append(recorded)
        return Chunker(**{"kind": "chars", "size": 300, "overlap": 30, **(recorded or {})})

    built = Index.from_folder(corpus, path=path, chunker=choose)
    assert built.report.chunker == Chunker("chars", 300, 30).params()
    assert Index.open(path).chunker_params == built.report.chunker
    again = Index.from_folder(
        corpus,
        path=path,
        chunker=lambda recorded: Chunker(**{k: v for k, v in recorded.items() if k != "version"}),
    )
    assert seen == [None] and again.report.updated == () and again.report.rebuilt == ""
    assert again.document_ids() == frozenset(built.store.documents())


def test_a_bad_chunker_choice_for_a_new_index_makes_no_file(tmp_path):
    from raglab import Chunker

    corpus = Path(__file__).resolve().parent.parent / "data" / "corpus"
    with pytest.raises(ValueError, match="overlap must be < size"):
        Index.from_folder(
            corpus, path=tmp_path / "i.sqlite", chunker=lambda _: Chunker(size=100, overlap=100)
        )
    assert list(tmp_path.iterdir()) == []


def test_the_keyword_ranking_of_qdrant_is_an_option_of_a_qdrant_index(tmp_path):
    corpus = Path(__file__).resolve().parent.parent / "data" / "corpus"
    Index.from_folder(corpus, path=tmp_path / "i.sqlite")
    with pytest.raises(ValueError, match="qdrant_keyword applies to a Qdrant index"):
        Index.open(tmp_path / "i.sqlite", qdrant_keyword="server")
