"""raglab.workbook.projection: PCA deterministic, sign-fixed and equal to scikit-learn's; t-SNE's properties."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from raglab.retrieve.vectors import normalise
from raglab.workbook.projection import fit_pca, tsne_2d


def cloud(n: int = 60, dim: int = 16, seed: int = 0) -> np.ndarray:
    """Unit vectors in three clear groups."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(3, dim)) * 3
    return normalise(centres[np.arange(n) % 3] + rng.normal(size=(n, dim)))


def svd_reference(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The textbook PCA in float64: the first two right singular vectors of the centred data."""
    x = x.astype(np.float64)
    centred = x - x.mean(axis=0)
    _, singular, vt = np.linalg.svd(centred, full_matrices=False)
    return vt[:2], singular[:2] ** 2 / (singular**2).sum()


def test_pca_of_points_on_a_line_keeps_all_the_variance_on_pc1():
    p = fit_pca([[0.0, 0.0], [2.0, 1.0], [4.0, 2.0]])
    assert p.explained[0] == pytest.approx(1.0) and p.explained[1] == pytest.approx(0.0)
    np.testing.assert_allclose(p.transform([[4.0, 2.0]]), [[np.sqrt(5), 0.0]], atol=1e-12)


@pytest.mark.parametrize(("n", "dim"), [(60, 16), (10, 40), (500, 384)])
def test_pca_equals_the_svd_of_the_data_many_rows_or_few(n, dim):
    # Many rows go through the covariance matrix, few through the SVD: the same axes,
    # to float32 rounding for float32 vectors and to float64 rounding otherwise.
    x = cloud(n, dim, seed=n)
    for data, tolerance in ((x, 1e-5), (x.astype(np.float64), 1e-9)):
        p = fit_pca(data)
        axes, shares = svd_reference(data)
        for ours, theirs in zip(p.axes, axes):
            np.testing.assert_allclose(ours, np.sign(ours @ theirs) * theirs, atol=tolerance)
        np.testing.assert_allclose(p.explained, shares, atol=tolerance)


def test_pca_matches_scikit_learn_up_to_sign():
    from sklearn.decomposition import PCA

    x = cloud()
    ours = fit_pca(x).transform(x)
    theirs = PCA(n_components=2).fit_transform(x)
    for i in range(2):
        sign = np.sign(ours[0, i] * theirs[0, i])
        np.testing.assert_allclose(ours[:, i], sign * theirs[:, i], atol=1e-5)
    assert fit_pca(x).explained == pytest.approx(
        tuple(PCA(n_components=2).fit(x).explained_variance_ratio_), abs=1e-6
    )


def test_pca_is_deterministic_and_its_sign_does_not_follow_the_data_sign():
    x = cloud()
    first, again = fit_pca(x), fit_pca(x.copy())
    assert np.array_equal(first.transform(x), again.transform(x))
    # The rule: each axis's largest loading is positive, whatever the solver returned.
    for axis in first.axes:
        assert axis[np.argmax(np.abs(axis))] > 0
    # Flipping a coordinate of every vector gives a mirror image, never a random flip.
    flipped = x.copy()
    flipped[:, 0] *= -1
    np.testing.assert_allclose(
        np.abs(fit_pca(flipped).transform(flipped)), np.abs(first.transform(x)), atol=1e-9
    )


def test_pca_of_one_dimension_or_identical_rows():
    p = fit_pca([[1.0], [3.0]])
    np.testing.assert_array_equal(p.axes, [[1.0], [0.0]])
    assert p.explained == (1.0, 0.0)
    same = fit_pca([[1.0, 2.0, 3.0]] * 4)
    assert same.explained == (0.0, 0.0)
    np.testing.assert_allclose(same.transform([[1.0, 2.0, 3.0]]), [[0.0, 0.0]], atol=1e-12)


@pytest.mark.parametrize("bad", [[[1.0, 2.0]], [1.0, 2.0, 3.0]])
def test_pca_refuses_too_few_rows(bad):
    with pytest.raises(ValueError, match="at least 2 rows"):
        fit_pca(bad)


def test_tsne_properties_only():
    x = cloud(n=45)
    xy = tsne_2d(x, seed=0)
    assert xy.shape == (45, 2) and np.isfinite(xy).all()
    assert np.array_equal(xy, tsne_2d(x, seed=0))  # seeded: the same run twice
    # The three groups stay apart: each point's nearest neighbour on the map is in its group.
    d = np.linalg.norm(xy[:, None] - xy[None], axis=2)
    np.fill_diagonal(d, np.inf)
    assert (np.argmin(d, axis=1) % 3 == np.arange(45) % 3).mean() > 0.9


def test_projection_imports_neither_matplotlib_nor_scikit_learn():
    code = "import sys, raglab.workbook.projection; print('matplotlib' in sys.modules, 'sklearn' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


def test_the_iteration_finds_the_same_axes_as_the_full_eigendecomposition(monkeypatch):
    import raglab.workbook.projection as projection

    x = cloud(2000, 384, seed=5).astype(np.float64)
    iterated = fit_pca(x)
    monkeypatch.setattr(projection, "ROUNDS", 0)  # no rounds: straight to np.linalg.eigh
    full = fit_pca(x)
    np.testing.assert_allclose(iterated.axes, full.axes, atol=1e-9)
    np.testing.assert_allclose(iterated.explained, full.explained, atol=1e-12)
