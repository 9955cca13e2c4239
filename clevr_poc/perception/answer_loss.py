"""NeurASP's semantic loss over the k most probable consistent scenes (issue #24, learning from answers).

The attribute network gives, for every detection ``d`` of an image, log-probabilities of each attribute
value and (through its centre offset, :func:`region_log_probabilities`) of each region; the frozen detector
gives its score ``s_d``. A perceived scene ``s`` (which detections are kept, and each kept detection's
values and region: a :class:`~clevr_poc.perception.decoding.DecodedScene`) then has, as in
``asp/perception_decoding.lp``,

    log p(s) = sum_{d kept} [log s_d + sum_a log p_d(a = v_{d,a}) + log p_d(region = r_d)]
             + sum_{d dropped} log(1 - s_d)                                   (:func:`scene_log_probabilities`)

a differentiable function of the network's outputs. NeurASP (Yang, Ishay & Lee, *NeurASP: Embracing
neural networks into answer set programming*, IJCAI 2020, section 4) trains the network by maximising the
probability of the observation ``O`` ("the answer to the question is the gold set") under the program
``Pi`` (background theory + environment constraints + question):

    P_Pi(O) = sum_{I stable model of Pi, I |= O} P_Pi(I),     L = -log P_Pi(O)

where a stable model's probability is that of its total choice of neural atoms (divided by the number of
stable models of that choice). The total choices here are the perceived scenes; the unseen (hidden)
object is not a neural atom, and the answer is the set of its values over *all* the stable models of a
scene (brave consequences), so the observation is a property of the scene and each consistent scene
counts once (``asp/perception_ranking.lp`` projects onto the detections). A scene that violates the
environment has no stable model and its probability is simply lost: NeurASP does **not** renormalise over
the consistent scenes. :func:`semantic_loss` therefore computes by default (``normalise=False``)

    L = -log sum_{i <= k, answer(s_i) = gold} p(s_i)

over the k scenes the ranked decoder found (:func:`~clevr_poc.perception.ranked_decoding.ranked_decode`):
Scallop's top-k approximation of NeurASP's sum, an upper bound on NeurASP's loss (scenes outside the k
only add mass). Its gradient raises the probability of the scenes that give the gold answer and, because
nothing is renormalised, also the probability of being consistent at all. With ``normalise=True`` the loss
is that of the answer *given* the image and the environment, the distribution the probabilistic answers use
(``P(s | image, environment)``, :mod:`clevr_poc.perception.ranked_decoding`):

    L_norm = -log [sum_{i: answer(s_i) = gold} p(s_i) / sum_{i <= k} p(s_i)]

which is 0 (no gradient) when every scene among the k gives the gold answer.

For the logits ``z_d`` of one attribute of detection ``d``, ``dL/dz_{d,v} = sum_{i in M_d} q_i (p_d(v) -
[v_{d,i} = v])`` with ``M_d`` the matching scenes that keep ``d``, ``q_i = p(s_i) / sum_{j in M} p(s_j)`` the
matching scenes' normalised weights (normalised: minus the same sum over all k scenes with their weights
``p(s_i) / sum_j p(s_j)``); ``tests/test_answer_training.py`` checks both by hand.

Probabilities are used unclipped here (log-softmax), while the decoder's integer costs clip them to
``[1e-6, 1 - 1e-6]`` (:data:`~clevr_poc.perception.decoding.MIN_PROBABILITY`): the ranking can differ from
the exact one for scenes that use values the network gives less than 1e-6, which then weigh nothing.
"""

from __future__ import annotations

from typing import Mapping, Sequence

import torch

from clevr_poc import domain
from clevr_poc.perception.box_geometry import REGION_SPLIT_X, REGION_SPLIT_Y
from clevr_poc.perception.decoding import MIN_PROBABILITY, DecodedScene


