"""When to abstain: a calibrated rule, not a guess.

The third step of the extractive answerer. Its best sentence always exists; the question
is whether it answers. The old rule was a hand-picked threshold on word overlap, which
refused every paraphrase. Here a tiny logistic model turns a few numbers about the
evidence (`AnswerFeatures`) into the probability that the answer is right, and the
answerer answers when that probability reaches the rule's threshold:

    p = 1 / (1 + exp(-(intercept + Σ weight_i · feature_i)))      answer when p >= threshold

The weights are fitted with scikit-learn on labelled questions (`scripts/fit_abstention.py`,
on one half of data/questions.jsonl; the other half is kept for reporting) and shipped as
a few numbers in `raglab/generate/abstention_rules.json`, one rule per embedder ("profile"): a
cosine of 0.5 means something else to MiniLM than to the hashing embedder.

`precision_abstention_curve` shows what moving the threshold does: answer more, and a
larger share of the answers is wrong; answer less, and more questions go unanswered.
"""

from __future__ import annotations

import json
import math
import statistics
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass
from functools import cache, lru_cache
from importlib import resources
from itertools import combinations
from typing import Any, cast

from raglab.embed.embedders import Embedder
from raglab.generate.evidence import Evidence, question_weights, weakest_term
from raglab.ingest.stems import chunk_stems, content_stems
from raglab.records import Chunk

__all__ = [
    "FEATURES",
    "AbstentionRule",
    "AnswerFeatures",
    "CurvePoint",
    "Example",
    "KnownStems",
    "answer_features",
    "fit_rule",
    "load_rule",
    "precision_abstention_curve",
    "profile_of",
    "together",
    "vocabulary",
]

RULES_FILE = "abstention_rules.json"
"""The fitted rules, shipped inside the package (so a wheel carries them)."""

WORDS_PROFILE = "words"
"""The profile of an answerer without an embedder: sentences are scored by words alone."""


# --- the features --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class AnswerFeatures:
    """What the rule sees about one question's evidence, each a number from about 0 to 1.

    `best_score`: the top sentence's blended score (`raglab.generate.evidence`); `best_similarity`
    and `best_support`: the highest cosine and the highest word support of any sentence;
    `gap`: how far the top sentence is ahead of the next; `coverage`: the share of the
    question's content words found anywhere in the sources (a question about something
    they never mention — "company cars" — leaves a word uncovered); `weakest_term`: how
    well the top sentence matches the question's worst-matched word
    (`raglab.generate.evidence.weakest_term`: "gym" finds nothing near it); `known`: the share of
    the question's content words found anywhere in the documents the asker may read
    (`vocabulary`). A question about another tenant's facts ("layoffs", "wholesale") or
    about something no document mentions uses words the asker's documents never do, while
    an answerable question's words are there, even when retrieval brought back other ones;
    `together`: the share of the question's word pairs that one quoted sentence holds both
    of (`together`). Sources that share the question's words one by one ("bicycle" here,
    "allowance" there) do not state the asked-for fact; a sentence that states it holds
    the words together; `focus`: the share of the question's focus (its idf-weighted words
    that the quoted sentences' headings and titles do not already hold: "warranty" in "How
    long is the warranty on the GripLite valves?" under "GripLite valves") that the quoted
    sentences state (`focus`); `lift`: how far the best cosine stands above the median
    cosine of all the candidate sentences, a cosine relative to the sources at hand rather
    than to one corpus's raw scores; `score_percentile`, `similarity_percentile` and
    `support_percentile`: where `best_score`, `best_similarity` and `best_support` fall
    among this index's scores for questions it cannot answer, its null distribution
    (`raglab.generate.null_calibration`): 0.9 is above 90% of them, on any corpus. 0.5
    (no information) when the index has no calibration.
    """

    best_score: float
    best_similarity: float
    best_support: float
    gap: float
    coverage: float
    weakest_term: float
    known: float
    together: float
    focus: float = 0.0
    lift: float = 0.0
    score_percentile: float = 0.5
    similarity_percentile: float = 0.5
    support_percentile: float = 0.5


FEATURES = tuple(AnswerFeatures.__dataclass_fields__)
"""The feature names, in order: a rule's weights follow this order."""


