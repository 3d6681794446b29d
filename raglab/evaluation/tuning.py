"""Tuning on labelled questions: the fusion weight, the learned reranker, and their curves.

What the query path does with a setting is in `raglab.retrieve.fusion` (`Fusion`) and
`raglab.retrieve.rerank` (`LinearReranker`); choosing the setting needs questions whose
relevant documents are known, so it lives here, with the runner that scores them.

Both are chosen the same way: each question's dense and keyword rankings are searched once,
deep (`collect_rankings`), then fused (and reranked) many times, once per setting tried,
by cutting those lists (`fused_search`, `reranked_search`). One half of the questions
chooses (`fusion_curve` and `choose`; `training_rows` and `fit_reranker`), the other half
judges.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from raglab.evaluation.questions import Question
from raglab.evaluation.runner import evaluate
from raglab.progress import Progress, Reporter
from raglab.records import Hit, Principal
from raglab.retrieve.fusion import CANDIDATES_PER_RANKER, Fusion, Rankings
from raglab.retrieve.rerank import DEPTH, FEATURES, LinearReranker, Reranker, candidates, features
from raglab.validation import check_int

WEIGHTS = tuple(i / 10 for i in range(11))
"""The dense weights a fusion curve tries: 0 (keyword alone) to 1 (dense alone)."""

RetrieverLike = Callable[[str, Principal, int], Sequence[Hit]]
"""One ranker: (question, asker, depth) -> hits, best first (`Retriever.dense`, `.keyword`)."""


def collect_rankings(
    dense: RetrieverLike,
    keyword: RetrieverLike,
    questions: Sequence[Question],
    *,
    depth: int,
    progress: Reporter | None = None,
) -> dict[str, Rankings]:
    """Each question's two rankings, `depth` deep, searched as its own user, keyed by id.

    Searching once and fusing many times is what makes a curve quick: an exact top-d is
    the first d of a deeper top-D, so `fused_search` cuts these lists instead of searching.
    `progress` hears after each question how many are done (`raglab.progress`).
    """
    depth = check_int("depth", depth, minimum=1)
    out = {}
    for q in questions:
        principal = q.asker
        out[q.id] = Rankings(
            tuple(dense(q.question, principal, depth)), tuple(keyword(q.question, principal, depth))
        )
        if progress is not None:
            progress(Progress("searching", len(out), len(questions), "questions"))
    return out


# --- the fusion weight -------------------------------------------------------------------------


def fused_search(
    rankings: dict[str, Rankings], fusion: Fusion
) -> Callable[[Question, int], list[Hit]]:
    """An `evaluate` search that fuses the stored rankings as hybrid search would, k * 4 deep."""

    def search(q: Question, k: int) -> list[Hit]:
        r = rankings[q.id]
        depth = k * CANDIDATES_PER_RANKER
        return fusion.fuse(r.dense[:depth], r.keyword[:depth], k)

    return search


@dataclass(frozen=True, slots=True)
class CurvePoint:
    """nDCG@10 of one fusion over a question set."""

    fusion: Fusion
    ndcg_at_10: float


def fusion_curve(
    rankings: dict[str, Rankings],
    questions: Sequence[Question],
    *,
    method: str = "rrf",
    weights: Sequence[float] = WEIGHTS,
) -> list[CurvePoint]:
    """nDCG@10 over `questions` for each dense weight in `weights`."""
    points = []
    for w in weights:
        fusion = Fusion(method, w)
        report = evaluate(questions, search=fused_search(rankings, fusion), k=5)
        points.append(CurvePoint(fusion, report.ndcg_at_10 or 0.0))
    return points


def choose(points: Sequence[CurvePoint]) -> Fusion:
    """The fusion with the best nDCG@10; on a tie, the weight nearest 0.5 (the least extreme).

    The ends (w = 0 and 1) are the single rankers, so the choice never loses to the better
    of them on the questions it was chosen on; held-out questions say whether that lasts.
    """
    if not points:
        raise ValueError("points is empty: there is no fusion to choose from")
    best = max(points, key=lambda p: (round(p.ndcg_at_10, 9), -abs(p.fusion.dense_weight - 0.5)))
    return best.fusion


# --- the learned reranker ----------------------------------------------------------------------


def reranked_search(
    rankings: dict[str, Rankings], fusion: Fusion, reranker: Reranker, *, depth: int = DEPTH
) -> Callable[[Question, int], list[Hit]]:
    """An `evaluate` search: the top `depth` fused candidates of each question, reranked."""

    def search(q: Question, k: int) -> list[Hit]:
        found = candidates(rankings[q.id], fusion, max(depth, k))
        return reranker.rerank(q.question, found, k)

    return search


def training_rows(
    rankings: dict[str, Rankings],
    questions: Sequence[Question],
    fusion: Fusion,
    *,
    depth: int = DEPTH,
) -> tuple[np.ndarray, list[bool]]:
    """Features and labels of every candidate of the answerable questions (for `fit_reranker`)."""
    blocks, labels = [], []
    for q in questions:
        if not (q.answerable and q.relevant_docs):
            continue
        found = candidates(rankings[q.id], fusion, depth)
        blocks.append(features(q.question, found))
        labels += [c.hit.chunk.doc_id in q.relevant_docs for c in found]
    x = np.vstack(blocks) if blocks else np.zeros((0, len(FEATURES)))
    return x, labels


def fit_reranker(
    x: np.ndarray, relevant: Sequence[bool], *, profile: str = "", c: float = 1.0
) -> LinearReranker:
    """A logistic regression (scikit-learn) telling relevant candidates from the rest.

    `x`: one row of `features` per candidate, over many questions; `relevant[i]`: whether
    row i's chunk belongs to a relevant document. Classes are balanced (few candidates are
    relevant), and only the weights matter for ranking: the intercept is dropped.
    """
    from sklearn.linear_model import LogisticRegression  # heavy: loaded only to fit

    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(relevant, dtype=bool)
    if x.ndim != 2 or x.shape != (len(y), len(FEATURES)):
        raise ValueError(f"x must have shape (len(relevant), {len(FEATURES)}), got {x.shape}")
    if y.all() or not y.any():
        raise ValueError("relevant must hold both True and False: nothing to tell apart")
    mean = x.mean(axis=0)
    scale = np.where(x.std(axis=0) > 0, x.std(axis=0), 1.0)
    model = LogisticRegression(C=c, class_weight="balanced", max_iter=1000)
    model.fit((x - mean) / scale, y)
    return LinearReranker(
        tuple(float(w) for w in model.coef_[0]),
        tuple(mean.tolist()),
        tuple(scale.tolist()),
        profile,
    )
