"""The training run behind ``python -m clevr_poc.train_parser``: pretraining, REINFORCE, evaluation,
checkpoints and resume (see :mod:`clevr_poc.train_parser` for the command line)."""

from __future__ import annotations

import random
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable

import torch

from clevr_poc._io import atomic_open, atomic_write_json
from clevr_poc.errors import FormatError
from clevr_poc.parsing.checkpoint_folder import remove_stale_cards
from clevr_poc.parsing.reinforce import ReinforceSettings, ReinforceState, reinforce
from clevr_poc.parsing.seq2seq import BiLSTMParser, ParserConfig
from clevr_poc.parsing.supervised_training import Evaluation, draw_pairs, evaluate, load_pairs, pretrain
from clevr_poc.parsing.vocabulary import QuestionVocabulary
from clevr_poc.reasoning import Reasoner

__all__ = ["TrainSettings", "TrainingRun", "settings_from_args"]

CHECKPOINT = Path("checkpoints") / "state.pt"
REPORT = "report.json"


@dataclass(frozen=True)
class TrainSettings:
    """Everything that determines a training run (see ``python -m clevr_poc.train_parser --help``)."""

    dataset: str
    out: str
    pretrain_pairs: int = 1000
    pretrain_steps: int = 600
    reinforce_steps: int = 0
    reward: str = "exact"
    seed: int = 0
    batch_size: int = 32
    lr: float = 2e-3
    rl_lr: float = 1e-5
    entropy_weight: float = 0.01
    supervised_weight: float = 1.0
    advantage: str = "sample"
    baseline_decay: float = 0.9
    baseline_init: str = "first"
    constrained: bool = True
    eval_split: str = "test"
    eval_limit: int | None = None
    word_vec_dim: int = 300
    hidden_size: int = 256
    decoder_hidden: int = 256
    copy: bool = True
    dropout: float = 0.2
    masked_loss: bool = True
    init: str | None = None
    checkpoint_every: int = 50
    keep_checkpoints: bool = False
    save_pretrained: bool = False
    fp16: bool = True
    threads: int = 2

    def identity(self) -> dict[str, Any]:
        """The settings a checkpoint must share to be resumed (not: output options, threads, eval)."""
        skip = {"out", "checkpoint_every", "keep_checkpoints", "save_pretrained", "fp16", "threads", "eval_split",
                "eval_limit"}
        data = {k: v for k, v in asdict(self).items() if k not in skip}
        data["dataset"] = str(Path(self.dataset).resolve())
        if self.init is not None:
            data["init"] = str(Path(self.init).resolve())
        return data


def settings_from_args(args: Any) -> TrainSettings:
    """:class:`TrainSettings` from the parsed command line."""
    return TrainSettings(
        dataset=args.dataset, out=args.out, pretrain_pairs=args.pretrain_pairs, pretrain_steps=args.pretrain_steps,
        reinforce_steps=args.reinforce_steps, reward=args.reward, seed=args.seed, batch_size=args.batch_size,
        lr=args.lr, rl_lr=args.rl_lr, entropy_weight=args.entropy_weight, supervised_weight=args.supervised_weight,
        advantage=args.advantage, baseline_decay=args.baseline_decay, baseline_init=args.baseline_init,
        constrained=not args.unconstrained, save_pretrained=args.save_pretrained,
        eval_split=args.eval_split, eval_limit=args.eval_limit, word_vec_dim=args.word_vec_dim,
        hidden_size=args.hidden_size, decoder_hidden=args.decoder_hidden, copy=not args.no_copy, init=args.init,
        dropout=args.dropout, masked_loss=not args.unmasked_loss,
        checkpoint_every=args.checkpoint_every, keep_checkpoints=args.keep_checkpoints, fp16=not args.fp32,
        threads=args.threads,
    )


