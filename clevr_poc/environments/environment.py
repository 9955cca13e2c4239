"""The Environment value object and the official environment ``.lp`` format.

Official layout: the background theory, then ``object(0..N-1).`` (N counts the hidden object too),
then one constraint per line (a two-rule template puts its second rule on the next line, indented by
one space), then ``#show`` lines, which the answering semantics ignores.

Environment files read from disk are untrusted. :meth:`Environment.from_lp` reads them in two steps:

1. before any clingo call, :mod:`clevr_poc.asp_lexer` splits the text exactly as clingo's
   lexer does (nested ``%* *%`` comments, ``%`` and ``#!`` line comments, strings); any directive other
   than ``#show`` and ``#count``, any ``#script`` block, string, non-ASCII or control character or
   unclosed comment is rejected, and the comments are blanked out. Only this checked, comment-free,
   ASCII text is handed to clingo's parser, so nothing in a file can make clingo open another file or
   run code, and no non-ASCII text reaches clingo's logger (which aborts the interpreter on it);
2. the parsed statements must be the complete background theory (``asp/background.lp``, every
   statement, compared in clingo's canonical form: layout and comments do not matter), exactly one
   ``object(0..N-1).``, instances of the 11 templates and ``#show name/arity.`` lines (optional).

Anything else raises :class:`~clevr_poc.errors.FormatError` naming the file and line. The semantics
uses only N and the constraints, re-rendered from the templates (never the file's own text).
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterable

import clingo

from clevr_poc._io import atomic_write_text
from clevr_poc.environments.templates import Constraint, constraint_from_rules
from clevr_poc.errors import FormatError
from clevr_poc.knowledge import read_asp
from clevr_poc.asp_lexer import describe_error, lex
from clevr_poc.solver.rules import ASTType, parse_statements

#: The background theory in English, one sentence per group of rules (Appendix A, "general rules").
BACKGROUND_DESCRIPTION: tuple[str, ...] = (
    "Objects have 4 properties: color, shape, size and material.",
    "Colors: gray, red, blue, green, brown, purple, cyan, yellow. Shapes: cube, cylinder, sphere, cone. "
    "Sizes: small, medium, large. Materials: rubber, metal.",
    "The scene is divided into 4 regions, 0 (back left), 1 (back right), 2 (front left), 3 (front right).",
    "An object right of an object in region 1 or 3 is in region 1 or 3; an object left of an object in "
    "region 0 or 2 is in region 0 or 2.",
    "An object in front of an object in region 2 or 3 is in region 2 or 3; an object behind an object in "
    "region 0 or 1 is in region 0 or 1.",
    "Every object has exactly one value for each property and lies in exactly one region.",
    "No two objects have the same values for all 4 properties.",
    "Every region holds at most 3 objects.",
)

MAX_OBJECTS = 20
#: Largest environment file accepted, in characters (an official file is about 4,500; override with
#: ``from_lp(..., max_chars=...)``).
MAX_ENVIRONMENT_CHARS = 1_000_000
#: Most constraints (template instances) in one environment file (sampled environments hold at most 15;
#: override with ``from_lp(..., max_constraints=...)``). Grounding grows linearly with it.
MAX_CONSTRAINTS = 200
#: The only directives an environment file may hold (``#count`` appears in template and background rules).
ALLOWED_DIRECTIVES = frozenset({"#show", "#count"})
_ONLY = "only the background theory, object/1, constraints and #show are allowed"


@lru_cache(maxsize=1)
def _background_statements() -> dict[str, str]:
    """The background theory's statements: clingo's canonical form -> the text in ``background.lp``,
    in file order (no comments)."""
    code = lex(read_asp("background.lp")).code_only()
    statements = parse_statements(code, logger=None)
    lines = code.split("\n")
    return {str(s): " ".join(_slice(lines, s.location).split()) for s in statements
            if s.ast_type != ASTType.Program}


@dataclass(frozen=True)
class Environment:
    """A CLEVR-POC environment: a set of constraints over the four regions and an object count.

    Attributes:
        constraints: the instantiated templates, in file order (at most 15 for sampled environments).
        num_objects: N, the number of objects of every complete scene (hidden object included), 5-9 in
            the paper's data.
        id: environment id (``constraint_type_index`` in question files), or None.
        show: the ``#show`` lines of the file (kept for round-tripping; ignored by the semantics).
    """

    constraints: tuple[Constraint, ...]
    num_objects: int
    id: int | None = None
    show: tuple[str, ...] = field(default=("#show hasProperty/3. #show at/2.",), compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "constraints", tuple(self.constraints))
        if not isinstance(self.num_objects, int) or not 1 <= self.num_objects <= MAX_OBJECTS:
            raise FormatError(f"number of objects must be 1..{MAX_OBJECTS}", field="num_objects",
                              value=self.num_objects)

    # ------------------------------------------------------------------ renderings
    def constraints_asp(self) -> str:
        """Only the constraints, one template instance per line group (official layout)."""
        cached = self.__dict__.get("_constraints_asp")
        if cached is None:
            cached = self.__dict__["_constraints_asp"] = self._render_constraints()
        return cached

    def _render_constraints(self) -> str:
        return "\n".join("\n ".join(c.asp_rules()) for c in self.constraints) + ("\n" if self.constraints else "")

    def to_asp(self, *, background: bool = True, show: bool = True) -> str:
        """The environment program in the official ``.lp`` layout.

        Args:
            background: include the background theory (``asp/background.lp``).
            show: include the ``#show`` lines.
        """
        parts = []
        if background:
            parts.append(read_asp("background.lp").rstrip("\n") + "\n\n")
        parts.append(f"object(0..{self.num_objects - 1}).\n")
        parts.append(self.constraints_asp())
        if show and self.show:
            parts.append("\n" + "\n".join(self.show) + "\n")
        return "".join(parts)

    def describe(self) -> str:
        """English, one line per constraint, preceded by the object count."""
        lines = [f"There are {self.num_objects} objects in the scene (one of them hidden)."]
        lines += [c.describe() for c in self.constraints]
        return "\n".join(lines)

    def describe_background(self) -> str:
        return "\n".join(BACKGROUND_DESCRIPTION)

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "num_objects": self.num_objects, "constraints": [c.to_json() for c in self.constraints]}

    # ------------------------------------------------------------------ files
    def to_lp(self, path: str | os.PathLike[str]) -> Path:
        """Write the official ``.lp`` file atomically."""
        return atomic_write_text(path, self.to_asp())

    @classmethod
    def from_lp(cls, path: str | os.PathLike[str], *, id: int | None = None, max_chars: int = MAX_ENVIRONMENT_CHARS,
                max_constraints: int = MAX_CONSTRAINTS) -> "Environment":
        """Read an official environment file (ours or the official release's).

        The id defaults to the number in the file name (``environment_3.lp`` or ``3.lp``), if any.
        The text is read as is (UTF-8, line ends unchanged), as clingo would read the file.

        Args:
            max_chars: largest file accepted (characters, default :data:`MAX_ENVIRONMENT_CHARS`).
            max_constraints: most constraints accepted (default :data:`MAX_CONSTRAINTS`).

        Raises:
            FormatError: missing/unreadable file or not a regular file (a folder, a FIFO), over
                ``max_chars``, a syntax error, a character or directive outside the environment language,
                an incomplete background theory, no or two ``object/1`` declarations, or any statement
                outside the background theory and the template language (the message names the line).
        """
        path = Path(path)
        try:
            if not stat.S_ISREG(os.stat(path).st_mode):  # a FIFO would block the read forever
                raise FormatError("cannot read: not a regular file", source=path)
            with open(path, encoding="utf-8", newline="") as handle:
                text = handle.read(max_chars + 1)
        except FileNotFoundError:
            raise FormatError("file not found", source=path) from None
        except (UnicodeDecodeError, OSError) as exc:
            raise FormatError(f"cannot read as UTF-8 text ({exc.__class__.__name__})", source=path) from None
        if id is None:
            digits = "".join(ch for ch in path.stem.rsplit("_", 1)[-1] if ch.isdigit())
            id = int(digits) if digits and digits == path.stem.rsplit("_", 1)[-1] else None
        return cls.from_asp(text, source=path, id=id, max_chars=max_chars, max_constraints=max_constraints)

    @classmethod
    def from_asp(cls, text: str, *, source: object = "<string>", id: int | None = None,
                 max_chars: int = MAX_ENVIRONMENT_CHARS, max_constraints: int = MAX_CONSTRAINTS) -> "Environment":
        """Parse environment program text; see the module docstring and :meth:`from_lp` for what is
        accepted and raised.

        The text is checked with :func:`checked_code` before clingo's parser sees it; the parser gets
        the checked text with its comments blanked out.
        """
        code = checked_code(text, source=source, max_chars=max_chars)
        messages: list[str] = []

        def logger(code: clingo.MessageCode, message: str) -> None:
            messages.append(message.strip())

        try:
            statements = parse_statements(code, logger=logger)
        except RuntimeError:
            line, detail = _syntax_error(messages[0] if messages else "syntax error", code)
            raise FormatError(f"not a valid ASP program: {detail}", source=source,
                              field=None if line is None else f"line {line}") from None
        lines = code.split("\n")  # clingo's lines: only "\n" ends one
        background = frozenset(_background_statements())
        seen_background: set[str] = set()
        num_objects: int | None = None
        # one unit per constraint: (first line of each rule, last line, canonical rules, source rules)
        units: list[tuple[list[int], int, list[str], list[str]]] = []
        show: list[str] = []
        show_line = 0
        for stmt in statements:
            kind = stmt.ast_type
            line = stmt.location.begin.line
            if kind == ASTType.Program and str(stmt) == "#program base.":
                continue
            if kind == ASTType.Comment:
                continue
            source_text = _slice(lines, stmt.location)
            if kind == ASTType.ShowSignature:
                # one entry per line, as written (the official files put both on one line)
                if show and show_line == line:
                    show[-1] += " " + source_text.strip()
                else:
                    show.append(source_text.strip())
                show_line = stmt.location.end.line
                continue
            if kind != ASTType.Rule:
                raise FormatError(_ONLY, source=source, field=f"line {line}", value=source_text.strip()[:80])
            canonical = str(stmt)
            if canonical in background:
                seen_background.add(canonical)
                continue
            count = _object_declaration(stmt)
            if count is not None:
                if num_objects is not None:
                    raise FormatError("a second 'object(0..N-1).' line (the number of objects is declared twice)",
                                      source=source, field=f"line {line}", value=source_text.strip())
                num_objects = count
                continue
            column = stmt.location.begin.column
            previous_end = units[-1][1] if units else None
            # the second rule of a two-rule template: on the line after the first rule, indented
            # (official layout), or on the same line after it
            continuation = column > 1 and previous_end == line - 1 and not lines[line - 1][: column - 1].strip()
            same_line = previous_end == line and column > 1
            if (continuation or same_line) and len(units[-1][2]) == 1:
                starts, _, rules, texts = units[-1]
                units[-1] = (starts + [line], stmt.location.end.line, rules + [canonical], texts + [source_text])
            else:
                units.append(([line], stmt.location.end.line, [canonical], [source_text]))
        if num_objects is None:
            raise FormatError("no 'object(0..N-1).' line saying how many objects a scene has", source=source,
                              field="object/1")
        if not 1 <= num_objects <= MAX_OBJECTS:
            raise FormatError(f"number of objects must be 1..{MAX_OBJECTS}", source=source, field="object/1",
                              value=num_objects)
        if len(units) > max_constraints:
            raise FormatError(f"more than {max_constraints} constraints", source=source, field="constraints",
                              value=len(units))
        constraints: list[Constraint] = []
        for starts, _, rules, texts in units:
            try:
                constraints.append(_constraint(rules, texts, source, starts[0]))
            except FormatError:
                if len(rules) == 1:
                    raise
                # two independent one-rule constraints that happen to be adjacent
                for rule, text, start in zip(rules, texts, starts):
                    constraints.append(_constraint([rule], [text], source, start))
        missing = [text for s, text in _background_statements().items() if s not in seen_background]
        if missing:
            raise FormatError(f"the background theory (asp/background.lp) is incomplete: {len(missing)} of its "
                              f"{len(background)} statements are missing, the first one is {missing[0]!r}",
                              source=source, field="background")
        return cls(tuple(constraints), num_objects, id, tuple(show) if show else ())

    def __str__(self) -> str:
        return self.describe()


#: clingo's names of the tokens in its syntax errors, in plain words
_CLINGO_TOKENS = {"EOF": "end of file", "<IDENTIFIER>": "name", "<VARIABLE>": "variable", "<NUMBER>": "number",
                  "<STRING>": "string", "<ANONYMOUS>": "variable"}


def _syntax_error(message: str, code: str) -> tuple[int | None, str]:
    """``(line, plain detail)`` of clingo's parser message ``<string>:L:C-E: error: syntax error,
    unexpected T[, expecting ...]`` on ``code``: ``syntax error at column C: unexpected <what> '<text>'``,
    the text cut from ``code`` (clingo's columns are 1-based, the end exclusive; one line only)."""
    where = re.match(r"<string>:(\d+):(\d+)(?:-(\d+))?:", message)
    detail = re.sub(r"^<string>:[\d:-]+\s*(error:\s*)?", "", message.strip()).replace("\n", " ")
    if where is None:
        return None, detail
    line, column = int(where.group(1)), int(where.group(2))
    found = re.fullmatch(r"syntax error, unexpected ([^\s,]+)(?:, expecting (.*))?", detail)
    if found is None:
        return line, detail
    token, expecting = found.groups()
    if token in _CLINGO_TOKENS:
        lines = code.split("\n")
        end = int(where.group(3)) if where.group(3) else column + 1
        text = lines[line - 1][column - 1:end - 1] if line <= len(lines) and token != "EOF" else ""
        what = _CLINGO_TOKENS[token] + (f" {text!r}" if text else "")
    else:
        what = repr(token)
    if expecting:
        what += ", expecting " + " or ".join(_CLINGO_TOKENS.get(t, repr(t)) for t in expecting.split(" or "))
    return line, f"syntax error at column {column}: unexpected {what}"


def _constraint(rules: list[str], texts: list[str], source: object, line: int) -> Constraint:
    """The constraint of one unit; errors quote the file's text, not clingo's canonical form."""
    return constraint_from_rules(rules, source=source, line=f"line {line}", quote=texts)


def checked_code(text: str, *, source: object = "<string>", max_chars: int = MAX_ENVIRONMENT_CHARS) -> str:
    """``text`` with its comments blanked out, after checking that every code token (as clingo's lexer
    reads it, :mod:`clevr_poc.asp_lexer`) is allowed in an environment file.

    Rejected before any clingo call: a text over ``max_chars`` characters; any lexer error (a non-ASCII
    or control character outside comments, an unknown ``#word``, a ``"`` that starts no string, an
    unclosed block comment); any string; ``#script`` blocks and every directive other than
    :data:`ALLOWED_DIRECTIVES`, ``#include`` first of all (clingo's parser opens included files).

    Returns:
        ASCII text with the same lines and columns and the same code tokens, and no comment.

    Raises:
        FormatError: naming ``source`` and the line.
    """
    if not isinstance(text, str):
        raise FormatError(f"expected text, got {type(text).__name__}", source=source)
    if len(text) > max_chars:
        raise FormatError(f"longer than {max_chars} characters", source=source, field="size", value=len(text))
    lexed = lex(text)
    lines = text.split("\n")
    for token in lexed.tokens:
        where = f"line {token.line}"
        if token.kind == "error":
            raise FormatError(describe_error(token), source=source, field=where)
        if token.kind == "script" or (token.kind == "directive" and token.text not in ALLOWED_DIRECTIVES):
            word = "#script" if token.kind == "script" else token.text
            raise FormatError(f"{word} is not allowed: {_ONLY}", source=source, field=where,
                              value=lines[token.line - 1].strip()[:80])
        if token.kind == "string":
            raise FormatError(f"strings are not allowed: {_ONLY}", source=source, field=where, value=token.text[:40])
    code = lexed.code_only()
    if not code.isascii():  # pragma: no cover - non-ASCII outside comments is a lexer error above
        raise FormatError("non-ASCII text", source=source)
    return code


def _slice(lines: list[str], location: Any) -> str:
    begin, end = location.begin, location.end
    if begin.line == end.line:
        return lines[begin.line - 1][begin.column - 1: end.column - 1]
    chunk = [lines[begin.line - 1][begin.column - 1:]]
    chunk += lines[begin.line: end.line - 1]
    chunk.append(lines[end.line - 1][: end.column - 1])
    return "\n".join(chunk)


def _object_declaration(stmt: Any) -> int | None:
    """N for ``object(0..N-1).``; None when the statement is something else."""
    text = str(stmt).replace(" ", "")
    if text.startswith("object((0..") and text.endswith(")).") and stmt.body == []:
        number = text[len("object((0.."):-len(")).")]
        if number.lstrip("-").isdigit():
            return int(number) + 1
    return None


def environments_equal_semantically(a: Environment, b: Environment) -> bool:
    """Same object count and the same set of constraints (order ignored)."""
    return a.num_objects == b.num_objects and set(a.constraints) == set(b.constraints)


def load_environments(paths: Iterable[str | os.PathLike[str]]) -> list[Environment]:
    return [Environment.from_lp(p) for p in paths]
