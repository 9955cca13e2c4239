"""Untrusted ASP never reaches clingo: hostile queries and environment files through the sanitizer, the
Reasoner and the command line; solver calls stop at their time limit."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from clevr_poc.environments import Environment
from clevr_poc.errors import FormatError, SolverTimeoutError, UnsafeProgramError
from clevr_poc.examples import example_dir, load_example
from clevr_poc.reasoning import Reasoner, sanitize_query
from clevr_poc.scene import Scene

BODY = "hasProperty(X,size,Q)"
OK = f"missing(Q) :- {BODY}."


def script_creating(path: Path, language: str = "python") -> str:
    """A #script block that creates ``path`` when clingo loads it."""
    if language == "python":
        code = f'open("{path.as_posix()}", "w").write("pwned")'
    else:
        code = f'io.open("{path.as_posix()}", "w"):write("pwned")'
    return f"#script ({language})\n{code}\n#end.\n"


#: (name, hostile query, a word the rejection message must contain)
HOSTILE = [
    ("include", '#include "/etc/passwd".\n' + OK, "'#include'"),
    ("external", "#external hasProperty(0,size,small).\n" + OK, "'#external'"),
    ("const", "#const n=3.\n" + OK, "'#const'"),
    ("program", "#program base.\n" + OK, "'#program'"),
    ("show", "#show missing/1.\n" + OK, "'#show'"),
    ("minimize", "#minimize{1,X: object(X)}.\n" + OK, "'#minimize'"),
    ("at-call", f"missing(Q) :- {BODY}, object(@f(X)).", "'@'"),
    ("at-call in argument", "missing(Q) :- hasProperty(@f(0),size,Q).", "'@'"),
    ("string", f'missing(Q) :- {BODY}, hasProperty(X,color,"red").', "'\"'"),
    ("count aggregate", f"missing(Q) :- {BODY}, #count{{Y: object(Y)}} > 3.", "'#count'"),
    ("cardinality aggregate", f"missing(Q) :- {BODY}, 2 {{object(Y)}}.", "'{'"),
    ("not", f"missing(Q) :- {BODY}, not hasProperty(X,color,red).", "negation ('not')"),
    ("classical negation", f"missing(Q) :- {BODY}, -hasProperty(X,color,red).", "'-'"),
    ("two rules", OK + " missing(Q) :- hasProperty(X,color,Q).", "exactly one rule"),
    ("rule and constraint", OK + " :- hasProperty(X,color,red).", "exactly one rule"),
    ("pool", f"missing(Q) :- {BODY}, hasProperty(X,color,(red;blue)).", "';'"),
    ("weak constraint", ":~ hasProperty(X,size,Q). [1@1]", "':~'"),
    ("comparison", f"missing(Q) :- {BODY}, X < 3.", "'<'"),
    ("function term", "missing(Q) :- hasProperty(f(X),size,Q).", "function term f(...)"),
    ("anonymous variable", "missing(Q) :- hasProperty(_,size,Q).", "anonymous"),
    ("other head", "hasProperty(0,size,small) :- object(0).", "the head must be missing(Q)"),
    ("constant head", "missing(small) :- hasProperty(X,size,small).", "head argument must be a variable"),
    ("unknown predicate", f"missing(Q) :- {BODY}, owns(X,Y).", "predicate owns/2 is not allowed"),
    ("wrong arity", f"missing(Q) :- {BODY}, left(X).", "predicate left/1 is not allowed"),
    ("unknown constant", f"missing(Q) :- {BODY}, hasProperty(X,color,magenta).", "unknown constant 'magenta'"),
    ("unknown attribute", "missing(Q) :- hasProperty(X,weight,Q).", "unknown constant 'weight'"),
    ("value of another attribute", f"missing(Q) :- {BODY}, hasProperty(X,color,cube).", "'cube' is not a color"),
    ("huge object id", "missing(Q) :- hasProperty(100000000,size,Q).", "out of range 0..99"),
    ("over-long text", OK[:-1] + ", " + ", ".join(f"hasProperty(X{i},size,small)" for i in range(200)) + ".",
     "longer than 4000 characters"),
    ("too many literals", OK[:-1] + "".join(f", object(X{i % 5})" for i in range(45)) + ".",
     "more than 40 body literals"),
    ("too many variables", OK[:-1] + "".join(f", object(V{i})" for i in range(25)) + ".", "more than 20 variables"),
    ("NUL byte", OK + "\x00", "'\\x00'"),
    ("directive after a nested block comment", f"missing(Q) :- {BODY} %* a %* b *% c\n *% #script (python) #end.",
     "'#script'"),
    ("empty", "", "empty query"),
]


