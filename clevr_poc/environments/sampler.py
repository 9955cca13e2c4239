"""Sample CLEVR-POC environments: sets of constraint-template instances (paper §3.1).

Rules (paper §3.1): an environment is at most 15 instantiations of the 11 templates, with at least two
constraints associated with each region. A region constraint (templates 1-6) counts for its region, an
across-region constraint (templates 7-10) for both of its regions, the generic one (template 11) for
none. N, the number of objects of a complete scene (hidden object included), is 5-9 as in the paper's
data.

Every sampled environment is checked with clingo (:class:`~.checks.EnvironmentChecker`):

- **satisfiable**: background + ``object(0..N-1)`` + constraints has an answer set (a complete scene);
- **no useless constraint**: for every constraint c, some complete scene satisfies all the *other*
  constraints and violates c. This rejects duplicates, constraints implied by others (e.g. "no red
  object in region 0" next to "every object in region 0 is blue") and constraints no scene can violate
  (e.g. "at most 9 pairs" among 5 objects);
- **plenty of scenes** (our criterion, cheap: 4 small projected enumerations): in *every* region an
  object can take at least ``min_descriptions`` (default 4) different descriptions
  (color, shape, size, material) in some complete scene. So no region is forced empty (its constraints
  would be vacuous) and the hidden object always has several candidates wherever it is. (Counting answer
  sets would not do: permuting the N distinct objects alone gives N! >= 120 answer sets.)

Unlike the official sampler, every one of the 11 templates is drawn (the official one never really
uses the exact-N and the generic templates). Parameter ranges: exact-N ``n`` in 0..3 (a region holds at
most 3 objects); "at least N pairs" ``n`` in 1..2; "at most N-1 pairs" ``n`` in 1..3; across-region
templates use two different regions; two-value templates use two different attributes (or, for
``negation_same_property`` and a same-attribute ``or``, two different values, never of ``material``,
which has only two values and would empty the region or say nothing).

Determinism: everything is drawn from ``random.Random(seed)``; clingo's answers are semantic (they do
not depend on solver heuristics), so the same seed gives the same environment, byte for byte, as long as
no check hits its time limit (a timed-out check rejects the candidate; the checks take milliseconds).
"""

from __future__ import annotations

import random
from typing import Any, Mapping

from clevr_poc import domain
from clevr_poc.environments.checks import EnvironmentChecker
from clevr_poc.environments.environment import Environment
from clevr_poc.environments.templates import TEMPLATES, TEMPLATES_BY_NAME, Constraint
from clevr_poc.errors import ClevrPocError, FormatError, SolverTimeoutError
from clevr_poc.seeds import ENVIRONMENT, derive_seed

#: Relative template weights used when ``template_weights`` is not given. Every template is drawn.
DEFAULT_TEMPLATE_WEIGHTS: Mapping[str, float] = {
    "value_restriction": 1.0,
    "negation_two": 1.0,
    "negation_same_property": 1.0,
    "or": 1.0,
    "negation": 1.5,
    "exactly_n": 1.0,
    "at_least_pairs": 0.75,
    "at_least_pairs_with_value": 0.75,
    "at_most_pairs": 0.75,
    "at_most_pairs_with_value": 0.75,
    "generic": 0.5,
}

#: N range of the paper's data (hidden object included).
MIN_OBJECTS, MAX_OBJECTS = 5, 9
#: A region holds at most 3 objects (background theory, Appendix A lines 41-43), so N <= 12.
MAX_SATISFIABLE_OBJECTS = 3 * len(domain.REGIONS)

#: Candidate constraints tried per attempt, and attempts (each with fresh draws) before giving up.
MAX_CANDIDATES = 300
MAX_ATTEMPTS = 5


class EnvironmentSamplingError(ClevrPocError):
    """No environment meeting the requirements was found within the bounded number of tries."""


