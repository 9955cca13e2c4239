"""Complete scene graphs of an environment, sampled (nearly) uniformly; partial scenes (paper §3.3).

A *complete scene graph* of an environment with N objects is an answer set of
``background.lp + object(0..N-1) + constraints``: every object gets a color, shape, size, material and
region. The paper (§3.3) lets clingo enumerate the answer sets and samples among them; the official code
keeps the first 10^6 models of one enumeration, which are far from uniform (consecutive models differ in
the last few choices only). :class:`SceneSampler` instead draws from the uniform distribution over the
answer sets (labelled scenes: object ids are part of the answer set, so every set of N distinct objects
appears N! times, and uniform over answer sets is uniform over unordered scenes too).

How (two methods, chosen per environment by a calibration run at construction):

``"rejection"`` (exact)
    Object *types* are the 768 tuples (color, shape, size, material, region). The one-object
    constraints (templates 1-5 and 11) only remove types, so the allowed types ``T`` are computed once
    by clingo (answer sets of ``background + object(0) + those constraints``). A proposal is N types
    drawn uniformly from ``T^N`` *conditioned* on the region capacity (at most 3 objects per region) and
    on the exactly-N constraints (template 6), which :class:`StratifiedProposal` samples exactly (both
    only count objects of one region, so their count vectors factorise over regions). A proposal is
    accepted when no two objects agree on all four attributes (the background's rule; the region does
    not count) and the pair-counting constraints (templates 7-10) hold. Accepted proposals are exactly
    uniform over the answer sets (rejection sampling from a uniform distribution over a superset).
    Proposals are drawn and checked in numpy batches (about 1-2 microseconds each).
``"mcmc"`` (approximate, for environments where rejection would need more than
``max_expected_proposals`` proposals per scene, typically those with several "at least N pairs")
    A Gibbs/Metropolis sampler over the answer sets (:class:`GibbsKernel`). Heat-bath steps redraw one
    block uniformly among all its values that keep the scene an answer set (one object's whole type;
    one field of two objects together, so that "exactly 1 sphere in region 1" can move from one object
    to another); Metropolis steps exchange two values of a field in every object of some regions (so
    that the value three objects share to satisfy "at least 2 pairs of the same color" can change).
    Every step leaves the uniform distribution invariant. A pool of chain states is built on first use
    (``pool_chains`` chains started from the calibration's exact samples or from clingo models found
    with random decisions; ``burn_in`` sweeps; then snapshots every ``thinning`` sweeps); a sample
    starts from a random pool state, runs ``mcmc_sweeps`` sweeps and shuffles the object ids.
    ``benchmarks/scenes.py`` compares it with exact rejection samples; :meth:`SceneSampler.sample_many`
    runs many chains in lockstep (several times faster per scene).

Every returned scene is (by default) checked by clingo against the environment program (one solve
with the scene as assumptions, ~0.2 ms), so the Python counting code (templates 6-10, written from
``asp/templates/06..10``) can never let an invalid scene through; ``tests/test_scenes.py`` also checks
it against clingo on random scenes in both directions.

Determinism: :meth:`SceneSampler.sample` draws everything from its ``random.Random`` argument (and
from state fixed at construction, which is itself seeded), so the same rng state gives the same scene.
"""

from __future__ import annotations

import math
import random
from itertools import combinations_with_replacement, product
from dataclasses import dataclass
from functools import lru_cache
from typing import Iterator

import clingo
import numpy as np

from clevr_poc import domain
from clevr_poc.environments.environment import Environment
from clevr_poc.environments.templates import Constraint
from clevr_poc.errors import ClevrPocError, FormatError, UnsatisfiableError
from clevr_poc.knowledge import read_asp
from clevr_poc.scene import Scene, SceneObject

