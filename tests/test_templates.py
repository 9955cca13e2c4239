"""The 11 constraint templates (paper §3.1, Table 1) and the environment ``.lp`` format.

For every template: the exact ASP text, the exact English text, what clingo says on tiny hand-built
complete scenes (real runs), agreement with an independent Python reading of the English on random
scenes, and parsing the rules back. Then environment files: round trip, a hand-written file in the
official layout, and hostile / broken files.
"""

from __future__ import annotations

import random
from pathlib import Path

import clingo
import pytest

from clevr_poc.environments import TEMPLATES, TEMPLATES_BY_NAME, Constraint, Environment
from clevr_poc.environments.templates import constraint_from_rules, match_rule
from clevr_poc.errors import FormatError
from clevr_poc.knowledge import read_asp

C = Constraint
ATTRIBUTE_INDEX = {"color": 0, "shape": 1, "size": 2, "material": 3}


def scene(*objects: str) -> list[tuple[str, str, str, str, int]]:
    """Objects written as "color shape size material region"."""
    out = []
    for text in objects:
        color, shape, size, material, region = text.split()
        out.append((color, shape, size, material, int(region)))
    # a complete scene must respect the background theory: distinct objects, at most 3 per region
    assert len({o[:4] for o in out}) == len(out), objects
    assert all(sum(o[4] == r for o in out) <= 3 for r in range(4)), objects
    return out


def facts(objects) -> str:
    lines = [f"object(0..{len(objects) - 1})."] if objects else []
    for i, (color, shape, size, material, region) in enumerate(objects):
        lines.append(f"hasProperty({i},color,{color}). hasProperty({i},shape,{shape}). "
                     f"hasProperty({i},size,{size}). hasProperty({i},material,{material}). at({i},{region}).")
    return "\n".join(lines)


def satisfied(constraint: Constraint, objects) -> bool:
    """clingo: background + the complete scene + the constraint's rules has an answer set."""
    control = clingo.Control(["--models=1"], logger=lambda code, message: None)
    control.add("base", [], "\n".join([read_asp("background.lp"), facts(objects), *constraint.asp_rules()]))
    control.ground([("base", [])])
    return bool(control.solve().satisfiable)


