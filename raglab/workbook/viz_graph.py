"""Notebook 13's picture of GraphRAG: a reader's entity graph, its communities coloured.

`graph_picture(view)` computes everything the figure shows (testable without drawing):
the largest communities, each on its own small circle, the circles around a large one, so
the same graph always gives the same picture (no force layout, no seed). `plot_reader_graphs`
draws one panel per reader: a reader of one tenant sees only their own graph.
matplotlib is imported inside the function that draws.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from raglab.graph.reader import ReaderGraph
from raglab.workbook.viz import DPI, OKABE_ITO

__all__ = ["GraphPicture", "graph_picture", "plot_reader_graphs"]

PANEL_INCHES = 4.6
"""Each reader's panel is square: a graph needs room for its names."""


@dataclass(frozen=True, slots=True)
class GraphPicture:
    """What one panel shows: entity -> (x, y), entity -> colour, the labelled entities,
    the edges between shown entities, and the documents the graph was built from."""

    positions: dict[str, tuple[float, float]]
    colours: dict[str, str]
    labels: dict[str, str]
    edges: list[tuple[str, str]]
    doc_ids: list[str]


def graph_picture(view: ReaderGraph, *, communities: int = 7, labelled: int = 2) -> GraphPicture:
    """The largest `communities` of `view`, one colour each, `labelled` names per community."""
    shown = view.communities[:communities]
    positions, colours, labels = {}, {}, {}
    for i, community in enumerate(shown):
        angle = 2 * math.pi * i / max(len(shown), 1)
        cx, cy = math.cos(angle), math.sin(angle)
        n = len(community.entities)
        radius = 0.12 + 0.03 * n
        for j, key in enumerate(community.entities):
            a = 2 * math.pi * j / n
            positions[key] = (
                round(cx + radius * math.cos(a), 6),
                round(cy + radius * math.sin(a), 6),
            )
            colours[key] = OKABE_ITO[i % len(OKABE_ITO)]
        for key in community.entities[:labelled]:
            labels[key] = view.graph.entities[key].name
    edges = [pair for pair in view.graph.relations if pair[0] in positions and pair[1] in positions]
    return GraphPicture(positions, colours, labels, edges, view.doc_ids())


def plot_reader_graphs(views: Sequence[ReaderGraph], titles: Sequence[str]) -> Any:
    """One panel per reader: their graph's largest communities, coloured, with a few names."""
    if len(views) != len(titles):
        raise ValueError(f"one title per view (got {len(views)} views, {len(titles)} titles)")
    from matplotlib.figure import Figure

    fig = Figure(figsize=(PANEL_INCHES * len(views), PANEL_INCHES), dpi=DPI, layout="constrained")
    axes = fig.subplots(1, len(views), squeeze=False)[0]
    for ax, view, title in zip(axes, views, titles):
        picture = graph_picture(view)
        for a, b in picture.edges:
            (x0, y0), (x1, y1) = picture.positions[a], picture.positions[b]
            ax.plot([x0, x1], [y0, y1], color="#c8c8c8", linewidth=0.6, zorder=1)
        keys = sorted(picture.positions)
        ax.scatter(
            [picture.positions[k][0] for k in keys],
            [picture.positions[k][1] for k in keys],
            c=[picture.colours[k] for k in keys],
            s=28,
            edgecolors="white",
            linewidths=0.5,
            zorder=2,
        )
        for key, name in sorted(picture.labels.items()):
            x, y = picture.positions[key]
            ax.annotate(name, (x, y), fontsize=7, xytext=(3, 3), textcoords="offset points")
        ax.set_title(
            f"{title}\n{len(picture.doc_ids)} documents, {len(view.communities)} communities",
            fontsize=9,
        )
        ax.set_xlim(-1.7, 1.7)
        ax.set_ylim(-1.6, 1.6)
        ax.set_aspect("equal")
        ax.axis("off")
    return fig
