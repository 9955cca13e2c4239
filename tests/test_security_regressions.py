"""One regression test per defect of the hardening issue (#14) in the query sanitizer, the environment
file check and the Reasoner: each failed on the code before the fix."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from clevr_poc.environments import Environment
from clevr_poc.errors import FormatError, SolverTimeoutError, UnsafeProgramError
from clevr_poc.examples import load_example
from clevr_poc.knowledge import read_asp
from clevr_poc.queries import Atom, Constant, Inequality, Number, Variable
from clevr_poc.reasoning import Reasoner, SanitizedQuery, sanitize_query
from clevr_poc.scene import Scene

BACKGROUND = read_asp("background.lp")
CONSTRAINT = ":- object(X), at(X, 0), hasProperty(X, color, red).\n"


def write(tmp_path: Path, text: str, name: str = "environment_1.lp") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


# ---------------------------------------------------------------- 1: #include hidden by nested comments
def test_include_after_nested_block_comment_is_rejected(tmp_path):
    """Issue: ``%* %* *% "\\`` + ``*% #include "F".`` passed the old check (it closed the comment at the
    first ``*%`` and then read a string), while clingo nests the comments and opens F."""
    included = write(tmp_path, CONSTRAINT, "extra.lp")
    path = write(tmp_path, BACKGROUND + "object(0..4).\n" + '%* %* *% "\\\n' + f'*% #include "{included}".\n')
    with pytest.raises(FormatError, match="#include is not allowed") as info:
        Environment.from_lp(path)
    assert info.value.field == f"line {BACKGROUND.count(chr(10)) + 3}"
    assert str(path) in str(info.value)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs a FIFO")
def test_include_of_a_fifo_never_blocks(tmp_path):
    """An included FIFO made the old loader hang past every time limit: the file must never be opened."""
    fifo = tmp_path / "fifo.lp"
    os.mkfifo(fifo)
    path = write(tmp_path, BACKGROUND + "object(0..4).\n" + '%* %* *% "\\\n' + f'*% #include "{fifo}".\n')
    code = f"from clevr_poc.environments import Environment\nEnvironment.from_lp({str(path)!r})\n"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 1 and "#include is not allowed" in result.stderr


def test_an_environment_file_that_is_a_fifo_is_rejected_without_reading(tmp_path):
    if not hasattr(os, "mkfifo"):
        pytest.skip("needs a FIFO")
    fifo = tmp_path / "environment_2.lp"
    os.mkfifo(fifo)
    with pytest.raises(FormatError, match="not a regular file"):
        Environment.from_lp(fifo)


# ---------------------------------------------------------------- 2: non-ASCII text aborted the interpreter
@pytest.mark.parametrize("line", ["p(é).", ":- object(X), at(X, 0), hasProperty(X, color, rød).", "\u0663."])
def test_non_ascii_environment_text_is_a_typed_error(line, tmp_path):
    """``p(é).`` made clingo's logger callback raise UnicodeDecodeError in a nothrow scope: the
    interpreter aborted (PANIC). Run in a subprocess so that the old code's abort fails only this test."""
    path = write(tmp_path, BACKGROUND + "object(0..4).\n" + line + "\n")
    code = textwrap.dedent(f"""
        from clevr_poc.environments import Environment
        from clevr_poc.errors import FormatError
        try:
            Environment.from_lp({str(path)!r})
        except FormatError as exc:
            print(exc)
    """)
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr[-500:]
    message = result.stdout.strip()
    assert f"{path}, line {BACKGROUND.count(chr(10)) + 2}: non-ASCII character" in message
    assert str(path) in message


def test_non_ascii_in_a_comment_is_fine_and_never_reaches_clingo(tmp_path):
    path = write(tmp_path, BACKGROUND + "object(0..4). % cinq objets, café\n" + CONSTRAINT)
    assert Environment.from_lp(path).num_objects == 5


def test_non_ascii_query_is_rejected_naming_the_character():
    with pytest.raises(UnsafeProgramError, match=r"'é' is not part of the query language \(non-ASCII"):
        sanitize_query("missing(Q) :- hasProperty(X,color,Q), hasProperty(X,shape,é).")


# ---------------------------------------------------------------- 3: grounding outside the time limit
def _probe(variables: int) -> str:
    return "missing(Q) :- " + ", ".join(f"hasProperty(X{i},color,Q)" for i in range(variables)) + "."


def test_seven_object_variables_are_rejected_up_front():
    with pytest.raises(UnsafeProgramError, match="more than 6 object variables"):
        sanitize_query(_probe(7))


