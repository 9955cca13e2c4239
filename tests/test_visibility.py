"""Visibility during generation: layouts checked from the render camera, `generate --render`.

The check (:class:`clevr_poc.generation.layout.VisibilityCheck`) ray-casts the renderer's own meshes from
the renderer's camera (no Blender): a small cube right behind a large cylinder on the camera's diagonal is
rejected, a spread-out layout accepted; generated datasets pass the renderer's own check from the seeds
the `render` command will use, byte-identically with 1 or 2 workers, rejections counted in stats.json.
The render test needs Blender's ``bpy`` and is skipped cleanly without it; the no-bpy error test is
skipped where bpy is installed.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from clevr_poc.commands.main import main as cli_main
from clevr_poc.errors import FormatError
from clevr_poc.generation.dataset_config import DatasetConfigError
from clevr_poc.generation.dataset_writer import generate_dataset
from clevr_poc.generation.layout import VisibilityCheck
from clevr_poc.rendering import check_visibility
from clevr_poc.rendering.batch_render import image_seed, plan_tasks
from clevr_poc.rendering.render import bpy_available
from clevr_poc.scene import Scene, SceneObject
from random_layouts import random_layouts

TINY = dict(environments=1, scenes_per_environment=3, seed=5, splits={"train": 2, "test": 1})


def _obj(color, shape, size, region, x, y, rotation=0.0):
    return SceneObject(color, shape, size, "rubber", region, (x, y, 0.0), rotation=rotation)


# the (official) camera looks from the front right (x > 0, y < 0) towards the origin: (-3.6, 3.6) is
# behind (-2, 2)
BEHIND = Scene((
    _obj("red", "cylinder", "large", 0, -2.0, 2.0),
    _obj("blue", "cube", "small", 0, -3.6, 3.6),
    _obj("green", "sphere", "medium", 3, 3.0, -3.0),
))
SPREAD = Scene((
    _obj("red", "cylinder", "large", 0, -3.0, 3.0),
    _obj("blue", "cube", "small", 1, 3.0, 3.0),
    _obj("green", "sphere", "medium", 3, 3.0, -3.0),
    _obj("gray", "cone", "small", 2, -3.5, -3.0),
))


def tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


# ---------------------------------------------------------------------- the check on hand-made layouts
def test_small_object_behind_a_large_one_is_rejected_and_a_spread_out_layout_accepted():
    check = VisibilityCheck()
    assert (check.min_pixels, check.width, check.height) == (53, 320, 320)  # the renderer's (official) defaults
    outcome = check.check(BEHIND, 2, camera_seed=11)
    assert not outcome.ok and outcome.image == "complete"
    assert outcome.offending == ((1, 0, "occluded"),)  # fully hidden, though large enough unoccluded
    assert outcome.pixels[0] > 800 and outcome.pixels[2] > 400
    accepted = check.check(SPREAD, 0, camera_seed=11)
    assert accepted.ok and accepted.offending == () and min(accepted.pixels) > 80
    # the very numbers of the renderer's own check, from the camera of the same seed
    assert accepted.pixels == check_visibility(SPREAD, seed=11).pixels
    assert outcome.pixels == check_visibility(BEHIND, seed=11).pixels


def test_partial_scope_only_needs_the_objects_the_partial_image_shows():
    partial = VisibilityCheck(scope="partial")
    assert partial.check(BEHIND, 1, camera_seed=11).ok  # the occluded cube is the hidden one
    uncovered = partial.check(BEHIND, 0, camera_seed=11)  # hiding the cylinder uncovers the cube
    assert uncovered.ok and uncovered.pixels[1] == 0
    still = partial.check(BEHIND, 2, camera_seed=11)  # the cube stays behind the cylinder
    assert not still.ok and still.image == "partial" and still.offending == ((1, 0, "occluded"),)
    assert not VisibilityCheck(scope="both").check(BEHIND, 1, camera_seed=11).ok
    strict = VisibilityCheck(min_pixels=165).check(SPREAD, 0, camera_seed=11)  # the small cone: 86 px
    assert [(k, reason) for k, _, reason in strict.offending] == [(3, "too_small")]


def test_cheap_bound_is_conservative_and_gives_the_full_checks_decisions():
    """The bound never exceeds the ray-cast pixel counts; the decision-only check (``exact_pixels=False``,
    what ``generate`` runs) returns the full check's ok/image/offending on hand-made and random layouts
    (thresholds 40 and 300 px: accepted and rejected ones, both scopes)."""
    import random

    from clevr_poc.environments.sampler import sample_environment
    from clevr_poc.seeds import ENVIRONMENT, derive_seed
    from clevr_poc.generation.layout import PlacementError, place_objects, visible_pixel_bounds
    from clevr_poc.generation.scene_sampler import SceneSampler
    from clevr_poc.rendering.render import scene_camera, scene_meshes

    camera = scene_camera(11)
    spread = visible_pixel_bounds(scene_meshes(SPREAD), camera, range(4))
    exact = check_visibility(SPREAD, seed=11).pixels
    assert all(0.9 * e <= b <= e for b, e in zip(spread, exact))  # apart: within 10 % of the exact count
    behind = visible_pixel_bounds(scene_meshes(BEHIND), camera, range(3))
    assert behind[1] == 0 and behind[0] <= check_visibility(BEHIND, seed=11).pixels[0]
    fast = VisibilityCheck().check(SPREAD, 0, camera_seed=11, exact_pixels=False)
    assert fast.ok and fast.pixels is None  # decided by the bound alone
    rejected = VisibilityCheck().check(BEHIND, 2, camera_seed=11, exact_pixels=False)
    # decided by the upper bound: no pixel count
    assert (rejected.ok, rejected.image, rejected.offending) == (False, "complete", ((1, None, "occluded"),))

    sampler = SceneSampler(sample_environment(derive_seed(ENVIRONMENT, 3, 0), env_id=0))
    rng = random.Random(4)
    decided = rejected = 0
    for trial in range(40):
        try:
            scene = place_objects(sampler.sample(rng), rng).scene
        except PlacementError:
            continue
        seed, hidden = rng.getrandbits(32), rng.randrange(len(scene))
        full = check_visibility(scene, seed=seed)
        bounds = visible_pixel_bounds(scene_meshes(scene), scene_camera(seed), range(len(scene)))
        assert all(b <= e for b, e in zip(bounds, full.pixels))
        for check in (VisibilityCheck("both", 40), VisibilityCheck("both", 300), VisibilityCheck("partial", 300)):
            a = check.check(scene, hidden, seed, exact_pixels=False)
            b = check.check(scene, hidden, seed)
            assert (a.ok, a.image, _reasons(a)) == (b.ok, b.image, _reasons(b))
            assert all(p is None or p == q for (_, p, _), (_, q, _) in zip(a.offending, b.offending))
            decided += a.pixels is None
            rejected += not b.ok
    assert decided > 20 and rejected > 5  # both paths were exercised



def test_decision_only_check_equals_the_ray_cast_check_on_many_layouts():
    """Issue 27: the decision-only check (bounds, pair-ordered window maps) against the full ray-cast check on
    150 random layouts of three environments from random render cameras, at the default threshold and at
    120 px: the same ok, image and offending objects with their reasons, and the same pixel count wherever
    the fast check gives one."""
    checks = (VisibilityCheck("both"), VisibilityCheck("both", 120))
    compared = rejected = counted = 0
    for scene, rng in random_layouts(27, 270, 50):
        seed, hidden = rng.getrandbits(32), rng.randrange(len(scene))
        for check in checks:
            fast = check.check(scene, hidden, seed, exact_pixels=False)
            full = check.check(scene, hidden, seed)
            assert (fast.ok, fast.image, _reasons(fast)) == (full.ok, full.image, _reasons(full))
            for (_, p, _), (_, q, _) in zip(fast.offending, full.offending):
                assert p is None or p == q
                counted += p is not None
            compared += 1
            rejected += not full.ok
    assert (compared, rejected, counted) == (300, 148, 33)  # rejections by bounds and by pixel counts

def _reasons(outcome) -> list[tuple[int, str]]:
    """(object, reason) of each offending object (the decision-only check may leave the counts None)."""
    return [(k, reason) for k, _, reason in outcome.offending]


def test_bad_settings_are_format_errors():
    with pytest.raises(FormatError, match="scope"):
        VisibilityCheck(scope="complete")
    with pytest.raises(FormatError, match="min_pixels"):
        VisibilityCheck(min_pixels=0)
    with pytest.raises(FormatError, match="hidden"):
        VisibilityCheck().check(SPREAD, 4, camera_seed=0)


# ---------------------------------------------------------------------- generation
@pytest.fixture(scope="module")
def strict(tmp_path_factory) -> Path:
    """A tiny dataset with a high threshold (150 px), so that layouts do get rejected."""
    out = tmp_path_factory.mktemp("strict") / "data"
    generate_dataset(out, workers=1, progress=False, min_visible_pixels=150, **TINY)
    return out


def test_generated_scenes_pass_the_renderers_check_from_the_render_seed(strict):
    tasks, done = plan_tasks(strict, complete=True)  # the `render` command's plan: the dataset's seed
    assert done == 0 and len(tasks) == 6
    for task in tasks:
        scene = Scene.from_file(task.scene_path)
        assert task.seed == image_seed(5, scene.split, scene.image_filename)
        report = check_visibility(scene, seed=task.seed, min_pixels=150)
        assert report.ok, (task.scene_path, report.describe())


def test_rejections_are_counted_in_the_scenes_and_stats(strict):
    stats = json.loads((strict / "stats.json").read_text())["generation"]
    assert stats["visibility"] == {"check": "both", "min_pixels": 150, "image_size": [320, 320], "max_relayouts": 10}
    assert stats["visibility_rejections"] > 0  # 150 px rejects some layouts
    per_scene = [json.loads(p.read_text())["generation"] for p in sorted((strict / "complete/scenes").rglob("*.json"))]
    for key in ("attempts", "layouts_checked", "visibility_rejections", "visibility_resamples"):
        assert stats[key] == sum(g[key] for g in per_scene)
    assert stats["visibility_occluded"] + stats["visibility_too_small"] >= stats["visibility_rejections"]
    assert stats["visibility_rejected_complete"] + stats["visibility_rejected_partial"] == stats["visibility_rejections"]
    assert stats["visibility_rejection_rate"] == round(stats["visibility_rejections"] / stats["layouts_checked"], 6)
    assert all("generation" not in json.loads(p.read_text()) for p in (strict / "incomplete/scenes").rglob("*.json"))


def test_two_workers_give_the_same_bytes_with_the_check(strict, tmp_path):
    out = tmp_path / "data"
    generate_dataset(out, workers=2, chunksize=1, progress=False, min_visible_pixels=150, **TINY)
    assert tree(out) == tree(strict)


def test_no_visibility_check_and_old_folders(strict, tmp_path):
    out = tmp_path / "off"
    summary = generate_dataset(out, progress=False, visibility_check="off", **TINY)
    assert summary.layouts_checked == 0 and summary.stats["generation"]["visibility"]["check"] == "off"
    with pytest.raises(DatasetConfigError, match="visibility.*folder has .*'check': 'off'"):
        generate_dataset(out, progress=False, **TINY)  # the check changes the dataset: other settings
    manifest = json.loads((out / "dataset.json").read_text())
    manifest["format_version"] = 1
    del manifest["visibility"]
    (out / "dataset.json").write_text(json.dumps(manifest))
    with pytest.raises(DatasetConfigError, match="format version 1, this clevr_poc writes version 2"):
        generate_dataset(out, progress=False, visibility_check="off", **TINY)


# ---------------------------------------------------------------------- generate --render
BASE = ["generate", "--environments", "1", "--scenes-per-environment", "2", "--seed", "3", "--no-progress"]


@pytest.mark.skipif(bpy_available(), reason="bpy is installed here")
def test_generate_render_without_bpy_is_a_one_line_error(tmp_path, capsys):
    out = tmp_path / "d"
    assert cli_main(BASE + ["--out", str(out), "--render"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: --render needs Blender's Python module (bpy)") and "'.[render]'" in err
    assert len(err.strip().splitlines()) == 1
    assert not out.exists()  # checked before generating anything


def test_render_options_need_render(tmp_path, capsys):
    assert cli_main(BASE + ["--out", str(tmp_path / "d"), "--samples", "4"]) == 1
    assert capsys.readouterr().err == "error: --samples and --render-complete need --render\n"


def test_generate_render_renders_every_object_above_the_threshold(tmp_path, capsys):
    pytest.importorskip("bpy")
    out = tmp_path / "d"
    argv = BASE + ["--out", str(out), "--render", "--render-complete", "--samples", "1", "--json"]
    assert cli_main(argv) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["render"]["rendered"] == 4 and report["render"]["invisible"] == []
    for kind in ("complete", "incomplete"):
        for path in (out / kind / "scenes").rglob("*.json"):
            scene = json.loads(path.read_text())
            assert scene["render"]["seed"] == image_seed(3, scene["split"], scene["image_filename"])
            assert min(o["visible_pixels"] for o in scene["objects"]) >= 40
            assert (out / kind / "images" / scene["split"] / scene["image_filename"]).is_file()
    assert cli_main(argv) == 0  # resumes: nothing left to generate or render
    report = json.loads(capsys.readouterr().out)
    assert (report["generated"], report["render"]["rendered"], report["render"]["skipped"]) == (0, 0, 4)
