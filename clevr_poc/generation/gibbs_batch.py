"""The Gibbs kernel's steps on P chains at once (:class:`BatchSteps`), from per-type count features: what
:meth:`~.scene_check.SceneCheck.object_replacements`, ``pair_replacements`` and ``feasible`` decide, with fewer
and smaller numpy operations.

Every chain's other objects are counted with one ``bincount`` over a table of per-type features (its
description or region, the key values of every pair-counting constraint, the one-object flags), into a
(W, P) array: the chains last, so that the steps' arrays are (..., P) and their inner loops run over the P
chains, not over 4 to 8 values. The candidates then read those counts:

- an object step tests each distinct key column of the allowed types (region, keys, flags: a few dozen for
  hundreds of types) and reads the result per candidate; the candidates that share an other object's
  description (at most 4 per object) are then set to False, where ``object_replacements`` gathered a
  (P, M) description table;
- a field step's candidates are the field's values of object i times those of object j, so their tests are
  built per value of each object ((size, P) arrays) and combined as outer products (size, size, P), in int16
  where they count pairs, where ``pair_replacements`` worked on (Cp, P, size^2) int64 arrays;
- a swap step's proposals come from a per-field table (:func:`swap_table`: one take).

Every state the kernel steps from is a complete scene, which the steps rely on (as ``SceneCheck.for_field``
does): where only field ``name`` changes, the constraints that do not mention it keep holding, the region
capacity holds unless the region changes (a region swap only exchanges two regions' counts), and the objects
stay distinct unless an attribute changes.

Issue 27 (helper ``gb``): the same booleans as the ``SceneCheck`` batch checks, so the same chains and the same
draws (``tests/test_scene_check_rows.py`` compares whole sweeps with the previous steps, kept in
``tests/sampler_references.py``; the pools of the benchmark's 20 environments of seeds 0 and 5 are equal);
the pool build's sweeps take 0.45x the CPU time (3.79 against 8.46 s for 4 builds of the 6 Gibbs environments
of seeds 0 and 5, the previous code in the same process, load 2.5-4).
"""

from __future__ import annotations

import functools

import numpy as np

from clevr_poc.generation.object_types import (
    FIELD_DOMAIN, FIELD_STRIDE, FIELD_VALUE, NUM_REGIONS, NUM_TYPES, REGION_CAPACITY, TYPE_REGION,
)
from clevr_poc.generation.scene_check import SceneCheck

_DESCRIPTIONS = NUM_TYPES // NUM_REGIONS
_KEYS = 8  # key values 0..7 of a pair-counting constraint (-1: none)
_TYPES = np.arange(NUM_TYPES)


