"""An experiment: models x dataset -> typed results (predictions and scores per model, the scenes and
queries the NS-VQA models shared, timings). ``python -m clevr_poc demo``, ``python -m clevr_poc evaluate``
and the notebooks run their models through it; the commands only parse arguments and print.

::

    from clevr_poc.experiment import SharedSteps, run_experiment

    shared = SharedSteps(Pipeline.from_pretrained())            # perceive and parse once per example
    models = [shared.pipeline("NS-VQA (perception, BiLSTM)"),
              shared.pipeline("NS-VQA (gold scene, BiLSTM)", perceived=False),
              shared.pipeline("NS-VQA (gold scene, gold ASP)", perceived=False, parsed=False)]
    result = run_experiment(models, examples, shared=shared, split="test")
    result.reports()                  # model name -> EvaluationReport (paper §4.2)
    result.scenes, result.queries     # per example: the perceived scene and the parsed query

A model is any :class:`~clevr_poc.evaluation.Model`; :class:`SharedSteps` lets several NS-VQA pipelines
share one perception and one parse per example (the demo's three columns differ only in which of them
they use, so the differences isolate perception and parser errors).
"""

from __future__ import annotations

import os
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Mapping, Sequence

from clevr_poc.answer import Answer
from clevr_poc.dataset_reader import Example
from clevr_poc.errors import ClevrPocError
from clevr_poc.evaluation import Checkpoint, EvaluationReport, Model, evaluate, example_key, model_name
from clevr_poc.parsing.query_parser import ParseResult, QueryParser
from clevr_poc.pipeline import Pipeline
from clevr_poc.scene import Scene, SceneObject
from clevr_poc.scene_sources import SceneSource, SceneSourceKind


# ====================================================================== results
@dataclass(frozen=True)
class ModelRun:
    """One model's run over the examples of an experiment.

    Attributes:
        name: the model's name (the report's).
        report: its :class:`~clevr_poc.evaluation.EvaluationReport` (predictions, scores, breakdowns).
        seconds: wall-clock seconds of the run (predictions and scoring).
        cached: predictions read from a checkpoint file instead of asked from the model.
    """

    name: str
    report: EvaluationReport
    seconds: float
    cached: int = 0

    @property
    def asked(self) -> int:
        """Questions sent to the model in this run."""
        return self.report.n - self.cached

    @property
    def seconds_per_question(self) -> float | None:
        """``seconds / asked`` rounded to 0.1 ms; None when nothing was asked."""
        return round(self.seconds / self.asked, 4) if self.asked else None


@dataclass(frozen=True)
class ExperimentResult:
    """What :func:`run_experiment` yields.

    Attributes:
        examples: the examples, in order.
        runs: one :class:`ModelRun` per model, in model order.
        scenes: with :class:`SharedSteps`, the partial scene its scene source gave each example (perceived;
            None where perception failed), else empty.
        queries: with :class:`SharedSteps` and a parser, each example's parsed query (None where the parser
            produced none), else empty.
        timings: seconds per step: ``"parse"`` (with :class:`SharedSteps` and a parser), then each model's name.
    """

    examples: tuple[Example, ...]
    runs: tuple[ModelRun, ...]
    scenes: tuple[Scene | None, ...] = ()
    queries: tuple[str | None, ...] = ()
    timings: Mapping[str, float] = field(default_factory=dict)

    def reports(self) -> dict[str, EvaluationReport]:
        """Model name -> report, in model order."""
        return {run.name: run.report for run in self.runs}

    def run(self, name: str) -> ModelRun:
        """The run of the model called ``name``.

        Raises:
            KeyError: no model of that name.
        """
        for run in self.runs:
            if run.name == name:
                return run
        raise KeyError(f"no model {name!r} in this experiment; models: {[r.name for r in self.runs]}")


