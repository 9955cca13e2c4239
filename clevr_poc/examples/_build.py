"""How the shipped examples were made: typed values in, official files out.

``python -m clevr_poc.examples._build`` rewrites ``clevr_poc/examples/<name>/{environment.lp, scene.json,
question.json}`` from the functions below (tests check that the shipped files equal their output, so the
files never drift from this documented construction).

Sources:

- ``appendix_a``: paper, Appendix A. The environment is lines 44-66 of the appendix, one
  :class:`~clevr_poc.environments.Constraint` per appendix line (or per two-rule template: lines 52-53,
  58-59), in appendix order, so constraint ``i`` of the environment is the appendix's line
  ``45 + i`` up to line 51. The appendix shows the partial scene only as an image (Fig. 5), so the
  4 visible objects are ours, chosen to satisfy the environment and to contain "the big purple object"
  (a large purple metal sphere); relationships come from their world positions
  (:func:`~clevr_poc.scene.compute_relationships`). The hidden object is the appendix's "small red rubber
  sphere", in region 0 (the only region the appendix's reasoning leaves it).
- ``appendix_c1``: paper, Appendix C.1 (the first GPT-4 prompt). The 6-object scene graph is copied
  exactly as printed (attributes, regions and the four relationship lists). The environment is
  rebuilt from the 16 constraint sentences of the prompt, in prompt order; "at least 1 pair of color red
  objects with the same size in regions 0 and 2 together" is ``at_least_pairs_with_value(r1=0, r2=2,
  p1=size, p2=color, v2=red, n=1)``, "There are no small-size objects in region 0" is ``negation(r=0,
  p1=size, v1=small)``, and so on. The prompt says "There are 6 objects in the scene" and shows 6 visible
  objects; since one more object is hidden, the environment declares 7 (``object(0..6)``).
"""

from __future__ import annotations

import sys
from pathlib import Path

from clevr_poc import domain
from clevr_poc.environments import Constraint, Environment
from clevr_poc.question import Question
from clevr_poc.scene import Scene, SceneObject, compute_relationships

HERE = Path(__file__).resolve().parent


def _negation(r: int, p1: str, v1: str) -> Constraint:
    return Constraint("negation", {"r": r, "p1": p1, "v1": v1})


def _node(kind: str, inputs: list[int], side_inputs: list[str] | None = None) -> dict:
    node: dict = {"type": kind, "inputs": inputs}
    if side_inputs is not None:
        node["side_inputs"] = side_inputs
    return node


# ---------------------------------------------------------------------------------------------- Appendix A
def appendix_a() -> tuple[Environment, Scene, Question]:
    """The paper's Appendix A example: environment (lines 44-66), a partial scene, the question."""
    constraints = (
        _negation(0, "size", "large"),             # line 45
        _negation(0, "shape", "cylinder"),         # line 46
        _negation(0, "shape", "cone"),             # line 47
        _negation(1, "size", "small"),             # line 48
        _negation(1, "shape", "cone"),             # line 49
        _negation(1, "material", "rubber"),        # line 50
        _negation(1, "shape", "cube"),             # line 51
        Constraint("value_restriction",            # lines 52-53
                   {"r": 2, "p1": "size", "v1": "medium", "p2": "material", "v2": "metal"}),
        _negation(2, "material", "rubber"),        # line 54
        _negation(2, "shape", "sphere"),           # line 55
        _negation(2, "shape", "cube"),             # line 56
        _negation(3, "size", "small"),             # line 57
        Constraint("or", {"r": 3, "p1": "material", "v1": "metal", "p2": "color", "v2": "blue"}),  # 58-59
        Constraint("at_most_pairs_with_value",     # lines 60-63
                   {"r1": 3, "r2": 2, "p1": "shape", "p2": "color", "v2": "yellow", "n": 4}),
        Constraint("at_most_pairs", {"r1": 0, "r2": 3, "p1": "color", "n": 2}),  # lines 64-66
    )
    environment = Environment(constraints, num_objects=5)  # line 44: object(0..4)

    # (size, color, material, shape, region, x, y): world x/y in the region's box (domain.REGION_BOXES)
    visible = (
        ("large", "purple", "metal", "sphere", 1, 2.0, 3.0),
        ("medium", "gray", "metal", "cylinder", 2, -2.0, -2.0),
        ("medium", "blue", "rubber", "cube", 3, 3.0, -3.0),
        ("small", "green", "rubber", "cube", 0, -3.0, 2.0),
    )
    objects = tuple(
        SceneObject(color=color, shape=shape, size=size, material=material, region=region,
                    coords_3d=(x, y, domain.SIZE_RADIUS[size]))
        for size, color, material, shape, region, x, y in visible
    )
    relationships = compute_relationships((x, y) for *_, x, y in visible)
    scene = Scene(objects, relationships, split="example", image_index=0)

    question = Question(
        text="There is another red rubber object that is the same shape as the big purple object; "
             "what size is it?",
        asp_query="missing(Q) :- hasProperty(X,size,Q), hasProperty(X,material,rubber), "
                  "hasProperty(X,color,red), hasProperty(Y,color,purple), hasProperty(Y,size,large), "
                  "X!=Y, same_shape(Y,X).",
        answer=frozenset({"small", "medium"}),
        program=(
            _node("scene", []),
            _node("filter_size", [0], ["large"]),
            _node("filter_color", [1], ["purple"]),
            _node("unique", [2]),
            _node("same_shape", [3]),
            _node("filter_color", [4], ["red"]),
            _node("filter_material", [5], ["rubber"]),
            _node("unique", [6]),
            _node("query_size", [7]),
        ),
        split="example", image_index=0,
        object_interest={"color": "red", "size": "small", "shape": "sphere", "material": "rubber",
                         "region": "0"},
        template_filename="same_relate.json", question_family_index=8, question_index=0,
    )
    return environment, scene, question


