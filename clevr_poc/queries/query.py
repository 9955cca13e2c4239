"""The typed query value: :class:`SanitizedQuery`, its terms and literals.

A CLEVR-POC query (SEMANTICS.md, paper §3.4) is one rule ``missing(Q) :- body.`` whose body holds
whitelisted atoms and ``!=`` comparisons. Here it is a value, not a text:

- terms are typed: :class:`Variable` (an ``str`` starting with an upper-case letter), :class:`Constant`
  (an attribute name or value, an ``str``) and :class:`Number` (an object id, or a region id in the
  second position of ``at/2``; an ``int`` 0..:data:`MAX_OBJECT_ID`); being ``str``/``int`` subclasses,
  they compare and hash like their text and number;
- the body is a tuple of :class:`Atom` (predicate and terms) and :class:`Inequality` (two object terms),
  in the order they were written;
- the value checks itself when made (:meth:`SanitizedQuery.__post_init__`): the predicates, arities,
  constants, object positions and size limits below (the query-language whitelist, written once here);
  :func:`clevr_poc.queries.sanitizer.sanitize_query` is the only way from text to a value (it reads the
  text exactly as clingo does and then applies the same check), and the question generator and
  :mod:`.official_form` build values from typed parts;
- it prints itself (:attr:`SanitizedQuery.text`, the canonical rule: the only query text the solver
  sees) and gives clingo syntax trees (:meth:`SanitizedQuery.rule`) and symbols (:meth:`Constant.symbol`,
  :meth:`Number.symbol`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property
from typing import ClassVar, Union

import clingo
import clingo.ast as clingo_ast

from clevr_poc import domain
from clevr_poc.errors import UnsafeProgramError

__all__ = ["Atom", "Constant", "Inequality", "Literal", "Number", "SanitizedQuery", "Term", "Variable",
           "QUERY_PREDICATES", "OBJECT_POSITIONS", "MAX_BODY_LITERALS", "MAX_VARIABLES", "MAX_OBJECT_ID",
           "MAX_QUERY_OBJECT_VARIABLES", "reject"]

#: Predicates allowed in a query body, with their arities (SEMANTICS.md, "Query language").
QUERY_PREDICATES: dict[str, int] = {
    "hasProperty": 3, "at": 2, "left": 2, "right": 2, "front": 2, "behind": 2,
    "same_color": 2, "same_size": 2, "same_shape": 2, "same_material": 2, "sameProperty": 3, "object": 1,
}
#: Argument positions that name objects, per predicate (``!=`` compares two objects).
OBJECT_POSITIONS: dict[str, tuple[int, ...]] = {
    "hasProperty": (0,), "at": (0,), "object": (0,), "left": (0, 1), "right": (0, 1), "front": (0, 1),
    "behind": (0, 1), "same_color": (0, 1), "same_size": (0, 1), "same_shape": (0, 1), "same_material": (0, 1),
    "sameProperty": (0, 1), "!=": (0, 1),
}

#: Predicates whose object positions are the first k (all of them): k.
_OBJECT_PREFIX: dict[str, int] = {p: len(positions) for p, positions in OBJECT_POSITIONS.items()
                                  if positions == tuple(range(len(positions)))}

#: Size limits of a query (body literals, distinct variables, largest number); they bound the grounding.
MAX_BODY_LITERALS = 40
MAX_VARIABLES = 20
MAX_OBJECT_ID = 99
#: Distinct variables in object positions a query may use unless a caller says otherwise
#: (``sanitize_query(..., max_object_variables=k)``, ``Reasoner(max_object_variables=k)``). The official
#: families use at most 4 (three_hop: X, Y1, Y2, Y3; SEMANTICS.md "The official query form"); the
#: parsers' vocabulary names 6 (X, Y, Z, W, V, U). Grounding grows as N to the power of this number.
MAX_QUERY_OBJECT_VARIABLES = 6

_CONSTANTS = frozenset(domain.ATTRIBUTES) | frozenset(domain.ATTRIBUTE_OF_VALUE)
_REGIONS = frozenset(domain.REGIONS)
_VARIABLE_NAME = re.compile(r"[A-Z][A-Za-z0-9_]*", re.ASCII)
_CONSTANT_NAME = re.compile(r"[a-z][A-Za-z0-9_]*", re.ASCII)
#: where the syntax trees of :meth:`SanitizedQuery.rule` say they come from (clingo's messages)
_LOCATION = clingo_ast.Location(clingo_ast.Position("<query>", 1, 1), clingo_ast.Position("<query>", 1, 1))


def reject(reason: str, text: str) -> UnsafeProgramError:
    """The error for a query outside the query language: ``rejected ASP query: <reason>: '<text>'``
    (the text on one line, cut to 120 characters)."""
    snippet = text.strip().replace("\n", " ")
    if len(snippet) > 120:
        snippet = snippet[:117] + "..."
    return UnsafeProgramError(f"rejected ASP query: {reason}: {snippet!r}")


# ---------------------------------------------------------------------------------------------- terms
class Variable(str):
    """A variable: an ASCII identifier starting with an upper-case letter (``X``, ``Y1``, ``Q``)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"Variable({str.__repr__(self)})"

    def ast(self, location: clingo_ast.Location = _LOCATION) -> clingo_ast.AST:
        """The clingo syntax tree of the variable."""
        return clingo_ast.Variable(location, str(self))