@dataclass(frozen=True)
class PerceptionSummary:
    """How well perceived partial scenes match the gold ones (:func:`perception_summary`).

    Attributes:
        scenes: scenes compared.
        right_count: perceived scenes with as many objects as the gold one.
        exact_scenes: perceived scenes whose objects (color, shape, size, material, region) equal the gold
            ones as a multiset.
        objects: gold objects.
        objects_found: gold objects with an identical perceived object (multiset intersection).
    """

    scenes: int
    right_count: int
    exact_scenes: int
    objects: int
    objects_found: int

    def to_json(self) -> dict[str, int]:
        return {"scenes": self.scenes, "right_count": self.right_count, "exact_scenes": self.exact_scenes,
                "objects": self.objects, "objects_found": self.objects_found}


def _object_key(obj: SceneObject) -> tuple[str, str, str, str, int]:
    return (obj.color, obj.shape, obj.size, obj.material, obj.region)


def perception_summary(perceived: Sequence[Scene | None], gold: Sequence[Scene]) -> PerceptionSummary:
    """Compare perceived scenes (None: perception failed, no object found) with the gold partial scenes."""
    right_count = exact = found = total = 0
    for p, g in zip(perceived, gold):
        if p is None:
            total += len(g)
            continue
        pc, gc = Counter(map(_object_key, p.objects)), Counter(map(_object_key, g.objects))
        right_count += len(p) == len(g)
        exact += pc == gc
        found += sum((pc & gc).values())
        total += len(g)
    return PerceptionSummary(len(gold), right_count, exact, total, found)


@dataclass(frozen=True)
class WorkedExample:
    """One example answered and explained (:func:`worked_example`).

    Attributes:
        example: the example.
        scene: the partial scene it was answered with.
        query: the parsed query that ran (None: the question's gold query, without a parser).
        answer: the :class:`~clevr_poc.answer.Answer`, with its explanation.
    """

    example: Example
    scene: Scene
    query: str | None
    answer: Answer


#: Examples explained at most while looking for the worked example.
MAX_EXPLAINED = 8


def worked_example(pipeline: Pipeline, result: ExperimentResult, model: str) -> WorkedExample | None:
    """One example of ``model``'s run, explained (``pipeline.answer(..., explain=True)`` with the shared scene
    and query): the first one answered exactly, from a scene with as many objects as the gold one, whose
    explanation eliminates a value by environment constraints (else the first such correct one, else the
    first correct one, else the first one; at most :data:`MAX_EXPLAINED` are explained). None when no
    example has a scene."""
    examples = result.examples
    scored = result.run(model).report.results
    ranked = []
    for i, example in enumerate(examples):
        predicted = scored[i].predicted
        correct = predicted is not None and predicted == example.question.answer
        scene = result.scenes[i]
        if scene is not None:  # prefer correct answers from scenes with every visible object found
            complete = len(scene) == len(example.partial_scene)
            ranked.append((0 if correct and complete else 1 if correct else 2, i))
    chosen = None
    for rank, i in sorted(ranked)[:MAX_EXPLAINED]:
        scene, query = result.scenes[i], result.queries[i]
        answer = pipeline.answer(question=examples[i].question, environment=examples[i].environment, scene=scene,
                                 query=query, explain=True)
        if chosen is None:
            chosen = WorkedExample(examples[i], scene, query, answer)
        if rank == 0 and answer.explanation and any(e.constraints for e in answer.explanation.eliminated):
            chosen = WorkedExample(examples[i], scene, query, answer)
            break
    return chosen


