"""Write a CLEVR-POC dataset to disk: environments, complete and partial scenes, labelled questions.

Paper §3 (Fig. 2): environment -> complete scene graph -> partial scene graph (one object hidden) ->
question about the hidden object, labelled by the reasoner. Layout (the official release's, plus a
manifest, statistics and a dataset card)::

    OUT/dataset.json                                   settings (the manifest; checked on resume)
    OUT/environments/<id>.lp                           official environment program
    OUT/complete/scenes/<split>/CLEVR_%06d.json        complete scene (N objects)
    OUT/incomplete/scenes/<split>/CLEVR_%06d.json      partial scene (N-1 objects)
    OUT/incomplete/questions/<split>/CLEVR_%06d.json   one question per image (official keys +
                                                       constraint_type_index = environment id)
    OUT/incomplete/images/<split>/CLEVR_<split>_%06d.png   (rendered later; the scenes' image_filename)
    OUT/stats.json, OUT/figures/*.png, OUT/README.md   written at the end (kept by a resume that generates nothing)

``image_index`` counts from 0 within each split, as in CLEVR. Scene files also carry
``constraint_type_index`` (as the official release's scenes do); complete scene files also carry
``generation`` (what the example cost: ``attempts``, ``placement_failures``, ``layouts_checked``,
``visibility_rejections``, ``visibility_occluded``, ``visibility_too_small``, ``visibility_resamples``),
from which ``stats.json``'s ``generation`` section is summed.

**Visibility** (on by default; ``visibility_check="off"`` / ``generate --no-visibility-check`` disables
it). Every layout is checked from the exact camera the renderer will use for the example's image: the
render seed is :func:`clevr_poc.rendering.batch_render.image_seed` (dataset seed, split, image file name),
which ``render`` uses by default for a dataset folder (the complete and the partial image share it), at
the renderer's default image size (the official 320 x 320). Every object the partial image shows must cover
at least ``min_visible_pixels`` pixels (default: the renderer's threshold, 53 at 320 x 320: 40 per 320 x 240) -- and, with scope ``"both"``
(default), the hidden object too in the complete image (``render --complete``). A failing layout is
re-placed up to ``visibility_relayouts`` times, then the scene graph is redrawn (the next attempt, as
after a :class:`~clevr_poc.generation.layout.PlacementError`). See
:class:`~clevr_poc.generation.layout.VisibilityCheck`. No Blender is needed.

**Plan.** ``environments x scenes_per_environment`` examples, exactly ``scenes_per_environment`` per
environment, split and given query attributes by :func:`clevr_poc.generation.example_plan.plan_examples`.

**Determinism.** Every example draws all its randomness from ``random.Random`` seeded by SHA-256 of
(seed, environment id, example index within the environment, attempt), so the files are byte-identical
whatever the worker count or executor. Workers only compute; the calling process writes, in order.

**Rejection without skew.** When no valid question exists for a scene (``1 <= |answer| < |domain|``
fails for every instantiation, or the layout cannot place the objects), the example is retried with the
next attempt's seed and the *same* query attribute, so rejection cannot skew the attribute shares.
Only after ``max_attempts`` failed attempts does an example fall back to the other attributes with a
positive share (largest share first); ``stats.json`` counts such fallbacks.

**Resumable.** An example is done when its question file exists (written last, atomically, after both
scene files). Kill the process at any moment and run the same call again: finished examples are
skipped, no partial file is ever visible, and the temp files a hard kill left are removed first
(:func:`remove_stale_generation_temps`). A folder generated with other settings is refused
(:class:`DatasetConfigError`).
"""

from __future__ import annotations

import functools
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

from clevr_poc._io import atomic_write_json, atomic_write_many, atomic_write_text, read_json, remove_stale_temp_files
from clevr_poc.environments.environment import Environment
from clevr_poc.errors import FormatError
from clevr_poc.generation.background_writes import BackgroundBatchWriter
from clevr_poc.generation.dataset_config import (
    DEFAULT_MAX_ATTEMPTS, DEFAULT_QUERY_SHARES, DEFAULT_SPLITS, FORMAT_HISTORY, MANIFEST, DatasetConfig,
    DatasetConfigError,
)
from clevr_poc.generation.example_generation import (
    ExampleTask, GeneratedExample, cached_scene_sampler, generate_example,
)
from clevr_poc.generation.example_plan import ExampleSpec, plan_examples
from clevr_poc.generation.layout import DEFAULT_VISIBILITY_RELAYOUTS
from clevr_poc.seeds import ENVIRONMENT, derive_seed


