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

    OUT/dataset/                 the generated, rendered dataset (resumable: a rerun with the same settings
                                 reuses it; one with other settings is refused, naming them)
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
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from clevr_poc.commands.shared import Subparsers, add_command
from clevr_poc.errors import ClevrPocError, FormatError

if TYPE_CHECKING:
    from clevr_poc.dataset_reader import Example
    from clevr_poc.evaluation import EvaluationReport
    from clevr_poc.experiment import ExperimentResult, PerceptionSummary, WorkedExample
    from clevr_poc.pipeline import Pipeline
    from clevr_poc.render_settings import RenderSettings
    from clevr_poc.rendering.render_manifest import RenderSettingsError
    from clevr_poc.scene import Scene

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

_EPILOG = """examples:
  python -m clevr_poc demo                                   # 8 environments x 10 questions, 2-5 min on 2 cores
  python -m clevr_poc demo --out demo --environments 5 --questions 6 --samples 16 --seed 1
"""


def add_parser(subparsers: Subparsers) -> argparse.ArgumentParser:
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
                        help="output folder: dataset/ and report/ (default: %(default)s; a rerun with the same "
                             "settings resumes, one with other render settings is refused)")
    parser.add_argument("--environments", default=8, metavar="E", help="environments (default: 8)")
    parser.add_argument("--questions", default=10, metavar="Q",
                        help="questions (= scenes = images) per environment (default: 10)")
    parser.add_argument("--seed", default=0, help="random seed of generation and rendering (default: 0)")
    parser.add_argument("--samples", default=8, metavar="N",
                        help="render samples per pixel (default: 8; Cycles + denoiser)")
    parser.add_argument("--assets", default=None, metavar="DATA_DIR",
                        help="render with the official asset files instead of the procedural official look: "
                             "the data/ folder of the official CLEVR-POC repository (clevr-poc-dataset-gen/data/: "
                             "base_scene.blend, shapes/, materials/), from your own clone; read, never copied")
    parser.add_argument("--models", default=None, metavar="DIR",
                        help="models folder with perception/ and parser_bilstm/ (default: the shipped models, "
                             "$CLEVR_POC_MODELS when set)")
    parser.add_argument("--argmax-decoding", action="store_true",
                        help="decode perceived scenes by argmax instead of within the environment's constraints")
    parser.add_argument("--device", default="auto", metavar="D",
                        help="torch device of perception: auto (CUDA when present, else cpu), cpu, cuda or cuda:N "
                             "(default: auto)")
    parser.add_argument("--no-plots", action="store_true", help="skip the PNG plots of the report")
    parser.add_argument("--no-progress", action="store_true", help="no progress bars")
    parser.set_defaults(func=run, interrupted_line=interrupted_line)
    return parser


def interrupted_line(args: argparse.Namespace) -> str:
    """The Ctrl-C line: a rerun in the same ``--out`` reuses the generated and rendered dataset."""
    return (f"interrupted: run the same command again to resume (the dataset generated and rendered so far in "
            f"{Path(args.out) / 'dataset'} is reused; the answering starts over)")


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


# ====================================================================== scoring helpers
def attribute_table(reports: Mapping[str, EvaluationReport]) -> str:
    """Table-2 layout with rows = query attribute (``all`` first), columns = models."""
    from clevr_poc.evaluation import table2_markdown

    rows: dict[str, dict[str, Any]] = {}
    for model, report in reports.items():
        rows.setdefault(f"all ({report.n})", {})[model] = report
        for attribute, score in report.breakdown("attribute").items():
            rows.setdefault(f"{attribute} ({score.n})", {})[model] = score.to_json()
    return table2_markdown(rows, row_header="Query attribute (questions)")


def _scene_lines(scene: Scene) -> list[str]:
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

    from clevr_poc.commands.shared import integer_setting

    for option in ("environments", "questions", "samples"):  # the words of generate for the same values
        setattr(args, option, integer_setting(getattr(args, option), f"--{option}", 1))
    args.seed = integer_setting(args.seed, "--seed")
    check_generation_caps(args.environments, args.questions, flags=("--environments", "--questions"))
    if args.samples > limits.cap("samples"):
        raise FormatError(f"{args.samples:,} is over {limits.describe('samples')}", field="--samples")
    if importlib.util.find_spec("torch") is not None:
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # before torch starts its OpenMP pool
        from clevr_poc.perception.devices import resolve_device

        resolve_device(getattr(args, "device", "auto"))