# --------------------------------------------------------------------------------------------- Appendix C.1
#: The scene graph of Appendix C.1 as printed (key order of the print: material, color, size, region, shape).
C1_OBJECTS: tuple[tuple[str, str, str, str, str], ...] = (
    ("metal", "red", "medium", "0", "cube"),
    ("metal", "gray", "medium", "3", "sphere"),
    ("metal", "brown", "medium", "1", "sphere"),
    ("rubber", "gray", "medium", "3", "sphere"),
    ("metal", "red", "medium", "0", "sphere"),
    ("rubber", "red", "medium", "2", "sphere"),
)
C1_RELATIONSHIPS: dict[str, list[list[int]]] = {
    "left": [[4], [0, 2, 4, 5], [0, 4, 5], [0, 1, 2, 4, 5], [], [0, 4]],
    "front": [[1, 3, 4, 5], [5], [0, 1, 3, 4, 5], [1, 5], [1, 3, 5], []],
    "behind": [[2], [0, 2, 3, 4], [], [0, 2, 4], [0, 2], [0, 1, 2, 3, 4]],
    "right": [[1, 2, 3, 5], [3], [1, 3], [], [0, 1, 2, 3, 5], [1, 2, 3]],
}


def appendix_c1() -> tuple[Environment, Scene, Question]:
    """The paper's Appendix C.1 example (first prompt example): scene graph, environment, question."""
    constraints = (
        Constraint("at_least_pairs_with_value",    # at least 1 pair of color red objects, same size, 0 and 2
                   {"r1": 0, "r2": 2, "p1": "size", "p2": "color", "v2": "red", "n": 1}),
        _negation(0, "size", "small"),
        _negation(0, "shape", "cone"),
        _negation(0, "color", "purple"),
        _negation(0, "color", "blue"),
        _negation(1, "shape", "cylinder"),
        _negation(1, "color", "cyan"),
        _negation(1, "material", "rubber"),
        Constraint("at_least_pairs_with_value",    # ... material metal objects with the same size, 0 and 3
                   {"r1": 0, "r2": 3, "p1": "size", "p2": "material", "v2": "metal", "n": 1}),
        _negation(2, "material", "metal"),
        _negation(2, "size", "large"),
        Constraint("at_least_pairs_with_value",    # ... size medium objects with the same shape, 1 and 3
                   {"r1": 1, "r2": 3, "p1": "shape", "p2": "size", "v2": "medium", "n": 1}),
        _negation(3, "color", "red"),
        _negation(3, "shape", "cube"),
        Constraint("at_least_pairs", {"r1": 0, "r2": 1, "p1": "material", "n": 1}),  # same material, 0 and 1
        Constraint("at_least_pairs_with_value",    # ... color gray objects with the same size, 3 and 2
                   {"r1": 3, "r2": 2, "p1": "size", "p2": "color", "v2": "gray", "n": 1}),
    )
    environment = Environment(constraints, num_objects=len(C1_OBJECTS) + 1)  # 6 visible + 1 hidden
    scene = Scene.from_json({
        "split": "example", "image_index": 1,
        "objects": [{"material": m, "color": c, "size": z, "region": r, "shape": s}
                    for m, c, z, r, s in C1_OBJECTS],
        "relationships": C1_RELATIONSHIPS,
    })
    question = Question(
        text="The other cylinder that is the same material as the medium red thing is what color?",
        asp_query="missing(Q) :- hasProperty(X,color,Q), hasProperty(X,shape,cylinder), "
                  "hasProperty(Y,size,medium), hasProperty(Y,color,red), same_material(Y,X), X!=Y.",
        answer=frozenset({"gray"}),
        program=(
            _node("scene", []),
            _node("filter_size", [0], ["medium"]),
            _node("filter_color", [1], ["red"]),
            _node("unique", [2]),
            _node("same_material", [3]),
            _node("filter_shape", [4], ["cylinder"]),
            _node("unique", [5]),
            _node("query_color", [6]),
        ),
        split="example", image_index=1,
        template_filename="same_relate.json", question_family_index=6, question_index=0,
    )
    return environment, scene, question


BUILDERS = {"appendix_a": appendix_a, "appendix_c1": appendix_c1}


def write_example(name: str, folder: Path) -> Path:
    """Write ``environment.lp``, ``scene.json`` and ``question.json`` of example ``name`` into ``folder``."""
    environment, scene, question = BUILDERS[name]()
    folder.mkdir(parents=True, exist_ok=True)
    environment.to_lp(folder / "environment.lp")
    scene.to_file(folder / "scene.json")
    question.to_file(folder / "question.json")
    return folder


def main() -> int:
    for name in BUILDERS:
        print(write_example(name, HERE / name))
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
