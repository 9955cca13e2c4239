"""Issue 27's fast paths of the question generator against the code they shorten, on random scenes:
the official query from a per-(template, variables) plan against the generic rewrite (every template,
errors included), the intended answer on object-type bit sets against a pass over the candidates,
the inline shuffle/randint draws, the query check's per-literal look-up, the scene index's difference
patterns, ``tidy_text`` and the template look-up of ``prepare``."""

from __future__ import annotations

import random
import re

import pytest

from clevr_poc import FormatError, domain
from clevr_poc.generation.object_types import TYPE_TUPLES
from clevr_poc.generation.question_generator import QuestionGenerator, TemplateNotApplicable
from clevr_poc.generation.question_instance import (
    _PLANS, Instance, _domain_literals_uniform, official_asp_query, possible_values, rewritten_asp_query, tidy_text,
)
from clevr_poc.generation.scene_index import SceneIndex
from clevr_poc.generation.template_files import load_templates
from clevr_poc.generation.template_shape import _INLINE, choose, shuffled_cut
from clevr_poc.queries.query import Atom, Constant, Inequality, Number, Variable, analyse
from clevr_poc.scene import Scene, SceneObject, compute_relationships


class _NoReasoner:
    """The generator's instantiation and renderings never call the reasoner."""


def _random_scene(rng: random.Random, n: int) -> Scene:
    objects = tuple(SceneObject(rng.choice(domain.COLORS[:3]), rng.choice(domain.DOMAINS["shape"][:2]),
                                rng.choice(domain.DOMAINS["size"]), rng.choice(domain.DOMAINS["material"]),
                                rng.randrange(4), (rng.uniform(-5, 5), rng.uniform(-5, 5), 0.5)) for _ in range(n))
    return Scene(objects, compute_relationships([o.coords_3d[:2] for o in objects]))


def _instances(count: int, seed: int):
    """(instance, scene, hidden) of every template on random 8-9 object scenes."""
    rng = random.Random(seed)
    templates = load_templates()
    generator = QuestionGenerator(_NoReasoner(), templates)
    made = []
    while len(made) < count:
        scene = _random_scene(rng, rng.choice((8, 9)))
        hidden = rng.randrange(len(scene))
        for template in templates:
            try:
                made.append((generator.instantiate(template, scene, hidden, random.Random(rng.random())), scene, hidden))
            except TemplateNotApplicable:
                pass
    return made


def test_official_query_from_the_plan_equals_the_rewrite_on_every_template():
    instances = _instances(3000, 1)
    for instance, _, _ in instances:
        fast, slow = official_asp_query(instance), rewritten_asp_query(instance)
        assert fast == slow and fast.text == slow.text
        # the plan's kept check (by pattern of present descriptions) finds what checking this body finds
        assert (fast.variables, fast.object_variables, fast.attribute) == \
            (slow.variables, slow.object_variables, slow.attribute)
        assert [tuple(map(type, lit.terms)) for lit in fast.body] == [tuple(map(type, lit.terms)) for lit in slow.body]
    templates = {instance.template.id for instance, _, _ in instances}
    assert len(templates) == len(load_templates())  # every template was instantiated
    planned = {entry[0].id for entry in _PLANS.values() if entry[1] is not None}
    assert templates <= planned  # ... and took the plan
    assert _domain_literals_uniform()  # ... whose kept checks served the later bodies of each pattern
    assert sum(len(entry[1].analyses) for entry in _PLANS.values() if entry[1] is not None) >= len(templates)


def test_official_query_from_the_plan_raises_as_the_rewrite():
    instance = next(i for i, _, _ in _instances(50, 2) if i.template.family == "two_hop" and
                    any(i.values.get(s) for s in i.template.nodes[i.template.nodes[-1].inputs[0]].side_inputs[-4:]))
    official_asp_query(instance)  # the plan is made
    node = instance.template.nodes[instance.template.nodes[-1].inputs[0]]
    relation = next(n.side_inputs[0] for n in instance.template.nodes if n.type in ("relate", "relate_filter_unique"))
    slot = next(s for s in node.side_inputs[-4:] if instance.values.get(s))
    for changed in ({slot: "pink"}, {relation: "above"}, {relation: ""}):
        bad = Instance(instance.template, dict(instance.objects), dict(instance.variables),
                       {**instance.values, **changed}, dict(instance.outputs))
        messages = []
        for path in (official_asp_query, rewritten_asp_query):
            with pytest.raises(Exception) as caught:
                path(bad)
            messages.append((type(caught.value), str(caught.value)))
        assert messages[0] == messages[1]
        assert messages[0][0] is FormatError or "rejected ASP query" in messages[0][1]


def _intended_by_a_pass(instance: Instance, candidates, scene: Scene) -> frozenset[str]:
    """The intended answer as main computed it before issue 27's bit sets (one pass, as written there)."""
    from clevr_poc.generation.question_instance import _REACHABLE
    from clevr_poc.generation.template_files import DESCRIPTION_ORDER

    template = instance.template
    node = template.nodes[template.nodes[-1].inputs[0]]
    wanted = {a: instance.values[s] for a, s in zip(DESCRIPTION_ORDER, node.side_inputs[-4:]) if instance.values.get(s)}
    regions = set(domain.REGIONS)

    def visit(i: int) -> None:
        n = template.nodes[i]
        if n.type == "relate":
            regions.intersection_update(_REACHABLE[(instance.values[n.side_inputs[0]],
                                                   scene.objects[instance.objects[n.inputs[0]]].region)])
        elif n.type == "intersect":
            for j in n.inputs:
                visit(j)
        elif n.type.startswith("same_"):
            wanted[n.type[5:]] = scene.objects[instance.objects[n.inputs[0]]].attribute(n.type[5:])

    if node.type == "relate_filter_unique":
        regions.intersection_update(_REACHABLE[(instance.values[node.side_inputs[0]],
                                               scene.objects[instance.objects[node.inputs[0]]].region)])
    else:
        visit(node.inputs[0])
    fields = {"color": 0, "shape": 1, "size": 2, "material": 3}
    return frozenset(c[fields[template.query_attribute]] for c in candidates
                     if c[4] in regions and all(c[fields[a]] == v for a, v in wanted.items()))