class TrainingRun:
    """One training run; :meth:`run` returns the report (also written to ``<out>/report.json``).

    Args:
        settings: :class:`TrainSettings`.
        progress: tqdm bars.
        log: a function receiving one-line progress messages.
    """

    def __init__(self, settings: TrainSettings, *, progress: bool = True,
                 log: Callable[[str], None] = lambda line: None) -> None:
        self.settings = settings
        self.progress = progress
        self.log = log
        self.out = Path(settings.out)
        self.reasoner = Reasoner()

    # ------------------------------------------------------------------ checkpoints
    def _save_checkpoint(self, parser: BiLSTMParser, optimizer: torch.optim.Optimizer, phase: str, step: int,
                         report: dict, rl_state: ReinforceState | None = None) -> None:
        path = self.out / CHECKPOINT
        path.parent.mkdir(parents=True, exist_ok=True)
        state = {
            "identity": self.settings.identity(), "phase": phase, "step": step,
            "model": parser.model.state_dict(), "optimizer": optimizer.state_dict(),
            "vocabulary": list(parser.vocabulary.words), "report": report,
            "rl_state": None if rl_state is None else rl_state.to_json(),
            "torch_rng": torch.get_rng_state(),
        }
        with atomic_open(path) as handle:  # temp file, fsync, rename (clevr_poc._io)
            torch.save(state, handle)

    def _load_checkpoint(self) -> dict | None:
        path = self.out / CHECKPOINT
        if not path.is_file():
            return None
        try:
            state = torch.load(path, map_location="cpu", weights_only=False)
        except Exception as exc:
            raise FormatError(f"cannot read the checkpoint ({exc.__class__.__name__}); delete it to start over",
                              source=path) from None
        if state.get("identity") != self.settings.identity():
            theirs, ours = state.get("identity") or {}, self.settings.identity()
            differ = sorted(k for k in set(theirs) | set(ours) if theirs.get(k) != ours.get(k))
            raise FormatError(f"the checkpoint was made with other settings ({', '.join(differ)}); use another "
                              f"--out or delete {path}", source=path)
        return state

    # ------------------------------------------------------------------ the run
    def run(self) -> dict:
        s = self.settings
        torch.set_num_threads(s.threads)
        log = self.log
        log(f"loading {s.dataset}")
        train = _train_pairs(s.dataset)
        pretrain_pairs = draw_pairs(train, s.pretrain_pairs, s.seed)
        evaluation_pairs = load_pairs(s.dataset, s.eval_split)
        if s.eval_limit is not None:
            evaluation_pairs = evaluation_pairs[:s.eval_limit]
        if not evaluation_pairs:
            raise FormatError("no questions to evaluate on", field="eval_split", value=s.eval_split)

        checkpoint = self._load_checkpoint()
        torch.manual_seed(s.seed)
        random.seed(s.seed)
        if s.init is not None:  # start from a trained parser (its vocabulary and sizes)
            parser = BiLSTMParser.from_pretrained(s.init)
            log(f"starting from the parser in {s.init}")
        else:
            if checkpoint is not None:
                vocabulary = QuestionVocabulary(tuple(checkpoint["vocabulary"]))
            else:
                vocabulary = QuestionVocabulary.build(p.question for p in train)
            parser = BiLSTMParser(vocabulary, ParserConfig(
                word_vec_dim=s.word_vec_dim, hidden_size=s.hidden_size, decoder_hidden_size=s.decoder_hidden,
                copy=s.copy, dropout=s.dropout))
        if checkpoint is not None:
            log(f"resuming from {self.out / CHECKPOINT} ({checkpoint['phase']}, step {checkpoint['step']})")
        report: dict[str, Any] = {
            "settings": {k: v for k, v in asdict(s).items()},
            "dataset": {"train_questions": len(train), "pretrain_pairs": len(pretrain_pairs),
                        "eval_split": s.eval_split, "eval_questions": len(evaluation_pairs)},
            "model": {"parameters": parser.num_parameters(), "question_words": len(parser.vocabulary)},
            "phases": {},
        }
        phase, step = "pretrain", 0
        if checkpoint is not None:
            parser.model.load_state_dict(checkpoint["model"])
            report = checkpoint["report"]
            phase, step = checkpoint["phase"], checkpoint["step"]
            torch.set_rng_state(checkpoint["torch_rng"])

        # ---------------------------------------------------------- phase 1: supervised pretraining
        if phase == "pretrain":
            optimizer = torch.optim.Adam(parser.model.parameters(), lr=s.lr)
            if checkpoint is not None and checkpoint["phase"] == "pretrain":
                optimizer.load_state_dict(checkpoint["optimizer"])
            timing = report.setdefault("timing", {}).setdefault("pretrain", {"wall_s": 0.0, "cpu_s": 0.0})
            clock = _Clock(timing)

            def on_step(done: int, loss: float) -> None:
                if done % s.checkpoint_every == 0 and done < s.pretrain_steps:
                    clock.update()
                    self._save_checkpoint(parser, optimizer, "pretrain", done, report)

            log(f"pretraining on {len(pretrain_pairs)} pairs for {s.pretrain_steps} steps (from step {step})")
            loss = pretrain(parser, pretrain_pairs, steps=s.pretrain_steps, optimizer=optimizer,
                            batch_size=s.batch_size, seed=s.seed, start_step=step, lr=s.lr,
                            masked=s.masked_loss, on_step=on_step,
                            progress=self.progress) if step < s.pretrain_steps else float("nan")
            clock.update()
            result = evaluate(parser, evaluation_pairs, reasoner=self.reasoner)
            report["phases"]["pretrain"] = {**result.to_json(), "final_loss": loss}
            log(_line("after pretraining", result, timing))
            if s.save_pretrained:
                parser.save_pretrained(self.out / "pretrained", fp16=s.fp16)
            phase, step = "reinforce", 0
            self._save_checkpoint(parser, optimizer, phase, step, report, ReinforceState())
            checkpoint = None

        # ---------------------------------------------------------- phase 2: REINFORCE
        optimizer = None
        if phase == "reinforce" and s.reinforce_steps > 0:
            settings = ReinforceSettings(
                steps=s.reinforce_steps, batch_size=s.batch_size, reward=s.reward, baseline_decay=s.baseline_decay,
                advantage=s.advantage, entropy_weight=s.entropy_weight, supervised_weight=s.supervised_weight,
                constrained=s.constrained, baseline_init=s.baseline_init)
            optimizer = torch.optim.Adam(parser.model.parameters(), lr=s.rl_lr)
            rl_state = ReinforceState()
            if checkpoint is not None:
                if checkpoint["step"] > 0:
                    optimizer.load_state_dict(checkpoint["optimizer"])
                rl_state = ReinforceState.from_json(checkpoint["rl_state"] or {"step": 0, "baseline": 0.0})
            timing = report.setdefault("timing", {}).setdefault("reinforce", {"wall_s": 0.0, "cpu_s": 0.0})
            clock = _Clock(timing)

            def on_rl_step(state: ReinforceState) -> None:
                if state.step % s.checkpoint_every == 0 and state.step < s.reinforce_steps:
                    clock.update()
                    report["reinforce_history"] = state.history
                    self._save_checkpoint(parser, optimizer, "reinforce", state.step, report, state)

            log(f"REINFORCE on {len(train)} (question, answer) pairs for {s.reinforce_steps} steps "
                f"(from step {rl_state.step}; reward {s.reward})")
            rl_state = reinforce(parser, train, pretrain_pairs if s.supervised_weight > 0 else [], settings,
                                 optimizer=optimizer, state=rl_state, seed=s.seed, reasoner=self.reasoner,
                                 on_step=on_rl_step, progress=self.progress)
            clock.update()
            report["reinforce_history"] = rl_state.history
            result = evaluate(parser, evaluation_pairs, reasoner=self.reasoner)
            report["phases"]["reinforce"] = result.to_json()
            log(_line("after REINFORCE", result, timing))
        if optimizer is None:
            optimizer = torch.optim.Adam(parser.model.parameters(), lr=s.rl_lr)

        if phase != "done" and s.keep_checkpoints:
            self._save_checkpoint(parser, optimizer, "done", 0, report)
        parser.save_pretrained(self.out, fp16=s.fp16)
        atomic_write_json(self.out / REPORT, report, indent=2)
        for name in remove_stale_cards(self.out):  # they described the parser these weights replaced
            log(f"removed the stale {name} of the parser this run replaced")
        if not s.keep_checkpoints:
            (self.out / CHECKPOINT).unlink(missing_ok=True)
            try:
                (self.out / CHECKPOINT).parent.rmdir()
            except OSError:
                pass
        log(f"parser written to {self.out}")
        return report