class Constant(str):
    """A constant: an attribute (``color``) or an attribute value (``red``, ``cube``)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"Constant({str.__repr__(self)})"

    def symbol(self) -> clingo.Symbol:
        """The clingo symbol (``clingo.Function(name)``)."""
        return clingo.Function(str(self))

    def ast(self, location: clingo_ast.Location = _LOCATION) -> clingo_ast.AST:
        """The clingo syntax tree of the constant."""
        return clingo_ast.SymbolicTerm(location, self.symbol())


class Number(int):
    """A number 0..:data:`MAX_OBJECT_ID`: an object id (a region id 0..3 as the second argument of ``at/2``)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"Number({int(self)})"

    def __str__(self) -> str:
        return int.__repr__(self)

    def symbol(self) -> clingo.Symbol:
        """The clingo symbol (``clingo.Number(n)``)."""
        return clingo.Number(int(self))

    def ast(self, location: clingo_ast.Location = _LOCATION) -> clingo_ast.AST:
        """The clingo syntax tree of the number."""
        return clingo_ast.SymbolicTerm(location, self.symbol())


Term = Union[Variable, Constant, Number]


def is_object_term(term: Term) -> bool:
    """Whether ``term`` can stand for an object: a variable or an object id."""
    return isinstance(term, (Variable, Number))


# ------------------------------------------------------------------------------------------- literals
@dataclass(frozen=True, slots=True)
class Atom:
    """A body atom ``predicate(terms)``, e.g. ``Atom("hasProperty", (Variable("X"), Constant("color"),
    Variable("Q")))``, printed ``hasProperty(X,color,Q)``."""

    predicate: str
    terms: tuple[Term, ...]

    def __str__(self) -> str:
        return f"{self.predicate}({','.join(map(str, self.terms))})"

    @property
    def object_terms(self) -> tuple[Term, ...]:
        """The terms in object positions (:data:`OBJECT_POSITIONS`)."""
        prefix = _OBJECT_PREFIX.get(self.predicate)
        if prefix is not None and type(self.terms) is tuple:  # positions 0..k-1: a slice (issue 27)
            return self.terms[:prefix]
        return tuple(self.terms[i] for i in OBJECT_POSITIONS.get(self.predicate, ()) if i < len(self.terms))

    def variables(self) -> tuple[Variable, ...]:
        """The variables among the terms, in order."""
        return tuple(t for t in self.terms if isinstance(t, Variable))

    def ast(self, location: clingo_ast.Location = _LOCATION) -> clingo_ast.AST:
        """The positive body literal (clingo syntax tree)."""
        function = clingo_ast.Function(location, self.predicate, [t.ast(location) for t in self.terms], 0)
        return clingo_ast.Literal(location, clingo_ast.Sign.NoSign, clingo_ast.SymbolicAtom(function))


