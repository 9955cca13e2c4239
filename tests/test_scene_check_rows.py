"""Issue 27: the one-scene checks of ``SceneCheck`` (``*_row``) and the Gibbs kernel's one-chain sweeps give
exactly what the batch versions give on a batch of one (same booleans, same chain, same draws)."""

from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from clevr_poc.environments.sampler import sample_environment
from clevr_poc.generation.scene_sampler import SceneSampler
from clevr_poc.seeds import ENVIRONMENT, derive_seed
from sampler_references import draw_reference, pair_replacements_reference, sweeps_batch_reference

#: Environments (seed 0) with one-object counts and pair counts (2, 4, 9), pairs only (6, 7), none (5),
#: and the two that use the Gibbs sampler (1, 7).
_ENVIRONMENTS = (1, 2, 4, 5, 6, 7, 9)
_SAMPLERS: dict[int, SceneSampler] = {}


def _sampler(env: int) -> SceneSampler:
    if env not in _SAMPLERS:
        _SAMPLERS[env] = SceneSampler(sample_environment(derive_seed(ENVIRONMENT, 0, env), env_id=env),
                                      calibration_proposals=5_000, pool_size=64, burn_in=5)
    return _SAMPLERS[env]


def _scenes(sampler: SceneSampler, seed: int, count: int) -> np.ndarray:
    return np.array([sampler.sample_types(random.Random(seed * 1000 + k)) for k in range(count)])


@settings(max_examples=40, deadline=None)
@given(env=st.sampled_from(_ENVIRONMENTS), seed=st.integers(0, 10_000), data=st.data())
def test_row_checks_equal_the_batch_checks(env, seed, data):
    sampler = _sampler(env)
    check = sampler.check
    scenes = _scenes(sampler, seed, 4)
    N = scenes.shape[1]
    gen = np.random.default_rng(seed)
    # whole scenes: the samples (complete) and random changes of them (mostly not)
    mutated = np.where(gen.random(scenes.shape) < 0.3, gen.integers(0, 768, scenes.shape), scenes)
    rows = np.concatenate((scenes, mutated))
    batch = check.feasible(rows)
    assert [check.feasible_row(x) for x in rows] == batch.tolist()
    # one object replaced: the allowed types and random type ids as candidates
    i = data.draw(st.integers(0, N - 1))
    others = np.delete(rows, i, axis=1)
    for candidates in (sampler.allowed, gen.integers(0, 768, size=100)):
        expected = check.object_replacements(others, candidates)
        for k in range(len(rows)):
            assert np.array_equal(check.object_replacements_row(others[k], candidates), expected[k])
    # two objects replaced: random candidate pairs
    if N > 2:
        j = (i + data.draw(st.integers(1, N - 1))) % N
        others = np.delete(rows, [i, j], axis=1)
        ti, tj = gen.integers(0, 768, size=(2, len(rows), 30))
        expected = check.pair_replacements(others, ti, tj)
        for k in range(len(rows)):
            assert np.array_equal(check.pair_replacements_row(others[k], ti[k], tj[k]), expected[k])


@pytest.mark.parametrize("env", _ENVIRONMENTS)
def test_one_chain_sweeps_equal_the_batch_sweeps(env):
    sampler = _sampler(env)
    kernel = sampler.kernel
    for seed in range(4):
        start = _scenes(sampler, seed, 1)
        row, batch = start.copy(), start.copy()
        gen_row, gen_batch = np.random.default_rng(seed), np.random.default_rng(seed)
        steps = kernel.sweeps(row, gen_row, 3)
        assert steps == kernel._sweeps_batch(batch, gen_batch, 3)
        assert np.array_equal(row, batch)
        assert gen_row.random() == gen_batch.random()  # the same draws, in the same order
        assert sampler.check.feasible(row)[0]


