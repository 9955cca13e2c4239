"""``python -m clevr_poc demo``: a small real CLEVR-POC benchmark, answered from pixels, end to end.

On a fresh clone with the shipped checkpoints (``models/``) and no network:

1. **generate** a small dataset (``--environments`` x ``--questions``, one test split; paper §3);
2. **render** the partial scenes with Blender (``--samples`` path-tracing samples; paper §3.3);
3. **answer** every question from the image: perception (detector + attribute network, constraint-aware
   decoding) -> partial scene, BiLSTM parser -> ASP query, clingo -> answer set
   (:class:`clevr_poc.pipeline.Pipeline`, paper §4.1.2);
4. **score** it (exact accuracy eq. 2, Jaccard index eq. 3, per query attribute; paper §4.2) next to
   two references that isolate the errors: the gold partial scene with the BiLSTM query (parser errors
   only), and the gold scene with the gold query (the labelling pipeline: must be 1.0);
5. print the Table-2 style result and one worked example with its explanation (which constraints
   eliminated which values), and write a report folder; the last line of stdout is the main model's
   ``{"exact_accuracy": ..., "jaccard": ..., "n": ...}`` as JSON.

Output folder (``--out``, default ``clevr-poc-demo``)::

    OUT/dataset/                 the generated, rendered dataset (resumable: a rerun reuses it)
    OUT/report/demo.md           settings, timings, tables, perception summary, the worked example
    OUT/report/table2.md, breakdowns.md, report_<model>.json, predictions_<model>.json, plots/*.png
                                 (clevr_poc.evaluation.write_outputs)
    OUT/report/demo.json         the numbers of demo.md

Needs Blender's ``bpy``, torch/torchvision and matplotlib: ``pip install '.[demo]'`` (= ``[generate,render,vision]``).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
import time
from pathlib import Path
from typing import Any, Mapping, Sequence

from clevr_poc.commands.shared import add_command
from clevr_poc.errors import ClevrPocError, FormatError
from clevr_poc.progress import progress_bar

#: Python modules the demo needs and the extra that installs each.
REQUIREMENTS: tuple[tuple[str, str], ...] = (
    ("bpy", "render"), ("torch", "vision"), ("torchvision", "vision"), ("PIL", "vision"),
    ("matplotlib", "generate"), ("tqdm", "generate"),
)
#: The model names (columns) of the result tables.
MAIN_MODEL = "NS-VQA (perception, BiLSTM)"
GOLD_SCENE_MODEL = "NS-VQA (gold scene, BiLSTM)"
GOLD_MODEL = "NS-VQA (gold scene, gold ASP)"
SPLIT = "test"
#: Examples explained at most while looking for the worked example.
MAX_EXPLAINED = 8

_EPILOG = """examples:
  python -m clevr_poc demo                                   # 8 environments x 10 questions, 2-5 min on 2 cores
  python -m clevr_poc demo --out demo --environments 5 --questions 6 --samples 16 --seed 1
"""


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register the ``demo`` sub-command (sets ``func=run``)."""
    parser = add_command(
        subparsers,
        "demo",
        help="generate, render and answer a small benchmark from pixels; print Table 2 and an explanation",
        description="End to end on a small real benchmark: generate environments, scenes and questions, render\n"
                    "the partial scenes (Blender), answer every question from the image (perception + BiLSTM\n"
                    "parser + clingo), print the Table-2 style scores and one explained answer, write a report.",
        epilog=_EPILOG,
    )
    parser.add_argument("--out", default="clevr-poc-demo", metavar="DIR",
                        help="output folder: dataset/ and report/ (default: %(default)s; a rerun resumes)")
    parser.add_argument("--environments", type=int, default=8, metavar="E", help="environments (default: 8)")
    parser.add_argument("--questions", type=int, default=10, metavar="Q",
                        help="questions (= scenes = images) per environment (default: 10)")
    parser.add_argument("--seed", type=int, default=0, help="random seed of generation and rendering (default: 0)")
    parser.add_argument("--samples", type=int, default=8, metavar="N",
                        help="render samples per pixel (default: 8; Cycles + denoiser)")
    parser.add_argument("--assets", default=None, metavar="DATA_DIR",
                        help="render with the official image generator's data/ folder (base_scene.blend, shapes/, "
                             "materials/; read, never copied) instead of the procedural official look")
    parser.add_argument("--models", default=None, metavar="DIR",
                        help="models folder with perception/ and parser_bilstm/ (default: the repository's models/)")
    parser.add_argument("--argmax-decoding", action="store_true",
                        help="decode perceived scenes by argmax instead of within the environment's constraints")
    parser.add_argument("--device", default="auto", metavar="D",
                        help="torch device of perception: auto (CUDA when present, else cpu), cpu, cuda or cuda:N "
                             "(default: auto)")
    parser.add_argument("--no-plots", action="store_true", help="skip the PNG plots of the report")
    parser.add_argument("--no-progress", action="store_true", help="no progress bars")
    parser.set_defaults(func=run)
    return parser


