"""Complete scene graphs: agreement with clingo, (near-)uniformity, determinism, partial scenes."""

from __future__ import annotations

import random
from collections import Counter

import numpy as np
import pytest

from clevr_poc import ClevrPocError, UnsatisfiableError
from clevr_poc.environments import Constraint as C
from clevr_poc.environments import Environment
from clevr_poc.generation.object_types import NUM_TYPES, type_object
from clevr_poc.generation.scene_programs import random_models
from clevr_poc.generation.scene_sampler import SceneSampler
from clevr_poc.generation.partial_scenes import choose_hidden, make_partial
from clevr_poc.generation.scene_programs import enumerate_scenes
from clevr_poc.generation.object_types import type_id
from clevr_poc.scene import Scene, SceneObject, compute_relationships

from uniformity_reference import chi_square_p_value, small_environment


def counting_environment() -> Environment:
    """N=7, every counting template (6-10), a same-region pair count (ordered pairs counted twice)."""
    return Environment((
        C("negation", {"r": 0, "p1": "shape", "v1": "cone"}),
        C("or", {"r": 1, "p1": "material", "v1": "metal", "p2": "color", "v2": "red"}),
        C("exactly_n", {"r": 0, "p1": "size", "v1": "small", "n": 1}),
        C("exactly_n", {"r": 3, "p1": "material", "v1": "rubber", "n": 2}),
        C("at_least_pairs", {"r1": 1, "r2": 2, "p1": "shape", "n": 1}),
        C("at_least_pairs_with_value", {"r1": 2, "r2": 2, "p1": "color", "p2": "material", "v2": "metal",
                                        "n": 2}),
        C("at_most_pairs", {"r1": 0, "r2": 3, "p1": "color", "n": 2}),
        C("at_most_pairs_with_value", {"r1": 1, "r2": 3, "p1": "shape", "p2": "size", "v2": "large", "n": 1}),
        C("generic", {"p1": "color", "v1": "yellow"}),
    ), 7, id=102)


def _scene_key(types) -> tuple[int, ...]:
    return tuple(sorted(int(t) for t in types))


@pytest.fixture(scope="module")
def small_solutions() -> Counter:
    """Every complete scene of :func:`small_environment` (clingo enumeration), as sorted type tuples."""
    return Counter(_scene_key(type_id(o) for o in s.objects) for s in enumerate_scenes(small_environment()))


def test_small_environment_enumeration(small_solutions):
    assert sum(small_solutions.values()) == 1824  # labelled answer sets
    assert len(small_solutions) == 76  # sets of 4 distinct objects: 76 * 4! = 1824
    assert set(small_solutions.values()) == {24}


@pytest.mark.parametrize("method", ["rejection", "mcmc"])
def test_samples_are_close_to_uniform(small_solutions, method):
    sampler = SceneSampler(small_environment(), method=method, verify=False, pool_size=256, pool_chains=32)
    assert sampler.method == method
    rng = random.Random(7)
    draws = 3800  # 50 per scene on average
    counts = Counter(_scene_key(row) for row in sampler.sample_types_many(rng, draws))
    assert set(counts) <= set(small_solutions)  # only answer sets
    assert len(counts) == len(small_solutions)  # every one of the 76 is reached
    observed = [counts[key] for key in small_solutions]
    total_variation = 0.5 * sum(abs(o / draws - 1 / len(small_solutions)) for o in observed)
    # sampling noise alone gives TV about 0.057 here (3800 exact uniform draws); the first 200 models
    # of one clingo enumeration give 0.5 (next test)
    assert total_variation < 0.1, total_variation
    assert chi_square_p_value(observed, draws / len(small_solutions)) > 1e-4


def test_first_models_of_one_enumeration_are_not_uniform(small_solutions):
    # the official approach keeps the first models of one enumeration: a baseline, not our method
    first = Counter(_scene_key(type_id(o) for o in s.objects) for s in enumerate_scenes(small_environment(), 200))
    assert sum(first.values()) == 200
    total_variation = 0.5 * sum(abs(first[key] / 200 - 1 / len(small_solutions)) for key in small_solutions)
    assert total_variation > 0.3