@dataclass(frozen=True)
class ProgramAccuracy:
    """Program accuracy of an NS-VQA run with a parser (:func:`program_accuracy`).

    Attributes:
        correct: queries equal to the gold one up to variable renaming and literal order (the paper's
            measure, :func:`~clevr_poc.parsing.equivalence.programs_equal`).
        semantic_correct: queries with the gold query's answer set on the example's gold partial scene
            (:func:`~clevr_poc.parsing.equivalence.answers_agree`).
        n: questions of the report whose question the parser was given (all but the image failures).
        image_failures: questions left out of ``n``: their image could not be read, so the run never
            parsed them (``evaluate --allow-missing-images``).
    """

    correct: int
    semantic_correct: int
    n: int
    image_failures: int = 0

    @property
    def accuracy(self) -> float:
        return self.correct / self.n if self.n else 0.0

    @property
    def semantic_accuracy(self) -> float:
        return self.semantic_correct / self.n if self.n else 0.0

    def to_json(self) -> dict[str, int | float]:
        return {"correct": self.correct, "n": self.n, "accuracy": self.accuracy,
                "semantic_correct": self.semantic_correct, "semantic_accuracy": self.semantic_accuracy,
                "image_failures": self.image_failures}


def program_accuracy(report: EvaluationReport, examples: Sequence[Example]) -> ProgramAccuracy:
    """Program accuracy of a run whose predictions carry the query that ran (``raw``, as NS-VQA's do),
    against each example's gold query, literal and semantic (:class:`ProgramAccuracy`); questions whose
    image could not be read were never parsed and are left out (counted in ``image_failures``)."""
    from clevr_poc.parsing.equivalence import answers_agree, programs_equal
    from clevr_poc.reasoning import Reasoner

    by_key = {example_key(e, i): e for i, e in enumerate(examples)}
    reasoner = Reasoner()
    correct = semantic = 0
    for r in report.results:
        example = by_key.get(r.key)
        if r.raw is None or example is None:
            continue
        correct += programs_equal(r.raw, example.question.asp_query)
        semantic += answers_agree(r.raw, example.question.asp_query, example.environment, example.partial_scene,
                                  reasoner=reasoner)
    return ProgramAccuracy(correct, semantic, report.n - report.image_failures, report.image_failures)


# ====================================================================== shared NS-VQA steps
class CachedScenes:
    """A :class:`~clevr_poc.scene_sources.SceneSource` that asks ``source`` once per example (by identity)
    and gives the same scene, or raises the same error, every later time."""

    def __init__(self, source: SceneSource) -> None:
        self.source = source
        self.kind: SceneSourceKind = source.kind
        self._seen: dict[int, tuple[Example, Scene | None, ClevrPocError | None]] = {}

    def scene_of(self, example: Example) -> Scene | None:
        found = self._seen.get(id(example))
        if found is None:
            try:
                found = (example, self.source.scene_of(example), None)
            except ClevrPocError as exc:
                found = (example, None, exc)
            self._seen[id(example)] = found   # the example is kept, so its id stays its own
        if found[2] is not None:
            raise found[2]
        return found[1]

    def seen(self, example: Example) -> Scene | None:
        """The scene given for ``example`` (None: none, or it was never asked)."""
        found = self._seen.get(id(example))
        return None if found is None else found[1]


class CachedParser:
    """A :class:`~clevr_poc.parsing.QueryParser` that parses each question text once."""

    def __init__(self, parser: QueryParser) -> None:
        self.parser = parser
        self.name = parser.name
        self._parsed: dict[str, ParseResult] = {}

    def parse_queries(self, questions: Sequence[str]) -> list[ParseResult]:
        todo = list(dict.fromkeys(q for q in questions if q not in self._parsed))
        if todo:
            results = self.parser.parse_queries(todo)
            self._parsed.update(zip(todo, results))
        return [self._parsed[q] for q in questions]

    def query(self, question: str) -> str | None:
        """The parsed query of ``question`` (None: no query, or it was never parsed)."""
        result = self._parsed.get(question)
        return None if result is None else result.asp_query