@pytest.mark.parametrize("env", _ENVIRONMENTS)
def test_batch_sweeps_equal_the_reference_steps(env):
    """Issue 27 (helper ``gb``): the batch steps from count features (``gibbs_batch.BatchSteps``) give the
    chains and the draws of the ``SceneCheck`` batch checks (``sweeps_batch_reference``), on 64 chains from the
    pool and on a few chains, through several sweeps."""
    sampler = _sampler(env)
    kernel = sampler.kernel
    for seed, chains in ((0, 64), (1, 3), (2, 2)):
        start = sampler.pool()[:chains].copy()
        fast, reference = start.copy(), start.copy()
        gen_fast, gen_reference = np.random.default_rng(seed), np.random.default_rng(seed)
        assert kernel._sweeps_batch(fast, gen_fast, 3) == sweeps_batch_reference(kernel, reference, gen_reference, 3)
        assert np.array_equal(fast, reference)
        assert gen_fast.random() == gen_reference.random()
        assert sampler.check.feasible(fast).all()
        if kernel.fields and chains == 64:
            assert (fast != start).any(axis=1).mean() > 0.5  # the chains move


def test_batch_sweeps_specific_values():
    """Environment 7 (seed 0; Gibbs sampler): the first 3 pool states after 1 sweep from generator seed 3."""
    X = _sampler(7).pool()[:3].copy()
    assert _sampler(7).kernel.sweeps(X, np.random.default_rng(3), 1) == 18
    assert X.tolist() == EXPECTED_BATCH


EXPECTED_BATCH = [[526, 452, 462, 764, 388, 430], [404, 476, 566, 318, 284, 430], [25, 478, 430, 612, 452, 196]]


def test_one_chain_sweeps_specific_values():
    """Environment 1 (seed 0; Gibbs sampler): the chain from its first pool state after 2 sweeps (seed 3)."""
    sampler = _sampler(1)
    X = sampler.pool()[:1].copy()
    assert sampler.kernel.sweeps(X, np.random.default_rng(3), 2) == 48
    assert X.tolist() == EXPECTED_CHAIN


EXPECTED_CHAIN = [[161, 139, 758, 175, 754, 120, 185, 687]]


@pytest.mark.parametrize("env", _ENVIRONMENTS)
def test_draw_equals_the_table_by_table_reference(env):
    """``StratifiedProposal.draw`` takes the option tables' uniforms in one call: the same proposals and the
    same generator state afterwards as drawing table by table."""
    proposal = _sampler(env).proposal
    for size in (1, 2, 7, 32, 700):
        fast, reference = np.random.default_rng(size), np.random.default_rng(size)
        for _ in range(5):
            assert np.array_equal(proposal.draw(fast, size), draw_reference(proposal, reference, size))
        assert fast.random() == reference.random()


@pytest.mark.parametrize("env", _ENVIRONMENTS)
def test_batch_rows_and_chunks_equal_draw(env):
    """``ProposalBatch.row`` (plain Python, one proposal at a time) and ``chunks`` from any first row give
    ``draw``'s proposals, and ``draw_batch`` leaves the generator where ``draw`` does."""
    proposal = _sampler(env).proposal
    for size in (1, 2, 7, 32, 300):
        expected = proposal.draw(np.random.default_rng(size), size)
        gen = np.random.default_rng(size)
        batch = proposal.draw_batch(gen, size)
        first = min(size, 5)
        rows = [batch.row(k) for k in range(first)]
        rest = list(batch.chunks(first, 64))
        got = np.concatenate([np.array(rows, dtype=np.int64).reshape(first, -1)] + rest)
        assert got.dtype == expected.dtype and np.array_equal(got, expected)
        reference = np.random.default_rng(size)
        proposal.draw(reference, size)
        assert gen.random() == reference.random()
    with pytest.raises(ValueError):
        proposal.draw_batch(np.random.default_rng(0), 4).row(1)


def test_batch_rows_specific_values():
    """Environment 5 (seed 0): the two proposals of ``test_draw_specific_values``, one row at a time."""
    batch = _sampler(5).proposal.draw_batch(np.random.default_rng(0), 2)
    assert [batch.row(0), batch.row(1)] == EXPECTED_DRAW


@settings(max_examples=40, deadline=None)
@given(env=st.sampled_from(_ENVIRONMENTS), seed=st.integers(0, 10_000))
def test_feasible_list_equals_feasible(env, seed):
    """``SceneCheck.feasible_list`` (plain Python, one scene) gives ``feasible``'s booleans: on samples
    (complete), random changes of them, raw proposals and random type ids (also over capacity)."""
    sampler = _sampler(env)
    check = sampler.check
    scenes = _scenes(sampler, seed, 4)
    gen = np.random.default_rng(seed)
    mutated = np.where(gen.random(scenes.shape) < 0.3, gen.integers(0, 768, scenes.shape), scenes)
    swapped = np.where(gen.random(scenes.shape) < 0.5, scenes[::-1], scenes)
    crowded = scenes - scenes % 4  # every object in region 0
    rows = np.concatenate((scenes, mutated, swapped, crowded, sampler.proposal.draw(gen, 64),
                           gen.integers(0, 768, scenes.shape)))
    assert [check.feasible_list(x) for x in rows.tolist()] == check.feasible(rows).tolist()


