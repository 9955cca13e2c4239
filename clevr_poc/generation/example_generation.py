"""One example of a dataset, generated in a worker process: complete scene, layout, visibility check,
partial scene and labelled question, returned as the text of its three JSON files.

**Determinism.** Every example draws all its randomness from ``random.Random`` seeded by
:func:`clevr_poc.seeds.derive_seed` (namespace ``"dataset"``) of (seed, environment id, example index
within the environment, attempt), so the files are byte-identical whatever the worker count or executor.

**Rejection without skew.** When no valid question exists for a scene (``1 <= |answer| < |domain|``
fails for every instantiation, or the layout cannot place the objects), the example is retried with the
next attempt's seed and the *same* query attribute, so rejection cannot skew the attribute shares.
Only after ``max_attempts`` failed attempts does an example fall back to the other attributes with a
positive share (largest share first).
"""

from __future__ import annotations

import json
import random
import time
from dataclasses import dataclass, field, replace
from typing import Any, Mapping

from clevr_poc.environments.environment import Environment
from clevr_poc.generation.dataset_config import GenerationError
from clevr_poc.generation.example_plan import ExampleSpec
from clevr_poc.generation.layout import VisibilityCheck
from clevr_poc.scene_metadata import GenerationCounts
from clevr_poc.seeds import DATASET, derive_seed


@dataclass(frozen=True)
class ExampleTask:
    """Picklable work item: the spec, the environment and the settings the worker needs.

    ``visibility``: the layout check (:attr:`DatasetConfig.visibility`; None: no check). ``seed`` is the
    dataset seed (it also gives the render seed of the example's images). ``sampler_state``: the
    environment's :class:`~clevr_poc.generation.scene_sampler.SamplerState` (prepared once per environment
    by :func:`prepare_dataset_environments`), or None: the worker builds its sampler from scratch.
    ``exact_visibility``: ray-cast every layout (the reference path, same results, slower) instead of
    trying the cheap bound first (:meth:`VisibilityCheck.check` with ``exact_pixels=False``). Neither
    changes the example. ``check_first``: check a layout's visibility before its question's tries, which
    then ask clingo only when the layout is kept (the default; see :func:`generate_example`); False:
    the question first, as before issue 27 (the same files). Unused with ``exact_visibility`` or without
    a check, which keep the question-first order.
    """

    spec: ExampleSpec
    environment: Environment
    seed: int
    max_attempts: int
    fallback: tuple[str, ...]
    visibility: VisibilityCheck | None = VisibilityCheck()
    sampler_state: Any = None
    exact_visibility: bool = False
    check_first: bool = True


@dataclass(frozen=True)
class GeneratedExample:
    """What a worker sends back: the three JSON documents (text, as written) and diagnostics.

    Attributes:
        spec: the example's spec.
        complete_json, partial_json, question_json: file contents (UTF-8 text ending in a newline).
        query_attribute: the attribute actually asked about (differs from ``spec.query_attribute``
            only after a fallback).
        attempts: attempts used (1 = first try), over all attributes tried.
        placement_failures: attempts whose layout failed.
        seconds: time spent (diagnostic; not written to the dataset).
        layouts_checked: layouts given to the visibility check; visibility_rejections: of those, the
            rejected ones; visibility_resamples: scene graphs given up after ``max_relayouts``
            re-placements; rejected_objects: ``{"occluded": k, "too_small": m}`` objects under the minimum
            summed over rejected layouts; rejected_images: ``{"complete": k, "partial": m}`` failing image
            per rejected layout.
        visibility_seconds: time spent in the check (diagnostic; not written).
    """

    spec: ExampleSpec
    complete_json: str
    partial_json: str
    question_json: str
    query_attribute: str
    attempts: int
    placement_failures: int
    seconds: float
    layouts_checked: int = 0
    visibility_rejections: int = 0
    visibility_resamples: int = 0
    rejected_objects: Mapping[str, int] = field(default_factory=dict)
    rejected_images: Mapping[str, int] = field(default_factory=dict)
    visibility_seconds: float = 0.0

    def generation_json(self) -> dict[str, int]:
        """The ``generation`` object of the complete scene file (deterministic counts only)."""
        return {"attempts": self.attempts, "placement_failures": self.placement_failures,
                "layouts_checked": self.layouts_checked, "visibility_rejections": self.visibility_rejections,
                "visibility_occluded": self.rejected_objects.get("occluded", 0),
                "visibility_too_small": self.rejected_objects.get("too_small", 0),
                "visibility_rejected_complete": self.rejected_images.get("complete", 0),
                "visibility_rejected_partial": self.rejected_images.get("partial", 0),
                "visibility_resamples": self.visibility_resamples}


