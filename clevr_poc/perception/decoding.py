"""Constraint-aware decoding of perceived scenes with clingo (paper §5, "symbolic knowledge in visual
perception network"). Torch-free.

Plain decoding takes, for every detection above a score threshold, the most probable value of each
attribute and region (:func:`argmax_decode`). That scene can contradict the environment the image comes
from: a value the environment forbids in a region, two identical objects, four objects in a region, or
more (or fewer) objects than the N-1 the environment implies. :func:`constraint_decode` instead picks
the most probable scene that is *consistent*:

    argmin  sum_d [ keep_d * (-log s_d - sum_a log p_d(a = v_{d,a}) - log p_d(region = r_d))
                    + (1 - keep_d) * (-log(1 - s_d)) ]
    s.t.    background theory + environment constraints hold for the kept detections plus the unseen
            objects (N objects in all; the unseen ones — the hidden object — are free),
            min(K, N-1) detections are kept, and relations seen between kept detections agree with
            their regions,

with the attributes and regions of different detections independent given the image. The program is
``asp/perception_decoding.lp`` (weak constraints, costs = -log p scaled to integers); Python only writes
its parameter facts, as symbols (:func:`decoding_symbols`). clingo's optimisation proves the optimum (or returns the best scene found when the
time limit interrupts it).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from enum import StrEnum
from functools import lru_cache
from typing import Mapping, Sequence

import clingo
import numpy as np

from clevr_poc import domain
from clevr_poc.environments.environment import Environment
from clevr_poc.errors import FormatError
from clevr_poc.scene import compute_relationships
from clevr_poc.solver.control import make_control
from clevr_poc.solver.programs import Program
from clevr_poc.solver.watchdog import WATCHDOG

#: Costs are ``round(COST_SCALE * -log p)`` (clingo optimises integers): 1000 keeps ratios of
#: probabilities to 0.1 % precision.
COST_SCALE = 1000
#: Probabilities are clipped to [MIN_PROBABILITY, 1 - MIN_PROBABILITY] before the logarithm, so that a
#: value the network rules out stays possible (cost 13.8 * COST_SCALE) when the constraints demand it.
MIN_PROBABILITY = 1e-6


@dataclass(frozen=True)
class ObjectCandidate:
    """One detection with its probability distributions.

    Attributes:
        score: detector confidence in (0, 1) that the box is an object.
        probabilities: attribute -> probabilities over :data:`clevr_poc.domain.DOMAINS` ``[attribute]``
            (in that order, summing to 1).
        region_probabilities: probabilities of regions 0..3.
        position: estimated world ``(x, y)`` of the centre (world units), for relationships.
    """

    score: float
    probabilities: Mapping[str, Sequence[float]]
    region_probabilities: Sequence[float]
    position: tuple[float, float]

    def __post_init__(self) -> None:
        if not 0.0 <= float(self.score) <= 1.0:
            raise FormatError("a detection score is a probability in [0, 1]", field="score", value=self.score)
        for attribute in domain.ATTRIBUTES:
            p = self.probabilities.get(attribute) if isinstance(self.probabilities, Mapping) else None
            if p is None or len(p) != len(domain.DOMAINS[attribute]):
                raise FormatError(f"needs {len(domain.DOMAINS[attribute])} probabilities",
                                  field=f"probabilities.{attribute}", value=p)
            if any(not (0.0 <= float(v) <= 1.0) for v in p):
                raise FormatError("probabilities must lie in [0, 1]", field=f"probabilities.{attribute}", value=p)
        if len(self.region_probabilities) != len(domain.REGIONS):
            raise FormatError("needs 4 region probabilities", field="region_probabilities",
                              value=self.region_probabilities)

    def argmax(self, attribute: str) -> str:
        """The most probable value of ``attribute``."""
        return domain.DOMAINS[attribute][int(np.argmax(self.probabilities[attribute]))]

    @property
    def argmax_region(self) -> int:
        return int(np.argmax(self.region_probabilities))


class DecodingStatus(StrEnum):
    """How a scene was decoded (:attr:`DecodedScene.status`; written as its value into the scene JSON's
    ``perception.decoding``)."""

    #: plain decoding, no solver (:func:`argmax_decode`)
    ARGMAX = "argmax"
    #: clingo proved the optimum
    OPTIMAL = "optimal"
    #: the best scene found within the time limit
    INTERRUPTED = "interrupted"
    #: no consistent scene: the argmax scene is returned
    UNSATISFIABLE = "unsatisfiable"


@dataclass(frozen=True)
class DecodedScene:
    """The decoding of a list of candidates.

    Attributes:
        keep: indices of the candidates that are objects, in candidate order.
        values: per kept candidate, attribute -> value.
        regions: per kept candidate, its region.
        cost: the objective (sum of scaled -log probabilities; None for :func:`argmax_decode`).
        status: a :class:`DecodingStatus`: ``argmax``, ``optimal`` (proven optimum), ``interrupted`` (best
            scene found within the time limit) or ``unsatisfiable`` (no consistent scene: the argmax scene
            is returned).
        relations_used: whether the relations between detections took part (they are dropped on a
            second try when the first is unsatisfiable).
    """

    keep: tuple[int, ...]
    values: tuple[Mapping[str, str], ...]
    regions: tuple[int, ...]
    cost: int | None
    status: DecodingStatus
    relations_used: bool = field(default=True)


def _cost(p: float) -> int:
    p = min(max(float(p), MIN_PROBABILITY), 1.0 - MIN_PROBABILITY)
    return int(round(-COST_SCALE * math.log(p)))


def argmax_decode(candidates: Sequence[ObjectCandidate], threshold: float = 0.5) -> DecodedScene:
    """Plain decoding: the candidates with ``score >= threshold``, each attribute and region at its
    most probable value."""
    keep = tuple(i for i, c in enumerate(candidates) if c.score >= threshold)
    values = tuple({a: candidates[i].argmax(a) for a in domain.ATTRIBUTES} for i in keep)
    regions = tuple(candidates[i].argmax_region for i in keep)
    return DecodedScene(keep, values, regions, None, DecodingStatus.ARGMAX)


@lru_cache(maxsize=1)
def _constant_symbols() -> tuple[dict[str, clingo.Symbol], dict[str, tuple[clingo.Symbol, ...]],
                                 dict[str, clingo.Symbol]]:
    """The constant symbols of :func:`decoding_symbols`, made once (issue 27: a ``clingo.Function`` is a
    C call of about 7 microseconds): attribute name -> ``Function(attribute)``, attribute -> the
    ``Function(value)`` of its domain values in :data:`domain.DOMAINS` order, relation -> ``Function(name)``."""
    function = clingo.Function
    return ({a: function(a) for a in domain.ATTRIBUTES},
            {a: tuple(function(v) for v in domain.DOMAINS[a]) for a in domain.ATTRIBUTES},
            {r: function(r) for r in domain.RELATIONS})


def decoding_symbols(candidates: Sequence[ObjectCandidate], num_objects: int, *,
                     relations: bool = True) -> list[clingo.Symbol]:
    """The parameter facts of ``asp/perception_decoding.lp`` for ``candidates`` in an environment of
    ``num_objects`` objects (hidden object included), as clingo symbols: ``keep_count(K)``,
    ``detection(d)``, ``unseen(u)``, ``keep_cost/2``, ``drop_cost/2``, ``cost(d, attribute, value, c)``,
    ``region_cost(d, r, c)`` and ``observed(rel, i, j)``. The constant symbols are made once
    (:func:`_constant_symbols`), the integers once per call; the list is the same as building every
    symbol afresh (``tests/test_perception_reuse.py``). Every symbol is ASCII (domain names and integers):
    :meth:`Program.with_facts` may take them with ``ascii=True``."""
    function, number = clingo.Function, clingo.Number
    attributes, values, relation_names = _constant_symbols()
    k = len(candidates)
    keep_count = min(k, num_objects - 1)
    numbers = [number(i) for i in range(k + num_objects)]
    facts = [function("keep_count", [number(keep_count)])]
    facts += [function("detection", [numbers[d]]) for d in range(k)]
    facts += [function("unseen", [numbers[u]]) for u in range(k, k + num_objects - keep_count)]
    for d, c in enumerate(candidates):
        nd = numbers[d]
        facts.append(function("keep_cost", [nd, number(_cost(c.score))]))
        facts.append(function("drop_cost", [nd, number(_cost(1.0 - float(c.score)))]))
        for attribute in domain.ATTRIBUTES:
            name = attributes[attribute]
            facts += [function("cost", [nd, name, v, number(_cost(p))])
                      for v, p in zip(values[attribute], c.probabilities[attribute])]
        facts += [function("region_cost", [nd, number(r), number(_cost(p))])
                  for r, p in zip(domain.REGIONS, c.region_probabilities)]
    if relations and k > 1:
        rel = compute_relationships([c.position for c in candidates])
        for name in domain.RELATIONS:
            relation = relation_names[name]
            for i, row in enumerate(rel[name]):
                facts += [function("observed", [relation, numbers[i], numbers[j]]) for j in row]
    return facts


#: clingo optimisation strategies tried in turn: core-guided (``usc``) proves most optima in
#: milliseconds but can stall on pair-counting constraints, where branch and bound (``bb``, started
#: from the argmax scene by the program's ``#heuristic`` statements) is quick; ``usc`` gets this share
#: of the time limit, at most :data:`USC_MAX_SECONDS`.
USC_SHARE = 0.25
#: Most seconds ``usc`` gets before branch and bound takes over. Measured (issue 27, r13 on the 320
#: release-look images): ``usc`` proves the optimum of every image but one in under 20 ms; on that one
#: (a pair-counting environment) it stalls for the whole 2.5 s share, where ``bb`` needs 5 ms.
USC_MAX_SECONDS = 0.25


def _solve_with(program: Program, options: list[str], time_limit: float) -> tuple[DecodingStatus, list[clingo.Symbol], int | None]:
    control = program.load(make_control(["--opt-mode=opt", "--warn=none", *options]))
    best: list[clingo.Symbol] = []
    cost: int | None = None
    with WATCHDOG.limit(control, time_limit) as fired:
        with control.solve(yield_=True) as handle:
            for model in handle:
                best = model.symbols(shown=True)
                cost = int(sum(model.cost)) if model.cost else 0
            result = handle.get()
    if fired[0] or result.interrupted:
        return DecodingStatus.INTERRUPTED, best, cost
    return (DecodingStatus.OPTIMAL if best else DecodingStatus.UNSATISFIABLE), best, cost


def _solve(program: Program, time_limit: float) -> tuple[DecodingStatus, list[clingo.Symbol], int | None]:
    """Core-guided first, then branch and bound; the better of the two when neither proves the optimum."""
    core_guided = min(time_limit * USC_SHARE, USC_MAX_SECONDS)
    status, best, cost = _solve_with(program, ["--opt-strategy=usc"], core_guided)
    if status is not DecodingStatus.INTERRUPTED:
        return status, best, cost
    status2, best2, cost2 = _solve_with(program, ["--opt-strategy=bb", "--heuristic=Domain"],
                                        time_limit - core_guided)
    if status2 is not DecodingStatus.INTERRUPTED or cost is None or (cost2 is not None and cost2 <= cost):
        return status2, best2, cost2
    return status, best, cost


def constraint_decode(candidates: Sequence[ObjectCandidate], environment: Environment, *, time_limit: float = 10.0,
                      fallback_threshold: float = 0.5) -> DecodedScene:
    """The most probable scene consistent with ``environment`` (module doc).

    Args:
        candidates: the detections (pass every box above a low score, e.g. 0.2: the count N-1 decides
            among the doubtful ones).
        environment: the image's environment (constraints and N, the hidden object included).
        time_limit: seconds for clingo; when it runs out the best scene found so far is returned
            (``status="interrupted"``), or the argmax scene if none was found.
        fallback_threshold: score threshold of the argmax scene returned when no consistent scene exists.
    """
    if time_limit <= 0:
        raise ValueError(f"time_limit must be positive, got {time_limit}")
    # no objects(N) part: perception_decoding.lp declares the kept detections and the unseen objects
    base = Program().with_knowledge("background.lp", "perception_decoding.lp").with_constraints(
        environment.constraints_asp())
    for relations in (True, False):
        program = base.with_facts(decoding_symbols(candidates, environment.num_objects, relations=relations),
                                  ascii=True)
        status, symbols, cost = _solve(program, time_limit)
        if symbols:
            break
        if status is DecodingStatus.INTERRUPTED:
            fallback = argmax_decode(candidates, fallback_threshold)
            return DecodedScene(fallback.keep, fallback.values, fallback.regions, None, DecodingStatus.INTERRUPTED,
                                relations)
    else:
        fallback = argmax_decode(candidates, fallback_threshold)
        return DecodedScene(fallback.keep, fallback.values, fallback.regions, None, DecodingStatus.UNSATISFIABLE,
                            False)
    return decoded_scene(symbols, cost, status, relations)


def decoded_scene(symbols: Sequence[clingo.Symbol], cost: int | None, status: DecodingStatus | str,
                  relations: bool) -> DecodedScene:
    """The :class:`DecodedScene` of an answer set of ``asp/perception_decoding.lp`` (its shown
    ``keep/1``, ``hasProperty/3`` and ``at/2`` symbols; the unseen objects' are left out)."""
    # each symbol's name and arguments are read once (every read is a call into clingo)
    read = [(s.name, s.arguments) for s in symbols]
    keep = sorted(arguments[0].number for name, arguments in read if name == "keep")
    kept = set(keep)
    values: dict[int, dict[str, str]] = {d: {} for d in keep}
    regions: dict[int, int] = {}
    for name, arguments in read:
        if name == "hasProperty":
            d = arguments[0].number
            if d in kept:
                values[d][arguments[1].name] = arguments[2].name
        elif name == "at":
            d = arguments[0].number
            if d in kept:
                regions[d] = arguments[1].number
    return DecodedScene(tuple(keep), tuple(values[d] for d in keep), tuple(regions[d] for d in keep), cost,
                        DecodingStatus(status), relations)
