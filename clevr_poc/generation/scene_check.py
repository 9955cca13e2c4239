"""Vectorised checks of scene graphs given as object type ids: distinct objects, region capacity and the
counting constraints (templates 6-10, written from ``asp/templates/06..10``); the one-object templates
only forbid types (:func:`clevr_poc.generation.scene_programs.allowed_types`).

``tests/test_scenes.py`` checks these against clingo on random scenes in both directions.

Issue 27 (helper ``ss``): :meth:`SceneCheck.feasible_list` checks one scene in plain Python (about 5 us; the
rejection sampler's first proposals); the object replacements test the region's capacity and the pair counts
per distinct key column, the pair counts with one signed comparison (37 -> 26 us per one-scene call); the pair
counts of :meth:`SceneCheck.feasible` come from precomputed key columns and a per-type diagonal (120 -> 92 us for
512 scenes and 4 constraints). Same booleans (``tests/test_scene_check_rows.py``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from clevr_poc import domain
from clevr_poc.environments.templates import Constraint
from clevr_poc.errors import FormatError
from clevr_poc.generation.object_types import (
    COUNTING_TEMPLATES, FIELD_VALUE, NUM_REGIONS, NUM_TYPES, REGION_CAPACITY, TYPE_REGION, UNARY_TEMPLATES,
    VALUE_INDEX,
)


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
        flag = (TYPE_REGION == p["r"]) & (FIELD_VALUE[p["p1"]] == VALUE_INDEX[p["p1"]][p["v1"]])
        return ObjectCount(flag, int(p["n"]), int(p["r"]))
    value = FIELD_VALUE[p["p1"]]
    qualified = np.ones(NUM_TYPES, dtype=bool)
    if "p2" in p:
        qualified = FIELD_VALUE[p["p2"]] == VALUE_INDEX[p["p2"]][p["v2"]]
    key1 = np.where((TYPE_REGION == p["r1"]) & qualified, value, -1)
    key2 = np.where((TYPE_REGION == p["r2"]) & qualified, value, -1)
    return PairCount(key1, key2, int(p["n"]), c.template.startswith("at_least"))


_REGION_IDS = np.arange(len(domain.REGIONS))
_MAX_VALUES = max(len(v) for v in domain.DOMAINS.values())
_VALUE_IDS = np.arange(_MAX_VALUES)


class SceneCheck:
    """Vectorised check of scenes given as type ids: distinct objects, region capacity, templates 6-10.

    The one-object templates are *not* checked here: callers build scenes from allowed types only.
    Besides whole scenes (:meth:`feasible`), it checks incremental changes of P scenes at once: one object
    replaced (:meth:`object_replacements`) or two (:meth:`pair_replacements`), for any candidates and any
    scenes. The Gibbs kernel's steps, which start from complete scenes and try the allowed types or one field's
    values, use the faster :class:`~.gibbs_batch.BatchSteps` (issue 27, helper ``gb``), which the tests compare
    with these.

    Raises:
        FormatError: a constraint's template is neither a one-object nor a counting template.
    """

    def __init__(self, constraints) -> None:
        self.objects: list[ObjectCount] = []
        self.pairs: list[PairCount] = []
        self._counting: list[Constraint] = []
        self._field_checks: dict[str, SceneCheck] = {}
        for c in constraints:
            if c.template in UNARY_TEMPLATES:
                continue
            if c.template not in COUNTING_TEMPLATES:
                raise FormatError("the scene sampler does not know this template", field="template",
                                  value=c.template)
            compiled = counting_constraint(c)
            self._counting.append(c)
            (self.objects if isinstance(compiled, ObjectCount) else self.pairs).append(compiled)
        # stacked forms: (C, 768) tables, (C,) parameters
        self._flag = np.array([c.flag for c in self.objects], dtype=bool).reshape(-1, NUM_TYPES)
        self._flag_n = np.array([c.n for c in self.objects], dtype=np.int64)
        self._key1 = np.array([c.key1 for c in self.pairs], dtype=np.int64).reshape(-1, NUM_TYPES)
        self._key2 = np.array([c.key2 for c in self.pairs], dtype=np.int64).reshape(-1, NUM_TYPES)
        self._pair_n = np.array([c.n for c in self.pairs], dtype=np.int64)
        self._key1_column = self._key1 % (_MAX_VALUES + 1)  # keys -1..7 as count columns 8, 0..7
        self._key2_column = self._key2 % (_MAX_VALUES + 1)
        # the one-scene checks index flat (Cp * 9,) counts: constraint c's columns start at 9c
        self._key1_flat = self._key1_column + (np.arange(len(self.pairs)) * (_MAX_VALUES + 1))[:, None]
        self._key2_flat = self._key2_column + (np.arange(len(self.pairs)) * (_MAX_VALUES + 1))[:, None]
        self._key1_valid = self._key1 >= 0
        #: (Cp, 768) int: 1 where a type's two keys pair it with itself (key1 == key2 >= 0: not a pair)
        self._pair_diagonal = ((self._key1 == self._key2) & self._key1_valid).astype(np.int64)
        self._at_least = np.array([c.at_least for c in self.pairs], dtype=bool)
        # "count >= n" (at least) and "count < n" (at most) as one test, sign x (count - n) + shift >= 0
        self._pair_sign = np.where(self._at_least, 1, -1)
        self._pair_shift = np.where(self._at_least, 0, -1) - self._pair_sign * self._pair_n
        self._candidate_cache: tuple | None = None
        # feasible's order of the pair constraints, by the share of rows they kept so far (1 seen, 1 kept to
        # start: no division by zero)
        self._pair_order = list(range(len(self.pairs)))
        self._pair_seen = np.ones(len(self.pairs))
        self._pair_kept = np.ones(len(self.pairs))
        self._pair_calls = 0
        self._row_cache: tuple | None = None
        self._list_tables: tuple | None = None

    def for_field(self, name: str) -> SceneCheck:
        """This check with only the counting constraints whose counts depend on field ``name`` (those that
        name it as ``p1`` or ``p2``; all of them for the region). Where a complete scene's objects change in
        that field only, the other constraints keep their counts, so they still hold: on such changes (the
        Gibbs sampler's field steps) this check gives the same answers with less work (issue 27)."""
        check = self._field_checks.get(name)
        if check is None:
            kept = [c for c in self._counting
                    if name == "region" or name in (c.params.get("p1"), c.params.get("p2"))]
            check = self._field_checks[name] = SceneCheck(kept)
        return check

    def feasible(self, X: np.ndarray) -> np.ndarray:
        """Rows of ``X`` (shape (B, N), type ids) that are complete scenes (bool, shape (B,)).

        Large batches check the counting constraints first, each on the rows that passed the previous
        ones, the pair constraints that passed the smallest share of rows so far first (issue 27; the order
        changes the work, not the answer); small batches check all constraints at once (fewer numpy calls).
        """
        B, N = X.shape
        if B < 64:
            return self._feasible_stacked(X)
        rows = np.arange(B)
        for k in self._pair_order:
            if not len(X):
                break
            c = self.pairs[k]
            count = self._pair_counts_of(k, X)
            keep = (count >= c.n) if c.at_least else (count < c.n)
            self._pair_seen[k] += len(X)
            X, rows = X[keep], rows[keep]
            self._pair_kept[k] += len(X)
        self._pair_calls += 1
        if self._pair_calls % 16 == 0 and len(self.pairs) > 1:
            self._pair_order = [int(k) for k in np.argsort(self._pair_kept / self._pair_seen, kind="stable")]
        for c in self.objects:
            keep = c.flag[X].sum(axis=1) == c.n
            X, rows = X[keep], rows[keep]
        region = TYPE_REGION[X]
        keep = np.ones(len(X), dtype=bool)
        for r in domain.REGIONS:
            keep &= (region == r).sum(axis=1) <= REGION_CAPACITY
        if N > 1:  # no two objects agree on all four attributes (the region does not count)
            S = np.sort(X // NUM_REGIONS, axis=1)
            keep &= (S[:, 1:] != S[:, :-1]).all(axis=1)
        ok = np.zeros(B, dtype=bool)
        ok[rows[keep]] = True
        return ok

    def _pair_counts_of(self, k: int, X: np.ndarray) -> np.ndarray:
        """``_pair_counts(key1[X], key2[X])`` of pair constraint k for scenes X (B, N): the same sums, from the
        precomputed key columns and the per-type diagonal (issue 27: no modulo, no (B, N) comparisons)."""
        B = len(X)
        width = _MAX_VALUES + 1
        offset = (np.arange(B) * width)[:, None]
        count1 = np.bincount((self._key1_column[k].take(X) + offset).ravel(), minlength=B * width)
        count2 = np.bincount((self._key2_column[k].take(X) + offset).ravel(), minlength=B * width)
        count1[_MAX_VALUES::width] = 0  # the -1 keys
        return (count1 * count2).reshape(B, width).sum(axis=1) - self._pair_diagonal[k].take(X).sum(axis=1)

    def _feasible_stacked(self, X: np.ndarray) -> np.ndarray:
        B, N = X.shape
        ok = (_region_counts(TYPE_REGION[X]) <= REGION_CAPACITY).all(axis=1)
        if N > 1:
            S = np.sort(X // NUM_REGIONS, axis=1)
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
        cached = self._candidate_cache
        if cached is None or cached[0] is not candidates:  # the Gibbs kernel passes one array
            cached = self._candidate_cache = self._candidate_tables(candidates)
        _, description, keys, inverse = cached
        ok = ~self._taken(others)[:, description]
        # per distinct key column (region, pair-count codes, one-object flags) of the candidates, then looked
        # up per candidate (issue 27: a few dozen key columns for hundreds of candidates; the region's
        # capacity too, since then)
        fits = ~(_region_counts(TYPE_REGION[others]) >= REGION_CAPACITY).take(keys[0], axis=1)  # (P, U)
        if len(self.pairs):
            base, count1, count2 = self._pair_base(others)
            # a candidate t adds count2[c, p, key1[c, t]] + count1[c, p, key2[c, t]] pairs (key -1: the 0 in
            # the last column). Constraint c holds when sign_c x (count - n_c) + shift_c >= 0 (at least:
            # sign 1, shift 0; at most, count < n: sign -1, shift -1), for each of the 9 x 9 key pairs
            sign = self._pair_sign[:, None, None]
            margin = (sign * base[:, :, None] + self._pair_shift[:, None, None]) + sign * count2  # (Cp, P, 9)
            holds = (margin[:, :, :, None] + sign[..., None] * count1[:, :, None, :] >= 0)    # (Cp, P, 9, 9)
            holds = holds.reshape(len(self.pairs), P, -1)
            for c in range(len(self.pairs)):
                fits &= holds[c].take(keys[1 + c], axis=1)
        if len(self.objects):
            need = self._flag_n[:, None] - self._flag[:, others].sum(axis=-1)  # (Co, P): what t must add
            fits &= (keys[1 + len(self.pairs):, None, :] == need[:, :, None]).all(axis=0)
        ok &= fits.take(inverse, axis=1)
        return ok

    def _candidate_tables(self, candidates: np.ndarray) -> tuple:
        """What :meth:`object_replacements` needs of the candidates: (candidates, descriptions (M,), the
        distinct key columns (1 + Cp + Co, U): the region, the 9 x 9 key-pair code of every pair constraint
        and the flag (0/1) of every one-object count, and each candidate's column (M,))."""
        codes = (self._key1[:, candidates] % (_MAX_VALUES + 1)) * (_MAX_VALUES + 1) \
            + self._key2[:, candidates] % (_MAX_VALUES + 1)                            # (Cp, M)
        keys = np.concatenate((TYPE_REGION[candidates][None], codes,
                               self._flag[:, candidates].astype(np.int64)))           # (1 + Cp + Co, M)
        keys, inverse = np.unique(keys, axis=1, return_inverse=True)
        return candidates, candidates // NUM_REGIONS, keys, inverse.reshape(-1)

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
        ok = self._pair_replacements_unpaired(others, ti, tj)
        if len(self.pairs):
            base, count1, count2 = self._pair_base(others)
            # keys as columns 0..8 of the (Cp, P, 9) counts (key -1 -> 8, the zero column), read through flat
            # indices (one take each instead of three-array fancy indexing; issue 27)
            width = _MAX_VALUES + 1
            k1i, k2i = self._key1_column[:, ti], self._key2_column[:, ti]  # (Cp, P, D)
            k1j, k2j = self._key1_column[:, tj], self._key2_column[:, tj]
            row = ((np.arange(len(self.pairs))[:, None] * P + np.arange(P)) * width)[:, :, None]
            flat1, flat2 = count1.ravel(), count2.ravel()
            count = (base[:, :, None] + flat2.take(row + k1i) + flat1.take(row + k2i) + flat2.take(row + k1j)
                     + flat1.take(row + k2j) + ((k1i == k2j) & (k1i != _MAX_VALUES))
                     + ((k1j == k2i) & (k1j != _MAX_VALUES)))
            ok &= self._pairs_ok(count)
        return ok

    def _pair_replacements_unpaired(self, others: np.ndarray, ti: np.ndarray, tj: np.ndarray) -> np.ndarray:
        """:meth:`pair_replacements` without the pair-counting constraints."""
        P = others.shape[0]
        rows = np.arange(P)[:, None]
        taken = self._taken(others)
        di, dj = ti // NUM_REGIONS, tj // NUM_REGIONS
        ok = ~taken[rows, di] & ~taken[rows, dj] & (di != dj)
        occupancy = _region_counts(TYPE_REGION[others])
        ri, rj = TYPE_REGION[ti], TYPE_REGION[tj]
        both = 1 + (ri == rj)
        ok &= (occupancy[rows, ri] + both <= REGION_CAPACITY) & (occupancy[rows, rj] + both <= REGION_CAPACITY)
        if len(self.objects):
            base = self._flag[:, others].sum(axis=-1)  # (Co, P)
            count = base[:, :, None] + self._flag[:, ti] + self._flag[:, tj]
            ok &= (count == self._flag_n[:, None, None]).all(axis=0)
        return ok

    # ------------------------------------------------------------------ one scene (P = 1)
    # The Gibbs sampler's single chains (one sample at a time) spent most of their time in numpy's
    # per-call overhead on (1, ...) arrays; these take one scene and give the same booleans as the
    # methods above on a batch of one (issue 27; ``tests/test_scene_check_rows.py``).
    def feasible_row(self, x: np.ndarray) -> bool:
        """:meth:`feasible` of one scene: ``x`` (N,) type ids."""
        N = len(x)
        if (np.bincount(TYPE_REGION[x], minlength=NUM_REGIONS) > REGION_CAPACITY).any():
            return False
        if N > 1 and len(set((x // NUM_REGIONS).tolist())) < N:
            return False
        if len(self.objects) and not (self._flag[:, x].sum(axis=1) == self._flag_n).all():
            return False
        if len(self.pairs):
            count = self._pair_base_row(x)[0]  # (Cp,)
            if not np.where(self._at_least, count >= self._pair_n, count < self._pair_n).all():
                return False
        return True

    def list_tables(self) -> tuple:
        """The plain-Python tables of :meth:`feasible_list` (and the Gibbs kernel's one-chain steps): the
        region of every type (list of 768 ints), ``(flag, n)`` of every one-object count (flag: list of 768
        bools) and ``(key1, key2, n, at_least)`` of every pair count (keys: lists of 768 ints, -1..7)."""
        if self._list_tables is None:
            self._list_tables = (TYPE_REGION.tolist(), [(c.flag.tolist(), c.n) for c in self.objects],
                                 [(c.key1.tolist(), c.key2.tolist(), c.n, c.at_least) for c in self.pairs])
        return self._list_tables

    def feasible_list(self, x: list[int]) -> bool:
        """:meth:`feasible` of one scene in plain Python: ``x`` a list of N type ids (no numpy call: about 5
        microseconds against 30-100 for a numpy batch; the rejection sampler's first proposals, issue 27)."""
        region, objects, pairs = self.list_tables()
        occupancy = [0] * NUM_REGIONS
        for t in x:
            occupancy[region[t]] += 1
        if max(occupancy) > REGION_CAPACITY:
            return False
        if len({t // NUM_REGIONS for t in x}) < len(x):
            return False
        for flag, n in objects:
            if sum(flag[t] for t in x) != n:
                return False
        for key1, key2, n, at_least in pairs:
            # ordered pairs i != j with key1[x_i] == key2[x_j] >= 0: per value, count1 x count2, less i == j
            count1: dict[int, int] = {}
            count = 0
            for t in x:
                k1 = key1[t]
                if k1 >= 0:
                    count1[k1] = count1.get(k1, 0) + 1
                    if key2[t] == k1:
                        count -= 1
            for t in x:
                count += count1.get(key2[t], 0)  # key -1 is never a key of count1
            if (count < n) if at_least else (count >= n):
                return False
        return True

    def object_replacements_row(self, others: np.ndarray, candidates: np.ndarray) -> np.ndarray:
        """:meth:`object_replacements` of one scene: ``others`` (N-1,), ``candidates`` (M,) -> (M,) bool.

        As :meth:`object_replacements`, per distinct key column (region, pair-count codes, flags) of the
        candidates, then looked up per candidate; the pair counts with one signed test (issue 27)."""
        cached = self._row_cache
        if cached is None or cached[0] is not candidates:  # the Gibbs kernel passes one array
            _, description, keys, inverse = self._candidate_tables(candidates)
            Cp = len(self.pairs)
            codes = keys[1:1 + Cp] + (np.arange(Cp) * (_MAX_VALUES + 1) ** 2)[:, None]  # (Cp, U) into (Cp*81,)
            cached = self._row_cache = (candidates, description, keys[0], keys[1 + Cp:], codes, inverse)
        _, description, region, flags, codes, inverse = cached
        taken = np.zeros(NUM_TYPES // NUM_REGIONS, dtype=bool)
        taken[others // NUM_REGIONS] = True
        ok = ~taken[description]
        full = np.bincount(TYPE_REGION.take(others), minlength=NUM_REGIONS) >= REGION_CAPACITY
        fits = ~full.take(region)                                     # (U,)
        if len(self.objects):
            need = self._flag_n - self._flag.take(others, axis=1).sum(axis=1)  # (Co,): what the candidate must add
            fits &= (flags == need[:, None]).all(axis=0)
        if len(self.pairs):
            base, count1, count2 = self._pair_base_row(others)  # (Cp,), (Cp * 9,), (Cp * 9,)
            width = _MAX_VALUES + 1
            # constraint c holds when sign_c x (count - n_c) + shift_c >= 0 (see __init__)
            sign = self._pair_sign[:, None]
            margin = (sign * base[:, None] + self._pair_shift[:, None]) + sign * count2.reshape(-1, width)  # (Cp, 9)
            holds = (margin[:, :, None] + (sign * count1.reshape(-1, width))[:, None, :] >= 0).ravel()
            fits &= holds.take(codes).all(axis=0)
        ok &= fits.take(inverse)
        return ok

    def pair_replacements_row(self, others: np.ndarray, ti: np.ndarray, tj: np.ndarray) -> np.ndarray:
        """:meth:`pair_replacements` of one scene: ``others`` (N-2,), ``ti``, ``tj`` (D,) -> (D,) bool."""
        taken = np.zeros(NUM_TYPES // NUM_REGIONS, dtype=bool)
        taken[others // NUM_REGIONS] = True
        di, dj = ti // NUM_REGIONS, tj // NUM_REGIONS
        ok = ~taken[di] & ~taken[dj] & (di != dj)
        occupancy = np.bincount(TYPE_REGION[others], minlength=NUM_REGIONS)
        ri, rj = TYPE_REGION[ti], TYPE_REGION[tj]
        both = 1 + (ri == rj)
        ok &= (occupancy[ri] + both <= REGION_CAPACITY) & (occupancy[rj] + both <= REGION_CAPACITY)
        if len(self.objects):
            base = self._flag[:, others].sum(axis=-1)  # (Co,)
            count = base[:, None] + self._flag[:, ti] + self._flag[:, tj]
            ok &= (count == self._flag_n[:, None]).all(axis=0)
        if len(self.pairs):
            base, count1, count2 = self._pair_base_row(others)
            k1i, k2i = self._key1_flat[:, ti], self._key2_flat[:, ti]  # (Cp, D)
            k1j, k2j = self._key1_flat[:, tj], self._key2_flat[:, tj]
            count = (base[:, None] + count2.take(k1i) + count1.take(k2i) + count2.take(k1j) + count1.take(k2j)
                     + ((k1i == k2j) & self._key1_valid[:, ti]) + ((k1j == k2i) & self._key1_valid[:, tj]))
            n = self._pair_n[:, None]
            ok &= np.where(self._at_least[:, None], count >= n, count < n).all(axis=0)
        return ok

    # ------------------------------------------------------------------ internals
    @staticmethod
    def _taken(others: np.ndarray) -> np.ndarray:
        taken = np.zeros((others.shape[0], NUM_TYPES // NUM_REGIONS), dtype=bool)
        taken[np.arange(others.shape[0])[:, None], others // NUM_REGIONS] = True
        return taken

    def _pair_base_row(self, others: np.ndarray):
        """:meth:`_pair_base` of one scene (``others``: (K,)): pair counts (Cp,) and the key counts of
        constraint c in entries 9c..9c+8 of two flat (Cp * 9,) arrays (entry 9c+8, key -1, is 0)."""
        width = _MAX_VALUES + 1
        k1, k2 = self._key1_flat.take(others, axis=1), self._key2_flat.take(others, axis=1)  # (Cp, K)
        count1 = np.bincount(k1.ravel(), minlength=len(self.pairs) * width)
        count2 = np.bincount(k2.ravel(), minlength=len(self.pairs) * width)
        count1[_MAX_VALUES::width] = 0
        count2[_MAX_VALUES::width] = 0
        base = (count1 * count2).reshape(-1, width).sum(axis=1) - self._pair_diagonal.take(others, axis=1).sum(axis=1)
        return base, count1, count2

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
    """(..., K) keys in -1..7 -> (..., 9) counts of each value 0..7, then a 0 (where key -1 points)
    (one bincount over all rows; issue 27)."""
    width = _MAX_VALUES + 1
    rows = keys.reshape(-1, keys.shape[-1])
    offset = (np.arange(len(rows)) * width)[:, None]
    counts = np.bincount((offset + rows % width).ravel(), minlength=len(rows) * width).reshape(len(rows), width)
    counts[:, _MAX_VALUES] = 0  # the -1 keys
    return counts.reshape(keys.shape[:-1] + (width,))


def _region_counts(regions: np.ndarray) -> np.ndarray:
    """(P, K) region ids -> (P, 4) counts."""
    return (regions[:, :, None] == _REGION_IDS).sum(axis=1)


def _pair_counts(k1: np.ndarray, k2: np.ndarray) -> np.ndarray:
    """Ordered pairs i != j with k1[:, i] == k2[:, j] >= 0, per row (k1, k2: (B, N), keys -1..7): the sum
    over values v of (count of v in k1) x (count of v in k2), less the pairs i == j (issue 27: counted with
    one bincount per side instead of comparing all (B, N, N) pairs; ``tests/test_scene_check_rows.py``)."""
    B = k1.shape[0]
    offset = (np.arange(B) * (_MAX_VALUES + 1))[:, None]  # key -1 counts in column 8, left out
    count1 = np.bincount((offset + k1 % (_MAX_VALUES + 1)).ravel(), minlength=B * (_MAX_VALUES + 1))
    count2 = np.bincount((offset + k2 % (_MAX_VALUES + 1)).ravel(), minlength=B * (_MAX_VALUES + 1))
    products = (count1 * count2).reshape(B, _MAX_VALUES + 1)[:, :_MAX_VALUES].sum(axis=1)
    return products - ((k1 == k2) & (k1 >= 0)).sum(axis=1)