def test_intended_answer_on_type_bits_equals_a_pass_over_the_candidates():
    rng = random.Random(4)
    sizes = set()
    for instance, scene, _ in _instances(1500, 3):
        candidates = frozenset(t for t in TYPE_TUPLES if rng.random() < rng.choice((0.05, 0.2, 0.6)))
        expected = _intended_by_a_pass(instance, candidates, scene)
        assert possible_values(instance, candidates, scene) == expected  # bit sets
        assert possible_values(instance, list(candidates), scene) == expected  # any iterable: one pass
        sizes.add(len(expected))
    assert {0, 1, 2} <= sizes


def test_inline_draws_are_shuffle_and_randint():
    assert _INLINE  # CPython 3.11+: the fast path is taken
    for seed in range(300):
        allowed = list(domain.ATTRIBUTES)[:seed % 5]
        a, b = random.Random(seed), random.Random(seed)
        order = list(allowed)
        a.shuffle(order)
        assert shuffled_cut(b, allowed) == (order, a.randint(0, len(order)))
        assert a.getstate() == b.getstate()


def test_inline_choice_is_rng_choice():
    for seed in range(300):
        options = list(range(1 + seed % 17))
        a, b = random.Random(seed), random.Random(seed)
        assert [choose(b, options) for _ in range(5)] == [a.choice(options) for _ in range(5)]
        assert a.getstate() == b.getstate()
    with pytest.raises(IndexError):
        choose(random.Random(0), [])


def test_query_check_keeps_literals_with_other_term_types_apart():
    q, x = Variable("Q"), Variable("X")
    answer = Atom("hasProperty", (x, Constant("color"), q))
    # the same texts, different term types: each keeps its own verdict whatever was checked before
    assert analyse(q, (answer, Inequality(x, Variable("Y"))), 6) == \
        "variable(s) Y occur only in comparisons (unsafe)"
    assert analyse(q, (answer, Inequality(x, Constant("Y"))), 6) == \
        "'Y' in X != Y is not an object (a variable or an object id)"
    assert analyse(q, (answer, Atom("left", (Number(3), x))), 6).object_variables == {x}
    assert analyse(q, (answer, Atom("left", (Constant("3"), x))), 6) == "unknown constant '3'"
    # unhashable parts (a value built by hand) are checked without the look-up
    assert analyse(q, (answer, Atom("left", [x, Number(3)])), 6).variables == {x, q}
    first = analyse(q, (answer, Atom("hasProperty", (x, Constant("shape"), Constant("cube")))), 6)
    again = analyse(q, (answer, Atom("hasProperty", (x, Constant("shape"), Constant("cube")))), 6)
    assert first == again and first.attribute == "color"


def test_scene_index_others_are_the_distinct_differences_to_the_other_candidates():
    rng = random.Random(6)
    for _ in range(500):
        scene = _random_scene(rng, rng.randint(1, 9))
        index = SceneIndex(scene)
        obj = rng.randrange(len(scene))
        candidates = frozenset(p for p in range(len(scene)) if p == obj or rng.random() < 0.6)
        differences = [sum(bit for a, bit in zip(domain.ATTRIBUTES, (1, 2, 4, 8))
                           if getattr(scene.objects[p], a) != getattr(scene.objects[obj], a))
                       for p in range(len(scene))]
        assert index.differences(obj) == differences
        assert sorted(index.others(obj, candidates)) == sorted({differences[p] for p in candidates if p != obj})


def test_tidy_text_equals_the_three_substitutions():
    def by_substitutions(text: str) -> str:
        text = re.sub(r"\s+", " ", text).strip()
        text = re.sub(r" ([?;,.])", r"\1", text)
        text = re.sub(r"\b([Aa]) (?=[aeiouAEIOU])", r"\1n ", text)
        return text[:1].upper() + text[1:]

    pieces = [" ", "  ", "\t", "\n", "\u00a0", "\u2003", "\x1c", "?", ";", ",", ".", "a", "A", "e", "x", "an", "é"]
    rng = random.Random(7)
    for _ in range(20000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 14)))
        assert tidy_text(text) == by_substitutions(text), repr(text)
    assert tidy_text("  is  there a  object ?") == "Is there an object?"


def test_templates_for_is_a_new_list_each_call():
    generator = QuestionGenerator(_NoReasoner())
    first = generator.templates_for("color", "one_hop")
    assert first == [t for t in generator.templates if t.query_attribute == "color" and t.family == "one_hop"]
    first.clear()
    assert generator.templates_for("color", "one_hop") != []
    assert generator.templates_for("color") == [t for t in generator.templates if t.query_attribute == "color"]
    assert generator.templates_for(["unhashable"]) == []
