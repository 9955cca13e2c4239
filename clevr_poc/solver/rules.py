"""Rewriting rules with :mod:`clingo.ast`: guards and activation literals for multi-shot checks.

Used by :mod:`clevr_poc.environments.checks` (a candidate constraint ``:- body.`` becomes
``violated(k) :- body.``) and :mod:`clevr_poc.reasoning.explanations` (rule k gets the body literal
``active(k)``). Rules are parsed by clingo's own parser and printed in its canonical form.
"""

from __future__ import annotations

from typing import Any

import clingo
import clingo.ast as clingo_ast


def parse_rules(text: str) -> list[clingo_ast.AST]:
    """The rules of ``text`` (checked, ASCII ASP text), ``#program`` statements left out, in order.

    Raises:
        RuntimeError: clingo cannot parse ``text``.
    """
    statements: list[clingo_ast.AST] = []
    clingo_ast.parse_string(text, statements.append, logger=lambda code, message: None)
    return [s for s in statements if s.ast_type == clingo_ast.ASTType.Rule]


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
    head = rule.head
    if not (head.ast_type == clingo_ast.ASTType.Literal and head.atom.ast_type == clingo_ast.ASTType.BooleanConstant
            and not head.atom.value):
        raise ValueError(f"not an integrity constraint: {rule}")
    return rule.update(head=numbered_atom(rule.location, predicate, number))