_WORKER_CACHE: dict[str, Any] = {}


def _components(environment: Environment, state=None):
    """Per-process cache of the scene sampler (per environment; built from ``state`` when given) and
    the question generator."""
    from clevr_poc.generation.question_generator import QuestionGenerator

    generator = _WORKER_CACHE.get("generator")
    if generator is None:
        generator = _WORKER_CACHE["generator"] = QuestionGenerator()
    return cached_scene_sampler(environment, state), generator


def cached_scene_sampler(environment: Environment, state=None):
    """This process's :class:`~clevr_poc.generation.scene_sampler.SceneSampler` of ``environment`` (built
    from ``state``, a :class:`~clevr_poc.generation.scene_sampler.SamplerState`, when given; at most 256
    kept, the oldest dropped first)."""
    from clevr_poc.generation.scene_sampler import SceneSampler

    samplers = _WORKER_CACHE.setdefault("samplers", {})
    key = (environment.id, environment.num_objects, environment.constraints_asp())
    sampler = samplers.get(key)
    if sampler is None:
        if len(samplers) >= 256:
            samplers.pop(next(iter(samplers)))
        sampler = samplers[key] = SceneSampler(environment, state=state)
    return sampler


def _dumps(data: Any) -> str:
    """``json.dumps(data, ensure_ascii=False) + "\\n"``, by one encoder of those settings made once
    (``json.dumps`` makes a new one per call unless every setting is the default; the same text)."""
    return _ENCODER.encode(data) + "\n"


_ENCODER = json.JSONEncoder(ensure_ascii=False)


def generate_example(task: ExampleTask) -> GeneratedExample:
    """Generate one example (complete scene, layout, visibility check, partial scene, labelled question).

    Per attempt: draw a scene graph, place it, choose the hidden object, generate the question (none:
    next attempt), check the layout from the render camera (``task.visibility``; on failure re-place,
    re-choose and re-ask up to ``max_relayouts`` times, then give the scene graph up). Without a check,
    the random draws are those of format version 1.

    **Order (issue 27).** The question's tries draw from the rng and decide whether the layout counts
    (no question: next attempt, the layout not counted as checked); the visibility check draws nothing
    and does not depend on the question. So, after the hopeless test
    (:meth:`~clevr_poc.generation.question_generator.QuestionGenerator.prepare`), the check runs first;
    a kept layout's tries are labelled by clingo as before, a rejected layout's tries by Python verdicts
    (:mod:`clevr_poc.reasoning.candidate_answers`: the same answers, hence the same accepted try and the
    same random draws, which the next placement continues from), and a layout whose tries give no
    question is counted as before (not checked). The files are byte-identical to the question-first
    order (``task.check_first=False``; tests compare both), which spent about 40% of its labelled
    questions' clingo calls on layouts the check then rejected.

    Deterministic in ``task``. Raises :class:`GenerationError` when no attribute yields a question.

    BLAS runs on one thread meanwhile (:func:`clevr_poc.blas_threads.single_blas_thread`: the same
    numbers, about half the CPU on a busy 2-core machine).
    """
    from clevr_poc.blas_threads import single_blas_thread

    with single_blas_thread():
        return _generate_example(task)


