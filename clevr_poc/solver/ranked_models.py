"""The k cheapest answer sets of an optimisation program, in order of cost (clingo, one grounding).

clingo proves an optimum (``--opt-mode=opt``) or enumerates every optimal model (``optN``), but has no
"k best" mode. :func:`ranked_models` gets them in two solve calls on one grounded program:

1. ``--opt-mode=opt``: the optimum cost ``c*`` (or, when the time limit interrupts the search, the best
   cost found, an upper bound on ``c*``);
2. ``--opt-mode=enum,B`` with ``B = c* + window``: every model whose cost is at most ``B`` (clasp's
   bounded enumeration), projected (``--project=project``, the program's ``#project`` statements) so
   that models that differ only outside the projection count once; sorted by cost, the first ``k`` kept.

Every model within the window is found, so the result is exactly the k best among the models that cost
at most ``c* + window``. Enumeration stops at ``max_models``; then the window shrinks to the k-th cost
found (which bounds the true k-th cost from above) and the enumeration runs once more, which is exact
again unless it too stops at ``max_models`` (``complete=False``: the k returned are then the best of
the ``max_models`` seen). Costs are the sums of a model's cost vector (the programs here use one
priority level).
"""

from __future__ import annotations

from dataclasses import dataclass

import clingo

from clevr_poc.solver.control import make_control
from clevr_poc.solver.programs import Program
from clevr_poc.solver.watchdog import WATCHDOG


@dataclass(frozen=True)
class RankedModel:
    """One answer set: its shown symbols (sorted) and its cost (sum of the cost vector, an integer)."""

    symbols: tuple[clingo.Symbol, ...]
    cost: int


@dataclass(frozen=True)
class RankedModels:
    """The result of :func:`ranked_models`.

    Attributes:
        models: at most ``k`` models by ascending cost (ties by their symbols' text); empty when the
            program is unsatisfiable or no model was found in time.
        optimum_proven: the first solve proved the optimum (it was not interrupted).
        complete: every model within the final window was enumerated (none cut by ``max_models`` or by
            the time limit): ``models`` are exactly the k best of that window.
        window: the cost window finally enumerated above the best cost (``<=`` the requested one).
        interrupted: the time limit stopped a solve call.
    """

    models: tuple[RankedModel, ...]
    optimum_proven: bool
    complete: bool
    window: int
    interrupted: bool


def _optimum(control: clingo.Control, seconds: float) -> tuple[int | None, bool]:
    cost: int | None = None
    with WATCHDOG.limit(control, seconds) as fired:
        with control.solve(yield_=True) as handle:
            for model in handle:
                cost = int(sum(model.cost)) if model.cost else 0
            result = handle.get()
    return cost, not (fired[0] or result.interrupted)


def _enumerate(control: clingo.Control, bound: int, max_models: int, seconds: float
               ) -> tuple[list[RankedModel], bool]:
    control.configuration.solve.opt_mode = f"enum,{bound}"
    control.configuration.solve.models = str(max_models)
    found: list[RankedModel] = []

    def on_model(model: clingo.Model) -> None:
        found.append(RankedModel(tuple(sorted(model.symbols(shown=True))), int(sum(model.cost)) if model.cost else 0))

    with WATCHDOG.limit(control, seconds) as fired:
        result = control.solve(on_model=on_model)
    interrupted = bool(fired[0] or result.interrupted)
    return found, interrupted


def ranked_models(program: Program, k: int, window: int, *, max_models: int = 512, time_limit: float = 10.0,
                  options: tuple[str, ...] = ("--opt-strategy=bb", "--heuristic=Domain")) -> RankedModels:
    """The ``k`` cheapest models of ``program`` within ``window`` of the best cost (module doc).

    Args:
        program: an optimisation program (weak constraints at one priority) with ``#project``
            statements naming what tells two models apart (without them the shown atoms are used).
        k: models wanted, >= 1.
        window: cost above the best cost that is enumerated, >= 0 (e.g. ``round(1000 * -log(1e-4))``
            for costs of ``1000 * -log p``: models less than 1e-4 times as probable as the best are
            not looked at).
        max_models: most models one enumeration collects (>= k), which bounds time and memory.
        time_limit: seconds for each of the (at most three) solve calls.
        options: clingo options of the optimum search (default: branch and bound from the program's
            ``#heuristic`` start).

    Raises:
        ValueError: ``k < 1``, ``window < 0``, ``max_models < k`` or ``time_limit <= 0``.
        RuntimeError: clingo rejects the program.
    """
    if k < 1 or window < 0 or max_models < k or time_limit <= 0:
        raise ValueError(f"need k >= 1, window >= 0, max_models >= k and time_limit > 0; got k={k}, "
                         f"window={window}, max_models={max_models}, time_limit={time_limit}")
    control = program.load(make_control(["--opt-mode=opt", "--project=project", "--warn=none", *options]))
    best, proven = _optimum(control, time_limit)
    if best is None:
        return RankedModels((), proven, proven, window, not proven)
    found, interrupted = _enumerate(control, best + window, max_models, time_limit)
    used = window
    if len(found) >= max_models and not interrupted:
        kth = sorted(m.cost for m in found)[k - 1]
        found, interrupted = _enumerate(control, kth, max_models, time_limit)
        used = kth - best
    complete = len(found) < max_models and not interrupted
    found.sort(key=lambda m: (m.cost, [str(s) for s in m.symbols]))
    return RankedModels(tuple(found[:k]), proven, complete, used, interrupted or not proven)


__all__ = ["RankedModel", "RankedModels", "ranked_models"]
