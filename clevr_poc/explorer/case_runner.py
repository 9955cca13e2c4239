"""Answer one example (or one upload) for the explorer page, and gather everything the page shows.

:func:`run_example` takes an example of a :class:`~clevr_poc.explorer.catalog.Catalog`; :func:`run_upload`
an image file, an environment ``.lp`` file and a question (or an ASP query). Both return a :class:`CaseView`;
a bad file, query or setting gives a view whose ``error`` is the same one line the command line prints
(``error: ...``), with whatever was computed before it, and never an exception.

Scene sources: ``perception`` (the shipped detector + attribute network, constraint-aware decoding in the
example's environment) or ``gold`` (the dataset's partial scene). Query sources: ``bilstm`` (the shipped
parser; words it does not know are counted, a question mostly made of them is refused), ``gold`` (the
question's ``asp_query``), ``llm`` (the few-shot LLM parser on the local SmolLM2, ``[llm]`` extra) and
``asp`` (the query typed on the page, sanitized as any untrusted query).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable

import numpy as np

from clevr_poc.errors import ClevrPocError, FormatError

SCENE_SOURCES: tuple[str, ...] = ("perception", "gold")
QUERY_SOURCES: tuple[str, ...] = ("bilstm", "gold", "llm", "asp")


@dataclass(frozen=True)
class CaseView:
    """Everything the page shows for one case (empty fields: not computed, e.g. after an error).

    Attributes:
        title: what was asked about (dataset example or upload).
        image: the image with the perceived objects drawn (uint8 (H, W, 3)), or None.
        gold_image: the image with the gold partial scene drawn, or None (uploads, no image).
        perceived, gold_objects: one line per object of the scene used / the gold partial scene.
        constraints_english, constraints_asp: the environment's constraints, one entry each.
        question: the question text. query: the ASP query that ran. query_source: where it came from.
        gold_query: the example's gold query, or "".
        answer: the answer set, sorted. gold: the gold answer set, sorted, or None (unknown).
        exact: answer == gold (None without gold). jaccard: |A ∩ G| / |A ∪ G| (None without gold).
        explanation: which constraints remove which value (:meth:`Explanation.describe`).
        notes: remarks (words the parser did not know, ...).
        error: the one-line ``error: ...`` of a failure, or None.
    """

    title: str = ""
    image: np.ndarray | None = None
    gold_image: np.ndarray | None = None
    perceived: tuple[str, ...] = ()
    gold_objects: tuple[str, ...] = ()
    constraints_english: tuple[str, ...] = ()
    constraints_asp: tuple[str, ...] = ()
    question: str = ""
    query: str = ""
    query_source: str = ""
    gold_query: str = ""
    answer: tuple[str, ...] | None = None
    gold: tuple[str, ...] | None = None
    exact: bool | None = None
    jaccard: float | None = None
    explanation: str = ""
    notes: tuple[str, ...] = field(default_factory=tuple)
    error: str | None = None

    @property
    def answer_text(self) -> str:
        """``{medium, small}`` (``""`` before an answer)."""
        return "" if self.answer is None else "{" + ", ".join(self.answer) + "}"

    @property
    def score_text(self) -> str:
        """``gold {medium, small}: exact 1, Jaccard 1.00`` (or why there is no score)."""
        if self.answer is None:
            return ""
        if self.gold is None:
            return "no gold answer (an upload)"
        return (f"gold {{{', '.join(self.gold)}}}: exact {int(bool(self.exact))}, Jaccard {self.jaccard:.2f}"
                f" — {'correct' if self.exact else 'wrong'}")


def error_line(exc: BaseException) -> str:
    """The command line's one line for ``exc`` (``error: ...``); an unexpected exception is named, not raised."""
    if isinstance(exc, ClevrPocError):
        return f"error: {' '.join(str(exc).split())}"
    if isinstance(exc, ModuleNotFoundError):
        return (f"error: the Python module {exc.name!r} is not installed: perception and the BiLSTM parser need "
                "the [vision] extra, the llm query source the [llm] extra")
    if isinstance(exc, OSError):  # as the command line's run_guarded: "<file>: <reason>"
        reason = exc.strerror or type(exc).__name__
        return f"error: {' '.join((f'{exc.filename}: {reason}' if exc.filename else reason).split())}"
    return f"error: internal error ({type(exc).__name__}: {' '.join(str(exc).split())[:200]})"


