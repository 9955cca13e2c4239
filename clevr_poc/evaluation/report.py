"""One evaluator for every model: ``evaluate(model, examples) -> EvaluationReport``.

A *model* is any object with ``predict(example) -> set[str] | None`` (None: the model produced no
parseable answer, a *parse failure*). Optional, used when present (first match wins):

- ``predict_batch(examples) -> list[set[str] | None | Prediction]`` — called with up to ``batch_size``
  examples at a time;
- ``predict_detailed(example) -> Prediction`` — the values plus why a prediction failed and the raw
  model output, kept in the report.

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

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence

from clevr_poc import domain
from clevr_poc._io import atomic_write_json, read_json
from clevr_poc.errors import FormatError
from clevr_poc.evaluation.metrics import exact_match, jaccard_index
from clevr_poc.progress import progress_bar

#: Breakdown keys of :class:`EvaluationReport`, in report order.
BREAKDOWNS: tuple[str, ...] = ("attribute", "family", "template", "num_objects", "environment")
#: Policies for parse failures in the headline metrics.
PARSE_FAILURE_POLICIES: tuple[str, ...] = ("wrong", "exclude")
#: Group name used when an example lacks the information a breakdown needs.
UNKNOWN = "unknown"


@dataclass(frozen=True)
class Prediction:
    """A model's answer to one example.

    Attributes:
        values: the predicted answer set, or None for a parse failure.
        error: why there is no answer (e.g. ``"no ###{...}### block in the reply"``); None when parsed.
        raw: the model's raw output (LLM reply, generated ASP program, ...), or None.
    """

    values: frozenset[str] | None
    error: str | None = None
    raw: str | None = None


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
        return data

    @classmethod
    def from_json(cls, data: Any, *, source: object = None) -> "ExampleResult":
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
            "parse_failure_policy": self.parse_failure_policy,
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
    def from_json(cls, data: Any, *, source: object = None) -> "EvaluationReport":
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


# ---------------------------------------------------------------------------- evaluation
def normalize_prediction(value: Any, *, where: str = "prediction") -> Prediction:
    """Turn a model's return value into a :class:`Prediction`.

    Accepts None, a :class:`Prediction`, or a set / frozenset / list / tuple of strings.

    Raises:
        FormatError: anything else (a bare string, non-string values, ...), naming ``where``.
    """
    if value is None:
        return Prediction(None)
    if isinstance(value, Prediction):
        if value.values is not None:
            return Prediction(normalize_prediction(value.values, where=where).values, value.error, value.raw)
        return value
    if isinstance(value, (str, bytes)) or not isinstance(value, (set, frozenset, list, tuple)):
        raise FormatError("a prediction must be a set of values (or None for a parse failure)",
                          field=where, value=value if isinstance(value, str) else type(value).__name__)
    for item in value:
        if not isinstance(item, str):
            raise FormatError("predicted values must be strings", field=where, value=item)
    return Prediction(frozenset(value))


def example_groups(example: Any) -> dict[str, str]:
    """The breakdown groups of an example (see the module docstring)."""
    question = example.question
    attribute = question.query_attribute
    gold = question.answer or frozenset()
    if attribute is None and gold:
        owners = {domain.ATTRIBUTE_OF_VALUE.get(v) for v in gold}
        if len(owners) == 1 and None not in owners:
            attribute = owners.pop()
    family = question.template_filename or UNKNOWN
    if question.template_filename is not None and question.question_family_index is not None:
        template = f"{question.template_filename}#{question.question_family_index}"
    else:
        template = UNKNOWN
    complete = getattr(example, "complete_scene", None)
    environment = getattr(example, "environment", None)
    if complete is not None:
        num_objects = str(len(complete))
    elif environment is not None:
        num_objects = str(environment.num_objects)
    else:
        num_objects = UNKNOWN
    env_id = question.environment_id
    if env_id is None and environment is not None:
        env_id = environment.id
    return {"attribute": attribute or UNKNOWN, "family": family, "template": template,
            "num_objects": num_objects, "environment": UNKNOWN if env_id is None else str(env_id)}


def example_key(example: Any, position: int) -> str:
    """``image_filename`` of the example's question (or scene), else ``"#<position>"``."""
    name = getattr(example.question, "image_filename", None)
    if not name:
        scene = getattr(example, "partial_scene", None)
        name = getattr(scene, "image_filename", None)
    return name or f"#{position}"


