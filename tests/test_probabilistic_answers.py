"""Answers with probabilities (issue #24): the k best consistent scenes, marginals, answer rules and the
perceived facts an answer hangs on, on small hand-made scenes whose probabilities are computed by hand."""

from __future__ import annotations

import math

import pytest

from clevr_poc import domain
from clevr_poc.environments.environment import Constraint, Environment
from clevr_poc.errors import FormatError
from clevr_poc.perception.decoding import ObjectCandidate, constraint_decode
from clevr_poc.perception.ranked_decoding import normalised, ranked_decode
from clevr_poc.probabilistic_answer import AnswerRule
from clevr_poc.reasoning import Reasoner
from clevr_poc.reasoning.answer_distribution import (best_jaccard_set, choose, conditioned, expected_jaccard,
                                                    set_probabilities)
from clevr_poc.scene import Scene, SceneObject, compute_relationships
from clevr_poc.scene_distribution import SceneDistribution

#: Exactly one object in region 0 is red. With one visible cube in region 0 and the question "what colour
#: is the sphere in region 0?": a red cube leaves the 7 other colours, a blue cube forces red.
ENV = Environment((Constraint("exactly_n", {"r": 0, "p1": "color", "v1": "red", "n": 1}),), 2, id=1)
QUERY = "missing(Q) :- hasProperty(X, color, Q), hasProperty(X, shape, sphere), at(X, 0)."
NOT_RED = frozenset(c for c in domain.COLORS if c != "red")


def _one_hot(attribute: str, value: str) -> tuple[float, ...]:
    return tuple(1.0 if v == value else 0.0 for v in domain.DOMAINS[attribute])


def _cube(color_probabilities: dict[str, float], score: float = 1.0) -> ObjectCandidate:
    colors = tuple(color_probabilities.get(c, 0.0) for c in domain.COLORS)
    return ObjectCandidate(score, {"color": colors, "shape": _one_hot("shape", "cube"),
                                   "size": _one_hot("size", "small"), "material": _one_hot("material", "metal")},
                           (1.0, 0.0, 0.0, 0.0), (-2.0, 2.0))


def _scene(*objects: tuple[str, str, int, int]) -> Scene:
    """Objects (color, shape, region, detection), all small metal."""
    objs = tuple(SceneObject(c, s, "small", "metal", r, (float(i), float(i), 0.35), detection=d)
                 for i, (c, s, r, d) in enumerate(objects))
    return Scene(objs, compute_relationships([o.coords_3d[:2] for o in objs]))


def test_ranked_decode_gives_the_two_readings_with_their_probabilities():
    ranked = ranked_decode([_cube({"red": 0.6, "blue": 0.4})], ENV, k=16)
    # costs round(1000 * -ln 0.6) = 511 and round(1000 * -ln 0.4) = 916; every other colour has p = 0
    # (clipped to 1e-6, cost 13816, outside the window of 1000 * -ln 1e-4 = 9210)
    assert [s.values[0]["color"] for s in ranked.scenes] == ["red", "blue"]
    assert [s.cost for s in ranked.scenes] == [511, 916]
    blue = 1.0 / (1.0 + math.exp(0.405))
    assert ranked.probabilities == pytest.approx((1.0 - blue, blue), abs=1e-12)
    assert ranked.probabilities[1] == pytest.approx(0.4, abs=1e-3)
    assert ranked.complete and not ranked.interrupted
    # the MAP scene is constraint_decode's
    assert ranked.scenes[0].values == constraint_decode([_cube({"red": 0.6, "blue": 0.4})], ENV).values
    # k = 1 keeps the MAP scene alone, with probability 1
    assert ranked_decode([_cube({"red": 0.6, "blue": 0.4})], ENV, k=1).probabilities == (1.0,)


def test_ranked_decode_drops_scenes_the_environment_forbids():
    no_red = Environment((Constraint("negation", {"r": 0, "p1": "color", "v1": "red"}),), 2, id=2)
    ranked = ranked_decode([_cube({"red": 0.6, "blue": 0.3, "green": 0.1})], no_red, k=16)
    # red is forbidden: blue (0.3) and green (0.1) renormalised -> 0.75 / 0.25 (costs 1204 and 2303)
    assert [s.values[0]["color"] for s in ranked.scenes] == ["blue", "green"]
    assert ranked.probabilities[0] == pytest.approx(1.0 / (1.0 + math.exp(-(2303 - 1204) / 1000)), abs=1e-12)
    assert ranked.probabilities[0] == pytest.approx(0.75, abs=1e-3)
    # a tighter window (p >= 0.5 p(MAP)) leaves green (1/3 of blue) out
    assert len(ranked_decode([_cube({"red": 0.6, "blue": 0.3, "green": 0.1})], no_red, min_ratio=0.5).scenes) == 1


