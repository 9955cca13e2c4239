"""Running a chat backend on ScienceQA / M3CoT through the real local chat-completions server."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from clevr_poc.errors import FormatError
from clevr_poc.llm.testing import ChatCompletionsServer
from clevr_poc.mcot.mcot_data import load_m3cot, load_scienceqa
from clevr_poc.mcot.harness import run_m3cot, run_scienceqa, score_m3cot, score_scienceqa

pytest.importorskip("openai")
from clevr_poc.llm.openai_backend import OpenAIChatBackend  # noqa: E402

FIXTURES = Path(__file__).parent / "fixtures" / "mcot"

#: what the fake model answers for each ScienceQA test question (letter), by question text
SQA_ANSWERS = {"What happened to the ice?": "A", "Which continent is shaded?": "C",
               "Which word rhymes with hat?": "A", "Which way does the river flow?": "D",
               "Which is a primary source?": "B"}


def sqa_model(messages):
    question = re.findall(r"Question: (.*)", messages[-1]["content"])[-1]
    return f"The answer is {SQA_ANSWERS[question]}. BECAUSE: a reason.\nThis second line is cut by stop."


def test_run_scienceqa_sends_the_prompt_and_resumes(tmp_path):
    dataset = load_scienceqa(FIXTURES / "scienceqa")
    output = tmp_path / "result.json"
    with ChatCompletionsServer(sqa_model) as server:
        backend = OpenAIChatBackend(model="fake", base_url=server.base_url)
        partial = run_scienceqa(dataset, backend, shots=2, seed=3, limit=2, output_path=output, progress=False)
        assert partial.count == 2 and len(server.requests) == 2
        result = run_scienceqa(dataset, backend, shots=2, seed=3, output_path=output, progress=False)
        assert len(server.requests) == 5  # 2 resumed, 3 new
    first = server.requests[0]
    assert first["stop"] == ["\n"] and first["temperature"] == 0.0 and first["max_tokens"] == 512
    prompt = first["messages"][0]["content"]
    assert prompt.count("Question: ") == 3 and prompt.endswith("Options: (A) it melted (B) it froze\nAnswer:")
    assert result.outputs["201"] == "The answer is A. BECAUSE: a reason."
    assert result.shot_qids == partial.shot_qids and len(result.shot_qids) == 2
    assert result.results == {"201": 0, "202": 2, "203": 0, "204": 3, "205": 1}
    assert result.correct == 4 and json.loads(output.read_text())["count"] == 5
    summary, _, _ = score_scienceqa(dataset, result.outputs)
    assert summary["accuracy"]["Avg"]["acc"] == 80.0 and summary["accuracy"]["SOC"]["acc"] == 50.0


def test_resuming_with_other_settings_is_refused(tmp_path):
    dataset = load_scienceqa(FIXTURES / "scienceqa")
    output = tmp_path / "result.json"
    with ChatCompletionsServer(sqa_model) as server:
        backend = OpenAIChatBackend(model="fake", base_url=server.base_url)
        run_scienceqa(dataset, backend, shots=1, limit=1, output_path=output, progress=False)
        with pytest.raises(FormatError, match="other demonstrations, another prompt format"):
            run_scienceqa(dataset, backend, shots=1, prompt_format="QCM-A", output_path=output, progress=False)


def m3cot_model(messages):
    last = messages[-1]["content"]
    if "Let's think step-by-step!" in last:
        return "The house is much bigger than a cup or a ball."
    if "Please select" in last:
        return "(B) the house</s>"
    return "I do not know."


def test_run_m3cot_cot_is_two_turns_and_resumes(tmp_path):
    records = load_m3cot(FIXTURES / "m3cot_data.jsonl", split="test")
    output = tmp_path / "cot.jsonl"
    with ChatCompletionsServer(m3cot_model) as server:
        backend = OpenAIChatBackend(model="fake", base_url=server.base_url)
        run_m3cot(records, backend, strategy="cot", limit=1, output_path=output, progress=False)
        rows = run_m3cot(records, backend, strategy="cot", limit=2, output_path=output, progress=False)
    assert len(server.requests) == 4  # 2 turns for each of 2 records; the first record was resumed
    second_turn = server.requests[1]["messages"]
    assert [m["role"] for m in second_turn] == ["user", "assistant", "user"]
    assert second_turn[1]["content"] == "The house is much bigger than a cup or a ball."
    assert rows[0]["messages"][-1] == "(B) the house</s>" and len(rows[0]["messages"]) == 4
    assert [json.loads(line)["id"] for line in output.read_text().splitlines()] == ["sci-1", "sci-2"]
    predictions = load_m3cot(output, require_messages=True)
    summary, _ = score_m3cot(predictions)
    assert summary["accuracy"]["total"]["correct"] == 2  # gold of sci-1 and sci-2 is B


def test_run_scienceqa_guesses_like_the_official_runner():
    import random

    dataset = load_scienceqa(FIXTURES / "scienceqa")
    with ChatCompletionsServer(lambda messages: "I am not sure.") as server:
        backend = OpenAIChatBackend(model="fake", base_url=server.base_url)
        result = run_scienceqa(dataset, backend, shots=2, seed=7, progress=False)
    random.seed(7)  # the official run_gpt3.py: seed, sample the shots, then random.choice per failure
    shots = random.sample(list(dataset.split_ids("train")), 2)
    expected = {qid: random.choice(range(len(dataset[qid].choices))) for qid in dataset.split_ids("test")}
    assert result.shot_qids == shots and result.results == expected


def test_prompt_too_long_skips_only_that_item(tmp_path):
    from clevr_poc.llm.testing import ServerFailure

    def model(messages):
        if "largest" in messages[-1]["content"]:
            raise ServerFailure(400, "This model's maximum context length is 8 tokens")
        return "(B)"

    records = load_m3cot(FIXTURES / "m3cot_data.jsonl", split="test")[:2]
    output = tmp_path / "direct.jsonl"
    with ChatCompletionsServer(model) as server:
        backend = OpenAIChatBackend(model="fake", base_url=server.base_url, max_retries=0)
        rows = run_m3cot(records, backend, output_path=output, progress=False)
        assert rows[0]["messages"][-1] == "" and "maximum context length" in rows[0]["error"]
        assert rows[1]["messages"][-1] == "(B)" and "error" not in rows[1]
        with pytest.raises(FormatError, match="another strategy"):
            run_m3cot(records, backend, strategy="cot", output_path=output, progress=False)
