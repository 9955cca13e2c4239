"""Exact draws of proposals for the rejection sampler: N object types, uniform under the region capacity
and the exactly-N constraints (template 6); see :class:`StratifiedProposal`."""

from __future__ import annotations

import math
from itertools import combinations_with_replacement, product
from typing import Iterator

import numpy as np

from clevr_poc import domain
from clevr_poc.generation.object_types import REGION_CAPACITY, TYPE_REGION
from clevr_poc.generation.scene_check import ObjectCount


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
        signature = TYPE_REGION[allowed].copy()
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
        # the (region, k >= 1) option tables in draw order, stacked (issue 27: one gather instead of a masked
        # assignment per table): block b holds rows[_block_start[b]:_block_start[b + 1]]; _block_of[r, k] = b or -1
        self._block_of = np.full((len(domain.REGIONS), REGION_CAPACITY + 1), -1, dtype=np.int64)
        self._block_cdf: list[np.ndarray] = []
        block_rows, block_start, block_last = [], [0], []
        for r, options in enumerate(self.options):
            for k, (rows, cdf) in options.items():
                if k == 0:
                    continue
                self._block_of[r, k] = len(self._block_cdf)
                self._block_cdf.append(cdf)
                block_rows.append(rows[:, :REGION_CAPACITY])
                block_start.append(block_start[-1] + len(rows))
                block_last.append(len(cdf) - 1)
        self._block_rows = (np.concatenate(block_rows) if block_rows
                            else np.zeros((0, REGION_CAPACITY), dtype=np.int64))
        self._block_start = np.array(block_start, dtype=np.int64)
        self._block_last = np.array(block_last, dtype=np.int64)

    @property
    def empty(self) -> bool:
        """True when no scene respects capacity and the exactly-N constraints with the allowed types."""
        return len(self.occupancies) == 0

    def draw(self, gen: np.random.Generator, size: int) -> np.ndarray:
        """``size`` proposals, type ids of shape (size, N).

        Draws from ``gen``, in this order: ``size`` uniforms (the region occupancy of every proposal);
        for every (region, k >= 1) option table in turn, one uniform per proposal with k objects in that
        region (the region's cells); ``size * N`` uniforms (the order of the cells over the object ids);
        ``size * N`` uniforms (the type within each cell). Consecutive draws of doubles are one stream,
        so the tables' uniforms are taken in one call (the same values as ``draw_reference`` in ``tests/sampler_references.py``, which
        draws table by table; ``tests/test_scene_check_rows.py``)."""
        return next(self.draw_chunks(gen, size, size))

    def draw_chunks(self, gen: np.random.Generator, size: int, chunk: int) -> Iterator[np.ndarray]:
        """:meth:`draw` of ``size`` proposals, built ``chunk`` rows at a time: every uniform is drawn from
        ``gen`` before the first chunk (so ``gen`` ends where :meth:`draw` leaves it), the proposals of a
        chunk only when it is asked for. A rejection sampler that stops at the first accepted proposal
        builds (and checks) only the chunks up to it. Yields (min(chunk, rest), N) arrays."""
        N = self.num_objects
        last = len(self.occupancy_cdf) - 1
        pick = self.occupancy_cdf.searchsorted(gen.random(size), side="right")
        occupancy = self.occupancies[np.minimum(pick, last, out=pick)]          # (size, 4)
        block = self._block_of[np.arange(len(domain.REGIONS)), occupancy].T.ravel()  # (4 * size,): region-major
        element = np.flatnonzero(block >= 0)
        # table order, then proposal order (a stable sort of small ints: radix sort)
        element = element[np.argsort(block[element].astype(np.int16), kind="stable")]
        block = block[element]
        u = gen.random(len(element))
        bounds = np.searchsorted(block, np.arange(len(self._block_cdf) + 1))
        chosen = np.empty(len(element), dtype=np.int64)
        for b, cdf in enumerate(self._block_cdf):
            lo, hi = bounds[b], bounds[b + 1]
            if hi > lo:
                chosen[lo:hi] = cdf.searchsorted(u[lo:hi], side="right")
        np.minimum(chosen, self._block_last[block], out=chosen)
        cells = np.full((len(domain.REGIONS) * size, REGION_CAPACITY), -1, dtype=np.int64)
        region, proposal = np.divmod(element, size)
        cells[proposal * len(domain.REGIONS) + region] = self._block_rows[self._block_start[block] + chosen]
        cells = cells.reshape(size, -1)
        order_u = gen.random((size, N))
        pos_u = gen.random((size, N))
        for lo in range(0, size, chunk):
            hi = min(size, lo + chunk)
            part = np.sort(cells[lo:hi], axis=1)[:, cells.shape[1] - N:]  # the N real cells of every row
            part = part[np.arange(hi - lo)[:, None], np.argsort(order_u[lo:hi], axis=1)]
            pos = (pos_u[lo:hi] * self.cell_size[part]).astype(np.int64)
            yield self.flat_types[self.cell_offset[part] + pos]



def _multisets(items: list, max_size: int) -> Iterator[tuple]:
    """Every multiset of at most ``max_size`` elements of ``items``, as sorted tuples (the empty one too)."""
    for k in range(max_size + 1):
        yield from combinations_with_replacement(items, k)


def _occupancies(total: int, choices: list[list[int]]) -> Iterator[tuple[int, ...]]:
    """Tuples (k_0, .., k_3), k_r in choices[r], summing to ``total``."""
    for ks in product(*choices):
        if sum(ks) == total:
            yield ks