class SharedSteps:
    """One perception and one parse per example, shared by NS-VQA pipelines built from ``pipeline`` (the
    same perception, parser and Reasoner).

    Args:
        pipeline: the full NS-VQA model (its scene source, parser and Reasoner are shared).
    """

    def __init__(self, pipeline: Pipeline) -> None:
        self.base = pipeline
        self.scenes = CachedScenes(pipeline.scenes)
        self.parser = None if pipeline.parser is None else CachedParser(pipeline.parser)

    def pipeline(self, name: str, *, perceived: bool = True, parsed: bool = True) -> Pipeline:
        """A pipeline called ``name`` on the shared steps: the shared scenes (``perceived``) or the gold
        partial scenes, the shared parses (``parsed``) or the gold queries."""
        base = self.base
        return Pipeline(base.perception if perceived else None, self.parser if parsed else None,
                        reasoner=base.reasoner, constraint_decoding=base.constraint_decoding, name=name,
                        camera_source=base.camera_source, scenes=self.scenes if perceived else None)

    def prepare(self, examples: Sequence[Example]) -> None:
        """Parse every question in one batch (one batched BiLSTM decode)."""
        if self.parser is not None:
            self.parser.parse_queries([e.question.text for e in examples])


# ====================================================================== running
def run_model(model: Model, examples: Sequence[Example], *, split: str | None = None,
              parse_failures: str = "wrong", batch_size: int = 32,
              checkpoint: str | os.PathLike[str] | None = None, progress: bool = False) -> ModelRun:
    """Run and score one model (:func:`~clevr_poc.evaluation.evaluate`, same arguments), timed; with a
    checkpoint file, the predictions already in it are counted as ``cached``.

    Raises:
        as :func:`~clevr_poc.evaluation.evaluate`.
    """
    cached = 0
    if checkpoint is not None and os.path.isfile(checkpoint):
        store = Checkpoint(checkpoint, model_name(model))
        cached = sum(1 for i, e in enumerate(examples) if store.get(example_key(e, i)) is not None)
    started = time.perf_counter()
    report = evaluate(model, examples, progress=progress, split=split, parse_failures=parse_failures,
                      checkpoint=checkpoint, batch_size=batch_size)
    return ModelRun(report.model, report, time.perf_counter() - started, cached)


def run_experiment(models: Sequence[Model], examples: Sequence[Example], *, shared: SharedSteps | None = None,
                   split: str | None = None, parse_failures: str = "wrong", batch_size: int = 32,
                   progress: bool = False) -> ExperimentResult:
    """Run every model on ``examples`` (:func:`run_model`), in order.

    Args:
        models: the models (:class:`~clevr_poc.evaluation.Model`); names must differ.
        examples: labelled examples.
        shared: the steps the models share (:class:`SharedSteps`): its questions are parsed first, in one
            batch, and the result records its scenes and queries.
        split, parse_failures, batch_size, progress: see :func:`~clevr_poc.evaluation.evaluate`.

    Raises:
        ValueError: two models with the same name.
        as :func:`~clevr_poc.evaluation.evaluate`.
    """
    examples = tuple(examples)
    names = [model_name(m) for m in models]
    if len(set(names)) != len(names):
        raise ValueError(f"two models share a name: {names}")
    timings: dict[str, float] = {}
    if shared is not None and shared.parser is not None:
        started = time.perf_counter()
        shared.prepare(examples)
        timings["parse"] = time.perf_counter() - started
    runs = []
    for model in models:
        run = run_model(model, examples, split=split, parse_failures=parse_failures, batch_size=batch_size,
                        progress=progress)
        timings[run.name] = run.seconds
        runs.append(run)
    scenes: tuple[Scene | None, ...] = ()
    queries: tuple[str | None, ...] = ()
    if shared is not None:
        scenes = tuple(shared.scenes.seen(e) for e in examples)
        if shared.parser is not None:
            queries = tuple(shared.parser.query(e.question.text) for e in examples)
    return ExperimentResult(examples, tuple(runs), scenes, queries, timings)


__all__ = ["CachedParser", "CachedScenes", "ExperimentResult", "MAX_EXPLAINED", "ModelRun", "PerceptionSummary",
           "ProgramAccuracy", "SharedSteps", "WorkedExample", "perception_summary", "program_accuracy", "run_experiment", "run_model", "worked_example"]
