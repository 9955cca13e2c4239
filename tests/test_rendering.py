"""Rendering: camera geometry, COCO RLE, ray-cast instance masks, visibility, and real Blender renders.

The geometry/RLE/mask tests need numpy only; the render tests need Blender's ``bpy`` (5.0.1) and are
skipped cleanly without it (``pytest.importorskip("bpy")`` inside the ``bpy`` fixture).
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from clevr_poc.commands.main import main
from clevr_poc.errors import FormatError
from clevr_poc.rendering import (
    Camera,
    check_visibility,
    decode_rle,
    default_camera,
    encode_rle,
    image_to_ground,
    instance_index_map,
    mask_bbox,
    project,
)
from clevr_poc.rendering.geometry import DEFAULT_DISTANCE
from clevr_poc.rendering.masks import footprint_pixels
from clevr_poc.rendering.shapes import object_mesh, object_scale, unit_mesh
from clevr_poc.scene import Scene, SceneObject


def _obj(color, shape, size, material, region, x, y, **fields):
    return SceneObject(color, shape, size, material, region, (x, y, 0.0), **fields)


# ---------------------------------------------------------------------- geometry
def test_default_camera_looks_at_the_origin_from_the_front_right():
    camera = default_camera(320, 240)
    u, v, depth = project((0.0, 0.0, 0.0), camera)
    assert (u, v) == pytest.approx((160.0, 120.0), abs=1e-9)
    assert depth == pytest.approx(DEFAULT_DISTANCE)
    x, y, z = camera.position
    assert x > 0 and y < 0 and z > 0  # CLEVR: in front of the scene, to its right, above
    # the back-left corner of region 0 is higher in the image than the front-right corner of region 3
    assert project((-5, 5, 0), camera)[1] < project((5, -5, 0), camera)[1]
    # every region corner (and the top of a large object there) is inside the 320 x 240 image
    for cx in (-5.0, 5.0):
        for cy in (-5.0, 5.0):
            for cz in (0.0, 2.0):
                u, v, _ = project((0.9 * cx if cz else cx, 0.9 * cy if cz else cy, cz), camera)
                assert 0 < u < 320 and 0 < v < 240


def test_project_then_image_to_ground_gives_back_x_y():
    rng = np.random.default_rng(0)
    camera = default_camera(320, 240, rng=rng)
    for x, y in rng.uniform(-5, 5, size=(20, 2)):
        u, v, _ = project((x, y, 0.0), camera)
        assert image_to_ground(u, v, camera) == pytest.approx((x, y), abs=1e-9)
        # an object's centre: z = its half-height
        u, v, _ = project((x, y, 0.58), camera)
        assert image_to_ground(u, v, camera, height=0.58) == pytest.approx((x, y), abs=1e-9)


def test_image_to_ground_above_the_horizon_is_an_error():
    camera = default_camera(320, 240)
    with pytest.raises(ValueError, match="horizon"):
        image_to_ground(160.0, -2000.0, camera)


def test_camera_json_round_trip_and_bad_input():
    camera = default_camera(320, 320, rng=np.random.default_rng(3))
    data = json.loads(json.dumps(camera.to_json()))
    assert Camera.from_json(data) == camera
    assert data["image_size"] == [320, 320] and data["K"][0][0] == pytest.approx(350.0)  # 35/32 * 320
    with pytest.raises(FormatError, match="image_size"):
        Camera.from_json({**data, "image_size": [320]})


# ---------------------------------------------------------------------- shapes
def test_unit_shapes_span_minus_one_to_one_and_objects_rest_on_the_ground():
    for shape in ("cube", "sphere", "cylinder", "cone"):
        mesh = unit_mesh(shape)
        assert np.abs(mesh.vertices).max(axis=0) == pytest.approx((1.0, 1.0, 1.0))
        # normals point outwards: away from the centre
        assert (np.einsum("ij,ij->i", mesh.vertices, mesh.normals) > 0).all()
    cube = object_mesh("cube", "large", 1.0, 2.0, 45.0, mesh_set="ours", shrink_cube=True)
    assert cube.vertices[:, 2].min() == pytest.approx(0.0, abs=1e-12)
    assert object_scale("cube", "large", shrink_cube=True) == pytest.approx(1 / math.sqrt(2))
    # a shrunk cube rotated by 45 degrees still fits in its size's circle (radius 1.0 for large)
    assert np.hypot(cube.vertices[:, 0] - 1.0, cube.vertices[:, 1] - 2.0).max() <= 1.0 + 1e-9
    # the official cube is not shrunk (CLEVR-POC's 'Cube' test never matches its lower-case names)
    assert object_scale("cube", "large") == 1.0 and object_scale("cube", "small") == 0.39
    official = object_mesh("cube", "large", 1.0, 2.0, 0.0)
    assert official.vertices[:, 2].min() == pytest.approx(0.0, abs=1e-12)
    assert official.vertices[:, 0].max() - official.vertices[:, 0].min() == pytest.approx(2.0)


# ---------------------------------------------------------------------- RLE
def test_rle_matches_the_coco_string_format():
    mask = np.zeros((4, 5), dtype=bool)
    mask[1:3, 1:4] = True
    mask[0, 4] = True
    # pycocotools.mask.encode(np.asfortranarray(mask.astype(np.uint8)))
    assert encode_rle(mask) == {"size": [4, 5], "counts": "522000OO2"}
    big = np.zeros((40, 50), dtype=bool)
    big[5:30, 10:45] = True
    big[0:2, 0] = True
    assert encode_rle(big)["counts"] == "02c<g0lC" + "0" * 67 + "S6"


def test_rle_round_trip():
    rng = np.random.default_rng(1)
    masks = [np.zeros((7, 9), bool), np.ones((7, 9), bool), rng.random((31, 17)) < 0.5,
             rng.random((240, 320)) < 0.01]
    for mask in masks:
        rle = encode_rle(mask)
        assert np.array_equal(decode_rle(rle), mask)
        assert np.array_equal(decode_rle(json.loads(json.dumps(rle))), mask)
    with pytest.raises(FormatError, match="add up"):
        decode_rle({"size": [2, 2], "counts": [1, 2]})


# ---------------------------------------------------------------------- masks and visibility
def test_nearer_object_wins_and_box_and_footprint_are_consistent():
    camera = default_camera(320, 240)
    front = object_mesh("sphere", "large", 1.0, -1.0)   # nearer the camera (which is at x > 0, y < 0)
    back = object_mesh("cube", "medium", -1.0, 1.0)
    index = instance_index_map([back, front], camera)
    assert (index == 1).sum() == footprint_pixels(front, camera)  # nothing hides the front sphere
    assert 0 < (index == 0).sum() < footprint_pixels(back, camera)  # the cube is partly behind it
    u, v, _ = project((1.0, -1.0, 1.0), camera)
    assert index[int(v), int(u)] == 1
    x, y, w, h = mask_bbox(index == 1)
    assert x <= u <= x + w and y <= v <= y + h


def test_check_visibility_reports_occluded_and_out_of_view_objects():
    camera = default_camera(320, 240)
    scene = Scene((
        _obj("red", "sphere", "large", "rubber", 0, -3.0, 3.0),
        _obj("blue", "cube", "small", "metal", 0, -4.5, 4.5),       # right behind the sphere
        _obj("green", "cylinder", "medium", "rubber", 3, 3.0, -3.0),
        _obj("gray", "cone", "small", "rubber", 1, 40.0, 40.0),      # far outside the view
    ))
    report = check_visibility(scene, camera=camera, style="ours")
    assert not report.ok
    assert report.min_pixels == 40
    assert [(o.index, o.reason) for o in report.offending] == [(1, "occluded"), (3, "too_small")]
    assert report.offending[0].footprint >= 40 and report.pixels[1] == report.offending[0].pixels < 40
    assert report.pixels[0] > 500 and report.pixels[3] == 0
    partial = scene.without_object(1)
    assert check_visibility(Scene(partial.objects[:2]), camera=camera, style="ours").ok  # without cube and cone


def test_relayout_is_bounded_and_counted(tmp_path):
    from clevr_poc.rendering import render_scene

    occluded = Scene((
        _obj("red", "sphere", "large", "rubber", 0, -3.0, 3.0),
        _obj("blue", "cube", "small", "metal", 0, -4.5, 4.5),
    ))
    calls = []

    def still_hidden(scene, report, attempt):  # a caller that cannot find a better layout
        calls.append((attempt, [o.index for o in report.offending]))
        return scene

    result = render_scene(occluded, tmp_path / "x.png", style="ours", camera_jitter=0.0, relayout=still_hidden,
                          max_relayouts=3, skip_invisible=True)
    assert calls == [(1, [1]), (2, [1]), (3, [1])]
    assert result.stats.relayouts == 3 and not result.stats.rendered and result.image_path is None
    assert not (tmp_path / "x.png").exists()


def test_objects_without_positions_are_a_format_error():
    scene = Scene((SceneObject("red", "cube", "small", "rubber", 0),))
    with pytest.raises(FormatError, match=r"objects\[0\]\.3d_coords"):
        check_visibility(scene)


# ---------------------------------------------------------------------- Blender renders
@pytest.fixture(scope="module")
def bpy():
    return pytest.importorskip("bpy")


SCENE = Scene((
    _obj("red", "sphere", "large", "rubber", 0, -2.0, 2.0),
    _obj("blue", "cube", "medium", "metal", 1, 2.5, 2.0, rotation=30.0),
    _obj("yellow", "cylinder", "medium", "rubber", 2, -2.5, -2.0),
    _obj("cyan", "cone", "large", "metal", 3, 2.5, -2.5),
    _obj("green", "sphere", "small", "metal", 3, 1.0, -0.5),
), split="train", image_index=0, image_filename="CLEVR_train_000000.png")


@pytest.fixture(scope="module")
def renders(bpy, tmp_path_factory):
    from clevr_poc.rendering import render_scene

    out = tmp_path_factory.mktemp("renders")
    kw = dict(style="ours", width=160, height=120, samples=4, seed=11)
    complete = render_scene(SCENE, out / "complete.png", index_pass=True, **kw)
    partial = render_scene(SCENE.without_object(0), out / "partial.png", **kw)
    return complete, partial


def _image(path):
    from PIL import Image

    with Image.open(path) as im:
        return np.asarray(im.convert("RGB")).astype(int)


def test_render_writes_the_png_and_ground_truth(renders):
    complete, _ = renders
    assert complete.image_path.name == "complete.png" and complete.stats.rendered
    assert not list(complete.image_path.parent.glob(".*tmp"))  # the temp file was renamed
    image = _image(complete.image_path)
    assert image.shape == (120, 160, 3)
    data = complete.scene.to_json()
    assert data["camera"]["image_size"] == [160, 120] and data["render"]["engine"] == "cycles"
    assert Camera.from_json(data["camera"]) == complete.camera
    red = data["objects"][0]
    assert red["3d_coords"] == [-2.0, 2.0, 1.0]  # resting on the ground: z = radius
    u, v, depth = red["pixel_coords"]
    r, g, b = image[int(v), int(u)]
    assert r > g + 40 and r > b + 40  # the large red sphere is red where it projects
    assert data["objects"][1]["rotation"] == 30.0
    assert complete.visibility.ok and complete.stats.relayouts == 0


def test_masks_agree_with_projections_and_do_not_overlap(renders):
    complete, _ = renders
    data = complete.scene.to_json()
    masks = [decode_rle(o["mask"]) for o in data["objects"]]
    assert (np.sum(masks, axis=0) <= 1).all()  # no two masks overlap
    for obj, mask in zip(data["objects"], masks):
        rows, cols = np.nonzero(mask)
        assert obj["visible_pixels"] == mask.sum() > 0
        assert obj["bbox"] == [cols.min(), rows.min(), cols.max() - cols.min() + 1, rows.max() - rows.min() + 1]
        u, v, _ = obj["pixel_coords"]
        assert mask[int(v), int(u)]  # the projected centre is on the object
        if obj["shape"] == "cone":  # its mass sits low: check that the apex is the mask's top instead
            x, y, z = obj["3d_coords"]
            apex_v = project((x, y, 2 * z), complete.camera)[1]
            assert abs(apex_v - rows.min()) <= 1.5, (apex_v, rows.min())
        else:
            centroid = np.array([cols.mean() + 0.5, rows.mean() + 0.5])
            assert np.linalg.norm(centroid - (u, v)) <= 1.5, (obj["shape"], centroid, (u, v))


def test_masks_equal_blenders_object_index_pass(renders):
    complete, _ = renders
    index_pass = complete.index_pass
    assert index_pass.shape == (120, 160)
    assert set(np.unique(index_pass)) == {0, 1, 2, 3, 4, 5}  # ground + five objects
    for k, obj in enumerate(complete.scene.to_json()["objects"]):
        ours, blender = decode_rle(obj["mask"]), index_pass == k + 1
        iou = (ours & blender).sum() / (ours | blender).sum()
        assert iou >= 0.95, (k, iou)


def test_partial_image_lacks_only_the_hidden_object(renders):
    complete, partial = renders
    assert partial.camera == complete.camera  # same seed: same camera (and lights)
    a, b = _image(complete.image_path), _image(partial.image_path)
    hidden = decode_rle(complete.scene.to_json()["objects"][0]["mask"])
    diff = np.abs(a - b).sum(axis=2) > 30
    assert diff[hidden].mean() > 0.9       # where the red sphere was, the image changed
    others = np.zeros_like(hidden)
    for obj in complete.scene.to_json()["objects"][1:]:
        others |= decode_rle(obj["mask"])
    assert diff[others].mean() < 0.1       # the other objects look the same
    assert [o.mask for o in partial.scene.objects] == [o.mask for o in complete.scene.objects[1:]]


def test_relayout_that_fixes_the_scene_is_rendered(bpy, tmp_path):
    from clevr_poc.rendering import render_scene

    occluded = Scene((
        _obj("red", "sphere", "large", "rubber", 0, -3.0, 3.0),
        _obj("blue", "cube", "small", "metal", 0, -4.5, 4.5),
    ))

    def move_it(scene, report, attempt):  # moves the hidden cube out from behind the sphere
        cube = scene.objects[1]
        return Scene((scene.objects[0], SceneObject(cube.color, cube.shape, cube.size, cube.material, 0,
                                                    (-1.0, 4.5, 0.0))))

    result = render_scene(occluded, tmp_path / "y.png", style="ours", width=64, height=48, samples=1,
                          camera_jitter=0.0, relayout=move_it, min_pixels=3)
    assert result.stats.relayouts == 1 and result.visibility.ok and result.stats.rendered
    assert result.scene.objects[1].coords_3d == (-1.0, 4.5, pytest.approx(0.39 / math.sqrt(2)))
    assert result.image_path.exists()


def test_render_command_renders_and_resumes(bpy, tmp_path, capsys):
    scenes = tmp_path / "incomplete" / "scenes" / "train"
    scenes.mkdir(parents=True)
    SCENE.without_object(2).to_file(scenes / "CLEVR_000000.json")
    argv = ["render", "--dataset", str(tmp_path), "--samples", "2", "--width", "64", "--height", "48",
            "--no-progress", "--json"]
    assert main(argv) == 0
    report = json.loads(capsys.readouterr().out)
    assert (report["images"], report["rendered"], report["skipped"]) == (1, 1, 0)
    image = tmp_path / "incomplete" / "images" / "train" / "CLEVR_train_000000.png"
    assert _image(image).shape == (48, 64, 3)
    written = json.loads((scenes / "CLEVR_000000.json").read_text())
    assert written["camera"]["image_size"] == [64, 48] and len(written["objects"]) == 4
    assert all("mask" in o and "pixel_coords" in o for o in written["objects"])
    assert main(argv) == 0  # resumes: nothing left to do
    report = json.loads(capsys.readouterr().out)
    assert (report["rendered"], report["skipped"]) == (0, 1)


def _tiny_dataset(tmp_path):
    scenes = tmp_path / "incomplete" / "scenes" / "train"
    scenes.mkdir(parents=True)
    SCENE.without_object(2).to_file(scenes / "CLEVR_000000.json")
    return tmp_path / "incomplete" / "images"


def test_render_command_refuses_to_resume_with_other_settings(bpy, tmp_path, capsys):
    images = _tiny_dataset(tmp_path)
    tiny = ["render", "--dataset", str(tmp_path), "--width", "48", "--height", "36", "--no-progress", "--json"]
    assert main([*tiny, "--samples", "1"]) == 0
    assert json.loads(capsys.readouterr().out)["rendered"] == 1
    manifest = json.loads((images / "render.json").read_text())
    assert (manifest["samples"], manifest["style"], manifest["width"], manifest["height"]) == (1, "official", 48, 36)
    image = images / "train" / "CLEVR_train_000000.png"
    before = (image.stat().st_mtime_ns, image.read_bytes(), (images / "render.json").read_bytes())

    assert main([*tiny, "--samples", "2"]) == 1
    out, err = capsys.readouterr()
    assert out == "" and err == (f"error: {images} was rendered with samples 1, asked for 2; "
                                 "use --overwrite to re-render or another folder\n")
    assert main([*tiny, "--samples", "1", "--style", "ours"]) == 1
    err = capsys.readouterr().err
    assert err == (f"error: {images} was rendered with style official, asked for ours; colour_space linear, "
                   "asked for srgb; camera_jitter 0.0, asked for 0.5; light_jitter 0.0, asked for 1.0; cone_lift "
                   "0.118, asked for 0.0; use --overwrite to re-render or another folder\n")
    # nothing was rendered again, nothing rewritten
    assert (image.stat().st_mtime_ns, image.read_bytes(), (images / "render.json").read_bytes()) == before

    assert main([*tiny, "--samples", "2", "--overwrite"]) == 0  # re-renders and records the new settings
    assert json.loads(capsys.readouterr().out)["rendered"] == 1
    assert json.loads((images / "render.json").read_text())["samples"] == 2
    assert main([*tiny, "--samples", "2"]) == 0  # same settings: resumes
    report = json.loads(capsys.readouterr().out)
    assert (report["rendered"], report["skipped"], report["settings_unchecked"]) == (0, 1, [])


def test_render_command_warns_that_a_folder_without_manifest_cannot_be_checked(bpy, tmp_path, capsys):
    images = _tiny_dataset(tmp_path)
    tiny = ["render", "--dataset", str(tmp_path), "--width", "48", "--height", "36", "--no-progress"]
    assert main([*tiny, "--samples", "1"]) == 0
    capsys.readouterr()
    (images / "render.json").unlink()  # as rendered by clevr_poc before the manifest
    assert main([*tiny, "--samples", "2"]) == 0
    out, err = capsys.readouterr()
    assert err == (f"warning: {images} has no render.json (rendered before clevr_poc recorded render settings): "
                   "its images' settings cannot be checked against those asked; resumed as asked\n")
    assert out == f"{tmp_path}: 1 images (0 rendered now, 1 already there)\n"
    assert not (images / "render.json").exists()  # nothing claimed about images of unknown settings


def test_render_command_with_two_workers(bpy, tmp_path, capsys):
    # workers are spawned by a process that has imported bpy (this one): they must still import it
    for kind in ("incomplete", "complete"):
        scenes = tmp_path / kind / "scenes" / "val"
        scenes.mkdir(parents=True)
        full = Scene(SCENE.objects, split="val", image_index=0, image_filename="CLEVR_val_000000.png")
        (full if kind == "complete" else full.without_object(4)).to_file(scenes / "CLEVR_000000.json")
    argv = ["render", "--dataset", str(tmp_path), "--samples", "1", "--width", "48", "--height", "36",
            "--workers", "2", "--complete", "--no-progress", "--json"]
    assert main(argv) == 0
    report = json.loads(capsys.readouterr().out)
    assert (report["images"], report["rendered"]) == (2, 2)
    complete = json.loads((tmp_path / "complete" / "scenes" / "val" / "CLEVR_000000.json").read_text())
    partial = json.loads((tmp_path / "incomplete" / "scenes" / "val" / "CLEVR_000000.json").read_text())
    assert complete["camera"] == partial["camera"]  # same seed for both images of an example
    assert (tmp_path / "complete" / "images" / "val" / "CLEVR_val_000000.png").exists()


def test_render_command_errors_are_one_line(tmp_path, capsys):
    assert main(["render", "--dataset", str(tmp_path / "missing"), "--no-progress"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: ") and len(err.strip().splitlines()) == 1


def _dead_pid() -> int:
    import subprocess
    import sys

    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


def test_remove_stale_temp_files_keeps_live_and_fresh_ones(tmp_path):
    import os
    import time

    from clevr_poc.rendering.batch_render import remove_stale_temp_files

    images, scenes = tmp_path / "incomplete" / "images" / "val", tmp_path / "incomplete" / "scenes" / "val"
    images.mkdir(parents=True)
    scenes.mkdir(parents=True)
    dead = images / f".CLEVR_val_000001.png.{_dead_pid()}.tmp"  # a SIGKILLed render's PNG
    live = images / f".CLEVR_val_000002.png.{os.getpid()}.tmp"  # a render running now
    old = scenes / ".CLEVR_000001.json.ab12_xyz.tmp"  # a killed atomic_write_text
    fresh = scenes / ".CLEVR_000002.json.k3j4h5g6.tmp"  # being written now
    other = scenes / ".notes.tmp"  # not ours
    for path in (dead, live, old, fresh, other):
        path.write_text("partial")
    os.utime(old, (time.time() - 120, time.time() - 120))
    assert remove_stale_temp_files(tmp_path) == [dead, old]
    assert live.exists() and fresh.exists() and other.exists()
    assert remove_stale_temp_files(tmp_path) == []


def test_render_command_resumes_after_a_killed_run(bpy, tmp_path, capsys):
    import os
    import time

    scenes = tmp_path / "incomplete" / "scenes" / "train"
    images = tmp_path / "incomplete" / "images" / "train"
    scenes.mkdir(parents=True)
    images.mkdir(parents=True)
    SCENE.without_object(2).to_file(scenes / "CLEVR_000000.json")
    # what SIGKILL leaves while the image and then the scene file are written: temp files only
    (images / f".CLEVR_train_000000.png.{_dead_pid()}.tmp").write_bytes(b"\x89PNG\r\n\x1a\n truncated")
    stale_scene = scenes / ".CLEVR_000000.json.q1w2e3r4.tmp"
    stale_scene.write_text('{"objects": [')
    os.utime(stale_scene, (time.time() - 300, time.time() - 300))
    argv = ["render", "--dataset", str(tmp_path), "--samples", "1", "--width", "48", "--height", "36",
            "--no-progress", "--json"]
    assert main(argv) == 0
    report = json.loads(capsys.readouterr().out)
    assert (report["rendered"], report["stale_temp_files_removed"]) == (1, 2)
    assert sorted(p.name for p in images.iterdir()) == ["CLEVR_train_000000.png"]
    assert sorted(p.name for p in scenes.iterdir()) == ["CLEVR_000000.json"]
    assert _image(images / "CLEVR_train_000000.png").shape == (36, 48, 3)


def test_ctrl_c_during_blender_render_stops_without_writing_the_image(bpy, tmp_path, monkeypatch):
    # Blender swallows a KeyboardInterrupt raised inside its render callback (a render command kept
    # going after SIGINT); render_scene holds the signal back and raises after Blender returns
    import os
    import signal

    from clevr_poc.rendering import blender as blender_module
    from clevr_poc.rendering import render_scene

    real_render_png = blender_module.render_png

    def render_png_with_ctrl_c(path, **kwargs):
        os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C arrives while Blender renders
        return real_render_png(path, **kwargs)

    monkeypatch.setattr(blender_module, "render_png", render_png_with_ctrl_c)
    with pytest.raises(KeyboardInterrupt):
        render_scene(SCENE, tmp_path / "x.png", width=48, height=36, samples=1)
    assert list(tmp_path.iterdir()) == []  # neither the image nor its temp file
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # handler restored
    monkeypatch.setattr(blender_module, "render_png", real_render_png)
    assert render_scene(SCENE, tmp_path / "x.png", width=48, height=36, samples=1).image_path.exists()