def vocabulary(chunks: Iterable[Chunk]) -> frozenset[str]:
    """The content stems of `chunks` (text, heading and title): the words an asker's
    documents use, when `chunks` are the chunks the asker may read.

    >>> from raglab.records import Chunk
    >>> sorted(vocabulary([Chunk("a.md", 0, "Staff get 25 days.", 0, 18, title="Leave")]))
    ['25', 'day', 'leav', 'staff']
    """
    return _vocabulary(tuple(chunks))


@lru_cache(maxsize=32)
def _vocabulary(chunks: tuple[Chunk, ...]) -> frozenset[str]:
    # Cached: every question of one asker reads the same chunks, and stemming them all is
    # the slow part; equal chunks (text and all) give the same words.
    return frozenset().union(*map(chunk_stems, chunks))


@dataclass(frozen=True, slots=True)
class KnownStems:
    """An asker's `vocabulary` that is never read whole: `stems & known` asks `lookup` once,
    which returns those of the stems it is given that the asker's documents use.

    An index file answers the lookup from its stored stems (`SQLiteStore.known_stems`),
    so a cold `raglab ask` reads the question's few stems instead of every chunk.

    >>> known = KnownStems(lambda stems: frozenset(stems) & {"day", "leav"})
    >>> sorted(frozenset({"day", "gym"}) & known)
    ['day']
    """

    lookup: Callable[[Iterable[str]], frozenset[str]]

    # `stems & known`: a frozenset cannot intersect this object, so Python asks it instead.
    def __rand__(self, stems: frozenset[str]) -> frozenset[str]:
        return self.lookup(stems)


def together(question: str, chosen: Sequence[Evidence]) -> float:
    """The share of pairs of the question's content stems found together in one of the
    `chosen` sentences (a one-word question: whether one of them has the word).

    >>> text = "Parking costs 5 euros a day."
    >>> e = Evidence(1, 0, text, content_stems(text))
    >>> together("What does parking cost?", [e]), together("What does bicycle parking cost?", [e])
    (1.0, 0.3333333333333333)
    """
    wanted = content_stems(question)
    if len(wanted) < 2:
        return float(bool(wanted) and any(wanted <= e.stems for e in chosen))
    # subtle: a question of n words has n(n-1)/2 pairs (3,000 words: 4.5 million), so pairs
    # are counted, never listed. Words held by the same sentences form one group; two words
    # are together when their groups share a sentence. Groups are few (at most one per set
    # of chosen sentences), so this costs time in proportion to the question's length.
    groups = Counter(frozenset(i for i, e in enumerate(chosen) if w in e.stems) for w in wanted)
    groups.pop(frozenset(), None)  # words no chosen sentence holds
    held = sum(math.comb(n, 2) for n in groups.values()) + sum(
        n * m for (a, n), (b, m) in combinations(groups.items(), 2) if a & b
    )
    return held / math.comb(len(wanted), 2)


def focus(question: str, ranked: Sequence[Evidence], chosen: Sequence[Evidence]) -> float:
    """The idf-weighted share of the question's focus words that `chosen` states.

    The focus is what the question asks beyond the thing it is about: its content stems
    minus those the chosen sentences' titles and headings hold without the sentences
    saying them (the entity). Idf is counted over `ranked`, the sentences at hand, so a
    word rare there weighs more, on any corpus. 1.0 when the question is all entity.

    >>> e = Evidence(1, 0, "The set fits rims up to 30 mm.", frozenset({"set", "fit", "rim", "30", "mm"}),
    ...              context=frozenset({"griplit", "valv"}))
    >>> focus("Which rims do GripLite valves fit?", [e], [e]), focus("Warranty on GripLite valves?", [e], [e])
    (1.0, 0.0)
    """
    wanted = content_stems(question)
    stated = frozenset().union(*(e.stems for e in chosen))
    entity = frozenset().union(*(e.context for e in chosen)) - stated
    asked = wanted - entity
    if not asked:
        return 1.0
    df = Counter(t for e in ranked for t in e.stems & asked)
    weights = question_weights(asked, df, len(ranked))
    return sum(weights[t] for t in asked & stated) / sum(weights.values())


def lift(ranked: Sequence[Evidence]) -> float:
    """The best cosine minus the median cosine of `ranked` (0.0 for fewer than two)."""
    if len(ranked) < 2:
        return 0.0
    cosines = sorted(e.similarity for e in ranked)
    return cosines[-1] - statistics.median(cosines)


