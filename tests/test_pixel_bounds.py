"""The visibility check's bounds (:mod:`clevr_poc.generation.pixel_bounds`) against the ray-cast counts.

On random layouts of sampled scenes from random render cameras: every object's lower bound <= its visible
pixels in the ray-cast index map <= its upper bound, and its unoccluded footprint lies between the footprint
bounds; the hand-made occluded cube gets an upper bound under the threshold (so ``VisibilityCheck`` decides
it without a ray) and a footprint lower bound over it ("occluded").
"""

from __future__ import annotations

import random

from clevr_poc.environments.sampler import sample_environment
from clevr_poc.generation.layout import PlacementError, place_objects
from clevr_poc.generation.pixel_bounds import lower_bounds, silhouettes, vertex_silhouettes
from clevr_poc.generation.pixel_upper_bounds import upper_bounds
from clevr_poc.generation.scene_sampler import SceneSampler
from clevr_poc.rendering.masks import footprint_pixels, instance_index_map
from clevr_poc.generation.bound_solids import scene_bound_points
from clevr_poc.rendering.render import scene_camera, scene_meshes
from clevr_poc.scene import Scene, SceneObject
from clevr_poc.seeds import ENVIRONMENT, derive_seed
from random_layouts import random_layouts


def _counts(meshes, camera) -> list[int]:
    index = instance_index_map(meshes, camera)
    return [int((index == k).sum()) for k in range(len(meshes))]


def test_bounds_bracket_the_ray_cast_counts_on_random_layouts():
    checked = tight = 0
    for scene, rng in random_layouts(7, 0, 12):
        camera = scene_camera(rng.getrandbits(32))
        meshes = scene_meshes(scene)
        exact = _counts(meshes, camera)
        footprints = [footprint_pixels(mesh, camera) for mesh in meshes]
        # from the meshes' vertices, and from the few inner and outer points of each solid
        for found in (silhouettes(meshes, camera, range(len(meshes))),
                      vertex_silhouettes(_points(scene)[0], camera, _points(scene)[1])):
            lower = lower_bounds(found, camera, len(meshes), range(len(meshes)))
            upper = upper_bounds(found, camera, range(len(meshes)))
            boxed = lower_bounds(found, camera, len(meshes), range(len(meshes)), enough=40)
            for k in range(len(meshes)):
                # the box shortcut: still a bound, the same side of the threshold, the rows' bound or >= 40
                assert boxed[k] <= lower[k] and (boxed[k] >= 40) == (lower[k] >= 40)
                assert boxed[k] == lower[k] or boxed[k] >= 40
                shown_max, footprint_min, footprint_max = upper[k]
                assert lower[k] <= exact[k] <= shown_max
                assert footprint_min <= footprints[k] <= footprint_max
                checked += 1
                tight += shown_max <= 1.1 * exact[k] + 10 and lower[k] >= 0.9 * exact[k] - 10
    assert checked > 300 and tight > 0.8 * checked  # brackets, and mostly close ones


def test_lower_bounds_equal_the_object_by_object_reference():
    """The vectorised lower bound gives the very numbers of the per-object code it replaced, from both kinds
    of silhouette, with and without the early stop at ``min_pixels``."""
    from pixel_bounds_reference import lower_bounds_reference

    compared = 0
    for scene, rng in random_layouts(11, 100, 10):
        camera = scene_camera(rng.getrandbits(32))
        meshes = scene_meshes(scene)
        shown = range(len(meshes))
        for found in (silhouettes(meshes, camera, shown),
                      vertex_silhouettes(_points(scene)[0], camera, _points(scene)[1])):
            for min_pixels in (None, 40):
                new = lower_bounds(found, camera, len(meshes), shown, min_pixels)
                old = lower_bounds_reference(found, camera, len(meshes), shown, min_pixels)
                assert new == old
                compared += 1
    assert compared == 3 * 10 * 2 * 2


def _points(scene):
    inner, outer = scene_bound_points(scene)
    return inner, outer


def test_bound_points_lie_inside_and_around_each_mesh():
    from scipy.spatial import ConvexHull

    from clevr_poc.generation.bound_solids import bound_points
    from clevr_poc.rendering.shapes import unit_mesh

    for shape in ("cube", "sphere", "cylinder", "cone"):
        vertices = unit_mesh(shape, "official").vertices
        inner, outer = bound_points(shape)
        hull = ConvexHull(outer).equations
        assert (vertices @ hull[:, :3].T + hull[:, 3]).max() <= 1e-12           # the outer hull contains the mesh
        assert all((vertices == p).all(axis=1).any() for p in inner)            # inner points are mesh vertices
        assert len(inner) <= 100 and len(outer) <= 200 < len(vertices) or shape == "cone"


