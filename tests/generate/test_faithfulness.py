"""raglab.generate.faithfulness: each sentence of an answer against the text it cites."""

from __future__ import annotations

import pytest

from raglab import ABSTENTION
from raglab.generate.faithfulness import answer_sentences, check_faithfulness, numbers
from raglab.records import Chunk, Hit

LEAVE = "Full-time employees get 25 working days of annual leave per calendar year."
CARRY = "Up to 5 unused days can be carried over into the next year, until 31 March."


def sources() -> list[Hit]:
    return [Hit(Chunk(f"d{i}.md", 0, t, 0, len(t)), 1.0) for i, t in enumerate((LEAVE, CARRY))]


def verdicts(answer: str) -> list[tuple[bool, str]]:
    return [(s.supported, s.reason) for s in check_faithfulness(answer, sources()).sentences]


def test_a_quoted_answer_is_supported_sentence_by_sentence():
    report = check_faithfulness(f"{LEAVE[:-1]} [1]. {CARRY[:-1]} [2].", sources())
    assert [s.supported for s in report.sentences] == [True, True]
    assert [s.cited for s in report.sentences] == [(1,), (2,)]
    assert report.score == 1.0 and report.sentences[0].support == 1.0


def test_a_faithful_paraphrase_with_the_key_words_is_supported():
    assert verdicts("Employees get 25 days of annual leave each year [1].") == [(True, "")]


def test_a_changed_number_is_caught_even_with_every_word_right():
    assert verdicts("Full-time employees get 30 working days of annual leave [1].") == [
        (False, "states 30, which [1] does not")
    ]


def test_a_claim_the_cited_source_does_not_make_is_unsupported():
    (verdict,) = verdicts("The office in Lisbon closes at noon on Fridays [1].")
    assert not verdict[0] and verdict[1].startswith("only 0% of its words are in [1]")


def test_citing_the_wrong_source_is_unsupported():
    """The right fact, pinned on the other source: the cited text is what counts."""
    assert verdicts("Up to 5 unused days can be carried over [1].")[0][0] is False
    assert verdicts("Up to 5 unused days can be carried over [2].")[0][0] is True


def test_a_sentence_without_a_marker_or_with_a_fabricated_one_is_unsupported():
    assert verdicts("Employees get 25 days of leave.") == [(False, "cites no source")]
    assert verdicts("Employees get 25 days of leave [3].") == [
        (False, "cites [3], which is no retrieved source")
    ]


def test_the_score_is_the_share_of_supported_sentences():
    report = check_faithfulness(f"{LEAVE[:-1]} [1]. Staff get a pony [1].", sources())
    assert report.score == 0.5


def test_an_abstention_claims_nothing():
    report = check_faithfulness(ABSTENTION, sources())
    assert report.sentences == () and report.score == 1.0


def test_markers_after_the_full_stop_belong_to_the_sentence_before():
    assert answer_sentences("One fact. [1] Two facts [2].") == ["One fact. [1]", "Two facts [2]."]
    assert answer_sentences("It is 2.5 days [1]. Next [2].") == ["It is 2.5 days [1].", "Next [2]."]


def test_numbers_ignore_thousands_separators_and_marker_numbers_are_not_claims():
    assert numbers("1,000 EUR and 2.5 days") == {"1000", "2.5"}
    # "[2]" is a marker, not the number 2: a sentence citing [2] does not claim "2".
    assert verdicts("Up to 5 unused days can be carried over [2].") == [(True, "")]


@pytest.mark.parametrize("value", [-0.1, 1.5])
def test_min_coverage_out_of_range_is_refused(value):
    with pytest.raises(ValueError, match=r"min_coverage must be a finite number from 0 to 1"):
        check_faithfulness("x [1].", sources(), min_coverage=value)


def test_a_footnote_mark_in_the_source_is_no_fact_it_states():
    """Source text is data: its own "[30]" is a footnote, so an answer claiming 30 days is
    not supported by it, however the mark is written."""
    for mark in ("[30]", "[**30**]", "\uff3b\uff13\uff10\uff3d"):
        text = f"Full-time employees get 25 working days of annual leave {mark}."
        source = [Hit(Chunk("d.md", 0, text, 0, len(text)), 1.0)]
        report = check_faithfulness("Full-time employees get 30 days of annual leave [1].", source)
        assert [(s.supported, s.reason) for s in report.sentences] == [
            (False, "states 30, which [1] does not")
        ]
