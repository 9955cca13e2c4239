"""Question generation: CLEVR-style templates instantiated on the complete scene, labelled by the Reasoner.

Paper §3.4-3.5 and Appendix A/B. One question per partial scene, always about the hidden object:

1. the *query attribute* is given by the caller or drawn with :data:`QUERY_ATTRIBUTE_SHARES`
   (paper Appendix B: 40 % color, 40 % shape, 10 % size, 10 % material);
2. a template querying that attribute is drawn: a family uniformly among the families that have one
   (kept for the first half of the tries, so that families that rarely give narrow answers are not
   crowded out; then drawn anew each try), then a template of that family uniformly;
3. the template is instantiated **on the complete scene**, CLEVR style, starting from the hidden object:
   each relation ``<R>`` is drawn at random among the relations for which some other object has the hidden
   (or current) object in ``relationships[R][ref]`` ("X is R of ref"), and the reference object is drawn
   among those objects (paper §3.5); ``same_<P>`` references are other objects with the same P value.
   All objects of one question are different objects, and every one except the hidden object is visible.
4. descriptions (``<Z> <C> <M> <S>`` slots) are random subsets of the allowed attributes (never a
   ``NULL``-constrained one), grown until every ``filter_unique`` of the program yields exactly its object
   **in the complete scene** (CLEVR's uniqueness rule); the hidden object's known attributes are thus
   "randomly selected" as in §3.5;
5. the question is labelled with :meth:`~clevr_poc.reasoning.Reasoner.answer` on the *partial* scene and
   kept only when ``1 <= |answer| < |domain|`` (§3.4); an optional :class:`AnswerBalancer` rejects
   over-represented answer sets (Appendix B, Fig. 7).

**Uniqueness under partial observability (our choice).** The official semantics binds
the query variables to *any* object (SEMANTICS.md): a visible object, or the hidden object standing in
for a reference, can add values the question does not mean. Complete-scene uniqueness (step 4) already
rules out a visible object in the query object's role with the true references. With
``require_unambiguous=True`` (default) we also compare the official answer with the *intended* answer
(the same question with every reference pinned to its object id, see :meth:`QuestionGenerator.intended_query`)
and keep the question only when they are equal, so the gold answer is exactly the set of values the
hidden object can take. Official queries still name references by attributes only.

**Query form.** ``asp_query`` is written in the official form (:mod:`clevr_poc.parsing.official_form`):
variables X, then Y (one reference) or Y1, Y2, Y3 by hop from X, and every pairwise inequality of
object variables, also the non-adjacent ones (``X!=Y2``) that no relation implies; they can narrow the
answer (the queried object may otherwise be a farther reference), and the label is computed from this
very query.

**Cost.** The Reasoner call (milliseconds for 8-9 objects) dominates; most drawn instantiations of a
weakly constrained environment would be answered by the whole domain. :func:`hidden_candidates` (one
clingo call per partial scene) lists every (color, shape, size, material, region) the hidden object can
take; from it the *intended* answer of an instantiation is computed in Python
(:meth:`QuestionGenerator.possible_values`, equal to the Reasoner's answer of the pinned query, which the
tests check), and an instantiation whose intended answer is already the whole domain is dropped without
calling the Reasoner (the official answer contains the intended one). When even the candidates sharing
all of the hidden object's other attributes and its region fill the domain, no template can succeed and
``generate`` returns None at once. Gold answers always come from the Reasoner.

Templates are CLEVR template JSON (``text`` variants with ``<Z> <C> <M> <S> <R>`` slots and optional
``[words]``, ``nodes``, ``params``, ``constraints``), written for this project, shipped as package data
in ``clevr_poc/generation/question_templates/``. ``question_family_index`` is, as in CLEVR's generator,
the index of the template **within its file** (``template_filename``).
"""

from __future__ import annotations

import os
import random
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import clingo
import numpy as np

from clevr_poc import domain
from clevr_poc._io import read_json
from clevr_poc.environments.environment import Environment
from clevr_poc.errors import ClevrPocError, FormatError, SolverTimeoutError
from clevr_poc.knowledge import read_asp
from clevr_poc.parsing.official_form import to_official_form
from clevr_poc.question import Question
from clevr_poc.solver.watchdog import solve_brave
from clevr_poc.scene import Scene, SceneObject

__all__ = [
    "FAMILIES", "QUERY_ATTRIBUTE_SHARES", "TEMPLATE_DIR", "AnswerBalancer", "Candidate", "InconsistentSceneError",
    "Instance", "QuestionGenerator", "QuestionTemplate", "TemplateConstraint", "TemplateNode",
    "TemplateNotApplicable", "TemplateParam", "hidden_candidates", "load_template_file", "load_templates",
    "parse_template", "tidy_text",
]

#: A possible look of the hidden object: (color, shape, size, material, region).
Candidate = tuple[str, str, str, str, int]
_CANDIDATE_FIELD = {"color": 0, "shape": 1, "size": 2, "material": 3, "region": 4}

#: The six CLEVR families CLEVR-POC uses (paper Appendix B, Fig. 6a), in file order.
FAMILIES: tuple[str, ...] = ("zero_hop", "one_hop", "two_hop", "three_hop", "single_and", "same_relate")

#: Folder of the packaged templates.
TEMPLATE_DIR: Path = Path(__file__).resolve().parent / "question_templates"

#: Default shares of query attributes (paper Appendix B: 40/40/10/10 for color/shape/size/material).
QUERY_ATTRIBUTE_SHARES: Mapping[str, float] = {"color": 0.4, "shape": 0.4, "size": 0.1, "material": 0.1}

#: Template parameter types -> attribute (or ``"relation"``).
PARAM_TYPES: Mapping[str, str] = {
    "Size": "size", "Color": "color", "Material": "material", "Shape": "shape", "Relation": "relation",
}
#: Attribute slots of an object description, in CLEVR order (``<Z> <C> <M> <S>``).
DESCRIPTION_ORDER: tuple[str, ...] = ("size", "color", "material", "shape")
_DESCRIPTION_TYPES = ("Size", "Color", "Material", "Shape")

