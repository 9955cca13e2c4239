"""``python -m clevr_poc <command>``: a thin shell over library functions.

Each command lives in ``clevr_poc/commands/<name>.py`` and exposes ``add_parser(subparsers)`` (which
registers the sub-command and sets ``func``) — add a module name to :data:`COMMANDS` to add a command.
Errors of clevr_poc (:class:`~clevr_poc.errors.ClevrPocError`) and bad arguments end the program with
a one-line message on stderr and a non-zero exit status, never a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from typing import Sequence

from clevr_poc.errors import ClevrPocError

#: Sub-command modules under clevr_poc.commands, in the order ``--help`` lists them.
COMMANDS: tuple[str, ...] = ("answer", "generate", "evaluate", "render", "parse", "demo")

EXIT_ERROR = 1
EXIT_USAGE = 2


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m clevr_poc",
        description="CLEVR-POC: reasoning-intensive VQA under partial observability (clingo-based).",
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        try:
            module = importlib.import_module(f"clevr_poc.commands.{name}")
        except ModuleNotFoundError as exc:  # a command whose optional dependencies are missing
            if exc.name and exc.name.startswith("clevr_poc.commands"):
                continue
            raise
        module.add_parser(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status (0 ok, 1 error, 2 usage)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    try:
        return int(args.func(args) or 0)
    except ClevrPocError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # the reader went away (`... | head`): not an error of ours
        _silence_stdout()
        return EXIT_ERROR  # as Python itself does on EPIPE


def _silence_stdout() -> None:
    """Point stdout at /dev/null so that the interpreter's final flush does not raise again."""
    import os

    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