@dataclass(frozen=True)
class DatasetSummary:
    """What :func:`generate_dataset` did.

    Attributes:
        out_dir: the dataset folder.
        config: its settings.
        examples: examples in the dataset (E x S).
        generated: examples generated by this call; skipped: examples already on disk (resume).
        environments_seconds, examples_seconds, stats_seconds: wall time of each phase of this call.
        attempts: attempts used by the examples generated in this call; fallbacks: of those, examples
            whose query attribute had to change.
        stats: the content of ``stats.json``.
        layouts_checked, visibility_rejections: visibility checks run and layouts rejected by this call;
        visibility_seconds: time spent in the check by this call (summed over workers).
        stale_temp_files: temp files of a killed earlier run removed before resuming.
        stats_reused: this call generated nothing and kept the earlier run's ``stats.json``, figures and
            ``README.md`` (:func:`clevr_poc.generation.stats.current_stats`) instead of computing them again.
    """

    out_dir: Path
    config: DatasetConfig
    examples: int
    generated: int
    skipped: int
    environments_seconds: float
    examples_seconds: float
    stats_seconds: float
    attempts: int
    fallbacks: int
    stats: Mapping[str, Any] = field(repr=False)
    layouts_checked: int = 0
    visibility_rejections: int = 0
    visibility_seconds: float = 0.0
    stale_temp_files: int = 0
    stats_reused: bool = False

    @property
    def questions_per_second(self) -> float:
        return self.generated / self.examples_seconds if self.examples_seconds > 0 else float("nan")


def _sample_environment_task(args: tuple[int, int]) -> Environment:
    from clevr_poc.environments.sampler import sample_environment

    seed, env_id = args
    return sample_environment(derive_seed(ENVIRONMENT, seed, env_id), env_id=env_id)


def sample_dataset_environments(config: DatasetConfig, *, workers: int = 1, executor: str = "local",
                                ray_address: str | None = None, progress: bool = False) -> list[Environment]:
    """The dataset's environments: ``sample_environments(E, seed)``, computed in parallel (environment k
    comes from a seed derived from (seed, k), so it does not depend on E or on the worker count)."""
    from clevr_poc.executors import map_ordered

    tasks = [(config.seed, k) for k in range(config.environments)]
    return list(map_ordered(_sample_environment_task, tasks, workers=workers, executor=executor,
                            ray_address=ray_address, progress="environments" if progress else False))


def _prepare_environment_task(args: tuple[int, int]):
    """Worker: environment ``args[1]`` of the dataset and its scene sampler's state (the sampler stays
    in this process's cache for its own examples)."""
    environment = _sample_environment_task(args)
    return environment, cached_scene_sampler(environment).state()


def prepare_dataset_environments(config: DatasetConfig, *, workers: int = 1, executor: str = "local",
                                 ray_address: str | None = None, progress: bool = False) -> tuple[list, list]:
    """The dataset's environments (as :func:`sample_dataset_environments`) and, for each, its scene
    sampler's :class:`~clevr_poc.generation.scene_sampler.SamplerState` (calibration, and the Gibbs pool of
    environments that need one), computed once per environment in parallel, so that the workers that
    generate the examples do not each repeat it. Returns ``(environments, states)``."""
    from clevr_poc.executors import map_ordered

    tasks = [(config.seed, k) for k in range(config.environments)]
    pairs = list(map_ordered(_prepare_environment_task, tasks, workers=workers, executor=executor,
                             ray_address=ray_address, progress="environments" if progress else False))
    return [env for env, _ in pairs], [state for _, state in pairs]


