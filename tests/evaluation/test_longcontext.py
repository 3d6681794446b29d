"""raglab.evaluation.longcontext: long context against RAG, lost in the middle, leaks, fine-tuning."""

from __future__ import annotations

import dataclasses
import json

import pytest

from raglab.evaluation import longcontext as lc
from raglab.evaluation.questions import load_questions
from raglab.ingest.loaders import load_folder
from raglab.longcontext.cost import Prices
from raglab.workbook.viz_longcontext import growth_points
from tests.conftest import CORPUS, QUESTIONS
from tests.generate.test_openai_http import server  # noqa: F401  (a fixture)

PRICES = Prices(input_per_million=3.0, output_per_million=15.0)


@pytest.fixture(scope="module")
def documents():
    return load_folder(CORPUS).documents


@pytest.fixture(scope="module")
def questions():
    return load_questions(QUESTIONS)


def by_id(questions, *ids):
    return [q for q in questions if q.id in ids]


def test_long_context_reads_many_times_the_tokens_and_costs_accordingly(
    corpus_index, documents, questions
):
    asked = by_id(questions, "q001", "q002", "q084", "q074")
    long, rag = lc.compare(asked, corpus_index, documents, prices=PRICES)
    assert (long.method, rag.method) == ("long context", "rag")
    assert long.input_tokens > 5 * rag.input_tokens
    expected = 1000 * (long.input_tokens * 3 + long.output_tokens * 15) / 1e6
    assert long.cost_per_1000 == pytest.approx(expected)
    assert long.leaks == rag.leaks == 0
    assert long.abstention_on_unanswerable == 1.0  # q084 asks for hr's salary bands, outside hr
    assert long.key_fact == 1.0  # q001, q002 and q074 (asked by hr) state their key fact
    table = lc.format_table([long, rag], PRICES)
    assert "3 per million input tokens and 15 per million output" in table
    assert table.splitlines()[2].startswith("long context")


def test_the_offline_answerer_does_not_lose_the_middle(documents, questions):
    asked = by_id(questions, "q001", "q003", "q074", "q010")
    rows = lc.position_sweep(asked, documents)
    assert [r.position for r in rows] == [0.0, 0.25, 0.5, 0.75, 1.0]
    # it scores every sentence on its own: the position changes nothing
    assert len({(r.answered_with_relevant_citation, r.key_fact) for r in rows}) == 1


def test_pasting_everything_leaks_and_filtering_does_not(documents, questions):
    probes = by_id(questions, "q084", "q085", "q086")
    pasted, filtered = lc.leak_demo(probes, documents)
    assert pasted.forbidden_documents > 3 * 20 and pasted.forbidden_sentences > 1000
    assert pasted.answers_citing_forbidden >= 2
    assert (filtered.forbidden_documents, filtered.forbidden_sentences) == (0, 0)
    assert filtered.answers_citing_forbidden == 0


def test_fine_tuning_tells_anyone_cites_nothing_and_stays_stale(documents, questions):
    demo = lc.fine_tune_demo(questions, documents)
    assert demo.learned >= 0.9 * demo.trained_on
    assert demo.restricted >= 5
    assert demo.forbidden_told_model == demo.restricted and demo.forbidden_told_long == 0
    assert demo.cited_model == 0 < demo.cited_long
    assert demo.edited >= 10 and demo.stale_model == demo.edited
    assert demo.fresh_long > demo.edited // 2


def test_an_edited_fact_changes_its_first_number():
    assert lc.edited_fact("25 working days") == "26 working days"
    assert lc.edited_fact("from 1 to 9") == "from 2 to 9"


def test_without_a_configured_model_there_is_none(monkeypatch):
    monkeypatch.delenv("RAGLAB_LLM_URL", raising=False)
    assert lc.configured_model() is None


def test_as_the_corpus_grows_long_context_pays_for_all_of_it_and_rag_does_not(documents, questions):
    from raglab.ingest.loaders import load_folder
    from raglab.samples import transfer_corpus

    filler = load_folder(transfer_corpus()).documents
    asked = by_id(questions, "q001", "q002", "q003")
    small, bigger = lc.growth_curve(
        asked, documents, filler, tenant="acme", copies=(0, 1), prices=PRICES, max_tokens=15_000
    )
    assert (small.copies, bigger.copies) == (0, 1)
    assert bigger.documents == small.documents + len(filler)
    assert (small.fits, bigger.fits) == (True, False)  # the copy pushes it over 15,000 tokens
    added = bigger.long.input_tokens - small.long.input_tokens
    assert added > 5_000  # a copy of the transfer corpus is thousands of tokens
    assert abs(bigger.rag.input_tokens - small.rag.input_tokens) < 500  # still five chunks
    # both still find the answers (the filler answers nothing; it moves the answerer's
    # abstention features, which were calibrated on five retrieved chunks, not a corpus)
    assert small.long.key_fact >= 2 / 3 and bigger.long.key_fact >= 2 / 3
    # the notebook draws these points when the benchmark's results are missing
    drawn = growth_points({"growth": [dataclasses.asdict(p) for p in (small, bigger)]})
    assert [p.fits for p in drawn] == [True, False]


class EndsReader:
    """A stand-in for a model that is lost in the middle: it reads only the first and the last
    source of its prompt (the others blanked, their numbers kept) and answers as the offline
    answerer would from what it read."""

    def __init__(self) -> None:
        from raglab.longcontext.whole_corpus import default_generator

        self.answerer = default_generator()

    def generate(self, prompt):
        import dataclasses

        last = len(prompt.sources) - 1
        read = tuple(
            hit
            if i in (0, last)
            else dataclasses.replace(hit, chunk=dataclasses.replace(hit.chunk, text=""))
            for i, hit in enumerate(prompt.sources)
        )
        return self.answerer.generate(dataclasses.replace(prompt, sources=read))


def test_the_sweep_shows_a_model_that_loses_the_middle(documents, questions):
    asked = by_id(questions, "q001", "q003", "q010")
    rows = lc.position_sweep(asked, documents, positions=(0.0, 0.5, 1.0), generator=EndsReader())
    found = [r.answered_with_relevant_citation for r in rows]
    assert found[0] == found[2] > found[1] == 0.0  # the U of "Lost in the Middle"


def test_a_configured_model_reads_the_long_prompt(monkeypatch, server, documents, questions):  # noqa: F811
    server.answer("Every full-time employee receives 25 working days of annual leave [1].")
    monkeypatch.setenv("RAGLAB_LLM_URL", server.url)
    monkeypatch.setenv("RAGLAB_LLM_MODEL", "test-model")
    model = lc.configured_model()
    assert model is not None
    rows = lc.position_sweep(by_id(questions, "q001"), documents, positions=(0.0,), generator=model)
    assert rows[0].key_fact == 1.0  # at position 0, [1] is the leave policy itself
    sent = json.loads(server.requests[0]["body"])
    assert "acme/policies/leave.md" in sent["messages"][1]["content"]  # the whole corpus was sent
    assert "globex" not in sent["messages"][1]["content"]  # and only the asker's
