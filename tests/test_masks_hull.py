"""The two convex-hull implementations used for masks give the same polygon."""

from __future__ import annotations

import numpy as np
import pytest

from clevr_poc.rendering import masks


@pytest.mark.parametrize("kind", ["gaussian", "circle", "grid"])
def test_qhull_and_monotone_chain_agree(kind):
    if masks._qhull is None:
        pytest.skip("scipy not installed: only the monotone chain is used")
    rng = np.random.default_rng(5)
    for _ in range(300):
        n = int(rng.integers(3, 300))
        if kind == "gaussian":
            points = rng.normal(size=(n, 2)) * 40 + 100
        elif kind == "circle":
            theta = rng.uniform(0, 2 * np.pi, n)
            points = np.c_[np.cos(theta), np.sin(theta)] * 25 + 50
        else:  # many duplicates and collinear points
            points = rng.integers(0, 4, size=(n, 2)).astype(float)
        expected = masks._monotone_chain(np.unique(np.round(points, 9), axis=0))
        assert np.array_equal(masks._convex_hull(points), expected)


def test_hull_of_a_square_with_interior_and_edge_points():
    points = np.array([[0, 0], [2, 0], [2, 2], [0, 2], [1, 1], [1, 0], [0.5, 1.5]], dtype=float)
    assert masks._convex_hull(points).tolist() == [[0, 0], [2, 0], [2, 2], [0, 2]]