# ---------------------------------------------------------------------- the 11 templates, case by case
# (constraint, ASP rules, English, [(complete scene, constraint holds)])
CASES = [
    (C("value_restriction", {"r": 0, "p1": "color", "v1": "red"}),
     (":- object(X), at(X, 0), not hasProperty(X, color, red).",),
     "All objects in region 0 have color red.",
     [(scene("red cube small rubber 0", "blue cube small rubber 1"), True),
      (scene("red cube small rubber 0", "blue cube small rubber 0"), False),
      (scene("blue cube small rubber 1"), True)]),  # an empty region satisfies it
    (C("value_restriction", {"r": 0, "p1": "color", "v1": "red", "p2": "shape", "v2": "cube"}),
     (":- object(X), at(X, 0), not hasProperty(X, color, red).",
      ":- object(X), at(X, 0), not hasProperty(X, shape, cube)."),
     "All objects in region 0 have color red and shape cube.",
     [(scene("red cube small rubber 0", "red cube large metal 0"), True),
      (scene("red sphere small rubber 0"), False),
      (scene("blue cube small rubber 0"), False),
      (scene("blue sphere small rubber 2"), True)]),
    (C("negation_two", {"r": 1, "p1": "color", "v1": "red", "p2": "shape", "v2": "cube"}),
     (":- object(X), at(X, 1), hasProperty(X, color, red).",
      ":- object(X), at(X, 1), hasProperty(X, shape, cube)."),
     "No object in region 1 has color red, and no object in region 1 has shape cube.",
     [(scene("red sphere small rubber 1"), False),
      (scene("blue cube small rubber 1"), False),
      (scene("blue sphere small rubber 1", "red cube small rubber 0"), True)]),
    (C("negation_same_property", {"r": 2, "p1": "color", "v1": "red", "v2": "blue"}),
     (":- object(X), at(X, 2), hasProperty(X, color, red).",
      ":- object(X), at(X, 2), hasProperty(X, color, blue)."),
     "No object in region 2 has color red or color blue.",
     [(scene("red cube small rubber 2"), False),
      (scene("blue cube small rubber 2"), False),
      (scene("green cube small rubber 2", "red cube small rubber 3", "blue cube small rubber 0"), True)]),
    (C("or", {"r": 3, "p1": "color", "v1": "red", "p2": "shape", "v2": "cube"}),
     (":- object(X), at(X, 3), not hasProperty(X, color, red), not hasProperty(X, shape, cube).",),
     "Every object in region 3 has color red or shape cube (or both).",
     [(scene("red sphere small rubber 3", "blue cube small rubber 3", "red cube small rubber 3"), True),
      (scene("red sphere small rubber 3", "blue sphere small rubber 3"), False),
      (scene("blue sphere small rubber 0"), True)]),
    (C("or", {"r": 1, "p1": "color", "v1": "yellow", "p2": "color", "v2": "blue"}),  # Table 1's instance
     (":- object(X), at(X, 1), not hasProperty(X, color, yellow), not hasProperty(X, color, blue).",),
     "Every object in region 1 has color yellow or color blue (or both).",
     [(scene("yellow cube small rubber 1", "blue cube small rubber 1"), True),
      (scene("yellow cube small rubber 1", "red cube small rubber 1"), False)]),
    (C("negation", {"r": 0, "p1": "material", "v1": "metal"}),
     (":- object(X), at(X, 0), hasProperty(X, material, metal).",),
     "No object in region 0 has material metal.",
     [(scene("red cube small metal 0"), False),
      (scene("red cube small rubber 0", "red cube small metal 1"), True)]),
    (C("exactly_n", {"r": 1, "p1": "size", "v1": "small", "n": 2}),
     (":- #count{X: hasProperty(X, size, small), object(X), at(X, 1)} != 2.",),
     "Exactly 2 objects in region 1 have size small.",
     [(scene("red cube small rubber 1", "blue cube small rubber 1"), True),
      (scene("red cube small rubber 1", "blue cube small rubber 1", "red cube small metal 0"), True),
      (scene("red cube small rubber 1", "blue cube large rubber 1"), False),
      (scene("red cube small rubber 1", "blue cube small rubber 1", "green cube small rubber 1"), False)]),
    (C("exactly_n", {"r": 2, "p1": "shape", "v1": "cone", "n": 1}),
     (":- #count{X: hasProperty(X, shape, cone), object(X), at(X, 2)} != 1.",),
     "Exactly 1 object in region 2 has shape cone.",
     [(scene("red cone small rubber 2", "red cube small rubber 2"), True),
      (scene("red cone small rubber 3"), False)]),
    (C("exactly_n", {"r": 3, "p1": "color", "v1": "gray", "n": 0}),
     (":- #count{X: hasProperty(X, color, gray), object(X), at(X, 3)} != 0.",),
     "Exactly 0 objects in region 3 have color gray.",
     [(scene("gray cone small rubber 2"), True), (scene("gray cone small rubber 3"), False)]),
    # pair counting: two objects of region 1 with the same shape are 2 ordered pairs
    (C("at_least_pairs", {"r1": 1, "r2": 1, "p1": "shape", "n": 2}),
     (":- #count{X1, X2: sameProperty(X1, X2, shape), object(X1), object(X2), at(X1, 1), at(X2, 1)} < 2.",),
     "There are at least 2 ordered pairs of two different objects in region 1 that have the same shape "
     "(each unordered pair counts twice).",
     [(scene("red cube small rubber 1", "blue cube small rubber 1"), True),
      (scene("red cube small rubber 1", "blue sphere small rubber 1"), False),
      (scene("red cube small rubber 1", "blue cube small rubber 2"), False)]),
    (C("at_least_pairs", {"r1": 1, "r2": 1, "p1": "shape", "n": 3}),
     (":- #count{X1, X2: sameProperty(X1, X2, shape), object(X1), object(X2), at(X1, 1), at(X2, 1)} < 3.",),
     "There are at least 3 ordered pairs of two different objects in region 1 that have the same shape "
     "(each unordered pair counts twice).",
     [(scene("red cube small rubber 1", "blue cube small rubber 1"), False),  # only 2
      (scene("red cube small rubber 1", "blue cube small rubber 1", "green cube small rubber 1"), True)]),  # 6
    # with r1 != r2 each pair counts once
    (C("at_least_pairs", {"r1": 1, "r2": 2, "p1": "shape", "n": 1}),
     (":- #count{X1, X2: sameProperty(X1, X2, shape), object(X1), object(X2), at(X1, 1), at(X2, 2)} < 1.",),
     "There is at least 1 pair of objects, one in region 1 and the other in region 2, that have the same shape.",
     [(scene("red cube small rubber 1", "blue cube small rubber 2"), True),
      (scene("red cube small rubber 1", "blue cube small rubber 1"), False),
      (scene("red cube small rubber 1", "blue sphere small rubber 2"), False)]),
    (C("at_least_pairs", {"r1": 1, "r2": 2, "p1": "shape", "n": 2}),
     (":- #count{X1, X2: sameProperty(X1, X2, shape), object(X1), object(X2), at(X1, 1), at(X2, 2)} < 2.",),
     "There are at least 2 pairs of objects, one in region 1 and the other in region 2, that have the same shape.",
     [(scene("red cube small rubber 1", "blue cube small rubber 2"), False),  # one pair: 1 < 2
      (scene("red cube small rubber 1", "blue cube small rubber 2", "green cube small rubber 2"), True)]),
    (C("at_least_pairs_with_value", {"r1": 0, "r2": 1, "p1": "size", "p2": "color", "v2": "red", "n": 1}),
     (":- #count{X1, X2: sameProperty(X1, X2, size), object(X1), object(X2), at(X1, 0), at(X2, 1), "
      "hasProperty(X1, color, red), hasProperty(X2, color, red)} < 1.",),
     "There is at least 1 pair of objects with color red, one in region 0 and the other in region 1, "
     "that have the same size.",
     [(scene("red cube small rubber 0", "red sphere small metal 1"), True),
      (scene("red cube small rubber 0", "blue sphere small metal 1"), False),  # only one is red
      (scene("red cube small rubber 0", "red sphere large metal 1"), False)]),
    (C("at_most_pairs", {"r1": 1, "r2": 2, "p1": "color", "n": 2}),
     (":- #count{X1, X2: sameProperty(X1, X2, color), object(X1), object(X2), at(X1, 1), at(X2, 2)} >= 2.",),
     "There is at most 1 pair of objects, one in region 1 and the other in region 2, that have the same color.",
     [(scene("red cube small rubber 1", "red sphere small rubber 2"), True),
      (scene("red cube small rubber 1", "red sphere small rubber 1", "red cube large rubber 2"), False)]),
    (C("at_most_pairs", {"r1": 1, "r2": 1, "p1": "color", "n": 2}),
     (":- #count{X1, X2: sameProperty(X1, X2, color), object(X1), object(X2), at(X1, 1), at(X2, 1)} >= 2.",),
     "There is at most 1 ordered pair of two different objects in region 1 that have the same color "
     "(each unordered pair counts twice).",
     [(scene("red cube small rubber 1", "red sphere small rubber 1"), False),  # 2 ordered pairs
      (scene("red cube small rubber 1", "blue sphere small rubber 1", "red sphere small rubber 2"), True)]),
    (C("at_most_pairs", {"r1": 0, "r2": 3, "p1": "color", "n": 1}),
     (":- #count{X1, X2: sameProperty(X1, X2, color), object(X1), object(X2), at(X1, 0), at(X2, 3)} >= 1.",),
     "No object in region 0 has the same color as an object in region 3.",
     [(scene("red cube small rubber 0", "red cube large rubber 3"), False),
      (scene("red cube small rubber 0", "red sphere small rubber 0", "blue cube small rubber 3"), True)]),
    (C("at_most_pairs", {"r1": 2, "r2": 2, "p1": "size", "n": 1}),
     (":- #count{X1, X2: sameProperty(X1, X2, size), object(X1), object(X2), at(X1, 2), at(X2, 2)} >= 1.",),
     "No two different objects in region 2 have the same size.",
     [(scene("red cube small rubber 2", "blue cube small rubber 2"), False),
      (scene("red cube small rubber 2", "blue cube large rubber 2", "red cube large rubber 3"), True)]),
    (C("at_most_pairs_with_value", {"r1": 3, "r2": 2, "p1": "shape", "p2": "color", "v2": "yellow", "n": 4}),
     (":- #count{X1, X2: sameProperty(X1, X2, shape), object(X1), object(X2), at(X1, 3), at(X2, 2), "
      "hasProperty(X1, color, yellow), hasProperty(X2, color, yellow)} >= 4.",),
     "There are at most 3 pairs of objects with color yellow, one in region 3 and the other in region 2, "
     "that have the same shape.",
     [(scene("yellow cube small rubber 3", "yellow cube large rubber 3",
             "yellow cube small metal 2", "yellow cube large metal 2"), False),  # 2 x 2 = 4 pairs
      (scene("yellow cube small rubber 3", "yellow cube large rubber 3",
             "yellow cube small metal 2", "blue cube large metal 2"), True)]),  # 2 pairs
    (C("at_most_pairs_with_value", {"r1": 3, "r2": 2, "p1": "shape", "p2": "color", "v2": "yellow", "n": 1}),
     (":- #count{X1, X2: sameProperty(X1, X2, shape), object(X1), object(X2), at(X1, 3), at(X2, 2), "
      "hasProperty(X1, color, yellow), hasProperty(X2, color, yellow)} >= 1.",),
     "No object with color yellow in region 3 has the same shape as an object with color yellow in region 2.",
     [(scene("yellow cube small rubber 3", "yellow cube large metal 2"), False),
      (scene("yellow cube small rubber 3", "blue cube large metal 2"), True)]),
    (C("generic", {"p1": "color", "v1": "red"}),
     (":- object(X), hasProperty(X, color, red).",),
     "No object anywhere in the scene has color red.",
     [(scene("blue cube small rubber 0", "green cube small rubber 3"), True),
      (scene("blue cube small rubber 0", "red cube small rubber 2"), False)]),
]
IDS = [f"{c.template}-{i}" for i, (c, *_) in enumerate(CASES)]


