"""``python -m clevr_poc evaluate``: score a model or a predictions file on a dataset split (paper §4.2).

Two modes::

    # scoring only: FILE.json maps each question's image_filename to a list of values (null = parse failure)
    python -m clevr_poc evaluate --dataset DIR --split test --predictions FILE.json [--out RESULTS]
    # run a model: NS-VQA with the gold partial scene and the gold ASP query (a self-check: must be 1.0)
    python -m clevr_poc evaluate --dataset DIR --split test --model ns-vqa-gold [--out RESULTS]
    # the stand-alone LLM baseline through a chat backend (clevr_poc.llm.make_backend spec), resumable
    python -m clevr_poc evaluate --dataset DIR --split test --model llm-standalone \
        --backend openai:MODEL@http://127.0.0.1:8000/v1 --checkpoint llm.jsonl [--limit 200]
    # a trained CLIP baseline (python -m clevr_poc.baselines.clip train): --checkpoint is its folder
    python -m clevr_poc evaluate --dataset DIR --split test --model clip-nl --checkpoint runs/clip-nl

The last line on stdout is one JSON object ``{"exact_accuracy": float, "jaccard": float, "n": int}``; the
line before it counts parse failures. ``--out DIR`` also writes ``report.json`` (per-example results and
breakdowns), ``predictions.json`` (the scoring-only format), ``table2.md`` (the paper's Table 2 layout),
``breakdowns.md`` and ``plots/*.png``.

Predictions file errors are one-line typed errors (exit 1): a question of the split without a
prediction, a key that is no question's ``image_filename``, a value that is neither a list of the 17
labels nor null, or a file that is not a JSON object.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any, Mapping

from clevr_poc._io import read_json
from clevr_poc.errors import ClevrPocError, FormatError

#: Models ``--model`` can run without training: NS-VQA with gold scene and gold ASP (§4.1.2; a self-check,
#: must score 1.0) and the stand-alone LLM (§4.1.3, App. C.1; needs ``--backend``).
MODELS: tuple[str, ...] = ("ns-vqa-gold", "llm-standalone")
#: Trained CLIP baselines (§4.1.1; :mod:`clevr_poc.baselines.clip`): ``--checkpoint`` is the folder written
#: by ``python -m clevr_poc.baselines.clip train`` (model name -> variant).
CLIP_MODELS: dict[str, str] = {"clip-nl": "nl", "clip-asp": "asp", "clip-none": "none"}

_EPILOG = """examples:
  python -m clevr_poc evaluate --dataset data/ --split test --predictions preds.json
  python -m clevr_poc evaluate --dataset data/ --split test --model ns-vqa-gold --out results/
  python -m clevr_poc evaluate --dataset data/ --split test --model llm-standalone \
      --backend openai:gpt-4o --checkpoint gpt4o.jsonl --limit 200 --workers 4
predictions file: {"CLEVR_test_000000.png": ["small", "medium"], "CLEVR_test_000001.png": null, ...}
"""


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register the ``evaluate`` sub-command (sets ``func=run``)."""
    parser = subparsers.add_parser(
        "evaluate",
        help="score predictions or a model on a dataset split (exact accuracy, Jaccard index)",
        description="Exact accuracy (paper eq. 2) and Jaccard index (eq. 3) of a predictions file or a "
                    "model on one split of a CLEVR-POC dataset, with breakdowns and parse-failure counts.",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--dataset", required=True, metavar="DIR", help="dataset folder (official layout)")
    parser.add_argument("--split", required=True, metavar="S", help="split to evaluate (e.g. train, val, test)")
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--predictions", metavar="FILE.json",
                        help="JSON object: image_filename -> list of predicted values, or null (parse failure)")
    source.add_argument("--model", choices=MODELS + tuple(CLIP_MODELS),
                        help="run a model: ns-vqa-gold = gold partial scene + gold ASP query through the Reasoner; "
                             "llm-standalone = the App. C.1 prompt through --backend; clip-nl/clip-asp/clip-none "
                             "= a trained CLIP baseline (--checkpoint DIR)")
    llm = parser.add_argument_group("llm-standalone")
    llm.add_argument("--backend", metavar="SPEC",
                     help="chat backend: local, gguf:PATH, openai, openai:MODEL or openai:MODEL@URL")
    llm.add_argument("--max-tokens", type=int, default=256, metavar="N", help="reply length limit (default 256)")
    llm.add_argument("--workers", type=int, default=1, metavar="W", help="parallel requests (default 1)")
    clip = parser.add_argument_group("clip-nl / clip-asp / clip-none")
    clip.add_argument("--allow-missing-images", action="store_true",
                      help="use a blank placeholder for unrendered images (default: error naming the file)")
    parser.add_argument("--out", metavar="DIR", help="write report.json, predictions.json, table2.md, breakdowns.md and plots/")
    parser.add_argument("--name", metavar="NAME", help="model name in the report and tables")
    parser.add_argument("--parse-failures", choices=("wrong", "exclude"), default="wrong",
                        help="score parse failures as wrong (default) or leave them out of the averages")
    parser.add_argument("--limit", type=int, metavar="N", help="only the first N questions of the split")
    parser.add_argument("--checkpoint", metavar="FILE.jsonl|DIR",
                        help="with --model: keep predictions in this file and resume an interrupted run; "
                             "with a clip-* model: the trained checkpoint folder (required)")
    parser.add_argument("--no-plots", action="store_true", help="with --out: skip the PNG plots")
    parser.add_argument("--progress", action="store_true", help="show a progress bar (stderr)")
    parser.set_defaults(func=run)
    return parser