def test_object_ids_are_exchangeable():
    sampler = SceneSampler(small_environment(), verify=False)
    rng = random.Random(3)
    regions = Counter((i, o.region) for _ in range(1500) for i, o in enumerate(sampler.sample(rng).objects))
    # object 0 and object 3 are in region 2 (exactly one red sphere there, often more) equally often
    assert abs(regions[(0, 2)] - regions[(3, 2)]) < 120


@pytest.mark.parametrize("make_env", [small_environment, counting_environment])
def test_python_check_agrees_with_clingo(make_env):
    env = make_env()
    sampler = SceneSampler(env, verify=False, calibration_proposals=20_000)
    gen = np.random.default_rng(0)
    proposals = sampler.proposal.draw(gen, 1000)
    # near misses too: sampled scenes with one object replaced by a random allowed type
    scenes = np.array([sampler.sample_types(random.Random(k)) for k in range(60)])
    mutated = scenes.copy()
    mutated[np.arange(60), gen.integers(0, env.num_objects, 60)] = sampler.allowed[gen.integers(0, len(sampler.allowed), 60)]
    X = np.concatenate((proposals, scenes, mutated))
    python = sampler.check.feasible(X)
    clingo_says = np.array([sampler._program.is_scene(row) for row in X])
    assert (python == clingo_says).all()
    # small batches take another code path (all constraints at once)
    assert (np.concatenate([sampler.check.feasible(X[k:k + 10]) for k in range(0, len(X), 10)]) == python).all()
    assert python[:1000].sum() >= 3 and (~python).sum() > 50  # both answers occur
    assert python[1000:1060].all()


def test_counting_environment_samples_satisfy_all_templates():
    env = counting_environment()
    sampler = SceneSampler(env)  # verify=True: every scene is checked by clingo
    rng = random.Random(11)
    scenes = [sampler.sample(rng) for _ in range(40)]
    assert sampler.stats.verified == 40
    for scene in scenes:
        assert len(scene) == 7
        in_region0 = [o for o in scene.objects if o.region == 0]
        assert sum(o.size == "small" for o in in_region0) == 1
        assert sum(o.material == "rubber" for o in scene.objects if o.region == 3) == 2
        assert all(o.color != "yellow" for o in scene.objects)
        assert len({(o.color, o.shape, o.size, o.material) for o in scene.objects}) == 7
        assert max(Counter(o.region for o in scene.objects).values()) <= 3
    assert len({_scene_key(type_id(o) for o in s.objects) for s in scenes}) == 40  # diverse


@pytest.mark.parametrize("method", ["rejection", "mcmc"])
def test_same_rng_state_same_scene(method):
    env = counting_environment()
    a = SceneSampler(env, method=method, pool_size=64, pool_chains=8)
    b = SceneSampler(env, method=method, pool_size=64, pool_chains=8)
    rng_a, rng_b = random.Random(5), random.Random(5)
    a.sample(random.Random(99))  # history of the sampler does not matter
    first = [a.sample(rng_a) for _ in range(5)]
    second = [b.sample(rng_b) for _ in range(5)]
    assert first == second
    assert len({s.objects for s in first}) == 5
    assert a.sample(random.Random(1)) != a.sample(random.Random(2))


def test_sample_many_is_deterministic_and_valid():
    sampler = SceneSampler(counting_environment(), method="mcmc", pool_size=64, pool_chains=8)
    first = sampler.sample_many(random.Random(3), 30)
    assert [s.objects for s in first] == [s.objects for s in sampler.sample_many(random.Random(3), 30)]
    assert sampler.stats.verified == 60  # every scene checked by clingo
    assert len({s.objects for s in first}) == 30


def test_random_models_are_diverse_complete_scenes_and_deterministic():
    env = counting_environment()
    models = random_models(env, 6, seed=4)
    assert len(models) == 6
    sampler = SceneSampler(env, calibration_proposals=0)
    assert all(sampler._program.is_scene(m) for m in models)
    assert len({tuple(m) for m in models}) == 6
    assert [tuple(m) for m in random_models(env, 6, seed=4)] == [tuple(m) for m in models]


