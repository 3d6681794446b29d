"""Fine-tuning, in miniature: a model that learned question -> answer pairs by gradient descent.

Fine-tuning changes a model's weights; the facts it learned are then inside the weights,
not in a document anyone can check. This tiny stand-in makes the three consequences
measurable offline: a softmax classifier over the hashing embedder's question vectors, one
class per answer it was trained on, trained by plain gradient descent from zero weights
(deterministic). Whatever it learned:

- it answers anyone: `answer(question)` takes no principal, so a fact from a group's
  document is told to every user;
- it cites nothing: its answer is text alone, with no source to check it against;
- it is stale until retrained: change a document and it still answers the old fact.

It is not a language model and learns nothing about behaviour, which is what the seed says
fine-tuning is for ("fine-tuning for behaviour rather than facts").

>>> model = fine_tune([("How many days of leave?", "25 days."), ("Where is the office?", "Leeds.")])
>>> model.answer("How many leave days do I get?")
'25 days.'
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from raglab.embed.embedders import Embedder
from raglab.embed.embedders import embedder as make_embedder
from raglab.validation import check_int, check_number


@dataclass(frozen=True, slots=True)
class FineTuned:
    """The learned weights (one column per answer), the answers, and the embedder of its input."""

    answers: tuple[str, ...]
    weights: np.ndarray = field(repr=False)
    embedder: Embedder = field(repr=False)

    def answer(self, question: str) -> str:
        """The answer it learned that best fits `question`: no principal, no sources, no citation."""
        scores = self.embedder.embed([question])[0] @ self.weights
        return self.answers[int(np.argmax(scores))]  # ties: the first answer learned


def softmax(scores: np.ndarray) -> np.ndarray:
    """Each row turned into probabilities (shifted by its maximum, so exp cannot overflow)."""
    shifted = np.exp(scores - scores.max(axis=1, keepdims=True))
    probabilities: np.ndarray = shifted / shifted.sum(axis=1, keepdims=True)
    return probabilities


def fine_tune(
    pairs: Sequence[tuple[str, str]],
    *,
    epochs: int = 200,
    rate: float = 0.5,
    embedder: str | Embedder = "hashing",
) -> FineTuned:
    """Train on `pairs` of (question, answer): softmax regression by gradient descent."""
    if not pairs:
        raise ValueError("pairs must hold at least one (question, answer) pair")
    check_int("epochs", epochs, minimum=1)
    check_number("rate", rate, minimum=0)
    embed = make_embedder(embedder) if isinstance(embedder, str) else embedder
    answers = tuple(dict.fromkeys(answer for _, answer in pairs))  # first-seen order
    x = embed.embed([question for question, _ in pairs]).astype(np.float64)
    y = np.zeros((len(pairs), len(answers)))
    y[np.arange(len(pairs)), [answers.index(answer) for _, answer in pairs]] = 1.0
    weights = np.zeros((x.shape[1], len(answers)))
    for _ in range(epochs):  # the cross-entropy's gradient, averaged over the pairs
        weights -= rate * x.T @ (softmax(x @ weights) - y) / len(pairs)
    return FineTuned(answers, weights, embed)
