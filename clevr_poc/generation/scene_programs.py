"""The clingo side of the scene sampler: the types one object may have, the environment program that checks
a scene graph, and clingo's own models (random decisions; the official enumeration order).
"""

from __future__ import annotations

from typing import Iterator

import clingo
import numpy as np

from clevr_poc.errors import SolverTimeoutError
from clevr_poc.environments.environment import Environment
from clevr_poc.generation.object_types import (
    FIELD_DOMAIN, FIELD_STRIDE, FIELD_VALUE, NUM_TYPES, TYPE_FIELDS, UNARY_TEMPLATES, VALUE_INDEX,
    scene_from_types,
)
from clevr_poc.scene import Scene
from clevr_poc.solver.control import make_control
from clevr_poc.solver.programs import environment_program
from clevr_poc.solver.watchdog import WATCHDOG

#: What the scene programs show: the objects' attributes and regions.
_SHOW_SCENE = "#show hasProperty/3. #show at/2."


def allowed_types(constraints) -> np.ndarray:
    """Sorted type ids an object may have under the one-object constraints (templates 1-5, 11), as the
    answer sets of ``background.lp + object(0) + those constraints`` (clingo enumerates them all).

    Cached per process by the constraints' ASP text (the scene sampler and the question generator
    share one enumeration per environment; a sampler rebuilt from a state leaves its copy here, see
    :func:`remember_allowed_types`); the returned int64 array is read-only."""
    unary = _unary_text(constraints)
    cached = _ALLOWED.get(unary)
    if cached is None:
        cached = _ALLOWED[unary] = _allowed_types(unary)
        _trim_allowed()
    return cached


def remember_allowed_types(constraints, allowed: np.ndarray) -> None:
    """Cache ``allowed`` as :func:`allowed_types` of these constraints, which it must be (a scene sampler's
    state computed it for the same environment: issue 27, the question generator of a worker then does not
    enumerate it again)."""
    unary = _unary_text(constraints)
    if unary not in _ALLOWED:
        stored = np.array(allowed, dtype=np.int64)
        stored.setflags(write=False)
        _ALLOWED[unary] = stored
        _trim_allowed()


#: allowed_types by the one-object constraints' ASP text (at most 256, the oldest dropped first).
_ALLOWED: dict[str, np.ndarray] = {}


def _trim_allowed() -> None:
    while len(_ALLOWED) > 256:
        _ALLOWED.pop(next(iter(_ALLOWED)))


def _unary_text(constraints) -> str:
    return "\n".join("\n".join(c.asp_rules()) for c in constraints if c.template in UNARY_TEMPLATES)


def _allowed_types(unary: str) -> np.ndarray:
    control = (environment_program(1, unary).with_text("rules", _SHOW_SCENE)
               .load(make_control(["--models=0"])))
    # each shown atom adds its field's share of the type id (symbols hash in C: no per-model parsing)
    share: dict[clingo.Symbol, int] = {}
    for atom in control.symbolic_atoms.by_signature("hasProperty", 3):
        _, a, v = atom.symbol.arguments
        share[atom.symbol] = VALUE_INDEX[a.name][v.name] * FIELD_STRIDE[a.name]
    for atom in control.symbolic_atoms.by_signature("at", 2):
        share[atom.symbol] = atom.symbol.arguments[1].number * FIELD_STRIDE["region"]
    types: list[int] = []

    def on_model(model: clingo.Model) -> None:
        types.append(sum(share[symbol] for symbol in model.symbols(shown=True)))

    control.solve(on_model=on_model)
    result = np.array(sorted(types), dtype=np.int64)
    result.setflags(write=False)
    return result


