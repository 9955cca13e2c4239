"""3D layout: the placement rules, bounded failure, and consistency with the answering semantics."""

from __future__ import annotations

import itertools
import math
import random
import time

import pytest

from clevr_poc import ClevrPocError, FormatError, Reasoner, domain
from clevr_poc.environments import Constraint as C
from clevr_poc.environments import Environment
from clevr_poc.generation.layout import PlacementError, place_objects, relationships_consistent
from clevr_poc.generation.scene_sampler import SceneSampler
from clevr_poc.scene import Scene, SceneObject, compute_relationships

TRIVIAL_QUERY = "missing(Q) :- hasProperty(X,color,Q)."


def nine_object_environment() -> Environment:
    """N=9 with large objects encouraged in region 0 (the hardest layouts)."""
    return Environment((
        C("value_restriction", {"r": 0, "p1": "size", "v1": "large"}),
        C("negation", {"r": 1, "p1": "shape", "v1": "cone"}),
        C("exactly_n", {"r": 2, "p1": "size", "v1": "large", "n": 2}),
        C("at_most_pairs", {"r1": 1, "r2": 3, "p1": "color", "n": 2}),
        C("or", {"r": 3, "p1": "material", "v1": "metal", "p2": "size", "v2": "small"}),
    ), 9, id=201)


def _scene(specs) -> Scene:
    colors = itertools.cycle(domain.COLORS)
    return Scene(tuple(SceneObject(next(colors), "cube", size, "rubber", region) for size, region in specs))


def _check_rules(scene: Scene, min_distance: float = 0.25, margin: float = 0.4) -> None:
    for obj in scene.objects:
        x, y, z = obj.coords_3d
        r = domain.SIZE_RADIUS[obj.size]
        box = domain.REGION_BOXES[obj.region]
        assert box.x_min <= x - r and x + r <= box.x_max and box.y_min <= y - r and y + r <= box.y_max
        assert z == r
        assert 0.0 <= obj.rotation < 360.0
    for a, b in itertools.combinations(scene.objects, 2):
        (xa, ya, _), (xb, yb, _) = a.coords_3d, b.coords_3d
        assert math.hypot(xa - xb, ya - yb) > domain.SIZE_RADIUS[a.size] + domain.SIZE_RADIUS[b.size] + min_distance
        assert abs(xa - xb) >= margin and abs(ya - yb) >= margin
    assert scene.relationships == compute_relationships([o.coords_3d[:2] for o in scene.objects])


@pytest.fixture(scope="module")
def placed_scenes():
    """60 sampled complete scenes of the nine-object environment, placed."""
    env = nine_object_environment()
    sampler = SceneSampler(env)
    rng = random.Random(21)
    results = []
    while len(results) < 60:
        try:
            results.append(place_objects(sampler.sample(rng), rng))
        except PlacementError:
            continue
    return env, results


def test_placed_scenes_follow_every_rule(placed_scenes):
    _, results = placed_scenes
    for result in results:
        _check_rules(result.scene)
        assert len(result.scene.relationships["left"]) == 9
        assert result.rejections == sum(result.rejections_by_reason.values())
        assert set(result.rejections_by_reason) == {"overlap", "margin"}
    assert sum(r.rejections for r in results) > 0  # three large objects in region 0: rejections happen


def test_relationships_agree_with_region_adjacency(placed_scenes):
    _, results = placed_scenes
    assert all(relationships_consistent(r.scene) for r in results)


def test_complete_scene_is_satisfiable_under_the_official_semantics(placed_scenes):
    env, results = placed_scenes
    reasoner = Reasoner(mode="direct")
    for result in results[:25]:
        answer = reasoner.answer(env, result.scene, TRIVIAL_QUERY)
        assert answer.satisfiable
        assert answer.values == frozenset(o.color for o in result.scene.objects)
    # control: the same scene with two objects' x swapped across regions 0 and 1 is inconsistent
    scene = next(r.scene for r in results if {0, 1} <= {o.region for o in r.scene.objects})
    i = next(k for k, o in enumerate(scene.objects) if o.region == 0)
    j = next(k for k, o in enumerate(scene.objects) if o.region == 1)
    points = [o.coords_3d[:2] for o in scene.objects]
    points[i], points[j] = (points[j][0], points[i][1]), (points[i][0], points[j][1])
    broken = Scene(scene.objects, compute_relationships(points))
    assert not relationships_consistent(broken)
    assert not reasoner.answer(env, broken, TRIVIAL_QUERY).satisfiable


def test_same_rng_state_same_layout():
    scene = _scene([("large", 0), ("small", 0), ("medium", 1), ("large", 2), ("small", 3)])
    a = place_objects(scene, random.Random(4))
    b = place_objects(scene, random.Random(4))
    assert a.scene.to_json() == b.scene.to_json()
    assert place_objects(scene, random.Random(5)).scene.to_json() != a.scene.to_json()


def test_three_large_objects_in_one_region_are_placed():
    scene = _scene([("large", 0), ("large", 0), ("large", 0)])
    for seed in range(30):
        result = place_objects(scene, random.Random(seed))
        _check_rules(result.scene)


def test_hard_layouts_fail_fast_and_cleanly():
    # six large objects in two regions with the same x range: often impossible to find at random
    hard = _scene([("large", 0)] * 3 + [("large", 2)] * 3)
    outcomes = []
    start = time.perf_counter()
    for seed in range(10):
        try:
            _check_rules(place_objects(hard, random.Random(seed)).scene)
            outcomes.append("ok")
        except PlacementError as error:
            assert isinstance(error, ClevrPocError)
            assert error.rejections > 0 and error.restarts == 10
            outcomes.append("error")
    assert time.perf_counter() - start < 5.0  # bounded: about 20 ms per failure
    assert "ok" in outcomes and "error" in outcomes
    # twelve large objects: never placed, and the failure is quick
    start = time.perf_counter()
    with pytest.raises(PlacementError, match="no layout for 12 objects"):
        place_objects(_scene([("large", r) for r in range(4) for _ in range(3)]), random.Random(0))
    assert time.perf_counter() - start < 2.0


def test_impossible_margin_raises_placement_error():
    scene = _scene([("small", 0), ("small", 0)])
    with pytest.raises(PlacementError):
        place_objects(scene, random.Random(0), margin=4.9, max_restarts=2)


def test_bad_arguments_raise_format_error():
    scene = _scene([("small", 0)])
    with pytest.raises(FormatError):
        place_objects(scene, random.Random(0), min_distance=-1)
    with pytest.raises(FormatError):
        place_objects(scene, random.Random(0), max_attempts_per_object=0)


def test_existing_extra_keys_are_kept_and_coordinates_replaced():
    obj = SceneObject("red", "cube", "small", "rubber", 3, (9.0, 9.0, 9.0), (1.0, 2.0, 3.0), {"note": "x"},
                      mask={"size": [2, 2], "counts": "04"})
    placed = place_objects(Scene((obj,)), random.Random(0)).scene.objects[0]
    assert placed.extra == {"note": "x"} and placed.mask == {"size": [2, 2], "counts": "04"}
    assert placed.rotation is not None
    assert placed.pixel_coords is None
    assert domain.region_of_point(*placed.coords_3d[:2]) == 3
