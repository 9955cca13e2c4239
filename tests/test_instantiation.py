"""Issue 27's unrolled instantiation (:func:`clevr_poc.generation.instantiation.instantiate`) against the
recursion it unrolls (:func:`instantiate_generic`): every template on random scenes, the same Instance or
the same rejection and the same rng state after; and the scene index's table of sufficient masks against
the patterns it summarises."""

from __future__ import annotations

import random

import pytest

from clevr_poc import domain
from clevr_poc.generation import template_shape
from clevr_poc.generation.instantiation import TemplateNotApplicable, instantiate, instantiate_generic
from clevr_poc.generation.scene_index import SceneIndex
from clevr_poc.generation.template_files import load_templates
from clevr_poc.generation.template_shape import ASSIGN_RELATE, ASSIGN_SAME, TemplateShape
from clevr_poc.scene import Scene, SceneObject, compute_relationships


def _random_scene(rng: random.Random, n: int) -> Scene:
    objects = tuple(SceneObject(rng.choice(domain.COLORS[:3]), rng.choice(domain.DOMAINS["shape"][:2]),
                                rng.choice(domain.DOMAINS["size"]), rng.choice(domain.DOMAINS["material"]),
                                rng.randrange(4), (rng.uniform(-5, 5), rng.uniform(-5, 5), 0.5)) for _ in range(n))
    return Scene(objects, compute_relationships([o.coords_3d[:2] for o in objects]))


def _scene_instances(rng: random.Random, templates, shapes):
    """The instantiations of every template on one random 9-object scene (drawn from ``rng``, as is each
    instantiation's seed; the templates that do not apply are left out): ``(template, instance)`` pairs."""
    scene = _random_scene(rng, 9)
    hidden = rng.randrange(len(scene))
    for template, shape in zip(templates, shapes):
        try:
            yield template, instantiate(template, shape, scene, hidden, random.Random(rng.random()))
        except TemplateNotApplicable:
            continue


def _outcome(function, template, shape, scene, hidden, seed):
    rng = random.Random(seed)
    try:
        instance = function(template, shape, scene, hidden, rng)
    except TemplateNotApplicable:
        return None, rng.getstate()
    return (instance.objects, list(instance.objects), instance.variables, instance.values, list(instance.values),
            instance.outputs), rng.getstate()


def test_unrolled_instantiation_draws_and_instantiates_as_the_recursion():
    assert template_shape._INLINE
    rng = random.Random(3)
    templates = load_templates()
    shapes = [TemplateShape(t) for t in templates]
    assert all(shape.assign_steps is not None for shape in shapes)
    made = rejected = 0
    for _ in range(60):
        scene = _random_scene(rng, rng.choice((3, 5, 8, 9)))
        hidden = rng.randrange(len(scene))
        for template, shape in zip(templates, shapes):
            seed = rng.random()
            fast = _outcome(instantiate, template, shape, scene, hidden, seed)
            assert fast == _outcome(instantiate_generic, template, shape, scene, hidden, seed)
            made += fast[0] is not None
            rejected += fast[0] is None
    assert made > 500 and rejected > 100


def test_assign_steps_of_one_hop_and_same_relate():
    by_file = {}
    for template in load_templates():
        by_file.setdefault(template.filename, template)
    assert TemplateShape(by_file["zero_hop.json"]).assign_steps == ()
    assert TemplateShape(by_file["one_hop.json"]).assign_steps == ((ASSIGN_RELATE, 2, "<R>", 1),)
    assert TemplateShape(by_file["same_relate.json"]).assign_steps == ((ASSIGN_SAME, 3, "size", 1),)


@pytest.mark.parametrize("seed", range(3))
def test_sufficient_masks_are_those_meeting_every_other_pattern(seed):
    rng = random.Random(seed)
    for _ in range(300):
        scene = _random_scene(rng, rng.randint(1, 9))
        index = SceneIndex(scene)
        obj = rng.randrange(len(scene))
        candidates = frozenset(p for p in range(len(scene)) if p == obj or rng.random() < 0.6)
        patterns = index.others(obj, candidates)
        expected = sum(1 << mask for mask in range(16) if all(mask & d for d in patterns))
        assert index.sufficient(obj, candidates) == expected