def test_an_occluded_cube_is_decided_by_its_upper_bound():
    # a small cube right behind a large cylinder on the camera's diagonal (tests/test_visibility.py)
    scene = Scene((
        SceneObject("red", "cylinder", "large", "rubber", 0, (-2.0, 2.0, 0.0), rotation=0.0),
        SceneObject("blue", "cube", "small", "rubber", 0, (-3.6, 3.6, 0.0), rotation=0.0),
        SceneObject("green", "sphere", "medium", "rubber", 3, (3.0, -3.0, 0.0), rotation=0.0),
    ))
    camera = scene_camera(11)
    meshes = scene_meshes(scene)
    shown_max, footprint_min, footprint_max = upper_bounds(silhouettes(meshes, camera, range(3)), camera, [1])[1]
    assert _counts(meshes, camera)[1] == 0 and shown_max < 40
    assert 40 <= footprint_min <= footprint_pixels(meshes[1], camera) <= footprint_max


def test_moved_object_equals_dataclasses_replace():
    from dataclasses import fields, replace

    from clevr_poc.generation.layout import moved_object

    obj = SceneObject("red", "cube", "large", "metal", 2, (1.0, 2.0, 0.7), pixel_coords=(3.0, 4.0, 5.0),
                      extra={"note": 1}, rotation=10.0, score=0.5)
    new = moved_object(obj, (-1.5, 2.5, 0.7), 123.25)
    old = replace(obj, coords_3d=(-1.5, 2.5, 0.7), pixel_coords=None, rotation=123.25)
    assert type(new) is SceneObject and new == old and hash(new) == hash(old)
    assert all(getattr(new, f.name) == getattr(old, f.name) for f in fields(SceneObject))
    assert new.extra is obj.extra and new.json_spelling is old.json_spelling and obj.rotation == 10.0


def test_placed_scene_equals_dataclasses_replace():
    from dataclasses import fields, replace

    from clevr_poc.generation.layout import placed_scene
    from clevr_poc.scene import Scene, compute_relationships

    objects = (SceneObject("red", "cube", "large", "metal", 2, (1.0, 2.0, 0.7)),
               SceneObject("blue", "sphere", "small", "rubber", 0, (-1.0, -2.0, 0.35)))
    scene = Scene(objects[::-1], {}, split="train", image_index=3, extra={"note": 1}, environment_id=4)
    relationships = compute_relationships([o.coords_3d[:2] for o in objects])
    new = placed_scene(scene, objects, relationships)
    old = replace(scene, objects=objects, relationships=relationships)
    assert type(new) is Scene and new == old and new.to_json() == old.to_json()
    assert all(getattr(new, f.name) == getattr(old, f.name) for f in fields(Scene))
    assert new.relationships == {"left": ((1,), ()), "right": ((), (0,)), "front": ((1,), ()), "behind": ((), (0,))}
    assert scene.objects == objects[::-1] and scene.relationships == {}


def test_compute_relationships_equals_the_pairwise_definition():
    import random

    from clevr_poc.scene import compute_relationships

    rng = random.Random(3)
    for n in range(0, 10):
        points = [(rng.choice([0.5, 1.0, rng.uniform(-3, 3)]), rng.choice([0.5, rng.uniform(-3, 3)]))
                  for _ in range(n)]
        expected = {rel: tuple(tuple(j for j, q in enumerate(points) if j != i and test(q, p))
                               for i, p in enumerate(points))
                    for rel, test in (("left", lambda q, p: q[0] < p[0]), ("right", lambda q, p: q[0] > p[0]),
                                      ("front", lambda q, p: q[1] < p[1]), ("behind", lambda q, p: q[1] > p[1]))}
        got = compute_relationships(iter(points))
        assert got == expected and list(got) == ["left", "right", "front", "behind"]