def test_marginals_set_probabilities_and_rules_from_hand_made_candidates():
    ranked = ranked_decode([_cube({"red": 0.6, "blue": 0.4})], ENV)
    scenes = tuple(_scene((s.values[0]["color"], "cube", 0, 0)) for s in ranked.scenes)
    distribution = SceneDistribution(scenes, ranked.probabilities)
    result = Reasoner().answer_distribution(ENV, distribution, QUERY)
    p_blue = ranked.probabilities[1]
    assert result.scene_answers == (NOT_RED, frozenset({"red"}))
    assert result.probability("red") == pytest.approx(p_blue, abs=1e-12)             # only the blue-cube scene
    assert all(result.probability(c) == pytest.approx(1 - p_blue, abs=1e-12) for c in NOT_RED)
    assert [m.value for m in result.marginals] == list(domain.COLORS)
    assert [(s.values, round(s.probability, 9)) for s in result.sets] == [
        (NOT_RED, round(1 - p_blue, 9)), (frozenset({"red"}), round(p_blue, 9))]
    assert result.values == NOT_RED and result.confidence == pytest.approx(1 - p_blue)
    # E[J] of the 7 colours: 0.6 * 1 + 0.4 * 0
    assert result.expected_jaccard == pytest.approx(1 - p_blue)
    assert result.answer.attribute == "color"


def test_rules_differ_where_they_should():
    a, b, ab = frozenset("a"), frozenset("b"), frozenset("ab")
    answers, weights = (a, b, ab), (0.35, 0.325, 0.325)
    assert choose(AnswerRule.MAP, answers, weights) == a
    assert choose(AnswerRule.MOST_PROBABLE_SET, answers, weights) == a
    # E[J]({a}) = 0.35 + 0 + 0.325/2 = 0.5125; E[J]({a,b}) = 0.35/2 + 0.325/2 + 0.325 = 0.6625; {b}: 0.4875
    assert expected_jaccard(ab, answers, weights) == pytest.approx(0.6625)
    assert choose(AnswerRule.EXPECTED_JACCARD, answers, weights) == ab
    # most probable set differs from the MAP scene's answer when two scenes share a set
    answers, weights = (a, b, b), (0.4, 0.3, 0.3)
    assert choose(AnswerRule.MAP, answers, weights) == a
    assert choose(AnswerRule.MOST_PROBABLE_SET, answers, weights) == b
    assert set_probabilities(answers, weights)[0].probability == pytest.approx(0.6)
    # expected Jaccard may pick a set no scene yields: {a,b,c} .4, {a,b,d} .3, {a,b,e} .3 -> {a,b}
    sets = (frozenset("abc"), frozenset("abd"), frozenset("abe"))
    assert best_jaccard_set(sets, (0.4, 0.3, 0.3)) == frozenset("abc")    # 0.4 + 0.6 * 2/4 = 0.7 > {a,b}: 2/3
    assert best_jaccard_set(sets, (0.34, 0.33, 0.33)) == frozenset("abc")
    assert best_jaccard_set((frozenset("abc"), frozenset("abd"), frozenset("abe"), frozenset("abf")),
                            (0.25, 0.25, 0.25, 0.25)) == frozenset("ab")    # 2/3 > 0.25 + 0.75 * 2/4 = 0.625


def test_explain_distribution_names_the_colour_the_answer_hangs_on():
    # box 3 (object 0 of every scene) read red (.5) or blue (.3 + .2: two scenes, as if they differed elsewhere)
    scenes = (_scene(("red", "cube", 0, 3)), _scene(("blue", "cube", 0, 3)), _scene(("blue", "cube", 0, 3)))
    distribution = SceneDistribution(scenes, (0.5, 0.3, 0.2))
    result = Reasoner().explain_distribution(ENV, distribution, QUERY, AnswerRule.MAP)
    assert result.values == NOT_RED and result.confidence == pytest.approx(0.5)
    assert len(result.alternatives) == 1
    alternative = result.alternatives[0]
    assert (alternative.detection, alternative.object_id, alternative.fact, alternative.perceived,
            alternative.alternative) == (3, 0, "color", "red", "blue")
    assert alternative.probability == pytest.approx(0.5) and alternative.answer == frozenset({"red"})
    assert "color perceived red, but blue (p = 0.50)" in alternative.describe()
    assert result.answer.explanation is not None                               # the MAP scene's explanation
    assert "hangs on object 0 (box 3)" in result.describe()