def test_cases_cover_all_eleven_templates():
    assert {c.template for c, *_ in CASES} == set(TEMPLATES_BY_NAME)
    assert [t.index for t in TEMPLATES] == list(range(1, 12))
    assert [t.name for t in TEMPLATES] == [
        "value_restriction", "negation_two", "negation_same_property", "or", "negation", "exactly_n",
        "at_least_pairs", "at_least_pairs_with_value", "at_most_pairs", "at_most_pairs_with_value", "generic"]
    assert [t.kind for t in TEMPLATES] == ["region"] * 6 + ["across"] * 4 + ["global"]


@pytest.mark.parametrize("constraint, rules, english, scenes", CASES, ids=IDS)
def test_asp_rendering_is_exact(constraint, rules, english, scenes):
    assert constraint.asp_rules() == rules
    assert constraint.to_asp() == " ".join(rules)


@pytest.mark.parametrize("constraint, rules, english, scenes", CASES, ids=IDS)
def test_english_rendering_is_exact(constraint, rules, english, scenes):
    assert constraint.describe() == english


@pytest.mark.parametrize("constraint, rules, english, scenes", CASES, ids=IDS)
def test_clingo_agrees_with_the_english_on_hand_built_scenes(constraint, rules, english, scenes):
    for objects, holds in scenes:
        assert satisfied(constraint, objects) is holds, (english, objects)
        assert english_holds(constraint, objects) is holds, (english, objects)


