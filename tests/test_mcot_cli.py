"""``python -m clevr_poc.mcot``: scoring files, and one end-to-end run against the local test server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from clevr_poc.commands.mcot_command import main

FIXTURES = Path(__file__).parent / "fixtures" / "mcot"


def by_topic_acc(summary: dict, domain: str, topic: str) -> float:
    return summary["accuracy"]["topics"][domain][topic]["acc"]


def _last_json(text: str) -> dict:
    return json.loads(text.strip().splitlines()[-1])


def test_score_m3cot_predictions_official_and_robust(capsys, tmp_path):
    assert main(["m3cot", "--predictions", str(FIXTURES / "m3cot_predictions.jsonl"), "--summary",
                 str(tmp_path / "s.json"), "--markdown", str(tmp_path / "t.md")]) == 0
    out = capsys.readouterr().out
    summary = _last_json(out)
    assert summary["accuracy"]["total"]["acc"] == pytest.approx(66.6667)
    assert summary["rule"] == "official" and summary["parse"]["parse_failures"] == 2
    assert json.loads((tmp_path / "s.json").read_text()) == summary
    assert (tmp_path / "t.md").read_text() in out
    assert main(["m3cot", "--predictions", str(FIXTURES / "m3cot_predictions.jsonl"), "--rule", "robust",
                 "--on-failure", "random", "--seed", "1"]) == 0
    robust = _last_json(capsys.readouterr().out)
    assert robust["rule"] == "robust" and robust["on_failure"] == "random" and robust["parse"]["guessed"] == 2


def test_score_scienceqa_outputs_with_explanations(capsys):
    pytest.importorskip("nltk")
    pytest.importorskip("rouge_score")
    assert main(["scienceqa", "--data", str(FIXTURES / "scienceqa"), "--predictions",
                 str(FIXTURES / "scienceqa_outputs.json"), "--explanations"]) == 0
    summary = _last_json(capsys.readouterr().out)
    assert summary["accuracy"]["Avg"]["acc"] == 20.0
    assert summary["explanations"]["bleu4"] == pytest.approx(0.2) and summary["explanations"]["similarity"] is None


def test_errors_are_one_line(capsys, tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "x", "choices": ["a", "b"], "answer": "Q", "domain": "d", "topic": "t", "messages": ["m"]}\n')
    assert main(["m3cot", "--predictions", str(bad)]) == 1
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and err.startswith("error: ") and "bad.jsonl, line 1, record x, field 'answer': " in err
    assert main(["m3cot", "--backend", "openai:m@http://127.0.0.1:9/v1"]) == 1
    assert "--data is required" in capsys.readouterr().err
    assert main(["scienceqa", "--data", str(FIXTURES / "scienceqa"), "--backend", "nonsense"]) == 1
    assert "unknown backend" in capsys.readouterr().err
    with pytest.raises(SystemExit) as info:
        main(["m3cot", "--rule", "fuzzy"])
    assert info.value.code == 2


def test_end_to_end_cli_run_against_the_local_server(tmp_path):
    pytest.importorskip("openai")
    from clevr_poc.llm.testing import ChatCompletionsServer

    answers = {"Which object is the largest?": "(B) the house", "Which colour word is in the sentence?": "Answer: A",
               "How does the girl feel?": "B</s>", "When was the photo taken?": "Hmm.",
               "What is x if 2x = 6?": "x = 3, so (C)", "How many sides does the shape have?": "(D) 6"}

    def model(messages):
        question = messages[0]["content"].split("[Question]\n")[1].split("\n")[0]
        return answers[question]

    output = tmp_path / "direct.jsonl"
    with ChatCompletionsServer(model) as server:
        env = {**os.environ, "OPENAI_API_KEY": ""}
        run = subprocess.run(
            [sys.executable, "-m", "clevr_poc.mcot", "m3cot", "--data", str(FIXTURES / "m3cot_data.jsonl"),
             "--backend", f"openai:fake-vlm@{server.base_url}", "--prompt", "direct", "--output", str(output),
             "--no-progress"], capture_output=True, text=True, env=env, timeout=120)
    assert run.returncode == 0, run.stderr
    summary = _last_json(run.stdout)
    assert len(server.requests) == 6  # the train record is not run
    assert summary["run"]["backend"] == f"openai:fake-vlm@{server.base_url}"
    # official rule: sci-1 "(B)" right; sci-2 "Answer: A" read as the standalone letter A (gold B): wrong
    assert summary["items"] == 6
    assert by_topic_acc(summary, "science", "language-science") == 0.0
    assert [json.loads(line)["messages"][-1] for line in output.read_text().splitlines()][:2] == [
        "(B) the house", "Answer: A"]
    by_topic = summary["accuracy"]["topics"]
    assert by_topic["science"]["natural-science"]["acc"] == 100.0
    assert by_topic["mathematics"]["algebra"]["acc"] == 100.0
    assert by_topic["mathematics"]["geometry"]["acc"] == 0.0
    assert summary["parse"]["parse_failures"] == 2  # "B</s>" and "Hmm." have no answer under the official rule