# ====================================================================== checks
def missing_requirements() -> list[str]:
    """Modules of :data:`REQUIREMENTS` that cannot be imported (checked without importing them)."""
    return [module for module, _ in REQUIREMENTS if importlib.util.find_spec(module) is None]


def check_requirements() -> None:
    """Raise a one-line :class:`ClevrPocError` naming the missing modules, the extras that install them,
    and the ``[demo]`` extra that installs them all."""
    missing = missing_requirements()
    if not missing:
        return
    extras = {extra: None for module, extra in REQUIREMENTS if module in missing}
    names = ",".join(e for e in ("generate", "render", "vision") if e in extras)
    raise ClevrPocError(f"the demo needs {', '.join(missing)} (not installed; extras {names}): "
                        "pip install '.[demo]'")


def _positive(value: int, option: str) -> int:
    if value < 1:
        raise FormatError("must be a positive integer", field=option, value=value)
    return value


# ====================================================================== scoring helpers
def _object_key(obj: Any) -> tuple:
    return (obj.color, obj.shape, obj.size, obj.material, obj.region)


def perception_summary(perceived: Sequence[Any], gold: Sequence[Any]) -> dict[str, Any]:
    """How well perception matched the gold partial scenes.

    Returns ``{"scenes", "right_count", "exact_scenes", "objects", "objects_found"}``: scenes with the
    right number of objects, scenes whose objects (color, shape, size, material, region) equal the gold
    ones as a multiset, gold objects, and gold objects with an identical perceived object (multiset
    intersection).
    """
    from collections import Counter

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
    return {"scenes": len(gold), "right_count": right_count, "exact_scenes": exact, "objects": total,
            "objects_found": found}


def attribute_table(reports: Mapping[str, Any]) -> str:
    """Table-2 layout with rows = query attribute (``all`` first), columns = models."""
    from clevr_poc.evaluation import table2_markdown

    rows: dict[str, dict[str, Any]] = {}
    for model, report in reports.items():
        rows.setdefault(f"all ({report.n})", {})[model] = report
        for attribute, score in report.breakdown("attribute").items():
            rows.setdefault(f"{attribute} ({score.n})", {})[model] = score.to_json()
    return table2_markdown(rows, row_header="Query attribute (questions)")


def _scene_lines(scene: Any) -> list[str]:
    return [f"  {i}: {o.size} {o.color} {o.material} {o.shape} in region {o.region}"
            for i, o in enumerate(scene.objects)] or ["  (no objects)"]


# ====================================================================== the run
def check_settings(args: argparse.Namespace) -> None:
    """Every setting of the demo, checked before any work and before the plan is printed: positive counts,
    the generation caps (``--environments`` and ``--environments x --questions``) and the ``samples`` cap of
    :mod:`clevr_poc.limits`, and ``--device`` (when torch is installed; without it
    :func:`check_requirements` names the missing extra).

    Raises:
        FormatError, DatasetConfigError, DeviceError: naming the option and the value.
    """
    from clevr_poc import limits
    from clevr_poc.generation.dataset_config import check_generation_caps

    for option in ("environments", "questions", "samples"):
        _positive(getattr(args, option), f"--{option}")
    check_generation_caps(args.environments, args.questions, flags=("--environments", "--questions"))
    if args.samples > limits.cap("samples"):
        raise FormatError(f"{args.samples:,} is over {limits.describe('samples')}", field="--samples")
    if importlib.util.find_spec("torch") is not None:
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # before torch starts its OpenMP pool
        from clevr_poc.perception.devices import resolve_device

        resolve_device(getattr(args, "device", "auto"))


