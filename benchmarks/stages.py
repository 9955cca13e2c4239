"""Throughput of every stage of CLEVR-POC, in one run: generate, perceive, decode, parse, reason (issue 27).

CPU seconds per item in this process (``time.process_time``: unaffected by other processes' load, unlike
wall time), and the rate two dedicated cores would give (2 / CPU-s per item: every stage is parallel over
items). Rendering needs Blender: its figure comes from ``benchmarks/render.py`` (docs/benchmarks.md).

- *generate*: labelled questions (:func:`~clevr_poc.generation.example_generation.generate_example`:
  scene graph, layout, visibility check, question, reasoner label), environment set-up excluded;
  baseline in the same run: the reference path (every layout ray-cast, no shared sampler state);
- *perceive* (image decoding, detector, attribute network), *decode* (constraint-aware decoding),
  *reason* (the reasoner on the perceived scene, grounding apart): ``answers_from_pixels.stage_costs`` on
  a rendered split;
- *parse*: the shipped BiLSTM parser (``models/parser_bilstm``) on the split's questions, batch 128;
  baseline: one question per call.

Usage::

    python benchmarks/stages.py --dataset DIR [--split test] [--limit 100] [--questions 100] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import torch  # noqa: E402

from answers_from_pixels import build_pipeline, stage_costs  # noqa: E402


def generation_cost(questions: int, seed: int) -> dict:
    from clevr_poc.generation.dataset_config import DatasetConfig
    from clevr_poc.generation.dataset_writer import prepare_dataset_environments
    from clevr_poc.generation.example_generation import ExampleTask, generate_example
    from clevr_poc.generation.example_plan import plan_examples

    config = DatasetConfig(10, max(1, questions // 10), seed)
    environments, states = prepare_dataset_environments(config)
    specs = plan_examples(config)
    out = {}
    for name, shared in (("optimised", True), ("baseline (reference path)", False)):
        tasks = [ExampleTask(s, environments[s.environment_id], config.seed, config.max_attempts,
                             config.fallback_attributes, config.visibility, states[s.environment_id] if shared else None,
                             exact_visibility=not shared) for s in specs]
        generate_example(tasks[0])  # warm: samplers and solvers of this process
        started = time.process_time()
        texts = [generate_example(task).question_json for task in tasks]
        out[name] = {"cpu_ms_per_item": round((time.process_time() - started) / len(tasks) * 1000, 2),
                     "texts": texts}
    identical = out["optimised"].pop("texts") == out["baseline (reference path)"].pop("texts")
    return {**out, "identical": identical}


def parse_cost(examples) -> dict:
    from clevr_poc.model_folders import check_checkpoints
    from clevr_poc.parsing.seq2seq import BiLSTMParser

    torch.set_num_threads(1)
    parser = BiLSTMParser.from_pretrained(check_checkpoints(scene_source="given")["parser_bilstm"])
    texts = [e.question.text for e in examples]
    parser.parse_batch(texts[:2])
    started = time.process_time()
    batched = parser.parse_batch(texts)
    batch_cpu = time.process_time() - started
    started = time.process_time()
    single = [parser.parse_batch([t])[0] for t in texts]
    single_cpu = time.process_time() - started
    return {"optimised": {"cpu_ms_per_item": round(batch_cpu / len(texts) * 1000, 2)},
            "baseline (one per call)": {"cpu_ms_per_item": round(single_cpu / len(texts) * 1000, 2)},
            "identical": batched == single}


def main(argv: list[str] | None = None) -> int:
    from clevr_poc.commands.shared import split_examples
    from clevr_poc.model_folders import check_checkpoints

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", required=True, help="a rendered dataset folder")
    parser.add_argument("--split", default="test")
    parser.add_argument("--limit", type=int, default=100)
    parser.add_argument("--questions", type=int, default=100, help="labelled questions to generate")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    load = [round(os.getloadavg()[0], 2)]
    examples = split_examples(args.dataset, args.split, args.limit)
    report = {"generate": generation_cost(args.questions, args.seed)}
    load.append(round(os.getloadavg()[0], 2))
    pixels = stage_costs(build_pipeline(str(check_checkpoints(scene_source="perception")["perception"])), examples)
    ms = pixels["ms_per_question"]
    report["perceive"] = {"cpu_ms_per_item": round(ms["decode_image"] + ms["detector"] + ms["attributes"], 2)}
    report["decode"] = {"cpu_ms_per_item": ms["decode_scene"]}
    report["reason"] = {"cpu_ms_per_item": ms["reason"], "grounding_ms_per_environment": round(
        ms["reason_grounding"] * len(examples) / pixels["environments"], 1)}
    report["parse"] = parse_cost(examples)
    load.append(round(os.getloadavg()[0], 2))
    report["load_average"] = load
    report["pixels_detail"] = pixels
    if args.json:
        print(json.dumps(report))
        return 0
    print(f"CPU ms per item in one process; 2 dedicated cores = 2000 / ms items/s; load average {load}")
    for stage in ("generate", "perceive", "decode", "parse", "reason"):
        entry = report[stage]
        rows = [(k, v) for k, v in entry.items() if isinstance(v, dict)] or [("", entry)]
        for name, row in rows:
            value = row["cpu_ms_per_item"]
            print(f"{stage:9s} {name:26s} {value:9.2f} ms -> {2000 / value:9.1f} /s on 2 cores")
        if "identical" in entry:
            print(f"{'':9s} identical outputs: {entry['identical']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
