"""Scoring predictions already made: :func:`score_predictions` (the scoring-only mode of ``python -m
clevr_poc evaluate --predictions``) and :class:`PredictionTable`, the evaluator model that answers from a
table of predictions (used by it and by ``python -m clevr_poc demo``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable, Mapping, Sequence

from clevr_poc import domain
from clevr_poc.errors import FormatError
from clevr_poc.evaluation.evaluator import evaluate, example_key
from clevr_poc.evaluation.model_protocol import ExampleModel
from clevr_poc.evaluation.report import EvaluationReport, Prediction

if TYPE_CHECKING:
    from clevr_poc.dataset_reader import Example


def score_predictions(examples: Iterable["Example"], predictions: Mapping[str, Any], *, model: str = "predictions",
                      split: str | None = None, parse_failures: str = "wrong") -> EvaluationReport:
    """Scoring-only mode: score ``predictions`` (``image_filename`` -> values or None) on ``examples``.

    Every example's key (:func:`example_key`) must be in ``predictions`` and vice versa.

    Raises:
        FormatError: a missing key, an extra key, or a value that is not a list of labels or null (the
            message names the key and the value).
    """
    examples = list(examples)
    keys = [example_key(e, i) for i, e in enumerate(examples)]
    seen: set[str] = set()
    for key in keys:
        if key in seen:
            raise FormatError("two questions share this image_filename; predictions cannot be keyed by it",
                              field="image_filename", value=key)
        seen.add(key)
    missing = [k for k in keys if k not in predictions]
    if missing:
        raise FormatError(f"no prediction for {len(missing)} of {len(keys)} questions (the first one missing "
                          f"is {missing[0]!r})")
    extra = sorted(k for k in predictions if k not in seen)
    if extra:
        raise FormatError(f"{len(extra)} prediction key(s) match no question of the split (the first one is "
                          f"{extra[0]!r})")
    table = PredictionTable(model, examples, {k: _prediction_from_json(predictions[k], k) for k in keys})
    return evaluate(table, examples, progress=False, name=model, split=split, parse_failures=parse_failures)


def _prediction_from_json(value: object, key: str) -> Prediction:
    if value is None:
        return Prediction(None, "null in the predictions file")
    if not isinstance(value, list):
        raise FormatError("must be a list of values or null", field=key, value=value)
    for item in value:
        if not isinstance(item, str) or item not in domain.ATTRIBUTE_OF_VALUE:
            raise FormatError(f"not one of the {len(domain.LABELS)} labels {sorted(domain.LABELS)}",
                              field=key, value=item)
    return Prediction(frozenset(value))


class PredictionTable(ExampleModel):
    """An evaluator model answering from predictions already made.

    The example at position ``i`` of ``examples`` is answered with ``predictions[example_key(example, i)]``
    (:func:`~clevr_poc.evaluation.evaluator.example_key`: its ``image_filename``, else ``"#<i>"``), the
    keys :func:`~clevr_poc.evaluation.evaluate` uses; an example is recognised by identity, so the table
    answers the same example objects however the evaluator batches them, as often as it is asked.

    Args:
        name: the model name in reports.
        examples: the examples the predictions were made for, in order.
        predictions: example key -> :class:`Prediction`.

    Raises:
        FormatError: an example's key is missing from ``predictions``, the same example object is listed
            twice under different keys, or (when asked) an example the table was not made for.
    """

    def __init__(self, name: str, examples: Sequence["Example"], predictions: Mapping[str, Prediction]) -> None:
        self.name = name
        self._examples = list(examples)  # keeps the ids below valid
        self._by_example: dict[int, Prediction] = {}
        for position, example in enumerate(self._examples):
            key = example_key(example, position)
            if key not in predictions:
                raise FormatError("no prediction for this example", field="predictions", value=key)
            known = self._by_example.get(id(example))
            if known is not None and known is not predictions[key]:
                raise FormatError("the same example is listed twice with different predictions",
                                  field="examples", value=key)
            self._by_example[id(example)] = predictions[key]

    def predict_detailed(self, example: "Example") -> Prediction:
        """The prediction made for ``example`` (one of the table's examples)."""
        try:
            return self._by_example[id(example)]
        except KeyError:
            raise FormatError("not one of the examples this prediction table was made for",
                              field="example") from None