def test_random_models_stop_on_a_slow_search_instead_of_returning_fewer(monkeypatch):
    """A search past the time limit raises (before, fewer models came back: on a busy machine another
    Gibbs pool, hence other scenes, for the same seed)."""
    from contextlib import contextmanager

    from clevr_poc.errors import SolverTimeoutError
    from clevr_poc.generation import scene_programs

    @contextmanager
    def past_the_deadline(control, seconds):  # the watchdog fired: the solve was interrupted
        assert seconds == 30.0
        yield [True]

    monkeypatch.setattr(scene_programs.WATCHDOG, "limit", past_the_deadline)
    with pytest.raises(SolverTimeoutError, match="within 30 s"):
        random_models(counting_environment(), 3, seed=4)


def test_mcmc_fallback_when_rejection_budget_runs_out():
    sampler = SceneSampler(counting_environment(), method="rejection", max_proposals=1, pool_size=32, pool_chains=8)
    rng = random.Random(0)
    scenes = [sampler.sample(rng) for _ in range(20)]
    assert sampler.stats.mcmc_samples > 0
    assert all(sampler.is_scene(s) for s in scenes)


def test_auto_method_uses_rejection_when_cheap_and_mcmc_when_not():
    assert SceneSampler(small_environment()).method == "rejection"
    hard = SceneSampler(counting_environment(), max_expected_proposals=1)
    assert hard.method == "mcmc"
    assert 0 < hard.acceptance_rate < 1


def test_unsatisfiable_environment_raises():
    env = Environment((C("exactly_n", {"r": 0, "p1": "color", "v1": "red", "n": 3}),
                       C("value_restriction", {"r": 0, "p1": "color", "v1": "blue"})), 5)
    with pytest.raises(UnsatisfiableError):
        SceneSampler(env)
    with pytest.raises(UnsatisfiableError):
        SceneSampler(Environment((), 13))  # 4 regions hold at most 12 objects


def test_verification_catches_a_wrong_python_check(monkeypatch):
    sampler = SceneSampler(counting_environment(), method="rejection")
    monkeypatch.setattr(sampler.check, "feasible", lambda X: np.ones(len(X), dtype=bool))
    with pytest.raises(ClevrPocError, match="violates environment 102"):
        for seed in range(20):
            sampler.sample(random.Random(seed))


def test_bad_arguments():
    with pytest.raises(ClevrPocError):
        SceneSampler(small_environment(), method="magic")
    with pytest.raises(ClevrPocError):
        SceneSampler(small_environment(), pool_size=0)


def test_type_ids_round_trip():
    obj = SceneObject("cyan", "cone", "medium", "metal", 3)
    assert type_object(type_id(obj)) == obj
    assert sorted({type_id(type_object(t)) for t in range(NUM_TYPES)}) == list(range(768))


def test_make_partial_and_choose_hidden():
    objects = (SceneObject("red", "cube", "large", "metal", 0, (-3.0, 3.0, 1.0)),
               SceneObject("blue", "sphere", "small", "rubber", 1, (3.0, 1.0, 0.39)),
               SceneObject("green", "cone", "medium", "rubber", 3, (2.0, -3.0, 0.58)))
    complete = Scene(objects, compute_relationships([o.coords_3d[:2] for o in objects]))
    partial, hidden = make_partial(complete, 1)
    assert hidden == objects[1]
    assert partial.objects == (objects[0], objects[2])
    assert partial.relationships["right"] == ((1,), ())  # green (was 2) is right of red
    assert partial.relationships["behind"] == ((), (0,))
    with pytest.raises(IndexError):
        make_partial(complete, 3)
    picks = Counter(choose_hidden(complete, random.Random(s)) for s in range(600))
    assert set(picks) == {0, 1, 2} and min(picks.values()) > 150