@pytest.mark.parametrize("name, query, reason", HOSTILE, ids=[h[0] for h in HOSTILE])
def test_sanitizer_rejects_and_names_the_reason(name, query, reason):
    with pytest.raises(UnsafeProgramError) as info:
        sanitize_query(query)
    assert reason in str(info.value)
    assert "\n" not in str(info.value)  # one line, whatever the input


@pytest.mark.parametrize("language", ["python", "lua"])
def test_script_block_never_runs(language, tmp_path):
    target = tmp_path / "pwned"
    query = script_creating(target, language) + OK
    with pytest.raises(UnsafeProgramError, match="'#script' is not allowed"):
        sanitize_query(query)
    environment, scene, _ = load_example("appendix_a")
    for mode in Reasoner.MODES:
        with pytest.raises(UnsafeProgramError, match="#script"):
            Reasoner(mode=mode).answer(environment, scene, query)
    assert not target.exists()


@pytest.mark.parametrize("name, query, reason", HOSTILE[:12], ids=[h[0] for h in HOSTILE[:12]])
@pytest.mark.parametrize("mode", Reasoner.MODES)
def test_reasoner_rejects_before_solving(name, query, reason, mode):
    environment, scene, _ = load_example("appendix_a")
    reasoner = Reasoner(mode=mode)
    with pytest.raises(UnsafeProgramError):
        reasoner.answer(environment, scene, query)
    assert reasoner.counts == {"compiled": 0, "direct": 0}


def test_interval_is_rejected():
    for query in ("missing(Q) :- hasProperty(0..100000000,size,Q).",
                  f"missing(Q) :- {BODY}, object(0..100000000)."):
        with pytest.raises(UnsafeProgramError):
            sanitize_query(query)


def test_interval_rejection_names_the_interval():
    with pytest.raises(UnsafeProgramError, match="interval"):
        sanitize_query("missing(Q) :- hasProperty(0..100000000,size,Q).")


def test_non_ascii_digits_are_rejected():
    with pytest.raises(UnsafeProgramError):
        sanitize_query("missing(Q) :- hasProperty(\u0663,size,Q).")


def test_comments_are_dropped_from_the_canonical_text():
    checked = sanitize_query(f"missing(Q) :- {BODY}. % #script (python) import os #end.")
    assert checked.text == OK
    assert "#" not in checked.text and "%" not in checked.text


# ---------------------------------------------------------------------------- environment files
@pytest.mark.parametrize("hostile, reason", [
    ("SCRIPT", "only the background theory"),
    ("#external hasProperty(0,size,small).\n", "only the background theory"),
    ("#const n=3.\n", "only the background theory"),
    ("hasProperty(0,size,small).\n", "not an instance of any of the 11 constraint templates"),
    ("p(X) :- X = @f(1).\n", "not an instance of any of the 11 constraint templates"),
])
def test_hostile_environment_file_is_rejected(hostile, reason, tmp_path):
    target = tmp_path / "pwned"
    text = (script_creating(target) if hostile == "SCRIPT" else hostile) + "object(0..4).\n"
    path = tmp_path / "environment.lp"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(FormatError, match=reason):
        Environment.from_lp(path)
    assert not target.exists()


