"""The one gate for untrusted ASP: every query written by a user, a parser or an LLM passes here.

clingo executes ``#script`` blocks (Python/Lua), reads files named by ``#include`` and calls
``@functions`` during grounding, so an ASP text from outside is never handed to clingo as is. The
sanitizer splits it into tokens and comments exactly as clingo's lexer does
(:mod:`clevr_poc.asp_lexer`: nested ``%* *%`` block comments, ``%`` and ``#!`` line comments),
checks the tokens against a whitelist (identifiers, variables, decimal integers, ``( ) , . :- !=``;
anything else, a directive, a string, a non-ASCII character first of all, is rejected), parses the one
rule of the query language into typed terms and literals, and checks them
(:func:`clevr_poc.queries.query.analyse`: every predicate, constant and bound); the result is a
:class:`~clevr_poc.queries.query.SanitizedQuery`, whose canonical text, printed from the checked
structure, is the only query text that ever reaches the solver (comments never do). A rejected text
that reads as English (:func:`looks_like_english`) is rejected with :data:`ENGLISH_HINT` instead of
its first bad token, and a bare word in the body is named as such (not as a bad comparison).

Query language (SEMANTICS.md, paper §3.4)::

    missing(Q) :- hasProperty(X, color, Q), hasProperty(Y, shape, cube), left(Y, X), X != Y, ...

- head: ``missing(V)`` with V a variable (``query`` / ``unknown``, used in the paper's prompts, are
  accepted and renamed to ``missing`` unless ``rename_head=False``);
- body: positive literals ``hasProperty/3``, ``at/2``, ``left|right|front|behind/2``,
  ``same_color|same_size|same_shape|same_material/2``, ``sameProperty/3``, ``object/1``, and ``!=``
  comparisons between objects (variables or object ids 0..99); other arguments are variables, object
  ids, region ids, attribute names and values;
- at most :data:`MAX_QUERY_OBJECT_VARIABLES` distinct variables in object positions (the official question
  families use at most 4: X, Y1, Y2, Y3), at most :data:`MAX_VARIABLES` variables in all;
- a variable other than the head that occurs once, in a value (or attribute) position of ``hasProperty/3``
  (``sameProperty/3``), and reads as a value (an attribute) in lower case is rejected:
  ``hasProperty(X,color,Red)`` would match every colour ("'Red' is a variable (capitalised); the value is
  'red'"); other singleton variables are kept (valid ASP; no official or generated query has one);
- nothing else: no directives (``#script``, ``#include``, ``#external``, ``#program``, ``#const``, ...),
  no ``not``, no aggregates, intervals, pools, functions, ``@`` calls, strings or weak constraints.
"""

from __future__ import annotations

import re

from clevr_poc import domain
from clevr_poc.asp_lexer import describe_error, lex
from clevr_poc.errors import UnsafeProgramError
from clevr_poc.queries.query import (
    MAX_BODY_LITERALS, MAX_OBJECT_ID, MAX_QUERY_OBJECT_VARIABLES, MAX_VARIABLES, OBJECT_POSITIONS, QUERY_PREDICATES,
    Atom, Constant, Inequality, Literal, Number, SanitizedQuery, Term, Variable, analyse, reject,
)

__all__ = ["ENGLISH_HINT", "HEAD_NAMES", "MAX_BODY_LITERALS", "MAX_OBJECT_ID", "MAX_QUERY_CHARS", "MAX_QUERY_OBJECT_VARIABLES",
           "MAX_VARIABLES", "OBJECT_POSITIONS", "QUERY_PREDICATES", "SanitizedQuery", "looks_like_english",
           "sanitize_query"]

HEAD_NAMES = ("missing", "query", "unknown")
#: Longest query text read (characters).
MAX_QUERY_CHARS = 4000

_VARIABLE = re.compile(r"^[A-Z][A-Za-z0-9_]*$", re.ASCII)
_NUMBER = re.compile(r"^[0-9]+$", re.ASCII)
_IDENTIFIER = re.compile(r"^[a-z][A-Za-z0-9_]*$")
_reject = reject


