"""The seam between the evaluator and the models it scores: :class:`Model` (what
:func:`~clevr_poc.evaluation.evaluate` calls), :class:`ExampleModel` (a base for models that answer one
example at a time) and :class:`FunctionModel` (a function as a model).

Every model of the library is a :class:`Model`: :class:`clevr_poc.pipeline.Pipeline` (NS-VQA), the CLIP
baselines, the stand-alone LLM and the VLM baselines, :class:`~clevr_poc.evaluation.PredictionTable`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Set
from typing import TYPE_CHECKING, Callable, Protocol, Sequence, runtime_checkable

from clevr_poc.evaluation.report import Prediction, normalize_prediction

if TYPE_CHECKING:
    from clevr_poc.dataset_reader import Example

#: What a one-example model function may return: a :class:`Prediction`, a set of values, or None (a parse
#: failure).
PredictionLike = Prediction | Set[str] | Sequence[str] | None


@runtime_checkable
class Model(Protocol):
    """An evaluator model (paper §4.2).

    Attributes:
        name: the model's name in reports (a Table-2 column).
    """

    name: str

    def predict_batch(self, examples: Sequence["Example"]) -> list[Prediction]:
        """One :class:`Prediction` per example, in order (a failure is a Prediction with ``values`` None
        and the reason in ``error``)."""
        ...


class ExampleModel(ABC):
    """A :class:`Model` that answers one example at a time: implement :meth:`predict_detailed` and set
    ``name``; :meth:`predict_batch` and :meth:`predict` follow."""

    name: str

    @abstractmethod
    def predict_detailed(self, example: "Example") -> Prediction:
        """The :class:`Prediction` of one example."""

    def predict(self, example: "Example") -> frozenset[str] | None:
        """The predicted answer set, or None for a parse failure."""
        return self.predict_detailed(example).values

    def predict_batch(self, examples: Sequence["Example"]) -> list[Prediction]:
        """:meth:`predict_detailed` of each example, in order."""
        return [self.predict_detailed(example) for example in examples]


class FunctionModel(ExampleModel):
    """A function ``example -> Prediction | set of values | None`` as a :class:`Model`.

    Args:
        function: the model function (None: a parse failure).
        name: the model name in reports (default: the function's ``__name__``, else its class name).

    Raises (when called):
        FormatError: the function returned something else (a bare string, non-string values, ...).
    """

    def __init__(self, function: Callable[["Example"], PredictionLike], name: str | None = None) -> None:
        self.function = function
        self.name = name or getattr(function, "__name__", None) or type(function).__name__

    def __repr__(self) -> str:
        return f"FunctionModel({self.name!r})"

    def predict_detailed(self, example: "Example") -> Prediction:
        return normalize_prediction(self.function(example), where=self.name)


__all__ = ["ExampleModel", "FunctionModel", "Model", "PredictionLike"]
