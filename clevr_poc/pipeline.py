"""The end-to-end model: image + question + environment -> answer set with an explanation.

NS-VQA with an ASP solver (paper §4.1.2, Fig. 4), answering from pixels::

    from clevr_poc import Pipeline

    pipeline = Pipeline.from_pretrained()                  # models/perception + models/parser_bilstm
    answer = pipeline.answer("CLEVR_test_000003.png", "What is the shape of the other small thing ...?",
                             "environments/3.lp", camera="incomplete/scenes/test/CLEVR_000003.json")
    answer.values                        # frozenset({'cube', 'sphere'})
    answer.query                         # the ASP query the parser wrote and the Reasoner ran
    answer.scene_facts                   # the perceived partial scene as ASP facts
    print(answer.explanation.describe()) # which constraints eliminated which values

Three parts, each replaceable:

1. **Perception** (``scene_source="perception"``): :class:`clevr_poc.perception.Perception` turns the
   rendered image (any size: 320 x 240, the official 320 x 320, ...) into a partial scene. It needs the
   camera the image was taken with: the scene JSON written by ``python -m clevr_poc render`` carries it
   under ``"camera"``; images without one (the official release's) get the official CLEVR-POC camera
   (``camera_source="auto"``, the default; ``"from-scene"``, ``"official"``, ``"ours"`` force a choice).
   The networks run on ``device`` (``"auto"``: CUDA when present, else the CPU). By default the perceived
   scene is decoded *constraint-aware* (the most probable scene consistent with the environment, paper
   §5), so the Reasoner never sees a scene the environment forbids. With ``scene_source="given"`` the
   partial scene is passed in (``scene=``): the paper's setting, "assuming 100% accuracy in image
   perception" (§4.3, RQ2).
2. **Question parser** (``parser=``): ``"bilstm"`` (the NS-VQA seq2seq parser,
   :class:`clevr_poc.parsing.BiLSTMParser`), ``"llm"`` (few-shot LLM parser, App. C.2,
   :class:`clevr_poc.parsing.llm_parser.LLMParser`) or ``"given"`` (the question's own gold
   ``asp_query``, or ``query=``).
3. **Reasoner** (:class:`clevr_poc.reasoning.Reasoner`): every value consistent with environment + scene
   + query (brave consequences), and with ``explain=True`` (default) an
   :class:`~clevr_poc.answer.Explanation` of every kept and eliminated value.

The shipped checkpoints live in the repository's ``models/`` folder (``models/perception/perception.pt``,
``models/parser_bilstm/{config.json,vocab.json,weights.pt}``); they are not part of the wheel. A pipeline
with ``scene_source="given"`` and ``parser="given"`` needs neither torch nor a checkpoint.

A pipeline is also the NS-VQA evaluator model (``predict`` / ``predict_batch`` / ``predict_detailed``), so
``clevr_poc.evaluation.evaluate(pipeline, load_dataset(DIR, "test"))`` scores it (paper §4.2), and
``python -m clevr_poc evaluate --model ns-vqa`` runs it. :meth:`Pipeline.gold` is the paper's setting: the
example's gold partial scene with the gold ASP query (a self-check: it must score exactly 1.0) or a
parser's query. On a dataset example perception gets the example's image path, its camera
(:func:`~clevr_poc.perception.cameras.camera_spec`: a Camera or a preset name) and its environment
(with constraint-aware decoding); a parser's questions are parsed in one batch (:meth:`Pipeline.parse_many`).

A failed example is a None prediction (a *parse failure* for the evaluator) with the reason in
:attr:`~clevr_poc.evaluation.Prediction.error`: the parser produced no query or raised a ClevrPocError
(other than an LLM backend error such as a refused connection, which propagates: a broken server must stop
the run, not score zeros), the query is outside the query language
(:class:`~clevr_poc.errors.UnsafeProgramError`), perception returned no scene or raised a ClevrPocError, the
scene has more objects than the environment allows, or the solver timed out. An unsatisfiable program is
*not* a failure: it predicts the empty set (scored wrong against a non-empty gold answer).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping, Sequence

from clevr_poc.answer import Answer
from clevr_poc.answer_presupposition import (DEFAULT_PRESUPPOSITION_K, can_search, check_presupposition_k,
                                             scenes_to_search, searched_answer)
from clevr_poc.dataset_reader import Example
from clevr_poc.environments.environment import Environment
from clevr_poc.errors import ClevrPocError, FormatError
from clevr_poc.model_folders import (  # noqa: F401  (public names of clevr_poc.pipeline)
    MODELS_ENV, PARSER_DIR, PARSERS, PERCEPTION_DIR, SCENE_SOURCES, CheckpointNotFoundError, PipelineError,
    _require, check_checkpoints, default_models_dir,
)
from clevr_poc.perception.cameras import CameraSource, camera_argument as as_camera
from clevr_poc.pipeline_inputs import (  # noqa: F401
    CameraInput, EnvironmentInput, ImageInput, PipelineInput, QuestionInput, SceneInput, as_environment, as_image,
    as_scene,
)
from clevr_poc.parsing.query_parser import FunctionParser, QueryParser
from clevr_poc.progress import progress_bar
from clevr_poc.question import Question
from clevr_poc.reasoning import Reasoner
from clevr_poc.scene import Scene
from clevr_poc.scene_sources import GoldScenes, PerceivedScenes, PerceptionFunction, SceneSource

if TYPE_CHECKING:
    from clevr_poc.evaluation.report import Prediction
    from clevr_poc.llm.base import ChatBackend


class QuestionParseError(PipelineError):
    """The question parser produced no ASP query (an LLM reply without a valid rule, an empty parse)."""


# ====================================================================== the pipeline
class Pipeline:
    """Perception + question parser + Reasoner (paper §4.1.2), see the module docstring.

    Args:
        perception: ``perception(image, camera, environment=None) -> Scene`` (e.g.
            :class:`clevr_poc.perception.Perception`), or None for ``scene_source="given"``. :meth:`perceive`
            passes a uint8 (H, W, 3) array and the camera fitted to it; :meth:`predict_batch` the example's
            image path and camera (a Camera or a preset name, which Perception fits itself).
        parser: a :class:`~clevr_poc.parsing.QueryParser` (:class:`~clevr_poc.parsing.BiLSTMParser`,
            :class:`~clevr_poc.parsing.llm_parser.LLMParser`: ``parse_queries(questions)`` gives a
            :class:`~clevr_poc.parsing.ParseResult` per question; one without ``asp_query`` is a failure with
            the parser's reason), or a function ``question -> str | None`` (wrapped in a
            :class:`~clevr_poc.parsing.FunctionParser`); None for ``parser="given"`` (the question's gold
            ``asp_query``).
        reasoner: the :class:`Reasoner` (default: a new one, compiled mode, 10 s per solve).
        constraint_decoding: decode the perceived scene within the environment's constraints (paper §5;
            default True) rather than by argmax.
        name: model name in evaluation reports (default ``"NS-VQA (<scene source> scene, <parser_name> ASP)"``).
        parser_name: the parser's name in ``name`` (default: the parser's ``name``, ``"given"`` without one).
        camera_source: the camera of images whose scene has none or that come without one (module doc;
            ``"auto"``: the scene's own, else the official camera).
        scenes: where :meth:`predict_batch` gets each example's partial scene (a
            :class:`~clevr_poc.scene_sources.SceneSource`); default: :class:`~clevr_poc.scene_sources.GoldScenes`
            without perception, else :class:`~clevr_poc.scene_sources.PerceivedScenes` of ``perception``.
        presupposition_k: when the MAP scene leaves the question unanswered, answer with the most probable
            of the k best consistent scenes that answers (:mod:`clevr_poc.answer_presupposition`; 16; 0: off).

    Raises:
        PipelineError: a parser or perception that cannot be called.
        FormatError: an unknown camera source.
    """

    def __init__(self, perception: PerceptionFunction | None = None,
                 parser: QueryParser | Callable[[str], str | None] | None = None, *,
                 reasoner: Reasoner | None = None, constraint_decoding: bool = True, name: str | None = None,
                 parser_name: str | None = None, camera_source: CameraSource | str = CameraSource.AUTO,
                 scenes: SceneSource | None = None, presupposition_k: int = DEFAULT_PRESUPPOSITION_K) -> None:
        from clevr_poc.perception.cameras import check_camera_source

        self.camera_source = check_camera_source(camera_source)
        self.presupposition_k = check_presupposition_k(presupposition_k)
        self.parser: QueryParser | None = None if parser is None else as_query_parser(parser)
        if perception is not None and not callable(perception):
            raise PipelineError(f"perception must be callable, got {type(perception).__name__}")
        self.perception = perception
        self.reasoner = reasoner or Reasoner()
        self.constraint_decoding = bool(constraint_decoding)
        if scenes is None:
            scenes = GoldScenes() if perception is None else PerceivedScenes(
                perception, camera_source=self.camera_source, constraint_decoding=self.constraint_decoding)
        self.scenes: SceneSource = scenes
        self.parser_name = parser_name or ("given" if self.parser is None else self.parser.name)
        self.name = name or f"NS-VQA ({self.scene_source} scene, {self.parser_name} ASP)"

    def __repr__(self) -> str:
        return f"Pipeline(scene_source={self.scene_source!r}, parser={self.parser_name!r})"

    @property
    def scene_source(self) -> str:
        """``"perception"`` or ``"given"`` (the kind of :attr:`scenes`)."""
        return self.scenes.kind.value

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_pretrained(cls, path_or_name: str | os.PathLike[str] | None = None, *, scene_source: str = "perception",
                        parser: str = "bilstm", llm_backend: "ChatBackend | str | None" = None,
                        perception_path: str | os.PathLike[str] | None = None,
                        parser_path: str | os.PathLike[str] | None = None, constraint_decoding: bool = True,
                        reasoner: Reasoner | None = None, name: str | None = None, device: str = "auto",
                        camera_source: CameraSource | str = CameraSource.AUTO,
                        presupposition_k: int = DEFAULT_PRESUPPOSITION_K) -> "Pipeline":
        """Load the shipped (or given) checkpoints.

        Args:
            path_or_name: a models folder holding ``perception/`` and ``parser_bilstm/``; None or
                ``"default"``: :func:`default_models_dir` (the shipped models).
            scene_source: ``"perception"`` (load the perception model) or ``"given"`` (scenes are passed to
                :meth:`answer`; no model, no torch).
            parser: ``"bilstm"`` (load the BiLSTM parser), ``"llm"`` (few-shot LLM parser through
                ``llm_backend``) or ``"given"`` (gold ASP queries; no model).
            llm_backend: for ``parser="llm"``: a :class:`~clevr_poc.llm.ChatBackend` or a spec string
                (``"local"`` = the bundled SmolLM2 GGUF model, ``"openai:MODEL@URL"``, ...); default
                ``"local"``.
            perception_path, parser_path: checkpoint folders overriding ``path_or_name``.
            constraint_decoding, reasoner, name, camera_source, presupposition_k: see :class:`Pipeline`.
            device: torch device of perception: ``"auto"`` (CUDA when present, else CPU), ``"cpu"``,
                ``"cuda"``, ...

        Raises:
            PipelineError: an unknown ``scene_source`` / ``parser``, or torch (``[vision]``) missing.
            CheckpointNotFoundError: a checkpoint folder or file is missing (naming it and how to get it).
            FormatError: a checkpoint is damaged, or an unknown camera source.
            DeviceError: ``device`` is not available here.
        """
        if llm_backend is not None and parser != "llm":
            raise PipelineError(f"llm_backend is only used with parser='llm' (got parser={parser!r})")
        folders = check_checkpoints(path_or_name, scene_source=scene_source, parser=parser,
                                    perception_path=perception_path, parser_path=parser_path)
        perception = None
        if PERCEPTION_DIR in folders:
            _require("torch", "vision", "perception")
            _require("torchvision", "vision", "perception")
            from clevr_poc.perception import Perception

            perception = Perception.from_pretrained(folders[PERCEPTION_DIR], device=device)

        question_parser: QueryParser | None = None
        if PARSER_DIR in folders:
            _require("torch", "vision", "the BiLSTM parser")
            from clevr_poc.parsing.seq2seq import BiLSTMParser

            question_parser = BiLSTMParser.from_pretrained(folders[PARSER_DIR])
        elif parser == "llm":
            from clevr_poc.parsing.llm_parser import LLMParser

            question_parser = LLMParser(llm_backend if llm_backend is not None else "local")
        label = "gold" if question_parser is None else question_parser.name
        return cls(perception, question_parser, reasoner=reasoner, constraint_decoding=constraint_decoding,
                   name=name, parser_name=label, camera_source=camera_source, presupposition_k=presupposition_k)

    @classmethod
    def gold(cls, parser: QueryParser | Callable[[str], str | None] | None = None, *, parser_name: str | None = None, reasoner: Reasoner | None = None,
             name: str | None = None) -> "Pipeline":
        """NS-VQA on the gold partial scene: the paper's setting, "assuming 100% accuracy in image
        perception" (§4.3, RQ2). No model, no torch.

        Args:
            parser: the question parser (see :class:`Pipeline`); None: the question's gold ``asp_query``
                (gold scene + gold ASP reproduces the labelling pipeline: a self-check, it must score 1.0).
            parser_name: the parser's name in ``name`` (default: the parser's ``name``).
            reasoner: see :class:`Pipeline`.
            name: model name in reports (default ``"NS-VQA (gold scene, gold ASP)"``, with a parser
                ``"NS-VQA (gold scene, <parser_name>)"``).

        Raises:
            PipelineError: a parser that cannot be called.
        """
        checked = None if parser is None else as_query_parser(parser)
        label = "gold" if checked is None else parser_name or checked.name
        default = f"NS-VQA (gold scene, {'gold ASP' if checked is None else label})"
        return cls(None, checked, reasoner=reasoner, name=name or default, parser_name=label)

    # ------------------------------------------------------------------ the steps
    def parse(self, question: QuestionInput) -> str:
        """The ASP query of ``question`` (text or :class:`Question`).

        With ``parser="given"`` the question must be a :class:`Question` with an ``asp_query``.

        Raises:
            FormatError: not a non-empty string or Question.
            QuestionParseError: the parser produced no query.
        """
        return self.parse_batch([question])[0]

    def parse_batch(self, questions: Sequence[QuestionInput]) -> list[str]:
        """:meth:`parse` of several questions, in one :meth:`parse_many` call (one batched BiLSTM decode).

        Raises:
            as :meth:`parse`; QuestionParseError names the first question without a query.
        """
        if self.parser is None:
            queries = []
            for i, q in enumerate(questions):
                if not isinstance(q, Question) or not q.asp_query:
                    raise FormatError("this pipeline has no question parser (parser='given'): pass query= or a "
                                      "Question that has an asp_query", field="question",
                                      value=q if isinstance(q, str) else type(q).__name__)
                queries.append(q.asp_query)
            return queries
        texts = [_question_text(q) for q in questions]
        queries = []
        for text, query in zip(texts, self.parse_many(texts)):
            if isinstance(query, QuestionParseError):
                raise QuestionParseError(f"the question parser produced no ASP query for {text!r}: {query}")
            queries.append(query)
        return queries

    def parse_many(self, texts: Sequence[str]) -> list[str | QuestionParseError]:
        """The query of each question text, or a :class:`QuestionParseError` naming why there is none
        (``"no valid ASP query: <the parser's reason>"``), in one ``parse_queries`` call (one batched BiLSTM
        decode).

        Raises:
            PipelineError: the pipeline has no question parser (``parser="given"``).
            FormatError: the parser returned another number of results than questions.
            ClevrPocError: what the parser raised (e.g. ``LLMBackendError``: the backend failed).
        """
        if self.parser is None:
            raise PipelineError("this pipeline has no question parser (parser='given')")
        texts = list(texts)
        results = self.parser.parse_queries(texts)
        if len(results) != len(texts):
            raise FormatError(f"the parser returned {len(results)} results for {len(texts)} questions",
                              field="parse_queries", value=len(results))
        return [result.asp_query if result.asp_query is not None and result.asp_query.strip()
                else QuestionParseError(f"no valid ASP query: {result.error or 'no reply'}") for result in results]

    def perceive(self, image: ImageInput, camera: CameraInput = None,
                 environment: EnvironmentInput | None = None) -> Scene:
        """The partial scene seen in ``image`` (constraint-aware in ``environment`` when the pipeline
        decodes with constraints and an environment is given). ``camera``: see :func:`as_camera` (None or a
        scene without one: the pipeline's camera source, by default the official camera); it is fitted to
        the image's size (a preset is built at that size, a given camera's intrinsics are scaled).

        Raises:
            PipelineError: the pipeline has no perception model (``scene_source="given"``).
            FormatError: bad image, camera or environment; a camera made for another aspect ratio.
        """
        if self.perception is None:
            raise PipelineError("this pipeline has no perception model (scene_source='given'): pass scene=")
        if image is None:
            raise FormatError("perception needs an image (a path, a PIL image or a uint8 (H, W, 3) array)",
                              field="image")
        from clevr_poc.perception.cameras import resolve_camera

        array = as_image(image)
        cam = resolve_camera(array.shape[1], array.shape[0], camera=as_camera(camera, self.camera_source))
        env = as_environment(environment) if environment is not None and self.constraint_decoding else None
        return self.perception(array, cam, environment=env)

    # ------------------------------------------------------------------ answering
    def answer(self, image: ImageInput | None = None, question: QuestionInput | None = None,
               environment: EnvironmentInput | None = None, *, scene: SceneInput | None = None,
               camera: CameraInput = None, query: str | None = None, explain: bool = True) -> Answer:
        """Answer one question about the hidden object of a partial scene.

        Args:
            image: the rendered partial scene: a path, a PIL image or a uint8 (H, W, 3) array (floats in
                [0, 1] accepted). Not needed when ``scene`` is given.
            question: English text, or a :class:`Question` (needed unless ``query`` is given).
            environment: the image's :class:`Environment` or the path of its ``.lp`` file.
            scene: the partial scene (a :class:`Scene`, its JSON or a scene JSON path): skips perception.
                Required with ``scene_source="given"``.
            camera: the camera of the render (a Camera, its JSON, a preset name, or the rendered scene JSON /
                path, whose ``"camera"`` is used); None: the pipeline's camera source (default: the official
                camera, that of the release's images).
            query: an ASP query ``missing(Q) :- ...``: skips the parser. Untrusted text is fine (sanitized).
            explain: attach an :class:`~clevr_poc.answer.Explanation` (witness per kept value, minimal
                set of constraints per eliminated value); costs a few extra solver calls.

        Returns:
            :class:`Answer`: ``values`` (the answer set), ``attribute``, ``satisfiable``, ``explanation``,
            ``query`` (the sanitized query that ran) and ``scene_facts`` (the scene used, as ASP facts).

        Raises:
            FormatError: a missing or malformed input (naming it).
            PipelineError: a missing part (no scene and no perception, ...).
            QuestionParseError: the parser produced no query.
            UnsafeProgramError: the query is outside the query language.
            SolverTimeoutError: a solver call ran over the reasoner's time limit.
        """
        env = as_environment(environment)
        checked_query = self._query(question, query)
        used_scene = self._scene(image, env, scene, camera)
        answer = self._reason(env, used_scene, checked_query, explain)
        if not answer.values and scene is None and self._searches(env):
            answer = searched_answer(self.reasoner, env, checked_query,
                                     lambda: scenes_to_search(self.perception, as_image(image), as_camera(
                                         camera, self.camera_source), env, self.presupposition_k),
                                     explain=explain) or answer
        return answer

    def answer_batch(self, items: Iterable[PipelineInput | Mapping[str, Any] | tuple[Any, ...] | Example], *,
                     explain: bool = False, progress: bool = False, workers: int = 1, executor: str = "local",
                     ray_address: str | None = None) -> list[Answer]:
        """:meth:`answer` for many questions, in order; the questions are parsed in one batch.

        Args:
            items: :class:`PipelineInput` objects, mappings with its keys (``image``, ``question``,
                ``environment``, ``scene``, ``camera``, ``query``), tuples ``(image, question, environment)``
                or dataset :class:`~clevr_poc.dataset_reader.Example` objects (see :meth:`PipelineInput.of`).
            explain: attach explanations (off by default: a few solver calls per question).
            progress: show a tqdm progress bar (one process only).
            workers, executor, ray_address: with ``workers`` > 1 or ``executor="ray"``, perception,
                decoding and reasoning run in worker processes, each holding a copy of the pipeline
                (:mod:`clevr_poc.pipeline_workers`); the same answers.

        Raises:
            as :meth:`answer`; the exception names the item (``exc.__notes__``: ``"in item <i>"``).
            ExecutorError: bad ``workers``/``executor``.
        """
        inputs = [self._input(item, i) for i, item in enumerate(items)]
        pending = [i for i, item in enumerate(inputs) if item.query is None]
        queries: dict[int, str] = {i: item.query for i, item in enumerate(inputs) if item.query is not None}
        if pending:
            try:
                for i, q in zip(pending, self.parse_batch([inputs[i].question for i in pending])):
                    queries[i] = q
            except ClevrPocError:
                for i in pending:  # find the item that failed
                    try:
                        queries[i] = self._query(inputs[i].question, None)
                    except ClevrPocError as exc:
                        exc.add_note(f"in item {i}")
                        raise
                raise
        if workers != 1 or executor != "local":
            from clevr_poc.pipeline_workers import answer_in_workers

            return answer_in_workers(self, inputs, queries, explain=explain, workers=workers, executor=executor,
                                     ray_address=ray_address)
        answers = []
        bar = progress_bar(len(inputs), enabled=progress, description=self.name, unit="q")
        try:
            for i, item in enumerate(inputs):
                try:
                    env = as_environment(item.environment)
                    used_scene = self._scene(item.image, env, item.scene, item.camera)
                    answers.append(self._reason(env, used_scene, queries[i], explain))
                except ClevrPocError as exc:
                    exc.add_note(f"in item {i}")
                    raise
                if bar is not None:
                    bar.update(1)
        finally:
            if bar is not None:
                bar.close()
        return answers

    # ------------------------------------------------------------------ evaluator model protocol
    def predict(self, example: Example) -> frozenset[str] | None:
        """The predicted answer set of a dataset example, or None when the pipeline failed (module doc)."""
        return self.predict_detailed(example).values

    def predict_detailed(self, example: Example) -> "Prediction":
        """:meth:`predict` with the failure reason and the ASP query that ran (``raw``), for
        :func:`clevr_poc.evaluation.evaluate`.

        Raises:
            LLMBackendError: the LLM parser's backend failed (a refused connection, ...).
        """
        return self.predict_batch([example])[0]

    def predict_batch(self, examples: Sequence[Example]) -> list["Prediction"]:
        """The :class:`~clevr_poc.evaluation.Prediction` of each dataset example (``question``,
        ``environment``, ``partial_scene``, ``image_path``); the questions are parsed in one batch. A failure
        of one example (parser, perception, solver) is its prediction's ``error`` (module doc), not an
        exception.

        Raises:
            LLMBackendError: the LLM parser's backend failed (a refused connection, ...).
        """
        from clevr_poc.evaluation.report import Prediction

        examples = list(examples)
        return [query if isinstance(query, Prediction) else self._predict_example(example, query)
                for example, query in zip(examples, self._example_queries(examples))]

    def _predict_example(self, example: Any, query: str) -> "Prediction":
        """The prediction of one example whose query is known (perception failures are its ``error``)."""
        from clevr_poc.evaluation.report import Prediction

        try:
            scene = self.scene_of(example)
        except ClevrPocError as exc:
            return Prediction(None, f"perception failed: {_short(exc)}", query)
        if scene is None:
            return Prediction(None, "perception produced no scene", query)
        prediction = reasoned_prediction(self.reasoner, example.environment, scene, query)
        if prediction.values == frozenset() and self._searches(example.environment):
            found = searched_answer(self.reasoner, example.environment, query, lambda: PerceivedScenes(
                self.perception, camera_source=self.camera_source).searched_scenes_of(example, self.presupposition_k))
            if found is not None:
                return Prediction(found.values, None, query)
        return prediction

    def scene_of(self, example: Example) -> Scene | None:
        """The partial scene the pipeline answers a dataset example with (:attr:`scenes`): its gold
        ``partial_scene`` (``scene_source="given"``), else ``perception(image_path, camera, environment)``
        (:class:`~clevr_poc.scene_sources.PerceivedScenes`). None when perception returned no Scene.

        Raises:
            FormatError: the example has no rendered image; ``camera_source="from-scene"`` and its scene has
                no camera.
            ClevrPocError: what perception raised.
        """
        return self.scenes.scene_of(example)

    def _example_queries(self, examples: Sequence[Example]) -> list["str | Prediction"]:
        """The query of each example (its gold ``asp_query`` without a parser), or a failed Prediction."""
        from clevr_poc.evaluation.report import Prediction

        if self.parser is None:
            return [example.question.asp_query for example in examples]
        texts = [example.question.text for example in examples]
        try:
            parsed: list[str | ClevrPocError] = list(self.parse_many(texts))
        except ClevrPocError as exc:  # one bad question: parse them one by one to find it
            _raise_backend_error(exc)
            parsed = [self._parse_one(text) for text in texts]
        return [query if isinstance(query, str) else Prediction(None, f"question parser failed: {_short(query)}")
                for query in parsed]

    def _parse_one(self, text: str) -> str | ClevrPocError:
        try:
            return self.parse_many([text])[0]
        except ClevrPocError as exc:
            _raise_backend_error(exc)
            return exc

    # ------------------------------------------------------------------ helpers
    def _input(self, item: PipelineInput | Mapping[str, Any] | tuple[Any, ...] | Example, index: int
               ) -> PipelineInput:
        try:
            return PipelineInput.of(item, scene_given=self.perception is None)
        except ClevrPocError as exc:
            exc.add_note(f"in item {index}")
            raise

    def _query(self, question: QuestionInput | None, query: str | None) -> str:
        if query is not None:
            if not isinstance(query, str) or not query.strip():
                raise FormatError("query must be a non-empty ASP rule text", field="query",
                                  value=type(query).__name__ if not isinstance(query, str) else query)
            return query
        if question is None:
            raise FormatError("no question: pass question= (text or Question) or query=", field="question")
        return self.parse(question)

    def _scene(self, image: ImageInput | None, environment: Environment, scene: SceneInput | None,
               camera: CameraInput) -> Scene:
        if scene is not None:
            return as_scene(scene)
        if self.perception is None:
            raise PipelineError("scene_source='given': pass the partial scene (scene=) or load a perception model "
                                "(Pipeline.from_pretrained(scene_source='perception'))")
        return self.perceive(image, camera, environment)

    def _searches(self, environment: Environment | None) -> bool:
        """Whether an empty answer on the perceived scene is searched past (``presupposition_k``)."""
        return (self.constraint_decoding and self.scene_source == "perception"
                and can_search(self.perception, environment, self.presupposition_k))

    def _reason(self, environment: Environment, scene: Scene, query: str, explain: bool) -> Answer:
        return (self.reasoner.explain if explain else self.reasoner.answer)(environment, scene, query)


def _question_text(question: QuestionInput) -> str:
    text = question.text if isinstance(question, Question) else question
    if not isinstance(text, str) or not text.strip():
        raise FormatError("a question is a non-empty string or a clevr_poc.Question", field="question",
                          value=text if isinstance(text, str) else type(text).__name__)
    return text


def as_query_parser(parser: QueryParser | Callable[[str], str | None]) -> QueryParser:
    """``parser`` as a :class:`~clevr_poc.parsing.QueryParser`: itself, or a function ``question -> str |
    None`` wrapped in a :class:`~clevr_poc.parsing.FunctionParser`.

    Raises:
        PipelineError: neither.
    """
    if isinstance(parser, QueryParser):
        return parser
    if callable(parser):
        return FunctionParser(parser)
    raise PipelineError("parser must be a QueryParser (name, parse_queries(questions)) or a function question -> "
                        f"query text, got {type(parser).__name__}")


def parser_label(parser: QueryParser | Callable[[str], str | None]) -> str:
    """A question parser's name in model names: ``"BiLSTM"``, ``"LLM <backend name>"``, a function's
    ``__name__`` (:attr:`QueryParser.name <clevr_poc.parsing.QueryParser.name>`)."""
    return as_query_parser(parser).name


def _raise_backend_error(exc: ClevrPocError) -> None:
    """Re-raise an LLM backend failure (connection, HTTP; not a prompt too long): it is not the parser's answer."""
    from clevr_poc.llm.base import LLMBackendError, PromptTooLongError

    if isinstance(exc, LLMBackendError) and not isinstance(exc, PromptTooLongError):
        raise exc