#: What a demo folder holds (a rerun resumes in it); anything else in ``--out`` belongs to someone else.
DEMO_ENTRIES = frozenset({"dataset", "report"})


def _check_demo_folder(out: Path) -> None:
    """Refuse an ``--out`` that already holds something other than a demo's ``dataset/`` and ``report/``
    (a generated dataset, the clone's root): the demo would write its folders inside it.

    Raises:
        FormatError: naming the folder and one of its entries.
    """
    if not out.is_dir():
        return
    others = sorted(p.name for p in out.iterdir() if p.name not in DEMO_ENTRIES and not p.name.startswith("."))
    if others:
        raise FormatError(f"holds {others[0]!r} and is not a demo folder (the demo writes dataset/ and report/ "
                          "there, and resumes in a folder of its own): use a new --out", source=out)


def run(args: argparse.Namespace) -> int:
    check_settings(args)
    check_requirements()
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # before torch starts its OpenMP pool
    from clevr_poc.commands.shared import check_output_folder
    from clevr_poc.pipeline import Pipeline, check_checkpoints, default_models_dir

    out = Path(args.out)
    dataset_dir, report_dir = out / "dataset", out / "report"
    models = Path(args.models) if args.models else default_models_dir()
    options = {"perception": "--models DIR", "parser_bilstm": "--models DIR"}
    progress = not args.no_progress
    timings: dict[str, float] = {}
    started = time.perf_counter()

    # check the checkpoints and the asset folder before spending minutes on data (loading comes after
    # rendering: bpy first)
    check_checkpoints(args.models, options=options)
    if args.assets is not None:
        from clevr_poc.rendering.assets import find_assets

        find_assets(args.assets)
    look = (f"the official asset files in {args.assets}" if args.assets is not None
            else "the procedural official look (the release's: 320x320, official camera, lights, backdrop, shaders)")
    check_output_folder(out, "--out")
    _check_demo_folder(out)
    from clevr_poc.render_settings import RenderSettings

    render_settings = RenderSettings(samples=args.samples, assets=args.assets)
    _check_rendered_with(dataset_dir, render_settings, args.seed)  # a rerun with other settings: before any work

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

    from clevr_poc.rendering.render_manifest import RenderSettingsError, read_render_manifest

    try:
        summary = render_dataset(dataset_dir, settings=render_settings, seed=args.seed, progress=progress)
    except RenderSettingsError as exc:
        raise _demo_settings_error(exc) from None
    timings["render"] = time.perf_counter() - clock
    for warning in summary.warnings():
        _say(f"      {warning}")
    if summary.skipped:
        _say(f"      {summary.skipped} of {summary.images} images reused from an earlier run in {dataset_dir}")
    if summary.invisible:
        _say(f"      note: {len(summary.invisible)} image(s) have an object under the pixel minimum")
    used = read_render_manifest(dataset_dir)  # what the images were rendered with (None: not recorded)

    _say(f"[3/4] answering from pixels: perception + BiLSTM parser + clingo (models: {models})")
    clock = time.perf_counter()
    pipeline = Pipeline.from_pretrained(models, constraint_decoding=not args.argmax_decoding, name=MAIN_MODEL,
                                        device=getattr(args, "device", "auto"))
    timings["load models"] = time.perf_counter() - clock
    clock = time.perf_counter()
    from clevr_poc.dataset_reader import load_dataset

    examples = list(load_dataset(dataset_dir, SPLIT))
    result = answer_examples(pipeline, examples, progress=progress)
    timings["answer"] = time.perf_counter() - clock

    _say("[4/4] scoring and writing the report")
    clock = time.perf_counter()
    from clevr_poc.evaluation import write_outputs
    from clevr_poc.experiment import perception_summary, worked_example

    reports = result.reports()
    example = worked_example(pipeline, result, MAIN_MODEL)
    perception = perception_summary(result.scenes, [e.partial_scene for e in examples])
    written = write_outputs(reports, report_dir, plots=not args.no_plots, row_header="Dataset")
    timings["report"] = time.perf_counter() - clock
    timings["total"] = time.perf_counter() - started

    settings = {"environments": args.environments, "questions_per_environment": args.questions,
                "questions": len(examples), "seed": args.seed,
                "samples": used.samples if used is not None else None,
                "decoding": "argmax" if args.argmax_decoding else "constraints", "models": str(models),
                "look": UNRECORDED_LOOK if used is None else look if used.assets is None
                else f"the official asset files in {used.assets}",
                "images_rendered_now": summary.rendered, "images_reused": summary.skipped,
                "render": used.to_json() if used is not None else None}
    image_link = None
    if example and example.example.image_path:
        image_link = Path(os.path.relpath(str(example.example.image_path), report_dir)).as_posix()
    text = demo_markdown(settings, reports, perception, example, timings, sorted(written), image_link)
    from clevr_poc._io import atomic_write_json, atomic_write_text

    atomic_write_text(report_dir / "demo.md", text)
    atomic_write_json(report_dir / "demo.json", {
        "settings": settings, "timings_seconds": {k: round(v, 2) for k, v in timings.items()},
        "perception": perception.to_json(), "models": {name: r.summary() for name, r in reports.items()},
        "worked_example": worked_example_json(example) if example else None}, indent=2)
    print()
    print(console_text(reports, perception, example, timings, report_dir, reused=summary.skipped))
    # the last line: the main model's scores, machine-readable (as `evaluate` prints)
    print(json.dumps(reports[MAIN_MODEL].summary()))
    return 0


