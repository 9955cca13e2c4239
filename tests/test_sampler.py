"""The environment sampler (paper §3.1): bounds, clingo checks, determinism, template coverage."""

from __future__ import annotations

import collections

import pytest

from clevr_poc import domain
from clevr_poc.environments import TEMPLATES_BY_NAME, Constraint, Environment
from clevr_poc.environments import sampler
from clevr_poc.environments.checks import EnvironmentChecker, is_satisfiable
from clevr_poc.environments.sampler import (EnvironmentSamplingError, sample_environment,
                                            sample_environments)
from clevr_poc.errors import ClevrPocError, FormatError
from clevr_poc.seeds import ENVIRONMENT, derive_seed
from sampler_references import object_replacements_reference

SEEDS = range(40)


@pytest.fixture(scope="module")
def sampled() -> list[Environment]:
    return [sample_environment(seed, env_id=seed) for seed in SEEDS]


def region_counts(environment: Environment) -> dict[int, int]:
    counts = {r: 0 for r in domain.REGIONS}
    for c in environment.constraints:
        for r in c.regions:
            counts[r] += 1
    return counts


def test_bounds_of_the_paper(sampled):
    for environment in sampled:
        assert 1 <= len(environment.constraints) <= 15
        assert 5 <= environment.num_objects <= 9
        assert min(region_counts(environment).values()) >= 2, environment.describe()
        assert len(set(environment.constraints)) == len(environment.constraints)  # no duplicates
    assert {e.num_objects for e in sampled} == set(range(5, 10))
    assert [e.id for e in sampled] == list(SEEDS)


def test_every_one_of_the_eleven_templates_is_used(sampled):
    used = collections.Counter(c.template for e in sampled for c in e.constraints)
    assert set(used) == set(TEMPLATES_BY_NAME), used


def test_parameter_ranges(sampled):
    for c in (c for e in sampled for c in e.constraints):
        p = c.params
        if c.template == "exactly_n":
            assert 0 <= p["n"] <= 3
        if c.spec.kind == "across":
            assert p["r1"] != p["r2"]
            assert 1 <= p["n"] <= (2 if c.template.startswith("at_least") else 3)
        if "p2" in p and c.template != "or":
            assert p["p2"] != p["p1"]
        if c.template in ("negation_same_property", "or") and p.get("p2", p["p1"]) == p["p1"]:
            assert p["v1"] != p["v2"] and p["p1"] != "material"


def test_environments_are_satisfiable_without_useless_constraints_and_leave_room(sampled):
    for environment in sampled[:12]:
        assert is_satisfiable(environment)
        checker = EnvironmentChecker(environment.num_objects)
        handles = [checker.add(c) for c in environment.constraints]
        # every constraint can be violated by a scene that satisfies all the others
        assert all(checker.violable(h, handles) for h in handles), environment.describe()
        # in every region an object can take at least 4 different descriptions
        for region in domain.REGIONS:
            assert len(checker.descriptions(handles, region=region, limit=4)) == 4


def test_same_seed_same_environment_byte_for_byte(sampled):
    again = sample_environment(7, env_id=7)
    assert again == sampled[7]
    assert again.to_asp() == sampled[7].to_asp()
    assert len({e.to_asp(background=False) for e in sampled}) == len(sampled)  # seeds give different ones


def test_sample_environments_uses_derived_seeds_independent_of_count():
    three = sample_environments(3, seed=11)
    two = sample_environments(2, seed=11)
    assert [e.id for e in three] == [0, 1, 2]
    assert two == three[:2]
    assert three[1] == sample_environment(derive_seed(ENVIRONMENT, 11, 1), env_id=1)
    assert sample_environments(0, seed=11) == []


def test_keyword_arguments_are_respected():
    small = sample_environment(3, num_objects=6, max_constraints=6, min_per_region=2)
    assert small.num_objects == 6 and len(small.constraints) <= 6
    assert min(region_counts(small).values()) >= 2  # needs across-region constraints
    only = sample_environment(5, template_weights={"negation": 1, "at_most_pairs": 1}, min_per_region=1)
    assert {c.template for c in only.constraints} <= {"negation", "at_most_pairs"}
    assert min(region_counts(only).values()) >= 1


