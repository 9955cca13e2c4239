"""The Question value object and the official CLEVR-POC question JSON format.

Official keys (one question per image): ``split, image_filename, image_index, question, program,
asp_query, answer, object_interest, template_filename, question_family_index, question_index``, and
ours: ``constraint_type_index`` (the environment id). Keys the library does not interpret are kept.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

from clevr_poc import domain
from clevr_poc._io import atomic_write_json, read_json
from clevr_poc.errors import FormatError, UnsafeProgramError
from clevr_poc.scene import _file_name

if TYPE_CHECKING:
    from clevr_poc.queries.sanitizer import SanitizedQuery


_KNOWN = ("split", "image_filename", "image_index", "question", "program", "asp_query", "answer",
          "object_interest", "template_filename", "question_family_index", "question_index",
          "constraint_type_index")


@dataclass(frozen=True)
class QuestionSpelling:
    """How a question JSON object was spelled when read, so that :meth:`Question.to_json` writes it back
    byte for byte.

    Attributes:
        key_order: the keys in the order read (``()`` for values built in code: the official order).
        answer_is_list: ``answer`` was a list or null (True), or one bare string (False: a one-value
            answer is written back as that string).
    """

    key_order: tuple[str, ...] = ()
    answer_is_list: bool = True


_NO_SPELLING = QuestionSpelling()


@dataclass(frozen=True)
class Question:
    """A question about the hidden object of a partial scene.

    Attributes:
        text: natural-language question.
        asp_query: the ASP rule ``missing(Q) :- hasProperty(X,<attribute>,Q), ...``.
        answer: the gold answer set (values of the queried attribute), or None when unlabelled.
        program: CLEVR functional program (list of ``{"type", "inputs", "side_inputs"}`` nodes).
        image_filename, image_index, split: which partial scene/image it is about.
        object_interest: the hidden object (official JSON object) or None.
        template_filename, question_family_index, question_index: provenance.
        environment_id: ``constraint_type_index`` (the environment the scene belongs to).
        extra: the keys of the file the library does not interpret, as read.
        json_spelling: how the JSON object was spelled when read (:class:`QuestionSpelling`).
    """

    text: str
    asp_query: str
    answer: frozenset[str] | None = None
    program: tuple[Mapping[str, Any], ...] = ()
    image_filename: str | None = None
    image_index: int | None = None
    split: str | None = None
    object_interest: Any = None
    template_filename: str | None = None
    question_family_index: int | None = None
    question_index: int | None = None
    environment_id: int | None = None
    extra: Mapping[str, Any] = field(default_factory=dict, compare=False, hash=False)
    json_spelling: QuestionSpelling = field(default=_NO_SPELLING, compare=False, hash=False, repr=False)

    @functools.cached_property
    def query(self) -> "SanitizedQuery":
        """The checked form of ``asp_query`` (:func:`clevr_poc.queries.sanitizer.sanitize_query`, default
        settings: head renamed, at most ``MAX_QUERY_OBJECT_VARIABLES`` object variables), computed once.

        Raises:
            UnsafeProgramError: ``asp_query`` is outside the query language (the one-line reason).
        """
        from clevr_poc.queries.sanitizer import sanitize_query

        return sanitize_query(self.asp_query)

    @property
    def query_attribute(self) -> str | None:
        """The queried attribute of the checked query (:attr:`query`: the first ``hasProperty(X,<attr>,Q)``
        with Q the head variable), or None (none there, or ``asp_query`` outside the query language)."""
        try:
            return self.query.attribute
        except UnsafeProgramError:
            return None

    @classmethod
    def from_json(cls, data: object, *, source: object = None) -> "Question":
        """Build from an official question JSON object; raises :class:`FormatError` naming the field."""
        if not isinstance(data, Mapping):
            raise FormatError("a question must be a JSON object", source=source, value=type(data).__name__)
        for key in ("question", "asp_query"):
            if key not in data:
                raise FormatError("missing key", source=source, field=key)
            if not isinstance(data[key], str) or not data[key].strip():
                raise FormatError("must be a non-empty string", source=source, field=key, value=data[key])
        answer_raw = data.get("answer")
        answer: frozenset[str] | None
        if answer_raw is None:
            answer = None
        else:
            values = answer_raw if isinstance(answer_raw, list) else [answer_raw]
            for value in values:
                if not isinstance(value, str) or value not in domain.ATTRIBUTE_OF_VALUE:
                    raise FormatError("not an attribute value", source=source, field="answer", value=value)
            answer = frozenset(values)
        for key in ("image_index", "question_family_index", "question_index", "constraint_type_index"):
            value = data.get(key)
            if value is not None and (not isinstance(value, int) or isinstance(value, bool)):
                raise FormatError("must be an integer", source=source, field=key, value=value)
        for key in ("split", "template_filename"):
            if data.get(key) is not None and not isinstance(data[key], str):
                raise FormatError("must be a string", source=source, field=key, value=data[key])
        _file_name(data.get("image_filename"), source, "image_filename")
        program = data.get("program", [])
        if not isinstance(program, list):
            raise FormatError("must be a list of program nodes", source=source, field="program", value=program)
        extra = {k: v for k, v in data.items() if k not in _KNOWN}
        spelling = QuestionSpelling(tuple(data.keys()), isinstance(answer_raw, list) or answer_raw is None)
        question = cls(
            text=data["question"], asp_query=data["asp_query"], answer=answer, program=tuple(program),
            image_filename=data.get("image_filename"), image_index=data.get("image_index"),
            split=data.get("split"), object_interest=data.get("object_interest"),
            template_filename=data.get("template_filename"),
            question_family_index=data.get("question_family_index"),
            question_index=data.get("question_index"), environment_id=data.get("constraint_type_index"),
            extra=extra, json_spelling=spelling,
        )
        if answer:
            # the gold answer holds values of the queried attribute (a shape in a colour question's answer is
            # a broken record, not a wrong prediction); unchecked when the query is outside the query language
            attribute = question.query_attribute
            wrong = sorted(v for v in answer if attribute is not None and domain.ATTRIBUTE_OF_VALUE[v] != attribute)
            if wrong:
                raise FormatError(f"{wrong[0]!r} is a {domain.ATTRIBUTE_OF_VALUE[wrong[0]]}, but asp_query asks for "
                                  f"the hidden object's {attribute}", source=source, field="answer", value=sorted(answer))
        return question

    def to_json(self) -> dict[str, Any]:
        """The official JSON object; ``answer`` is a sorted list of values (one bare value when it was read
        so); a question read from JSON gets exactly the keys read, in that order (:attr:`json_spelling`)."""
        order = self.json_spelling.key_order
        answer: Any = None
        if self.answer is not None:
            answer = sorted(self.answer)
            if not self.json_spelling.answer_is_list and len(answer) == 1:
                answer = answer[0]
        data: dict[str, Any] = {
            "split": self.split, "image_filename": self.image_filename, "image_index": self.image_index,
            "question": self.text, "program": [dict(node) for node in self.program], "asp_query": self.asp_query,
            "answer": answer, "object_interest": self.object_interest, "template_filename": self.template_filename,
            "question_family_index": self.question_family_index, "question_index": self.question_index,
            "constraint_type_index": self.environment_id,
        }
        data.update(self.extra)
        if order:
            data = {k: data[k] for k in order if k in data}  # exactly the keys that were read
        return data

    @classmethod
    def from_file(cls, path: str | os.PathLike[str]) -> "Question":
        """Read one official question JSON file (one question per image).

        Raises:
            FormatError: naming the file (and field): missing or unreadable, over the
                ``question_file_bytes`` cap (:mod:`clevr_poc.limits`, checked before reading), invalid
                JSON, or any field outside the format.
        """
        data = read_json(path, cap="question_file_bytes", what="a question file")
        # some releases wrap questions as {"questions": [...]}
        if isinstance(data, Mapping) and "questions" in data and isinstance(data["questions"], list):
            if len(data["questions"]) != 1:
                raise FormatError("expected exactly one question", source=path, field="questions",
                                  value=len(data["questions"]))
            data = data["questions"][0]
        return cls.from_json(data, source=Path(path))

    def to_file(self, path: str | os.PathLike[str]) -> Path:
        """Write the official JSON atomically."""
        return atomic_write_json(path, self.to_json())
