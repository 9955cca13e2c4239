"""Answers over a distribution of scenes: marginals, set probabilities, answer rules (issue #24) and the
perceived facts an unsure answer hangs on.

Given scenes ``s_1..s_k`` with probabilities ``w_i`` (a :class:`~clevr_poc.scene_distribution.SceneDistribution`)
the Reasoner answers each (``A_i``, one brave-consequence call each, exact official semantics) and
:func:`answer_distribution` aggregates (:mod:`clevr_poc.probabilistic_answer` gives the equations). This is
the "top-k proofs" approximation of Scallop (Huang et al., NeurIPS 2021: reason over the k most likely
worlds instead of all), with the worlds being whole perceived scenes; it is exact when the distribution
holds every consistent scene.

:func:`perceived_alternatives` names, for every detection and perceived fact (kept or not, colour, shape,
size, material, region) on which the top scenes disagree, the other readings whose scenes give another
answer than the chosen one.
"""

from __future__ import annotations

from itertools import combinations
from typing import TYPE_CHECKING, Sequence

from clevr_poc import domain
from clevr_poc.answer import Answer
from clevr_poc.probabilistic_answer import (AnswerRule, PerceivedAlternative, ProbabilisticAnswer, SetProbability,
                                            ValueProbability)
from clevr_poc.scene import Scene
from clevr_poc.scene_distribution import SceneDistribution

if TYPE_CHECKING:
    from clevr_poc.environments.environment import Environment
    from clevr_poc.reasoning.reasoner import QueryLike, Reasoner

#: Facts compared between scenes, per detection (besides whether it is kept).
FACTS: tuple[str, ...] = (*domain.ATTRIBUTES, "region")
#: Most values the expected-Jaccard rule searches the subsets of (2**8 subsets: the 8 colours).
MAX_JACCARD_VALUES = 8


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    """``|a & b| / |a | b|``, 1.0 when both are empty (paper eq. 3, as :func:`clevr_poc.evaluation.metrics.jaccard_index`)."""
    union = a | b
    return 1.0 if not union else len(a & b) / len(union)


def set_probabilities(answers: Sequence[frozenset[str]], weights: Sequence[float]) -> tuple[SetProbability, ...]:
    """``P(A = S)`` of every distinct answer set of a scene of non-zero weight, most probable first (ties:
    first seen first)."""
    total: dict[frozenset[str], float] = {}
    positive = any(w > 0 for w in weights)
    for values, w in zip(answers, weights):
        if w > 0 or not positive:           # scenes left out by conditioning (weight 0) are no answer
            total[values] = total.get(values, 0.0) + w
    order = sorted(enumerate(total.items()), key=lambda item: (-item[1][1], item[0]))
    return tuple(SetProbability(values, p) for _, (values, p) in order)


def expected_jaccard(candidate: frozenset[str], answers: Sequence[frozenset[str]], weights: Sequence[float]) -> float:
    """``sum_i w_i J(candidate, A_i)``."""
    return sum(w * jaccard(candidate, a) for a, w in zip(answers, weights))


def best_jaccard_set(answers: Sequence[frozenset[str]], weights: Sequence[float]) -> frozenset[str]:
    """The set maximising :func:`expected_jaccard` among every subset of the values the answers hold
    (a value no answer holds only lowers it). Ties: the more probable exact set, then the smaller, then
    the alphabetically first. With more than :data:`MAX_JACCARD_VALUES` values only the answer sets
    themselves and the sets of values with marginal > 0.5 are tried."""
    union = sorted(frozenset().union(*answers)) if answers else []
    exact = {s.values: s.probability for s in set_probabilities(answers, weights)}
    if len(union) <= MAX_JACCARD_VALUES:
        candidates = [frozenset(c) for n in range(len(union) + 1) for c in combinations(union, n)]
    else:
        majority = frozenset(v for v in union if sum(w for a, w in zip(answers, weights) if v in a) > 0.5)
        candidates = list(exact) + [majority]
    candidates.sort(key=lambda s: (len(s), sorted(s)))   # max() keeps the first of equals: smaller, then a-z
    return max(candidates, key=lambda s: (round(expected_jaccard(s, answers, weights), 12), exact.get(s, 0.0)))


def conditioned(answers: Sequence[frozenset[str]], weights: Sequence[float]) -> tuple[tuple[float, ...], float]:
    """The weights given that the question has an answer: scenes whose answer set is empty get weight 0,
    the others are renormalised; returns ``(weights, evidence)`` with ``evidence = P(answer non-empty)``.
    When no scene answers, the weights are returned unchanged (evidence 0)."""
    evidence = sum(w for a, w in zip(answers, weights) if a)
    if evidence <= 0.0:
        return tuple(weights), 0.0
    return tuple(w / evidence if a else 0.0 for a, w in zip(answers, weights)), evidence


def choose(rule: AnswerRule, answers: Sequence[frozenset[str]], weights: Sequence[float]) -> frozenset[str]:
    """The answer set ``rule`` picks (:class:`AnswerRule`); ``answers`` most probable scene first (``MAP``:
    the first scene of non-zero weight)."""
    if rule is AnswerRule.MAP:
        return next((a for a, w in zip(answers, weights) if w > 0), answers[0])
    if rule is AnswerRule.MOST_PROBABLE_SET:
        return set_probabilities(answers, weights)[0].values
    return best_jaccard_set(answers, weights)