@dataclass(frozen=True, slots=True)
class Inequality:
    """A comparison ``left != right`` of two objects (variables or object ids), printed ``X!=Y``."""

    predicate: ClassVar[str] = "!="
    left: Term
    right: Term

    def __str__(self) -> str:
        return f"{self.left}!={self.right}"

    @property
    def terms(self) -> tuple[Term, Term]:
        """``(left, right)``."""
        return self.left, self.right

    @property
    def object_terms(self) -> tuple[Term, Term]:
        """``(left, right)``: both sides are objects."""
        return self.left, self.right

    def variables(self) -> tuple[Variable, ...]:
        """The variables among the two sides, in order."""
        return tuple(t for t in (self.left, self.right) if isinstance(t, Variable))

    def ast(self, location: clingo_ast.Location = _LOCATION) -> clingo_ast.AST:
        """The body literal (clingo syntax tree of the comparison)."""
        guard = clingo_ast.Guard(clingo_ast.ComparisonOperator.NotEqual, self.right.ast(location))
        return clingo_ast.Literal(location, clingo_ast.Sign.NoSign,
                                  clingo_ast.Comparison(self.left.ast(location), [guard]))


Literal = Union[Atom, Inequality]


# ---------------------------------------------------------------------------------------------- query
@dataclass(frozen=True)
class _Analysis:
    """What the check of a body finds: its variables, object variables and the queried attribute."""

    variables: frozenset[Variable]
    object_variables: frozenset[Variable]
    attribute: str | None


def analyse(head: Variable, body: tuple[Literal, ...], max_object_variables: int) -> _Analysis | str:
    """Check ``missing(head) :- body`` against the query language; the :class:`_Analysis` or the reason
    it is outside (the whitelist and bounds of the module docstring, checked literal by literal in
    order, so the first problem written is the one reported).

    What one literal contributes does not depend on the others (:func:`_literal_facts`), so it is
    looked up by the literal and its terms' types (issue 27: the generator's queries repeat their
    literals; with :func:`_malformed`'s kept names the check of one such query takes about a third of
    its time before, see :func:`clevr_poc.generation.question_instance.official_asp_query`)."""
    if len(body) > MAX_BODY_LITERALS:
        return f"more than {MAX_BODY_LITERALS} body literals ({len(body)})"
    variables: set[Variable] = set()
    atom_variables: set[Variable] = set()
    object_variables: set[Variable] = set()
    attribute: str | None = None
    for literal in body:
        try:
            key = (type(literal), literal.predicate, literal.terms, tuple(map(type, literal.terms)))
            facts = _FACTS.get(key)
        except (TypeError, AttributeError):  # unhashable or missing parts (built by hand): no look-up
            key, facts = None, None
        if facts is None:
            facts = _literal_facts(literal)
            if key is not None:
                if len(_FACTS) >= 65536:
                    _FACTS.clear()
                _FACTS[key] = facts
        if type(facts) is str:
            return facts
        names, objects, in_atom, answer = facts
        if names:
            variables |= names
            object_variables |= objects
            if in_atom:
                atom_variables |= names
        if answer is not None and attribute is None and answer[0] == head:
            attribute = answer[1]
    if len(variables) > MAX_VARIABLES:
        return f"more than {MAX_VARIABLES} variables ({len(variables)})"
    if len(object_variables) > max_object_variables:
        return _too_many_object_variables(object_variables, max_object_variables)
    if head not in variables:
        return f"head variable {head} does not occur in the body"
    unsafe = sorted(variables - atom_variables)
    if unsafe:
        return f"variable(s) {', '.join(unsafe)} occur only in comparisons (unsafe)"
    return _Analysis(frozenset(variables), frozenset(object_variables), attribute)


#: (literal type, predicate, terms, the terms' types) -> :func:`_literal_facts` of such a literal.
_FACTS: dict[tuple, tuple | str] = {}


