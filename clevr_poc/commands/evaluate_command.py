"""``python -m clevr_poc evaluate``: score a model or a predictions file on a dataset split (paper §4.2).

Two modes::

    # scoring only: FILE.json maps each question's image_filename to a list of values (null = parse failure)
    python -m clevr_poc evaluate --dataset DIR --split test --predictions FILE.json [--out RESULTS]
    # run a model: NS-VQA with the gold partial scene and the gold ASP query (a self-check: must be 1.0)
    python -m clevr_poc evaluate --dataset DIR --split test --model ns-vqa-gold [--out RESULTS]
    # NS-VQA with a chosen scene source (gold | perception) and query source (gold | bilstm | llm)
    python -m clevr_poc evaluate --dataset DIR --split test --model ns-vqa --scene gold --query bilstm
    python -m clevr_poc evaluate --dataset DIR --split test --model ns-vqa --query llm --backend local --limit 100
    # the stand-alone LLM baseline through a chat backend (clevr_poc.llm.make_backend spec), resumable
    python -m clevr_poc evaluate --dataset DIR --split test --model llm-standalone \\
        --backend openai:MODEL@http://127.0.0.1:8000/v1 --checkpoint llm.jsonl [--limit 200]
    # a vision-language model on the rendered images (our baseline): --prompt direct | list-then-reason
    python -m clevr_poc evaluate --dataset DIR --split test --model vlm --prompt list-then-reason \\
        --backend openai:MODEL@http://127.0.0.1:8000/v1 --workers 4 --checkpoint vlm.jsonl
    # a trained CLIP baseline (python -m clevr_poc.baselines.clip train): --checkpoint is its folder
    python -m clevr_poc evaluate --dataset DIR --split test --model clip-nl --checkpoint runs/clip-nl

With ``--scene perception`` or ``--query bilstm`` the first line on stdout names the model folders loaded
(``models: perception DIR, parser_bilstm DIR``: the default is the repository's ``models/``, or ``./models``
of the working directory for an installed package). The last line on stdout is one JSON object
``{"exact_accuracy": float, "jaccard": float, "n": int}``; the
line before it counts parse failures; with ``--model`` the lines before those give the run time (:func:`run_time_line`:
``time: 1.58 s (19.8 ms per question)``) and, for ``--model ns-vqa`` with a parser, the program accuracy two ways: literal (the parsed query
equals the gold ``asp_query`` up to variable names and literal order,
:func:`clevr_poc.parsing.equivalence.programs_equal`; the paper's measure) and semantic (the same answer set
on the example's gold partial scene).
Both are also stored under ``extra`` in ``report.json``. ``--out DIR`` also writes ``report.json`` (per-example results and
breakdowns), ``predictions.json`` (the scoring-only format), ``table2.md`` (the paper's Table 2 layout),
``breakdowns.md`` and ``plots/*.png``.

Predictions file errors are one-line typed errors (exit 1): a question of the split without a
prediction, a key that is no question's ``image_filename``, a value that is neither a list of the 17
labels nor null, or a file that is not a JSON object.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from contextlib import nullcontext
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

from clevr_poc import limits
from clevr_poc.commands.shared import (
    Subparsers, add_command, check_output_file, check_output_folder, int_between, positive_int,
    remove_stale_output_temps, split_examples, with_checked_outputs, worker_count,
)
from clevr_poc._io import read_json
from clevr_poc.errors import FormatError
from clevr_poc.answer_presupposition import MAX_PRESUPPOSITION_K
from clevr_poc.executors import EXECUTORS

if TYPE_CHECKING:
    from clevr_poc.baselines.vlm import VLMBaseline
    from clevr_poc.dataset_reader import Example
    from clevr_poc.evaluation import EvaluationReport, Model
    from clevr_poc.experiment import ModelRun
    from clevr_poc.parsing import QueryParser
    from clevr_poc.perception import Perception
    from clevr_poc.pipeline import Pipeline

#: Models ``--model`` can run without training: NS-VQA with gold scene and gold ASP (§4.1.2; a self-check,
#: must score 1.0) and the stand-alone LLM (§4.1.3, App. C.1; needs ``--backend``).
MODELS: tuple[str, ...] = ("ns-vqa-gold", "ns-vqa", "llm-standalone", "vlm")
#: ``--model ns-vqa`` sources (§4.1.2): the scene graph (gold partial scene, or perceived from the rendered
#: image) and the ASP query (gold, the BiLSTM seq2seq parser, or the few-shot LLM parser of App. C.2).
SCENE_SOURCES: tuple[str, ...] = ("gold", "perception")
QUERY_SOURCES: tuple[str, ...] = ("gold", "bilstm", "llm")
#: Trained CLIP baselines (§4.1.1; :mod:`clevr_poc.baselines.clip`): ``--checkpoint`` is the folder written
#: by ``python -m clevr_poc.baselines.clip train`` (model name -> variant).
CLIP_MODELS: dict[str, str] = {"clip-nl": "nl", "clip-asp": "asp", "clip-none": "none"}

_EPILOG = """examples:
  python -m clevr_poc evaluate --dataset data/ --split test --predictions preds.json
  python -m clevr_poc evaluate --dataset data/ --split test --model ns-vqa-gold --out results/
  python -m clevr_poc evaluate --dataset data/ --split test --model ns-vqa --query bilstm --out results/
  python -m clevr_poc evaluate --dataset data/ --split test --model ns-vqa --query llm --backend local \\
      --limit 100 --checkpoint llm-parser.jsonl
  python -m clevr_poc evaluate --dataset data/ --split test --model llm-standalone \\
      --backend openai:gpt-4o --checkpoint gpt4o.jsonl --limit 200 --workers 4
