"""A template instantiated on a complete scene (:class:`Instance`) and what it renders to: the official ASP
query (:func:`asp_query`), the query with references pinned (:func:`intended_query`), the intended answer
from the hidden object's candidates (:func:`possible_values`), the CLEVR functional program
(:func:`functional_program`) and the question text (:func:`question_text`, from
:mod:`clevr_poc.generation.question_text`). See
:mod:`clevr_poc.generation.question_generator` for how instances are made and labelled.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

from clevr_poc import domain
from clevr_poc.generation.candidate_objects import CANDIDATE_FIELD, Candidate, candidate_bits, field_bits
from clevr_poc.generation.question_text import (  # noqa: F401 (the module's renderings, re-exported)
    question_text, question_text_by_substitution, tidy_text,
)
from clevr_poc.generation.template_files import DESCRIPTION_ORDER, OBJECT_NODES, QuestionTemplate
from clevr_poc.queries.official_form import official_query_of_parts
from clevr_poc.queries.query import (
    OBJECT_POSITIONS, QUERY_PREDICATES, Atom, Constant, Inequality, Literal, Number, SanitizedQuery, Term, Variable,
)
from clevr_poc.scene import Scene

#: ASP variable names: the query object is X, references follow by distance from it.
VARIABLES: tuple[str, ...] = ("X", "Y", "Z", "W", "V", "U", "T")
_ANSWER = Variable("Q")


@dataclass
class Instance:
    """A template instantiated on a complete scene (before labelling).

    Attributes:
        template: the template.
        objects: object node index -> complete-scene object id.
        variables: object node index -> ASP variable (``"X"`` is the query object).
        values: parameter name -> value (``""`` for an empty slot; relations as ``left``/...).
        outputs: node index -> output on the complete scene (frozenset of ids, or an id).
    """

    template: QuestionTemplate
    objects: dict[int, int] = field(default_factory=dict)
    variables: dict[int, str] = field(default_factory=dict)
    values: dict[str, str] = field(default_factory=dict)
    outputs: dict[int, Any] = field(default_factory=dict)


def asp_query(instance: Instance) -> str:
    """The ASP query in the official form (:func:`clevr_poc.queries.official_form.to_official_form`):
    ``missing(Q) :- hasProperty(X,<attr>,Q), <descriptions>, <relations>, <inequalities>.``

    References are described by attributes only; ``rel(Y,X)`` means X is rel of Y; "the other X with
    the same P as Y" is ``X!=Y, same_P(Y,X)`` (paper Appendix A). Variables are X, then Y (one
    reference) or Y1, Y2, Y3 by hop from X (the reference named first in the question text first
    among equals: ``single_and``'s ``<R2>`` reference is Y1), and every pair of object variables is
    distinct (``X!=Y1, Y1!=Y2, X!=Y2``, ...), as the official generator writes them.
    """
    return official_asp_query(instance).text


def official_asp_query(instance: Instance) -> SanitizedQuery:
    """:func:`asp_query` as the typed query (its ``text`` is that query): what the question generator
    hands the Reasoner, which then does not parse the text again (it would give an equal query: tested).
    The generator's literals are rewritten without a check of their own
    (:func:`~clevr_poc.queries.official_form.official_query_of_parts`); the official form is checked.

    Issue 27: the rewrite depends on the template and the variables only, not on the values (see
    :class:`_OfficialPlan`), so it is made once per (template, variables) and then filled with each
    instance's values: the same body, checked as a :class:`SanitizedQuery` as before (whose check now
    looks literals up, :func:`~clevr_poc.queries.query.analyse`): 25-27 against 65-67 us per query
    (x2.5, the 1,816 queries of 1,000 benchmark examples, GC off, load 3-5;
    ``tests/test_question_fast_paths.py`` compares both paths on every template, errors included).
    Values outside the domains take the rewrite, which says why."""
    template = instance.template
    key = (id(template), tuple(instance.variables.items()))
    entry = _PLANS.get(key)
    if entry is None or entry[0] is not template:
        if len(_PLANS) >= 4096:
            _PLANS.clear()
        entry = _PLANS[key] = (template, _OfficialPlan.of(instance))
    plan = entry[1]
    query = plan.query(instance.values) if plan is not None else None
    return rewritten_asp_query(instance) if query is None else query


def rewritten_asp_query(instance: Instance) -> SanitizedQuery:
    """:func:`official_asp_query` by the generic rewrite of the generator's literals (the path
    :class:`_OfficialPlan` shortens; kept for the cases it leaves out and for the tests)."""
    literals: list[Literal] = [_answer_literal(instance)]
    literals += _description_literals(instance)
    # links ordered by their child's variable (X, Y, Z, W: by hop, text order among equals), so
    # that official_query numbers the references in that order
    links = _structure_literals(instance, pinned=None)
    rank = {v: k for k, v in enumerate(VARIABLES)}
    links.sort(key=lambda lit: max(rank[v] for v in lit.variables()))
    return official_query_of_parts(_ANSWER, tuple(literals + links))


class _OfficialPlan:
    """The official form of a template's instances with given variables, values left open.

    :func:`rewritten_asp_query` names variables and orders literals from the links alone (which
    objects are linked, by which node types), never from the values: descriptions only fill the
    per-variable groups, and a relation's value only names its atom. So one rewrite of a symbolic
    instance (every object's color slot a different color, every relation slot a different relation,
    the other slots empty) shows where each value goes: :attr:`descriptions` lists, in output order,
    ``(variable, attribute, slot)`` for every description slot, and :attr:`links` the rest of the
    body, a fixed literal or ``(slot, terms)`` for a relation atom.

    The check of a filled body (:class:`SanitizedQuery`, literal by literal) finds the same for any values
    of the domains (:func:`_domain_literals_uniform`): it depends only on which descriptions are present,
    so :meth:`query` checks the first body of each such pattern and keeps what the check found
    (:attr:`analyses`, issue 27), or, where :meth:`_uniform_analysis` shows every pattern finds the
    same, checks two bodies once per plan.
    """

    __slots__ = ("answer", "descriptions", "links", "analyses", "_filled", "_link_texts", "_uniform")

    def __init__(self, answer: Atom, descriptions: tuple[tuple[Variable, Constant, str], ...],
                 links: tuple[Literal | tuple[str, tuple[Term, Term]], ...]) -> None:
        self.answer, self.descriptions, self.links = answer, descriptions, links
        #: descriptions present (bit k: ``descriptions[k]``) -> the check's finding for such bodies
        self.analyses: dict[int, Any] = {}
        #: (k, value) -> the literal of ``descriptions[k]`` or of ``links[k]`` (a relation) with that value,
        #: and its text (values of the domains only: a few hundred at most)
        self._filled: dict[tuple[int, str], tuple[Literal, str]] = {}
        #: the text of each fixed link (None for a relation slot)
        self._link_texts = tuple(None if type(link) is tuple else str(link) for link in links)
        #: the check's finding for every pattern (:meth:`_uniform_analysis`); None: not known yet
        self._uniform: Any = None

    @classmethod
    def of(cls, instance: Instance) -> "_OfficialPlan | None":
        """The plan of ``instance``'s template and variables; None when the symbolic rewrite does not
        show it unambiguously (more relation slots or objects than values to tell them apart, shared
        slots, any error): such instances always take :func:`rewritten_asp_query`."""
        try:
            return cls._of(instance)
        except Exception:  # the real instances raise the same way: leave them to the rewrite
            return None

    @classmethod
    def _of(cls, instance: Instance) -> "_OfficialPlan | None":
        nodes = instance.template.nodes
        slots = {i: dict(zip(DESCRIPTION_ORDER, nodes[i].side_inputs[-4:])) for i in instance.variables}
        relation_slots = sorted({n.side_inputs[0] for n in nodes if n.type in ("relate", "relate_filter_unique")})
        description_slots = [slot for own in slots.values() for slot in own.values()]
        if len(slots) > len(domain.COLORS) or len(relation_slots) > len(domain.RELATIONS) \
                or len(set(description_slots)) != len(description_slots) \
                or set(relation_slots) & set(description_slots):
            return None
        values = {slot: "" for slot in description_slots}
        color_of = {}
        for color, (i, own) in zip(domain.COLORS, slots.items()):
            values[own["color"]] = color
            color_of[color] = i
        slot_of = dict(zip(domain.RELATIONS, relation_slots))
        values.update(zip(relation_slots, domain.RELATIONS))
        body = rewritten_asp_query(Instance(instance.template, variables=dict(instance.variables),
                                            values=values)).body
        answer, rest = body[0], body[1:]
        descriptions = []
        named = rest[:len(slots)]
        for literal in named:
            if type(literal) is not Atom or literal.predicate != "hasProperty" or literal.terms[1] != "color" \
                    or literal.terms[2] not in color_of:
                return None
            own = slots[color_of.pop(literal.terms[2])]
            descriptions += [(literal.terms[0], Constant(a), own[a]) for a in _OFFICIAL_DESCRIPTION_ORDER]
        if color_of:
            return None
        links: list[Literal | tuple[str, tuple[Term, Term]]] = []
        for literal in rest[len(slots):]:
            if type(literal) is Atom and literal.predicate in slot_of:
                links.append((slot_of[literal.predicate], literal.terms))
            elif type(literal) is Inequality or (type(literal) is Atom and literal.predicate.startswith("same_")):
                links.append(literal)
            else:
                return None
        return cls(answer, tuple(descriptions), tuple(links))

    def fill(self, values: Mapping[str, str]) -> tuple[Literal, ...] | None:
        """The body for these values; None when a value is outside its domain (the rewrite decides)."""
        filled = self._fill(values)
        return None if filled is None else filled[0]

    def query(self, values: Mapping[str, str]) -> SanitizedQuery | None:
        """The checked query of :meth:`fill`'s body (None where that is None): the body is checked as
        any :class:`SanitizedQuery` the first time its pattern of present descriptions comes; later
        bodies of that pattern take that check's finding (see the class docstring; equal queries,
        ``tests/test_question_fast_paths.py``). Its ``text`` is joined from the literals' texts, kept
        with the literals, which are made once per (slot, value) (issue 27: official_asp_query x0.61 CPU
        over the 1,037 queries of 600 benchmark examples, GC off, min of 5 alternated rounds, load 4)."""
        filled = self._fill(values)
        if filled is None:
            return None
        body, present, text = filled
        analysis = self.analyses.get(present)
        if analysis is None:
            if self._uniform is None:
                self._uniform = self._uniform_analysis(values)
            if self._uniform is not False:
                analysis = self.analyses[present] = self._uniform
        if analysis is not None:
            query = SanitizedQuery.checked(_ANSWER, body, analysis)
        else:
            query = SanitizedQuery(_ANSWER, body)  # raises as the rewrite's query would
            if _domain_literals_uniform():
                self.analyses[present] = query.__dict__["_analysis"]
        query.__dict__["text"] = text  # SanitizedQuery.text of this head and body
        return query

    def _uniform_analysis(self, values: Mapping[str, str]) -> Any:
        """The check's finding for every pattern of present descriptions, or False.

        Issue 27: a description ``hasProperty(V,<attribute>,<value>)`` adds only V to what the check
        collects (:func:`_domain_literals_uniform`: whatever the value, never the answer). So when the
        body with every description (the longest) and the body with none pass the check and find the
        same, every description's V is already in the latter's findings, and each body in between
        passes and finds the same (the check is a union over literals, then bounds on it, and no
        variable becomes unsafe by adding atoms). Checked here on those two bodies, with each
        attribute's first domain value and this instance's relations: one check per plan instead of
        one per pattern (1,091 of 1,762 queries of 1,000 benchmark examples met a new pattern: 67 ->
        36 us per query in place)."""
        if not _domain_literals_uniform():
            return False
        full = dict(values)
        empty = dict(values)
        for _, attribute, slot in self.descriptions:
            full[slot] = domain.DOMAINS[attribute][0]
            empty[slot] = ""
        try:
            found = [SanitizedQuery(_ANSWER, filled[0]).__dict__["_analysis"]
                     for filled in (self._fill(full), self._fill(empty))]
        except Exception:  # either body fails the check: each pattern is checked on its own
            return False
        return found[0] if found[0] == found[1] else False

    def _fill(self, values: Mapping[str, str]) -> tuple[tuple[Literal, ...], int, str] | None:
        """:meth:`fill`'s body, the descriptions present in it (bit k: ``descriptions[k]``) and
        :attr:`SanitizedQuery.text` of the query with that body."""
        body: list[Literal] = [self.answer]
        texts = [str(self.answer)]
        present = 0
        filled = self._filled
        for k, (variable, attribute, slot) in enumerate(self.descriptions):
            value = values.get(slot, "")
            if value:
                literal = filled.get((k, value))
                if literal is None:
                    if value not in domain.DOMAINS[attribute]:
                        return None
                    atom = Atom("hasProperty", (variable, attribute, Constant(value)))
                    literal = filled[(k, value)] = (atom, str(atom))
                body.append(literal[0])
                texts.append(literal[1])
                present |= 1 << k
        for k, (link, text) in enumerate(zip(self.links, self._link_texts)):
            if text is None:
                relation = values.get(link[0])
                literal = filled.get((-1 - k, relation))
                if literal is None:
                    if relation not in domain.RELATIONS:
                        return None
                    atom = Atom(relation, link[1])
                    literal = filled[(-1 - k, relation)] = (atom, str(atom))
                link, text = literal
            body.append(link)
            texts.append(text)
        return tuple(body), present, f"missing({_ANSWER}) :- {', '.join(texts)}."


def _domain_literals_uniform() -> bool:
    """Whether the query check (:class:`SanitizedQuery`) finds the same in every literal a plan fills in:
    ``hasProperty(V,<attribute>,<value>)`` for any value of the attribute's domain (a well-formed
    constant, accepted, and never the answer variable's name: its finding is then ``V`` in an object
    position, whatever the value) and ``<relation>(A,B)`` for any relation (an allowed binary predicate
    whose two terms are objects). Checked once, on the domains."""
    global _UNIFORM
    if _UNIFORM is None:
        x = Variable("X")
        try:
            for attribute in domain.ATTRIBUTES:
                for value in domain.DOMAINS[attribute]:
                    SanitizedQuery(_ANSWER, (Atom("hasProperty", (x, Constant(attribute), _ANSWER)),
                                             Atom("hasProperty", (x, Constant(attribute), Constant(value)))))
            _UNIFORM = all(value != _ANSWER for values in domain.DOMAINS.values() for value in values) and all(
                QUERY_PREDICATES.get(r) == 2 and OBJECT_POSITIONS.get(r) == (0, 1) for r in domain.RELATIONS)
        except Exception:
            _UNIFORM = False
    return _UNIFORM


_UNIFORM: bool | None = None


#: :data:`clevr_poc.queries.official_form` writes each object's descriptions in this order.
_OFFICIAL_DESCRIPTION_ORDER = ("size", "color", "material", "shape")
#: (id of a template, its instance's variables) -> (the template, its :class:`_OfficialPlan` or None).
_PLANS: dict[tuple[int, tuple[tuple[int, str], ...]], tuple[QuestionTemplate, _OfficialPlan | None]] = {}


def intended_query(instance: Instance, hidden_index: int) -> str:
    """The question with every reference object of the query object pinned to its id in the partial
    scene (the query object stays the variable X). Its answer is what the question means; see the
    module docstring."""
    template = instance.template
    query_object = template.nodes[-1].inputs[0]

    def partial_id(obj: int) -> int:
        return obj - 1 if obj > hidden_index else obj

    pinned = {node: Number(partial_id(obj)) for node, obj in instance.objects.items() if node != query_object}
    literals: list[Literal] = [_answer_literal(instance)]
    literals += _description_literals(instance, only=query_object)
    literals += [lit for lit in _structure_literals(instance, pinned=pinned, only=query_object)
                 if not isinstance(lit, Inequality)]
    return SanitizedQuery(_ANSWER, tuple(literals)).text

#: (relation, the reference's region) -> the regions an object that is ``relation`` of the reference can
#: be in (:data:`clevr_poc.domain.REGION_ADJACENCY`, an immutable table).
_REACHABLE: dict[tuple[str, int], frozenset[int]] = {
    (relation, a): frozenset(r for r in domain.REGIONS if (a, r) in pairs)
    for relation, pairs in domain.REGION_ADJACENCY.items() for a in domain.REGIONS}


def possible_values(instance: Instance, candidates: Iterable[Candidate], scene: Scene) -> frozenset[str]:
    """The intended answer computed from the hidden object's candidates (see :func:`hidden_candidates`):
    values of the queried attribute over candidates that match the query object's description and its
    direct references (region adjacency for ``R(ref,X)``, equal value for ``same_P(ref,X)``).

    It is contained in the official answer (a model for each of these values exists), so a whole
    domain here means a whole domain there.

    Issue 27: what to read of the instance is listed once per template (:func:`_values_plan`), and
    where the candidates are object types (:func:`candidate_bits`) the answer is a few integer ANDs:
    per (field, value) and per (relation, reference region) a fixed set of object types.
    """
    plan = _values_plan(instance.template)
    values, objects = instance.values, instance.objects
    bits = candidate_bits(candidates) if type(candidates) is frozenset else None
    if bits is not None and not plan.same:
        # (issue 27) without same_<attribute> references, straight to the bit sets: x0.8-0.9 CPU time
        tables = field_bits()
        pool = bits & _all_region_bits(tables)
        for field_, slot in plan.fields:
            value = values.get(slot)
            if value:
                pool &= tables[field_].get(value, 0)
        reference_objects = scene.objects
        for relation_slot, _, node in plan.steps:
            pool &= _reachable_bits((values[relation_slot], reference_objects[objects[node]].region), tables)
        return frozenset({value for value, of_value in tables[plan.field].items() if pool & of_value})
    description = {a: values[slot] for a, slot in plan.slots if values.get(slot)}
    references: list[tuple[str, int]] = []  # (relation, the reference's region) of each R(ref,X)
    same: dict[str, str] = {}
    for relation_slot, attribute, node in plan.steps:
        ref = scene.objects[objects[node]]
        if relation_slot is not None:
            references.append((values[relation_slot], ref.region))
        else:
            same[attribute] = ref.attribute(attribute)
    wanted = {CANDIDATE_FIELD[a]: v for a, v in {**description, **same}.items()}
    p = plan.field
    if bits is not None:
        # the candidates as a set of object types (a Python int), each (field, value) and each
        # (relation, reference region) a fixed set; each type has one region, so ANDing the sets of
        # regions' types is taking the types of the regions' intersection
        tables = field_bits()
        pool = bits & _all_region_bits(tables)
        for reference in references:
            pool &= _reachable_bits(reference, tables)
        for f, v in wanted.items():
            pool &= tables[f].get(v, 0)
        return frozenset({value for value, of_value in tables[p].items() if pool & of_value})
    regions: set[int] = set(domain.REGIONS)
    for reference in references:
        regions.intersection_update(_reachable(*reference))
    return frozenset({c[p] for c in candidates
                      if c[4] in regions and all(c[f] == v for f, v in wanted.items())})


def _reachable(relation: str, ref_region: int) -> Iterable[int]:
    """The regions an object that is ``relation`` of a reference in ``ref_region`` can be in."""
    reachable = _REACHABLE.get((relation, ref_region))
    if reachable is None:  # not a relation and region of the domain: as the table is made
        reachable = [r for r in domain.REGIONS if (ref_region, r) in domain.REGION_ADJACENCY[relation]]
    return reachable


def _all_region_bits(tables: tuple[dict[object, int], ...]) -> int:
    """The object types in a region of :data:`clevr_poc.domain.REGIONS` (bits of :func:`field_bits`)."""
    global _ALL_REGION_BITS
    if _ALL_REGION_BITS is None:
        bits = 0
        for region in domain.REGIONS:
            bits |= tables[4].get(region, 0)
        _ALL_REGION_BITS = bits
    return _ALL_REGION_BITS


def _reachable_bits(reference: tuple[str, int], tables: tuple[dict[object, int], ...]) -> int:
    """The object types in the regions :func:`_reachable` of ``reference`` (relation, region) lists."""
    bits = _REACHABLE_BITS.get(reference)
    if bits is None:
        bits = 0
        for region in _reachable(*reference):
            bits |= tables[4].get(region, 0)
        if reference in _REACHABLE:  # a fixed table: only the domain's relations and regions are kept
            _REACHABLE_BITS[reference] = bits
    return bits


_ALL_REGION_BITS: int | None = None
_REACHABLE_BITS: dict[tuple[str, int], int] = {}


@dataclass(frozen=True)
class _ValuesPlan:
    """What :func:`possible_values` reads of an instance of one template: the query object's description
    ``slots`` ((attribute, slot), ...), ``steps`` of its direct references in the order they are met
    (``(relation slot, None, object node)`` for ``R(ref,X)``, ``(None, attribute, object node)`` for
    ``same_<attribute>``), and the queried attribute's :data:`CANDIDATE_FIELD` ``field``."""

    slots: tuple[tuple[str, str], ...]
    steps: tuple[tuple[str | None, str | None, int], ...]
    field: int

    #: ``slots`` with each attribute's :data:`CANDIDATE_FIELD`
    fields: tuple[tuple[int, str], ...] = ()
    #: whether a step is a ``same_<attribute>`` reference
    same: bool = False