def test_draw_specific_values():
    """Environment 5 (seed 0; no counting constraint): two proposals from generator seed 0."""
    assert _sampler(5).proposal.draw(np.random.default_rng(0), 2).tolist() == EXPECTED_DRAW


EXPECTED_DRAW = [[672, 456, 296, 339, 11], [176, 579, 467, 447, 352]]


@settings(max_examples=60, deadline=None)
@given(rows=st.integers(1, 70), objects=st.integers(1, 9), seed=st.integers(0, 2 ** 32 - 1))
def test_pair_counts_equal_counting_every_pair(rows, objects, seed):
    from clevr_poc.generation.scene_check import _pair_counts

    gen = np.random.default_rng(seed)
    k1, k2 = gen.integers(-1, 8, (2, rows, objects))
    pairs = [sum(1 for i in range(objects) for j in range(objects) if i != j and k1[b, i] == k2[b, j] >= 0)
             for b in range(rows)]
    assert _pair_counts(k1, k2).tolist() == pairs


def test_pair_counts_specific_values():
    from clevr_poc.generation.scene_check import _pair_counts

    # row 0: keys (0, 0, -1) on both sides: pairs (0, 1) and (1, 0); row 1: (2, -1, 2) against (2, 2, -1):
    # (0, 1), (2, 0), (2, 1)
    assert _pair_counts(np.array([[0, 0, -1], [2, -1, 2]]), np.array([[0, 0, -1], [2, 2, -1]])).tolist() == [2, 3]


@settings(max_examples=30, deadline=None)
@given(env=st.sampled_from(_ENVIRONMENTS), seed=st.integers(0, 10_000))
def test_pair_replacements_equal_the_fancy_indexing_reference(env, seed):
    sampler = _sampler(env)
    scenes = _scenes(sampler, seed, 6)
    gen = np.random.default_rng(seed)
    N = scenes.shape[1]
    i, j = gen.choice(N, size=2, replace=False)
    others = np.delete(scenes, [i, j], axis=1)
    ti, tj = gen.integers(0, 768, (2, len(scenes), 40))
    ti[:, 0], tj[:, 0] = scenes[:, i], scenes[:, j]  # the scenes themselves: feasible
    fast = sampler.check.pair_replacements(others, ti, tj)
    assert np.array_equal(fast, pair_replacements_reference(sampler.check, others, ti, tj))
    assert fast[:, 0].all()


def test_value_counts_specific_values():
    from clevr_poc.generation.scene_check import _value_counts

    keys = np.array([[[0, 0, -1, 7], [3, -1, -1, 3]]])  # (1, 2, 4)
    assert _value_counts(keys).tolist() == [[[2, 0, 0, 0, 0, 0, 0, 1, 0], [0, 0, 0, 2, 0, 0, 0, 0, 0]]]


@settings(max_examples=60, deadline=None)
@given(rows=st.integers(1, 70), width=st.integers(1, 500), density=st.floats(0.001, 1.0),
       seed=st.integers(0, 2 ** 32 - 1))
def test_choose_equals_the_cumulative_sum_reference(rows, width, density, seed):
    from clevr_poc.generation.gibbs_kernel import _choose
    from sampler_references import choose_reference

    gen = np.random.default_rng(seed)
    ok = gen.random((rows, width)) < density
    ok[np.arange(rows), gen.integers(0, width, rows)] = True  # every row has a True entry (as in the kernel)
    fast, reference = np.random.default_rng(seed + 1), np.random.default_rng(seed + 1)
    assert np.array_equal(_choose(ok, fast), choose_reference(ok, reference))
    assert fast.random() == reference.random()


def test_choose_specific_values():
    from clevr_poc.generation.gibbs_kernel import _choose

    ok = np.array([[False, True, True, False], [True, False, False, False], [True, True, True, True]])
    # uniforms of generator 7: 0.625, 0.897, 0.776 -> True entries 1 of 2, 0 of 1, 3 of 4 (columns 2, 0, 3)
    assert _choose(ok, np.random.default_rng(7)).tolist() == EXPECTED_CHOICES