def test_stacked_silhouettes_equal_those_of_the_separate_points():
    """One transform per object (inner and outer points in one array) gives the very silhouettes of
    :func:`vertex_silhouettes` over :func:`scene_bound_points`: the same floats, the same extremes."""
    import numpy as np

    from clevr_poc.generation.bound_solids import scene_bound_array
    from clevr_poc.generation.pixel_bounds import stacked_silhouettes

    compared = 0
    sampler = SceneSampler(sample_environment(derive_seed(ENVIRONMENT, 5, 0), env_id=0))
    rng = random.Random(5)
    while compared < 60:
        try:
            scene = place_objects(sampler.sample(rng), rng).scene
        except PlacementError:
            continue
        camera = scene_camera(rng.getrandbits(32))
        points, inner_counts, outer_counts = scene_bound_array(scene)
        inner, outer = _points(scene)
        assert inner_counts == [len(p) for p in inner] and outer_counts == [len(p) for p in outer]
        # bit for bit with the OpenBLAS here; (3, V) rows against (V, 3) ones may round differently elsewhere
        assert np.abs(points - np.concatenate([q for pair in zip(inner, outer) for q in pair])).max() <= 1e-12
        old = vertex_silhouettes(inner, camera, outer)
        new = stacked_silhouettes(points, inner_counts, outer_counts, camera)
        assert sorted(new) == list(range(len(scene.objects)))
        for k, (corners, support, near, far) in old.items():
            assert np.array_equal(new[k][0], corners) and np.array_equal(new[k][1], support)
            assert (new[k][2], new[k][3]) == (near, far)
            compared += 1


def test_box_overlaps_count_the_occluders_boxes_within_the_rows_box():
    """Two occluders of object 0 (rows box: columns 10..29, rows 5..14): object 1's support box spans u 20..40
    and v 0..8, i.e. columns 18..41 and rows -2..9 with ``floor(lo - 0.5) - 1`` and ``ceil(hi - 0.5) + 1``
    (12 x 5 pixels inside the rows box); object 2's u 0..12 and v 12..30, columns -2..13 and rows 10..31
    (4 x 5); object 3 is not an occluder of object 0."""
    import numpy as np

    from clevr_poc.generation.pixel_bounds import _HALF, _QUARTER, SILHOUETTE_DIRECTIONS, _box_overlaps

    def support(u0, u1, v0, v1):
        s = np.zeros(SILHOUETTE_DIRECTIONS)
        s[0], s[_HALF], s[_QUARTER], s[3 * _QUARTER] = u1, -u0, v1, -v0
        return s

    found = {0: (None, support(10, 30, 5, 15), 0, 0), 1: (None, support(20, 40, 0, 8), 0, 0),
             2: (None, support(0, 12, 12, 30), 0, 0), 3: (None, support(0, 100, 0, 100), 0, 0)}
    pairs = np.array([[False, True, True, False]])
    rows_box = (np.array([10]), np.array([30]), np.array([5]), np.array([15]))
    support = np.array([found[j][1] for j in range(4)])
    assert _box_overlaps(support, pairs, rows_box).tolist() == [12 * 5 + 4 * 5]


def test_inner_rows_equal_the_broadcast_formula():
    """Issue 27: ``_inner_rows`` multiplies the per-edge factors first; the intervals are those of the (rows, M)
    formula it replaced, float for float, also with horizontal edges (on a pixel grid)."""
    import numpy as np

    from clevr_poc.generation.pixel_bounds import _MARGIN, _inner_rows
    from clevr_poc.rendering.masks import _convex_hull, _next

    def broadcast(polygon, v):
        a, b = polygon, _next(polygon)
        ex, ey = b[:, 0] - a[:, 0], b[:, 1] - a[:, 1]
        rhs = (_MARGIN * np.hypot(ex, ey)[None, :] - ex[None, :] * (v[:, None] - a[None, :, 1])
               - ey[None, :] * a[None, :, 0])
        coef = -ey[None, :]
        with np.errstate(divide="ignore", invalid="ignore"):
            bound = rhs / coef
        lo = np.where(coef > 0, bound, -np.inf).max(axis=1)
        hi = np.where(coef < 0, bound, np.inf).min(axis=1)
        return np.where(((coef == 0) & (rhs >= 0)).any(axis=1), np.inf, lo), hi

    rng = np.random.default_rng(27)
    flat = 0
    for case in range(600):
        points = rng.normal(size=(int(rng.integers(3, 40)), 2)) * rng.uniform(1, 50) + rng.uniform(0, 300, 2)
        if case % 2:
            points = np.round(points / 4) * 4
        hull = _convex_hull(points)
        if len(hull) < 3:
            continue
        flat += bool((_next(hull)[:, 1] == hull[:, 1]).any())
        v = np.arange(int(hull[:, 1].min()) - 3, int(hull[:, 1].max()) + 4) + 0.5
        for got, expected in zip(_inner_rows(hull, v), broadcast(hull, v)):
            assert np.array_equal(got, expected)
    assert flat > 50


