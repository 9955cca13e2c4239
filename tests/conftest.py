"""Shared fixtures: a small hand-built environment, complete scene and partial scene (paper Appendix A)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from clevr_poc.environments import Constraint, Environment  # noqa: E402
from clevr_poc.scene import Scene, SceneObject, compute_relationships  # noqa: E402

APPENDIX_A_QUERY = (
    "missing(Q) :- hasProperty(X,size,Q), hasProperty(X,material,rubber), hasProperty(X,color,red), "
    "hasProperty(Y,color,purple), hasProperty(Y,size,large), X!=Y, same_shape(Y,X)."
)


def appendix_a_environment() -> Environment:
    """The environment of the paper's Appendix A (lines 44-66), as template instances."""
    C = Constraint
    return Environment((
        C("negation", {"r": 0, "p1": "size", "v1": "large"}),
        C("negation", {"r": 0, "p1": "shape", "v1": "cylinder"}),
        C("negation", {"r": 0, "p1": "shape", "v1": "cone"}),
        C("negation", {"r": 1, "p1": "size", "v1": "small"}),
        C("negation", {"r": 1, "p1": "shape", "v1": "cone"}),
        C("negation", {"r": 1, "p1": "material", "v1": "rubber"}),
        C("negation", {"r": 1, "p1": "shape", "v1": "cube"}),
        C("value_restriction", {"r": 2, "p1": "size", "v1": "medium", "p2": "material", "v2": "metal"}),
        C("negation", {"r": 2, "p1": "material", "v1": "rubber"}),
        C("negation", {"r": 2, "p1": "shape", "v1": "sphere"}),
        C("negation", {"r": 2, "p1": "shape", "v1": "cube"}),
        C("negation", {"r": 3, "p1": "size", "v1": "small"}),
        C("or", {"r": 3, "p1": "material", "v1": "metal", "p2": "color", "v2": "blue"}),
        C("at_most_pairs_with_value", {"r1": 3, "r2": 2, "p1": "shape", "p2": "color", "v2": "yellow", "n": 4}),
        C("at_most_pairs", {"r1": 0, "r2": 3, "p1": "color", "n": 2}),
    ), 5, id=0)


def appendix_a_complete_scene() -> Scene:
    """Five objects; object 4 (small red rubber sphere, region 0) is the one the appendix hides."""
    objects = [
        SceneObject("purple", "sphere", "large", "metal", 1, (2.0, 3.0, 1.0)),
        SceneObject("gray", "cylinder", "medium", "metal", 2, (-2.0, -2.0, 0.58)),
        SceneObject("blue", "cube", "medium", "rubber", 3, (3.0, -3.0, 0.58)),
        SceneObject("green", "cube", "small", "rubber", 0, (-3.0, 2.0, 0.39)),
        SceneObject("red", "sphere", "small", "rubber", 0, (-1.0, 4.0, 0.39)),
    ]
    return Scene(tuple(objects), compute_relationships([(o.coords_3d[0], o.coords_3d[1]) for o in objects]),
                 split="test", image_index=0, image_filename="CLEVR_test_000000.png")


@pytest.fixture
def environment() -> Environment:
    return appendix_a_environment()


@pytest.fixture
def complete_scene() -> Scene:
    return appendix_a_complete_scene()


@pytest.fixture
def partial_scene() -> Scene:
    return appendix_a_complete_scene().without_object(4)


@pytest.fixture(scope="session")
def tiny_dataset(tmp_path_factory):
    """~100 generated questions (2 environments x 50 scenes, seed 7; splits train 0.8 / test 0.2), made
    once per test session; used by the parser tests."""
    from clevr_poc.generation.dataset_writer import generate_dataset

    root = tmp_path_factory.getbasetemp() / "parser_tiny_dataset"
    generate_dataset(root, environments=2, scenes_per_environment=50, seed=7, splits={"train": 0.8, "test": 0.2},
                     workers=1, progress=False)
    return root


#: Small ScienceQA and M3CoT files in the official formats (tests of clevr_poc.mcot).
MCOT_FIXTURES = Path(__file__).parent / "fixtures" / "mcot"


@pytest.fixture(scope="module")
def scienceqa():
    """The ScienceQA fixture dataset (``tests/fixtures/mcot/scienceqa``: train problems 101-103, test
    problems 201-205, val problem 301), as :func:`clevr_poc.mcot.mcot_data.load_scienceqa` reads it."""
    from clevr_poc.mcot.mcot_data import load_scienceqa

    return load_scienceqa(MCOT_FIXTURES / "scienceqa")