def sanitize_query(text: str, *, rename_head: bool = True,
                   max_object_variables: int = MAX_QUERY_OBJECT_VARIABLES) -> SanitizedQuery:
    """Check an untrusted ASP query and return its typed value.

    Args:
        text: one rule, e.g. ``"missing(Q):-hasProperty(X,size,Q),hasProperty(X,color,red)."``; the
            final period may be omitted.
        rename_head: accept ``query(Q)`` / ``unknown(Q)`` heads and rename them to ``missing(Q)``.
        max_object_variables: most distinct variables in object positions (default
            :data:`~clevr_poc.queries.query.MAX_QUERY_OBJECT_VARIABLES`).

    Returns:
        :class:`~clevr_poc.queries.query.SanitizedQuery` (``.text`` is its canonical rule).

    Raises:
        UnsafeProgramError: anything outside the query language (the message says what), or a text
            longer than :data:`MAX_QUERY_CHARS`, more than :data:`MAX_BODY_LITERALS` literals,
            :data:`MAX_VARIABLES` variables or ``max_object_variables`` object variables.
    """
    if not isinstance(text, str):
        raise UnsafeProgramError(f"rejected ASP query: expected a string, got {type(text).__name__}")
    if len(text) > MAX_QUERY_CHARS:
        raise _reject(f"longer than {MAX_QUERY_CHARS} characters ({len(text)})", text[:120])
    try:
        tokens = _tokenize(text)
        if not tokens:
            raise _reject("empty query", text)
        parser = _Parser(tokens, text)
        head_name, head_var = parser.head()
        if head_name != "missing" and not rename_head:
            raise _reject(f"head {head_name}/1 is not missing/1", text)
        body = tuple(parser.body())
    except UnsafeProgramError:
        if looks_like_english(text):  # only a text rejected anyway: a query never gets this message
            raise _reject(ENGLISH_HINT, text) from None
        raise
    analysis = analyse(head_var, body, max_object_variables)
    if isinstance(analysis, str):
        raise _reject(analysis, text)
    for variable in analysis.variables:  # a name that reads as a value in lower case: rare, checked then
        if variable.lower() in _VALUE_WORDS:
            problem = _capitalised_value(head_var, body)
            if problem is not None:
                raise _reject(problem, text)
            break
    return SanitizedQuery.checked(head_var, body, analysis)


#: The reason given for a rejected text that :func:`looks_like_english`.
ENGLISH_HINT = ("this looks like an English question, not an ASP query "
                "(missing(Q) :- hasProperty(X,<attribute>,Q), ...)")
_PLAIN_WORDS = re.compile(r"[A-Za-z]+ +[A-Za-z]+ +[A-Za-z]+", re.ASCII)


def looks_like_english(text: str) -> bool:
    """Whether ``text`` reads as an English sentence rather than a rule: it has no ``:-`` and ends with
    ``?`` or holds three plain words separated by spaces (``"What color is the cube?"``,
    ``"color of the cube"``). Used only for a text rejected anyway, to say what it looks like."""
    if not isinstance(text, str) or ":-" in text:
        return False
    return text.rstrip().endswith("?") or _PLAIN_WORDS.search(text) is not None


def _capitalised_value(head: Variable, body: tuple[Literal, ...]) -> str | None:
    """Why a variable looks like a capitalised value, or None: a variable other than the head that occurs
    once in the body, in the value position of ``hasProperty/3`` (or an attribute position of
    ``hasProperty/3`` / ``sameProperty/3``), whose lowercase is a value (an attribute), e.g.
    ``hasProperty(X,color,Red)``: ``Red`` matches every colour, which is not what was meant."""
    suspects: list[tuple[Variable, str, str]] = []
    for literal in body:
        if type(literal) is not Atom or literal.predicate not in ("hasProperty", "sameProperty"):
            continue
        terms = literal.terms
        attribute = terms[1 if literal.predicate == "hasProperty" else 2]
        if type(attribute) is Variable and attribute != head and attribute.lower() in _ATTRIBUTES:
            suspects.append((attribute, "attribute", attribute.lower()))
        if literal.predicate == "hasProperty" and type(terms[2]) is Variable and terms[2] != head:
            value = terms[2].lower()
            if value in domain.ATTRIBUTE_OF_VALUE:  # any value: "'cube' is not a size" comes next if so
                suspects.append((terms[2], "value", value))
    for variable, kind, lowered in suspects:
        if sum(literal.variables().count(variable) for literal in body) == 1:
            return f"{str(variable)!r} is a variable (capitalised); the {kind} is {lowered!r}"
    return None