predictions file: {"CLEVR_test_000000.png": ["small", "medium"], "CLEVR_test_000001.png": null, ...}
"""


def add_parser(subparsers: Subparsers) -> argparse.ArgumentParser:
    """Register the ``evaluate`` sub-command (sets ``func=run_leaving_no_empty_out``)."""
    parser = add_command(
        subparsers,
        "evaluate",
        help="score predictions or a model on a dataset split (exact accuracy, Jaccard index)",
        description="Exact accuracy (paper eq. 2) and Jaccard index (eq. 3) of a predictions file or a "
                    "model on one split of a CLEVR-POC dataset, with breakdowns and parse-failure counts.",
        epilog=_EPILOG,
    )
    parser.add_argument("--dataset", required=True, metavar="DIR", help="dataset folder (official layout)")
    parser.add_argument("--split", required=True, metavar="S", help="split to evaluate (e.g. train, val, test)")
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--predictions", metavar="FILE.json",
                        help="JSON object: image_filename -> list of predicted values, or null (parse failure)")
    source.add_argument("--model", choices=MODELS + tuple(CLIP_MODELS),
                        help="run a model: ns-vqa-gold = gold partial scene + gold ASP query through the Reasoner; "
                             "ns-vqa = NS-VQA with --scene and --query sources (both default to gold: the gold partial scene and the gold ASP query, the same as ns-vqa-gold; "
                             "--scene perception --query bilstm answers from pixels); llm-standalone = the App. C.1 prompt through --backend; "
                             "vlm = image + constraints + question through a vision-language --backend; clip-nl/clip-asp/clip-none "
                             "= a trained CLIP baseline (--checkpoint DIR)")
    nsvqa = parser.add_argument_group("ns-vqa")
    nsvqa.add_argument("--scene", choices=SCENE_SOURCES, default="gold",
                       help="scene graph: the gold partial scene (default; paper Table 2) or perceived from the "
                            "rendered image (constraint-aware decoding, needs torch and rendered images)")
    nsvqa.add_argument("--query", choices=QUERY_SOURCES, default="gold",
                       help="ASP query: gold (default), bilstm (seq2seq parser, --parser-path) or llm (few-shot "
                            "LLM parser, App. C.2, through --backend; default backend local = bundled SmolLM2)")
    nsvqa.add_argument("--parser-path", metavar="DIR",
                       help="BiLSTM checkpoint folder (default: the shipped models/parser_bilstm)")
    nsvqa.add_argument("--perception-path", metavar="DIR",
                       help="perception checkpoint folder (default: the shipped models/perception)")
    nsvqa.add_argument("--camera", choices=("auto", "from-scene", "official", "ours"), default="auto",
                       help="with --scene perception: the camera of each image: auto (default) = the scene's own "
                            "when it has one, else the official CLEVR-POC camera (the release's scenes carry "
                            "none); from-scene; or a preset: official, ours")
    nsvqa.add_argument("--threads", type=int, default=1, metavar="N",
                       help="torch CPU threads for the BiLSTM parser / perception (default 1: on busy shared "
                            "cores more threads made BiLSTM decoding ~20x slower)")
    llm = parser.add_argument_group("llm-standalone, vlm (and ns-vqa --query llm)")
    llm.add_argument("--backend", metavar="SPEC",
                     help="chat backend: local, gguf:PATH, openai, openai:MODEL, openai:MODEL@URL or (vlm) "
                          "transformers:PATH_OR_HUB_ID")
    llm.add_argument("--max-tokens", type=positive_int, metavar="N",
                     help="reply length limit (default 256; the LLM parser's default 320)")
    vlm = parser.add_argument_group("vlm")
    vlm.add_argument("--prompt", choices=("direct", "list-then-reason"), default="direct",
                     help="VLM prompt: answer directly (default) or first list every visible object, then reason "
                          "(the listed scene is also scored)")
    parser.add_argument("--device", default="auto", metavar="D",
                        help="torch device of ns-vqa --scene perception and of vlm transformers:MODEL backends: "
                             "auto (CUDA when present), cpu, cuda, cuda:N")
    vlm.add_argument("--dtype", choices=("auto", "float32", "bfloat16", "float16"), default="auto",
                     help="transformers:MODEL backends: auto = bf16/fp16 on CUDA, float32 on the CPU")
    parser.add_argument("--allow-missing-images", action="store_true",
                        help="models that read images (ns-vqa --scene perception, vlm, clip-*): score a question "
                             "whose image is missing or unreadable as a failure, its cause printed and in the "
                             "report (default: stop with an error naming the file)")
    probabilistic = parser.add_argument_group("ns-vqa answers with probabilities")
    probabilistic.add_argument("--answer-rule", choices=("map", "most-probable-set", "expected-jaccard"),
                               help="answer over the k most probable consistent scenes and pick the set by this rule; "
                                    "reports ECE, Brier score and accuracy against coverage (report.json 'calibration', "
                                    "plots/reliability.png, plots/coverage.png)")
    probabilistic.add_argument("--top-k", type=positive_int, default=16, metavar="K",
                               help="with --answer-rule: scenes per question (default 16)")
    probabilistic.add_argument("--presupposition-k", type=int_between(0, MAX_PRESUPPOSITION_K), default=16,
                               metavar="K",
                               help="ns-vqa --scene perception without --answer-rule: when the MAP scene leaves the "
                                    "question without an answer, answer with the most probable of the K best "
                                    "consistent scenes that has one (default 16; 0 = off, the plain MAP answer)")
    probabilistic.add_argument("--abstain-below", type=float, metavar="P",
                               help="with --answer-rule: abstain (no answer, scored by --parse-failures) when the "
                                    "probability that the answer is exactly right is below P, in [0, 1]")
    workers = parser.add_argument_group("workers")
    workers.add_argument("--workers", type=worker_count, default=1, metavar="W",
                         help="parallel LLM/VLM requests (llm-standalone, vlm, ns-vqa --query llm); for every other "
                              "model, worker processes that each load the model once, examples of one environment "
                              "in one worker, the same answers (default 1)")
    workers.add_argument("--executor", choices=EXECUTORS, default="local",
                         help="where the worker processes run: local (default) or ray (pip install '.[scale]')")
    workers.add_argument("--ray-address", metavar="ADDR", help="with --executor ray: a Ray cluster (default: start "
                                                               "a local Ray instance)")
    parser.add_argument("--out", metavar="DIR", help="write report.json, predictions.json, table2.md, breakdowns.md and plots/")
    parser.add_argument("--name", metavar="NAME", help="model name in the report and tables")
    parser.add_argument("--parse-failures", choices=("wrong", "exclude"), default="wrong",
                        help="score parse failures as wrong (default) or leave them out of the averages")
    parser.add_argument("--limit", type=positive_int, metavar="N", help="only the first N questions of the split")
    parser.add_argument("--checkpoint", metavar="FILE.jsonl|DIR",
                        help="with --model: keep predictions in this file and resume an interrupted run; "
                             "with a clip-* model: the trained checkpoint folder (required)")
    parser.add_argument("--no-plots", action="store_true", help="with --out: skip the PNG plots")
    parser.add_argument("--progress", action="store_true", help="show a progress bar (stderr)")
    parser.set_defaults(func=run_leaving_no_empty_out, interrupted_line=interrupted_line)
    return parser


def interrupted_line(args: argparse.Namespace) -> str:
    """The Ctrl-C line: a model run with a predictions ``--checkpoint`` resumes from it; one without
    starts over (say so, and how to keep the answers next time)."""
    if args.model is None or args.model in CLIP_MODELS:   # scoring a file; a CLIP --checkpoint is its model
        return "interrupted"
    if args.checkpoint is None:
        return "interrupted (nothing was kept: with --checkpoint FILE.jsonl a rerun resumes)"
    return f"interrupted: run the same command again to resume (answers so far are kept in {args.checkpoint})"


def read_predictions(path: str | Path) -> dict[str, Any]:
    """Read a predictions file: a JSON object mapping ``image_filename`` to a list of values or null.

    Values are checked against the questions later (:func:`clevr_poc.evaluation.score_predictions`).

    Raises:
        FormatError: missing file, invalid JSON, or not a JSON object.
    """
    data = read_json(path, what="a predictions file")
    if not isinstance(data, Mapping):
        raise FormatError("must be a JSON object mapping image_filename to a list of values or null",
                          source=path, value=type(data).__name__)
    if len(data) > limits.cap("questions_per_file"):
        raise FormatError(f"{len(data):,} predictions is over {limits.describe('questions_per_file')}", source=path)
    return dict(data)


def _model(args: argparse.Namespace) -> "Model":
    if args.model in CLIP_MODELS:
        if not args.checkpoint:
            raise FormatError(f"--model {args.model} needs --checkpoint DIR (a folder written by "
                              "`python -m clevr_poc.baselines.clip train`)", field="--checkpoint")
        from clevr_poc.commands.clip_command import require_clip_extra

        require_clip_extra()
        from clevr_poc.baselines.clip.clip_training import CLIPBaseline

        return CLIPBaseline.from_checkpoint(args.checkpoint, variant=CLIP_MODELS[args.model], name=args.name,
                                            allow_missing_images=args.allow_missing_images)
    if args.model == "ns-vqa-gold":
        from clevr_poc.pipeline import Pipeline

        return Pipeline.gold(name=args.name)
    if args.model == "ns-vqa":
        return _ns_vqa(args)
    if not args.backend:
        raise FormatError(f"--model {args.model} needs --backend SPEC (e.g. openai:MODEL@URL)", field="--backend")
    if args.model == "vlm":
        from clevr_poc.baselines.vlm import VLMBaseline

        return VLMBaseline(args.backend, prompt=args.prompt, max_tokens=args.max_tokens, workers=args.workers,
                           name=args.name, device=args.device, dtype=args.dtype)
    max_tokens = 256 if args.max_tokens is None else args.max_tokens
    if max_tokens < 1 or args.workers < 1:
        raise FormatError("both must be positive", field="--max-tokens/--workers",
                          value=(max_tokens, args.workers))
    from clevr_poc.baselines.llm_standalone import LLMStandalone

    return LLMStandalone(args.backend, max_tokens=max_tokens, workers=args.workers, name=args.name)


def _checkpoint_folders(args: argparse.Namespace) -> dict[str, Path]:
    """The checkpoint folders ``--model ns-vqa`` loads (checked: :func:`clevr_poc.pipeline.check_checkpoints`)."""
    from clevr_poc.pipeline import check_checkpoints

    return check_checkpoints(scene_source="perception" if args.scene == "perception" else "given",
                             parser="bilstm" if args.query == "bilstm" else "given",
                             perception_path=args.perception_path, parser_path=args.parser_path,
                             options={"perception": "--perception-path DIR", "parser_bilstm": "--parser-path DIR"})


def _ns_vqa(args: argparse.Namespace) -> "Pipeline":
    """NS-VQA (:class:`~clevr_poc.pipeline.Pipeline`) with the ``--scene`` / ``--query`` sources
    (checkpoints checked before anything runs)."""
    from clevr_poc.pipeline import Pipeline

    if args.query != "llm" and args.backend:
        raise FormatError("--backend is used with --query llm (or --model llm-standalone) only", field="--backend",
                          value=args.backend)
    if args.query != "bilstm" and args.parser_path:
        raise FormatError("--parser-path is used with --query bilstm only", field="--parser-path",
                          value=args.parser_path)
    if args.scene != "perception" and args.perception_path:
        raise FormatError("--perception-path is used with --scene perception only", field="--perception-path",
                          value=args.perception_path)
    if args.scene != "perception" and args.camera != "auto":
        raise FormatError("--camera is used with --scene perception only", field="--camera", value=args.camera)
    folders = _checkpoint_folders(args)
    if args.threads < 1:
        raise FormatError("must be a positive integer", field="--threads", value=args.threads)
    if args.scene == "perception" or args.query == "bilstm":
        import torch

        torch.set_num_threads(args.threads)
    perception: "Perception | None" = None
    if args.scene == "perception":
        from clevr_poc.perception import Perception

        perception = Perception.from_pretrained(folders["perception"], device=args.device)
    parser: "QueryParser | None" = None
    if args.query == "bilstm":
        from clevr_poc.parsing.seq2seq import BiLSTMParser

        parser = BiLSTMParser.from_pretrained(folders["parser_bilstm"])
    elif args.query == "llm":
        from clevr_poc.parsing.llm_parser import DEFAULT_MAX_TOKENS, LLMParser

        max_tokens = DEFAULT_MAX_TOKENS if args.max_tokens is None else args.max_tokens
        if max_tokens < 1:
            raise FormatError("must be positive", field="--max-tokens", value=max_tokens)
        parser = LLMParser(args.backend or "local", max_tokens=max_tokens)
    names = {"gold": "gold scene", "perception": "perception"}
    name = args.name or (f"NS-VQA ({names[args.scene]}, "
                         f"{'gold ASP' if parser is None else parser.name + ' parser'})")
    pipeline = Pipeline(perception, parser, name=name, camera_source=args.camera,
                        presupposition_k=args.presupposition_k)
    if args.answer_rule is None:
        return pipeline
    from clevr_poc.probabilistic_pipeline import DistributionSettings, ProbabilisticPipeline

    return ProbabilisticPipeline.from_pipeline(pipeline, DistributionSettings(k=args.top_k, rule=args.answer_rule))


def _vlm_extra(model: "VLMBaseline", report: "EvaluationReport", examples: list["Example"]) -> dict[str, Any]:
    """``--model vlm``: the prompt, the backend's token usage and (list-then-reason) the listed-scene metrics."""
    extra: dict[str, Any] = {"prompt": model.prompt}
    usage = getattr(model.backend, "usage", None)
    if isinstance(usage, dict):
        extra["usage"] = dict(usage)
    if model.prompt == "list-then-reason":
        from clevr_poc.baselines.vlm_scene import format_listing_metrics, listing_metrics

        extra["scene_listing"] = listing_metrics([r.raw for r in report.results],
                                                 [e.partial_scene for e in examples])
        print(format_listing_metrics(extra["scene_listing"]))
    return extra