@pytest.mark.parametrize("constraint, rules, english, scenes", CASES, ids=IDS)
def test_rules_parse_back_to_the_same_constraint(constraint, rules, english, scenes):
    assert constraint_from_rules(list(rules)) == constraint
    # any layout: line breaks, no spaces, ';' between body literals, a comment
    reflowed = [r.replace(", ", ",\n   ").replace("), ", ");") + " % note" for r in rules]
    assert constraint_from_rules(reflowed) == constraint


def test_regions_of_each_kind():
    assert C("negation", {"r": 2, "p1": "color", "v1": "red"}).regions == (2,)
    assert C("at_most_pairs", {"r1": 3, "r2": 1, "p1": "color", "n": 2}).regions == (1, 3)
    assert C("at_least_pairs", {"r1": 1, "r2": 1, "p1": "color", "n": 2}).regions == (1,)
    assert C("generic", {"p1": "shape", "v1": "cone"}).regions == ()


def test_at_most_zero_pairs_says_it_can_never_hold():
    impossible = C("at_most_pairs", {"r1": 0, "r2": 1, "p1": "color", "n": 0})
    assert impossible.describe() == "This constraint can never be satisfied (at most -1 pairs)."
    assert not satisfied(impossible, scene("red cube small rubber 2"))


def test_a_rule_outside_the_template_language_matches_nothing():
    # "nothasProperty" is another predicate (never true), not "not hasProperty"
    assert match_rule(":- object(X), at(X, 0), nothasProperty(X, color, red).") is None
    assert match_rule(":- object(Y), at(Y, 0), hasProperty(Y, color, red).") is None  # other variable
    assert match_rule(':- object(X), at(X, 0), hasProperty(X, color, "red").') is None
    assert match_rule('#include "x.lp".') is None
    assert match_rule(":- object(X), at(X, 0), hasProperty(X, color, red). p.") is None  # two statements
    with pytest.raises(FormatError, match="not an instance of any of the 11"):
        constraint_from_rules([":- object(X), hasProperty(X, color, red), hasProperty(X, size, small)."])
    with pytest.raises(FormatError, match="do not form one template instance"):
        constraint_from_rules([":- object(X), at(X, 0), hasProperty(X, color, red).",
                               ":- object(X), at(X, 1), hasProperty(X, color, blue)."])


