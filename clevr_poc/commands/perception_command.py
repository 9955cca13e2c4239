"""``python -m clevr_poc.perception {train,train-answers,evaluate}``: train the perception networks on rendered
images (``train-answers``: the attribute network from answers alone, NeurASP-style) and measure them. Errors end with one ``error: ...`` line and exit status 1 (bad arguments: 2).

examples::

    python -m clevr_poc.perception train --dataset v1data --out runs/perception --seed 0
    python -m clevr_poc.perception train --dataset v1data --out runs/perception --part detector &   # one core
    python -m clevr_poc.perception train --dataset v1data --out runs/perception --part attributes    # the other
    python -m clevr_poc.perception train --dataset mixed --out runs/ft --init models/perception --device auto
    python -m clevr_poc.perception train-answers --dataset v1data --init models/perception --out runs/answers \\
        --steps 100 --batch 8 --k 16                 # no scene labels: (image, environment, question, answer)
    python -m clevr_poc.perception evaluate --dataset v1data --checkpoint models/perception --split test --json
    python -m clevr_poc.perception evaluate --dataset official-release/output --checkpoint models/perception \\
        --split testing --camera official
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from typing import Sequence

from clevr_poc.commands.shared import (ArgumentParser, int_at_least, int_between, non_negative_float, open_unit_float, positive_float,
                            positive_int, run_guarded, with_checked_outputs)
from clevr_poc.answer_presupposition import MAX_PRESUPPOSITION_K
from clevr_poc.perception.cameras import CAMERA_SOURCES, DEFAULT_CAMERA_SOURCE
from clevr_poc.perception.devices import DEFAULT_DEVICE

_DEVICE_HELP = "torch device: auto (CUDA when present, else cpu), cpu, cuda or cuda:N (default: %(default)s)"
_CAMERA_HELP = ("camera of each image: auto = the scene's own when it has one, else the official CLEVR-POC "
                "camera (the release's scenes carry none); from-scene; or a preset: official, ours "
                "(default: %(default)s)")

_EPILOG = __doc__.split("examples::", 1)[1].replace("\n    ", "\n  ")


def build_parser() -> argparse.ArgumentParser:
    parser = ArgumentParser(
        prog="python -m clevr_poc.perception",
        description="Perception for CLEVR-POC: a Faster R-CNN detector and an NS-VQA attribute network trained "
                    "on rendered images; scenes decoded plainly or consistently with the environment.",
        epilog="examples:" + _EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    t = sub.add_parser("train", help="train (or resume training) the detector and the attribute network",
                       description="Train on the rendered images of a split; resumes from checkpoints in --out.")
    t.add_argument("--dataset", required=True, metavar="DIR", action="append",
                   help="rendered dataset folder (repeat to pool several)")
    t.add_argument("--out", required=True, metavar="DIR", help="output folder (checkpoints, perception.pt)")
    t.add_argument("--split", default="train",
                   help="split(s) to train on, comma-separated (default: %(default)s)")
    t.add_argument("--part", choices=("all", "detector", "attributes"), default="all",
                   help="train both parts in turn (default) or one (two processes can train one each)")
    t.add_argument("--seed", type=int, default=0, help="random seed (default: %(default)s)")
    t.add_argument("--detector-steps", type=positive_int, default=None, metavar="N")
    t.add_argument("--attribute-steps", type=positive_int, default=None, metavar="N")
    t.add_argument("--detector-batch", type=positive_int, default=None, metavar="B", help="images per step")
    t.add_argument("--attribute-batch", type=positive_int, default=None, metavar="B", help="objects per step")
    t.add_argument("--detector-lr", type=positive_float, default=None, metavar="LR",
                   help="detector peak learning rate (default 2e-3; lower when fine-tuning)")
    t.add_argument("--attribute-lr", type=positive_float, default=None, metavar="LR",
                   help="attribute network peak learning rate (default 2e-3; lower when fine-tuning)")
    t.add_argument("--checkpoint-every", type=positive_int, default=None, metavar="N", help="steps between checkpoints")
    t.add_argument("--kinds", default="incomplete,complete", metavar="K,...",
                   help="scene kinds to train on (default: %(default)s; missing images are skipped)")
    t.add_argument("--limit", type=positive_int, default=None, metavar="N", help="at most N images per kind")
    t.add_argument("--stop-after", type=positive_int, default=None, metavar="N",
                   help="train at most N steps of each part now, then stop (run again to resume)")
    t.add_argument("--threads", type=positive_int, default=None, metavar="T",
                   help="torch threads (default: 2 for --part all, else 1)")
    t.add_argument("--init", default=None, metavar="MODEL",
                   help="start both networks from this finished model (perception.pt or its folder): fine-tuning")
    t.add_argument("--device", default=DEFAULT_DEVICE, metavar="D", help=_DEVICE_HELP)
    t.add_argument("--exposure-jitter", type=non_negative_float, default=None, metavar="E",
                   help="photometric augmentation: images scaled by 2**U(-E, E) (default 0: off)")
    t.add_argument("--gamma-jitter", type=non_negative_float, default=None, metavar="G",
                   help="photometric augmentation: images raised to 2**U(-G, G) (default 0: off)")
    t.add_argument("--no-progress", action="store_true", help="no progress bars")

    _add_train_answers(sub)

    e = sub.add_parser("evaluate", help="detection, attribute, region, relationship and scene accuracy",
                       description="Evaluate a model on the rendered partial-scene images of a split, with plain "
                                   "(argmax) and constraint-aware decoding.")
    e.add_argument("--dataset", required=True, metavar="DIR", help="rendered dataset folder")
    e.add_argument("--checkpoint", required=True, metavar="PATH", help="perception.pt or a folder holding it")
    e.add_argument("--split", default="test", help="split to evaluate (default: %(default)s)")
    e.add_argument("--limit", type=positive_int, default=None, metavar="N", help="at most N images")
    e.add_argument("--no-decode", action="store_true", help="skip constraint-aware decoding")
    e.add_argument("--score-threshold", type=open_unit_float, default=None, metavar="S",
                   help="detection score of an object for argmax decoding (default: the model's)")
    e.add_argument("--presupposition-k", type=int_between(0, MAX_PRESUPPOSITION_K), default=16,
                   metavar="K",
                   help="when the MAP scene leaves the question without an answer, answer with the most probable "
                        "of the K best consistent scenes that has one, as the pipeline does (default 16; 0: off)")
    e.add_argument("--threads", type=positive_int, default=2, metavar="T", help="torch threads (default: 2)")
    e.add_argument("--camera", choices=CAMERA_SOURCES, default=DEFAULT_CAMERA_SOURCE, help=_CAMERA_HELP)
    e.add_argument("--device", default=DEFAULT_DEVICE, metavar="D", help=_DEVICE_HELP)
    e.add_argument("--json", action="store_true", help="print the metrics as one JSON object")
    e.add_argument("--no-progress", action="store_true", help="no progress bar")
    return parser


def _add_train_answers(sub: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    a = sub.add_parser("train-answers", help="fine-tune the attribute network from answers alone (NeurASP-style)",
                       description="Fine-tune the attribute network of --init from (image, environment, question, "
                                   "gold answer) only: the loss is -log of the probability of the k most probable "
                                   "consistent scenes whose answer is the gold set (detector frozen; no scene "
                                   "labels). Resumes from --out/answers.pt; writes --out/perception.pt.")
    a.add_argument("--dataset", required=True, metavar="DIR", help="rendered dataset folder")
    a.add_argument("--init", required=True, metavar="MODEL", help="the model to start from (perception.pt or its folder)")
    a.add_argument("--out", required=True, metavar="DIR", help="output folder (answers.pt, perception.pt)")
    a.add_argument("--split", default="train", help="split whose questions train (default: %(default)s)")
    a.add_argument("--skip", type=int_at_least(0), default=0, metavar="N",
                   help="leave out the first N questions (image-index order; default: %(default)s)")
    a.add_argument("--limit", type=positive_int, default=None, metavar="N", help="at most N questions after --skip")
    a.add_argument("--steps", type=positive_int, default=100, metavar="N", help="optimiser steps (default: %(default)s)")
    a.add_argument("--batch", type=positive_int, default=8, metavar="B", help="questions per step (default: %(default)s)")
    a.add_argument("--lr", type=positive_float, default=2e-4, metavar="LR", help="peak learning rate (default: %(default)s)")
    a.add_argument("--warmup-steps", type=int_at_least(0), default=10, metavar="N", help="default: %(default)s")
    a.add_argument("--k", type=int_at_least(1), default=16, metavar="K",
                   help="scenes enumerated per question, 1..256 (default: %(default)s)")
    a.add_argument("--min-ratio", type=open_unit_float, default=1e-4, metavar="R",
                   help="leave out scenes under R times the MAP scene's probability (default: %(default)s)")
    a.add_argument("--normalise", action="store_true",
                   help="normalise over the k scenes (P(answer | image, environment)) instead of NeurASP's "
                        "unnormalised probability of the observation")
    a.add_argument("--seed", type=int, default=0, help="order of the questions (default: %(default)s)")
    a.add_argument("--checkpoint-every", type=positive_int, default=50, metavar="N", help="default: %(default)s")
    a.add_argument("--stop-after", type=positive_int, default=None, metavar="N",
                   help="run at most N steps now, then stop (run again to resume)")
    a.add_argument("--camera", choices=CAMERA_SOURCES, default=DEFAULT_CAMERA_SOURCE, help=_CAMERA_HELP)
    a.add_argument("--threads", type=positive_int, default=1, metavar="T", help="torch threads (default: 1)")
    a.add_argument("--device", default=DEFAULT_DEVICE, metavar="D", help=_DEVICE_HELP)
    a.add_argument("--json", action="store_true", help="print the summary as one JSON object")
    a.add_argument("--no-progress", action="store_true", help="no progress bars")


def _run_train_answers(args: argparse.Namespace) -> int:
    import torch

    from clevr_poc.perception.answer_training import AnswerTrainConfig, train_answers

    torch.set_num_threads(args.threads)
    config = AnswerTrainConfig(seed=args.seed, steps=args.steps, batch=args.batch, lr=args.lr,
                               warmup_steps=args.warmup_steps, k=args.k, min_ratio=args.min_ratio,
                               max_models=max(512, args.k), normalise=args.normalise,
                               checkpoint_every=args.checkpoint_every)
    result = train_answers(args.init, args.dataset, args.out, split=args.split, skip=args.skip, limit=args.limit,
                           config=config, camera_source=args.camera, progress=not args.no_progress,
                           log=lambda m: print(m, file=sys.stderr), stop_after=args.stop_after, device=args.device)
    summary = {"model": None if result.model is None else str(result.model), "step": result.step,
               "questions": result.questions, "counts": result.counts,
               "losses": [None if math.isnan(x) else x for x in result.losses],
               "seconds": round(result.seconds, 3), "solver_errors": result.solver_errors}
    if args.json:
        print(json.dumps(summary))
    elif result.model is None:
        print(f"stopped at step {result.step} / {args.steps} (state in {args.out}; run the same command to go on)")
    else:
        counts = ", ".join(f"{k} {v}" for k, v in result.counts.items())
        print(f"model written to {result.model} ({result.step} steps, {result.seconds:.1f} s; questions: {counts})")
    return 0


def _run_train(args: argparse.Namespace) -> int:
    from pathlib import Path

    import torch

    from clevr_poc.perception.perception_training import PARTS, TrainConfig, train

    torch.set_num_threads(args.threads or (2 if args.part == "all" else 1))
    overrides = {k: v for k, v in {
        "seed": args.seed, "detector_steps": args.detector_steps, "attribute_steps": args.attribute_steps,
        "detector_batch": args.detector_batch, "attribute_batch": args.attribute_batch,
        "detector_lr": args.detector_lr, "attribute_lr": args.attribute_lr,
        "checkpoint_every": args.checkpoint_every,
        "kinds": tuple(k.strip() for k in args.kinds.split(",") if k.strip()), "init": args.init,
        "exposure_jitter": args.exposure_jitter, "gamma_jitter": args.gamma_jitter,
    }.items() if v is not None}
    config = TrainConfig(**overrides)
    parts = PARTS if args.part == "all" else (args.part,)
    datasets = args.dataset[0] if len(args.dataset) == 1 else args.dataset
    splits = [name.strip() for name in args.split.split(",") if name.strip()]
    path = train(datasets, args.out, split=splits[0] if len(splits) == 1 else splits, train_config=config, parts=parts,
                 progress=not args.no_progress, limit=args.limit, stop_after=args.stop_after,
                 log=lambda m: print(m, file=sys.stderr), device=args.device)
    if path is None:
        print(f"{args.part}: stopped; the model is exported when both parts have finished "
              f"(checkpoints in {Path(args.out)}; run the same command to go on)")
    else:
        print(f"model written to {path}")
    return 0


def _run_evaluate(args: argparse.Namespace) -> int:
    import torch

    from clevr_poc.perception.evaluation import evaluate, format_report
    from clevr_poc.perception.perceiver import Perception

    torch.set_num_threads(args.threads)
    perception = Perception.from_pretrained(args.checkpoint, device=args.device)
    if args.score_threshold is not None:
        perception.score_threshold = args.score_threshold
    report = evaluate(perception, args.dataset, split=args.split, limit=args.limit, decode=not args.no_decode,
                      progress=not args.no_progress, camera_source=args.camera,
                      presupposition_k=args.presupposition_k)
    print(json.dumps(report, indent=None if args.json else 2) if args.json else format_report(report))
    return 0


_COMMANDS = {"train": _run_train, "train-answers": _run_train_answers, "evaluate": _run_evaluate}


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status (0 ok, 1 error, 2 usage)."""
    # OpenMP threads that spin while waiting make torch up to 10x slower on a loaded machine (measured
    # here: 20 s instead of 1.6 s per training step with 2 threads); must be set before torch loads.
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help(sys.stderr)
        return 2
    return run_guarded(
        with_checked_outputs(lambda a: _COMMANDS[a.command](a), args, folders=("out",)),
        interrupted="interrupted (resume by running the same command again)",
        missing_module=lambda exc: f"perception needs the [vision] extra (torch, torchvision, Pillow, tqdm): {exc}")
