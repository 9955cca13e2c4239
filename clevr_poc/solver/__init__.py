"""The clingo layer under every stage: the one place that makes a ``clingo.Control``
(:mod:`.control`), the one place that builds solver programs (:mod:`.programs`), parsing and rule
rewriting with :mod:`clingo.ast` (:mod:`.rules`) and time limits for solve calls (:mod:`.watchdog`).

Imports nothing of clevr_poc above ``errors`` and ``knowledge``: environments, reasoning, generation and
perception all build on it (no import cycle between folders).
"""

from clevr_poc.solver.control import make_control, silent_logger
from clevr_poc.solver.programs import Part, Program, environment_program, scene_symbols
from clevr_poc.solver.watchdog import WATCHDOG, solve_brave

__all__ = ["Part", "Program", "WATCHDOG", "environment_program", "make_control", "scene_symbols",
           "silent_logger", "solve_brave"]
