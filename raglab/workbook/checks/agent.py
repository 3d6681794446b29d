"""Checks for notebook 13 (questions one search cannot answer): the agent's sufficiency check.

Exercise `missing_parts`: the learner writes

    missing_parts(needs, passages) -> list[int]

the indices, in order, of the needs no single passage meets: the agent stops when the list
is empty and otherwise searches again for the first part missing. A passage meets a
`Need` (`raglab.agent.sufficiency.Need`) when it names one of the need's anchors, if it has
any (case-insensitive, as a whole word: "GX-PA24" is not in "GX-PA240"), and holds at
least `ceil(SHARE * len(need.words))` of its words, the passage's words being
`passage_words(passage)`. The cases are traces of the agent held back from the notebook:
some where stopping after the first search is right, some where a part is still missing.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence

from raglab.agent.sufficiency import Need, meets, missing, passage_words  # noqa: F401 — meets: hidden by the registry
from raglab.workbook.checks.core import RANDOM_CASES, SEED, Case, CheckResult, Outcome, run_cases

__all__ = ["check_missing_parts", "reference_missing_parts"]


def reference_missing_parts(needs: Sequence[Need], passages: Sequence[str]) -> list[int]:
    """The engine's check (`raglab.agent.sufficiency.missing`) at the default share."""
    return missing(needs, passages)


def _need(text: str, *anchors: str) -> Need:
    return Need(passage_words(text), anchors)


def _case(name: str, needs: list[Need], passages: list[str]) -> Case:
    return Case(name, (needs, passages), expected=reference_missing_parts(needs, passages))


WARRANTY_ROW = "Product: GX-PA24 power adapter, GX-TP1 trim plate; Warranty: 1 year."
CASES: list[Case] = [
    # stopping early is right: the first search met every part
    _case("one part, met at once", [_need("how many vacation days")],
          ["Every full-time employee receives 25 working days of annual leave (vacation)."]),
    _case("two parts, both met by the first search",
          [_need("home office allowance amount"), _need("probation length months")],
          ["A one-off home office allowance of €400.", "Probation lasts 6 months."]),
    # a part still missing: search again
    _case("the second part has no evidence",
          [_need("home office allowance amount"), _need("probation length months")],
          ["A one-off home office allowance of €400.", "Book a desk in DeskMate."]),
    _case("the words spread over two passages", [_need("restocking fee opened thermostat")],
          ["An opened product is refunded.", "The thermostat is back.", "No fee."]),
    # anchors: the thing an earlier step found must be named, as a whole word
    _case("the warranty table row of the part found", [_need("warranty period", "GX-PA24")],
          [WARRANTY_ROW]),
    _case("the right topic, the wrong product", [_need("warranty period", "GX-PA24")],
          ["Product: GX-T100 Thermo Lite; Warranty: 2 years."]),
    _case("an anchor inside a longer code", [_need("warranty", "GX-PA24")],
          ["The GX-PA240 has a one year warranty."]),
    _case("anchors ignore case", [_need("warranty", "GX-PA24")], ["gx-pa24 warranty: 1 year"]),
    _case("any one anchor will do", [_need("address office", "Leeds", "Lisbon")],
          ["Office: Lisbon; Address: Rua do Salitre 140."]),
    _case("a number anchor is a whole number", [_need("rating name", "3")],
          ["Rating: 13; Name: Meeting expectations."]),
    # shares: half the words, rounded up
    _case("two of four words are enough", [_need("submit claim within days")],
          ["Claims go through Ledgerly within the month."]),
    _case("one of three words is not", [_need("gym subsidy month")], ["The gym is on floor 2."]),
    _case("words compared as stems", [_need("claims submitted")], ["Submit every claim in Ledgerly."]),
    # edges
    _case("nothing retrieved: every part missing", [_need("a"), _need("warranty period")], []),
    _case("no parts: nothing missing", [], ["Anything."]),
    _case("the order of the indices", [_need("x-ray lab"), _need("vacation days"), _need("zzz qqq")],
          ["vacation days are 25"]),
]  # fmt: skip

_WORDS = ["leave", "warranty", "claim", "office", "sensor", "battery", "plan", "token", "desk"]
_CODES = ["E-101", "E-1010", "GX-S10", "L4", "Pro"]


def random_cases(n: int = RANDOM_CASES, seed: int = SEED) -> list[Case]:
    """Random needs over a small vocabulary, some with anchors, against random passages."""
    rng = random.Random(seed)
    cases = []
    for i in range(n):
        needs = [
            Need(frozenset(rng.sample(_WORDS, rng.randint(0, 4))),
                 tuple(rng.sample(_CODES, rng.choice([0, 0, 1, 2]))))
            for _ in range(rng.randint(0, 3))
        ]  # fmt: skip
        passages = [
            " ".join(rng.choice(_WORDS + _CODES + ["the", "and"]) for _ in range(rng.randint(1, 8)))
            for _ in range(rng.randint(0, 3))
        ]
        cases.append(Case(f"random {i}", (needs, passages), expected=missing(needs, passages)))
    return cases


def _judge(case: Case, outcome: Outcome) -> str | None:
    value = outcome.value
    if not isinstance(value, list) or not all(isinstance(i, int) for i in value):
        return f"expected a list of indices, got a {type(value).__name__}"
    if value == case.expected:
        return None
    if sorted(value) == case.expected:
        return "the right parts, but list them in the order of the needs"
    return ""  # expected and got say it all


def check_missing_parts(fn: Callable[[Sequence[Need], Sequence[str]], list[int]]) -> CheckResult:
    """Check a learner's `missing_parts(needs, passages) -> list[int]`."""
    randoms = random_cases()
    summary = f"all {len(CASES)} held-back traces and {len(randoms)} random ones pass"
    return run_cases("missing_parts", "missing_parts", fn, CASES + randoms, _judge, summary)


# Exercise id -> check, for this notebook; raglab.workbook.checks.CHECKS merges every notebook's.
CHECKS: dict[str, Callable[[Callable], CheckResult]] = {"missing_parts": check_missing_parts}
