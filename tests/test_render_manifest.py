"""The render manifest (``DIR/<kind>/images/render.json``): resolved settings, comparison on resume, the
demo's pre-check. No Blender needed (the end-to-end ``render`` tests are in tests/test_rendering.py)."""

from __future__ import annotations

import json

import pytest

from clevr_poc.errors import FormatError
from clevr_poc.render_settings import RenderSettings
from clevr_poc.rendering.render_manifest import (
    RenderManifest, RenderSettingsError, check_render_folders, read_render_manifest, record_after_overwrite,
    record_before_render,
)


def test_manifest_resolves_the_style_defaults_as_the_renderer_does():
    official = RenderManifest.of(RenderSettings(), seed=7)
    assert (official.style, official.width, official.height, official.samples, official.colour_space) == (
        "official", 320, 320, 8, "linear")
    assert (official.camera_jitter, official.light_jitter, official.cone_lift) == (0.0, 0.0, pytest.approx(0.118))
    assert (official.denoise, official.adaptive, official.assets, official.seed) == (True, True, None, 7)
    ours = RenderManifest.of(RenderSettings(style="ours", width=64, engine="eevee"), seed=0)
    assert (ours.style, ours.width, ours.height, ours.colour_space, ours.camera_jitter, ours.light_jitter) == (
        "ours", 64, 240, "srgb", 0.5, 1.0)
    assert (ours.denoise, ours.adaptive) == (False, False)  # Cycles-only settings, as they took effect


def test_manifest_round_trips_and_bad_files_are_format_errors(tmp_path):
    manifest = RenderManifest.of(RenderSettings(samples=3), seed=5)
    data = manifest.to_json()
    assert data["format_version"] == 1 and data["seed_rule"].startswith("sha256(seed, split")
    assert RenderManifest.from_json(json.loads(json.dumps(data))) == manifest
    with pytest.raises(FormatError, match="unknown render manifest version"):
        RenderManifest.from_json({**data, "format_version": 2})
    del data["samples"]
    with pytest.raises(FormatError, match="missing field of the render manifest"):
        RenderManifest.from_json(data)


def _dataset(tmp_path, *, png=False):
    images = tmp_path / "ds" / "incomplete" / "images" / "test"
    images.mkdir(parents=True)
    if png:
        (images / "CLEVR_test_000000.png").write_bytes(b"\x89PNG")
    return tmp_path / "ds"


def test_other_settings_are_refused_naming_the_folder_and_each_setting(tmp_path):
    dataset = _dataset(tmp_path)
    eight = RenderManifest.of(RenderSettings(samples=8), seed=0)
    record_before_render(dataset, ("incomplete",), eight)  # a fresh folder: recorded before rendering
    assert read_render_manifest(dataset) == eight
    assert check_render_folders(dataset, ("incomplete",), eight) == ()  # same settings: resume
    with pytest.raises(RenderSettingsError) as info:
        check_render_folders(dataset, ("incomplete",), RenderManifest.of(RenderSettings(samples=2), seed=0))
    assert str(info.value) == (f"{dataset}/incomplete/images was rendered with samples 8, asked for 2; "
                               "use --overwrite to re-render or another folder")
    assert info.value.differences == (("samples", 8, 2),)
    with pytest.raises(RenderSettingsError,
                       match=r"rendered with samples 8, asked for 2; seed 0, asked for 3; use --overwrite"):
        check_render_folders(dataset, ("incomplete",), RenderManifest.of(RenderSettings(samples=2), seed=3))
    # --overwrite: the check lets it through; the differing manifest goes until every image is rendered again
    two = RenderManifest.of(RenderSettings(samples=2), seed=0)
    assert check_render_folders(dataset, ("incomplete",), two, overwrite=True) == ()
    record_before_render(dataset, ("incomplete",), two, overwrite=True)
    assert read_render_manifest(dataset) is None
    record_after_overwrite(dataset, ("incomplete",), two)
    assert read_render_manifest(dataset) == two


