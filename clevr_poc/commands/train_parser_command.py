"""``python -m clevr_poc.train_parser``: train the BiLSTM question parser (paper §4.1.2, Table 3).

::

    python -m clevr_poc.train_parser --dataset DIR --out PATH [--pretrain-pairs N] [--reinforce-steps K]
        [--reward exact|jaccard] [--seed S]

1. **Supervised pretraining** on N (question, ASP program) pairs drawn (``--seed``) from the train
   split (Adam, ``--lr`` 2e-3 with cosine decay, batch 32, ``--pretrain-steps`` 600 steps);
2. **REINFORCE** for K steps on the (question, answer) pairs of the whole train split, rewards from
   the Reasoner on the gold partial scene (``--reward`` exact or jaccard), moving-average baseline,
   per-sample advantages, entropy bonus, the supervised loss kept in (``--supervised-weight``),
   grammar-constrained sampling (see :mod:`clevr_poc.parsing.reinforce`);
3. after each phase: program accuracy and answer accuracy (exact, Jaccard) on ``--eval-split``.

PATH receives the parser (``config.json``, ``vocab.json``, ``weights.pt``; load with
``BiLSTMParser.from_pretrained(PATH)``), ``report.json`` (settings, metrics per phase, timings, the
REINFORCE curve) and, while training, ``checkpoints/state.pt`` (every ``--checkpoint-every`` steps;
a rerun with the same arguments resumes from it; removed at the end unless ``--keep-checkpoints``).

The vocabulary is built from the train split's questions. Torch runs on ``--threads`` threads
(default 2) with ``OMP_WAIT_POLICY=PASSIVE`` (set here unless already set: on a shared machine,
spinning OpenMP threads made every step ~9x slower in our measurements).

Errors (bad folder, bad split, incompatible checkpoint, ...) end with a one-line message and exit
status 1; bad arguments with exit status 2.
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # before torch starts its OpenMP pool

import argparse  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402
from typing import Sequence  # noqa: E402

from clevr_poc.commands.shared import (ArgumentParser, non_negative_float, non_negative_int, positive_float,  # noqa: E402
                            positive_int, run_guarded, with_checked_outputs)

__all__ = ["build_parser", "main"]


def build_parser() -> argparse.ArgumentParser:
    p = ArgumentParser(
        prog="python -m clevr_poc.train_parser",
        description="Train the BiLSTM seq2seq question parser (NS-VQA): supervised pretraining on N "
                    "(question, ASP) pairs, then REINFORCE on (question, answer) pairs.",
        epilog="example: python -m clevr_poc.train_parser --dataset clevr-poc --out runs/parser_bilstm "
               "--pretrain-pairs 1000 --reinforce-steps 200 --reward exact --seed 0",
    )
    p.add_argument("--dataset", required=True, metavar="DIR", help="dataset folder (ours or the official layout)")
    p.add_argument("--out", required=True, metavar="PATH", help="output folder (parser, report.json, checkpoints)")
    p.add_argument("--overwrite", action="store_true",
                   help="replace the parser in a non-empty --out (e.g. models/parser_bilstm): its weights, "
                        "vocabulary, report and model card; without it such a folder is refused (a folder "
                        "with an interrupted run's checkpoints/ is resumed)")
    p.add_argument("--pretrain-pairs", type=positive_int, default=1000, metavar="N",
                   help="(question, ASP) pairs from the train split for supervised pretraining (default 1000)")
    p.add_argument("--pretrain-steps", type=non_negative_int, default=600, metavar="S",
                   help="supervised Adam steps (default 600)")
    p.add_argument("--reinforce-steps", type=non_negative_int, default=0, metavar="K",
                   help="REINFORCE steps on (question, answer) pairs of the train split (default 0)")
    p.add_argument("--reward", choices=("exact", "jaccard"), default="exact",
                   help="REINFORCE reward: exact answer match (eq. 2) or Jaccard index (eq. 3)")
    p.add_argument("--seed", type=int, default=0, help="seed of the pair draw, initialisation, batches, sampling")
    p.add_argument("--batch-size", type=positive_int, default=32, help="questions per step (default 32; NS-VQA: 64)")
    p.add_argument("--lr", type=positive_float, default=2e-3,
                   help="pretraining learning rate, cosine-decayed to 2%% (default 2e-3; NS-VQA: 7e-4 constant)")
    p.add_argument("--rl-lr", type=positive_float, default=1e-5, help="REINFORCE learning rate (default 1e-5, NS-VQA)")
    p.add_argument("--entropy-weight", type=non_negative_float, default=0.01, help="entropy bonus (default 0.01)")
    p.add_argument("--supervised-weight", type=non_negative_float, default=1.0,
                   help="weight of the supervised loss during REINFORCE (default 1; 0 = pure REINFORCE)")
    p.add_argument("--advantage", choices=("sample", "batch"), default="sample",
                   help="per-sample advantage r_i - b (default) or NS-VQA's batch-mean advantage")
    p.add_argument("--baseline-decay", type=non_negative_float, default=0.9, help="moving-average baseline decay")
    p.add_argument("--baseline-init", choices=("first", "zero"), default="first",
                   help="baseline starts at the first batch's mean reward (default) or at 0 (NS-VQA)")
    p.add_argument("--unmasked-loss", action="store_true",
                   help="pretrain with a softmax over every token, as NS-VQA (ablation; needed before "
                        "--unconstrained REINFORCE, which samples from that softmax)")
    p.add_argument("--unconstrained", action="store_true",
                   help="sample REINFORCE programs without the grammar (ablation; invalid programs get reward 0)")
    p.add_argument("--eval-split", default="test", help="split evaluated after each phase (default test)")
    p.add_argument("--eval-limit", type=positive_int, default=None, metavar="M",
                   help="evaluate on the first M questions of the split only")
    p.add_argument("--word-vec-dim", type=positive_int, default=300, help="word vector size (default 300, NS-VQA)")
    p.add_argument("--hidden-size", type=positive_int, default=256,
                   help="encoder LSTM units per direction (default 256, NS-VQA)")
    p.add_argument("--decoder-hidden", type=positive_int, default=256,
                   help="decoder LSTM units (default 256; NS-VQA: 512)")
    p.add_argument("--init", metavar="PATH", default=None,
                   help="start from a trained parser (its vocabulary and sizes), e.g. to run REINFORCE only "
                        "with --pretrain-steps 0")
    p.add_argument("--dropout", type=non_negative_float, default=0.2,
                   help="dropout on word vectors, between LSTM layers and before the output (default 0.2; NS-VQA: 0)")
    p.add_argument("--no-copy", action="store_true",
                   help="plain NS-VQA decoder without the copy distribution (ablation)")
    p.add_argument("--checkpoint-every", type=positive_int, default=50, metavar="STEPS")
    p.add_argument("--keep-checkpoints", action="store_true", help="keep checkpoints/ after training")
    p.add_argument("--save-pretrained", action="store_true",
                   help="also save the parser after pretraining in PATH/pretrained/")
    p.add_argument("--fp32", action="store_true", help="save float32 weights (default float16)")
    p.add_argument("--threads", type=positive_int, default=2, help="torch CPU threads (default 2)")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")
    p.add_argument("--json", action="store_true", help="print the final report as JSON")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status (0 ok, 1 error, 2 usage)."""
    args = build_parser().parse_args(argv)

    def train() -> int:
        from clevr_poc.parsing.training_run import TrainingRun, settings_from_args

        report = TrainingRun(settings_from_args(args), progress=not args.no_progress,
                             log=lambda line: print(line, file=sys.stderr, flush=True)).run()
        if args.json:
            print(json.dumps(report, indent=2))
        return 0

    def checked_train() -> int:
        from clevr_poc.parsing.checkpoint_folder import prepare_checkpoint_folder

        removed = prepare_checkpoint_folder(args.out, overwrite=args.overwrite)
        if removed:
            print(f"--overwrite: removed {', '.join(removed)} from {args.out}", file=sys.stderr)
        return with_checked_outputs(lambda _: train(), args, folders=("out",))()

    return run_guarded(checked_train,
                       interrupted="interrupted (rerun the same command to resume from the last checkpoint)",
                       missing_module=lambda exc: f"training the parser needs {exc.name} (pip install '.[vision]' in the clevr_poc folder)")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
