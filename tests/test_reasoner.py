"""The Reasoner on small real inputs: official semantics, both modes, empty answers, strictness."""

from __future__ import annotations

import pytest

from clevr_poc import FormatError, Reasoner, UnsatisfiableError
from clevr_poc.environments import Constraint, Environment
from clevr_poc.scene import Scene, SceneObject, compute_relationships

from conftest import APPENDIX_A_QUERY, appendix_a_complete_scene, appendix_a_environment


@pytest.mark.parametrize("mode", ["compiled", "direct"])
def test_appendix_a_answer(environment, partial_scene, mode):
    answer = Reasoner(mode=mode).answer(environment, partial_scene, APPENDIX_A_QUERY)
    assert answer.values == frozenset({"small", "medium"})
    assert answer.attribute == "size"
    assert answer.satisfiable


@pytest.mark.parametrize("mode", ["compiled", "direct"])
def test_visible_object_matching_the_description_contributes(environment, mode):
    # X is not bound to the hidden object. Region 0 is full (3 visible objects, capacity 3), so the
    # hidden object cannot be the cube in region 0: the only answer comes from the visible green cube.
    objects = [
        SceneObject("green", "cube", "small", "rubber", 0, (-3.0, 2.0, 0.39)),
        SceneObject("red", "sphere", "small", "rubber", 0, (-1.0, 4.0, 0.39)),
        SceneObject("yellow", "sphere", "medium", "metal", 0, (-4.0, 4.5, 0.58)),
        SceneObject("purple", "sphere", "large", "metal", 1, (2.0, 3.0, 1.0)),
    ]
    scene = Scene(tuple(objects), compute_relationships([o.coords_3d[:2] for o in objects]))
    query = "missing(Q) :- hasProperty(X,color,Q), at(X,0), hasProperty(X,shape,cube)."
    answer = Reasoner(mode=mode).answer(environment, scene, query)
    assert answer.values == frozenset({"green"})
    # without the capacity rule the hidden object could be a cube of another colour in region 0
    wider = "missing(Q) :- hasProperty(X,color,Q), at(X,1), hasProperty(X,shape,sphere)."
    assert Reasoner(mode=mode).answer(environment, scene, wider).values == frozenset(
        {"gray", "red", "blue", "green", "brown", "purple", "cyan", "yellow"})


@pytest.mark.parametrize("mode", ["compiled", "direct"])
def test_nothing_can_match_gives_empty_answer_with_reason(environment, partial_scene, mode):
    # no cone may be anywhere except region 2/3 with constraints; a small cone is impossible:
    # region 0 and 1 forbid cones, region 2 requires medium size, region 3 forbids small objects
    query = "missing(Q) :- hasProperty(X,color,Q), hasProperty(X,shape,cone), hasProperty(X,size,small)."
    reasoner = Reasoner(mode=mode)
    answer = reasoner.answer(environment, partial_scene, query)
    assert answer.values == frozenset()
    assert not answer.satisfiable
    assert "no answer set" in answer.reason
    with pytest.raises(UnsatisfiableError):
        reasoner.answer(environment, partial_scene, query, strict=True)


def test_compiled_and_direct_agree_on_relations(environment, partial_scene):
    queries = [
        "missing(Q) :- hasProperty(X,shape,Q), hasProperty(Y,color,purple), left(Y,X).",
        "missing(Q) :- hasProperty(X,material,Q), hasProperty(Y,shape,cylinder), front(Y,X), hasProperty(X,size,small).",
        "missing(Q) :- hasProperty(X,color,Q), hasProperty(Y,color,blue), behind(Y,X), right(Y,X).",
        "missing(Q) :- hasProperty(X,size,Q), same_material(Y,X), hasProperty(Y,color,gray), X!=Y.",
        "missing(Q) :- hasProperty(X,shape,Q), sameProperty(X,Y,color), hasProperty(Y,shape,cube), X!=Y.",
        "missing(Q) :- hasProperty(X,color,Q), at(X,3).",
        "missing(Q) :- hasProperty(4,color,Q).",
        "missing(Q) :- hasProperty(X,size,Q), hasProperty(Y,color,C), hasProperty(X,color,C), X!=Y.",
    ]
    compiled, direct = Reasoner(mode="compiled"), Reasoner(mode="direct")
    for query in queries:
        assert compiled.answer(environment, partial_scene, query).values == \
            direct.answer(environment, partial_scene, query).values, query
    # the last query uses a shared value variable: outside the compiled fragment, solved directly
    assert compiled.counts["direct"] == 1
    assert compiled.counts["compiled"] == len(queries) - 1


