"""Answer-set metrics of CLEVR-POC: exact accuracy (paper §4.2, eq. 2) and the Jaccard index (eq. 3).

Let A be the gold answer set and P the predicted set (both sets of attribute values, e.g.
``{"small", "medium"}``).

- **Exact accuracy** (eq. 2): 1 if ``A == P`` (``x in A <=> x in P`` for every x), else 0.
- **Jaccard index** (eq. 3): ``|A ∩ P| / |A ∪ P|``, in [0, 1].

Edge cases (the paper is silent; decided here):

- **Parse failure** (``P is None``: the model produced no parseable answer): exact 0, Jaccard 0, and the
  example is counted as a parse failure by the evaluator.
- **Both sets empty** (``A == P == {}``): Jaccard **1.0**. Eq. 3 is 0/0 there; we take the limit that
  keeps the two metrics consistent: ``jaccard == 1`` exactly when ``exact == 1``, and
  ``jaccard >= exact`` always. Gold answers of generated CLEVR-POC questions are never empty
  (``1 <= |A| < |domain|``, §3.4), so this only matters for hand-made data.
- **Empty prediction, non-empty gold** (e.g. the reasoner found the program unsatisfiable): a valid
  (parsed) prediction scoring exact 0 and Jaccard 0.
- Values are compared as strings; a value of another attribute (``"cube"`` for a colour question) is
  simply a wrong value (it enlarges the union). Duplicates in a list collapse (set semantics).

The same metrics on the 17-label multi-hot form (§4.1.1; :data:`clevr_poc.domain.LABELS` order) are
:func:`exact_match_scores` / :func:`jaccard_scores` over ``(n, 17)`` arrays; they agree with the set
forms example by example (tested).
"""

from __future__ import annotations

from typing import Callable, Iterable, Sequence

import numpy as np

from clevr_poc import domain
from clevr_poc.errors import FormatError

#: Number of labels of the multi-label formulation (paper §4.1.1).
NUM_LABELS = len(domain.LABELS)
#: label -> column index in multi-hot arrays.
LABEL_INDEX: dict[str, int] = {label: i for i, label in enumerate(domain.LABELS)}

AnswerSet = frozenset[str]


def exact_match(gold: Iterable[str], predicted: Iterable[str] | None) -> float:
    """Exact accuracy of one example (paper eq. 2): 1.0 if the sets are equal, else 0.0.

    Args:
        gold: the gold answer values.
        predicted: the predicted values, or None for a parse failure (scores 0.0).
    """
    if predicted is None:
        return 0.0
    return 1.0 if frozenset(gold) == frozenset(predicted) else 0.0


def jaccard_index(gold: Iterable[str], predicted: Iterable[str] | None) -> float:
    """Jaccard index of one example (paper eq. 3): ``|A ∩ P| / |A ∪ P|`` in [0, 1].

    Both sets empty gives 1.0 (see the module docstring); None (parse failure) gives 0.0.
    """
    if predicted is None:
        return 0.0
    a, p = frozenset(gold), frozenset(predicted)
    union = a | p
    if not union:
        return 1.0
    return len(a & p) / len(union)


def _mean_score(score: Callable[[Iterable[str], Iterable[str] | None], float], golds: Sequence[Iterable[str]],
                predictions: Sequence[Iterable[str] | None]) -> float:
    """Mean of ``score(gold, prediction)`` over examples (0.0 for no examples); raises FormatError when
    the two sequences have different lengths."""
    _same_length(golds, predictions)
    if not golds:
        return 0.0
    return float(sum(score(g, p) for g, p in zip(golds, predictions)) / len(golds))


def exact_accuracy(golds: Sequence[Iterable[str]], predictions: Sequence[Iterable[str] | None]) -> float:
    """Mean of :func:`exact_match` over examples (0.0 for no examples).

    Raises:
        FormatError: the two sequences have different lengths.
    """
    return _mean_score(exact_match, golds, predictions)


def mean_jaccard(golds: Sequence[Iterable[str]], predictions: Sequence[Iterable[str] | None]) -> float:
    """Mean of :func:`jaccard_index` over examples (0.0 for no examples).

    Raises:
        FormatError: the two sequences have different lengths.
    """
    return _mean_score(jaccard_index, golds, predictions)


def _same_length(a: Sequence[object], b: Sequence[object]) -> None:
    if len(a) != len(b):
        raise FormatError("gold and predicted answers must have the same length", field="length",
                          value=(len(a), len(b)))