def _values_plan(template: QuestionTemplate) -> _ValuesPlan:
    """The :class:`_ValuesPlan` of ``template`` (made once per template object)."""
    entry = _VALUES_PLANS.get(id(template))
    if entry is not None and entry[0] is template:
        return entry[1]
    nodes = template.nodes
    node = nodes[nodes[-1].inputs[0]]
    steps: list[tuple[str | None, str | None, int]] = []

    def visit(set_node: int) -> None:
        n = nodes[set_node]
        if n.type == "relate":
            steps.append((n.side_inputs[0], None, n.inputs[0]))
        elif n.type == "intersect":
            for j in n.inputs:
                visit(j)
        elif n.type.startswith("same_"):
            steps.append((None, n.type[len("same_"):], n.inputs[0]))

    if node.type == "relate_filter_unique":
        steps.append((node.side_inputs[0], None, node.inputs[0]))
    else:
        visit(node.inputs[0])
    slots = tuple(zip(DESCRIPTION_ORDER, node.side_inputs[-4:]))
    plan = _ValuesPlan(slots, tuple(steps), CANDIDATE_FIELD[template.query_attribute],
                       tuple((CANDIDATE_FIELD[a], slot) for a, slot in slots),
                       any(relation_slot is None for relation_slot, _, _ in steps))
    if len(_VALUES_PLANS) >= 4096:
        _VALUES_PLANS.clear()
    _VALUES_PLANS[id(template)] = (template, plan)
    return plan


