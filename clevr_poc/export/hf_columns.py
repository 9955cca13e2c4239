"""The columns of a CLEVR-POC export in the Hugging Face ``datasets`` format, and one example -> one row.

Every row is one question about the hidden object of one partial scene (:func:`example_row`):

============================  ==========================  ==================================================
column                        type                        what
============================  ==========================  ==================================================
``image``                     ``Image``                   the rendered partial scene (PNG bytes), or null
``image_filename``            ``string``                  the image's file name in the source dataset
``split``                     ``string``                  the source split (``train``, ``testing``, ...)
``question``                  ``string``                  the English question
``asp_query``                 ``string``                  the gold query, ``missing(Q) :- ...``
``program``                   list of struct              the functional program (``type``, ``inputs``,
                                                          ``side_inputs``)
``answer``                    list of ``string``          the gold answer set, sorted
``query_attribute``           ``string``                  the attribute asked (color, size, shape, material)
``family``                    ``int32``                   ``question_family_index``
``template``                  ``string``                  ``template_filename``
``question_index``            ``int32``                   the question's index in its split
``image_index``               ``int32``                   the scene's index in its split
``environment_id``            ``int32``                   ``constraint_type_index``
``num_objects``               ``int32``                   objects of the complete scene (hidden one included)
``constraints_asp``           list of ``string``          one ASP rule group per constraint
``constraints_english``       list of ``string``          the same constraints in English
``environment_lp``            ``string``                  the whole environment program (official ``.lp``)
``partial_scene``             ``string``                  the partial scene, official scene JSON
``complete_scene``            ``string``                  the complete scene JSON, or null
``question_json``             ``string``                  the source question JSON, every key as read
============================  ==========================  ==================================================

The typed columns are for people and harnesses; ``question_json``, ``partial_scene`` and
``environment_lp`` let :mod:`clevr_poc.export.hf_reader` rebuild each :class:`~clevr_poc.dataset_reader.Example`
exactly. Building the ``datasets.Features`` (:func:`features`) needs the ``datasets`` package (``[hf]``
extra); :func:`example_row` does not.
"""

from __future__ import annotations

import json
from typing import Any

from clevr_poc.dataset_reader import Example

#: Column names, in the order of the table.
COLUMNS: tuple[str, ...] = (
    "image", "image_filename", "split", "question", "asp_query", "program", "answer", "query_attribute", "family",
    "template", "question_index", "image_index", "environment_id", "num_objects", "constraints_asp",
    "constraints_english", "environment_lp", "partial_scene", "complete_scene", "question_json",
)


def features() -> Any:
    """The ``datasets.Features`` of an export (the types of the module docstring's table)."""
    from datasets import Features, Image, List, Value

    string, int32 = Value("string"), Value("int32")
    return Features({
        "image": Image(), "image_filename": string, "split": string, "question": string, "asp_query": string,
        "program": List({"type": string, "inputs": List(int32), "side_inputs": List(string)}),
        "answer": List(string), "query_attribute": string, "family": int32, "template": string,
        "question_index": int32, "image_index": int32, "environment_id": int32, "num_objects": int32,
        "constraints_asp": List(string), "constraints_english": List(string), "environment_lp": string,
        "partial_scene": string, "complete_scene": string, "question_json": string,
    })


def _compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def example_row(example: Example, split: str) -> dict[str, Any]:
    """One row of the export for ``example`` of ``split`` (the image as ``{"bytes", "path"}`` or None).

    Raises:
        FormatError: the image file cannot be read (naming it).
    """
    from clevr_poc._io import read_bytes

    question, environment = example.question, example.environment
    image = None
    if example.image_path is not None:
        image = {"bytes": read_bytes(example.image_path, cap="json_file_bytes", what="an image"),
                 "path": example.image_path.name}
    program = [{"type": str(node.get("type")), "inputs": [int(i) for i in node.get("inputs", [])],
                "side_inputs": [str(s) for s in node.get("side_inputs", [])]} for node in question.program]
    return {
        "image": image,
        "image_filename": question.image_filename or example.partial_scene.image_filename,
        "split": split,
        "question": question.text,
        "asp_query": question.asp_query,
        "program": program,
        "answer": sorted(question.answer) if question.answer is not None else None,
        "query_attribute": question.query_attribute,
        "family": question.question_family_index,
        "template": question.template_filename,
        "question_index": question.question_index,
        "image_index": question.image_index if question.image_index is not None else example.partial_scene.image_index,
        "environment_id": environment.id,
        "num_objects": environment.num_objects,
        "constraints_asp": ["\n".join(c.asp_rules()) for c in environment.constraints],
        "constraints_english": [c.describe() for c in environment.constraints],
        "environment_lp": environment.to_asp(),
        "partial_scene": _compact(example.partial_scene.to_json()),
        "complete_scene": _compact(example.complete_scene.to_json()) if example.complete_scene is not None else None,
        "question_json": _compact(question.to_json()),
    }
