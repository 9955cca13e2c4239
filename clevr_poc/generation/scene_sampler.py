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
    Proposals are drawn and checked in numpy batches (about 1-2 microseconds each); where most are
    accepted (calibrated rate at least 5 %), a batch's proposals are first built and checked one at a
    time in plain Python (:meth:`~.stratified_proposal.ProposalBatch.row`,
    :meth:`~.scene_check.SceneCheck.feasible_list`: the same proposals and booleans, about 15 microseconds
    each, where a numpy batch of 32 cost 100-200).
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

Every returned scene is (by default) checked against the environment program by
:class:`~clevr_poc.generation.scene_rules.SceneRules`, a literal Python reading of the background and the
templates written independently of the sampler's vectorised check (``verify="clingo"``: one clingo solve
with the scene as assumptions, ~0.2 ms, the check before issue 27), so the counting code (templates 6-10,
written from ``asp/templates/06..10``, :mod:`~clevr_poc.generation.scene_check`) can never let an invalid
scene through; ``tests/test_scenes.py`` also checks it against clingo on random scenes in both directions,
and ``tests/test_scene_rules.py`` the rules.

Determinism: :meth:`SceneSampler.sample` draws everything from its ``random.Random`` argument (and
from state fixed at construction, which is itself seeded), so the same rng state gives the same scene.