def answer_features(
    question: str,
    ranked: Sequence[Evidence],
    embedder: Embedder | None = None,
    known_words: frozenset[str] | KnownStems | None = None,
    chosen: Sequence[Evidence] | None = None,
) -> AnswerFeatures:
    """The features of `ranked` (evidence scored with `embedder`, best first) for `question`.

    `known_words`: the `vocabulary` of the documents the asker may read (or a `KnownStems`
    that looks the question's stems up); without it, the
    retrieved sources are all the answerer knows (then `known` equals `coverage`).
    `chosen`: the sentences the answer would quote (default: the best one).

    >>> from raglab.generate.evidence import Evidence
    >>> e = Evidence(1, 0, "Staff get 25 days.", frozenset({"staff", "day"}), support=0.8, score=0.8)
    >>> answer_features("How many days?", [e])  # doctest: +NORMALIZE_WHITESPACE
    AnswerFeatures(best_score=0.8, best_similarity=0.0, best_support=0.8, gap=0.8,
                   coverage=1.0, weakest_term=1.0, known=1.0, together=1.0, focus=1.0, lift=0.0,
                   score_percentile=0.5, similarity_percentile=0.5, support_percentile=0.5)
    >>> answer_features("How many days at the gym?", [e], known_words=frozenset({"day"})).known
    0.5
    """
    if not ranked:
        return AnswerFeatures(*(0.0,) * len(FEATURES))  # nothing found: below any null question
    wanted = content_stems(question)
    seen = frozenset().union(*(e.stems | e.context for e in ranked))
    known = seen if known_words is None else known_words
    picked = ranked[:1] if chosen is None else chosen
    return AnswerFeatures(
        best_score=ranked[0].score,
        best_similarity=max(e.similarity for e in ranked),
        best_support=max(e.support for e in ranked),
        gap=ranked[0].score - (ranked[1].score if len(ranked) > 1 else 0.0),
        coverage=len(wanted & seen) / len(wanted) if wanted else 0.0,
        weakest_term=weakest_term(question, ranked[0], embedder),
        known=len(wanted & known) / len(wanted) if wanted else 0.0,
        together=together(question, picked),
        focus=focus(question, ranked, picked),
        lift=lift(ranked),
    )


# --- the rule ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class AbstentionRule:
    """A logistic model over `AnswerFeatures` and the probabilities at which it answers.

    `weights` follow `FEATURES`. `profile` names the embedder the rule was fitted for.
    At `threshold` or above it answers; from `caution` up to `threshold` it answers with
    a stated caution (the sources may not answer this); below `caution` it abstains.
    `caution` defaults to `threshold`: two levels, answer or abstain.

    >>> rule = AbstentionRule("demo", weights=(0, 0, 10, *(0,) * 10), intercept=-5, threshold=0.5)
    >>> round(rule.probability(AnswerFeatures(0, 0, 0.8, 0, 0, 0, 0, 0)), 3)
    0.953
    >>> rule.answers(AnswerFeatures(0, 0, 0.3, 0, 0, 0, 0, 0))
    False
    """

    profile: str
    weights: tuple[float, ...]
    intercept: float
    threshold: float
    caution: float | None = None

    def __post_init__(self) -> None:
        if len(self.weights) != len(FEATURES):
            raise ValueError(
                f"weights must have one number per feature ({', '.join(FEATURES)}); "
                f"got {len(self.weights)}"
            )
        if self.caution is None:
            object.__setattr__(self, "caution", self.threshold)
        elif not 0 <= self.caution <= self.threshold:
            raise ValueError(
                f"caution must be >= 0 and <= threshold (got caution={self.caution}, "
                f"threshold={self.threshold})"
            )

    def level(self, probability: float) -> str:
        """ "sure", "cautious" or "abstained" for an answer with this probability.

        >>> rule = AbstentionRule("demo", (0,) * len(FEATURES), 0, threshold=0.6, caution=0.4)
        >>> [rule.level(p) for p in (0.7, 0.5, 0.3)]
        ['sure', 'cautious', 'abstained']
        """
        if probability >= self.threshold:
            return "sure"
        return "cautious" if probability >= cast(float, self.caution) else "abstained"

    def probability(self, features: AnswerFeatures) -> float:
        """The model's probability that an answer with these features is right."""
        z = self.intercept + sum(w * x for w, x in zip(self.weights, astuple(features)))
        return 1.0 / (1.0 + math.exp(-z))

    def answers(self, features: AnswerFeatures, threshold: float | None = None) -> bool:
        """True when the probability reaches `threshold` (default: the fitted one)."""
        return self.probability(features) >= (self.threshold if threshold is None else threshold)


