"""Explanations (Reasoner.explain) on small real inputs: minimal eliminating constraint sets (unsat cores,
checked independently with Reasoner.answer), witnesses, background rules, unsatisfiable inputs."""

from __future__ import annotations

import pytest

from clevr_poc import Reasoner
from clevr_poc.environments import Constraint, Environment
from clevr_poc.errors import UnsafeProgramError
from clevr_poc.reasoning.explanations import CAPACITY_RULE, IDENTICAL_RULE, relation_rule_name
from clevr_poc.scene import Scene, SceneObject, compute_relationships

from conftest import APPENDIX_A_QUERY


def _scene(*objects: SceneObject) -> Scene:
    return Scene(tuple(objects), compute_relationships([o.coords_3d[:2] for o in objects]))


@pytest.mark.parametrize("mode", ["compiled", "direct"])
def test_appendix_a_explanation(environment, partial_scene, mode):
    reasoner = Reasoner(mode=mode)
    explained = reasoner.explain(environment, partial_scene, APPENDIX_A_QUERY)
    assert explained.values == reasoner.answer(environment, partial_scene, APPENDIX_A_QUERY).values
    assert explained.values == frozenset({"small", "medium"})
    assert explained.satisfiable and explained.reason is None
    explanation = explained.explanation
    assert explanation.attribute == "size"
    assert [w.value for w in explanation.kept] == ["small", "medium"]
    assert [e.value for e in explanation.eliminated] == ["large"]

    # the hidden object (id 4 = number of visible objects) is the one the question is about: a small red
    # rubber sphere in region 0 (the object the appendix hid)
    small = explanation.kept[0]
    assert small.hidden_object == {"id": 4, "color": "red", "shape": "sphere", "size": "small",
                                   "material": "rubber", "region": 0}
    assert small.matched_object == 4
    assert explanation.kept[1].hidden_object["size"] == "medium"

    # large: region 0 forbids large objects, region 1 rubber, region 2 spheres (one of its three
    # constraints that exclude a red rubber sphere), region 3 requires metal or blue
    large = explanation.eliminated[0]
    assert large.constraints == (0, 5, 9, 12)
    assert large.texts == (
        "No object in region 0 has size large.",
        "No object in region 1 has material rubber.",
        "No object in region 2 has shape sphere.",
        "Every object in region 3 has material metal or color blue (or both).",
    )
    assert large.texts == tuple(environment.constraints[k].describe() for k in large.constraints)
    assert large.background == ()


def test_appendix_a_elimination_is_minimal(environment, partial_scene):
    """Checked with the plain Reasoner: the set alone rules large out, and without any member it does not."""
    reasoner = Reasoner(mode="direct")
    large = reasoner.explain(environment, partial_scene, APPENDIX_A_QUERY).explanation.eliminated[0]
    chosen = [environment.constraints[k] for k in large.constraints]
    alone = reasoner.answer(Environment(tuple(chosen), environment.num_objects), partial_scene, APPENDIX_A_QUERY)
    assert "large" not in alone.values
    for k in range(len(chosen)):
        rest = tuple(c for i, c in enumerate(chosen) if i != k)
        answer = reasoner.answer(Environment(rest, environment.num_objects), partial_scene, APPENDIX_A_QUERY)
        assert "large" in answer.values, f"constraint {large.constraints[k]} is not needed"


def test_appendix_a_describe_reads_well(environment, partial_scene):
    text = Reasoner().explain(environment, partial_scene, APPENDIX_A_QUERY).explanation.describe()
    lines = text.splitlines()
    assert lines[0] == "Possible size values: small, medium."
    assert lines[1] == ("  small: possible, e.g. when the hidden object (object 4) is a small red rubber sphere "
                        "in region 0; the question is then about the hidden object")
    assert "Ruled-out size values: large." in lines
    assert "    - constraint 0: No object in region 0 has size large." in lines
    assert "    - constraint 12: Every object in region 3 has material metal or color blue (or both)." in lines


def test_values_ruled_out_by_scene_and_question_alone(environment, complete_scene):
    # nothing hidden: the question's red rubber object is the visible object 4, a small sphere
    explained = Reasoner().explain(environment, complete_scene, APPENDIX_A_QUERY)
    assert explained.values == frozenset({"small"})
    (witness,) = explained.explanation.kept
    assert witness.hidden_object == {} and witness.matched_object == 4
    assert [(e.value, e.constraints, e.background) for e in explained.explanation.eliminated] == \
        [("medium", (), ()), ("large", (), ())]
    assert "scene and the question alone" in explained.explanation.eliminated[0].describe()


def test_question_about_a_visible_object_by_id(environment, partial_scene):
    explained = Reasoner().explain(environment, partial_scene, "missing(Q) :- hasProperty(0,size,Q).")
    assert explained.values == frozenset({"large"})
    assert explained.explanation.kept[0].matched_object == 0
    assert all(e.constraints == () and e.background == () for e in explained.explanation.eliminated)


