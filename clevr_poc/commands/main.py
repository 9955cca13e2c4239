"""``python -m clevr_poc <command>``: a thin shell over library functions.

Each command lives in ``clevr_poc/commands/<name>_command.py`` and exposes ``add_parser(subparsers)`` (which
registers the sub-command and sets ``func``) — add a module name to :data:`COMMANDS` to add a command.
Errors of clevr_poc (:class:`~clevr_poc.errors.ClevrPocError`) and bad arguments end the program with
a one-line message on stderr and a non-zero exit status, never a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from typing import Callable, Sequence

from clevr_poc.commands.shared import EXIT_USAGE, ArgumentParser, interrupted_line, run_guarded

#: Sub-commands (modules ``clevr_poc.commands.<name>_command``), in the order ``--help`` lists them.
COMMANDS: tuple[str, ...] = ("answer", "generate", "evaluate", "render", "parse", "demo", "export", "explore")
#: The extra (``pip install '.[EXTRA]'`` in the clevr_poc folder) that installs each optional module the commands import.
MODULE_EXTRAS: dict[str, str] = {
    "tqdm": "generate", "matplotlib": "generate", "scipy": "generate", "bpy": "render", "PIL": "vision",
    "torch": "vision", "torchvision": "vision", "open_clip": "clip", "transformers": "clip", "openai": "llm",
    "llama_cpp": "llm", "ray": "scale", "datasets": "hf", "pyarrow": "hf", "gradio": "explore",
}
#: Commands whose own extra installs everything they need (named instead of the module's extra).
COMMAND_EXTRAS: dict[str, tuple[str, frozenset[str]]] = {
    "generate": ("generate", frozenset({"tqdm", "matplotlib", "scipy"})),
    "render": ("render", frozenset({"bpy", "PIL", "tqdm", "scipy"})),
    "demo": ("demo", frozenset({"tqdm", "matplotlib", "scipy", "bpy", "PIL", "torch", "torchvision"})),
}


def missing_module_message(command: str | None, exc: ModuleNotFoundError) -> str | None:
    """``error:`` line for a missing optional module (None: not an optional module, keep the traceback)."""
    module = (exc.name or "").split(".")[0]
    extra = MODULE_EXTRAS.get(module)
    if command in COMMAND_EXTRAS and module in COMMAND_EXTRAS[command][1]:
        extra = COMMAND_EXTRAS[command][0]
    if extra is None:
        return None
    return (f"{command or 'this command'} needs the Python module {module!r}, which is not installed: "
            f"install the [{extra}] extra (pip install '.[{extra}]' in the clevr_poc folder)")



def build_parser() -> argparse.ArgumentParser:
    parser = ArgumentParser(
        prog="python -m clevr_poc",
        description="CLEVR-POC: reasoning-intensive VQA under partial observability (clingo-based).",
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        try:
            module = importlib.import_module(f"clevr_poc.commands.{name}_command")
        except ModuleNotFoundError as exc:  # a command whose optional dependencies are missing
            if exc.name and exc.name.startswith("clevr_poc.commands"):
                continue
            raise
        module.add_parser(subparsers)
    return parser


def run_parsed(parser: argparse.ArgumentParser, argv: Sequence[str] | None,
               run: Callable[[argparse.Namespace], int]) -> int:
    """``run(args)`` for ``argv`` parsed by ``parser`` (a command line with sub-commands, each setting
    ``func``); without a sub-command the help goes to stderr and the status is ``EXIT_USAGE`` (2).
    Used by :func:`main` and ``python -m clevr_poc.mcot`` (:mod:`clevr_poc.commands.mcot_command`)."""
    args, unknown = parser.parse_known_args(argv)
    if unknown:  # named by the sub-command's own parser, which points at `COMMAND --help`
        _command_parser(parser, args).error(f"unrecognized arguments: {' '.join(unknown)}")
    if not getattr(args, "func", None):
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    return run(args)


def _command_parser(parser: argparse.ArgumentParser, args: argparse.Namespace) -> argparse.ArgumentParser:
    """The parser of the sub-command ``args`` chose (``parser`` itself when none was chosen)."""
    for action in parser._actions:  # noqa: SLF001 - argparse keeps its sub-parsers there
        if isinstance(action, argparse._SubParsersAction):  # noqa: SLF001
            chosen = getattr(args, action.dest or "", None)
            if chosen in action.choices:
                return _command_parser(action.choices[chosen], args)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status (0 ok, 1 error, 2 usage)."""
    return run_parsed(build_parser(), argv, lambda args: run_guarded(
        lambda: args.func(args), interrupted=interrupted_line(args),
        missing_module=lambda exc: missing_module_message(args.command, exc)))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