def test_question_text_from_the_split_equals_the_substitutions():
    import dataclasses

    from clevr_poc.generation.question_instance import question_text, question_text_by_substitution

    rng = random.Random(9)
    templates = load_templates()
    shapes = [TemplateShape(t) for t in templates]
    checked = 0
    while checked < 2000:
        for template, instance in _scene_instances(rng, templates, shapes):
            slots = [p.name for p in template.params]
            # the template's own texts, and texts whose optional words touch or straddle slots
            odd = tuple(rng.choice(["[a ", "]", "<", ">", " a ", "[an] ", "x", "[", *slots, " ?"])
                        for _ in range(rng.randint(0, 12)) for _ in range(1))
            for texts in (template.text, ("".join(odd),) if "".join(odd) else template.text):
                variant = dataclasses.replace(template, text=texts)
                instance.template = variant
                seed = rng.random()
                a, b = random.Random(seed), random.Random(seed)
                try:
                    expected = question_text_by_substitution(instance, a)
                except KeyError:  # a slot that is not a parameter: the same error
                    with pytest.raises(KeyError):
                        question_text(instance, b)
                    continue
                assert question_text(instance, b) == expected
                assert a.getstate() == b.getstate()
                checked += 1
            instance.template = template


def _partial_world_by_pairs(partial, candidates):
    """The pair-by-pair reading that ``partial_world``'s set operations replace (issue 27)."""
    from clevr_poc.reasoning.candidate_answers import LOOK_BIT

    objects = partial.objects
    n = len(objects)
    looks = tuple((o.color, o.shape, o.size, o.material, o.region) for o in objects)
    rows = partial.relationships
    true = {rel: [set() for _ in range(n)] for rel in domain.RELATIONS}
    for rel in domain.RELATIONS:
        for i, row in enumerate(rows[rel]):
            for j in row:
                if not 0 <= j < n or j == i:
                    return None
                true[rel][i].add(j)
    for derived, source in (("right", "left"), ("front", "behind")):
        for i in range(n):
            for j in true[source][i]:
                true[derived][j].add(i)
    for first, second in (("left", "right"), ("front", "behind")):
        for i in range(n):
            for j in range(i + 1, n):
                if (j in true[first][i]) == (j in true[second][i]):
                    return None
    for rel in domain.RELATIONS:
        for i in range(n):
            for j in true[rel][i]:
                if (looks[i][4], looks[j][4]) not in domain.REGION_ADJACENCY[rel]:
                    return None
    return n, looks, {rel: tuple(map(frozenset, true[rel])) for rel in domain.RELATIONS}, \
        sum(LOOK_BIT[look] for look in set(candidates))


def test_partial_world_reads_relations_as_pair_by_pair():
    from clevr_poc.generation.object_types import TYPE_TUPLES
    from clevr_poc.generation.question_generator import _partial_world
    from clevr_poc.reasoning.candidate_answers import partial_world

    rng = random.Random(11)
    outcomes = set()
    for trial in range(3000):
        scene = _random_scene(rng, rng.randint(1, 8))
        n = len(scene)
        relationships = {rel: [list(row) for row in rows] for rel, rows in scene.relationships.items()}
        for _ in range(rng.choice((0, 0, 1, 2))):  # break the scene now and then: a pair, a range, a tie
            rel, i = rng.choice(domain.RELATIONS), rng.randrange(n)
            relationships[rel][i].append(rng.choice((i, -1, n, rng.randrange(n))))
        scene = Scene(scene.objects, relationships)
        candidates = frozenset(rng.sample(TYPE_TUPLES, 20))
        world = partial_world(scene, candidates)
        expected = _partial_world_by_pairs(scene, candidates)
        got = None if world is None else (world.hidden, world.looks, world.relations, world.full)
        assert got == expected
        assert _partial_world(scene, candidates) == world  # with the candidates' kept bits
        outcomes.add(got is None)
    assert outcomes == {True, False}


def test_official_plans_check_two_bodies_and_serve_every_pattern():
    """Every template's plan finds one check for all its patterns of present descriptions, and each
    query it serves so is the query the rewrite checks on its own (issue 27)."""
    from clevr_poc.generation.question_instance import _PLANS, official_asp_query, rewritten_asp_query

    rng = random.Random(12)
    templates = load_templates()
    shapes = [TemplateShape(t) for t in templates]
    served = 0
    for _ in range(40):
        for template, instance in _scene_instances(rng, templates, shapes):
            fast, slow = official_asp_query(instance), rewritten_asp_query(instance)
            assert fast == slow and fast.text == slow.text
            assert (fast.variables, fast.object_variables, fast.attribute) == \
                (slow.variables, slow.object_variables, slow.attribute)
            served += 1
    plans = [entry[1] for entry in _PLANS.values() if entry[1] is not None]
    assert served > 300 and plans
    assert all(plan._uniform not in (None, False) for plan in plans)
