"""What an evaluation yields: :class:`Prediction` (a model's answer), :class:`ExampleResult` (its score),
:class:`GroupScore` and :class:`EvaluationReport` (paper §4.2); the model protocol of the one evaluator,
``evaluate(model, examples) -> EvaluationReport`` (:mod:`clevr_poc.evaluation.evaluator`).

A *model* is a :class:`clevr_poc.evaluation.Model` (:mod:`clevr_poc.evaluation.model_protocol`): a
``name`` and ``predict_batch(examples) -> list[Prediction]``, called with up to ``batch_size`` examples at a time; a
:class:`Prediction` holds the values (None: the model produced no parseable answer, a *parse failure*),
why a prediction failed and the raw model output, kept in the report.

An *example* is a :class:`clevr_poc.dataset_reader.Example` or anything with the same attributes:
``question`` (:class:`~clevr_poc.question.Question` with its gold ``answer``), ``environment``,
``partial_scene``, ``complete_scene`` (may be None) and ``image_path``.

Scores follow paper §4.2 (see :mod:`clevr_poc.evaluation.metrics` for the edge cases). Parse failures
are counted and, by default (``parse_failures="wrong"``), scored 0 on both metrics; with
``parse_failures="exclude"`` the headline metrics are averaged over parsed predictions only (the
failures are still counted and reported).

Breakdowns (each a mapping group -> :class:`GroupScore`):

- ``attribute``: the queried attribute (``color``/``shape``/``size``/``material``);
- ``family``: the question family, i.e. the question template file (``template_filename``,
  e.g. ``one_hop.json``);
- ``template``: one template of a family, ``"<template_filename>#<question_family_index>"``;
- ``num_objects``: objects of the complete scene, the hidden one included (5-9 in the paper's data);
- ``environment``: the environment id (``constraint_type_index``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Mapping, Sequence

from clevr_poc import domain
from clevr_poc._io import atomic_write_json, read_json
from clevr_poc.errors import FormatError

#: Breakdown keys of :class:`EvaluationReport`, in report order.
BREAKDOWNS: tuple[str, ...] = ("attribute", "family", "template", "num_objects", "environment")
#: Policies for parse failures in the headline metrics.
PARSE_FAILURE_POLICIES: tuple[str, ...] = ("wrong", "exclude")
#: Group name used when an example lacks the information a breakdown needs.
UNKNOWN = "unknown"
#: Start of :attr:`Prediction.error` for a question whose image could not be read
#: (:mod:`clevr_poc.evaluation.image_checks`).
IMAGE_FAILURE_PREFIX = "image: "


@dataclass(frozen=True)
class Prediction:
    """A model's answer to one example.

    Attributes:
        values: the predicted answer set, or None for a parse failure.
        error: why there is no answer (e.g. ``"no ###{...}### block in the reply"``); None when parsed.
        raw: the model's raw output (LLM reply, generated ASP program, ...), or None.
        confidence: a probabilistic model's probability that ``values`` is exactly right, in [0, 1], or None.
        marginals: a probabilistic model's ``(value, P(value in answer set))`` pairs (issue #24), or ().
    """

    values: frozenset[str] | None
    error: str | None = None
    raw: str | None = None
    confidence: float | None = None
    marginals: tuple[tuple[str, float], ...] = ()


@dataclass(frozen=True)
class ExampleResult:
    """The score of one example.

    Attributes:
        key: ``image_filename`` of the question (the key of prediction files), or ``"#<position>"``.
        gold: the gold answer set.
        predicted: the predicted set, or None (parse failure).
        exact: exact accuracy of this example, 0.0 or 1.0 (eq. 2).
        jaccard: Jaccard index of this example, in [0, 1] (eq. 3).
        attribute, family, template, num_objects, environment: breakdown groups (strings, or
            :data:`UNKNOWN`).
        error: why the prediction failed (parse failures), else None.
        raw: the model's raw output, if it gave one.
        confidence, marginals: the prediction's (:class:`Prediction`), for calibration
            (:mod:`clevr_poc.evaluation.calibration`).
    """

    key: str
    gold: frozenset[str]
    predicted: frozenset[str] | None
    exact: float
    jaccard: float
    attribute: str = UNKNOWN
    family: str = UNKNOWN
    template: str = UNKNOWN
    num_objects: str = UNKNOWN
    environment: str = UNKNOWN
    error: str | None = None
    raw: str | None = None
    confidence: float | None = None
    marginals: tuple[tuple[str, float], ...] = ()

    @property
    def parsed(self) -> bool:
        return self.predicted is not None

    def group(self, breakdown: str) -> str:
        if breakdown not in BREAKDOWNS:
            raise KeyError(f"unknown breakdown {breakdown!r}; expected one of {BREAKDOWNS}")
        return getattr(self, breakdown)

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "key": self.key, "gold": sorted(self.gold),
            "predicted": None if self.predicted is None else sorted(self.predicted),
            "exact": self.exact, "jaccard": self.jaccard,
            **{name: getattr(self, name) for name in BREAKDOWNS},
        }
        if self.error is not None:
            data["error"] = self.error
        if self.raw is not None:
            data["raw"] = self.raw
        if self.confidence is not None:
            data["confidence"] = self.confidence
        if self.marginals:
            data["marginals"] = dict(self.marginals)
        return data

    @classmethod
    def from_json(cls, data: object, *, source: object = None) -> "ExampleResult":
        if not isinstance(data, Mapping):
            raise FormatError("an example result must be a JSON object", source=source, value=data)
        try:
            predicted = data["predicted"]
            return cls(
                key=str(data["key"]), gold=frozenset(data["gold"]),
                predicted=None if predicted is None else frozenset(predicted),
                exact=float(data["exact"]), jaccard=float(data["jaccard"]),
                **{name: str(data.get(name, UNKNOWN)) for name in BREAKDOWNS},
                error=data.get("error"), raw=data.get("raw"),
                confidence=None if data.get("confidence") is None else float(data["confidence"]),
                marginals=tuple((str(v), float(p)) for v, p in dict(data.get("marginals", {})).items()),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise FormatError(f"bad example result ({exc.__class__.__name__}: {exc})", source=source,
                              field="examples") from None


@dataclass(frozen=True)
class GroupScore:
    """Scores of a group of examples.

    Attributes:
        n: examples in the group.
        exact_accuracy: mean exact accuracy (parse failures per the report's policy).
        jaccard: mean Jaccard index (same policy).
        parse_failures: examples whose prediction is None.
    """

    n: int
    exact_accuracy: float
    jaccard: float
    parse_failures: int

    def to_json(self) -> dict[str, Any]:
        return {"n": self.n, "exact_accuracy": self.exact_accuracy, "jaccard": self.jaccard,
                "parse_failures": self.parse_failures}


def _score(results: Sequence[ExampleResult], policy: str) -> GroupScore:
    failures = sum(1 for r in results if not r.parsed)
    scored = [r for r in results if r.parsed] if policy == "exclude" else list(results)
    if not scored:
        return GroupScore(len(results), 0.0, 0.0, failures)
    return GroupScore(
        len(results),
        sum(r.exact for r in scored) / len(scored),
        sum(r.jaccard for r in scored) / len(scored),
        failures,
    )


def _group_order(breakdown: str, name: str) -> tuple[int, Any, str]:
    if name == UNKNOWN:
        return (2, 0, name)
    if breakdown == "attribute" and name in domain.ATTRIBUTES:
        return (0, domain.ATTRIBUTES.index(name), name)
    if name.lstrip("-").isdigit():
        return (0, int(name), name)
    if breakdown == "template" and "#" in name:
        family, _, index = name.rpartition("#")
        if index.isdigit():
            return (1, (family, int(index)), name)
    return (1, (name, 0), name)


@dataclass(frozen=True)
class EvaluationReport:
    """Scores of one model on one set of examples (paper §4.2).

    Attributes:
        results: per-example scores, in the order of the examples.
        model: model name (column of the Table-2 layout).
        split: the split or dataset name (row of the Table-2 layout), if known.
        parse_failure_policy: ``"wrong"`` (default: failures score 0) or ``"exclude"`` (headline
            metrics over parsed predictions only).
    """

    results: tuple[ExampleResult, ...]
    model: str = "model"
    split: str | None = None
    parse_failure_policy: str = "wrong"
    extra: Mapping[str, Any] = field(default_factory=dict, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "results", tuple(self.results))
        if self.parse_failure_policy not in PARSE_FAILURE_POLICIES:
            raise FormatError(f"parse failure policy must be one of {PARSE_FAILURE_POLICIES}",
                              field="parse_failures", value=self.parse_failure_policy)

    # ------------------------------------------------------------------ headline numbers
    @property
    def overall(self) -> GroupScore:
        return _score(self.results, self.parse_failure_policy)

    @property
    def n(self) -> int:
        """Number of examples evaluated (parse failures included)."""
        return len(self.results)

    @property
    def exact_accuracy(self) -> float:
        """Mean exact accuracy (eq. 2), in [0, 1]."""
        return self.overall.exact_accuracy

    @property
    def jaccard(self) -> float:
        """Mean Jaccard index (eq. 3), in [0, 1]."""
        return self.overall.jaccard

    @property
    def parse_failures(self) -> int:
        """Number of examples whose prediction is None."""
        return sum(1 for r in self.results if not r.parsed)

    @property
    def parse_failure_rate(self) -> float:
        return self.parse_failures / self.n if self.n else 0.0

    @property
    def image_failures(self) -> int:
        """Of :attr:`parse_failures`, the examples whose image could not be read (``evaluate
        --allow-missing-images``: :attr:`Prediction.error` starts with ``"image:"``); the model never saw them."""
        return sum(1 for r in self.results if not r.parsed and (r.error or "").startswith(IMAGE_FAILURE_PREFIX))

    @property
    def model_parse_failures(self) -> int:
        """Parse failures of the questions the model saw: :attr:`parse_failures` less :attr:`image_failures`."""
        return self.parse_failures - self.image_failures

    def failure_reasons(self) -> dict[str, int]:
        """Parse-failure reasons (:attr:`Prediction.error`, or ``"unparseable"``) -> count, most common first."""
        counts: dict[str, int] = {}
        for r in self.results:
            if not r.parsed:
                reason = r.error or "unparseable"
                counts[reason] = counts.get(reason, 0) + 1
        return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))

    def summary(self) -> dict[str, Any]:
        """``{"exact_accuracy": float, "jaccard": float, "n": int}`` (the CLI's last line)."""
        return {"exact_accuracy": self.exact_accuracy, "jaccard": self.jaccard, "n": self.n}

    # ------------------------------------------------------------------ breakdowns
    def breakdown(self, name: str) -> dict[str, GroupScore]:
        """Scores per group of breakdown ``name`` (one of :data:`BREAKDOWNS`), groups in natural order.

        Raises:
            KeyError: unknown breakdown name.
        """
        if name not in BREAKDOWNS:
            raise KeyError(f"unknown breakdown {name!r}; expected one of {BREAKDOWNS}")
        groups: dict[str, list[ExampleResult]] = {}
        for r in self.results:
            groups.setdefault(r.group(name), []).append(r)
        ordered = sorted(groups, key=lambda g: _group_order(name, g))
        return {g: _score(groups[g], self.parse_failure_policy) for g in ordered}

    def breakdowns(self) -> dict[str, dict[str, GroupScore]]:
        """Every breakdown of :data:`BREAKDOWNS`."""
        return {name: self.breakdown(name) for name in BREAKDOWNS}

    def predictions(self) -> dict[str, list[str] | None]:
        """The predictions in the scoring-only file format: key (``image_filename``) -> sorted values, or
        None for a parse failure (``python -m clevr_poc evaluate --predictions`` reads it back)."""
        return {r.key: None if r.predicted is None else sorted(r.predicted) for r in self.results}

    # ------------------------------------------------------------------ JSON
    def to_json(self, *, examples: bool = True) -> dict[str, Any]:
        """JSON document: summary, parse failures, breakdowns and (optionally) per-example results."""
        data: dict[str, Any] = {
            "model": self.model, "split": self.split, **self.summary(),
            "parse_failures": self.parse_failures, "parse_failure_rate": self.parse_failure_rate,
            "parse_failure_policy": self.parse_failure_policy, "image_failures": self.image_failures,
            "model_parse_failures": self.model_parse_failures,
            "failure_reasons": self.failure_reasons(),
            "breakdowns": {name: {g: s.to_json() for g, s in groups.items()}
                           for name, groups in self.breakdowns().items()},
        }
        if self.extra:
            data["extra"] = dict(self.extra)
        if examples:
            data["examples"] = [r.to_json() for r in self.results]
        return data

    def to_file(self, path: str | os.PathLike[str], *, examples: bool = True) -> Path:
        """Write :meth:`to_json` atomically (indented JSON)."""
        return atomic_write_json(path, self.to_json(examples=examples), indent=1)

    @classmethod
    def from_json(cls, data: object, *, source: object = None) -> "EvaluationReport":
        """Rebuild a report written by :meth:`to_json` (with ``examples=True``).

        Raises:
            FormatError: not a report, or written without per-example results.
        """
        if not isinstance(data, Mapping):
            raise FormatError("a report must be a JSON object", source=source, value=type(data).__name__)
        if not isinstance(data.get("examples"), list):
            raise FormatError("the report has no per-example results (written with examples=False?)",
                              source=source, field="examples")
        results = tuple(ExampleResult.from_json(r, source=source) for r in data["examples"])
        return cls(results, model=str(data.get("model", "model")), split=data.get("split"),
                   parse_failure_policy=data.get("parse_failure_policy", "wrong"),
                   extra=dict(data.get("extra", {})))

    @classmethod
    def from_file(cls, path: str | os.PathLike[str]) -> "EvaluationReport":
        return cls.from_json(read_json(path), source=Path(path))


def normalize_prediction(value: object, *, where: str = "prediction") -> Prediction:
    """Turn a model's return value into a :class:`Prediction`.

    Accepts None, a :class:`Prediction`, or a set / frozenset / list / tuple of strings.

    Raises:
        FormatError: anything else (a bare string, non-string values, ...), naming ``where``.
    """
    if value is None:
        return Prediction(None)
    if isinstance(value, Prediction):
        if value.values is not None:
            return replace(value, values=normalize_prediction(value.values, where=where).values)
        return value
    if isinstance(value, (str, bytes)) or not isinstance(value, (set, frozenset, list, tuple)):
        raise FormatError("a prediction must be a set of values (or None for a parse failure)",
                          field=where, value=value if isinstance(value, str) else type(value).__name__)
    for item in value:
        if not isinstance(item, str):
            raise FormatError("predicted values must be strings", field=where, value=item)
    return Prediction(frozenset(value))