def astuple(features: AnswerFeatures) -> tuple[float, ...]:
    """The features as numbers in `FEATURES` order."""
    return tuple(getattr(features, name) for name in FEATURES)


def profile_of(embedder: Embedder | None) -> str:
    """The rule profile for an answerer scoring with `embedder` (its registry name)."""
    return WORDS_PROFILE if embedder is None else embedder.name


@cache
def _stored_rules() -> dict[str, Any]:
    rules: dict[str, Any] = json.loads(
        resources.files("raglab.generate").joinpath(RULES_FILE).read_text("utf-8")
    )
    return rules


def load_rule(profile: str) -> AbstentionRule:
    """The shipped rule for `profile`; the words-only rule when none was fitted for it.

    >>> load_rule("no-such-embedder").profile
    'words'
    """
    rules = _stored_rules()["rules"]
    stored = rules.get(profile, rules[WORDS_PROFILE])
    return AbstentionRule(
        stored["profile"],
        tuple(stored["weights"]),
        stored["intercept"],
        stored["threshold"],
        stored.get("caution"),
    )


def rule_as_dict(rule: AbstentionRule) -> dict[str, Any]:
    """The rule as JSON-ready values, with the feature names beside the weights."""
    return asdict(rule) | {"weights": list(rule.weights), "features": list(FEATURES)}


# --- fitting and the curve -----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Example:
    """One labelled question as the rule sees it: its features, and whether the answer
    the answerer would give is right (it cites a document that answers the question)."""

    question_id: str
    features: AnswerFeatures
    answerable: bool
    correct: bool


DEFAULT_MIN_ABSTENTION = 0.75
"""`fit_rule` answers (with a caution) from the lowest probability at which this share of
the unanswerable fitting questions is refused, on average over the fitting corpora. Not
all of them: on a corpus it was never fitted on, a rule that refuses every unanswerable
question it saw also refuses most answerable ones (measured: 0.95 refused 41 of 65
answerable questions of an unseen knowledge base)."""

DEFAULT_SURE_ABSTENTION = 0.95
"""Above the probability that refuses this share of the unanswerable fitting questions,
the answer is given without a caution ("sure"); between the two, with one."""

REGULARISATION = 1.0
"""scikit-learn's C (inverse strength of the L2 penalty): with a few dozen questions, a
penalty keeps the weights small and the rule smooth instead of fitted to single questions."""


def fit_rule(
    examples: Sequence[Example],
    *,
    profile: str,
    min_abstention: float = DEFAULT_MIN_ABSTENTION,
    sure_abstention: float = DEFAULT_SURE_ABSTENTION,
    corpora: Sequence[str] | None = None,
    ignore: Sequence[str] = (),
) -> AbstentionRule:
    """Fit the logistic model on `examples` (label: `correct`) and choose its thresholds.

    `corpora[i]` names the corpus of `examples[i]` (default: one corpus). Each corpus
    weighs the same in the fit, however many questions it has, and the thresholds hold on
    average over the corpora: `caution` is the lowest probability at which `min_abstention`
    of the unanswerable examples are refused, `threshold` the one for `sure_abstention`.
    `ignore`: features the rule gives no weight (the raw scores, when their percentiles
    in each index's null distribution stand in for them).
    """
    from sklearn.linear_model import LogisticRegression  # heavy: imported only to fit

    labels = [e.correct for e in examples]
    if len(set(labels)) < 2:
        raise ValueError("fit_rule needs both right and wrong answers among the examples")
    names = list(corpora) if corpora is not None else [""] * len(examples)
    size = Counter(names)
    unknown = sorted(set(ignore) - set(FEATURES))
    if unknown:
        raise ValueError(f"ignore names unknown features {unknown}")
    kept = [name not in ignore for name in FEATURES]
    model = LogisticRegression(C=REGULARISATION, max_iter=1000).fit(
        [[x * k for x, k in zip(astuple(e.features), kept)] for e in examples],
        labels,
        sample_weight=[len(examples) / (len(size) * size[c]) for c in names],
    )
    weights = tuple(round(float(w), 6) if k else 0.0 for w, k in zip(model.coef_[0], kept))
    rule = AbstentionRule(profile, weights, round(float(model.intercept_[0]), 6), 1.0)
    refused: dict[str, list[float]] = {}
    for e, c in zip(examples, names):
        if not e.answerable:
            refused.setdefault(c, []).append(rule.probability(e.features))
    caution = _threshold(refused, min_abstention)
    sure = max(caution, _threshold(refused, sure_abstention))
    return AbstentionRule(profile, weights, rule.intercept, sure, caution)


