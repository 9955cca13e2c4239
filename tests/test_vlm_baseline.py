"""The VLM baseline on CLEVR-POC: prompt layout, listed-scene parsing and metrics, and ``evaluate --model vlm``
end to end against a real local OpenAI-compatible server that checks every image it receives."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

pytest.importorskip("PIL")

from clevr_poc.baselines.vlm import LIST_INSTRUCTION, VLM_TASK, VLMBaseline, build_vlm_messages  # noqa: E402
from clevr_poc.baselines.vlm_scene import (ListedObject, listing_metrics, parse_listed_objects,  # noqa: E402
                                           truth_objects)
from clevr_poc.dataset_reader import load_dataset  # noqa: E402
from clevr_poc.errors import FormatError  # noqa: E402

DATASET = Path(__file__).parent / "fixtures" / "perception" / "dataset"


@pytest.fixture(scope="module")
def examples():
    return list(load_dataset(DATASET, "test"))


def listing(scene, *, drop_last: bool = False, recolour_first: str | None = None) -> str:
    objects = [{"color": o.color, "shape": o.shape, "size": o.size, "material": o.material, "region": o.region}
               for o in scene.objects]
    if drop_last:
        objects = objects[:-1]
    if recolour_first:
        objects[0]["color"] = recolour_first
    return f"<objects>{json.dumps(objects)}</objects>"


def test_prompt_has_the_image_the_constraints_and_the_question(examples):
    example = examples[0]
    messages = build_vlm_messages(example.environment, example.image_path, example.question.text,
                                  prompt="list-then-reason")
    assert messages[0] == {"role": "system", "content": VLM_TASK}
    image, text = messages[1]["content"]
    assert image["image_url"]["url"].startswith("data:image/png;base64,") and text["type"] == "text"
    assert example.environment.describe() in text["text"]
    assert "The scene is divided into 4 regions, 0 (back left)" in text["text"]
    assert text["text"].endswith(f"{example.question.text}\n{LIST_INSTRUCTION}")
    with pytest.raises(FormatError, match="unknown VLM prompt"):
        build_vlm_messages(example.environment, example.image_path, "q", prompt="chain")


def test_parse_listed_objects_reads_synonyms_and_rejects_bad_listings():
    reply = ('I see: <objects>[{"color": "grey", "shape": "ball", "size": "big", "material": "shiny", '
             '"region": "2"}]</objects> so ###{red}###')
    assert parse_listed_objects(reply).objects == (ListedObject("gray", "sphere", "large", "metal", 2),)
    assert parse_listed_objects("no list").error == "no <objects>...</objects> block"
    assert parse_listed_objects("<objects>[{]</objects>").error == "the objects block is not JSON"
    bad_region = '<objects>[{"color": "red", "shape": "cube", "size": "small", "material": "metal", "region": 7}]</objects>'
    assert parse_listed_objects(bad_region).error == "region must be 0, 1, 2 or 3"
    bad_colour = '<objects>[{"color": "pink", "shape": "cube", "size": "small", "material": "metal", "region": 0}]</objects>'
    assert parse_listed_objects(bad_colour).error == "unknown or missing color"


def test_listing_metrics_match_objects_by_attributes(examples):
    scenes = [e.partial_scene for e in examples]  # 4 and 5 visible objects
    first_colour = scenes[1].objects[0].color
    other = "red" if first_colour != "red" else "blue"
    replies = [listing(scenes[0]), listing(scenes[1], drop_last=True, recolour_first=other), "nothing"]
    metrics = listing_metrics(replies, scenes + [scenes[0]])
    assert (metrics["images"], metrics["listed"], metrics["listing_failures"]) == (3, 2, 1)
    assert metrics["count_exact"] == 0.5 and metrics["count_error"] == 0.5 and metrics["scene_exact"] == 0.5
    # 4 + 4 listed, 7 of them exactly right, of 4 + 5 true objects
    assert metrics["detection"] == {"precision": round(7 / 8, 4), "recall": round(7 / 9, 4)}
    assert metrics["attributes"]["color"] == round(7 / 8, 4) and metrics["attributes"]["shape"] == 1.0
    assert metrics["region"] == 1.0
    assert truth_objects(scenes[0])[0].region == scenes[0].objects[0].region


def test_text_only_backends_are_refused():
    class TextOnly:
        name = "text-only"
        supports_images = False

        def complete(self, messages, **kwargs):
            return ""

    with pytest.raises(FormatError, match="reads text only"):
        VLMBaseline(TextOnly())


def test_evaluate_model_vlm_end_to_end_through_a_local_server(examples, tmp_path, capsys):
    pytest.importorskip("openai")
    from clevr_poc.commands.main import main
    from clevr_poc.llm.testing import ChatCompletionsServer

    by_question = {e.question.text: e for e in examples}

    def reply(messages):
        text = messages[-1]["content"][-1]["text"]
        example = next(e for q, e in by_question.items() if q in text)
        if example is examples[1]:
            return "I cannot tell."  # unparseable: counted, scored wrong
        answer = "###{" + ", ".join(sorted(example.answer)) + "}###"
        return f"{listing(example.partial_scene)} The hidden object ... {answer}"

    with ChatCompletionsServer(reply) as server:
        out = tmp_path / "results"
        assert main(["evaluate", "--dataset", str(DATASET), "--split", "test", "--model", "vlm", "--prompt",
                     "list-then-reason", "--backend", f"openai:gpt-test@{server.base_url}", "--workers", "2",
                     "--checkpoint", str(tmp_path / "vlm.jsonl"), "--out", str(out), "--no-plots"]) == 0
        printed = capsys.readouterr().out
        # every image arrived decodable, at its original size, with the file's bytes
        assert len(server.images) == 2 and all(image.decodable for image in server.images)
        assert sorted(image.data for image in server.images) == sorted(e.image_path.read_bytes() for e in examples)
        assert {image.size for image in server.images} == {(320, 240)}
        request = server.requests[0]
        assert request["model"] == "gpt-test" and request["messages"][0]["content"] == VLM_TASK
        assert request["max_tokens"] == 768
    summary = json.loads(printed.strip().splitlines()[-1])
    assert (summary["exact_accuracy"], summary["n"]) == (0.5, 2)
    assert "parse failures: 1 of 2 (scored as wrong)" in printed
    assert re.search(r"listed scenes: 1 of 2 parsed \(1 listing failures\); count exact 1\.000", printed)
    table = (out / "table2.md").read_text()
    assert "VLM list-then-reason (openai:gpt-test@" in table
    report = json.loads((out / "report.json").read_text())
    assert report["extra"]["scene_listing"]["scene_exact"] == 1.0
    assert report["extra"]["usage"]["requests"] == 2


def test_evaluate_model_vlm_needs_a_backend_and_rendered_images(examples, tmp_path, capsys):
    from clevr_poc.commands.main import main

    assert main(["evaluate", "--dataset", str(DATASET), "--split", "test", "--model", "vlm"]) == 1
    assert "--model vlm needs --backend" in capsys.readouterr().err

    class Unrendered:
        image_path = None
        question = examples[0].question

    model = VLMBaseline(type("B", (), {"name": "b", "complete": lambda self, m, **k: ""})())
    with pytest.raises(FormatError, match="image is not rendered"):
        model.messages_for(Unrendered())