def test_bad_arguments_are_format_errors():
    with pytest.raises(FormatError, match="unknown template"):
        sample_environment(0, template_weights={"negations": 1.0})
    with pytest.raises(FormatError, match="non-negative"):
        sample_environment(0, template_weights={"negation": -1.0})
    with pytest.raises(FormatError, match="cannot give 2 to each of 4 regions"):
        sample_environment(0, max_constraints=3, min_per_region=2)
    with pytest.raises(FormatError, match="needs a region or across-region template"):
        sample_environment(0, template_weights={"generic": 1.0})
    with pytest.raises(FormatError, match="num_objects"):
        sample_environment(0, num_objects=13)


def test_gives_up_with_a_typed_error_after_bounded_tries(monkeypatch):
    monkeypatch.setattr(sampler, "MAX_CANDIDATES", 5)
    monkeypatch.setattr(sampler, "MAX_ATTEMPTS", 2)
    # 5 candidates cannot reach the 8 constraints that 2 per region need (and with every description
    # required to stay possible in every region, most candidates are rejected anyway)
    with pytest.raises(EnvironmentSamplingError, match="2 attempts of 5 candidates") as info:
        sample_environment(0, min_descriptions=192)
    assert isinstance(info.value, ClevrPocError)


def test_is_satisfiable_on_hand_built_environments():
    red_only = Constraint("value_restriction", {"r": 0, "p1": "color", "v1": "red"})
    blue_only = Constraint("value_restriction", {"r": 0, "p1": "color", "v1": "blue"})
    one_in_0 = Constraint("exactly_n", {"r": 0, "p1": "size", "v1": "small", "n": 1})
    assert is_satisfiable(Environment((red_only, one_in_0), 5))
    assert not is_satisfiable(Environment((red_only, blue_only, one_in_0), 5))  # region 0 must be empty
    assert is_satisfiable(Environment((), 12)) and not is_satisfiable(Environment((), 13))  # <= 3 per region
    with pytest.raises(ValueError):
        is_satisfiable(Environment((), 5), time_limit=0)


def test_checker_finds_useless_constraints():
    checker = EnvironmentChecker(5)
    blue = checker.add(Constraint("value_restriction", {"r": 0, "p1": "color", "v1": "blue"}))
    not_red = checker.add(Constraint("negation", {"r": 0, "p1": "color", "v1": "red"}))
    too_many = checker.add(Constraint("at_most_pairs", {"r1": 0, "r2": 1, "p1": "color", "n": 10}))
    assert not checker.violable(not_red, [blue])  # implied by "all blue"
    assert checker.violable(blue, [not_red])
    assert not checker.violable(too_many, [])  # 3 x 3 = 9 pairs at most
    assert checker.satisfiable([blue, not_red, too_many])
    # region 0: every object is blue -> 4 shapes x 3 sizes x 2 materials descriptions
    assert len(checker.descriptions([blue], region=0)) == 24
    assert len(checker.descriptions([blue], region=1)) == 192


def test_object_replacements_equal_the_counting_reference():
    """Issue 27: ``SceneCheck.object_replacements`` decides each pair-counting constraint once per pair of
    key values and looks candidates up; the same booleans as counting the pairs of every candidate
    (``object_replacements_reference`` in ``tests/sampler_references.py``), on random complete scenes of environments with pair constraints,
    for the allowed types and for random type ids."""
    import numpy as np

    from clevr_poc.environments.sampler import sample_environment
    from clevr_poc.generation.scene_sampler import SceneSampler
    from clevr_poc.seeds import ENVIRONMENT, derive_seed

    tested = 0
    for env in range(12):
        sampler = SceneSampler(sample_environment(derive_seed(ENVIRONMENT, 0, env), env_id=env),
                               calibration_proposals=5_000)
        if not sampler.check.pairs:
            continue
        gen = np.random.default_rng(env)
        rows = np.array([sampler.sample_types(__import__("random").Random(k)) for k in range(24)])
        for trial in range(6):
            i = int(gen.integers(rows.shape[1]))
            others = np.delete(rows, i, axis=1)
            candidates = sampler.allowed if trial % 2 else gen.integers(0, 768, size=200)
            fast = sampler.check.object_replacements(others, candidates)
            assert fast.shape == (24, len(candidates)) and fast.any()
            assert np.array_equal(fast, object_replacements_reference(sampler.check, others, candidates))
            tested += 1
    assert tested >= 12
