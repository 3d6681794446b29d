"""The check after each step: one passage must hold a part's words and name its anchor."""

from __future__ import annotations

from raglab.agent.sufficiency import Need, meets, missing, passage_words


def need(text: str, *anchors: str) -> Need:
    return Need(passage_words(text), anchors)


def test_a_part_met_by_one_passage_needs_no_more_search():
    probation = need("how long does probation last")
    assert missing([probation], ["Probation lasts 6 months."]) == []


def test_words_spread_over_two_passages_do_not_meet_a_part():
    part = need("home office allowance probation")  # 4 words: 2 are needed in one passage
    assert missing([part], ["The allowance is paid.", "Probation is long."]) == [0]
    assert missing([part], ["The home office allowance starts after probation."]) == []


def test_an_anchor_must_be_named_as_a_whole_word():
    warranty = need("warranty period", "GX-PA24")
    assert not meets(warranty, "The GX-T100 has a warranty period of 2 years.")
    assert not meets(warranty, "The GX-PA240 warranty period is 1 year.")
    assert meets(warranty, "gx-pa24 adapter: warranty period 1 year")


def test_the_missing_parts_are_listed_in_order():
    parts = [need("warranty period"), need("restocking fee"), need("return label")]
    assert missing(parts, ["A restocking fee of 10% applies."]) == [0, 2]
    assert missing(parts, []) == [0, 1, 2]
