"""The examples of a dataset folder the explorer offers: filtered by split, question family and outcome,
wrong answers first when an evaluation's ``predictions.json`` is given.

A predictions file is the one ``evaluate --out`` writes (``image_filename`` -> list of values, or null for
a parse failure); outcomes are ``correct``, ``wrong``, ``parse failure`` (null) and ``unscored`` (no
prediction for the question, or no file).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

from clevr_poc.errors import FormatError

OUTCOMES: tuple[str, ...] = ("wrong", "parse failure", "correct", "unscored")
#: Most choices a page lists (the rest are reachable by filtering).
MAX_CHOICES = 2_000


@dataclass(frozen=True)
class Choice:
    """One example on offer: its position in the dataset, label and the fields it is filtered by."""

    index: int
    label: str
    split: str
    family: int | None
    outcome: str
    predicted: tuple[str, ...] | None = None


def read_predictions(path: str | os.PathLike[str]) -> dict[str, Any]:
    """A predictions file (``image_filename`` -> list of values or null).

    Raises:
        FormatError: unreadable, not a JSON object, or a value that is neither a list of strings nor null.
    """
    from clevr_poc._io import read_json
    from clevr_poc.evaluation.report import normalize_prediction

    data = read_json(path, what="a predictions file")
    if not isinstance(data, Mapping):
        raise FormatError("must be a JSON object mapping image_filename to a list of values or null", source=path,
                          value=type(data).__name__)
    return {str(k): normalize_prediction(v, where=str(k)).values for k, v in data.items()}


class Catalog:
    """The examples of one dataset folder (any layout ``clevr_poc.load_dataset`` reads) and their outcomes.

    Raises:
        FormatError: a missing or bad dataset folder or predictions file (naming it).
    """

    def __init__(self, dataset: str | os.PathLike[str], predictions: str | os.PathLike[str] | None = None):
        from clevr_poc.dataset_formats import load_dataset

        if not Path(dataset).is_dir():
            raise FormatError("dataset folder not found", source=dataset)
        self.dataset = load_dataset(dataset)
        self.predictions = read_predictions(predictions) if predictions is not None else None
        self.choices = [self._choice(i, q) for i, q in enumerate(self.dataset.questions())]

    def _choice(self, index: int, question: Any) -> Choice:
        key = question.image_filename or str(index)
        outcome, predicted = "unscored", None
        if self.predictions is not None and key in self.predictions:
            values = self.predictions[key]
            if values is None:
                outcome = "parse failure"
            else:
                predicted = tuple(sorted(values))
                outcome = "correct" if frozenset(values) == question.answer else "wrong"
        label = f"{question.split} #{question.image_index}: {question.text}"
        return Choice(index, label if len(label) <= 140 else label[:137] + "...", question.split or "",
                      question.question_family_index, outcome, predicted)

    @property
    def splits(self) -> list[str]:
        return sorted({c.split for c in self.choices})

    @property
    def families(self) -> list[int]:
        return sorted({c.family for c in self.choices if c.family is not None})

    def filter(self, split: str | None = None, family: int | None = None, outcome: str | None = None
               ) -> list[Choice]:
        """The choices of ``split`` / ``family`` / ``outcome`` (None or "all": any), wrong answers first,
        then parse failures, correct and unscored ones, each in dataset order; at most :data:`MAX_CHOICES`."""
        chosen = [c for c in self.choices
                  if split in (None, "all", c.split) and family in (None, "all", c.family)
                  and outcome in (None, "all", c.outcome)]
        chosen.sort(key=lambda c: (OUTCOMES.index(c.outcome), c.index))
        return chosen[:MAX_CHOICES]

    def example(self, index: int) -> Any:
        """The :class:`~clevr_poc.dataset_reader.Example` at ``index``.

        Raises:
            FormatError: no such index, or the example's files are bad.
        """
        if not isinstance(index, int) or not 0 <= index < len(self.choices):
            raise FormatError(f"no example with this index (0..{len(self.choices) - 1})", field="example",
                              value=index)
        return self.dataset[index]


def family_value(text: Any) -> int | None:
    """A family filter from the page (``"all"``/None -> None, ``"3"`` -> 3).

    Raises:
        FormatError: not an integer.
    """
    if text in (None, "", "all"):
        return None
    try:
        return int(text)
    except (TypeError, ValueError):
        raise FormatError("not a question family index", field="family", value=text) from None


def choice_titles(choices: Sequence[Choice]) -> list[tuple[str, int]]:
    """``(title, index)`` pairs for a drop-down: the outcome (and prediction) before the label."""
    titles = []
    for c in choices:
        mark = {"wrong": "✗", "parse failure": "?", "correct": "✓", "unscored": "·"}[c.outcome]
        titles.append((f"{mark} {c.label}", c.index))
    return titles
