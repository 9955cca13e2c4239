"""Dataset writer (generate_dataset), loader (load_dataset) and the generate command, end to end.

Small real datasets (2 environments x 3 scenes, real clingo labelling): answers recompute from the files,
the same seed gives the same bytes with 1 or 2 workers, with Ray, and after an interruption; the loader
reads a hand-made official-release layout and rejects malformed files with a FormatError naming them.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from clevr_poc import domain
from clevr_poc.commands.main import main as cli_main
from clevr_poc.dataset_reader import Example, load_dataset
from clevr_poc.errors import FormatError
from clevr_poc.generation.dataset_config import DatasetConfig, DatasetConfigError, parse_shares
from clevr_poc.generation.example_generation import GeneratedExample
from clevr_poc.generation.dataset_writer import generate_dataset
from clevr_poc.generation.example_plan import largest_remainder, plan_examples
from clevr_poc.reasoning import Reasoner

SMALL = dict(environments=2, scenes_per_environment=3, seed=7)
EXPECTED_FILES = {
    "dataset.json", "README.md", "stats.json", "environments/0.lp", "environments/1.lp",
    *(f"figures/{name}" for name in (
        "question_families.png", "query_attributes.png", "query_attribute_by_objects.png", "answers_color.png",
        "answers_shape.png", "answers_size.png", "answers_material.png", "objects_per_scene.png")),
    *(f"{kind}/{split}/CLEVR_{i:06d}.json"
      for kind in ("complete/scenes", "incomplete/scenes", "incomplete/questions")
      for split, n in (("train", 4), ("val", 1), ("test", 1)) for i in range(n)),
}


def tree(root: Path) -> dict[str, bytes]:
    """Every file under root (relative path -> bytes)."""
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("reference") / "data"
    summary = generate_dataset(out, workers=1, progress=False, **SMALL)
    assert (summary.examples, summary.generated, summary.skipped) == (6, 6, 0)
    return out


# ---------------------------------------------------------------------- content
def test_layout_is_the_official_one_plus_manifest_stats_and_card(reference):
    assert set(tree(reference)) == EXPECTED_FILES
    manifest = json.loads((reference / "dataset.json").read_text())
    assert manifest["seed"] == 7 and manifest["splits"] == {"train": 0.6, "val": 0.2, "test": 0.2}
    question = json.loads((reference / "incomplete/questions/val/CLEVR_000000.json").read_text())
    assert list(question) == ["split", "image_filename", "image_index", "question", "program", "asp_query",
                              "answer", "object_interest", "template_filename", "question_family_index",
                              "question_index", "constraint_type_index"]
    assert (question["split"], question["image_index"], question["image_filename"], question["question_index"]) == (
        "val", 0, "CLEVR_val_000000.png", 0)
    scene = json.loads((reference / "incomplete/scenes/val/CLEVR_000000.json").read_text())
    assert scene["image_filename"] == "CLEVR_val_000000.png"
    assert scene["constraint_type_index"] == question["constraint_type_index"]


def test_every_stored_answer_recomputes_from_the_files(reference):
    data = load_dataset(reference)
    assert len(data) == 6 and data.splits == ("train", "val", "test")
    reasoner = Reasoner()
    per_environment = Counter()
    for example in data:
        assert isinstance(example, Example)
        env, partial, complete, question = example.environment, example.partial_scene, example.complete_scene, example.question
        per_environment[env.id] += 1
        assert question.environment_id == env.id
        assert len(complete) == env.num_objects and len(partial) == env.num_objects - 1
        recomputed = reasoner.answer(env, partial, question).values
        assert recomputed == question.answer
        attribute = question.query_attribute
        assert 1 <= len(question.answer) < len(domain.DOMAINS[attribute])
        # the hidden object is the complete scene's object missing from the partial scene; its value is an answer
        hidden = question.object_interest
        assert hidden[attribute] in question.answer
        assert Counter(o.describe() for o in complete.objects) - Counter(o.describe() for o in partial.objects) == \
            Counter([f"{hidden['size']} {hidden['color']} {hidden['material']} {hidden['shape']} in region {hidden['region']}"])
    assert per_environment == {0: 3, 1: 3}


def test_stats_match_the_files(reference):
    stats = json.loads((reference / "stats.json").read_text())
    assert stats["examples"] == 6 and stats["splits"] == {"train": 4, "val": 1, "test": 1}
    assert sum(stats["query_attributes"]["all"].values()) == 6
    # 6 x (0.4, 0.4, 0.1, 0.1) -> largest remainder 2, 2, 1, 1
    assert stats["query_attributes"]["all"] == {"color": 2, "shape": 2, "size": 1, "material": 1}
    assert sum(stats["templates"].values()) == 6 and len(stats["templates"]) == 28
    assert len(stats["templates_missing"]) == 28 - sum(1 for c in stats["templates"].values() if c)
    data = load_dataset(reference)
    assert Counter(e.question.template_filename for e in data) == stats["families"]
    assert "| train | 4 |" in (reference / "README.md").read_text()


# ---------------------------------------------------------------------- determinism and resuming
@pytest.mark.parametrize("start_method", ["fork", "spawn"])
def test_two_workers_give_the_same_bytes(reference, tmp_path, monkeypatch, start_method):
    monkeypatch.setenv("CLEVR_POC_START_METHOD", start_method)
    out = tmp_path / "data"
    generate_dataset(out, workers=2, chunksize=1, progress=False, **SMALL)
    assert tree(out) == tree(reference)


class _Stop(Exception):
    pass


@pytest.mark.parametrize("write_batch, written_at_stop", [(1, 2), (4, 4)])
def test_interrupted_run_resumes_to_the_same_bytes(reference, tmp_path, write_batch, written_at_stop):
    out = tmp_path / "data"
    written = []

    def stop_after_two(result: GeneratedExample) -> None:
        written.append(result.spec)
        if len(written) == 2:
            raise _Stop

    with pytest.raises(_Stop):
        generate_dataset(out, workers=1, progress=False, on_example=stop_after_two, write_batch=write_batch, **SMALL)
    questions = sorted(p.name for p in (out / "incomplete/questions").rglob("*.json"))
    assert len(questions) == written_at_stop  # on_example runs once the example's whole batch is written
    assert not [p for p in out.rglob("*") if p.name.startswith(".")]  # no temp files left
    summary = generate_dataset(out, workers=1, progress=False, **SMALL)
    assert (summary.generated, summary.skipped) == (6 - written_at_stop, written_at_stop)
    assert tree(out) == tree(reference)


def test_killed_process_resumes_to_the_same_bytes(reference, tmp_path):
    """SIGKILL the generate command once question files appear, then run it again."""
    out = tmp_path / "data"
    command = [sys.executable, "-m", "clevr_poc", "generate", "--out", str(out), "--environments", "2",
               "--scenes-per-environment", "3", "--seed", "7", "--no-progress", "--chunksize", "1",
               "--write-batch", "1"]
    errors = tmp_path / "stderr.txt"
    with errors.open("wb") as stderr:
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=stderr)
    deadline = time.monotonic() + 60
    questions = out / "incomplete" / "questions"
    while time.monotonic() < deadline and process.poll() is None:
        if questions.is_dir() and any(questions.rglob("*.json")):
            break
        time.sleep(0.01)
    assert process.poll() is None, f"the command finished before it could be killed: {errors.read_text()[-2000:]}"
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    assert 1 <= len(list(questions.rglob("*.json"))) < 6
    assert cli_main(["generate", "--out", str(out), "--environments", "2", "--scenes-per-environment", "3",
                     "--seed", "7", "--no-progress"]) == 0
    assert tree(out) == tree(reference)


def test_ray_executor_gives_the_same_bytes(reference, tmp_path):
    pytest.importorskip("ray")
    from clevr_poc.executors import map_ordered, ray_session

    out = tmp_path / "data"
    with ray_session(2):
        generate_dataset(out, workers=2, executor="ray", chunksize=1, progress=False, **SMALL)
        with pytest.raises(DatasetConfigError):  # a worker's typed error comes back as itself
            list(map_ordered(_bad_config, [1, 0], workers=2, executor="ray"))
    assert tree(out) == tree(reference)


def _bad_config(scenes: int) -> DatasetConfig:
    return DatasetConfig(1, scenes, 0)


def test_other_settings_are_refused(reference, tmp_path):
    with pytest.raises(DatasetConfigError, match="seed: folder has 7, asked for 8"):
        generate_dataset(reference, environments=2, scenes_per_environment=3, seed=8, progress=False)
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(DatasetConfigError, match="not empty"):
        generate_dataset(tmp_path, progress=False, **SMALL)
    assert [p.name for p in tmp_path.iterdir()] == ["notes.txt"]


# ---------------------------------------------------------------------- the plan
def test_plan_is_balanced_over_environments_splits_and_attributes():
    config = DatasetConfig(30, 70, seed=3)
    specs = plan_examples(config)
    assert specs == plan_examples(config)
    assert len(specs) == 2100
    assert Counter(s.environment_id for s in specs) == {e: 70 for e in range(30)}
    assert Counter(s.split for s in specs) == {"train": 1260, "val": 420, "test": 420}
    for split in ("train", "val", "test"):
        indices = [s.image_index for s in specs if s.split == split]
        assert indices == list(range(len(indices)))
        per_env = Counter(s.environment_id for s in specs if s.split == split)
        assert max(per_env.values()) - min(per_env.values()) <= 1
        attributes = Counter(s.query_attribute for s in specs if s.split == split)
        for attribute, share in config.query_shares:
            assert abs(attributes[attribute] / len(indices) - share) <= 0.005
    assert Counter(s.query_attribute for s in specs) == {"color": 840, "shape": 840, "size": 210, "material": 210}
    assert len({(s.environment_id, s.local_index) for s in specs}) == 2100


def test_largest_remainder_and_share_parsing():
    assert largest_remainder(6, [("a", 0.6), ("b", 0.2), ("c", 0.2)]) == {"a": 4, "b": 1, "c": 1}
    assert largest_remainder(7, [("a", 0.5), ("b", 0.5)]) == {"a": 4, "b": 3}
    assert parse_shares("train=3, test=1") == {"train": 3.0, "test": 1.0}
    assert DatasetConfig(1, 1, 0, splits=(("train", 3), ("test", 1))).splits == (("train", 0.75), ("test", 0.25))
    for bad, message in (("train=abc", "not a number"), ("train", "expected name=share"),
                         ("train=-1", ">= 0"), ("a=1,a=2", "given twice"), ("", "empty")):
        with pytest.raises(DatasetConfigError, match=message):
            parse_shares(bad)
    config = DatasetConfig(1, 1, 0, splits=(("a", 2), ("b", 5), ("c", 9)), query_shares=(("shape", 1), ("size", 0)))
    assert DatasetConfig.from_json(config.to_json()).same_as(config)
    assert not DatasetConfig(1, 1, 1).same_as(DatasetConfig(1, 1, 0))
    assert config.fallback_attributes == ("shape",)  # never falls back to a zero-share attribute
    with pytest.raises(DatasetConfigError, match="unknown query attribute"):
        DatasetConfig(1, 1, 0, query_shares=(("colour", 1.0),))
    with pytest.raises(DatasetConfigError, match="positive integer"):
        DatasetConfig(0, 1, 0)


# ---------------------------------------------------------------------- the command line
@pytest.mark.parametrize("argv, message", [
    (["--splits", "train=abc"], "--splits: the share of 'train' is not a number: 'abc'"),
    (["--splits", "train=0.5,train=0.5"], "--splits: 'train' given twice"),
    (["--splits", "train=0.5,test=0.6"], "--splits: the shares add up to 1.1, not 1 (e.g. train=0.6,val=0.2,test=0.2)"),
    (["--query-shares", "colour=1"], "--query-shares: unknown attribute 'colour'; expected some of ['color', "
                                     "'shape', 'size', 'material']"),
    (["--workers", "0"], "--workers: must be >= 1, got 0"),
    (["--executor", "dask"], "--executor: expected one of ['local', 'ray'], got 'dask'"),
])
def test_cli_rejects_bad_values_in_one_line(argv, message, tmp_path, capsys):
    base = ["generate", "--out", str(tmp_path / "d"), "--environments", "2", "--scenes-per-environment", "3",
            "--seed", "1", "--no-progress"]
    assert cli_main(base + argv) == 1
    err = capsys.readouterr().err
    assert err == f"error: {message}\n"
    assert not (tmp_path / "d").exists()


def test_cli_resume_of_a_finished_dataset_is_a_no_op(reference, tmp_path, capsys):
    out = tmp_path / "copy"
    shutil.copytree(reference, out)
    assert cli_main(["generate", "--out", str(out), "--environments", "2", "--scenes-per-environment", "3",
                     "--seed", "7", "--no-progress", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert (report["generated"], report["skipped"], report["examples"]) == (0, 6, 6)
    assert tree(out) == tree(reference)


def test_resume_that_generates_nothing_keeps_the_statistics(reference, tmp_path, capsys, monkeypatch):
    """Nothing generated: stats.json, figures/ and README.md are the earlier run's, not computed again."""
    from clevr_poc.generation import stats as stats_module

    out = tmp_path / "copy"
    shutil.copytree(reference, out)

    def not_again(*args, **kwargs):
        raise AssertionError("statistics computed again")

    monkeypatch.setattr(stats_module, "write_report", not_again)
    argv = ["generate", "--out", str(out), "--environments", "2", "--scenes-per-environment", "3", "--seed", "7",
            "--no-progress"]
    assert cli_main(argv) == 0
    printed = capsys.readouterr().out.splitlines()
    assert "statistics unchanged: nothing was generated, so stats.json, figures/ and README.md are kept" in printed
    assert any(line.startswith("splits: train 4, val 1, test 1") for line in printed)
    assert tree(out) == tree(reference)
    assert cli_main(argv + ["--json"]) == 0
    assert json.loads(capsys.readouterr().out)["stats_reused"] is True


