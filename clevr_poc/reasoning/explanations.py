"""Explanations: why each value of the queried attribute is kept or eliminated.

For a question about attribute A (e.g. size) the answer is the set of values of A that some
consistent completion of the partial scene yields (official semantics, ``docs/concepts.md``). For
every value of A's domain this module says why it is in or out:

- **kept** value V: one *witness*, a consistent completion in which the query yields V: the hidden
  object's attributes and region (the hidden object's id is ``len(partial scene)``) and the object
  the query's target variable (the X of ``hasProperty(X, A, Q)``) was bound to;
- **eliminated** value V: a *minimal* set of environment constraints (indices into
  ``environment.constraints`` and their :meth:`~clevr_poc.environments.Constraint.describe` texts),
  plus the background rules needed with them, that together rule V out. Minimal means: drop any one
  member and V becomes possible (given the scene, the question and the rest of the background theory).
  An empty set means the scene, the question and the background theory alone rule V out.

Method (one grounding per call, ``asp/explain.lp``): every environment constraint k gets the body
literal ``active(k)`` and every background rule that can rule a value out gets
``background_active(b)`` (the parsed background program is transformed with :mod:`clingo.ast`; the
rules that define the vocabulary, i.e. the domains and "exactly one value per attribute", always hold).
``want(V)`` with ``:- want(V), not missing(V).`` asks for V. Each check is a solve under assumptions;
an unsatisfiable check's unsat core (clingo's ``SolveHandle.core()``) is a set of rules that rules V
out, which is then minimised by deletion (drop one member, re-solve; an unsatisfiable re-solve shrinks
the set to its new core). Activation literals occur only positively in rule bodies, so switching rules
off never removes a model and deletion gives a minimal set (Marques-Silva, Janota & Belov, "Minimal
sets over monotone predicates", CAV 2013, deletion-based MUS extraction).

Every solve is time-limited by the reasoner's ``time_limit`` (:data:`~clevr_poc.solver.watchdog.WATCHDOG`).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Sequence

import clingo

from clevr_poc import domain
from clevr_poc.answer import Answer, Elimination, Explanation, Witness
from clevr_poc.environments.environment import Environment
from clevr_poc.errors import ClevrPocError, SolverTimeoutError
from clevr_poc.knowledge import read_asp
from clevr_poc.queries.query import SanitizedQuery, Term
from clevr_poc.scene import Scene
from clevr_poc.solver.control import make_control
from clevr_poc.solver.programs import Program, scene_symbols
from clevr_poc.solver.rules import AST, ASTType, function_names, is_integrity_constraint, parse_rules, with_body_literal
from clevr_poc.solver.watchdog import WATCHDOG

#: Relation name -> English phrase ("Y is <phrase> X" for ``rel(X, Y)``, see ``asp/answering.lp``).
_RELATION_PHRASES = {"right": "right of", "left": "left of", "front": "in front of", "behind": "behind"}
_ADJACENCY = {"right": domain.RIGHT_R, "left": domain.LEFT_R, "front": domain.FRONT_R, "behind": domain.BEHIND_R}

CAPACITY_RULE = "at most 3 objects per region"
IDENTICAL_RULE = "no two objects have the same color, shape, size and material"


def _regions_text(regions: Sequence[int]) -> str:
    regions = sorted(regions)
    if len(regions) == 1:
        return f"region {regions[0]}"
    return "region " + ", ".join(str(r) for r in regions[:-1]) + f" or {regions[-1]}"


def relation_rule_name(relation: str) -> str:
    """English name of the background rule tying ``relation`` to regions (Appendix A, lines 11-20).

    E.g. ``"right"`` -> ``"an object right of an object in region 1 or 3 lies in region 1 or 3"``
    (derived from :data:`clevr_poc.domain.RIGHT_R` and friends).
    """
    adjacency = _ADJACENCY[relation]
    restricted: dict[tuple[int, ...], list[int]] = {}
    for r1 in domain.REGIONS:
        targets = tuple(sorted(r2 for a, r2 in adjacency if a == r1))
        if targets != domain.REGIONS:
            restricted.setdefault(targets, []).append(r1)
    parts = [f"an object {_RELATION_PHRASES[relation]} an object in {_regions_text(sources)} lies in "
             f"{_regions_text(targets)}" for targets, sources in restricted.items()]
    return "; ".join(parts) if parts else f"'{relation}' relations restrict regions"


def _background_rule_name(rule: AST) -> str | None:
    """The readable name of a background/answering rule that can rule a value out, else None.

    Integrity constraints and the relation/region choice rules can; facts, definitions and the
    "exactly one value / one region per object" choice rules define the vocabulary and always hold.
    The answering constraint ``:- not missing(_).`` is implied by ``want(V)`` and always holds.
    """
    head = rule.head
    body_names = set(function_names(rule.body))
    if is_integrity_constraint(rule):
        if "missing" in body_names:
            return None
        if "exceed_region_capacity" in body_names:
            return CAPACITY_RULE
        if "sameProperty" in body_names:
            return IDENTICAL_RULE
        return f"background rule {str(rule)}"  # a constraint added to the background later
    if head.ast_type == ASTType.Aggregate:
        relations = [name for name in _RELATION_PHRASES if name in body_names]
        if len(relations) == 1 and set(function_names(head)) & {"at"}:
            return relation_rule_name(relations[0])
    return None


@lru_cache(maxsize=1)
def activated_background() -> tuple[str, tuple[str, ...]]:
    """``background.lp + answering.lp`` with ``background_active(b)`` in the body of every rule that can
    rule a value out.

    Returns:
        ``(program text, names)``: ``names[b]`` is the English name of background rule b (rules with
        the same name share one activation atom).
    """
    names: list[str] = []
    lines: list[str] = []
    for rule in parse_rules(read_asp("background.lp") + "\n" + read_asp("answering.lp")):
        name = _background_rule_name(rule)
        if name is not None:
            if name not in names:
                names.append(name)
            rule = with_body_literal(rule, "background_active", names.index(name))
        lines.append(str(rule))
    return "\n".join(lines), tuple(names)


def activated_constraints(environment: Environment) -> str:
    """The environment's constraints, constraint k with the body literal ``active(k)``."""
    return _activated_constraints(tuple(c.asp_rules() for c in environment.constraints))


