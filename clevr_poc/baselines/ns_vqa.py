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

Failures give a None prediction (a *parse failure* for the evaluator), with the reason recorded in
:attr:`Prediction.error`: the parser returned None/an empty string or raised a ClevrPocError, the
query is outside the query language (:class:`~clevr_poc.errors.UnsafeProgramError`), perception
returned None or raised a ClevrPocError, the scene has more objects than the environment allows, or the
solver timed out. An unsatisfiable program is *not* a failure: it predicts the empty set (scored wrong
against a non-empty gold answer).
"""

from __future__ import annotations

from typing import Any, Callable

from clevr_poc.errors import ClevrPocError, FormatError, SolverTimeoutError, UnsafeProgramError
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
        query = self.query_of(example)
        if isinstance(query, Prediction):
            return query
        scene = self.scene_of(example)
        if isinstance(scene, Prediction):
            return Prediction(None, scene.error, query)
        try:
            answer = self.reasoner.answer(example.environment, scene, query)
        except UnsafeProgramError as exc:
            return Prediction(None, f"unsafe or invalid ASP query: {_short(exc)}", query)
        except SolverTimeoutError as exc:
            return Prediction(None, f"solver time-out: {_short(exc)}", query)
        except FormatError as exc:
            return Prediction(None, f"scene does not fit the environment: {_short(exc)}", query)
        return Prediction(answer.values, None, query)

    # ------------------------------------------------------------------ the two perceptions
    def query_of(self, example: Any) -> str | Prediction:
        """The ASP query for ``example`` (a failed :class:`Prediction` when the parser fails)."""
        if self.query_source == GOLD:
            return example.question.asp_query
        try:
            query = self.query_source(example.question.text)
        except ClevrPocError as exc:
            return Prediction(None, f"question parser failed: {_short(exc)}")
        if query is None or not isinstance(query, str) or not query.strip():
            return Prediction(None, "question parser produced no ASP query",
                              query if isinstance(query, str) else None)
        return query

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
    image, the camera stored in its scene JSON by the renderer (``extra["camera"]``) and, with
    ``constraint_aware=True`` (default), the example's environment for constraint-aware decoding.

    Args:
        perception: a loaded model (``Perception.from_pretrained(path)``) or a checkpoint path.
        constraint_aware: decode with the environment's constraints (paper §5).
    """

    takes_example = True

    def __init__(self, perception: Any, *, constraint_aware: bool = True) -> None:
        if isinstance(perception, (str, bytes)) or hasattr(perception, "__fspath__"):
            from clevr_poc.perception import Perception

            perception = Perception.from_pretrained(perception)
        self.perception = perception
        self.constraint_aware = constraint_aware
        self.name = "perception" + (" + constraints" if constraint_aware else "")

    def __call__(self, example: Any) -> Scene:
        from clevr_poc.errors import FormatError

        if example.image_path is None:
            raise FormatError("the example has no rendered image (run python -m clevr_poc render)",
                              field="image_path")
        camera = example.partial_scene.extra.get("camera")
        if camera is None:
            raise FormatError("the scene JSON has no camera (render the dataset with python -m clevr_poc render)",
                              source=example.image_path, field="camera")
        environment = example.environment if self.constraint_aware else None
        return self.perception(example.image_path, camera, environment)


def _source_name(source: Any, kind: str) -> str:
    if source == GOLD:
        return f"gold {'scene' if kind == 'perception' else 'ASP'}"
    return getattr(source, "name", None) or getattr(source, "__name__", None) or kind


def _short(exc: BaseException, limit: int = 160) -> str:
    text = str(exc).replace("\n", " ")
    return text if len(text) <= limit else text[: limit - 3] + "..."
