"""A second, literal reading of an environment program in plain Python (:class:`SceneRules`): whether N objects
form a complete scene, rule by rule as ``asp/background.lp`` (lines 27-43) and ``asp/templates/01..11`` say.

The scene sampler checks every scene it returns with it (``SceneSampler(verify=True)``, issue 27: a clingo
solve per scene cost 0.15-0.2 ms, more than most samples themselves). It is written independently of the
sampler's vectorised check (:mod:`~clevr_poc.generation.scene_check`: type-id tables, key counts) and of the
allowed types (clingo), so a bug in either is still caught; ``tests/test_scene_rules.py`` checks it against
clingo (:meth:`~clevr_poc.generation.scene_programs.SceneProgram.is_scene`) on random scenes, complete or not.
"""

from __future__ import annotations

from itertools import permutations
from typing import Callable, Sequence

import numpy as np

from clevr_poc import domain
from clevr_poc.environments.templates import Constraint
from clevr_poc.errors import FormatError
from clevr_poc.generation.object_types import REGION_CAPACITY, TYPE_TUPLES

#: An object as (color, shape, size, material, region), the order of :data:`TYPE_TUPLES`.
Description = tuple[str, str, str, str, int]
#: Position of each attribute in a :data:`Description`.
_AT = {a: k for k, a in enumerate(("color", "shape", "size", "material"))}
_REGION = 4
_DOMAINS = tuple(frozenset(domain.DOMAINS[a]) for a in ("color", "shape", "size", "material")) + (
    frozenset(domain.REGIONS),)

#: A compiled constraint: True when the objects satisfy it.
Rule = Callable[[Sequence[Description]], bool]


class SceneRules:
    """The complete scenes of an environment (``background + object(0..N-1) + constraints``), in Python.

    Args:
        constraints: the environment's constraints (templates 1-11).
        num_objects: N.

    Raises:
        FormatError: a constraint's template is not one of the 11.
    """

    def __init__(self, constraints: Sequence[Constraint], num_objects: int) -> None:
        self.num_objects = num_objects
        self._rules = tuple(_compile(c) for c in constraints)

    def holds(self, objects: Sequence[Description]) -> bool:
        """Whether these N objects (object i = ``objects[i]``) are an answer set of the environment program:
        one value of every attribute's domain and one region each (lines 27-35), no two objects agreeing on
        all four attributes (36-40), at most 3 objects per region (41-43), and every constraint."""
        if len(objects) != self.num_objects:
            return False
        for o in objects:
            if len(o) != 5 or not all(v in values for v, values in zip(o, _DOMAINS)):
                return False
        if len({o[:_REGION] for o in objects}) < len(objects):
            return False
        regions = [o[_REGION] for o in objects]
        if any(regions.count(r) > REGION_CAPACITY for r in set(regions)):
            return False
        return all(rule(objects) for rule in self._rules)

    def holds_types(self, types) -> bool:
        """:meth:`holds` of the objects of these type ids (0..767)."""
        return self.holds([TYPE_TUPLES[t] for t in np.asarray(types, dtype=np.int64).tolist()])


def _compile(c: Constraint) -> Rule:
    """The constraint's rule(s) as a function (each template's ASP text quoted above its case)."""
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