@pytest.mark.parametrize("mode", Reasoner.MODES)
def test_grounding_that_overruns_the_limit_is_stopped(mode):
    """Six object variables over 12 objects: 12^6 groundings of the query rule, far more than 1 s of
    grounding. The call must end within limit + 1 s with a typed error (was: 18-36 s, exit 0)."""
    reasoner = Reasoner(mode=mode, time_limit=1.0)
    environment, scene, question = load_example("appendix_a")
    reasoner.answer(environment, scene, _probe(2))  # start the worker outside the timed part
    crowded = Environment((), 12)
    started = time.monotonic()
    with pytest.raises(SolverTimeoutError, match="did not finish within 1 s"):
        reasoner.answer(crowded, Scene(()), _probe(6))
    assert time.monotonic() - started < 2.0
    # the reasoner still answers afterwards (a fresh worker)
    assert reasoner.answer(environment, scene, question).values == frozenset({"small", "medium"})


def test_object_variable_limit_is_overridable():
    assert sanitize_query(_probe(7), max_object_variables=7).text.count("hasProperty") == 7
    with pytest.raises(UnsafeProgramError, match="more than 2 object variables"):
        Reasoner(max_object_variables=2).sanitize(_probe(3))


# ---------------------------------------------------------------- 4: != arguments
@pytest.mark.parametrize("right", ["not", "foo", "red", "size", "100"])
def test_inequality_arguments_must_be_objects(right):
    query = f"missing(Q) :- hasProperty(X,color,Q), X != {right}."
    with pytest.raises(UnsafeProgramError, match=f"'{right}' in X != {right} is not an object|out of range"):
        sanitize_query(query)


@pytest.mark.parametrize("mode", Reasoner.MODES)
def test_inequality_with_not_is_a_typed_error_in_the_reasoner(mode):
    environment, scene, _ = load_example("appendix_a")
    with pytest.raises(UnsafeProgramError):
        Reasoner(mode=mode).answer(environment, scene, "missing(Q) :- hasProperty(X,color,Q), X != not.")


def test_official_inequalities_still_pass():
    checked = sanitize_query("missing(Q):-hasProperty(X,color,Q),hasProperty(Y,size,large),left(Y,X),X!=Y,X!=3.")
    assert checked.literals[-2:] == ("X!=Y", "X!=3")


# ---------------------------------------------------------------- 10: a file without the background theory
def test_file_with_only_an_object_declaration_is_rejected(tmp_path):
    path = write(tmp_path, "object(0..4).\n")
    with pytest.raises(FormatError, match=r"background theory \(asp/background.lp\) is incomplete: 60 of its 60"):
        Environment.from_lp(path)


def test_file_missing_one_background_rule_is_rejected(tmp_path):
    text = BACKGROUND.replace(":- exceed_region_capacity(_).\n", "") + "object(0..4).\n"
    with pytest.raises(FormatError, match=r"1 of its 60 statements are missing, the first one is "
                                          r"':- exceed_region_capacity\(_\).'") as info:
        Environment.from_lp(write(tmp_path, text))
    assert info.value.field == "background"


def test_show_lines_are_optional_and_kept(tmp_path):
    environment = Environment.from_lp(write(tmp_path, BACKGROUND + "object(0..4).\n" + CONSTRAINT))
    assert environment.show == () and len(environment.constraints) == 1


# ---------------------------------------------------------------- 11: a hand-built SanitizedQuery
# (#23: the query is a typed value, printed from its parts; a value made from parts is checked when made,
# so no text of its own can reach clingo and no field can disagree with its text)
_X, _Q = Variable("X"), Variable("Q")
_SIZE = Atom("hasProperty", (_X, Constant("size"), _Q))


@pytest.mark.parametrize("head, body, words", [
    (_Q, (Atom("hasProperty", (_X, Constant('size). #include "extra.lp'), _Q)),), "is not a variable, a constant"),
    (_Q, (_SIZE, Atom('#include "extra.lp"', ())), "predicate #include \"extra.lp\"/0 is not allowed"),
    (_Q, (Atom("hasProperty", (Variable("X) :- p(X"), Constant("size"), _Q)),), "is not a variable, a constant"),
    (_Q, (Atom("hasProperty", ("X", "size", "Q")),), "is not a variable, a constant"),
    (_Q, (_SIZE, Inequality(_X, Number(-1))), "is not a variable, a constant"),
    (_Q, (_SIZE, Inequality(_X, Number(100))), "number 100 out of range 0..99"),
    (_Q, (_SIZE, Inequality(_X, Constant("red"))), "'red' in X != red is not an object"),
    ("Q", (_SIZE,), "the head argument must be a variable"),
    (Variable("P"), (_SIZE,), "head variable P does not occur in the body"),
    (_Q, (), "non-empty tuple"),
])
def test_hand_built_sanitized_query_is_checked_when_made(head, body, words):
    with pytest.raises(UnsafeProgramError) as info:
        SanitizedQuery(head, body)
    assert words in str(info.value)


