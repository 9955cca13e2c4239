"""A second, literal reading of an environment program in plain Python (:class:`SceneRules`): whether N objects
form a complete scene, rule by rule as ``asp/background.lp`` (lines 27-43) and ``asp/templates/01..11`` say.

The scene sampler checks every scene it returns with it (``SceneSampler(verify=True)``, issue 27: a clingo
solve per scene cost 0.15-0.2 ms, more than most samples themselves). It is written independently of the
sampler's vectorised check (:mod:`~clevr_poc.generation.scene_check`: type-id tables, key counts) and of the
allowed types (clingo), so a bug in either is still caught; ``tests/test_scene_rules.py`` checks it against
clingo (:meth:`~clevr_poc.generation.scene_programs.SceneProgram.is_scene`) on random scenes, complete or not.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from clevr_poc import domain
from clevr_poc.environments.constraint_rules import Description, constraint_rule
from clevr_poc.environments.templates import Constraint
from clevr_poc.generation.object_types import REGION_CAPACITY, TYPE_TUPLES

_REGION = 4
_DOMAINS = tuple(frozenset(domain.DOMAINS[a]) for a in ("color", "shape", "size", "material")) + (
    frozenset(domain.REGIONS),)


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
        self._rules = tuple(constraint_rule(c) for c in constraints)

    def holds(self, objects: Sequence[Description]) -> bool:
        """Whether these N objects (object i = ``objects[i]``) are an answer set of the environment program:
        one value of every attribute's domain and one region each (lines 27-35), no two objects agreeing on
        all four attributes (36-40), at most 3 objects per region (41-43), and every constraint."""
        if len(objects) != self.num_objects:
            return False
        for o in objects:
            if len(o) != 5 or not all(v in values for v, values in zip(o, _DOMAINS)):
                return False
        return self._holds_in_domains(objects)

    def holds_types(self, types) -> bool:
        """:meth:`holds` of the objects of these type ids (0..767)."""
        return self.holds_ids(np.asarray(types, dtype=np.int64).tolist())

    def holds_ids(self, ids: list[int]) -> bool:
        """:meth:`holds_types` of a list of ints (the scene sampler's check). The tuples of
        :data:`~.object_types.TYPE_TUPLES` hold one value of every domain (``tests/test_scene_rules.py``), so
        lines 27-35 hold and are not checked again (issue 27: a fifth of the check)."""
        objects = [TYPE_TUPLES[t] for t in ids]
        return len(objects) == self.num_objects and self._holds_in_domains(objects)

    def _holds_in_domains(self, objects: Sequence[Description]) -> bool:
        """:meth:`holds` of N objects whose values are in their domains: lines 36-43 and the constraints."""
        if len({o[:_REGION] for o in objects}) < len(objects):
            return False
        regions = [o[_REGION] for o in objects]
        if any(regions.count(r) > REGION_CAPACITY for r in set(regions)):
            return False
        return all(rule(objects) for rule in self._rules)
