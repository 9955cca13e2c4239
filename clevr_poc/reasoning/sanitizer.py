"""The one gate for untrusted ASP: every query written by a user, a parser or an LLM passes here.

clingo executes ``#script`` blocks (Python/Lua), reads files named by ``#include`` and calls
``@functions`` during grounding, so an ASP text from outside is never handed to clingo as is. The
sanitizer tokenizes it against a whitelist of tokens (identifiers, variables, integers, ``( ) , . :-
!=``; anything else, ``#`` first of all, is rejected), parses the one rule of the query language,
checks every predicate and constant, and re-prints the rule from the checked structure; only that
re-printed text ever reaches the solver.

Query language (SEMANTICS.md, paper §3.4)::

    missing(Q) :- hasProperty(X, color, Q), hasProperty(Y, shape, cube), left(Y, X), X != Y, ...

- head: ``missing(V)`` with V a variable (``query`` / ``unknown``, used in the paper's prompts, are
  accepted and renamed to ``missing`` unless ``rename_head=False``);
- body: positive literals ``hasProperty/3``, ``at/2``, ``left|right|front|behind/2``,
  ``same_color|same_size|same_shape|same_material/2``, ``sameProperty/3``, ``object/1``, and ``!=``
  comparisons; arguments are variables, object ids 0..99, region ids, attribute names and values;
- nothing else: no directives (``#script``, ``#include``, ``#external``, ``#program``, ``#const``, ...),
  no ``not``, no aggregates, intervals, pools, functions, ``@`` calls, strings or weak constraints.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from clevr_poc import domain
from clevr_poc.errors import UnsafeProgramError

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


def sanitize_query(text: str, *, rename_head: bool = True) -> SanitizedQuery:
    """Check an untrusted ASP query and return its canonical form.

    Args:
        text: one rule, e.g. ``"missing(Q):-hasProperty(X,size,Q),hasProperty(X,color,red)."``; the
            final period may be omitted.
        rename_head: accept ``query(Q)`` / ``unknown(Q)`` heads and rename them to ``missing(Q)``.

    Returns:
        :class:`SanitizedQuery`.

    Raises:
        UnsafeProgramError: anything outside the query language (the message says what), or a text
            longer than :data:`MAX_QUERY_CHARS`, more than :data:`MAX_BODY_LITERALS` literals or
            :data:`MAX_VARIABLES` variables.
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
    literals: list[str] = []
    attribute: str | None = None
    for name, args in body:
        names = {a for a in args if _VARIABLE.match(a)}
        variables |= names
        if name == "!=":
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
    if head_var not in variables:
        raise _reject(f"head variable {head_var} does not occur in the body", text)
    unsafe = sorted(variables - atom_variables)
    if unsafe:
        raise _reject(f"variable(s) {', '.join(unsafe)} occur only in comparisons (unsafe)", text)
    canonical = f"missing({head_var}) :- {', '.join(literals)}."
    return SanitizedQuery(canonical, head_var, tuple(literals), attribute, tuple(body))


_TOKEN = re.compile(r"[ \t\r\n]+|%[^\n]*|:-|!=|\.\.|[(),.]|[A-Za-z_][A-Za-z0-9_]*|[0-9]+", re.ASCII)


def _tokenize(text: str) -> list[str]:
    # fast path: the same leftmost-first matches as the loop below (findall scans the same way), valid
    # when they cover the whole text (no character left unmatched) and hold no interval; anything else
    # goes through the loop, which names the offending character
    matches = _TOKEN.findall(text)
    if sum(map(len, matches)) == len(text) and ".." not in matches:
        return [t for t in matches if not t[0].isspace() and t[0] != "%"]
    tokens: list[str] = []
    pos = 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            char = text[pos]
            if char == "#":
                word = re.match(r"#[A-Za-z_]*", text[pos:]).group(0)
                raise _reject(f"directive {word!r} is not allowed (no #script, #include, #external, "
                              f"#program, #const or any other directive)", text)
            raise _reject(f"character {char!r} is not part of the query language", text)
        token = m.group(0)
        if token == "..":
            raise _reject("intervals (a..b) are not part of the query language", text)
        if not token[0].isspace() and token[0] != "%":
            tokens.append(token)
        pos = m.end()
    return tokens


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
