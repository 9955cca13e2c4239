"""The Pipeline as the NS-VQA evaluator model: gold sources reproduce the labels; parser/perception failures
are counted parse failures (with the reason); a batch is parsed once; LLM backend errors stop the run."""

from __future__ import annotations

from pathlib import Path

import pytest

from clevr_poc.dataset_reader import Example
from clevr_poc.errors import ClevrPocError, FormatError
from clevr_poc.evaluation import evaluate
from clevr_poc.pipeline import Pipeline, PipelineError, QuestionParseError
from clevr_poc.question import Question
from clevr_poc.scene import Scene

from conftest import APPENDIX_A_QUERY, appendix_a_complete_scene, appendix_a_environment


def appendix_a_example(image_path: Path = Path("CLEVR_test_000000.png")) -> Example:
    complete = appendix_a_complete_scene()
    question = Question(
        text="There is another red rubber object that is the same shape as the big purple object; what size is it?",
        asp_query=APPENDIX_A_QUERY, answer=frozenset({"small", "medium"}), image_filename="CLEVR_test_000000.png",
        template_filename="same_relate.json", question_family_index=1, environment_id=0,
    )
    return Example(appendix_a_environment(), complete.without_object(4), question, complete, image_path)


def test_gold_scene_gold_query_answers_the_appendix_example():
    model = Pipeline.gold()
    prediction = model.predict_detailed(appendix_a_example())
    assert prediction.values == frozenset({"small", "medium"}) and prediction.error is None
    assert prediction.raw == APPENDIX_A_QUERY
    report = evaluate(model, [appendix_a_example()], progress=False)
    assert (report.exact_accuracy, report.jaccard, report.parse_failures) == (1.0, 1.0, 0)
    assert report.model == "NS-VQA (gold scene, gold ASP)"


def test_parser_outputs():
    example = appendix_a_example()
    # a query with the paper's unknown/1 head and a wrong attribute: parsed, but a wrong answer set
    wrong = Pipeline.gold(lambda text: "unknown(Q) :- hasProperty(X,material,Q), hasProperty(X,color,red).")
    assert wrong.predict(example) == frozenset({"rubber", "metal"})
    # a program that would run Python inside clingo: rejected, counted as a parse failure
    unsafe = Pipeline.gold(lambda text: '#script (python) import os #end. missing(Q) :- hasProperty(X,size,Q).')
    prediction = unsafe.predict_detailed(example)
    assert prediction.values is None and prediction.error.startswith("unsafe or invalid ASP query")
    assert "#script" in prediction.error
    syntax = Pipeline.gold(lambda text: "missing(Q) :- hasProperty(X,size,Q")
    assert syntax.predict(example) is None
    nothing = Pipeline.gold(lambda text: None)
    assert nothing.predict_detailed(example).error == \
        "question parser failed: no valid ASP query: the parser returned no text"

    def failing(text):
        raise FormatError("vocabulary miss", field="token", value="blorp")

    assert Pipeline.gold(failing).predict_detailed(example).error == \
        "question parser failed: field 'token': vocabulary miss (got 'blorp')"
    report = evaluate(unsafe, [example], progress=False)
    assert report.parse_failures == 1 and report.exact_accuracy == 0.0
    assert list(report.failure_reasons())[0].startswith("unsafe or invalid ASP query")


def test_perception_outputs():
    example = appendix_a_example(image_path=Path("images/CLEVR_test_000000.png"))
    seen = []

    def perceive(image, camera, environment=None):
        seen.append(image)
        return appendix_a_complete_scene().without_object(4)

    assert Pipeline(perceive).predict(example) == frozenset({"small", "medium"})
    assert seen == [Path("images/CLEVR_test_000000.png")]
    # a perception that sees the hidden object too (nothing hidden): only the visible red sphere's size
    assert Pipeline(lambda *seen: appendix_a_complete_scene()).predict(example) == frozenset({"small"})
    # more objects than the environment declares
    big = appendix_a_complete_scene()
    six = Scene(big.objects + (big.objects[0],), {})
    assert Pipeline(lambda *seen: six).predict_detailed(example).error.startswith("scene does not fit")
    assert Pipeline(lambda *seen: None).predict_detailed(example).error == "perception produced no scene"


