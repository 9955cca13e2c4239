"""How busy the workers of ``evaluate --workers N`` stay (issue 27): NS-VQA from pixels through
:class:`clevr_poc.evaluation.model_pool.ModelPool` with tasks of ``--task-size`` questions (idle workers
take the others' waiting tasks) against one task per worker and batch (the code before), alternated in
the same run, on the same questions, in batches of ``64 * workers`` as ``evaluate`` sends them.

Each worker stamps when it starts and ends each task (``time.perf_counter``, one clock for all
processes); per batch, a worker's idle time is the batch's wall time minus its busy time. The idle share
(idle seconds / (workers x wall seconds)) measures the balance even on a shared machine, where the
wall figures themselves depend on the other jobs; the load average is printed. Models are loaded before
any clock; the predictions of every run are compared.

Usage::

    python benchmarks/pool_balance.py --dataset DIR [--split test] [--limit 320] [--workers 2]
        [--task-size 4] [--rounds 2] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from answers_from_pixels import build_pipeline  # noqa: E402


def timed_predictions(model, examples) -> list[tuple]:
    """Worker: ``(prediction, task start, task end)`` per example (one task = this call)."""
    from clevr_poc.evaluation.model_pool import predict_with

    start = time.perf_counter()
    predictions = predict_with(model, examples)
    end = time.perf_counter()
    return [(p, start, end, os.getpid()) for p in predictions]


def run(pool, examples, batch: int) -> dict:
    """The examples through ``pool`` in batches of ``batch``: wall seconds, idle share, predictions."""
    wall = idle = 0.0
    predictions = []
    workers = pool.config.workers
    for first in range(0, len(examples), batch):
        t0 = time.perf_counter()
        out = pool.map_routed(timed_predictions, examples[first:first + batch])
        t1 = time.perf_counter()
        busy: dict[int, set[tuple[float, float]]] = {}
        for _, start, end, pid in out:
            busy.setdefault(pid, set()).add((start, end))
        idle += workers * (t1 - t0) - sum(end - start for tasks in busy.values() for start, end in tasks)
        wall += t1 - t0
        predictions += [p.values for p, *_ in out]
    return {"wall_s": wall, "idle_share": idle / (workers * wall), "predictions": predictions}


def main(argv: list[str] | None = None) -> int:
    from clevr_poc.commands.shared import split_examples
    from clevr_poc.evaluation.model_pool import ModelPool, ModelRecipe
    from clevr_poc.model_folders import check_checkpoints

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", required=True)
    parser.add_argument("--split", default="test")
    parser.add_argument("--limit", type=int, default=320)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--task-size", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    examples = split_examples(args.dataset, args.split, args.limit)
    recipe = ModelRecipe(build_pipeline, (str(check_checkpoints(scene_source="perception")["perception"]),))
    settings = {"one task per worker (before)": None, f"tasks of {args.task_size}": args.task_size}
    results: dict[str, list[dict]] = {name: [] for name in settings}
    loads = [round(os.getloadavg()[0], 2)]
    for r in range(args.rounds):
        order = list(settings.items()) if r % 2 == 0 else list(reversed(settings.items()))
        for name, size in order:
            with ModelPool(recipe, workers=args.workers, task_size=size).start() as pool:  # loads aside
                results[name].append(run(pool, examples, 64 * args.workers))
            loads.append(round(os.getloadavg()[0], 2))
    predictions = [x["predictions"] for rs in results.values() for x in rs]
    report = {"questions": len(examples), "workers": args.workers, "load_average": loads,
              "identical_predictions": all(p == predictions[0] for p in predictions)}
    for name, rs in results.items():
        report[name] = {"questions_per_second": [round(len(examples) / x["wall_s"], 1) for x in rs],
                        "idle_share": [round(x["idle_share"], 3) for x in rs]}
    if args.json:
        print(json.dumps(report))
        return 0
    print(f"{len(examples)} questions, {args.workers} workers, {args.rounds} rounds, load average {loads}")
    for name in settings:
        r = report[name]
        print(f"{name:30s} wall {r['questions_per_second']} questions/s, workers idle {r['idle_share']} of the time")
    print(f"identical predictions: {report['identical_predictions']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
