"""Generation throughput: complete scene graphs/s and labelled questions/s, and the projected time for
the paper's 10^6 scene graphs (paper §3.3: "we randomly sample a million of these scene graphs").

Everything runs through :func:`clevr_poc.executors.map_ordered` on ``--workers`` processes (default 2),
on ``--environments`` environments from the dataset's own sampler (N = 5-9 objects, up to 15
constraints), exactly as ``python -m clevr_poc generate`` (default settings) runs them:

0. *environment set-up*: :func:`~clevr_poc.generation.dataset_writer.prepare_dataset_environments`
   (environments sampled, each one's scene sampler calibrated -- and its Gibbs pool built when it needs
   one -- once, in parallel), on the pool that step 3 then uses
   (:func:`~clevr_poc.executors.local_pool_session`, as ``generate`` does);
1. *complete scene graphs*: :meth:`~clevr_poc.generation.scene_sampler.SceneSampler.sample` (attributes and
   regions, every scene checked against the environment program), samplers rebuilt in the workers from the prepared states;
2. *with layout*: the same plus :func:`~clevr_poc.generation.layout.place_objects`;
3. *labelled questions*: :func:`~clevr_poc.generation.example_generation.generate_example` per question (scene,
   layout, visibility check from the render camera, hidden object, question, answer labelled by the
   reasoner, retries), without disk writes; the figure's time includes the environment set-up (0.) and
   the pool's start (measured first, before 1. and 2.);
4. *baseline* (same run, same tasks): the reference path -- every worker builds every sampler itself
   and every layout is ray-cast (``ExampleTask(sampler_state=None, exact_visibility=True)``), set-up and
   examples on pools of their own, which is what ``generate`` did before the cheap visibility bound and
   the shared sampler states (the outputs are identical: the benchmark checks it question by question);
5. *dataset*: :func:`~clevr_poc.generation.dataset_writer.generate_dataset` into a temporary folder (writes
   included; statistics/plots excluded from the rate) under ``--dataset-dir`` (default: the system's
   temporary folder). Printed beside it: what creating one file costs on that disk right now
   (:func:`file_create_cost`, CPU microseconds per ``open(O_CREAT|O_EXCL)``), because the rate depends
   on it: an ext4 file system *without a journal* (``/proc/fs/jbd2`` lists none; such as the 2-core
   VMs of docs/benchmarks.md) skips every inode freed in the last 60-300 s when it creates a file
   (``recently_deleted`` in the kernel's ``fs/ext4/ialloc.c``), so for a few minutes after many files
   were deleted -- a previous run's temporary folder, a test suite -- each create costs up to ~0.7 ms
   instead of ~20 us, and the dataset figure drops by about a fifth (measured: docs/benchmarks.md);
6. *reference code* (``--reference-code DIR``, same run): step 3 once more in a subprocess that imports
   ``clevr_poc`` from ``DIR``, another checkout (e.g. ``git worktree add /tmp/clevr_poc_main main``):
   the ratio of this code's labelled questions/s to that code's, and whether their question files are
   identical (a SHA-256 of all of them). Issue 27 measured its speed-up this way, against the code
   before it.

Rates: *wall* = items / wall seconds with ``--workers`` processes (what the machine delivered, process
start-up, imports and set-up included); *per CPU-second* = items / CPU seconds of the parent and all
its worker processes (getrusage; what one dedicated core delivers, less sensitive to other load). The
load average is printed next to each figure: other processes on the machine lower the wall figures.

Usage::

    python benchmarks/generation.py [--workers 2] [--environments 10] [--scenes 20000] [--questions 2000]
                                    [--seed 0] [--no-baseline] [--reference-code DIR] [--dataset-dir DIR]
                                    [--json]
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import platform
import random
import resource
import subprocess
import sys
import tempfile
import time

from clevr_poc.executors import map_ordered
from clevr_poc.generation.dataset_config import DatasetConfig
from clevr_poc.generation.example_generation import ExampleTask, generate_example
from clevr_poc.seeds import DATASET, derive_seed
from clevr_poc.generation.dataset_writer import generate_dataset, prepare_dataset_environments
from clevr_poc.generation.example_plan import plan_examples

PAPER_SCENE_GRAPHS = 1_000_000
_SAMPLERS: dict = {}


def _sampler(environment, state):
    from clevr_poc.generation.scene_sampler import SceneSampler

    key = (environment.id, environment.constraints_asp())
    if key not in _SAMPLERS:
        _SAMPLERS[key] = SceneSampler(environment, state=state)
    return _SAMPLERS[key]


def sample_scene_graphs(task) -> int:
    """Worker: ``count`` complete scene graphs of one environment (optionally laid out)."""
    environment, state, seed, count, layout = task
    sampler = _sampler(environment, state)
    rng = random.Random(seed)
    done = 0
    while done < count:
        scene = sampler.sample(rng)
        if layout:
            from clevr_poc.generation.layout import PlacementError, place_objects

            try:
                place_objects(scene, rng)
            except PlacementError:
                continue
        done += 1
    return done


def labelled_question(task: ExampleTask) -> tuple[str, int]:
    """Worker: one dataset example (no writes); returns (its question file's text, attempts)."""
    result = generate_example(task)
    return result.question_json, result.attempts


#: Files :func:`file_create_cost` creates (kept until the dataset run's temporary folder is removed).
PROBE_FILES = 200


def file_create_cost(folder: str, files: int = PROBE_FILES) -> float:
    """CPU microseconds (user + system, this process) per new empty file created in ``folder``
    (``os.open(O_CREAT | O_EXCL)`` + close), measured over ``files`` files. The files are left in
    place: deleting them would itself make the next creates slower on a journal-less ext4 (see the
    module docstring); the caller's temporary folder removes them at the end."""
    os.makedirs(folder, exist_ok=True)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL
    started = time.process_time()
    for index in range(files):
        os.close(os.open(os.path.join(folder, f"probe_{index:04d}"), flags, 0o644))
    return (time.process_time() - started) / files * 1e6


def _cpu_seconds() -> float:
    """CPU seconds (user + system) of this process and of its waited-for children so far."""
    total = 0.0
    for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN):
        usage = resource.getrusage(who)
        total += usage.ru_utime + usage.ru_stime
    return total