class _Counts:
    """Per-type count features of some counting constraints (and, optionally, of the descriptions and
    regions): :meth:`counts` gives, per chain, a row of W counts laid out as

    ``[descriptions (192)] [regions (4)] key1 values (Cp x 8) | key2 values (Cp x 8) | diagonal (Cp) |
    flags (Co) | zero | spill``

    (the diagonal counts the objects whose two keys pair them with themselves; ``zero`` is never counted, the
    lookups of key -1 read it; ``spill`` takes the features a type does not have)."""

    def __init__(self, check: SceneCheck, *, descriptions: bool, regions: bool) -> None:
        Cp, Co = len(check.pairs), len(check.objects)
        self.Cp, self.Co = Cp, Co
        start = 0
        self.description = start if descriptions else -1
        start += _DESCRIPTIONS if descriptions else 0
        self.region = start if regions else -1
        start += NUM_REGIONS if regions else 0
        self.key1, self.key2 = start, start + _KEYS * Cp
        self.diagonal = start + 2 * _KEYS * Cp
        self.flag = self.diagonal + Cp
        self.zero = self.flag + Co
        spill = self.zero + 1
        self.width = spill + 1
        columns = []
        if descriptions:
            columns.append(_TYPES // NUM_REGIONS)
        if regions:
            columns.append(self.region + TYPE_REGION)
        offsets = np.arange(Cp)[:, None] * _KEYS
        key1, key2 = check._key1, check._key2                                    # (Cp, 768), -1..7
        columns.extend(np.where(key1 >= 0, self.key1 + offsets + key1, spill))
        columns.extend(np.where(key2 >= 0, self.key2 + offsets + key2, spill))
        columns.extend(np.where(check._pair_diagonal > 0, self.diagonal + np.arange(Cp)[:, None], spill))
        columns.extend(np.where(check._flag, self.flag + np.arange(Co)[:, None], spill))
        self.features = np.array(columns, dtype=np.int64).T.copy()             # (768, F)
        # the counts a candidate type t reads: count2 at key1[t] (the others it would pair with as X1) and
        # count1 at key2[t] (as X2); key -1 reads the zero column
        self.look2 = np.where(key1 >= 0, self.key2 + offsets + key1, self.zero)  # (Cp, 768)
        self.look1 = np.where(key2 >= 0, self.key1 + offsets + key2, self.zero)
        self.flag_n = check._flag_n
        # constraint c holds when sign_c x count >= threshold_c (at least n: 1, n; at most n - 1: -1, 1 - n)
        self.sign = np.where(check._at_least, 1, -1)
        self.threshold = np.where(check._at_least, check._pair_n, 1 - check._pair_n)
        self._offsets: dict[int, np.ndarray] = {}

    def counts(self, X: np.ndarray) -> np.ndarray:
        """(P, K) type ids -> (W, P) feature counts (one bincount; the chains last: the steps' arrays are
        (..., P), whose inner loops then run over the P chains)."""
        P = X.shape[0]
        chains = self._offsets.get(P)
        if chains is None:
            chains = self._offsets[P] = (np.arange(P)[:, None, None], self.features * P)
        flat = (chains[1].take(X, axis=0) + chains[0]).ravel()
        return np.bincount(flat, minlength=P * self.width).reshape(self.width, P)

    def margin(self, C: np.ndarray) -> np.ndarray:
        """sign_c x (pairs counted in C) - threshold_c, (Cp, P) (>= 0: constraint c holds)."""
        P, Cp = C.shape[1], self.Cp
        count1 = C[self.key1:self.key2].reshape(Cp, _KEYS, P)
        count2 = C[self.key2:self.diagonal].reshape(Cp, _KEYS, P)
        pairs = (count1 * count2).sum(axis=1) - C[self.diagonal:self.flag]
        return self.sign[:, None] * pairs - self.threshold[:, None]


class BatchSteps:
    """The batch steps of :class:`~.gibbs_kernel.GibbsKernel` for one environment: which candidate types (an
    object step) or candidate value pairs (a field step) keep each of P complete scenes complete, and which
    swapped scenes are complete (see the module docstring)."""

    def __init__(self, check: SceneCheck, allowed: np.ndarray) -> None:
        self.allowed = allowed
        self.allowed_mask = np.zeros(NUM_TYPES, dtype=bool)
        self.allowed_mask[allowed] = True
        full = self._full = _Counts(check, descriptions=False, regions=True)
        # the allowed types' distinct key columns (region, keys, flags), as in SceneCheck._candidate_tables
        keys = np.concatenate((TYPE_REGION[allowed][None], check._key1[:, allowed], check._key2[:, allowed],
                               check._flag[:, allowed].astype(np.int64)))
        keys, inverse = np.unique(keys, axis=1, return_inverse=True)
        M, U = len(allowed), keys.shape[1]
        # the candidates as M + 1 columns: the last one, never True, takes the exclusions of types not allowed
        self._unique_of = np.append(inverse.reshape(-1), U)                       # (M + 1,): its key column
        same = np.full((_DESCRIPTIONS, NUM_REGIONS), M)                          # the candidates of a description
        same[allowed // NUM_REGIONS, allowed % NUM_REGIONS] = np.arange(M)
        self._same_description = same[_TYPES // NUM_REGIONS]                      # (768, 4): those of t's
        Cp = full.Cp
        region, key1, key2, flags = keys[0], keys[1:1 + Cp], keys[1 + Cp:1 + 2 * Cp], keys[1 + 2 * Cp:]
        offsets = np.arange(Cp)[:, None] * _KEYS
        self._unique_region = full.region + region                                # (U,)
        self._unique_look = np.concatenate((                                      # (2 Cp, U)
            np.where(key1 >= 0, full.key2 + offsets + key1, full.zero),
            np.where(key2 >= 0, full.key1 + offsets + key2, full.zero)))
        self._unique_flags = flags[:, :, None]                                    # (Co, U, 1)
        self._per_P: dict[int, tuple] = {}
        self._check = check
        self._fields: dict[str, tuple] = {}

    # ------------------------------------------------------------------ object step
    def object_replacements(self, others: np.ndarray) -> np.ndarray:
        """(P, N-1) other objects -> (P, M + 1) bool: which allowed types complete each scene (the booleans of
        ``SceneCheck.object_replacements(others, allowed)``, and a last column of False).

        The key columns' tests run on (U, P) arrays (chains last), then are read per candidate, and the
        candidates that share an other object's description are set to False (at most 4 per object)."""
        full = self._full
        P = others.shape[0]
        per_P = self._per_P.get(P)
        if per_P is None:
            U1, M1 = len(self._unique_region) + 1, len(self._unique_of)
            per_P = self._per_P[P] = (np.arange(P)[:, None] * U1 + self._unique_of,
                                      (np.arange(P) * M1)[:, None, None], U1)
        C = full.counts(others)                                                   # (W, P)
        fits = np.zeros((per_P[2], P), dtype=bool)                                # (U + 1, P): the last never
        fits[:-1] = C.take(self._unique_region, axis=0) < REGION_CAPACITY
        if full.Cp:
            added = C.take(self._unique_look, axis=0)                             # (2 Cp, U, P)
            added = added[:full.Cp] + added[full.Cp:]
            fits[:-1] &= (added * full.sign[:, None, None] >= -full.margin(C)[:, None, :]).all(axis=0)
        if full.Co:
            need = full.flag_n[:, None] - C[full.flag:full.zero]                   # (Co, P)
            fits[:-1] &= (self._unique_flags == need[:, None, :]).all(axis=0)
        ok = fits.T.ravel().take(per_P[0])                                        # (P, M + 1)
        ok.ravel()[(self._same_description.take(others, axis=0) + per_P[1]).ravel()] = False
        return ok

    def object_replacements_row(self, others: np.ndarray) -> np.ndarray:
        """:meth:`object_replacements` of one chain: ``others`` (N-1,) -> (M + 1,) bool (the same tables, no
        per-chain offsets; about 20 numpy calls where ``SceneCheck.object_replacements_row`` made 40)."""
        full = self._full
        C = np.bincount(full.features.take(others, axis=0).ravel(), minlength=full.width)  # (W,)
        fits = np.zeros(len(self._unique_region) + 1, dtype=bool)                 # the last never
        fits[:-1] = C.take(self._unique_region) < REGION_CAPACITY
        if full.Cp:
            added = C.take(self._unique_look)                                     # (2 Cp, U)
            added = added[:full.Cp] + added[full.Cp:]
            fits[:-1] &= (added * full.sign[:, None] >= -full.margin(C[:, None])).all(axis=0)
        if full.Co:
            need = full.flag_n - C[full.flag:full.zero]                            # (Co,)
            fits[:-1] &= (self._unique_flags[:, :, 0] == need[:, None]).all(axis=0)
        ok = fits.take(self._unique_of)                                           # (M + 1,)
        ok[self._same_description.take(others, axis=0)] = False
        return ok

    # ------------------------------------------------------------------ field step
    def _field(self, name: str) -> tuple:
        """The tables of field ``name``'s steps: the count features of the constraints that mention it
        (``SceneCheck.for_field``), with the descriptions (an attribute changes) or the regions (the region
        changes); each type's alternatives (size, 768); the flags (Co, 768) and the keys (2 Cp, 768: key1 then key2;
        key -1 as -1 in key1 and -2 in key2, so that two missing keys never match) of those constraints; and per
        number of chains P, the chain ids and the flat count indices of every type's lookups (2 Cp, 768; see
        :meth:`pair_replacements`)."""
        tables = self._fields.get(name)
        if tables is None:
            check = self._check.for_field(name)
            region = name == "region"
            counts = _Counts(check, descriptions=not region, regions=region)
            size, stride = len(FIELD_DOMAIN[name]), FIELD_STRIDE[name]
            alternatives = _TYPES[None, :] + (np.arange(size)[:, None] - FIELD_VALUE[name][None, :]) * stride
            keys = np.concatenate((check._key1, np.where(check._key2 >= 0, check._key2, -2)))
            tables = self._fields[name] = (counts, alternatives, check._flag.astype(np.int8), keys, {})
        return tables

    def pair_replacements(self, X: np.ndarray, i: int, j: int, name: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Field ``name`` of objects i and j of every chain redrawn: the candidate types ti, tj (size, P) by
        value, and which value pairs (size^2, P; pair a x size + b: value a for i, b for j) keep the scene
        complete (the booleans of the allowed types' mask and ``for_field(name).pair_replacements``,
        transposed)."""
        fc, alternatives, flag, keys, per_P = self._field(name)
        ti, tj = alternatives.take(X[:, i], axis=1), alternatives.take(X[:, j], axis=1)  # (size, P)
        C = fc.counts(X.take(_without_pair(X.shape[1], i, j), axis=1))            # (W, P)
        size, P = ti.shape
        flat = C.ravel()
        chains = per_P.get(P)
        if chains is None:
            chains = per_P[P] = (np.arange(P), np.concatenate((fc.look2, fc.look1)) * P)
        single_i, single_j = self.allowed_mask[ti], self.allowed_mask[tj]
        if fc.description >= 0:  # an attribute: the new descriptions must be free and differ
            di, dj = ti // NUM_REGIONS, tj // NUM_REGIONS
            single_i &= flat.take(di * P + chains[0]) == 0  # the descriptions' counts: rows 0..191 of C
            single_j &= flat.take(dj * P + chains[0]) == 0
            ok = (single_i[:, None, :] & single_j[None, :, :]) & (di[:, None, :] != dj[None, :, :])
        else:  # the region: room for both
            ri, rj = TYPE_REGION[ti], TYPE_REGION[tj]
            occupied_i = flat.take((fc.region + ri) * P + chains[0])
            occupied_j = flat.take((fc.region + rj) * P + chains[0])
            single_i &= occupied_i < REGION_CAPACITY
            single_j &= occupied_j < REGION_CAPACITY
            ok = single_i[:, None, :] & single_j[None, :, :]
            ok &= (ri[:, None, :] != rj[None, :, :]) | (occupied_i < REGION_CAPACITY - 1)[:, None, :]
        if fc.Co:
            need = fc.flag_n[:, None] - C[fc.flag:fc.zero]                          # (Co, P)
            fi, fj = flag.take(ti, axis=1), flag.take(tj, axis=1)                   # (Co, size, P)
            ok &= (fi[:, :, None, :] + fj[:, None, :, :] == need[:, None, None, :]).all(axis=0)
        if fc.Cp:
            # the pairs with a candidate pair: count = base + what i adds with the others (count2 at its key1 +
            # count1 at its key2) + what j adds + the pairs i and j form together; sign x count >= threshold
            Cp = fc.Cp
            both = np.concatenate((ti, tj))                                         # (2 size, P)
            counted = flat.take(chains[1].take(both, axis=1) + chains[0])          # (2 Cp, 2 size, P)
            added = ((counted[:Cp] + counted[Cp:]) * fc.sign[:, None, None]).astype(np.int16)  # sign x (Cp, 2 size, P)
            alpha = added[:, :size] + fc.margin(C).astype(np.int16)[:, None, :]    # i's, with the others' margin
            keys = keys.take(both, axis=1)                                          # (2 Cp, 2 size, P): key1, key2
            k1i, k2i, k1j, k2j = keys[:Cp, :size], keys[Cp:, :size], keys[:Cp, size:], keys[Cp:, size:]
            together = ((k1i[:, :, None, :] == k2j[:, None, :, :]).view(np.int8)
                        + (k2i[:, :, None, :] == k1j[:, None, :, :]).view(np.int8))  # (Cp, size, size, P)
            together *= fc.sign.astype(np.int8)[:, None, None, None]
            total = alpha[:, :, None, :] + added[:, None, size:, :]
            total += together
            ok &= (total >= 0).all(axis=0)
        return ti, tj, ok.reshape(size * size, P)

    # ------------------------------------------------------------------ swap step
    def swap_feasible(self, Y: np.ndarray, name: str) -> np.ndarray:
        """(P, N) scenes that differ from complete ones in field ``name`` only (two of its values exchanged)
        -> (P,) bool: complete (allowed types, distinct objects, region capacity, counting constraints)."""
        ok = self.allowed_mask[Y].all(axis=1)
        fc = self._field(name)[0]
        if fc.description < 0 and not fc.Cp and not fc.Co:
            return ok
        C = fc.counts(Y)
        if fc.description >= 0:
            ok &= (C[:_DESCRIPTIONS] <= 1).all(axis=0)
        # the regions: a swap of the region exchanges two regions' objects (the same counts); of an attribute,
        # it changes no region
        if fc.Co:
            ok &= (C[fc.flag:fc.zero] == fc.flag_n[:, None]).all(axis=0)
        if fc.Cp:
            ok &= (fc.margin(C) >= 0).all(axis=0)
        return ok


@functools.lru_cache(maxsize=None)
def swap_table(name: str) -> np.ndarray:
    """The swap step's proposals: type t with values a and b of field ``name`` exchanged where t's region is in
    the set ``regions`` (bit r: region r), at ``((a x size + b) x 16 + regions) x 768 + t`` (int16; 1.5 MB for
    the color, built once per process in 5-10 ms)."""
    size, stride = len(FIELD_DOMAIN[name]), FIELD_STRIDE[name]
    a, b = np.arange(size)[:, None, None], np.arange(size)[None, :, None]
    value = FIELD_VALUE[name]
    swapped = np.where(value == a, b, np.where(value == b, a, value))               # (size, size, 768)
    swapped = (_TYPES + (swapped - value) * stride).astype(np.int16)
    chosen = ((np.arange(1 << NUM_REGIONS)[:, None] >> TYPE_REGION) & 1).astype(bool)  # (16, 768)
    table = np.where(chosen, swapped[:, :, None, :], _TYPES.astype(np.int16)).ravel()
    table.flags.writeable = False
    return table


@functools.lru_cache(maxsize=None)
def _without_pair(N: int, i: int, j: int) -> np.ndarray:
    """The indices 0..N-1 without i and j (the other objects of a field step)."""
    return np.delete(np.arange(N), [i, j])