def _open_folder(out_dir: Path, config: DatasetConfig) -> None:
    manifest = out_dir / MANIFEST
    if manifest.is_file():
        data = read_json(manifest)
        version = data.get("format_version") if isinstance(data, Mapping) else None
        if version != config.format_version:
            change = FORMAT_HISTORY.get(config.format_version, "")
            held = (f"no format version ({MANIFEST} has no format_version)" if version is None
                    else f"format version {version!r}")
            raise DatasetConfigError(
                f"{out_dir} holds a dataset of {held}, this clevr_poc writes version "
                f"{config.format_version} ({change}); it cannot be resumed: generate it again in a new folder")
        existing = DatasetConfig.from_json(data, source=manifest)
        if not existing.same_as(config):
            ours, theirs = config.to_json(), existing.to_json()
            diff = ", ".join(f"{k}: folder has {theirs[k]!r}, asked for {ours[k]!r}"
                             for k in ours if ours[k] != theirs.get(k)) or "shares differ"
            raise DatasetConfigError(f"{out_dir} holds a dataset generated with other settings ({diff}); "
                                     f"use another folder or the same settings to resume")
        return
    if out_dir.exists() and not out_dir.is_dir():
        raise DatasetConfigError(f"{out_dir} exists and is not a folder")
    if out_dir.is_dir() and any(not p.name.startswith(".") for p in out_dir.iterdir()):
        raise DatasetConfigError(f"{out_dir} is not empty and has no {MANIFEST}: refusing to write a dataset into it")
    atomic_write_json(manifest, config.to_json(), indent=2)


def remove_stale_generation_temps(out_dir: str | os.PathLike[str]) -> list[Path]:
    """Remove the temp files a killed ``generate`` left in the folders it writes (the dataset folder,
    ``environments/``, ``figures/`` and every split folder of ``complete/scenes``, ``incomplete/scenes`` and
    ``incomplete/questions``): only :func:`clevr_poc._io.remove_stale_temp_files`' own names. Returns
    the removed paths."""
    out_dir = Path(out_dir)
    folders = [out_dir, out_dir / "environments", out_dir / "figures"]
    for kind in ("complete/scenes", "incomplete/scenes", "incomplete/questions"):
        root = out_dir / kind
        folders += sorted(p for p in root.iterdir() if p.is_dir()) if root.is_dir() else []
    return [path for folder in folders for path in remove_stale_temp_files(folder)]


def _write_environments(out_dir: Path, environments: list[Environment]) -> None:
    for env in environments:
        path = out_dir / "environments" / f"{env.id}.lp"
        text = env.to_asp()
        if path.is_file():
            if path.read_text(encoding="utf-8") != text:
                raise DatasetConfigError(f"{path} differs from the environment the settings give (was the folder "
                                         f"generated by another clevr_poc version?); use a new folder")
        else:
            atomic_write_text(path, text)


def _done(out_dir: Path, specs: list[ExampleSpec]) -> set[tuple[str, int]]:
    listing: dict[tuple[str, str], set[str]] = {}

    def names(kind: str, split: str) -> set[str]:
        key = (kind, split)
        if key not in listing:
            folder = out_dir / kind / split
            listing[key] = set(os.listdir(folder)) if folder.is_dir() else set()
        return listing[key]

    done = set()
    for spec in specs:
        name = spec.file_name
        if all(name in names(kind, spec.split) for kind in
               ("incomplete/questions", "incomplete/scenes", "complete/scenes")):
            done.add((spec.split, spec.image_index))
    return done


#: Examples written per batch by :func:`generate_dataset` (:func:`write_examples`); a kill loses at most
#: the batch being written (measured: ``benchmarks/generation.py``, docs/benchmarks.md, issue 27).
DEFAULT_WRITE_BATCH = 32


def write_examples(out_dir: str | os.PathLike[str], results: Iterable[GeneratedExample]) -> None:
    """Write the three files of each example, durably and in order, with two batched writes
    (:func:`clevr_poc._io.atomic_write_many`): first both scene files of every example, then the
    question files (which mark the examples done). After a kill at any moment every example is whole
    (its three files) or absent (no question file: resume generates it again), and the question files
    present are a prefix of ``results``."""
    out_dir = Path(out_dir)
    scenes: list[tuple[Path, bytes]] = []
    questions: list[tuple[Path, bytes]] = []
    for result in results:
        spec = result.spec
        scenes.append((out_dir / "complete" / "scenes" / spec.split / spec.file_name,
                       result.complete_json.encode("utf-8")))
        scenes.append((out_dir / "incomplete" / "scenes" / spec.split / spec.file_name,
                       result.partial_json.encode("utf-8")))
        questions.append((out_dir / "incomplete" / "questions" / spec.split / spec.file_name,
                          result.question_json.encode("utf-8")))
    atomic_write_many(scenes)
    atomic_write_many(questions)  # the question file marks the example done: written last