def run(args: argparse.Namespace) -> int:
    check_settings(args)
    check_requirements()
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # before torch starts its OpenMP pool
    from clevr_poc.commands.shared import check_output_folder
    from clevr_poc.pipeline import Pipeline, check_checkpoints, default_models_dir

    out = Path(args.out)
    dataset_dir, report_dir = out / "dataset", out / "report"
    models = Path(args.models) if args.models else default_models_dir()
    progress = not args.no_progress
    timings: dict[str, float] = {}
    started = time.perf_counter()

    # check the checkpoints and the asset folder before spending minutes on data (loading comes after
    # rendering: bpy first)
    check_checkpoints(models)
    if args.assets is not None:
        from clevr_poc.rendering.assets import find_assets

        find_assets(args.assets)
    look = (f"the official asset files in {args.assets}" if args.assets is not None
            else "the procedural official look (the release's: 320x320, official camera, lights, backdrop, shaders)")
    check_output_folder(out, "--out")

    total = args.environments * args.questions
    _say(f"[1/4] generating {args.environments} environments x {args.questions} questions into {dataset_dir}")
    clock = time.perf_counter()
    from clevr_poc.generation.dataset_writer import generate_dataset

    generate_dataset(dataset_dir, environments=args.environments, scenes_per_environment=args.questions,
                     seed=args.seed, splits={SPLIT: 1.0}, progress=progress)
    timings["generate"] = time.perf_counter() - clock

    _say(f"[2/4] rendering {total} partial scenes with Blender ({args.samples} samples per pixel; {look})")
    clock = time.perf_counter()
    from clevr_poc.rendering.batch_render import render_dataset

    summary = render_dataset(dataset_dir, samples=args.samples, seed=args.seed, progress=progress, assets=args.assets)
    timings["render"] = time.perf_counter() - clock
    if summary.invisible:
        _say(f"      note: {len(summary.invisible)} image(s) have an object under the pixel minimum")

    _say(f"[3/4] answering from pixels: perception + BiLSTM parser + clingo (models: {models})")
    clock = time.perf_counter()
    pipeline = Pipeline.from_pretrained(models, constraint_decoding=not args.argmax_decoding, name=MAIN_MODEL,
                                        device=getattr(args, "device", "auto"))
    timings["load models"] = time.perf_counter() - clock
    clock = time.perf_counter()
    from clevr_poc.dataset_reader import load_dataset

    examples = list(load_dataset(dataset_dir, SPLIT))
    results = answer_examples(pipeline, examples, progress=progress)
    timings["answer"] = time.perf_counter() - clock

    _say("[4/4] scoring and writing the report")
    clock = time.perf_counter()
    from clevr_poc.evaluation import PredictionTable, evaluate, write_outputs

    reports = {name: evaluate(PredictionTable(name, examples, table), examples, progress=False, split=SPLIT)
               for name, table in results["predictions"].items()}
    example = worked_example(pipeline, examples, results)
    perception = perception_summary(results["scenes"], [e.partial_scene for e in examples])
    written = write_outputs(reports, report_dir, plots=not args.no_plots, row_header="Dataset")
    timings["report"] = time.perf_counter() - clock
    timings["total"] = time.perf_counter() - started

    settings = {"environments": args.environments, "questions_per_environment": args.questions,
                "questions": len(examples), "seed": args.seed, "samples": args.samples,
                "decoding": "argmax" if args.argmax_decoding else "constraints", "models": str(models),
                "look": look}
    if example and example["json"]["image"]:
        example["image_link"] = Path(os.path.relpath(example["json"]["image"], report_dir)).as_posix()
    text = demo_markdown(settings, reports, perception, example, timings, sorted(written))
    from clevr_poc._io import atomic_write_json, atomic_write_text

    atomic_write_text(report_dir / "demo.md", text)
    atomic_write_json(report_dir / "demo.json", {
        "settings": settings, "timings_seconds": {k: round(v, 2) for k, v in timings.items()},
        "perception": perception, "models": {name: r.summary() for name, r in reports.items()},
        "worked_example": example["json"] if example else None}, indent=2)
    print()
    print(console_text(reports, perception, example, timings, report_dir))
    # the last line: the main model's scores, machine-readable (as `evaluate` prints)
    print(json.dumps(reports[MAIN_MODEL].summary()))
    return 0