def score_example(example: Any, prediction: Prediction, position: int = 0) -> ExampleResult:
    """Score one prediction against the example's gold answer.

    Raises:
        FormatError: the example's question has no gold answer.
    """
    key = example_key(example, position)
    gold = example.question.answer
    if gold is None:
        raise FormatError("the question has no gold answer (unlabelled data cannot be scored)",
                          source=key, field="answer")
    return ExampleResult(
        key=key, gold=frozenset(gold), predicted=prediction.values,
        exact=exact_match(gold, prediction.values), jaccard=jaccard_index(gold, prediction.values),
        **example_groups(example), error=prediction.error if prediction.values is None else None,
        raw=prediction.raw,
    )


def _chunks(items: Iterable[Any], size: int) -> Iterator[list[Any]]:
    chunk: list[Any] = []
    for item in items:
        chunk.append(item)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def model_name(model: Any) -> str:
    """``model.name`` if the model has one, else its class name."""
    return str(getattr(model, "name", None) or type(model).__name__)


def evaluate(model: Any, examples: Iterable[Any], progress: bool = True, *, name: str | None = None,
             split: str | None = None, batch_size: int = 32, parse_failures: str = "wrong",
             on_result: Callable[[ExampleResult], None] | None = None,
             checkpoint: str | os.PathLike[str] | None = None) -> EvaluationReport:
    """Run ``model`` on every example and score it (exact accuracy eq. 2, Jaccard eq. 3).

    Args:
        model: an object with ``predict(example)`` (and optionally ``predict_batch`` /
            ``predict_detailed``; see the module docstring).
        examples: labelled examples (an iterable; consumed once).
        progress: show a tqdm progress bar (when tqdm is installed).
        name: model name in the report (default: ``model.name`` or the class name).
        split: split / dataset name recorded in the report.
        batch_size: examples per ``predict_batch`` call (>= 1).
        parse_failures: ``"wrong"`` (default) or ``"exclude"`` (see :class:`EvaluationReport`).
        on_result: called with each :class:`ExampleResult` as soon as it is scored (logging, early
            inspection).
        checkpoint: a JSON-lines file of predictions made so far (created if missing). Every prediction
            is appended (and flushed) as soon as it is made; examples already in the file are not sent
            to the model again, so an interrupted run (e.g. thousands of LLM calls) resumes where it
            stopped. The file records the model name; another model's file is refused.

    Returns:
        :class:`EvaluationReport`.

    Raises:
        FormatError: a model returned something that is not a set of strings or None, returned the
            wrong number of predictions from ``predict_batch``, an example has no gold answer, or the
            checkpoint file belongs to another model or is damaged.
        TypeError: ``model`` has no ``predict`` method.
    """
    if parse_failures not in PARSE_FAILURE_POLICIES:
        raise FormatError(f"must be one of {PARSE_FAILURE_POLICIES}", field="parse_failures", value=parse_failures)
    if batch_size < 1:
        raise FormatError("must be >= 1", field="batch_size", value=batch_size)
    batch = getattr(model, "predict_batch", None)
    detailed = getattr(model, "predict_detailed", None)
    single = getattr(model, "predict", None)
    if batch is None and detailed is None and single is None:
        raise TypeError(f"{type(model).__name__} has no predict(example) method")
    try:
        total = len(examples)  # type: ignore[arg-type]
    except TypeError:
        total = None
    label = name or model_name(model)
    store = Checkpoint(checkpoint, label) if checkpoint is not None else None
    bar = progress_bar(total, enabled=progress, description=label, unit="q")
    results: list[ExampleResult] = []
    try:
        for chunk in _chunks(examples, batch_size if batch is not None else 1):
            first = len(results)
            keys = [example_key(e, first + i) for i, e in enumerate(chunk)]
            predictions: dict[int, Prediction] = {}
            todo = []
            for i, key in enumerate(keys):
                cached = store.get(key) if store is not None else None
                if cached is None:
                    todo.append(i)
                else:
                    predictions[i] = cached
            if todo:
                pending = [chunk[i] for i in todo]
                if batch is not None:
                    outputs = list(batch(pending))
                    if len(outputs) != len(pending):
                        raise FormatError(f"predict_batch returned {len(outputs)} predictions for {len(pending)} "
                                          f"examples", field="predict_batch", value=len(outputs))
                else:
                    outputs = [detailed(e) if detailed is not None else single(e) for e in pending]
                for i, output in zip(todo, outputs):
                    predictions[i] = normalize_prediction(output, where=keys[i])
                if store is not None:
                    store.add([(keys[i], predictions[i]) for i in todo])
            for i, example in enumerate(chunk):
                result = score_example(example, predictions[i], first + i)
                results.append(result)
                if on_result is not None:
                    on_result(result)
            if bar is not None:
                bar.update(len(chunk))
    finally:
        if bar is not None:
            bar.close()
    return EvaluationReport(tuple(results), model=label, split=split, parse_failure_policy=parse_failures)


