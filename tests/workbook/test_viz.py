"""raglab.workbook.viz: the marks right, figures drawn (Agg); projections in test_projection.py."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pytest
from matplotlib.figure import Figure

from raglab.retrieve.vectors import normalise
from raglab.workbook import viz


def cloud(n: int = 60, dim: int = 16, seed: int = 0) -> np.ndarray:
    """Unit vectors in three clear groups."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(3, dim)) * 3
    return normalise(centres[np.arange(n) % 3] + rng.normal(size=(n, dim)))


# --- projections (tested in test_projection.py) ---------------------------------------------


def test_the_projections_stay_importable_from_viz():
    from raglab.workbook import projection

    assert viz.fit_pca is projection.fit_pca and viz.tsne_2d is projection.tsne_2d
    assert viz.Projection is projection.Projection


# --- the retrieval map's marks ---------------------------------------------------------------


def test_top_k_is_computed_in_full_dimension_among_readable_rows_only():
    x = cloud()
    query = x[0] + 0.01
    readable = np.arange(len(x)) % 2 == 1  # the even rows, row 0 included, are hidden
    m = viz.retrieval_map(x, query, 4, categories=["a"] * len(x), readable=readable)
    scores = normalise(x) @ normalise(query)
    expected = [r for r in np.argsort(-scores, kind="stable") if readable[r]][:4]
    assert m.top.tolist() == expected
    np.testing.assert_allclose(m.scores, scores[expected], atol=1e-6)
    assert not set(m.top) & set(np.flatnonzero(~readable))
    assert not set(m.near) & set(np.flatnonzero(~readable))
    assert m.readable.tolist() == readable.tolist()


def test_filtering_after_scoring_is_drawn_as_a_leak():
    x = cloud()
    query = x[0] + 0.01
    readable = np.arange(len(x)) % 2 == 1  # row 0, the question's twin, is hidden
    first = viz.retrieval_map(x, query, 4, categories=["a"] * len(x), readable=readable)
    late = viz.retrieval_map(
        x, query, 4, categories=["a"] * len(x), readable=readable, filter_first=False
    )
    scores = normalise(x) @ normalise(query)
    assert late.top.tolist() == np.argsort(-scores, kind="stable")[:4].tolist()
    assert late.leaked.tolist() == [r for r in late.top if not readable[r]]
    assert 0 in late.leaked and first.leaked.size == 0
    fig = drawn(viz.plot_retrieval_map(late))
    crosses = [c for c in fig.axes[0].collections if c.get_label().startswith("leaked")]
    assert len(crosses) == 1 and len(crosses[0].get_offsets()) == late.leaked.size


def test_near_not_top_lists_map_neighbours_that_were_not_retrieved():
    # Points placed by hand: the question points along the 4th axis, which the map drops.
    # Row 1 is its true top-1 (the only row with a 4th coordinate) but lies far out on the
    # map; row 2 has cosine 0 with the question yet sits right where the star lands.
    x = np.array(
        [
            [1, 0, 0, 0],
            [0.9, 0, 0, 0.44],
            [0.02, 0.02, 0, 0],
            [-1, 0, 0, 0],
            [0, 1, 0, 0],
            [0, -1, 0, 0],
        ]
    )
    query = np.array([0.0, 0.0, 0.0, 1.0])
    m = viz.retrieval_map(x, query, 1, categories=list("abcdef"))
    assert m.top.tolist() == [1]
    assert m.near.tolist() == [2] and m.near_not_top.tolist() == [2]
    assert m.agreement == 0


def test_on_tsne_keeps_what_retrieval_found_and_moves_only_the_picture():
    x = cloud(n=45)
    readable = np.arange(45) % 5 != 0
    pca = viz.retrieval_map(x, x[2], 4, categories=["a"] * 45, readable=readable)
    tsne = viz.on_tsne(pca, x, x[2], seed=0)
    assert tsne.top.tolist() == pca.top.tolist() and tsne.scores.tolist() == pca.scores.tolist()
    assert tsne.readable.tolist() == readable.tolist()
    assert tsne.xy.shape == (45, 2) and tsne.axis_labels[0] == "t-SNE 1 (seed 0)"
    assert all(readable[r] for r in tsne.near) and len(tsne.near) == 4
    d = np.linalg.norm(tsne.xy - tsne.question_xy, axis=1)
    assert np.all(d[tsne.near].max() <= d[readable & ~np.isin(np.arange(45), tsne.near)])
    assert pca.axis_labels[0].startswith("PC1 (")