def answer_distribution(reasoner: "Reasoner", environment: "Environment", distribution: SceneDistribution,
                        query: "QueryLike", rule: AnswerRule | str = AnswerRule.MAP, *,
                        presuppose_answer: bool = True) -> ProbabilisticAnswer:
    """The answer over ``distribution``: each scene answered by ``reasoner`` (:meth:`Reasoner.answer`),
    marginals over the queried attribute's domain, set probabilities and the set ``rule`` picks.

    ``presuppose_answer`` (default True): condition on the question having an answer (every CLEVR-POC
    question does, by construction): scenes in which the query matches nothing, or that contradict the
    environment with the question, are given weight 0 and the rest renormalised (:func:`conditioned`),
    unless no scene answers. ``evidence`` records the probability of an answer before conditioning.

    Raises:
        ValueError: an unknown rule name.
        as :meth:`Reasoner.answer` (unsafe query, a scene that does not fit, a solver time-out).
    """
    rule = AnswerRule(rule)
    checked = reasoner.sanitize(query)
    crisp = [reasoner.answer(environment, scene, checked) for scene in distribution.scenes]
    answers = tuple(a.values for a in crisp)
    if presuppose_answer:
        weights, evidence = conditioned(answers, distribution.probabilities)
    else:
        weights = tuple(distribution.probabilities)
        evidence = sum(w for a, w in zip(answers, weights) if a)
    chosen = choose(rule, answers, weights)
    sets = set_probabilities(answers, weights)
    attribute = checked.attribute
    values = domain.DOMAINS[attribute] if attribute in domain.DOMAINS else sorted(frozenset().union(*answers))
    marginals = tuple(ValueProbability(v, min(1.0, sum(w for a, w in zip(answers, weights) if v in a)))
                      for v in values)
    satisfiable = any(a.satisfiable for a in crisp)
    first = crisp[next((i for i, w in enumerate(weights) if w > 0), 0)]
    reason = None if chosen else (first.reason or "no scene of the distribution yields a value")
    answer = Answer(chosen, attribute, satisfiable, reason, None, checked.text, first.scene_facts)
    confidence = next((s.probability for s in sets if s.values == chosen), 0.0)
    return ProbabilisticAnswer(answer, rule, marginals, sets, answers, tuple(weights), confidence,
                               expected_jaccard(chosen, answers, weights), distribution.complete, evidence=evidence)


def _facts(scene: Scene) -> dict[int, dict[str, str]]:
    """Detection index -> fact -> value of one scene (object ids stand in for missing detection indices)."""
    out: dict[int, dict[str, str]] = {}
    for i, obj in enumerate(scene.objects):
        key = obj.detection if obj.detection is not None else i
        out[key] = {**{a: str(getattr(obj, a)) for a in domain.ATTRIBUTES}, "region": str(obj.region)}
    return out


def perceived_alternatives(distribution: SceneDistribution, answer: ProbabilisticAnswer
                           ) -> tuple[PerceivedAlternative, ...]:
    """The perceived facts ``answer`` hangs on (module doc), most probable alternative first.

    For each detection ``d`` and fact ``f`` read otherwise than in the MAP scene by some top scenes, the
    scenes with reading ``r`` (total probability ``P(f_d = r)``) are grouped; if their most probable answer
    set differs from the chosen answer, ``(d, f, MAP reading, r, P(f_d = r), that set)`` is returned.
    Whether a box is kept at all is the fact ``"kept"``.
    """
    weights = answer.scene_probabilities
    keep = [i for i, w in enumerate(weights) if w > 0]
    facts = [_facts(distribution.scenes[i]) for i in keep]
    weights = [weights[i] for i in keep]
    answers = [answer.scene_answers[i] for i in keep]
    chosen = answer.values
    map_facts = facts[0]
    object_ids = {d: i for i, d in enumerate(map_facts)}
    detections = sorted(set().union(*facts))
    found: list[PerceivedAlternative] = []

    def add(d: int, fact: str, perceived: str, readings: dict[str, list[int]]) -> None:
        for reading, members in readings.items():
            if reading == perceived:
                continue
            mass = sum(weights[i] for i in members)
            group = set_probabilities([answers[i] for i in members], [weights[i] for i in members])[0].values
            if group != chosen:
                found.append(PerceivedAlternative(d, object_ids.get(d), fact, perceived, reading, mass, group))

    for d in detections:
        kept: dict[str, list[int]] = {}
        for i, f in enumerate(facts):
            kept.setdefault("yes" if d in f else "no", []).append(i)
        add(d, "kept", "yes" if d in map_facts else "no", kept)
        if d not in map_facts:
            continue
        for fact in FACTS:
            readings: dict[str, list[int]] = {}
            for i, f in enumerate(facts):
                if d in f:
                    readings.setdefault(f[d][fact], []).append(i)
            add(d, fact, map_facts[d][fact], readings)
    found.sort(key=lambda a: (-a.probability, a.detection, FACTS.index(a.fact) if a.fact in FACTS else -1))
    return tuple(found)


__all__ = ["FACTS", "answer_distribution", "best_jaccard_set", "choose", "conditioned", "expected_jaccard", "jaccard",
           "perceived_alternatives", "set_probabilities"]
