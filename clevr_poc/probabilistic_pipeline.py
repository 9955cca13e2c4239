"""``ProbabilisticPipeline``: the end-to-end model answering with probabilities (issue #24).

A :class:`~clevr_poc.pipeline.Pipeline` whose perception hands the Reasoner the ``k`` most probable scenes
consistent with the environment (:meth:`clevr_poc.perception.Perception.scene_distribution`) instead of the
MAP scene alone; the answer is a :class:`~clevr_poc.probabilistic_answer.ProbabilisticAnswer` (``P(value in
answer set)`` per value, the probability of each answer set, the set an
:class:`~clevr_poc.probabilistic_answer.AnswerRule` picks and its confidence)::

    from clevr_poc.probabilistic_pipeline import ProbabilisticPipeline

    pipeline = ProbabilisticPipeline.from_pretrained(rule="expected-jaccard")
    result = pipeline.answer_probabilistic("CLEVR_test_000003.png", "What is the shape of ...?", "environments/3.lp")
    result.values, result.confidence, result.probability("cube")
    print(result.describe())           # with explain=True: the perceived facts the answer hangs on

As an evaluator model (``predict_batch``) each prediction carries its confidence and marginals, which
:mod:`clevr_poc.evaluation.calibration` scores (``python -m clevr_poc evaluate --answer-rule RULE``). With a
given scene (``scene_source="given"``) the distribution is that one scene with probability 1.

The question's presupposition (every CLEVR-POC question has an answer) conditions the distribution
(:func:`~clevr_poc.reasoning.answer_distribution.answer_distribution`); when no scene of it answers, the
k most probable scenes that may also hold the weak detections (scores in [``weak_candidate_threshold``,
``candidate_threshold``)) are tried, as the crisp pipeline does (:meth:`Perception.searched_scenes`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

from clevr_poc.errors import ClevrPocError, FormatError, SolverTimeoutError, UnsafeProgramError
from clevr_poc.perception.ranked_decoding import DEFAULT_K, DEFAULT_MAX_MODELS, DEFAULT_MIN_RATIO
from clevr_poc.pipeline import Pipeline, PipelineError, as_camera, as_environment, as_image, as_scene
from clevr_poc.probabilistic_answer import AnswerRule, ProbabilisticAnswer
from clevr_poc.scene_distribution import SceneDistribution
from clevr_poc.scene_sources import PerceivedScenes

if TYPE_CHECKING:
    from clevr_poc.evaluation.report import Prediction


@dataclass(frozen=True)
class DistributionSettings:
    """How many scenes and which rule.

    Attributes:
        k: most scenes answered (>= 1; 1 is the crisp MAP pipeline with probability-1 answers).
        rule: the :class:`AnswerRule` that picks the answer set.
        min_ratio: scenes less than ``min_ratio`` times as probable as the MAP scene are left out, in (0, 1].
        max_models: most scenes one enumeration collects (>= k).
    """

    k: int = DEFAULT_K
    rule: AnswerRule = AnswerRule.MAP
    min_ratio: float = DEFAULT_MIN_RATIO
    max_models: int = DEFAULT_MAX_MODELS

    def __post_init__(self) -> None:
        object.__setattr__(self, "rule", AnswerRule(self.rule))
        if self.k < 1 or self.max_models < self.k or not 0.0 < self.min_ratio <= 1.0:
            raise FormatError("needs k >= 1, max_models >= k and min_ratio in (0, 1]", field="k/min_ratio/max_models",
                              value=(self.k, self.min_ratio, self.max_models))


class ProbabilisticPipeline(Pipeline):
    """A :class:`Pipeline` answering over the k most probable consistent scenes (module doc).

    Args:
        settings: :class:`DistributionSettings` (default: k = 16, the MAP rule).
        *args, **kwargs: as :class:`Pipeline`.
    """

    def __init__(self, *args: Any, settings: DistributionSettings | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.settings = settings or DistributionSettings()
        if "name" not in kwargs or kwargs["name"] is None:
            self.name = f"{self.name} [{self.settings.rule.value}, k={self.settings.k}]"

    @classmethod
    def from_pipeline(cls, pipeline: Pipeline, settings: DistributionSettings | None = None) -> "ProbabilisticPipeline":
        """The same perception, parser, reasoner and camera source as ``pipeline``, answering with probabilities."""
        settings = settings or DistributionSettings()
        return cls(pipeline.perception, pipeline.parser, reasoner=pipeline.reasoner,
                   constraint_decoding=pipeline.constraint_decoding, parser_name=pipeline.parser_name,
                   camera_source=pipeline.camera_source, settings=settings,
                   name=f"{pipeline.name} [{settings.rule.value}, k={settings.k}]")

    @classmethod
    def from_pretrained(cls, path_or_name: Any = None, *, k: int = DEFAULT_K, rule: AnswerRule | str = AnswerRule.MAP,
                        min_ratio: float = DEFAULT_MIN_RATIO, **kwargs: Any) -> "ProbabilisticPipeline":
        """:meth:`Pipeline.from_pretrained` answering with probabilities (``k``, ``rule``, ``min_ratio``:
        :class:`DistributionSettings`)."""
        return cls.from_pipeline(Pipeline.from_pretrained(path_or_name, **kwargs),
                                 DistributionSettings(k, AnswerRule(rule), min_ratio))

    # ------------------------------------------------------------------ scenes
    def _distribution(self, image: Any, camera: Any, environment: Any) -> SceneDistribution:
        perception = self.perception
        if perception is None:
            raise PipelineError("this pipeline has no perception model (scene_source='given'): pass scene=")
        env = as_environment(environment) if environment is not None and self.constraint_decoding else None
        ranked = getattr(perception, "scene_distribution", None)
        if ranked is None or env is None:
            return SceneDistribution.certain(perception(image, camera, environment=env))
        s = self.settings
        return ranked(image, camera, env, k=s.k, min_ratio=s.min_ratio, max_models=s.max_models)

    def _weak_distribution(self, image: Any, camera: Any, environment: Any) -> SceneDistribution | None:
        """The presupposition's second stage, as :meth:`Perception.searched_scenes` has it for the crisp
        pipeline: the k most probable scenes of the candidates and the weak detections (score >=
        ``weak_candidate_threshold``); None when the perception has no such stage, the pipeline does not
        search (``presupposition_k=0``, no constraint decoding) or no detection is weak. The image's
        detections are those of the first stage (the perception keeps the last image's)."""
        perception = self.perception
        weak = getattr(perception, "weak_candidate_threshold", None)
        if weak is None or self.presupposition_k == 0 or environment is None or not self.constraint_decoding \
                or not all(hasattr(perception, name) for name in ("camera_for", "detect", "decode_distribution")):
            return None
        array, cam = perception.camera_for(image, camera)  # a camera of this image's size, as the first stage's
        detections = perception.detect(array, cam)
        if not any(weak <= d.candidate.score < perception.candidate_threshold for d in detections):
            return None
        s = self.settings
        return perception.decode_distribution(detections, cam, as_environment(environment), k=s.k,
                                              min_ratio=s.min_ratio, max_models=s.max_models,
                                              candidate_threshold=weak)

    def _answered(self, reason: Callable[..., ProbabilisticAnswer], environment: Any, first: SceneDistribution,
                  weak: Callable[[], SceneDistribution | None], query: Any) -> ProbabilisticAnswer:
        """``reason`` (the reasoner's ``answer_distribution`` or ``explain_distribution``) over ``first``;
        when no scene of it answers the question (evidence 0), over ``weak()`` (:meth:`_weak_distribution`)
        if that answers it: every CLEVR-POC question has an answer, and an object seen only weakly is
        often what it is about (:mod:`clevr_poc.answer_presupposition`)."""
        result = reason(environment, first, query, self.settings.rule)
        if result.evidence > 0:
            return result
        second = weak()
        if second is None:
            return result
        searched = reason(environment, second, query, self.settings.rule)
        return searched if searched.evidence > 0 else result

    def distribution(self, image: Any, camera: Any = None, environment: Any = None) -> SceneDistribution:
        """The k most probable scenes of ``image`` consistent with ``environment`` (arguments as
        :meth:`Pipeline.perceive`); a perception without ``scene_distribution``, or no environment, gives
        its one scene with probability 1.

        Raises:
            PipelineError: no perception model; FormatError: bad image, camera or environment.
        """
        from clevr_poc.perception.cameras import resolve_camera

        array = as_image(image)
        cam = resolve_camera(array.shape[1], array.shape[0], camera=as_camera(camera, self.camera_source))
        return self._distribution(array, cam, environment)

    def distribution_of(self, example: Any) -> SceneDistribution:
        """The scene distribution of a dataset example: its gold partial scene with probability 1
        (``scene_source="given"``), else :meth:`distribution` of its image (camera and environment as
        :meth:`Pipeline.scene_of`).

        Raises:
            FormatError: the example has no rendered image; ClevrPocError: what perception raised.
        """
        if self.perception is None:
            return SceneDistribution.certain(example.partial_scene)
        source = PerceivedScenes(self.perception, camera_source=self.camera_source)
        return self._distribution(source.image_of(example), source.camera_of(example), example.environment)

    # ------------------------------------------------------------------ answering
    def answer_probabilistic(self, image: Any = None, question: Any = None, environment: Any = None, *,
                             scene: Any = None, camera: Any = None, query: str | None = None,
                             explain: bool = True) -> ProbabilisticAnswer:
        """:meth:`Pipeline.answer` over the scene distribution (arguments as there; a given ``scene`` is
        certain). ``explain``: attach the MAP scene's explanation and the perceived facts the answer hangs on.

        Raises:
            as :meth:`Pipeline.answer`.
        """
        from clevr_poc.perception.cameras import resolve_camera

        env = as_environment(environment)
        checked = self._query(question, query)
        reason = self.reasoner.explain_distribution if explain else self.reasoner.answer_distribution
        if scene is not None:
            return reason(env, SceneDistribution.certain(as_scene(scene)), checked, self.settings.rule)
        array = as_image(image)
        cam = resolve_camera(array.shape[1], array.shape[0], camera=as_camera(camera, self.camera_source))
        return self._answered(reason, env, self._distribution(array, cam, env), lambda: self._weak_distribution(
            array, cam, env), checked)

    def _predict_example(self, example: Any, query: str) -> "Prediction":
        """:meth:`Pipeline.predict_batch`'s prediction over the scene distribution: ``values`` are the rule's
        set, with ``confidence`` and ``marginals`` (failures as there)."""
        from clevr_poc.evaluation.report import Prediction

        try:
            distribution = self.distribution_of(example)
        except ClevrPocError as exc:
            return Prediction(None, f"perception failed: {str(exc)[:160]}", query)

        def weak() -> SceneDistribution | None:
            if self.perception is None:
                return None
            source = PerceivedScenes(self.perception, camera_source=self.camera_source)
            return self._weak_distribution(source.image_of(example), source.camera_of(example), example.environment)

        try:
            result = self._answered(self.reasoner.answer_distribution, example.environment, distribution, weak, query)
        except (UnsafeProgramError, SolverTimeoutError, FormatError) as exc:
            return Prediction(None, f"{type(exc).__name__}: {str(exc)[:160]}", query)
        return Prediction(result.values, None, query, result.confidence,
                          tuple((m.value, m.probability) for m in result.marginals))


__all__ = ["DistributionSettings", "ProbabilisticPipeline"]