@pytest.mark.parametrize("template, params, field", [
    ("no_such_template", {}, "template"),
    ("negation", {"r": 4, "p1": "color", "v1": "red"}, "r"),
    ("negation", {"r": 0, "p1": "colour", "v1": "red"}, "p1"),
    ("negation", {"r": 0, "p1": "color", "v1": "cube"}, "v1"),
    ("negation", {"r": 0, "p1": "color"}, "params"),
    ("exactly_n", {"r": 0, "p1": "color", "v1": "red", "n": -1}, "n"),
    ("exactly_n", {"r": 0, "p1": "color", "v1": "red", "n": True}, "n"),
    ("value_restriction", {"r": 0, "p1": "color", "v1": "red", "p2": "size"}, "params"),
    ("negation_two", {"r": 0, "p1": "color", "v1": "red", "p2": "color", "v2": "blue"}, "p2"),
])
def test_bad_parameters_raise_format_error_naming_the_field(template, params, field):
    with pytest.raises(FormatError) as info:
        C(template, params)
    assert info.value.field == field


# ---------------------------------------------------------------------- random scenes vs. the English
def english_holds(constraint: Constraint, objects) -> bool:
    """The templates' English renderings, implemented directly in Python (independent of the ASP)."""
    p = constraint.params

    def has(o, attribute, value):
        return o[ATTRIBUTE_INDEX[attribute]] == value

    def within(r):
        return [o for o in objects if o[4] == r]

    name = constraint.template
    if name == "value_restriction":
        return all(has(o, p["p1"], p["v1"]) and ("p2" not in p or has(o, p["p2"], p["v2"])) for o in within(p["r"]))
    if name == "negation_two":
        return not any(has(o, p["p1"], p["v1"]) or has(o, p["p2"], p["v2"]) for o in within(p["r"]))
    if name == "negation_same_property":
        return not any(has(o, p["p1"], p["v1"]) or has(o, p["p1"], p["v2"]) for o in within(p["r"]))
    if name == "or":
        return all(has(o, p["p1"], p["v1"]) or has(o, p["p2"], p["v2"]) for o in within(p["r"]))
    if name == "negation":
        return not any(has(o, p["p1"], p["v1"]) for o in within(p["r"]))
    if name == "exactly_n":
        return sum(has(o, p["p1"], p["v1"]) for o in within(p["r"])) == p["n"]
    if name == "generic":
        return not any(has(o, p["p1"], p["v1"]) for o in objects)
    # pairs: ordered pairs of different objects, the first in r1, the second in r2
    pairs = sum(1 for i, a in enumerate(objects) for j, b in enumerate(objects)
                if i != j and a[4] == p["r1"] and b[4] == p["r2"]
                and a[ATTRIBUTE_INDEX[p["p1"]]] == b[ATTRIBUTE_INDEX[p["p1"]]]
                and ("p2" not in p or (has(a, p["p2"], p["v2"]) and has(b, p["p2"], p["v2"]))))
    return pairs >= p["n"] if name.startswith("at_least") else pairs <= p["n"] - 1