def _literal_facts(literal: Literal) -> tuple[frozenset, frozenset, bool, tuple | None] | str:
    """What :func:`analyse` takes from one literal: ``(its variables, those in object positions,
    whether it is an atom, (third term, attribute) for a ``hasProperty`` whose second term is an
    attribute, else None)``, or the reason the literal is outside the query language."""
    args = literal.terms
    names = frozenset(a for a in args if isinstance(a, Variable))
    object_terms = literal.object_terms
    objects = frozenset(a for a in object_terms if a in names) if names else frozenset()
    if isinstance(literal, Inequality):
        for arg in args:
            if isinstance(arg, Constant):
                return (f"{str(arg)!r} in {args[0]} != {args[1]} is not an object (a variable or an "
                        f"object id)")
            if isinstance(arg, Number) and arg > MAX_OBJECT_ID:
                return f"number {arg} out of range 0..{MAX_OBJECT_ID}"
        return names, objects, False, None
    name = literal.predicate
    if QUERY_PREDICATES.get(name) != len(args):
        return f"predicate {name}/{len(args)} is not allowed"
    for arg in args:
        if isinstance(arg, Variable):
            continue
        if isinstance(arg, Number):
            if arg > MAX_OBJECT_ID:
                return f"number {arg} out of range 0..{MAX_OBJECT_ID}"
            continue
        if arg not in _CONSTANTS:
            return f"unknown constant {str(arg)!r}"
    answer = None
    if name == "hasProperty":
        if not isinstance(args[1], Variable) and args[1] not in domain.ATTRIBUTES:
            return f"{str(args[1])!r} is not an attribute"
        if args[1] in domain.ATTRIBUTES and not isinstance(args[2], Variable) \
                and args[2] not in domain.DOMAINS[args[1]]:
            return f"{str(args[2])!r} is not a {args[1]}"
        if args[1] in domain.ATTRIBUTES:
            answer = (args[2], str(args[1]))
    elif name == "at":
        if not isinstance(args[1], Variable) and not (isinstance(args[1], Number) and args[1] in _REGIONS):
            return f"{str(args[1])!r} is not a region"
    elif name == "sameProperty":
        if not isinstance(args[2], Variable) and args[2] not in domain.ATTRIBUTES:
            return f"{str(args[2])!r} is not an attribute"
    for arg in object_terms:
        if not isinstance(arg, (Variable, Number)):  # is_object_term
            return f"{str(arg)!r} is not an object (variable or object id)"
    return names, objects, True, answer


def _too_many_object_variables(object_variables: set[Variable] | frozenset[Variable], limit: int) -> str:
    return (f"more than {limit} object variables ({len(object_variables)}: "
            f"{', '.join(sorted(object_variables))}; the official questions use at most 4)")


def _malformed(head: object, body: object) -> str | None:
    """Why ``head`` and ``body`` are not made of the typed parts at all (a value built by hand), or None."""
    if type(head) is not Variable or not _VARIABLE_NAME.fullmatch(head):
        return f"the head argument must be a variable, got {head!r}"
    if not isinstance(body, tuple) or not body:
        return "the body must be a non-empty tuple of literals"
    for literal in body:
        if type(literal) is Atom:
            if not isinstance(literal.predicate, str) or not isinstance(literal.terms, tuple):
                return f"malformed atom {literal!r}"
        elif type(literal) is not Inequality:
            return f"{literal!r} is not an Atom or an Inequality"
        for term in literal.terms:
            kind = type(term)
            if kind is Variable or kind is Constant:
                if (kind, term) in _WELL_FORMED:  # issue 27: each name is matched once
                    continue
                ok = (_VARIABLE_NAME if kind is Variable else _CONSTANT_NAME).fullmatch(term) is not None
                if ok and len(_WELL_FORMED) < 65536:
                    _WELL_FORMED.add((kind, str(term)))
            elif kind is Number:
                ok = term >= 0
            else:
                ok = False
            if not ok:
                return f"{term!r} is not a variable, a constant or a number 0..{MAX_OBJECT_ID}"
    return None


#: (Variable or Constant, name) pairs :func:`_malformed` has found well formed.
_WELL_FORMED: set[tuple[type, str]] = set()


