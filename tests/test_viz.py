"""raglab.viz: projections deterministic and sign-fixed, the marks right, figures drawn (Agg)."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pytest
from matplotlib.figure import Figure

from raglab import viz
from raglab.vectors import normalise


def cloud(n: int = 60, dim: int = 16, seed: int = 0) -> np.ndarray:
    """Unit vectors in three clear groups."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(3, dim)) * 3
    return normalise(centres[np.arange(n) % 3] + rng.normal(size=(n, dim)))


# --- PCA ------------------------------------------------------------------------------------


def test_pca_of_points_on_a_line_keeps_all_the_variance_on_pc1():
    p = viz.fit_pca([[0.0, 0.0], [2.0, 1.0], [4.0, 2.0]])
    assert p.explained[0] == pytest.approx(1.0) and p.explained[1] == pytest.approx(0.0)
    np.testing.assert_allclose(p.transform([[4.0, 2.0]]), [[np.sqrt(5), 0.0]], atol=1e-12)


def test_pca_matches_scikit_learn_up_to_sign():
    from sklearn.decomposition import PCA

    x = cloud()
    ours = viz.fit_pca(x).transform(x)
    theirs = PCA(n_components=2).fit_transform(x)
    for i in range(2):
        sign = np.sign(ours[0, i] * theirs[0, i])
        np.testing.assert_allclose(ours[:, i], sign * theirs[:, i], atol=1e-5)
    assert viz.fit_pca(x).explained == pytest.approx(
        tuple(PCA(n_components=2).fit(x).explained_variance_ratio_), abs=1e-6
    )


def test_pca_is_deterministic_and_its_sign_does_not_follow_the_data_sign():
    x = cloud()
    first, again = viz.fit_pca(x), viz.fit_pca(x.copy())
    assert np.array_equal(first.transform(x), again.transform(x))
    # The rule: each axis's largest loading is positive, whatever the SVD returned.
    for axis in first.axes:
        assert axis[np.argmax(np.abs(axis))] > 0
    # Flipping a coordinate of every vector gives a mirror image, never a random flip.
    flipped = x.copy()
    flipped[:, 0] *= -1
    np.testing.assert_allclose(
        np.abs(viz.fit_pca(flipped).transform(flipped)), np.abs(first.transform(x)), atol=1e-9
    )


def test_pca_refuses_too_few_rows():
    with pytest.raises(ValueError, match="at least 2 rows"):
        viz.fit_pca([[1.0, 2.0]])


def test_tsne_properties_only():
    x = cloud(n=45)
    xy = viz.tsne_2d(x, seed=0)
    assert xy.shape == (45, 2) and np.isfinite(xy).all()
    assert np.array_equal(xy, viz.tsne_2d(x, seed=0))  # seeded: the same run twice
    # The three groups stay apart: each point's nearest neighbour on the map is in its group.
    d = np.linalg.norm(xy[:, None] - xy[None], axis=2)
    np.fill_diagonal(d, np.inf)
    assert (np.argmin(d, axis=1) % 3 == np.arange(45) % 3).mean() > 0.9


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