def sample_environment(seed: int, *, num_objects: int | None = None, max_constraints: int = 15,
                       min_per_region: int = 2, env_id: int | None = None,
                       template_weights: Mapping[str, float] | None = None,
                       min_descriptions: int = 4, time_limit: float = 5.0) -> Environment:
    """Sample one environment (see the module docstring for the rules and checks).

    Args:
        seed: random seed; the same arguments give the same environment (byte-identical ``to_asp()``).
        num_objects: N (hidden object included), 1..12; None draws it uniformly from 5..9.
        max_constraints: at most this many constraints (paper: 15); the target size is drawn from
            ``min(4*min_per_region, max_constraints)..max_constraints``.
        min_per_region: at least this many constraints associated with each region (paper: 2).
        env_id: the environment's id.
        template_weights: relative weight of each template name (see :data:`DEFAULT_TEMPLATE_WEIGHTS`);
            templates not named are never drawn.
        min_descriptions: in every region an object can take at least this many different
            (color, shape, size, material) descriptions in some complete scene (0 disables the check).
        time_limit: seconds per clingo check.

    Returns:
        An :class:`Environment` whose constraints are sorted by region (across-region constraints under
        their lower region, the generic ones last).

    Raises:
        FormatError: bad arguments (unknown template name, negative weight, impossible bounds).
        EnvironmentSamplingError: no environment found after :data:`MAX_ATTEMPTS` attempts of
            :data:`MAX_CANDIDATES` candidates each.
    """
    weights = _check_arguments(num_objects, max_constraints, min_per_region, template_weights, min_descriptions)
    rng = random.Random(seed)
    n = rng.randint(MIN_OBJECTS, MAX_OBJECTS) if num_objects is None else num_objects
    for _ in range(MAX_ATTEMPTS):
        constraints = _attempt(rng, n, max_constraints, min_per_region, weights, min_descriptions, time_limit)
        if constraints is not None:
            return Environment(tuple(sorted(constraints, key=_order)), n, env_id)
    raise EnvironmentSamplingError(
        f"no environment with N={n}, at most {max_constraints} constraints and at least {min_per_region} per "
        f"region found in {MAX_ATTEMPTS} attempts of {MAX_CANDIDATES} candidates (seed {seed})")


def sample_environments(count: int, seed: int, **kw: Any) -> list[Environment]:
    """``count`` environments with ids 0..count-1; environment k is drawn from a seed derived from
    ``(seed, k)`` (SHA-256), so it does not depend on ``count``.

    Keyword arguments are those of :func:`sample_environment` (except ``env_id``).
    """
    if count < 0:
        raise FormatError("count must be >= 0", field="count", value=count)
    if "env_id" in kw:
        raise FormatError("env_id is set by sample_environments (0..count-1)", field="env_id", value=kw["env_id"])
    return [sample_environment(derive_seed(ENVIRONMENT, seed, k), env_id=k, **kw) for k in range(count)]


# ---------------------------------------------------------------------- internals
def _check_arguments(num_objects: int | None, max_constraints: int, min_per_region: int,
                     template_weights: Mapping[str, float] | None, min_descriptions: int) -> dict[str, float]:
    if num_objects is not None and (not isinstance(num_objects, int) or isinstance(num_objects, bool)
                                    or not 1 <= num_objects <= MAX_SATISFIABLE_OBJECTS):
        raise FormatError(f"num_objects must be 1..{MAX_SATISFIABLE_OBJECTS} (at most 3 objects per region)",
                          field="num_objects", value=num_objects)
    if not isinstance(max_constraints, int) or max_constraints < 1:
        raise FormatError("max_constraints must be a positive integer", field="max_constraints", value=max_constraints)
    if not isinstance(min_per_region, int) or min_per_region < 0:
        raise FormatError("min_per_region must be a non-negative integer", field="min_per_region",
                          value=min_per_region)
    # an across-region constraint counts for two regions: 4 regions need 2*min_per_region of them at best
    if 2 * max_constraints < len(domain.REGIONS) * min_per_region:
        raise FormatError(f"{max_constraints} constraints cannot give {min_per_region} to each of 4 regions",
                          field="max_constraints", value=max_constraints)
    if not isinstance(min_descriptions, int) or not 0 <= min_descriptions <= 192:
        raise FormatError("min_descriptions must be 0..192", field="min_descriptions", value=min_descriptions)
    weights = dict(DEFAULT_TEMPLATE_WEIGHTS if template_weights is None else template_weights)
    for name, weight in weights.items():
        if name not in TEMPLATES_BY_NAME:
            raise FormatError(f"unknown template; expected one of {sorted(TEMPLATES_BY_NAME)}",
                              field="template_weights", value=name)
        if not isinstance(weight, (int, float)) or isinstance(weight, bool) or not weight >= 0:
            raise FormatError("weights must be non-negative numbers", field=f"template_weights[{name}]",
                              value=weight)
    weights = {t.name: float(weights.get(t.name, 0.0)) for t in TEMPLATES}
    if min_per_region > 0 and not any(w > 0 for name, w in weights.items()
                                      if TEMPLATES_BY_NAME[name].kind != "global"):
        raise FormatError("min_per_region > 0 needs a region or across-region template with positive weight",
                          field="template_weights", value=template_weights)
    if not any(w > 0 for w in weights.values()):
        raise FormatError("at least one template weight must be positive", field="template_weights",
                          value=template_weights)
    return weights