def reasoned_prediction(reasoner: Reasoner, environment: Environment, scene: Scene, query: str) -> "Prediction":
    """The :class:`~clevr_poc.evaluation.Prediction` of one NS-VQA question once its scene and query are
    known: the one error handling of every NS-VQA prediction (:meth:`Pipeline.predict_batch`,
    ``python -m clevr_poc demo``).

    ``raw`` is ``query``. A query outside the query language (:class:`UnsafeProgramError`), a solver
    time-out and a scene that does not fit the environment (:class:`FormatError`, e.g. more objects than
    it declares) are failed predictions with the reason (at most 160 characters); an unsatisfiable
    program predicts the empty set. Other errors propagate.
    """
    from clevr_poc.errors import SolverTimeoutError, UnsafeProgramError
    from clevr_poc.evaluation import Prediction

    try:
        answer = reasoner.answer(environment, scene, query)
    except UnsafeProgramError as exc:
        return Prediction(None, f"unsafe or invalid ASP query: {_short(exc)}", query)
    except SolverTimeoutError as exc:
        return Prediction(None, f"solver time-out: {_short(exc)}", query)
    except FormatError as exc:
        return Prediction(None, f"scene does not fit the environment: {_short(exc)}", query)
    return Prediction(answer.values, None, query)


def _short(exc: BaseException, limit: int = 160) -> str:
    text = str(exc).replace("\n", " ")
    return text if len(text) <= limit else text[: limit - 3] + "..."


__all__ = [
    "CheckpointNotFoundError", "MODELS_ENV", "PARSERS", "Pipeline", "PipelineError", "PipelineInput",
    "QuestionParseError", "SCENE_SOURCES", "as_camera", "as_query_parser", "as_environment", "as_image", "as_scene",
    "check_checkpoints", "default_models_dir", "parser_label", "reasoned_prediction",
]