_OBJECT_NODES = ("filter_unique", "relate_filter_unique")
_SET_NODES = ("scene", "relate", "intersect") + tuple(f"same_{a}" for a in domain.ATTRIBUTES)
_QUERY_NODES = tuple(f"query_{a}" for a in domain.ATTRIBUTES)
NODE_TYPES: tuple[str, ...] = _OBJECT_NODES + _SET_NODES + _QUERY_NODES
CONSTRAINT_TYPES: tuple[str, ...] = ("NULL", "OUT_NEQ")

#: ASP variable names: the query object is X, references follow by distance from it.
VARIABLES: tuple[str, ...] = ("X", "Y", "Z", "W", "V", "U", "T")

_PARAM_NAME = re.compile(r"^<[A-Z][0-9]*>$")
_SLOT = re.compile(r"<[^<>]*>")
_OPTIONAL = re.compile(r"\[([^\[\]]*)\]")


class InconsistentSceneError(ClevrPocError):
    """The complete scene is not a model of its environment: the hidden object's true value is not in
    the reasoner's answer (a bug in the scene, its relationships or the environment)."""


# ====================================================================== templates
@dataclass(frozen=True)
class TemplateNode:
    """One node of a template program.

    Attributes:
        type: one of :data:`NODE_TYPES`.
        inputs: indices of earlier nodes.
        side_inputs: parameter names (``"<Z2>"``, ``"<R>"``, ...).
    """

    type: str
    inputs: tuple[int, ...] = ()
    side_inputs: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"type": self.type, "inputs": list(self.inputs)}
        if self.side_inputs:
            data["side_inputs"] = list(self.side_inputs)
        return data


@dataclass(frozen=True)
class TemplateParam:
    """A template parameter: ``name`` like ``"<C2>"``, ``type`` a key of :data:`PARAM_TYPES`."""

    name: str
    type: str

    @property
    def attribute(self) -> str:
        """``"size"``, ``"color"``, ``"material"``, ``"shape"`` or ``"relation"``."""
        return PARAM_TYPES[self.type]


@dataclass(frozen=True)
class TemplateConstraint:
    """``NULL`` (params: names that must stay empty) or ``OUT_NEQ`` (params: two node indices whose
    outputs on the complete scene must differ)."""

    type: str
    params: tuple[Any, ...]


@dataclass(frozen=True)
class QuestionTemplate:
    """A validated question template (CLEVR template format).

    Attributes:
        family: file stem, e.g. ``"one_hop"``.
        filename: e.g. ``"one_hop.json"`` (``template_filename`` of generated questions).
        index: position in its file (``question_family_index``).
        text: text variants.
        nodes, params, constraints: the program and its parameters.
        query_attribute: the attribute the template asks about.
        null_params: names of ``NULL``-constrained parameters.
    """

    family: str
    filename: str
    index: int
    text: tuple[str, ...]
    nodes: tuple[TemplateNode, ...]
    params: tuple[TemplateParam, ...]
    constraints: tuple[TemplateConstraint, ...]
    query_attribute: str
    null_params: frozenset[str] = frozenset()

    @property
    def id(self) -> str:
        """``"<filename>#<index>"``."""
        return f"{self.filename}#{self.index}"

    @property
    def param_types(self) -> dict[str, str]:
        return {p.name: p.type for p in self.params}

    def to_json(self) -> dict[str, Any]:
        """The CLEVR template JSON object."""
        return {
            "text": list(self.text),
            "nodes": [n.to_json() for n in self.nodes],
            "params": [{"type": p.type, "name": p.name} for p in self.params],
            "constraints": [{"type": c.type, "params": list(c.params)} for c in self.constraints],
        }


def _node_kind(node_type: str) -> str:
    if node_type in _OBJECT_NODES:
        return "object"
    if node_type in _QUERY_NODES:
        return "query"
    return "set"