def _order(constraint: Constraint) -> tuple[int, int]:
    regions = constraint.regions
    return (regions[0] if regions else len(domain.REGIONS), constraint.spec.index)


def _attempt(rng: random.Random, n: int, max_constraints: int, min_per_region: int,
             weights: Mapping[str, float], min_descriptions: int, time_limit: float) -> list[Constraint] | None:
    """One attempt: add checked candidates until the target is met; None when the budget runs out."""
    regions = domain.REGIONS
    lower = min(len(regions) * min_per_region, max_constraints)
    target = rng.randint(lower, max_constraints)
    checker = EnvironmentChecker(n, time_limit=time_limit)
    active: list[int] = []  # handles of the accepted candidates, in order
    if not _diverse(checker, active, min_descriptions):
        return None  # N alone leaves too little room (e.g. N > 12)
    for _ in range(MAX_CANDIDATES):
        counts = {r: 0 for r in regions}
        for h in active:
            for r in checker.constraints[h].regions:
                counts[r] += 1
        deficit = {r: max(0, min_per_region - c) for r, c in counts.items()}
        if sum(deficit.values()) == 0 and len(active) >= target:
            redundant = _first_redundant(checker, active)
            if redundant is None:
                return [checker.constraints[h] for h in active]
            active.remove(redundant)
            continue
        slots = max_constraints - len(active)
        short = [r for r in regions if deficit[r] > 0]
        missing = sum(deficit.values())
        if missing > 2 * slots or (missing > slots and len(short) < 2):
            # too few slots left for the short regions: drop a constraint that does not help them
            spare = [h for h in active if not set(checker.constraints[h].regions) & set(short)]
            active.remove(rng.choice(spare or active))
            continue
        candidate = _draw(rng, weights, deficit, need_two=missing > slots)
        if candidate is None or candidate in (checker.constraints[h] for h in active):
            continue
        handle = checker.add(candidate)
        try:
            if not checker.violable(handle, active):
                continue
            if not _diverse(checker, active + [handle], min_descriptions):
                continue
        except SolverTimeoutError:
            continue
        active.append(handle)
    return None


def _diverse(checker: EnvironmentChecker, active: list[int], min_descriptions: int) -> bool:
    """Every region admits at least ``min_descriptions`` object descriptions (and the set is satisfiable)."""
    if min_descriptions == 0:
        return checker.satisfiable(active)
    return all(checker.admits(active, region=r, count=min_descriptions) for r in domain.REGIONS)


def _first_redundant(checker: EnvironmentChecker, active: list[int]) -> int | None:
    """The latest accepted constraint that no scene allowed by the others can violate, if any."""
    for h in reversed(active):
        try:
            if not checker.violable(h, active):
                return h
        except SolverTimeoutError:
            return h
    return None