# ---------------------------------------------------------------------------- multi-hot form
def to_multi_hot(answer_sets: Sequence[Iterable[str] | None]) -> np.ndarray:
    """Encode answer sets as a multi-hot array over :data:`clevr_poc.domain.LABELS`.

    Args:
        answer_sets: n sets of values; None (a parse failure) becomes an all-False row — keep a
            separate ``parsed`` mask (see :func:`parsed_mask`) to score it as wrong.

    Returns:
        ``np.ndarray`` of shape ``(n, 17)``, dtype bool; column j is ``LABELS[j]``.

    Raises:
        FormatError: a value is not one of the 17 labels.
    """
    out = np.zeros((len(answer_sets), NUM_LABELS), dtype=bool)
    for row, values in enumerate(answer_sets):
        if values is None:
            continue
        for value in values:
            column = LABEL_INDEX.get(value) if isinstance(value, str) else None
            if column is None:
                raise FormatError(f"not one of the {NUM_LABELS} labels {list(domain.LABELS)}",
                                  field=f"answer_sets[{row}]", value=value)
            out[row, column] = True
    return out


def parsed_mask(answer_sets: Sequence[Iterable[str] | None]) -> np.ndarray:
    """``(n,)`` bool array: True where the answer is a set, False where it is None (parse failure)."""
    return np.array([values is not None for values in answer_sets], dtype=bool)


def from_multi_hot(array: np.ndarray, *, threshold: float = 0.5) -> list[AnswerSet]:
    """Decode a ``(n, 17)`` multi-hot array (bool, or float scores/probabilities) to answer sets.

    Float entries ``>= threshold`` are on (0.5 by default, the usual cut for sigmoid outputs).
    """
    binary = _binarize(array, "array", threshold)
    return [frozenset(domain.LABELS[j] for j in np.flatnonzero(row)) for row in binary]


def exact_match_scores(gold: np.ndarray, predicted: np.ndarray, *, parsed: np.ndarray | None = None,
                       threshold: float = 0.5) -> np.ndarray:
    """Per-example exact accuracy (eq. 2) on multi-hot arrays.

    Args:
        gold, predicted: shape ``(n, 17)``, dtype bool, or float (entries ``>= threshold`` are on);
            column order :data:`clevr_poc.domain.LABELS`.
        parsed: optional ``(n,)`` bool mask; rows where it is False are parse failures and score 0.
        threshold: binarisation threshold of float arrays.

    Returns:
        ``(n,)`` float64 array of 0.0 / 1.0.

    Raises:
        FormatError: wrong shapes or dtypes.
    """
    g, p, ok = _prepare(gold, predicted, parsed, threshold)
    return (np.all(g == p, axis=1) & ok).astype(np.float64)


def jaccard_scores(gold: np.ndarray, predicted: np.ndarray, *, parsed: np.ndarray | None = None,
                   threshold: float = 0.5) -> np.ndarray:
    """Per-example Jaccard index (eq. 3) on multi-hot arrays; arguments as :func:`exact_match_scores`.

    Rows where both gold and prediction are all-False score 1.0 (module docstring); parse failures 0.

    Returns:
        ``(n,)`` float64 array with values in [0, 1].
    """
    g, p, ok = _prepare(gold, predicted, parsed, threshold)
    intersection = np.sum(g & p, axis=1)
    union = np.sum(g | p, axis=1)
    scores = np.where(union == 0, 1.0, intersection / np.maximum(union, 1))
    return np.where(ok, scores, 0.0).astype(np.float64)


def _binarize(array: np.ndarray, name: str, threshold: float) -> np.ndarray:
    array = np.asarray(array)
    if array.ndim != 2 or array.shape[1] != NUM_LABELS:
        raise FormatError(f"must have shape (n, {NUM_LABELS})", field=name, value=array.shape)
    if array.dtype == bool:
        return array
    if np.issubdtype(array.dtype, np.integer) or np.issubdtype(array.dtype, np.floating):
        return array >= threshold
    raise FormatError("must be a bool, integer or float array", field=name, value=str(array.dtype))


def _prepare(gold: np.ndarray, predicted: np.ndarray, parsed: np.ndarray | None,
             threshold: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    g = _binarize(gold, "gold", threshold)
    p = _binarize(predicted, "predicted", threshold)
    if g.shape != p.shape:
        raise FormatError("gold and predicted must have the same shape", field="shape", value=(g.shape, p.shape))
    if parsed is None:
        ok = np.ones(g.shape[0], dtype=bool)
    else:
        ok = np.asarray(parsed, dtype=bool)
        if ok.shape != (g.shape[0],):
            raise FormatError(f"must have shape ({g.shape[0]},)", field="parsed", value=ok.shape)
    return g, p, ok