def generate_dataset(
    out_dir: str | os.PathLike[str],
    *,
    environments: int,
    scenes_per_environment: int,
    seed: int,
    splits: Mapping[str, float] | None = None,
    workers: int = 1,
    executor: str = "local",
    ray_address: str | None = None,
    query_shares: Mapping[str, float] | None = None,
    max_attempts: int = DEFAULT_MAX_ATTEMPTS,
    progress: bool = True,
    chunksize: int = 4,
    on_example: Callable[[GeneratedExample], None] | None = None,
    visibility_check: str = "both",
    min_visible_pixels: int | None = None,
    visibility_relayouts: int = DEFAULT_VISIBILITY_RELAYOUTS,
    write_batch: int = DEFAULT_WRITE_BATCH,
) -> DatasetSummary:
    """Generate (or finish) a CLEVR-POC dataset in ``out_dir``; see the module docstring.

    Args:
        out_dir: the dataset folder (created; must be empty or hold a dataset with the same settings).
        environments: E, number of environments (paper: about 30).
        scenes_per_environment: S; the dataset has E x S examples (one question per scene).
        seed: random seed; the same settings give byte-identical files.
        splits: split name -> share (default train 0.6 / val 0.2 / test 0.2).
        workers, executor, ray_address: where to run (:func:`clevr_poc.executors.map_ordered`); they
            do not change the output.
        query_shares: attribute -> share of questions (default 0.4/0.4/0.1/0.1, paper Appendix B).
        max_attempts: attempts per example and attribute before falling back to another attribute.
        progress: show tqdm progress bars.
        chunksize: examples per worker task.
        on_example: called after each example is written (e.g. to report progress or, in tests, to stop);
            the examples of one write batch are all written before it is called for the first of them.
        visibility_check: ``"both"`` (default), ``"partial"`` or ``"off"`` (module docstring).
        min_visible_pixels: pixels each checked object must cover (default: the renderer's, 53 at 320 x 320).
        visibility_relayouts: re-placements of a scene graph failing the check before it is redrawn.
        write_batch: examples written at once (>= 1; :func:`write_examples`): a kill -9 loses at most
            this many finished examples with one process, and at most ``write_batch x (1 +``
            :data:`~clevr_poc.generation.background_writes.DEFAULT_MAX_PENDING` ``)`` with workers (their
            batches are written on a thread while the next ones are collected); Ctrl-C and errors lose
            none. It does not change the files.

    Returns:
        :class:`DatasetSummary`.

    Raises:
        DatasetConfigError: bad settings, or ``out_dir`` holds something else.
        GenerationError: an example has no valid question for any attribute.
        ExecutorError: bad executor settings.
    """
    from clevr_poc.executors import ExecutorConfig, local_pool_session, map_ordered, ray_session

    config = DatasetConfig(environments, scenes_per_environment, seed,
                           tuple((splits or DEFAULT_SPLITS).items()),
                           tuple((query_shares or DEFAULT_QUERY_SHARES).items()), max_attempts,
                           visibility_check=visibility_check, min_visible_pixels=min_visible_pixels,
                           visibility_relayouts=visibility_relayouts)
    ExecutorConfig(workers, executor, ray_address)  # validate before touching the folder
    if isinstance(write_batch, bool) or not isinstance(write_batch, int) or write_batch < 1:
        raise DatasetConfigError(f"write_batch must be a positive integer, got {write_batch!r}")
    out_dir = Path(out_dir)
    _open_folder(out_dir, config)
    stale = remove_stale_generation_temps(out_dir)  # a killed run's leftovers (SIGKILL, power loss)

    # one pool for the environments and the examples (its workers keep their samplers)
    session = ray_session(workers, ray_address) if executor == "ray" else local_pool_session(workers)
    with session:
        started = time.perf_counter()
        envs, states = prepare_dataset_environments(config, workers=workers, executor=executor,
                                                    ray_address=ray_address, progress=progress)
        _write_environments(out_dir, envs)
        environments_seconds = time.perf_counter() - started

        started = time.perf_counter()
        specs = plan_examples(config)
        done = _done(out_dir, specs)
        visibility = config.visibility
        tasks = [ExampleTask(s, envs[s.environment_id], config.seed, config.max_attempts, config.fallback_attributes,
                             visibility, states[s.environment_id])
                 for s in specs if (s.split, s.image_index) not in done]
        attempts = fallbacks = layouts_checked = rejections = 0
        visibility_seconds = 0.0
        batch: list[GeneratedExample] = []
        # with worker processes the batches are written on a thread of their own (background_writes),
        # so that this thread keeps handing out tasks while a batch waits for the disk
        writer = BackgroundBatchWriter(functools.partial(write_examples, out_dir),
                                       threaded=workers > 1 or executor == "ray")

        def report() -> None:
            for done_example in writer.written():
                if on_example is not None:
                    on_example(done_example)

        def flush() -> None:
            writer.submit(list(batch))
            batch.clear()
            report()

        with writer:  # leaving it waits for every handed-over batch: the finished examples are kept
            try:
                for result in map_ordered(generate_example, tasks, workers=workers, executor=executor,
                                          ray_address=ray_address, chunksize=chunksize,
                                          progress="questions" if progress else False):
                    batch.append(result)
                    attempts += result.attempts
                    fallbacks += result.query_attribute != result.spec.query_attribute
                    layouts_checked += result.layouts_checked
                    rejections += result.visibility_rejections
                    visibility_seconds += result.visibility_seconds
                    if len(batch) >= write_batch:
                        flush()
            finally:  # the examples finished before an error or an interrupt are kept
                if batch:
                    flush()
        report()
        examples_seconds = time.perf_counter() - started

    started = time.perf_counter()
    from clevr_poc.generation.stats import current_stats, write_report

    # nothing generated, nothing left by a killed run: the earlier run's statistics still hold
    stats = None if tasks or stale else current_stats(out_dir, config, len(specs))
    stats_reused = stats is not None
    if stats is None:
        stats = write_report(out_dir, config, envs, specs).to_json()
        stats = {**stats, "generation": generation_stats(out_dir, config, specs)}
        atomic_write_json(out_dir / "stats.json", stats, indent=2)
    stats_seconds = time.perf_counter() - started
    return DatasetSummary(out_dir, config, len(specs), len(tasks), len(done), environments_seconds,
                          examples_seconds, stats_seconds, attempts, fallbacks, stats, layouts_checked, rejections,
                          visibility_seconds, len(stale), stats_reused)


