"""Official scene / question JSON: round-trips and typed errors on malformed files."""

from __future__ import annotations

import json

import pytest

from clevr_poc import FormatError, Question, Scene
from clevr_poc.scene import SceneObject, compute_relationships


def test_partial_scene_renumbers_objects_and_relationships(complete_scene):
    partial = complete_scene.without_object(1)
    assert [o.color for o in partial.objects] == ["purple", "blue", "green", "red"]
    # in the complete scene object 3 (green, x=-3) has nothing to its left; object 0 (x=2) has 1, 3, 4
    assert complete_scene.relationships["left"][0] == (1, 3, 4)
    # after removing object 1 the same objects are 2 (green) and 3 (red)
    assert partial.relationships["left"][0] == (2, 3)
    # front[0] = objects with smaller y than (2, 3): blue (3, -3) and green (-3, 2), now ids 1 and 2
    assert partial.relationships["front"][0] == (1, 2)
    assert len(partial.relationships["front"]) == 4


def test_compute_relationships_official_convention():
    rel = compute_relationships([(0.0, 0.0), (1.0, -1.0), (-2.0, 3.0)])
    assert rel["left"] == ((2,), (0, 2), ())
    assert rel["right"] == ((1,), (), (0, 1))
    assert rel["front"] == ((1,), (), (0, 1))
    assert rel["behind"] == ((2,), (0, 2), ())


def test_scene_json_round_trip_keeps_unknown_keys(tmp_path, complete_scene):
    data = complete_scene.to_json()
    data["directions"] = {"left": [-1, 0, 0]}
    data["objects"][0]["rotation"] = 12.5
    path = tmp_path / "scene.json"
    path.write_text(json.dumps(data))
    first = Scene.from_file(path)
    out = tmp_path / "again.json"
    first.to_file(out)
    second = Scene.from_file(out)
    assert json.loads(out.read_text()) == data
    assert second == first
    assert second.objects[0].rotation == 12.5
    assert second.objects[0].region == 1 and data["objects"][0]["region"] == "1"


def test_question_json_round_trip(tmp_path):
    data = {
        "split": "val", "image_filename": "CLEVR_val_000007.png", "image_index": 7,
        "question": "What size is the red thing?", "program": [{"type": "scene", "inputs": []}],
        "asp_query": "missing(Q) :- hasProperty(X,size,Q), hasProperty(X,color,red).",
        "answer": ["small", "medium"], "object_interest": {"color": "red"}, "template_filename": "zero_hop.json",
        "question_family_index": 2, "question_index": 7, "constraint_type_index": 3,
    }
    path = tmp_path / "q.json"
    path.write_text(json.dumps(data))
    question = Question.from_file(path)
    assert question.answer == frozenset({"small", "medium"})
    assert question.query_attribute == "size"
    assert question.environment_id == 3
    out = tmp_path / "q2.json"
    question.to_file(out)
    written = json.loads(out.read_text())
    assert written["answer"] == ["medium", "small"]
    assert Question.from_file(out) == question


def test_question_spelling_is_a_typed_field_and_extra_holds_only_unknown_keys():
    from clevr_poc.question import QuestionSpelling

    text = ('{"note": "kept", "asp_query": "missing(Q) :- hasProperty(X,size,Q), hasProperty(X,color,red).", '
            '"question": "What size is the red thing?", "answer": "small", "constraint_type_index": 3}')
    question = Question.from_json(json.loads(text))
    assert dict(question.extra) == {"note": "kept"}
    assert question.json_spelling == QuestionSpelling(
        ("note", "asp_query", "question", "answer", "constraint_type_index"), answer_is_list=False)
    assert json.dumps(question.to_json()) == text
    built = Question("What size?", "missing(Q) :- hasProperty(X,size,Q).", answer=frozenset({"small"}))
    assert built.json_spelling == QuestionSpelling((), answer_is_list=True)
    assert built.to_json()["answer"] == ["small"] and list(built.to_json())[:3] == ["split", "image_filename",
                                                                                      "image_index"]
    assert question == Question.from_json({**json.loads(text), "answer": ["small"]})  # spelling not compared


@pytest.mark.parametrize(
    ("mutate", "field"),
    [
        (lambda d: d["objects"][1].__setitem__("color", "pink"), "objects[1].color"),
        (lambda d: d["objects"][0].__setitem__("region", "7"), "objects[0].region"),
        (lambda d: d["objects"][2].pop("shape"), "objects[2].shape"),
        (lambda d: d["relationships"].__setitem__("left", [[9], [], [], []]), "relationships.left[0]"),
        (lambda d: d["relationships"].__setitem__("above", []), "relationships"),
        (lambda d: d["objects"][0].__setitem__("3d_coords", ["a", 1, 2]), "objects[0].3d_coords"),
        (lambda d: d.pop("objects"), "objects"),
    ],
)
def test_malformed_scene_names_file_and_field(tmp_path, partial_scene, mutate, field):
    data = partial_scene.to_json()
    mutate(data)
    path = tmp_path / "bad_scene.json"
    path.write_text(json.dumps(data))
    with pytest.raises(FormatError) as info:
        Scene.from_file(path)
    assert info.value.field == field
    assert "bad_scene.json" in str(info.value)