def test_resume_recomputes_statistics_an_interrupted_run_left_unfinished(reference, tmp_path, capsys):
    """stats.json without its final ``generation`` section (killed while writing the figures): computed again,
    to the same bytes."""
    out = tmp_path / "copy"
    shutil.copytree(reference, out)
    stats = json.loads((out / "stats.json").read_text())
    del stats["generation"]
    (out / "stats.json").write_text(json.dumps(stats))
    assert cli_main(["generate", "--out", str(out), "--environments", "2", "--scenes-per-environment", "3",
                     "--seed", "7", "--no-progress", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["stats_reused"] is False
    assert tree(out) == tree(reference)


def test_cli_summarises_the_unused_templates(reference, tmp_path, capsys):
    """The console names at most three unused templates (a 6-question dataset leaves most of the 28 unused);
    stats.json keeps the full list."""
    out = tmp_path / "copy"
    shutil.copytree(reference, out)
    assert cli_main(["generate", "--out", str(out), "--environments", "2", "--scenes-per-environment", "3",
                     "--seed", "7", "--no-progress"]) == 0
    missing = json.loads((out / "stats.json").read_text())["templates_missing"]
    assert len(missing) > 3
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("templates never used")]
    assert lines == [f"templates never used: {len(missing)} of 28 ({', '.join(missing[:3])}, ...; "
                     f"all {len(missing)} under templates_missing in {out / 'stats.json'})"]


def test_unused_templates_line_lists_up_to_three_names():
    from clevr_poc.commands.generate_command import unused_templates_line

    stats = Path("d/stats.json")
    assert (unused_templates_line(["a.json#0", "b.json#1"], 28, stats)
            == "templates never used: 2 of 28 (a.json#0, b.json#1)")
    assert (unused_templates_line([f"t.json#{i}" for i in range(19)], 28, stats)
            == f"templates never used: 19 of 28 (t.json#0, t.json#1, t.json#2, ...; all 19 under templates_missing in "
               f"{stats})")


# ---------------------------------------------------------------------- loader: official layout, errors
def _official_fixture(root: Path) -> Path:
    """A hand-made official-release folder: output/{complete,incomplete}/..., environment_constraints/.

    Two partial scenes of the Appendix A environment; question files are named so that directory order
    pairs them with the wrong scenes (pairing must use image_index); the environment id is only in the
    scenes (as in the official release).
    """
    from conftest import APPENDIX_A_QUERY, appendix_a_complete_scene, appendix_a_environment

    env_dir = root / "environment_constraints"
    env_dir.mkdir(parents=True)
    appendix_a_environment().to_lp(env_dir / "environment_0.lp")
    complete = appendix_a_complete_scene()
    data = root / "output"
    for index, hidden in ((0, 4), (1, 0)):
        for kind, scene in (("complete", complete), ("incomplete", complete.without_object(hidden))):
            doc = scene.to_json()
            doc.update(split="training", image_index=index, image_filename=f"CLEVR_{index:06d}.png",
                       constraint_type_index=0)
            path = data / kind / "scenes" / "training" / f"CLEVR_{index:06d}.json"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(doc))
    questions = data / "incomplete" / "questions" / "training"
    questions.mkdir(parents=True)
    for name, index, answer in (("CLEVR_a.json", 1, ["large"]), ("CLEVR_b.json", 0, ["medium", "small"])):
        (questions / name).write_text(json.dumps({
            "split": "training", "image_filename": f"CLEVR_{index:06d}.png", "image_index": index,
            "question": "What size is the other red rubber thing that is the same shape as the big purple thing?",
            "program": [], "asp_query": APPENDIX_A_QUERY, "answer": answer, "object_interest": None,
            "template_filename": "same_relate.json", "question_family_index": 0, "question_index": index}))
    (data / "incomplete" / "images" / "training").mkdir(parents=True)
    (data / "incomplete" / "images" / "training" / "CLEVR_000000.png").write_bytes(b"\x89PNG")
    return root