def _draw(rng: random.Random, weights: Mapping[str, float], deficit: Mapping[int, int],
          need_two: bool) -> Constraint | None:
    """One random candidate. While some region is short of constraints the candidate involves the
    region(s) most in need; ``need_two`` asks for an across-region one involving two short regions."""
    short = [r for r, d in deficit.items() if d > 0]
    names = [t.name for t in TEMPLATES if weights[t.name] > 0]
    if short:
        names = [m for m in names if TEMPLATES_BY_NAME[m].kind != "global"]
        if need_two:
            names = [m for m in names if TEMPLATES_BY_NAME[m].kind == "across"]
            if len(short) < 2:
                return None
    if not names:
        return None
    name = rng.choices(names, weights=[weights[m] for m in names])[0]
    kind = TEMPLATES_BY_NAME[name].kind
    if kind == "region":
        r = _neediest(rng, deficit) if short else rng.choice(domain.REGIONS)
        chosen: tuple[int, ...] = (r,)
    elif kind == "across":
        if short:
            first = _neediest(rng, deficit)
            others = [r for r in domain.REGIONS if r != first]
            pool = [r for r in others if deficit[r] > 0] if need_two else others
            if not pool:
                pool = others
            second = rng.choice(pool)
        else:
            first, second = rng.sample(domain.REGIONS, 2)
        chosen = (first, second) if rng.random() < 0.5 else (second, first)
    else:
        chosen = ()
    return Constraint(name, _draw_params(rng, name, chosen))


def _neediest(rng: random.Random, deficit: Mapping[int, int]) -> int:
    most = max(deficit.values())
    return rng.choice([r for r in domain.REGIONS if deficit[r] == most])


def _value(rng: random.Random, attribute: str, *exclude: str) -> str:
    return rng.choice([v for v in domain.DOMAINS[attribute] if v not in exclude])


def _draw_params(rng: random.Random, name: str, regions: tuple[int, ...]) -> dict[str, Any]:
    """Parameters of one template instance (ranges in the module docstring)."""
    attributes = domain.ATTRIBUTES
    p: dict[str, Any] = {}
    if len(regions) == 1:
        p["r"] = regions[0]
    elif len(regions) == 2:
        p["r1"], p["r2"] = regions
    if name == "negation_same_property":
        p1 = rng.choice([a for a in attributes if len(domain.DOMAINS[a]) > 2])
        v1 = _value(rng, p1)
        p.update(p1=p1, v1=v1, v2=_value(rng, p1, v1))
    elif name in ("value_restriction", "negation_two", "or"):
        p1 = rng.choice(attributes)
        p.update(p1=p1, v1=_value(rng, p1))
        if name == "value_restriction" and rng.random() < 0.5:
            return p  # the one-value form
        if name == "or" and len(domain.DOMAINS[p1]) > 2 and rng.random() < 0.25:
            p2 = p1  # "color red or color blue" (Table 1's instantiation)
        else:
            p2 = rng.choice([a for a in attributes if a != p1])
        p.update(p2=p2, v2=_value(rng, p2, p["v1"]) if p2 == p1 else _value(rng, p2))
    elif name in ("negation", "generic"):
        p1 = rng.choice(attributes)
        p.update(p1=p1, v1=_value(rng, p1))
    elif name == "exactly_n":
        p1 = rng.choice(attributes)
        p.update(p1=p1, v1=_value(rng, p1), n=rng.choices((0, 1, 2, 3), weights=(1, 3, 2, 1))[0])
    elif name in ("at_least_pairs", "at_most_pairs", "at_least_pairs_with_value", "at_most_pairs_with_value"):
        p1 = rng.choice(attributes)
        p["p1"] = p1
        if name.endswith("_with_value"):
            p2 = rng.choice([a for a in attributes if a != p1])
            p.update(p2=p2, v2=_value(rng, p2))
        p["n"] = rng.choice((1, 2)) if name.startswith("at_least") else rng.choice((1, 2, 3))
    else:  # pragma: no cover - TEMPLATES and this function are kept in step by the tests
        raise AssertionError(name)
    return p
