"""Issue 14, files / JSON / command lines / generation: every bad input is one typed line, sizes and counts
are capped, writes are atomic and durable with the umask's mode, resuming removes our own stale temp files.

Each test is a regression test of a defect found by the hardening probe (numbers: the issue's list).
"""

from __future__ import annotations

import json
import os
import re
import signal
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from clevr_poc import limits
from clevr_poc._io import (atomic_open, atomic_path, atomic_write_json, atomic_write_text, read_json,
                           remove_stale_temp_files)
from clevr_poc.errors import FormatError
from clevr_poc.question import Question
from clevr_poc.scene import Scene

ROOT = Path(__file__).resolve().parent.parent
APPENDIX_QUERY = "missing(Q) :- hasProperty(X,color,Q)."


def _dead_pid() -> int:
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


def _cli(*argv: str, cwd: Path | None = None, env: dict | None = None, timeout: int = 120,
         module: str = "clevr_poc") -> subprocess.CompletedProcess:
    environment = {**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1", **(env or {})}
    return subprocess.run([sys.executable, "-m", module, *argv], capture_output=True, text=True, timeout=timeout,
                          cwd=cwd or ROOT, env=environment)


def _one_line_error(result: subprocess.CompletedProcess, status: int, *needles: str) -> str:
    """The run failed with ``status`` and exactly one stderr line holding every needle, no traceback."""
    lines = result.stderr.strip().splitlines()
    assert result.returncode == status, (result.returncode, result.stderr[-2000:])
    assert "Traceback" not in result.stderr and len(lines) == 1, result.stderr[-2000:]
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    return lines[0]


@pytest.fixture(scope="module")
def dataset(tmp_path_factory) -> Path:
    """3 questions (1 environment x 3 scenes, no visibility check), written under umask 022."""
    from clevr_poc.generation.dataset_writer import generate_dataset

    root = tmp_path_factory.mktemp("hardening") / "ds"
    old = os.umask(0o022)
    try:
        generate_dataset(root, environments=1, scenes_per_environment=3, seed=5, splits={"test": 1.0},
                         progress=False, visibility_check="off")
    finally:
        os.umask(old)
    return root


@pytest.fixture
def scene_data(dataset) -> dict:
    return json.loads(next((dataset / "incomplete" / "scenes" / "test").glob("*.json")).read_text())


# ====================================================================== 5. the JSON reader and the caps
@pytest.mark.parametrize("name, content, message", [
    ("bigint.json", '{"objects": [], "x": ' + "9" * 5000 + "}", "Exceeds the limit (4300 digits)"),
    ("nested.json", "[" * 100_000, "nested deeper than the json_depth cap of 64"),
    ("deep.json", "[" * 100 + "]" * 100, "nested deeper than the json_depth cap of 64"),
    ("latin1.json", b'{"a": "caf\xe9"}', "not UTF-8 text: byte 0xe9 at line 1 column 11"),
    ("empty.json", "", "invalid JSON at line 1 column 1"),
])
def test_json_reader_gives_one_format_error_naming_the_file(tmp_path, name, content, message):
    path = tmp_path / name
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    with pytest.raises(FormatError) as info:
        read_json(path)
    assert str(path) in str(info.value) and message in str(info.value)


def test_non_regular_files_are_refused_without_reading(tmp_path):
    fifo = tmp_path / "scene.fifo"
    os.mkfifo(fifo)  # reading a FIFO blocks forever
    for path, message in ((fifo, "not a regular file"), (Path("/dev/zero"), "not a regular file"),
                          (tmp_path, "cannot read: a folder, not a file")):
        with pytest.raises(FormatError, match=message):
            Scene.from_file(path)


def test_scene_file_over_its_cap_is_refused_from_its_size(tmp_path, monkeypatch, scene_data):
    big = tmp_path / "big.json"
    with open(big, "wb") as handle:  # 300 MB, sparse: nothing is written, so nothing may be read either
        handle.truncate(300_000_000)
    reads = []
    real_read = os.read
    monkeypatch.setattr(os, "read", lambda fd, n: reads.append(n) or real_read(fd, n))
    with pytest.raises(FormatError) as info:
        Scene.from_file(big)
    assert reads == []
    assert "a scene file of 300,000,000 bytes is over the scene_file_bytes cap of 8,388,608" in str(info.value)
    assert "CLEVR_POC_MAX_SCENE_FILE_BYTES" in str(info.value)
    small = tmp_path / "scene.json"
    small.write_text(json.dumps(scene_data))
    monkeypatch.setenv("CLEVR_POC_MAX_SCENE_FILE_BYTES", "100")  # overridable per run
    with pytest.raises(FormatError, match="over the scene_file_bytes cap of 100 "):
        Scene.from_file(small)
    monkeypatch.setenv("CLEVR_POC_MAX_SCENE_FILE_BYTES", "lots")
    with pytest.raises(FormatError,
                       match="environment variable CLEVR_POC_MAX_SCENE_FILE_BYTES: must be an integer >= 1"):
        Scene.from_file(small)
    monkeypatch.delenv("CLEVR_POC_MAX_SCENE_FILE_BYTES")
    with limits.override(scene_file_bytes=100):
        with pytest.raises(FormatError, match="cap of 100 "):
            Scene.from_file(small)
    assert len(Scene.from_file(small)) == len(scene_data["objects"])


def test_question_file_cap(tmp_path, dataset):
    path = next((dataset / "incomplete" / "questions" / "test").glob("*.json"))
    with limits.override(question_file_bytes=64):
        with pytest.raises(FormatError, match="a question file of .* bytes is over the question_file_bytes cap of 64"):
            Question.from_file(path)


def test_objects_per_scene_cap(scene_data):
    data = dict(scene_data, objects=scene_data["objects"][:1] * 65, relationships={})
    with pytest.raises(FormatError, match="65 objects is over the objects_per_scene cap of 64"):
        Scene.from_json(data, source="s.json")
    with limits.override(objects_per_scene=100):
        assert len(Scene.from_json(data, source="s.json")) == 65


@pytest.mark.parametrize("region", ["1.7", 1.7, " 2 ", "\u0662", "01", "+1", True, "4", -1, 2.0, None, [1]])
def test_region_must_be_an_official_string_or_an_integer_0_to_3(scene_data, region):
    scene_data["objects"][0]["region"] = region
    with pytest.raises(FormatError) as info:
        Scene.from_json(scene_data, source="s.json")
    assert "objects[0].region" in str(info.value) and (region is None or repr(region) in str(info.value))


@pytest.mark.parametrize("region, expected", [("0", 0), ("3", 3), (0, 0), (3, 3)])
def test_official_region_spellings_are_read(scene_data, region, expected):
    scene_data["objects"][0]["region"] = region
    scene = Scene.from_json(scene_data, source="s.json")
    assert scene.objects[0].region == expected and scene.to_json()["objects"][0]["region"] == region


@pytest.mark.parametrize("key, value, field", [
    ("3d_coords", [float("nan"), 0.0, 0.0], "objects[0].3d_coords"),
    ("pixel_coords", [1e999, 0.0, 1.0], "objects[0].pixel_coords"),
    ("image_filename", "../../../tmp/evil.png", "image_filename"),
    ("image_filename", "images/CLEVR_test_000000.png", "image_filename"),
])
def test_non_finite_coordinates_and_paths_in_image_names_are_refused(scene_data, key, value, field):
    if key == "image_filename":
        scene_data[key] = value
    else:
        scene_data["objects"][0][key] = value
    with pytest.raises(FormatError, match=re.escape(f"s.json, field '{field}': ")):
        Scene.from_json(scene_data, source="s.json")


@pytest.mark.parametrize("answer", [[["red"]], [{"a": 1}], 3])
def test_question_answer_that_is_not_a_value_is_a_format_error(answer):
    with pytest.raises(FormatError, match="q.json, field 'answer': not an attribute value"):
        Question.from_json({"question": "What color?", "asp_query": APPENDIX_QUERY, "answer": answer}, source="q.json")


def test_checkpoint_line_with_a_huge_integer_is_a_format_error(tmp_path):
    from clevr_poc.evaluation import Checkpoint

    path = tmp_path / "c.jsonl"
    path.write_text('{"checkpoint": "clevr_poc.evaluate", "model": "m"}\n{"key": ' + "7" * 5000 + "}\n")
    with pytest.raises(FormatError, match=r"c\.jsonl, line 2: invalid JSON value"):
        Checkpoint(path, "m")


# ====================================================================== 9. atomic, durable writes, the umask's mode
@pytest.mark.parametrize("umask, mode", [(0o022, 0o644), (0o027, 0o640), (0o002, 0o664)])
def test_atomic_writes_keep_the_umask_mode(tmp_path, umask, mode):
    old = os.umask(umask)
    try:
        atomic_write_text(tmp_path / "a.json", "{}\n")
        with atomic_open(tmp_path / "b.pt") as handle:
            handle.write(b"weights")
        with atomic_path(tmp_path / "c.png") as tmp:
            tmp.write_bytes(b"png")
        atomic_write_json(tmp_path / "sub" / "d.json", {"x": 1})
    finally:
        os.umask(old)
    for name in ("a.json", "b.pt", "c.png", "sub/d.json"):
        assert stat.S_IMODE((tmp_path / name).stat().st_mode) == mode, name
    assert (tmp_path / "c.png").read_bytes() == b"png"


def test_atomic_write_fsyncs_the_file_then_the_folder_after_the_rename(tmp_path, monkeypatch):
    target = tmp_path / "scene.json"
    calls = []
    real_fsync = os.fsync

    def recording_fsync(fd):
        info = os.fstat(fd)
        calls.append(("folder" if stat.S_ISDIR(info.st_mode) else "file", target.exists()))
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", recording_fsync)
    atomic_write_text(target, "{}\n")
    assert calls == [("file", False), ("folder", True)]


def test_a_failed_write_keeps_the_old_file_and_leaves_no_temp_file(tmp_path):
    target = tmp_path / "report.json"
    target.write_text("old\n")
    with pytest.raises(RuntimeError):
        with atomic_open(target, binary=False) as handle:
            handle.write("new, half written")
            raise RuntimeError("disk on fire")
    assert target.read_text() == "old\n" and sorted(p.name for p in tmp_path.iterdir()) == ["report.json"]


def test_generated_dataset_files_are_readable_by_group_and_others(dataset):
    files = [p for p in dataset.rglob("*") if p.is_file()]
    assert len(files) >= 12  # manifest, environment, 3 x 3 example files, stats, card, figures
    modes = {p.relative_to(dataset).as_posix(): oct(stat.S_IMODE(p.stat().st_mode)) for p in files}
    assert set(modes.values()) == {"0o644"}, modes
    assert not list(dataset.rglob("*.tmp"))


# ====================================================================== 8. stale temp files
def test_remove_stale_temp_files_removes_only_our_dead_or_old_ones(tmp_path):
    now = 1_000_000.0
    dead = tmp_path / f".CLEVR_000001.json.{_dead_pid()}-0a1b2c3d.tmp"      # a SIGKILLed writer's
    live = tmp_path / f".CLEVR_000002.json.{os.getpid()}-0a1b2c3d.tmp"      # being written now
    old_live = tmp_path / f".CLEVR_000003.json.{os.getpid()}-ffffffff.tmp"  # pid reused after a reboot
    legacy_old = tmp_path / ".CLEVR_000004.json.ab12_xyz.tmp"             # mkstemp, earlier versions
    legacy_fresh = tmp_path / ".CLEVR_000005.json.k3j4h5g6.tmp"
    others = [tmp_path / ".notes.tmp", tmp_path / "CLEVR_000006.json.12-0a1b2c3d.tmp", tmp_path / "keep.json"]
    for path in (dead, live, old_live, legacy_old, legacy_fresh, *others):
        path.write_text("partial")
    for path, age in ((dead, 1), (live, 1), (old_live, 7200), (legacy_old, 120), (legacy_fresh, 1)):
        os.utime(path, (now - age, now - age))
    assert remove_stale_temp_files(tmp_path, targets=["CLEVR_000009.json"], now=now) == []
    assert remove_stale_temp_files(tmp_path, now=now) == sorted([dead, old_live, legacy_old])
    assert all(p.exists() for p in (live, legacy_fresh, *others))


def test_render_cleanup_knows_the_new_temp_names(tmp_path):
    from clevr_poc.rendering.batch_render import remove_stale_temp_files as remove_render_temps

    images, scenes = tmp_path / "incomplete" / "images" / "val", tmp_path / "incomplete" / "scenes" / "val"
    images.mkdir(parents=True)
    scenes.mkdir(parents=True)
    pid = _dead_pid()
    png = images / f".CLEVR_val_000000.png.{pid}-12345678.tmp"
    scene = scenes / f".CLEVR_000000.json.{pid}-9abcdef0.tmp"
    for path in (png, scene):
        path.write_bytes(b"")
    assert remove_render_temps(tmp_path) == [png, scene]


_KILL_AT_FOURTH_RENAME = textwrap.dedent("""
    import os, signal, sys
    import clevr_poc._io as io
    real, count = io._rename, [0]
    def rename(tmp, path):
        count[0] += 1
        if count[0] == 4:  # manifest, environment, complete scene 0, then partial scene 0: killed mid-batch
            os.kill(os.getpid(), signal.SIGKILL)
        real(tmp, path)
    io._rename = rename
    from clevr_poc.commands.main import main
    sys.exit(main(sys.argv[1:]))
""")


def test_generate_resumes_after_sigkill_and_removes_its_temp_file(tmp_path):
    out = tmp_path / "ds"
    argv = ["generate", "--out", str(out), "--environments", "1", "--scenes-per-environment", "2", "--seed", "3",
            "--splits", "test=1", "--no-visibility-check", "--no-progress", "--json"]
    killed = subprocess.run([sys.executable, "-c", _KILL_AT_FOURTH_RENAME, *argv], capture_output=True, text=True,
                            timeout=300, env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-2000:]
    # the batch's scene files are written (temp files) before any is renamed; no question file yet
    left = sorted(p.relative_to(out).as_posix() for p in out.rglob("*.tmp"))
    assert [name.split(".json.")[0] for name in left] == [
        "complete/scenes/test/.CLEVR_000001", "incomplete/scenes/test/.CLEVR_000000",
        "incomplete/scenes/test/.CLEVR_000001"], left
    assert not (out / "incomplete" / "questions").exists()
    resumed = _cli(*argv, timeout=300)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    report = json.loads(resumed.stdout.strip().splitlines()[-1])
    assert (report["stale_temp_files_removed"], report["generated"], report["skipped"]) == (3, 2, 0)
    assert not list(out.rglob("*.tmp"))
    assert sorted(p.name for p in (out / "incomplete" / "questions" / "test").iterdir()) == [
        "CLEVR_000000.json", "CLEVR_000001.json"]


# ====================================================================== 6, 7 and the minor ones: command lines
def test_evaluate_output_paths_fail_up_front_in_one_line(dataset, tmp_path):
    base = ["evaluate", "--dataset", str(dataset), "--split", "test", "--model", "ns-vqa-gold"]
    a_file = tmp_path / "results.txt"
    a_file.write_text("x")
    _one_line_error(_cli(*base, "--out", "/proc/x"), 1, "--out '/proc/x'", "cannot write there")
    _one_line_error(_cli(*base, "--out", str(a_file)), 1, "--out", "exists and is not a folder")
    _one_line_error(_cli(*base, "--checkpoint", "/proc/x/c.jsonl"), 1, "--checkpoint '/proc/x/c.jsonl'",
                    "cannot write there")
    _one_line_error(_cli(*base, "--checkpoint", str(tmp_path)), 1, "--checkpoint", "is a folder, not a file")
    _one_line_error(_cli(*base, "--workers", "0"), 2, "--workers", "expected an integer >= 1, got '0'")
    _one_line_error(_cli(*base, "--max-tokens", "-1"), 2, "--max-tokens", "got '-1'")
    _one_line_error(_cli(*base, "--threads", "0"), 1, "--threads", "must be a positive integer")
    _one_line_error(_cli(*base, "--limit", "nan"), 2, "--limit", "got 'nan'")


def test_evaluate_out_removes_stale_temp_files_of_a_killed_run(dataset, tmp_path):
    out = tmp_path / "results"
    out.mkdir()
    stale = out / f".report.json.{_dead_pid()}-0a1b2c3d.tmp"
    stale.write_text('{"half')
    result = _cli("evaluate", "--dataset", str(dataset), "--split", "test", "--model", "ns-vqa-gold", "--out",
                  str(out), "--no-plots")
    assert result.returncode == 0, result.stderr[-2000:]
    assert not stale.exists() and (out / "report.json").is_file()


@pytest.mark.parametrize("option, value, cap", [
    ("--environments", "100000000000", "the environments cap of 1,000 (raise it with CLEVR_POC_MAX_ENVIRONMENTS)"),
    ("--scenes-per-environment", "100000000000", "the examples cap of 1,000,000 (raise it with CLEVR_POC_MAX_EXAMPLES)"),
    ("--workers", "100000000", "the workers cap of 1,024"),
])
def test_generate_refuses_huge_counts_before_writing_anything(tmp_path, option, value, cap):
    out = tmp_path / "ds"
    argv = {"--environments": "1", "--scenes-per-environment": "1", "--workers": "1", option: value}
    result = _cli("generate", "--out", str(out), "--seed", "0", *[x for kv in argv.items() for x in kv])
    _one_line_error(result, 1, option, cap)
    assert not out.exists()


def test_generate_refuses_a_pixel_minimum_over_the_image_before_writing_anything(tmp_path):
    out = tmp_path / "ds"
    result = _cli("generate", "--out", str(out), "--seed", "0", "--environments", "1", "--scenes-per-environment",
                  "1", "--min-visible-pixels", "1000000")
    _one_line_error(result, 1, "--min-visible-pixels: must be <= 102,400 (the pixels of a 320 x 320 image), "
                               "got 1,000,000")
    assert "min_visible_pixels" not in result.stderr
    assert not out.exists()


def test_generate_counts_are_overridable(tmp_path):
    result = _cli("generate", "--out", str(tmp_path / "ds"), "--seed", "0", "--environments", "3",
                  "--scenes-per-environment", "1", env={"CLEVR_POC_MAX_ENVIRONMENTS": "2"})
    _one_line_error(result, 1, "--environments: 3 is over the environments cap of 2")


def test_generate_output_folder_errors(tmp_path):
    a_file = tmp_path / "file"
    a_file.write_text("x")
    base = ["generate", "--environments", "1", "--scenes-per-environment", "1", "--seed", "0"]
    _one_line_error(_cli(*base, "--out", "/proc/x"), 1, "--out '/proc/x'", "cannot write there")
    _one_line_error(_cli(*base, "--out", str(a_file)), 1, "--out", "exists and is not a folder")


def test_generate_on_the_core_install_names_the_generate_extra(tmp_path):
    blocked = ("import sys\nfor name in ('tqdm', 'matplotlib'):\n    sys.modules[name] = None\n"
               "from clevr_poc.commands.main import main\nsys.exit(main(sys.argv[1:]))")
    out = tmp_path / "ds"
    result = subprocess.run([sys.executable, "-c", blocked, "generate", "--out", str(out), "--environments", "1",
                             "--scenes-per-environment", "1", "--seed", "0"], capture_output=True, text=True,
                            timeout=120)
    _one_line_error(result, 1, "tqdm, matplotlib", "install the [generate] extra", "pip install '.[generate]' in the clevr_poc folder")
    assert not out.exists()


def test_missing_optional_module_inside_a_command_is_one_line():
    from clevr_poc.commands.main import missing_module_message

    assert "install the [generate] extra" in missing_module_message("generate", ModuleNotFoundError(name="tqdm"))
    assert "install the [render] extra" in missing_module_message("render", ModuleNotFoundError(name="bpy"))
    assert "[vision]" in missing_module_message("evaluate", ModuleNotFoundError(name="torch.nn"))
    assert missing_module_message("answer", ModuleNotFoundError(name="clevr_poc.typo")) is None  # a bug: traceback


def test_answer_json_reports_the_mode_that_answered():
    fallback = "missing(Q) :- hasProperty(X,color,Q), hasProperty(Y,color,Q), X!=Y."  # outside the compiled fragment
    for query, mode in ((None, "compiled"), (fallback, "direct")):
        argv = ["answer", "--example", "appendix_a", "--json"] + (["--query", query] if query else [])
        result = _cli(*argv)
        assert result.returncode == 0, result.stderr
        assert json.loads(result.stdout)["mode"] == mode, query


def test_bad_input_files_on_the_command_line_are_one_line(tmp_path):
    deep, bigint, questions = tmp_path / "deep.json", tmp_path / "bigint.json", tmp_path / "q.jsonl"
    deep.write_text("[" * 100_000)
    bigint.write_text('{"CLEVR_test_000000.png": ' + "1" * 5000 + "}")
    questions.write_text('{"question": "What color?"}\n{"question": ' + "2" * 5000 + "}\n")
    environment = ROOT / "clevr_poc" / "examples" / "appendix_a"
    env_file = next(environment.glob("*.lp"))
    _one_line_error(_cli("answer", "--environment", str(env_file), "--scene", str(deep), "--query", APPENDIX_QUERY),
                    1, str(deep), "nested deeper than the json_depth cap")
    _one_line_error(_cli("answer", "--environment", str(env_file), "--scene", "/dev/zero", "--query", APPENDIX_QUERY),
                    1, "/dev/zero", "not a regular file")
    _one_line_error(_cli("parse", "--parser", "llm", "--questions", str(questions)), 1, "q.jsonl, line 2: ",
                    "invalid JSON value")


def test_predictions_file_errors_are_one_line(dataset, tmp_path):
    bigint = tmp_path / "bigint.json"
    bigint.write_text('{"CLEVR_test_000000.png": ' + "1" * 5000 + "}")
    _one_line_error(_cli("evaluate", "--dataset", str(dataset), "--split", "test", "--predictions", str(bigint)), 1,
                    "bigint.json", "invalid JSON value")


def test_render_caps(tmp_path):
    result = _cli("render", "--dataset", str(tmp_path), "--samples", "1000000000")
    _one_line_error(result, 1, "--samples", "the samples cap of 65,536")


@pytest.mark.parametrize("module, argv", [
    ("clevr_poc.perception", ["train", "--dataset", "d", "--out", "/proc/x"]),
    ("clevr_poc.train_parser", ["--dataset", "d", "--out", "/proc/x"]),
    ("clevr_poc.baselines.clip", ["train", "--dataset", "d", "--variant", "nl", "--out", "/proc/x"]),
    ("clevr_poc.mcot", ["scienceqa", "--data", "d", "--output", "/proc/x/out.json"]),
])
def test_other_command_lines_check_their_output_paths_first(module, argv):
    option = "--output" if "--output" in argv else "--out"
    _one_line_error(_cli(*argv, module=module), 1, f"{option} '/proc/x", "cannot write there")


def test_usage_errors_are_one_line_in_every_command_line():
    for module, argv in (("clevr_poc", ["evaluate", "--dataset", "d", "--split", "s", "--model", "nope"]),
                         ("clevr_poc.train_parser", ["--dataset", "d", "--out", "o", "--lr", "nan"]),
                         ("clevr_poc.perception", ["evaluate", "--bogus"])):
        _one_line_error(_cli(*argv, module=module), 2, "error: ", "--help")


def test_readme_lists_the_real_evaluate_models():
    from clevr_poc.commands.evaluate_command import CLIP_MODELS, MODELS

    listed = set()
    for line in (ROOT / "README.md").read_text(encoding="utf-8").splitlines():
        if line.startswith("python -m clevr_poc evaluate") and "--model " in line:
            listed |= set(line.split("--model ", 1)[1].split()[0].split("|"))
    assert listed == set(MODELS) | set(CLIP_MODELS)


@pytest.mark.parametrize("block", ["[" * 100_000, "[" + "9" * 5000 + "]"])
def test_a_model_reply_with_hostile_json_is_a_parse_failure_not_a_crash(block):
    from clevr_poc.baselines.vlm_scene import parse_listed_objects

    assert parse_listed_objects(f"<objects>{block}</objects>").error == "the objects block is not JSON"