def parse_template(data: Any, *, source: object = None, index: int = 0, family: str = "custom") -> QuestionTemplate:
    """Validate one template JSON object.

    Raises:
        FormatError: naming ``source`` and the field (``[index].nodes[3].inputs`` etc.).
    """
    where = f"[{index}]"

    def fail(message: str, fld: str, value: object = None) -> FormatError:
        return FormatError(message, source=source, field=f"{where}.{fld}" if fld else where, value=value)

    if not isinstance(data, Mapping):
        raise fail("a template must be a JSON object", "", type(data).__name__)
    for key in ("text", "nodes", "params"):
        if key not in data:
            raise fail("missing key", key)
    unknown = sorted(set(data) - {"text", "nodes", "params", "constraints"})
    if unknown:
        raise fail("unknown key(s)", "", unknown)

    # ---- params
    raw_params = data["params"]
    if not isinstance(raw_params, list):
        raise fail("must be a list", "params", raw_params)
    params: list[TemplateParam] = []
    for i, p in enumerate(raw_params):
        if not isinstance(p, Mapping) or set(p) != {"type", "name"}:
            raise fail('must be {"type": ..., "name": ...}', f"params[{i}]", p)
        if p["type"] not in PARAM_TYPES:
            raise fail(f"unknown parameter type; expected one of {list(PARAM_TYPES)}", f"params[{i}].type", p["type"])
        if not isinstance(p["name"], str) or not _PARAM_NAME.match(p["name"]):
            raise fail("parameter names look like <Z2>", f"params[{i}].name", p["name"])
        params.append(TemplateParam(p["name"], p["type"]))
    names = [p.name for p in params]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise fail("duplicate parameter names", "params", duplicates)
    types = {p.name: p.type for p in params}

    # ---- nodes
    raw_nodes = data["nodes"]
    if not isinstance(raw_nodes, list) or not raw_nodes:
        raise fail("must be a non-empty list", "nodes", raw_nodes)
    nodes: list[TemplateNode] = []
    used_by: Counter[int] = Counter()
    used_params: Counter[str] = Counter()
    for i, n in enumerate(raw_nodes):
        fld = f"nodes[{i}]"
        if not isinstance(n, Mapping) or "type" not in n or not set(n) <= {"type", "inputs", "side_inputs"}:
            raise fail('must be {"type", "inputs", "side_inputs"}', fld, n)
        node_type = n["type"]
        if node_type not in NODE_TYPES:
            raise fail(f"unknown node type; expected one of {list(NODE_TYPES)}", f"{fld}.type", node_type)
        inputs = n.get("inputs", [])
        side = n.get("side_inputs", [])
        if not isinstance(inputs, list) or not all(isinstance(j, int) and not isinstance(j, bool) and 0 <= j < i
                                                    for j in inputs):
            raise fail(f"must list indices of earlier nodes (0..{i - 1})", f"{fld}.inputs", inputs)
        if not isinstance(side, list) or not all(isinstance(s, str) for s in side):
            raise fail("must be a list of parameter names", f"{fld}.side_inputs", side)
        for s in side:
            if s not in types:
                raise fail("undeclared parameter", f"{fld}.side_inputs", s)
        input_kinds = [_node_kind(nodes[j].type) for j in inputs]
        kind = node_type if node_type in ("scene", "intersect", "relate") else _node_kind(node_type)
        if node_type.startswith("same_"):
            kind = "same"
        expected: dict[str, tuple[list[str], list[str]]] = {
            "scene": ([], []),
            "filter_unique": (["set"], list(_DESCRIPTION_TYPES)),
            "relate_filter_unique": (["object"], ["Relation", *_DESCRIPTION_TYPES]),
            "relate": (["object"], ["Relation"]),
            "intersect": (["set", "set"], []),
            "same": (["object"], []),
            "query": (["object"], []),
        }
        want_inputs, want_side = expected[kind if kind != "object" else node_type]
        if input_kinds != want_inputs:
            raise fail(f"{node_type} takes inputs of kinds {want_inputs}", f"{fld}.inputs", inputs)
        if [types[s] for s in side] != want_side:
            raise fail(f"{node_type} takes side inputs of types {want_side}", f"{fld}.side_inputs", side)
        used_by.update(inputs)
        used_params.update(side)
        nodes.append(TemplateNode(node_type, tuple(inputs), tuple(side)))
    query_nodes = [i for i, n in enumerate(nodes) if n.type in _QUERY_NODES]
    if query_nodes != [len(nodes) - 1]:
        raise fail("exactly one query_<attribute> node, the last one", "nodes", [nodes[i].type for i in query_nodes])
    for i in range(len(nodes) - 1):
        if used_by[i] != 1:
            raise fail("every node but the last must be the input of exactly one later node (a tree)",
                       f"nodes[{i}]", used_by[i])
    for name in names:
        if used_params[name] != 1:
            raise fail("every parameter must be a side input of exactly one node", "params", name)
    query_attribute = nodes[-1].type[len("query_"):]

    # ---- constraints
    raw_constraints = data.get("constraints", [])
    if not isinstance(raw_constraints, list):
        raise fail("must be a list", "constraints", raw_constraints)
    constraints: list[TemplateConstraint] = []
    null_params: set[str] = set()
    for i, c in enumerate(raw_constraints):
        fld = f"constraints[{i}]"
        if not isinstance(c, Mapping) or set(c) != {"type", "params"} or not isinstance(c["params"], list):
            raise fail('must be {"type": ..., "params": [...]}', fld, c)
        if c["type"] not in CONSTRAINT_TYPES:
            raise fail(f"unknown constraint type; expected one of {list(CONSTRAINT_TYPES)}", f"{fld}.type", c["type"])
        if c["type"] == "NULL":
            for p in c["params"]:
                if p not in types or types[p] == "Relation":
                    raise fail("NULL takes declared attribute parameters", f"{fld}.params", p)
            null_params.update(c["params"])
        else:
            ps = c["params"]
            if len(ps) != 2 or not all(isinstance(j, int) and not isinstance(j, bool) and 0 <= j < len(nodes)
                                       and _node_kind(nodes[j].type) == "set" for j in ps):
                raise fail("OUT_NEQ takes two indices of set-valued nodes", f"{fld}.params", ps)
        constraints.append(TemplateConstraint(c["type"], tuple(c["params"])))

    # ---- semantic checks: never name the queried / compared attribute
    def slot_of(node: TemplateNode, attribute: str) -> str:
        side = node.side_inputs[-4:]
        return side[DESCRIPTION_ORDER.index(attribute)]

    query_object = nodes[nodes[-1].inputs[0]]
    if slot_of(query_object, query_attribute) not in null_params:
        raise fail(f"the query object's {query_attribute} parameter must be NULL (it is the answer)", "constraints",
                   slot_of(query_object, query_attribute))
    for i, node in enumerate(nodes):
        if node.type.startswith("same_"):
            attribute = node.type[len("same_"):]
            consumer = next(n for n in nodes if i in n.inputs)
            if consumer.type != "filter_unique":
                raise fail(f"the output of {node.type} must go into a filter_unique", f"nodes[{i}]", consumer.type)
            for obj_node in (nodes[node.inputs[0]], consumer):
                if slot_of(obj_node, attribute) not in null_params:
                    raise fail(f"same_{attribute}: both objects' {attribute} parameters must be NULL", "constraints",
                               slot_of(obj_node, attribute))

    # ---- text
    raw_text = data["text"]
    if not isinstance(raw_text, list) or not raw_text:
        raise fail("must be a non-empty list of strings", "text", raw_text)
    for i, t in enumerate(raw_text):
        fld = f"text[{i}]"
        if not isinstance(t, str) or not t.strip():
            raise fail("must be a non-empty string", fld, t)
        stripped = _OPTIONAL.sub("", t)
        if "[" in stripped or "]" in stripped:
            raise fail("unbalanced or nested [optional words]", fld, t)
        slots = _SLOT.findall(t)
        for s in slots:
            if s not in types:
                raise fail("slot is not a declared parameter", fld, s)
        counts = Counter(slots)
        missing = [n for n in names if counts[n] != 1]
        if missing:
            raise fail("every parameter must appear exactly once in every text variant", fld, missing)
        for optional in _OPTIONAL.findall(t):
            if _SLOT.search(optional):
                raise fail("[optional words] may not hold a slot", fld, optional)
    return QuestionTemplate(family, f"{family}.json", index, tuple(raw_text), tuple(nodes), tuple(params),
                            tuple(constraints), query_attribute, frozenset(null_params))


