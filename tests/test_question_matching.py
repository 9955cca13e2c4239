"""``question_generator._other_matches`` (issue 27's faster uniqueness test of ``_describe``) against the
list it replaces: ``[p for p in candidates if _matches(objects[p], description)] != [obj]``, on random
scenes, candidate sets and descriptions (empty ones included)."""

from __future__ import annotations

import random

from clevr_poc import domain
from clevr_poc.generation.question_generator import _matches, _other_matches
from clevr_poc.scene import SceneObject


def test_other_matches_is_the_old_uniqueness_test_on_random_inputs():
    rng = random.Random(3)
    unique = 0
    for _ in range(3000):
        # few values per attribute so that matches are common
        objects = [SceneObject(rng.choice(domain.DOMAINS["color"][:2]), rng.choice(domain.DOMAINS["shape"][:2]),
                               rng.choice(domain.DOMAINS["size"]), rng.choice(domain.DOMAINS["material"]),
                               rng.randrange(4)) for _ in range(rng.randint(1, 9))]
        obj = rng.randrange(len(objects))
        candidates = frozenset(p for p in range(len(objects)) if rng.random() < 0.6 or (p == obj and rng.random() < 0.9))
        attributes = rng.sample(list(domain.ATTRIBUTES), rng.randint(0, 4))
        description = {a: objects[obj].attribute(a) for a in attributes}
        old = [p for p in candidates if _matches(objects[p], description)] != [obj]
        assert _other_matches(objects, candidates, obj, description) == old
        unique += not old
    assert 300 < unique < 2700  # both outcomes were exercised


def test_describe_on_the_scene_index_draws_and_describes_as_describe():
    from clevr_poc.generation.question_generator import QuestionGenerator, TemplateNotApplicable, _describe_indexed
    from clevr_poc.generation.scene_index import SceneIndex
    from clevr_poc.scene import Scene

    rng = random.Random(5)
    outcomes = {"described": 0, "not applicable": 0}
    for _ in range(2000):
        objects = tuple(SceneObject(rng.choice(domain.DOMAINS["color"][:2]), rng.choice(domain.DOMAINS["shape"][:2]),
                                    rng.choice(domain.DOMAINS["size"]), rng.choice(domain.DOMAINS["material"]),
                                    rng.randrange(4)) for _ in range(rng.randint(1, 9)))
        scene = Scene(objects)
        obj = rng.randrange(len(objects))
        candidates = frozenset(p for p in range(len(objects)) if rng.random() < 0.6 or (p == obj and rng.random() < 0.9))
        allowed = rng.sample(list(domain.ATTRIBUTES), rng.randint(0, 4))
        seed = rng.random()
        results = []
        for describe in (QuestionGenerator._describe, lambda s, *a: _describe_indexed(SceneIndex(s), *a)):
            draws = random.Random(seed)
            try:
                results.append((describe(scene, obj, candidates, allowed, draws), draws.getstate()))
            except TemplateNotApplicable:
                results.append(("not applicable", draws.getstate()))
        assert results[0] == results[1]
        outcomes["not applicable" if results[0][0] == "not applicable" else "described"] += 1
    assert min(outcomes.values()) > 300  # both outcomes were exercised


def test_scene_index_tables_restate_the_scene():
    from clevr_poc.generation.scene_index import ATTRIBUTE_BIT, SceneIndex
    from clevr_poc.scene import Scene, compute_relationships

    objects = (SceneObject("red", "cube", "large", "metal", 0), SceneObject("red", "sphere", "small", "metal", 1),
               SceneObject("blue", "cube", "large", "rubber", 2))
    scene = Scene(objects, compute_relationships([(0.0, 1.0), (2.0, -1.0), (-1.0, 0.0)]))
    index = SceneIndex(scene)
    assert index.everything == frozenset({0, 1, 2})
    assert index.values["color"] == ["red", "red", "blue"]
    # object 2 (smallest x) is left of 0 and 1; object 1 (largest x) is right of 0 and 2
    assert index.holders(2) == {"left": [0, 1], "right": [], "front": [0], "behind": [1]}
    assert index.holders(1) == {"left": [], "right": [0, 2], "front": [0, 2], "behind": []}
    assert index.related("left", 1) == frozenset({0, 2})
    bits = index.differences(0)
    assert bits[0] == 0
    assert bits[1] == ATTRIBUTE_BIT["shape"] | ATTRIBUTE_BIT["size"]
    assert bits[2] == ATTRIBUTE_BIT["color"] | ATTRIBUTE_BIT["material"]