def read_predictions(path: str | Path) -> dict[str, Any]:
    """Read a predictions file: a JSON object mapping ``image_filename`` to a list of values or null.

    Values are checked against the questions later (:func:`clevr_poc.evaluation.score_predictions`).

    Raises:
        FormatError: missing file, invalid JSON, or not a JSON object.
    """
    data = read_json(path)
    if not isinstance(data, Mapping):
        raise FormatError("must be a JSON object mapping image_filename to a list of values or null",
                          source=path, value=type(data).__name__)
    return dict(data)


def _load_examples(dataset: str, split: str, limit: int | None = None) -> list[Any]:
    try:
        from clevr_poc.dataset import load_dataset
    except ImportError as exc:  # pragma: no cover - only in a broken installation
        raise ClevrPocError(f"cannot load datasets: {exc}") from None
    if not Path(dataset).is_dir():
        raise FormatError("dataset folder not found", source=dataset)
    if limit is not None and limit < 1:
        raise FormatError("must be a positive integer", field="--limit", value=limit)
    data = load_dataset(dataset, split)
    examples = list(data if limit is None else data[:limit])
    if not examples:
        raise FormatError("the split has no questions", source=dataset, field="split", value=split)
    return examples


def _model(args: argparse.Namespace) -> Any:
    if args.model in CLIP_MODELS:
        if not args.checkpoint:
            raise FormatError(f"--model {args.model} needs --checkpoint DIR (a folder written by "
                              "`python -m clevr_poc.baselines.clip train`)", field="--checkpoint")
        from clevr_poc.baselines.clip.cli import require_clip_extra

        require_clip_extra()
        from clevr_poc.baselines.clip.training import CLIPBaseline

        return CLIPBaseline.from_checkpoint(args.checkpoint, variant=CLIP_MODELS[args.model], name=args.name,
                                            allow_missing_images=args.allow_missing_images)
    if args.model == "ns-vqa-gold":
        from clevr_poc.baselines.ns_vqa import NSVQA

        return NSVQA(name=args.name or "NS-VQA (gold scene, gold ASP)")
    if not args.backend:
        raise FormatError("--model llm-standalone needs --backend SPEC (e.g. openai:MODEL@URL)", field="--backend")
    if args.max_tokens < 1 or args.workers < 1:
        raise FormatError("--max-tokens and --workers must be positive", field="--max-tokens/--workers",
                          value=(args.max_tokens, args.workers))
    from clevr_poc.baselines.llm_standalone import LLMStandalone

    return LLMStandalone(args.backend, max_tokens=args.max_tokens, workers=args.workers, name=args.name)


def run(args: argparse.Namespace) -> int:
    from clevr_poc.evaluation import evaluate, score_predictions, write_outputs

    examples = _load_examples(args.dataset, args.split, args.limit)
    if args.predictions is not None:
        if args.limit is not None:
            raise FormatError("--limit applies to --model runs only (a predictions file covers the whole split)",
                              field="--limit", value=args.limit)
        predictions = read_predictions(args.predictions)
        try:
            report = score_predictions(examples, predictions, model=args.name or Path(args.predictions).stem,
                                       split=args.split, parse_failures=args.parse_failures)
        except FormatError as exc:
            raise FormatError(str(exc), source=args.predictions) from None
    else:
        model = _model(args)
        clip = args.model in CLIP_MODELS  # --checkpoint is the model folder, not a predictions file
        report = evaluate(model, examples, progress=args.progress, split=args.split,
                          parse_failures=args.parse_failures, checkpoint=None if clip else args.checkpoint,
                          batch_size=256 if clip else max(1, 4 * args.workers))
    if args.out:
        written = write_outputs(report, args.out, plots=not args.no_plots)
        print(f"wrote {len(written)} files to {args.out}")
    print(f"parse failures: {report.parse_failures} of {report.n} (scored as "
          f"{'wrong' if args.parse_failures == 'wrong' else 'excluded'})")
    print(json.dumps(report.summary()))
    return 0
