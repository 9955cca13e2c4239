"""Generation throughput: complete scene graphs/s and labelled questions/s, and the projected time for
the paper's 10^6 scene graphs (paper §3.3: "we randomly sample a million of these scene graphs").

Measured with :func:`clevr_poc.executors.map_ordered` on ``--workers`` processes (default 2), on
environments from the sampler (N = 5-9 objects, up to 15 constraints):

1. *complete scene graphs*: :class:`~clevr_poc.generation.scenes.SceneSampler` samples (attributes and
   regions; every scene checked by clingo), per-process sampler construction included;
2. *with layout*: the same plus :func:`~clevr_poc.generation.layout.place_objects` (3D coordinates,
   relationships);
3. *labelled questions*: the dataset pipeline per example (scene, layout, hidden object, question
   instantiation, labelling by the reasoner, retries), i.e.
   :func:`clevr_poc.generation.dataset.generate_example`, without disk writes;
4. *dataset*: :func:`~clevr_poc.generation.dataset.generate_dataset` into a temporary folder (writes
   included; statistics/plots excluded from the rate).

Usage::

    python benchmarks/generation.py [--workers 2] [--environments 10] [--scenes 20000] [--questions 1000]
                                    [--seed 0] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import sys
import tempfile
import time

from clevr_poc.executors import map_ordered
from clevr_poc.generation.dataset import (
    DatasetConfig, ExampleTask, derive_seed, generate_dataset, generate_example, plan_examples,
    sample_dataset_environments,
)

PAPER_SCENE_GRAPHS = 1_000_000
_SAMPLERS: dict = {}


def _sampler(environment):
    from clevr_poc.generation.scenes import SceneSampler

    key = (environment.id, environment.constraints_asp())
    if key not in _SAMPLERS:
        _SAMPLERS[key] = SceneSampler(environment)
    return _SAMPLERS[key]


def sample_scene_graphs(task) -> tuple[int, float]:
    """Worker: ``count`` complete scene graphs of one environment (optionally laid out); returns
    (count, CPU seconds of this process spent on it, sampler construction included)."""
    started = time.process_time()
    environment, seed, count, layout = task
    sampler = _sampler(environment)
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
    return done, time.process_time() - started


def labelled_question(task: ExampleTask) -> tuple[int, float, int]:
    """Worker: one dataset example (no writes); returns (1, CPU seconds, attempts)."""
    started = time.process_time()
    result = generate_example(task)
    return 1, time.process_time() - started, result.attempts


def _rate(func, tasks, workers: int, chunksize: int = 1) -> dict:
    """Run ``func`` over ``tasks`` (each returns (items, CPU seconds, ...)): wall-clock rate, and the rate
    per CPU-second of the workers (what one dedicated core achieves; unaffected by other load)."""
    started = time.perf_counter()
    items = cpu = extra = 0
    for result in map_ordered(func, tasks, workers=workers, chunksize=chunksize):
        items += result[0]
        cpu += result[1]
        extra += result[2] if len(result) > 2 else 0
    seconds = time.perf_counter() - started
    return {"count": items, "seconds": round(seconds, 2), "per_second": round(items / seconds, 1),
            "per_cpu_second": round(items / cpu, 1), "extra": extra}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--environments", type=int, default=10)
    parser.add_argument("--scenes", type=int, default=20_000, help="complete scene graphs to sample")
    parser.add_argument("--layout-scenes", type=int, default=4_000, help="scene graphs to sample and lay out")
    parser.add_argument("--questions", type=int, default=1_000, help="labelled questions to generate")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--visibility-check", default="both", choices=["both", "partial", "off"],
                        help="layout visibility check of the labelled-question runs (default: both, as generate)")
    args = parser.parse_args(argv)

    config = DatasetConfig(args.environments, max(1, args.questions // args.environments), args.seed,
                           visibility_check=args.visibility_check)
    started = time.perf_counter()
    environments = sample_dataset_environments(config, workers=args.workers)
    environment_seconds = time.perf_counter() - started

    def scene_tasks(total: int, layout: bool, chunk: int = 500):
        per_env = total // len(environments)
        tasks = []
        for env in environments:
            for start in range(0, per_env, chunk):
                tasks.append((env, derive_seed(args.seed, "bench", env.id, start, layout), min(chunk, per_env - start),
                              layout))
        return tasks

    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    scenes = _rate(sample_scene_graphs, scene_tasks(args.scenes, False), args.workers)
    laid_out = _rate(sample_scene_graphs, scene_tasks(args.layout_scenes, True, 200), args.workers)
    specs = plan_examples(config)
    tasks = [ExampleTask(s, environments[s.environment_id], config.seed, config.max_attempts,
                         config.fallback_attributes) for s in specs]
    questions = _rate(labelled_question, tasks, args.workers, chunksize=4)
    attempts = questions.pop("extra") / questions["count"]
    scenes.pop("extra"), laid_out.pop("extra")
    with tempfile.TemporaryDirectory() as tmp:
        summary = generate_dataset(os.path.join(tmp, "data"), environments=config.environments,
                                   scenes_per_environment=config.scenes_per_environment, seed=config.seed,
                                   workers=args.workers, progress=False)

    def projected(rate: dict) -> dict:
        return {"wall_hours": round(PAPER_SCENE_GRAPHS / rate["per_second"] / 3600, 2),
                "hours_on_2_dedicated_cores": round(PAPER_SCENE_GRAPHS / (2 * rate["per_cpu_second"]) / 3600, 2)}

    report = {
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}",
        "load_average_at_start": round(load, 2),
        "workers": args.workers,
        "environments": len(environments),
        "environment_sampling_seconds": round(environment_seconds, 2),
        "complete_scene_graphs": scenes,
        "scene_graphs_with_layout": laid_out,
        "labelled_questions": {**questions, "attempts_per_question": round(attempts, 2)},
        "dataset_with_writes": {"count": summary.generated, "seconds": round(summary.examples_seconds, 2),
                                "per_second": round(summary.questions_per_second, 1),
                                "stats_and_plots_seconds": round(summary.stats_seconds, 2)},
        "projected_for_1e6": {"complete_scene_graphs": projected(scenes),
                              "scene_graphs_with_layout": projected(laid_out),
                              "labelled_questions": projected(questions)},
    }
    if args.json:
        print(json.dumps(report))
        return 0
    print(f"{report['machine']}; {args.workers} workers; load average {load:.1f} at start; "
          f"{len(environments)} environments (sampled in {environment_seconds:.1f} s)")
    print("rates: wall clock with this many workers | per CPU-second of a worker (x2 = two dedicated cores)")
    for name, rate in (("complete scene graphs", scenes), ("  with 3D layout", laid_out),
                       ("labelled questions", questions)):
        hours = projected(rate)
        print(f"{name:22s}: {rate['per_second']:8.1f} /s wall | {rate['per_cpu_second']:8.1f} /CPU-s "
              f"({rate['count']} in {rate['seconds']:.1f} s) -> 10^6: {hours['wall_hours']:.2f} h wall, "
              f"{hours['hours_on_2_dedicated_cores']:.2f} h on 2 dedicated cores")
    print(f"  ({attempts:.2f} attempts per labelled question)")
    print(f"dataset (with writes) : {summary.questions_per_second:8.1f} /s wall ({summary.generated} in "
          f"{summary.examples_seconds:.1f} s; statistics and plots {summary.stats_seconds:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
