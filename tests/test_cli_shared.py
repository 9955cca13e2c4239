"""The pieces every command line shares (clevr_poc.commands.shared): argparse types and the error boundary."""

from __future__ import annotations

import argparse
import subprocess
import sys

import pytest

from clevr_poc.commands.shared import (EXIT_ERROR, EXIT_INTERRUPTED, int_at_least, non_negative_float, open_unit_float,
                            positive_float, positive_int, run_guarded)
from clevr_poc.errors import FormatError


@pytest.mark.parametrize("parse, text, value", [
    (positive_int, "3", 3), (int_at_least(0), "0", 0), (non_negative_float, "0", 0.0),
    (positive_float, "1e-5", 1e-5), (open_unit_float, "0.25", 0.25)])
def test_types_accept_values_in_range(parse, text, value):
    assert parse(text) == value


@pytest.mark.parametrize("parse, text, message", [
    (positive_int, "0", "expected an integer >= 1, got '0'"), (positive_int, "two", "expected an integer >= 1"),
    (non_negative_float, "-0.1", "expected a number >= 0"), (non_negative_float, "nan", "expected a number >= 0"),
    (positive_float, "0", "expected a number > 0"), (open_unit_float, "1", "expected a number in (0, 1)")])
def test_types_refuse_values_out_of_range(parse, text, message):
    with pytest.raises(argparse.ArgumentTypeError) as info:
        parse(text)
    assert message in str(info.value)


def test_run_guarded_turns_errors_into_one_line(capsys):
    def fails():
        raise FormatError("bad value\n  spread over lines", source="x.json", field="f", value=3)

    assert run_guarded(fails) == EXIT_ERROR
    err = capsys.readouterr().err
    assert err.startswith("error: x.json") and err.count("\n") == 1 and "x.json, field 'f': bad value" in err

    def interrupted():
        raise KeyboardInterrupt

    assert run_guarded(interrupted, interrupted="stopped: rerun to resume") == EXIT_INTERRUPTED
    assert capsys.readouterr().err == "stopped: rerun to resume\n"

    def missing():
        raise ModuleNotFoundError("No module named 'torch'", name="torch")

    assert run_guarded(missing, missing_module=lambda exc: f"needs {exc.name}") == EXIT_ERROR
    assert capsys.readouterr().err == "error: needs torch\n"
    with pytest.raises(ModuleNotFoundError):   # not expected by this command: a real bug, keep the traceback
        run_guarded(missing)
    assert run_guarded(lambda: None) == 0 and run_guarded(lambda: 7) == 7


def test_bad_numbers_are_usage_errors_in_every_command_line():
    for module, argv in (("clevr_poc.train_parser", ["--dataset", "d", "--out", "o", "--pretrain-pairs", "0"]),
                         ("clevr_poc.perception", ["evaluate", "--dataset", "d", "--checkpoint", "c", "--limit", "0"]),
                         ("clevr_poc.baselines.clip", ["train", "nl", "--dataset", "d", "--out", "o", "--epochs", "0"])):
        result = subprocess.run([sys.executable, "-m", module, *argv], capture_output=True, text=True, timeout=120)
        assert result.returncode == 2, (module, result.stderr)
        assert "expected an integer >= 1, got '0'" in result.stderr, module


def test_a_file_given_as_the_dataset_is_named_a_file(tmp_path):
    """``--dataset README.md`` exists: "is a file, not a dataset folder", not "not found"."""
    from clevr_poc.commands.shared import require_dataset_folder
    from clevr_poc.dataset_reader import load_dataset
    from clevr_poc.errors import FormatError

    file = tmp_path / "README.md"
    file.write_text("# not a dataset\n")
    for check in (require_dataset_folder, load_dataset):
        with pytest.raises(FormatError, match="is a file, not a dataset folder"):
            check(file)
        with pytest.raises(FormatError, match="dataset folder not found"):
            check(tmp_path / "nope")


@pytest.mark.parametrize("argv, line", [
    (["generate", "--out", "ds", "--environments", "1", "--scenes-per-environment", "1", "--seed", "0"],
     "interrupted: run the same command again to resume (examples written so far are kept)"),
    (["generate", "--out", "ds", "--environments", "1", "--scenes-per-environment", "1", "--seed", "0", "--render"],
     "interrupted: run the same command again to resume (examples and images written so far are kept)"),
    (["render", "--dataset", "ds"], "interrupted: run the same command again to resume (images rendered so far are kept)"),
    (["render", "--dataset", "ds", "--overwrite"],
     "interrupted: run the same command again without --overwrite to resume (images rendered so far are kept)"),
    (["demo", "--out", "d"], "interrupted: run the same command again to resume (the dataset generated and rendered "
                             "so far in d/dataset is reused; the answering starts over)"),
    (["evaluate", "--dataset", "ds", "--split", "test", "--model", "ns-vqa", "--checkpoint", "p.jsonl"],
     "interrupted: run the same command again to resume (answers so far are kept in p.jsonl)"),
    (["evaluate", "--dataset", "ds", "--split", "test", "--model", "ns-vqa"],
     "interrupted (nothing was kept: with --checkpoint FILE.jsonl a rerun resumes)"),
    (["evaluate", "--dataset", "ds", "--split", "test", "--predictions", "p.json"], "interrupted"),
    (["evaluate", "--dataset", "ds", "--split", "test", "--model", "clip-nl", "--checkpoint", "c"], "interrupted"),
    (["export", "--format", "hf", "--dataset", "ds", "--out", "o"], "interrupted"),
])
def test_ctrl_c_says_whether_running_the_same_command_again_resumes(argv, line):
    from clevr_poc.commands.main import build_parser
    from clevr_poc.commands.shared import interrupted_line

    assert interrupted_line(build_parser().parse_args(argv)) == line


def test_ctrl_c_in_generate_prints_how_to_resume(tmp_path, monkeypatch, capsys):
    from clevr_poc.commands import generate_command
    from clevr_poc.commands.main import main

    def stopped(args):
        raise KeyboardInterrupt

    monkeypatch.setattr(generate_command, "run", stopped)
    assert main(["generate", "--out", str(tmp_path / "ds"), "--environments", "1",
                 "--scenes-per-environment", "1", "--seed", "0"]) == EXIT_INTERRUPTED
    assert capsys.readouterr().err == ("interrupted: run the same command again to resume (examples written so far "
                                       "are kept)\n")