#: id of a template -> (the template, its :class:`_ValuesPlan`).
_VALUES_PLANS: dict[int, tuple[QuestionTemplate, _ValuesPlan]] = {}


def _answer_literal(instance: Instance) -> Atom:
    """``hasProperty(X,<queried attribute>,Q)``."""
    return Atom("hasProperty", (Variable("X"), Constant(instance.template.query_attribute), _ANSWER))

def _ordered_object_nodes(instance: Instance) -> list[int]:
    return sorted(instance.variables, key=lambda i: VARIABLES.index(instance.variables[i]))

def _description_literals(instance: Instance, only: int | None = None) -> list[Literal]:
    literals: list[Literal] = []
    for i in _ordered_object_nodes(instance):
        if only is not None and i != only:
            continue
        node = instance.template.nodes[i]
        var = Variable(instance.variables[i])
        for attribute, slot in zip(DESCRIPTION_ORDER, node.side_inputs[-4:]):
            value = instance.values.get(slot, "")
            if value:
                literals.append(Atom("hasProperty", (var, Constant(attribute), Constant(value))))
    return literals

def _structure_literals(instance: Instance, pinned: Mapping[int, Number] | None,
                        only: int | None = None) -> list[Literal]:
    nodes = instance.template.nodes

    def term(node: int) -> Term:
        if pinned is not None and node in pinned:
            return pinned[node]
        return Variable(instance.variables[node])

    def for_set(set_node: int, var: Term) -> list[Literal]:
        node = nodes[set_node]
        if node.type == "scene":
            return []
        if node.type == "relate":
            return [Atom(instance.values[node.side_inputs[0]], (term(node.inputs[0]), var))]
        if node.type == "intersect":
            return for_set(node.inputs[0], var) + for_set(node.inputs[1], var)
        ref = term(node.inputs[0])  # same_<attribute>
        return [Inequality(var, ref), Atom(node.type, (ref, var))]

    literals: list[Literal] = []
    for i in _ordered_object_nodes(instance):
        if only is not None and i != only:
            continue
        node = nodes[i]
        var = term(i)
        if node.type == "relate_filter_unique":
            literals.append(Atom(instance.values[node.side_inputs[0]], (term(node.inputs[0]), var)))
        else:
            literals += for_set(node.inputs[0], var)
    return literals