@lru_cache(maxsize=256)
def _activated_constraints(rules: tuple[tuple[str, ...], ...]) -> str:
    owner: list[int] = []  # owner[line - 1] = index of the constraint written on that line
    lines: list[str] = []
    for k, constraint_rules in enumerate(rules):
        for rule in constraint_rules:
            lines.append(" ".join(rule.split()))
            owner.append(k)
    activated = []
    for rule in parse_rules("\n".join(lines)):
        activated.append(str(with_body_literal(rule, "active", owner[rule.location.begin.line - 1])))
    return "\n".join(activated)


def _target_variable(query: SanitizedQuery) -> Term | None:
    """The object term the answer is read from: X of ``hasProperty(X, attribute, Q)`` (or ``at(X, Q)``),
    or Q itself when Q stands for an object; None when there is none."""
    head = query.head
    for atom in query.atoms:
        args = atom.terms
        if atom.predicate == "hasProperty" and args[2] == head and (query.attribute is None or args[1] == query.attribute):
            return args[0]
    for atom in query.atoms:
        if atom.predicate == "at" and atom.terms[1] == head:
            return atom.terms[0]
    for atom in query.atoms:
        if head in atom.object_terms:
            return head
    return None


def candidate_values(query: SanitizedQuery, answer_values: frozenset[str], num_objects: int) -> tuple[str, ...]:
    """Values to explain: every value the answer variable Q could take by the positions it occupies in
    the query (the queried attribute's domain for ``hasProperty(X, attribute, Q)``, every attribute
    value for ``hasProperty(X, P, Q)``, region ids for ``at(X, Q)``, object ids 0..N-1 where Q stands for
    an object; the intersection when Q occurs in several), in domain order, plus any answer value
    outside them (none for a correct reasoner)."""
    head = query.head
    domains: list[list[str]] = []
    for atom in query.atoms:
        name, args = atom.predicate, atom.terms
        if name == "hasProperty" and args[2] == head:
            attribute = args[1]
            if attribute in domain.DOMAINS:
                domains.append(list(domain.DOMAINS[attribute]))
            else:
                domains.append([v for a in domain.ATTRIBUTES for v in domain.DOMAINS[a]])
        if name == "at" and args[1] == head:
            domains.append([str(r) for r in domain.REGIONS])
        if head in atom.object_terms:
            domains.append([str(o) for o in range(num_objects)])
        if name == "sameProperty" and args[2] == head:
            domains.append(list(domain.ATTRIBUTES))
    values = [v for v in domains[0] if all(v in d for d in domains[1:])] if domains else []
    values += sorted(v for v in answer_values if v not in values)
    return tuple(values)