def _pooled(args: argparse.Namespace) -> bool:
    """Whether the model runs in worker processes (:class:`~clevr_poc.evaluation.model_pool.ModelPool`):
    ``--workers`` > 1 or ``--executor ray``, for every model but the LLM/VLM ones (whose ``--workers`` are
    parallel requests)."""
    local = args.model in CLIP_MODELS or (args.model in ("ns-vqa", "ns-vqa-gold")
                                          and getattr(args, "query", "gold") != "llm")
    return local and (args.workers > 1 or args.executor == "ray")


def _batch_size(args: argparse.Namespace) -> int:
    """Examples per ``predict_batch`` call (and per --checkpoint flush): CLIP and local NS-VQA batch widely
    (64 per worker process); LLM requests are flushed every ``4 * --workers`` answers so an interrupted run
    loses little."""
    if args.model in CLIP_MODELS:
        return 256 * (args.workers if _pooled(args) else 1)
    if args.model in ("ns-vqa", "ns-vqa-gold") and getattr(args, "query", "gold") != "llm":
        return 64 * (args.workers if _pooled(args) else 1)
    return max(1, 4 * args.workers)


def _task_size(args: argparse.Namespace) -> int | None:
    """Questions per worker task (:class:`~clevr_poc.evaluation.model_pool.ModelPool`): NS-VQA answers one
    question at a time, so small tasks that idle workers can take keep every worker busy to the end of a
    batch (4 from pixels, about 0.2 s each; 16 on gold scenes); CLIP batches a worker's whole share."""
    if args.model in CLIP_MODELS:
        return None
    return 4 if args.model == "ns-vqa" and args.scene == "perception" else 16


