"""Learning from answers alone (issue #24, item 4): what answer-only fine-tuning adds to an attribute
network trained on a small labelled share, against the same budget of labelled fine-tuning.

Stages (each writes ``WORK/<stage>/perception.pt`` and is skipped when that file exists, so a killed run
resumes; ``WORK/summary.json`` collects the figures):

1. ``base``: the shipped model's detector (``models/perception``) with its attribute network
   re-initialised and trained from scratch on the first ``--labelled`` images of the train split (scene
   labels: boxes, attributes, positions), ``--base-steps`` steps (``perception_training.train_attributes``).
2. ``answers``: (i) ``base`` + answer-only fine-tuning (``python -m clevr_poc.perception train-answers``'s
   code) on the *other* train questions: (image, environment, question, gold answer) only, ``--steps``
   steps of ``--batch`` questions.
3. ``labelled``: (ii) ``base`` + labelled fine-tuning on the same labelled images, the same number of
   steps (``--batch-objects`` objects per step) and learning rate.
4. ``labelled-wall``: (ii') the same, with as many steps as fit in the wall time stage 2 took.

Each model is then measured on the held-out test split (``clevr_poc.perception.evaluation.evaluate``:
attribute/region accuracy of matched objects and answers from pixels, gold ASP query, exact and Jaccard,
argmax and constraint-aware MAP decoding). Wall and CPU seconds (``time.process_time``) and the load
average are recorded per stage. Usage::

    python benchmarks/answer_only_training.py --dataset DIR --work DIR [--labelled 10] [--base-steps 400]
        [--steps 100] [--batch 8] [--lr 5e-4] [--k 16] [--seed 0] [--threads 1]
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import argparse  # noqa: E402
import json  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
SHIPPED = ROOT / "models" / "perception"


def _load() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def _timed(fn):
    wall, cpu, load = time.perf_counter(), time.process_time(), _load()
    value = fn()
    return value, {"wall_s": round(time.perf_counter() - wall, 1), "cpu_s": round(time.process_time() - cpu, 1),
                   "load_before": load, "load_after": _load()}


def _labelled(dataset: str, work: Path, name: str, *, labelled: int, steps: int, batch: int, lr: float, seed: int,
              init: Path | None, warmup: int) -> Path:
    """Train the attribute network on the first ``labelled`` train images (from scratch, or from ``init``)
    and export it with the shipped detector."""
    from clevr_poc.perception.model_file import read_model_file
    from clevr_poc.perception.models import ModelConfig
    from clevr_poc.perception.perception_training import TrainConfig, TrainingData, export_model, train_attributes

    shipped = read_model_file(SHIPPED)
    model_config = ModelConfig.from_json(shipped["model_config"])
    out = work / name
    out.mkdir(parents=True, exist_ok=True)
    config = TrainConfig(seed=seed, attribute_steps=steps, attribute_batch=batch, attribute_lr=lr, warmup_steps=warmup,
                         checkpoint_every=max(1, steps), kinds=("incomplete",),
                         init=None if init is None else str(init / "perception.pt"))
    data = TrainingData.load(dataset, "train", model_config, kinds=("incomplete",), limit=labelled)
    state = train_attributes(data, out, config, model_config, progress=False, log=lambda m: None)
    detector = {"model": shipped["detector"], "seconds": 0.0, "losses": [], "images": None}
    export_model(out, model_config, config, dataset=dataset, split=f"train[:{labelled}]", detector_state=detector,
                 attribute_state=state)
    return out


def _evaluate(model: Path, dataset: str) -> dict:
    from clevr_poc.perception.evaluation import evaluate
    from clevr_poc.perception.perceiver import Perception

    report = evaluate(Perception.from_pretrained(model, device="cpu"), dataset, split="test", progress=False)
    out = {"images": report["images"]}
    for decoding in ("argmax", "constraints"):
        r = report[decoding]
        out[decoding] = {"attributes": r["attributes"], "region": r.get("region"), "answers": r.get("answers"),
                         "answers_jaccard": r.get("answers_jaccard"), "scene_exact": r.get("scene_exact")}
    return out


def main() -> int:
    import torch

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", required=True)
    parser.add_argument("--work", required=True, type=Path)
    parser.add_argument("--labelled", type=int, default=10, help="labelled train images (default 10: 10 %% of 96)")
    parser.add_argument("--base-steps", type=int, default=400)
    parser.add_argument("--base-lr", type=float, default=2e-3)
    parser.add_argument("--steps", type=int, default=100, help="fine-tuning steps of (i) and (ii)")
    parser.add_argument("--batch", type=int, default=8, help="questions per answer-only step")
    parser.add_argument("--batch-objects", type=int, default=64, help="objects per labelled step")
    parser.add_argument("--lr", type=float, default=5e-4, help="peak learning rate of both fine-tunings")
    parser.add_argument("--k", type=int, default=16)
    parser.add_argument("--normalise", action="store_true")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--skip-wall", action="store_true", help="no wall-matched labelled run")
    parser.add_argument("--skip-labelled", action="store_true", help="no labelled fine-tuning (variants of (i))")
    parser.add_argument("--base", type=Path, default=None,
                        help="reuse the base model of an earlier run (its folder) instead of training one")
    parser.add_argument("--also-test", default=None, metavar="DIR",
                        help="also measure every model on the test split of this dataset (more held-out questions)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    work: Path = args.work
    work.mkdir(parents=True, exist_ok=True)
    summary_path = work / "summary.json"
    summary = json.loads(summary_path.read_text()) if summary_path.exists() else {"stages": {}, "test": {}}
    summary["settings"] = {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()}

    def save() -> None:
        summary_path.write_text(json.dumps(summary, indent=2))

    def stage(name: str, fn) -> Path:
        if not (work / name / "perception.pt").exists():
            path, timing = _timed(fn)
            summary["stages"][name] = timing
            save()
            print(f"{name}: {timing}", flush=True)
        return work / name

    base = args.base if args.base is not None else stage("base", lambda: _labelled(args.dataset, work, "base", labelled=args.labelled, steps=args.base_steps,
                                           batch=args.batch_objects, lr=args.base_lr, seed=args.seed, init=None,
                                           warmup=min(100, args.base_steps // 10)))

    def answers() -> Path:
        from clevr_poc.perception.answer_training import AnswerTrainConfig, train_answers

        config = AnswerTrainConfig(seed=args.seed, steps=args.steps, batch=args.batch, lr=args.lr, warmup_steps=10,
                                   k=args.k, max_models=max(512, args.k), normalise=args.normalise,
                                   checkpoint_every=max(1, args.steps // 4))
        result = train_answers(base / "perception.pt", args.dataset, work / "answers", split="train",
                               skip=args.labelled, config=config, progress=False, log=lambda m: print(m, flush=True))
        summary["answer_training"] = {"counts": result.counts, "losses": result.losses, "questions": result.questions,
                                      "solver_errors": result.solver_errors, "train_seconds": round(result.seconds, 1)}
        return work / "answers"

    stage("answers", answers)
    names = ["answers"] if args.base is not None else ["base", "answers"]
    if not args.skip_labelled:
        stage("labelled", lambda: _labelled(args.dataset, work, "labelled", labelled=args.labelled, steps=args.steps,
                                            batch=args.batch_objects, lr=args.lr, seed=args.seed + 1, init=base,
                                            warmup=10))
        names.append("labelled")
    if not args.skip_wall and not args.skip_labelled:
        per_step = summary["stages"]["labelled"]["wall_s"] / args.steps
        wall_steps = max(args.steps, int(summary["stages"]["answers"]["wall_s"] / max(per_step, 1e-3)))
        summary["labelled_wall_steps"] = wall_steps
        stage("labelled-wall", lambda: _labelled(args.dataset, work, "labelled-wall", labelled=args.labelled,
                                                 steps=wall_steps, batch=args.batch_objects, lr=args.lr,
                                                 seed=args.seed + 1, init=base, warmup=10))
        names.append("labelled-wall")
    tests = [("test", args.dataset)] + ([("also_test", args.also_test)] if args.also_test else [])
    for key, folder in tests:
        summary.setdefault(key, {})
        for name in names:
            model = (args.base if name == "base" and args.base is not None else work / name)
            if name not in summary[key]:
                result, timing = _timed(lambda: _evaluate(model, folder))
                summary[key][name] = {**result, "evaluate": timing}
                save()
            t = summary[key][name]["constraints"]
            a = summary[key][name]["argmax"]
            print(f"{key} {name:>14} ({summary[key][name]['images']} images): answers exact {t['answers']:.4f} "
                  f"Jaccard {t['answers_jaccard']:.4f} | attributes {json.dumps(t['attributes'])} region {t['region']} "
                  f"| argmax answers {a['answers']:.4f}", flush=True)
    save()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
