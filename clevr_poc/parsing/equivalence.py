"""Program accuracy, two ways: **literal** (are two ASP queries the same program? the paper's measure)
and **semantic** (do they give the same answer set on the example?).

Gold programs are in the official form (:mod:`clevr_poc.queries.official_form`: every pairwise
inequality written out), so a parse that leaves out ``X!=Y2`` is literally wrong, and semantically
wrong exactly where the queried object could otherwise be the farther reference.

Two queries are **equal** when their bodies are equal *as sets of literals* up to a renaming of
variables (a bijection, the head variable mapped to the head variable) and literal order; ``X!=Y`` is
the same literal as ``Y!=X``; a literal written twice counts once; ``query(Q)`` / ``unknown(Q)`` heads
are ``missing(Q)`` (the sanitizer renames them). Nothing else is identified: ``left(Y,X)`` is not
``right(X,Y)`` and ``same_color(Y,X)`` is not ``same_color(X,Y)`` nor ``sameProperty(Y,X,color)``
(syntactic program accuracy, as the paper's PA in Table 3 compares programs, not answers).

Method: both queries go through :func:`~clevr_poc.reasoning.sanitize_query` (its ``atoms``); after
cheap invariants (literal count, variable count, the multiset of literal shapes) the variables are
coloured by colour refinement (1-dimensional Weisfeiler-Leman: a variable's colour is the multiset of
(predicate, position, constant arguments) it occurs in, refined by its neighbours' colours) and a
bijection between equally coloured variables is searched by backtracking, pruning on every literal
whose variables are all mapped. CLEVR-POC queries have at most ~5 variables, where refinement alone
usually leaves one candidate per variable; the search stays exact for any query the sanitizer accepts.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from typing import Sequence

from clevr_poc.errors import ClevrPocError, FormatError, UnsafeProgramError
from clevr_poc.queries.query import SanitizedQuery, Term, Variable
from clevr_poc.queries.sanitizer import sanitize_query

__all__ = ["programs_equal", "program_accuracy", "query_literals", "semantic_program_accuracy", "answers_agree"]

#: ``(predicate, terms)``; ``("!=", (left, right))`` for a comparison (typed terms, which compare as text)
Literal = tuple[str, tuple[Term, ...]]


def query_literals(query: str | SanitizedQuery) -> tuple[str, frozenset[Literal]]:
    """The head variable and the body of a query as a set of literals.

    ``!=`` literals have their two arguments sorted (``("!=", ("X", "Y"))`` for ``Y!=X``).

    Raises:
        UnsafeProgramError: the text is not a query of the query language.
    """
    checked = query if isinstance(query, SanitizedQuery) else sanitize_query(query)
    literals = set()
    for literal in checked.body:
        name, args = literal.predicate, literal.terms
        literals.add((name, tuple(sorted(args, key=str))) if name == "!=" else (name, args))
    return checked.head, frozenset(literals)


def _is_variable(term: Term) -> bool:
    return isinstance(term, Variable)


def _shape(literal: Literal) -> tuple:
    """A literal with its variables blanked out (invariant under renaming)."""
    name, args = literal
    blanked = tuple("*" if _is_variable(a) else a for a in args)
    return (name, tuple(sorted(blanked, key=str))) if name == "!=" else (name, blanked)


def _digest(value: object) -> str:
    return hashlib.blake2b(repr(value).encode(), digest_size=12).hexdigest()


def _colours(head: str, literals: frozenset[Literal], rounds: int = 3) -> dict[str, str]:
    """Colour refinement of the variables of one query.

    Colours are digests of renaming-invariant descriptions, so they are comparable across queries: a
    renaming that maps one query onto the other maps every variable to one of the same colour (the
    search below only uses colours to prune, and checks every literal itself).
    """
    variables = sorted({a for _, args in literals for a in args if _is_variable(a)})
    incidences: dict[str, list[tuple]] = {v: [] for v in variables}
    for literal in literals:
        name, args = literal
        shape = _shape(literal)
        for position, arg in enumerate(args):
            if _is_variable(arg):
                incidences[arg].append((shape, "sym" if name == "!=" else position))
    colour: dict[str, str] = {v: _digest((v == head, sorted(map(repr, incidences[v])))) for v in variables}
    for _ in range(rounds):
        refined = {}
        for v in variables:
            neighbours = []
            for name, args in literals:
                if v not in args:
                    continue
                for position, arg in enumerate(args):
                    if arg != v and _is_variable(arg):
                        where = "sym" if name == "!=" else (args.index(v), position)
                        neighbours.append(repr((name, where, colour[arg])))
            refined[v] = _digest((colour[v], sorted(neighbours)))
        colour = refined
    return colour


def _rename(literal: Literal, mapping: dict[str, str]) -> Literal:
    name, args = literal
    renamed = tuple(mapping.get(a, a) if _is_variable(a) else a for a in args)
    return (name, tuple(sorted(renamed, key=str))) if name == "!=" else (name, renamed)


def _equal_literal_sets(head_a: str, lits_a: frozenset[Literal], head_b: str, lits_b: frozenset[Literal]) -> bool:
    if len(lits_a) != len(lits_b):
        return False
    if Counter(map(_shape, lits_a)) != Counter(map(_shape, lits_b)):
        return False
    vars_a = sorted({a for _, args in lits_a for a in args if _is_variable(a)})
    vars_b = sorted({a for _, args in lits_b for a in args if _is_variable(a)})
    if len(vars_a) != len(vars_b):
        return False
    colour_a = _colours(head_a, lits_a)
    colour_b = _colours(head_b, lits_b)
    if Counter(colour_a.values()) != Counter(colour_b.values()):
        return False
    by_colour_b: dict[str, list[str]] = {}
    for v in vars_b:
        by_colour_b.setdefault(colour_b[v], []).append(v)
    # most constrained variables first; literals checked as soon as all their variables are mapped
    order = sorted(vars_a, key=lambda v: (len(by_colour_b[colour_a[v]]), v))
    position = {v: i for i, v in enumerate(order)}
    checks: list[list[Literal]] = [[] for _ in order]
    for literal in lits_a:
        names = [a for a in literal[1] if _is_variable(a)]
        if names:
            checks[max(position[v] for v in names)].append(literal)
    mapping: dict[str, str] = {}
    used: set[str] = set()

    def search(i: int) -> bool:
        if i == len(order):
            return True
        v = order[i]
        for w in by_colour_b[colour_a[v]]:
            if w in used:
                continue
            mapping[v] = w
            used.add(w)
            if all(_rename(lit, mapping) in lits_b for lit in checks[i]) and search(i + 1):
                return True
            used.discard(w)
            del mapping[v]
        return False

    if not search(0):
        return False
    # ground literals (no variables) must match too
    ground_a = {lit for lit in lits_a if not any(_is_variable(a) for a in lit[1])}
    return ground_a <= lits_b and mapping.get(head_a) == head_b


def programs_equal(a: str | SanitizedQuery, b: str | SanitizedQuery) -> bool:
    """True when queries ``a`` and ``b`` are the same program (see the module docstring).

    A text the sanitizer rejects (or None) is equal to nothing, itself included: an invalid prediction
    is a wrong program.

    Examples:
        >>> programs_equal("missing(Q) :- hasProperty(X,color,Q), X!=Y, same_shape(Y,X).",
        ...                "missing(A) :- same_shape(B,C), C!=B, hasProperty(C,color,A).")
        True
    """
    try:
        head_a, lits_a = query_literals(a)
        head_b, lits_b = query_literals(b)
    except (UnsafeProgramError, TypeError):
        return False
    return _equal_literal_sets(head_a, lits_a, head_b, lits_b)


def program_accuracy(predictions: Sequence[str | None], golds: Sequence[str]) -> float:
    """Program accuracy (paper Table 3, "PA"): the share of predictions equal to their gold program.

    Args:
        predictions: predicted query texts; None or a text the sanitizer rejects counts as wrong.
        golds: gold query texts (each must pass the sanitizer).

    Returns:
        A float in [0, 1] (0.0 for no examples).

    Raises:
        FormatError: the sequences differ in length, or a gold query is not a valid query (naming its index).
    """
    if len(predictions) != len(golds):
        raise FormatError("predictions and gold programs must have the same length", field="length",
                          value=(len(predictions), len(golds)))
    if not golds:
        return 0.0
    correct = 0
    for index, (prediction, gold) in enumerate(zip(predictions, golds)):
        try:
            head_g, lits_g = query_literals(gold)
        except (ClevrPocError, TypeError) as exc:
            raise FormatError(f"gold program is not a valid query: {exc}", field=f"golds[{index}]",
                              value=gold) from None
        if prediction is None:
            continue
        try:
            head_p, lits_p = query_literals(prediction)
        except (UnsafeProgramError, TypeError):
            continue
        correct += _equal_literal_sets(head_p, lits_p, head_g, lits_g)
    return correct / len(golds)



def answers_agree(prediction: str | None, gold: str, environment, scene, *, reasoner=None) -> bool:
    """True when ``prediction`` gives the same answer set as ``gold`` on ``environment`` and ``scene``
    (the Reasoner's official semantics). An invalid prediction (None, rejected by the sanitizer) or one
    the solver cannot answer within its time limit agrees with nothing.

    Raises:
        UnsafeProgramError / ClevrPocError: ``gold`` itself cannot be answered.
    """
    if reasoner is None:
        from clevr_poc.reasoning import Reasoner

        reasoner = Reasoner()
    expected = reasoner.answer(environment, scene, gold).values
    if prediction is None:
        return False
    try:
        return reasoner.answer(environment, scene, prediction).values == expected
    except (ClevrPocError, TypeError):
        return False


def semantic_program_accuracy(predictions: Sequence[str | None], golds: Sequence[str],
                              problems: Sequence[tuple[object, object]], *, reasoner=None) -> float:
    """Semantic program accuracy: the share of predictions whose answer set on their example equals the
    gold program's (:func:`answers_agree`). A literally equal program always agrees; a different one may
    still agree on this scene (a dropped filter that does not change the referent).

    Args:
        predictions: predicted query texts (None = no parse, counted wrong).
        golds: gold query texts.
        problems: ``(environment, partial scene)`` of each example.
        reasoner: the :class:`~clevr_poc.reasoning.Reasoner` (default: a new one).

    Returns:
        A float in [0, 1] (0.0 for no examples).

    Raises:
        FormatError: the sequences differ in length, or a gold query cannot be answered (naming its index).
    """
    if not len(predictions) == len(golds) == len(problems):
        raise FormatError("predictions, gold programs and problems must have the same length", field="length",
                          value=(len(predictions), len(golds), len(problems)))
    if not golds:
        return 0.0
    if reasoner is None:
        from clevr_poc.reasoning import Reasoner

        reasoner = Reasoner()
    correct = 0
    for index, (prediction, gold, (environment, scene)) in enumerate(zip(predictions, golds, problems)):
        try:
            correct += answers_agree(prediction, gold, environment, scene, reasoner=reasoner)
        except (ClevrPocError, TypeError) as exc:
            raise FormatError(f"gold program cannot be answered: {exc}", field=f"golds[{index}]",
                              value=gold) from None
    return correct / len(golds)
