"""Answers from pixels, this code against a baseline checkout, in one run (issue 27).

Each round runs, in turn, one fresh process per code tree (``--baseline-tree``: another checkout of the
project, e.g. ``/work/main``; and this checkout), on the same rendered examples. Each process loads the
NS-VQA pipeline from pixels (one torch thread, models loaded before any clock), then measures

- its stages (:func:`answers_from_pixels.stage_costs` of that tree: image decoding, detector, attribute
  network, constraint-aware decoding, reasoner; CPU ms per question),
- end to end: :func:`clevr_poc.evaluation.evaluate` of a fresh pipeline over the examples (perceive,
  decode, reason, the presupposition search where the MAP answer is empty; grounding once per
  environment included; ``searched``: the questions whose MAP answer was empty), CPU ms per
  question (``time.process_time``) and wall,

and writes its predictions. The rounds alternate the trees so that both see the same load; the report
gives each tree's median over rounds, the ratio, whether the predictions are identical, and the load
average.

Usage::

    python benchmarks/answers_from_pixels_ab.py --dataset DIR --baseline-tree /work/main [--split test]
        [--limit 100] [--rounds 2] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent

_WORKER = r"""
import json, os, sys, time
sys.path.insert(0, os.path.join(os.getcwd(), "benchmarks"))
import torch
from answers_from_pixels import build_pipeline, stage_costs
from clevr_poc.commands.shared import split_examples
from clevr_poc.evaluation import evaluate
from clevr_poc.model_folders import check_checkpoints
import clevr_poc
from clevr_poc.perception import Perception
searched = []
_distribution = Perception.scene_distribution
def _counted(self, *args, **kwargs):
    searched.append(1)
    return _distribution(self, *args, **kwargs)
Perception.scene_distribution = _counted
dataset, split, limit, out = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
examples = split_examples(dataset, split, limit)
path = str(check_checkpoints(scene_source="perception")["perception"])
stages = stage_costs(build_pipeline(path), examples)["ms_per_question"]
pipeline = build_pipeline(path)
cpu, wall = time.process_time(), time.perf_counter()
report = evaluate(pipeline, examples, progress=False, batch_size=64)
cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
json.dump({"code": clevr_poc.__file__, "stages": stages, "cpu_ms": cpu / len(examples) * 1000,
           "wall_s": wall, "exact": report.exact_accuracy, "searched": len(searched),
           "predicted": [sorted(r.predicted) if r.predicted is not None else None for r in report.results]},
          open(out, "w"))
"""


def _run(tree: Path, args, out: Path) -> dict:
    env = dict(os.environ, PYTHONPATH=str(tree), HF_HUB_OFFLINE="1")
    subprocess.run([sys.executable, "-c", _WORKER, args.dataset, args.split, str(args.limit), str(out)],
                   cwd=tree, env=env, check=True)
    return json.loads(out.read_text())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", required=True)
    parser.add_argument("--baseline-tree", required=True, help="another checkout of the project (the baseline)")
    parser.add_argument("--split", default="test")
    parser.add_argument("--limit", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    trees = {"baseline": Path(args.baseline_tree).resolve(), "this code": HERE.parent}
    runs: dict[str, list[dict]] = {name: [] for name in trees}
    loads = [round(os.getloadavg()[0], 2)]
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.rounds):
            order = list(trees.items()) if r % 2 == 0 else list(reversed(trees.items()))
            for name, tree in order:
                runs[name].append(_run(tree, args, Path(tmp) / f"{name}-{r}.json"))
                loads.append(round(os.getloadavg()[0], 2))
    report: dict = {"questions": None, "load_average": loads, "trees": {k: str(v) for k, v in trees.items()}}
    for name, results in runs.items():
        stages = {k: round(statistics.median(x["stages"][k] for x in results), 2) for k in results[0]["stages"]}
        report[name] = {"end_to_end_cpu_ms": round(statistics.median(x["cpu_ms"] for x in results), 1),
                        "end_to_end_cpu_ms_runs": [round(x["cpu_ms"], 1) for x in results],
                        "wall_s_runs": [round(x["wall_s"], 1) for x in results],
                        "stages_ms": stages, "exact": results[0]["exact"], "code": results[0]["code"],
                        "searched": results[0]["searched"]}
        report["questions"] = len(results[0]["predicted"])
    predictions = [x["predicted"] for rs in runs.values() for x in rs]
    report["identical_predictions"] = all(p == predictions[0] for p in predictions)
    base, new = report["baseline"]["end_to_end_cpu_ms"], report["this code"]["end_to_end_cpu_ms"]
    report["ratio"] = round(base / new, 3)
    if args.json:
        print(json.dumps(report))
        return 0
    print(f"{report['questions']} questions, {args.rounds} rounds, load average {loads}")
    for name in trees:
        r = report[name]
        print(f"{name:10s} end to end {r['end_to_end_cpu_ms']:6.1f} CPU ms/question "
              f"(runs {r['end_to_end_cpu_ms_runs']}, wall s {r['wall_s_runs']}), exact {r['exact']:.4f}, "
              f"{r['searched']} searched, 2 idle cores: {2000 / r['end_to_end_cpu_ms']:.1f}/s")
        print(f"{'':10s} stages (CPU ms/question): {r['stages_ms']}")
    print(f"speed-up x{report['ratio']} per CPU second; identical predictions: {report['identical_predictions']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