def test_unsatisfiable_program_is_an_empty_prediction_not_a_failure():
    query = "missing(Q) :- hasProperty(X,color,Q), hasProperty(X,shape,cone), hasProperty(X,size,small)."
    prediction = Pipeline.gold(lambda text: query).predict_detailed(appendix_a_example())
    assert prediction.values == frozenset() and prediction.error is None


def test_bad_sources():
    with pytest.raises(PipelineError, match="perception must be callable"):
        Pipeline("detectron")
    with pytest.raises(PipelineError, match="parser must be a QueryParser"):
        Pipeline.gold(42)


def test_gold_ns_vqa_scores_exactly_one_on_a_generated_split(tmp_path):
    """Self-check of the generator, the loader and the reasoner: gold scene + gold ASP reproduces every label."""
    from clevr_poc.dataset_reader import load_dataset
    from clevr_poc.evaluation import score_predictions
    from clevr_poc.generation.dataset_writer import generate_dataset

    out = tmp_path / "data"
    generate_dataset(out, environments=2, scenes_per_environment=4, seed=11, splits={"train": 0.5, "test": 0.5},
                     progress=False)
    examples = list(load_dataset(out, "test"))
    assert len(examples) == 4
    report = evaluate(Pipeline.gold(), examples, progress=False, split="test")
    assert (report.exact_accuracy, report.jaccard, report.parse_failures, report.n) == (1.0, 1.0, 0, 4)
    assert "unknown" not in report.breakdown("family") and "unknown" not in report.breakdown("template")
    assert set(report.breakdown("environment")) == {"0", "1"}
    # the exported predictions score the same in scoring-only mode
    again = score_predictions(examples, report.predictions())
    assert (again.exact_accuracy, again.jaccard) == (1.0, 1.0)


class CountingParser:
    """Answers from a table; counts parse_queries calls (the QueryParser protocol)."""

    name = "counting"

    def __init__(self, table):
        self.table, self.batches = table, []

    def parse_queries(self, texts):
        from clevr_poc.parsing import ParseResult

        self.batches.append(list(texts))
        return [ParseResult.of_text(self.table[t]) for t in texts]


def test_a_parser_parses_a_batch_once_and_keeps_failures():
    example = appendix_a_example()
    table = {example.question.text: example.question.asp_query}
    parser = CountingParser(table)
    model = Pipeline.gold(parser, parser_name="table")
    assert model.name == "NS-VQA (gold scene, table)"
    report = evaluate(model, [example, example, example], progress=False, batch_size=3)
    assert parser.batches == [[example.question.text] * 3]  # one batched parse for three questions
    assert (report.exact_accuracy, report.parse_failures) == (1.0, 0)

    empty = Pipeline.gold(CountingParser({example.question.text: ""}))
    (failure,) = empty.parse_many([example.question.text])
    assert isinstance(failure, QuestionParseError) and str(failure) == "no valid ASP query: the parser returned no text"
    prediction = empty.predict_batch([example])[0]
    assert prediction.values is None
    assert prediction.error == "question parser failed: no valid ASP query: the parser returned no text"


def test_llm_backend_errors_stop_the_run_instead_of_scoring_zeros():
    from clevr_poc.llm.base import LLMBackendError
    from clevr_poc.parsing.llm_parser import LLMParser

    class DownBackend:
        name = "down"

        def complete(self, messages, **kwargs):
            raise LLMBackendError("connection refused", backend="down")

    model = Pipeline.gold(LLMParser(DownBackend()))
    with pytest.raises(LLMBackendError, match="connection refused"):
        evaluate(model, [appendix_a_example()], progress=False)
    with pytest.raises(ClevrPocError, match="connection refused"):
        model.predict_detailed(appendix_a_example())
