"""Answers from pixels under the question's presupposition (every CLEVR-POC question has an answer): when the
MAP scene leaves the question unanswered, the most probable of the k best consistent scenes that answers
it gives the answer (clevr_poc.answer_presupposition); the common case is unchanged."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from clevr_poc.answer_presupposition import check_presupposition_k, presupposed_answer
from clevr_poc.dataset_reader import Example
from clevr_poc.environments.environment import Constraint, Environment
from clevr_poc.errors import FormatError
from clevr_poc.pipeline import Pipeline
from clevr_poc.question import Question
from clevr_poc.reasoning import Reasoner
from clevr_poc.scene import Scene, SceneObject, compute_relationships
from clevr_poc.scene_distribution import SceneDistribution

#: Exactly one object in region 0 is red; the question asks the colour of the sphere in region 0.
ENV = Environment((Constraint("exactly_n", {"r": 0, "p1": "color", "v1": "red", "n": 1}),), 2, id=1)
QUERY = "missing(Q) :- hasProperty(X, color, Q), hasProperty(X, shape, sphere), at(X, 0)."


def _scene(*objects: tuple[str, str, int]) -> Scene:
    objs = tuple(SceneObject(c, s, "small", "metal", r, (float(i), float(i), 0.35), detection=i)
                 for i, (c, s, r) in enumerate(objects))
    return Scene(objs, compute_relationships([o.coords_3d[:2] for o in objs]))


#: The MAP reading: a red cube and a red sphere in region 0 -- two red objects, so the hidden sphere has no
#: colour the environment allows. The second reading (a blue cube) forces the hidden sphere to be red.
TWO_RED = _scene(("red", "cube", 0), ("red", "sphere", 0))
BLUE = _scene(("blue", "cube", 0))
RED = _scene(("red", "cube", 0))


class ReadingsPerception:
    """A perception whose MAP scene and k best scenes are given (what Perception returns, without a network)."""

    def __init__(self, scenes: tuple[Scene, ...], probabilities: tuple[float, ...]) -> None:
        self.distribution = SceneDistribution(scenes, probabilities)
        self.calls: list[int] = []

    def __call__(self, image, camera=None, environment=None) -> Scene:
        return self.distribution.map_scene

    def scene_distribution(self, image, camera=None, environment=None, *, k=16, **_: object) -> SceneDistribution:
        self.calls.append(k)
        return SceneDistribution(self.distribution.scenes[:k], _renormalised(self.distribution.probabilities[:k]))


def _renormalised(p: tuple[float, ...]) -> tuple[float, ...]:
    return tuple(x / sum(p) for x in p)


IMAGE = np.zeros((32, 32, 3), dtype=np.uint8)


def test_presupposed_answer_takes_the_first_scene_that_answers():
    reasoner = Reasoner()
    assert reasoner.answer(ENV, TWO_RED, QUERY).values == frozenset()
    found = presupposed_answer(reasoner, ENV, QUERY, SceneDistribution((TWO_RED, BLUE, RED), (0.6, 0.3, 0.1)))
    assert found is not None and found.values == frozenset({"red"})
    assert presupposed_answer(reasoner, ENV, QUERY, SceneDistribution.certain(TWO_RED)) is None


def test_pipeline_answer_searches_only_when_the_map_scene_leaves_no_answer():
    perception = ReadingsPerception((TWO_RED, BLUE), (0.7, 0.3))
    pipeline = Pipeline(perception, None)
    assert pipeline.answer(IMAGE, query=QUERY, environment=ENV, explain=False).values == frozenset({"red"})
    assert perception.calls == [16]
    explained = pipeline.answer(IMAGE, query=QUERY, environment=ENV)
    assert explained.values == frozenset({"red"}) and explained.explanation is not None
    # off: the MAP scene's empty answer, and no ranked decoding at all
    off = ReadingsPerception((TWO_RED, BLUE), (0.7, 0.3))
    assert Pipeline(off, None, presupposition_k=0).answer(IMAGE, query=QUERY, environment=ENV).values == frozenset()
    assert off.calls == []
    # the MAP scene answers: no search; the red cube leaves the 7 other colours
    sure = ReadingsPerception((RED, BLUE), (0.9, 0.1))
    assert len(Pipeline(sure, None).answer(IMAGE, query=QUERY, environment=ENV, explain=False).values) == 7
    assert sure.calls == []
    # k = 1: only the MAP scene is searched, which does not answer: the empty answer stands
    one = ReadingsPerception((TWO_RED, BLUE), (0.7, 0.3))
    assert Pipeline(one, None, presupposition_k=1).answer(IMAGE, query=QUERY, environment=ENV).values == frozenset()
    assert one.calls == [1]
    # argmax decoding (no constraints) never searches
    assert Pipeline(ReadingsPerception((TWO_RED, BLUE), (0.7, 0.3)), None, constraint_decoding=False).answer(
        IMAGE, query=QUERY, environment=ENV).values == frozenset()


def test_evaluator_predictions_use_the_presupposition(tmp_path: Path):
    image = tmp_path / "image.png"
    image.write_bytes(b"not read by the stand-in perception")
    question = Question("What colour is the sphere in region 0?", QUERY, frozenset({"red"}))
    example = Example(ENV, TWO_RED, question, image_path=image)
    searched = Pipeline(ReadingsPerception((TWO_RED, BLUE), (0.7, 0.3)), None).predict_batch([example])
    assert searched[0].values == frozenset({"red"}) and searched[0].error is None
    plain = Pipeline(ReadingsPerception((TWO_RED, BLUE), (0.7, 0.3)), None, presupposition_k=0).predict_batch([example])
    assert plain[0].values == frozenset()


@pytest.mark.parametrize("bad", [-1, 257, 2.5, "16", True, None])
def test_bad_presupposition_k_is_a_one_line_error(bad):
    with pytest.raises(FormatError, match="presupposition_k"):
        check_presupposition_k(bad)
    with pytest.raises(FormatError):
        Pipeline(None, None, presupposition_k=bad)


@pytest.mark.parametrize("value", ["-1", "257", "abc", "2.5"])
def test_cli_checks_presupposition_k_when_parsing(value, capsys):
    from clevr_poc.commands.main import main

    with pytest.raises(SystemExit) as stop:
        main(["evaluate", "--dataset", "nowhere", "--split", "test", "--model", "ns-vqa", "--presupposition-k", value])
    assert stop.value.code == 2
    err = capsys.readouterr().err.strip()
    assert "argument --presupposition-k: must be an integer in [0, 256]" in err and "\n" not in err


# ---------------------------------------------------------------------- the weak detections' stage
def _weak_stage_detections():
    from clevr_poc import domain
    from clevr_poc.perception.decoding import ObjectCandidate
    from clevr_poc.perception.perceiver import Detection

    def probs(attribute: str, value: str) -> tuple[float, ...]:
        values = domain.DOMAINS[attribute]
        return tuple(0.99 if v == value else 0.01 / (len(values) - 1) for v in values)

    def detection(score, color, shape, region, box):
        p = {"color": probs("color", color), "shape": probs("shape", shape), "size": probs("size", "small"),
             "material": probs("material", "metal")}
        regions = tuple(0.97 if r == region else 0.01 for r in domain.REGIONS)
        return Detection(box, ObjectCandidate(score, p, regions, (float(region), 0.0)), (0.0, 0.0))

    return [detection(0.9, "red", "cube", 0, (100.0, 150.0, 130.0, 180.0)),       # a candidate
            detection(0.1, "blue", "cylinder", 1, (200.0, 120.0, 220.0, 140.0)),  # weak: 0.05 <= 0.1 < 0.2
            detection(0.03, "green", "sphere", 2, (40.0, 100.0, 60.0, 120.0))]    # under the weak floor


def test_searched_scenes_try_the_candidates_first_then_the_weak_detections(perception_model):
    """Three objects, so two are visible: the candidates alone fill one; the second stage, reached only when
    the caller asks for more scenes, adds the weak detection (score 0.1) and never the one under 0.05."""
    env = Environment((Constraint("exactly_n", {"r": 0, "p1": "color", "v1": "red", "n": 1}),), 3, id=1)
    camera = perception_model.camera_for(np.zeros((320, 320, 3), dtype=np.uint8))[1]
    detections = _weak_stage_detections()
    calls = []
    original = perception_model.decode_distribution

    def counted(*args, **kwargs):
        calls.append(kwargs.get("candidate_threshold"))
        return original(*args, **kwargs)

    perception_model.decode_distribution = counted
    try:
        scenes = perception_model.searched_scenes(detections, camera, env, k=4)
        first = next(scenes)
        assert calls == [None]                              # lazy: the weak stage not decoded yet
        assert [(o.color, o.shape) for o in first.objects] == [("red", "cube")]
        rest = list(scenes)
        assert calls == [None, 0.05]
        weak_scenes = [s for s in rest if len(s.objects) == 2]
        assert weak_scenes and all(len(s.objects) in (1, 2) for s in rest)
        assert sorted((o.color, o.shape) for o in weak_scenes[0].objects) == [("blue", "cylinder"), ("red", "cube")]
        assert not any(o.color == "green" for s in rest for o in s.objects)
        perception_model.weak_candidate_threshold = 0.2     # = the candidate threshold: no second stage
        calls.clear()
        only = list(perception_model.searched_scenes(detections, camera, env, k=4))
        assert calls == [None] and all(len(s.objects) == 1 for s in only)
    finally:
        perception_model.decode_distribution = original
        perception_model.weak_candidate_threshold = 0.05


def test_presupposed_answer_stops_at_the_first_stage_that_answers(perception_model):
    """The weak stage is never decoded when a scene of the candidates answers (iterated lazily)."""
    env = Environment((Constraint("exactly_n", {"r": 0, "p1": "color", "v1": "red", "n": 1}),), 3, id=1)
    camera = perception_model.camera_for(np.zeros((320, 320, 3), dtype=np.uint8))[1]
    query = "missing(Q) :- hasProperty(X, color, Q), hasProperty(X, shape, sphere), at(X, 0)."
    decoded = []
    original = perception_model.decode_distribution
    perception_model.decode_distribution = lambda *a, **kw: decoded.append(kw) or original(*a, **kw)
    try:
        found = presupposed_answer(Reasoner(), env, query,
                                   perception_model.searched_scenes(_weak_stage_detections(), camera, env, k=4))
    finally:
        perception_model.decode_distribution = original
    assert found is not None and "red" not in found.values and "blue" in found.values   # one red in region 0
    assert len(decoded) == 1


@pytest.fixture(scope="module")
def perception_model():
    from clevr_poc.perception import Perception

    return Perception.from_pretrained(Path(__file__).resolve().parent.parent / "models" / "perception", device="cpu")


@pytest.mark.parametrize("field, value", [("weak_candidate_threshold", -0.1), ("candidate_threshold", 1.5),
                                          ("score_threshold", "high"), ("weak_candidate_threshold", True)])
def test_perception_thresholds_are_scores(field, value):
    from clevr_poc.perception import Perception

    with pytest.raises(FormatError, match=f"field '{field}'.*score in \\[0, 1\\]"):
        Perception.from_pretrained(Path(__file__).resolve().parent.parent / "models" / "perception", device="cpu",
                                   **{field: value})



class StagedPerception(ReadingsPerception):
    """A perception whose candidates read :data:`TWO_RED` (no answer) and whose weak detection (score 0.1)
    makes the scene :data:`BLUE` (the hidden sphere must be red); records the decoded thresholds."""

    candidate_threshold, weak_candidate_threshold = 0.2, 0.05

    def __init__(self, weak_score: float = 0.1) -> None:
        super().__init__((TWO_RED,), (1.0,))
        self.weak_score = weak_score
        self.decoded: list[float | None] = []
        self.cameras: list = []

    def camera_for(self, image, camera=None):
        self.cameras.append(camera)
        return image, "a camera of the image's size"

    def detect(self, image, camera=None):
        from types import SimpleNamespace

        return [SimpleNamespace(candidate=SimpleNamespace(score=score)) for score in (0.9, self.weak_score)]

    def decode_distribution(self, detections, camera, environment=None, *, candidate_threshold=None, **_: object):
        assert camera == "a camera of the image's size"   # resolved for the image, as the first stage's
        self.decoded.append(candidate_threshold)
        scene = BLUE if candidate_threshold == self.weak_candidate_threshold else TWO_RED
        return SceneDistribution((scene,), (1.0,))


def test_the_probabilistic_pipeline_also_searches_the_weak_detections():
    """As the crisp pipeline: no scene of the candidates answers, so the scenes with the weak detection are
    tried, and theirs is the answer (red, probability 1); not with presupposition_k=0, nor without a weak
    detection (then the first stage's empty answer stays)."""
    from clevr_poc.probabilistic_pipeline import ProbabilisticPipeline

    perception = StagedPerception()
    found = ProbabilisticPipeline(perception).answer_probabilistic(IMAGE, environment=ENV, query=QUERY, explain=False)
    assert found.values == frozenset({"red"}) and found.confidence == pytest.approx(1.0) and found.evidence == 1.0
    assert perception.decoded == [0.05]
    for pipeline in (ProbabilisticPipeline(StagedPerception(), presupposition_k=0),
                     ProbabilisticPipeline(StagedPerception(weak_score=0.01))):
        empty = pipeline.answer_probabilistic(IMAGE, environment=ENV, query=QUERY, explain=False)
        assert empty.values == frozenset() and empty.evidence == 0 and pipeline.perception.decoded == []
