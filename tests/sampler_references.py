"""The scene sampler's code before issue 27's second and third rounds, kept here (not in the library) as the
references that the faster forms are tested equal to: the same booleans, indices and random draws."""

from __future__ import annotations

import numpy as np

from clevr_poc import domain
from clevr_poc.generation.object_types import (
    FIELD_DOMAIN, FIELD_STRIDE, FIELD_VALUE, NUM_REGIONS, REGION_CAPACITY, TYPE_REGION,
)
from clevr_poc.generation.scene_check import SceneCheck, _region_counts
from clevr_poc.generation.stratified_proposal import StratifiedProposal


def object_replacements_reference(check: SceneCheck, others: np.ndarray, candidates: np.ndarray) -> np.ndarray:
    """:meth:`SceneCheck.object_replacements` counting the pairs of every candidate (before the second round)."""
    taken = check._taken(others)
    ok = ~taken[:, candidates // NUM_REGIONS]
    occupancy = _region_counts(TYPE_REGION[others])
    ok &= occupancy[:, TYPE_REGION[candidates]] < REGION_CAPACITY
    if len(check.objects):
        base = check._flag[:, others].sum(axis=-1)
        count = base[:, :, None] + check._flag[:, candidates][:, None, :]
        ok &= (count == check._flag_n[:, None, None]).all(axis=0)
    if len(check.pairs):
        base, count1, count2 = check._pair_base(others)
        key1, key2 = check._key1[:, candidates], check._key2[:, candidates]            # (Cp, M), -1..7
        c, p = np.arange(len(check.pairs))[:, None, None], np.arange(others.shape[0])[None, :, None]
        count = base[:, :, None] + count2[c, p, key1[:, None, :]] + count1[c, p, key2[:, None, :]]
        ok &= check._pairs_ok(count)
    return ok


def pair_replacements_reference(check: SceneCheck, others: np.ndarray, ti: np.ndarray, tj: np.ndarray) -> np.ndarray:
    """:meth:`SceneCheck.pair_replacements` with three-array fancy indexing (before the third round)."""
    P = others.shape[0]
    ok = check._pair_replacements_unpaired(others, ti, tj)
    if len(check.pairs):
        base, count1, count2 = check._pair_base(others)
        k1i, k2i, k1j, k2j = check._key1[:, ti], check._key2[:, ti], check._key1[:, tj], check._key2[:, tj]
        c, p = np.arange(len(check.pairs))[:, None, None], np.arange(P)[None, :, None]
        count = (base[:, :, None] + count2[c, p, k1i] + count1[c, p, k2i] + count2[c, p, k1j]
                 + count1[c, p, k2j] + ((k1i == k2j) & (k1i >= 0)) + ((k1j == k2i) & (k1j >= 0)))
        ok &= check._pairs_ok(count)
    return ok


def draw_reference(proposal: StratifiedProposal, gen: np.random.Generator, size: int) -> np.ndarray:
    """:meth:`StratifiedProposal.draw` with one masked assignment per option table (before the third round)."""
    N = proposal.num_objects
    pick = np.minimum(np.searchsorted(proposal.occupancy_cdf, gen.random(size), side="right"),
                      len(proposal.occupancy_cdf) - 1)
    occupancy = proposal.occupancies[pick]
    cells = np.full((size, REGION_CAPACITY * len(domain.REGIONS)), -1, dtype=np.int64)
    for r, options in enumerate(proposal.options):
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
    pos = (gen.random((size, N)) * proposal.cell_size[cells]).astype(np.int64)
    return proposal.flat_types[proposal.cell_offset[cells] + pos]


def choose_reference(ok: np.ndarray, gen: np.random.Generator) -> np.ndarray:
    """``gibbs_kernel._choose`` by a cumulative sum (before the third round)."""
    counts = ok.sum(axis=1)
    r = (gen.random(ok.shape[0]) * counts).astype(np.int64)
    return (np.cumsum(ok, axis=1) <= r[:, None]).sum(axis=1)


def sweeps_batch_reference(kernel, X: np.ndarray, gen: np.random.Generator, count: int) -> int:
    """``GibbsKernel._sweeps_batch`` with the steps of before issue 27's fourth round (helper ``gb``): the
    ``SceneCheck`` batch checks (``object_replacements``, ``for_field(name).pair_replacements``, ``feasible``)
    on (P, ...) arrays, and ``_choose`` of the cumulative sum."""
    P, N = X.shape
    check, allowed, fields = kernel.check, kernel.allowed, kernel.fields
    mask = np.zeros(768, dtype=bool)
    mask[allowed] = True
    rows = np.arange(P)
    steps = 0
    for _ in range(count):
        for i in gen.permutation(N):
            ok = check.object_replacements(np.delete(X, i, axis=1), allowed)
            X[:, i] = allowed[choose_reference(ok, gen)]
        steps += N
        if N > 1 and fields:
            for _ in range(N):
                i, j = gen.choice(N, size=2, replace=False)
                name = fields[int(gen.integers(len(fields)))]
                size, stride = len(FIELD_DOMAIN[name]), FIELD_STRIDE[name]
                vi, vj = np.divmod(np.arange(size * size), size)
                value = FIELD_VALUE[name]
                ti = X[:, i:i + 1] + (vi[None, :] - value[X[:, i:i + 1]]) * stride
                tj = X[:, j:j + 1] + (vj[None, :] - value[X[:, j:j + 1]]) * stride
                others = np.delete(X, [i, j], axis=1)
                ok = mask[ti] & mask[tj] & check.for_field(name).pair_replacements(others, ti, tj)
                pick = choose_reference(ok, gen)
                X[:, i], X[:, j] = ti[rows, pick], tj[rows, pick]
            for _ in range(N):
                name = fields[int(gen.integers(len(fields)))]
                size, stride = len(FIELD_DOMAIN[name]), FIELD_STRIDE[name]
                a = gen.integers(size, size=(P, 1))
                b = (a + gen.integers(1, size, size=(P, 1))) % size
                value = FIELD_VALUE[name][X]
                if name == "region":
                    chosen = np.ones(X.shape, dtype=bool)
                else:
                    regions = gen.integers(1, 1 << len(domain.REGIONS), size=(P, 1))
                    chosen = ((regions >> TYPE_REGION[X]) & 1).astype(bool)
                swapped = np.where(value == a, b, np.where(value == b, a, value))
                Y = X + np.where(chosen, swapped - value, 0) * stride
                ok = mask[Y].all(axis=1)
                ok[ok] = check.feasible(Y[ok])  # every counting constraint, not only those of `name`
                X[ok] = Y[ok]
            steps += 2 * N
    return steps
