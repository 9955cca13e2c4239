"""A new user's first hour (issue #25 item 4): the README runs as written on a fresh clone, and the command
lines a new user tries first say what they do and refuse bad settings before any work."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from clevr_poc.commands.main import main

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def _readme_python_block() -> str:
    tour = README[README.index("## A short tour"):]
    return re.search(r"```python\n(.*?)```", tour, re.S).group(1)


def _cli(argv: list[str], capsys) -> tuple[int, str, str]:
    status = main(argv)
    captured = capsys.readouterr()
    return status, captured.out, captured.err


# ---------------------------------------------------------------- the README's short tour
def test_readme_short_tour_runs_as_written_in_an_empty_folder(tmp_path):
    """A fresh clone has no environment.lp or scene files of its own: the tour must run from an empty
    folder, and its first printed line must be the answer its comment shows."""
    code = _readme_python_block()
    shown = re.search(r"print\(sorted\(answer\.values\)\)\s*#\s*(.*)", code).group(1).strip()
    result = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True,
                            timeout=120, env={**__import__("os").environ, "PYTHONPATH": str(ROOT)})
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == shown == "['medium', 'small']"
    assert lines[1].startswith("Possible size values: small, medium.")


def test_readme_command_lines_show_every_required_option():
    """Every ``python -m clevr_poc CMD`` line of the README names each option CMD requires outside
    ``[...]``, and the generate line says that ``--seed`` is required."""
    from clevr_poc.commands.main import build_parser

    parser = build_parser()
    commands = parser._subparsers._group_actions[0].choices  # noqa: SLF001 - argparse keeps them there
    for line in re.findall(r"^python -m clevr_poc (\w+) (.*)$", README, re.M):
        name, rest = line
        shown = re.sub(r"\[[^\]]*\]", "", rest.split("#")[0])
        for action in commands[name]._actions:  # noqa: SLF001
            if action.required and action.option_strings:
                assert any(o in shown.split() for o in action.option_strings), (name, action.option_strings)
    generate = next(rest for name, rest in re.findall(r"^python -m clevr_poc (\w+) (.*)$", README, re.M)
                    if name == "generate")
    assert "--seed" in generate.split("#")[1] and "required" in generate.split("#")[1]


# ---------------------------------------------------------------- command lines
@pytest.fixture(scope="module")
def demo_like_dataset(tmp_path_factory):
    """A dataset shaped like the demo's: one ``test`` split, no ``train`` split (1 environment x 3 scenes)."""
    from clevr_poc.generation.dataset_writer import generate_dataset

    root = tmp_path_factory.mktemp("first_hour") / "data"
    generate_dataset(root, environments=1, scenes_per_environment=3, seed=3, splits={"test": 1.0}, progress=False)
    return root