def test_a_certain_scene_gives_probability_one_and_no_alternatives():
    distribution = SceneDistribution.certain(_scene(("blue", "cube", 0, 0)))
    result = Reasoner().explain_distribution(ENV, distribution, QUERY, "expected-jaccard")
    assert result.values == frozenset({"red"}) and result.confidence == 1.0 and result.alternatives == ()
    assert result.probability("red") == 1.0 and result.probability("blue") == 0.0


def test_scene_distribution_and_rule_validation():
    scene = _scene(("blue", "cube", 0, 0))
    with pytest.raises(FormatError, match="sum to 1"):
        SceneDistribution((scene, scene), (0.5, 0.6))
    with pytest.raises(FormatError, match="most probable first"):
        SceneDistribution((scene, scene), (0.4, 0.6))
    with pytest.raises(FormatError, match="one probability per scene"):
        SceneDistribution((), ())
    with pytest.raises(ValueError):
        Reasoner().answer_distribution(ENV, SceneDistribution.certain(scene), QUERY, "most-likely")
    with pytest.raises(ValueError, match="min_ratio"):
        ranked_decode([_cube({"red": 1.0})], ENV, min_ratio=0.0)
    assert normalised([]) == () and normalised([5, 5]) == (0.5, 0.5)


def test_conditioning_on_the_question_having_an_answer():
    a, b = frozenset("a"), frozenset("b")
    weights, evidence = conditioned((frozenset(), a, b), (0.5, 0.3, 0.2))
    assert weights == pytest.approx((0.0, 0.6, 0.4)) and evidence == pytest.approx(0.5)
    assert choose(AnswerRule.MAP, (frozenset(), a, b), weights) == a
    assert [s.values for s in set_probabilities((frozenset(), a, b), weights)] == [a, b]
    assert conditioned((frozenset(),), (1.0,)) == ((1.0,), 0.0)                  # nothing answers: unchanged
    # end to end: the MAP scene (two red cubes in region 0) breaks "exactly one red object in region 0"
    two_red = _scene(("red", "cube", 0, 0), ("red", "sphere", 0, 1))
    distribution = SceneDistribution((two_red, _scene(("blue", "cube", 0, 0))), (0.7, 0.3))
    result = Reasoner().answer_distribution(ENV, distribution, QUERY)
    assert result.scene_answers == (frozenset(), frozenset({"red"}))
    assert result.values == frozenset({"red"}) and result.confidence == pytest.approx(1.0)
    assert result.evidence == pytest.approx(0.3) and result.scene_probabilities == pytest.approx((0.0, 1.0))
    crisp = Reasoner().answer_distribution(ENV, distribution, QUERY, presuppose_answer=False)
    assert crisp.values == frozenset() and crisp.confidence == pytest.approx(0.7)
    assert crisp.probability("red") == pytest.approx(0.3)


def test_from_pixels_the_first_scene_is_the_map_decode_and_the_answer_is_sure():
    """The shipped model on the two fixture images: the ranked decode's first scene is constraint-aware
    decoding's, and the answer over the scenes is the gold answer with confidence > 0.9."""
    pytest.importorskip("torch")
    pytest.importorskip("torchvision")
    from pathlib import Path

    from clevr_poc.dataset_reader import load_dataset
    from clevr_poc.perception import Perception
    from clevr_poc.perception.cameras import camera_spec

    root = Path(__file__).resolve().parent
    perception = Perception.from_pretrained(root.parent / "models" / "perception", device="cpu")
    for example in load_dataset(root / "fixtures" / "perception" / "dataset", "test"):
        image, camera = perception.camera_for(example.image_path, camera_spec(example.partial_scene, "auto",
                                                                              source=example.image_path))
        detections = perception.detect(image, camera)
        distribution = perception.decode_distribution(detections, camera, example.environment)
        crisp = perception.decode(detections, camera, example.environment)
        assert distribution.map_scene.to_asp_facts() == crisp.to_asp_facts()
        assert 1 <= len(distribution) <= 16 and sum(distribution.probabilities) == pytest.approx(1.0)
        assert distribution.probabilities[0] > 0.9
        result = Reasoner().explain_distribution(example.environment, distribution, example.question.asp_query,
                                                 "most-probable-set")
        assert result.values == example.question.answer and result.confidence > 0.9