# a small vocabulary so that matches and pairs are frequent
SMALL = {"color": ("red", "blue"), "shape": ("cube", "sphere"), "size": ("small", "large"),
         "material": ("rubber", "metal")}


def random_constraint(rng: random.Random, name: str) -> Constraint:
    attributes = list(SMALL)
    p1, p2 = rng.sample(attributes, 2)
    v1, v2 = rng.choice(SMALL[p1]), rng.choice(SMALL[p2])
    r, r2 = rng.randrange(4), rng.randrange(4)
    if name == "value_restriction":
        return C(name, {"r": r, "p1": p1, "v1": v1} if rng.random() < 0.5 else
                 {"r": r, "p1": p1, "v1": v1, "p2": p2, "v2": v2})
    if name in ("negation_two", "or"):
        return C(name, {"r": r, "p1": p1, "v1": v1, "p2": p2, "v2": v2})
    if name == "negation_same_property":
        return C(name, {"r": r, "p1": p1, "v1": SMALL[p1][0], "v2": SMALL[p1][1]})
    if name in ("negation",):
        return C(name, {"r": r, "p1": p1, "v1": v1})
    if name == "generic":
        return C(name, {"p1": p1, "v1": v1})
    if name == "exactly_n":
        return C(name, {"r": r, "p1": p1, "v1": v1, "n": rng.randrange(4)})
    params = {"r1": r, "r2": r if rng.random() < 0.4 else r2, "p1": p1, "n": rng.randrange(1, 5)}
    if name.endswith("_with_value"):
        params.update(p2=p2, v2=v2)
    return C(name, params)


def random_complete_scene(rng: random.Random) -> list[tuple[str, str, str, str, int]]:
    """1-7 distinct objects, at most 3 per region, regions drawn from 0..1 mostly (so pairs happen)."""
    objects: list[tuple[str, str, str, str, int]] = []
    for _ in range(rng.randint(1, 7)):
        for _try in range(20):
            o = (*(rng.choice(SMALL[a]) for a in SMALL), rng.choice((0, 0, 1, 1, 2, 3)))
            if all(o[:4] != q[:4] for q in objects) and sum(q[4] == o[4] for q in objects) < 3:
                objects.append(o)
                break
    return objects


def violated_constraints(constraints: list[Constraint], objects) -> set[int]:
    """Indices of the constraints that the complete scene violates, from one clingo run: each
    constraint's rules get the head violated(k) (same bodies as the integrity constraints)."""
    rules = [f"violated({k}) {rule}" for k, c in enumerate(constraints) for rule in c.asp_rules()]
    control = clingo.Control(["--models=0"], logger=lambda code, message: None)
    control.add("base", [], "\n".join([read_asp("background.lp"), facts(objects), *rules, "#show violated/1."]))
    control.ground([("base", [])])
    models: list[set[int]] = []
    control.solve(on_model=lambda m: models.append({s.arguments[0].number for s in m.symbols(shown=True)}))
    assert len(models) == 1  # a complete scene has exactly one answer set
    return models[0]


def test_clingo_agrees_with_the_english_on_random_scenes():
    rng = random.Random(20240611)
    constraints = [random_constraint(rng, t.name) for t in TEMPLATES for _ in range(25)]
    outcomes = {t.name: set() for t in TEMPLATES}
    for _ in range(40):
        objects = random_complete_scene(rng)
        violated = violated_constraints(constraints, objects)
        for k, constraint in enumerate(constraints):
            holds = english_holds(constraint, objects)
            assert (k not in violated) is holds, (constraint.describe(), objects)
            outcomes[constraint.template].add(holds)
    assert all(seen == {True, False} for seen in outcomes.values()), outcomes  # both outcomes tested


# ---------------------------------------------------------------------- environment files
ALL_ELEVEN = Environment(tuple(c for c, *_ in CASES if c.template != "at_most_pairs" or c.params["n"] > 0), 7, id=3)