def _say(text: str) -> None:
    print(text, flush=True)


def answer_examples(pipeline: Any, examples: Sequence[Any], *, progress: bool = True) -> dict[str, Any]:
    """Answer every example three ways (module doc): returns ``{"predictions": model -> key -> Prediction,
    "scenes": perceived scenes (None on failure), "queries": parsed queries}``."""
    from clevr_poc.evaluation import Prediction, example_key
    from clevr_poc.perception.cameras import camera_spec
    from clevr_poc.pipeline import Pipeline

    queries = pipeline.parse_batch([e.question for e in examples])
    gold_scene = Pipeline(None, pipeline.parser, reasoner=pipeline.reasoner)
    tables: dict[str, dict[str, Any]] = {MAIN_MODEL: {}, GOLD_SCENE_MODEL: {}, GOLD_MODEL: {}}
    scenes: list[Any] = []
    bar = progress_bar(len(examples), enabled=progress, description="answering", unit="q")
    try:
        for i, (example, query) in enumerate(zip(examples, queries)):
            key = example_key(example, i)
            try:
                camera = camera_spec(example.partial_scene, pipeline.camera_source, source=example.image_path)
                scene = pipeline.perceive(example.image_path, camera, example.environment)
            except ClevrPocError as exc:
                scene = None
                tables[MAIN_MODEL][key] = Prediction(None, f"perception failed: {exc}", query)
            scenes.append(scene)
            if scene is not None:
                tables[MAIN_MODEL][key] = _predict(pipeline, example, scene, query)
            tables[GOLD_SCENE_MODEL][key] = _predict(gold_scene, example, example.partial_scene, query)
            tables[GOLD_MODEL][key] = _predict(gold_scene, example, example.partial_scene,
                                               example.question.asp_query)
            if bar is not None:
                bar.update(1)
    finally:
        if bar is not None:
            bar.close()
    return {"predictions": tables, "scenes": scenes, "queries": queries}


def _predict(pipeline: Any, example: Any, scene: Any, query: str) -> Any:
    from clevr_poc.pipeline import reasoned_prediction

    return reasoned_prediction(pipeline.reasoner, example.environment, scene, query)


def worked_example(pipeline: Any, examples: Sequence[Any], results: Mapping[str, Any]) -> dict[str, Any] | None:
    """One example answered from pixels, explained: the first one answered exactly, from a perceived scene
    with as many objects as the gold one, whose explanation eliminates a value by environment constraints
    (else the first such correct one, else the first correct one, else the first one)."""
    from clevr_poc.evaluation import example_key

    table = results["predictions"][MAIN_MODEL]
    ranked = []
    for i, example in enumerate(examples):
        prediction = table[example_key(example, i)]
        correct = prediction.values is not None and prediction.values == example.question.answer
        scene = results["scenes"][i]
        if scene is not None:  # prefer correct answers from scenes with every visible object found
            complete = len(scene) == len(example.partial_scene)
            ranked.append((0 if correct and complete else 1 if correct else 2, i))
    chosen = None
    for rank, i in sorted(ranked)[:MAX_EXPLAINED]:
        scene, query = results["scenes"][i], results["queries"][i]
        answer = pipeline.answer(question=examples[i].question, environment=examples[i].environment, scene=scene,
                                 query=query, explain=True)
        if chosen is None:
            chosen = (i, scene, query, answer)
        if rank == 0 and answer.explanation and any(e.constraints for e in answer.explanation.eliminated):
            chosen = (i, scene, query, answer)
            break
    if chosen is None:
        return None
    i, scene, query, answer = chosen
    example = examples[i]
    gold = example.question.answer or frozenset()
    lines = [
        f"Image: {example.image_path}",
        f"Environment {example.environment.id} ({len(example.environment.constraints)} constraints, "
        f"{example.environment.num_objects} objects per scene)",
        f"Question: {example.question.text}",
        f"Parsed ASP query: {query}",
        f"Gold ASP query:   {example.question.asp_query}",
        "Perceived partial scene:", *_scene_lines(scene),
        "Gold partial scene:", *_scene_lines(example.partial_scene),
        f"Answer: {{{', '.join(answer.sorted_values())}}}    gold: {{{', '.join(sorted(gold))}}}    "
        f"{'correct' if answer.values == gold else 'wrong'}",
        "Explanation:",
        *("  " + line for line in (answer.explanation.describe().splitlines() if answer.explanation else [])),
    ]
    return {"text": "\n".join(lines), "json": {
        "image": str(example.image_path), "question": example.question.text, "query": query,
        "gold_query": example.question.asp_query, "answer": answer.sorted_values(), "gold": sorted(gold),
        "explanation": answer.explanation.to_json() if answer.explanation else None}}


