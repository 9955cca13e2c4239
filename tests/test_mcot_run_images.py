"""``python -m clevr_poc.mcot run``: M3CoT and ScienceQA end to end from images against a real local
OpenAI-compatible server (every image arrives decodable, at its original size, with the file's bytes),
official output formats, scoring with parse failures, resuming, captions, image loading layouts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("openai")
pytest.importorskip("PIL")

from PIL import Image  # noqa: E402

from clevr_poc.llm.testing import ChatCompletionsServer  # noqa: E402
from clevr_poc.commands.mcot_command import main  # noqa: E402
from clevr_poc.mcot.mcot_data import load_m3cot, load_scienceqa  # noqa: E402

FIXTURES = Path(__file__).parent / "fixtures" / "mcot"


def _summary(text: str) -> dict:
    return json.loads(text.strip().splitlines()[-1])


def _m3cot_reply(messages) -> str:
    """Answers "B" to every question with an image, and something unparseable without one."""
    has_image = any(isinstance(m["content"], list) for m in messages)
    return "The answer is (B)." if has_image else "I cannot see any picture."


def test_m3cot_run_sends_every_image_and_scores(tmp_path, capsys):
    out = tmp_path / "m3cot_cot.jsonl"
    records = {r.id: r for r in load_m3cot(FIXTURES / "m3cot_data.jsonl", split="test")}
    with ChatCompletionsServer(_m3cot_reply) as server:
        assert main(["run", "--benchmark", "m3cot", "--data", str(FIXTURES / "m3cot_data.jsonl"), "--method", "cot",
                     "--backend", f"openai:vlm@{server.base_url}", "--out", str(out), "--workers", "3",
                     "--no-progress"]) == 0
        # 6 test records x 2 turns; the image rides in the first user turn of both requests
        assert len(server.requests) == 12 and len(server.images) == 12
        assert all(image.decodable for image in server.images)
        sent = {(image.data, image.size) for image in server.images}
        expected = {(r.image_path.read_bytes(), Image.open(r.image_path).size) for r in records.values()}
        assert sent == expected
    summary = _summary(capsys.readouterr().out)
    gold_b = sum(r.answer == "B" for r in records.values())
    assert summary["accuracy"]["total"] == {"acc": round(100 * gold_b / 6, 4), "correct": gold_b, "total": 6}
    assert summary["parse"]["parse_failures"] == 0 and summary["run"]["images"] == "send"
    assert summary["run"]["usage"]["requests"] == 12
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [row["id"] for row in rows] == list(records)  # input order despite 3 workers
    assert set(rows[0]) >= {"id", "choices", "answer", "domain", "topic", "messages"} and len(rows[0]["messages"]) == 4


def test_m3cot_run_resumes_and_counts_parse_failures_of_text_only_runs(tmp_path, capsys):
    out = tmp_path / "direct.jsonl"
    with ChatCompletionsServer(_m3cot_reply) as server:
        args = ["run", "--benchmark", "m3cot", "--data", str(FIXTURES / "m3cot_data.jsonl"), "--method", "direct",
                "--backend", f"openai:vlm@{server.base_url}", "--out", str(out), "--images", "none", "--no-progress"]
        assert main(args + ["--limit", "2"]) == 0
        capsys.readouterr()
        assert main(args) == 0
        assert len(server.requests) == 6 and server.images == []  # 2, then the 4 others
        text = capsys.readouterr().out
        assert main([*args[:-3], "--images", "send", "--no-progress"]) == 1  # another image mode: refused
        assert "another image mode" in capsys.readouterr().err
    summary = _summary(text)
    assert summary["parse"]["parse_failures"] == 6 and summary["accuracy"]["total"]["correct"] == 0
    assert "| 6 (100.00%) |" in text


def test_m3cot_images_from_parquet_bytes(tmp_path):
    pq = pytest.importorskip("pyarrow.parquet")
    import pyarrow as pa

    rows = [json.loads(line) for line in (FIXTURES / "m3cot_data.jsonl").read_text().splitlines()][:2]
    for row in rows:
        row["image"] = {"bytes": (FIXTURES / "images" / f"{row['id']}.png").read_bytes(), "path": f"{row['id']}.png"}
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "test.parquet")
    records = load_m3cot(tmp_path / "test.parquet")
    assert records[0].image_bytes == (FIXTURES / "images" / "sci-1.png").read_bytes()
    assert records[0].image_source == records[0].image_bytes and records[0].image == "sci-1.png"
    with ChatCompletionsServer(_m3cot_reply) as server:
        assert main(["run", "--benchmark", "m3cot", "--data", str(tmp_path / "test.parquet"), "--backend",
                     f"openai:vlm@{server.base_url}", "--out", str(tmp_path / "p.jsonl"), "--no-progress"]) == 0
        assert [image.data for image in server.images] == [r.image_bytes for r in records]


def test_a_missing_m3cot_image_is_a_typed_error_before_any_request(tmp_path, capsys):
    data = tmp_path / "data.jsonl"
    data.write_text((FIXTURES / "m3cot_data.jsonl").read_text())  # no images/ folder next to it
    with ChatCompletionsServer(_m3cot_reply) as server:
        assert main(["run", "--benchmark", "m3cot", "--data", str(data), "--backend", f"openai:vlm@{server.base_url}",
                     "--out", str(tmp_path / "o.jsonl"), "--no-progress"]) == 1
        assert server.requests == []
    assert "have no image" in capsys.readouterr().err


def _sqa_reply(messages) -> str:
    content = messages[-1]["content"]
    return "The answer is A. BECAUSE: an image." if isinstance(content, list) else "The answer is B."


def test_scienceqa_run_sends_the_test_images_and_writes_the_official_layout(tmp_path, capsys):
    out = tmp_path / "sqa.json"
    dataset = load_scienceqa(FIXTURES / "scienceqa")
    with ChatCompletionsServer(_sqa_reply) as server:
        assert main(["run", "--benchmark", "scienceqa", "--data", str(FIXTURES / "scienceqa"), "--method", "cot",
                     "--shots", "1", "--backend", f"openai:vlm@{server.base_url}", "--out", str(out),
                     "--workers", "2", "--no-progress"]) == 0
        with_images = [qid for qid in dataset.split_ids("test") if dataset[qid].image]
        assert len(server.requests) == 5 and len(server.images) == len(with_images) == 2
        for image, qid in zip(sorted(server.images, key=lambda i: i.request), with_images):
            path = FIXTURES / "scienceqa" / "images" / qid / "image.png"
            assert image.decodable and image.data == path.read_bytes() and image.size == Image.open(path).size
        prompts = [r["messages"][-1]["content"] for r in server.requests]
        assert all(isinstance(p, str) or p[0]["type"] == "image_url" for p in prompts)
    result = json.loads(out.read_text())
    assert set(result) >= {"acc", "correct", "count", "shot_qids", "args", "results", "outputs"}
    assert result["args"]["images"] == "send" and result["args"]["prompt_format"] == "QCM-ALE"
    expected = {qid: (0 if dataset[qid].image else 1) for qid in dataset.split_ids("test")}
    assert result["results"] == expected
    summary = _summary(capsys.readouterr().out)
    correct = sum(dataset[q].answer == expected[q] for q in expected)
    assert summary["accuracy"]["Avg"]["correct"] == correct and summary["parse"]["parse_failures"] == 0


def test_scienceqa_captions_for_text_only_models(tmp_path, capsys):
    dataset = load_scienceqa(FIXTURES / "scienceqa")
    caption = dataset["202"].caption
    assert caption
    with ChatCompletionsServer(_sqa_reply) as server:
        assert main(["run", "--benchmark", "scienceqa", "--data", str(FIXTURES / "scienceqa"), "--method", "direct",
                     "--images", "caption", "--backend", f"openai:m@{server.base_url}", "--out",
                     str(tmp_path / "c.json"), "--no-progress"]) == 0
        assert server.images == [] and any(caption in r["messages"][-1]["content"] for r in server.requests)
    assert main(["run", "--benchmark", "m3cot", "--data", str(FIXTURES / "m3cot_data.jsonl"), "--images", "caption",
                 "--backend", "openai:m@http://127.0.0.1:9/v1", "--out", str(tmp_path / "x.jsonl")]) == 1
    assert "needs a benchmark that ships captions" in capsys.readouterr().err
    assert main(["run", "--benchmark", "scienceqa", "--data", str(FIXTURES / "scienceqa"), "--method", "ccot",
                 "--backend", "openai:m@http://127.0.0.1:9/v1", "--out", str(tmp_path / "y.json")]) == 1
    assert "M3CoT strategies" in capsys.readouterr().err
