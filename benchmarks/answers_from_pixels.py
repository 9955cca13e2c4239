"""Answers from pixels: questions/s of NS-VQA with perception (``evaluate --scene perception``), the share
of each stage, and the detector's batch size, on a rendered dataset split (issue 27).

1. *stages* (one process, CPU seconds per question, unaffected by other load): image decoding, the
   detector (Faster R-CNN) at batch sizes 1/2/4/8 (the batch size is chosen by this measurement), the
   attribute network, constraint-aware decoding (clingo), the reasoner (its first question per
   environment grounds the environment's program: counted apart);
2. *end to end*: :func:`clevr_poc.evaluation.evaluate` of the pipeline in this process (the baseline)
   and through :class:`clevr_poc.evaluation.model_pool.ModelPool` with ``--workers`` processes, in the
   same run, models loaded before the clock starts; wall questions/s, CPU seconds per question (this
   process and its workers, getrusage) and whether the answers are identical.

Usage::

    python benchmarks/answers_from_pixels.py --dataset DIR [--split test] [--limit 100] [--workers 2]
        [--task-size 4] [--no-stages] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from generation import _cpu_seconds as _cpu, _load  # noqa: E402  (the same clocks as the generation figures)


def build_pipeline(perception_path: str):
    """The NS-VQA pipeline from pixels (gold queries, constraint-aware decoding), 1 torch thread."""
    from clevr_poc.perception import Perception
    from clevr_poc.pipeline import Pipeline

    torch.set_num_threads(1)
    return Pipeline(Perception.from_pretrained(perception_path, device="cpu"), name="NS-VQA (pixels)")


def stage_costs(pipeline, examples) -> dict:
    """CPU milliseconds per question of each stage (one process)."""
    from clevr_poc.perception.cameras import camera_spec
    from clevr_poc.image_files import as_rgb_array
    from clevr_poc.reasoning import Reasoner

    perception = pipeline.perception
    # the detector as perception runs it (the fast path where this code has one)
    run_detector = getattr(perception, "detector_outputs", perception.detector)
    clock = time.process_time
    costs = {"decode_image": 0.0, "detector": 0.0, "attributes": 0.0, "decode_scene": 0.0, "reason": 0.0,
             "reason_grounding": 0.0}
    reasoner = Reasoner()
    seen = set()
    tensors, cameras = [], []
    for example in examples:
        camera = camera_spec(example.partial_scene, pipeline.camera_source, source=example.image_path)
        t0 = clock()
        array = as_rgb_array(example.image_path)
        t1 = clock()
        array, cam = perception.camera_for(array, camera)
        tensor = torch.from_numpy(array).permute(2, 0, 1).float().div_(255.0)
        with torch.no_grad():
            run_detector([tensor])
        t2 = clock()
        detections = perception._run_networks(array, cam)  # detector + attribute network (no cache)
        t3 = clock()
        scene = perception.decode(detections, cam, example.environment)
        t4 = clock()
        reasoner.answer(example.environment, scene, example.question.asp_query)
        t5 = clock()
        costs["decode_image"] += t1 - t0
        costs["detector"] += t2 - t1
        costs["attributes"] += (t3 - t2) - (t2 - t1)
        costs["decode_scene"] += t4 - t3
        key = example.environment.id
        costs["reason_grounding" if key not in seen else "reason"] += t5 - t4
        seen.add(key)
        tensors.append(tensor)
        cameras.append(cam)
    n = len(examples)
    per_question = {k: round(v / n * 1000, 2) for k, v in costs.items()}
    batches = {}
    with torch.no_grad():
        for size in (1, 2, 4, 8):
            t0 = clock()
            for start in range(0, n, size):
                run_detector(tensors[start:start + size])
            batches[size] = round((clock() - t0) / n * 1000, 2)
    return {"ms_per_question": per_question, "detector_ms_per_image_by_batch": batches,
            "environments": len(seen)}


def end_to_end(pipeline, examples, workers: int, perception_path: str, task_size: int | None = 4) -> dict:
    from clevr_poc.evaluation import evaluate
    from clevr_poc.evaluation.model_pool import ModelPool, ModelRecipe

    runs = {}
    load = [_load()]
    cpu, wall = _cpu(), time.perf_counter()
    base = evaluate(pipeline, examples, progress=False, batch_size=64)
    runs["1 process (baseline)"] = (time.perf_counter() - wall, _cpu() - cpu, base)
    load.append(_load())
    # tasks of task_size questions, as `evaluate --workers N` from pixels (None: one task per worker and batch)
    pool = ModelPool(ModelRecipe(build_pipeline, (perception_path,)), workers=workers, task_size=task_size).start()
    with pool:
        cpu_before, wall = _cpu(), time.perf_counter()
        pooled = evaluate(pool, examples, progress=False, batch_size=64 * workers)
        wall = time.perf_counter() - wall
    # the workers' CPU counts once they are waited for (pool closed); their model loading is subtracted
    # with the CPU of a pool that only loads
    cpu_pooled = _cpu() - cpu_before
    with ModelPool(ModelRecipe(build_pipeline, (perception_path,)), workers=workers).start():
        cpu_load = _cpu()
    cpu_load = _cpu() - cpu_load
    runs[f"{workers} worker processes"] = (wall, max(cpu_pooled - cpu_load, 0.0), pooled)
    load.append(_load())
    n = len(examples)
    out = {name: {"seconds": round(w, 2), "questions_per_second": round(n / w, 1),
                  "cpu_ms_per_question": round(c / n * 1000, 1),
                  "questions_per_cpu_second": round(n / c, 1) if c else None,
                  "exact_accuracy": report.exact_accuracy}
           for name, (w, c, report) in runs.items()}
    out["identical_answers"] = [r.predicted for r in base.results] == [r.predicted for r in pooled.results]
    out["load_average"] = load
    return out


def main(argv: list[str] | None = None) -> int:
    from clevr_poc.commands.shared import split_examples
    from clevr_poc.model_folders import check_checkpoints

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", required=True)
    parser.add_argument("--split", default="test")
    parser.add_argument("--limit", type=int, default=100)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--task-size", type=int, default=4,
                        help="questions per worker task (0: one task per worker and batch, the code before)")
    parser.add_argument("--no-stages", action="store_true", help="end to end only")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    examples = split_examples(args.dataset, args.split, args.limit)
    path = str(check_checkpoints(scene_source="perception")["perception"])
    pipeline = build_pipeline(path)
    stages = None if args.no_stages else stage_costs(pipeline, examples)
    runs = end_to_end(build_pipeline(path), examples, args.workers, path, args.task_size or None)
    report = {"questions": len(examples), "cpus": os.cpu_count(), "stages": stages, "end_to_end": runs}
    if args.json:
        print(json.dumps(report))
        return 0
    print(f"{len(examples)} questions, {os.cpu_count()} CPUs")
    if stages is not None:
        ms = stages["ms_per_question"]
        total = sum(ms.values()) - ms["reason_grounding"]
        print(f"{stages['environments']} environments; stage CPU ms per question (share of the warm total):")
        for name, value in ms.items():
            share = "" if name == "reason_grounding" else f" ({value / total:.0%})"
            print(f"  {name:18s} {value:8.2f}{share}")
        print(f"  (reason_grounding: first question of each environment, once per process)")
        print("detector ms per image by batch size:", stages["detector_ms_per_image_by_batch"])
    for name, run in runs.items():
        if isinstance(run, dict):
            print(f"{name:22s}: {run['questions_per_second']:6.1f} questions/s wall, {run['cpu_ms_per_question']:6.1f} "
                  f"CPU ms per question ({run['questions_per_cpu_second']} per CPU-s), exact {run['exact_accuracy']:.4f}")
    print(f"identical answers: {runs['identical_answers']}; load average {runs['load_average']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
