"""``evaluate(model, examples) -> EvaluationReport``: run a model on labelled examples and score each answer
(paper §4.2: exact accuracy eq. 2, Jaccard index eq. 3); the model protocol and the breakdowns are described
in :mod:`clevr_poc.evaluation.report`."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Callable, Iterable, Iterator, TypeVar

from clevr_poc import domain
from clevr_poc.errors import FormatError
from clevr_poc.evaluation.checkpoint import Checkpoint
from clevr_poc.evaluation.metrics import exact_match, jaccard_index
from clevr_poc.evaluation.model_protocol import Model
from clevr_poc.evaluation.report import (
    PARSE_FAILURE_POLICIES, UNKNOWN, EvaluationReport, ExampleResult, Prediction, normalize_prediction,
)
from clevr_poc.progress import progress_bar

if TYPE_CHECKING:
    from clevr_poc.dataset_reader import Example

T = TypeVar("T")


def example_groups(example: "Example") -> dict[str, str]:
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
    complete = example.complete_scene
    environment = example.environment
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


def example_key(example: "Example", position: int) -> str:
    """``image_filename`` of the example's question (or scene), else ``"#<position>"``."""
    name = example.question.image_filename or example.partial_scene.image_filename
    return name or f"#{position}"


def score_example(example: "Example", prediction: Prediction, position: int = 0) -> ExampleResult:
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
        raw=prediction.raw, confidence=prediction.confidence, marginals=prediction.marginals,
    )


def _chunks(items: Iterable[T], size: int) -> Iterator[list[T]]:
    chunk: list[T] = []
    for item in items:
        chunk.append(item)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def model_name(model: Model) -> str:
    """``model.name``, else (an empty name) its class name."""
    return str(model.name or type(model).__name__)


def evaluate(model: Model, examples: Iterable["Example"], progress: bool = True, *, name: str | None = None,
             split: str | None = None, batch_size: int = 32, parse_failures: str = "wrong",
             on_result: Callable[[ExampleResult], None] | None = None,
             checkpoint: str | os.PathLike[str] | None = None) -> EvaluationReport:
    """Run ``model`` on every example and score it (exact accuracy eq. 2, Jaccard eq. 3).

    Args:
        model: a :class:`~clevr_poc.evaluation.Model` (``name``, ``predict_batch(examples) ->
            list[Prediction]``; :class:`~clevr_poc.evaluation.ExampleModel` for one example at a time,
            :class:`~clevr_poc.evaluation.FunctionModel` for a function).
        examples: labelled examples (an iterable; consumed once).
        progress: show a tqdm progress bar (when tqdm is installed).
        name: model name in the report (default: ``model.name`` or the class name).
        split: split / dataset name recorded in the report.
        batch_size: examples per ``predict_batch`` call and per checkpoint flush (>= 1).
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
        TypeError: ``model`` is not a :class:`~clevr_poc.evaluation.Model`.
    """
    if parse_failures not in PARSE_FAILURE_POLICIES:
        raise FormatError(f"must be one of {PARSE_FAILURE_POLICIES}", field="parse_failures", value=parse_failures)
    if batch_size < 1:
        raise FormatError("must be >= 1", field="batch_size", value=batch_size)
    if not isinstance(model, Model):
        raise TypeError(f"{type(model).__name__} is not an evaluator model: it needs name and "
                        "predict_batch(examples) -> list[Prediction] (clevr_poc.evaluation.Model); subclass "
                        "ExampleModel, or wrap a function example -> set | None in FunctionModel")
    try:
        total = len(examples)  # type: ignore[arg-type]
    except TypeError:
        total = None
    label = name or model_name(model)
    store = Checkpoint(checkpoint, label) if checkpoint is not None else None
    bar = progress_bar(total, enabled=progress, description=label, unit="q")
    results: list[ExampleResult] = []
    try:
        for chunk in _chunks(examples, batch_size):
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
                outputs = list(model.predict_batch(pending))
                if len(outputs) != len(pending):
                    raise FormatError(f"predict_batch returned {len(outputs)} predictions for {len(pending)} "
                                      f"examples", field="predict_batch", value=len(outputs))
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