_ATTRIBUTES = frozenset(domain.ATTRIBUTES)
_VALUE_WORDS = _ATTRIBUTES | frozenset(domain.ATTRIBUTE_OF_VALUE)


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
    """Reject unbalanced parentheses with a message that says so and where (before the parser reads a
    term): ``unclosed '(' after 'left' at column 19`` (the innermost one left open) or ``')' at column 40 has no
    matching '('``; ``line L, column C`` where the text has several lines (1-based, as clingo counts)."""
    depth = 0
    opened: list[int] = []  # token index of each open "("
    for i, token in enumerate(tokens):
        if token == "(":
            depth += 1
            opened.append(i)
        elif token == ")":
            depth -= 1
            if depth < 0:
                raise _reject(f"')' at {_position(text, i)} has no matching '('", text)
            opened.pop()
    if depth > 0:
        i = opened[-1]
        after = f" after {tokens[i - 1]!r}" if i and tokens[i - 1] not in _ALLOWED_PUNCT else ""
        raise _reject(f"unclosed '('{after} at {_position(text, i)}", text)


def _position(text: str, index: int) -> str:
    """``column C`` (one-line text) or ``line L, column C`` of the code token number ``index`` (as
    :func:`_tokenize` counts them: comments and blanks skipped)."""
    token = lex(text).tokens[index]
    return f"column {token.column}" if "\n" not in text.strip() else f"line {token.line}, column {token.column}"


#: What a query body is made of (the messages for a literal that is none of these).
_BODY_HINT = ("a query body uses " + ", ".join(f"{name}/{arity}" for name, arity in QUERY_PREDICATES.items())
              + " and X != Y comparisons")


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

    def head(self) -> tuple[str, Variable]:
        name = self.take()
        if name not in HEAD_NAMES:
            raise _reject(f"the head must be missing(Q), found {name!r}", self.text)
        self.take("(")
        var = self.take()
        if not _VARIABLE.match(var) or var == "_":
            raise _reject("the head argument must be a variable", self.text)
        self.take(")")
        self.take(":-")
        return name, Variable(var)

    def term(self) -> Term:
        token = self.take()
        if token == "_" or (token.startswith("_")):
            raise _reject("anonymous variables are not allowed", self.text)
        kind = (Variable if _VARIABLE.match(token) else Number if _NUMBER.match(token)
                else Constant if _IDENTIFIER.match(token) else None)
        if kind is None:
            raise _reject(f"unexpected {token!r}", self.text)
        if self.peek() == "(":
            raise _reject(f"function term {token}(...) is not allowed", self.text)
        return kind(int(token)) if kind is Number else kind(token)

    def literal(self) -> Literal:
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
            return Atom(name, tuple(args))
        left = self.term()
        op = self.peek()
        if op != "!=":
            if isinstance(left, Constant):
                what = (f"{token!r} needs its arguments ({token}/{QUERY_PREDICATES[token]})"
                        if token in QUERY_PREDICATES else f"{token!r} is not an allowed atom")
            else:
                what = f"{token!r} alone is not a literal"
            raise _reject(f"{what}; {_BODY_HINT}", self.text)
        self.take("!=")
        right = self.term()
        return Inequality(left, right)

    def body(self) -> list[Literal]:
        body = [self.literal()]
        while self.peek() == ",":
            self.take(",")
            body.append(self.literal())
        if self.peek() == ".":
            self.take(".")
        if self.peek() is not None:
            raise _reject(f"expected exactly one rule; unexpected {self.peek()!r} after the body", self.text)
        return body