def test_retrieval_map_with_nothing_readable_marks_nothing():
    x = cloud(n=9)
    m = viz.retrieval_map(x, x[0], 3, categories=["a"] * 9, readable=[False] * 9)
    assert m.top.size == 0 and m.near.size == 0 and m.agreement == 0


def test_retrieval_map_refuses_mismatched_inputs():
    x = cloud(n=9)
    with pytest.raises(ValueError, match="categories has 2 entries for 9 vectors"):
        viz.retrieval_map(x, x[0], 3, categories=["a", "b"])
    with pytest.raises(ValueError, match="one flag per vector"):
        viz.retrieval_map(x, x[0], 3, categories=["a"] * 9, readable=[True])


def test_colours_are_fixed_per_category():
    assert viz.colour_map(["globex", "acme", "globex"]) == viz.colour_map(["acme", "globex"])


# --- figures --------------------------------------------------------------------------------


def drawn(fig) -> Figure:
    assert isinstance(fig, Figure)
    fig.canvas.draw()  # the Agg canvas renders without a display
    return fig


def test_retrieval_map_figure_draws_hollow_hidden_points_and_a_score_panel():
    x = cloud()
    readable = np.arange(len(x)) % 3 != 0
    m = viz.retrieval_map(
        x,
        x[1],
        5,
        categories=["acme", "globex"] * 30,
        readable=readable,
        labels=[f"doc{i}" for i in range(60)],
    )
    fig = drawn(viz.plot_retrieval_map(m, limits=viz.map_limits(m.xy)))
    ax, bars = fig.axes
    hidden = [c for c in ax.collections if c.get_label().startswith("hidden by access")]
    assert "question" in [t.get_text() for t in fig.legends[0].texts]
    assert len(hidden) == 1 and len(hidden[0].get_offsets()) == (~readable).sum()
    assert hidden[0].get_facecolors().size == 0  # hollow
    assert ax.get_title() == f"{m.agreement} of the top-5 are also nearest on this map"
    assert len(bars.patches) == 5
    assert fig.get_facecolor()[:3] == (1.0, 1.0, 1.0)


def test_heatmap_and_recall_curves_draw():
    x = cloud(n=5)
    drawn(viz.plot_heatmap(x, list("abcde")))
    curves = {"bm25": np.array([[0.0, 1.0], [1.0, 1.0]]), "dense": np.array([[0.5, 1.0]] * 2)}
    fig = drawn(viz.plot_recall_curves(curves, [1, 5]))
    assert "bm25 (mean 1.00 at k=5)" in [t.get_text() for t in fig.axes[0].get_legend().texts]
    with pytest.raises(ValueError, match="shape"):
        viz.plot_recall_curves({"x": np.zeros((2, 3))}, [1, 5])


def test_bars_draw_one_bar_per_row_and_metric():
    table = {"hashing": {"recall@5": 0.5, "mrr": 0.4}, "minilm": {"recall@5": 0.9, "mrr": 0.8}}
    fig = drawn(viz.plot_bars(table))
    assert len(fig.axes[0].patches) == 4
    with pytest.raises(ValueError, match="must have the metrics"):
        viz.plot_bars({"a": {"x": 1.0}, "b": {"y": 1.0}})


def test_lines_draw_one_line_per_label():
    fig = drawn(viz.plot_lines([0, 1, 2], {"k1=0.5": [0, 1, 2], "k1=2": [0, 2, 4]}))
    assert [line.get_label() for line in fig.axes[0].lines] == ["k1=0.5", "k1=2"]
    with pytest.raises(ValueError, match="has shape"):
        viz.plot_lines([0, 1], {"bad": [1, 2, 3]})


def test_show_emits_png_only(monkeypatch):
    shown = []
    monkeypatch.setattr("IPython.display.display", lambda obj, raw: shown.append(obj))
    viz.show(viz.plot_heatmap(cloud(n=3), list("abc")))
    assert list(shown[0]) == ["image/png"] and shown[0]["image/png"][:4] == b"\x89PNG"
