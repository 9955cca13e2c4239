"""Re-word generated questions with other template texts of the same structure (parser robustness).

A generated :class:`~clevr_poc.question.Question` keeps its CLEVR functional ``program`` (values as ASP
constants) and its template (``template_filename`` + ``question_family_index``); from them
:func:`template_values` recovers the template parameters (``{"<Z>": "large", "<R>": "left", ...}``), and
:func:`reword` fills every text variant of every template with the same nodes (the same structure,
query attribute included) in another template folder -- for example the official CLEVR-POC templates,
which the user has from the official code (``question_templates/CLEVR_POC_templates``; never shipped
here). The gold ``asp_query`` and answer are unchanged: only the wording differs.

Used by ``benchmarks/parser_official_phrasings.py`` (the BiLSTM parser's program accuracy on the test
questions re-worded with the official phrasings, docs/parser.md).
"""

from __future__ import annotations

import random
from dataclasses import replace
from typing import Iterable, Mapping, Sequence

from clevr_poc.errors import FormatError
from clevr_poc.generation.template_files import DESCRIPTION_ORDER, QuestionTemplate, load_templates
from clevr_poc.generation.question_generator import QuestionGenerator
from clevr_poc.generation.question_instance import Instance
from clevr_poc.question import Question

__all__ = ["Structure", "by_structure", "reword", "source_template", "structure", "template_values"]

#: A template's structure: its nodes as ``(type, inputs, side_inputs)`` (query attribute included).
Structure = tuple[tuple[str, tuple[int, ...], tuple[str, ...]], ...]
_OBJECT_NODES = ("filter_unique", "relate_filter_unique")
#: ``render_text`` uses no generator state (no Reasoner needed).
_RENDERER = QuestionGenerator.__new__(QuestionGenerator)


def structure(template: QuestionTemplate) -> Structure:
    """The nodes of ``template`` as a hashable key (two templates with equal keys ask the same question)."""
    return tuple((n.type, tuple(n.inputs), tuple(n.side_inputs)) for n in template.nodes)


def by_structure(templates: Iterable[QuestionTemplate]) -> dict[Structure, list[QuestionTemplate]]:
    """Templates grouped by :func:`structure`."""
    groups: dict[Structure, list[QuestionTemplate]] = {}
    for template in templates:
        groups.setdefault(structure(template), []).append(template)
    return groups


def template_values(question: Question, template: QuestionTemplate) -> dict[str, str]:
    """The template parameters ``question`` instantiates, read back from its expanded ``program``.

    Every parameter of ``template`` is in the result; an empty description slot is ``""``.

    Raises:
        FormatError: the program does not follow the template's nodes (another template, or no program).
    """
    program = list(question.program)
    values = {name: "" for name in template.param_types}
    position = 0

    def take(kind: str | None = None) -> Mapping:
        nonlocal position
        if position >= len(program) or (kind is not None and program[position]["type"] != kind):
            raise FormatError(f"the question's program does not follow template {template.id}", field="program",
                              value=program[position]["type"] if position < len(program) else None)
        position += 1
        return program[position - 1]

    for node in template.nodes:
        if node.type in _OBJECT_NODES:
            if node.type == "relate_filter_unique":
                values[node.side_inputs[0]] = take("relate")["side_inputs"][0]
            slots = dict(zip(DESCRIPTION_ORDER, node.side_inputs[-4:]))
            while position < len(program) and program[position]["type"].startswith("filter_"):
                entry = take()
                attribute = entry["type"][len("filter_"):]
                if attribute not in slots:
                    raise FormatError(f"unexpected {entry['type']} in the program", field="program")
                values[slots[attribute]] = entry["side_inputs"][0]
            take("unique")
        elif node.type == "relate":
            values[node.side_inputs[0]] = take("relate")["side_inputs"][0]
        else:
            take(node.type)
    if position != len(program):
        raise FormatError(f"the question's program is longer than template {template.id}", field="program")
    return values


def reword(question: Question, source: QuestionTemplate, targets: Mapping[Structure, Sequence[QuestionTemplate]],
           rng: random.Random) -> list[str]:
    """Every text variant of every target template with ``source``'s structure, filled with the question's
    values (CLEVR synonyms and optional ``[words]`` drawn with ``rng``, as the generator does).

    Returns:
        The re-worded questions (empty when no target template has the structure).

    Raises:
        FormatError: see :func:`template_values`.
    """
    values = template_values(question, source)
    texts = []
    for target in targets.get(structure(source), ()):
        for variant in target.text:
            one = replace(target, text=(variant,))
            texts.append(_RENDERER.render_text(Instance(one, values=dict(values)), rng))
    return texts


def source_template(question: Question, templates: Sequence[QuestionTemplate] | None = None) -> QuestionTemplate:
    """The packaged template a generated question was made from (``template_filename``, ``question_family_index``).

    Raises:
        FormatError: no such template.
    """
    for template in templates if templates is not None else load_templates():
        if template.filename == question.template_filename and template.index == question.question_family_index:
            return template
    raise FormatError("no packaged template has this file and index", field="template_filename",
                      value=(question.template_filename, question.question_family_index))