@dataclass(frozen=True)
class _Check:
    """Outcome of one solve: a model's shown symbols, or the unsat core."""

    model: tuple[clingo.Symbol, ...] | None
    core: frozenset[int]


class _ExplainSolver:
    """One grounded explanation program; checks are solves under assumptions."""

    def __init__(self, environment: Environment, scene: Scene, query: SanitizedQuery, hidden: int | None,
                 candidates: Sequence[str], time_limit: float) -> None:
        self.time_limit = time_limit
        background, self.background_names = activated_background()
        self.target = _target_variable(query)
        witness = [query.rule("witness", (self.target, query.head))] if self.target is not None else []
        function, number = clingo.Function, clingo.Number
        facts = [function("constraint_id", [number(k)]) for k in range(len(environment.constraints))]
        facts += [function("background_rule_id", [number(b)]) for b in range(len(self.background_names))]
        facts += [function("candidate", [clingo.parse_term(v)]) for v in candidates]
        program = (Program().with_text("rules", background).with_knowledge("objects.lp")
                   .grounding("objects", environment.num_objects)
                   .with_text("rules", activated_constraints(environment))
                   .with_facts(scene_symbols(scene)).with_query(query.text).with_rules(witness)
                   .with_knowledge("explain.lp").with_facts(facts))
        if hidden is not None:
            program = program.grounding("hidden", hidden)
        control = program.load(make_control(["--models=1"]))
        self.control = control
        atoms = control.symbolic_atoms

        def literal(symbol: clingo.Symbol) -> int:
            atom = atoms[symbol]
            if atom is None:
                raise ClevrPocError(f"internal error: external {symbol} was not grounded")
            return atom.literal

        self.want = {v: literal(clingo.Function("want", [clingo.parse_term(v)])) for v in candidates}
        self.constraint_literals = [literal(clingo.Function("active", [clingo.Number(k)]))
                                    for k in range(len(environment.constraints))]
        self.background_literals = [literal(clingo.Function("background_active", [clingo.Number(b)]))
                                    for b in range(len(self.background_names))]
        self.activation = self.constraint_literals + self.background_literals
        for lit in (*self.want.values(), *self.activation):
            control.assign_external(lit, None)  # free: every check sets them by assumptions

    def check(self, value: str | None, active: Sequence[int]) -> _Check:
        """Solve with ``want(value)`` (None: no value required) and exactly the rules ``active`` in force."""
        on = set(active)
        assumptions = [lit if v == value else -lit for v, lit in self.want.items()]
        assumptions += [lit if lit in on else -lit for lit in self.activation]
        with WATCHDOG.limit(self.control, self.time_limit) as fired:
            with self.control.solve(assumptions=assumptions, yield_=True) as handle:
                model = None
                for m in handle:
                    model = tuple(m.symbols(shown=True))
                    break
                result = handle.get()
                core = frozenset(handle.core()) if result.unsatisfiable else frozenset()
        if fired[0] or (model is None and result.interrupted):
            raise SolverTimeoutError(f"clingo did not finish an explanation check within {self.time_limit:g} s")
        return _Check(model, core)

    def minimal_set(self, value: str | None, core: frozenset[int]) -> list[int]:
        """A minimal subset of the activation literals in ``core`` that, with ``want(value)``, is
        unsatisfiable (deletion-based; environment constraints are tried for deletion first)."""
        remaining = [lit for lit in self.activation if lit in core]
        necessary: list[int] = []
        while remaining:
            candidate = remaining.pop(0)
            outcome = self.check(value, necessary + remaining)
            if outcome.model is None:
                remaining = [lit for lit in remaining if lit in outcome.core]
            else:
                necessary.append(candidate)
        return necessary

    def elimination(self, value: str, core: frozenset[int], environment: Environment) -> Elimination:
        literals = set(self.minimal_set(value, core))
        indices = tuple(k for k, lit in enumerate(self.constraint_literals) if lit in literals)
        background = tuple(name for name, lit in zip(self.background_names, self.background_literals)
                           if lit in literals)
        return Elimination(value, indices, tuple(environment.constraints[k].describe() for k in indices), background)

    def witness(self, value: str, model: Sequence[clingo.Symbol], hidden: int | None) -> Witness:
        hidden_object: dict[str, Any] = {}
        matched: list[int] = []
        for symbol in model:
            if symbol.name == "hidden_property":
                hidden_object[symbol.arguments[0].name] = str(symbol.arguments[1])
            elif symbol.name == "hidden_at":
                hidden_object["region"] = symbol.arguments[0].number
            elif symbol.name == "witness" and str(symbol.arguments[1]) == value \
                    and symbol.arguments[0].type == clingo.SymbolType.Number:
                matched.append(symbol.arguments[0].number)
        if hidden_object:
            hidden_object = {"id": hidden, **{k: hidden_object[k] for k in (*domain.ATTRIBUTES, "region")
                                              if k in hidden_object}}
        bound = None
        if matched:
            bound = hidden if hidden in matched else min(matched)
        return Witness(value, hidden_object, bound)


