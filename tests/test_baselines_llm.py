"""Stand-alone LLM baseline: worked examples, prompt layout (App. C.1), reply parsing, one end-to-end run."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from clevr_poc.baselines.llm_standalone import (
    TASK_DESCRIPTION, LLMStandalone, build_messages, constraints_text, format_answer, parse_reply,
    scene_graph_json, worked_examples,
)
from clevr_poc.dataset_reader import Example
from clevr_poc.environments.environment import BACKGROUND_DESCRIPTION
from clevr_poc.evaluation import evaluate
from clevr_poc.question import Question
from clevr_poc.reasoning import Reasoner

from conftest import APPENDIX_A_QUERY, appendix_a_complete_scene, appendix_a_environment

APPENDIX_A_TEXT = "There is another red rubber object that is the same shape as the big purple object; what size is it?"


def appendix_a_example(text: str = APPENDIX_A_TEXT, name: str = "CLEVR_test_000000.png") -> Example:
    complete = appendix_a_complete_scene()
    question = Question(text=text, asp_query=APPENDIX_A_QUERY, answer=frozenset({"small", "medium"}),
                        image_filename=name)
    return Example(appendix_a_environment(), complete.without_object(4), question, complete)


def test_worked_examples_answers_are_the_reasoners():
    first, second = worked_examples()
    # 1: small objects are excluded from region 1 (no small) and region 3 (all large), metal ones from
    #    region 2; region 0 holds only cubes -> {cube}
    assert first.answer == frozenset({"cube"})
    # 2: cones only fit region 1, which forbids gray and may share no color with region 3 (gray, yellow)
    assert second.answer == frozenset({"red", "blue", "green", "brown", "purple", "cyan"})
    for shot in (first, second):
        assert Reasoner(mode="direct").answer(shot.environment, shot.scene, shot.asp_query).values == shot.answer
        assert len(shot.scene) == shot.environment.num_objects - 1


def test_prompt_layout():
    example = appendix_a_example()
    messages = build_messages(example.environment, example.partial_scene, example.question.text)
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user", "assistant", "user"]
    assert messages[0]["content"] == TASK_DESCRIPTION and "###{" in TASK_DESCRIPTION
    assert messages[2]["content"] == "###{cube}###"
    assert messages[4]["content"] == "###{red, blue, green, brown, purple, cyan}###"
    final = messages[-1]["content"]
    graph = json.loads(re.search(r"scene graph:\n(.*)\n\nConstraints", final, re.DOTALL).group(1))
    assert graph["objects"][0] == {"color": "purple", "shape": "sphere", "size": "large", "material": "metal",
                                   "region": "1"}
    assert len(graph["objects"]) == 4
    assert graph["relationships"]["left"] == [list(r) for r in example.partial_scene.relationships["left"]]
    for sentence in BACKGROUND_DESCRIPTION:
        assert sentence in final
    assert "There are 5 objects in the scene (one of them hidden)." in final
    assert "No object in region 0 has size large." in final
    assert final.endswith(f"The solution should satisfy the constraints. {APPENDIX_A_TEXT}\nAnswer:")
    assert constraints_text(example.environment).splitlines()[: len(BACKGROUND_DESCRIPTION)] == \
        list(BACKGROUND_DESCRIPTION)
    assert "3d_coords" not in scene_graph_json(appendix_a_complete_scene())
    zero_shot = build_messages(example.environment, example.partial_scene, "Q?", examples=[])
    assert [m["role"] for m in zero_shot] == ["system", "user"]


@pytest.mark.parametrize("reply, attribute, values, error", [
    ("###{Gray}###", "color", {"gray"}, None),
    ("Reasoning... so the answer is ###{small, Medium}###", "size", {"small", "medium"}, None),
    ("###['gray', 'red']###", "color", {"gray", "red"}, None),                 # official notebook style
    ("###{big}###", "size", {"large"}, None),                                  # CLEVR synonym
    ("###{grey or RED and blue}###", "color", {"gray", "red", "blue"}, None),
    ("###{shiny}###", "material", {"metal"}, None),
    ("###{}###", "shape", set(), None),                                        # a valid empty answer
    ("###{cube}### no wait ###{sphere, cone}###", "shape", {"sphere", "cone"}, None),  # last block wins
    ("### Answer ###{red}###", "color", {"red"}, None),
    ("###{cube}###", None, {"cube"}, None),                                    # any label without attribute
    ("The hidden object is red.", "color", None, "no ###{...}### block in the reply"),
    ("###{crimson}###", "color", None, "unknown value in the answer"),
    ("###{red cube}###", "color", None, "unknown value in the answer"),
    ("###{cube}###", "color", None, "value of another attribute than color"),
    (None, "color", None, "empty reply"),
])
def test_parse_reply(reply, attribute, values, error):
    prediction = parse_reply(reply, attribute)
    assert prediction.values == (None if values is None else frozenset(values))
    assert prediction.error == error
    assert prediction.raw == reply


def test_format_answer_round_trips():
    assert format_answer({"medium", "small"}) == "###{small, medium}###"
    assert parse_reply(format_answer({"cone", "cube"}), "shape").values == frozenset({"cube", "cone"})


class ScriptedBackend:
    """A real (in-process) ChatBackend: replies from a table keyed by the question text."""

    name = "scripted"

    def __init__(self, replies: dict[str, str]):
        self.replies = replies
        self.calls: list[dict[str, Any]] = []

    def complete(self, messages, *, max_tokens=256, temperature=0.0, stop=None, seed=None):
        self.calls.append({"messages": messages, "max_tokens": max_tokens, "temperature": temperature,
                           "stop": stop, "seed": seed})
        question = messages[-1]["content"].rsplit("constraints. ", 1)[1].removesuffix("\nAnswer:")
        return self.replies[question]


def test_model_scores_and_counts_unparseable_replies():
    examples = [appendix_a_example("q0", "a.png"), appendix_a_example("q1", "b.png"), appendix_a_example("q2", "c.png")]
    backend = ScriptedBackend({"q0": "###{Small, medium}###", "q1": "I cannot tell.", "q2": "###{small}###"})
    model = LLMStandalone(backend, workers=2, max_tokens=64)
    report = evaluate(model, examples, progress=False)
    assert [r.predicted for r in report.results] == [frozenset({"small", "medium"}), None, frozenset({"small"})]
    assert report.exact_accuracy == pytest.approx(1 / 3)
    assert report.jaccard == pytest.approx((1 + 0 + 0.5) / 3)
    assert report.parse_failures == 1
    assert report.failure_reasons() == {"no ###{...}### block in the reply": 1}
    assert report.results[1].raw == "I cannot tell."
    assert {c["max_tokens"] for c in backend.calls} == {64}
    assert {c["temperature"] for c in backend.calls} == {0.0}
    assert model.name == "LLM (scripted)"
    excluded = evaluate(model, examples, progress=False, parse_failures="exclude")
    assert excluded.exact_accuracy == 0.5


def test_end_to_end_through_a_local_openai_compatible_server():
    pytest.importorskip("openai")
    from clevr_poc.llm.openai_backend import OpenAIChatBackend
    from clevr_poc.llm.testing import ChatCompletionsServer

    def reply(messages):
        # answers correctly only when it sees the task description and both worked examples
        ok = messages[0]["role"] == "system" and len(messages) == 6 and messages[2]["content"] == "###{cube}###"
        return "Region 0 forbids large objects. ###{small, medium}###" if ok else "###{large}###"

    with ChatCompletionsServer(reply) as server:
        backend = OpenAIChatBackend(model="test-model", base_url=server.base_url, max_retries=0)
        report = evaluate(LLMStandalone(backend, seed=3), [appendix_a_example()], progress=False)
        # the same through a make_backend spec string
        by_spec = LLMStandalone(f"openai:test-model@{server.base_url}")
        assert by_spec.predict(appendix_a_example()) == frozenset({"small", "medium"})
        server.requests.pop()
        assert (report.exact_accuracy, report.jaccard, report.parse_failures) == (1.0, 1.0, 0)
        (request,) = server.requests
        assert request["model"] == "test-model" and request["temperature"] == 0.0 and request["seed"] == 3
        assert request["messages"][-1]["content"].endswith(APPENDIX_A_TEXT + "\nAnswer:")
