"""Pieces every command line of clevr_poc shares: argparse value types and the error boundary.

``python -m clevr_poc``, ``python -m clevr_poc.train_parser``, ``python -m clevr_poc.perception``,
``python -m clevr_poc.baselines.clip`` and ``python -m clevr_poc.mcot`` all validate numeric options
with these types (argparse turns their :class:`argparse.ArgumentTypeError` into a usage error, exit
status 2; :class:`ArgumentParser` prints it as one line) and run their work through :func:`run_guarded`,
which turns a :class:`ClevrPocError` into a one-line ``error: ...`` (exit status 1), an operating-system
error (permission denied, disk full, ...) into one line naming the file, Ctrl-C into exit status 130,
and a closed pipe (``... | head``) into a quiet exit. Output paths are checked before the work starts
(:func:`check_output_folder`, :func:`check_output_file`), so that an unwritable ``--out`` fails in a
second, not after an hour of evaluation. :func:`split_examples` reads the questions of one dataset split
(``evaluate``, ``python -m clevr_poc.baselines.clip``).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from typing import Any, Callable, TypeAlias

from pathlib import Path

from clevr_poc import limits
from clevr_poc.errors import ClevrPocError, FormatError, OutputPathError

#: Exit statuses of every clevr_poc command line.
EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130


class ArgumentParser(argparse.ArgumentParser):
    """``argparse.ArgumentParser`` whose usage errors are one line on stderr (exit status 2):
    ``PROG: error: argument --workers: expected an integer >= 1, got '0' (see PROG --help)``.
    Sub-command parsers made by ``add_subparsers`` are of this class too."""

    def error(self, message: str):  # type: ignore[override]
        self.exit(EXIT_USAGE, f"{self.prog}: error: {' '.join(message.split())} (see {self.prog} --help)\n")


#: The ``add_subparsers()`` object every command's ``add_parser`` registers itself with.
Subparsers: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"


def add_command(subparsers: Subparsers, name: str, *, help: str, description: str, epilog: str) -> argparse.ArgumentParser:
    """Register the sub-command ``name`` of ``python -m clevr_poc``: its one-line ``help`` (listed by
    ``--help``), its ``description`` and its ``epilog`` of examples, both printed as written."""
    return subparsers.add_parser(name, help=help, description=description, epilog=epilog,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)


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


def int_in_range(minimum: int, cap_name: str) -> Callable[[str], int]:
    """An argparse type: an integer from ``minimum`` to the cap ``cap_name`` of :mod:`clevr_poc.limits`
    (read when the option is parsed, so ``CLEVR_POC_MAX_<NAME>`` raises it)."""

    def parse(text: str) -> int:
        value = int_at_least(minimum)(text)
        if value > limits.cap(cap_name):
            raise argparse.ArgumentTypeError(f"{value:,} is over {limits.describe(cap_name)}")
        return value

    parse.__name__ = f"int_in_range_{minimum}_{cap_name}"
    return parse


def int_between(minimum: int, maximum: int) -> Callable[[str], int]:
    """An argparse type: an integer from ``minimum`` to ``maximum`` (fixed bounds; the message names them
    and the text given)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = None
        if value is None or not minimum <= value <= maximum:
            raise argparse.ArgumentTypeError(f"must be an integer in [{minimum}, {maximum}] (got {text!r})")
        return value

    parse.__name__ = f"int_between_{minimum}_{maximum}"
    return parse


#: ``--workers`` of every command: 1 .. the ``workers`` cap.
worker_count = int_in_range(1, "workers")


def integer_setting(text: object, option: str, minimum: int | None = None, cap: str | None = None) -> int:
    """``text`` (a command-line value) as an integer >= ``minimum`` and <= the cap ``cap`` of
    :mod:`clevr_poc.limits`; ``generate`` and ``demo`` check their counts with it, so the same bad value
    gets the same words.

    Raises:
        DatasetConfigError: ``"<option>: expected an integer, got 'abc'"``, ``"<option>: must be >= 1, got 0"``
            or ``"<option>: 10,000,000,000 is over <the cap>"``.
    """
    from clevr_poc.generation.dataset_config import DatasetConfigError

    try:
        value = int(str(text).strip())
    except ValueError:
        raise DatasetConfigError(f"{option}: expected an integer, got {str(text)[:40]!r}") from None
    if minimum is not None and value < minimum:
        raise DatasetConfigError(f"{option}: must be >= {minimum}, got {value}")
    if cap is not None and value > limits.cap(cap):
        raise DatasetConfigError(f"{option}: {value:,} is over {limits.describe(cap)}")
    return value