def test_invalid_json_and_missing_file(tmp_path):
    path = tmp_path / "broken.json"
    path.write_text('{"objects": [')
    with pytest.raises(FormatError, match="broken.json.*invalid JSON at line 1"):
        Scene.from_file(path)
    with pytest.raises(FormatError, match="file not found"):
        Scene.from_file(tmp_path / "nope.json")


def test_malformed_question(tmp_path):
    path = tmp_path / "q.json"
    path.write_text(json.dumps({"question": "What?", "asp_query": "missing(Q):-hasProperty(X,size,Q).",
                                "answer": ["huge"]}))
    with pytest.raises(FormatError) as info:
        Question.from_file(path)
    assert info.value.field == "answer" and info.value.value == "huge"


def test_typed_scene_metadata_is_read_and_files_round_trip_byte_for_byte():
    from clevr_poc.rendering.geometry import default_camera

    camera = default_camera(64, 48).to_json()
    data = {"split": "test", "image_index": 0, "objects": [
        {"color": "red", "size": "large", "shape": "cube", "material": "metal", "region": 2, "3d_coords": [1, 2, 0.7],
         "rotation": 12, "note": "kept", "mask": {"size": [48, 64], "counts": "0"}, "bbox": None, "visible_pixels": 0}],
        "relationships": {}, "constraint_type_index": 4, "generation": {"attempts": 3},
        "camera": camera, "render": {"engine": "cycles", "samples": 8, "seed": 1, "width": 64, "height": 48,
                                     "extra_setting": True}}
    scene = Scene.from_json(json.loads(json.dumps(data)))
    obj = scene.objects[0]
    assert (obj.rotation, obj.bbox, obj.visible_pixels, dict(obj.extra)) == (12, None, 0, {"note": "kept"})
    assert scene.environment_id == 4 and scene.generation.attempts == 3 and scene.generation.layouts_checked == 0
    assert scene.camera.width == 64 and scene.image.render.samples == 8 and scene.image.render.denoise is None
    assert json.dumps(scene.to_json()) == json.dumps(data)
    with pytest.raises(FormatError, match="rotation"):
        Scene.from_json({**data, "objects": [{**data["objects"][0], "rotation": "x"}]})
    with pytest.raises(ValueError, match="field of SceneObject"):
        SceneObject("red", "cube", "large", "metal", 0, extra={"rotation": 3.0})


def test_question_query_is_the_sanitized_query():
    question = Question("What colour?", "missing(Q):-hasProperty(X,color,Q),at(X,1).")
    assert question.query.text == "missing(Q) :- hasProperty(X,color,Q), at(X,1)."
    assert question.query.attribute == "color" and question.query is question.query


def test_scene_fact_text_is_the_text_of_the_solver_symbols(partial_scene):
    from clevr_poc.solver.programs import scene_fact_groups, scene_symbols

    text = partial_scene.to_asp_facts()
    lines = text.split("\n")
    assert lines[0] == ("hasProperty(0,color,purple). hasProperty(0,shape,sphere). hasProperty(0,size,large). "
                        "hasProperty(0,material,metal). at(0,1).")
    assert lines[4:7] == ["left(0,1). left(0,3).", "left(1,3).", "left(2,0). left(2,1). left(2,3)."]
    assert text.endswith("behind(3,0).\n") and len(lines) == 17 and lines[-1] == ""
    assert " ".join(text.split()) == " ".join(f"{s}." for s in scene_symbols(partial_scene))
    assert len(scene_fact_groups(partial_scene)) == 16  # 4 objects, 3 rows of each relation
    assert Scene(objects=(), relationships={}).to_asp_facts() == "\n"


def test_solver_parse_statements_reads_every_statement_with_clingos_parser():
    from clevr_poc.solver.rules import ASTType, parse_rules, parse_statements

    statements = parse_statements("a :- b.\n#show a/0.")
    assert [s.ast_type for s in statements] == [ASTType.Program, ASTType.Rule, ASTType.ShowSignature]
    assert [str(r) for r in parse_rules("p(1). :- q(X), X != 2.")] == ["p(1).", "#false :- q(X); X != 2."]
    messages: list[str] = []
    with pytest.raises(RuntimeError):
        parse_statements("a(:- b.", logger=lambda code, message: messages.append(message))
    assert len(messages) == 1 and "syntax error" in messages[0]
