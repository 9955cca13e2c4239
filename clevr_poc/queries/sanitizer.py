"""The one gate for untrusted ASP: every query written by a user, a parser or an LLM passes here.

clingo executes ``#script`` blocks (Python/Lua), reads files named by ``#include`` and calls
``@functions`` during grounding, so an ASP text from outside is never handed to clingo as is. The
sanitizer splits it into tokens and comments exactly as clingo's lexer does
(:mod:`clevr_poc.asp_lexer`: nested ``%* *%`` block comments, ``%`` and ``#!`` line comments),
checks the tokens against a whitelist (identifiers, variables, decimal integers, ``( ) , . :- !=``;
anything else, a directive, a string, a non-ASCII character first of all, is rejected), parses the one
rule of the query language, checks every predicate and constant, and re-prints the rule from the
checked structure; only that re-printed text ever reaches the solver (comments never do).

Query language (SEMANTICS.md, paper §3.4)::

    missing(Q) :- hasProperty(X, color, Q), hasProperty(Y, shape, cube), left(Y, X), X != Y, ...

- head: ``missing(V)`` with V a variable (``query`` / ``unknown``, used in the paper's prompts, are
  accepted and renamed to ``missing`` unless ``rename_head=False``);
- body: positive literals ``hasProperty/3``, ``at/2``, ``left|right|front|behind/2``,
  ``same_color|same_size|same_shape|same_material/2``, ``sameProperty/3``, ``object/1``, and ``!=``
  comparisons between objects (variables or object ids 0..99); other arguments are variables, object
  ids, region ids, attribute names and values;
- at most :data:`MAX_OBJECT_VARIABLES` distinct variables in object positions (the official question
  families use at most 4: X, Y1, Y2, Y3), at most :data:`MAX_VARIABLES` variables in all;
- nothing else: no directives (``#script``, ``#include``, ``#external``, ``#program``, ``#const``, ...),
  no ``not``, no aggregates, intervals, pools, functions, ``@`` calls, strings or weak constraints.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from clevr_poc import domain
from clevr_poc.errors import UnsafeProgramError
from clevr_poc.asp_lexer import describe_error, lex

#: Predicates allowed in a query body, with their arities.
QUERY_PREDICATES: dict[str, int] = {
    "hasProperty": 3, "at": 2, "left": 2, "right": 2, "front": 2, "behind": 2,
    "same_color": 2, "same_size": 2, "same_shape": 2, "same_material": 2, "sameProperty": 3, "object": 1,
}
HEAD_NAMES = ("missing", "query", "unknown")

#: Size limits of a query (characters, body literals, distinct variables).
MAX_QUERY_CHARS = 4000
MAX_BODY_LITERALS = 40
MAX_VARIABLES = 20
MAX_OBJECT_ID = 99
#: Distinct variables in object positions (first argument of ``hasProperty``/``at``/``object``, both
#: arguments of the relations and ``sameProperty``). The official families use at most 4 (three_hop:
#: X, Y1, Y2, Y3; SEMANTICS.md "The official query form"); the parsers' vocabulary names 6 (X, Y, Z, W,
#: V, U). Grounding grows as N to the power of this number, so it bounds the work of one query.
#: Override per call with ``sanitize_query(..., max_object_variables=k)``.
MAX_OBJECT_VARIABLES = 6

#: Argument positions that name objects, per predicate.
OBJECT_POSITIONS: dict[str, tuple[int, ...]] = {
    "hasProperty": (0,), "at": (0,), "object": (0,), "left": (0, 1), "right": (0, 1), "front": (0, 1),
    "behind": (0, 1), "same_color": (0, 1), "same_size": (0, 1), "same_shape": (0, 1), "same_material": (0, 1),
    "sameProperty": (0, 1), "!=": (0, 1),
}

_CONSTANTS = frozenset(domain.ATTRIBUTES) | frozenset(domain.ATTRIBUTE_OF_VALUE)
_VARIABLE = re.compile(r"^[A-Z][A-Za-z0-9_]*$", re.ASCII)
_NUMBER = re.compile(r"^[0-9]+$", re.ASCII)


@dataclass(frozen=True)
class SanitizedQuery:
    """A checked query.

    Attributes:
        text: the canonical re-printed rule (``missing(Q) :- lit1, lit2, ... .``): the only text the
            solver ever sees.
        head_variable: the answer variable.
        literals: body literals as canonical strings, in input order.
        attribute: the queried attribute (from ``hasProperty(X, <attr>, Q)``) or None.
        atoms: body literals as ``(predicate, arguments)``, ``("!=", (left, right))`` for comparisons;
            arguments are strings (variables start with an upper-case letter).
    """

    text: str
    head_variable: str
    literals: tuple[str, ...]
    attribute: str | None
    atoms: tuple[tuple[str, tuple[str, ...]], ...] = ()


def _reject(reason: str, text: str) -> UnsafeProgramError:
    snippet = text.strip().replace("\n", " ")
    if len(snippet) > 120:
        snippet = snippet[:117] + "..."
    return UnsafeProgramError(f"rejected ASP query: {reason}: {snippet!r}")


def sanitize_query(text: str, *, rename_head: bool = True,
                   max_object_variables: int = MAX_OBJECT_VARIABLES) -> SanitizedQuery:
    """Check an untrusted ASP query and return its canonical form.

    Args:
        text: one rule, e.g. ``"missing(Q):-hasProperty(X,size,Q),hasProperty(X,color,red)."``; the
            final period may be omitted.
        rename_head: accept ``query(Q)`` / ``unknown(Q)`` heads and rename them to ``missing(Q)``.
        max_object_variables: most distinct variables in object positions (default
            :data:`MAX_OBJECT_VARIABLES`).

    Returns:
        :class:`SanitizedQuery`.

    Raises:
        UnsafeProgramError: anything outside the query language (the message says what), or a text
            longer than :data:`MAX_QUERY_CHARS`, more than :data:`MAX_BODY_LITERALS` literals,
            :data:`MAX_VARIABLES` variables or ``max_object_variables`` object variables.
    """
    if not isinstance(text, str):
        raise UnsafeProgramError(f"rejected ASP query: expected a string, got {type(text).__name__}")
    if len(text) > MAX_QUERY_CHARS:
        raise _reject(f"longer than {MAX_QUERY_CHARS} characters ({len(text)})", text[:120])
    tokens = _tokenize(text)
    if not tokens:
        raise _reject("empty query", text)
    parser = _Parser(tokens, text)
    head_name, head_var = parser.head()
    if head_name != "missing" and not rename_head:
        raise _reject(f"head {head_name}/1 is not missing/1", text)
    body = parser.body()
    if len(body) > MAX_BODY_LITERALS:
        raise _reject(f"more than {MAX_BODY_LITERALS} body literals ({len(body)})", text)
    variables: set[str] = set()
    atom_variables: set[str] = set()
    object_variables: set[str] = set()
    literals: list[str] = []
    attribute: str | None = None
    for name, args in body:
        names = {a for a in args if _VARIABLE.match(a)}
        variables |= names
        if names:
            for i in OBJECT_POSITIONS.get(name, ()):
                if i < len(args) and args[i] in names:
                    object_variables.add(args[i])
        if name == "!=":
            for arg in args:
                if arg not in names and not _NUMBER.match(arg):
                    raise _reject(f"{arg!r} in {args[0]} != {args[1]} is not an object (a variable or an "
                                  f"object id)", text)
                if _NUMBER.match(arg) and int(arg) > MAX_OBJECT_ID:
                    raise _reject(f"number {arg} out of range 0..{MAX_OBJECT_ID}", text)
            literals.append(f"{args[0]}!={args[1]}")
            continue
        atom_variables |= names
        if QUERY_PREDICATES.get(name) != len(args):
            raise _reject(f"predicate {name}/{len(args)} is not allowed", text)
        for position, arg in enumerate(args):
            if _VARIABLE.match(arg):
                continue
            if _NUMBER.match(arg):
                if int(arg) > MAX_OBJECT_ID:
                    raise _reject(f"number {arg} out of range 0..{MAX_OBJECT_ID}", text)
                continue
            if arg not in _CONSTANTS:
                raise _reject(f"unknown constant {arg!r}", text)
        if name == "hasProperty":
            if not _VARIABLE.match(args[1]) and args[1] not in domain.ATTRIBUTES:
                raise _reject(f"{args[1]!r} is not an attribute", text)
            if args[1] in domain.ATTRIBUTES and not _VARIABLE.match(args[2]) \
                    and args[2] not in domain.DOMAINS[args[1]]:
                raise _reject(f"{args[2]!r} is not a {args[1]}", text)
            if args[2] == head_var and args[1] in domain.ATTRIBUTES and attribute is None:
                attribute = args[1]
        elif name == "at":
            if not _VARIABLE.match(args[1]) and args[1] not in {str(r) for r in domain.REGIONS}:
                raise _reject(f"{args[1]!r} is not a region", text)
        elif name == "sameProperty":
            if not _VARIABLE.match(args[2]) and args[2] not in domain.ATTRIBUTES:
                raise _reject(f"{args[2]!r} is not an attribute", text)
        literals.append(f"{name}({','.join(args)})")
        for arg in args[:1] if name in ("hasProperty", "at", "object") else args[:2]:
            if not _VARIABLE.match(arg) and not _NUMBER.match(arg):
                raise _reject(f"{arg!r} is not an object (variable or object id)", text)
    if len(variables) > MAX_VARIABLES:
        raise _reject(f"more than {MAX_VARIABLES} variables ({len(variables)})", text)
    if len(object_variables) > max_object_variables:
        raise _reject(f"more than {max_object_variables} object variables ({len(object_variables)}: "
                      f"{', '.join(sorted(object_variables))}; the official questions use at most 4)", text)
    if head_var not in variables:
        raise _reject(f"head variable {head_var} does not occur in the body", text)
    unsafe = sorted(variables - atom_variables)
    if unsafe:
        raise _reject(f"variable(s) {', '.join(unsafe)} occur only in comparisons (unsafe)", text)
    canonical = f"missing({head_var}) :- {', '.join(literals)}."
    return SanitizedQuery(canonical, head_var, tuple(literals), attribute, tuple(body))


_DIRECTIVE_HINT = "(no #script, #include, #external, #program, #const or any other directive)"


def _tokenize(text: str) -> list[str]:
    """Code tokens of ``text`` as clingo reads them (:mod:`clevr_poc.asp_lexer`; comments dropped), checked
    against the query language's token whitelist."""
    matches = _FAST_TOKEN.findall(text)  # fast path: a text of query-language tokens only
    if sum(map(len, matches)) == len(text) and not _FAST_GUARD.search(text) and text.count("(") == text.count(")"):
        return [t for t in matches if not t[0].isspace()]
    lexed = lex(text)
    for token in lexed.tokens:
        if token.kind == "error":
            if len(token.text) == 1:
                detail = describe_error(token)
                raise _reject(f"character {token.text!r} is not part of the query language"
                              + (f" ({detail})" if "non-ASCII" in detail or token.text == '"' else ""), text)
            if token.text.startswith("#") and token.text != "#script":
                raise _reject(f"directive {token.text!r} is not allowed {_DIRECTIVE_HINT}", text)
            raise _reject(describe_error(token), text)
        if token.kind in ("directive", "script"):
            word = "#script" if token.kind == "script" else token.text
            raise _reject(f"directive {word!r} is not allowed {_DIRECTIVE_HINT}", text)
        if token.kind == "string":
            raise _reject(f"character {chr(34)!r} is not part of the query language (no strings: "
                          f"{token.text[:20]!r})", text)
    tokens = [t.text for t in lexed.tokens]
    for token in tokens:
        if token in _ALLOWED_PUNCT:
            continue
        if token == "..":
            raise _reject("intervals (a..b) are not part of the query language", text)
        first = token[0]
        if first.isdigit():
            if not _NUMBER.match(token):
                raise _reject(f"number {token!r} is not a decimal object id", text)
            continue
        if first.isalpha() or first in "_'":
            if "'" in token:
                raise _reject(f"{token!r}: primes (') are not part of the query language", text)
            continue
        raise _reject(f"{token!r} is not part of the query language", text)
    _check_parentheses(tokens, text)
    return tokens


