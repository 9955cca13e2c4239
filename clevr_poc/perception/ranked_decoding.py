"""The k most probable perceived scenes consistent with the environment, with their probabilities.

:func:`~clevr_poc.perception.decoding.constraint_decode` keeps only the most probable consistent scene (the
MAP scene). :func:`ranked_decode` keeps the ``k`` most probable ones: the same program
(``asp/perception_decoding.lp``, costs ``c(s) = round(1000 * -log p(s))`` with ``p(s)`` the product of the
detection, attribute and region probabilities of scene ``s``) plus ``asp/perception_ranking.lp`` (projection
onto the detections), enumerated in order of cost by :func:`clevr_poc.solver.ranked_models.ranked_models`.

Each scene's probability given the image *and* the environment is the network's probability renormalised
over the consistent scenes (the environment is a hard constraint, as in plingo/dPASP's semantics of
integrity constraints; NeurASP, Yang et al. IJCAI 2020, section 3)::

    P(s | image, environment) = p(s) / sum_{s' consistent} p(s')  ~=  exp(-c(s)/1000) / sum_{i<=k} exp(-c(s_i)/1000)

The sum is taken over the k scenes found (those less than ``min_ratio`` times as probable as the MAP
scene are never enumerated), so the probabilities are exact when every consistent scene is among them
and otherwise an approximation that leaves out the tail's mass (a lower bound on what is left out is not
computed: it is the price of not enumerating every scene). With confident networks the tail is tiny: on
the shipped model the MAP scene alone holds most of the mass (``docs/probabilistic_answers.md``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

from clevr_poc.environments.environment import Environment
from clevr_poc.perception.decoding import (COST_SCALE, DecodedScene, DecodingStatus, ObjectCandidate, decoded_scene,
                                          decoding_symbols)
from clevr_poc.solver.programs import Program
from clevr_poc.solver.ranked_models import ranked_models

#: Default number of scenes (issue #24: "k = 16 scenes costs <= 3x the MAP decode").
DEFAULT_K = 16
#: Default relative probability below which a scene is not enumerated: p(s) < 1e-4 p(MAP) (its weight
#: after normalisation is below 1e-4).
DEFAULT_MIN_RATIO = 1e-4
#: Default most models one enumeration collects (bounds time on very unsure images).
DEFAULT_MAX_MODELS = 512


@dataclass(frozen=True)
class RankedDecoding:
    """The k best consistent decodings of one image's detections.

    Attributes:
        scenes: decoded scenes by descending probability (the first is the MAP scene); empty when no
            consistent scene exists or none was found in time.
        probabilities: their normalised probabilities (same order; sum 1 when not empty).
        complete: every consistent scene at least ``min_ratio`` times as probable as the MAP scene was
            enumerated (the k returned are exactly the k best of those).
        relations_used: whether the relations seen between detections took part (dropped when no scene
            is consistent with them, as in :func:`~clevr_poc.perception.decoding.constraint_decode`).
        interrupted: the time limit stopped a solve call.
    """

    scenes: tuple[DecodedScene, ...]
    probabilities: tuple[float, ...]
    complete: bool
    relations_used: bool
    interrupted: bool


def normalised(costs: Sequence[int]) -> tuple[float, ...]:
    """``exp(-c/COST_SCALE)`` normalised to sum 1 (computed from the smallest cost, so no underflow)."""
    if not costs:
        return ()
    low = min(costs)
    weights = [math.exp(-(c - low) / COST_SCALE) for c in costs]
    total = sum(weights)
    return tuple(w / total for w in weights)


def ranked_decode(candidates: Sequence[ObjectCandidate], environment: Environment, *, k: int = DEFAULT_K,
                  min_ratio: float = DEFAULT_MIN_RATIO, max_models: int = DEFAULT_MAX_MODELS,
                  time_limit: float = 10.0) -> RankedDecoding:
    """The ``k`` most probable scenes of ``candidates`` consistent with ``environment`` (module doc).

    Args:
        candidates: the detections (as for :func:`~clevr_poc.perception.decoding.constraint_decode`).
        environment: the image's environment (constraints and N, the hidden object included).
        k: scenes wanted (>= 1; 1 gives the MAP scene with probability 1).
        min_ratio: in (0, 1]: scenes less than ``min_ratio`` times as probable as the MAP scene are left
            out (the enumeration window is ``round(COST_SCALE * -log(min_ratio))``).
        max_models: most scenes one enumeration collects (>= k).
        time_limit: seconds for each clingo solve call.

    Raises:
        ValueError: ``k < 1``, ``min_ratio`` outside (0, 1], ``max_models < k`` or ``time_limit <= 0``.
    """
    if not 0.0 < min_ratio <= 1.0:
        raise ValueError(f"min_ratio must lie in (0, 1], got {min_ratio}")
    window = int(round(-COST_SCALE * math.log(min_ratio)))
    base = Program().with_knowledge("background.lp", "perception_decoding.lp", "perception_ranking.lp"
                                    ).with_constraints(environment.constraints_asp())
    result = None
    relations = True
    for relations in (True, False):
        program = base.with_facts(decoding_symbols(candidates, environment.num_objects, relations=relations),
                                  ascii=True)
        result = ranked_models(program, k, window, max_models=max_models, time_limit=time_limit)
        if result.models or result.interrupted:
            break
    assert result is not None
    status = DecodingStatus.OPTIMAL if result.optimum_proven else DecodingStatus.INTERRUPTED
    scenes = tuple(decoded_scene(m.symbols, m.cost, status, relations) for m in result.models)
    return RankedDecoding(scenes, normalised([m.cost for m in result.models]), result.complete, relations,
                          result.interrupted)


__all__ = ["DEFAULT_K", "DEFAULT_MAX_MODELS", "DEFAULT_MIN_RATIO", "RankedDecoding", "normalised", "ranked_decode"]
