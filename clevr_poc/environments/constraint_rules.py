"""The constraints of an environment read literally in Python: :func:`constraint_rule` turns a template instance
into a function of a scene's objects, written from ``asp/templates/01..11`` (what each rule forbids).

Used by the environment checker (:class:`~clevr_poc.environments.checks.EnvironmentChecker`: complete
scenes clingo found, kept as witnesses that later checks read instead of solving) and by the scene sampler's
check of every scene (:class:`~clevr_poc.generation.scene_rules.SceneRules`). ``tests/test_scene_rules.py``
checks them against clingo on random scenes and random constraints of all 11 templates.
"""

from __future__ import annotations

from itertools import permutations
from typing import Callable, Sequence

from clevr_poc.environments.templates import Constraint
from clevr_poc.errors import FormatError

#: An object as (color, shape, size, material, region).
Description = tuple[str, str, str, str, int]
#: A compiled constraint: True when the objects satisfy it.
Rule = Callable[[Sequence[Description]], bool]
#: Position of each attribute in a :data:`Description`.
_AT = {a: k for k, a in enumerate(("color", "shape", "size", "material"))}
_REGION = 4


def constraint_rule(c: Constraint) -> Rule:
    """The constraint's rule(s) as a function of the objects (each template's ASP text quoted above its
    case): True when the objects satisfy the constraint.

    Raises:
        FormatError: the template is not one of the 11.
    """
    p, t = c.params, c.template
    f1, v1 = _AT.get(p.get("p1")), p.get("v1")
    f2, v2 = _AT.get(p.get("p2")), p.get("v2")
    if t in ("value_restriction", "negation_two", "negation_same_property", "or", "negation", "exactly_n"):
        r = p["r"]
    if t == "value_restriction":
        # :- object(X), at(X, r), not hasProperty(X, p1, v1).   [:- ..., not hasProperty(X, p2, v2).]
        if f2 is None:
            return lambda objects: all(o[f1] == v1 for o in objects if o[_REGION] == r)
        return lambda objects: all(o[f1] == v1 and o[f2] == v2 for o in objects if o[_REGION] == r)
    if t == "negation_two":
        # :- object(X), at(X, r), hasProperty(X, p1, v1).   :- ..., hasProperty(X, p2, v2).
        return lambda objects: not any(o[f1] == v1 or o[f2] == v2 for o in objects if o[_REGION] == r)
    if t == "negation_same_property":
        # :- object(X), at(X, r), hasProperty(X, p1, v1).   :- ..., hasProperty(X, p1, v2).
        return lambda objects: not any(o[f1] in (v1, v2) for o in objects if o[_REGION] == r)
    if t == "or":
        # :- object(X), at(X, r), not hasProperty(X, p1, v1), not hasProperty(X, p2, v2).
        return lambda objects: all(o[f1] == v1 or o[f2] == v2 for o in objects if o[_REGION] == r)
    if t == "negation":
        # :- object(X), at(X, r), hasProperty(X, p1, v1).
        return lambda objects: not any(o[f1] == v1 for o in objects if o[_REGION] == r)
    if t == "generic":
        # :- object(X), hasProperty(X, p1, v1).
        return lambda objects: not any(o[f1] == v1 for o in objects)
    if t == "exactly_n":
        # :- #count{X: hasProperty(X, p1, v1), object(X), at(X, r)} != n.
        n = p["n"]
        return lambda objects: sum(1 for o in objects if o[_REGION] == r and o[f1] == v1) == n
    if t in ("at_least_pairs", "at_least_pairs_with_value", "at_most_pairs", "at_most_pairs_with_value"):
        # :- #count{X1, X2: sameProperty(X1, X2, p1), object(X1), object(X2), at(X1, r1), at(X2, r2)
        #                   [, hasProperty(X1, p2, v2), hasProperty(X2, p2, v2)]} < n.   (at least)
        # ... >= n.   (at most)            sameProperty(X1, X2, P) needs X1 != X2 (two objects)
        r1, r2, n, at_least = p["r1"], p["r2"], p["n"], t.startswith("at_least")

        def pairs(objects: Sequence[Description]) -> int:
            return sum(1 for a, b in permutations(objects, 2)
                       if a[_REGION] == r1 and b[_REGION] == r2 and a[f1] == b[f1]
                       and (f2 is None or (a[f2] == v2 and b[f2] == v2)))

        if at_least:
            return lambda objects: pairs(objects) >= n
        return lambda objects: pairs(objects) < n
    raise FormatError("the scene rules do not know this template", field="template", value=t)