#: Counters of the ``generation`` object of complete scene files, summed by :func:`generation_stats`.
GENERATION_COUNTERS: tuple[str, ...] = (
    "attempts", "placement_failures", "layouts_checked", "visibility_rejections", "visibility_occluded",
    "visibility_too_small", "visibility_rejected_complete", "visibility_rejected_partial", "visibility_resamples",
)


def generation_stats(out_dir: str | os.PathLike[str], config: DatasetConfig, specs: Iterable[ExampleSpec]
                     ) -> dict[str, Any]:
    """The ``generation`` section of ``stats.json``: the visibility settings and the sums of the
    ``generation`` counters of every complete scene file of the plan (so a resumed run counts the whole
    dataset), plus ``visibility_rejection_rate`` = rejected / checked layouts (0 when none was checked).

    Raises:
        FormatError: a complete scene file is missing, malformed, or has no ``generation`` object.
    """
    out_dir = Path(out_dir)
    totals = dict.fromkeys(GENERATION_COUNTERS, 0)
    for spec in specs:
        path = out_dir / "complete" / "scenes" / spec.split / spec.file_name
        data = read_json(path)
        counts = data.get("generation") if isinstance(data, Mapping) else None
        if not isinstance(counts, Mapping):
            raise FormatError("missing the 'generation' object", source=path, field="generation")
        for key in GENERATION_COUNTERS:
            value = counts.get(key, 0)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise FormatError("expected a count", source=path, field=f"generation.{key}", value=value)
            totals[key] += value
    checked = totals["layouts_checked"]
    rate = round(totals["visibility_rejections"] / checked, 6) if checked else 0.0
    return {"visibility": config.visibility_json(), **totals, "visibility_rejection_rate": rate}
