"""``python -m clevr_poc.train_parser``: a tiny end-to-end run (pretraining, REINFORCE, resume) and
one-line errors for bad inputs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from clevr_poc.parsing.seq2seq import BiLSTMParser  # noqa: E402
from clevr_poc.reasoning import sanitize_query  # noqa: E402
from clevr_poc.train_parser import main  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
TINY = ["--word-vec-dim", "16", "--hidden-size", "16", "--decoder-hidden", "32", "--threads", "1", "--no-progress"]


def _error_line(capsys) -> str:
    """The one error line on stderr (progress lines may precede it; never a traceback)."""
    err = capsys.readouterr().err
    assert "Traceback" not in err, err
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and err.rstrip().endswith(errors[0]), err
    return errors[0]


def test_tiny_run_pretrains_reinforces_and_resumes(tiny_dataset, tmp_path, capsys):
    out = tmp_path / "parser"
    args = ["--dataset", str(tiny_dataset), "--out", str(out), "--pretrain-pairs", "40", "--pretrain-steps", "6",
            "--reinforce-steps", "4", "--reward", "jaccard", "--batch-size", "8", "--checkpoint-every", "2",
            "--eval-limit", "8", "--keep-checkpoints", "--seed", "3", *TINY]
    assert main(args) == 0
    report = json.loads((out / "report.json").read_text())
    assert set(report["phases"]) == {"pretrain", "reinforce"}
    assert report["dataset"]["pretrain_pairs"] == 40 and report["phases"]["pretrain"]["questions"] == 8
    for phase in report["phases"].values():
        # literal program accuracy (the paper's) <= semantic (same answer set): an equal program agrees
        assert 0.0 <= phase["program_accuracy"] <= phase["semantic_program_accuracy"] <= 1.0
        assert 0.0 <= phase["exact_accuracy"] <= phase["jaccard"] <= 1.0
    assert [h["step"] for h in report["reinforce_history"]] == [4]
    assert report["timing"]["pretrain"]["wall_s"] >= 0 and (out / "checkpoints" / "state.pt").is_file()
    parser = BiLSTMParser.from_pretrained(out)
    sanitize_query(parser.parse("What color is the large cube left of the red sphere?"))
    # the same command again resumes from the final checkpoint instead of training anew
    capsys.readouterr()
    assert main(args) == 0
    assert "resuming from" in capsys.readouterr().err
    assert json.loads((out / "report.json").read_text())["phases"] == report["phases"]
    # other settings do not resume that checkpoint
    assert main([a if a != "3" else "4" for a in args]) == 1
    assert "other settings (seed)" in _error_line(capsys)
    # REINFORCE only, from the trained parser, in the NS-VQA setting (the ablation of docs/parser.md)
    again = tmp_path / "again"
    assert main(["--dataset", str(tiny_dataset), "--out", str(again), "--init", str(out), "--pretrain-steps", "0",
                 "--pretrain-pairs", "40",
                 "--reinforce-steps", "2", "--supervised-weight", "0", "--entropy-weight", "0", "--unconstrained",
                 "--advantage", "batch", "--baseline-init", "zero", "--batch-size", "8", "--eval-limit", "8",
                 *TINY]) == 0
    second = json.loads((again / "report.json").read_text())
    assert second["phases"]["pretrain"]["program_accuracy"] == report["phases"]["reinforce"]["program_accuracy"]
    assert second["model"] == report["model"] and second["reinforce_history"][0]["step"] == 2


def test_missing_dataset_is_a_one_line_error(tmp_path, capsys):
    assert main(["--dataset", str(tmp_path / "nope"), "--out", str(tmp_path / "o"), *TINY]) == 1
    line = _error_line(capsys)
    assert "dataset folder not found" in line and "nope" in line


def test_too_many_pretraining_pairs_is_a_one_line_error(tiny_dataset, tmp_path, capsys):
    assert main(["--dataset", str(tiny_dataset), "--out", str(tmp_path / "o"), "--pretrain-pairs", "5000", *TINY]) == 1
    line = _error_line(capsys)
    assert "only" in line and "5000" in line


def test_unknown_split_is_a_one_line_error(tiny_dataset, tmp_path, capsys):
    assert main(["--dataset", str(tiny_dataset), "--out", str(tmp_path / "o"), "--pretrain-pairs", "5",
                 "--eval-split", "validation", *TINY]) == 1
    assert "unknown split" in _error_line(capsys)


@pytest.mark.parametrize("bad", [["--pretrain-pairs", "0"], ["--reward", "answer"], ["--lr", "-1"],
                                 ["--reinforce-steps", "x"]])
def test_bad_arguments_exit_with_usage(bad, tmp_path):
    result = subprocess.run([sys.executable, "-m", "clevr_poc.train_parser", "--dataset", str(tmp_path),
                             "--out", str(tmp_path / "o"), *bad], capture_output=True, text=True, cwd=ROOT)
    assert result.returncode == 2
    assert "Traceback" not in result.stderr and "error:" in result.stderr.splitlines()[-1]