def explain(reasoner: Any, environment: Environment, scene: Scene, query: Any) -> Answer:
    """The answer of ``reasoner`` with an :class:`~clevr_poc.answer.Explanation` of every value.

    Args:
        reasoner: a :class:`~clevr_poc.reasoning.Reasoner` (its sanitizer, answer and ``time_limit``
            are used).
        environment: constraints and N (hidden object included).
        scene: the partial scene; the hidden object's id is ``len(scene)`` (none when the scene
            already has N objects).
        query: ``missing(Q) :- ...`` text, :class:`~clevr_poc.question.Question` or
            :class:`~clevr_poc.reasoning.SanitizedQuery` (untrusted text is sanitized).

    Returns:
        :class:`~clevr_poc.answer.Answer` with the same ``values``, ``satisfiable`` and ``attribute`` as
        ``reasoner.answer(...)`` and ``explanation`` = :class:`~clevr_poc.answer.Explanation` whose
        ``kept`` holds one :class:`~clevr_poc.answer.Witness` per answer value and ``eliminated`` one
        :class:`~clevr_poc.answer.Elimination` per other value of the attribute's domain (domain
        order). For an unsatisfiable input every value is eliminated and ``reason`` also names a
        minimal set of rules that make the input inconsistent.

    Raises:
        UnsafeProgramError: the query is outside the query language.
        FormatError: the scene has more objects than the environment declares.
        SolverTimeoutError: one solver call took longer than ``reasoner.time_limit``.
        ClevrPocError: the explanation disagrees with the reasoner's answer (a bug; please report).
    """
    checked = reasoner.sanitize(query)
    answer = reasoner.answer(environment, scene, checked)
    hidden = len(scene) if len(scene) < environment.num_objects else None
    candidates = candidate_values(checked, answer.values, environment.num_objects)
    solver = _ExplainSolver(environment, scene, checked, hidden, candidates, reasoner.time_limit)
    everything = list(solver.activation)
    kept: list[Witness] = []
    eliminated: list[Elimination] = []
    for value in candidates:
        outcome = solver.check(value, everything)
        if outcome.model is not None:
            kept.append(solver.witness(value, outcome.model, hidden))
        else:
            eliminated.append(solver.elimination(value, outcome.core, environment))
    kept_values = frozenset(w.value for w in kept)
    if kept_values != answer.values:
        raise ClevrPocError(
            f"internal error: explanation keeps {sorted(kept_values)} but the answer is {answer.sorted_values()} "
            f"for query {checked.text!r}")
    reason = answer.reason
    if not answer.satisfiable:
        outcome = solver.check(None, everything)
        if outcome.model is None:
            conflict = solver.elimination("", outcome.core, environment)
            reason = f"{reason}; {_conflict_text(conflict)}"
    explanation = Explanation(checked.attribute, tuple(kept), tuple(eliminated))
    return Answer(answer.values, answer.attribute, answer.satisfiable, reason, explanation, answer.query,
                  answer.scene_facts)


def _conflict_text(conflict: Elimination) -> str:
    if not conflict.constraints and not conflict.background:
        return "the scene and the question alone admit no answer (nothing can match the question)"
    parts = [f"constraint {k}: {text}" for k, text in zip(conflict.constraints, conflict.texts)]
    parts += [f"background rule: {name}" for name in conflict.background]
    return "a minimal set of rules that cannot hold together with the scene and the question: " + "; ".join(parts)