Speed (issue 27, helper ``ss``): the plain-Python first proposals above, the Gibbs kernel's one-chain field
and swap steps in plain Python, fewer numpy calls in the proposal chunks and the checks, and scenes built from
per-type templates (:func:`~.object_types.scene_from_types`) give the same scenes and leave ``rng`` in the same
state as before, with 0.58x the CPU time per :meth:`SceneSampler.sample` (1.24 against 2.15 CPU s for the
benchmark's 4,369 samples of its 10 environments; measured against ``7842d5f`` in one process, load 3.4-3.7;
rejection samplers with high acceptance 2-3x faster, Gibbs samplers 1.8x, the low-acceptance one 1.3x).
Helper ``gb``: the Gibbs pool's sweeps from per-type count features (:mod:`~.gibbs_batch`, 0.45x the CPU time)
and its clingo starts without a thread hand-off per model (0.65x): the benchmark's environment set-up takes
0.69-0.72x the CPU time (1.17-1.24 against 1.68-1.73 s for its 10 environments, 0.50x / 0.56x for the two
Gibbs pools; the same pools); a one-chain Gibbs sample 0.83x (docs/benchmarks.md).
Helper ``sp``: a sample's type ids stay a list from the accepted proposal through the check
(:meth:`~.scene_rules.SceneRules.holds_ids`) to the scene; proposals whose (region, k) tables have one option
each take their cells from the occupancy alone (:attr:`~.stratified_proposal.StratifiedProposal._fixed_cells`);
the same scenes and draws, with 0.80x the CPU time of the rejection samplers (257 against 322 ms for the
1,813 rejection samples of the benchmark's first 1,000 examples, each call replayed through both versions,
minimum of 5, load 2.5-3; per environment 0.71-0.89x, the low-acceptance one 0.79x).
"""


from __future__ import annotations

import random
from dataclasses import dataclass

import numpy as np

from clevr_poc.environments.environment import Environment
from clevr_poc.errors import ClevrPocError, FormatError, UnsatisfiableError
from clevr_poc.generation.gibbs_kernel import GibbsKernel, counted_fields
from clevr_poc.generation.object_types import scene_from_types, type_id, type_object
from clevr_poc.generation.scene_check import SceneCheck
from clevr_poc.generation.scene_programs import (
    SceneProgram, allowed_types, random_models, remember_allowed_types,
)
from clevr_poc.generation.scene_rules import SceneRules
from clevr_poc.generation.stratified_proposal import StratifiedProposal
from clevr_poc.scene import Scene


#: Rows of a rejection batch built and checked at a time (a batch of low acceptance is large, up to 4096,
#: and usually ends well before its last row; 512 since issue 27, 256 before: fewer numpy calls per
#: sample, about 8 % less CPU where acceptance is 0.1 %).
_REJECTION_CHUNK = 512
#: Proposals of a rejection batch checked one at a time in plain Python first (about 15 microseconds each
#: against 100-200 for a numpy chunk), where the calibrated acceptance rate is at least _PYTHON_ACCEPTANCE
#: (issue 27: tuned on the benchmark's environments; 32 covers a whole batch of 32, the smallest).
_PYTHON_ROWS = 32
_PYTHON_ACCEPTANCE = 0.05


@dataclass
class SamplerStats:
    """Counters of a :class:`SceneSampler` (cumulative since construction).

    Attributes:
        samples: scenes returned.
        proposals: rejection proposals drawn (all of them, accepted or not).
        accepted: proposals accepted.
        mcmc_samples: scenes that came from the Gibbs sampler (method "mcmc", or rejection's budget ran out).
        mcmc_steps: Gibbs steps taken.
        verified: checks of returned scenes (``verify``).
    """

    samples: int = 0
    proposals: int = 0
    accepted: int = 0
    mcmc_samples: int = 0
    mcmc_steps: int = 0
    verified: int = 0


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
        verify: check every returned scene: True (default) with :class:`~.scene_rules.SceneRules`, a literal
            Python reading of the environment program written independently of the sampler's own check
            (about 20-40 microseconds; tested against clingo), ``"clingo"`` with one clingo solve (~0.2 ms;
            what True meant before issue 27), False not at all.
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
        if verify not in (True, False, "clingo"):
            raise FormatError("verify must be True, False or 'clingo'", field="verify", value=verify)
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
        if state is None:
            self.allowed = allowed_types(environment.constraints)
        else:
            self.allowed = state.allowed.astype(np.int64)
            remember_allowed_types(environment.constraints, self.allowed)
        self._scene_program: SceneProgram | None = None  # grounded on first use (a state holds the start)
        self.rules = SceneRules(environment.constraints, self.num_objects)
        start = self._program.first_model_types() if state is None else state.start.astype(np.int64)
        if start is None:
            raise UnsatisfiableError(f"environment {environment.id} has no complete scene with "
                                     f"{self.num_objects} objects")
        self._start = start
        self.proposal = StratifiedProposal(self.allowed, self.num_objects, self.check.objects)
        self.kernel = GibbsKernel(self.check, self.allowed, counted_fields(environment.constraints))

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
        # proposals of a batch built and checked one at a time in plain Python before the numpy chunks: a few
        # where most proposals are accepted, none where most are rejected (issue 27; the same proposals)
        self._python_rows = _PYTHON_ROWS if self.acceptance_rate >= _PYTHON_ACCEPTANCE else 0
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
            ClevrPocError: the check (``verify``) rejects a scene the sampler produced (a bug; never
                expected).
        """
        return scene_from_types(self._sample_ids(rng))

    def sample_types(self, rng: random.Random) -> np.ndarray:
        """Like :meth:`sample`, as type ids (numpy int64 array of length N)."""
        return np.array(self._sample_ids(rng), dtype=np.int64)

    def _sample_ids(self, rng: random.Random) -> list[int]:
        """:meth:`sample_types` as a list of ints: what the rejection rows, the check and
        :func:`~.object_types.scene_from_types` work on (issue 27: no numpy array in between)."""
        gen = np.random.default_rng(rng.getrandbits(64))
        ids = None
        if self.method == "rejection":
            ids = self._rejection(gen, self.max_proposals)
        if ids is None:
            ids = self._gibbs_sample(gen).tolist()
        self._check(ids)
        self.stats.samples += 1
        return ids

    def _check(self, ids: list[int]) -> None:
        if self.verify:
            self.stats.verified += 1
            valid = self._program.is_scene(ids) if self.verify == "clingo" else self.rules.holds_ids(ids)
            if not valid:
                raise ClevrPocError(
                    f"internal error: sampled scene {[type_object(int(t)).describe() for t in ids]} "
                    f"violates environment {self.environment.id} (please report)")

    @property
    def _program(self) -> SceneProgram:
        """The environment program, grounded once (clingo): the first model, :meth:`is_scene`, and the
        scenes' check when ``verify="clingo"``."""
        if self._scene_program is None:
            self._scene_program = SceneProgram(self.environment)
        return self._scene_program

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
        for row in out.tolist():
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

    def _rejection(self, gen: np.random.Generator, budget: int) -> list[int] | None:
        """The first accepted proposal of up to ``budget`` (type ids, a list of N ints), or None."""
        drawn = 0
        while drawn < budget and not self.proposal.empty:
            size = min(self.batch_size, budget - drawn)
            batch = self.proposal.draw_batch(gen, size)
            # the first proposals one at a time in plain Python (usually the first is accepted; issue 27), the
            # rest of the batch built and checked _REJECTION_CHUNK at a time, up to the first accepted one (the
            # same proposal as checking the whole batch; every uniform is drawn either way)
            first = min(size, self._python_rows)
            for k in range(first):
                x = batch.row(k)
                if self.check.feasible_list(x):
                    self.stats.proposals += k + 1
                    self.stats.accepted += 1
                    return x
            for start, X in zip(range(first, size, _REJECTION_CHUNK), batch.chunks(first, _REJECTION_CHUNK)):
                ok = np.flatnonzero(self.check.feasible(X))
                if len(ok):
                    self.stats.proposals += start + int(ok[0]) + 1
                    self.stats.accepted += 1
                    return X[ok[0]].tolist()
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