def test_environment_file_round_trip(tmp_path):
    path = ALL_ELEVEN.to_lp(tmp_path / "environment_3.lp")
    text = path.read_text(encoding="utf-8")
    assert text.startswith(read_asp("background.lp").rstrip("\n") + "\n\nobject(0..6).\n")
    # the official layout: a two-rule template's second rule on the next line, indented by one space
    assert ":- object(X), at(X, 0), not hasProperty(X, color, red).\n :- object(X), at(X, 0), " \
           "not hasProperty(X, shape, cube).\n" in text
    assert text.rstrip().endswith("#show hasProperty/3. #show at/2.")
    again = Environment.from_lp(path)
    assert again == ALL_ELEVEN and again.id == 3
    assert again.to_asp() == ALL_ELEVEN.to_asp()


HAND_WRITTEN = read_asp("background.lp") + """\
%%% An environment written by hand in the official layout (own text, odd spacing on purpose).
property(color, gray).   property(color,red).
property( shape , cube ).
region(0).
region(3).
right_R(1, 3).
left_R(R1, R2) :- right_R(R2, R1).
sameProperty(X1, X2, P) :- hasProperty(X1,P,V), hasProperty(X2,P,V), X1!=X2.
1{hasProperty(X, color, V):property(color, V)}1 :- object(X).
exceed_region_capacity(R) :- #count{X: object(X), at(X, R)} >= 4, region(R).
:- exceed_region_capacity(_).

object(0..6).   % seven objects, the hidden one included
:- object(X), at(X, 0), not hasProperty(X, size, large).
 :- object(X), at(X, 0), not hasProperty(X, color, green).
:-object(X),at(X,1),hasProperty(X,shape,cube).
 :-  object(X), at(X, 1),   hasProperty(X, material, metal).
:- object(X), at(X, 2), hasProperty(X, color, cyan).
 :- object(X), at(X, 2), hasProperty(X, color, green).
:- object(X), at(X, 3), not hasProperty(X, material, metal), not hasProperty(X, color, red).
:- object(X), at(X, 3), hasProperty(X, size, small).
%* a block comment
   spanning lines *%
:- #count{X: hasProperty(X, shape, sphere), object(X), at(X, 2)}!=1.
:- #count{X1, X2: sameProperty(X1, X2, size), object(X1), object(X2), at(X1, 2), at(X2, 1)}<1.
:- #count{X1, X2: sameProperty(X1, X2, material), object(X1), object(X2), at(X1, 3), at(X2, 1),
        hasProperty(X1, size, large), hasProperty(X2, size, large)} < 2.
:- #count{X1, X2: sameProperty(X1, X2, color), object(X1), object(X2), at(X1, 0), at(X2, 0)}>=2.
:- #count{X1, X2: sameProperty(X1, X2, shape), object(X1), object(X2), at(X1, 3), at(X2, 2), hasProperty(X1, color, yellow), hasProperty(X2, color, yellow)}>=4.
:- object(X), hasProperty(X, color, purple).
:- object(X), at(X, 1), hasProperty(X, size, small).
 :- object(X), at(X, 2), hasProperty(X, size, small).

#show hasProperty/3.
#show at/2.
"""


def test_hand_written_official_layout_file(tmp_path):
    path = tmp_path / "12.lp"
    path.write_text(HAND_WRITTEN, encoding="utf-8")
    environment = Environment.from_lp(path)
    assert environment.num_objects == 7
    assert environment.id == 12
    assert environment.show == ("#show hasProperty/3.", "#show at/2.")
    assert list(environment.constraints) == [
        C("value_restriction", {"r": 0, "p1": "size", "v1": "large", "p2": "color", "v2": "green"}),
        C("negation_two", {"r": 1, "p1": "shape", "v1": "cube", "p2": "material", "v2": "metal"}),
        C("negation_same_property", {"r": 2, "p1": "color", "v1": "cyan", "v2": "green"}),
        C("or", {"r": 3, "p1": "material", "v1": "metal", "p2": "color", "v2": "red"}),
        C("negation", {"r": 3, "p1": "size", "v1": "small"}),
        C("exactly_n", {"r": 2, "p1": "shape", "v1": "sphere", "n": 1}),
        C("at_least_pairs", {"r1": 2, "r2": 1, "p1": "size", "n": 1}),
        C("at_least_pairs_with_value", {"r1": 3, "r2": 1, "p1": "material", "p2": "size", "v2": "large", "n": 2}),
        C("at_most_pairs", {"r1": 0, "r2": 0, "p1": "color", "n": 2}),
        C("at_most_pairs_with_value", {"r1": 3, "r2": 2, "p1": "shape", "p2": "color", "v2": "yellow", "n": 4}),
        C("generic", {"p1": "color", "v1": "purple"}),
        # an indented rule of another region is not a second rule: two one-rule constraints
        C("negation", {"r": 1, "p1": "size", "v1": "small"}),
        C("negation", {"r": 2, "p1": "size", "v1": "small"}),
    ]


