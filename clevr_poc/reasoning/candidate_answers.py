"""The official answer of a compiled query on a partial scene, computed in Python from the hidden
object's candidates (issue 27: the question generator's verdicts on layouts the visibility check has
already rejected, where only *whether* a question is accepted matters, not its gold label).

What is reproduced (``asp/background.lp``, ``asp/answering.lp``, ``asp/compiled_inputs.lp``; objects
``0..N-1``, the visible ones ``0..N-2`` with their attributes, regions and ``relationships``, the hidden
one ``h = N-1`` with none of them):

- **the hidden object** takes every look ``(color, shape, size, material, region)`` of
  :func:`~clevr_poc.generation.candidate_objects.hidden_candidates` (the environment's constraints,
  distinctness and region capacity; no constraint template mentions a relation);
- **relations with the hidden object**: for each visible ``o`` (``o < h``) the program chooses exactly
  one of ``left(o,h)``/``right(o,h)`` and one of ``front(o,h)``/``behind(o,h)``; ``right(h,o)`` follows
  from ``left(o,h)`` and ``front(h,o)`` from ``behind(o,h)``; ``left(h,o)`` and ``behind(h,o)`` have no
  rule (the scene states no ``scene_relation`` of the hidden object). A relation atom ``rel(X,Y)``
  requires ``rel_R(region X, region Y)``; ``left(o,h)`` and ``right(h,o)`` require the same
  (``right_R(r_h, r_o)``), as do ``behind(o,h)`` and ``front(h,o)`` (``front_R(r_h, r_o)``). Every pair
  of regions admits one side of each axis (checked at import), so the choices of different ``o`` are
  independent and never rule a candidate out by themselves;
- **relations between visible objects** are the scene's (``rel(i,j)`` for ``j`` in
  ``relationships[rel][i]``, as :meth:`~clevr_poc.reasoning.compiled.EnvironmentSolver.assumptions`
  states them) closed under ``right(X,Y) :- left(Y,X)`` and ``front(X,Y) :- behind(Y,X)``; when a pair
  is not ordered on one axis by exactly one atom (a tie, a contradiction) or a relation breaks region
  adjacency, the scene is outside this reading (None: ask clingo);
- **the query**: one object per slot satisfying every ``q_*`` fact; ``rel(x,x)`` is never true and
  ``sameProperty`` needs two different objects. The answer is the union over candidates, relation
  choices and bindings of the target slot's value (the brave consequences of ``missing/1``).

The hidden object stays one symbolic object: a binding that uses it narrows a bit set over the
candidates (its attribute values, its region through the relations), so the search runs over bindings
of slots to objects, not over candidates (tens of microseconds for the generator's questions).
``tests/test_candidate_answers.py`` compares it with the compiled Reasoner on generated scenes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Sequence

from clevr_poc import domain
from clevr_poc.reasoning.compiled import CompiledQuery
from clevr_poc.scene import Scene

#: A look of the hidden object: (color, shape, size, material, region) (as in candidate_objects).
Look = tuple[str, str, str, str, int]
_FIELD = {"color": 0, "shape": 1, "size": 2, "material": 3}
_LR, _FB = 0, 1  # the two axes of a (visible, hidden) pair


#: Every look in domain order, and its bit: a set of looks is an int (the hidden object's candidates,
#: narrowed by a binding's requirements).
LOOKS: tuple[Look, ...] = tuple((c, s, z, m, r) for c in domain.COLORS for s in domain.SHAPES for z in domain.SIZES
                                for m in domain.MATERIALS for r in domain.REGIONS)
LOOK_BIT: dict[Look, int] = {look: 1 << k for k, look in enumerate(LOOKS)}
#: ``VALUE_BITS[attribute][value]``: the looks with that value; ``REGION_BITS[region]`` likewise.
VALUE_BITS: dict[str, dict[str, int]] = {
    a: {v: sum(LOOK_BIT[look] for look in LOOKS if look[p] == v) for v in domain.DOMAINS[a]}
    for a, p in _FIELD.items()}
REGION_BITS: tuple[int, ...] = tuple(sum(LOOK_BIT[look] for look in LOOKS if look[4] == r) for r in domain.REGIONS)


def _hidden_relation_rules() -> dict[tuple[str, bool, int], tuple[int, int, int]]:
    """``(rel, hidden_first, r_o)`` -> (axis, side, looks whose region allows the atom) for the atom
    ``rel(o,h)`` (``hidden_first`` False) or ``rel(h,o)`` (True) with ``o`` in region ``r_o``; atoms
    without a rule (``left(h,o)``, ``behind(h,o)``) are absent."""
    right, front = domain.RIGHT_R, domain.FRONT_R
    swap = frozenset((b, a) for a, b in right)  # (r_h, r_o) with right_R(r_o, r_h)
    swap_front = frozenset((b, a) for a, b in front)
    rules = {
        ("left", False): (_LR, 0, right),        # left(o,h): left_R(r_o, r_h) = right_R(r_h, r_o)
        ("right", True): (_LR, 0, right),        # right(h,o) :- left(o,h); right_R(r_h, r_o)
        ("right", False): (_LR, 1, swap),        # right(o,h): right_R(r_o, r_h)
        ("front", False): (_FB, 0, swap_front),  # front(o,h): front_R(r_o, r_h)
        ("behind", False): (_FB, 1, front),      # behind(o,h): behind_R(r_o, r_h) = front_R(r_h, r_o)
        ("front", True): (_FB, 1, front),        # front(h,o) :- behind(o,h); front_R(r_h, r_o)
    }
    return {(rel, hidden_first, r_o): (axis, side, sum(REGION_BITS[r_h] for r_h in domain.REGIONS
                                                       if (r_h, r_o) in pairs))
            for (rel, hidden_first), (axis, side, pairs) in rules.items() for r_o in domain.REGIONS}


_HIDDEN_RULES = _hidden_relation_rules()
for _table in (domain.RIGHT_R, domain.FRONT_R):  # every region pair is ordered one way or the other
    assert all((a, b) in _table or (b, a) in _table for a in domain.REGIONS for b in domain.REGIONS)


#: ``_ADJACENT[rel][a]``: the regions b with ``(a, b)`` in ``REGION_ADJACENCY[rel]``.
_ADJACENT: dict[str, dict[int, frozenset[int]]] = {
    rel: {a: frozenset(b for x, b in pairs if x == a) for a, _ in pairs}
    for rel, pairs in domain.REGION_ADJACENCY.items()}


class _Later(dict):
    """``_LATER[n][i]``: ``frozenset(range(i + 1, n))``, made when first asked for."""

    def __missing__(self, n: int) -> tuple[frozenset[int], ...]:
        value = self[n] = tuple(frozenset(range(i + 1, n)) for i in range(n))
        return value


_LATER = _Later()


@dataclass(frozen=True)
class PartialWorld:
    """A partial scene and its hidden object's candidates, prepared for :func:`candidate_answer`
    (built once per partial scene by :func:`partial_world`).

    Attributes:
        hidden: the hidden object's id (``N-1`` = number of visible objects).
        looks: per visible object, its (color, shape, size, material, region).
        relations: ``relations[rel][i]``: the visible ``j`` with ``rel(i,j)`` true.
        full: the candidates, as a set of :data:`LOOKS` (bit ``LOOK_BIT[look]``); 0 when there is none.
    """

    hidden: int
    looks: tuple[Look, ...]
    relations: dict[str, tuple[frozenset[int], ...]]
    full: int


def partial_world(partial: Scene, candidates: Iterable[Look], *, look_bits: int | None = None) -> PartialWorld | None:
    """:class:`PartialWorld` of ``partial`` (the visible objects ``0..N-2``) and the hidden object's
    ``candidates``; None when the visible relations are outside the reading of the module docstring
    (a pair ordered by no atom or by both on one axis, a relation against region adjacency, rows that
    do not match the objects, a value or region outside the domains). The hidden object's id is
    ``len(partial)``: the caller's environment has ``N = len(partial) + 1`` objects. ``look_bits``: the
    candidates as a set of :data:`LOOKS` (:attr:`PartialWorld.full`) when the caller has it already (the
    question generator keeps it: issue 27); it must be that set."""
    objects = partial.objects
    n = len(objects)
    looks = tuple((o.color, o.shape, o.size, o.material, o.region) for o in objects)
    if any(look not in LOOK_BIT for look in looks):
        return None
    rows = partial.relationships
    if set(rows) != set(domain.RELATIONS) or any(len(rows[rel]) != n for rel in domain.RELATIONS):
        return None
    # issue 27: a set per row, the pairs of each axis tested by set operations, adjacency looked up per
    # (relation, region): the same verdicts as testing every pair in turn
    true = {}
    for rel in domain.RELATIONS:
        sets = true[rel] = []
        for i, row in enumerate(rows[rel]):
            members = set(row)
            if members and (i in members or min(members) < 0 or max(members) >= n):
                return None
            sets.append(members)
    for derived, source in (("right", "left"), ("front", "behind")):  # right(X,Y) :- left(Y,X)
        targets = true[derived]
        for i, members in enumerate(true[source]):
            for j in members:
                targets[j].add(i)
    for first, second in (("left", "right"), ("front", "behind")):
        for i, (a, b) in enumerate(zip(true[first], true[second])):
            if not _LATER[n][i] <= (a ^ b):
                return None  # a later j in neither (a tie: a free choice) or in both (no answer set)
    regions = [look[4] for look in looks]
    for rel in domain.RELATIONS:
        reachable = _ADJACENT[rel]
        for i, members in enumerate(true[rel]):
            allowed = reachable.get(regions[i], ())
            for j in members:
                if regions[j] not in allowed:
                    return None
    full = look_bits
    if full is None:
        try:
            full = sum(map(LOOK_BIT.__getitem__, set(candidates)))
        except KeyError:
            return None  # a look outside the domains
    return PartialWorld(n, looks, {rel: tuple(map(frozenset, true[rel])) for rel in domain.RELATIONS}, full)


def candidate_answer(world: PartialWorld, query: CompiledQuery) -> frozenset[str] | None:
    """The Reasoner's answer (``values``) to ``query`` on ``world``'s partial scene, or None when the
    query has a fact this reading does not know (then ask clingo). An unsatisfiable program gives the
    empty set, as the Reasoner does."""
    slots = query.slots
    if slots < 1:
        return None
    hidden, looks = world.hidden, world.looks
    objects = hidden + 1
    pinned: list[int | None] = [None] * slots
    props: list[list[tuple[int, str]]] = [[] for _ in range(slots)]
    ats: list[list[int]] = [[] for _ in range(slots)]
    binary: list[tuple[str, str, int, int]] = []
    target: tuple[int, str] | None = None
    declared = set()
    for fact in query.facts:
        if fact[0] != "q_relation" and fact[0] != "q_same" and not 0 <= fact[1] < slots:
            return None  # a slot beyond query.slots (compile_query numbers them 0..slots-1)
        kind = fact[0]
        if kind == "slot":
            declared.add(fact[1])
            continue
        if kind == "q_target":
            target = (fact[1], fact[2])
        elif kind == "q_property":
            if fact[2] not in _FIELD or fact[3] not in domain.DOMAINS[fact[2]]:
                return None
            props[fact[1]].append((_FIELD[fact[2]], fact[3]))
        elif kind == "q_at":
            if fact[2] not in domain.REGIONS:
                return None
            ats[fact[1]].append(fact[2])
        elif kind == "q_object":
            if pinned[fact[1]] is not None or not 0 <= fact[2] <= world.hidden:
                return None  # compile_query gives each object id a slot of its own
            pinned[fact[1]] = fact[2]
        elif kind == "q_relation":
            if fact[1] not in domain.RELATIONS:
                return None
            binary.append(("rel", fact[1], fact[2], fact[3]))
        elif kind == "q_same":
            if fact[1] not in _FIELD:
                return None
            binary.append(("same", fact[1], fact[2], fact[3]))
        elif kind == "q_distinct":
            binary.append(("distinct", "", fact[1], fact[2]))
        else:
            return None
    if target is None or declared != set(range(slots)) or target[1] not in _FIELD:
        return None
    if any(not (0 <= a < slots and 0 <= b < slots) for _, _, a, b in binary):
        return None
    if world.full == 0:
        return frozenset()
    value_bits, region_bits = VALUE_BITS, REGION_BITS

    # unary constraints: each slot's visible objects, and the candidates the hidden object keeps there
    options: list[list[int]] = []
    hidden_unary: list[int] = []
    for s in range(slots):
        bits = world.full
        for position, value in props[s]:
            bits &= value_bits[domain.ATTRIBUTES[position]][value]
        for region in ats[s]:
            bits &= region_bits[region]
        hidden_unary.append(bits)
        allowed = []
        for o in (range(objects) if pinned[s] is None else (pinned[s],)):
            if o == hidden:
                if bits:
                    allowed.append(o)
            elif 0 <= o < hidden:
                look = looks[o]
                if all(look[p] == v for p, v in props[s]) and all(look[4] == r for r in ats[s]):
                    allowed.append(o)
        if not allowed:
            return frozenset()
        options.append(allowed)
    # most constrained slot first; each binary constraint is checked at its later slot
    order = sorted(range(slots), key=lambda s: (len(options[s]), s))
    rank = {s: k for k, s in enumerate(order)}
    checks: list[list[tuple[str, str, int, int]]] = [[] for _ in range(slots)]
    for constraint in binary:
        _, _, s, t = constraint
        checks[order[max(rank[s], rank[t])]].append(constraint)
    target_slot, target_attribute = target
    target_position = _FIELD[target_attribute]
    domain_values = domain.DOMAINS[target_attribute]
    target_bits = value_bits[target_attribute]
    answer: set[str] = set()
    binding: list[int] = [-1] * slots
    relations, hidden_rules = world.relations, _HIDDEN_RULES

    def search(depth: int, bits: int, choices: dict[tuple[int, int], int]) -> bool:
        """Extend the binding from ``order[depth]``; True once the answer is the whole domain."""
        if depth == slots:
            obj = binding[target_slot]
            if obj == hidden:
                answer.update(v for v in domain_values if bits & target_bits[v])
            else:
                answer.add(looks[obj][target_position])
            return len(answer) == len(domain_values)
        s = order[depth]
        for obj in options[s]:
            binding[s] = obj
            new_bits = bits & hidden_unary[s] if obj == hidden else bits
            new_choices = choices
            ok = new_bits != 0
            for kind, name, a, b in checks[s] if ok else ():
                x, y = binding[a], binding[b]
                if kind == "distinct":
                    ok = x != y
                elif x == y:
                    ok = False  # rel(x,x) has no rule; sameProperty needs two objects
                elif kind == "same":
                    position = _FIELD[name]
                    if x == hidden:
                        new_bits &= value_bits[name][looks[y][position]]
                        ok = new_bits != 0
                    elif y == hidden:
                        new_bits &= value_bits[name][looks[x][position]]
                        ok = new_bits != 0
                    else:
                        ok = looks[x][position] == looks[y][position]
                elif x != hidden and y != hidden:
                    ok = y in relations[name][x]
                else:
                    o = y if x == hidden else x
                    rule = hidden_rules.get((name, x == hidden, looks[o][4]))
                    if rule is None:
                        ok = False  # left(h,o), behind(h,o): never true
                    else:
                        axis, side, allowed_bits = rule
                        new_bits &= allowed_bits
                        key = (o, axis)
                        chosen = new_choices.get(key)
                        if chosen is None:
                            new_choices = {**new_choices, key: side}
                        ok = new_bits != 0 and (chosen is None or chosen == side)
                if not ok:
                    break
            if ok and search(depth + 1, new_bits, new_choices):
                return True
        binding[s] = -1
        return False

    search(0, world.full, {})
    return frozenset(answer)


def candidate_answers(partial: Scene, candidates: Iterable[Look],
                      queries: Sequence[CompiledQuery]) -> list[frozenset[str] | None]:
    """:func:`candidate_answer` of each query on one partial scene (None for all when the scene is
    outside the reading)."""
    world = partial_world(partial, candidates)
    if world is None:
        return [None] * len(queries)
    return [candidate_answer(world, q) for q in queries]
