"""What instantiating a question template needs of the template alone (:class:`TemplateShape`, made
once per template) and the random draws of a description's attribute order (:func:`shuffled_cut`),
for :meth:`QuestionGenerator.instantiate <clevr_poc.generation.question_generator.QuestionGenerator.instantiate>`
(issue 27: moved out of the question generator, which reads them on every try).
"""

from __future__ import annotations

import random
from typing import Iterable, Mapping, Sequence

from clevr_poc import domain
from clevr_poc.generation.question_instance import VARIABLES
from clevr_poc.generation.template_files import DESCRIPTION_ORDER, OBJECT_NODES, QuestionTemplate, TemplateNode

#: Codes of :attr:`TemplateShape.forward` steps.
SCENE, RELATE, INTERSECT, SAME, OBJECT, OTHER = range(6)
#: Codes of :attr:`TemplateShape.assign_steps`.
ASSIGN_RELATE, ASSIGN_SAME = range(2)


def same_attribute(node_type: str) -> str:
    """The attribute of a ``same_<attribute>`` node (KeyError for an unknown one, as
    :meth:`~clevr_poc.scene.SceneObject.attribute`)."""
    attribute = node_type[len("same_"):]
    if attribute not in domain.ATTRIBUTES:
        raise KeyError(f"unknown attribute {attribute!r}; expected one of {domain.ATTRIBUTES}")
    return attribute


def node_distance(nodes: Sequence[TemplateNode], consumer: Mapping[int, int], node: int, target: int) -> int:
    """Object nodes passed on the way from ``node`` to ``target`` (following each node's consumer)."""
    distance = 0
    while node != target:
        node = consumer[node]
        if nodes[node].type in OBJECT_NODES:
            distance += 1
    return distance


class TemplateShape:
    """The query object's node, per object node its description slots ``((attribute, slot), ...)`` and
    the attributes it may describe (not ``NULL``-constrained), the ``OUT_NEQ`` node pairs, the ASP
    variables of a set of object nodes, and :attr:`forward`: per node ``(node, code, a, b)`` for the
    forward pass (``code`` one of :data:`SCENE`, :data:`RELATE` (a: parameter, b: input),
    :data:`INTERSECT` (a, b: inputs), :data:`SAME` (a: attribute or None when unknown, b: input),
    :data:`OBJECT` (a: the relation parameter of a ``relate_filter_unique`` or None, b: input),
    :data:`OTHER`), so that the pass compares no node type strings (issue 27).

    :attr:`assign_steps` is the choice of relations and reference objects (step 3 of
    :mod:`~clevr_poc.generation.question_generator`) unrolled: the recursion from the query object visits
    the template's nodes in an order that depends on the template alone, so per reference it lists, in
    that order, ``(code, source node, a, object node)``: :data:`ASSIGN_RELATE` (a: the relation parameter;
    the reference is "source is R of it") or :data:`ASSIGN_SAME` (a: the attribute; the reference shares
    the source's value), the source node's object being chosen by an earlier step (issue 27). None when
    the template is not one the unrolling reads alike (an unknown ``same_`` attribute, a node without its
    inputs, any error): the instantiation then recurses as before."""

    __slots__ = ("nodes", "query_object", "descriptions", "out_neq", "consumer", "forward", "assign_steps",
                 "_variables")

    def __init__(self, template: QuestionTemplate) -> None:
        nodes = template.nodes
        self.nodes = nodes
        self.query_object = nodes[-1].inputs[0]
        self.consumer = {j: i for i, n in enumerate(nodes) for j in n.inputs}
        self.descriptions: dict[int, tuple[tuple[tuple[str, str], ...], tuple[str, ...]]] = {}
        for i, node in enumerate(nodes):
            if node.type in OBJECT_NODES:
                slots = dict(zip(DESCRIPTION_ORDER, node.side_inputs[-4:]))
                self.descriptions[i] = (tuple(slots.items()),
                                        tuple(a for a in DESCRIPTION_ORDER if slots[a] not in template.null_params))
        self.out_neq = tuple(tuple(c.params) for c in template.constraints if c.type == "OUT_NEQ")
        self.forward = tuple(_step(i, node) for i, node in enumerate(nodes))
        try:
            self.assign_steps = _assign_steps(nodes, self.query_object)
        except Exception:  # the recursion meets the same error at its own time: leave it to the recursion
            self.assign_steps = None
        if any(code == SAME and a is None for _, code, a, _ in self.forward):
            self.assign_steps = None  # the forward pass raises where such a node is reached: not unrolled
        self._variables: dict[tuple[int, ...], tuple[tuple[int, str], ...]] = {}

    def variables(self, object_nodes: Iterable[int]) -> tuple[tuple[int, str], ...]:
        """``(node, variable)`` pairs: X for the query object, then by distance from it (ties: later node
        first)."""
        key = tuple(object_nodes)
        pairs = self._variables.get(key)
        if pairs is None:
            dist = {i: node_distance(self.nodes, self.consumer, i, self.query_object) for i in key}
            pairs = self._variables[key] = tuple(
                (i, VARIABLES[k]) for k, i in enumerate(sorted(key, key=lambda i: (dist[i], -i))))
        return pairs