def load_template_file(path: str | os.PathLike[str]) -> list[QuestionTemplate]:
    """Read and validate one template file (a JSON list of templates; family = file stem).

    Raises:
        FormatError: unreadable file, bad JSON, or a bad template (names file and field).
    """
    path = Path(path)
    data = read_json(path)
    if not isinstance(data, list) or not data:
        raise FormatError("a template file must hold a non-empty JSON list of templates", source=path,
                          value=type(data).__name__)
    family = path.stem
    templates = [parse_template(t, source=path, index=i, family=family) for i, t in enumerate(data)]
    return [QuestionTemplate(t.family, path.name, t.index, t.text, t.nodes, t.params, t.constraints,
                             t.query_attribute, t.null_params) for t in templates]


def load_templates(directory: str | os.PathLike[str] | None = None) -> list[QuestionTemplate]:
    """All templates of a folder: the packaged 28 by default (6 families, :data:`FAMILIES` order).

    Files of :data:`FAMILIES` come first in that order, then any other ``*.json`` by name.

    Raises:
        FormatError: missing folder, a missing family file in the packaged folder, or a bad file.
    """
    folder = TEMPLATE_DIR if directory is None else Path(directory)
    if not folder.is_dir():
        raise FormatError("template folder not found", source=folder)
    files = {p.stem: p for p in folder.glob("*.json")}
    if directory is None:
        for family in FAMILIES:
            if family not in files:
                raise FormatError("packaged template file missing (broken installation?)",
                                  source=folder / f"{family}.json")
    order = [f for f in FAMILIES if f in files] + sorted(f for f in files if f not in FAMILIES)
    if not order:
        raise FormatError("no *.json template files", source=folder)
    templates: list[QuestionTemplate] = []
    for stem in order:
        templates.extend(load_template_file(files[stem]))
    return templates


# ====================================================================== answer balancing
class AnswerBalancer:
    """Rejects over-represented answer sets (paper Appendix B, Fig. 7: no answer set should dominate).

    Per query attribute it counts the answer sets kept so far. With ``n`` kept questions and ``k`` distinct
    answer sets seen, the *fair count* is ``n / (k + 1)`` (the ``+ 1`` stands for the sets not seen yet).
    A new question whose answer set has ``c > tolerance * fair`` kept questions is accepted with probability
    ``tolerance * fair / c``; sets never seen, and everything before ``warmup`` questions of the attribute,
    are always accepted. Deterministic given the ``random.Random`` passed in (one ``rng.random()`` call per
    probabilistic decision, none otherwise).

    Args:
        tolerance: how many times the fair count a set may reach before rejections start (>= 1).
        warmup: questions per attribute before balancing starts (>= 0).
    """

    def __init__(self, tolerance: float = 1.5, warmup: int = 10) -> None:
        if tolerance < 1:
            raise ValueError(f"tolerance must be >= 1, got {tolerance}")
        if warmup < 0:
            raise ValueError(f"warmup must be >= 0, got {warmup}")
        self.tolerance = float(tolerance)
        self.warmup = int(warmup)
        self.counts: dict[str, Counter[frozenset[str]]] = {a: Counter() for a in domain.ATTRIBUTES}

    def acceptance_probability(self, attribute: str, answer: Iterable[str]) -> float:
        """Probability in (0, 1] of keeping a question with this answer set."""
        answer = frozenset(answer)
        counts = self.counts[attribute]
        n = sum(counts.values())
        have = counts.get(answer, 0)
        if n < self.warmup or have == 0:
            return 1.0
        allowed = self.tolerance * n / (len(counts) + 1)
        return 1.0 if have <= allowed else allowed / have

    def offer(self, attribute: str, answer: Iterable[str], rng: random.Random) -> bool:
        """Decide whether to keep the question; records the answer set when kept."""
        answer = frozenset(answer)
        p = self.acceptance_probability(attribute, answer)
        keep = p >= 1.0 or rng.random() < p
        if keep:
            self.record(attribute, answer)
        return keep

    def record(self, attribute: str, answer: Iterable[str]) -> None:
        """Count a kept question (e.g. when resuming from questions already written)."""
        if attribute not in self.counts:
            raise KeyError(f"unknown attribute {attribute!r}")
        self.counts[attribute][frozenset(answer)] += 1


# ====================================================================== instantiation
class TemplateNotApplicable(ClevrPocError):
    """This instantiation attempt cannot satisfy the template on this scene (no reference object in the
    drawn relation, no unique description, an ``OUT_NEQ`` constraint fails); the generator tries again."""


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


def _silent(code: clingo.MessageCode, message: str) -> None:  # grounder infos are not errors
    return None


_SCENE_CHECKS: dict[str, tuple] = {}


def _candidates_by_scene_check(environment: Environment, partial: Scene) -> frozenset[Candidate] | None:
    """:func:`hidden_candidates` by the scene sampler's vectorised constraint check
    (:class:`~clevr_poc.generation.scenes.SceneCheck`): the allowed object types (one-object
    constraints, computed once per environment by clingo) that can join the visible objects (distinct
    objects, region capacity, counting templates). About a hundred times faster than enumerating the
    candidates with clingo; ``tests/test_questions.py`` checks both agree. None when it does not apply
    (object count differs from N-1)."""
    from clevr_poc.generation.scenes import TYPE_TUPLES, SceneCheck, allowed_types, type_id

    if len(partial) != environment.num_objects - 1:
        return None
    key = environment.constraints_asp()
    entry = _SCENE_CHECKS.get(key)
    if entry is None:
        if len(_SCENE_CHECKS) >= 256:
            _SCENE_CHECKS.pop(next(iter(_SCENE_CHECKS)))
        entry = _SCENE_CHECKS[key] = (allowed_types(environment.constraints), SceneCheck(environment.constraints))
    allowed, check = entry
    if len(allowed) == 0:
        return frozenset()
    others = np.array([[type_id(o) for o in partial.objects]], dtype=np.int64).reshape(1, len(partial))
    ok = check.object_replacements(others, allowed)[0]
    return frozenset(TYPE_TUPLES[tid] for tid in allowed[ok].tolist())


