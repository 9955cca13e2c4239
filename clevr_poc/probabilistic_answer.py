"""The value objects of answers with probabilities (issue #24): :class:`ProbabilisticAnswer` and its parts.

When perception is unsure, the Reasoner answers over a distribution of scenes
(:class:`~clevr_poc.scene_distribution.SceneDistribution`) instead of one: each scene ``s_i`` with
probability ``w_i`` has its crisp answer set ``A_i`` (official semantics, brave consequences), and

- ``P(v in A) = sum_i w_i [v in A_i]`` for every value ``v`` of the queried attribute (the *marginals*,
  plingo/dPASP's probability of an atom, here of ``missing(v)`` being a brave consequence);
- ``P(A = S) = sum_i w_i [A_i = S]`` for every set ``S`` some scene yields;
- the returned set is picked by an :class:`AnswerRule`.

Computed by :func:`clevr_poc.reasoning.answer_distribution.answer_distribution`; the method and its
sources are in ``docs/probabilistic_answers.md``.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Any

from clevr_poc.answer import Answer


class AnswerRule(str, Enum):
    """How the answer set is chosen from the distribution of answer sets.

    - ``MAP``: the answer of the most probable scene (what a crisp pipeline returns);
    - ``MOST_PROBABLE_SET``: ``argmax_S P(A = S)`` (maximises the expected exact accuracy);
    - ``EXPECTED_JACCARD``: ``argmax_S sum_i w_i J(S, A_i)`` over every subset ``S`` of the values some
      scene yields (maximises the expected Jaccard index, paper eq. 3).
    """

    MAP = "map"
    MOST_PROBABLE_SET = "most-probable-set"
    EXPECTED_JACCARD = "expected-jaccard"


@dataclass(frozen=True)
class ValueProbability:
    """``P(value in answer set)``, in [0, 1]."""

    value: str
    probability: float


@dataclass(frozen=True)
class SetProbability:
    """``P(answer set = values)``, in [0, 1]."""

    values: frozenset[str]
    probability: float


@dataclass(frozen=True)
class PerceivedAlternative:
    """A perceived fact the answer hangs on: among the top scenes, some perceive it otherwise, and those
    scenes give another answer.

    Attributes:
        detection: the detector's box index (``SceneObject.detection``; the object id for scenes without one).
        object_id: the object's id in the MAP scene, or None when the MAP scene drops the detection.
        fact: ``"kept"`` (whether the box is an object), ``"color"``, ``"shape"``, ``"size"``,
            ``"material"`` or ``"region"``.
        perceived: the fact in the MAP scene (``"yes"``/``"no"`` for ``kept``; a region as its number).
        alternative: the other reading.
        probability: the total probability of the top scenes with the other reading, in (0, 1).
        answer: the most probable answer set of those scenes (differs from the chosen answer).
    """

    detection: int
    object_id: int | None
    fact: str
    perceived: str
    alternative: str
    probability: float
    answer: frozenset[str]

    def describe(self) -> str:
        """E.g. ``object 2 (box 3): color perceived red, but blue (p = 0.31) would make the answer {cube}``."""
        who = f"object {self.object_id} (box {self.detection})" if self.object_id is not None else f"box {self.detection}"
        values = "{" + ", ".join(sorted(self.answer)) + "}"
        if self.fact == "kept":
            reading = "seen as an object" if self.perceived == "yes" else "not taken for an object"
            other = "dropping it" if self.alternative == "no" else "keeping it"
            return f"{who}: {reading}; {other} (p = {self.probability:.2f}) would make the answer {values}"
        return (f"{who}: {self.fact} perceived {self.perceived}, but {self.alternative} "
                f"(p = {self.probability:.2f}) would make the answer {values}")


@dataclass(frozen=True)
class ProbabilisticAnswer:
    """An answer over a distribution of scenes.

    Attributes:
        answer: the chosen set as an :class:`Answer` (``values``, ``attribute``, ``query``; ``scene_facts``
            and ``explanation`` are those of the MAP scene).
        rule: the rule that chose it.
        marginals: ``P(v in A)`` for every value of the queried attribute's domain (domain order), or of
            the values some scene yields when the attribute is unknown.
        sets: ``P(A = S)`` for every answer set some scene yields, most probable first.
        scene_answers: each scene's answer set (the scenes' order: most probable first).
        scene_probabilities: each scene's probability (sum 1; 0 for a scene left out by conditioning).
        confidence: ``P(A = chosen set)``: the probability that the answer is exactly right, in [0, 1].
        expected_jaccard: ``sum_i w_i J(chosen, A_i)``, in [0, 1].
        complete: the scenes are every consistent scene the decoder considered (see
            :class:`~clevr_poc.scene_distribution.SceneDistribution`).
        alternatives: with :meth:`Reasoner.explain_distribution`, the perceived facts the answer hangs on
            (most probable first); empty otherwise.
        evidence: the probability, before conditioning, that the question has an answer (the mass of the
            scenes whose answer set is not empty); ``scene_probabilities`` are conditioned on it when the
            answer is computed with ``presuppose_answer=True`` (the default).
    """

    answer: Answer
    rule: AnswerRule
    marginals: tuple[ValueProbability, ...]
    sets: tuple[SetProbability, ...]
    scene_answers: tuple[frozenset[str], ...]
    scene_probabilities: tuple[float, ...]
    confidence: float
    expected_jaccard: float
    complete: bool = True
    alternatives: tuple[PerceivedAlternative, ...] = ()
    evidence: float = 1.0

    @property
    def values(self) -> frozenset[str]:
        """The chosen answer set."""
        return self.answer.values

    def probability(self, value: str) -> float:
        """``P(value in answer set)`` (0.0 for a value no scene yields)."""
        return next((m.probability for m in self.marginals if m.value == value), 0.0)

    def describe(self) -> str:
        """A few lines: the chosen set, its confidence, the marginals above 0 and the alternatives."""
        values = ", ".join(sorted(self.values)) or "none"
        lines = [f"Answer ({self.rule.value}): {values}  (P(exactly right) = {self.confidence:.2f}, "
                 f"expected Jaccard = {self.expected_jaccard:.2f}, {sum(1 for w in self.scene_probabilities if w > 0)} scene(s))"]
        shown = [f"{m.value} {m.probability:.2f}" for m in self.marginals if m.probability > 0]
        lines.append("P(value in answer): " + (", ".join(shown) or "none"))
        lines += ["  hangs on " + a.describe() for a in self.alternatives]
        return "\n".join(lines)

    def to_json(self) -> dict[str, Any]:
        return {
            "answer": self.answer.sorted_values(), "rule": self.rule.value, "attribute": self.answer.attribute,
            "confidence": self.confidence, "expected_jaccard": self.expected_jaccard, "complete": self.complete,
            "evidence": self.evidence,
            "marginals": {m.value: m.probability for m in self.marginals},
            "sets": [{"answer": sorted(s.values), "probability": s.probability} for s in self.sets],
            "alternatives": [a.describe() for a in self.alternatives],
        }


__all__ = ["AnswerRule", "PerceivedAlternative", "ProbabilisticAnswer", "SetProbability", "ValueProbability"]