def require_dataset_folder(dataset: str | os.PathLike[str]) -> Path:
    """``dataset`` as a :class:`Path`, checked to be a folder: every command's ``--dataset`` (``evaluate``,
    ``render``, ``export``, ``explore``) words a missing one the same way, ``error: DIR: dataset folder not found``.

    Raises:
        FormatError: no such folder.
    """
    if not Path(dataset).is_dir():
        raise FormatError("is a file, not a dataset folder" if Path(dataset).exists() else "dataset folder not found",
                          source=dataset)
    return Path(dataset)


def split_examples(dataset: str | os.PathLike[str], split: str, limit: int | None = None) -> list[Any]:
    """The examples (:class:`~clevr_poc.dataset_reader.Example`) of one split of a dataset folder, the
    first ``limit`` of them when given.

    Raises:
        FormatError: no such folder, an unknown split, ``limit`` below 1, or a split without questions.
    """
    try:
        from clevr_poc.dataset_formats import load_dataset  # our and the official layout, HF exports
    except ImportError as exc:  # pragma: no cover - only in a broken installation
        raise ClevrPocError(f"cannot load datasets: {exc}") from None
    require_dataset_folder(dataset)
    if limit is not None and limit < 1:
        raise FormatError("must be a positive integer", field="--limit", value=limit)
    data = load_dataset(dataset, split)
    examples = list(data if limit is None else data[:limit])
    if not examples:
        raise FormatError("the split has no questions", source=dataset, field="split", value=split)
    return examples


def _probe_write(folder: Path) -> None:
    """Create and remove a temp file in ``folder`` (the only sure test that it can be written)."""
    from clevr_poc._io import _create_temp

    fd, tmp = _create_temp(folder / "write-test")
    os.close(fd)
    tmp.unlink()


def check_output_folder(path: str | os.PathLike[str], option: str) -> Path:
    """Create the output folder ``path`` of ``option`` now (parents too) and check it can be written.

    Raises:
        OutputPathError: the path is empty, exists and is not a folder, or cannot be created/written
            (the message names the option, the path and the reason).
    """
    if not str(path).strip():
        raise OutputPathError("empty path", option=option, path=path)
    folder = Path(path)
    if folder.exists() and not folder.is_dir():
        raise OutputPathError("exists and is not a folder", option=option, path=path)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        _probe_write(folder)
    except OSError as exc:
        raise OutputPathError(f"cannot write there ({exc.strerror or exc.__class__.__name__})", option=option,
                              path=path) from None
    return folder


def check_output_file(path: str | os.PathLike[str], option: str) -> Path:
    """Check that the output file ``path`` of ``option`` can be written (or appended to): not a folder or
    device, its folder created and writable, and an existing file writable.

    Raises:
        OutputPathError: naming the option, the path and the reason.
    """
    if not str(path).strip():
        raise OutputPathError("empty path", option=option, path=path)
    file = Path(path)
    if file.is_dir():
        raise OutputPathError("is a folder, not a file", option=option, path=path)
    if file.exists() and not file.is_file():
        raise OutputPathError("is not a regular file", option=option, path=path)
    parent = file.parent
    if parent.exists() and not parent.is_dir():
        raise OutputPathError(f"{parent} is not a folder", option=option, path=path)
    try:
        parent.mkdir(parents=True, exist_ok=True)
        _probe_write(parent)
        if file.exists():
            with open(file, "ab"):
                pass
    except OSError as exc:
        raise OutputPathError(f"cannot write there ({exc.strerror or exc.__class__.__name__})", option=option,
                              path=path) from None
    return file


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