EXPECTED_CHOICES = [2, 0, 3]


@settings(max_examples=40, deadline=None)
@given(env=st.sampled_from(_ENVIRONMENTS), seed=st.integers(0, 10_000), data=st.data())
def test_field_checks_equal_the_full_check_on_field_changes(env, seed, data):
    """``SceneCheck.for_field(name)`` leaves out the constraints that do not depend on field ``name``: on
    complete scenes whose objects change in that field only (the field steps and swaps), the same answers."""
    from clevr_poc.generation.object_types import FIELD_DOMAIN, FIELD_STRIDE, FIELD_VALUE

    sampler = _sampler(env)
    if not sampler.kernel.fields:
        return
    name = data.draw(st.sampled_from(sampler.kernel.fields))
    check, field = sampler.check, sampler.check.for_field(name)
    scenes = _scenes(sampler, seed, 6)
    gen = np.random.default_rng(seed)
    N, size, stride = scenes.shape[1], len(FIELD_DOMAIN[name]), FIELD_STRIDE[name]
    values = FIELD_VALUE[name][scenes]
    changed = scenes + (gen.integers(0, size, scenes.shape) - values) * (gen.random(scenes.shape) < 0.5) * stride
    assert np.array_equal(field.feasible(changed), check.feasible(changed))
    assert [field.feasible_row(x) for x in changed] == check.feasible(changed).tolist()
    if N > 2:
        i, j = gen.choice(N, size=2, replace=False)
        others = np.delete(scenes, [i, j], axis=1)
        vi, vj = gen.integers(0, size, (2, len(scenes), 20))
        ti = scenes[:, i:i + 1] + (vi - values[:, i:i + 1]) * stride
        tj = scenes[:, j:j + 1] + (vj - values[:, j:j + 1]) * stride
        assert np.array_equal(field.pair_replacements(others, ti, tj), check.pair_replacements(others, ti, tj))
        for k in range(len(scenes)):
            assert np.array_equal(field.pair_replacements_row(others[k], ti[k], tj[k]),
                                  check.pair_replacements(others, ti, tj)[k])


def test_field_checks_keep_the_constraints_that_name_the_field():
    sampler = _sampler(1)  # environment 1 (seed 0): 1 exactly-N and 4 pair constraints
    counts = {name: (len(sampler.check.for_field(name).objects), len(sampler.check.for_field(name).pairs))
              for name in sampler.kernel.fields}
    assert counts == EXPECTED_FIELD_COUNTS


# color: the 1st and 4th pair constraints; shape: the exactly-N; size: 4th, 5th; material: 1st, 2nd, 5th
EXPECTED_FIELD_COUNTS = {"color": (0, 2), "shape": (1, 0), "size": (0, 2), "material": (0, 3), "region": (1, 4)}


@pytest.mark.parametrize("env", [6, 9])  # 4 pair constraints each; the order changes
def test_feasible_in_any_pair_order_equals_all_at_once(env):
    """``feasible`` reorders its pair constraints by the share of rows they keep: the same booleans as
    checking everything at once (``_feasible_stacked``), before and after the order changed."""
    sampler = SceneSampler(sample_environment(derive_seed(ENVIRONMENT, 0, env), env_id=env),
                           calibration_proposals=0)
    check, gen = sampler.check, np.random.default_rng(env)
    orders = set()
    for _ in range(40):
        X = sampler.proposal.draw(gen, 100)
        assert np.array_equal(check.feasible(X), check._feasible_stacked(X))
        orders.add(tuple(check._pair_order))
    assert len(check.pairs) >= 2 and len(orders) >= 2


def test_a_sampler_from_a_state_leaves_its_allowed_types_to_the_process(monkeypatch):
    """Issue 27: ``allowed_types`` of an environment whose sampler was rebuilt from a state is that state's
    array (no second enumeration in a worker), equal to clingo's."""
    from clevr_poc.generation import scene_programs

    environment = sample_environment(derive_seed(ENVIRONMENT, 0, 8), env_id=8)
    state = SceneSampler(environment, calibration_proposals=0).state()
    expected = scene_programs._allowed_types(scene_programs._unary_text(environment.constraints)).tolist()
    monkeypatch.setattr(scene_programs, "_ALLOWED", {})
    SceneSampler(environment, calibration_proposals=0, state=state)
    monkeypatch.setattr(scene_programs, "_allowed_types", lambda unary: pytest.fail("enumerated again"))
    allowed = scene_programs.allowed_types(environment.constraints)
    assert allowed.tolist() == expected and len(expected) == 102 and not allowed.flags.writeable


