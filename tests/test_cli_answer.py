"""``python -m clevr_poc answer`` end to end (real subprocesses, real clingo)."""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from clevr_poc.examples import example_dir
from clevr_poc.knowledge import read_asp

HAS_EXPLANATIONS = importlib.util.find_spec("clevr_poc.reasoning.explanations") is not None
APPENDIX_A_QUERY = ("missing(Q) :- hasProperty(X,size,Q), hasProperty(X,material,rubber), hasProperty(X,color,red), "
                    "hasProperty(Y,color,purple), hasProperty(Y,size,large), X!=Y, same_shape(Y,X).")


def cli(*args: str, cwd: Path | None = None, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "clevr_poc", "answer", *args], capture_output=True, text=True,
                          cwd=cwd, timeout=timeout)


def one_json(stdout: str) -> dict:
    """stdout must be exactly one JSON object (one line)."""
    assert stdout.count("\n") == 1 and stdout.endswith("\n"), stdout
    data = json.loads(stdout)
    assert isinstance(data, dict)
    return data


@pytest.fixture
def appendix_a_files(tmp_path: Path) -> Path:
    for name in ("environment.lp", "scene.json", "question.json"):
        shutil.copy(example_dir("appendix_a") / name, tmp_path / name)
    return tmp_path


# ------------------------------------------------------------------------------------ answers
@pytest.mark.parametrize("example, expected, attribute", [
    ("appendix_a", ["medium", "small"], "size"),
    ("appendix_c1", ["gray"], "color"),
])
def test_examples_json(example, expected, attribute, tmp_path):
    result = cli("--example", example, "--json", cwd=tmp_path)  # package data, whatever the cwd
    assert result.returncode == 0, result.stderr
    data = one_json(result.stdout)
    assert data["answer"] == expected
    assert data["attribute"] == attribute
    assert data["satisfiable"] is True
    assert data["expected"] == expected and data["matches_expected"] is True
    assert data["query"].startswith("missing(Q) :- hasProperty(X,")
    assert "explanation" not in data
    assert result.stderr == ""


def test_example_human_output():
    result = cli("--example", "appendix_a")
    assert result.returncode == 0, result.stderr
    assert "answer:   {small, medium}  (size" in result.stdout
    assert "expected: {small, medium}  (matches)" in result.stdout
    assert "what size is it?" in result.stdout


def test_files_and_query(appendix_a_files):
    d = appendix_a_files
    result = cli("--environment", str(d / "environment.lp"), "--scene", str(d / "scene.json"),
                 "--query", APPENDIX_A_QUERY, "--json", "--mode", "direct", "--time-limit", "5")
    assert result.returncode == 0, result.stderr
    data = one_json(result.stdout)
    assert data["answer"] == ["medium", "small"] and data["mode"] == "direct"
    assert data["expected"] is None and data["question"] is None


def test_files_and_question_file(appendix_a_files):
    d = appendix_a_files
    result = cli("--environment", str(d / "environment.lp"), "--scene", str(d / "scene.json"),
                 "--question", str(d / "question.json"), "--json")
    assert result.returncode == 0, result.stderr
    data = one_json(result.stdout)
    assert data["answer"] == ["medium", "small"] and data["matches_expected"] is True


def test_query_overrides_the_example_question():
    # a red cylinder: not in region 0 (line 46); metal in regions 1 (line 50), 2 (line 53) and 3 (lines 58-59)
    query = "missing(Q) :- hasProperty(X,material,Q), hasProperty(X,color,red), hasProperty(X,shape,cylinder)."
    result = cli("--example", "appendix_a", "--query", query, "--json")
    assert result.returncode == 0, result.stderr
    data = one_json(result.stdout)
    assert data["answer"] == ["metal"]
    assert data["attribute"] == "material" and data["expected"] is None and data["example"] == "appendix_a"
    # the example's question is not presented as what was answered
    assert data["question"] is None
    assert data["replaced_question"].startswith("There is another red rubber object")
    assert data["query"] == query


def test_query_override_text_says_the_question_was_replaced():
    query = "missing(Q) :- hasProperty(X,material,Q), hasProperty(X,color,red), hasProperty(X,shape,cylinder)."
    result = cli("--example", "appendix_a", "--query", query)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "example:  appendix_a"
    assert lines[1] == ("note:     --query replaced the example's question (There is another red rubber object "
                        "that is the same shape as the big purple object; what size is it?)")
    assert lines[2] == f"query:    {query}"
    assert not any(line.startswith("question:") or line.startswith("expected:") for line in lines)


