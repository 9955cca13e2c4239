"""Moves of the approximate ("mcmc") scene sampler: heat-bath Gibbs steps and value swaps that leave the
uniform distribution over an environment's complete scenes invariant (:class:`GibbsKernel`).

Issue 27 (helper ``ss``): one chain's field and swap steps run in plain Python (the same candidates, booleans
and draws as the numpy steps; ``tests/test_scene_check_rows.py`` compares whole chains); with the checks'
fewer numpy calls a Gibbs sample takes 0.55x the CPU time (0.80 against 1.47 ms, N = 8).

Issue 27 (helper ``gb``): the batch steps (P > 1: the pool build) read per-type count features
(:class:`~.gibbs_batch.BatchSteps`; the pool build's sweeps 0.45x the CPU time); one chain's object step uses
the same tables (about 20 numpy calls instead of 40) and its field step tests only what can change (an
attribute: the descriptions; the region: the regions' room) and skips the pair constraints whose bounds over
all candidate pairs hold: a Gibbs sample takes 0.83x the CPU time (3.56 against 4.29 s for 7,200 samples of the
6 Gibbs environments of seeds 0 and 5, the previous kernel in the same process, load 2.4). The same chains and
draws (``tests/test_scene_check_rows.py``)."""

from __future__ import annotations

import functools

import numpy as np