def test_loader_reads_the_official_layout_and_pairs_by_image_index(tmp_path):
    root = _official_fixture(tmp_path)
    data = load_dataset(root, split="train")  # "train" finds "training"
    assert data.layout == "official" and data.splits == ("training",)
    assert [e.image_index for e in data] == [0, 1]
    first, second = data
    assert len(first.partial_scene) == 4 and first.partial_scene.objects[0].color == "purple"
    assert second.partial_scene.objects[0].color == "gray"  # object 0 (purple) hidden in image 1
    assert first.environment.id == 0 and first.environment.num_objects == 5
    assert first.image_path == root / "output/incomplete/images/training/CLEVR_000000.png"
    assert second.image_path is None
    assert first.answer == {"medium", "small"}
    assert Reasoner().answer(first.environment, first.partial_scene, first.question).values == {"medium", "small"}
    assert len(first.complete_scene) == 5


def _rewrite(path: Path, change) -> None:
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data))


@pytest.mark.parametrize("damage, file_part, field", [
    (lambda r: _rewrite(r / "output/incomplete/questions/training/CLEVR_b.json",
                        lambda d: d.__setitem__("answer", ["huge"])), "CLEVR_b.json", "answer"),
    (lambda r: (r / "output/incomplete/questions/training/CLEVR_a.json").write_text("{not json"),
     "CLEVR_a.json", None),
    (lambda r: _rewrite(r / "output/incomplete/scenes/training/CLEVR_000000.json",
                        lambda d: d["objects"][1].__setitem__("color", "pink")), "CLEVR_000000.json",
     "objects[1].color"),
    (lambda r: _rewrite(r / "output/incomplete/scenes/training/CLEVR_000000.json",
                        lambda d: d.__setitem__("constraint_type_index", 9)), "CLEVR_000000.json",
     "constraint_type_index"),
    (lambda r: _rewrite(r / "output/incomplete/scenes/training/CLEVR_000000.json",
                        lambda d: d.__setitem__("image_index", 1)), "CLEVR_000000.json", "image_index"),
    (lambda r: (r / "output/incomplete/scenes/training/CLEVR_000000.json").unlink(), "CLEVR_b.json", "image_index"),
    (lambda r: _rewrite(r / "output/incomplete/questions/training/CLEVR_a.json",
                        lambda d: d.__setitem__("image_index", 0)), "training", "image_index"),
    (lambda r: (r / "environment_constraints/environment_0.lp").write_text(
        (r / "environment_constraints/environment_0.lp").read_text() + "\n#script (python) #end.\n"),
     "environment_0.lp", None),
])
def test_malformed_files_raise_format_error_naming_them(tmp_path, damage, file_part, field):
    root = _official_fixture(tmp_path)
    damage(root)
    with pytest.raises(FormatError) as info:
        list(load_dataset(root))
    assert file_part in str(info.value.source)
    if field is not None:
        assert info.value.field == field


