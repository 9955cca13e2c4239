"""One lexer for untrusted ASP text that splits it exactly as clingo's own lexer does.

Every check of untrusted ASP (queries in :mod:`clevr_poc.queries.sanitizer`, environment files in
:mod:`clevr_poc.environments.environment`) first asks this module where clingo sees comments, strings,
directives and ``#script`` blocks. A check that reads comments differently from clingo can be fooled:
clingo's block comments nest (``%* %* *% x. *%`` is one comment), a ``%`` inside a block comment starts
a line comment that hides a ``*%`` until the end of the line, ``#!`` starts a line comment, a string
cannot span lines, and the only escapes are ``\\"``, ``\\\\`` and ``\\n`` (a ``"`` that starts no valid
string is a lexer error after which clingo reads on *inside* it).

Source of the rules: gringo's lexer ``libgringo/src/input/nongroundlexer.xch`` (clingo 5.x, re2c
longest match), checked against clingo 5.8 itself by ``tests/test_security_lexer.py`` (clingo's parser
reports comments as ``Comment`` statements and runs ``#include`` at parse time). Differences that do
not matter for the checks: after ``#theory`` clingo switches to its theory lexer (we keep lexing
normally; ``#theory`` is rejected by every check), and offsets, lines and columns count characters where
clingo counts bytes (equal for ASCII, the only text the checks let through).

Usage::

    lexed = lex(text)
    lexed.tokens         # code tokens (no comments), each with kind, text, offset, line, column
    lexed.comments       # (start, end) character offsets of every comment
    lexed.code_only()    # the text with every comment character blanked (newlines kept)
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import NamedTuple

#: Directives clingo's lexer knows (``#`` followed by letters, digits, ``_``; longest match). Any other
#: ``#word`` is a lexer error in clingo.
DIRECTIVES = frozenset({
    "#include", "#edge", "#heuristic", "#project", "#show", "#const", "#minimize", "#minimise", "#maximize",
    "#maximise", "#program", "#external", "#defined", "#true", "#false", "#sum", "#sum+", "#count", "#min",
    "#max", "#theory", "#inf", "#infimum", "#sup", "#supremum", "#script",
})

#: Token kinds.
KINDS = ("identifier", "variable", "anonymous", "number", "string", "directive", "script", "punct", "error")

# clingo's operators, longest first (Python alternation is first-match, re2c is longest-match)
# (clingo 5.8 dropped the ``$`` operators of its old CSP syntax: ``$`` is a lexer error there)
_PUNCT = (":-", ":~", "..", "**", ">=", "<=", "==", "!=", "<>", ";", ".", ":", ",", "|", "[", "]", "(", ")", "{",
          "}", "+", "-", "*", "\\", ">", "<", "=", "/", "@", "&", "^", "~", "?")

_NORMAL = re.compile("|".join((
    r"(?P<ws>[\t\r ]+)",
    r"(?P<nl>\n)",
    r"(?P<block>%\*)",
    r"(?P<line>%|#!)",
    r"(?P<script>#script)(?![A-Za-z0-9_])",
    r"(?P<directive>#sum\+|#[A-Za-z0-9_]*)",
    r'(?P<string>"(?:[^\\"\n]|\\"|\\\\|\\n)*")',
    r"(?P<number>0x[0-9A-Fa-f]+|0o[0-7]+|0b[01]+|0|[1-9][0-9]*)",
    r"(?P<identifier>[_']*[a-z]['A-Za-z0-9_]*)",
    r"(?P<variable>[_']*[A-Z]['A-Za-z0-9_]*)",
    r"(?P<anonymous>_)",
    "(?P<punct>" + "|".join(re.escape(p) for p in _PUNCT) + ")",
    r"(?P<error>.)",
)), re.DOTALL)
# inside a block comment: nesting, a line comment, a line end; anything else is skipped
_IN_BLOCK = re.compile(r"\*%|%\*|%|\n")
# the head of a #script block (clingo's "script" condition): up to the ")" that opens the code
_SCRIPT_HEAD = re.compile("|".join((
    r"(?P<ws>[\t\r ]+)", r"(?P<nl>\n)", r"(?P<block>%\*)", r"(?P<line>%|#!)",
    r"(?P<identifier>[_']*[a-z]['A-Za-z0-9_]*)", r"(?P<open>\()", r"(?P<close>\))[\t\r ]*",
    r"(?P<error>#[A-Za-z0-9_]*|.)",
)), re.DOTALL)
_SCRIPT_END = re.compile(r"[\t\r ]*#end")


class Token(NamedTuple):
    """One code token.

    Attributes:
        kind: one of :data:`KINDS`; ``"error"`` is what clingo reports as a lexer error (a ``"`` that
            starts no valid string, an unknown ``#word``, a character outside clingo's alphabet such as
            any non-ASCII character, an unclosed block comment or ``#script`` block: text ``""``).
        text: the token's text (a ``"script"`` token holds the whole ``#script ... #end`` block).
        offset: character offset in the text.
        line: 1-based line; only ``"\\n"`` ends a line (clingo reads ``"\\r"`` as a blank).
        column: 1-based column.
    """

    kind: str
    text: str
    offset: int
    line: int
    column: int


@dataclass(frozen=True)
class Lexed:
    """The lexer's reading of one text.

    Attributes:
        text: the input.
        tokens: the code tokens in order (comments and blanks dropped).
        comments: ``(start, end)`` character offsets of each comment (a block comment with the
            comments nested in it is one span).
    """

    text: str
    tokens: tuple[Token, ...]
    comments: tuple[tuple[int, int], ...]

    def code_only(self) -> str:
        """The text with every comment character replaced by a blank (newlines kept, so lines and
        columns stay): clingo reads the same code tokens from it and no comment at all."""
        if not self.comments:
            return self.text
        parts: list[str] = []
        pos = 0
        for start, end in self.comments:
            parts.append(self.text[pos:start])
            parts.append(re.sub(r"[^\n]", " ", self.text[start:end]))
            pos = end
        parts.append(self.text[pos:])
        return "".join(parts)

    def first(self, kind: str) -> Token | None:
        """The first token of ``kind``, or None."""
        return next((t for t in self.tokens if t.kind == kind), None)


def _skip_block(text: str, pos: int) -> int:
    """End offset of the block comment whose ``%*`` ends at ``pos`` (``len(text) + 1`` when unclosed)."""
    depth = 1
    n = len(text)
    while True:
        m = _IN_BLOCK.search(text, pos)
        if m is None:
            return n + 1
        token = m.group(0)
        pos = m.end()
        if token == "*%":
            depth -= 1
            if depth == 0:
                return pos
        elif token == "%*":
            depth += 1
        elif token == "%":
            newline = text.find("\n", pos)
            if newline < 0:
                return n + 1
            pos = newline + 1


def lex(text: str) -> Lexed:
    """Split ``text`` into code tokens and comments as clingo's lexer does.

    Args:
        text: ASP program text (any ``str``; a NUL character is an ``"error"`` token, though clingo's C
            interface would read the text only up to it).

    Returns:
        :class:`Lexed`. Never raises: what clingo would report as a lexer error is an ``"error"``
        token, so a check rejects it with its own message.
    """
    tokens: list[Token] = []
    comments: list[tuple[int, int]] = []
    n = len(text)
    pos, line, line_start = 0, 1, 0
    match = _NORMAL.match
    while pos < n:
        m = match(text, pos)
        kind = m.lastgroup
        end = m.end()
        if kind == "ws":
            pos = end
            continue
        if kind == "nl":
            pos, line, line_start = end, line + 1, end
            continue
        if kind == "block" or kind == "line":
            if kind == "block":
                stop = _skip_block(text, end)
            else:
                newline = text.find("\n", end)
                stop = n if newline < 0 else newline
                while stop > end and text[stop - 1] == "\r":  # clingo's comment text ends before "\r\n"
                    stop -= 1
            if stop > n:  # an unclosed block comment: clingo's "unexpected <EOF>"
                comments.append((pos, n))
                tokens.append(Token("error", "", n, line + text.count("\n", pos, n), 1))
                break
            comments.append((pos, stop))
            line, line_start = _lines_after(text, pos, stop, line, line_start)
            pos = stop
            continue
        if kind == "script":
            start_line, start_column = line, pos - line_start + 1
            stop, line, line_start, comments_in_head = _script(text, end, line, line_start)
            comments.extend(comments_in_head)
            tokens.append(Token("script" if stop <= n else "error", text[pos:min(stop, n)] if stop <= n
                                else "#script", pos, start_line, start_column))
            if stop > n:
                break
            pos = stop
            continue
        if kind == "directive" and m.group(0) not in DIRECTIVES:
            kind = "error"
        tokens.append(Token(kind, m.group(0), pos, line, pos - line_start + 1))
        pos = end
    return Lexed(text, tuple(tokens), tuple(comments))


def _lines_after(text: str, start: int, stop: int, line: int, line_start: int) -> tuple[int, int]:
    """``(line, line start offset)`` after skipping ``text[start:stop]`` from ``line`` (1-based) whose
    first character is at offset ``line_start``: each ``"\\n"`` in the skipped text starts a new line."""
    newlines = text.count("\n", start, stop)
    if newlines:
        return line + newlines, text.rfind("\n", start, stop) + 1
    return line, line_start


def _script(text: str, pos: int, line: int, line_start: int) -> tuple[int, int, int, list[tuple[int, int]]]:
    """Skip a ``#script`` block whose keyword ends at ``pos``: ``(end offset or len+1 if unclosed,
    line, line start, comments in its head)``. The head is lexed in clingo's "script" condition (blanks,
    comments, identifiers, parentheses); the code runs from the ``)`` to the first ``#end``."""
    n = len(text)
    comments: list[tuple[int, int]] = []
    while pos < n:
        m = _SCRIPT_HEAD.match(text, pos)
        kind = m.lastgroup
        if kind == "nl":
            line, line_start = line + 1, m.end()
        elif kind in ("block", "line"):
            stop = _skip_block(text, m.end()) if kind == "block" else text.find("\n", m.end())
            if kind == "line" and stop < 0:
                stop = n
            if stop > n:
                return n + 1, line, line_start, comments
            comments.append((pos, stop))
            line, line_start = _lines_after(text, pos, stop, line, line_start)
            pos = stop
            continue
        elif kind == "close":
            end = _SCRIPT_END.search(text, m.end())
            if end is None:
                return n + 1, line, line_start, comments
            line, line_start = _lines_after(text, m.end(), end.end(), line, line_start)
            return end.end(), line, line_start, comments
        pos = m.end()
    return n + 1, line, line_start, comments


def describe_error(token: Token) -> str:
    """A one-line description of an ``"error"`` token (for the checks' messages)."""
    text = token.text
    if text == "":
        return "unclosed block comment (%* without its *%)"
    if text == "#script":
        return "#script block without its #end"
    if text.startswith("#"):
        return f"unknown directive {text!r}"
    if text == '"':
        return 'a string that is never closed on its line (or holds an escape other than \\" \\\\ \\n)'
    if not text.isascii():
        return f"non-ASCII character {text!r} (U+{ord(text):04X})"
    if not text.isprintable():
        return f"control character {text!r}"
    return f"character {text!r} is not part of ASP"
