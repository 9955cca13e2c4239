"""The two convex-hull implementations used for masks give the same polygon."""

from __future__ import annotations

import numpy as np
import pytest

from clevr_poc.rendering import masks
from masks_reference import hull_mask_reference


def _point_cloud(rng: np.random.Generator, kind: str) -> np.ndarray:
    """3-299 random 2-D points: gaussian, on a circle, on a 4x4 grid (many duplicates and collinear points)
    or on a line (collinear: Qhull refuses them)."""
    n = int(rng.integers(3, 300))
    if kind == "gaussian":
        return rng.normal(size=(n, 2)) * 40 + 100
    if kind == "circle":
        theta = rng.uniform(0, 2 * np.pi, n)
        return np.c_[np.cos(theta), np.sin(theta)] * 25 + 50
    if kind == "grid":
        return rng.integers(0, 4, size=(n, 2)).astype(float)
    return np.c_[np.arange(n), 2.0 * np.arange(n)].astype(float)


@pytest.mark.parametrize("kind", ["gaussian", "circle", "grid"])
def test_qhull_and_monotone_chain_agree(kind):
    if masks._qhull is None:
        pytest.skip("scipy not installed: only the monotone chain is used")
    rng = np.random.default_rng(5)
    for _ in range(300):
        points = _point_cloud(rng, kind)
        expected = masks._monotone_chain(np.unique(np.round(points, 9), axis=0))
        assert np.array_equal(masks._convex_hull(points), expected)


@pytest.mark.parametrize("kind", ["gaussian", "circle", "grid", "line"])
def test_lean_qhull_call_gives_convex_hull_vertices(kind):
    """Issue 27: the hull's vertices come from the Qhull object itself, without ConvexHull's other outputs."""
    if masks._qhull is None:
        pytest.skip("scipy not installed: only the monotone chain is used")
    rng = np.random.default_rng(7)
    for _ in range(200):
        points = masks._unique_rows(np.round(_point_cloud(rng, kind), 9))
        try:
            expected = masks._qhull(points).vertices
        except Exception as error:
            with pytest.raises(type(error)):
                masks._qhull_vertices(points)
        else:
            assert np.array_equal(masks._qhull_vertices(points), expected)


def test_hull_of_a_square_with_interior_and_edge_points():
    points = np.array([[0, 0], [2, 0], [2, 2], [0, 2], [1, 1], [1, 0], [0.5, 1.5]], dtype=float)
    assert masks._convex_hull(points).tolist() == [[0, 0], [2, 0], [2, 2], [0, 2]]


def test_prefiltered_hull_of_projected_meshes_is_the_hull_of_all_vertices():
    """Issue 27: a mesh's projected vertices (hundreds to thousands) are first thinned to those outside
    the polygon of the extremes in 32 directions; the polygon is exactly the one of all vertices."""
    from clevr_poc.camera import look_at, project_points
    from clevr_poc.rendering.shapes import object_mesh

    rng = np.random.default_rng(27)
    checked = 0
    for shape in ("sphere", "cylinder", "cube", "cone"):
        for size in ("small", "large"):
            for _ in range(6):
                camera = look_at(tuple(rng.uniform([-12, -12, 4], [12, 12, 12])), width=320, height=240)
                mesh = object_mesh(shape, size, *rng.uniform(-3, 3, 2), float(rng.uniform(0, 360)))
                points = project_points(mesh.vertices, camera)[:, :2]
                rounded = np.round(points, 9)
                expected = masks._monotone_chain(np.unique(rounded, axis=0))
                if len(rounded) > masks._PREFILTER_MIN_POINTS:
                    kept = masks._drop_interior_many(rounded)
                    assert len(kept) < len(rounded)
                    checked += 1
                assert np.array_equal(masks._convex_hull(points), expected)
    assert checked == 48  # every mesh (128 to 2,112 vertices) went through the prefilter