def test_scenes_made_from_scenes_keep_the_normalised_relationships():
    """Issue 27: ``replace`` and ``without_object`` reuse a relationships mapping Scene made (no second
    conversion); a mapping given from outside is still converted (lists, numpy-like ints)."""
    import dataclasses

    from clevr_poc.scene import compute_relationships

    objects = (SceneObject("red", "cube", "large", "metal", 0), SceneObject("blue", "sphere", "small", "rubber", 1),
               SceneObject("gray", "cylinder", "medium", "metal", 2))
    raw = {"left": [[], [0], [True, 1]], "right": [[1, 2], [2], []]}
    scene = Scene(objects, raw)
    assert scene.relationships == {"left": ((), (0,), (1, 1)), "right": ((1, 2), (2,), ())}
    assert type(scene.relationships["left"][2][0]) is int and scene.relationships is not raw
    again = dataclasses.replace(scene, split="val")
    assert again.relationships is scene.relationships and again == dataclasses.replace(scene, split="val")
    partial = Scene(objects, compute_relationships([(0.0, 0.0), (1.0, 1.0), (2.0, -1.0)])).without_object(0)
    assert partial.relationships == {"left": ((), (0,)), "right": ((1,), ()), "front": ((1,), ()),
                                     "behind": ((), (0,))}
    assert dataclasses.replace(partial).relationships is partial.relationships


def test_compute_relationships_values_and_ties():
    from clevr_poc.scene import compute_relationships

    rel = compute_relationships([(0.0, 0.0), (1.0, 0.0), (0.0, -2.0), (float("nan"), 5.0)])
    assert list(rel) == ["left", "right", "front", "behind"]
    assert rel["left"] == ((), (0, 2), (), ())          # ties (equal x) and NaN are in neither list
    assert rel["right"] == ((1,), (), (1,), ())
    assert rel["front"] == ((2,), (2,), (), (0, 1, 2))
    assert rel["behind"] == ((3,), (3,), (0, 1, 3), ())


def test_without_object_is_replace_with_the_renumbered_parts():
    import dataclasses

    from clevr_poc.scene import compute_relationships
    from clevr_poc.scene_metadata import GenerationCounts

    objects = tuple(SceneObject(c, "cube", "large", "metal", r, coords_3d=(x, y, 0.7))
                    for c, r, x, y in [("red", 0, 0.0, 0.0), ("blue", 1, 1.0, 2.0), ("gray", 2, -1.0, 1.0)])
    scene = Scene(objects, compute_relationships([(0.0, 0.0), (1.0, 2.0), (-1.0, 1.0)]), "val", 3,
                  "CLEVR_val_000003.png", {"note": 1}, environment_id=7,
                  generation=GenerationCounts(**{k: 1 for k in GenerationCounts.__dataclass_fields__}))
    partial = scene.without_object(1)
    expected = dataclasses.replace(scene, objects=(objects[0], objects[2]),
                                   relationships={"left": ((1,), ()), "right": ((), (0,)), "front": ((), (0,)),
                                                  "behind": ((1,), ())}, extra={"note": 1})
    assert partial == expected and partial.__dict__ == expected.__dict__
    assert partial.extra is not scene.extra and partial.to_json() == expected.to_json()


def test_a_recorded_relationships_mapping_changed_since_is_converted():
    """Issue 27: compute_relationships' mapping is kept by the Scene made from it, unless it was changed."""
    from clevr_poc.scene import compute_relationships

    objects = (SceneObject("red", "cube", "large", "metal", 0), SceneObject("blue", "sphere", "small", "rubber", 1))
    rel = compute_relationships([(0.0, 0.0), (1.0, 1.0)])
    assert Scene(objects, rel).relationships is rel
    rel["left"] = [[], [0.0]]  # changed by its caller: a list and a float
    changed = Scene(objects, rel)
    assert changed.relationships is not rel and changed.relationships["left"] == ((), (0,))
    assert type(changed.relationships["left"][1][0]) is int
    rel2 = compute_relationships([(0.0, 0.0), (1.0, 1.0)])
    del rel2["front"]
    assert Scene(objects, rel2).relationships is not rel2 and set(Scene(objects, rel2).relationships) == {
        "left", "right", "behind"}