def _perception_lines(perception: Mapping[str, Any]) -> list[str]:
    return [f"- scenes with the right number of objects: {perception['right_count']} of {perception['scenes']}",
            f"- scenes perceived exactly (every object's color, shape, size, material and region): "
            f"{perception['exact_scenes']} of {perception['scenes']}",
            f"- gold objects perceived exactly: {perception['objects_found']} of {perception['objects']}"]


def console_text(reports: Mapping[str, Any], perception: Mapping[str, Any], example: Mapping[str, Any] | None,
                 timings: Mapping[str, float], report_dir: Path) -> str:
    """What the command prints at the end."""
    lines = [f"Table 2 layout, {next(iter(reports.values())).n} questions of a freshly generated and rendered "
             f"benchmark ({MAIN_MODEL} answers from pixels)", "", attribute_table(reports),
             "Perception (against the gold partial scenes):", *_perception_lines(perception), ""]
    if example:
        lines += ["Worked example (answered from pixels):", example["text"], ""]
    lines.append("Time: " + ", ".join(f"{k} {v:.1f} s" for k, v in timings.items()))
    lines.append(f"Report: {report_dir / 'demo.md'} (tables, plots, per-question results)")
    return "\n".join(lines)


def demo_markdown(settings: Mapping[str, Any], reports: Mapping[str, Any], perception: Mapping[str, Any],
                  example: Mapping[str, Any] | None, timings: Mapping[str, float], files: Sequence[str]) -> str:
    """The report's ``demo.md``."""
    lines = [
        "# clevr_poc demo: a small benchmark answered from pixels", "",
        f"Generated {settings['environments']} environments x {settings['questions_per_environment']} questions "
        f"(seed {settings['seed']}), rendered with Blender ({settings['samples']} samples per pixel; "
        f"{settings.get('look', 'the procedural official look')}), answered by "
        f"perception ({'constraint-aware' if settings['decoding'] == 'constraints' else 'argmax'} decoding) + the BiLSTM question parser + clingo. Two references "
        f"isolate the errors: `{GOLD_SCENE_MODEL}` (the parser's errors only) and `{GOLD_MODEL}` (the labelling "
        "pipeline; 1.0 by construction).", "",
        "Exact accuracy (paper eq. 2) and Jaccard index (eq. 3), per query attribute:", "",
        attribute_table(reports),
        "## Perception", "", *_perception_lines(perception), "",
    ]
    if example:
        lines += ["## Worked example", ""]
        if example.get("image_link"):
            lines += [f"![the partial scene]({example['image_link']})", ""]
        lines += ["```text", example["text"], "```", ""]
    lines += ["## Time (seconds, wall clock)", "", "| phase | seconds |", "|---|---:|",
              *(f"| {k} | {v:.1f} |" for k, v in timings.items()), "",
              "## Files", "", *(f"- [{name}]({name})" for name in files), ""]
    plots = [name for name in files if name.endswith(".png") and ("by_attribute" in name or "compare_" in name)]
    if plots:
        lines += ["## Plots", "", *(f"![{name}]({name})" for name in plots), ""]
    return "\n".join(lines)
