"""The offline default generator: answer by quoting the sources, never by inventing.

`ExtractiveGenerator` uses no language model. It copies the source sentences that best
answer the question and cites each one as `[n]`. Every word of its answer is a
quotation, so it cannot invent facts, and it cannot follow instructions hidden in a
source either: it never reads text as instructions. It reads only the prompt's sources
(the retrieved chunks the asker may read), so it cannot quote anything else.

Four steps, one module each:

1. `raglab.ingest.sentences`: from chunk text to clean, quotable sentences;
2. `raglab.generate.evidence`: each sentence scored against the question, by words and by meaning
   (the index's embedder: with MiniLM "vacation days" finds "annual leave");
3. `raglab.generate.abstention`: a calibrated rule decides whether the best evidence answers;
4. here: choose one to three sentences, put them in reading order and cite each.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import cast

from raglab.embed.embedders import Embedder
from raglab.generate.abstention import (
    AbstentionRule,
    AnswerFeatures,
    KnownStems,
    answer_features,
    load_rule,
    profile_of,
)
from raglab.generate.evidence import Evidence, score_evidence
from raglab.generate.null_calibration import NullCalibration, shipped_calibration
from raglab.generate.prompting import ABSTENTION, Prompt
from raglab.ingest.sentences import (
    candidate_sentences,
    looks_like_instruction,
    split_sentences,
    table_sentences,
    text_units,
)
from raglab.ingest.stems import content_stems, stem
from raglab.text import STOPWORDS
from raglab.validation import check_int, check_number

# The last seven names moved to the modules of steps 1 and 2; older code imports them here.
__all__ = [
    "STOPWORDS",
    "Decision",
    "ExtractiveGenerator",
    "candidate_sentences",
    "content_stems",
    "looks_like_instruction",
    "stem",
    "table_sentences",
    "text_units",
]

DUPLICATE_JACCARD = 0.8
"""Two sentences whose stem sets overlap this much (intersection / union) say the same
thing (overlapping chunks repeat sentences): only the better-scored one is kept."""

SECONDARY_RATIO = 0.65
"""A sentence after the first is quoted only if its score is at least this share of the
best sentence's: supporting detail, not padding. At 0.8 the answer to "How many days do I
have to submit an expense claim?" kept only "Submit every claim in Ledgerly." and lost the
sentence with the 30 days."""


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    """|a ∩ b| / |a ∪ b|, 0.0 for two empty sets."""
    union = len(a | b)
    return len(a & b) / union if union else 0.0


def window(best: Evidence, ranked: Sequence[Evidence], room: int) -> list[Evidence]:
    """`best` and the neighbours in its paragraph that add a question word it lacks.

    A fact often spans two sentences: "CHK-408: checkout timed out ... Fixed in web shop
    4.12.1." The question's "CHK-408" picks the first; its "fixed" is in the next. So
    the sentence before and the one after (same paragraph) join, nearest first, while
    each holds a question word the window does not have yet, up to `room` sentences.
    """
    by_position = {e.position: e for e in ranked if e.unit == best.unit and e.n == best.n}
    picked = [best]
    have = set(best.matched)
    first = last = best.position
    while len(picked) < room:
        step = [e for p in (first - 1, last + 1) if (e := by_position.get(p)) is not None]
        adding = [e for e in step if set(e.matched) - have]
        if not adding:
            return picked
        e = adding[0]
        picked.append(e)
        have |= set(e.matched)
        first, last = min(first, e.position), max(last, e.position)
    return picked


def choose(ranked: Sequence[Evidence], max_sentences: int) -> list[Evidence]:
    """Up to `max_sentences` of `ranked` (best first), in reading order: no duplicates, no padding.

    The best sentence comes with the neighbours that complete it (`window`). A sentence
    from elsewhere needs SECONDARY_RATIO of the best one's score and of its word support
    (a neighbouring table row, "Code: E-317; Meaning: ...", reads like the answer but
    names another code), and must not repeat a sentence already chosen. The answer reads
    in source order (source number, then position), so detail from one source stays
    together and reads as written.
    """
    best = ranked[0]
    picked = window(best, ranked, max_sentences)
    for e in ranked[1:]:
        if len(picked) >= max_sentences:
            break
        if e.score < SECONDARY_RATIO * best.score:
            break  # ranked is best first: nothing after this one clears the bar either
        if e.support < SECONDARY_RATIO * best.support or e in picked:
            continue
        if any(jaccard(e.stems, p.stems) >= DUPLICATE_JACCARD for p in picked):
            continue
        picked.append(e)
    return sorted(picked, key=lambda e: (e.n, e.position))


def cite(e: Evidence) -> str:
    """The sentence with its marker before the final stop: "Leave is 25 days [1]."

    A table row or list item quoted whole may hold several sentences: each gets the
    marker, so every sentence of the answer says where it comes from.

    >>> cite(Evidence(2, 0, "Leave is 25 days.", frozenset()))
    'Leave is 25 days [2].'
    >>> cite(Evidence(1, 0, "Fix: Replace the ribbon. Keep spares.", frozenset()))
    'Fix: Replace the ribbon [1]. Keep spares [1].'
    """
    return " ".join(_cite_one(part, e.n) for part in split_sentences(e.text))


def _cite_one(sentence: str, n: int) -> str:
    body = sentence.rstrip()
    end = body[-1] if body[-1] in ".!?" else "."
    body = body.rstrip(".!?:;, ")
    return f"{body} [{n}]{end}"


CAUTION = "The sources mention {} but may not answer this question."
"""The first line of a cautious answer (`AbstentionRule.level`): what the quotes are about,
and that they may not be the answer. It claims nothing about the facts, so the faithfulness
check passes over it (`without_caution`)."""

_CAUTION_LINE = re.compile(r"^The sources mention .{0,500}? but may not answer this question\.\n")


def caution(question: str, chosen: Sequence[Evidence]) -> str:
    """The caution line for `chosen`: the question's words they mention, as asked.

    >>> caution("Warranty on GripLite valves?", [Evidence(1, 0, "", frozenset({"griplit", "valv"}))])
    'The sources mention GripLite and valves but may not answer this question.'
    """
    held = frozenset().union(*(e.stems | e.context for e in chosen))
    words = [w for w in dict.fromkeys(_WORD.findall(question)) if stem(w.lower()) in held]
    words = [w for w in words if w.lower() not in STOPWORDS]
    said = ", ".join(words[:-1]) + f" and {words[-1]}" if len(words) > 1 else "".join(words)
    return CAUTION.format(said or "related things")


def without_caution(answer: str) -> str:
    """`answer` without its caution line, if it opens with one.

    >>> without_caution("The sources mention leave but may not answer this question.\\nLeave is 25 days [1].")
    'Leave is 25 days [1].'
    """
    return _CAUTION_LINE.sub("", answer, count=1)


_WORD = re.compile(r"[\w][\w'-]*")


@dataclass(frozen=True, slots=True)
class Decision:
    """Why the answerer said what it said: every scored sentence, the chosen ones, the
    features the rule saw, its probability, and the answer (or ABSTENTION).

    `level`: "sure", "cautious" (the answer opens with `CAUTION`) or "abstained"
    (`AbstentionRule.level`). `draft` is the answer it would give if it answered (empty
    without evidence): a notebook can show both sides of the threshold.
    """

    ranked: tuple[Evidence, ...]
    chosen: tuple[Evidence, ...]
    features: AnswerFeatures
    probability: float
    answered: bool
    draft: str
    text: str
    level: str = "sure"


@dataclass(frozen=True, slots=True)
class ExtractiveGenerator:
    """Answer by quoting the source sentences that best answer the question, cited.

    `embedder`: the index's embedder (for LSA, the tenant's public fit); sentences are then scored
    by meaning as well as words, and the rule fitted for that embedder decides. Without
    one, words alone and the words-only rule. `rule`: another `AbstentionRule` (default:
    the shipped one for the embedder, `raglab.generate.abstention.load_rule`). `known_words`: the
    words of the documents the asker may read (`raglab.generate.abstention.vocabulary`, or a
    `KnownStems` lookup; `raglab.ask` passes them): a question in words they never use is likely about something they do
    not say. Without them, the retrieved sources stand in. `calibration`: the index's null
    distribution for the asker's tenant (`raglab.generate.null_calibration`; `raglab.ask`
    passes it): the rule reads scores as percentiles of it; without one, of the null
    distribution shipped with the rule (`shipped_calibration`). `min_support`: a
    floor the best sentence's word support must also reach (0: the rule alone decides).

    Deterministic: no randomness, ties broken by source number and position.
    `decide(prompt)` returns the whole `Decision`, so a notebook can show why it answered.

    >>> from raglab.generate.prompting import build_prompt
    >>> from raglab.records import Chunk, Hit
    >>> text = "# Leave\\n\\nStaff get 25 days of annual leave."
    >>> hit = Hit(Chunk("leave.md", 0, text, 0, len(text)), 1.0)
    >>> ExtractiveGenerator().generate(build_prompt("How many days of annual leave?", [hit]))
    'Staff get 25 days of annual leave [1].'
    >>> ExtractiveGenerator().generate(build_prompt("What is the capital of France?", [hit]))
    "I can't answer that from the provided sources."
    """

    max_sentences: int = 3
    min_support: float = 0.0
    embedder: Embedder | None = field(default=None, kw_only=True, repr=False)
    rule: AbstentionRule | None = field(default=None, kw_only=True)
    known_words: frozenset[str] | KnownStems | None = field(default=None, kw_only=True, repr=False)
    calibration: NullCalibration | None = field(default=None, kw_only=True, repr=False)

    def __post_init__(self) -> None:
        check_int("max_sentences", self.max_sentences, minimum=1)
        check_number("min_support", self.min_support, minimum=0, maximum=1)
        if self.rule is None:
            object.__setattr__(self, "rule", load_rule(profile_of(self.embedder)))

    @property
    def _rule(self) -> AbstentionRule:
        return cast(AbstentionRule, self.rule)  # never None: __post_init__ loads the default

    @property
    def scoring_embedder(self) -> Embedder | None:
        """The embedder sentences are scored with: only one the rule was fitted for.

        subtle: a rule's weights mean something only for its embedder's cosines; with an
        embedder no rule was fitted for, the words-only rule applies, so words alone score.
        """
        if self.embedder is not None and self._rule.profile == profile_of(self.embedder):
            return self.embedder
        return None

    def rank(self, prompt: Prompt) -> list[Evidence]:
        """Every candidate sentence of the prompt's sources, scored, best first."""
        sentences = candidate_sentences(prompt.sources)
        return score_evidence(prompt.question, sentences, self.scoring_embedder)

    def decide(self, prompt: Prompt) -> Decision:
        """Score, choose, and decide whether to answer (see `Decision`)."""
        ranked = self.rank(prompt)
        chosen = choose(ranked, self.max_sentences) if ranked else []
        features = answer_features(
            prompt.question, ranked, self.scoring_embedder, self.known_words, chosen
        )
        calibration = self.calibration or shipped_calibration(self._rule.profile)
        if calibration is not None and ranked:
            features = calibration.relative(features)
        probability = self._rule.probability(features)
        draft = " ".join(cite(e) for e in chosen)
        possible = (
            bool(ranked)
            and bool(content_stems(prompt.question))
            and features.best_support >= self.min_support
        )
        level = self._rule.level(probability) if possible else "abstained"
        text = {
            "sure": draft,
            "cautious": f"{caution(prompt.question, chosen)}\n{draft}",
            "abstained": ABSTENTION,
        }[level]
        answered = level != "abstained"
        return Decision(
            tuple(ranked), tuple(chosen), features, probability, answered, draft, text, level
        )

    def generate(self, prompt: Prompt) -> str:
        return self.decide(prompt).text