@pytest.mark.parametrize("mode", Reasoner.MODES)
def test_sanitized_query_fields_come_from_its_parts(mode):
    """Text, literals and attribute are printed from the parts: a value made from the parts of a checked
    query is that query, and the Reasoner answers it as such."""
    environment, scene, question = load_example("appendix_a")
    genuine = sanitize_query(question.asp_query)
    rebuilt = SanitizedQuery(genuine.head, genuine.body)
    assert rebuilt == genuine and rebuilt.text == genuine.text and rebuilt.attribute == "size"
    answer = Reasoner(mode=mode).answer(environment, scene, rebuilt)
    assert answer.values == frozenset({"small", "medium"}) and answer.attribute == "size"


def test_reasoner_bounds_the_object_variables_of_a_typed_query():
    """A value made from parts has no object-variable bound of its own; the Reasoner applies its own."""
    seven = SanitizedQuery(_Q, tuple(Atom("hasProperty", (Variable(f"X{i}"), Constant("color"), _Q))
                                     for i in range(7)))
    with pytest.raises(UnsafeProgramError, match="more than 6 object variables"):
        Reasoner().answer(Environment((), 8), Scene(()), seven)
    assert Reasoner(max_object_variables=7).sanitize(seven) is seven


# ---------------------------------------------------------------- minor defects
@pytest.mark.parametrize("query, words", [
    ("missing(Q) :- left(X, hasProperty(X,size,Q).", "unclosed '(' after 'left' at column 19: "),
    ("missing(Q) :- hasProperty(X,size,Q", "unclosed '(' after 'hasProperty' at column 26: "),
    ("missing(Q) :- hasProperty(X,size,Q)).", "')' at column 36 has no matching '(': "),
    ("missing(Q) :-\n  %* ( *% left(X,\n  hasProperty(X,size,Q).", "unclosed '(' after 'left' at line 2, column 15: "),
    ("missing(Q) :- ((X)", "unclosed '(' at column 15: "),
])
def test_unbalanced_parenthesis_says_so(query, words):
    """The message says which parenthesis, in plain words, with its column (and line, where the text has
    several; comments are skipped as clingo skips them)."""
    with pytest.raises(UnsafeProgramError) as info:
        sanitize_query(query)
    assert words in str(info.value) and "function term" not in str(info.value)
    assert str(info.value).count("\n") == 0


def test_environment_error_names_the_parameter_once(tmp_path):
    path = write(tmp_path, BACKGROUND + "object(0..4).\n:- object(X), at(X, 0), hasProperty(X, size, larg).\n")
    with pytest.raises(FormatError) as info:
        Environment.from_lp(path)
    message = str(info.value)
    assert message == f"{path}, line {BACKGROUND.count(chr(10)) + 2}: parameter v1: not a size (got 'larg')"


# ---------------------------------------------------------------- found by benchmarks/fuzz.py
def test_generic_constraint_next_to_an_indented_rule_is_no_traceback(tmp_path):
    """A global (region-less) rule followed by an indented region rule ended in ``KeyError: 'r'``."""
    path = write(tmp_path, BACKGROUND + "object(0..4).\n:- object(X), hasProperty(X, color, purple).\n"
                                        " :- object(X), at(X, 0), hasProperty(X, color, blue).\n")
    assert [c.template for c in Environment.from_lp(path).constraints] == ["generic", "negation"]


def test_crlf_environment_file_reads_the_same(tmp_path):
    """Files are read as clingo reads them (line ends unchanged): CRLF files still parse the same."""
    environment, _, _ = load_example("appendix_a")
    path = tmp_path / "environment_0.lp"
    path.write_bytes(environment.to_asp().replace("\n", "\r\n").encode("utf-8"))
    again = Environment.from_lp(path)
    assert again.constraints == environment.constraints and again.num_objects == environment.num_objects
    assert again.show == environment.show


def test_cli_stops_the_grounding_probe_at_the_time_limit(tmp_path):
    """The issue's command line: six object variables, ``--time-limit 1``: one error line, exit 1."""
    (tmp_path / "crowded.lp").write_text(BACKGROUND + "object(0..11).\n", encoding="utf-8")
    (tmp_path / "empty.json").write_text('{"objects": [], "relationships": {}}', encoding="utf-8")
    result = subprocess.run([sys.executable, "-m", "clevr_poc", "answer", "--environment", str(tmp_path / "crowded.lp"),
                             "--scene", str(tmp_path / "empty.json"), "--query", _probe(6), "--time-limit", "1",
                             "--mode", "direct"], capture_output=True, text=True, timeout=120)
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr.splitlines() == ["error: clingo did not finish within 1 s"]


def test_match_rule_with_non_ascii_text_is_no_match():
    """The public template matcher handed ``p(é).`` to clingo's parser, whose logger aborted the
    interpreter (defect 2 through another door). Run in a subprocess: the old code aborts."""
    code = "from clevr_poc.environments.templates import match_rule\nprint(match_rule('p(\\u00e9).'))\n"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0 and result.stdout.strip() == "None", result.stderr[-300:]