@dataclass(frozen=True)
class SanitizedQuery:
    """A checked query: ``missing(head) :- body.``

    Made by :func:`~clevr_poc.queries.sanitizer.sanitize_query` (from text) or from typed parts
    (``SanitizedQuery(Variable("Q"), (Atom(...), Inequality(...), ...))``), which are checked against
    the query language here (:func:`analyse`; no bound on object variables: callers that need one,
    such as the Reasoner, compare :attr:`object_variables` with it).

    Attributes:
        head: the answer variable (``Q``).
        body: the body literals in the order written.

    Raises:
        UnsafeProgramError: (when made from parts) anything outside the query language.
    """

    head: Variable
    body: tuple[Literal, ...]

    def __post_init__(self) -> None:
        problem = _malformed(self.head, self.body)
        if problem is not None:
            raise UnsafeProgramError(f"rejected ASP query: {problem}")
        analysis = analyse(self.head, self.body, MAX_VARIABLES)
        if isinstance(analysis, str):
            raise reject(analysis, self.text)
        self.__dict__["_analysis"] = analysis

    @classmethod
    def checked(cls, head: Variable, body: tuple[Literal, ...], analysis: _Analysis) -> "SanitizedQuery":
        """The value of parts that :func:`analyse` has just accepted (``analysis``): not checked again
        (for :func:`~clevr_poc.queries.sanitizer.sanitize_query`)."""
        query = object.__new__(cls)
        object.__setattr__(query, "head", head)
        object.__setattr__(query, "body", body)
        query.__dict__["_analysis"] = analysis
        return query

    def __hash__(self) -> int:  # computed once: the Reasoner looks compiled queries up by value
        value = self.__dict__.get("_hash")
        if value is None:
            value = self.__dict__["_hash"] = hash((self.head, self.body))
        return value

    def __getstate__(self) -> dict:  # a string's hash differs between processes: not pickled
        return {k: v for k, v in self.__dict__.items() if k != "_hash"}

    # ------------------------------------------------------------------ derived
    @cached_property
    def text(self) -> str:
        """The canonical rule, ``missing(Q) :- lit1, lit2, ... .`` (no spaces inside a literal): the only
        query text the solver ever sees."""
        return f"missing({self.head}) :- {', '.join(map(str, self.body))}."

    def __str__(self) -> str:
        return self.text

    @property
    def head_variable(self) -> Variable:
        """The answer variable (:attr:`head`)."""
        return self.head

    @cached_property
    def literals(self) -> tuple[str, ...]:
        """The body literals as canonical texts, in order (``"hasProperty(X,color,Q)"``, ``"X!=Y"``)."""
        return tuple(map(str, self.body))

    @cached_property
    def atoms(self) -> tuple[Atom, ...]:
        """The body atoms (every literal but the inequalities), in order."""
        return tuple(lit for lit in self.body if type(lit) is Atom)

    @cached_property
    def inequalities(self) -> tuple[Inequality, ...]:
        """The body's ``!=`` comparisons, in order."""
        return tuple(lit for lit in self.body if type(lit) is Inequality)

    @property
    def attribute(self) -> str | None:
        """The queried attribute: the first ``hasProperty(X, <attribute>, Q)`` with Q the head, else None."""
        return self._analysis.attribute

    @property
    def variables(self) -> frozenset[Variable]:
        """Every variable of the body (the head's included)."""
        return self._analysis.variables

    @property
    def object_variables(self) -> frozenset[Variable]:
        """The variables in object positions (:data:`OBJECT_POSITIONS`)."""
        return self._analysis.object_variables

    def within(self, max_object_variables: int) -> "SanitizedQuery":
        """This query, when it has at most ``max_object_variables`` object variables.

        Raises:
            UnsafeProgramError: it has more (the sanitizer's message for the same bound).
        """
        if len(self.object_variables) > max_object_variables:
            raise reject(_too_many_object_variables(self.object_variables, max_object_variables), self.text)
        return self

    # ------------------------------------------------------------------ for the solver
    def rule(self, head: str = "missing", terms: tuple[Term, ...] | None = None) -> clingo_ast.AST:
        """The query as a clingo rule (syntax tree) with head ``head(terms)`` (default
        ``missing(<head variable>)``), e.g. ``rule("witness", (X, Q))`` is ``witness(X,Q) :- body.``"""
        terms = (self.head,) if terms is None else terms
        function = clingo_ast.Function(_LOCATION, head, [t.ast() for t in terms], 0)
        return clingo_ast.Rule(_LOCATION, clingo_ast.Literal(_LOCATION, clingo_ast.Sign.NoSign,
                                                             clingo_ast.SymbolicAtom(function)),
                               [literal.ast() for literal in self.body])
