"""Parsing and rewriting rules with :mod:`clingo.ast`: the one place outside the audit that calls
clingo's parser, and guards and activation literals for multi-shot checks.

:func:`parse_statements` is used by :mod:`clevr_poc.environments.environment` (reading environment
files), :mod:`clevr_poc.environments.templates` (canonical rules) and
:mod:`clevr_poc.parsing.llm_parser` (a parse check of an extracted query); the rewrites by
:mod:`clevr_poc.environments.checks` (a candidate constraint ``:- body.`` becomes
``violated(k) :- body.``) and :mod:`clevr_poc.reasoning.explanations` (rule k gets the body literal
``active(k)``). Rules are parsed by clingo's own parser and printed in its canonical form.
"""

from __future__ import annotations

from typing import Any, Iterator

import clingo
import clingo.ast as clingo_ast

from clevr_poc.solver.control import Logger, silent_logger

#: A parsed statement and the kinds of statement (re-exported so that callers need not import clingo.ast).
AST = clingo_ast.AST
ASTType = clingo_ast.ASTType


def parse_statements(text: str, *, logger: Logger | None = silent_logger,
                     message_limit: int = 20) -> list[clingo_ast.AST]:
    """Every statement of ``text`` (checked, ASCII ASP text: clingo's logger aborts the interpreter on
    non-ASCII messages) as clingo's parser reads it, in order, ``#program`` and comment statements
    included (``clingo.ast.parse_string``).

    Args:
        logger: receives clingo's messages (default: dropped; None: clingo's own, printed to stderr).
        message_limit: most messages passed to ``logger`` (clingo's default, 20).

    Raises:
        RuntimeError: clingo cannot parse ``text`` (its messages went to ``logger``).
    """
    statements: list[clingo_ast.AST] = []
    clingo_ast.parse_string(text, statements.append, logger=logger, message_limit=message_limit)
    return statements


def parse_rules(text: str) -> list[clingo_ast.AST]:
    """The rules of ``text`` (checked, ASCII ASP text), ``#program`` statements left out, in order.

    Raises:
        RuntimeError: clingo cannot parse ``text``.
    """
    return [s for s in parse_statements(text) if s.ast_type == clingo_ast.ASTType.Rule]


def is_integrity_constraint(rule: clingo_ast.AST) -> bool:
    """Whether ``rule`` is an integrity constraint ``:- body.`` (its head is ``#false``)."""
    head = rule.head
    return (head.ast_type == clingo_ast.ASTType.Literal and head.atom.ast_type == clingo_ast.ASTType.BooleanConstant
            and not head.atom.value)


def function_names(node: Any) -> Iterator[str]:
    """The names of every function term and atom in ``node`` (a syntax tree, or a list of them), depth
    first, repeats included (``p(X) :- q(f(X))`` -> ``p``, ``q``, ``f``)."""
    if isinstance(node, clingo_ast.AST):
        if node.ast_type == clingo_ast.ASTType.Function:
            yield node.name
        for key in node.child_keys:
            yield from function_names(getattr(node, key))
    elif isinstance(node, (list, tuple, clingo_ast.ASTSequence)):
        for item in node:
            yield from function_names(item)


def numbered_atom(location: Any, predicate: str, number: int) -> clingo_ast.AST:
    """The literal ``predicate(number)`` at ``location`` (a rule's location, for clingo's messages)."""
    atom = clingo_ast.Function(location, predicate, [clingo_ast.SymbolicTerm(location, clingo.Number(number))], 0)
    return clingo_ast.Literal(location, clingo_ast.Sign.NoSign, clingo_ast.SymbolicAtom(atom))


def with_body_literal(rule: clingo_ast.AST, predicate: str, number: int) -> clingo_ast.AST:
    """``rule`` with ``predicate(number)`` appended to its body: the rule holds only where that atom
    does (``active(k)``, ``background_active(b)``)."""
    return rule.update(body=list(rule.body) + [numbered_atom(rule.location, predicate, number)])


def with_head(rule: clingo_ast.AST, predicate: str, number: int) -> clingo_ast.AST:
    """``rule`` with the head ``predicate(number)`` instead of its own (``:- body.`` becomes
    ``violated(k) :- body.``).

    Raises:
        ValueError: ``rule`` is not an integrity constraint (its head is not ``#false``).
    """
    if not is_integrity_constraint(rule):
        raise ValueError(f"not an integrity constraint: {rule}")
    return rule.update(head=numbered_atom(rule.location, predicate, number))