def test_scene_larger_than_environment_is_a_format_error(environment, complete_scene):
    small_env = Environment(environment.constraints, 3)
    with pytest.raises(FormatError, match="declares only 3"):
        Reasoner().answer(small_env, complete_scene, APPENDIX_A_QUERY)


def test_complete_scene_nothing_hidden(environment, complete_scene):
    # with all five objects visible the red sphere is known: the answer is its size only
    answer = Reasoner().answer(environment, complete_scene, APPENDIX_A_QUERY)
    assert answer.values == frozenset({"small"})


def test_unsatisfiable_environment_gives_empty_answer(partial_scene):
    env = Environment((Constraint("exactly_n", {"r": 0, "p1": "color", "v1": "red", "n": 3}),
                       Constraint("generic", {"p1": "color", "v1": "red"})), 5)
    answer = Reasoner().answer(env, partial_scene, APPENDIX_A_QUERY)
    assert answer.values == frozenset() and not answer.satisfiable


def test_query_heads_query_and_unknown_are_renamed(environment, partial_scene):
    q = APPENDIX_A_QUERY.replace("missing(Q)", "unknown(Q)")
    assert Reasoner().answer(environment, partial_scene, q).values == frozenset({"small", "medium"})


def test_answer_scene_facts_are_the_scene_facts_printed_when_read():
    """Issue 27: the Reasoner's Answer prints its scene facts only when they are read; the value, equality,
    pickling and dataclasses.replace are those of the text."""
    import dataclasses
    import pickle

    from clevr_poc.answer import Answer

    environment, partial = appendix_a_environment(), appendix_a_complete_scene().without_object(4)
    reasoner = Reasoner()
    query = "missing(Q) :- hasProperty(X,color,Q), hasProperty(X,shape,cube)."
    answer = reasoner.answer(environment, partial, query)
    unread = reasoner.answer(environment, partial, query)
    assert type(pickle.loads(pickle.dumps(unread)).__dict__["scene_facts"]) is str
    assert unread == answer  # eq reads the field
    assert answer.scene_facts == partial.to_asp_facts() == Reasoner.scene_facts(environment, partial)
    assert answer.scene_facts.startswith("hasProperty(0,")
    assert type(answer.__dict__["scene_facts"]) is str  # printed once, kept
    assert dataclasses.replace(answer, reason="x").scene_facts == answer.scene_facts
    assert Answer(frozenset({"red"})).scene_facts is None and Answer(frozenset(), scene_facts="a.").scene_facts == "a."
    assert Answer.scene_facts is None


@pytest.mark.parametrize("on_last", [True, False])
def test_solve_brave_reads_the_brave_consequences_with_and_without_on_last(monkeypatch, on_last):
    """Issue 27: solve_brave reads only the last model where clingo has ``on_last``; the same answer
    either way (several models before the last, an unsatisfiable call)."""
    import clingo

    from clevr_poc.solver import watchdog
    from clevr_poc.solver.control import make_control

    if on_last and not watchdog._ON_LAST:
        pytest.skip("this clingo has no on_last")
    monkeypatch.setattr(watchdog, "_ON_LAST", on_last)
    control = make_control(["--models=0", "--enum-mode=brave"])
    control.add("base", [], "{a; b; c}. :- a, b. d :- c. #external e. :- e. #show a/0. #show b/0. #show d/0.")
    control.ground([("base", [])])
    satisfiable, symbols, timed_out = watchdog.solve_brave(control, [], 10.0)
    assert (satisfiable, sorted(map(str, symbols)), timed_out) == (True, ["a", "b", "d"], False)
    e = control.symbolic_atoms[clingo.Function("e")].literal
    assert watchdog.solve_brave(control, [e], 10.0) == (False, [], False)