_ALLOWED_PUNCT = frozenset({"(", ")", ",", ".", ":-", "!="})
# The fast path: where these tokens cover the whole text and the guard finds nothing, they are exactly
# the tokens clingo reads (asp_lexer): no comment, string, directive, prime or other operator can be in
# such a text, identifiers and variables start with a letter, numbers are decimal without a leading 0,
# and ".." (an interval) is not two "." tokens. Anything else goes through the lexer, token by token.
_FAST_TOKEN = re.compile(r"[A-Za-z][A-Za-z0-9_]*|[0-9]+|:-|!=|[(),.]|[ \t\r\n]+")
_FAST_GUARD = re.compile(r"(?<![A-Za-z0-9_])(?:_|0[0-9A-Za-z])|\.\.")


def _check_parentheses(tokens: list[str], text: str) -> None:
    """Reject unbalanced parentheses with a message that says so (before the parser reads a term)."""
    depth = 0
    opened: list[str] = []
    for i, token in enumerate(tokens):
        if token == "(":
            depth += 1
            opened.append(tokens[i - 1] if i else "(")
        elif token == ")":
            depth -= 1
            if depth < 0:
                raise _reject("unmatched ')' (no '(' to close)", text)
            opened.pop()
    if depth > 0:
        raise _reject(f"unclosed parenthesis: the '(' after {opened[-1]!r} is never closed", text)