def hidden_candidates(environment: Environment, partial: Scene, *, time_limit: float = 10.0,
                      reasoner=None, method: str = "auto") -> frozenset[Candidate]:
    """Every (color, shape, size, material, region) the hidden object takes in some complete scene of
    ``environment`` that extends the visible objects of ``partial`` (``asp/hidden_candidates.lp``).

    One clingo call (brave consequences of background + ``object(0..N-1)`` + constraints + the visible
    objects' attributes and regions). Relations are left out: a relation between the hidden object and a
    visible one restricts only the hidden object's region (region adjacency, Appendix A lines 11-20),
    and every pair of regions admits left-or-right and front-or-behind, so the other pairs never rule a
    candidate out. Used as a cheap pre-filter of questions whose answer would be the whole domain.

    ``method="auto"`` uses the vectorised scene check when it applies (N-1 visible objects);
    ``method="clingo"`` (and the fallback) grounds a program for this call. ``reasoner`` is accepted for
    compatibility and not used.

    Raises:
        SolverTimeoutError: clingo took longer than ``time_limit`` seconds.
    """
    if method not in ("auto", "clingo"):
        raise ValueError(f"method must be 'auto' or 'clingo', got {method!r}")
    fast = _candidates_by_scene_check(environment, partial) if method == "auto" else None
    if fast is not None:
        return fast
    hidden = len(partial)
    facts = [
        f"hasProperty({i},color,{o.color}). hasProperty({i},shape,{o.shape}). hasProperty({i},size,{o.size}). "
        f"hasProperty({i},material,{o.material}). at({i},{o.region})."
        for i, o in enumerate(partial.objects)
    ]
    control = clingo.Control(["--models=0", "--enum-mode=brave"], logger=_silent)
    control.add("base", [], "\n".join((
        read_asp("background.lp"), f"object(0..{environment.num_objects - 1}).", environment.constraints_asp(),
        *facts, f"hidden({hidden}).", read_asp("hidden_candidates.lp"),
    )))
    control.ground([("base", [])])
    _, symbols, timed_out = solve_brave(control, (), time_limit)
    if timed_out:
        raise SolverTimeoutError(f"clingo did not finish within {time_limit:g} s (hidden object candidates)")
    return frozenset(
        (a[0].name, a[1].name, a[2].name, a[3].name, a[4].number)
        for a in (sym.arguments for sym in symbols if sym.name == "candidate" and len(sym.arguments) == 5)
    )


def _matches(obj: SceneObject, description: Mapping[str, str]) -> bool:
    return all(getattr(obj, a) == v for a, v in description.items())


