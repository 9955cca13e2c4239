"""The shipped examples (clevr_poc/examples): files round-trip, answers match the paper, and the two
answering modes agree on them and on variations of their questions."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from clevr_poc import domain
from clevr_poc.environments import Environment
from clevr_poc.examples import EXAMPLES, example_dir, load_example
from clevr_poc.examples._build import write_example
from clevr_poc.errors import FormatError
from clevr_poc.question import Question
from clevr_poc.reasoning import Reasoner
from clevr_poc.scene import Scene, SceneObject, compute_relationships

FILES = ("environment.lp", "scene.json", "question.json")


def test_example_names():
    assert EXAMPLES == ("appendix_a", "appendix_c1")
    with pytest.raises(FormatError, match="unknown example"):
        load_example("appendix_b")


@pytest.mark.parametrize("name", EXAMPLES)
def test_shipped_files_are_what_the_builder_writes(name, tmp_path):
    write_example(name, tmp_path)
    for file in FILES:
        assert (example_dir(name) / file).read_text(encoding="utf-8") == (tmp_path / file).read_text(encoding="utf-8")


@pytest.mark.parametrize("name", EXAMPLES)
def test_round_trip_read_write_read(name, tmp_path):
    folder = example_dir(name)
    environment, scene, question = load_example(name)
    environment.to_lp(tmp_path / "environment.lp")
    scene.to_file(tmp_path / "scene.json")
    question.to_file(tmp_path / "question.json")
    # JSON files: equal as JSON documents
    for file in ("scene.json", "question.json"):
        original = json.loads((folder / file).read_text(encoding="utf-8"))
        written = json.loads((tmp_path / file).read_text(encoding="utf-8"))
        assert written == original
    # the environment: the same program (background, objects, constraints) and the same value read again
    # (#show lines are ignored by the semantics and not compared)
    def program(path: Path) -> list[str]:
        return [line for line in path.read_text(encoding="utf-8").splitlines() if not line.startswith("#show")]

    assert program(tmp_path / "environment.lp") == program(folder / "environment.lp")
    again = Environment.from_lp(tmp_path / "environment.lp")
    assert again.constraints == environment.constraints and again.num_objects == environment.num_objects
    assert Scene.from_file(tmp_path / "scene.json") == scene
    assert Question.from_file(tmp_path / "question.json") == question


@pytest.mark.parametrize("name, expected", [("appendix_a", {"small", "medium"}), ("appendix_c1", {"gray"})])
@pytest.mark.parametrize("mode", Reasoner.MODES)
def test_example_answers(name, expected, mode):
    environment, scene, question = load_example(name)
    assert question.answer == frozenset(expected)
    answer = Reasoner(mode=mode).answer(environment, scene, question)
    assert answer.satisfiable
    assert answer.values == frozenset(expected)


# ------------------------------------------------------------------------------------------- Appendix A
def test_appendix_a_environment_mirrors_lines_44_to_66():
    environment, _, _ = load_example("appendix_a")
    assert environment.num_objects == 5  # line 44: object(0..4)
    assert len(environment.constraints) == 15
    assert environment.constraints[0].describe() == "No object in region 0 has size large."  # line 45
    assert environment.constraints[7].template == "value_restriction"  # lines 52-53
    assert environment.constraints[7].params == {"r": 2, "p1": "size", "v1": "medium", "p2": "material", "v2": "metal"}
    assert environment.constraints[12].template == "or"  # lines 58-59
    assert environment.constraints[13].params["n"] == 4 and environment.constraints[13].params["v2"] == "yellow"
    assert environment.constraints[14].params == {"r1": 0, "r2": 3, "p1": "color", "n": 2}
    text = (example_dir("appendix_a") / "environment.lp").read_text()
    assert ":- object(X), at(X, 3), not hasProperty(X, material, metal), not hasProperty(X, color, blue)." in text


def test_appendix_a_scene_is_consistent_and_has_the_big_purple_sphere():
    _, scene, _ = load_example("appendix_a")
    assert len(scene) == 4
    assert ("large", "purple", "sphere") in {(o.size, o.color, o.shape) for o in scene.objects}
    for obj in scene.objects:
        x, y, z = obj.coords_3d
        assert domain.region_of_point(x, y) == obj.region
        assert z == domain.SIZE_RADIUS[obj.size]
    assert scene.relationships == compute_relationships(o.coords_3d[:2] for o in scene.objects)


def test_appendix_a_complete_scene_satisfies_the_environment():
    """Putting the hidden object (the appendix's small red rubber sphere) back gives a complete scene
    the environment accepts; with nothing hidden the answer is that object's size alone."""
    environment, scene, question = load_example("appendix_a")
    hidden = SceneObject.from_json(question.object_interest)
    complete = Scene(scene.objects + (hidden,), {})
    assert len(complete) == environment.num_objects
    answer = Reasoner().answer(environment, complete, question)
    assert answer.satisfiable and answer.values == frozenset({"small"})


# ------------------------------------------------------------------------------------------ Appendix C.1
#: The scene graph as the paper prints it (material, color, size, region, shape).
PRINTED_OBJECTS = [
    ("metal", "red", "medium", "0", "cube"), ("metal", "gray", "medium", "3", "sphere"),
    ("metal", "brown", "medium", "1", "sphere"), ("rubber", "gray", "medium", "3", "sphere"),
    ("metal", "red", "medium", "0", "sphere"), ("rubber", "red", "medium", "2", "sphere"),
]
PRINTED_RELATIONSHIPS = {
    "left": [[4], [0, 2, 4, 5], [0, 4, 5], [0, 1, 2, 4, 5], [], [0, 4]],
    "front": [[1, 3, 4, 5], [5], [0, 1, 3, 4, 5], [1, 5], [1, 3, 5], []],
    "behind": [[2], [0, 2, 3, 4], [], [0, 2, 4], [0, 2], [0, 1, 2, 3, 4]],
    "right": [[1, 2, 3, 5], [3], [1, 3], [], [0, 1, 2, 3, 5], [1, 2, 3]],
}


def test_appendix_c1_scene_is_the_printed_scene_graph():
    data = json.loads((example_dir("appendix_c1") / "scene.json").read_text())
    objects = [(o["material"], o["color"], o["size"], o["region"], o["shape"]) for o in data["objects"]]
    assert objects == PRINTED_OBJECTS
    assert data["relationships"] == PRINTED_RELATIONSHIPS


def test_appendix_c1_relationships_are_a_consistent_layout():
    """The printed lists are exactly what strict x and y orders give (x: 4<0<5<2<1<3, y: 5<1<3<4<0<2)."""
    x_rank = {4: 0, 0: 1, 5: 2, 2: 3, 1: 4, 3: 5}
    y_rank = {5: 0, 1: 1, 3: 2, 4: 3, 0: 4, 2: 5}
    computed = compute_relationships((x_rank[i], y_rank[i]) for i in range(6))
    assert {k: [list(r) for r in v] for k, v in computed.items()} == PRINTED_RELATIONSHIPS


def test_appendix_c1_environment_has_the_16_sentences_and_7_objects():
    environment, scene, _ = load_example("appendix_c1")
    assert environment.num_objects == 7 == len(scene) + 1
    assert len(environment.constraints) == 16
    first = environment.constraints[0]
    assert first.template == "at_least_pairs_with_value"
    assert first.params == {"r1": 0, "r2": 2, "p1": "size", "p2": "color", "v2": "red", "n": 1}
    assert environment.constraints[1].describe() == "No object in region 0 has size small."
    assert environment.constraints[-1].params == {"r1": 3, "r2": 2, "p1": "size", "p2": "color", "v2": "gray", "n": 1}


def test_appendix_c1_gray_comes_from_the_gray_pair_constraint():
    """No visible gray object is in region 2, so 'at least 1 pair of gray objects with the same size in
    regions 3 and 2' forces the hidden object to be a medium gray object in region 2 (rubber: region 2
    has no metal). Without that constraint every colour is possible."""
    environment, scene, question = load_example("appendix_c1")
    reasoner = Reasoner()
    for region, expected in ((0, set()), (1, set()), (2, {"gray"}), (3, set())):
        query = question.asp_query.replace("X!=Y.", f"X!=Y, at(X,{region}).")
        assert reasoner.answer(environment, scene, query).values == frozenset(expected)
    for attribute, expected in (("size", {"medium"}), ("material", {"rubber"})):
        query = question.asp_query.replace("hasProperty(X,color,Q)", f"hasProperty(X,{attribute},Q)")
        assert reasoner.answer(environment, scene, query).values == frozenset(expected)
    relaxed = Environment(environment.constraints[:-1], environment.num_objects)
    assert reasoner.answer(relaxed, scene, question).values == frozenset(domain.COLORS)


def test_appendix_c1_with_six_objects_nothing_is_hidden():
    """Read literally, the prompt's 'There are 6 objects in the scene' with 6 visible objects leaves no
    hidden object: no cylinder exists, the program has no answer set, and the answer is empty."""
    environment, scene, question = load_example("appendix_c1")
    six = Environment(environment.constraints, 6)
    answer = Reasoner().answer(six, scene, question)
    assert not answer.satisfiable and answer.values == frozenset()


# ------------------------------------------------------------------------- compiled == direct
VARIATIONS = [
    None,  # the example's own question
    "missing(Q) :- hasProperty(X,color,Q).",
    "missing(Q) :- hasProperty(X,shape,Q), hasProperty(X,size,small).",
    "missing(Q) :- hasProperty(X,material,Q), hasProperty(X,shape,sphere), hasProperty(X,color,red).",
    "missing(Q) :- hasProperty(X,size,Q), hasProperty(Y,color,purple), left(Y,X).",
    "missing(Q) :- hasProperty(X,shape,Q), hasProperty(Y,color,gray), right(Y,X), X!=Y.",
    "missing(Q) :- hasProperty(X,color,Q), hasProperty(Y,shape,cube), front(Y,X).",
    "missing(Q) :- hasProperty(X,material,Q), hasProperty(Y,size,medium), behind(Y,X).",
    "missing(Q) :- hasProperty(X,color,Q), hasProperty(Y,shape,sphere), same_size(Y,X), X!=Y.",
    "missing(Q) :- hasProperty(X,shape,Q), hasProperty(Y,color,red), same_color(Y,X), X!=Y.",
    "missing(Q) :- hasProperty(X,size,Q), hasProperty(Y,material,rubber), same_material(Y,X), X!=Y.",
    "missing(Q) :- hasProperty(X,material,Q), hasProperty(Y,color,blue), same_shape(Y,X), X!=Y.",
    "missing(Q) :- hasProperty(X,color,Q), sameProperty(X,Y,size), at(Y,1).",
    "missing(Q) :- hasProperty(X,shape,Q), left(0,X).",
    "missing(Q) :- hasProperty(X,color,Q), front(X,2), behind(1,X).",
    "missing(Q) :- hasProperty(X,size,Q), same_color(3,X).",
    "missing(Q) :- hasProperty(X,size,Q), X!=0, X!=1, X!=2, X!=3.",
    "missing(Q) :- hasProperty(4,shape,Q).",
    "missing(Q) :- hasProperty(X,color,Q), at(X,0), object(X).",
    "missing(Q) :- hasProperty(X,shape,Q), hasProperty(Y,size,large), hasProperty(Z,color,green), "
    "left(Y,X), front(Z,X), X!=Y, X!=Z.",
]


@pytest.mark.parametrize("name", EXAMPLES)
@pytest.mark.parametrize("variation", range(len(VARIATIONS)))
def test_compiled_and_direct_agree(name, variation):
    environment, scene, question = load_example(name)
    query = VARIATIONS[variation] or question.asp_query
    compiled = Reasoner(mode="compiled")
    direct = Reasoner(mode="direct")
    a = compiled.answer(environment, scene, query)
    b = direct.answer(environment, scene, query)
    assert (a.values, a.satisfiable, a.attribute) == (b.values, b.satisfiable, b.attribute)
    assert direct.counts == {"compiled": 0, "direct": 1}


def test_most_variations_really_use_the_compiled_encoding():
    environment, scene, _ = load_example("appendix_a")
    reasoner = Reasoner(mode="compiled")
    for query in VARIATIONS[1:]:
        reasoner.answer(environment, scene, query)
    # only the != with object-id constants falls back to the direct encoding
    assert reasoner.counts["compiled"] >= len(VARIATIONS) - 2


def test_package_data_folder_holds_only_the_three_files():
    for name in EXAMPLES:
        assert sorted(p.name for p in Path(example_dir(name)).iterdir()) == sorted(FILES)