#: The look of ``demo.md`` for images whose folder has no render manifest (rendered by an older clevr_poc).
UNRECORDED_LOOK = "settings not recorded: the images were rendered by an earlier clevr_poc"


def _demo_settings_error(exc: RenderSettingsError) -> RenderSettingsError:
    """A :class:`~clevr_poc.rendering.render_manifest.RenderSettingsError` in the demo's words (no --overwrite)."""
    from clevr_poc.rendering.render_manifest import RenderSettingsError

    return RenderSettingsError(exc.folder, exc.differences, advice=(
        "a rerun reuses the images of its --out: ask for the settings it was rendered with, or use another --out"))


def _check_rendered_with(dataset_dir: Path, settings: RenderSettings, seed: int) -> None:
    """Refuse, before any work, a demo folder whose images were rendered with other settings.

    Raises:
        RenderSettingsError: in the demo's words (:func:`_demo_settings_error`).
    """
    from clevr_poc.rendering.render_manifest import RenderManifest, RenderSettingsError, check_render_folders

    if not dataset_dir.is_dir():
        return
    try:
        check_render_folders(dataset_dir, ("incomplete",), RenderManifest.of(settings, seed))
    except RenderSettingsError as exc:
        raise _demo_settings_error(exc) from None


def _say(text: str) -> None:
    print(text, flush=True)


def answer_examples(pipeline: Pipeline, examples: Sequence[Example], *, progress: bool = True
                    ) -> ExperimentResult:
    """Answer every example three ways (module doc), perceiving and parsing each once
    (:class:`~clevr_poc.experiment.SharedSteps`): the :class:`~clevr_poc.experiment.ExperimentResult` of
    :data:`MAIN_MODEL`, :data:`GOLD_SCENE_MODEL` and :data:`GOLD_MODEL`, with the perceived scenes and the
    parsed queries."""
    from clevr_poc.experiment import SharedSteps, run_experiment

    shared = SharedSteps(pipeline)
    models = [shared.pipeline(MAIN_MODEL), shared.pipeline(GOLD_SCENE_MODEL, perceived=False),
              shared.pipeline(GOLD_MODEL, perceived=False, parsed=False)]
    return run_experiment(models, examples, shared=shared, split=SPLIT, progress=progress)


def worked_example_text(worked: WorkedExample) -> str:
    """The worked example as printed and written into ``demo.md``."""
    example, answer = worked.example, worked.answer
    gold = example.question.answer or frozenset()
    lines = [
        f"Image: {example.image_path}",
        f"Environment {example.environment.id} ({len(example.environment.constraints)} constraints, "
        f"{example.environment.num_objects} objects per scene)",
        f"Question: {example.question.text}",
        f"Parsed ASP query: {worked.query}",
        f"Gold ASP query:   {example.question.asp_query}",
        "Perceived partial scene:", *_scene_lines(worked.scene),
        "Gold partial scene:", *_scene_lines(example.partial_scene),
        f"Answer: {{{', '.join(answer.sorted_values())}}}    gold: {{{', '.join(sorted(gold))}}}    "
        f"{'correct' if answer.values == gold else 'wrong'}",
        "Explanation:",
        *("  " + line for line in (answer.explanation.describe().splitlines() if answer.explanation else [])),
    ]
    return "\n".join(lines)


