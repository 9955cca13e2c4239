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

from clevr_poc._cli import EXIT_USAGE, run_guarded

#: Sub-command modules under clevr_poc.commands, in the order ``--help`` lists them.
COMMANDS: tuple[str, ...] = ("answer", "generate", "evaluate", "render", "parse", "demo")



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
    return run_guarded(lambda: args.func(args))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
