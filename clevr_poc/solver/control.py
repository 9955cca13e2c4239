"""The one place that makes a ``clingo.Control``, loads program parts into it and reads the answer
(``missing/1``) out of a solve.

Imports only the standard library and clingo: the direct-mode worker process
(:mod:`clevr_poc.reasoning.solver_worker`) loads this file by its path and uses the same functions.

clingo's logger aborts the interpreter when a message holds non-ASCII text, so every Control gets a
logger (the silent one by default: grounder infos such as "atom does not occur" are not errors);
:meth:`clevr_poc.solver.programs.Program.check_ascii` refuses non-ASCII text before clingo sees it.
"""

from __future__ import annotations

from typing import Callable, Iterable, Mapping, Sequence

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


def missing_values(symbols: Iterable[clingo.Symbol], names: Mapping[clingo.Symbol, str] | None = None) -> frozenset[str]:
    """The answer in ``symbols`` (a model's shown symbols; of a brave enumeration's last model, the brave
    consequences): the argument of every ``missing/1`` atom, as text (``missing(red)`` -> ``"red"``,
    ``missing(3)`` -> ``"3"``).

    Args:
        names: optional ``missing(V)`` symbol -> ``"V"`` table of the grounded program (a dict look-up
            instead of printing the symbol; symbols not in it are printed).
    """
    names = names or {}
    values = set()
    for symbol in symbols:
        value = names.get(symbol)
        if value is None and symbol.name == "missing" and len(symbol.arguments) == 1:
            value = str(symbol.arguments[0])
        if value is not None:
            values.add(value)
    return frozenset(values)