def region_log_probabilities(centres: torch.Tensor, sigma: float) -> torch.Tensor:
    """Log-probabilities (D, 4) of regions 0..3 for estimated centres ``centres`` (D, 2) world ``(x, y)``
    with isotropic Gaussian error ``sigma`` (world units, > 0): the logarithm of
    :func:`clevr_poc.perception.box_geometry.region_probabilities`, computed with ``log_ndtr`` (finite and
    differentiable far from the region borders)."""
    if sigma <= 0:
        raise ValueError(f"sigma must be positive, got {sigma}")
    left = torch.special.log_ndtr((REGION_SPLIT_X - centres[:, 0]) / sigma)
    right = torch.special.log_ndtr((centres[:, 0] - REGION_SPLIT_X) / sigma)
    back = torch.special.log_ndtr((centres[:, 1] - REGION_SPLIT_Y) / sigma)
    front = torch.special.log_ndtr((REGION_SPLIT_Y - centres[:, 1]) / sigma)
    # region ids: 0 back-left, 1 back-right, 2 front-left, 3 front-right (box_geometry.region_probabilities)
    return torch.stack([left + back, right + back, left + front, right + front], dim=1)


def scene_log_probabilities(attribute_log_probs: Mapping[str, torch.Tensor], region_log_probs: torch.Tensor,
                            scores: torch.Tensor, scenes: Sequence[DecodedScene]) -> torch.Tensor:
    """``log p(s)`` (k,) of each scene (module doc), differentiable in the log-probabilities.

    Args:
        attribute_log_probs: attribute -> (D, |domain|) log-probabilities of the D candidates, in the
            value order of :data:`clevr_poc.domain.DOMAINS`.
        region_log_probs: (D, 4) log-probabilities of regions 0..3.
        scores: (D,) detection scores (constants; clipped to ``[1e-6, 1 - 1e-6]``).
        scenes: decoded scenes over those D candidates (``keep`` indexes them).

    Raises:
        ValueError: no scene, or a scene that keeps a candidate outside ``range(D)``.
    """
    if not scenes:
        raise ValueError("needs at least one scene")
    count = region_log_probs.shape[0]
    clipped = scores.to(region_log_probs.dtype).clamp(MIN_PROBABILITY, 1.0 - MIN_PROBABILITY)
    log_keep, log_drop = torch.log(clipped), torch.log1p(-clipped)
    out = []
    for scene in scenes:
        if any(not 0 <= d < count for d in scene.keep):
            raise ValueError(f"a scene keeps candidate(s) {list(scene.keep)} of {count}")
        kept = torch.zeros(count, dtype=torch.bool)
        terms = []
        for d, values, region in zip(scene.keep, scene.values, scene.regions):
            kept[d] = True
            terms.append(log_keep[d] + region_log_probs[d, int(region)])
            for attribute in domain.ATTRIBUTES:
                terms.append(attribute_log_probs[attribute][d, domain.DOMAINS[attribute].index(values[attribute])])
        total = log_drop[~kept].sum()
        out.append(total + torch.stack(terms).sum() if terms else total)
    return torch.stack(out)


def semantic_loss(scene_log_probs: torch.Tensor, matches: Sequence[bool], *, normalise: bool = False
                  ) -> torch.Tensor | None:
    """``-log sum_{i: matches[i]} p(s_i)`` (NeurASP, ``normalise=False``), or the same less
    ``-log sum_i p(s_i)`` (``normalise=True``), from ``scene_log_probs`` (k,); None when no scene matches
    (the question gives no signal among these k scenes and is skipped).

    Raises:
        ValueError: ``matches`` and ``scene_log_probs`` differ in length.
    """
    if len(matches) != scene_log_probs.shape[0]:
        raise ValueError(f"{len(matches)} matches for {scene_log_probs.shape[0]} scenes")
    chosen = [i for i, m in enumerate(matches) if m]
    if not chosen:
        return None
    loss = -torch.logsumexp(scene_log_probs[chosen], dim=0)
    if normalise:
        loss = loss + torch.logsumexp(scene_log_probs, dim=0)
    return loss


__all__ = ["region_log_probabilities", "scene_log_probabilities", "semantic_loss"]
