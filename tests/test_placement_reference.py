"""Issue 27: the placement's fast paths against literal references, draw for draw.

:func:`~clevr_poc.generation.layout.place_objects` tests overlaps with a sum of squares and ``math.hypot``
only near the boundary, checks the first placed object outside the inner loop and keeps per-object bounds;
:func:`~clevr_poc.scene.compute_relationships` sorts each axis. These tests replay the plain loops (the code
before issue 27) and compare layouts, counts, errors and the rng's state afterwards.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import random

import pytest

from clevr_poc import domain
from clevr_poc.environments import sample_environment
from clevr_poc.generation import layout
from clevr_poc.generation.layout import PlacementError, place_objects
from clevr_poc.generation.scene_sampler import SceneSampler
from clevr_poc.scene import Scene, SceneObject, compute_relationships
from clevr_poc.seeds import ENVIRONMENT, derive_seed


def reference_place_objects(scene: Scene, rng: random.Random, *, min_distance: float = 0.25, margin: float = 0.4,
                            max_attempts_per_object: int = 30, max_region_restarts: int = 10,
                            max_restarts: int = 10):
    """The placement as written before issue 27: ``rng.uniform``, ``math.hypot``, ``abs``, ``dataclasses.replace``,
    and relationships compared pair by pair. Returns (scene, rejections, restarts, by reason, region restarts)
    or the PlacementError's (message, rejections, restarts)."""
    bounds = []
    for index, obj in enumerate(scene.objects):
        box = domain.REGION_BOXES[obj.region]
        r = domain.SIZE_RADIUS[obj.size]
        if box.x_max - box.x_min < 2 * r or box.y_max - box.y_min < 2 * r:
            return ("does not fit", index)
        bounds.append((box.x_min + r, box.x_max - r, box.y_min + r, box.y_max - r, r))
    groups: dict[int, list[int]] = {}
    for i, obj in enumerate(scene.objects):
        groups.setdefault(obj.region, []).append(i)
    region_order = sorted(groups, key=lambda g: (-sum(bounds[i][4] for i in groups[g]), g))
    fill = [sorted(groups[g], key=lambda i: -bounds[i][4]) for g in region_order]
    rejected = {"overlap": 0, "margin": 0}
    region_restarts = restart = 0

    def fill_region(members, positions):
        for i in members:
            x_lo, x_hi, y_lo, y_hi, r = bounds[i]
            for _ in range(max_attempts_per_object):
                x, y = rng.uniform(x_lo, x_hi), rng.uniform(y_lo, y_hi)
                for j, (xj, yj) in positions.items():
                    if math.hypot(x - xj, y - yj) <= r + bounds[j][4] + min_distance:
                        rejected["overlap"] += 1
                        break
                    if abs(x - xj) < margin or abs(y - yj) < margin:
                        rejected["margin"] += 1
                        break
                else:
                    positions[i] = (x, y)
                    break
            else:
                return False
        return True

    for restart in range(max_restarts + 1):
        positions: dict[int, tuple[float, float]] = {}
        for members in fill:
            for attempt in range(max_region_restarts + 1):
                if fill_region(members, positions):
                    break
                for i in members:
                    positions.pop(i, None)
                if attempt < max_region_restarts:
                    region_restarts += 1
            else:
                break
        else:
            break
    else:
        total = sum(rejected.values())
        return (f"no layout for {len(scene.objects)} objects after {max_restarts} restarts ({total} rejected "
                f"positions; regions {[o.region for o in scene.objects]}, sizes {[o.size for o in scene.objects]})",
                total, max_restarts)
    points = [positions[i] for i in range(len(scene.objects))]
    objects = tuple(dataclasses.replace(obj, coords_3d=(x, y, bound[4]), pixel_coords=None,
                                        rotation=rng.uniform(0.0, 360.0))
                    for obj, (x, y), bound in zip(scene.objects, points, bounds))
    relationships = {"left": [[j for j, p in enumerate(points) if p[0] < x] for x, _ in points],
                     "right": [[j for j, p in enumerate(points) if p[0] > x] for x, _ in points],
                     "front": [[j for j, p in enumerate(points) if p[1] < y] for _, y in points],
                     "behind": [[j for j, p in enumerate(points) if p[1] > y] for _, y in points]}
    placed = dataclasses.replace(scene, objects=objects, relationships=relationships)
    return placed, sum(rejected.values()), restart, rejected, region_restarts


def _outcome(scene: Scene, seed: int, **kwargs):
    rng = random.Random(seed)
    try:
        result = place_objects(scene, rng, **kwargs)
        out = (result.scene, result.rejections, result.restarts, result.rejections_by_reason, result.region_restarts)
    except PlacementError as error:
        out = (str(error), error.rejections, error.restarts)
    return out, rng.random()


def _reference_outcome(scene: Scene, seed: int, **kwargs):
    rng = random.Random(seed)
    return reference_place_objects(scene, rng, **kwargs), rng.random()