#: The command that makes a dataset with a train split (the hint when a dataset has none).
MAKE_TRAIN_SPLIT = ("python -m clevr_poc generate --out DIR --environments 30 --scenes-per-environment 70 --seed 0 "
                    "--splits train=0.8,test=0.2")


def _train_pairs(dataset: str) -> list:
    """The train split's pairs; a dataset without one (the demo's has only ``test``) gets a hint."""
    try:
        return load_pairs(dataset, "train")
    except FormatError as exc:
        if exc.field != "split":
            raise
        raise FormatError(f"{exc.message}; the parser trains on a 'train' split: make a dataset with one, e.g. "
                          f"{MAKE_TRAIN_SPLIT}", source=exc.source, field="split", value="train") from None


class _Clock:
    """Accumulates wall-clock and process CPU seconds into a report dict (survives resumes)."""

    def __init__(self, into: dict) -> None:
        self.into = into
        self.wall = time.perf_counter()
        self.cpu = time.process_time()

    def update(self) -> None:
        wall, cpu = time.perf_counter(), time.process_time()
        self.into["wall_s"] = round(self.into["wall_s"] + wall - self.wall, 1)
        self.into["cpu_s"] = round(self.into["cpu_s"] + cpu - self.cpu, 1)
        self.wall, self.cpu = wall, cpu


def _line(what: str, result: Evaluation, timing: dict) -> str:
    return (f"{what}: program accuracy literal {result.program_accuracy:.4f}, semantic "
            f"{result.semantic_program_accuracy:.4f}, exact {result.exact_accuracy:.4f}, "
            f"Jaccard {result.jaccard:.4f} on {result.questions} questions "
            f"(training {timing['wall_s']:.0f} s wall, {timing['cpu_s']:.0f} s CPU)")