@pytest.mark.parametrize("kind", ["gaussian", "pixel_aligned", "circle"])
def test_row_by_row_hull_mask_equals_the_edge_test_everywhere(kind):
    """Issue 27: ``_hull_mask`` (intervals per row, the edge test only near an edge) gives exactly the
    booleans of the edge test at every pixel centre, also for vertices on pixel centres and flat edges."""
    rng = np.random.default_rng({"gaussian": 1, "pixel_aligned": 2, "circle": 3}[kind])
    ambiguous_cases = 0
    for _ in range(400):
        n = int(rng.integers(3, 80))
        if kind == "gaussian":
            points = rng.normal(size=(n, 2)) * rng.uniform(1, 60) + rng.uniform(-20, 340, 2)
        elif kind == "pixel_aligned":  # edges through pixel centres, horizontal and vertical edges
            points = rng.integers(0, 12, size=(n, 2)) * 0.5 + rng.integers(-5, 300, 2)
        else:
            theta = rng.uniform(0, 2 * np.pi, n)
            points = np.c_[np.cos(theta), np.sin(theta)] * rng.uniform(0.3, 40) + rng.uniform(0, 320, 2)
        hull = masks._convex_hull(points)
        if len(hull) < 3:
            continue
        u = np.arange(int(np.floor(hull[:, 0].min())) - 1, int(np.ceil(hull[:, 0].max())) + 2) + 0.5
        v = np.arange(int(np.floor(hull[:, 1].min())) - 1, int(np.ceil(hull[:, 1].max())) + 2) + 0.5
        expected = hull_mask_reference(hull, u, v)
        assert np.array_equal(masks._hull_mask(hull, u, v), expected)
        us, vs = np.meshgrid(u, v)
        ambiguous_cases += bool((masks._edge_cross(hull, us[..., None], vs[..., None]) == 0).any())
    if kind == "pixel_aligned":
        assert ambiguous_cases > 100  # pixel centres exactly on an edge: decided by the edge test


def test_index_map_of_a_window_is_that_block_of_the_whole_map():
    """Issue 27: the visibility check ray-casts only the box of the objects it is unsure of; every
    label there is the whole map's."""
    from clevr_poc.camera import look_at
    from clevr_poc.rendering.shapes import object_mesh

    rng = np.random.default_rng(11)
    camera = look_at((7.5, -7.5, 6.0), width=320, height=240)
    shapes = ("sphere", "cube", "cylinder", "cone")
    checked = 0
    for _ in range(8):
        meshes = [object_mesh(shapes[k % 4], ("small", "medium", "large")[k % 3], *rng.uniform(-2.5, 2.5, 2),
                              float(rng.uniform(0, 360))) for k in range(6)]
        full = masks.instance_index_map(meshes, camera)
        assert (full >= 0).sum() > 1000
        for _ in range(6):
            i0, j0 = int(rng.integers(0, 300)), int(rng.integers(0, 220))
            i1, j1 = min(i0 + int(rng.integers(0, 120)), 320), min(j0 + int(rng.integers(0, 120)), 240)
            window = masks.instance_index_map(meshes, camera, window=(i0, i1, j0, j1))
            assert np.array_equal(window, full[j0:j1, i0:i1])
            checked += 1
    assert checked == 48


def test_project_points_equals_the_where_and_stack_formula():
    """Issue 27: project_points writes u, v and depth in place; the same floats as np.where/np.stack, nan for
    points at or behind the camera, for any leading shape."""
    from clevr_poc.camera import look_at, project_points

    camera = look_at((7.5, -7.5, 6.0), width=320, height=240)
    rng = np.random.default_rng(3)

    def reference(points):
        cam = points @ camera.rotation.T + camera.translation
        depth = cam[..., 2]
        with np.errstate(divide="ignore", invalid="ignore"):
            uvw = cam @ camera.K.T
            u = np.where(depth > 0, uvw[..., 0] / uvw[..., 2], np.nan)
            v = np.where(depth > 0, uvw[..., 1] / uvw[..., 2], np.nan)
        return np.stack([u, v, depth], axis=-1)

    behind = camera.position - 5 * camera.rotation[2]
    for points in (rng.normal(size=(2112, 3)) * 8, rng.normal(size=(4, 5, 3)), camera.position, behind,
                   np.array([camera.position, behind, (0.0, 0.0, 0.0)])):
        assert np.array_equal(project_points(points, camera), reference(points), equal_nan=True)
    assert np.isnan(project_points(behind, camera)[:2]).all()


def test_lean_qhull_probe_rejects_a_changed_private_api(monkeypatch):
    """A scipy whose private ``_Qhull`` changed is detected by the import-time probe (then ConvexHull is used)."""
    if masks._qhull is None:
        pytest.skip("scipy not installed")
    assert masks._lean_qhull_works() is (masks._Qhull is not None)

    def changed(*args, **kwargs):
        raise TypeError("_Qhull() takes other arguments")

    monkeypatch.setattr(masks, "_Qhull", changed)
    assert masks._lean_qhull_works() is False
