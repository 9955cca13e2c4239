"""Pieces every command line of clevr_poc shares: argparse value types and the error boundary.

``python -m clevr_poc``, ``python -m clevr_poc.train_parser``, ``python -m clevr_poc.perception``,
``python -m clevr_poc.baselines.clip`` and ``python -m clevr_poc.mcot`` all validate numeric options
with these types (argparse turns their :class:`argparse.ArgumentTypeError` into a usage error, exit
status 2) and run their work through :func:`run_guarded`, which turns a :class:`ClevrPocError` into a
one-line ``error: ...`` (exit status 1), Ctrl-C into exit status 130, and a closed pipe
(``... | head``) into a quiet exit.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Callable

from clevr_poc.errors import ClevrPocError

#: Exit statuses of every clevr_poc command line.
EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130


def int_at_least(minimum: int) -> Callable[[str], int]:
    """An argparse type: an integer >= ``minimum`` (the message names the bound and the text given)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer >= {minimum}, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"expected an integer >= {minimum}, got {text!r}")
        return value

    parse.__name__ = f"int_at_least_{minimum}"
    return parse


#: Integers >= 1 (counts, steps, sizes) and >= 0 (offsets, optional counts).
positive_int = int_at_least(1)
non_negative_int = int_at_least(0)


def _float(text: str, accepts: Callable[[float], bool], expected: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}") from None
    if not accepts(value):  # NaN fails every comparison, hence is refused too
        raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}")
    return value


def non_negative_float(text: str) -> float:
    """An argparse type: a number >= 0 (weights, decays, rates)."""
    return _float(text, lambda v: v >= 0, "a number >= 0")


def positive_float(text: str) -> float:
    """An argparse type: a number > 0 (learning rates, temperatures)."""
    return _float(text, lambda v: v > 0, "a number > 0")


def open_unit_float(text: str) -> float:
    """An argparse type: a probability strictly between 0 and 1 (thresholds)."""
    return _float(text, lambda v: 0 < v < 1, "a number in (0, 1)")


def run_guarded(action: Callable[[], int | None], *, interrupted: str = "interrupted",
                missing_module: Callable[[ModuleNotFoundError], str] | None = None) -> int:
    """Run ``action()`` and return its exit status, turning the expected failures into one line on stderr.

    Args:
        action: the command's work; returns an exit status (``None`` = 0).
        interrupted: the line printed on Ctrl-C (say how to resume, where a command can).
        missing_module: if given, a missing optional dependency becomes ``error: <its result>``
            (name the extra that installs it) instead of a traceback.

    Returns:
        the action's status; 1 after a :class:`ClevrPocError` (or a missing module, see above) or a
        closed stdout pipe; 130 after Ctrl-C.
    """
    try:
        return int(action() or 0)
    except ClevrPocError as exc:
        print(f"error: {' '.join(str(exc).split())}", file=sys.stderr)
        return EXIT_ERROR
    except ModuleNotFoundError as exc:
        if missing_module is None:
            raise
        print(f"error: {missing_module(exc)}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print(interrupted, file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # the reader went away (`... | head`): stop quietly, as Python itself does
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # the interpreter's final flush must not raise again
        return EXIT_ERROR
