"""Compiled answering: ground an environment once, answer each question with assumptions only.

Grounding dominates the cost of one small CLEVR-POC question (~5 ms of ~8 ms; see
``docs/benchmarks.md``). :class:`EnvironmentSolver` grounds ``background.lp + compiled_inputs.lp +
objects(N) + slots(S) + constraints`` (:func:`clevr_poc.solver.programs.environment_program`) once per environment (``compiled_inputs.lp`` restates the rules of
``answering.lp`` in an equivalent form that grounds 3x smaller); a question is then a list of
assumptions over ``#external`` atoms (scene facts and the compiled query, see ``asp/compiled_inputs.lp``
for why the answer sets are those of the direct program), and one brave-consequence solve. Each
environment keeps one grounded program per number of query variables (2..:data:`MAX_SLOTS`), so a
question pays only for the variables it uses.

Queries the compiler does not cover (a variable in an attribute/value position other than the answer,
more than :data:`MAX_SLOTS` objects, constants as object ids in relations, ...) return None from
:func:`compile_query`; the Reasoner then solves them with the direct encoding.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from functools import lru_cache
from typing import Iterable

import clingo

from clevr_poc import domain
from clevr_poc.queries.query import Constant, Inequality, Number, SanitizedQuery, Term, Variable
from clevr_poc.scene import Scene
from clevr_poc.solver.control import make_control, missing_values
from clevr_poc.solver.programs import environment_program
from clevr_poc.solver.watchdog import solve_brave

#: Query variables (objects) a compiled query may use; CLEVR-POC's three-hop questions use 4.
MAX_SLOTS = 5
#: clingo options of every compiled program: all models, brave consequences, and clasp's ``frumpy``
#: configuration (its former default) rather than the ``auto`` choice (``tweety``): the answers are the
#: same (brave consequences do not depend on the search), a solve of generated questions takes about
#: 0.36-0.42 ms instead of 0.49 ms (issue 27: 704 questions of ``generate --seed 0``, best of 5 passes).
SOLVER_ARGUMENTS: tuple[str, ...] = ("--models=0", "--enum-mode=brave", "--configuration=frumpy")
_SAME = {"same_color": "color", "same_size": "size", "same_shape": "shape", "same_material": "material"}


@dataclass(frozen=True)
class CompiledQuery:
    """A query as facts over slots: ``slot(S)``, ``q_property(S,P,V)``, ``q_target(S,P)``, ...

    Attributes:
        slots: number of query variables (objects).
        facts: tuples ``(predicate, *arguments)`` of the externals to assume true.
        attribute: the queried attribute.
    """

    slots: int
    facts: tuple[tuple, ...]
    attribute: str


def compile_query(query: SanitizedQuery) -> CompiledQuery | None:
    """Compile a sanitized query, or None when it is outside the compiled fragment."""
    head = query.head
    slots: dict[object, int] = {}
    facts: list[tuple] = []
    target: tuple | None = None
    pinned = 0  # object ids met so far (each gets a slot of its own)

    def slot(term: Term) -> int | None:
        nonlocal pinned
        if isinstance(term, Variable):
            if term == head:
                return None
            if term not in slots:
                slots[term] = len(slots)
            return slots[term]
        if isinstance(term, Number):  # a constant object id gets a slot of its own pinned to that object
            key = ("#", pinned)
            pinned += 1
            slots[key] = len(slots)
            facts.append(("q_object", slots[key], int(term)))
            return slots[key]
        return None

    for literal in query.body:
        args = literal.terms
        if isinstance(literal, Inequality):
            if not (isinstance(args[0], Variable) and isinstance(args[1], Variable)):
                return None
            s, t = slot(args[0]), slot(args[1])
            if s is None or t is None or s == t:
                return None
            facts.append(("q_distinct", min(s, t), max(s, t)))
            continue
        name = literal.predicate
        if name == "hasProperty":
            s, attribute, value = slot(args[0]), str(args[1]), args[2]
            if s is None or attribute not in domain.ATTRIBUTES:
                return None
            if value == head:
                if target is not None:
                    return None
                target = ("q_target", s, attribute)
            elif isinstance(value, Constant) and value in domain.DOMAINS[attribute]:
                facts.append(("q_property", s, attribute, str(value)))
            else:
                return None
        elif name == "at":
            s = slot(args[0])
            if s is None or not isinstance(args[1], Number):
                return None
            facts.append(("q_at", s, int(args[1])))
        elif name in domain.RELATIONS or name in _SAME or name == "sameProperty":
            s, t = slot(args[0]), slot(args[1])
            if s is None or t is None or s == t:
                return None
            if name == "sameProperty":
                if args[2] not in domain.ATTRIBUTES:
                    return None
                facts.append(("q_same", str(args[2]), s, t))
            elif name in _SAME:
                facts.append(("q_same", _SAME[name], s, t))
            else:
                facts.append(("q_relation", name, s, t))
        elif name == "object":
            if slot(args[0]) is None:
                return None
        else:
            return None
    if target is None or len(slots) > MAX_SLOTS:
        return None
    facts.extend(("slot", s) for s in range(len(slots)))
    facts.append(target)
    return CompiledQuery(len(slots), tuple(facts), target[2])


def _symbol(key: tuple) -> clingo.Symbol:
    """The clingo symbol of an atom key: ``("q_property", 0, "color", "red")`` -> ``q_property(0,color,red)``
    (its name, then its arguments: ints as numbers, strings as constants)."""
    name, *arguments = key
    return clingo.Function(name, [clingo.Number(a) if isinstance(a, int) else clingo.Function(a) for a in arguments])


@dataclass(frozen=True)
class _AtomTable:
    """The atoms an :class:`EnvironmentSolver` reads from every grounded program of ``num_objects``
    objects and ``slots`` query variables, as ``(key, clingo symbol)`` pairs (the same for every
    environment of that size, so made once per size and process): the ``#external`` declarations of
    ``asp/compiled_inputs.lp`` (in :attr:`EnvironmentSolver.EXTERNALS` order), ``hasProperty/3``,
    ``at/2`` and the relations ``rel(i, j)`` with ``i < j``.

    Issue 27: an :class:`EnvironmentSolver` looks each of these atoms up in its program
    (``symbolic_atoms[symbol]``) instead of walking every atom of those signatures and printing and
    parsing its symbol (relations with ``i > j`` included): the same
    tables (``tests/test_compiled_tables.py``), 10.2-10.7 ms of CPU per program instead of 12.5-13.3 ms
    (the 10 environments of ``benchmarks/generation.py``, 2-4 query variables; 7.5-8.8 ms of it is
    clingo's grounding)."""

    externals: tuple[tuple[tuple, clingo.Symbol], ...]
    properties: tuple[tuple[tuple, clingo.Symbol], ...]
    regions: tuple[tuple[tuple, clingo.Symbol], ...]
    relations: tuple[tuple[tuple, clingo.Symbol], ...]


@lru_cache(maxsize=64)
def _atom_table(num_objects: int, slots: int) -> _AtomTable:
    objects, ids = range(num_objects), range(slots)
    values = [(p, v) for p in domain.ATTRIBUTES for v in domain.DOMAINS[p]]
    externals = (
        [("scene_relation", rel, i, j) for rel in domain.RELATIONS for i in objects for j in objects if i > j]
        + [("slot", s) for s in ids]
        + [("q_object", s, o) for s in ids for o in objects]
        + [("q_property", s, p, v) for s in ids for p, v in values]
        + [("q_at", s, r) for s in ids for r in domain.REGIONS]
        + [("q_relation", rel, s, t) for rel in domain.RELATIONS for s in ids for t in ids if s != t]
        + [("q_same", p, s, t) for p in domain.ATTRIBUTES for s in ids for t in ids if s != t]
        + [("q_distinct", s, t) for s in ids for t in ids if s < t]
        + [("q_target", s, p) for s in ids for p in domain.ATTRIBUTES])

    def pairs(keys: list[tuple]) -> tuple[tuple[tuple, clingo.Symbol], ...]:
        return tuple((key, _symbol(key)) for key in keys)

    return _AtomTable(
        pairs(externals),
        pairs([("hasProperty", o, p, v) for o in objects for p, v in values]),
        pairs([("at", o, r) for o in objects for r in domain.REGIONS]),
        pairs([(rel, i, j) for rel in domain.RELATIONS for i in objects for j in objects if i < j]))


class EnvironmentSolver:
    """One environment, grounded once; answers questions by assumptions (not thread-safe by itself:
    calls are serialised with a lock).

    Assumptions of one question (``asp/compiled_inputs.lp`` says why each is exact):

    - the scene's ``hasProperty(i,P,V)``, ``at(i,R)`` and ``rel(i,j)`` with ``i < j``: the atoms
      themselves, assumed true (free choices of the program; unstated ones are left free);
    - every ``#external`` (``scene_relation(rel,i,j)`` with ``i > j``, ``slot/1``, ``q_*``): assumed
      true when the scene or the compiled query states it, false otherwise.
    """

    EXTERNALS = (("scene_relation", 3), ("slot", 1), ("q_object", 2), ("q_property", 3), ("q_at", 2),
                 ("q_relation", 3), ("q_same", 3), ("q_distinct", 2), ("q_target", 2))

    def __init__(self, num_objects: int, constraints_asp: str, slots: int = MAX_SLOTS) -> None:
        if not 1 <= slots <= MAX_SLOTS:
            raise ValueError(f"slots must be in 1..{MAX_SLOTS}, got {slots}")
        self.num_objects = num_objects
        #: query variables this program has room for (a question with more cannot use it)
        self.slots = slots
        self.lock = threading.Lock()
        program = environment_program(num_objects, constraints_asp, knowledge=("compiled_inputs.lp",))
        control = program.grounding("slots", slots).load(make_control(SOLVER_ARGUMENTS))
        atoms = control.symbolic_atoms
        table = _atom_table(num_objects, slots)
        #: external -> position in :attr:`base` (its false literal there)
        self.index: dict[tuple, int] = {}
        base: list[int] = []
        for key, symbol in table.externals:  # declared [free] (compiled_inputs.lp): assumptions set them
            atom = atoms[symbol]
            if atom is None or not atom.is_external:
                continue
            self.index[key] = len(base)
            base.append(-atom.literal)
        self.base = base
        n = num_objects
        #: properties[i][attribute][value] -> literal of hasProperty(i, attribute, value)
        self.properties: list[dict[str, dict[str, int]]] = [{a: {} for a in domain.ATTRIBUTES} for _ in range(n)]
        for (_, o, p, v), symbol in table.properties:
            atom = atoms[symbol]
            if atom is not None:
                self.properties[o][p][v] = atom.literal
        #: regions[i][r] -> literal of at(i, r)
        self.regions: list[dict[int, int]] = [{} for _ in range(n)]
        for (_, o, r), symbol in table.regions:
            atom = atoms[symbol]
            if atom is not None:
                self.regions[o][r] = atom.literal
        #: relations[rel][i][j]: literal of rel(i, j) to assume (i < j), or -1 - position in base of
        #: the external scene_relation(rel, i, j) (i > j); 0 on the diagonal (no such fact)
        self.relations: dict[str, list[list[int]]] = {rel: [[0] * n for _ in range(n)] for rel in domain.RELATIONS}
        for (rel, i, j), symbol in table.relations:
            atom = atoms[symbol]
            if atom is not None:
                self.relations[rel][i][j] = atom.literal
        for rel, rows in self.relations.items():
            for i in range(n):
                for j in range(i):
                    rows[i][j] = -1 - self.index[("scene_relation", rel, i, j)]
        #: missing(V) atom -> V (a dict lookup instead of converting clingo symbols to text)
        self.missing_values: dict[clingo.Symbol, str] = {
            atom.symbol: str(atom.symbol.arguments[0]) for atom in atoms.by_signature("missing", 1)}
        self.control = control

    def assumptions(self, scene: Scene, query: CompiledQuery) -> list[int] | None:
        """Assumption literals for one question; None if a fact has no atom in the program (a value
        outside the domains, an object id outside 0..N-1, a relation of an object with itself: the
        Reasoner then solves the question with the direct encoding, which reports it)."""
        lits = list(self.base)
        append = lits.append
        index = self.index
        try:
            properties, regions = self.properties, self.regions
            for i, obj in enumerate(scene.objects):
                props = properties[i]
                append(props["color"][obj.color])
                append(props["shape"][obj.shape])
                append(props["size"][obj.size])
                append(props["material"][obj.material])
                append(regions[i][obj.region])
            relations = self.relations
            for rel, rows in scene.relationships.items():
                table = relations[rel]
                for i, row in enumerate(rows):
                    cells = table[i]
                    for j in row:
                        if j < 0:
                            return None
                        lit = cells[j]
                        if lit > 0:
                            append(lit)
                        elif lit < 0:
                            pos = -1 - lit
                            lits[pos] = abs(lits[pos])
                        else:
                            return None
            for fact in query.facts:
                pos = index[fact]
                lits[pos] = abs(lits[pos])
        except (KeyError, IndexError, TypeError):
            return None
        return lits

    def solve(self, assumptions: Iterable[int], time_limit: float) -> tuple[bool, frozenset[str], bool]:
        """Brave consequences under ``assumptions``: ``(satisfiable, values, timed_out)``."""
        with self.lock:
            satisfiable, symbols, timed_out = solve_brave(self.control, assumptions, time_limit)
        return satisfiable, missing_values(symbols, self.missing_values), timed_out
