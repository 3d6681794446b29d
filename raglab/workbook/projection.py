"""Vectors to 2D map coordinates: PCA (deterministic, sign-fixed) and a t-SNE wrapper.

The maths behind the workbook's maps, apart from the drawing (`raglab.workbook.viz`): no
matplotlib here. PCA is hand-written with numpy: the two directions along which the
vectors vary most, found as the top eigenvectors of their covariance matrix, which for
many vectors of a few hundred dimensions is a small matrix (dim x dim) and fast to
decompose (scikit-learn's PCA takes the same route for such data). t-SNE comes from scikit-learn, imported when used.

>>> p = fit_pca([[0.0, 0.0], [2.0, 1.0], [4.0, 2.0]])
>>> p.transform([[2.0, 1.0]]).round(6).tolist()
[[0.0, 0.0]]
>>> [round(share, 6) for share in p.explained]
[1.0, 0.0]
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

__all__ = ["Projection", "fit_pca", "tsne_2d"]


@dataclass(frozen=True, slots=True, eq=False)
class Projection:
    """A fitted 2D PCA: `transform` puts new vectors (questions, edited chunks) on the same map.

    Fitted once on the corpus and kept fixed, so every question lands on one map.
    """

    mean: np.ndarray  # (dim,)
    axes: np.ndarray  # (2, dim): the two directions of greatest variance, unit length
    explained: tuple[float, float]  # share of the total variance along each axis

    def transform(self, vectors: ArrayLike) -> np.ndarray:
        """(n, 2) map coordinates of `vectors` (n, dim)."""
        x = np.atleast_2d(np.asarray(vectors, dtype=np.float64))
        return (x - self.mean) @ self.axes.T

    def axis_label(self, i: int) -> str:
        return f"PC{i + 1} ({self.explained[i]:.0%} of variance)"


def fit_pca(vectors: ArrayLike) -> Projection:
    """PCA to two axes: deterministic, with a fixed sign per axis.

    An axis and its negative are equally good, and eigen- and SVD routines pick either;
    so each axis is turned so that its largest loading (in absolute value) is positive.
    The same vectors then give the same map on every machine and library version.
    float32 vectors (embeddings) are centred and multiplied in float32, like
    scikit-learn does, which is plenty for a picture; anything else in float64.
    """
    x = np.asarray(vectors)
    x = x.astype(np.float32 if x.dtype == np.float32 else np.float64, copy=False)
    if x.ndim != 2 or x.shape[0] < 2:
        raise ValueError(f"fit_pca needs a 2-D array of at least 2 rows (got shape {x.shape})")
    mean = x.mean(axis=0)
    top, variances, total = _top_two_axes(x - mean)
    axes = np.zeros((2, x.shape[1]))
    axes[: len(top)] = top
    for axis in axes:
        if axis[np.argmax(np.abs(axis))] < 0:
            axis *= -1
    shares = [float(v / total) if total > 0 else 0.0 for v in variances] + [0.0, 0.0]
    return Projection(mean.astype(np.float64), axes, (shares[0], shares[1]))


def _top_two_axes(centred: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
    """Up to two unit directions of greatest variance (rows), the variance along each,
    and the total variance (the sum over all directions).

    Many rows (n >= dim): the eigenvectors of the dim x dim matrix `XᵀX` with the largest
    eigenvalues; forming it is one matrix product, and it is small. Few rows: the SVD of
    the n x dim data itself is the smaller job. Both give the same axes (up to sign).
    """
    n, dim = centred.shape
    kept = min(2, n, dim)
    if n >= dim:
        gram = (centred.T @ centred).astype(np.float64)
        axes, variances = _top_eigenvectors(gram, kept)
        return axes, np.maximum(variances, 0.0), float(np.trace(gram))
    _, singular, vt = np.linalg.svd(centred.astype(np.float64), full_matrices=False)
    return vt[:kept], singular[:kept] ** 2, float(np.sum(singular**2))


# Orthogonal iteration: vectors carried along (a few more than wanted converge faster),
# the residual at which an eigenpair counts as found (relative to the largest eigenvalue),
# and the rounds allowed before falling back to a full eigendecomposition.
BLOCK, RESIDUAL, ROUNDS = 10, 1e-10, 300


def _top_eigenvectors(gram: np.ndarray, count: int) -> tuple[np.ndarray, np.ndarray]:
    """The `count` eigenvectors (rows) of the symmetric matrix `gram` with the largest
    eigenvalues, and those eigenvalues, largest first.

    Orthogonal iteration (Golub & Van Loan, "Matrix Computations", 4th ed., §8.2.4):
    multiplying a block of vectors by `gram` again and again turns it towards the top
    eigenvectors; each round solves the small problem inside the block (Rayleigh-Ritz)
    and stops once the wanted pairs satisfy gram·v = λ·v to `RESIDUAL`. Far cheaper than
    all `dim` eigenvectors (`np.linalg.eigh`), which remain the fallback when eigenvalues
    are too close for the iteration to settle.
    """
    dim = gram.shape[0]
    width = min(dim, max(BLOCK, count))
    start = np.random.default_rng(0).standard_normal((dim, width))  # seeded: deterministic
    basis = np.linalg.qr(start)[0]
    scale = max(float(np.abs(gram).max()), np.finfo(np.float64).tiny)
    for _ in range(ROUNDS if width < dim else 0):
        basis = np.linalg.qr(gram @ basis)[0]
        values, inner = np.linalg.eigh(basis.T @ gram @ basis)
        values, vectors = values[::-1][:count], basis @ inner[:, ::-1][:, :count]
        residual = np.linalg.norm(gram @ vectors - vectors * values, axis=0)
        if (residual <= RESIDUAL * scale).all():
            return vectors.T, values
    values, vectors = np.linalg.eigh(gram)  # ascending eigenvalues
    return vectors[:, ::-1][:, :count].T, values[::-1][:count]


def tsne_2d(vectors: ArrayLike, *, seed: int = 0, perplexity: float = 30.0) -> np.ndarray:
    """(n, 2) t-SNE coordinates (scikit-learn, PCA start, seeded).

    Unlike PCA, t-SNE cannot place a new point on an existing map: fit it on everything
    to be drawn, question included. Its picture changes with the seed and the library
    version; clusters and gaps between them are partly its own doing.
    """
    from sklearn.manifold import TSNE

    x = np.asarray(vectors, dtype=np.float32)
    perplexity = min(perplexity, (x.shape[0] - 1) / 3)  # TSNE needs perplexity < n
    tsne = TSNE(n_components=2, init="pca", perplexity=perplexity, random_state=seed)
    return tsne.fit_transform(x).astype(np.float64)
