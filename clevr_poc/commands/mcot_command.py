"""``python -m clevr_poc.mcot run|scienceqa|m3cot``: run a chat backend on ScienceQA / M3CoT (``run``: with the
images), or score outputs.

Examples::

    # run SmolLM2 offline on 20 ScienceQA test questions, QCM->ALE with 2 demonstrations (seed 3)
    python -m clevr_poc.mcot scienceqa --data path/to/scienceqa --limit 20 --output sqa.json
    # score an existing result file {"outputs": {qid: text}} with the official rule
    python -m clevr_poc.mcot scienceqa --data path/to/scienceqa --predictions sqa.json --explanations
    # run an OpenAI-compatible server on M3CoT with zero-shot CoT
    python -m clevr_poc.mcot m3cot --data test.jsonl --backend openai:MODEL@http://127.0.0.1:8000/v1 --prompt cot
    # score an M3CoT experiment file (id, choices, answer, domain, topic, messages)
    python -m clevr_poc.mcot m3cot --predictions direct.jsonl --rule official
    # run a vision-language model WITH the images (resumable --out, 4 requests at a time)
    python -m clevr_poc.mcot run --benchmark m3cot --data test.parquet --method cot \\
        --backend openai:MODEL@http://127.0.0.1:8000/v1 --out m3cot_cot.jsonl --workers 4
    python -m clevr_poc.mcot run --benchmark scienceqa --data path/to/scienceqa --method cot \\
        --backend transformers:Qwen/Qwen2-VL-2B-Instruct --device auto --out sqa_cot.json

A Markdown table goes to stdout, then the summary JSON as the last line. Errors are one line on stderr
(exit status 1); bad arguments exit with status 2.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

from clevr_poc._io import atomic_write_json, atomic_write_text
from clevr_poc.commands.main import run_parsed
from clevr_poc.commands.shared import (ArgumentParser, Subparsers, non_negative_int, positive_int, run_guarded,
                                       with_checked_outputs)
from clevr_poc.errors import FormatError
from clevr_poc.mcot.extraction import ExtractionMode, FailurePolicy
from clevr_poc.mcot.prompts import (M3COT_STRATEGIES, SCIENCEQA_DEFAULT_SEED, SCIENCEQA_DEFAULT_SHOTS,
                                    SCIENCEQA_FORMATS, SCIENCEQA_MAX_TOKENS)

if TYPE_CHECKING:
    from clevr_poc.llm.base import ChatBackend


def _common(parser: argparse.ArgumentParser, *, default_seed: int) -> None:
    parser.add_argument("--backend", default="local",
                        help="local | smollm2 | gguf:PATH | openai | openai:MODEL | openai:MODEL@URL (default local)")
    parser.add_argument("--predictions", type=Path, help="score this file of existing model outputs instead of "
                        "running a model")
    parser.add_argument("--output", type=Path, help="write (and resume) the model outputs here")
    parser.add_argument("--split", default="test", help="data split to run (default test); with --predictions, "
                        "M3CoT --data records of other splits are ignored")
    parser.add_argument("--limit", type=non_negative_int, help="only the first N items (of the split, or of the "
                        "predictions file)")
    parser.add_argument("--rule", choices=[m.value for m in ExtractionMode], default="official",
                        help="answer extraction: the official rule (default) or the robust one")
    parser.add_argument("--on-failure", choices=[p.value for p in FailurePolicy], default="wrong",
                        help="unparseable outputs count as wrong (default) or get a seeded random guess")
    parser.add_argument("--seed", type=int, default=default_seed,
                        help=f"seed of demonstrations and random guesses (default {default_seed})")
    parser.add_argument("--summary", type=Path, help="also write the summary JSON here")
    parser.add_argument("--markdown", type=Path, help="also write the Markdown table here")
    parser.add_argument("--name", help="model name in the tables (default: backend name or file name)")
    parser.add_argument("--timeout", type=float, default=60.0, help="HTTP timeout in seconds (openai backends)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")


#: ``run --method`` -> ScienceQA prompt format: answer only (QCM-A) or the paper's chain of thought
#: (QCM-ALE, answer then lecture and explanation, card §Method); desp-cot / ccot are M3CoT strategies.
SCIENCEQA_METHODS: dict[str, str] = {"direct": "QCM-A", "cot": "QCM-ALE"}
#: Most parallel requests ``run --workers`` accepts.
MAX_WORKERS = 256


def _add_run(sub: Subparsers) -> None:
    run = sub.add_parser("run", help="run a (vision-)language model on M3CoT or ScienceQA with the images",
                         description="Build the official prompts with the images, run them through --backend "
                                     "(resumable --out, progress, --workers at a time), write the official output "
                                     "format and score it. Parse failures are counted in the table and summary.")
    run.add_argument("--benchmark", choices=("m3cot", "scienceqa"), required=True)
    run.add_argument("--data", type=Path, required=True,
                     help="M3CoT: records (.jsonl / .parquet); ScienceQA: folder with problems.json (and "
                          "pid_splits.json, captions.json, images/<pid>/image.png) or problems.json")
    run.add_argument("--method", choices=M3COT_STRATEGIES, default="direct",
                     help="M3CoT strategy; ScienceQA: direct = QCM-A, cot = QCM-ALE (default direct)")
    run.add_argument("--backend", required=True,
                     help="openai:MODEL@URL (OpenAI, vLLM, Ollama, LM Studio), openai:MODEL, transformers:PATH_OR_ID, "
                          "local / gguf:PATH (text only: --images none or caption)")
    run.add_argument("--out", type=Path, required=True,
                     help="predictions file in the official format, rewritten as the run goes and resumed")
    run.add_argument("--images", choices=("send", "caption", "none"), default="send",
                     help="send the item's image (default); caption = ScienceQA's official caption as context "
                          "(text-only models); none = text only")
    run.add_argument("--image-dir", type=Path, help="image folder (default: images/ next to the data)")
    run.add_argument("--captions", type=Path, help="ScienceQA captions.json (default: next to problems.json)")
    run.add_argument("--pid-splits", type=Path, help="ScienceQA pid_splits.json (default: next to problems.json)")
    run.add_argument("--shots", type=non_negative_int, default=SCIENCEQA_DEFAULT_SHOTS,
                     help="ScienceQA demonstrations from train (default 2)")
    run.add_argument("--split", default="test", help="data split (default test)")
    run.add_argument("--limit", type=non_negative_int, help="only the first N items of the split")
    run.add_argument("--workers", type=positive_int, default=1, help="parallel requests (default 1)")
    run.add_argument("--max-tokens", type=positive_int, help="reply limit (default: M3CoT 512, ScienceQA 512)")
    run.add_argument("--device", default="auto", help="transformers backends: auto (CUDA when present), cpu, cuda")
    run.add_argument("--dtype", default="auto", choices=("auto", "float32", "bfloat16", "float16"),
                     help="transformers backends: auto = bf16/fp16 on CUDA, float32 on the CPU")
    run.add_argument("--rule", choices=[m.value for m in ExtractionMode], default="official")
    run.add_argument("--on-failure", choices=[p.value for p in FailurePolicy], default="wrong",
                     help="unparseable outputs count as wrong (default) or get a seeded random guess")
    run.add_argument("--seed", type=int, help="seed of demonstrations and guesses (default: ScienceQA 3, M3CoT 0)")
    run.add_argument("--timeout", type=float, default=60.0, help="HTTP timeout in seconds (openai backends)")
    run.add_argument("--summary", type=Path, help="also write the summary JSON here")
    run.add_argument("--markdown", type=Path, help="also write the Markdown table here")
    run.add_argument("--name", help="model name in the tables (default: the backend name)")
    run.add_argument("--no-progress", action="store_true", help="no progress bar")
    run.set_defaults(func=run_command)


def build_parser() -> argparse.ArgumentParser:
    parser = ArgumentParser(prog="python -m clevr_poc.mcot",
                                     description="ScienceQA and M3CoT harness: run a chat model or score outputs.")
    sub = parser.add_subparsers(dest="benchmark", metavar="BENCHMARK")
    _add_run(sub)

    sqa = sub.add_parser("scienceqa", help="ScienceQA (Lu et al. 2022)")
    sqa.add_argument("--data", type=Path, required=True,
                     help="folder with problems.json [pid_splits.json captions.json images/] or problems.json")
    sqa.add_argument("--pid-splits", type=Path, help="pid_splits.json (default: next to problems.json)")
    sqa.add_argument("--captions", type=Path, help="captions.json (default: next to problems.json)")
    sqa.add_argument("--prompt", default="QCM-ALE", help=f"prompt format: {', '.join(SCIENCEQA_FORMATS)}")
    sqa.add_argument("--shots", type=non_negative_int, default=SCIENCEQA_DEFAULT_SHOTS,
                     help="demonstrations from train (default 2)")
    sqa.add_argument("--use-caption", action="store_true", help="add the image caption to the context")
    sqa.add_argument("--max-tokens", type=positive_int, default=SCIENCEQA_MAX_TOKENS)
    sqa.add_argument("--explanations", action="store_true", help="also score explanations (BLEU-1/4, ROUGE-L)")
    sqa.add_argument("--similarity", action="store_true",
                     help="with --explanations: sentence similarity (all-MiniLM-L6-v2, needs sentence-transformers)")
    _common(sqa, default_seed=SCIENCEQA_DEFAULT_SEED)
    sqa.set_defaults(func=run_scienceqa_command)

    m3 = sub.add_parser("m3cot", help="M3CoT (Chen et al. 2024)")
    m3.add_argument("--data", type=Path, help="M3CoT records (.jsonl or .parquet); with --predictions: gold answers")
    m3.add_argument("--prompt", default="direct", help=f"strategy: {', '.join(M3COT_STRATEGIES)}")
    m3.add_argument("--max-tokens", type=positive_int, default=512)
    _common(m3, default_seed=0)
    m3.set_defaults(func=run_m3cot_command)
    return parser


def _finish(args: argparse.Namespace, summary: dict[str, Any], markdown: str) -> int:
    if args.summary is not None:
        atomic_write_json(args.summary, summary, indent=2)
    if args.markdown is not None:
        atomic_write_text(args.markdown, markdown)
    sys.stdout.write(markdown)
    sys.stdout.write(json.dumps(summary, ensure_ascii=False) + "\n")
    sys.stdout.flush()
    return 0


def run_scienceqa_command(args: argparse.Namespace) -> int:
    from clevr_poc.mcot.mcot_data import load_scienceqa
    from clevr_poc.mcot.harness import official_guess_rng, read_scienceqa_outputs, run_scienceqa, score_scienceqa
    from clevr_poc.mcot.text_metrics import load_similarity_model, scienceqa_accuracy, scienceqa_markdown

    dataset = load_scienceqa(args.data, pid_splits=args.pid_splits, captions=args.captions)
    if args.predictions is not None:
        outputs = read_scienceqa_outputs(args.predictions)
        if args.limit is not None:
            outputs = dict(list(outputs.items())[: args.limit])
        name = args.name or args.predictions.stem
        rng = None  # random guesses from random.Random(seed)
    else:
        from clevr_poc.llm import make_backend

        backend = make_backend(args.backend, timeout=args.timeout)
        result = run_scienceqa(dataset, backend, split=args.split, prompt_format=args.prompt, shots=args.shots,
                               seed=args.seed, use_caption=args.use_caption, limit=args.limit,
                               max_tokens=args.max_tokens, output_path=args.output, progress=not args.no_progress)
        outputs = result.outputs
        name = args.name or backend.name
        rng = official_guess_rng(dataset, args.shots, args.seed)  # guesses as the official runner draws them
    model = load_similarity_model() if args.explanations and args.similarity else None
    summary, items, scores = score_scienceqa(dataset, outputs, mode=args.rule, policy=args.on_failure,
                                             seed=args.seed, explanations=args.explanations,
                                             similarity_model=model, name=name, rng=rng)
    if args.predictions is None:
        summary["run"] = {"backend": name, "prompt": args.prompt, "shots": args.shots, "split": args.split,
                          "output": None if args.output is None else str(args.output)}
    columns = scienceqa_accuracy(dataset.problems, items)
    return _finish(args, summary, scienceqa_markdown(name, columns, summary["parse"], scores))


def run_m3cot_command(args: argparse.Namespace) -> int:
    from clevr_poc.mcot.mcot_data import load_m3cot, parse_m3cot_record
    from clevr_poc.mcot.harness import run_m3cot, score_m3cot
    from clevr_poc.mcot.text_metrics import m3cot_accuracy, m3cot_markdown

    gold = load_m3cot(args.data, split=args.split) if args.data is not None else None
    if args.predictions is not None:
        predictions = load_m3cot(args.predictions, require_messages=True)
        name = args.name or args.predictions.stem
    else:
        if gold is None:
            raise FormatError("--data is required to run a model (or give --predictions to score outputs)",
                              field="--data")
        from clevr_poc.llm import make_backend

        backend = make_backend(args.backend, timeout=args.timeout)
        rows = run_m3cot(gold, backend, strategy=args.prompt, limit=args.limit, max_tokens=args.max_tokens,
                         output_path=args.output, progress=not args.no_progress)
        predictions = [parse_m3cot_record(row, source="run", index=i, require_messages=True)
                       for i, row in enumerate(rows)]
        name = args.name or backend.name
    if args.limit is not None and args.predictions is not None:
        predictions = predictions[: args.limit]
    summary, items = score_m3cot(predictions, gold=gold, mode=args.rule, policy=args.on_failure, seed=args.seed,
                                 name=name)
    if args.predictions is None:
        summary["run"] = {"backend": name, "prompt": args.prompt, "split": args.split,
                          "output": None if args.output is None else str(args.output)}
    reference = {r.id: r for r in (gold or predictions)}
    accuracy = m3cot_accuracy(reference, items)
    return _finish(args, summary, m3cot_markdown(name, accuracy, summary["parse"]))


def run_command(args: argparse.Namespace) -> int:
    """``run``: build the prompts with images, run them, write ``--out``, score, print table + summary."""
    import time

    from clevr_poc.llm import make_backend

    if args.workers > MAX_WORKERS:
        raise FormatError(f"at most {MAX_WORKERS} parallel requests", field="--workers", value=args.workers)
    if args.images == "caption" and args.benchmark != "scienceqa":
        raise FormatError("'caption' needs a benchmark that ships captions (scienceqa)", field="--images",
                          value=args.images)
    if args.benchmark == "scienceqa" and args.method not in SCIENCEQA_METHODS:
        raise FormatError(f"--method for scienceqa is one of {list(SCIENCEQA_METHODS)} (desp-cot and ccot are "
                          "M3CoT strategies)", field="--method", value=args.method)
    backend = make_backend(args.backend, timeout=args.timeout, device=args.device, dtype=args.dtype)
    if args.images == "send" and getattr(backend, "supports_images", True) is False:
        raise FormatError("this backend reads text only: use --images none" + (" or caption" if args.benchmark ==
                          "scienceqa" else "") + ", or a vision-language backend", field="--backend", value=args.backend)
    name = args.name or backend.name
    started = time.perf_counter()
    if args.benchmark == "scienceqa":
        summary, markdown = _run_scienceqa(args, backend, name)
    else:
        summary, markdown = _run_m3cot(args, backend, name)
    seconds = time.perf_counter() - started
    summary["run"] = {"backend": name, "method": args.method, "images": args.images, "split": args.split,
                      "workers": args.workers, "output": str(args.out), "seconds": round(seconds, 3)}
    usage = getattr(backend, "usage", None)
    if isinstance(usage, dict):
        summary["run"]["usage"] = dict(usage)
    return _finish(args, summary, markdown)


def _run_scienceqa(args: argparse.Namespace, backend: "ChatBackend", name: str) -> tuple[dict[str, Any], str]:
    from clevr_poc.mcot.mcot_data import load_scienceqa
    from clevr_poc.mcot.harness import official_guess_rng, run_scienceqa, score_scienceqa
    from clevr_poc.mcot.text_metrics import scienceqa_accuracy, scienceqa_markdown

    seed = SCIENCEQA_DEFAULT_SEED if args.seed is None else args.seed
    dataset = load_scienceqa(args.data, pid_splits=args.pid_splits, captions=args.captions, image_dir=args.image_dir)
    result = run_scienceqa(dataset, backend, split=args.split, prompt_format=SCIENCEQA_METHODS[args.method],
                           shots=args.shots, seed=seed, limit=args.limit,
                           max_tokens=args.max_tokens or SCIENCEQA_MAX_TOKENS, output_path=args.out,
                           progress=not args.no_progress, images=args.images, workers=args.workers)
    summary, items, _ = score_scienceqa(dataset, result.outputs, mode=args.rule, policy=args.on_failure, seed=seed,
                                        name=name, rng=official_guess_rng(dataset, args.shots, seed))
    columns = scienceqa_accuracy(dataset.problems, items)
    return summary, scienceqa_markdown(name, columns, summary["parse"])


def _run_m3cot(args: argparse.Namespace, backend: "ChatBackend", name: str) -> tuple[dict[str, Any], str]:
    from clevr_poc.mcot.mcot_data import load_m3cot, parse_m3cot_record
    from clevr_poc.mcot.harness import run_m3cot, score_m3cot
    from clevr_poc.mcot.text_metrics import m3cot_accuracy, m3cot_markdown

    gold = load_m3cot(args.data, split=args.split, image_dir=args.image_dir)
    if args.limit is not None:  # items left out by --limit are not missing answers
        gold = gold[:args.limit]
    rows = run_m3cot(gold, backend, strategy=args.method, limit=args.limit, max_tokens=args.max_tokens or 512,
                     output_path=args.out, progress=not args.no_progress, images=args.images, workers=args.workers)
    predictions = [parse_m3cot_record(row, source=args.out, index=i, require_messages=True)
                   for i, row in enumerate(rows)]
    summary, items = score_m3cot(predictions, gold=gold, mode=args.rule, policy=args.on_failure,
                                 seed=0 if args.seed is None else args.seed, name=name)
    accuracy = m3cot_accuracy({r.id: r for r in gold}, items)
    return summary, m3cot_markdown(name, accuracy, summary["parse"])


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the exit status (0 ok, 1 error, 2 usage)."""
    return run_parsed(build_parser(), argv, lambda args: run_guarded(
        with_checked_outputs(args.func, args, files=("output", "out", "markdown")),
        interrupted="interrupted (partial results are kept in --output; run again to resume)"))
