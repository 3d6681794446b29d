"""Pictures for the workbook: 2D maps of embeddings, similarity heatmaps, recall curves.

A 2D map is a picture of the corpus, not of retrieval: 384 dimensions squeezed into two
keep a small share of the variance, and the question's true neighbours (computed in full
dimension) are often not the nearest dots on the map. So the map draws the *true* top-k
on top of the projection, and says in its title how many of them the map also puts near.

What is drawn is computed first, as plain data (`RetrievalMap`), and tested; the drawing
functions only draw it. The shapes carry the meaning, not colour alone:

    black star = the question    ring = retrieved (true top-k, numbered by rank)
    hollow grey = hidden by access (filtered before scoring)
    square = near the star on the map, but not retrieved

Every function returns a matplotlib `Figure` built without pyplot (no global state, no
figure shown twice); `show(fig)` puts it in a notebook as a PNG. matplotlib and
scikit-learn are imported inside the functions that use them. The projections (PCA,
t-SNE) live in `raglab.workbook.projection` and are importable from here too, as the notebooks
use them: `viz.fit_pca`, `viz.Projection`, `viz.tsne_2d`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from raglab.retrieve.vectors import normalise, top_k
from raglab.workbook.projection import Projection, fit_pca, tsne_2d

__all__ = [
    "Projection",
    "RetrievalMap",
    "fit_pca",
    "map_limits",
    "on_tsne",
    "plot_bars",
    "plot_heatmap",
    "plot_lines",
    "plot_recall_curves",
    "plot_retrieval_map",
    "retrieval_map",
    "show",
    "tsne_2d",
]

# One style, set once (white backgrounds, 7 x 4.5 in at 100 dpi, colour-blind-safe).
FIGSIZE = (7.0, 4.5)
DPI = 100
# Okabe & Ito's colour-blind-safe palette, yellow last: it is faint on white.
OKABE_ITO = ("#E69F00", "#56B4E9", "#009E73", "#0072B2", "#D55E00", "#CC79A7", "#F0E442")
QUESTION_COLOUR = "black"  # reserved for the question
HIDDEN_COLOUR = "#b0b0b0"  # reserved for what access hides
LEAK_COLOUR = "#d62728"  # reserved for a chunk retrieved that the asker may not read


# --- what a retrieval map shows, as data -------------------------------------------------------


@dataclass(frozen=True, slots=True, eq=False)
class RetrievalMap:
    """Everything `plot_retrieval_map` draws, computed and testable without a picture.

    Row numbers refer to the vectors given to `retrieval_map`.
    """

    xy: np.ndarray  # (n, 2) map coordinates of the chunks
    categories: tuple[str, ...]  # colour group of each chunk (document, tenant, ...)
    readable: np.ndarray  # (n,) bool: may the asker read this chunk?
    question_xy: np.ndarray  # (2,)
    top: np.ndarray  # the true top-k rows (full dimension, readable only), best first
    scores: np.ndarray  # their cosine scores
    near: np.ndarray  # the k readable rows nearest the star on the map, nearest first
    axis_labels: tuple[str, str]  # e.g. "PC1 (8% of variance)"
    labels: tuple[str, ...] = ()  # a name per chunk, for the score panel

    @property
    def k(self) -> int:
        return len(self.top)

    @property
    def near_not_top(self) -> np.ndarray:
        """Rows the map puts near the question that retrieval did not pick (drawn as squares)."""
        return np.array([r for r in self.near if r not in set(self.top.tolist())], dtype=np.int64)

    @property
    def leaked(self) -> np.ndarray:
        """Retrieved rows the asker may not read: only when the filter came after scoring."""
        return self.top[~self.readable[self.top]]

    @property
    def agreement(self) -> int:
        """How many of the true top-k are also among the k nearest on the map."""
        return len(set(self.top.tolist()) & set(self.near.tolist()))


def retrieval_map(
    vectors: ArrayLike,
    query: ArrayLike,
    k: int,
    *,
    categories: Sequence[str],
    readable: ArrayLike | None = None,
    projection: Projection | None = None,
    labels: Sequence[str] = (),
    filter_first: bool = True,
) -> RetrievalMap:
    """Project chunks and a question to 2D and find what to mark.

    Access comes first: only `readable` rows are scored (cosine, full dimension) and
    only they can be "near on the map". `projection` defaults to PCA fitted on `vectors`.
    `filter_first=False` draws the mistake instead: top-k over every row, so the rings
    can land on chunks the asker may not read (`RetrievalMap.leaked`).
    """
    rows = np.asarray(vectors, dtype=np.float32)
    n = rows.shape[0]
    if len(categories) != n:
        raise ValueError(f"categories has {len(categories)} entries for {n} vectors")
    allowed = np.ones(n, bool) if readable is None else np.asarray(readable, dtype=bool)
    if allowed.shape != (n,):
        raise ValueError(f"readable must have one flag per vector (got shape {allowed.shape})")
    projection = projection or fit_pca(rows)
    xy = projection.transform(rows)
    star = projection.transform(np.asarray(query, dtype=np.float32)[None, :])[0]
    eligible = np.flatnonzero(allowed)
    top, scores = np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
    scored = eligible if filter_first else np.arange(n)
    if scored.size:
        picked, scores = top_k(query, rows[scored], k)
        top = scored[picked]
    return RetrievalMap(
        xy=xy,
        categories=tuple(categories),
        readable=allowed,
        question_xy=star,
        top=np.asarray(top, dtype=np.int64),
        scores=np.asarray(scores, dtype=np.float32),
        near=_nearest_on_map(xy, star, eligible, len(top)),
        axis_labels=(projection.axis_label(0), projection.axis_label(1)),
        labels=tuple(labels),
    )


def _nearest_on_map(xy: np.ndarray, star: np.ndarray, rows: np.ndarray, count: int) -> np.ndarray:
    """The `count` of `rows` closest to the star in 2D, nearest first (ties by lower row)."""
    distance = np.linalg.norm(xy[rows] - star, axis=1)
    return rows[np.argsort(distance, kind="stable")[:count]].astype(np.int64)


def on_tsne(
    m: RetrievalMap, vectors: ArrayLike, query: ArrayLike, *, seed: int = 0
) -> RetrievalMap:
    """The same retrieval (rings, scores, access) drawn on a t-SNE map instead of PCA.

    t-SNE is fitted on the chunks and the question together (it cannot place a point
    on an existing map), so the map is redrawn for every question, and its clusters
    and gaps change with the seed.
    """
    points = np.vstack([np.asarray(vectors, dtype=np.float32), np.asarray(query, np.float32)])
    xy = tsne_2d(points, seed=seed)
    near = _nearest_on_map(xy[:-1], xy[-1], np.flatnonzero(m.readable), m.k)
    return replace(
        m,
        xy=xy[:-1],
        question_xy=xy[-1],
        near=near,
        axis_labels=(f"t-SNE 1 (seed {seed})", "t-SNE 2"),
    )


# --- drawing --------------------------------------------------------------------------------


def _figure(ncols: int = 1, *, width_ratios: Sequence[float] | None = None) -> tuple[Any, Any]:
    from matplotlib.figure import Figure

    fig = Figure(figsize=FIGSIZE, dpi=DPI, layout="constrained", facecolor="white")
    axes = fig.subplots(1, ncols, width_ratios=width_ratios)
    for ax in np.atleast_1d(axes):
        ax.set_facecolor("white")
    return fig, axes


def colour_map(categories: Sequence[str]) -> dict[str, str]:
    """One colour per category, in sorted order: the same category, the same colour.

    >>> colour_map(["b", "a", "b"])
    {'a': '#E69F00', 'b': '#56B4E9'}
    """
    return {c: OKABE_ITO[i % len(OKABE_ITO)] for i, c in enumerate(sorted(set(categories)))}


def plot_retrieval_map(m: RetrievalMap, *, title: str = "", limits: Limits | None = None) -> Any:
    """The honest retrieval map, with a panel of the real cosine scores beside it.

    `limits` ((x0, x1), (y0, y1)) fixes the axes, so maps of different questions compare.
    """
    fig, (ax, bars) = _figure(2, width_ratios=(2.6, 1))
    colours = colour_map(m.categories)  # over all chunks: a category keeps its colour
    for category, colour in colours.items():
        rows = [i for i, c in enumerate(m.categories) if c == category and m.readable[i]]
        if rows:
            ax.scatter(*m.xy[rows].T, s=14, color=colour, alpha=0.8, label=category)
    hidden = np.flatnonzero(~m.readable)
    if hidden.size:
        # facecolors="none" with edgecolors (and no c=) draws hollow markers.
        ax.scatter(
            *m.xy[hidden].T,
            s=14,
            facecolors="none",
            edgecolors=HIDDEN_COLOUR,
            linewidths=0.8,
            label="hidden by access: the asker may not read it",
        )
    if m.leaked.size:
        ax.scatter(
            *m.xy[m.leaked].T,
            s=80,
            marker="x",
            color=LEAK_COLOUR,
            zorder=4,
            label="leaked: retrieved, not readable",
        )
    if m.near_not_top.size:
        ax.scatter(
            *m.xy[m.near_not_top].T,
            s=70,
            marker="s",
            facecolors="none",
            edgecolors="#555555",
            linewidths=1.2,
            label="near on the map, not retrieved",
        )
    for rank, row in enumerate(m.top, start=1):
        ax.plot(*np.stack([m.question_xy, m.xy[row]]).T, color=QUESTION_COLOUR, lw=0.7, alpha=0.6)
        ax.annotate(str(rank), m.xy[row], xytext=(5, 4), textcoords="offset points", fontsize=8)
    if m.top.size:
        ax.scatter(
            *m.xy[m.top].T,
            s=90,
            facecolors="none",
            edgecolors=QUESTION_COLOUR,
            linewidths=1.4,
            label=f"retrieved (true top-{m.k})",
        )
    ax.scatter(*m.question_xy, s=260, marker="*", color=QUESTION_COLOUR, label="question", zorder=5)
    ax.set_xlabel(m.axis_labels[0])
    ax.set_ylabel(m.axis_labels[1])
    if limits is not None:
        ax.set_xlim(*limits[0])
        ax.set_ylim(*limits[1])
    # Below the figure, so it never hides a point; one fixed place for every question.
    fig.legend(
        *ax.get_legend_handles_labels(),
        loc="outside lower center",
        ncol=3,
        fontsize=7,
        frameon=False,
    )
    default = f"{m.agreement} of the top-{m.k} are also nearest on this map"
    ax.set_title(title or default, fontsize=10)
    _score_panel(bars, m)
    return fig


def _score_panel(ax: Any, m: RetrievalMap) -> None:
    """The real cosine scores of the top-k, best at the top, numbers written beside the bars."""
    names = [m.labels[r] if m.labels else f"row {r}" for r in m.top]
    y = np.arange(len(names))[::-1]
    ax.barh(y, m.scores, color="#999999")
    for yi, score in zip(y, m.scores):
        ax.text(float(score), yi, f" {score:.2f}", va="center", fontsize=8)
    ax.set_yticks(y, [f"{i + 1}. {_short(n, 22)}" for i, n in enumerate(names)], fontsize=7)
    ax.set_xlim(0, 1.2)
    ax.set_xticks([0, 0.5, 1])
    ax.set_xlabel("cosine (full dimension)", fontsize=8)
    ax.set_title("what retrieval saw", fontsize=9)


def _short(text: str, width: int) -> str:
    """`text` cut to `width` characters, keeping its end (a chunk id's "#n" matters most)."""
    return text if len(text) <= width else "…" + text[-(width - 1) :]


Limits = tuple[tuple[float, float], tuple[float, float]]


def map_limits(xy: np.ndarray, margin: float = 0.05) -> Limits:
    """Axis limits covering every point of `xy`, with a margin: fixed for an explorer."""
    low, high = xy.min(axis=0), xy.max(axis=0)
    pad = (high - low) * margin
    return (float(low[0] - pad[0]), float(high[0] + pad[0])), (
        float(low[1] - pad[1]),
        float(high[1] + pad[1]),
    )


def plot_heatmap(
    vectors: ArrayLike,
    labels: Sequence[str],
    *,
    title: str = "cosine similarity",
    vmin: float = 0.0,
    vmax: float = 1.0,
) -> Any:
    """Cosine of every pair of rows, the diagonal (always 1) left blank, values written in.

    Keep `vmin`/`vmax` the same across a notebook, so colours mean the same thing.
    """
    unit = normalise(vectors).astype(np.float64)
    if len(labels) != unit.shape[0]:
        raise ValueError(f"labels has {len(labels)} entries for {unit.shape[0]} vectors")
    sims = unit @ unit.T
    masked = np.ma.masked_array(sims, mask=np.eye(len(sims), dtype=bool))
    fig, ax = _figure()
    image = ax.imshow(masked, cmap="viridis", vmin=vmin, vmax=vmax)
    for i in range(len(sims)):
        for j in range(len(sims)):
            if i != j:
                light = sims[i, j] < (vmin + vmax) / 2
                ax.text(
                    j,
                    i,
                    f"{sims[i, j]:.2f}",
                    ha="center",
                    va="center",
                    fontsize=7,
                    color="white" if light else "black",
                )
    short = [_short(label, 30) for label in labels]
    ax.set_xticks(range(len(short)), short, rotation=45, ha="right", fontsize=7)
    ax.set_yticks(range(len(short)), short, fontsize=7)
    fig.colorbar(image, ax=ax, shrink=0.8)
    ax.set_title(title, fontsize=10)
    return fig


def plot_recall_curves(
    curves: dict[str, np.ndarray], ks: Sequence[int], *, title: str = "recall@k"
) -> Any:
    """recall@k against k: a thin line per question, the mean bold, one colour per method.

    `curves[name]` is a (questions, len(ks)) array of recall values.
    """
    fig, ax = _figure()
    for (name, values), colour in zip(sorted(curves.items()), OKABE_ITO):
        values = np.asarray(values, dtype=np.float64)
        if values.ndim != 2 or values.shape[1] != len(ks):
            raise ValueError(f"curves[{name!r}] must have shape (questions, {len(ks)})")
        for row in values:
            ax.plot(ks, row, color=colour, lw=0.5, alpha=0.15)
        ax.plot(
            ks,
            values.mean(axis=0),
            color=colour,
            lw=2.5,
            marker="o",
            label=f"{name} (mean {values.mean(axis=0)[-1]:.2f} at k={ks[-1]})",
        )
    ax.set_xlabel("k (documents retrieved)")
    ax.set_ylabel("recall@k")
    ax.set_ylim(-0.02, 1.02)
    ax.set_xticks(list(ks))
    ax.legend(loc="lower right", fontsize=8)
    ax.set_title(title, fontsize=10)
    return fig


def plot_lines(
    x: ArrayLike,
    lines: dict[str, ArrayLike],
    *,
    xlabel: str = "",
    ylabel: str = "",
    title: str = "",
) -> Any:
    """One line per entry of `lines` (label -> y values over `x`), in a fixed colour order."""
    fig, ax = _figure()
    for (label, y), colour in zip(lines.items(), OKABE_ITO):
        y = np.asarray(y, dtype=np.float64)
        if y.shape != np.shape(x):
            raise ValueError(f"lines[{label!r}] has shape {y.shape}, x has {np.shape(x)}")
        ax.plot(x, y, color=colour, lw=2, label=label)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.legend(loc="best", fontsize=8)  # "best" depends only on the data: still deterministic
    ax.set_title(title, fontsize=10)
    return fig


def plot_bars(table: dict[str, dict[str, float]], *, title: str = "", ylabel: str = "") -> Any:
    """Grouped bars: one group per metric, one bar per row of `table` (e.g. per embedder).

    `table[row][metric]` is a value in [0, 1]; the value is written on each bar.
    """
    rows = list(table)
    metrics = list(table[rows[0]]) if rows else []
    fig, ax = _figure()
    width = 0.8 / max(len(rows), 1)
    for i, (row, colour) in enumerate(zip(rows, OKABE_ITO)):
        if list(table[row]) != metrics:
            raise ValueError(f"table[{row!r}] must have the metrics {metrics}")
        x = np.arange(len(metrics)) + (i - (len(rows) - 1) / 2) * width
        values = [table[row][m] for m in metrics]
        ax.bar(x, values, width, color=colour, label=row)
        for xi, v in zip(x, values):
            ax.text(xi, v + 0.01, f"{v:.2f}", ha="center", fontsize=7)
    ax.set_xticks(np.arange(len(metrics)), metrics)
    ax.set_ylim(0, 1.1)
    ax.set_ylabel(ylabel)
    ax.legend(loc="upper right", fontsize=8)
    ax.set_title(title, fontsize=10)
    return fig


def show(fig: Any) -> None:
    """Put `fig` in the notebook as a PNG (nothing else: no text to compare, no SVG)."""
    import io

    from IPython.display import display

    buffer = io.BytesIO()
    fig.savefig(
        buffer,
        format="png",
        dpi=DPI,
        facecolor="white",
        bbox_inches="tight",
        metadata={"Software": None},
    )
    display({"image/png": buffer.getvalue()}, raw=True)
