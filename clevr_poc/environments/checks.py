"""clingo checks on environments: satisfiability, useless constraints, how many scenes remain.

All checks run clingo in process, time-limited by the shared watchdog
(:mod:`clevr_poc.solver.watchdog`); programs are built by :mod:`clevr_poc.solver.programs`. The program checked is the one that defines the complete scenes
of an environment (paper §3.3): background theory (Appendix A, lines 1-43) + ``object(0..N-1)`` + the
constraints. A complete scene is an answer set of it.

:class:`EnvironmentChecker` grounds the background once for a given N and adds candidate constraints
one by one (multi-shot grounding, ``asp/environment_checks.lp``); every check is then a solve call
under assumptions, so the sampler can ask many questions about many subsets of candidates cheaply.
"""

from __future__ import annotations

from typing import Iterable

import clingo

from clevr_poc.environments.constraint_rules import Rule, constraint_rule
from clevr_poc.environments.environment import Environment
from clevr_poc.environments.templates import Constraint
from clevr_poc.errors import FormatError, SolverTimeoutError
from clevr_poc.solver.control import make_control
from clevr_poc.solver.programs import Program, environment_program
from clevr_poc.solver.rules import parse_rules, with_head
from clevr_poc.solver.watchdog import WATCHDOG

#: An object description: (color, shape, size, material, region).
Description = tuple[str, str, str, str, int]


def is_satisfiable(environment: Environment, time_limit: float = 5.0) -> bool:
    """Whether ``environment`` admits at least one complete scene of N objects.

    Solves background + ``object(0..N-1)`` + the constraints with clingo (in process, one model).

    Args:
        environment: the environment to check.
        time_limit: seconds allowed for solving (grounding is not interrupted; it is milliseconds).

    Returns:
        True when the program has an answer set.

    Raises:
        SolverTimeoutError: clingo did not finish within ``time_limit``.
    """
    if time_limit <= 0:
        raise ValueError(f"time_limit must be positive, got {time_limit}")
    control = environment_program(environment.num_objects, environment.constraints_asp()).load(
        make_control(["--models=1"]))
    with WATCHDOG.limit(control, time_limit) as fired:
        result = control.solve()
    if fired[0] or result.interrupted:
        raise SolverTimeoutError(f"clingo did not finish within {time_limit:g} s (satisfiability check)")
    return bool(result.satisfiable)


