"""Exact draws of proposals for the rejection sampler: N object types, uniform under the region capacity
and the exactly-N constraints (template 6); see :class:`StratifiedProposal`.

Issue 27 (helper ``ss``): a batch's uniforms are drawn at once (:meth:`StratifiedProposal.draw_batch`) and its
proposals built on demand, one at a time in plain Python (:meth:`ProposalBatch.row`, for rejection samplers
that usually accept one of the first) or in numpy chunks (:meth:`ProposalBatch.chunks`, with the cells of every
(proposal, region) slot gathered in one call, 134 -> 49 us for 1,315 proposals); the same proposals as
:meth:`StratifiedProposal.draw` (``tests/test_scene_check_rows.py``).

Issue 27 (helper ``sp``): where every (region, k) table an occupancy draws from has a single option (all of
them in environments without exactly-N constraints), the table's uniform never matters, so the proposal's
cells follow from its occupancy (:attr:`StratifiedProposal._fixed_cells`): rows skip the bisections and the
tables' offsets, chunks the per-slot gather and the sort (the low-acceptance benchmark environment 0.79x CPU
per sample, the ones accepting their first rows 0.71-0.89x, with the scene sampler's other changes)."""

from __future__ import annotations

import bisect
import functools
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
        #: (4, occupancies) int16: the option table (block) of every region of every occupancy, -1 for none
        self._slot_block = np.ascontiguousarray(
            self._block_of[np.arange(len(domain.REGIONS)), self.occupancies].T.astype(np.int16))
        self._block_rows_padded = np.concatenate((self._block_rows, np.full((1, REGION_CAPACITY), -1, np.int64)))
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
        return self.draw_batch(gen, size).chunks(0, chunk)

    def draw_batch(self, gen: np.random.Generator, size: int) -> ProposalBatch:
        """The uniforms of :meth:`draw` of ``size`` proposals (all drawn from ``gen`` now, in :meth:`draw`'s
        order), as a :class:`ProposalBatch` that builds the proposals on demand: one at a time in plain
        Python (:meth:`ProposalBatch.row`) or in numpy chunks (:meth:`ProposalBatch.chunks`)."""
        pick = self.occupancy_cdf.searchsorted(gen.random(size), side="right")
        if self._clip_pick:  # the cdf ends below 1.0 (rounding): a uniform above it picks the last occupancy
            np.minimum(pick, len(self.occupancy_cdf) - 1, out=pick)
        # one (region, k >= 1) table uniform per region a proposal occupies, then 2 x size x N uniforms (one
        # stream of doubles: the same values as drawing them in three calls)
        uniforms = gen.random(int(self._occupied.take(pick).sum()) + 2 * size * self.num_objects)
        return ProposalBatch(self, pick, uniforms)

    @functools.cached_property
    def _clip_pick(self) -> bool:
        """Whether :meth:`draw_batch` must clip its occupancy indices: only when the cdf's last value is under
        1.0, as uniforms are below 1.0 (issue 27: one numpy call less per batch otherwise)."""
        return len(self.occupancy_cdf) == 0 or bool(self.occupancy_cdf[-1] < 1.0)

    @functools.cached_property
    def _occupied(self) -> np.ndarray:
        """Number of occupied regions of every occupancy (option tables a proposal draws from)."""
        return (self.occupancies > 0).sum(axis=1)

    @functools.cached_property
    def _row_tables(self) -> tuple:
        """Plain-Python copies of the tables :meth:`ProposalBatch.row` reads: per occupancy, its (block,
        region) pairs in region order; per block, its cdf, its last index and its rows of cells (without the
        -1 padding); the (occupancy, block) incidence matrix; cell sizes, offsets and the flat types."""
        regions = len(domain.REGIONS)
        blocks = self._block_of[np.arange(regions), self.occupancies]  # (options, 4)
        uses = [[int(b) for b in row if b >= 0] for row in blocks]
        incidence = np.zeros((len(self.occupancies), len(self._block_cdf)), dtype=np.int64)
        for o, row in enumerate(uses):
            incidence[o, row] = 1
        rows = [[[c for c in cells if c >= 0] for cells in
                 self._block_rows[self._block_start[b]:self._block_start[b + 1]].tolist()]
                for b in range(len(self._block_cdf))]
        return (uses, [c.tolist() for c in self._block_cdf], self._block_last.tolist(), rows, incidence,
                self.cell_size.tolist(), self.cell_offset.tolist(), self.flat_types.tolist(), self._fixed_cells)

    @functools.cached_property
    def _fixed_cells(self) -> list[list[int] | None]:
        """Per occupancy: its N cells in ascending order when every (region, k) table it draws from has a single
        option (then that table's uniform never matters: ``searchsorted`` is clipped to index 0), else None.
        Issue 27: so in most environments (without exactly-N constraints every region is one cell) a
        proposal's cells follow from its occupancy alone."""
        regions = len(domain.REGIONS)
        fixed: list[list[int] | None] = []
        for row in self._block_of[np.arange(regions), self.occupancies].tolist():
            blocks = [b for b in row if b >= 0]
            if all(len(self._block_cdf[b]) == 1 for b in blocks):
                fixed.append(sorted(c for b in blocks for c in self._block_rows[self._block_start[b]].tolist()
                                    if c >= 0))
            else:
                fixed.append(None)
        return fixed

    @functools.cached_property
    def _fixed_cell_array(self) -> np.ndarray | None:
        """:attr:`_fixed_cells` as an (occupancies, N) int64 array when every occupancy has fixed cells, else None."""
        if any(cells is None for cells in self._fixed_cells):
            return None
        return np.array(self._fixed_cells, dtype=np.int64).reshape(len(self._fixed_cells), self.num_objects)