def test_a_folder_with_images_and_no_manifest_is_unchecked_and_not_recorded(tmp_path):
    dataset = _dataset(tmp_path, png=True)
    asked = RenderManifest.of(RenderSettings(), seed=0)
    assert check_render_folders(dataset, ("incomplete",), asked) == (dataset / "incomplete" / "images",)
    record_before_render(dataset, ("incomplete",), asked)
    assert read_render_manifest(dataset) is None  # its images' settings are unknown: nothing is claimed


def test_render_summary_warns_once_per_unchecked_folder():
    from clevr_poc.rendering.batch_render import RenderSummary

    summary = RenderSummary(3, 0, 3, 0.0, None, unchecked=("ds/incomplete/images",))
    assert summary.warnings() == [
        "warning: ds/incomplete/images has no render.json (rendered before clevr_poc recorded render settings): "
        "its images' settings cannot be checked against those asked; resumed as asked"]
    assert summary.report()["settings_unchecked"] == ["ds/incomplete/images"]


def test_demo_refuses_a_folder_rendered_with_other_samples_before_any_work(tmp_path):
    from clevr_poc.commands.demo_command import _check_rendered_with

    dataset = _dataset(tmp_path)
    record_before_render(dataset, ("incomplete",), RenderManifest.of(RenderSettings(samples=8), seed=0))
    _check_rendered_with(dataset, RenderSettings(samples=8), 0)  # the same: the rerun resumes
    _check_rendered_with(tmp_path / "new" / "dataset", RenderSettings(samples=2), 0)  # no folder yet
    with pytest.raises(RenderSettingsError) as info:
        _check_rendered_with(dataset, RenderSettings(samples=2), 0)
    assert str(info.value) == (f"{dataset}/incomplete/images was rendered with samples 8, asked for 2; "
                               "a rerun reuses the images of its --out: ask for the settings it was rendered "
                               "with, or use another --out")


def test_demo_report_states_the_recorded_samples_and_the_reused_images():
    from clevr_poc.commands.demo_command import UNRECORDED_LOOK, _reused_text, _samples_text

    settings = {"samples": 8, "images_reused": 3}
    assert _samples_text(settings) + "look" == "8 samples per pixel; look"
    assert _reused_text(settings) == " (3 images reused from an earlier run of the demo)"
    assert _samples_text({"samples": None, "look": UNRECORDED_LOOK}) == ""
    assert _reused_text({"images_reused": 0}) == ""


def test_demo_rerun_with_other_samples_stops_before_generating(tmp_path, capsys, monkeypatch):
    from clevr_poc.commands import demo_command
    from clevr_poc.commands.main import main

    monkeypatch.setattr(demo_command, "check_requirements", lambda: None)  # no venv holds both bpy and torch
    monkeypatch.setattr("clevr_poc.pipeline.check_checkpoints", lambda models, **kwargs: None)
    out = tmp_path / "demo"
    dataset = _dataset(out, png=True).rename(out / "dataset")
    record_after_overwrite(dataset, ("incomplete",), RenderManifest.of(RenderSettings(samples=8), seed=0))
    assert main(["demo", "--out", str(out), "--samples", "2", "--no-progress"]) == 1
    stdout, stderr = capsys.readouterr()
    assert stdout == ""  # not even "[1/4] generating"
    assert stderr == (f"error: {dataset}/incomplete/images was rendered with samples 8, asked for 2; a rerun reuses "
                      "the images of its --out: ask for the settings it was rendered with, or use another --out\n")


def test_a_malformed_manifest_on_disk_is_a_one_line_error_naming_the_file(tmp_path):
    from clevr_poc.rendering.render_manifest import check_render_folders, manifest_path

    asked = RenderManifest.of(RenderSettings(), seed=3)
    path = manifest_path(tmp_path, "incomplete")
    path.parent.mkdir(parents=True)
    path.write_text("{not json", encoding="utf-8")
    with pytest.raises(FormatError) as caught:
        check_render_folders(tmp_path, ("incomplete",), asked)
    assert str(path) in str(caught.value) and "\n" not in str(caught.value)
    path.write_text("[1, 2]", encoding="utf-8")
    with pytest.raises(FormatError, match="a render manifest must be a JSON object"):
        check_render_folders(tmp_path, ("incomplete",), asked)