def _generate_example(task: ExampleTask) -> GeneratedExample:
    from clevr_poc.generation.layout import PlacementError, place_objects
    from clevr_poc.generation.partial_scenes import choose_hidden, make_partial
    from clevr_poc.rendering.batch_render import image_seed

    started = time.perf_counter()
    spec, environment, check = task.spec, task.environment, task.visibility
    sampler, generator = _components(environment, task.sampler_state)
    attributes = (spec.query_attribute,) + tuple(a for a in task.fallback if a != spec.query_attribute)
    camera_seed = image_seed(task.seed, spec.split, spec.image_filename)  # the renderer's seed for both images
    relayouts = 1 + (check.max_relayouts if check is not None else 0)
    check_first = task.check_first and check is not None and not task.exact_visibility
    attempts = placement_failures = layouts_checked = rejections = resamples = 0
    rejected_objects = {"occluded": 0, "too_small": 0}
    rejected_images = {"complete": 0, "partial": 0}
    visibility_seconds = 0.0
    for round_, attribute in enumerate(attributes):
        for attempt in range(task.max_attempts):
            attempts += 1
            rng = random.Random(derive_seed(DATASET, task.seed, "example", environment.id, spec.local_index,
                                            round_ * task.max_attempts + attempt))
            graph = sampler.sample(rng)
            complete = question = None
            for _ in range(relayouts):
                try:
                    placed = place_objects(graph, rng).scene
                except PlacementError:
                    placement_failures += 1
                    break
                hidden = choose_hidden(placed, rng)
                if not check_first:
                    # the question first (a few ms): the check (tens of ms) only runs on layouts worth keeping
                    question = generator.generate(environment, placed, hidden, rng, query_attribute=attribute)
                    if question is None:  # no valid question about this scene: next attempt
                        break
                    if check is None:
                        complete = placed
                        break
                    check_started = time.perf_counter()
                    outcome = check.check(placed, hidden, camera_seed, exact_pixels=task.exact_visibility)
                    visibility_seconds += time.perf_counter() - check_started
                else:  # the check first (see the docstring): the same draws, clingo for kept layouts only
                    prepared = generator.prepare(environment, placed, hidden, rng, query_attribute=attribute)
                    if prepared is None:  # no template can succeed: next attempt
                        break
                    check_started = time.perf_counter()
                    outcome = check.check(placed, hidden, camera_seed, exact_pixels=False)
                    visibility_seconds += time.perf_counter() - check_started
                    question = generator.ask(prepared, rng, verdicts="clingo" if outcome.ok else "python")
                    if question is None:  # no valid question about this scene: next attempt
                        break
                layouts_checked += 1
                if outcome.ok:
                    complete = placed
                    break
                rejections += 1
                rejected_images[outcome.image] += 1
                for _, _, reason in outcome.offending:
                    rejected_objects[reason] += 1
            else:
                resamples += 1
            if complete is None:
                continue
            result = GeneratedExample(spec, "", "", "", attribute, attempts, placement_failures, 0.0,
                                   layouts_checked, rejections, resamples, rejected_objects, rejected_images,
                                   visibility_seconds)
            bookkeeping = {"split": spec.split, "image_index": spec.image_index,
                           "image_filename": spec.image_filename}
            complete = replace(complete, environment_id=environment.id,
                               generation=GenerationCounts(**result.generation_json()), **bookkeeping)
            partial, _ = make_partial(complete, hidden)
            partial = replace(partial, generation=None)
            question = replace(question, question_index=spec.image_index, environment_id=environment.id,
                               **bookkeeping)
            return replace(result, complete_json=_dumps(complete.to_json()), partial_json=_dumps(partial.to_json()),
                           question_json=_dumps(question.to_json()), seconds=time.perf_counter() - started)
    raise GenerationError(
        f"environment {environment.id}, example {spec.local_index}: no valid question about any of "
        f"{list(attributes)} in {task.max_attempts} attempts each")


