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