def _threshold(unanswerable: dict[str, list[float]], min_abstention: float) -> float:
    """The lowest threshold that refuses `min_abstention` of each corpus's unanswerable
    probabilities, on average over the corpora (0.5 when there are none)."""
    if not unanswerable:
        return 0.5
    candidates = sorted({round(p + 1e-6, 6) for ps in unanswerable.values() for p in ps})
    for t in candidates:
        shares = [sum(p < t for p in ps) / len(ps) for ps in unanswerable.values()]
        if sum(shares) / len(shares) >= min_abstention:
            return t
    return candidates[-1]


@dataclass(frozen=True, slots=True)
class CurvePoint:
    """What the answerer does at one threshold, over a set of labelled questions.

    `answered`: the share of all questions answered; `precision`: the share of answers
    that are right (None when nothing is answered); `answered_correctly`: the share of the
    answerable questions answered right; `abstention_on_unanswerable`: the share of the
    unanswerable ones refused (None when there are none); `false_abstention`: the share of
    the answerable questions refused (None when there are none). A good rule sits where
    `false_abstention` is low and `abstention_on_unanswerable` high.
    """

    threshold: float
    answered: float
    precision: float | None
    answered_correctly: float
    abstention_on_unanswerable: float | None
    false_abstention: float | None


def precision_abstention_curve(
    examples: Sequence[Example], rule: AbstentionRule, thresholds: Sequence[float] | None = None
) -> list[CurvePoint]:
    """One `CurvePoint` per threshold (default 0.0, 0.05, ..., 1.0), for plotting.

    >>> rule = AbstentionRule("demo", weights=(0, 0, 10, *(0,) * 10), intercept=-5, threshold=0.5)
    >>> f = lambda support: AnswerFeatures(0, 0, support, 0, 0, 0, 0, 0)
    >>> examples = [Example("a", f(0.9), True, True), Example("b", f(0.4), False, False)]
    >>> [(p.threshold, p.answered, p.precision) for p in precision_abstention_curve(examples, rule, [0.1, 0.5])]
    [(0.1, 1.0, 0.5), (0.5, 0.5, 1.0)]
    >>> [(p.false_abstention, p.abstention_on_unanswerable) for p in precision_abstention_curve(examples, rule, [0.1, 0.5, 1.0])]
    [(0.0, 0.0), (0.0, 1.0), (1.0, 1.0)]
    """
    if not examples:
        raise ValueError("precision_abstention_curve needs at least one example")
    if thresholds is None:
        thresholds = [i / 20 for i in range(21)]
    scored = [(rule.probability(e.features), e) for e in examples]
    n_answerable = sum(e.answerable for e in examples)
    n_unanswerable = len(examples) - n_answerable
    points = []
    for t in thresholds:
        answered = [e for p, e in scored if p >= t]
        right = sum(e.correct for e in answered)
        refused = sum(not e.answerable for p, e in scored if p < t)
        refused_answerable = sum(e.answerable for p, e in scored if p < t)
        points.append(
            CurvePoint(
                threshold=t,
                answered=len(answered) / len(examples),
                precision=right / len(answered) if answered else None,
                answered_correctly=right / n_answerable if n_answerable else 0.0,
                abstention_on_unanswerable=refused / n_unanswerable if n_unanswerable else None,
                false_abstention=refused_answerable / n_answerable if n_answerable else None,
            )
        )
    return points
