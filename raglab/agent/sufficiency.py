"""The check after each step: is there enough evidence for every part of the question?

A question is split into parts (`raglab.agent.planner`), and each part becomes a `Need`:
the content words a passage answering it shares with it, and, when it depends on an
earlier part, the names that part found (`anchors`: a code, a product, a city). A part is
met when **one** passage both shares at least `share` of its words and names one of its
anchors: evidence spread over two passages that never meet does not answer it, and a
passage about the right topic but the wrong thing (the warranty table, but not the row of
the part the first search found) does not either.

`missing` is the decision: an empty list means stop and answer, else search again for
the first part missing. Stopping early is often right: when the first search already
meets every part, a second one costs latency and tokens and can only add noise.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

from raglab.ingest.stems import content_stems

SHARE = 0.5
"""The share of a part's words one passage must hold. Lower and an off-topic passage meets
the part; higher and a passage that answers in other words ("holiday" for "vacation") does
not."""


@dataclass(frozen=True, slots=True)
class Need:
    """What a passage must hold to answer one part of a question.

    `words`: the part's content words, as `passage_words` gives them (stems);
    `anchors`: names an earlier step found; when there are any, the passage must name at
    least one of them (case-insensitive, as a whole word: "3" is not in "13").
    """

    words: frozenset[str]
    anchors: tuple[str, ...] = ()


def passage_words(text: str) -> frozenset[str]:
    """A text's content words as `Need.words` holds them: lowercase stems, no stopwords.

    >>> sorted(passage_words("Claims must be submitted within 30 days."))
    ['30', 'claim', 'day', 'submitt', 'within']
    """
    return content_stems(text)


def meets(need: Need, passage: str, share: float = SHARE) -> bool:
    """Does this one passage answer `need`? Its anchors (one of them), and enough words."""
    if need.anchors and not any(names(anchor, passage) for anchor in need.anchors):
        return False
    wanted = math.ceil(share * len(need.words))
    return len(need.words & passage_words(passage)) >= wanted


def names(anchor: str, passage: str) -> bool:
    """Does `passage` name `anchor`, as a whole word, whatever the case?

    >>> names("GX-PA24", "Install the gx-pa24 adapter."), names("3", "13 months")
    (True, False)
    """
    return re.search(rf"(?<![\w-]){re.escape(anchor)}(?![\w-])", passage, re.I) is not None


def missing(needs: Sequence[Need], passages: Sequence[str], share: float = SHARE) -> list[int]:
    """The indices of the needs no single passage meets, in order ([]: enough evidence).

    >>> need = Need(frozenset({"warranty", "adapter"}), anchors=("GX-PA24",))
    >>> missing([need], ["The GX-PA24 adapter has a 1 year warranty."])
    []
    >>> missing([need], ["The GX-T100 has a 2 year warranty."])  # the wrong product
    [0]
    """
    return [
        i
        for i, need in enumerate(needs)
        if not any(meets(need, passage, share) for passage in passages)
    ]