def with_checked_outputs(action: Callable[[argparse.Namespace], int | None], args: argparse.Namespace, *,
                         folders: tuple[str, ...] = (), files: tuple[str, ...] = ()) -> Callable[[], int | None]:
    """``action(args)``, after :func:`check_output_folder` / :func:`check_output_file` on the attributes
    of ``args`` named in ``folders`` / ``files`` that are set (attribute ``out`` is option ``--out``),
    and after removing the stale temp files a killed run left in those folders
    (:func:`remove_stale_output_temps`). For :func:`run_guarded`. An output folder this call created is
    removed again when ``action`` fails (raises or returns non-zero) and left it empty: a bad input leaves
    nothing behind."""

    def run() -> int | None:
        created: list[Path] = []
        for name in folders:
            if getattr(args, name, None) is not None:
                folder = Path(getattr(args, name))
                new = not folder.exists()
                remove_stale_output_temps(check_output_folder(folder, _option(name)))
                if new:
                    created.append(folder)
        for name in files:
            if getattr(args, name, None) is not None:
                check_output_file(getattr(args, name), _option(name))
        status: int | None = 1
        try:
            status = action(args)
        finally:
            if status:
                for folder in created:
                    with contextlib.suppress(OSError):
                        folder.rmdir()   # only an empty folder: nothing written is ever removed
        return status

    return run


def remove_stale_output_temps(folder: str | os.PathLike[str]) -> list[Path]:
    """Remove our stale temp files (:func:`clevr_poc._io.remove_stale_temp_files`) from an output folder
    and its direct sub-folders (``plots/``, ``checkpoints/``), not deeper: ``--out .`` must not sweep a tree."""
    from clevr_poc._io import remove_stale_temp_files

    folder = Path(folder)
    removed = remove_stale_temp_files(folder)
    for child in sorted(p for p in folder.iterdir() if p.is_dir() and not p.is_symlink()):
        removed += remove_stale_temp_files(child)
    return removed


def _option(attribute: str) -> str:
    return "--" + attribute.replace("_", "-")


def describe_os_error(exc: OSError) -> str:
    """One line for an operating-system error: ``<file>: <reason>`` (``<file> -> <file2>`` for a rename)."""
    reason = exc.strerror or exc.__class__.__name__
    if exc.filename is None:
        return reason
    target = f"{exc.filename} -> {exc.filename2}" if exc.filename2 is not None else str(exc.filename)
    return f"{target}: {reason}"


def interrupted_line(args: argparse.Namespace) -> str:
    """The line a command prints on Ctrl-C: its ``interrupted_line(args)`` default when the sub-command
    set one (saying how to resume where running the same command again does), else ``interrupted``."""
    line = getattr(args, "interrupted_line", None)
    return "interrupted" if line is None else line(args)


def run_guarded(action: Callable[[], int | None], *, interrupted: str = "interrupted",
                missing_module: Callable[[ModuleNotFoundError], str | None] | None = None) -> int:
    """Run ``action()`` and return its exit status, turning the expected failures into one line on stderr.

    Args:
        action: the command's work; returns an exit status (``None`` = 0).
        interrupted: the line printed on Ctrl-C (say how to resume, where a command can).
        missing_module: if given, a missing optional dependency becomes ``error: <its result>``
            (name the extra that installs it) instead of a traceback; a result of None keeps the
            traceback (a module that no extra installs is a bug).

    Returns:
        the action's status; 1 after a :class:`ClevrPocError` (or a missing module, see above), an
        operating-system error (``error: <file>: <reason>``), running out of memory, or a closed stdout
        pipe; 130 after Ctrl-C.
    """
    try:
        return int(action() or 0)
    except ClevrPocError as exc:
        print(f"error: {' '.join(str(exc).split())}", file=sys.stderr)
        return EXIT_ERROR
    except ModuleNotFoundError as exc:
        message = None if missing_module is None else missing_module(exc)
        if message is None:
            raise
        print(f"error: {message}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print(interrupted, file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # the reader went away (`... | head`): stop quietly, as Python itself does
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # the interpreter's final flush must not raise again
        return EXIT_ERROR
    except OSError as exc:  # permission denied, disk full, read-only file system, ...
        print(f"error: {' '.join(describe_os_error(exc).split())}", file=sys.stderr)
        return EXIT_ERROR
    except MemoryError:
        print("error: out of memory (lower the sizes/counts of this run)", file=sys.stderr)
        return EXIT_ERROR