def test_inner_rows_of_several_polygons_equal_one_call_each():
    import numpy as np

    from clevr_poc.generation.pixel_bounds import _inner_rows
    from clevr_poc.generation.pixel_upper_bounds import _inner_rows_many
    from clevr_poc.rendering.masks import _convex_hull

    rng = np.random.default_rng(28)
    for case in range(200):
        polygons = []
        while len(polygons) < 1 + case % 4:
            points = rng.normal(size=(int(rng.integers(3, 30)), 2)) * rng.uniform(1, 40) + rng.uniform(0, 200, 2)
            hull = _convex_hull(np.round(points / 4) * 4 if case % 2 else points)
            if len(hull) >= 3:
                polygons.append(hull)
        v = np.arange(-3, 250) + 0.5
        lo, hi = _inner_rows_many(polygons, v)
        for position, polygon in enumerate(polygons):
            one_lo, one_hi = _inner_rows(polygon, v)
            assert np.array_equal(lo[position], one_lo) and np.array_equal(hi[position], one_hi)


def test_outer_rows_of_one_support_vector_equal_the_general_function():
    import numpy as np

    from clevr_poc.generation.pixel_bounds import _DIRECTIONS, _outer_rows
    from clevr_poc.generation.pixel_upper_bounds import _outer_rows_k

    rng = np.random.default_rng(29)
    for _ in range(300):
        centre = rng.uniform(-20, 340, 2)
        support = _DIRECTIONS @ centre + rng.uniform(0.2, 60, len(_DIRECTIONS))
        v = np.arange(int(centre[1]) - 70, int(centre[1]) + 70) + 0.5
        for got, expected in zip(_outer_rows_k(support, v), _outer_rows(_DIRECTIONS, support, v)):
            assert np.array_equal(got, expected)


def test_covered_pixels_skip_only_corrections_that_change_nothing(monkeypatch):
    """Issue 27: below ``_EXACT_LIMIT`` the occluded-row columns skip ``ceil``/``floor``'s four corrections; forcing
    them (a limit of 0) gives the very same bounds, and the layouts do reach the row-exact count."""
    import clevr_poc.generation.pixel_bounds as pixel_bounds

    calls = []
    original = pixel_bounds._covered_pixels

    def counted(*args):
        calls.append(1)
        return original(*args)

    monkeypatch.setattr(pixel_bounds, "_covered_pixels", counted)
    for scene, rng in random_layouts(13, 200, 10):
        camera = scene_camera(rng.getrandbits(32))
        points = _points(scene)
        found = vertex_silhouettes(points[0], camera, points[1])
        count = len(scene.objects)
        fast = [lower_bounds(found, camera, count, range(count)),
                lower_bounds(found, camera, count, range(count), enough=40)]
        monkeypatch.setattr(pixel_bounds, "_EXACT_LIMIT", 0.0)
        slow = [lower_bounds(found, camera, count, range(count)),
                lower_bounds(found, camera, count, range(count), enough=40)]
        monkeypatch.setattr(pixel_bounds, "_EXACT_LIMIT", float(2 ** 40))
        assert fast == slow
    assert len(calls) >= 20



def test_projection_on_rows_gives_project_points_floats():
    """Issue 27, sixth round: the bounds' projection multiplies (3, V) rows (``R @ p.T``, ``K @ cam``),
    :func:`clevr_poc.camera.project_points` (V, 3) ones (``p @ R.T``, ``cam @ K.T``): the same three-term dot
    products, bit for bit with the OpenBLAS here (measured on 3,447 recorded layouts), within 1e-9 px wherever
    (BLAS kernels may round differently; the bounds' 1e-6 px margins absorb far more); the bound points' world
    coordinates likewise; and a point behind the camera gives None."""
    import numpy as np

    from clevr_poc.camera import project_points
    from clevr_poc.generation.bound_solids import scene_bound_array
    from clevr_poc.generation.pixel_bounds import _projected

    compared = 0
    for scene, rng in random_layouts(5, 3, 10):
        camera = scene_camera(rng.getrandbits(32))
        points = scene_bound_array(scene)[0]
        inner, outer = _points(scene)
        assert np.abs(points - np.concatenate([q for pair in zip(inner, outer) for q in pair])).max() <= 1e-12
        for world in [points] + [mesh.vertices for mesh in scene_meshes(scene)]:
            expected = project_points(world, camera)
            depth, uv = _projected(world, camera)
            assert np.abs(depth - expected[:, 2]).max() <= 1e-12 and np.abs(uv - expected[:, :2].T).max() <= 1e-9
            compared += 1
        behind = np.vstack([points, camera.position + (camera.position - points.mean(axis=0))])
        assert _projected(behind, camera) is None
    assert compared >= 50