class SceneProgram:
    """``background + object(0..N-1) + constraints`` grounded once (clingo, in process); checks a
    scene with one solve under assumptions and finds models."""

    def __init__(self, environment: Environment, arguments: tuple[str, ...] = ()) -> None:
        self.num_objects = environment.num_objects
        control = (environment_program(self.num_objects, environment.constraints_asp())
                   .with_text("rules", _SHOW_SCENE).load(make_control(arguments)))
        self.literal: dict[tuple, int] = {}
        #: each shown atom's object and its field's share of the type id (a model's types read through it:
        #: symbols hash in C, no parsing of every symbol's arguments; issue 27, helper gb)
        self.share: dict[clingo.Symbol, tuple[int, int]] = {}
        for atom in control.symbolic_atoms.by_signature("hasProperty", 3):
            o, a, v = atom.symbol.arguments
            self.literal[(o.number, a.name, v.name)] = atom.literal
            self.share[atom.symbol] = (o.number, VALUE_INDEX[a.name][v.name] * FIELD_STRIDE[a.name])
        for atom in control.symbolic_atoms.by_signature("at", 2):
            o, r = atom.symbol.arguments
            self.literal[(o.number, "region", r.number)] = atom.literal
            self.share[atom.symbol] = (o.number, r.number * FIELD_STRIDE["region"])
        self.control = control
        self._table: np.ndarray | None = None

    def _literal_table(self) -> np.ndarray:
        """(N, 768, 5) int64: the literals of "object i has type t" per field, 0 where the grounder
        removed the atom (it can never be true)."""
        if self._table is None:
            table = np.zeros((self.num_objects, NUM_TYPES, len(TYPE_FIELDS)), dtype=np.int64)
            for k, f in enumerate(TYPE_FIELDS):
                values = FIELD_DOMAIN[f]
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

    def model_types(self, model: clingo.Model) -> np.ndarray:
        """The type ids (N,) of a model of this program (int64)."""
        types = [0] * self.num_objects
        share = self.share
        for symbol in model.symbols(shown=True):
            o, v = share[symbol]
            types[o] += v
        return np.array(types, dtype=np.int64)

    def first_model_types(self) -> np.ndarray | None:
        found: list[np.ndarray] = []

        def on_model(model: clingo.Model) -> bool:
            found.append(self.model_types(model))
            return False

        self.control.solve(on_model=on_model)
        return found[0] if found else None


def random_models(environment: Environment, count: int, *, seed: int = 0, time_limit: float = 30.0) -> list[np.ndarray]:
    """Up to ``count`` complete scenes (type-id arrays) found by clingo with random decisions
    (``--rand-freq=1 --sign-def=rnd``, solver seed k+1 for the k-th): diverse, not uniform. One
    control, a fixed sequence of solves, so the result is deterministic (fewer than ``count`` only when
    the environment has no complete scene).

    Issue 27 (helper ``gb``): blocking solves under the shared watchdog and the models' types read through
    :attr:`SceneProgram.share`: the same models with 0.65x the CPU time (1.16 against 1.79 s for 4 x 4 calls of
    60 models, environments 1 and 7 of seed 0 and 0 and 9 of seed 5, the previous code in the same process, load
    2.7); about a third of the Gibbs pool build of an environment whose calibration found few exact samples.

    Raises:
        SolverTimeoutError: one search took longer than ``time_limit`` seconds (a few milliseconds is
            usual). It used to return fewer models then, so a busy machine could silently give another
            Gibbs pool, hence other scenes, for the same seed; now it stops instead.
    """
    program = SceneProgram(environment, ("--rand-freq=1", "--sign-def=rnd", "--models=1"))
    found: list[np.ndarray] = []
    for k in range(count):
        program.control.configuration.solver.seed = str(seed * 100_003 + k + 1)
        models: list[np.ndarray] = []

        def on_model(model: clingo.Model) -> bool:
            models.append(program.model_types(model))
            return False

        # a blocking solve under the shared watchdog (issue 27, helper gb: an async solve's thread hand-off cost
        # about 0.5 ms per model, 20-40 % of these solves; the same search, the same models)
        with WATCHDOG.limit(program.control, time_limit) as fired:
            result = program.control.solve(on_model=on_model)
        if fired[0] or result.interrupted:
            raise SolverTimeoutError(f"clingo did not find a random complete scene of environment "
                                     f"{environment.id} within {time_limit:g} s (Gibbs pool starts)")
        if not models:
            break
        found.append(models[0])
    return found


def enumerate_scenes(environment: Environment, limit: int | None = None) -> Iterator[Scene]:
    """The complete scenes in clingo's enumeration order (default configuration), at most ``limit``:
    the official generator's approach (first models of one enumeration), kept as a baseline."""
    program = SceneProgram(environment, (f"--models={limit or 0}",))
    with program.control.solve(yield_=True) as handle:
        for model in handle:
            yield scene_from_types(program.model_types(model))