def test_type_id_is_the_encoding_of_the_module_docstring():
    """Issue 27: type_id reads TYPE_OF_TUPLE; the same ids as the stride sum, the same KeyError outside."""
    import pytest

    from clevr_poc.generation.object_types import FIELD_STRIDE, NUM_TYPES, TYPE_FIELDS, VALUE_INDEX, type_id, type_object
    from clevr_poc.scene import SceneObject

    for t in range(NUM_TYPES):
        obj = type_object(t)
        assert type_id(obj) == t == sum(VALUE_INDEX[f][getattr(obj, f)] * FIELD_STRIDE[f] for f in TYPE_FIELDS)
    assert type_id(SceneObject("gray", "cube", "large", "rubber", 3)) == 19  # ((((0*4 + 0)*3 + 2)*2 + 0)*4 + 3)
    with pytest.raises(KeyError, match="pink"):
        type_id(SceneObject("pink", "cube", "large", "metal", 0))


def test_scene_from_types_builds_the_objects_the_constructor_builds():
    """``scene_from_types`` copies per-type templates: every type gives an object equal to
    ``SceneObject(*TYPE_TUPLES[t])`` with the same field values and its own ``extra`` dict."""
    from clevr_poc.generation.object_types import NUM_TYPES, TYPE_TUPLES, scene_from_types
    from clevr_poc.scene import Scene, SceneObject

    types = list(range(NUM_TYPES))
    scene = scene_from_types(np.array(types))
    expected = Scene(tuple(SceneObject(*TYPE_TUPLES[t]) for t in types))
    assert scene == expected and repr(scene) == repr(expected)
    assert [o.__dict__ for o in scene.objects] == [o.__dict__ for o in expected.objects]
    assert scene.objects[5].describe() == "small gray metal cube in region 1"
    assert scene.objects[0].extra is not scene.objects[1].extra
    assert scene_from_types([5, 5]).objects[0].extra is not scene.objects[5].extra
    # the scene itself: Scene(objects)'s field values, in the same order, its own empty relationships and extra
    assert list(vars(scene)) == list(vars(expected)) and vars(scene) == vars(expected)
    assert vars(scene_from_types(types)) == vars(expected) and scene_from_types(types) == expected
    assert scene.relationships == {} and scene.relationships is not scene_from_types([1]).relationships
    assert scene.extra == {} and scene.extra is not scene_from_types([1]).extra


@pytest.mark.parametrize("env", _ENVIRONMENTS)
def test_pair_counts_of_equals_pair_counts(env):
    """``SceneCheck._pair_counts_of`` (feasible's per-constraint counts) equals ``_pair_counts`` of the keys."""
    from clevr_poc.generation.scene_check import _pair_counts

    check = _sampler(env).check
    X = np.random.default_rng(env).integers(0, 768, (300, 9))
    for k, c in enumerate(check.pairs):
        assert np.array_equal(check._pair_counts_of(k, X), _pair_counts(c.key1[X], c.key2[X]))


def test_fixed_cells_cover_both_kinds_of_occupancy():
    """Issue 27: an occupancy whose (region, k) tables have one option each has its cells fixed
    (``StratifiedProposal._fixed_cells``; rows and chunks then skip the tables). The environments of
    ``test_batch_rows_and_chunks_equal_draw`` have all-fixed occupancies (the chunks' fast path) and mixed
    ones (rows with fixed and drawn cells), so both paths are compared with ``draw`` there."""
    kinds = {}
    for env in _ENVIRONMENTS:
        proposal = _sampler(env).proposal
        fixed = proposal._fixed_cells
        kinds[env] = ("all" if proposal._fixed_cell_array is not None else
                      "mixed" if any(cells is not None for cells in fixed) else "none")
        for cells, occupancy in zip(fixed, proposal.occupancies):
            assert cells is None or (len(cells) == proposal.num_objects == occupancy.sum() and cells == sorted(cells))
    assert kinds == {1: "all", 2: "mixed", 4: "mixed", 5: "all", 6: "all", 7: "all", 9: "all"}