class _Parser:
    """Recursive-descent parser of ``head :- literal, ..., literal.`` over the whitelisted tokens."""

    def __init__(self, tokens: list[str], text: str) -> None:
        self.tokens = tokens
        self.pos = 0
        self.text = text

    def peek(self) -> str | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def take(self, expected: str | None = None) -> str:
        token = self.peek()
        if token is None:
            raise _reject("unexpected end of query" + (f" (expected {expected!r})" if expected else ""), self.text)
        if expected is not None and token != expected:
            raise _reject(f"expected {expected!r}, found {token!r}", self.text)
        self.pos += 1
        return token

    def head(self) -> tuple[str, str]:
        name = self.take()
        if name not in HEAD_NAMES:
            raise _reject(f"the head must be missing(Q), found {name!r}", self.text)
        self.take("(")
        var = self.take()
        if not _VARIABLE.match(var) or var == "_":
            raise _reject("the head argument must be a variable", self.text)
        self.take(")")
        self.take(":-")
        return name, var

    def term(self) -> str:
        token = self.take()
        if token == "_" or (token.startswith("_")):
            raise _reject("anonymous variables are not allowed", self.text)
        if _VARIABLE.match(token) or _NUMBER.match(token) or re.match(r"^[a-z][A-Za-z0-9_]*$", token):
            if self.peek() == "(":
                raise _reject(f"function term {token}(...) is not allowed", self.text)
            return token
        raise _reject(f"unexpected {token!r}", self.text)

    def literal(self) -> tuple[str, tuple[str, ...]]:
        token = self.peek()
        if token == "not":
            raise _reject("negation ('not') is not part of the query language", self.text)
        if token is not None and re.match(r"^[a-z]", token) and self.pos + 1 < len(self.tokens) \
                and self.tokens[self.pos + 1] == "(":
            name = self.take()
            self.take("(")
            args = [self.term()]
            while self.peek() == ",":
                self.take(",")
                args.append(self.term())
            self.take(")")
            return name, tuple(args)
        left = self.term()
        op = self.take()
        if op != "!=":
            raise _reject(f"the only comparison allowed is != (found {op!r})", self.text)
        right = self.term()
        return "!=", (left, right)

    def body(self) -> list[tuple[str, tuple[str, ...]]]:
        body = [self.literal()]
        while self.peek() == ",":
            self.take(",")
            body.append(self.literal())
        if self.peek() == ".":
            self.take(".")
        if self.peek() is not None:
            raise _reject(f"expected exactly one rule; unexpected {self.peek()!r} after the body", self.text)
        return body