from clevr_poc import domain
from clevr_poc.generation.object_types import (
    COUNTING_TEMPLATES, FIELD_DOMAIN, FIELD_STRIDE, FIELD_VALUE, NUM_REGIONS, NUM_TYPES, REGION_CAPACITY,
    TYPE_FIELDS, TYPE_REGION,
)
from clevr_poc.generation.gibbs_batch import BatchSteps, swap_table
from clevr_poc.generation.scene_check import SceneCheck


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
        self._allowed_list: list[bool] = self.allowed_mask.tolist()
        self._batch: BatchSteps | None = None

    def sweeps(self, X: np.ndarray, gen: np.random.Generator, count: int) -> int:
        """``count`` sweeps in place on X ((P, N) type ids, every row a complete scene); one sweep is N
        object steps (random order) and, when there are ``fields``, N two-object field steps and N
        value swaps. Returns the number of steps."""
        if X.shape[0] == 1:
            return self._sweeps_row(X[0], gen, count)
        return self._sweeps_batch(X, gen, count)

    def _sweeps_batch(self, X: np.ndarray, gen: np.random.Generator, count: int) -> int:
        """:meth:`sweeps` with the batch steps (any P; what ``sweeps`` runs for P > 1)."""
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

    def _sweeps_row(self, x: np.ndarray, gen: np.random.Generator, count: int) -> int:
        """:meth:`sweeps` of one chain (``x``: (N,) type ids, changed in place): the same steps and the same
        draws from ``gen`` as on a (1, N) array, with the one-scene checks of :class:`SceneCheck` (the
        batch steps' numpy overhead on one row was most of a Gibbs sample's time; issue 27)."""
        N = len(x)
        steps = 0
        without = _without(N)
        batch = self.batch
        for _ in range(count):
            for i in gen.permutation(N).tolist():
                ok = batch.object_replacements_row(x.take(without[i]))
                x[i] = self.allowed[_choose_row(ok, gen)]
            steps += N
            if N > 1 and self.fields:
                for _ in range(N):
                    i, j = gen.choice(N, size=2, replace=False).tolist()
                    self._field_step_row(x, i, j, self.fields[int(gen.integers(len(self.fields)))], gen)
                for _ in range(N):
                    self._swap_step_row(x, self.fields[int(gen.integers(len(self.fields)))], gen)
                steps += 2 * N
        return steps

    def _field_step_row(self, x: np.ndarray, i: int, j: int, name: str, gen: np.random.Generator) -> None:
        """:meth:`field_step` of one chain, in plain Python (issue 27: the size x size candidate pairs of a
        field are few, 4 to 64, and numpy's per-call overhead made this step about 60 microseconds; now about
        15-25). The same candidates in the same order, the same booleans as :meth:`SceneCheck.pair_replacements_row`
        (``tests/test_scene_check_rows.py``), the same draw.

        As the batch steps (:mod:`~.gibbs_batch`), it relies on the chain's scene being complete: an attribute
        step tests the descriptions only, a region step the regions' room only, and a pair-counting constraint
        whose bounds over all candidate pairs already hold is not tested pair by pair (issue 27, helper ``gb``:
        0.81x the CPU time of this step, 0.95x of a Gibbs sample; 6 Gibbs environments, load 4-5)."""
        size = len(FIELD_DOMAIN[name])
        allowed = self._allowed_list
        xs = x.tolist()
        ti, tj = _ALTERNATIVE_LISTS[name][xs[i]], _ALTERNATIVE_LISTS[name][xs[j]]  # by value
        others = [t for k, t in enumerate(xs) if k != i and k != j]
        # only field `name` changes: the constraints that do not depend on it keep holding (for_field)
        _, objects, pairs = self.check.for_field(name).list_tables()
        if name == "region":  # the descriptions do not change: room in the regions
            occupancy = [0] * NUM_REGIONS
            for t in others:
                occupancy[t % NUM_REGIONS] += 1
            alone_j = [allowed[t] and occupancy[t % NUM_REGIONS] < REGION_CAPACITY for t in tj]
            ok = []
            for t in ti:
                if allowed[t] and occupancy[t % NUM_REGIONS] < REGION_CAPACITY:
                    ra, room = t % NUM_REGIONS, occupancy[t % NUM_REGIONS] < REGION_CAPACITY - 1
                    ok.extend([alone and (room or u % NUM_REGIONS != ra) for u, alone in zip(tj, alone_j)])
                else:
                    ok.extend([False] * size)
        else:  # the regions do not change: new descriptions, free and distinct (equal only for equal values)
            taken = {t // NUM_REGIONS for t in others}
            alone_i = [allowed[t] and t // NUM_REGIONS not in taken for t in ti]
            alone_j = [allowed[t] and t // NUM_REGIONS not in taken for t in tj]
            ok = [a and b for a in alone_i for b in alone_j]
            for a in range(size):
                if ok[a * size + a] and ti[a] // NUM_REGIONS == tj[a] // NUM_REGIONS:
                    ok[a * size + a] = False
        for flag, n in objects:
            base = sum(flag[t] for t in others)
            for p in range(size * size):
                if ok[p]:
                    ok[p] = base + flag[ti[p // size]] + flag[tj[p % size]] == n
        for key1, key2, n, at_least in pairs:
            count1: dict[int, int] = {}
            count2: dict[int, int] = {}
            base = 0
            for t in others:
                k1, k2 = key1[t], key2[t]
                if k1 >= 0:
                    count1[k1] = count1.get(k1, 0) + 1
                    if k2 == k1:
                        base -= 1
                if k2 >= 0:
                    count2[k2] = count2.get(k2, 0) + 1
            base += sum(c * count2.get(k, 0) for k, c in count1.items())
            # what a candidate adds with the others (key -1 is never in the counts)
            add_i = [count2.get(key1[t], 0) + count1.get(key2[t], 0) for t in ti]
            add_j = [count2.get(key1[t], 0) + count1.get(key2[t], 0) for t in tj]
            # every pair holds when the bounds do (the two candidates add 0 to 2 pairs together)
            if at_least and base + min(add_i) + min(add_j) >= n:
                continue
            if not at_least and base + max(add_i) + max(add_j) + 2 < n:
                continue
            for p in range(size * size):
                if ok[p]:
                    a, b = p // size, p % size
                    ta, tb = ti[a], tj[b]
                    count = base + add_i[a] + add_j[b]
                    k1a, k1b = key1[ta], key1[tb]
                    if k1a >= 0 and k1a == key2[tb]:
                        count += 1
                    if k1b >= 0 and k1b == key2[ta]:
                        count += 1
                    ok[p] = (count >= n) if at_least else (count < n)
        true = [p for p in range(size * size) if ok[p]]
        pick = true[int(gen.random() * len(true))]  # _choose_row's draw and index
        x[i], x[j] = ti[pick // size], tj[pick % size]

    def _swap_step_row(self, x: np.ndarray, name: str, gen: np.random.Generator) -> None:
        """:meth:`swap_step` of one chain (scalar draws: the same values as draws of shape (1, 1)), in plain
        Python (issue 27: :meth:`SceneCheck.feasible_list`, the same booleans as ``feasible``)."""
        size, stride = len(FIELD_DOMAIN[name]), FIELD_STRIDE[name]
        a = int(gen.integers(size))
        b = (a + int(gen.integers(1, size))) % size
        value = _FIELD_VALUE_LISTS[name]
        xs = x.tolist()
        if name == "region":
            regions = (1 << len(domain.REGIONS)) - 1  # every object
        else:
            regions = int(gen.integers(1, 1 << len(domain.REGIONS)))
        y = []
        for t in xs:
            v = value[t]
            if (regions >> _TYPE_REGION_LIST[t]) & 1 and (v == a or v == b):
                t += ((b if v == a else a) - v) * stride
            y.append(t)
        allowed = self._allowed_list
        if all(allowed[t] for t in y) and self.check.for_field(name).feasible_list(y):  # only `name` changed
            x[:] = y

    @property
    def batch(self) -> BatchSteps:
        """The batch steps' tables (built on first use: a rejection sampler never needs them)."""
        if self._batch is None:
            self._batch = BatchSteps(self.check, self.allowed)
        return self._batch

    def object_step(self, X: np.ndarray, i: int, gen: np.random.Generator) -> None:
        """Redraw object i of every chain uniformly among the types that keep its scene complete."""
        ok = self.batch.object_replacements(X.take(_without(X.shape[1])[i], axis=1))  # (P, M + 1)
        X[:, i] = self.allowed.take(_choose(ok, gen))  # never empty: X[:, i] itself is feasible

    def field_step(self, X: np.ndarray, i: int, j: int, name: str, gen: np.random.Generator) -> None:
        """Redraw field ``name`` of objects i and j together (all value pairs are candidates)."""
        ti, tj, ok = self.batch.pair_replacements(X, i, j, name)  # (size, P), (size, P), (size^2, P)
        pick = _choose(np.ascontiguousarray(ok.T), gen)
        size = ti.shape[0]
        rows = np.arange(X.shape[0])
        X[:, i], X[:, j] = ti[pick // size, rows], tj[pick % size, rows]

    def swap_step(self, X: np.ndarray, name: str, gen: np.random.Generator) -> None:
        """Metropolis move: exchange two values a, b of field ``name`` in every object of a random
        non-empty set of regions (all objects for the region field itself), kept when the result is a
        complete scene. The proposal is an involution drawn independently of the state, hence symmetric.

        It changes *which* value several objects share at once ("the pairs across regions 0 and 1
        share gray" -> "... share red"), which no one- or two-object step can do when three objects
        hold the pairs.
        """
        P = X.shape[0]
        size, stride = len(FIELD_DOMAIN[name]), FIELD_STRIDE[name]
        a = gen.integers(size, size=(P, 1))  # every chain draws its own proposal
        b = (a + gen.integers(1, size, size=(P, 1))) % size
        if name == "region":
            regions = (1 << len(domain.REGIONS)) - 1  # every object
        else:
            regions = gen.integers(1, 1 << len(domain.REGIONS), size=(P, 1))
        # the swapped types read from a table (issue 27: one take instead of a dozen (P, N) operations)
        Y = swap_table(name).take((((a * size + b) << len(domain.REGIONS)) + regions) * NUM_TYPES + X)
        ok = self.batch.swap_feasible(Y, name)  # only field `name` changed
        np.copyto(X, Y, where=ok[:, None])


def counted_fields(constraints) -> tuple[str, ...]:
    """The region and every attribute a counting constraint (templates 6-10) mentions, in
    :data:`TYPE_FIELDS` order; empty when there is no counting constraint."""
    named = {c.params[k] for c in constraints if c.template in COUNTING_TEMPLATES for k in ("p1", "p2")
             if k in c.params}
    if not named:
        return ()
    return tuple(f for f in TYPE_FIELDS if f in named or f == "region")


def _choose(ok: np.ndarray, gen: np.random.Generator) -> np.ndarray:
    """Per row of the (P, K) bool array, the index of a uniformly chosen True entry: the r-th True entry of
    row p, r = floor(u_p x count_p) (every row has one; issue 27: read from the True entries' flat indices
    instead of a cumulative sum over every entry, the rows' counts from where their entries start among them;
    the same indices as ``tests/sampler_references.py``'s ``choose_reference``)."""
    P, K = ok.shape
    true = np.flatnonzero(ok)
    bounds = _row_bounds(P, K)
    starts = np.searchsorted(true, bounds)  # row p's True entries: true[starts[p]:starts[p + 1]]
    counts = starts[1:] - starts[:-1]
    r = (gen.random(P) * counts).astype(np.int64)
    return true[starts[:-1] + r] - bounds[:-1]


@functools.lru_cache(maxsize=None)
def _row_bounds(P: int, K: int) -> np.ndarray:
    """0, K, 2K, ..., PK: where the rows of a (P, K) array start in its flat indices (read only)."""
    bounds = np.arange(P + 1) * K
    bounds.flags.writeable = False
    return bounds


def _choose_row(ok: np.ndarray, gen: np.random.Generator) -> int:
    """:func:`_choose` of one row: the index of a uniformly chosen True entry of ``ok`` (M,) (the same
    draw, ``gen.random()``, and the same index as ``_choose`` on ``ok[None]``)."""
    true = np.flatnonzero(ok)
    return int(true[int(gen.random() * len(true))])


@functools.lru_cache(maxsize=None)
def _without(N: int) -> list[np.ndarray]:
    """``_without(N)[i]``: the indices 0..N-1 without i (the other objects of a one-chain object step)."""
    return [np.delete(np.arange(N), i) for i in range(N)]


#: ``FIELD_VALUE`` as lists, and the region of every type (the one-chain steps' plain-Python tables).
_FIELD_VALUE_LISTS: dict[str, list[int]] = {f: v.tolist() for f, v in FIELD_VALUE.items()}
_TYPE_REGION_LIST: list[int] = TYPE_REGION.tolist()
#: ``_ALTERNATIVE_LISTS[f][t]``: type t with each value of field f, by value (the one-chain field step's candidates).
_ALTERNATIVE_LISTS: dict[str, list[list[int]]] = {
    f: (np.arange(NUM_TYPES)[:, None] + (np.arange(len(FIELD_DOMAIN[f]))[None, :] - v[:, None]) * FIELD_STRIDE[f])
    .tolist()
    for f, v in FIELD_VALUE.items()}

#: ``_VALUE_PAIRS[size]``: every value pair (vi, vj) of a field with ``size`` values, in the field step's order.
_VALUE_PAIRS = {size: np.divmod(np.arange(size * size), size) for size in {len(d) for d in FIELD_DOMAIN.values()}}
