"""The trained part of the CLIP baseline: a feed-forward multi-label classifier over the 17 labels,
its weighted binary cross-entropy loss (paper eq. 1) and the decoding of probabilities to answer sets.

Loss (paper §4.1.1, eq. 1, after Ho and Wookey 2019), per label, with p = sigmoid(logit)::

    WCE(y, p) = -(w_pos * y * log(p) + w_neg * (1 - y) * log(1 - p))

averaged over labels and examples. Two weightings:

- ``"positives"`` (default; the paper's eq. 1): ``w_pos = beta``, ``w_neg = 1``; beta > 1 penalises
  false negatives (a label of the answer predicted off), since most of the 17 labels are 0;
- ``"negatives"`` (the official code, ``engine.py``: ``torch.where(targets > 0, targets, 5)``):
  ``w_pos = 1``, ``w_neg = beta`` with beta = 5 there, i.e. false *positives* cost more — the opposite
  of the paper's text.

Default ``beta`` = :data:`DEFAULT_BETA` = 5.0: the official code's weight, and close to the ratio of
negative to positive labels (the balancing weight of Ho and Wookey; 4.5 on a generated 100-question
dataset whose mean answer has 3.1 values). The paper gives no value ("set > 1").

Decoding: a label is on when its probability is >= ``threshold`` (default 0.5, the official code's
``validation_threshold``). With ``restrict="attribute"`` only the queried attribute's labels can be on
(the attribute read from the question's ASP query, i.e. question-type metadata); the default
``restrict="none"`` thresholds all 17 labels, as the paper's and the official model do.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import torch
from torch import nn

from clevr_poc import domain
from clevr_poc.errors import FormatError
from clevr_poc.evaluation.metrics import LABEL_INDEX, NUM_LABELS

#: Loss weightings (module docstring).
WEIGHTINGS: tuple[str, ...] = ("positives", "negatives")
#: Default beta of eq. 1 (module docstring).
DEFAULT_BETA = 5.0
#: Default decision threshold on the sigmoid outputs (official code).
DEFAULT_THRESHOLD = 0.5
#: Prediction restrictions (module docstring).
RESTRICTIONS: tuple[str, ...] = ("none", "attribute")


def weighted_bce(logits: torch.Tensor, targets: torch.Tensor, *, beta: float = DEFAULT_BETA,
                 weighting: str = "positives") -> torch.Tensor:
    """Weighted binary cross-entropy of paper eq. 1, averaged over all entries.

    Computed from logits with log-sigmoid (numerically stable): ``log p = logsigmoid(z)``,
    ``log(1 - p) = logsigmoid(-z)``.

    Args:
        logits: ``(n, 17)`` float tensor (pre-sigmoid scores).
        targets: ``(n, 17)`` tensor of 0/1 (float or bool).
        beta: the weight (> 0; the paper sets it > 1).
        weighting: ``"positives"`` (eq. 1: beta on y = 1 terms) or ``"negatives"`` (official code: beta
            on y = 0 terms).

    Returns:
        Scalar tensor (mean over ``n * 17`` entries).

    Raises:
        FormatError: unknown weighting, beta <= 0, or shapes differ.
    """
    if weighting not in WEIGHTINGS:
        raise FormatError(f"must be one of {WEIGHTINGS}", field="weighting", value=weighting)
    if not beta > 0:
        raise FormatError("must be > 0", field="beta", value=beta)
    if logits.shape != targets.shape:
        raise FormatError("logits and targets must have the same shape", field="shape",
                          value=(tuple(logits.shape), tuple(targets.shape)))
    y = targets.to(logits.dtype)
    w_pos, w_neg = (beta, 1.0) if weighting == "positives" else (1.0, beta)
    loss = -(w_pos * y * nn.functional.logsigmoid(logits) + w_neg * (1 - y) * nn.functional.logsigmoid(-logits))
    return loss.mean()


class MultiLabelHead(nn.Module):
    """Feed-forward classifier: ``Dropout -> [Linear -> ReLU -> Dropout] x len(hidden) -> Linear(17)``.

    ``hidden=()`` is the official code's single linear layer (with dropout 0.1 on its input).

    Args:
        input_dim: width of the concatenated embeddings (512 + 512 [+ 768] for ViT-B-32 and GPT-2).
        hidden: hidden layer widths.
        dropout: dropout probability on the input and after each hidden layer.

    ``forward(x: (n, input_dim) float) -> (n, 17)`` logits.
    """

    def __init__(self, input_dim: int, hidden: Sequence[int] = (512,), dropout: float = 0.1) -> None:
        super().__init__()
        if input_dim < 1 or any(h < 1 for h in hidden) or not 0 <= dropout < 1:
            raise FormatError("bad head shape", field="head", value=(input_dim, tuple(hidden), dropout))
        layers: list[nn.Module] = [nn.Dropout(dropout)]
        width = input_dim
        for size in hidden:
            layers += [nn.Linear(width, size), nn.ReLU(), nn.Dropout(dropout)]
            width = size
        layers.append(nn.Linear(width, NUM_LABELS))
        self.net = nn.Sequential(*layers)
        self.input_dim = input_dim
        self.hidden = tuple(hidden)
        self.dropout = dropout

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


def attribute_mask(attributes: Sequence[str | None]) -> np.ndarray:
    """``(n, 17)`` bool: True on the labels of each example's attribute (all True where it is None)."""
    mask = np.ones((len(attributes), NUM_LABELS), dtype=bool)
    for row, attribute in enumerate(attributes):
        if attribute in domain.DOMAINS:
            mask[row] = False
            for value in domain.DOMAINS[attribute]:
                mask[row, LABEL_INDEX[value]] = True
    return mask


def decode(probabilities: np.ndarray, *, threshold: float = DEFAULT_THRESHOLD, restrict: str = "none",
           attributes: Sequence[str | None] | None = None) -> list[frozenset[str]]:
    """Answer sets from ``(n, 17)`` probabilities: labels with ``p >= threshold``, optionally only those of
    the queried attribute (``restrict="attribute"``, needs ``attributes``).

    Raises:
        FormatError: bad shape, threshold outside (0, 1), unknown restriction, or missing attributes.
    """
    probabilities = np.asarray(probabilities)
    if probabilities.ndim != 2 or probabilities.shape[1] != NUM_LABELS:
        raise FormatError(f"must have shape (n, {NUM_LABELS})", field="probabilities", value=probabilities.shape)
    if not 0 < threshold < 1:
        raise FormatError("must be in (0, 1)", field="threshold", value=threshold)
    if restrict not in RESTRICTIONS:
        raise FormatError(f"must be one of {RESTRICTIONS}", field="restrict", value=restrict)
    on = probabilities >= threshold
    if restrict == "attribute":
        if attributes is None or len(attributes) != len(on):
            raise FormatError("restrict='attribute' needs one attribute per example", field="attributes")
        on &= attribute_mask(attributes)
    return [frozenset(domain.LABELS[j] for j in np.flatnonzero(row)) for row in on]
