"""The one place that makes a ``clingo.Control`` and loads program parts into it.

Imports only the standard library and clingo: the direct-mode worker process
(:mod:`clevr_poc.reasoning.solver_worker`) loads this file by its path and uses the same two functions.

clingo's logger aborts the interpreter when a message holds non-ASCII text, so every Control gets a
logger (the silent one by default: grounder infos such as "atom does not occur" are not errors);
:meth:`clevr_poc.solver.programs.Program.check_ascii` refuses non-ASCII text before clingo sees it.
"""

from __future__ import annotations

from typing import Callable, Iterable, Sequence

import clingo

Logger = Callable[[clingo.MessageCode, str], None]


def silent_logger(code: clingo.MessageCode, message: str) -> None:
    """Drop clingo's messages (infos and warnings are not errors; errors arrive as ``RuntimeError``)."""
    return None


def make_control(arguments: Sequence[str] = (), *, logger: Logger = silent_logger) -> clingo.Control:
    """A new ``clingo.Control`` with command-line ``arguments`` (e.g. ``("--models=0",
    "--enum-mode=brave")``) and ``logger`` (default :func:`silent_logger`)."""
    return clingo.Control(list(arguments), logger=logger)


def load_program(control: clingo.Control, parts: Iterable[tuple[str, Sequence[str], str]],
                 facts: Iterable[clingo.Symbol], ground: Iterable[tuple[str, Sequence[int]]]) -> None:
    """Add ``parts`` (``(#program name, parameter names, text)``), add ``facts`` through the backend
    (the grounder treats them as facts, like facts in text) and ground the ``ground`` parts
    (``(name, integer arguments)``, e.g. ``("objects", (7,))``) in one grounding step.

    Untrusted text must be checked first (ASCII only: :meth:`clevr_poc.solver.programs.Program.check_ascii`).

    Raises:
        RuntimeError: clingo rejects the program (a parse or grounding error).
    """
    for name, parameters, text in parts:
        control.add(name, list(parameters), text)
    facts = list(facts)
    if facts:
        with control.backend() as backend:
            for symbol in facts:
                backend.add_rule([backend.add_atom(symbol)])
    control.ground([(name, [clingo.Number(n) for n in numbers]) for name, numbers in ground])
