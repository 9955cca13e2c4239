"""Independent checks of the text that reaches clingo, for tests and the fuzz run (``benchmarks/fuzz.py``).

The checks do not trust the sanitizer or the environment check they audit: a query is read with
clingo's own parser (after the lexer has shown it holds nothing that parser would execute) and its
syntax tree is compared with the query language; environment code is re-lexed.
:func:`recording_clingo_inputs` records every text handed to clingo: each part and fact batch of a
program built by :mod:`clevr_poc.solver.programs` (in process or sent to the direct-mode worker),
every ``clingo.ast.parse_string`` call, and any ``Control.add`` past the builder.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Callable, Iterator

import clingo
import clingo.ast as clingo_ast

from clevr_poc.asp_lexer import Token, lex
from clevr_poc.knowledge import read_asp
from clevr_poc.queries.sanitizer import QUERY_PREDICATES
from clevr_poc.solver.programs import KNOWLEDGE_PREFIX, observing

_QUERY_PUNCT = frozenset({"(", ")", ",", ".", ":-", "!="})
# (``#false``: clingo prints an integrity constraint ``:- body.`` as ``#false :- body.``, which the
# template matcher parses again)
_ENVIRONMENT_DIRECTIVES = frozenset({"#show", "#count", "#false"})


def query_violation(text: str) -> str | None:
    """What puts ``text`` outside the query language (one rule ``missing(V) :- body.`` of positive
    whitelisted atoms and ``!=``), or None when it is inside."""
    lexical = _lexical_violation(text, _query_token_violation)
    if lexical is not None:
        return lexical
    statements: list = []
    try:
        clingo_ast.parse_string(text, statements.append, logger=lambda code, message: None)
    except RuntimeError:
        return "clingo cannot parse it"
    rules = [s for s in statements if s.ast_type != clingo_ast.ASTType.Program]
    if len(rules) != 1 or rules[0].ast_type != clingo_ast.ASTType.Rule:
        return f"{len(rules)} statements, not one rule"
    rule = rules[0]
    head = rule.head
    if head.ast_type != clingo_ast.ASTType.Literal or head.atom.ast_type != clingo_ast.ASTType.SymbolicAtom:
        return "the head is not an atom"
    symbol = head.atom.symbol
    if symbol.ast_type != clingo_ast.ASTType.Function or symbol.name != "missing" or len(symbol.arguments) != 1 \
            or symbol.arguments[0].ast_type != clingo_ast.ASTType.Variable:
        return f"the head is {symbol}, not missing(V)"
    for literal in rule.body:
        if literal.ast_type != clingo_ast.ASTType.Literal or literal.sign != clingo_ast.Sign.NoSign:
            return f"body element {literal}"
        atom = literal.atom
        if atom.ast_type == clingo_ast.ASTType.Comparison:
            if len(atom.guards) != 1 or atom.guards[0].comparison != clingo_ast.ComparisonOperator.NotEqual:
                return f"comparison {atom}"
            terms = [atom.term, atom.guards[0].term]
        elif atom.ast_type == clingo_ast.ASTType.SymbolicAtom and atom.symbol.ast_type == clingo_ast.ASTType.Function:
            if QUERY_PREDICATES.get(atom.symbol.name) != len(atom.symbol.arguments):
                return f"predicate {atom.symbol.name}/{len(atom.symbol.arguments)}"
            terms = list(atom.symbol.arguments)
        else:
            return f"body atom {atom}"
        for term in terms:
            if term.ast_type == clingo_ast.ASTType.Variable:
                continue
            if term.ast_type != clingo_ast.ASTType.SymbolicTerm or term.symbol.type not in (
                    clingo.SymbolType.Number, clingo.SymbolType.Function) or (
                    term.symbol.type == clingo.SymbolType.Function and term.symbol.arguments):
                return f"argument {term}"
    return None


def environment_code_violation(text: str) -> str | None:
    """What makes ``text`` (environment code handed to clingo's parser) unsafe: a comment, a string,
    a ``#script`` block, a directive other than ``#show``/``#count``/``#false``, a lexer error, non-ASCII text;
    or None."""
    return _lexical_violation(text, _environment_token_violation)


def _lexical_violation(text: str, token_violation: Callable[[Token], str | None]) -> str | None:
    """The first lexical problem of ``text``: non-ASCII text, a comment, or the first token for which
    ``token_violation`` names a problem (that problem); None when there is none."""
    if not text.isascii():
        return "non-ASCII text"
    lexed = lex(text)
    if lexed.comments:
        return "a comment"
    for token in lexed.tokens:
        violation = token_violation(token)
        if violation is not None:
            return violation
    return None


def _query_token_violation(token: Token) -> str | None:
    """A query may hold identifiers, variables, numbers and the punctuation of :data:`_QUERY_PUNCT` only."""
    if token.kind not in ("identifier", "variable", "number", "punct"):
        return f"{token.kind} token {token.text!r}"
    if token.kind == "punct" and token.text not in _QUERY_PUNCT:
        return f"token {token.text!r}"
    return None


def _environment_token_violation(token: Token) -> str | None:
    """Environment code may hold no lexer error, string or script, and only the directives of
    :data:`_ENVIRONMENT_DIRECTIVES`."""
    if token.kind in ("error", "string", "script"):
        return f"{token.kind} token {token.text[:30]!r}"
    if token.kind == "directive" and token.text not in _ENVIRONMENT_DIRECTIVES:
        return f"directive {token.text}"
    return None


def clingo_input_violation(where: str, text: str) -> str | None:
    """What is wrong with one record ``(where, text)`` of :func:`recording_clingo_inputs`, or None:
    a knowledge file must be that file's text, a query inside the query language, environment code,
    rules, facts and parsed text free of comments, strings, scripts and other directives; nothing may
    reach ``Control.add`` past the program builder."""
    if where.startswith(KNOWLEDGE_PREFIX):
        try:
            return None if text == read_asp(where[len(KNOWLEDGE_PREFIX):]) else f"{where} differs from the file"
        except OSError:
            return f"{where}: no such knowledge file"
    if where == "query":
        return query_violation(text)
    if where in ("environment", "rules", "facts", "parse"):
        return environment_code_violation(text)
    if where == "unannounced":
        return "text reached Control.add outside the program builder (clevr_poc.solver.programs)"
    return f"unknown source {where!r}"


@contextmanager
def recording_clingo_inputs() -> Iterator[list[tuple[str, str]]]:
    """Record ``(where, text)`` for every text handed to clingo while the block runs (this process,
    every thread; not re-entrant), in this process or sent to the direct-mode worker:

    - through the program builder (:func:`clevr_poc.solver.programs.observing`): ``where`` is the
      part's source, ``"asp/<file>"``, ``"environment"``, ``"query"``, ``"rules"``, or ``"facts"``
      (the fact symbols as text);
    - ``clingo.ast.parse_string``: ``"parse"``;
    - ``clingo.Control.add`` with a text the builder did not announce: ``"unannounced"`` (none is
      expected).

    :func:`clingo_input_violation` checks one record.
    """
    seen: list[tuple[str, str]] = []
    announced: set[str] = set()
    original_add = clingo.Control.add
    original_parse = clingo_ast.parse_string

    def observe(source: str, text: str) -> None:
        announced.add(text)
        seen.append((source, text))

    def add(self, *args, **kwargs):
        text = args[-1] if args else kwargs.get("program", "")
        if text not in announced:
            seen.append(("unannounced", text))
        return original_add(self, *args, **kwargs)

    def parse_string(program, *args, **kwargs):
        seen.append(("parse", program))
        return original_parse(program, *args, **kwargs)

    clingo.Control.add = add
    clingo_ast.parse_string = parse_string
    try:
        with observing(observe):
            yield seen
    finally:
        clingo.Control.add = original_add
        clingo_ast.parse_string = original_parse