def test_query_override_of_a_question_file(appendix_a_files):
    d = appendix_a_files
    query = "missing(Q) :- hasProperty(X,color,Q), hasProperty(X,shape,cylinder)."
    result = cli("--environment", str(d / "environment.lp"), "--scene", str(d / "scene.json"),
                 "--question", str(d / "question.json"), "--query", query)
    assert result.returncode == 0, result.stderr
    assert "note:     --query replaced the question file's question (There is another" in result.stdout
    assert "question:" not in result.stdout


@pytest.mark.parametrize("text", ["What color is the cube?", "what is the color of the big cube"])
def test_english_query_points_to_parse(text):
    result = cli("--example", "appendix_a", "--query", text)
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr == (
        "error: rejected ASP query: this looks like an English question, not an ASP query "
        "(missing(Q) :- hasProperty(X,<attribute>,Q), ...): --query takes an ASP query; "
        f"`python -m clevr_poc parse --parser llm --question TEXT` turns a question into one: {text!r}\n")


def test_bare_word_and_capitalised_value_messages():
    result = cli("--example", "appendix_a", "--query", "missing(Q) :- foo.")
    assert result.returncode == 1
    assert result.stderr.startswith("error: rejected ASP query: 'foo' is not an allowed atom; a query body uses "
                                    "hasProperty/3, at/2, ")
    assert "only comparison" not in result.stderr
    result = cli("--example", "appendix_a", "--query",
                 "missing(Q) :- hasProperty(X,color,Red), hasProperty(X,shape,Q).")
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr.startswith("error: rejected ASP query: 'Red' is a variable (capitalised); the value is 'red': ")


def test_unsatisfiable_is_an_empty_answer_not_an_error():
    # nothing can be large, red and rubber: not in region 0 (line 45), 1 (line 50), 2 (line 54), 3 (58-59)
    query = "missing(Q) :- hasProperty(X,shape,Q), hasProperty(X,size,large), hasProperty(X,color,red), " \
            "hasProperty(X,material,rubber)."
    result = cli("--example", "appendix_a", "--query", query, "--json")
    assert result.returncode == 0, result.stderr
    data = one_json(result.stdout)
    assert data["answer"] == [] and data["satisfiable"] is False and "no answer set" in data["reason"]


@pytest.mark.skipif(not HAS_EXPLANATIONS, reason="clevr_poc.reasoning.explanations not present")
def test_explain():
    result = cli("--example", "appendix_a", "--explain", "--json")
    assert result.returncode == 0, result.stderr
    explanation = one_json(result.stdout)["explanation"]
    assert {w["value"] for w in explanation["kept"]} == {"small", "medium"}
    assert [e["value"] for e in explanation["eliminated"]] == ["large"]
    # without constraint 0 (appendix line 45: no large objects in region 0) large would be possible
    assert 0 in explanation["eliminated"][0]["constraints"]

    human = cli("--example", "appendix_a", "--explain")
    assert human.returncode == 0, human.stderr
    assert "explanation:" in human.stdout and "No object in region 0 has size large." in human.stdout


# ------------------------------------------------------------------------------------ bad input
QUERY = "missing(Q) :- hasProperty(X,size,Q)."