def rejected_environment_file(tmp_path: Path, text: str, match: str | None = None) -> tuple[Path, FormatError]:
    """Write ``text`` as ``tmp_path/environment_1.lp``, assert :meth:`Environment.from_lp` refuses it with a
    :class:`FormatError` (matching ``match`` when given); the file and the error."""
    path = tmp_path / "environment_1.lp"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(FormatError, match=match) as info:
        Environment.from_lp(path)
    return path, info.value


def test_script_block_is_rejected_and_never_run(tmp_path):
    target = tmp_path / "pwned.txt"
    path, error = rejected_environment_file(
        tmp_path, "object(0..4).\n:- object(X), at(X, 0), hasProperty(X, color, red).\n"
                  f"#script (python)\nimport pathlib\npathlib.Path({str(target)!r}).write_text('x')\n"
                  "def main(prg):\n    pathlib.Path({str(target)!r}).write_text('x')\n#end.\n",
        match="only the background theory")
    assert error.field == "line 3"
    assert str(path) in str(error) and "line 3" in str(error)
    assert not target.exists()


def test_include_is_rejected_before_the_included_file_is_read(tmp_path):
    # the included file holds a valid constraint: including it silently would change the environment
    (tmp_path / "extra.lp").write_text(":- object(X), at(X, 0), hasProperty(X, color, red).\n", encoding="utf-8")
    path, error = rejected_environment_file(
        tmp_path, f'object(0..4).\n% #include "ignored, a comment".\n#include "{tmp_path / "extra.lp"}".\n',
        match="#include")
    assert error.field == "line 3" and str(path) in str(error)


def test_unknown_rule_is_rejected_naming_the_line(tmp_path):
    path, error = rejected_environment_file(
        tmp_path, "object(0..4).\n\n:- object(X), at(X, 0), hasProperty(X, color, red), hasProperty(X, size, small).\n",
        match="not an instance of any of the 11 constraint templates")
    assert error.field == "line 3" and str(path) in str(error)
    assert "hasProperty(X, size, small)" in str(error)  # quotes the file's own text


def test_changed_background_rule_is_rejected(tmp_path):
    _, error = rejected_environment_file(
        tmp_path, "object(0..4).\nexceed_region_capacity(R) :- #count{X: object(X), at(X, R)} >= 5, region(R).\n")
    assert error.field == "line 2"


def test_missing_object_declaration_is_rejected(tmp_path):
    path, error = rejected_environment_file(tmp_path, ":- object(X), at(X, 0), hasProperty(X, color, red).\n",
                                            match=r"no 'object\(0..N-1\).' line saying how many objects")
    assert error.field == "object/1" and str(error).startswith(f"{path}, predicate object/1: no 'object(")


def test_syntax_error_is_rejected_naming_the_line(tmp_path):
    path, error = rejected_environment_file(
        tmp_path, "object(0..4).\n:- object(X), at(X, 0), hasProperty(X, color, red).\n:- object(X) at(X, 1).\n",
        match="not a valid ASP program")
    assert error.field == "line 3" and str(error) == (
        f"{path}, line 3: not a valid ASP program: syntax error at column 14: unexpected name 'at'")


def test_missing_and_binary_files_are_format_errors(tmp_path):
    with pytest.raises(FormatError, match="file not found"):
        Environment.from_lp(tmp_path / "nope.lp")
    binary = tmp_path / "binary.lp"
    binary.write_bytes(b"\xff\xfe\x00object")
    with pytest.raises(FormatError, match="UTF-8"):
        Environment.from_lp(binary)
