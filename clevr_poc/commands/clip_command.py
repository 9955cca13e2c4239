"""``python -m clevr_poc.baselines.clip train|evaluate``: train and score the CLIP baselines (paper §4.1.1).

::

    # train CLIP-NL with the paper's encoders (OpenAI ViT-B/32, GPT-2; needs the weights locally or online)
    python -m clevr_poc.baselines.clip train --dataset DIR --variant nl --out runs/clip-nl
    # the same offline with random encoders (smoke runs, tests)
    HF_HUB_OFFLINE=1 python -m clevr_poc.baselines.clip train --dataset DIR --variant asp --out runs/clip-asp \\
        --clip-pretrained none --gpt2 tiny --epochs 20
    # score a checkpoint on a split: report.json, predictions.json, table2.md, breakdowns.md, plots/
    python -m clevr_poc.baselines.clip evaluate --dataset DIR --split test --checkpoint runs/clip-nl --out results/

The last line on stdout is one JSON object (``train``: the checkpoint, selected epoch and validation
scores; ``evaluate``: ``{"exact_accuracy", "jaccard", "n"}``). Errors are one line on stderr, exit 1.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, Sequence

from clevr_poc.commands.shared import (ArgumentParser, non_negative_float, non_negative_int, open_unit_float, positive_float,
                            positive_int, run_guarded, split_examples, with_checked_outputs)
from clevr_poc.errors import ClevrPocError, FormatError

MISSING_EXTRA = ("the CLIP baseline needs the [clip] extra (torch, open_clip_torch, transformers, Pillow): "
                 "pip install '.[clip]' in the clevr_poc folder")


def require_clip_extra() -> None:
    """Raise a one-line :class:`ClevrPocError` when torch / open_clip / transformers / Pillow is missing."""
    import importlib.util

    missing = [name for name in ("torch", "open_clip", "transformers", "PIL")
               if importlib.util.find_spec(name) is None]
    if missing:
        raise ClevrPocError(f"{MISSING_EXTRA} (missing: {', '.join(missing)})")


def _none(text: str) -> str | None:
    return None if text.strip().lower() in {"none", "random", ""} else text


def _hidden(text: str) -> tuple[int, ...]:
    try:
        sizes = tuple(int(part) for part in text.split(",") if part.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers or 0, got {text!r}") from None
    if sizes == (0,):
        return ()
    if not sizes or any(s < 1 for s in sizes):
        raise argparse.ArgumentTypeError(f"expected positive widths or 0, got {text!r}")
    return sizes


def _add_common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--dataset", required=True, metavar="DIR", help="dataset folder")
    parser.add_argument("--allow-missing-images", action="store_true",
                        help="use a blank placeholder image for unrendered scenes (default: error naming the file)")
    parser.add_argument("--cache", metavar="DIR",
                        help="feature cache folder (default: CHECKPOINT/features); reused across runs and variants")
    parser.add_argument("--device", default="auto", help="torch device: auto (cuda if available), cpu, cuda, ...")
    parser.add_argument("--limit", type=positive_int, metavar="N", help="only the first N questions of each split")
    parser.add_argument("--progress", action="store_true", help="progress bars (stderr)")


def build_parser() -> argparse.ArgumentParser:
    from clevr_poc.baselines.clip.encoders import DEFAULT_CLIP_MODEL, DEFAULT_CLIP_PRETRAINED, DEFAULT_GPT2
    from clevr_poc.baselines.clip.features import VARIANTS

    parser = ArgumentParser(prog="python -m clevr_poc.baselines.clip",
                                     description="CLIP baselines of CLEVR-POC (paper §4.1.1, Fig. 3, eq. 1).",
                                     epilog=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    train = sub.add_parser("train", help="train the classifier of one variant on frozen CLIP/GPT-2 features",
                           formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    _add_common(train)
    train.add_argument("--variant", required=True, choices=VARIANTS,
                       help="constraints as English (nl), as ASP (asp) or not given (none)")
    train.add_argument("--out", required=True, metavar="DIR", help="checkpoint folder")
    train.add_argument("--train-split", default="train", metavar="S")
    train.add_argument("--val-split", default="val", metavar="S",
                       help="validation split for epoch selection ('none': no validation; a missing default "
                            "split is skipped)")
    train.add_argument("--epochs", type=positive_int, default=50)
    train.add_argument("--batch-size", type=positive_int, default=8)
    train.add_argument("--lr", type=positive_float, default=1e-3)
    train.add_argument("--dropout", type=non_negative_float, default=0.1)
    train.add_argument("--hidden", type=_hidden, default=(512,), metavar="W[,W...]|0",
                       help="hidden layer widths of the head; 0 = one linear layer (official code)")
    train.add_argument("--beta", type=positive_float, default=5.0, help="weight of the weighted BCE (paper eq. 1)")
    train.add_argument("--weighting", choices=("positives", "negatives"), default="positives",
                       help="beta on positive labels (paper eq. 1) or on negative labels (official code)")
    train.add_argument("--threshold", type=open_unit_float, default=0.5, help="decision threshold on probabilities")
    train.add_argument("--restrict", choices=("none", "attribute"), default="none",
                       help="predict only the queried attribute's labels (attribute) or any of the 17 (none)")
    train.add_argument("--select", choices=("best", "last"), default="best",
                       help="keep the epoch with the best validation Jaccard, or the last epoch")
    train.add_argument("--seed", type=non_negative_int, default=0, help="seed of the head's initialisation and batch order")
    train.add_argument("--clip-model", default=DEFAULT_CLIP_MODEL, help="open_clip model name")
    train.add_argument("--clip-pretrained", default=DEFAULT_CLIP_PRETRAINED, metavar="TAG|PATH|none",
                       help="open_clip pretrained tag, local checkpoint file, or none (random weights)")
    train.add_argument("--gpt2", default=DEFAULT_GPT2, metavar="NAME|PATH|tiny",
                       help="GPT-2 name, local folder (save_pretrained), or tiny (random 2-layer model)")
    train.add_argument("--encoder-seed", type=non_negative_int, default=0, help="seed of random encoder weights")
    train.add_argument("--json", action="store_true", help="print the training history as JSON too")

    evaluate = sub.add_parser("evaluate", help="score a checkpoint on a split (exact accuracy, Jaccard index)",
                              formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    _add_common(evaluate)
    evaluate.add_argument("--split", default="test", metavar="S")
    evaluate.add_argument("--checkpoint", required=True, metavar="DIR", help="checkpoint folder from `train`")
    evaluate.add_argument("--out", metavar="DIR",
                          help="write report.json, predictions.json, table2.md, breakdowns.md and plots/")
    evaluate.add_argument("--threshold", type=open_unit_float, help="override the checkpoint's decision threshold")
    evaluate.add_argument("--restrict", choices=("none", "attribute"), help="override the checkpoint's restriction")
    evaluate.add_argument("--name", metavar="NAME", help="model name in the report (default: CLIP-NL, ...)")
    evaluate.add_argument("--no-plots", action="store_true", help="with --out: skip the PNG plots")
    return parser


def _splits(dataset: str) -> list[str]:
    from clevr_poc.dataset_reader import load_dataset

    return list(load_dataset(dataset).splits)


def run_train(args: argparse.Namespace) -> int:
    require_clip_extra()
    from clevr_poc.baselines.clip.encoders import EncoderSpec
    from clevr_poc.baselines.clip.clip_training import TrainConfig, train

    config = TrainConfig(variant=args.variant, epochs=args.epochs, batch_size=args.batch_size, lr=args.lr,
                         dropout=args.dropout, hidden=args.hidden, beta=args.beta, weighting=args.weighting,
                         threshold=args.threshold, restrict=args.restrict, seed=args.seed, select=args.select)
    spec = EncoderSpec(clip_model=args.clip_model, clip_pretrained=_none(args.clip_pretrained),
                       gpt2=None if args.variant == "none" else _none(args.gpt2), seed=args.encoder_seed)
    if args.variant != "none" and spec.gpt2 is None:
        raise FormatError(f"variant {args.variant!r} needs a constraint encoder", field="--gpt2", value=args.gpt2)
    train_examples = split_examples(args.dataset, args.train_split, args.limit)
    val_examples: list[Any] = []
    if args.val_split.lower() != "none":
        from clevr_poc.dataset_reader import SPLIT_ALIASES

        available = _splits(args.dataset)
        aliases = SPLIT_ALIASES.get(args.val_split, (args.val_split,))
        if any(a in available for a in aliases) or args.val_split != "val":
            val_examples = split_examples(args.dataset, args.val_split, args.limit)
        else:
            print(f"no {args.val_split!r} split: training without validation (last epoch kept)", file=sys.stderr)
    result = train(train_examples, args.out, config, spec, val_examples=val_examples, cache_dir=args.cache,
                   allow_missing_images=args.allow_missing_images, device=args.device, progress=args.progress,
                   log=lambda line: print(line, flush=True))
    last = result.history[result.selected_epoch - 1]
    if args.json:
        print(json.dumps([r.__dict__ for r in result.history]))
    print(f"wrote checkpoint {result.checkpoint} (epoch {result.selected_epoch} of {len(result.history)} kept)")
    print(json.dumps({"checkpoint": str(result.checkpoint), "variant": args.variant,
                      "selected_epoch": result.selected_epoch, "train_examples": result.train_examples,
                      "val_examples": result.val_examples, "train_loss": last.train_loss,
                      "val_exact_accuracy": last.val_exact_accuracy, "val_jaccard": last.val_jaccard,
                      "seconds": result.seconds}))
    return 0


def run_evaluate(args: argparse.Namespace) -> int:
    require_clip_extra()
    from clevr_poc.baselines.clip.clip_training import CLIPBaseline
    from clevr_poc.evaluation import evaluate, write_outputs

    examples = split_examples(args.dataset, args.split, args.limit)
    model = CLIPBaseline.from_checkpoint(args.checkpoint, threshold=args.threshold, restrict=args.restrict,
                                         allow_missing_images=args.allow_missing_images, cache_dir=args.cache,
                                         device=args.device, name=args.name)
    model.extractor.features(examples, progress=args.progress)  # encode the split once (cached)
    model.extractor.flush()
    report = evaluate(model, examples, progress=args.progress, split=args.split, batch_size=256)
    if args.out:
        written = write_outputs(report, args.out, plots=not args.no_plots)
        print(f"wrote {len(written)} files to {args.out}")
    print(json.dumps(report.summary()))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status (0 ok, 1 error, 2 usage)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help(sys.stderr)
        return 2
    return run_guarded(with_checked_outputs(lambda a: run_train(a) if a.command == "train" else run_evaluate(a), args,
                                            folders=("out",)))


__all__ = ["build_parser", "main", "require_clip_extra", "run_evaluate", "run_train"]