def functional_program(instance: Instance) -> list[dict[str, Any]]:
    """The CLEVR functional program, expanded (``filter_unique`` -> ``filter_<attr>``... + ``unique``,
    ``relate_filter_unique`` -> ``relate`` + filters + ``unique``), nodes ``{"type", "inputs",
    "side_inputs"}`` with values as ASP constants (``"large"``, ``"left"``)."""
    program: list[dict[str, Any]] = []
    where: dict[int, int] = {}

    def add(node_type: str, inputs: list[int], side: list[str]) -> int:
        program.append({"type": node_type, "inputs": inputs, "side_inputs": side})
        return len(program) - 1

    for i, node in enumerate(instance.template.nodes):
        inputs = [where[j] for j in node.inputs]
        if node.type in OBJECT_NODES:
            current = inputs[0]
            if node.type == "relate_filter_unique":
                current = add("relate", [current], [instance.values[node.side_inputs[0]]])
            for attribute, slot in zip(DESCRIPTION_ORDER, node.side_inputs[-4:]):
                if instance.values.get(slot):
                    current = add(f"filter_{attribute}", [current], [instance.values[slot]])
            where[i] = add("unique", [current], [])
        elif node.type == "relate":
            where[i] = add("relate", inputs, [instance.values[node.side_inputs[0]]])
        else:
            where[i] = add(node.type, inputs, [])
    return program