def test_loader_rejects_folders_that_are_not_datasets(tmp_path):
    with pytest.raises(FormatError, match="dataset folder not found"):
        load_dataset(tmp_path / "missing")
    with pytest.raises(FormatError, match="no incomplete/questions"):
        load_dataset(tmp_path)
    root = _official_fixture(tmp_path / "ok")
    with pytest.raises(FormatError, match="unknown split"):
        load_dataset(root, split="dev")
    shutil.rmtree(root / "environment_constraints")
    with pytest.raises(FormatError, match="no environment folder"):
        load_dataset(root)


# ---------------------------------------------------------------------- a release in the official layout
RELEASE = Path(__file__).resolve().parent / "fixtures" / "official_release_small"


def test_loader_reads_a_release_written_in_the_official_layout():
    """``tests/fixtures/official_release_small``: the official generator's tree (``output/`` beside
    ``environment_constraints/``, split ``testing``, files ``CLEVR_%06d``), the official keys only (no
    camera, boxes, masks, manifest or card; questions without ``constraint_type_index``)."""
    data = load_dataset(RELEASE / "output", split="test")                  # "test" finds "testing"
    assert data.layout == "official" and data.splits == ("testing",)
    assert data.environment_dir == RELEASE / "environment_constraints" and data.environment_ids == [0, 1, 2]
    examples = list(data)
    assert [e.image_index for e in examples] == [0, 1, 2, 3, 4, 5]
    assert [e.environment.id for e in examples] == [0, 1, 2, 0, 1, 2]     # from the scenes' constraint_type_index
    for e in examples:
        assert e.partial_scene.camera is None and e.question.environment_id is None
        assert e.image_path == RELEASE / "output/incomplete/images/testing" / f"CLEVR_{e.image_index:06d}.png"
        assert e.scene_path == RELEASE / "output/incomplete/scenes/testing" / f"CLEVR_{e.image_index:06d}.json"
        assert len(e.partial_scene) == e.environment.num_objects - 1 == len(e.complete_scene) - 1
        assert Reasoner().answer(e.environment, e.partial_scene, e.question).values == e.answer
    assert examples[0].answer == {"cube", "sphere"}
    assert load_dataset(RELEASE, split="testing").root == RELEASE / "output"   # the folder above output/ works too


def test_loader_reads_one_question_file_per_split(tmp_path):
    root = tmp_path / "release"
    shutil.copytree(RELEASE, root)
    folder = root / "output/incomplete/questions/testing"
    questions = [json.loads(p.read_text()) for p in sorted(folder.glob("*.json"))]
    shutil.rmtree(folder)
    (folder.parent / "CLEVR_testing_questions.json").write_text(json.dumps({"info": {}, "questions": questions}))
    data = load_dataset(root / "output")
    assert data.splits == ("testing",) and [e.answer for e in data] == [q["answer"] and set(q["answer"])
                                                                         for q in questions]
    (folder.parent / "CLEVR_testing_questions.json").write_text(json.dumps({"questions": {"a": 1}}))
    with pytest.raises(FormatError, match="questions"):
        load_dataset(root / "output")