def test_evaluate_ns_vqa_defaults_say_gold_scene_and_gold_query(demo_like_dataset, capsys):
    status, out, err = _cli(["evaluate", "--dataset", str(demo_like_dataset), "--split", "test", "--model", "ns-vqa"],
                            capsys)
    assert status == 0
    assert "gold partial scene and the gold ASP query" in err and "--scene perception" in err
    assert json.loads(out.splitlines()[-1])["exact_accuracy"] == 1.0
    with pytest.raises(SystemExit):
        main(["evaluate", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert "both default to gold" in help_text


def test_render_and_evaluate_word_a_missing_dataset_the_same_way(tmp_path, capsys):
    missing = str(tmp_path / "nosuch")
    lines = []
    for argv in (["render", "--dataset", missing], ["evaluate", "--dataset", missing, "--split", "test",
                                                     "--model", "ns-vqa-gold"]):
        status, out, err = _cli(argv, capsys)
        assert status == 1 and out == ""
        lines.append(err.strip())
    assert lines[0] == lines[1] == f"error: {missing}: dataset folder not found"


def test_a_misspelt_option_points_at_the_commands_own_help(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["answer", "--explian"])
    assert exit_info.value.code == 2
    assert capsys.readouterr().err.strip() == ("python -m clevr_poc answer: error: unrecognized arguments: --explian "
                                               "(see python -m clevr_poc answer --help)")


# ---------------------------------------------------------------- train_parser
def _train(argv: list[str], capsys) -> tuple[int, str, str]:
    from clevr_poc.commands.train_parser_command import main as train_main

    status = train_main(argv)
    captured = capsys.readouterr()
    return status, captured.out, captured.err


_SMALL = ["--pretrain-pairs", "8", "--pretrain-steps", "1", "--eval-limit", "1", "--word-vec-dim", "8",
          "--hidden-size", "8", "--decoder-hidden", "8", "--threads", "1", "--no-progress"]


def test_train_parser_refuses_a_non_empty_checkpoint_folder_without_overwrite(tiny_dataset, tmp_path, capsys):
    out = tmp_path / "parser_bilstm"
    out.mkdir()
    for name, text in (("config.json", "{}"), ("weights.pt", "old"), ("MODEL_CARD.md", "# the shipped parser")):
        (out / name).write_text(text)
    status, _, err = _train(["--dataset", str(tiny_dataset), "--out", str(out), *_SMALL], capsys)
    assert status == 1
    assert err.strip().startswith(f"error: --out '{out}': not empty (holds MODEL_CARD.md, config.json, weights.pt)")
    assert "--overwrite" in err
    assert (out / "weights.pt").read_text() == "old"

    status, _, err = _train(["--dataset", str(tiny_dataset), "--out", str(out), "--overwrite", *_SMALL], capsys)
    assert status == 0, err
    assert not (out / "MODEL_CARD.md").exists()  # never a card describing other weights
    assert json.loads((out / "report.json").read_text())["dataset"]["pretrain_pairs"] == 8
    assert (out / "weights.pt").stat().st_size > 100


def test_train_parser_on_a_dataset_without_train_split_says_how_to_make_one(demo_like_dataset, tmp_path, capsys):
    status, _, err = _train(["--dataset", str(demo_like_dataset), "--out", str(tmp_path / "p"), *_SMALL], capsys)
    assert status == 1
    line = err.splitlines()[-1]
    assert line.startswith("error: ") and "unknown split" in line
    assert "python -m clevr_poc generate --out DIR" in line and "--splits train=0.8,test=0.2" in line


# ---------------------------------------------------------------- demo
@pytest.mark.parametrize("argv, names", [
    (["--device", "tpu"], "--device: not a torch device: 'tpu'"),
    (["--environments", "99999999999999999999"], "--environments: 99,999,999,999,999,999,999 is over"),
    (["--environments", "900", "--questions", "5000"], "--environments x --questions"),
    (["--samples", "100000000"], "100,000,000 is over"),
    # the words of generate for the same bad counts
    (["--environments", "0"], "error: --environments: must be >= 1, got 0"),
    (["--questions", "abc"], "error: --questions: expected an integer, got 'abc'"),
    (["--seed", "1.5"], "error: --seed: expected an integer, got '1.5'"),
])
def test_demo_checks_every_setting_before_any_work(argv, names, tmp_path, capsys):
    """Every setting is checked before the plan is printed or anything written, with one line naming it."""
    out = tmp_path / "demo"
    status, stdout, stderr = _cli(["demo", "--out", str(out), *argv], capsys)
    assert status == 1
    assert stdout == ""  # no plan printed
    assert stderr.count("\n") == 1 and names in stderr
    assert not out.exists()  # nothing written


# ---------------------------------------------------------------- parse
PARSER = str(ROOT / "models" / "parser_bilstm")


def test_parse_says_how_many_words_it_did_not_know(capsys):
    status, out, err = _cli(["parse", "--parser", PARSER, "--question", "What colour is the tiny cube?"], capsys)
    assert status == 0 and out.startswith("missing(Q) :- ")
    assert err.strip() == "note: the parser did not know 1 of 6 words ('colour')"


@pytest.mark.parametrize("question, says", [
    ("Quelle est la couleur de la grande sphère?", "did not know 9 of 9 words ('quelle', 'est', 'la'"),
    ("red " * 20_000, "80,000 characters is over the 2,000 a question may have"),
    ("cube " + "xylophone " * 30, "did not know 30 of 31 words"),
])
def test_parse_refuses_a_question_it_cannot_read(question, says, capsys):
    status, out, err = _cli(["parse", "--parser", PARSER, "--question", question], capsys)
    assert status == 1 and out == ""
    assert err.startswith("error: ") and err.count("\n") == 1 and says in err


def test_parse_questions_file_marks_unreadable_lines(tmp_path, capsys):
    lines = [{"question": "What size is the red sphere?"}, {"question": "Quelle est la couleur de la sphère?"}]
    path = tmp_path / "q.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    status, out, err = _cli(["parse", "--parser", PARSER, "--questions", str(path)], capsys)
    rows = [json.loads(line) for line in out.splitlines()]
    assert status == 0 and rows[0]["asp_query"].startswith("missing(Q) :- hasProperty(X,size,Q)")
    assert rows[1]["asp_query"] is None and "did not know 8 of 8 words" in rows[1]["error"]
    assert "1 ok, 1 failed" in err


def test_demo_refuses_an_out_folder_that_is_not_a_demo_folder(tmp_path):
    """A generated dataset or the clone's root as --out: the demo would write dataset/ and report/ into it."""
    from clevr_poc.commands.demo_command import _check_demo_folder
    from clevr_poc.errors import FormatError

    _check_demo_folder(tmp_path / "new")                     # not there yet: fine
    (tmp_path / "demo" / "dataset").mkdir(parents=True)
    (tmp_path / "demo" / "report").mkdir()
    _check_demo_folder(tmp_path / "demo")                    # a demo's own folder: the rerun resumes
    (tmp_path / "data" / "incomplete").mkdir(parents=True)
    (tmp_path / "data" / "dataset.json").write_text("{}")
    with pytest.raises(FormatError, match=r"holds 'dataset.json' and is not a demo folder"):
        _check_demo_folder(tmp_path / "data")


def test_readme_demo_scores_read_as_the_demo_prints_them():
    """The README's demo row has the figures of the demo's Table 2 (4 decimals; the fresh-clone run's JSON line
    was {"exact_accuracy": 0.9625, "jaccard": 0.98125, "n": 80}), not a third rounding (0.981)."""
    from clevr_poc.evaluation import table2_markdown

    table = table2_markdown({"all (80)": {"NS-VQA": {"exact_accuracy": 0.9625, "jaccard": 0.98125}}})
    assert "| all (80) | 0.9625 |" in table and "| all (80) | 0.9812 |" in table
    row = next(line for line in README.splitlines() if line.startswith("| the demo's fresh questions"))
    assert row.endswith("| 80 | BiLSTM parser | 0.9625 | 0.9812 |")


# ---------------------------------------------------------------- the fresh-clone newcomer's findings (6 Dec)
def test_a_truncated_question_file_names_where_its_string_starts(tmp_path, capsys):
    from clevr_poc.errors import FormatError
    from clevr_poc.question import Question

    path = tmp_path / "q.json"
    path.write_text('{"question": "What color is the cube', encoding="utf-8")
    with pytest.raises(FormatError) as raised:
        Question.from_file(path)
    assert str(raised.value) == f"{path}: invalid JSON: unterminated string starting at line 1 column 14"


def test_a_gold_answer_of_another_attribute_is_refused():
    from clevr_poc.errors import FormatError
    from clevr_poc.question import Question

    record = {"question": "What color is the hidden object?", "asp_query": "missing(Q):-hasProperty(X,color,Q).",
              "answer": ["cube"]}
    with pytest.raises(FormatError) as raised:
        Question.from_json(record, source="q.json")
    assert str(raised.value) == ("q.json, field 'answer': 'cube' is a shape, but asp_query asks for the hidden "
                                 "object's color (got ['cube'])")
    assert Question.from_json({**record, "answer": ["blue", "red"]}).answer == {"blue", "red"}
    # a query outside the query language is not read here: its answer is not compared either
    assert Question.from_json({**record, "asp_query": "not a query", "answer": "cube"}).answer == {"cube"}


def test_a_dataset_json_without_a_format_version_is_named_so(tmp_path, capsys):
    out = tmp_path / "data"
    out.mkdir()
    (out / "dataset.json").write_text('{"not": "a dataset"}', encoding="utf-8")
    status, _, err = _cli(["generate", "--out", str(out), "--environments", "1", "--scenes-per-environment", "1",
                           "--seed", "0", "--no-progress"], capsys)
    assert status == 1
    assert "holds a dataset of no format version (dataset.json has no format_version), this clevr_poc writes" in err
    assert "None" not in err and "Traceback" not in err


def test_an_unknown_example_names_the_option(capsys):
    status, _, err = _cli(["answer", "--example", "nonexistent_example"], capsys)
    assert status == 1
    assert err.strip() == ("error: --example: unknown example; expected one of ['appendix_a', 'appendix_c1'] "
                           "(got 'nonexistent_example')")