def _check_outputs(args: argparse.Namespace) -> None:
    """``--out`` and (a predictions file) ``--checkpoint`` must be writable before anything runs; the
    temp files a killed run left in ``--out`` are removed."""
    if args.out is not None:
        remove_stale_output_temps(check_output_folder(args.out, "--out"))
    if args.checkpoint is not None and args.model is not None and args.model not in CLIP_MODELS:
        check_output_file(args.checkpoint, "--checkpoint")


def _reads_images(args: argparse.Namespace) -> bool:
    return (args.model in CLIP_MODELS or args.model == "vlm"
            or (args.model == "ns-vqa" and args.scene == "perception"))


def _image_failures(args: argparse.Namespace, examples: list[Any]) -> dict[int, str] | None:
    """For models that read images: the questions whose image is missing or unreadable, each printed
    (:mod:`clevr_poc.evaluation.image_checks`; without --allow-missing-images the first one is an error).
    None for models that read no image."""
    if not _reads_images(args):
        return None
    from clevr_poc.evaluation.image_checks import check_images

    failures = check_images(examples, args.dataset, allow_missing=args.allow_missing_images)
    for cause in failures.values():
        print(f"image failure (scored as a failure): {cause}")
    return failures


def significant(value: float, digits: int = 3) -> str:
    """``value`` with ``digits`` significant digits in fixed notation, so that a nonzero value never prints
    as 0.0: ``1.58``, ``19.8``, ``152``, ``0.00412``; ``0`` for zero."""
    if value == 0 or not math.isfinite(value):
        return f"{value:g}"
    decimals = max(0, digits - 1 - math.floor(math.log10(abs(value))))
    return f"{value:.{decimals}f}"


