"""The local transformers VLM backend, offline, with a tiny random Qwen2-VL built from a config and loaded back
with the real ``from_pretrained``: a rendered CLEVR-POC image, ``evaluate --model vlm`` and an M3CoT item."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("PIL")

from clevr_poc.llm.base import LLMBackendError  # noqa: E402
from clevr_poc.llm.images import text_part, user_message  # noqa: E402

FIXTURES = Path(__file__).parent / "fixtures"
CLEVR_IMAGE = FIXTURES / "pipeline" / "image.png"
DATASET = FIXTURES / "perception" / "dataset"


@pytest.fixture(scope="module")
def tiny_vlm(tmp_path_factory, monkeypatch_module):
    import torch

    from clevr_poc.llm.tiny_vlm import build_tiny_vlm

    torch.set_num_threads(1)
    return build_tiny_vlm(tmp_path_factory.mktemp("tiny_vlm"))


@pytest.fixture(scope="module")
def monkeypatch_module():
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HF_HUB_OFFLINE", "1")
        patch.setenv("TRANSFORMERS_OFFLINE", "1")
        yield patch


@pytest.fixture(scope="module")
def backend(tiny_vlm):
    from clevr_poc.llm.transformers_backend import TransformersVLMBackend

    return TransformersVLMBackend(tiny_vlm, device="auto")


def test_the_tiny_model_folder_loads_with_the_auto_classes(tiny_vlm):
    from transformers import AutoModelForImageTextToText, AutoProcessor

    config = json.loads((tiny_vlm / "config.json").read_text())
    assert config["model_type"] == "qwen2_vl" and config["text_config"]["hidden_size"] == 32
    assert type(AutoProcessor.from_pretrained(tiny_vlm)).__name__ == "Qwen2VLProcessor"
    model = AutoModelForImageTextToText.from_pretrained(tiny_vlm)
    assert type(model).__name__ == "Qwen2VLForConditionalGeneration"
    assert sum(p.numel() for p in model.parameters()) < 200_000


def test_a_rendered_clevr_poc_image_goes_through_the_model(backend):
    import torch

    assert backend.device == ("cuda" if torch.cuda.is_available() else "cpu")
    assert backend.dtype == (torch.float32 if backend.device == "cpu" else backend.dtype)
    text_only = backend.complete([{"role": "user", "content": [text_part("What color is the cube?")]}],
                                 max_tokens=4)
    before = dict(backend.usage)
    reply = backend.complete([user_message("What color is the cube?", [CLEVR_IMAGE])], max_tokens=6)
    assert isinstance(reply, str) and isinstance(text_only, str)
    # 320x240 -> resized within 64 merged patches to 168x252 -> 12x18 patches of 14 px -> 54 tokens after the
    # 2x2 merge, plus <|vision_start|> and <|vision_end|>
    image_tokens = (backend.usage["prompt_tokens"] - before["prompt_tokens"]) - before["prompt_tokens"]
    assert image_tokens == 54 + 2
    assert backend.usage["requests"] == 2 and backend.usage["completion_tokens"] <= 4 + 6
    # greedy decoding is deterministic
    assert backend.complete([user_message("What color is the cube?", [CLEVR_IMAGE])], max_tokens=6) == reply


def test_device_and_dtype_rules(monkeypatch):
    import torch

    from clevr_poc.llm.transformers_backend import resolve_device, resolve_dtype

    assert resolve_dtype("auto", "cpu") == torch.float32 and resolve_dtype("float16", "cpu") == torch.float16
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *a, **k: True)
    assert resolve_dtype("auto", "cuda") == torch.bfloat16
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *a, **k: False)
    assert resolve_dtype("auto", "cuda:0") == torch.float16
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert resolve_device("auto") == "cpu"
    with pytest.raises(LLMBackendError, match="no CUDA device"):
        resolve_device("cuda")
    with pytest.raises(LLMBackendError, match="unknown device"):
        resolve_device("tpu")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert resolve_device("auto") == "cuda"
    with pytest.raises(LLMBackendError, match="unknown dtype"):
        resolve_dtype("int8", "cpu")


def test_a_missing_model_is_a_typed_error(tmp_path, monkeypatch):
    from clevr_poc.llm.transformers_backend import TransformersVLMBackend

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(LLMBackendError, match="cannot load the model"):
        TransformersVLMBackend(tmp_path / "nothing", device="cpu").complete([{"role": "user", "content": "hi"}])


def test_evaluate_model_vlm_runs_the_tiny_model_on_rendered_images(tiny_vlm, tmp_path, capsys):
    from clevr_poc.commands.main import main

    out = tmp_path / "results"
    assert main(["evaluate", "--dataset", str(DATASET), "--split", "test", "--model", "vlm", "--prompt",
                 "list-then-reason", "--max-tokens", "8", "--backend", f"transformers:{tiny_vlm}", "--device", "cpu",
                 "--out", str(out), "--no-plots"]) == 0
    printed = capsys.readouterr().out
    summary = json.loads(printed.strip().splitlines()[-1])
    # random weights never write a ###{...}### block: both questions are parse failures, scored wrong
    assert summary["n"] == 2 and summary["exact_accuracy"] == 0.0
    assert "parse failures: 2 of 2 (scored as wrong)" in printed
    assert "listed scenes: 0 of 2 parsed (2 listing failures)" in printed
    report = json.loads((out / "report.json").read_text())
    assert report["extra"]["usage"]["requests"] == 2 and report["extra"]["prompt"] == "list-then-reason"
    assert report["extra"]["scene_listing"]["failure_reasons"] == {"no <objects>...</objects> block": 2}
    assert (out / "table2.md").is_file()


def test_an_m3cot_fixture_item_with_its_image_runs_on_the_tiny_model(backend):
    from clevr_poc.mcot.mcot_data import load_m3cot, parse_m3cot_record
    from clevr_poc.mcot.harness import run_m3cot, score_m3cot

    records = load_m3cot(FIXTURES / "mcot" / "m3cot_data.jsonl", split="test")
    assert records[0].image_path == FIXTURES / "mcot" / "images" / "sci-1.png"
    before = backend.usage["requests"]
    rows = run_m3cot(records, backend, strategy="direct", limit=1, max_tokens=5, progress=False, images="send")
    assert backend.usage["requests"] == before + 1
    assert [row["id"] for row in rows] == ["sci-1"] and rows[0]["images"] == "send" and len(rows[0]["messages"]) == 2
    summary, items = score_m3cot([parse_m3cot_record(rows[0], require_messages=True)], gold=records[:1])
    assert summary["items"] == 1 and summary["parse"]["parse_failures"] + sum(i.parsed for i in items) == 1


def test_a_tiny_llava_reads_the_clevr_poc_image_too(tmp_path):
    from clevr_poc.llm.base import validate_messages
    from clevr_poc.llm.tiny_vlm import build_tiny_vlm
    from clevr_poc.llm.transformers_backend import TransformersVLMBackend, processor_messages

    folder = build_tiny_vlm(tmp_path / "llava", family="llava")
    assert json.loads((folder / "config.json").read_text())["model_type"] == "llava"
    llava = TransformersVLMBackend(folder, device="cpu")
    messages = [user_message("What color is the cube?", [CLEVR_IMAGE])]
    assert isinstance(llava.complete(messages, max_tokens=3), str) and llava.usage["requests"] == 1
    processor = llava._processor
    inputs = processor.apply_chat_template(processor_messages(validate_messages(messages)), add_generation_prompt=True,
                                           tokenize=True, return_dict=True, return_tensors="pt")
    # a 28x28 centre crop in 14-pixel patches: 4 image tokens (the CLS feature dropped)
    image_id = processor.tokenizer.convert_tokens_to_ids("<image>")
    assert int((inputs["input_ids"] == image_id).sum()) == 4
    assert tuple(inputs["pixel_values"].shape) == (1, 3, 28, 28)
    assert llava.usage["prompt_tokens"] == inputs["input_ids"].shape[-1]
