"""``python -m clevr_poc parse`` end to end: real subprocesses talking to a real local chat-completions server."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from clevr_poc.llm.testing import ChatCompletionsServer
from clevr_poc.reasoning import sanitize_query

ANSWERS = {
    "What color is the big cube?": "missing(Q) :- hasProperty(X,color,Q), hasProperty(X,size,large), "
                                   "hasProperty(X,shape,cube).",
    "How large is the thing behind the red ball?": "missing(Q) :- hasProperty(X,size,Q), hasProperty(Y,color,red), "
                                                   "hasProperty(Y,shape,sphere), behind(Y,X), X!=Y.",
}
UNPARSEABLE = "Is this a question?"


def reply(messages):
    """First turn: the right query in the paper's format (head unknown, spaces); the unparseable question
    gets prose, and a #script in the repair round."""
    question = messages[-1]["content"].removeprefix("Question: ")
    if question in ANSWERS:
        return "### " + ANSWERS[question].replace("missing(Q)", "unknown(Q)").replace(",", ", ") + " ###"
    if question == UNPARSEABLE:
        return "I cannot tell."
    return "### missing(Q) :- hasProperty(X,color,Q). #script (python) import os #end ###"


def cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "clevr_poc", "parse", *args], capture_output=True, text=True,
                          timeout=timeout)


@pytest.fixture
def server():
    with ChatCompletionsServer(reply) as running:
        yield running


def backend(server: ChatCompletionsServer) -> str:
    return f"openai:parser-test@{server.base_url}"


def test_one_question(server):
    question = "What color is the big cube?"
    result = cli("--parser", "llm", "--backend", backend(server), "--question", question)
    assert result.returncode == 0, result.stderr
    assert result.stdout == ANSWERS[question] + "\n"
    assert len(server.requests) == 1 and server.requests[0]["messages"][-1]["content"] == f"Question: {question}"


def test_one_unparseable_question_fails_with_one_line(server):
    result = cli("--parser", "llm", "--backend", backend(server), "--question", UNPARSEABLE)
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr.startswith("error: could not parse the question:") and result.stderr.count("\n") == 1
    assert "#script" in result.stderr  # the repair reply's error
    assert len(server.requests) == 2


def test_questions_file(server, tmp_path: Path):
    path = tmp_path / "questions.jsonl"
    rows = [{"question": q, "id": i} for i, q in enumerate(ANSWERS)] + [{"question": UNPARSEABLE, "id": 9}]
    path.write_text("\n".join(json.dumps(r) for r in rows[:2]) + "\n\n" + json.dumps(rows[2]) + "\n")
    result = cli("--parser", "llm", "--backend", backend(server), "--questions", str(path))
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert len(lines) == 3
    out = [json.loads(line) for line in lines]
    for row, answer in zip(out, ANSWERS.values()):
        assert row["asp_query"] == answer and "error" not in row
    assert [row["id"] for row in out] == [0, 1, 9]
    assert out[2]["asp_query"] is None and "directive '#script'" in out[2]["error"]
    assert "3 question(s)" in result.stderr and "2 ok, 1 failed" in result.stderr
    assert "1 unparseable" in result.stderr
    assert len(server.requests) == 4  # 2 + the unparseable question's reply and its one repair


@pytest.mark.parametrize("content, message", [
    ('{"question": "What color is the big cube?"}\n{"question": "broken\n', "line 2"),
    ('{"question": "What color is the big cube?"}\n["not", "an object"]\n', "line 2"),
    ('\n\n{"q": "no question key"}\n', "line 3"),
])
def test_bad_questions_file(server, tmp_path: Path, content, message):
    path = tmp_path / "questions.jsonl"
    path.write_text(content)
    result = cli("--parser", "llm", "--backend", backend(server), "--questions", str(path))
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr.startswith("error:") and message in result.stderr and result.stderr.count("\n") == 1
    assert server.requests == []  # the file is checked before any model is used


@pytest.mark.parametrize("args, message", [
    (["--parser", "llm", "--questions", "/nonexistent/questions.jsonl"], "file not found"),
    (["--parser", "no/such/parser", "--question", "What color is it?"], "unknown parser"),
    (["--parser", "llm", "--backend", "anthropic:claude", "--question", "What color is it?"], "unknown backend"),
    (["--parser", "llm", "--backend", "openai:m@http://127.0.0.1:9/v1", "--question", "What color is it?"],
     "cannot connect"),
    (["--parser", "llm", "--repair-rounds", "-1", "--question", "What color is it?"], "--repair-rounds"),
])
def test_bad_inputs_one_line_error(args, message):
    result = cli(*args)
    assert result.returncode == 1, result.stderr
    assert result.stderr.startswith("error:") and message in result.stderr and result.stderr.count("\n") == 1


def test_usage_errors():
    result = cli("--parser", "llm")
    assert result.returncode == 2 and "--question" in result.stderr
    result = cli("--parser", "llm", "--question", "a?", "--questions", "b.jsonl")
    assert result.returncode == 2 and "not allowed with" in result.stderr


def test_bilstm_checkpoint(tmp_path: Path):
    """A (fresh, untrained) BiLSTM parser folder: every printed query passes the sanitizer."""
    if importlib.util.find_spec("torch") is None:
        pytest.skip("torch not installed")
    try:
        from clevr_poc.parsing.seq2seq import BiLSTMParser
        from clevr_poc.parsing.vocabulary import QuestionVocabulary
    except ImportError:
        pytest.skip("the BiLSTM parser is not available")
    import torch

    torch.manual_seed(0)
    questions = list(ANSWERS) + [UNPARSEABLE]
    BiLSTMParser(QuestionVocabulary.build(questions)).save_pretrained(tmp_path / "bilstm")
    path = tmp_path / "questions.jsonl"
    path.write_text("".join(json.dumps({"question": q}) + "\n" for q in questions))
    result = cli("--parser", str(tmp_path / "bilstm"), "--questions", str(path))
    assert result.returncode == 0, result.stderr
    out = [json.loads(line) for line in result.stdout.splitlines()]
    assert [row["question"] for row in out] == questions
    for row in out:
        assert sanitize_query(row["asp_query"]).text == row["asp_query"]
    result = cli("--parser", str(tmp_path / "bilstm"), "--backend", "local", "--question", questions[0])
    assert result.returncode == 1 and "--backend only apply to --parser llm" in result.stderr
    (tmp_path / "bilstm" / "weights.pt").unlink()
    result = cli("--parser", str(tmp_path / "bilstm"), "--question", questions[0])
    assert result.returncode == 1 and "weights.pt" in result.stderr and result.stderr.count("\n") == 1
