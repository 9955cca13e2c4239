"""The visibility check's index map with the pair order (:mod:`clevr_poc.rendering.ordered_map`) against the
ray-cast map (:func:`clevr_poc.rendering.masks.instance_index_map`): the same label at every pixel, on
hand-made and on random layouts (full images and windows), and the pair order of a hand-made pair."""

from __future__ import annotations

import numpy as np

from clevr_poc.rendering.masks import instance_index_map, mesh_footprints
from clevr_poc.rendering.ordered_map import _pair_order, hull_footprints, ordered_index_map
from clevr_poc.rendering.render import scene_camera, scene_meshes
from clevr_poc.scene import Scene, SceneObject
from random_layouts import random_layouts


def _obj(shape, size, x, y, rotation=0.0):
    return SceneObject("red", shape, size, "rubber", 0, (x, y, 0.0), rotation=rotation)


def _same_maps(meshes, camera, window) -> np.ndarray:
    footprints = hull_footprints(meshes, camera)
    plain = mesh_footprints(meshes, camera)
    for mine, theirs in zip(footprints, plain):
        assert (mine is None) == (theirs is None)
        if mine is not None:
            assert mine[0] == theirs[0] and np.array_equal(mine[1], theirs[1])
    expected = instance_index_map(meshes, camera, plain, window)
    got = ordered_index_map(meshes, camera, footprints, window)
    assert got.dtype == expected.dtype and np.array_equal(got, expected)
    return got


def test_a_sphere_behind_a_cylinder_and_its_pair_order():
    # the camera of seed 0 stands at (10, -6.5, 5.3): the sphere at (-3, 4.4) is behind the cylinder at (-2, 2)
    scene = Scene((_obj("cylinder", "large", -2.0, 2.0), _obj("sphere", "medium", -3.0, 4.4),
                   _obj("cube", "large", 1.0, 2.0, 45.0), _obj("cube", "large", 3.3, 2.0, 45.0)))
    camera = scene_camera(0)
    meshes = scene_meshes(scene)
    order = _pair_order(meshes, camera, [0, 1, 2, 3])
    assert order[(0, 1)] == 1            # the cylinder comes first on every ray through both
    assert (2, 3) not in order           # two large cubes at 45 degrees, 2.3 apart: their corners overlap
    index = _same_maps(meshes, camera, (0, camera.width, 0, camera.height))
    # 5 pixels of the sphere's 156 show beside the cylinder; the second cube hides behind the first in part
    assert np.bincount(index[index >= 0].ravel(), minlength=4).tolist() == [841, 5, 1199, 2035]


def test_the_same_labels_as_the_ray_cast_map_on_random_layouts():
    compared = ordered = 0
    for scene, rng in random_layouts(13, 20, 8):
        camera = scene_camera(rng.getrandbits(32))
        meshes = scene_meshes(scene)
        _same_maps(meshes, camera, (0, camera.width, 0, camera.height))
        i0, j0 = rng.randrange(0, camera.width // 2), rng.randrange(0, camera.height // 2)
        _same_maps(meshes, camera, (i0, i0 + 90, j0, j0 + 70))
        ordered += len(_pair_order(meshes, camera, list(range(len(meshes)))))
        compared += 2
    assert compared == 48 and ordered > 200  # most pairs are ordered by a plane


def test_window_footprints_are_the_full_ones_cut_to_the_window():
    scene = Scene((_obj("cylinder", "large", -2.0, 2.0), _obj("sphere", "medium", -3.0, 4.4),
                   _obj("cube", "large", 1.0, 2.0, 45.0), _obj("cone", "small", 3.3, 2.0)))
    camera = scene_camera(0)
    meshes = scene_meshes(scene)
    assert all(np.array_equal(a.vertices, b.vertices) and np.array_equal(a.normals, b.normals)
               for a, b in zip(scene_meshes(scene, indices=[2, 0]), [meshes[2], meshes[0]]))
    full = hull_footprints(meshes, camera)
    window = (100, 180, 90, 150)
    cut = hull_footprints(meshes, camera, window)
    inside = 0
    for whole, part in zip(full, cut):
        (i0, i1, j0, j1), mask, hull = whole
        a0, a1, b0, b1 = max(i0, 100), min(i1, 180), max(j0, 90), min(j1, 150)
        if a0 >= a1 or b0 >= b1:
            assert part is None
            continue
        assert part[0] == (a0, a1, b0, b1) and np.array_equal(part[2], hull)
        assert np.array_equal(part[1], mask[b0 - j0:b1 - j0, a0 - i0:a1 - i0])
        inside += int(part[1].sum())
    assert inside > 0