class Models:
    """The shipped models, loaded on first use and kept (perception, BiLSTM parser, LLM parser, Reasoner).

    Args:
        models: the models folder (default: :func:`clevr_poc.model_folders.default_models_dir`).
        device: torch device of perception (``cpu`` by default: a page answers one image at a time).
        llm_backend: chat backend of the ``llm`` query source (default ``local``, the bundled SmolLM2).
    """

    def __init__(self, models: str | os.PathLike[str] | None = None, *, device: str = "cpu",
                 llm_backend: str = "local"):
        from clevr_poc.reasoning import Reasoner

        self.models, self.device, self.llm_backend = models, device, llm_backend
        self.reasoner = Reasoner()
        self._loaded: dict[str, Any] = {}

    def _load(self, name: str, build: Callable[[], Any]) -> Any:
        if name not in self._loaded:
            self._loaded[name] = build()
        return self._loaded[name]

    def folders(self, part: str) -> Path:
        from clevr_poc.model_folders import check_checkpoints

        settings = {"perception": {"scene_source": "perception", "parser": "given"},
                    "parser_bilstm": {"scene_source": "given", "parser": "bilstm"}}[part]
        return check_checkpoints(self.models, **settings,
                                 options={"perception": "--models DIR", "parser_bilstm": "--models DIR"})[part]

    def perception(self) -> Any:
        def build() -> Any:
            from clevr_poc.perception import Perception

            return Perception.from_pretrained(self.folders("perception"), device=self.device)
        return self._load("perception", build)

    def bilstm(self) -> Any:
        def build() -> Any:
            from clevr_poc.parsing.seq2seq import BiLSTMParser

            return BiLSTMParser.from_pretrained(self.folders("parser_bilstm"))
        return self._load("bilstm", build)

    def llm(self) -> Any:
        def build() -> Any:
            from clevr_poc.parsing.llm_parser import LLMParser

            return LLMParser(self.llm_backend)
        return self._load("llm", build)


def _query(models: Models, source: str, question: str, typed: str, gold: str | None) -> tuple[str, tuple[str, ...]]:
    """The query text of ``source`` and the notes about it (unknown words)."""
    if source == "gold":
        if not gold:
            raise FormatError("no gold query here (an upload): choose bilstm, llm or asp", field="query source")
        return gold, ()
    if source == "asp":
        if not typed.strip():
            raise FormatError("type an ASP query (missing(Q) :- ...) or choose another query source", field="query")
        return typed, ()
    if not question.strip():
        raise FormatError("empty question", field="question")
    if source == "bilstm":
        from clevr_poc.parsing.question_words import check_question_words

        parser = models.bilstm()
        words = check_question_words(parser.vocabulary, question, max_words=parser.config.max_question_words)
        return parser.parse(question), tuple(n for n in (words.describe(),) if n)
    if source == "llm":
        from clevr_poc.parsing.question_words import MAX_QUESTION_CHARS

        if len(question) > MAX_QUESTION_CHARS:
            raise FormatError(f"{len(question):,} characters is over the {MAX_QUESTION_CHARS:,} a question may "
                              "have", field="question")
        result = models.llm().parse(question)
        if result.asp_query is None:
            raise FormatError(f"the LLM parser gave no query: {result.error}", field="question")
        return result.asp_query, ()
    raise FormatError(f"unknown query source; expected one of {list(QUERY_SOURCES)}", field="query source",
                      value=source)


def _finish(view: CaseView, models: Models, environment: Any, scene: Any, question: str, typed: str,
            query_source: str, gold_query: str | None, gold: frozenset[str] | None) -> CaseView:
    """Parse, answer, explain and score, filling ``view`` step by step (an error keeps what came before)."""
    from clevr_poc.evaluation.metrics import jaccard_index

    try:
        query, notes = _query(models, query_source, question, typed, gold_query)
        view = replace(view, query=query, notes=view.notes + notes)
        answer = models.reasoner.explain(environment, scene, query)
        values = tuple(sorted(answer.values))
        view = replace(view, query=answer.query.text if hasattr(answer.query, "text") else str(answer.query),
                       answer=values, explanation=answer.explanation.describe() if answer.explanation else
                       (answer.reason or ""))
        if gold is not None:
            view = replace(view, exact=frozenset(values) == gold, jaccard=jaccard_index(gold, values))
    except Exception as exc:  # the page shows every failure as one line; the server goes on
        view = replace(view, error=error_line(exc))
    return view