class QuestionGenerator:
    """Generate labelled CLEVR-POC questions about the hidden object of a partial scene.

    Args:
        reasoner: labels questions (default: a new compiled-mode :class:`~clevr_poc.reasoning.Reasoner`).
        templates: the templates (default: :func:`load_templates`).
        attribute_shares: query-attribute shares used when ``generate`` gets no ``query_attribute``
            (default :data:`QUERY_ATTRIBUTE_SHARES`, paper Appendix B).
        require_unambiguous: keep only questions whose official answer equals the intended answer
            (references pinned to their objects); see the module docstring.

    Attributes:
        rejections: Counter of why attempts were rejected (``"no_instance"``, ``"answer_size"``,
            ``"ambiguous"``, ``"balance"``) - for diagnostics and benchmarks.
    """

    def __init__(self, reasoner=None, templates: Sequence[QuestionTemplate] | None = None, *,
                 attribute_shares: Mapping[str, float] | None = None, require_unambiguous: bool = True) -> None:
        if reasoner is None:
            from clevr_poc.reasoning import Reasoner

            reasoner = Reasoner()
        self.reasoner = reasoner
        self.templates = tuple(load_templates() if templates is None else templates)
        if not self.templates:
            raise ValueError("no question templates")
        shares = dict(QUERY_ATTRIBUTE_SHARES if attribute_shares is None else attribute_shares)
        for attribute, share in shares.items():
            if attribute not in domain.ATTRIBUTES or share < 0:
                raise ValueError(f"bad attribute share {attribute!r}: {share!r}")
        if sum(shares.values()) <= 0:
            raise ValueError("attribute shares must not all be zero")
        self.attribute_shares = shares
        self.require_unambiguous = require_unambiguous
        self.rejections: Counter[str] = Counter()

    # ------------------------------------------------------------------ public API
    def templates_for(self, attribute: str, family: str | None = None) -> list[QuestionTemplate]:
        """Templates querying ``attribute`` (optionally of one family)."""
        return [t for t in self.templates if t.query_attribute == attribute and (family is None or t.family == family)]

    def choose_attribute(self, rng: random.Random, family: str | None = None) -> str:
        """Draw a query attribute with :attr:`attribute_shares`, among attributes some template (of
        ``family``, when given) asks about.

        Raises:
            ValueError: no template of ``family`` asks about an attribute with a positive share.
        """
        attributes = [a for a in domain.ATTRIBUTES
                      if self.attribute_shares.get(a, 0) > 0 and self.templates_for(a, family)]
        if not attributes:
            raise ValueError(f"no template{' of family ' + repr(family) if family else ''} asks about an "
                             f"attribute with a positive share {self.attribute_shares}")
        return rng.choices(attributes, weights=[self.attribute_shares[a] for a in attributes])[0]

    def generate(self, environment: Environment, complete_scene: Scene, hidden_index: int, rng: random.Random, *,
                 query_attribute: str | None = None, max_tries: int = 50, family: str | None = None,
                 balancer: AnswerBalancer | None = None) -> Question | None:
        """One labelled question about object ``hidden_index`` of ``complete_scene``, or None.

        Args:
            environment: the scene's environment (``num_objects`` must equal ``len(complete_scene)``).
            complete_scene: the complete scene with its ``relationships``.
            hidden_index: the object removed to make the partial scene (its id there is ``N-1``).
            rng: the only source of randomness (same rng state -> same question).
            query_attribute: the attribute to ask about; drawn with the shares when None.
            max_tries: instantiation attempts before giving up (returns None).
            family: restrict to one template family (e.g. ``"same_relate"``).
            balancer: when given, over-represented answer sets are rejected (and kept ones recorded).

        Returns:
            :class:`~clevr_poc.question.Question` with ``text``, ``asp_query``, ``answer``, ``program``,
            ``template_filename``, ``question_family_index`` (index within the file), ``object_interest``
            (hidden object's JSON), ``environment_id`` and the scene's split/image fields; or None.

        Raises:
            FormatError: scene/environment object counts differ, or the scene lacks relationships.
            IndexError: ``hidden_index`` out of range.
            ValueError: unknown attribute/family or no template for them.
            InconsistentSceneError: the hidden object's true value is not in the answer.
        """
        if len(complete_scene) != environment.num_objects:
            raise FormatError(f"the complete scene has {len(complete_scene)} objects but the environment declares "
                              f"{environment.num_objects}", field="num_objects", value=len(complete_scene))
        missing = [r for r in domain.RELATIONS if len(complete_scene.relationships.get(r, ())) != len(complete_scene)]
        if missing:
            raise FormatError("the complete scene needs relationships for every object", field="relationships",
                              value=missing)
        if not 0 <= hidden_index < len(complete_scene):
            raise IndexError(f"object {hidden_index} not in a scene of {len(complete_scene)} objects")
        attribute = query_attribute if query_attribute is not None else self.choose_attribute(rng, family)
        if attribute not in domain.ATTRIBUTES:
            raise ValueError(f"unknown query attribute {attribute!r}; expected one of {domain.ATTRIBUTES}")
        eligible = self.templates_for(attribute, family)
        if not eligible:
            raise ValueError(f"no template asks about {attribute!r}" + (f" in family {family!r}" if family else ""))
        by_family: dict[str, list[QuestionTemplate]] = {}
        for template in eligible:
            by_family.setdefault(template.family, []).append(template)
        families = list(by_family)
        partial = complete_scene.without_object(hidden_index)
        hidden_object = complete_scene.objects[hidden_index]
        hidden_value = hidden_object.attribute(attribute)
        candidates = hidden_candidates(environment, partial, time_limit=getattr(self.reasoner, "time_limit", 10.0),
                                       reasoner=self.reasoner)
        truth = (hidden_object.color, hidden_object.shape, hidden_object.size, hidden_object.material,
                 hidden_object.region)
        if truth not in candidates:
            raise InconsistentSceneError(
                f"object {hidden_index} ({hidden_object.describe()}) is not a possible hidden object of its own "
                f"partial scene: the complete scene does not satisfy environment {environment.id}")
        # every question's intended answer contains the values of the candidates that share the hidden
        # object's other three attributes and its region: if those already fill the domain, give up now
        position = _CANDIDATE_FIELD[attribute]
        floor = {c[position] for c in candidates
                 if all(c[i] == truth[i] for i in range(5) if i != position)}
        if len(floor) >= len(domain.DOMAINS[attribute]):
            self.rejections["hopeless"] += 1
            return None
        answers: dict[str, frozenset[str]] = {}
        # the first half of the tries stays with one family drawn uniformly, so that families whose
        # questions are rarely narrow enough (zero_hop) are not crowded out by the others; then any family
        first_family = rng.choice(families)
        for attempt in range(max_tries):
            family_now = first_family if attempt < max_tries // 2 else rng.choice(families)
            template = rng.choice(by_family[family_now])
            try:
                instance = self.instantiate(template, complete_scene, hidden_index, rng)
            except TemplateNotApplicable:
                self.rejections["no_instance"] += 1
                continue
            intended = self.possible_values(instance, candidates, complete_scene)
            if len(intended) >= len(domain.DOMAINS[attribute]):
                self.rejections["answer_size"] += 1  # the intended answer is already the whole domain
                continue
            asp_query = self.asp_query(instance)
            answer = answers.get(asp_query)
            if answer is None:  # the same instantiation often comes up again within one call
                answer = answers[asp_query] = self.reasoner.answer(environment, partial, asp_query).values
            if hidden_value not in answer:
                raise InconsistentSceneError(
                    f"the hidden object's {attribute} {hidden_value!r} is not in the answer {sorted(answer)} of "
                    f"{asp_query!r}: the complete scene does not satisfy environment {environment.id}")
            if not 1 <= len(answer) < len(domain.DOMAINS[attribute]):
                self.rejections["answer_size"] += 1
                continue
            if self.require_unambiguous:
                # the intended answer (references pinned to their objects) equals the reasoner's answer
                # of :meth:`intended_query`; computed from the candidates (tests compare the two)
                if intended != answer:
                    self.rejections["ambiguous"] += 1
                    continue
            if balancer is not None and not balancer.offer(attribute, answer, rng):
                self.rejections["balance"] += 1
                continue
            return Question(
                text=self.render_text(instance, rng), asp_query=asp_query, answer=frozenset(answer),
                program=tuple(self.program(instance)), image_filename=complete_scene.image_filename,
                image_index=complete_scene.image_index, split=complete_scene.split,
                object_interest=complete_scene.objects[hidden_index].to_json(),
                template_filename=template.filename, question_family_index=template.index,
                environment_id=environment.id,
            )
        return None

    # ------------------------------------------------------------------ instantiation on the complete scene
    def instantiate(self, template: QuestionTemplate, scene: Scene, hidden_index: int,
                    rng: random.Random) -> Instance:
        """Choose relations, reference objects and descriptions (steps 3-4 of the module docstring).

        Raises:
            TemplateNotApplicable: no reference object / no unique description / an ``OUT_NEQ`` constraint fails.
        """
        nodes = template.nodes
        instance = Instance(template)
        used = {hidden_index}
        consumer = {j: i for i, n in enumerate(nodes) for j in n.inputs}

        def assign(node_index: int, obj: int) -> None:
            instance.objects[node_index] = obj
            node = nodes[node_index]
            if node.type == "relate_filter_unique":
                relate(node.side_inputs[0], node.inputs[0], obj)
            else:
                require_member(node.inputs[0], obj)

        def relate(param: str, object_node: int, obj: int) -> None:
            # "obj is R of ref": obj in relationships[R][ref]
            options = {r: [p for p in range(len(scene)) if p not in used and obj in scene.relationships[r][p]]
                       for r in domain.RELATIONS}
            relations = [r for r in domain.RELATIONS if options[r]]
            if not relations:
                raise TemplateNotApplicable
            relation = rng.choice(relations)
            ref = rng.choice(options[relation])
            instance.values[param] = relation
            used.add(ref)
            assign(object_node, ref)

        def require_member(set_node: int, obj: int) -> None:
            node = nodes[set_node]
            if node.type == "scene":
                return
            if node.type == "relate":
                relate(node.side_inputs[0], node.inputs[0], obj)
            elif node.type == "intersect":
                for j in node.inputs:
                    require_member(j, obj)
            else:  # same_<attribute>
                attribute = node.type[len("same_"):]
                value = scene.objects[obj].attribute(attribute)
                options = [p for p in range(len(scene))
                           if p not in used and scene.objects[p].attribute(attribute) == value]
                if not options:
                    raise TemplateNotApplicable
                ref = rng.choice(options)
                used.add(ref)
                assign(node.inputs[0], ref)

        query_object = nodes[-1].inputs[0]
        assign(query_object, hidden_index)

        # ASP variables: X for the query object, then by distance from it (ties: later node first)
        object_nodes = list(instance.objects)
        dist = {i: self._distance(nodes, consumer, i, query_object) for i in object_nodes}
        for k, i in enumerate(sorted(object_nodes, key=lambda i: (dist[i], -i))):
            instance.variables[i] = VARIABLES[k]

        # forward pass: descriptions that make every filter_unique yield its object
        everything = frozenset(range(len(scene)))
        for i, node in enumerate(nodes):
            if node.type == "scene":
                instance.outputs[i] = everything
            elif node.type == "relate":
                instance.outputs[i] = frozenset(scene.relationships[instance.values[node.side_inputs[0]]]
                                                [instance.outputs[node.inputs[0]]])
            elif node.type == "intersect":
                instance.outputs[i] = instance.outputs[node.inputs[0]] & instance.outputs[node.inputs[1]]
            elif node.type.startswith("same_"):
                attribute = node.type[len("same_"):]
                ref = instance.outputs[node.inputs[0]]
                value = scene.objects[ref].attribute(attribute)
                instance.outputs[i] = frozenset(p for p in everything
                                                if p != ref and scene.objects[p].attribute(attribute) == value)
            elif node.type in _OBJECT_NODES:
                if node.type == "relate_filter_unique":
                    ref = instance.outputs[node.inputs[0]]
                    candidates = frozenset(scene.relationships[instance.values[node.side_inputs[0]]][ref])
                else:
                    candidates = instance.outputs[node.inputs[0]]
                obj = instance.objects[i]
                if obj not in candidates:  # cannot happen: assign() chose members
                    raise TemplateNotApplicable
                slots = dict(zip(DESCRIPTION_ORDER, node.side_inputs[-4:]))
                allowed = [a for a in DESCRIPTION_ORDER if slots[a] not in template.null_params]
                description = self._describe(scene, obj, candidates, allowed, rng)
                for attribute, slot in slots.items():
                    instance.values[slot] = description.get(attribute, "")
                instance.outputs[i] = obj
        for constraint in template.constraints:
            if constraint.type == "OUT_NEQ":
                a, b = constraint.params
                if instance.outputs[a] == instance.outputs[b]:
                    raise TemplateNotApplicable
        return instance

    @staticmethod
    def _distance(nodes: Sequence[TemplateNode], consumer: Mapping[int, int], node: int, target: int) -> int:
        distance = 0
        while node != target:
            node = consumer[node]
            if nodes[node].type in _OBJECT_NODES:
                distance += 1
        return distance

    @staticmethod
    def _describe(scene: Scene, obj: int, candidates: frozenset[int], allowed: list[str],
                  rng: random.Random) -> dict[str, str]:
        """A random subset of ``allowed`` attributes, grown (random order) until only ``obj`` among
        ``candidates`` matches. Raises TemplateNotApplicable when even all allowed attributes are not enough."""
        order = list(allowed)
        rng.shuffle(order)
        k = rng.randint(0, len(order))
        target = scene.objects[obj]
        description = {a: target.attribute(a) for a in order[:k]}
        rest = order[k:]
        while True:
            matching = [p for p in candidates if _matches(scene.objects[p], description)]
            if matching == [obj]:
                return description
            if not rest:
                raise TemplateNotApplicable
            attribute = rest.pop(0)
            description[attribute] = target.attribute(attribute)

    # ------------------------------------------------------------------ renderings
    def asp_query(self, instance: Instance) -> str:
        """The ASP query in the official form (:func:`clevr_poc.parsing.official_form.to_official_form`):
        ``missing(Q) :- hasProperty(X,<attr>,Q), <descriptions>, <relations>, <inequalities>.``

        References are described by attributes only; ``rel(Y,X)`` means X is rel of Y; "the other X with
        the same P as Y" is ``X!=Y, same_P(Y,X)`` (paper Appendix A). Variables are X, then Y (one
        reference) or Y1, Y2, Y3 by hop from X (the reference named first in the question text first
        among equals: ``single_and``'s ``<R2>`` reference is Y1), and every pair of object variables is
        distinct (``X!=Y1, Y1!=Y2, X!=Y2``, ...), as the official generator writes them.
        """
        literals = [f"hasProperty(X,{instance.template.query_attribute},Q)"]
        literals += self._description_literals(instance)
        # links ordered by their child's variable (X, Y, Z, W: by hop, text order among equals), so
        # that to_official_form numbers the references in that order
        links = self._structure_literals(instance, pinned=None)
        rank = {v: k for k, v in enumerate(VARIABLES)}
        links.sort(key=lambda lit: max(rank[v] for v in re.findall(r"\b[A-Z]\b", lit)))
        return to_official_form(f"missing(Q) :- {', '.join(literals + links)}.")

    def intended_query(self, instance: Instance, hidden_index: int) -> str:
        """The question with every reference object of the query object pinned to its id in the partial
        scene (the query object stays the variable X). Its answer is what the question means; see the
        module docstring."""
        template = instance.template
        query_object = template.nodes[-1].inputs[0]

        def partial_id(obj: int) -> int:
            return obj - 1 if obj > hidden_index else obj

        pinned = {node: str(partial_id(obj)) for node, obj in instance.objects.items() if node != query_object}
        literals = [f"hasProperty(X,{template.query_attribute},Q)"]
        literals += [lit for lit in self._description_literals(instance, only=query_object)]
        literals += [lit for lit in self._structure_literals(instance, pinned=pinned, only=query_object)
                     if "!=" not in lit]
        return f"missing(Q) :- {', '.join(literals)}."

    def possible_values(self, instance: Instance, candidates: Iterable[Candidate], scene: Scene) -> frozenset[str]:
        """The intended answer computed from the hidden object's candidates (see :func:`hidden_candidates`):
        values of the queried attribute over candidates that match the query object's description and its
        direct references (region adjacency for ``R(ref,X)``, equal value for ``same_P(ref,X)``).

        It is contained in the official answer (a model for each of these values exists), so a whole
        domain here means a whole domain there.
        """
        template = instance.template
        query_object = template.nodes[-1].inputs[0]
        node = template.nodes[query_object]
        description = {a: instance.values[slot] for a, slot in zip(DESCRIPTION_ORDER, node.side_inputs[-4:])
                       if instance.values.get(slot)}
        regions: set[int] = set(domain.REGIONS)
        same: dict[str, str] = {}

        def visit(set_node: int) -> None:
            n = template.nodes[set_node]
            if n.type == "relate":
                restrict(instance.values[n.side_inputs[0]], instance.objects[n.inputs[0]])
            elif n.type == "intersect":
                for j in n.inputs:
                    visit(j)
            elif n.type.startswith("same_"):
                attribute = n.type[len("same_"):]
                same[attribute] = scene.objects[instance.objects[n.inputs[0]]].attribute(attribute)

        def restrict(relation: str, ref: int) -> None:
            ref_region = scene.objects[ref].region
            regions.intersection_update(r for r in domain.REGIONS
                                        if (ref_region, r) in domain.REGION_ADJACENCY[relation])

        if node.type == "relate_filter_unique":
            restrict(instance.values[node.side_inputs[0]], instance.objects[node.inputs[0]])
        else:
            visit(node.inputs[0])
        wanted = {**description, **same}
        position = _CANDIDATE_FIELD[template.query_attribute]
        return frozenset(
            c[position] for c in candidates
            if c[4] in regions and all(c[_CANDIDATE_FIELD[a]] == v for a, v in wanted.items())
        )

    def _ordered_object_nodes(self, instance: Instance) -> list[int]:
        return sorted(instance.variables, key=lambda i: VARIABLES.index(instance.variables[i]))

    def _description_literals(self, instance: Instance, only: int | None = None) -> list[str]:
        literals = []
        for i in self._ordered_object_nodes(instance):
            if only is not None and i != only:
                continue
            node = instance.template.nodes[i]
            var = instance.variables[i]
            for attribute, slot in zip(DESCRIPTION_ORDER, node.side_inputs[-4:]):
                value = instance.values.get(slot, "")
                if value:
                    literals.append(f"hasProperty({var},{attribute},{value})")
        return literals

    def _structure_literals(self, instance: Instance, pinned: Mapping[int, str] | None,
                            only: int | None = None) -> list[str]:
        nodes = instance.template.nodes

        def term(node: int) -> str:
            if pinned is not None and node in pinned:
                return pinned[node]
            return instance.variables[node]

        def for_set(set_node: int, var: str) -> list[str]:
            node = nodes[set_node]
            if node.type == "scene":
                return []
            if node.type == "relate":
                return [f"{instance.values[node.side_inputs[0]]}({term(node.inputs[0])},{var})"]
            if node.type == "intersect":
                return for_set(node.inputs[0], var) + for_set(node.inputs[1], var)
            ref = term(node.inputs[0])  # same_<attribute>
            return [f"{var}!={ref}", f"{node.type}({ref},{var})"]

        literals = []
        for i in self._ordered_object_nodes(instance):
            if only is not None and i != only:
                continue
            node = nodes[i]
            var = term(i)
            if node.type == "relate_filter_unique":
                literals.append(f"{instance.values[node.side_inputs[0]]}({term(node.inputs[0])},{var})")
            else:
                literals += for_set(node.inputs[0], var)
        return literals

    def program(self, instance: Instance) -> list[dict[str, Any]]:
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
            if node.type in _OBJECT_NODES:
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

    def render_text(self, instance: Instance, rng: random.Random) -> str:
        """Fill a random text variant: synonyms for values and relations, ``thing``/``object`` for an
        empty shape, optional ``[words]`` kept with probability 1/2, spaces and a/an tidied."""
        template = instance.template
        text = rng.choice(template.text)
        text = _OPTIONAL.sub(lambda m: m.group(1) if rng.random() < 0.5 else "", text)
        types = template.param_types

        def fill(match: re.Match[str]) -> str:
            name = match.group(0)
            value = instance.values.get(name, "")
            if types[name] == "Shape" and not value:
                value = "thing"
            if not value:
                return ""
            return rng.choice(domain.SYNONYMS.get(value, (value,)))

        text = _SLOT.sub(fill, text)
        return tidy_text(text)


def tidy_text(text: str) -> str:
    """Collapse spaces, drop spaces before punctuation, ``a`` -> ``an`` before a vowel, capitalise."""
    text = re.sub(r"\s+", " ", text).strip()
    text = re.sub(r" ([?;,.])", r"\1", text)
    text = re.sub(r"\b([Aa]) (?=[aeiouAEIOU])", r"\1n ", text)
    return text[:1].upper() + text[1:]
