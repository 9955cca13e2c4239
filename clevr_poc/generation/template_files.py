"""Question templates: CLEVR template JSON, parsed and checked (:func:`parse_template`) and loaded from
files (:func:`load_templates`).

Templates are CLEVR template JSON (``text`` variants with ``<Z> <C> <M> <S> <R>`` slots and optional
``[words]``, ``nodes``, ``params``, ``constraints``), written for this project, shipped as package data
in ``clevr_poc/generation/question_templates/``. ``question_family_index`` is, as in CLEVR's generator,
the index of the template **within its file** (``template_filename``).
"""

from __future__ import annotations

import os
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from clevr_poc import domain
from clevr_poc._io import read_json
from clevr_poc.errors import FormatError

#: The six CLEVR families CLEVR-POC uses (paper Appendix B, Fig. 6a), in file order.
FAMILIES: tuple[str, ...] = ("zero_hop", "one_hop", "two_hop", "three_hop", "single_and", "same_relate")

#: Folder of the packaged templates.
TEMPLATE_DIR: Path = Path(__file__).resolve().parent / "question_templates"

#: Template parameter types -> attribute (or ``"relation"``).
PARAM_TYPES: Mapping[str, str] = {
    "Size": "size", "Color": "color", "Material": "material", "Shape": "shape", "Relation": "relation",
}
#: Attribute slots of an object description, in CLEVR order (``<Z> <C> <M> <S>``).
DESCRIPTION_ORDER: tuple[str, ...] = ("size", "color", "material", "shape")
_DESCRIPTION_TYPES = ("Size", "Color", "Material", "Shape")

#: Node types that yield one object.
OBJECT_NODES = ("filter_unique", "relate_filter_unique")
_SET_NODES = ("scene", "relate", "intersect") + tuple(f"same_{a}" for a in domain.ATTRIBUTES)
_QUERY_NODES = tuple(f"query_{a}" for a in domain.ATTRIBUTES)
NODE_TYPES: tuple[str, ...] = OBJECT_NODES + _SET_NODES + _QUERY_NODES
CONSTRAINT_TYPES: tuple[str, ...] = ("NULL", "OUT_NEQ")

_PARAM_NAME = re.compile(r"^<[A-Z][0-9]*>$")
#: A ``<slot>`` of a template text.
TEXT_SLOT = re.compile(r"<[^<>]*>")
#: ``[optional words]`` of a template text (kept with probability 1/2).
OPTIONAL_WORDS = re.compile(r"\[([^\[\]]*)\]")


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
    if node_type in OBJECT_NODES:
        return "object"
    if node_type in _QUERY_NODES:
        return "query"
    return "set"


def parse_template(data: object, *, source: object = None, index: int = 0, family: str = "custom") -> QuestionTemplate:
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
        stripped = OPTIONAL_WORDS.sub("", t)
        if "[" in stripped or "]" in stripped:
            raise fail("unbalanced or nested [optional words]", fld, t)
        slots = TEXT_SLOT.findall(t)
        for s in slots:
            if s not in types:
                raise fail("slot is not a declared parameter", fld, s)
        counts = Counter(slots)
        missing = [n for n in names if counts[n] != 1]
        if missing:
            raise fail("every parameter must appear exactly once in every text variant", fld, missing)
        for optional in OPTIONAL_WORDS.findall(t):
            if TEXT_SLOT.search(optional):
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