def run_example(catalog: Any, index: int, *, models: Models, scene_source: str = "perception",
                query_source: str = "bilstm", typed_query: str = "") -> CaseView:
    """Answer example ``index`` of ``catalog`` from ``scene_source`` and ``query_source`` (module doc)."""
    from clevr_poc.explorer.drawing import GOLD_RGB, draw_scene, scene_lines

    view = CaseView(query_source=query_source)
    try:
        if scene_source not in SCENE_SOURCES:
            raise FormatError(f"unknown scene source; expected one of {list(SCENE_SOURCES)}", field="scene source",
                              value=scene_source)
        example = catalog.example(index)
        question, environment = example.question, example.environment
        view = replace(view, title=f"{question.split} #{question.image_index} (environment {environment.id})",
                       question=question.text, gold_query=question.asp_query,
                       gold=tuple(sorted(question.answer)) if question.answer is not None else None,
                       gold_objects=tuple(scene_lines(example.partial_scene)),
                       constraints_english=tuple(c.describe() for c in environment.constraints),
                       constraints_asp=tuple("\n".join(c.asp_rules()) for c in environment.constraints))
        pixels = None
        if example.image_path is not None:
            from clevr_poc.pipeline_inputs import as_image

            pixels = as_image(example.image_path)
            view = replace(view, image=pixels, gold_image=draw_scene(pixels, example.partial_scene, GOLD_RGB))
        scene = example.partial_scene
        if scene_source == "perception":
            if pixels is None:
                raise FormatError("no rendered image for this example (render the dataset, or choose scene source "
                                  "gold)", field="image", value=question.image_filename)
            scene = _perceive(models, pixels, environment, example.partial_scene)
            view = replace(view, image=draw_scene(pixels, scene), perceived=tuple(scene_lines(scene)))
        else:
            view = replace(view, perceived=view.gold_objects)
    except Exception as exc:
        return replace(view, error=error_line(exc))
    return _finish(view, models, environment, scene, question.text, typed_query, query_source, question.asp_query,
                   question.answer)


def _perceive(models: Models, pixels: np.ndarray, environment: Any, scene_for_camera: Any = None) -> Any:
    """The partial scene perceived in ``pixels``, decoded within ``environment`` (the scene's own camera
    when it has one, else the official CLEVR-POC camera)."""
    from clevr_poc.pipeline import Pipeline

    pipeline = Pipeline(models.perception(), None, reasoner=models.reasoner)
    return pipeline.perceive(pixels, scene_for_camera, environment)


def run_upload(image: str | os.PathLike[str] | None, environment_file: str | os.PathLike[str] | None,
               question: str, *, models: Models, query_source: str = "bilstm", typed_query: str = "") -> CaseView:
    """Answer ``question`` (or ``typed_query`` with query source ``asp``) about an uploaded image in the
    environment of an uploaded ``.lp`` file (module doc)."""
    from clevr_poc.explorer.drawing import draw_scene, scene_lines

    view = CaseView(title="upload", question=question or "", query_source=query_source)
    try:
        if environment_file is None:
            raise FormatError("upload the environment's .lp file", field="environment")
        if image is None:
            raise FormatError("upload the image of the partial scene", field="image")
        from clevr_poc.environments.environment import Environment
        from clevr_poc.pipeline_inputs import as_image

        environment = Environment.from_lp(environment_file)
        view = replace(view, constraints_english=tuple(c.describe() for c in environment.constraints),
                       constraints_asp=tuple("\n".join(c.asp_rules()) for c in environment.constraints))
        pixels = as_image(image)
        view = replace(view, image=pixels)
        scene = _perceive(models, pixels, environment)
        view = replace(view, image=draw_scene(pixels, scene), perceived=tuple(scene_lines(scene)))
    except Exception as exc:
        return replace(view, error=error_line(exc))
    return _finish(view, models, environment, scene, question or "", typed_query, query_source, None, None)