def test_background_rule_no_two_identical_objects():
    visible = SceneObject("green", "cube", "small", "rubber", 0, (-3.0, 2.0, 0.39))
    query = ("missing(Q) :- hasProperty(1,shape,Q), hasProperty(1,color,green), hasProperty(1,material,rubber), "
             "hasProperty(1,size,small).")
    explained = Reasoner().explain(Environment((), 2), _scene(visible), query)
    assert explained.values == frozenset({"cylinder", "sphere", "cone"})
    (cube,) = explained.explanation.eliminated
    assert (cube.value, cube.constraints, cube.background) == ("cube", (), (IDENTICAL_RULE,))
    assert f"background: {IDENTICAL_RULE}" in cube.describe()


def test_background_relation_rule_with_constraints():
    # the hidden object is right of object 0 (region 1), so it lies in region 1 or 3; both forbid rubber
    environment = Environment((
        Constraint("negation", {"r": 0, "p1": "shape", "v1": "cone"}),
        Constraint("negation", {"r": 1, "p1": "material", "v1": "rubber"}),
        Constraint("negation", {"r": 3, "p1": "material", "v1": "rubber"}),
    ), 2)
    scene = _scene(SceneObject("blue", "cube", "large", "metal", 1, (2.0, 3.0, 0.7)))
    explained = Reasoner().explain(environment, scene, "missing(Q) :- hasProperty(X,material,Q), right(0,X).")
    assert explained.values == frozenset({"metal"})
    witness = explained.explanation.kept[0]
    assert witness.matched_object == 1 and witness.hidden_object["region"] in (1, 3)
    (rubber,) = explained.explanation.eliminated
    assert rubber.constraints == (1, 2)
    assert rubber.background == (relation_rule_name("right"),)
    assert rubber.background == ("an object right of an object in region 1 or 3 lies in region 1 or 3",)


def test_unsatisfiable_input_gives_empty_answer_with_reason():
    # region 0 is full (3 visible objects, none a cone): a cone in region 0 would be a fourth object
    objects = [SceneObject("gray", "cube", "small", "rubber", 0, (-3.0, 2.0, 0.4)),
               SceneObject("red", "sphere", "small", "rubber", 0, (-1.0, 4.0, 0.4)),
               SceneObject("blue", "cylinder", "large", "metal", 0, (-4.0, 4.5, 0.7))]
    query = "missing(Q) :- hasProperty(X,color,Q), hasProperty(X,shape,cone), at(X,0)."
    explained = Reasoner().explain(Environment((), 4), _scene(*objects), query)
    assert explained.values == frozenset()
    assert not explained.satisfiable
    assert "no answer set" in explained.reason and CAPACITY_RULE in explained.reason
    assert explained.explanation.kept == ()
    assert [e.value for e in explained.explanation.eliminated] == \
        ["gray", "red", "blue", "green", "brown", "purple", "cyan", "yellow"]
    assert all(e.background == (CAPACITY_RULE,) and e.constraints == () for e in explained.explanation.eliminated)
    assert explained.explanation.describe().startswith("Possible color values: none.")


def test_unsatisfiable_environment_names_the_conflicting_constraints(environment, partial_scene):
    # a small cone: cones are forbidden in regions 0 and 1, region 2 requires medium, region 3 forbids small
    query = "missing(Q) :- hasProperty(X,color,Q), hasProperty(X,shape,cone), hasProperty(X,size,small)."
    explained = Reasoner().explain(environment, partial_scene, query)
    assert explained.values == frozenset() and not explained.satisfiable
    # region 1 is closed to a small cone by constraint 3 (no small) or 4 (no cone): either is minimal
    for k in (2, 7, 11):
        assert f"constraint {k}: {environment.constraints[k].describe()}" in explained.reason
    assert ("constraint 3: No object in region 1 has size small." in explained.reason) != \
        ("constraint 4: No object in region 1 has shape cone." in explained.reason)
    eliminated = explained.explanation.eliminated
    assert len(eliminated) == 8
    for e in eliminated:
        assert len(e.constraints) == 4 and {2, 7, 11} < set(e.constraints) and e.background == ()
        assert len({3, 4} & set(e.constraints)) == 1
    # values ruled out by the same rules share one paragraph
    text = explained.explanation.describe()
    assert text.count("ruled out by these 4 rules together") == len({e.constraints for e in eliminated})


def test_untrusted_query_is_sanitized(environment, partial_scene):
    with pytest.raises(UnsafeProgramError):
        Reasoner().explain(environment, partial_scene, 'missing(Q) :- hasProperty(X,size,Q). #script (python) #end.')


def test_explanation_json(environment, partial_scene):
    data = Reasoner().explain(environment, partial_scene, APPENDIX_A_QUERY).to_json()
    assert data["answer"] == ["medium", "small"]
    assert data["explanation"]["eliminated"][0]["constraints"] == [0, 5, 9, 12]
    assert data["explanation"]["kept"][0]["hidden_object"]["region"] == 0


def test_region_question_single_constraint_eliminations(environment, partial_scene):
    # "where can a red rubber object be?": Q ranges over regions, each other region closed by one constraint
    query = "missing(Q) :- at(X,Q), hasProperty(X,color,red), hasProperty(X,material,rubber)."
    explained = Reasoner().explain(environment, partial_scene, query)
    assert explained.values == frozenset({"0"})
    assert explained.explanation.attribute is None
    reasons = {e.value: e.constraints for e in explained.explanation.eliminated}
    assert reasons["1"] == (5,) and reasons["3"] == (12,) and reasons["2"] in {(7,), (8,)}
    assert explained.explanation.describe().startswith("Possible values: 0.")
