"""Pictures of notebook 04: where semantic chunking cuts, and why.

`similarity_curve` computes what is drawn, as plain data, with the engine's own pieces
(`raglab.ingest.sentences.sentence_spans`, `raglab.ingest.semantic`); `plot_similarity_curve`
only draws it, in the style of `raglab.workbook.viz` (white, Okabe & Ito's palette, PNG via
`viz.show`). A boundary is marked by a vertical line and a filled marker, not by colour
alone. matplotlib is imported inside the function that draws.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from raglab.ingest.semantic import (
    PERCENTILE,
    WINDOW,
    SentenceEmbedding,
    adjacent_similarities,
    boundaries,
)
from raglab.ingest.sentences import sentence_spans
from raglab.workbook.viz import OKABE_ITO, _figure

__all__ = ["SimilarityCurve", "plot_similarity_curve", "similarity_curve"]


@dataclass(frozen=True, slots=True)
class SimilarityCurve:
    """A text's sentences, the similarity across each gap, the threshold and the boundaries.

    Gap i lies between `sentences[i]` and `sentences[i + 1]`.
    """

    sentences: tuple[str, ...]
    similarities: tuple[float, ...]
    threshold: float
    boundaries: tuple[int, ...]


def similarity_curve(
    text: str, embedding: SentenceEmbedding, *, window: int = WINDOW, percentile: float = PERCENTILE
) -> SimilarityCurve:
    """The semantic chunker's view of `text` (one section: no headings), as data."""
    sentences = tuple(text[start:end] for start, end in sentence_spans(text))
    if len(sentences) < 2:
        raise ValueError(f"the text has {len(sentences)} sentence(s): no gap to measure")
    sims = adjacent_similarities(embedding.embed(list(sentences)), window)
    threshold = float(np.percentile(sims, percentile))
    found = boundaries(sims, percentile)
    return SimilarityCurve(sentences, tuple(map(float, sims)), threshold, tuple(found))


def plot_similarity_curve(curve: SimilarityCurve, *, title: str = "") -> Any:
    """Similarity across each gap, the threshold as a dashed line, boundaries marked."""
    fig, ax = _figure()
    gaps = np.arange(len(curve.similarities)) + 0.5  # gap i sits between sentences i and i+1
    ax.plot(gaps, curve.similarities, "o-", color=OKABE_ITO[1], lw=2, mfc="white")
    ax.axhline(curve.threshold, color="grey", ls="--", lw=1, label="threshold (percentile)")
    for gap in curve.boundaries:
        ax.axvline(gap + 0.5, color=OKABE_ITO[0], lw=1.5)
        ax.plot(gap + 0.5, curve.similarities[gap], "o", color=OKABE_ITO[0], markersize=8)
    ax.set_xticks(range(len(curve.sentences)), _labels(curve.sentences), rotation=60, ha="right")
    ax.tick_params(labelsize=7)
    ax.set_ylabel("similarity across the gap")
    ax.legend(loc="best", fontsize=8)
    n = len(curve.boundaries)
    ax.set_title(
        title or f"{n} {'boundary' if n == 1 else 'boundaries'} (vertical lines)", fontsize=10
    )
    return fig


def _labels(sentences: Sequence[str], width: int = 24) -> list[str]:
    return [s if len(s) <= width else s[: width - 1] + "\u2026" for s in sentences]