def _bad_inputs(d: Path) -> dict[str, list[str]]:
    env, scene = str(d / "environment.lp"), str(d / "scene.json")
    (d / "broken.json").write_text('{"objects": [', encoding="utf-8")
    bad_scene = json.loads((d / "scene.json").read_text())
    bad_scene["objects"][0]["color"] = "pink"
    (d / "pink.json").write_text(json.dumps(bad_scene), encoding="utf-8")
    bad_rel = json.loads((d / "scene.json").read_text())
    bad_rel["relationships"]["left"][0] = [7]
    (d / "badrel.json").write_text(json.dumps(bad_rel), encoding="utf-8")
    (d / "two.lp").write_text(read_asp("background.lp") + "object(0..1).\n", encoding="utf-8")
    (d / "rule.lp").write_text("object(0..4).\n:- foo(X).\n", encoding="utf-8")
    (d / "syntax.lp").write_text("object(0..4\n", encoding="utf-8")
    (d / "noquery.json").write_text('{"question": "what?"}', encoding="utf-8")
    (d / "binary.lp").write_bytes(b"\xff\xfe\x00object")
    (d / "include.lp").write_text(f'object(0..4).\n#include "{(d / "absent.lp").as_posix()}".\n', encoding="utf-8")
    return {
        "missing environment file": ["--environment", str(d / "nope.lp"), "--scene", scene, "--query", QUERY],
        "missing scene file": ["--environment", env, "--scene", str(d / "nope.json"), "--query", QUERY],
        "malformed JSON": ["--environment", env, "--scene", str(d / "broken.json"), "--query", QUERY],
        "bad scene field": ["--environment", env, "--scene", str(d / "pink.json"), "--query", QUERY],
        "bad relationship": ["--environment", env, "--scene", str(d / "badrel.json"), "--query", QUERY],
        "scene is a folder": ["--environment", env, "--scene", str(d), "--query", QUERY],
        "hostile query": ["--environment", env, "--scene", scene, "--query",
                          '#include "/etc/passwd".\n' + QUERY],
        "query with not": ["--environment", env, "--scene", scene, "--query",
                           "missing(Q) :- hasProperty(X,size,Q), not hasProperty(X,color,red)."],
        "too few objects": ["--environment", str(d / "two.lp"), "--scene", scene, "--query", QUERY],
        "foreign rule": ["--environment", str(d / "rule.lp"), "--scene", scene, "--query", QUERY],
        "environment syntax": ["--environment", str(d / "syntax.lp"), "--scene", scene, "--query", QUERY],
        "binary environment": ["--environment", str(d / "binary.lp"), "--scene", scene, "--query", QUERY],
        "environment includes a file": ["--environment", str(d / "include.lp"), "--scene", scene, "--query", QUERY],
        "no query": ["--environment", env, "--scene", scene],
        "no inputs": [],
        "question without asp_query": ["--example", "appendix_a", "--question", str(d / "noquery.json")],
        "unknown example": ["--example", "appendix_z"],
        "bad mode": ["--example", "appendix_a", "--mode", "fast"],
        "bad time limit": ["--example", "appendix_a", "--time-limit", "soon"],
        "negative time limit": ["--example", "appendix_a", "--time-limit=-1"],
    }



EXPECTED_WORDS = {
    "missing environment file": "file not found", "missing scene file": "file not found",
    "malformed JSON": "invalid JSON", "bad scene field": "pink", "bad relationship": "relationships.left[0]",
    "scene is a folder": "cannot read", "hostile query": "#include", "query with not": "negation",
    "too few objects": "environment declares only 2", "foreign rule": "not an instance",
    "environment syntax": "not a valid ASP program", "binary environment": "UTF-8", "environment includes a file": "include.lp",
    "no query": "--query",
    "no inputs": "--environment", "question without asp_query": "asp_query", "unknown example": "appendix_z",
    "bad mode": "--mode", "bad time limit": "--time-limit", "negative time limit": "--time-limit",
}


@pytest.mark.parametrize("case", sorted(EXPECTED_WORDS))
def test_bad_input_is_one_error_line(case, appendix_a_files):
    args = _bad_inputs(appendix_a_files)[case]
    result = cli(*args)
    assert result.returncode != 0
    assert "Traceback" not in result.stderr
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: ")
    assert EXPECTED_WORDS[case] in lines[0]


def test_solver_timeout_is_one_error_line(tmp_path):
    """13 objects cannot fit 4 regions of capacity 3: proving it is a pigeonhole problem, far beyond a
    0.05 s limit; the command must stop at the limit with a one-line error."""
    (tmp_path / "crowded.lp").write_text(read_asp("background.lp") + "object(0..12).\n", encoding="utf-8")
    (tmp_path / "empty.json").write_text('{"objects": [], "relationships": {}}', encoding="utf-8")
    for mode in ("compiled", "direct"):
        result = cli("--environment", str(tmp_path / "crowded.lp"), "--scene", str(tmp_path / "empty.json"),
                     "--query", QUERY, "--time-limit", "0.05", "--mode", mode, timeout=60)
        assert result.returncode == 1
        assert result.stderr.splitlines() == ["error: clingo did not finish within 0.05 s"]