def _same(new, reference) -> None:
    (out, after), (ref, ref_after) = new, reference
    assert after == ref_after                                   # the same draws
    if isinstance(out[0], str):
        assert out == ref
        return
    assert out[1:] == ref[1:]
    assert out[0] == ref[0]
    assert [vars(o) for o in out[0].objects] == [vars(o) for o in ref[0].objects]
    assert out[0].relationships == ref[0].relationships and list(out[0].relationships) == list(domain.RELATIONS)


def test_sampled_scenes_are_placed_as_by_the_plain_loop():
    compared = failures = 0
    for env_index in range(4):
        environment = sample_environment(derive_seed(ENVIRONMENT, 27, env_index), env_id=env_index)
        sampler = SceneSampler(environment)
        rng = random.Random(env_index)
        for k in range(40):
            scene = sampler.sample(rng)
            for kwargs in ({}, {"min_distance": 0.0, "margin": 0.0}, {"min_distance": 0.5, "margin": 0.9,
                                                                       "max_attempts_per_object": 7}):
                new, reference = _outcome(scene, k, **kwargs), _reference_outcome(scene, k, **kwargs)
                _same(new, reference)
                compared += 1
                failures += isinstance(new[0][0], str)
    assert compared == 480 and failures > 0


@pytest.mark.parametrize("specs", [
    [("large", 0)] * 3 + [("large", 2)] * 3,
    [("large", 1), ("large", 1), ("medium", 1), ("small", 3), ("large", 3), ("medium", 0), ("small", 2)],
    [("small", r) for r in range(4) for _ in range(3)],
])
def test_hard_layouts_fail_and_succeed_as_by_the_plain_loop(specs):
    colors = itertools.cycle(domain.COLORS)
    scene = Scene(tuple(SceneObject(next(colors), "cube", size, "rubber", region) for size, region in specs))
    for seed in range(12):
        _same(_outcome(scene, seed, max_restarts=2), _reference_outcome(scene, seed, max_restarts=2))


class _Scripted:
    """An rng whose ``random()`` returns the given values in turn."""

    def __init__(self, values) -> None:
        self.values = iter(values)

    def random(self) -> float:
        return next(self.values)


def test_overlap_test_at_the_boundary_is_hypot_itself():
    """Candidates within a few ulps of ``hypot(dx, dy) == reach``: the sum-of-squares test with its band gives
    hypot's verdict for every one (margin 0, so only the overlap rule can reject)."""
    rng = random.Random(5)
    bounds = [layout._object_bounds(0, SceneObject("red", "cube", "large", "rubber", 0)),
              layout._object_bounds(1, SceneObject("red", "cube", "medium", "rubber", 0))]
    x_lo, x_span, y_lo, y_span, r = bounds[1]
    reach = r + bounds[0][4] + 0.25
    reaches = layout._reach_table(0.25)
    verdicts = {True: 0, False: 0}
    for _ in range(20000):
        u, v = rng.random(), rng.random()
        x, y = x_lo + x_span * u, y_lo + y_span * v
        angle = rng.uniform(0, 2 * math.pi)
        x0, y0 = x - reach * math.cos(angle), y - reach * math.sin(angle)
        for _ in range(rng.randrange(4)):
            x0 = math.nextafter(x0, rng.choice((-math.inf, math.inf)))
        positions = {0: (x0, y0, bounds[0][4])}
        rejected = {"overlap": 0, "margin": 0}
        placed = layout._fill_region([1], positions, bounds, _Scripted([u, v]), reaches, 0.0, 1, rejected)
        overlap = math.hypot(x - x0, y - y0) <= reach
        assert placed is (not overlap) and rejected == {"overlap": int(overlap), "margin": 0}
        verdicts[overlap] += 1
    assert min(verdicts.values()) > 5000                        # both sides of the boundary, often


def _pairwise(points):
    return {"left": tuple(tuple(j for j, q in enumerate(points) if q[0] < p[0]) for p in points),
            "right": tuple(tuple(j for j, q in enumerate(points) if q[0] > p[0]) for p in points),
            "front": tuple(tuple(j for j, q in enumerate(points) if q[1] < p[1]) for p in points),
            "behind": tuple(tuple(j for j, q in enumerate(points) if q[1] > p[1]) for p in points)}


def test_relationships_by_sorting_equal_the_pairwise_comparison():
    rng = random.Random(3)
    values = [0.0, -0.0, 1, 1.0, 2.5, -3, math.nan, math.inf, -math.inf]
    for _ in range(3000):
        n = rng.randrange(0, 10)
        pick = (lambda: rng.choice(values)) if rng.random() < 0.3 else (lambda: rng.uniform(-5, 5))
        points = [(pick(), pick()) for _ in range(n)]
        relationships = compute_relationships(points)
        assert list(relationships) == list(domain.RELATIONS)
        assert relationships == _pairwise(points)
