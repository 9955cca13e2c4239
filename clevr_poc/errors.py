"""Typed errors of clevr_poc. Every error names the offending file/field/value where there is one."""

from __future__ import annotations

import re


class ClevrPocError(Exception):
    """Base class of every error clevr_poc raises on purpose."""


class FormatError(ClevrPocError, ValueError):
    """A file or value does not follow the expected format.

    Attributes:
        source: file path or a description of where the data came from (may be None).
        field: the field / line / key that is wrong (may be None); the message names it as
            :func:`describe_place` says (``<source>, line 3: ...``, ``<source>, field 'split': ...``).
        value: the offending value (may be None).
        message: the message without source, field and value.
    """

    def __init__(self, message: str, *, source: object = None, field: object = None, value: object = None):
        self.source = None if source is None else str(source)
        self.message = message  # the bare message, without source, field and value
        self.field = field
        self.value = value
        where = [] if self.source is None else [self.source]
        if field is not None:
            where.append(describe_place(field))
        prefix = ", ".join(where)
        detail = message if value is None else f"{message} (got {value!r})"
        super().__init__(f"{prefix}: {detail}" if prefix else detail)


_LINE = re.compile(r"line \d+(, column \d+)?")
_SIGNATURE = re.compile(r"[a-z][A-Za-z0-9_]*/\d+")


def describe_place(field: object) -> str:
    """How a :class:`FormatError` names its ``field`` in plain words, by the field's shape:
    ``"line 3"`` (a line of a text or JSON-lines file) stays ``line 3``; a predicate signature such as
    ``"object/1"`` reads ``predicate object/1``; a command-line option (``"--workers"``) stays
    ``--workers``, as in argparse's own errors; any other field (a JSON key or path such as ``"split"`` or
    ``"objects[0].color"``) reads ``field 'split'``."""
    text = str(field)
    if _LINE.fullmatch(text):
        return text
    if _SIGNATURE.fullmatch(text):
        return f"predicate {text}"
    if text.startswith("--"):
        return text
    return f"field {text!r}"


class OutputPathError(ClevrPocError):
    """An output path given on a command line (``--out``, ``--checkpoint``, ...) cannot be written.

    Attributes:
        option: the command-line option (e.g. ``"--out"``); path: the path given; reason: why.
    """

    def __init__(self, reason: str, *, option: str, path: object):
        self.option, self.path, self.reason = option, str(path), reason
        super().__init__(f"{option} {str(path)!r}: {reason}")


class UnsafeProgramError(ClevrPocError, ValueError):
    """An externally produced ASP program uses syntax or predicates outside the allowed language."""


class UnsatisfiableError(ClevrPocError):
    """Environment + scene + query have no answer set (raised only where the caller asks for strictness)."""


class SolverTimeoutError(ClevrPocError, TimeoutError):
    """clingo did not finish within the configured time limit."""


class RenderError(ClevrPocError):
    """Rendering is impossible (Blender's ``bpy`` missing, bad settings) or Blender failed
    (:mod:`clevr_poc.rendering`)."""