# ---------------------------------------------------------------------- object types
#: Attributes of an object type in encoding order: type id = ((((c*4 + s)*3 + z)*2 + m)*4 + r).
TYPE_FIELDS: tuple[str, ...] = ("color", "shape", "size", "material", "region")
_DOMAIN_OF_FIELD: dict[str, tuple] = {**{a: domain.DOMAINS[a] for a in domain.ATTRIBUTES}, "region": domain.REGIONS}
_SIZES = tuple(len(_DOMAIN_OF_FIELD[f]) for f in TYPE_FIELDS)
#: Number of object types: 8 colors x 4 shapes x 3 sizes x 2 materials x 4 regions.
NUM_TYPES: int = math.prod(_SIZES)
_STRIDE = {f: math.prod(_SIZES[k + 1:]) for k, f in enumerate(TYPE_FIELDS)}
_ALL = np.arange(NUM_TYPES)
#: ``FIELD_VALUE[f][t]``: index of type t's value of field f in its domain (numpy int64, length 768).
FIELD_VALUE: dict[str, np.ndarray] = {
    f: (_ALL // _STRIDE[f]) % len(_DOMAIN_OF_FIELD[f]) for f in TYPE_FIELDS
}
_VALUE_INDEX = {f: {v: i for i, v in enumerate(_DOMAIN_OF_FIELD[f])} for f in TYPE_FIELDS}
_REGION = FIELD_VALUE["region"]
_NUM_REGIONS = len(domain.REGIONS)  # the region is the last field: type // 4 is the description
#: Maximum number of objects in one region (background theory, Appendix A lines 41-43).
REGION_CAPACITY = 3

#: Templates whose constraint concerns one object at a time: they only forbid object types.
UNARY_TEMPLATES = frozenset({"value_restriction", "negation_two", "negation_same_property", "or", "negation",
                             "generic"})
#: Templates that count objects or pairs of objects (checked on whole scenes).
COUNTING_TEMPLATES = frozenset({"exactly_n", "at_least_pairs", "at_least_pairs_with_value", "at_most_pairs",
                                "at_most_pairs_with_value"})


def type_id(obj: SceneObject) -> int:
    """The type id (0..767) of an object's (color, shape, size, material, region)."""
    return sum(_VALUE_INDEX[f][getattr(obj, f)] * _STRIDE[f] for f in TYPE_FIELDS)


def type_object(tid: int) -> SceneObject:
    """The :class:`SceneObject` (no coordinates) of type id ``tid`` (0..767)."""
    values = {f: _DOMAIN_OF_FIELD[f][int(FIELD_VALUE[f][tid])] for f in TYPE_FIELDS}
    return SceneObject(values["color"], values["shape"], values["size"], values["material"], int(values["region"]))


#: ``TYPE_TUPLES[t]``: (color, shape, size, material, region) of type id t (0..767).
TYPE_TUPLES: tuple[tuple[str, str, str, str, int], ...] = tuple(
    (o.color, o.shape, o.size, o.material, o.region) for o in map(type_object, range(NUM_TYPES)))


def scene_from_types(types) -> Scene:
    """A scene without layout whose object i has type ``types[i]``."""
    return Scene(tuple(SceneObject(*TYPE_TUPLES[t]) for t in np.asarray(types).tolist()))


# ---------------------------------------------------------------------- counting constraints
@dataclass(frozen=True)
class ObjectCount:
    """``#count{X: flag(type of X)} == n`` (template 6, ``asp/templates/06_exactly_n.lp``): exactly n
    objects in ``region`` have the flagged value."""

    flag: np.ndarray  # bool, (768,)
    n: int
    region: int


@dataclass(frozen=True)
class PairCount:
    """Ordered pairs (X1, X2), X1 != X2, with ``key1[X1] == key2[X2] >= 0``: ``>= n`` (at least) or
    ``< n`` (at most N-1) (templates 7-10, ``asp/templates/07..10``).

    ``key1[t]`` is the value index of attribute p1 when type t is in region r1 (and has p2 = v2 for the
    "with value" templates), else -1; likewise ``key2`` with r2. ``sameProperty`` requires X1 != X2,
    and with r1 == r2 each unordered pair counts twice, exactly as the ASP ``#count`` does.
    """

    key1: np.ndarray  # int64, (768,), -1..7
    key2: np.ndarray
    n: int
    at_least: bool


def counting_constraint(c: Constraint) -> ObjectCount | PairCount:
    """The numpy form of a counting constraint (templates 6-10)."""
    p = c.params
    if c.template == "exactly_n":
        flag = (_REGION == p["r"]) & (FIELD_VALUE[p["p1"]] == _VALUE_INDEX[p["p1"]][p["v1"]])
        return ObjectCount(flag, int(p["n"]), int(p["r"]))
    value = FIELD_VALUE[p["p1"]]
    qualified = np.ones(NUM_TYPES, dtype=bool)
    if "p2" in p:
        qualified = FIELD_VALUE[p["p2"]] == _VALUE_INDEX[p["p2"]][p["v2"]]
    key1 = np.where((_REGION == p["r1"]) & qualified, value, -1)
    key2 = np.where((_REGION == p["r2"]) & qualified, value, -1)
    return PairCount(key1, key2, int(p["n"]), c.template.startswith("at_least"))


_REGION_IDS = np.arange(len(domain.REGIONS))
_MAX_VALUES = max(len(v) for v in domain.DOMAINS.values())
_VALUE_IDS = np.arange(_MAX_VALUES)


class SceneCheck:
    """Vectorised check of scenes given as type ids: distinct objects, region capacity, templates 6-10.

    The one-object templates are *not* checked here: callers build scenes from allowed types only.
    Besides whole scenes (:meth:`feasible`), it checks incremental changes of P scenes at once (the
    Gibbs steps): one object replaced (:meth:`object_replacements`) or two (:meth:`pair_replacements`).

    Raises:
        FormatError: a constraint's template is neither a one-object nor a counting template.
    """

    def __init__(self, constraints) -> None:
        self.objects: list[ObjectCount] = []
        self.pairs: list[PairCount] = []
        for c in constraints:
            if c.template in UNARY_TEMPLATES:
                continue
            if c.template not in COUNTING_TEMPLATES:
                raise FormatError("the scene sampler does not know this template", field="template",
                                  value=c.template)
            compiled = counting_constraint(c)
            (self.objects if isinstance(compiled, ObjectCount) else self.pairs).append(compiled)
        # stacked forms: (C, 768) tables, (C,) parameters
        self._flag = np.array([c.flag for c in self.objects], dtype=bool).reshape(-1, NUM_TYPES)
        self._flag_n = np.array([c.n for c in self.objects], dtype=np.int64)
        self._key1 = np.array([c.key1 for c in self.pairs], dtype=np.int64).reshape(-1, NUM_TYPES)
        self._key2 = np.array([c.key2 for c in self.pairs], dtype=np.int64).reshape(-1, NUM_TYPES)
        self._pair_n = np.array([c.n for c in self.pairs], dtype=np.int64)
        self._at_least = np.array([c.at_least for c in self.pairs], dtype=bool)
        # one-hot keys, (Cp, 768, 9) float64 (column 8: key -1): per-value counts times one-hot keys
        # give the pair counts a candidate adds by one (exact) matrix product
        self._onehot1 = (self._key1[..., None] % (_MAX_VALUES + 1) == np.arange(_MAX_VALUES + 1)).astype(np.float64)
        self._onehot2 = (self._key2[..., None] % (_MAX_VALUES + 1) == np.arange(_MAX_VALUES + 1)).astype(np.float64)
        self._candidate_cache: tuple | None = None

    def feasible(self, X: np.ndarray) -> np.ndarray:
        """Rows of ``X`` (shape (B, N), type ids) that are complete scenes (bool, shape (B,)).

        Large batches check the counting constraints first, each on the rows that passed the previous
        ones; small batches check all constraints at once (fewer numpy calls).
        """
        B, N = X.shape
        if B < 64:
            return self._feasible_stacked(X)
        rows = np.arange(B)
        for c in self.pairs:
            count = _pair_counts(c.key1[X], c.key2[X])
            keep = (count >= c.n) if c.at_least else (count < c.n)
            X, rows = X[keep], rows[keep]
        for c in self.objects:
            keep = c.flag[X].sum(axis=1) == c.n
            X, rows = X[keep], rows[keep]
        region = _REGION[X]
        keep = np.ones(len(X), dtype=bool)
        for r in domain.REGIONS:
            keep &= (region == r).sum(axis=1) <= REGION_CAPACITY
        if N > 1:  # no two objects agree on all four attributes (the region does not count)
            S = np.sort(X // _NUM_REGIONS, axis=1)
            keep &= (S[:, 1:] != S[:, :-1]).all(axis=1)
        ok = np.zeros(B, dtype=bool)
        ok[rows[keep]] = True
        return ok

    def _feasible_stacked(self, X: np.ndarray) -> np.ndarray:
        B, N = X.shape
        ok = (_region_counts(_REGION[X]) <= REGION_CAPACITY).all(axis=1)
        if N > 1:
            S = np.sort(X // _NUM_REGIONS, axis=1)
            ok &= (S[:, 1:] != S[:, :-1]).all(axis=1)
        if len(self.objects):
            ok &= (self._flag[:, X].sum(axis=-1) == self._flag_n[:, None]).all(axis=0)
        if len(self.pairs):
            k1, k2 = self._key1[:, X], self._key2[:, X]  # (Cp, B, N)
            count1, count2 = _value_counts(k1), _value_counts(k2)
            count = (count1 * count2).sum(axis=-1) - ((k1 == k2) & (k1 >= 0)).sum(axis=-1)  # (Cp, B)
            n = self._pair_n[:, None]
            ok &= np.where(self._at_least[:, None], count >= n, count < n).all(axis=0)
        return ok

    def object_replacements(self, others: np.ndarray, candidates: np.ndarray) -> np.ndarray:
        """Which candidate types can join the other objects of each of P scenes.

        Args:
            others: (P, N-1) type ids (the scene without the object being redrawn).
            candidates: (M,) type ids (allowed by the one-object constraints).

        Returns:
            (P, M) bool: ``others`` plus the candidate is a complete scene.
        """
        P = others.shape[0]
        taken = self._taken(others)
        ok = ~taken[:, candidates // _NUM_REGIONS]
        occupancy = _region_counts(_REGION[others])
        ok &= occupancy[:, _REGION[candidates]] < REGION_CAPACITY
        if len(self.objects):
            base = self._flag[:, others].sum(axis=-1)  # (Co, P)
            count = base[:, :, None] + self._flag[:, candidates][:, None, :]
            ok &= (count == self._flag_n[:, None, None]).all(axis=0)
        if len(self.pairs):
            base, count1, count2 = self._pair_base(others)
            cached = self._candidate_cache
            if cached is None or cached[0] is not candidates:  # the Gibbs kernel passes one array
                cached = self._candidate_cache = (candidates, self._onehot1[:, candidates].transpose(0, 2, 1).copy(),
                                                  self._onehot2[:, candidates].transpose(0, 2, 1).copy())
            _, onehot1, onehot2 = cached  # (Cp, 9, M)
            # count2[c, p, key1[c, t]] + count1[c, p, key2[c, t]] as products with one-hot keys (exact)
            added = count2.astype(np.float64) @ onehot1 + count1.astype(np.float64) @ onehot2
            count = base[:, :, None] + added.astype(np.int64)
            ok &= self._pairs_ok(count)
        return ok

    def pair_replacements(self, others: np.ndarray, ti: np.ndarray, tj: np.ndarray) -> np.ndarray:
        """Which candidate pairs (ti, tj) can join the other objects of each of P scenes.

        Args:
            others: (P, N-2) type ids (the scene without the two objects being redrawn).
            ti, tj: (P, D) candidate type ids of the two objects (any type id; types not allowed by
                the one-object constraints must be masked by the caller).

        Returns:
            (P, D) bool.
        """
        P = others.shape[0]
        rows = np.arange(P)[:, None]
        taken = self._taken(others)
        di, dj = ti // _NUM_REGIONS, tj // _NUM_REGIONS
        ok = ~taken[rows, di] & ~taken[rows, dj] & (di != dj)
        occupancy = _region_counts(_REGION[others])
        ri, rj = _REGION[ti], _REGION[tj]
        both = 1 + (ri == rj)
        ok &= (occupancy[rows, ri] + both <= REGION_CAPACITY) & (occupancy[rows, rj] + both <= REGION_CAPACITY)
        if len(self.objects):
            base = self._flag[:, others].sum(axis=-1)  # (Co, P)
            count = base[:, :, None] + self._flag[:, ti] + self._flag[:, tj]
            ok &= (count == self._flag_n[:, None, None]).all(axis=0)
        if len(self.pairs):
            base, count1, count2 = self._pair_base(others)
            k1i, k2i, k1j, k2j = self._key1[:, ti], self._key2[:, ti], self._key1[:, tj], self._key2[:, tj]
            c, p = np.arange(len(self.pairs))[:, None, None], np.arange(P)[None, :, None]
            count = (base[:, :, None] + count2[c, p, k1i] + count1[c, p, k2i] + count2[c, p, k1j]
                     + count1[c, p, k2j] + ((k1i == k2j) & (k1i >= 0)) + ((k1j == k2i) & (k1j >= 0)))
            ok &= self._pairs_ok(count)
        return ok

    # ------------------------------------------------------------------ internals
    @staticmethod
    def _taken(others: np.ndarray) -> np.ndarray:
        taken = np.zeros((others.shape[0], NUM_TYPES // _NUM_REGIONS), dtype=bool)
        taken[np.arange(others.shape[0])[:, None], others // _NUM_REGIONS] = True
        return taken

    def _pair_base(self, others: np.ndarray):
        """Pair counts among ``others`` (Cp, P) and their per-value key counts (Cp, P, 9) (the last
        column, which key -1 indexes, is 0)."""
        k1, k2 = self._key1[:, others], self._key2[:, others]  # (Cp, P, K)
        count1 = _value_counts(k1)
        count2 = _value_counts(k2)
        base = (count1 * count2).sum(axis=-1) - ((k1 == k2) & (k1 >= 0)).sum(axis=-1)
        return base, count1, count2

    def _pairs_ok(self, count: np.ndarray) -> np.ndarray:
        n = self._pair_n[:, None, None]
        return np.where(self._at_least[:, None, None], count >= n, count < n).all(axis=0)


def _value_counts(keys: np.ndarray) -> np.ndarray:
    """(..., K) keys in -1..7 -> (..., 9) counts of each value 0..7, then a 0 (where key -1 points)."""
    counts = (keys[..., None] == _VALUE_IDS).sum(axis=-2)
    return np.concatenate((counts, np.zeros(counts.shape[:-1] + (1,), dtype=counts.dtype)), axis=-1)


def _region_counts(regions: np.ndarray) -> np.ndarray:
    """(P, K) region ids -> (P, 4) counts."""
    return (regions[:, :, None] == _REGION_IDS).sum(axis=1)


def _pair_counts(k1: np.ndarray, k2: np.ndarray) -> np.ndarray:
    """Ordered pairs i != j with k1[:, i] == k2[:, j] >= 0, per row (k1, k2: (B, N))."""
    match = (k1[:, :, None] == k2[:, None, :]) & (k1[:, :, None] >= 0)
    diagonal = ((k1 == k2) & (k1 >= 0)).sum(axis=1)
    return match.sum(axis=(1, 2)) - diagonal


class StratifiedProposal:
    """Exact draws from the uniform distribution over ``T^N`` restricted to scenes that respect the
    region capacity and every exactly-N constraint (template 6), in numpy batches.

    Types are grouped into *cells*: same region and same value of every exactly-N flag. A scene's
    probability under "N types iid uniform over T, conditioned on capacity and exactly-N" is
    proportional to 1, so the number of objects per cell follows
    ``N!/prod(c!) * prod(|cell|^c)`` restricted to valid count vectors, which factorises over regions
    (both capacity and template 6 concern one region). A draw picks the region occupancy, then each
    region's cell counts, then a random order of the cells over the object ids, then a uniform type in
    each cell.
    """

    def __init__(self, allowed: np.ndarray, num_objects: int, counts: list[ObjectCount]) -> None:
        self.num_objects = num_objects
        signature = _REGION[allowed].copy()
        for j, c in enumerate(counts):
            signature = signature + (c.flag[allowed].astype(np.int64) << (2 + j))
        cell_keys, cell_of = np.unique(signature, return_inverse=True)
        self.cell_types = [allowed[cell_of == k] for k in range(len(cell_keys))]
        self.cell_size = np.array([len(t) for t in self.cell_types])
        self.cell_offset = np.concatenate(([0], np.cumsum(self.cell_size)[:-1]))
        self.flat_types = np.concatenate(self.cell_types) if self.cell_types else np.zeros(0, np.int64)
        cell_region = cell_keys & 3
        # per region: options (k, cells padded to REGION_CAPACITY with -1, log weight)
        self.options: list[dict[int, tuple[np.ndarray, np.ndarray]]] = []
        log_w_region: list[dict[int, float]] = []
        for r in domain.REGIONS:
            cells = np.flatnonzero(cell_region == r)
            by_k: dict[int, tuple[list, list]] = {}
            for combo in _multisets(list(cells), REGION_CAPACITY):
                flagged = [sum(1 for k in combo if (cell_keys[k] >> (2 + j)) & 1) for j in range(len(counts))]
                if any(flagged[j] != c.n for j, c in enumerate(counts) if c.region == r):
                    continue
                log_w = sum(math.log(self.cell_size[k]) for k in combo) - sum(
                    math.lgamma(combo.count(k) + 1) for k in set(combo))
                cells_padded = list(combo) + [-1] * (REGION_CAPACITY - len(combo))
                by_k.setdefault(len(combo), ([], []))[0].append(cells_padded)
                by_k[len(combo)][1].append(log_w)
            options = {}
            totals = {}
            for k, (rows, logs) in by_k.items():
                logs_arr = np.array(logs)
                top = logs_arr.max()
                weights = np.exp(logs_arr - top)
                totals[k] = top + math.log(weights.sum())
                options[k] = (np.array(rows, dtype=np.int64), np.cumsum(weights) / weights.sum())
            self.options.append(options)
            log_w_region.append(totals)
        occupancies, logs = [], []
        for ks in _occupancies(num_objects, [sorted(t) for t in log_w_region]):
            occupancies.append(ks)
            logs.append(sum(log_w_region[r][k] for r, k in enumerate(ks)))
        self.occupancies = np.array(occupancies, dtype=np.int64).reshape(-1, len(domain.REGIONS))
        if len(logs):
            logs_arr = np.array(logs)
            weights = np.exp(logs_arr - logs_arr.max())
            self.occupancy_cdf = np.cumsum(weights) / weights.sum()
        else:
            self.occupancy_cdf = np.zeros(0)

    @property
    def empty(self) -> bool:
        """True when no scene respects capacity and the exactly-N constraints with the allowed types."""
        return len(self.occupancies) == 0

    def draw(self, gen: np.random.Generator, size: int) -> np.ndarray:
        """``size`` proposals, type ids of shape (size, N)."""
        N = self.num_objects
        pick = np.minimum(np.searchsorted(self.occupancy_cdf, gen.random(size), side="right"),
                          len(self.occupancy_cdf) - 1)
        occupancy = self.occupancies[pick]
        cells = np.full((size, REGION_CAPACITY * len(domain.REGIONS)), -1, dtype=np.int64)
        for r, options in enumerate(self.options):
            for k, (rows, cdf) in options.items():
                if k == 0:
                    continue
                mask = occupancy[:, r] == k
                count = int(mask.sum())
                if count:
                    chosen = np.minimum(np.searchsorted(cdf, gen.random(count), side="right"), len(cdf) - 1)
                    cells[mask, r * REGION_CAPACITY:(r + 1) * REGION_CAPACITY] = rows[chosen]
        cells = np.sort(cells, axis=1)[:, cells.shape[1] - N:]  # the N real cells of every row
        order = np.argsort(gen.random((size, N)), axis=1)
        cells = np.take_along_axis(cells, order, axis=1)
        pos = (gen.random((size, N)) * self.cell_size[cells]).astype(np.int64)
        return self.flat_types[self.cell_offset[cells] + pos]


def _multisets(items: list, max_size: int) -> Iterator[tuple]:
    """Every multiset of at most ``max_size`` elements of ``items``, as sorted tuples (the empty one too)."""
    for k in range(max_size + 1):
        yield from combinations_with_replacement(items, k)


def _occupancies(total: int, choices: list[list[int]]) -> Iterator[tuple[int, ...]]:
    """Tuples (k_0, .., k_3), k_r in choices[r], summing to ``total``."""
    for ks in product(*choices):
        if sum(ks) == total:
            yield ks


# ---------------------------------------------------------------------- clingo helpers
def _silent(code: clingo.MessageCode, message: str) -> None:
    return None


def allowed_types(constraints) -> np.ndarray:
    """Sorted type ids an object may have under the one-object constraints (templates 1-5, 11), as the
    answer sets of ``background.lp + object(0) + those constraints`` (clingo enumerates them all).

    Cached per process by the constraints' ASP text (the scene sampler and the question generator
    share one enumeration per environment); the returned int64 array is read-only."""
    unary = "\n".join("\n".join(c.asp_rules()) for c in constraints if c.template in UNARY_TEMPLATES)
    return _allowed_types(unary)


@lru_cache(maxsize=256)
def _allowed_types(unary: str) -> np.ndarray:
    control = clingo.Control(["--models=0"], logger=_silent)
    control.add("base", [], "\n".join((read_asp("background.lp"), "object(0).", unary,
                                        "#show hasProperty/3. #show at/2.")))
    control.ground([("base", [])])
    # each shown atom adds its field's share of the type id (symbols hash in C: no per-model parsing)
    share: dict[clingo.Symbol, int] = {}
    for atom in control.symbolic_atoms.by_signature("hasProperty", 3):
        _, a, v = atom.symbol.arguments
        share[atom.symbol] = _VALUE_INDEX[a.name][v.name] * _STRIDE[a.name]
    for atom in control.symbolic_atoms.by_signature("at", 2):
        share[atom.symbol] = atom.symbol.arguments[1].number * _STRIDE["region"]
    types: list[int] = []

    def on_model(model: clingo.Model) -> None:
        types.append(sum(share[symbol] for symbol in model.symbols(shown=True)))

    control.solve(on_model=on_model)
    result = np.array(sorted(types), dtype=np.int64)
    result.setflags(write=False)
    return result


class _SceneProgram:
    """``background + object(0..N-1) + constraints`` grounded once (clingo, in process); checks a
    scene with one solve under assumptions and finds models."""

    def __init__(self, environment: Environment, arguments: tuple[str, ...] = ()) -> None:
        self.num_objects = environment.num_objects
        control = clingo.Control(list(arguments), logger=_silent)
        control.add("base", [], "\n".join((read_asp("background.lp"), f"object(0..{self.num_objects - 1}).",
                                            environment.constraints_asp(), "#show hasProperty/3. #show at/2.")))
        control.ground([("base", [])])
        self.literal: dict[tuple, int] = {}
        for atom in control.symbolic_atoms.by_signature("hasProperty", 3):
            o, a, v = atom.symbol.arguments
            self.literal[(o.number, a.name, v.name)] = atom.literal
        for atom in control.symbolic_atoms.by_signature("at", 2):
            o, r = atom.symbol.arguments
            self.literal[(o.number, "region", r.number)] = atom.literal
        self.control = control
        self._table: np.ndarray | None = None

    def _literal_table(self) -> np.ndarray:
        """(N, 768, 5) int64: the literals of "object i has type t" per field, 0 where the grounder
        removed the atom (it can never be true)."""
        if self._table is None:
            table = np.zeros((self.num_objects, NUM_TYPES, len(TYPE_FIELDS)), dtype=np.int64)
            for k, f in enumerate(TYPE_FIELDS):
                values = _DOMAIN_OF_FIELD[f]
                for i in range(self.num_objects):
                    per_value = np.array([self.literal.get((i, f, v), 0) for v in values], dtype=np.int64)
                    table[i, :, k] = per_value[FIELD_VALUE[f]]
            self._table = table
        return self._table

    def assumptions(self, types) -> list[int]:
        """Literals of "object i has type ``types[i]``" (5 per object). Raises KeyError when one of
        them was removed by the grounder."""
        lits = self._literal_table()[np.arange(len(types)), np.asarray(types, dtype=np.int64)].ravel()
        if not lits.all():
            raise KeyError("an atom the grounder removed")
        return lits.tolist()

    def is_scene(self, types) -> bool:
        """Whether the objects of these type ids form an answer set (one clingo solve)."""
        if len(types) != self.num_objects:
            return False
        try:
            assumptions = self.assumptions(types)
        except KeyError:  # an atom the grounder removed: it can never be true
            return False
        return bool(self.control.solve(assumptions=assumptions).satisfiable)

    def first_model_types(self) -> np.ndarray | None:
        found: list[np.ndarray] = []

        def on_model(model: clingo.Model) -> bool:
            found.append(_model_types(model, self.num_objects))
            return False

        self.control.solve(on_model=on_model)
        return found[0] if found else None


def _model_types(model: clingo.Model, num_objects: int) -> np.ndarray:
    types = np.zeros(num_objects, dtype=np.int64)
    for symbol in model.symbols(shown=True):
        if symbol.name == "hasProperty" and len(symbol.arguments) == 3:
            o, a, v = symbol.arguments
            types[o.number] += _VALUE_INDEX[a.name][v.name] * _STRIDE[a.name]
        elif symbol.name == "at" and len(symbol.arguments) == 2:
            types[symbol.arguments[0].number] += symbol.arguments[1].number
    return types


def random_models(environment: Environment, count: int, *, seed: int = 0, time_limit: float = 1.0) -> list[np.ndarray]:
    """Up to ``count`` complete scenes (type-id arrays) found by clingo with random decisions
    (``--rand-freq=1 --sign-def=rnd``, solver seed k+1 for the k-th): diverse, not uniform. One
    control, a fixed sequence of solves, so the result is deterministic unless a search takes longer
    than ``time_limit`` seconds (then fewer models are returned)."""
    program = _SceneProgram(environment, ("--rand-freq=1", "--sign-def=rnd", "--models=1"))
    found: list[np.ndarray] = []
    for k in range(count):
        program.control.configuration.solver.seed = str(seed * 100_003 + k + 1)
        models: list[np.ndarray] = []

        def on_model(model: clingo.Model) -> bool:
            models.append(_model_types(model, program.num_objects))
            return False

        with program.control.solve(on_model=on_model, async_=True) as handle:
            if not handle.wait(time_limit):
                handle.cancel()
                break
        if not models:
            break
        found.append(models[0])
    return found


def enumerate_scenes(environment: Environment, limit: int | None = None) -> Iterator[Scene]:
    """The complete scenes in clingo's enumeration order (default configuration), at most ``limit``:
    the official generator's approach (first models of one enumeration), kept as a baseline."""
    program = _SceneProgram(environment, (f"--models={limit or 0}",))
    with program.control.solve(yield_=True) as handle:
        for model in handle:
            yield scene_from_types(_model_types(model, program.num_objects))


# ---------------------------------------------------------------------- the sampler
@dataclass
class SamplerStats:
    """Counters of a :class:`SceneSampler` (cumulative since construction).

    Attributes:
        samples: scenes returned.
        proposals: rejection proposals drawn (all of them, accepted or not).
        accepted: proposals accepted.
        mcmc_samples: scenes that came from the Gibbs sampler (method "mcmc", or rejection's budget ran out).
        mcmc_steps: Gibbs steps taken.
        verified: clingo checks of returned scenes.
    """

    samples: int = 0
    proposals: int = 0
    accepted: int = 0
    mcmc_samples: int = 0
    mcmc_steps: int = 0
    verified: int = 0


class GibbsKernel:
    """Heat-bath Gibbs steps over complete scenes, run on P chains in lockstep.

    Three kinds of step, each leaving the uniform distribution over complete scenes invariant. Two are
    heat-bath steps (a block redrawn uniformly among the values that keep the scene complete):

    - one object's whole type (every allowed type is a candidate);
    - one field of two objects at once, which lets a counting constraint move from one shared value to
      another ("at least 2 pairs of the same color": red-red to blue-blue) or from one object to another
      ("exactly 1 small object in region 0").

    The third is a Metropolis move (:meth:`swap_step`): two values of a field exchanged in every object
    of some regions, e.g. when the pairs an "at least 2 pairs" constraint needs are held by three objects.
    Only ``fields`` are used for the last two: the region and the attributes the counting constraints
    mention (other fields never need several objects to change together).
    """

    def __init__(self, check: SceneCheck, allowed: np.ndarray, fields: tuple[str, ...]) -> None:
        self.check = check
        self.allowed = allowed
        self.fields = fields
        self.allowed_mask = np.zeros(NUM_TYPES, dtype=bool)
        self.allowed_mask[allowed] = True

    def sweeps(self, X: np.ndarray, gen: np.random.Generator, count: int) -> int:
        """``count`` sweeps in place on X ((P, N) type ids, every row a complete scene); one sweep is N
        object steps (random order) and, when there are ``fields``, N two-object field steps and N
        value swaps. Returns the number of steps."""
        P, N = X.shape
        steps = 0
        for _ in range(count):
            for i in gen.permutation(N):
                self.object_step(X, int(i), gen)
            steps += N
            if N > 1 and self.fields:
                for _ in range(N):
                    i, j = gen.choice(N, size=2, replace=False)
                    self.field_step(X, int(i), int(j), self.fields[int(gen.integers(len(self.fields)))], gen)
                for _ in range(N):
                    self.swap_step(X, self.fields[int(gen.integers(len(self.fields)))], gen)
                steps += 2 * N
        return steps

    def object_step(self, X: np.ndarray, i: int, gen: np.random.Generator) -> None:
        """Redraw object i of every chain uniformly among the types that keep its scene complete."""
        ok = self.check.object_replacements(np.delete(X, i, axis=1), self.allowed)
        X[:, i] = self.allowed[_choose(ok, gen)]  # never empty: X[:, i] itself is feasible

    def field_step(self, X: np.ndarray, i: int, j: int, name: str, gen: np.random.Generator) -> None:
        """Redraw field ``name`` of objects i and j together (all value pairs are candidates)."""
        size, stride = len(_DOMAIN_OF_FIELD[name]), _STRIDE[name]
        vi, vj = np.divmod(np.arange(size * size), size)
        value = FIELD_VALUE[name]
        ti = X[:, i:i + 1] + (vi[None, :] - value[X[:, i:i + 1]]) * stride  # (P, size^2)
        tj = X[:, j:j + 1] + (vj[None, :] - value[X[:, j:j + 1]]) * stride
        others = np.delete(X, [i, j], axis=1)
        ok = self.allowed_mask[ti] & self.allowed_mask[tj] & self.check.pair_replacements(others, ti, tj)
        pick = _choose(ok, gen)
        rows = np.arange(X.shape[0])
        X[:, i], X[:, j] = ti[rows, pick], tj[rows, pick]

    def swap_step(self, X: np.ndarray, name: str, gen: np.random.Generator) -> None:
        """Metropolis move: exchange two values a, b of field ``name`` in every object of a random
        non-empty set of regions (all objects for the region field itself), kept when the result is a
        complete scene. The proposal is an involution drawn independently of the state, hence symmetric.

        It changes *which* value several objects share at once ("the pairs across regions 0 and 1
        share gray" -> "... share red"), which no one- or two-object step can do when three objects
        hold the pairs.
        """
        P = X.shape[0]
        size, stride = len(_DOMAIN_OF_FIELD[name]), _STRIDE[name]
        a = gen.integers(size, size=(P, 1))  # every chain draws its own proposal
        b = (a + gen.integers(1, size, size=(P, 1))) % size
        value = FIELD_VALUE[name][X]
        if name == "region":
            chosen = np.ones(X.shape, dtype=bool)
        else:
            regions = gen.integers(1, 1 << len(domain.REGIONS), size=(P, 1))
            chosen = ((regions >> _REGION[X]) & 1).astype(bool)
        swapped = np.where(value == a, b, np.where(value == b, a, value))
        Y = X + np.where(chosen, swapped - value, 0) * stride
        ok = self.allowed_mask[Y].all(axis=1)
        ok[ok] = self.check.feasible(Y[ok])
        X[ok] = Y[ok]


def _counted_fields(constraints) -> tuple[str, ...]:
    """The region and every attribute a counting constraint (templates 6-10) mentions, in
    :data:`TYPE_FIELDS` order; empty when there is no counting constraint."""
    named = {c.params[k] for c in constraints if c.template in COUNTING_TEMPLATES for k in ("p1", "p2")
             if k in c.params}
    if not named:
        return ()
    return tuple(f for f in TYPE_FIELDS if f in named or f == "region")


def _choose(ok: np.ndarray, gen: np.random.Generator) -> np.ndarray:
    """Per row of the (P, K) bool array, the index of a uniformly chosen True entry."""
    counts = ok.sum(axis=1)
    r = (gen.random(ok.shape[0]) * counts).astype(np.int64)
    return (np.cumsum(ok, axis=1) <= r[:, None]).sum(axis=1)


@dataclass(frozen=True, eq=False)
class SamplerState:
    """What a :class:`SceneSampler` computes at construction (and, for the Gibbs sampler, on first use),
    so that another process can rebuild the same sampler without recomputing it (the dataset generator
    prepares one per environment, in parallel, and ships it with the examples' tasks).

    Attributes:
        fingerprint: the environment program and the construction settings it was computed for
            (a sampler refuses the state of another environment or other settings).
        allowed: type ids allowed by the one-object constraints (int16, sorted).
        start: a complete scene (type ids, int16, length N): clingo's first model.
        acceptance_rate: the calibrated acceptance rate of the rejection proposals.
        pool: the Gibbs sampler's starting states, (pool_size, N) int16, or None (built on first use).
    """

    fingerprint: str
    allowed: np.ndarray
    start: np.ndarray
    acceptance_rate: float
    pool: np.ndarray | None = None


class SceneSampler:
    """Sample complete scene graphs of one environment, (nearly) uniformly over its answer sets.

    Args:
        environment: the environment (N = ``environment.num_objects`` objects per scene).
        method: ``"rejection"`` (exact), ``"mcmc"`` (heat-bath Gibbs) or ``"auto"`` (default): rejection
            when the calibrated acceptance rate is at least ``1 / max_expected_proposals``, MCMC
            otherwise. See the module docstring.
        verify: check every returned scene with clingo (one solve, ~0.2 ms). Default True.
        max_expected_proposals: "auto" threshold (default 2000 proposals per scene, about 3-4 ms; below
            an acceptance rate of 1/2000 the Gibbs sampler, about 1.5-3 ms per scene, is faster).
        max_proposals: rejection budget per sample before that sample falls back to the Gibbs sampler
            (default: 30 times the expected number, at least 10^4, so a fallback is very rare).
        mcmc_sweeps: Gibbs sweeps per sample after starting from a pool state (default 1; one sweep is
            N one-object steps and N two-object field steps).
        pool_size: chain states kept as starting points of the Gibbs sampler (default 1024).
        pool_chains: chains run in lockstep to build the pool (default 64).
        burn_in: sweeps run on the pool chains before the first snapshot (default 30).
        thinning: sweeps between two snapshots of the pool chains (default 2).
        calibration_proposals: at most this many proposals drawn at construction to estimate the
            acceptance rate (it stops early after 200 acceptances).
        seed: seed of the construction-time randomness (calibration, pool); the default 0 keeps
            construction deterministic.
        state: a :class:`SamplerState` from :meth:`state` of a sampler of the same environment with the
            same settings: the calibration (and the pool, when it holds one) is taken from it instead of
            being recomputed; the sampler then draws exactly the scenes the original would.

    Raises:
        UnsatisfiableError: the environment has no complete scene.
        FormatError: bad arguments, a constraint uses a template the sampler does not know, or
            ``state`` belongs to another environment or other settings.

    Not thread-safe (one clingo control, counters): use one sampler per thread or process.

    Attributes:
        method: the method in use ("rejection" or "mcmc").
        acceptance_rate: the calibrated acceptance rate of rejection proposals (0.0 if none accepted).
        allowed: type ids allowed by the one-object constraints (numpy int64 array).
        stats: :class:`SamplerStats`.
    """

    METHODS = ("auto", "rejection", "mcmc")

    def __init__(self, environment: Environment, *, method: str = "auto", verify: bool = True,
                 max_expected_proposals: int = 2000, max_proposals: int | None = None, mcmc_sweeps: int = 1,
                 pool_size: int = 1024, pool_chains: int = 64, burn_in: int = 30, thinning: int = 2,
                 calibration_proposals: int = 50_000, seed: int = 0, state: SamplerState | None = None) -> None:
        if method not in self.METHODS:
            raise FormatError(f"method must be one of {self.METHODS}", field="method", value=method)
        for name, value, low in (("mcmc_sweeps", mcmc_sweeps, 0), ("pool_size", pool_size, 1),
                                 ("pool_chains", pool_chains, 1), ("burn_in", burn_in, 0),
                                 ("thinning", thinning, 1), ("calibration_proposals", calibration_proposals, 0),
                                 ("max_expected_proposals", max_expected_proposals, 1)):
            if not isinstance(value, int) or value < low:
                raise FormatError(f"must be an integer >= {low}", field=name, value=value)
        self.environment = environment
        self.num_objects = environment.num_objects
        self.verify = verify
        self.mcmc_sweeps = mcmc_sweeps
        self.pool_size = pool_size
        self.pool_chains = pool_chains
        self.burn_in = burn_in
        self.thinning = thinning
        self.stats = SamplerStats()
        self.check = SceneCheck(environment.constraints)
        self._fingerprint = repr((environment.constraints_asp(), self.num_objects, calibration_proposals, seed,
                                  pool_size, pool_chains, burn_in, thinning))
        if state is not None and state.fingerprint != self._fingerprint:
            raise FormatError("the sampler state was computed for another environment or other settings",
                              field="state", value=f"environment {environment.id}")
        self.allowed = allowed_types(environment.constraints) if state is None else state.allowed.astype(np.int64)
        self._program = _SceneProgram(environment)
        start = self._program.first_model_types() if state is None else state.start.astype(np.int64)
        if start is None:
            raise UnsatisfiableError(f"environment {environment.id} has no complete scene with "
                                     f"{self.num_objects} objects")
        self._start = start
        self.proposal = StratifiedProposal(self.allowed, self.num_objects, self.check.objects)
        self.kernel = GibbsKernel(self.check, self.allowed, _counted_fields(environment.constraints))

        self._calibration_proposals = calibration_proposals
        self._calibration_seed = seed
        self._exact_starts: list[np.ndarray] | None = None
        if state is None:
            gen = np.random.default_rng([seed, 0x5CE7E])
            drawn, accepted = self._calibrate(gen, calibration_proposals)
            self.acceptance_rate = accepted / drawn if drawn else 0.0
        else:
            self.acceptance_rate = state.acceptance_rate
        if method == "auto":
            usable = self.acceptance_rate > 0 and 1.0 / self.acceptance_rate <= max_expected_proposals
            method = "rejection" if usable else "mcmc"
        self.method = method
        expected = 1.0 / self.acceptance_rate if self.acceptance_rate > 0 else float(max_expected_proposals)
        self.max_proposals = max(10_000, int(30 * expected)) if max_proposals is None else max_proposals
        self.batch_size = int(min(4096, max(32, 1.5 * expected)))
        self._pool: np.ndarray | None = None if state is None or state.pool is None else state.pool.astype(np.int64)
        self._pool_seed = seed

    def state(self, *, with_pool: bool | None = None) -> SamplerState:
        """This sampler's :class:`SamplerState` (small: int16 arrays; with the pool about 2 x N KB).

        Args:
            with_pool: include the Gibbs pool (built now if needed); default: when the method is
                ``"mcmc"`` (a rejection sampler only needs it when a sample's budget runs out).
        """
        if with_pool is None:
            with_pool = self.method == "mcmc"
        pool = self.pool().astype(np.int16) if with_pool else None
        return SamplerState(self._fingerprint, self.allowed.astype(np.int16), np.asarray(self._start, np.int16),
                            self.acceptance_rate, pool)

    # ------------------------------------------------------------------ public API
    def sample(self, rng: random.Random) -> Scene:
        """One complete scene graph (N objects with color/shape/size/material/region; no layout, no
        relationships). Deterministic in ``rng``'s state.

        Raises:
            ClevrPocError: clingo rejects a scene the sampler produced (a bug; never expected).
        """
        return scene_from_types(self.sample_types(rng))

    def sample_types(self, rng: random.Random) -> np.ndarray:
        """Like :meth:`sample`, as type ids (numpy int64 array of length N)."""
        gen = np.random.default_rng(rng.getrandbits(64))
        types = None
        if self.method == "rejection":
            types = self._rejection(gen, self.max_proposals)
        if types is None:
            types = self._gibbs_sample(gen)
        self._check(types)
        self.stats.samples += 1
        return types

    def _check(self, types: np.ndarray) -> None:
        if self.verify:
            self.stats.verified += 1
            if not self._program.is_scene(types):
                raise ClevrPocError(
                    f"internal error: sampled scene {[type_object(int(t)).describe() for t in types]} "
                    f"violates environment {self.environment.id} (please report)")

    def sample_many(self, rng: random.Random, count: int) -> list[Scene]:
        """``count`` complete scene graphs drawn together (the Gibbs chains run in lockstep, several
        times faster per scene than :meth:`sample`). Deterministic in ``rng``'s state and ``count``;
        not the same scenes as ``count`` calls of :meth:`sample`."""
        return [scene_from_types(row) for row in self.sample_types_many(rng, count)]

    def sample_types_many(self, rng: random.Random, count: int) -> np.ndarray:
        """Like :meth:`sample_many`, as a (count, N) numpy int64 array of type ids."""
        if not isinstance(count, int) or count < 0:
            raise FormatError("count must be a non-negative integer", field="count", value=count)
        gen = np.random.default_rng(rng.getrandbits(64))
        out = np.zeros((count, self.num_objects), dtype=np.int64)
        pending = list(range(count))
        if self.method == "rejection":
            missing = []
            for k in pending:
                types = self._rejection(gen, self.max_proposals)
                if types is None:
                    missing.append(k)
                else:
                    out[k] = types
            pending = missing
        for start in range(0, len(pending), 256):
            block = pending[start:start + 256]
            out[block] = self._gibbs_block(gen, len(block))
        for row in out:
            self._check(row)
        self.stats.samples += count
        return out

    def is_scene(self, scene: Scene) -> bool:
        """Whether ``scene`` (N objects) is a complete scene of the environment (clingo; relationships
        and coordinates are ignored)."""
        return self._program.is_scene([type_id(o) for o in scene.objects])

    # ------------------------------------------------------------------ rejection
    def _calibrate(self, gen: np.random.Generator, proposals: int) -> tuple[int, int]:
        drawn = accepted = 0
        exact: list[np.ndarray] = []
        while drawn < proposals and accepted < 200 and not self.proposal.empty:
            size = min(4096, proposals - drawn)
            X = self.proposal.draw(gen, size)
            ok = self.check.feasible(X)
            accepted += int(ok.sum())
            exact.extend(X[ok][: self.pool_size - len(exact)])
            drawn += size
        self._exact_starts = exact  # exact uniform samples: the best starting points for the pool chains
        return drawn, accepted

    def _rejection(self, gen: np.random.Generator, budget: int) -> np.ndarray | None:
        drawn = 0
        while drawn < budget and not self.proposal.empty:
            size = min(self.batch_size, budget - drawn)
            X = self.proposal.draw(gen, size)
            ok = np.flatnonzero(self.check.feasible(X))
            if len(ok):
                self.stats.proposals += int(ok[0]) + 1
                self.stats.accepted += 1
                return X[ok[0]].copy()
            drawn += size
            self.stats.proposals += size
        return None

    # ------------------------------------------------------------------ Gibbs sampler
    def _gibbs_sample(self, gen: np.random.Generator) -> np.ndarray:
        return self._gibbs_block(gen, 1)[0]

    def _gibbs_block(self, gen: np.random.Generator, count: int) -> np.ndarray:
        """``count`` Gibbs samples: random pool states, ``mcmc_sweeps`` sweeps in lockstep, object ids
        shuffled."""
        pool = self.pool()
        X = pool[gen.integers(len(pool), size=count)].copy()
        self.stats.mcmc_steps += count * self.kernel.sweeps(X, gen, self.mcmc_sweeps)
        self.stats.mcmc_samples += count
        order = np.argsort(gen.random(X.shape), axis=1)
        return np.take_along_axis(X, order, axis=1)

    def pool(self) -> np.ndarray:
        """The Gibbs sampler's starting states, (pool_size, N) type ids, built on first use.

        ``pool_chains`` chains run in lockstep: ``burn_in`` sweeps, then one snapshot of every chain
        after each further ``thinning`` sweeps until ``pool_size`` states are kept. The chains start
        from the exact samples the calibration found (cycled), topped up, when there are fewer than 8,
        with clingo models found with random decisions (:func:`random_models`), so that the chains
        start spread over the answer sets.
        """
        if self._pool is None:
            gen = np.random.default_rng([self._pool_seed, 0x9001])
            chains = min(self.pool_chains, self.pool_size)
            if self._exact_starts is None:  # built from a state: the calibration's exact samples, again
                self._calibrate(np.random.default_rng([self._calibration_seed, 0x5CE7E]), self._calibration_proposals)
            starts = list(self._exact_starts)
            if len(starts) < min(chains, 8):
                starts += random_models(self.environment, chains - len(starts), seed=self._pool_seed)
            starts = starts or [self._start]
            X = np.array([starts[k % len(starts)] for k in range(chains)], dtype=np.int64)
            self.stats.mcmc_steps += chains * self.kernel.sweeps(X, gen, self.burn_in)
            snapshots: list[np.ndarray] = []
            while len(snapshots) < self.pool_size:
                self.stats.mcmc_steps += chains * self.kernel.sweeps(X, gen, self.thinning)
                snapshots.extend(X.copy())
            self._pool = np.array(snapshots[: self.pool_size])
        return self._pool


# ---------------------------------------------------------------------- partial scenes
def choose_hidden(complete: Scene, rng: random.Random) -> int:
    """Index of the object to hide, uniform over ``0..N-1`` (paper §3.3: "randomly removing one of the
    objects").

    Raises:
        FormatError: the scene has no objects.
    """
    if len(complete) == 0:
        raise FormatError("cannot hide an object of an empty scene", field="objects", value=0)
    return rng.randrange(len(complete))


def make_partial(complete: Scene, hidden_index: int) -> tuple[Scene, SceneObject]:
    """The partial scene (object ``hidden_index`` removed, the others renumbered ``0..N-2`` in order,
    relationships filtered and renumbered) and the hidden object.

    Raises:
        IndexError: ``hidden_index`` is not an object id of ``complete``.
    """
    return complete.without_object(hidden_index), complete.objects[hidden_index]