class EnvironmentChecker:
    """Incremental checks over subsets of candidate constraints for one object count N.

    Usage::

        checker = EnvironmentChecker(7)
        a = checker.add(Constraint("negation", {"r": 0, "p1": "color", "v1": "red"}))
        b = checker.add(...)
        checker.satisfiable([a, b])          # some complete scene satisfies a and b
        checker.violable(b, given=[a])       # some complete scene satisfies a but violates b
        checker.descriptions([a, b], region=0, limit=4)  # object kinds possible in region 0
        checker.admits([a, b], region=0, count=4)  # at least 4 of them

    Witnesses (issue 27): every complete scene clingo finds for a check (its models) is kept (the latest
    ``witnesses`` of them) with the candidates it satisfies (:func:`~.constraint_rules.constraint_rule`,
    a literal Python reading of the templates). A check whose answer is "yes" and that one of these scenes
    shows (a scene satisfying the active candidates for :meth:`satisfiable`; one that also violates the
    candidate for :meth:`violable`; ``count`` descriptions among the objects of such scenes for
    :meth:`admits`: objects are interchangeable) is answered without solving. Answers are the same as
    clingo's (every "no" and every unwitnessed "yes" still comes from a solve), so an environment sampler
    draws the same environments, unless a solve it skips would have hit ``time_limit``.

    Args:
        num_objects: N (objects of a complete scene, hidden object included), 1..20 (above 12 nothing
            is satisfiable: at most 3 objects per region).
        time_limit: seconds allowed per solve call.
        witnesses: complete scenes kept as witnesses (0: none; every check solves).

    Attributes:
        solves: solve calls made (checks answered by a witness make none).

    Raises:
        FormatError: ``num_objects`` out of range.
        SolverTimeoutError: from any check whose solve call exceeds ``time_limit``.
    """

    def __init__(self, num_objects: int, *, time_limit: float = 5.0, witnesses: int = 64) -> None:
        if time_limit <= 0:
            raise ValueError(f"time_limit must be positive, got {time_limit}")
        if not isinstance(num_objects, int) or isinstance(num_objects, bool) or not 1 <= num_objects <= 20:
            raise FormatError("number of objects must be 1..20", field="num_objects", value=num_objects)
        self.num_objects = num_objects
        self.time_limit = float(time_limit)
        self.constraints: list[Constraint] = []
        self._control = environment_program(num_objects, knowledge=("environment_checks.lp",)).grounding(
            "description").load(make_control(["--models=1"]))
        self.solves = 0
        self._capacity = max(0, int(witnesses))
        self._rules: list[Rule] = []
        self._scenes: list[tuple] = []   # complete scenes (objects as (color, shape, size, material, region))
        self._holds: list[int] = []      # per scene: bit k set when it satisfies candidate k
        # per object, per field: (literal, value) of the atoms "object i has this value"
        self._atoms: list[list[list[tuple[int, object]]]] = [[[] for _ in range(5)] for _ in range(num_objects)]
        fields = {"color": 0, "shape": 1, "size": 2, "material": 3}
        for atom in self._control.symbolic_atoms.by_signature("hasProperty", 3):
            o, a, v = atom.symbol.arguments
            self._atoms[o.number][fields[a.name]].append((atom.literal, v.name))
        for atom in self._control.symbolic_atoms.by_signature("at", 2):
            o, r = atom.symbol.arguments
            self._atoms[o.number][4].append((atom.literal, r.number))

    def add(self, constraint: Constraint) -> int:
        """Ground ``constraint`` as candidate number k (returned); it holds only where assumed active."""
        k = len(self.constraints)
        self.constraints.append(constraint)
        part = f"candidate_{k}"
        rules = [with_head(rule, "violated", k) for rule in parse_rules("\n".join(constraint.asp_rules()))]
        Program(ground=((part, ()), ("guard", (k,)))).with_rules(rules, part=part).load(self._control)
        # free, not false: an inactive candidate must not constrain anything
        self._control.assign_external(clingo.Function("active", [clingo.Number(k)]), None)
        rule = constraint_rule(constraint)
        self._rules.append(rule)
        for i, scene in enumerate(self._scenes):
            if rule(scene):
                self._holds[i] |= 1 << k
        return k

    # ------------------------------------------------------------------ checks
    def satisfiable(self, active: Iterable[int]) -> bool:
        """Some complete scene satisfies every candidate in ``active``."""
        active = list(active)
        if self._witnesses(active):
            return True
        return self._solve(self._assume(active))

    def violable(self, candidate: int, given: Iterable[int]) -> bool:
        """Some complete scene satisfies every candidate in ``given`` and violates ``candidate``.

        False means ``candidate`` is useless next to ``given``: no scene allowed by ``given`` can
        violate it (a duplicate, an implied constraint, or one that nothing can violate).
        """
        given = [x for x in given if x != candidate]
        bit = 1 << candidate
        if any(not holds & bit for holds in self._witnesses(given)):
            return True
        assumptions = self._assume(given)
        assumptions.append((clingo.Function("violated", [clingo.Number(candidate)]), True))
        return self._solve(assumptions)

    def admits(self, active: Iterable[int], *, region: int, count: int) -> bool:
        """At least ``count`` descriptions in ``region``: ``len(descriptions(active, region=region,
        limit=count)) >= count``, read from the witnesses when they show ``count`` of them."""
        active = list(active)
        if count <= 0:
            return True
        mask = self._mask(active)
        shown = {o[:4] for scene, holds in zip(self._scenes, self._holds) if holds & mask == mask
                 for o in scene if o[4] == region}
        if len(shown) >= count:
            return True
        return len(self.descriptions(active, region=region, limit=count)) >= count

    def descriptions(self, active: Iterable[int], *, region: int | None = None,
                     limit: int = 0) -> frozenset[Description]:
        """Object descriptions ``(color, shape, size, material, region)`` that an object can have in
        some complete scene satisfying ``active`` (empty when there is none).

        Enumerates answer sets projected onto the description of object 0 (objects are
        interchangeable), so each model is a new description.

        Args:
            region: only descriptions of objects in this region (0..3); None: every region.
            limit: stop after this many descriptions (0: all of them, at most 8*4*3*2 = 192 per region).
        """
        control = self._control
        assumptions = self._assume(active)
        if region is not None:
            assumptions.append((clingo.Function("at", [clingo.Number(0), clingo.Number(region)]), True))
        control.configuration.solve.project = "show"
        control.configuration.solve.models = max(0, int(limit))
        found: list[Description] = []
        self.solves += 1
        try:
            with WATCHDOG.limit(control, self.time_limit) as fired:
                with control.solve(assumptions=assumptions, yield_=True) as handle:
                    for model in handle:
                        self._remember(model)
                        for s in model.symbols(shown=True):
                            a = s.arguments
                            found.append((a[0].name, a[1].name, a[2].name, a[3].name, a[4].number))
                    interrupted = handle.get().interrupted
        finally:
            control.configuration.solve.project = "no"
            control.configuration.solve.models = 1
        if fired[0] or interrupted:
            raise SolverTimeoutError(f"clingo did not finish within {self.time_limit:g} s (descriptions)")
        return frozenset(found)

    # ------------------------------------------------------------------ helpers
    @staticmethod
    def _assume(active: Iterable[int]) -> list[tuple[clingo.Symbol, bool]]:
        return [(clingo.Function("active", [clingo.Number(k)]), True) for k in active]

    def _mask(self, active: Iterable[int]) -> int:
        mask = 0
        for k in active:
            mask |= 1 << k
        return mask

    def _witnesses(self, active: list[int]) -> list[int]:
        """The candidate bits of the kept scenes that satisfy every candidate in ``active``."""
        mask = self._mask(active)
        return [holds for holds in self._holds if holds & mask == mask]

    def _remember(self, model: clingo.Model) -> None:
        """Keep the model's scene as a witness (the oldest one goes when ``witnesses`` are kept)."""
        if not self._capacity:
            return
        scene = tuple(tuple(next(value for literal, value in atoms if model.is_true(literal)) for atoms in fields)
                      for fields in self._atoms)
        holds = 0
        for k, rule in enumerate(self._rules):
            if rule(scene):
                holds |= 1 << k
        if len(self._scenes) >= self._capacity:
            del self._scenes[0], self._holds[0]
        self._scenes.append(scene)
        self._holds.append(holds)

    def _solve(self, assumptions: list[tuple[clingo.Symbol, bool]]) -> bool:
        self.solves += 1
        with WATCHDOG.limit(self._control, self.time_limit) as fired:
            result = self._control.solve(assumptions=assumptions, on_model=self._remember)
        if fired[0] or result.interrupted:
            raise SolverTimeoutError(f"clingo did not finish within {self.time_limit:g} s")
        return bool(result.satisfiable)