def run_time_line(run: "ModelRun") -> str:
    """The line ``evaluate --model`` prints for a run's wall-clock time: ``time: 1.58 s (19.8 ms per
    question)``, the time per question counting only the questions asked in this run
    (``time: 0.0123 s (12.3 ms per question; 1 asked, 2 from the checkpoint)``)."""
    if run.asked:
        detail = f"{significant(1000 * run.seconds / run.asked)} ms per question"
        if run.cached:
            detail += f"; {run.asked} asked, {run.cached} from the checkpoint"
    else:
        detail = f"all {run.cached} from the checkpoint" if run.cached else "no questions"
    return f"time: {significant(run.seconds)} s ({detail})"


def run_leaving_no_empty_out(args: argparse.Namespace) -> int | None:
    """:func:`run`, removing the ``--out`` folder it created when the run fails before writing into it
    (:func:`~clevr_poc.commands.shared.with_checked_outputs`): a bad input leaves nothing behind."""
    return with_checked_outputs(run, args, folders=("out",))()


def run(args: argparse.Namespace) -> int:
    from clevr_poc.evaluation import evaluate, score_predictions, write_outputs

    if args.threads < 1:  # whatever the model: a bad value is never silently ignored
        raise FormatError("must be a positive integer", field="--threads", value=args.threads)
    from clevr_poc.commands.selective_answers import check_answer_rule_arguments

    check_answer_rule_arguments(args)
    examples = split_examples(args.dataset, args.split, args.limit)
    _check_outputs(args)
    if args.predictions is not None:
        if args.limit is not None:
            raise FormatError("applies to --model runs only (a predictions file covers the whole split)",
                              field="--limit", value=args.limit)
        predictions = read_predictions(args.predictions)
        try:
            report = score_predictions(examples, predictions, model=args.name or Path(args.predictions).stem,
                                       split=args.split, parse_failures=args.parse_failures)
        except FormatError as exc:
            raise FormatError(exc.message, source=args.predictions if exc.source is None else exc.source,
                              field=exc.field, value=exc.value) from None
    else:
        from clevr_poc.experiment import program_accuracy, run_model

        image_failures = _image_failures(args, examples)  # before any model is loaded
        model = _model(args)  # built here too when pooled: its errors are one line, and it names the run
        if args.model == "ns-vqa" and (args.scene == "perception" or args.query == "bilstm"):
            # which models: the default folder may be ./models of the working directory (default_models_dir)
            print("models: " + ", ".join(f"{kind} {Path(path).resolve()}"
                                         for kind, path in _checkpoint_folders(args).items()))
        if args.model == "ns-vqa" and args.scene == "gold" and args.query == "gold":
            print("note: --model ns-vqa with the default --scene gold --query gold uses the gold partial scene and "
                  "the gold ASP query (= ns-vqa-gold); from pixels: --scene perception --query bilstm", file=sys.stderr)
        if _pooled(args):
            from clevr_poc.evaluation.evaluator import model_name
            from clevr_poc.evaluation.model_pool import ModelPool, ModelRecipe

            model = ModelPool(ModelRecipe(_model, (args,)), workers=args.workers, executor=args.executor,
                              ray_address=args.ray_address, name=model_name(model),
                              task_size=_task_size(args)).start()  # loads aside
        if image_failures:
            from clevr_poc.evaluation.image_checks import ImageCheckedModel

            runner = ImageCheckedModel(model, image_failures)
        else:
            runner = model
        clip = args.model in CLIP_MODELS  # --checkpoint is the model folder, not a predictions file
        with model if _pooled(args) else nullcontext():
            run = run_model(runner, examples, progress=args.progress, split=args.split,
                            parse_failures=args.parse_failures, checkpoint=None if clip else args.checkpoint,
                            batch_size=_batch_size(args))
        report = run.report
        extra = {**report.extra, "seconds": round(run.seconds, 3), "seconds_per_question": run.seconds_per_question}
        if run.cached:
            extra["from_checkpoint"] = run.cached
        if args.model == "ns-vqa" and args.query != "gold":
            accuracy = program_accuracy(report, examples)
            extra["program_accuracy"] = accuracy.to_json()
            print(f"program accuracy: literal {accuracy.correct} of {accuracy.n} ({accuracy.accuracy:.4f}), "
                  f"semantic {accuracy.semantic_correct} of {accuracy.n} ({accuracy.semantic_accuracy:.4f})"
                  + (f" (the {accuracy.image_failures} questions with unreadable images were not parsed)"
                     if accuracy.image_failures else ""))
        if args.model == "vlm":
            extra.update(_vlm_extra(model, report, examples))
        print(run_time_line(run))
        report = replace(report, extra=extra)
        if args.answer_rule is not None:
            from clevr_poc.commands.selective_answers import apply_answer_rule

            report = apply_answer_rule(report, args.abstain_below, args.out, plots=not args.no_plots)
    if args.out:
        written = write_outputs(report, args.out, plots=not args.no_plots)
        print(f"wrote {len(written)} files to {args.out}")
    scored = "wrong" if args.parse_failures == "wrong" else "excluded"
    if report.image_failures:
        print(f"unreadable images: {report.image_failures} of {report.n} questions (never parsed or answered; "
              f"scored as {scored})")
        print(f"parse failures: {report.model_parse_failures} of the {report.n - report.image_failures} questions "
              f"the model saw (scored as {scored})")
    else:
        print(f"parse failures: {report.parse_failures} of {report.n} (scored as {scored})")
    print(json.dumps(report.summary()))
    return 0