def _load() -> float:
    return round(os.getloadavg()[0], 2) if hasattr(os, "getloadavg") else float("nan")


class _Timer:
    """Wall and CPU seconds (parent + finished worker pools) of a block, and the load around it."""

    def __enter__(self) -> "_Timer":
        self.load_before = _load()
        self.wall, self.cpu = time.perf_counter(), _cpu_seconds()
        return self

    def __exit__(self, *exc) -> None:
        self.wall = time.perf_counter() - self.wall
        self.cpu = _cpu_seconds() - self.cpu
        self.load_after = _load()


def _rate(count: int, wall: float, cpu: float, timer: _Timer, **extra) -> dict:
    return {"count": count, "seconds": round(wall, 2), "cpu_seconds": round(cpu, 2),
            "per_second": round(count / wall, 1), "per_cpu_second": round(count / cpu, 1),
            "load_average": [timer.load_before, timer.load_after], **extra}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--environments", type=int, default=10)
    parser.add_argument("--scenes", type=int, default=20_000, help="complete scene graphs to sample")
    parser.add_argument("--layout-scenes", type=int, default=4_000, help="scene graphs to sample and lay out")
    parser.add_argument("--questions", type=int, default=2_000,
                        help="labelled questions to generate (default 2000: 200 per environment)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-baseline", action="store_true", help="skip the baseline (reference path) run")
    parser.add_argument("--no-dataset", action="store_true", help="skip the generate_dataset run")
    parser.add_argument("--reference-code", metavar="DIR",
                        help="also measure labelled questions with the clevr_poc of this checkout (same run)")
    parser.add_argument("--questions-only", action="store_true",
                        help="measure labelled questions only and print them as JSON (what --reference-code runs)")
    parser.add_argument("--dataset-dir", metavar="DIR", default=None,
                        help="folder in which the dataset run makes its temporary folder (default: the system's "
                             "temporary folder); the disk's file-creation cost is printed beside the figure")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)
    if args.dataset_dir is not None and not os.path.isdir(args.dataset_dir):
        parser.error(f"--dataset-dir {args.dataset_dir!r} is not a folder")
    if args.questions_only:
        args.no_baseline = args.no_dataset = True
        args.scenes = args.layout_scenes = 0

    config = DatasetConfig(args.environments, max(1, args.questions // args.environments), args.seed)
    specs = plan_examples(config)

    def run_questions(shared: bool) -> tuple[dict, list[str], list, list, "_Timer"]:
        """Set-up and labelled questions as ``generate`` runs them (``shared``: one pool for both,
        when this clevr_poc has :func:`~clevr_poc.executors.local_pool_session`), or the baseline path
        (separate pools, samplers rebuilt by every worker, every layout ray-cast)."""
        texts, attempts = [], 0
        session = _pool_session(args.workers) if shared else contextlib.nullcontext()
        with _Timer() as timer:  # around the session: the pool's workers have ended when it stops
            with session:
                with _Timer() as setup:
                    environments, states = prepare_dataset_environments(config, workers=args.workers)
                tasks = [ExampleTask(s, environments[s.environment_id], config.seed, config.max_attempts,
                                     config.fallback_attributes, config.visibility,
                                     states[s.environment_id] if shared else None, exact_visibility=not shared)
                         for s in specs]
                with _Timer() as examples:
                    for text, used in map_ordered(labelled_question, tasks, workers=args.workers, chunksize=4):
                        texts.append(text)
                        attempts += used
        # the environment set-up is part of what generate does for these questions: it is counted
        rate = _rate(len(texts), timer.wall, timer.cpu, timer, attempts_per_question=round(attempts / len(texts), 2),
                     examples_seconds=round(examples.wall, 2), environment_setup_seconds=round(setup.wall, 2))
        return rate, texts, environments, states, setup

    questions, texts, environments, states, setup = run_questions(True)
    questions["sha256"] = hashlib.sha256("".join(texts).encode()).hexdigest()
    if args.questions_only:
        print(json.dumps({"labelled_questions": questions}))
        return 0
    methods = [s.pool is not None for s in states]

    def scene_tasks(total: int, layout: bool, chunk: int = 500):
        per_env = total // len(environments)
        return [(env, state, derive_seed(DATASET, args.seed, "bench", env.id, start, layout), min(chunk, per_env - start),
                 layout)
                for env, state in zip(environments, states) for start in range(0, per_env, chunk)]

    def run_scenes(total: int, layout: bool, chunk: int) -> dict:
        with _Timer() as timer:
            count = sum(map_ordered(sample_scene_graphs, scene_tasks(total, layout, chunk), workers=args.workers))
        return _rate(count, timer.wall, timer.cpu, timer)

    scenes = run_scenes(args.scenes, False, 500) if args.scenes else None
    laid_out = run_scenes(args.layout_scenes, True, 200) if args.layout_scenes else None

    other_code = None
    if args.reference_code:
        other_code = _reference_questions(args)
        other_code["identical_questions"] = other_code["sha256"] == questions["sha256"]
    baseline = None
    if not args.no_baseline:
        baseline, reference, _, _, _ = run_questions(False)
        baseline["identical_questions"] = reference == texts
    dataset = None
    if not args.no_dataset:
        with tempfile.TemporaryDirectory(dir=args.dataset_dir) as tmp:
            create_us = file_create_cost(os.path.join(tmp, "probe"))
            with _Timer() as timer:
                summary = generate_dataset(os.path.join(tmp, "data"), environments=config.environments,
                                           scenes_per_environment=config.scenes_per_environment, seed=config.seed,
                                           workers=args.workers, progress=False)
        seconds = summary.environments_seconds + summary.examples_seconds
        dataset = {"count": summary.generated, "seconds": round(seconds, 2),
                   "per_second": round(summary.generated / seconds, 1),
                   "stats_and_plots_seconds": round(summary.stats_seconds, 2),
                   "file_create_us": round(create_us, 1), "dataset_dir": os.path.dirname(tmp),
                   "load_average": [timer.load_before, timer.load_after]}

    def projected(rate: dict) -> dict:
        return {"wall_hours": round(PAPER_SCENE_GRAPHS / rate["per_second"] / 3600, 2),
                "hours_on_2_dedicated_cores": round(PAPER_SCENE_GRAPHS / (2 * rate["per_cpu_second"]) / 3600, 2)}

    report = {
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}",
        "workers": args.workers,
        "environments": len(environments),
        "gibbs_environments": sum(methods),
        "environment_setup": {"seconds": round(setup.wall, 2), "load_average": [setup.load_before, setup.load_after]},
        "complete_scene_graphs": scenes,
        "scene_graphs_with_layout": laid_out,
        "labelled_questions": questions,
        "labelled_questions_baseline": baseline,
        "dataset_with_writes": dataset,
        "labelled_questions_reference_code": other_code,
        "projected_for_1e6": {"complete_scene_graphs": projected(scenes) if scenes else None,
                              "scene_graphs_with_layout": projected(laid_out) if laid_out else None,
                              "labelled_questions": projected(questions)},
    }
    if args.json:
        print(json.dumps(report))
        return 0
    print(f"{report['machine']}; {args.workers} workers; {len(environments)} environments ({sum(methods)} need "
          f"the Gibbs sampler); environment set-up {setup.wall:.1f} s wall")
    print("rates: wall clock with this many workers | per CPU-second (parent + workers) | load average "
          "before-after")
    rows = [("complete scene graphs", scenes), ("  with 3D layout", laid_out), ("labelled questions", questions)]
    if baseline is not None:
        rows.append(("  baseline (reference)", baseline))
    if other_code is not None:
        rows.append(("  reference code", other_code))
    rows = [(name, rate) for name, rate in rows if rate is not None]
    for name, rate in rows:
        hours = projected(rate)
        print(f"{name:22s}: {rate['per_second']:8.1f} /s wall | {rate['per_cpu_second']:8.1f} /CPU-s "
              f"({rate['count']} in {rate['seconds']:.1f} s) | load {rate['load_average'][0]:.1f}-"
              f"{rate['load_average'][1]:.1f} -> 10^6: {hours['wall_hours']:.2f} h wall, "
              f"{hours['hours_on_2_dedicated_cores']:.2f} h on 2 dedicated cores")
    print(f"  ({questions['attempts_per_question']:.2f} attempts per labelled question; labelled-question "
          f"times include the environment set-up)")
    if baseline is not None:
        print(f"  baseline questions identical to the optimised path: {baseline['identical_questions']}; "
              f"speed-up x{questions['per_second'] / baseline['per_second']:.2f} wall, "
              f"x{questions['per_cpu_second'] / baseline['per_cpu_second']:.2f} per CPU-s")
    if other_code is not None:
        print(f"  reference code ({args.reference_code}): questions identical: {other_code['identical_questions']}; "
              f"this code x{questions['per_second'] / other_code['per_second']:.2f} wall, "
              f"x{questions['per_cpu_second'] / other_code['per_cpu_second']:.2f} per CPU-s")
    if dataset is not None:
        print(f"dataset (with writes) : {dataset['per_second']:8.1f} /s wall ({dataset['count']} in "
              f"{dataset['seconds']:.1f} s, environments included; statistics and plots "
              f"{dataset['stats_and_plots_seconds']:.1f} s) | load {dataset['load_average'][0]:.1f}-"
              f"{dataset['load_average'][1]:.1f}")
        print(f"  creating a file in {dataset['dataset_dir']} costs {dataset['file_create_us']:.0f} us "
              f"CPU now (3 files per question; a journal-less ext4 costs up to ~700 us for minutes after many "
              f"deletions, about 20 us otherwise: see the module docstring)")
    return 0


def _pool_session(workers: int):
    """:func:`clevr_poc.executors.local_pool_session` (what ``generate`` runs in), or nothing with a
    clevr_poc from before it (``--reference-code``)."""
    try:
        from clevr_poc.executors import local_pool_session
    except ImportError:
        return contextlib.nullcontext()
    return local_pool_session(workers)


def _reference_questions(args) -> dict:
    """Step 3 with the clevr_poc of ``args.reference_code`` (this script, ``--questions-only``, in a
    subprocess whose ``PYTHONPATH`` starts with that checkout): its labelled-questions figures."""
    command = [sys.executable, os.path.abspath(__file__), "--questions-only", "--workers", str(args.workers),
               "--environments", str(args.environments), "--questions", str(args.questions), "--seed", str(args.seed)]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [os.path.abspath(args.reference_code)] + [p for p in [os.environ.get("PYTHONPATH")] if p]))
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=True,
                          cwd=os.path.abspath(args.reference_code))
    return json.loads(done.stdout.strip().splitlines()[-1])["labelled_questions"]


if __name__ == "__main__":
    sys.exit(main())