def worked_example_json(worked: WorkedExample) -> dict[str, object]:
    """The worked example in ``demo.json``."""
    example, answer = worked.example, worked.answer
    return {"image": str(example.image_path), "question": example.question.text, "query": worked.query,
            "gold_query": example.question.asp_query, "answer": answer.sorted_values(),
            "gold": sorted(example.question.answer or frozenset()),
            "explanation": answer.explanation.to_json() if answer.explanation else None}


def _perception_lines(perception: PerceptionSummary) -> list[str]:
    return [f"- scenes with the right number of objects: {perception.right_count} of {perception.scenes}",
            f"- scenes perceived exactly (every object's color, shape, size, material and region): "
            f"{perception.exact_scenes} of {perception.scenes}",
            f"- gold objects perceived exactly: {perception.objects_found} of {perception.objects}"]


def console_text(reports: Mapping[str, EvaluationReport], perception: PerceptionSummary,
                 example: WorkedExample | None, timings: Mapping[str, float], report_dir: Path, *,
                 reused: int = 0) -> str:
    """What the command prints at the end (``reused``: images of an earlier run, not rendered now)."""
    how = "freshly generated and rendered" if not reused else f"generated and rendered ({reused} images reused)"
    lines = [f"Table 2 layout, {next(iter(reports.values())).n} questions of a {how} "
             f"benchmark ({MAIN_MODEL} answers from pixels)", "", attribute_table(reports),
             "Perception (against the gold partial scenes):", *_perception_lines(perception), ""]
    if example:
        lines += ["Worked example (answered from pixels):", worked_example_text(example), ""]
    lines.append("Time: " + ", ".join(f"{k} {v:.1f} s" for k, v in timings.items()))
    lines.append(f"Report: {report_dir / 'demo.md'} (tables, plots, per-question results)")
    return "\n".join(lines)


def _samples_text(settings: Mapping[str, object]) -> str:
    return f"{settings['samples']} samples per pixel; " if settings.get("samples") is not None else ""


def _reused_text(settings: Mapping[str, object]) -> str:
    reused = settings.get("images_reused") or 0
    return f" ({reused} images reused from an earlier run of the demo)" if reused else ""


def demo_markdown(settings: Mapping[str, object], reports: Mapping[str, EvaluationReport],
                  perception: PerceptionSummary, example: WorkedExample | None, timings: Mapping[str, float],
                  files: Sequence[str], image_link: str | None = None) -> str:
    """The report's ``demo.md`` (``image_link``: the worked example's image, relative to the report)."""
    lines = [
        "# clevr_poc demo: a small benchmark answered from pixels", "",
        f"Generated {settings['environments']} environments x {settings['questions_per_environment']} questions "
        f"(seed {settings['seed']}), rendered with Blender ({_samples_text(settings)}"
        f"{settings.get('look', 'the procedural official look')}){_reused_text(settings)}, answered by "
        f"perception ({'constraint-aware' if settings['decoding'] == 'constraints' else 'argmax'} decoding) + the BiLSTM question parser + clingo. Two references "
        f"isolate the errors: `{GOLD_SCENE_MODEL}` (the parser's errors only) and `{GOLD_MODEL}` (the labelling "
        "pipeline; 1.0 by construction).", "",
        "Exact accuracy (paper eq. 2) and Jaccard index (eq. 3), per query attribute:", "",
        attribute_table(reports),
        "## Perception", "", *_perception_lines(perception), "",
    ]
    if example:
        lines += ["## Worked example", ""]
        if image_link:
            lines += [f"![the partial scene]({image_link})", ""]
        lines += ["```text", worked_example_text(example), "```", ""]
    lines += ["## Time (seconds, wall clock)", "", "| phase | seconds |", "|---|---:|",
              *(f"| {k} | {v:.1f} |" for k, v in timings.items()), "",
              "## Files", "", *(f"- [{name}]({name})" for name in files), ""]
    plots = [name for name in files if name.endswith(".png") and ("by_attribute" in name or "compare_" in name)]
    if plots:
        lines += ["## Plots", "", *(f"![{name}]({name})" for name in plots), ""]
    return "\n".join(lines)