def test_environment_include_is_rejected(tmp_path):
    path = tmp_path / "environment.lp"
    path.write_text('#include "/etc/passwd".\nobject(0..4).\n', encoding="utf-8")
    with pytest.raises(FormatError):
        Environment.from_lp(path)


@pytest.mark.parametrize("included", ["/etc/passwd", "/nonexistent/file.lp"])
def test_environment_include_is_rejected_without_opening_the_file(included, tmp_path):
    path = tmp_path / "environment.lp"
    path.write_text(f'object(0..4).\n#include "{included}".\n', encoding="utf-8")
    with pytest.raises(FormatError, match="#include") as info:
        Environment.from_lp(path)
    assert included not in str(info.value).replace(f'#include "{included}"', "")


def test_environment_with_huge_object_interval_is_rejected(tmp_path):
    path = tmp_path / "environment.lp"
    path.write_text("object(0..100000000).\n", encoding="utf-8")
    with pytest.raises(FormatError, match="number of objects must be 1..20"):
        Environment.from_lp(path)


# ---------------------------------------------------------------------------- command line
def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "clevr_poc", "answer", *args], capture_output=True, text=True,
                          timeout=60)


def test_cli_rejects_a_script_query_and_runs_nothing(tmp_path):
    target = tmp_path / "pwned"
    folder = example_dir("appendix_a")
    result = cli("--environment", str(folder / "environment.lp"), "--scene", str(folder / "scene.json"),
                 "--query", script_creating(target) + OK)
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr.splitlines() == [result.stderr.strip()]
    assert result.stderr.startswith("error: rejected ASP query: directive '#script' is not allowed")
    assert not target.exists()


def test_cli_rejects_a_script_in_question_file_and_environment(tmp_path):
    import json

    target = tmp_path / "pwned"
    question = json.loads((example_dir("appendix_a") / "question.json").read_text())
    question["asp_query"] = script_creating(target) + question["asp_query"]
    (tmp_path / "question.json").write_text(json.dumps(question), encoding="utf-8")
    result = cli("--example", "appendix_a", "--question", str(tmp_path / "question.json"))
    assert result.returncode == 1 and "'#script' is not allowed" in result.stderr
    assert len(result.stderr.splitlines()) == 1

    (tmp_path / "environment.lp").write_text(script_creating(target) + "object(0..4).\n", encoding="utf-8")
    result = cli("--example", "appendix_a", "--environment", str(tmp_path / "environment.lp"))
    assert result.returncode == 1 and "only the background theory" in result.stderr
    assert len(result.stderr.splitlines()) == 1 and "Traceback" not in result.stderr
    assert not target.exists()


def test_cli_non_ascii_digit_is_one_error_line():
    result = cli("--example", "appendix_a", "--mode", "direct", "--query", "missing(Q) :- hasProperty(\u0663,size,Q).")
    assert result.returncode == 1
    assert len(result.stderr.splitlines()) == 1 and result.stderr.startswith("error: ")


# ---------------------------------------------------------------------------- time limits
@pytest.mark.parametrize("mode", Reasoner.MODES)
def test_solve_over_the_time_limit_raises(mode):
    """13 objects in 4 regions of capacity 3 (background theory) is a pigeonhole problem: clingo needs
    about a second or more to refute it (measured 0.7-3 s), far above a 0.05 s limit."""
    crowded = Environment((), 13)
    reasoner = Reasoner(mode=mode, time_limit=0.05)
    started = time.monotonic()
    with pytest.raises(SolverTimeoutError, match="did not finish within 0.05 s"):
        reasoner.answer(crowded, Scene(()), OK)
    assert time.monotonic() - started < 10  # interrupted, not left running
    # the same reasoner still answers an ordinary question afterwards
    environment, scene, question = load_example("appendix_a")
    assert reasoner.answer(environment, scene, question).values == frozenset({"small", "medium"})
