"""The evaluator: metrics computed by hand, multi-hot equivalence, breakdowns, Table-2 Markdown, CLI scoring."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from clevr_poc import domain
from clevr_poc.dataset_reader import Example
from clevr_poc.errors import FormatError
from clevr_poc.evaluation import (
    EvaluationReport, ExampleModel, Prediction, breakdown_markdown, evaluate, exact_accuracy, exact_match,
    exact_match_scores, from_multi_hot, jaccard_index, jaccard_scores, mean_jaccard, normalize_prediction,
    parsed_mask, score_predictions, table2_markdown, to_multi_hot, write_outputs,
)
from clevr_poc.question import Question
from clevr_poc.scene import Scene

from conftest import APPENDIX_A_QUERY, appendix_a_complete_scene, appendix_a_environment
from evaluate_cli_support import run_cli, write_official_example


def make_example(index: int, attribute: str, answer: set[str], *, family: str = "zero_hop.json",
                 family_index: int = 0, environment_id: int = 0, with_complete: bool = True) -> Example:
    environment = appendix_a_environment()
    complete = appendix_a_complete_scene()
    query = f"missing(Q) :- hasProperty(X,{attribute},Q), hasProperty(X,color,red)."
    question = Question(
        text=f"question {index}", asp_query=query, answer=frozenset(answer),
        image_filename=f"CLEVR_test_{index:06d}.png", image_index=index, split="test",
        template_filename=family, question_family_index=family_index, question_index=index,
        environment_id=environment_id,
    )
    return Example(environment, complete.without_object(4), question, complete if with_complete else None)


class FixedModel(ExampleModel):
    """Answers from a table keyed by question text (None = parse failure)."""

    name = "fixed"

    def __init__(self, table: dict[str, Any]):
        self.table = table
        self.calls = 0

    def predict_detailed(self, example):
        self.calls += 1
        return normalize_prediction(self.table[example.question.text])


# ---------------------------------------------------------------------------- metrics by hand
@pytest.mark.parametrize("gold, predicted, exact, jaccard", [
    ({"small", "medium"}, {"small", "medium"}, 1.0, 1.0),
    ({"small", "medium"}, {"small"}, 0.0, 0.5),
    ({"red", "blue", "green"}, {"red", "blue", "cyan"}, 0.0, 0.5),    # |A∩P| = 2, |A∪P| = 4
    ({"cube"}, {"sphere"}, 0.0, 0.0),
    ({"metal"}, {"metal", "cube"}, 0.0, 0.5),                          # value of another attribute
    ({"gray", "red", "blue"}, {"red"}, 0.0, 1 / 3),
    ({"cube"}, set(), 0.0, 0.0),                                       # empty prediction (e.g. unsat)
    (set(), set(), 1.0, 1.0),                                          # both empty: decided 1.0
    ({"cube"}, None, 0.0, 0.0),                                        # parse failure
    (set(), None, 0.0, 0.0),
])
def test_metrics_by_hand(gold, predicted, exact, jaccard):
    assert exact_match(gold, predicted) == exact
    assert jaccard_index(gold, predicted) == pytest.approx(jaccard)


def test_mean_metrics_by_hand():
    golds = [{"small", "medium"}, {"cube"}, {"red", "blue"}, {"metal"}]
    preds = [{"small", "medium"}, None, {"red"}, {"rubber"}]
    assert exact_accuracy(golds, preds) == 0.25
    assert mean_jaccard(golds, preds) == pytest.approx((1 + 0 + 0.5 + 0) / 4)
    assert exact_accuracy([], []) == 0.0
    with pytest.raises(FormatError, match="same length"):
        exact_accuracy(golds, preds[:2])


def test_multi_hot_layout_follows_labels():
    array = to_multi_hot([{"red", "sphere"}, set(), None])
    assert array.shape == (3, 17) and array.dtype == bool
    assert list(np.flatnonzero(array[0])) == [domain.LABELS.index("red"), domain.LABELS.index("sphere")] == [0, 16]
    assert not array[1].any() and not array[2].any()
    assert list(parsed_mask([{"red"}, set(), None])) == [True, True, False]
    assert from_multi_hot(array) == [frozenset({"red", "sphere"}), frozenset(), frozenset()]
    with pytest.raises(FormatError, match="17 labels"):
        to_multi_hot([{"crimson"}])


def test_multi_hot_equals_set_metrics_on_random_answers():
    rng = random.Random(7)
    golds, preds = [], []
    for _ in range(300):
        golds.append(set(rng.sample(domain.LABELS, rng.randint(0, 4))))
        roll = rng.random()
        if roll < 0.1:
            preds.append(None)
        elif roll < 0.3:
            preds.append(set(golds[-1]))
        else:
            preds.append(set(rng.sample(domain.LABELS, rng.randint(0, 5))))
    gold_array, pred_array, mask = to_multi_hot(golds), to_multi_hot(preds), parsed_mask(preds)
    exact = exact_match_scores(gold_array, pred_array, parsed=mask)
    jac = jaccard_scores(gold_array, pred_array, parsed=mask)
    assert exact.dtype == np.float64 and exact.shape == (300,)
    assert list(exact) == [exact_match(g, p) for g, p in zip(golds, preds)]
    assert np.allclose(jac, [jaccard_index(g, p) for g, p in zip(golds, preds)])
    assert exact.mean() == pytest.approx(exact_accuracy(golds, preds))
    # float scores (e.g. sigmoid outputs) are binarised at 0.5
    probabilities = np.where(pred_array, 0.9, 0.2).astype(np.float32)
    assert np.array_equal(exact_match_scores(gold_array.astype(float), probabilities, parsed=mask), exact)


def test_multi_hot_shape_errors():
    with pytest.raises(FormatError, match=r"shape \(n, 17\)"):
        exact_match_scores(np.zeros((2, 16), bool), np.zeros((2, 16), bool))
    with pytest.raises(FormatError, match="same shape"):
        jaccard_scores(np.zeros((2, 17), bool), np.zeros((3, 17), bool))
    with pytest.raises(FormatError, match="parsed"):
        jaccard_scores(np.zeros((2, 17), bool), np.zeros((2, 17), bool), parsed=np.ones(3, bool))


# ---------------------------------------------------------------------------- evaluate and breakdowns
def _four_examples() -> list[Example]:
    return [
        make_example(0, "size", {"small", "medium"}, family="zero_hop.json", family_index=0, environment_id=3),
        make_example(1, "shape", {"cube", "sphere"}, family="one_hop.json", family_index=2, environment_id=3),
        make_example(2, "color", {"red", "blue", "green"}, family="one_hop.json", family_index=2,
                     environment_id=11),
        make_example(3, "size", {"large"}, family="one_hop.json", family_index=5, environment_id=11,
                     with_complete=False),
    ]


def test_evaluate_scores_breakdowns_and_parse_failures():
    examples = _four_examples()
    model = FixedModel({
        "question 0": {"small", "medium"},          # exact
        "question 1": None,                          # parse failure
        "question 2": ["red", "blue", "cyan"],       # J = 2/4 (lists are accepted)
        "question 3": frozenset({"large", "small"}),  # J = 1/2
    })
    report = evaluate(model, examples, progress=False, split="test")
    assert model.calls == 4
    assert report.n == 4 and report.parse_failures == 1 and report.parse_failure_rate == 0.25
    assert report.exact_accuracy == 0.25
    assert report.jaccard == pytest.approx((1 + 0 + 0.5 + 0.5) / 4)
    assert report.summary() == {"exact_accuracy": 0.25, "jaccard": pytest.approx(0.5), "n": 4}
    by_attribute = report.breakdown("attribute")
    assert list(by_attribute) == ["color", "shape", "size"]            # domain.ATTRIBUTES order
    assert by_attribute["size"].n == 2 and by_attribute["size"].exact_accuracy == 0.5
    assert by_attribute["size"].jaccard == pytest.approx(0.75)
    assert by_attribute["shape"].parse_failures == 1 and by_attribute["shape"].jaccard == 0.0
    family = report.breakdown("family")
    assert {k: v.n for k, v in family.items()} == {"one_hop.json": 3, "zero_hop.json": 1}
    template = report.breakdown("template")
    assert list(template) == ["one_hop.json#2", "one_hop.json#5", "zero_hop.json#0"]
    assert template["one_hop.json#2"].jaccard == pytest.approx(0.25)
    # complete scene has 5 objects; without it the environment's N (also 5) is used
    assert {k: v.n for k, v in report.breakdown("num_objects").items()} == {"5": 4}
    environments = report.breakdown("environment")
    assert list(environments) == ["3", "11"]                           # numeric order
    assert environments["11"].jaccard == pytest.approx(0.5)
    # the "exclude" policy averages over parsed predictions only, still counting the failure
    excluded = evaluate(model, examples, progress=False, parse_failures="exclude")
    assert excluded.exact_accuracy == pytest.approx(1 / 3)
    assert excluded.jaccard == pytest.approx(2 / 3)
    assert excluded.parse_failures == 1 and excluded.n == 4


def test_report_json_round_trip(tmp_path):
    examples = _four_examples()
    model = FixedModel({"question 0": {"small"}, "question 1": None, "question 2": {"red"}, "question 3": {"large"}})
    report = evaluate(model, examples, progress=False, split="test")
    path = report.to_file(tmp_path / "r.json")
    data = json.loads(path.read_text())
    assert data["n"] == 4 and data["parse_failures"] == 1
    assert data["failure_reasons"] == {"unparseable": 1}
    assert data["breakdowns"]["attribute"]["size"] == {"n": 2, "exact_accuracy": 0.5, "jaccard": 0.75,
                                                       "parse_failures": 0}
    assert data["examples"][1] == {"key": "CLEVR_test_000001.png", "gold": ["cube", "sphere"], "predicted": None,
                                   "exact": 0.0, "jaccard": 0.0, "attribute": "shape", "family": "one_hop.json",
                                   "template": "one_hop.json#2", "num_objects": "5", "environment": "3"}
    again = EvaluationReport.from_file(path)
    assert again.results == report.results and again.jaccard == report.jaccard


def test_predict_batch_and_detailed_are_used():
    examples = _four_examples()

    class Batched:
        name = "batched"

        def __init__(self):
            self.sizes = []

        def predict_batch(self, batch):
            self.sizes.append(len(batch))
            return [Prediction(None, "no ###{...}### block", "I think it is red") if i % 2 else
                    set(e.question.answer) for i, e in enumerate(batch)]

    model = Batched()
    report = evaluate(model, examples, progress=False, batch_size=3)
    assert model.sizes == [3, 1]
    # odd positions within each batch fail: only example 1 (batch 1 is [0, 1, 2], batch 2 is [3])
    assert [r.parsed for r in report.results] == [True, False, True, True]
    assert report.failure_reasons() == {"no ###{...}### block": 1}
    assert report.results[1].raw == "I think it is red"

    class Wrong:
        name = "wrong"

        def predict_batch(self, batch):
            return [None]

    with pytest.raises(FormatError, match="returned 1 predictions for 4"):
        evaluate(Wrong(), examples, progress=False, batch_size=8)


@pytest.mark.parametrize("bad, message", [("red", "must be a set"), ({"red", 3}, "must be strings"),
                                          (42, "must be a set")])
def test_bad_model_output_is_a_format_error(bad, message):
    with pytest.raises(FormatError, match=message):
        evaluate(FixedModel({"question 0": bad}), _four_examples()[:1], progress=False)


def test_unlabelled_question_cannot_be_scored():
    example = make_example(0, "size", {"small"})
    unlabelled = Example(example.environment, example.partial_scene,
                         Question(text="q", asp_query=APPENDIX_A_QUERY, image_filename="x.png"))
    with pytest.raises(FormatError, match="no gold answer"):
        evaluate(FixedModel({"q": {"small"}}), [unlabelled], progress=False)


# ---------------------------------------------------------------------------- tables and files
def test_table2_markdown_exact_text():
    rows = {
        "2000": {"NS-VQA (gold)": {"exact_accuracy": 1.0, "jaccard": 1.0},
                 "GPT-4": {"exact_accuracy": 0.4626, "jaccard": 0.5164}},
        "6000": {"NS-VQA (gold)": {"exact_accuracy": 0.95504, "jaccard": 0.95781}},
    }
    assert table2_markdown(rows) == (
        "(a) Exact answer accuracy\n"
        "\n"
        "| Dataset | NS-VQA (gold) | GPT-4 |\n"
        "|---|---:|---:|\n"
        "| 2000 | 1.0000 | 0.4626 |\n"
        "| 6000 | 0.9550 | - |\n"
        "\n"
        "(b) Jaccard index\n"
        "\n"
        "| Dataset | NS-VQA (gold) | GPT-4 |\n"
        "|---|---:|---:|\n"
        "| 2000 | 1.0000 | 0.5164 |\n"
        "| 6000 | 0.9578 | - |\n"
    )


def test_table2_from_reports_and_breakdown_markdown():
    examples = _four_examples()
    perfect = evaluate(FixedModel({e.question.text: e.question.answer for e in examples}), examples,
                       progress=False, name="oracle", split="test")
    half = evaluate(FixedModel({"question 0": {"small", "medium"}, "question 1": {"cube", "sphere"},
                                "question 2": None, "question 3": {"small"}}), examples, progress=False,
                    name="half", split="test")
    text = table2_markdown({"test": {"oracle": perfect, "half": half}}, row_header="Split")
    assert "| Split | oracle | half |\n|---|---:|---:|\n| test | 1.0000 | 0.5000 |" in text
    md = breakdown_markdown(half)
    assert "- parse failures: 1 (25.00%; scored as wrong)" in md
    assert "| color | 1 | 0.0000 | 0.0000 | 1 |" in md


def test_write_outputs_writes_json_markdown_and_plots(tmp_path):
    pytest.importorskip("matplotlib")
    examples = _four_examples()
    report = evaluate(FixedModel({e.question.text: e.question.answer for e in examples}), examples,
                      progress=False, name="oracle", split="test")
    written = write_outputs(report, tmp_path)
    assert set(written) >= {"report.json", "predictions.json", "table2.md", "breakdowns.md", "plots/oracle_by_attribute.png",
                            "plots/oracle_by_environment.png"}
    assert (tmp_path / "plots" / "oracle_by_attribute.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "| test | 1.0000 |" in (tmp_path / "table2.md").read_text()
    predictions = json.loads((tmp_path / "predictions.json").read_text())
    assert predictions["CLEVR_test_000000.png"] == ["medium", "small"]
    assert score_predictions(examples, predictions).results == report.results
    several = write_outputs({"a": report, "b": report}, tmp_path / "two", plots=False)
    assert set(several) == {"report_a.json", "report_b.json", "predictions_a.json", "predictions_b.json",
                            "table2.md", "breakdowns.md"}
    from clevr_poc.evaluation.plots import plot_comparison

    compare = plot_comparison({"a": report, "b": report}, tmp_path / "cmp.png", metric="jaccard")
    assert compare.read_bytes()[:4] == b"\x89PNG"
    assert not list(tmp_path.rglob(".*.tmp"))


# ---------------------------------------------------------------------------- scoring-only mode
def test_score_predictions_and_its_errors():
    examples = _four_examples()
    preds = {"CLEVR_test_000000.png": ["small", "medium"], "CLEVR_test_000001.png": None,
             "CLEVR_test_000002.png": ["red", "blue", "green"], "CLEVR_test_000003.png": []}
    report = score_predictions(examples, preds, split="test")
    assert report.exact_accuracy == 0.5 and report.parse_failures == 1
    assert report.results[3].predicted == frozenset() and report.results[3].parsed
    with pytest.raises(FormatError, match="no prediction for 1 of 4 questions.*CLEVR_test_000003.png"):
        score_predictions(examples, {k: v for k, v in preds.items() if k != "CLEVR_test_000003.png"})
    with pytest.raises(FormatError, match="match no question.*CLEVR_test_000099.png"):
        score_predictions(examples, {**preds, "CLEVR_test_000099.png": ["red"]})
    with pytest.raises(FormatError,
                       match=r"^field 'CLEVR_test_000000.png': not one of the 17 labels .*\(got 'crimson'\)$"):
        score_predictions(examples, {**preds, "CLEVR_test_000000.png": ["crimson"]})
    with pytest.raises(FormatError, match="list of values or null.*'small'"):
        score_predictions(examples, {**preds, "CLEVR_test_000000.png": "small"})


# ---------------------------------------------------------------------------- the evaluate command
@pytest.fixture
def official_dataset(tmp_path) -> tuple[Path, list[Question]]:
    """A 3-question split in the official release's layout (``output/``, ``testing``,
    ``environment_constraints/<id>.lp``) under ``tmp_path / "clevr-poc"``; gold answers computed by the
    Reasoner."""
    from clevr_poc.baselines.llm_standalone import worked_examples
    from clevr_poc.reasoning import Reasoner

    complete = appendix_a_complete_scene()
    cases = [(appendix_a_environment(), complete.without_object(4), APPENDIX_A_QUERY, complete)]
    for shot in worked_examples():
        cases.append((shot.environment, shot.scene, shot.asp_query, None))
    root, reasoner = tmp_path / "clevr-poc", Reasoner()
    return root, [write_official_example(root, index, environment, partial, query, text=f"question {index}",
                                         template_filename="one_hop.json", question_family_index=index,
                                         environment_id=index, reasoner=reasoner, complete=full)
                  for index, (environment, partial, query, full) in enumerate(cases)]


def test_cli_scores_a_predictions_file(official_dataset, tmp_path, capsys):
    root, questions = official_dataset
    assert [sorted(q.answer) for q in questions] == [["medium", "small"], ["cube"],
                                                     ["blue", "brown", "cyan", "green", "purple", "red"]]
    predictions = {"CLEVR_000000.png": ["small", "medium"], "CLEVR_000001.png": None,
                   "CLEVR_000002.png": ["red", "blue", "gray"]}          # J = 2/7
    path = tmp_path / "preds.json"
    path.write_text(json.dumps(predictions))
    status, out, err = run_cli(["evaluate", "--dataset", str(root), "--split", "test", "--predictions", str(path)],
                               capsys)
    assert status == 0 and not err
    result = json.loads(out[-1])
    assert set(result) == {"exact_accuracy", "jaccard", "n"}
    assert result["n"] == 3 and result["exact_accuracy"] == pytest.approx(1 / 3)
    assert result["jaccard"] == pytest.approx((1 + 0 + 2 / 7) / 3)
    assert out[-2] == "parse failures: 1 of 3 (scored as wrong)"


@pytest.mark.parametrize("content, message", [
    ({"CLEVR_000000.png": ["small"], "CLEVR_000001.png": ["cube"]}, "no prediction for 1 of 3 questions"),
    ({"CLEVR_000000.png": [], "CLEVR_000001.png": [], "CLEVR_000002.png": [], "CLEVR_000007.png": []},
     "1 prediction key(s) match no question"),
    ({"CLEVR_000000.png": ["small"], "CLEVR_000001.png": ["cube"], "CLEVR_000002.png": ["Red"]},
     "not one of the 17 labels"),
    ({"CLEVR_000000.png": ["small"], "CLEVR_000001.png": {"cube": 1}, "CLEVR_000002.png": []},
     "must be a list of values or null"),
    (["small"], "must be a JSON object"),
])
def test_cli_prediction_file_errors_are_one_line(official_dataset, tmp_path, capsys, content, message):
    root, _ = official_dataset
    path = tmp_path / "preds.json"
    path.write_text(json.dumps(content))
    status, out, err = run_cli(["evaluate", "--dataset", str(root), "--split", "test", "--predictions", str(path)],
                               capsys)
    assert status == 1 and not out
    assert len(err) == 1 and err[0].startswith("error: ") and message in err[0] and "preds.json" in err[0]


def test_cli_missing_inputs(official_dataset, tmp_path, capsys):
    root, _ = official_dataset
    status, _, err = run_cli(["evaluate", "--dataset", str(root), "--split", "test", "--predictions",
                              str(tmp_path / "nope.json")], capsys)
    assert status == 1 and len(err) == 1 and "file not found" in err[0]
    status, _, err = run_cli(["evaluate", "--dataset", str(tmp_path / "none"), "--split", "test",
                              "--model", "ns-vqa-gold"], capsys)
    assert status == 1 and len(err) == 1 and "dataset folder not found" in err[0]
    status, _, err = run_cli(["evaluate", "--dataset", str(root), "--split", "dev", "--model", "ns-vqa-gold"],
                             capsys)
    assert status == 1 and len(err) == 1 and "unknown split" in err[0]


def test_cli_ns_vqa_gold_is_perfect_and_writes_outputs(official_dataset, tmp_path, capsys):
    pytest.importorskip("matplotlib")
    root, _ = official_dataset
    out_dir = tmp_path / "results"
    status, out, err = run_cli(["evaluate", "--dataset", str(root), "--split", "testing", "--model", "ns-vqa-gold",
                                "--out", str(out_dir)], capsys)
    assert status == 0, err
    assert json.loads(out[-1]) == {"exact_accuracy": 1.0, "jaccard": 1.0, "n": 3}
    report = json.loads((out_dir / "report.json").read_text())
    assert report["model"] == "NS-VQA (gold scene, gold ASP)" and report["split"] == "testing"
    assert set(report["breakdowns"]["environment"]) == {"0", "1", "2"}
    assert report["breakdowns"]["num_objects"] == {
        "5": {"n": 2, "exact_accuracy": 1.0, "jaccard": 1.0, "parse_failures": 0},
        "6": {"n": 1, "exact_accuracy": 1.0, "jaccard": 1.0, "parse_failures": 0}}
    assert "| testing | 1.0000 |" in (out_dir / "table2.md").read_text()
    assert (out_dir / "plots" / "NS-VQA_gold_scene_gold_ASP_by_attribute.png").is_file()


def test_cli_as_a_subprocess(official_dataset, tmp_path):
    import subprocess
    import sys

    root, _ = official_dataset
    path = tmp_path / "preds.json"
    path.write_text(json.dumps({"CLEVR_000000.png": ["small"], "CLEVR_000001.png": ["cube"],
                                "CLEVR_000002.png": None}))
    done = subprocess.run([sys.executable, "-m", "clevr_poc", "evaluate", "--dataset", str(root), "--split", "test",
                           "--predictions", str(path)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.strip().splitlines()[-1]) == {"exact_accuracy": pytest.approx(1 / 3),
                                                                "jaccard": pytest.approx(0.5), "n": 3}


def test_checkpoint_resumes_an_interrupted_run(tmp_path):
    examples = _four_examples()
    answers = {"question 0": {"small"}, "question 1": None, "question 2": {"red", "blue"}, "question 3": {"large"}}

    class Flaky(FixedModel):
        def __init__(self, table, fail_at=None):
            super().__init__(table)
            self.fail_at = fail_at

        def predict_detailed(self, example):
            if self.calls == self.fail_at:
                raise KeyboardInterrupt
            return super().predict_detailed(example)

    path = tmp_path / "ckpt.jsonl"
    first = Flaky(answers, fail_at=3)
    with pytest.raises(KeyboardInterrupt):  # one example per batch: each prediction is flushed when made
        evaluate(first, examples, progress=False, checkpoint=path, batch_size=1)
    assert first.calls == 3 and len(path.read_text().splitlines()) == 1 + 3
    with open(path, "a") as handle:          # a line cut short by a crash is dropped
        handle.write('{"key": "CLEVR_test_0000')
    second = Flaky(answers)
    report = evaluate(second, examples, progress=False, checkpoint=path)
    assert second.calls == 1                  # only example 3 was asked again
    full = evaluate(FixedModel(answers), examples, progress=False)
    assert report.results == full.results and report.parse_failures == 1
    third = Flaky(answers)
    evaluate(third, examples, progress=False, checkpoint=path)
    assert third.calls == 0
    with pytest.raises(FormatError, match="belongs to model 'fixed'"):
        evaluate(FixedModel(answers), examples, progress=False, checkpoint=path, name="other")


def test_cli_llm_standalone_through_a_local_server(official_dataset, tmp_path, capsys):
    pytest.importorskip("openai")
    from clevr_poc.llm.testing import ChatCompletionsServer

    root, _ = official_dataset
    checkpoint = tmp_path / "llm.jsonl"
    with ChatCompletionsServer(lambda messages: "###{small, medium}###") as server:
        argv = ["evaluate", "--dataset", str(root), "--split", "test", "--model", "llm-standalone",
                "--backend", f"openai:test-model@{server.base_url}", "--checkpoint", str(checkpoint)]
        status, out, err = run_cli(argv, capsys)
        assert status == 0, err
        # question 0 (size) is right; questions 1 (shape) and 2 (color) get size values: parse failures
        assert json.loads(out[-1]) == {"exact_accuracy": pytest.approx(1 / 3), "jaccard": pytest.approx(1 / 3), "n": 3}
        assert out[-2] == "parse failures: 2 of 3 (scored as wrong)"
        assert len(server.requests) == 3 and len(checkpoint.read_text().splitlines()) == 4
        status, out, _ = run_cli(argv + ["--limit", "2"], capsys)     # resumed: nothing asked again
        assert status == 0 and json.loads(out[-1])["n"] == 2 and len(server.requests) == 3
    status, _, err = run_cli(argv[:-4], capsys)
    assert status == 1 and "needs --backend" in err[0]


def test_prediction_table_answers_examples_without_image_filename_by_position():
    """Examples without image_filename are keyed "#<position>": each gets its own row (the demo's old
    table looked every example up as "#0")."""
    from dataclasses import replace

    from clevr_poc.evaluation import PredictionTable

    examples = [make_example(i, "size", {"small"}) for i in range(3)]
    examples = [replace(e, question=replace(e.question, image_filename=None),
                        partial_scene=Scene(e.partial_scene.objects, e.partial_scene.relationships))
                for e in examples]
    table = {"#0": Prediction(frozenset({"small"})), "#1": Prediction(frozenset({"large"})), "#2": Prediction(None)}
    report = evaluate(PredictionTable("table", examples, table), examples, progress=False, batch_size=2)
    assert [r.key for r in report.results] == ["#0", "#1", "#2"]
    assert [r.exact for r in report.results] == [1.0, 0.0, 0.0] and report.parse_failures == 1
    with pytest.raises(FormatError, match="no prediction for this example"):
        PredictionTable("table", examples, {"#0": table["#0"]})
    with pytest.raises(FormatError, match="not one of the examples"):
        PredictionTable("table", examples[:1], table).predict_detailed(examples[1])