def _assign_steps(nodes: Sequence[TemplateNode], query_object: int) -> tuple[tuple[int, int, str, int], ...]:
    """:attr:`TemplateShape.assign_steps`: the question generator's ``assign``/``relate``/``require_member``
    recursion from ``query_object``, recording instead of drawing."""
    steps: list[tuple[int, int, str, int]] = []

    def assign(node_index: int) -> None:
        node = nodes[node_index]
        if node.type == "relate_filter_unique":
            relate(node.side_inputs[0], node.inputs[0], node_index)
        else:
            require_member(node.inputs[0], node_index)

    def relate(param: str, object_node: int, source: int) -> None:
        steps.append((ASSIGN_RELATE, source, param, object_node))
        assign(object_node)

    def require_member(set_node: int, source: int) -> None:
        node = nodes[set_node]
        if node.type == "scene":
            return
        if node.type == "relate":
            relate(node.side_inputs[0], node.inputs[0], source)
        elif node.type == "intersect":
            for j in node.inputs:
                require_member(j, source)
        else:  # same_<attribute>
            steps.append((ASSIGN_SAME, source, same_attribute(node.type), node.inputs[0]))
            assign(node.inputs[0])

    assign(query_object)
    targets = [query_object] + [step[3] for step in steps]
    if len(set(targets)) != len(targets):  # a node assigned twice: its first object is read after the second
        raise ValueError("an object node is reached twice")
    return tuple(steps)


def _step(i: int, node: TemplateNode) -> tuple:
    kind = node.type
    if kind == "scene":
        return i, SCENE, None, None
    if kind == "relate":
        return i, RELATE, node.side_inputs[0], node.inputs[0]
    if kind == "intersect":
        return i, INTERSECT, node.inputs[0], node.inputs[1]
    if kind.startswith("same_"):
        attribute = kind[len("same_"):]
        return i, SAME, attribute if attribute in domain.ATTRIBUTES else None, node.inputs[0]
    if kind in OBJECT_NODES:
        return i, OBJECT, node.side_inputs[0] if kind == "relate_filter_unique" else None, node.inputs[0]
    return i, OTHER, None, None


def _inline_draws_agree() -> bool:
    """Whether :func:`shuffled_cut`'s and :func:`choose`'s inline draws equal ``rng.shuffle`` +
    ``rng.randint`` and ``rng.choice`` here (they do on CPython 3.11-3.13, where all of them draw with
    ``Random._randbelow``, ``getrandbits`` of ``n.bit_length()`` bits until below n; checked once at import)."""
    for seed in range(40):
        for n in range(5):
            a, b = random.Random(seed), random.Random(seed)
            order = list(range(n))
            a.shuffle(order)
            if (order, a.randint(0, n)) != _inline(b, list(range(n))) or a.getstate() != b.getstate():
                return False
        for n in range(1, 13):
            a, b = random.Random(seed), random.Random(seed)
            options = list(range(n))
            if [a.choice(options) for _ in range(3)] != [_choice(b, options) for _ in range(3)] \
                    or a.getstate() != b.getstate():
                return False
    return True


def _inline(rng: random.Random, order: list) -> tuple[list, int]:
    getrandbits = rng.getrandbits
    for i in range(len(order) - 1, 0, -1):
        n = i + 1  # j = rng._randbelow(n)
        bits = n.bit_length()
        j = getrandbits(bits)
        while j >= n:
            j = getrandbits(bits)
        order[i], order[j] = order[j], order[i]
    n = len(order) + 1  # rng.randint(0, len(order)) = rng._randbelow(len(order) + 1)
    bits = n.bit_length()
    k = getrandbits(bits)
    while k >= n:
        k = getrandbits(bits)
    return order, k


def _choice(rng: random.Random, options: Sequence):
    n = len(options)
    if not n:
        raise IndexError("Cannot choose from an empty sequence")
    bits = n.bit_length()
    j = rng.getrandbits(bits)
    while j >= n:
        j = rng.getrandbits(bits)
    return options[j]


_INLINE = hasattr(random.Random, "_randbelow") and _inline_draws_agree()


def shuffled_cut(rng: random.Random, allowed: Sequence[str]) -> tuple[list[str], int]:
    """``order = list(allowed); rng.shuffle(order); k = rng.randint(0, len(order))``: the same draws
    and results, made inline for a plain :class:`random.Random` when the import-time check
    (:func:`_inline_draws_agree`) found them equal (issue 27: 3.7-4.2 against 4.7-5.0 us per call for
    four attributes, timeit at load 4; ``getrandbits`` called directly, without ``_randbelow``)."""
    order = list(allowed)
    if _INLINE and type(rng) is random.Random:
        return _inline(rng, order)
    rng.shuffle(order)
    return order, rng.randint(0, len(order))


def choose(rng: random.Random, options: Sequence):
    """``rng.choice(options)``: the same draw and element, made inline for a plain :class:`random.Random`
    as :func:`shuffled_cut` (issue 27: the question generator draws about 110,000 of them per 2,000
    benchmark examples)."""
    if _INLINE and type(rng) is random.Random:
        return _choice(rng, options)
    return rng.choice(options)