class Checkpoint:
    """Predictions made so far, in a JSON-lines file (see :func:`evaluate`'s ``checkpoint``).

    Line 1: ``{"checkpoint": "clevr_poc.evaluate", "model": NAME}``; then one line per prediction:
    ``{"key": image_filename, "values": [...] | null, "error": str | null, "raw": str | null}``.
    A last line cut short by a crash is dropped when the file is reopened.

    Raises:
        FormatError: the file belongs to another model, or a line (other than a cut last line) is not
            a prediction record.
    """

    KIND = "clevr_poc.evaluate"

    def __init__(self, path: str | os.PathLike[str], model: str) -> None:
        self.path = Path(path)
        self.model = model
        self._known: dict[str, Prediction] = {}
        if self.path.is_file() and self.path.stat().st_size:
            self._load()
        else:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._append([{"checkpoint": self.KIND, "model": model}])

    def __len__(self) -> int:
        return len(self._known)

    def get(self, key: str) -> Prediction | None:
        return self._known.get(key)

    def add(self, items: Sequence[tuple[str, Prediction]]) -> None:
        records = []
        for key, prediction in items:
            self._known[key] = prediction
            records.append({"key": key, "values": None if prediction.values is None else sorted(prediction.values),
                            "error": prediction.error, "raw": prediction.raw})
        self._append(records)

    def _append(self, records: Sequence[Mapping[str, Any]]) -> None:
        with open(self.path, "a", encoding="utf-8", newline="\n") as handle:
            handle.write("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records))
            handle.flush()
            os.fsync(handle.fileno())

    def _load(self) -> None:
        from clevr_poc._io import decode_utf8, loads_json, read_bytes

        data = read_bytes(self.path, what="a checkpoint file")  # typed errors; the json_file_bytes cap
        if not data.endswith(b"\n"):  # a line cut short by a crash: drop it
            data = data[: data.rfind(b"\n") + 1]
            with open(self.path, "r+b") as handle:
                handle.truncate(len(data))
        lines = decode_utf8(data, source=self.path).splitlines()
        for number, line in enumerate(lines, start=1):
            record = loads_json(line, source=self.path, field=f"line {number}")
            if number == 1:
                if not isinstance(record, Mapping) or record.get("checkpoint") != self.KIND:
                    raise FormatError("not an evaluation checkpoint", source=self.path, field="line 1")
                if record.get("model") != self.model:
                    raise FormatError(f"the checkpoint belongs to model {record.get('model')!r}, not {self.model!r}",
                                      source=self.path, field="model", value=record.get("model"))
                continue
            if not isinstance(record, Mapping) or not isinstance(record.get("key"), str):
                raise FormatError("not a prediction record", source=self.path, field=f"line {number}")
            values = record.get("values")
            try:
                prediction = normalize_prediction(
                    Prediction(None if values is None else frozenset(values), record.get("error"), record.get("raw")),
                    where=f"line {number}")
            except (FormatError, TypeError):
                raise FormatError("bad predicted values", source=self.path, field=f"line {number}",
                                  value=values) from None
            self._known[record["key"]] = prediction


def score_predictions(examples: Iterable[Any], predictions: Mapping[str, Any], *, model: str = "predictions",
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
        raise FormatError(f"no prediction for {len(missing)} of {len(keys)} questions (first: {missing[0]!r})",
                          field="predictions", value=missing[0])
    extra = sorted(k for k in predictions if k not in seen)
    if extra:
        raise FormatError(f"{len(extra)} prediction key(s) match no question of the split (first: {extra[0]!r})",
                          field="predictions", value=extra[0])
    model_stub = _Lookup({k: _prediction_from_json(predictions[k], k) for k in keys}, keys)
    return evaluate(model_stub, examples, progress=False, name=model, split=split, parse_failures=parse_failures)


def _prediction_from_json(value: Any, key: str) -> Prediction:
    if value is None:
        return Prediction(None, "null in the predictions file")
    if not isinstance(value, list):
        raise FormatError("must be a list of values or null", field=f"predictions[{key!r}]",
                          value=value)
    for item in value:
        if not isinstance(item, str) or item not in domain.ATTRIBUTE_OF_VALUE:
            raise FormatError(f"not one of the {len(domain.LABELS)} labels {sorted(domain.LABELS)}",
                              field=f"predictions[{key!r}]", value=item)
    return Prediction(frozenset(value))


class _Lookup:
    """A 'model' answering from a precomputed mapping (scoring-only mode)."""

    name = "predictions"

    def __init__(self, table: Mapping[str, Prediction], keys: Sequence[str]) -> None:
        self._table = table
        self._keys = list(keys)
        self._position = 0

    def predict_detailed(self, example: Any) -> Prediction:
        key = self._keys[self._position]
        self._position += 1
        return self._table[key]
