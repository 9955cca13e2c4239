"""NS-VQA for CLEVR-POC (paper §4.1.2, Fig. 4): perception -> scene graph, parser -> ASP, clingo -> answer.

The model maps the image to a symbolic partial scene and the question to an ASP query, then answers with
the :class:`~clevr_poc.reasoning.Reasoner` (the solver used to label the data). Each half is selectable:

- scene source: ``"gold"`` (the example's gold partial scene: the paper's setting, "assuming 100%
  accuracy in image perception", §4.3 RQ2) or a callable ``perception(image_path) -> Scene`` (a
  trained detector + attribute network);
- query source: ``"gold"`` (the question's gold ``asp_query``) or a callable
  ``parser(question_text) -> str`` (BiLSTM seq2seq, an LLM parser as in §4.1.3, ...).

With both gold, the model reproduces the labelling pipeline and must score exactly 1.0 (a self-check of
the data and the reasoner).

:class:`ParserSource` adapts the project's parsers (:class:`~clevr_poc.parsing.BiLSTMParser`,
:class:`~clevr_poc.parsing.llm_parser.LLMParser`) as query sources that parse a whole batch at once
(:meth:`NSVQA.predict_batch`) and keep the LLM parser's failure reason.

Failures give a None prediction (a *parse failure* for the evaluator), with the reason recorded in
:attr:`Prediction.error`: the parser returned None/an empty string or raised a ClevrPocError (other than
an LLM backend error such as a refused connection, which propagates: a broken server must stop the
run, not score zeros), the
query is outside the query language (:class:`~clevr_poc.errors.UnsafeProgramError`), perception
returned None or raised a ClevrPocError, the scene has more objects than the environment allows, or the
solver timed out. An unsatisfiable program is *not* a failure: it predicts the empty set (scored wrong
against a non-empty gold answer).
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

from clevr_poc.errors import ClevrPocError, FormatError
from clevr_poc.evaluation.report import Prediction
from clevr_poc.reasoning import Reasoner
from clevr_poc.scene import Scene

#: The gold source, for both ``scene`` and ``query``.
GOLD = "gold"

Perception = Callable[[Any], Scene | None]
QuestionParser = Callable[[str], str | None]


class NSVQA:
    """NS-VQA with an ASP solver (paper §4.1.2).

    Args:
        scene: ``"gold"`` or ``perception(image_path) -> Scene | None``.
        query: ``"gold"`` or ``parser(question_text) -> str | None`` (an ASP rule
            ``missing(Q) :- ...``; ``query(Q)``/``unknown(Q)`` heads are accepted).
        reasoner: the :class:`Reasoner` to use (default: a new one, compiled mode).
        name: model name in reports (default ``"NS-VQA (<scene>, <query>)"``).

    Raises:
        ValueError: a source is neither ``"gold"`` nor callable.
    """

    def __init__(self, scene: str | Perception = GOLD, query: str | QuestionParser = GOLD, *,
                 reasoner: Reasoner | None = None, name: str | None = None) -> None:
        for label, source in (("scene", scene), ("query", query)):
            if source != GOLD and not callable(source):
                raise ValueError(f"{label} source must be {GOLD!r} or a callable, got {source!r}")
        self.scene_source = scene
        self.query_source = query
        self.reasoner = reasoner or Reasoner()
        self.name = name or f"NS-VQA ({_source_name(scene, 'perception')}, {_source_name(query, 'parser')})"

    def __repr__(self) -> str:
        return f"NSVQA(name={self.name!r})"

    # ------------------------------------------------------------------ model protocol
    def predict(self, example: Any) -> frozenset[str] | None:
        """The predicted answer set, or None when the pipeline failed (see the module docstring)."""
        return self.predict_detailed(example).values

    def predict_detailed(self, example: Any) -> Prediction:
        """:meth:`predict` with the failure reason and the ASP query used (``raw``)."""
        return self._answer(example, self.query_of(example))

    def predict_batch(self, examples: Sequence[Any]) -> list[Prediction]:
        """:meth:`predict_detailed` of many examples; a query source with ``parse_many`` (a
        :class:`ParserSource`) parses all their questions in one call (one batched BiLSTM decode)."""
        many = getattr(self.query_source, "parse_many", None)
        if self.query_source == GOLD or many is None:
            return [self.predict_detailed(e) for e in examples]
        try:
            parsed = many([e.question.text for e in examples])
        except ClevrPocError as exc:  # one bad question: parse them one by one to find it
            _reraise_backend_error(exc)
            return [self.predict_detailed(e) for e in examples]
        if len(parsed) != len(examples):
            raise FormatError(f"parse_many returned {len(parsed)} results for {len(examples)} questions",
                              field="parse_many", value=len(parsed))
        return [self._answer(e, _checked_query(q)) for e, q in zip(examples, parsed)]

    def _answer(self, example: Any, query: str | Prediction) -> Prediction:
        if isinstance(query, Prediction):
            return query
        scene = self.scene_of(example)
        if isinstance(scene, Prediction):
            return Prediction(None, scene.error, query)
        from clevr_poc.pipeline import reasoned_prediction

        return reasoned_prediction(self.reasoner, example.environment, scene, query)

    # ------------------------------------------------------------------ the two perceptions
    def query_of(self, example: Any) -> str | Prediction:
        """The ASP query for ``example`` (a failed :class:`Prediction` when the parser fails)."""
        if self.query_source == GOLD:
            return example.question.asp_query
        try:
            query = self.query_source(example.question.text)
        except ClevrPocError as exc:
            _reraise_backend_error(exc)
            return Prediction(None, f"question parser failed: {_short(exc)}")
        return _checked_query(query)

    def scene_of(self, example: Any) -> Scene | Prediction:
        """The partial scene for ``example`` (a failed :class:`Prediction` when perception fails)."""
        if self.scene_source == GOLD:
            return example.partial_scene
        try:
            if getattr(self.scene_source, "takes_example", False):
                scene = self.scene_source(example)
            else:
                scene = self.scene_source(example.image_path)
        except ClevrPocError as exc:
            return Prediction(None, f"perception failed: {_short(exc)}")
        if not isinstance(scene, Scene):
            return Prediction(None, "perception produced no scene")
        return scene


class PerceptionSource:
    """Scene source backed by :class:`clevr_poc.perception.Perception`: the example's rendered partial
    image, its camera and, with ``constraint_aware=True`` (default), the example's environment for
    constraint-aware decoding.

    The camera follows ``camera_source`` (:mod:`clevr_poc.perception.cameras`): ``auto`` (default) is the
    one our renderer stores in the scene JSON (``"camera"``) when there is one, else the official
    CLEVR-POC camera (the release's scene files carry none); ``from-scene``, ``official`` or ``ours``
    force a choice.

    Args:
        perception: a loaded model (``Perception.from_pretrained(path)``) or a checkpoint path.
        constraint_aware: decode with the environment's constraints (paper §5).
        camera_source: see above.
        device: torch device when ``perception`` is a path (``"auto"``: CUDA when present, else CPU).

    Raises:
        FormatError: an unknown camera source.
        DeviceError: a device this machine does not have.
    """

    takes_example = True

    def __init__(self, perception: Any, *, constraint_aware: bool = True, camera_source: str = "auto",
                 device: Any = "auto") -> None:
        from clevr_poc.perception.cameras import check_camera_source

        self.camera_source = check_camera_source(camera_source)
        if isinstance(perception, (str, bytes)) or hasattr(perception, "__fspath__"):
            from clevr_poc.perception import Perception

            perception = Perception.from_pretrained(perception, device=device)
        self.perception = perception
        self.constraint_aware = constraint_aware
        self.name = "perception" + (" + constraints" if constraint_aware else "")

    def __call__(self, example: Any) -> Scene:
        from clevr_poc.perception.cameras import camera_spec

        if example.image_path is None:
            raise FormatError("the example has no rendered image (run python -m clevr_poc render)",
                              field="image_path")
        camera = camera_spec(example.partial_scene, self.camera_source,
                             source=getattr(example, "scene_path", None) or example.image_path)
        environment = example.environment if self.constraint_aware else None
        return self.perception(example.image_path, camera, environment)


class ParserFailed(ClevrPocError):
    """A question parser produced no ASP query (e.g. every LLM reply failed the checks)."""


class ParserSource:
    """Query source for :class:`NSVQA` backed by a question parser.

    Args:
        parser: a :class:`~clevr_poc.parsing.BiLSTMParser` (``parse_batch(texts) -> list[str]``), a
            :class:`~clevr_poc.parsing.llm_parser.LLMParser` (``parse_batch(texts) ->
            list[ParseResult]``; a result without ``asp_query`` is a failure with the parser's reason),
            or any object with ``parse_batch(texts)`` or ``parse(text)``, or a callable ``text -> str | None``.
        name: the source's name in model names (default: ``"BiLSTM"``, ``"LLM <backend name>"`` or the
            parser's class name).

    Calling it parses one question (raises :class:`ParserFailed`); :meth:`parse_many` parses a batch
    and returns, per question, the query text or a :class:`ParserFailed`.
    """

    def __init__(self, parser: Any, *, name: str | None = None) -> None:
        if not any(callable(c) for c in (parser, getattr(parser, "parse", None), getattr(parser, "parse_batch", None))):
            raise ValueError(f"parser must have parse_batch(texts) or parse(text), or be callable, got "
                             f"{type(parser).__name__}")
        self.parser = parser
        kind = type(parser).__name__
        backend = getattr(getattr(parser, "backend", None), "name", None)
        default = {"BiLSTMParser": "BiLSTM", "LLMParser": f"LLM {backend or ''}".strip()}.get(kind, kind)
        self.name = name or getattr(parser, "name", None) or default

    def __repr__(self) -> str:
        return f"ParserSource(name={self.name!r})"

    def __call__(self, text: str) -> str:
        result = self.parse_many([text])[0]
        if isinstance(result, ParserFailed):
            raise result
        return result

    def parse_many(self, texts: Sequence[str]) -> list[str | ParserFailed]:
        """The query of each question, or a :class:`ParserFailed` naming why there is none.

        Raises:
            LLMBackendError: the LLM backend failed (not a parse failure).
        """
        batch = getattr(self.parser, "parse_batch", None)
        if batch is not None:
            results = list(batch(list(texts)))
        else:
            parse = getattr(self.parser, "parse", None) or self.parser
            results = [parse(text) for text in texts]
        out: list[str | ParserFailed] = []
        for result in results:
            if hasattr(result, "asp_query") and not isinstance(result, str):  # LLMParser's ParseResult
                if result.asp_query is None:
                    out.append(ParserFailed(f"no valid ASP query: {result.error or 'no reply'}"))
                    continue
                result = result.asp_query
            out.append(result if isinstance(result, str) and result.strip()
                       else ParserFailed("the parser returned no text"))
        return out


def _checked_query(query: Any) -> str | Prediction:
    if isinstance(query, ClevrPocError):
        return Prediction(None, f"question parser failed: {_short(query)}")
    if query is None or not isinstance(query, str) or not query.strip():
        return Prediction(None, "question parser produced no ASP query", query if isinstance(query, str) else None)
    return query


def _reraise_backend_error(exc: ClevrPocError) -> None:
    """Re-raise an LLM backend failure (connection, HTTP): it is not the parser's answer."""
    try:
        from clevr_poc.llm.base import LLMBackendError, PromptTooLongError
    except ImportError:  # pragma: no cover - the llm package is part of clevr_poc
        return
    if isinstance(exc, LLMBackendError) and not isinstance(exc, PromptTooLongError):
        raise exc


def _source_name(source: Any, kind: str) -> str:
    if source == GOLD:
        return f"gold {'scene' if kind == 'perception' else 'ASP'}"
    return getattr(source, "name", None) or getattr(source, "__name__", None) or kind


def _short(exc: BaseException, limit: int = 160) -> str:
    text = str(exc).replace("\n", " ")
    return text if len(text) <= limit else text[: limit - 3] + "..."