class ProposalBatch:
    """The proposals of one :meth:`StratifiedProposal.draw_batch`, built on demand from its uniforms.

    :meth:`row` builds proposal k (k = 0, 1, ... in turn) in plain Python, about 10 microseconds instead
    of the 50-100 of a numpy batch of 32: a rejection sampler whose first proposals are usually accepted
    pays for one proposal, not the batch (issue 27). :meth:`chunks` builds the rest in numpy. Both give
    exactly the proposals of :meth:`StratifiedProposal.draw` (``tests/test_scene_check_rows.py``).
    """

    def __init__(self, proposal: StratifiedProposal, pick: np.ndarray, uniforms: np.ndarray) -> None:
        self.proposal = proposal
        self.size = len(pick)
        self.pick = pick                      # (size,) occupancy of every proposal
        self.uniforms = uniforms              # table uniforms (block, proposal order), then order, then pos
        self._tables = len(uniforms) - 2 * self.size * proposal.num_objects
        self._next_row = 0
        self._block_next: list[int] | None = None

    def row(self, k: int) -> list[int]:
        """Proposal ``k`` (type ids, a list of N ints); rows must be asked for in order 0, 1, 2, ..."""
        if k != self._next_row:
            raise ValueError(f"rows are built in order: asked for {k}, next is {self._next_row}")
        self._next_row += 1
        p = self.proposal
        uses, cdfs, lasts, block_rows, incidence, cell_size, cell_offset, flat_types, fixed = p._row_tables
        occupancy = self.pick.item(k)
        cells = fixed[occupancy]
        if cells is None:
            # the cells of the tables with several options from their uniforms (a table with one option: its row;
            # its uniform never matters, issue 27), the uniforms' positions counted per table
            if self._block_next is None:  # where every table's uniforms start (tables in order, proposals in order)
                counts = np.bincount(self.pick, minlength=len(incidence)) @ incidence
                self._block_next = (np.cumsum(counts) - counts).tolist()
            nxt = self._block_next
            cells = []
            for b in uses[occupancy]:
                if lasts[b]:
                    chosen = bisect.bisect_right(cdfs[b], float(self.uniforms[nxt[b]]))  # = searchsorted(side="right")
                    nxt[b] += 1
                    cells += block_rows[b][min(chosen, lasts[b])]
                else:
                    cells += block_rows[b][0]
            cells.sort()
        N = p.num_objects
        u = self.uniforms
        start = self._tables + k * N
        order_u = u[start:start + N].tolist()
        pos_u = u[start + self.size * N:start + self.size * N + N].tolist()
        if len(set(order_u)) < N:  # a tie (never seen): numpy's argsort decides
            order = np.argsort(u[start:start + N]).tolist()
        else:
            order = sorted(range(N), key=order_u.__getitem__)
        out = []
        for j, o in enumerate(order):
            c = cells[o]
            out.append(flat_types[cell_offset[c] + int(pos_u[j] * cell_size[c])])
        return out

    def chunks(self, first: int, chunk: int) -> Iterator[np.ndarray]:
        """Proposals ``first`` .. size-1, built ``chunk`` rows at a time in numpy: yields (min(chunk, rest), N)
        arrays (:meth:`StratifiedProposal.draw_chunks` is ``chunks(0, chunk)``)."""
        p, size, N = self.proposal, self.size, self.proposal.num_objects
        order_u = self.uniforms[self._tables:self._tables + size * N].reshape(size, N)
        pos_u = self.uniforms[self._tables + size * N:].reshape(size, N)
        fixed = p._fixed_cell_array
        if fixed is not None:  # every proposal's cells follow from its occupancy (issue 27: no table, no sort)
            for lo in range(first, size, chunk):
                hi = min(size, lo + chunk)
                part = fixed.take(self.pick[lo:hi], axis=0)
                part = part[np.arange(hi - lo)[:, None], np.argsort(order_u[lo:hi], axis=1)]
                pos = (pos_u[lo:hi] * p.cell_size[part]).astype(np.int64)
                yield p.flat_types[p.cell_offset[part] + pos]
            return
        block = p._slot_block.take(self.pick, axis=1).ravel()  # (4 * size,): region-major, -1 for no table
        # table order, then proposal order (a stable sort of small ints: radix sort); the -1 slots first
        element = np.argsort(block, kind="stable")[len(block) - self._tables:]
        block = block[element]
        u = self.uniforms[:self._tables]
        bounds = np.searchsorted(block, np.arange(len(p._block_cdf) + 1))
        chosen = np.zeros(len(element), dtype=np.int64)
        for b, cdf in enumerate(p._block_cdf):
            lo, hi = bounds[b], bounds[b + 1]
            if hi > lo and len(cdf) > 1:  # one option: index 0 whatever the uniform (the minimum below)
                chosen[lo:hi] = cdf.searchsorted(u[lo:hi], side="right")
        np.minimum(chosen, p._block_last[block], out=chosen)
        # every (proposal, region) slot's row of cells, the last row (all -1) for an empty region: one 1-D
        # scatter and one gather instead of a (slots, 3) fancy assignment (issue 27)
        region, proposal = np.divmod(element, size)
        slot_row = np.full(len(domain.REGIONS) * size, len(p._block_rows_padded) - 1, dtype=np.int64)
        slot_row[proposal * len(domain.REGIONS) + region] = p._block_start[block] + chosen
        cells = p._block_rows_padded.take(slot_row, axis=0).reshape(size, -1)
        for lo in range(first, size, chunk):
            hi = min(size, lo + chunk)
            part = np.sort(cells[lo:hi], axis=1)[:, cells.shape[1] - N:]  # the N real cells of every row
            part = part[np.arange(hi - lo)[:, None], np.argsort(order_u[lo:hi], axis=1)]
            pos = (pos_u[lo:hi] * p.cell_size[part]).astype(np.int64)
            yield p.flat_types[p.cell_offset[part] + pos]


def _multisets(items: list, max_size: int) -> Iterator[tuple]:
    """Every multiset of at most ``max_size`` elements of ``items``, as sorted tuples (the empty one too)."""
    for k in range(max_size + 1):
        yield from combinations_with_replacement(items, k)


def _occupancies(total: int, choices: list[list[int]]) -> Iterator[tuple[int, ...]]:
    """Tuples (k_0, .., k_3), k_r in choices[r], summing to ``total``."""
    for ks in product(*choices):
        if sum(ks) == total:
            yield ks
