"""``export --format hf`` (issue #25 item 3): a dataset folder -> a Hugging Face ``datasets`` folder that
``datasets.load_dataset`` reads field by field unchanged, and that ``clevr_poc.load_dataset`` / ``evaluate``
read back with the same numbers as the source folder."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

datasets = pytest.importorskip("datasets", reason="the [hf] extra (datasets) is not installed")
PIL_Image = pytest.importorskip("PIL.Image")

from clevr_poc.commands.main import main  # noqa: E402
from clevr_poc import load_dataset as clevr_load  # noqa: E402

ROOT = Path(__file__).resolve().parent
OFFICIAL = ROOT / "fixtures" / "official_release_small"


def _cli(argv, capsys):
    status = main(argv)
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def _fake_render(dataset: Path) -> dict[str, bytes]:
    """A small PNG per question, each different (its pixels encode the image index): image_filename -> bytes."""
    images = {}
    for example in clevr_load(dataset):
        q = example.question
        picture = PIL_Image.new("RGB", (8, 6), (q.image_index % 256, (q.image_index * 7) % 256, 40))
        buffer = io.BytesIO()
        picture.save(buffer, format="PNG")
        path = dataset / "incomplete" / "images" / q.split / q.image_filename
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(buffer.getvalue())
        images[q.image_filename] = buffer.getvalue()
    return images


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """200 generated questions (4 environments x 50 scenes, train/test), a fake render, and their export."""
    from clevr_poc.generation.dataset_writer import generate_dataset

    base = tmp_path_factory.mktemp("hf_export")
    source = base / "clevr-poc-200"
    generate_dataset(source, environments=4, scenes_per_environment=50, seed=11, splits={"train": 0.5, "test": 0.5},
                     progress=False)
    images = _fake_render(source)
    out = base / "clevr-poc-200-hf"
    assert main(["export", "--format", "hf", "--dataset", str(source), "--out", str(out), "--shard-rows", "64"]) == 0
    return source, out, images, base


def test_export_writes_parquet_shards_a_card_and_a_manifest(exported):
    source, out, _, _ = exported
    manifest = json.loads((out / "clevr_poc_export.json").read_text())
    assert {k: v["rows"] for k, v in manifest["splits"].items()} == {"train": 100, "test": 100}
    assert sorted(p.name for p in (out / "data").iterdir()) == [
        *(f"test-{i:05d}-of-00002.parquet" for i in range(2)), *(f"train-{i:05d}-of-00002.parquet" for i in range(2))]
    card = (out / "README.md").read_text()
    assert card.startswith("---\n") and "path: data/test-*.parquet" in card and "task_categories:" in card
    assert "@inproceedings{abraham2024clevrpoc" in card and "## Licence" in card and "MIT" in card


def test_datasets_load_dataset_round_trips_every_field(exported):
    source, out, images, base = exported
    loaded = datasets.load_dataset(str(out), cache_dir=str(base / "hf-cache"))
    assert sorted(loaded) == ["test", "train"]
    features = loaded["test"].features
    assert isinstance(features["image"], datasets.Image) and features["family"].dtype == "int32"
    assert features["answer"].feature.dtype == "string"
    for split in ("train", "test"):
        examples = {e.question.image_filename: e for e in clevr_load(source, split)}
        rows = loaded[split]
        assert len(rows) == len(examples) == 100
        for row in rows:
            example = examples[row["image_filename"]]
            q, environment = example.question, example.environment
            assert row["split"] == split
            assert row["question"] == q.text and row["asp_query"] == q.asp_query
            assert row["answer"] == sorted(q.answer)
            assert row["program"] == [{"type": n["type"], "inputs": list(n["inputs"]),
                                       "side_inputs": list(n.get("side_inputs", []))} for n in q.program]
            assert (row["family"], row["template"]) == (q.question_family_index, q.template_filename)
            assert (row["question_index"], row["image_index"]) == (q.question_index, q.image_index)
            assert row["query_attribute"] == q.query_attribute
            assert (row["environment_id"], row["num_objects"]) == (environment.id, environment.num_objects)
            assert row["constraints_english"] == [c.describe() for c in environment.constraints]
            assert row["constraints_asp"] == ["\n".join(c.asp_rules()) for c in environment.constraints]
            assert row["environment_lp"] == environment.to_asp()
            assert json.loads(row["question_json"]) == q.to_json()
            assert json.loads(row["partial_scene"]) == example.partial_scene.to_json()
            assert json.loads(row["complete_scene"]) == example.complete_scene.to_json()
            expected = PIL_Image.open(io.BytesIO(images[row["image_filename"]]))
            assert row["image"].size == (8, 6) and row["image"].convert("RGB").tobytes() == expected.convert("RGB").tobytes()


def test_clevr_poc_load_dataset_reads_an_export_back_unchanged(exported):
    source, out, images, _ = exported
    back = clevr_load(out, "test")
    assert len(back) == 100 and back.splits == ("test",)
    originals = {e.question.image_filename: e for e in clevr_load(source, "test")}
    for example in back:
        original = originals[example.question.image_filename]
        assert example.question == original.question and example.question.to_json() == original.question.to_json()
        assert example.environment == original.environment
        assert example.partial_scene == original.partial_scene and example.complete_scene == original.complete_scene
        assert example.image_path.read_bytes() == images[example.question.image_filename]


def test_evaluate_gives_the_same_numbers_on_the_export_as_on_the_folder(exported, tmp_path, capsys):
    source, out, _, _ = exported
    # a predictions file that is right on some questions and wrong on others
    predictions = {e.question.image_filename: sorted(e.question.answer) if i % 3 else ["red"]
                   for i, e in enumerate(clevr_load(source, "test"))}
    path = tmp_path / "predictions.json"
    path.write_text(json.dumps(predictions))
    summaries = []
    for dataset in (source, out):
        for argv in (["--model", "ns-vqa-gold"], ["--predictions", str(path)]):
            status, stdout, _ = _cli(["evaluate", "--dataset", str(dataset), "--split", "test", *argv], capsys)
            assert status == 0
            summaries.append(json.loads(stdout.splitlines()[-1]))
    assert summaries[0] == summaries[2] == {"exact_accuracy": 1.0, "jaccard": 1.0, "n": 100}
    assert summaries[1] == summaries[3] and summaries[1]["exact_accuracy"] == pytest.approx(66 / 100)


def test_the_official_release_layout_exports_and_evaluates_the_same(tmp_path, capsys):
    out = tmp_path / "release-hf"
    status, stdout, _ = _cli(["export", "--format", "hf", "--dataset", str(OFFICIAL), "--out", str(out)], capsys)
    assert status == 0 and json.loads(stdout.splitlines()[-1])["rows"] == {"test": 6}
    row = datasets.load_dataset(str(out), split="test", cache_dir=str(tmp_path / "cache"))[0]
    assert row["split"] == "testing" and row["answer"] == ["cube", "sphere"] and row["family"] == 1
    back = [e.question for e in clevr_load(out, "testing")]
    assert back == [e.question for e in clevr_load(OFFICIAL, "testing")]
    results = []
    for dataset in (OFFICIAL, out):
        status, stdout, _ = _cli(["evaluate", "--dataset", str(dataset), "--split", "testing", "--model", "ns-vqa-gold"],
                                 capsys)
        results.append(stdout.splitlines()[-1])
    assert results[0] == results[1] == '{"exact_accuracy": 1.0, "jaccard": 1.0, "n": 6}'


def test_export_refuses_to_overwrite_and_words_a_missing_dataset_as_evaluate(exported, tmp_path, capsys):
    source, out, _, _ = exported
    status, _, err = _cli(["export", "--format", "hf", "--dataset", str(source), "--out", str(out)], capsys)
    assert status == 1 and err.strip() == f"error: --out '{out}': already holds an export; pass --overwrite to replace it"
    missing = tmp_path / "nosuch"
    status, _, err = _cli(["export", "--format", "hf", "--dataset", str(missing), "--out", str(tmp_path / "o")], capsys)
    assert status == 1 and err.strip() == f"error: {missing}: dataset folder not found"


def test_the_explorer_opens_an_export(exported):
    from clevr_poc.explorer.case_runner import Models, run_example
    from clevr_poc.explorer.catalog import Catalog

    _, out, _, _ = exported
    catalog = Catalog(out)
    assert len(catalog.choices) == 200 and catalog.splits == ["test", "train"]
    view = run_example(catalog, 0, models=Models(), scene_source="gold", query_source="gold")
    assert view.error is None and view.exact is True and view.gold_image is not None
