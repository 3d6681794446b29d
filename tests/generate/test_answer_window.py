"""The answer carries the asked-for fact: a table row whole, the neighbour that completes it."""

from raglab.generate.extractive import ExtractiveGenerator, choose
from raglab.generate.faithfulness import check_faithfulness
from raglab.generate.prompting import build_prompt
from raglab.ingest.sentences import candidate_sentences, text_units
from raglab.records import Chunk, Hit

PRINTER = """# Wristband printer error codes

The ward desk wristband printer shows a code on its display when it stops.

| Code | Meaning | Fix |
|---|---|---|
| E-4410 | Label jam | Open the lid, pull the band out gently and close the lid. |
| E-4417 | Ribbon out | Replace the ribbon cassette. Keep the spare cassettes in the second drawer. |
| E-4420 | Head too hot | Wait ten minutes before printing again. |
"""

RELEASES = """# Web shop release notes

CHK-408: checkout timed out for baskets with more than 40 items when the payment provider
was slow and the basket held gift cards. Fixed in 4.12.1.

CHK-377: the postcode field rejected Irish Eircodes at checkout.
"""

STEPS = """# Resetting the hub

- Hold the reset button for ten seconds. The light turns amber when the reset starts.
- Wait for the light to turn green before pairing again.
"""


def hit(text: str, doc_id: str = "doc.md") -> Hit:
    return Hit(Chunk(doc_id, 0, text, 0, len(text)), 1.0)


def answer(question: str, *hits: Hit) -> str:
    prompt = build_prompt(question, list(hits))
    text = ExtractiveGenerator(max_sentences=3).decide(prompt).draft
    report = check_faithfulness(text, prompt.sources)
    assert report.score == 1.0, report  # every sentence cited and supported
    return text


def test_a_table_row_is_one_sentence_however_many_it_holds():
    rows = [u for u in text_units(PRINTER) if u.whole]
    assert len(rows) == 3
    sentences = [s.text for s in candidate_sentences([hit(PRINTER)])]
    assert (
        "Code: E-4417; Meaning: Ribbon out; Fix: Replace the ribbon cassette. "
        "Keep the spare cassettes in the second drawer." in sentences
    )


def test_the_row_of_the_code_asked_about_is_quoted_with_its_fix():
    text = answer(
        "The wristband printer at our ward desk shows E-4417. How do I fix it?", hit(PRINTER)
    )
    assert "Replace the ribbon cassette [1]." in text  # the fix, cited sentence by sentence
    assert "E-4410" not in text and "E-4420" not in text


def test_a_list_item_is_quoted_whole():
    units = text_units(STEPS)
    assert [u.whole for u in units] == [True, True]
    assert "amber" in answer("How long do I hold the reset button?", hit(STEPS))


def test_the_next_sentence_joins_when_it_holds_the_asked_for_fact():
    text = answer("Which version fixed the CHK-408 timeout?", hit(RELEASES))
    assert "CHK-408" in text and "Fixed in 4.12.1 [1]." in text
    assert "CHK-377" not in text


def test_a_neighbour_that_adds_no_question_word_stays_out():
    prompt = build_prompt("How many items timed out at checkout?", [hit(RELEASES)])
    generator = ExtractiveGenerator(max_sentences=3)
    chosen = choose(generator.rank(prompt), 3)
    assert chosen[0].text.startswith("CHK-408")
    assert all("4.12.1" not in e.text for e in chosen)


NOTES = """# App release notes

## 3.3.2 (3 March 2025)

- Fixed LIB-815: signing in on a tablet sent some members back to the login screen.
- The barcode of your digital card is brighter in dark mode.

## 3.3.0 (20 January 2025)

- Fixed LIB-802: reservation alerts did not arrive with battery saver on.
"""


def test_a_numbered_heading_is_quoted_with_the_fact_under_it():
    text = answer("Which version of the app fixed the login loop on tablets?", hit(NOTES))
    assert text.startswith("3.3.2 (3 March 2025): Fixed LIB-815")
    assert "3.3.0" not in text


def test_a_heading_the_chunk_does_not_hold_is_not_quoted():
    tail = "- Fixed LIB-802: reservation alerts did not arrive with battery saver on."
    chunk = Chunk(
        "notes.md", 1, tail, 200, 200 + len(tail), heading="Notes > 3.3.0 (20 January 2025)"
    )
    sentences = candidate_sentences([Hit(chunk, 1.0)])
    assert [s.text for s in sentences] == [tail[2:]]


def test_sentence_vectors_survive_the_cache_being_cleared(monkeypatch):
    import raglab.generate.evidence as evidence
    from raglab.embed.hashing import HashingEmbedder

    monkeypatch.setattr(evidence, "CACHE_SIZE", 3)
    monkeypatch.setattr(evidence, "_VECTORS", {})
    embedder = HashingEmbedder()
    evidence.embed_cached(embedder, ["one", "two"])
    vectors = evidence.embed_cached(embedder, ["one", "three", "four"])  # clears, then needs "one"
    assert vectors.shape == (3, embedder.dim)
