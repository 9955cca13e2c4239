"""The official look (default) and our former look, the official camera preset, and ``--assets DIR``.

Geometry and style checks need numpy only; the render tests need Blender's ``bpy`` (5.0.1) and are
skipped cleanly without it. ``--assets`` is tested end to end with a tiny fake ``data/`` folder that the
test writes with bpy (no official file is used or shipped): its node groups are emission shaders, so
the pixel colours prove that the files' groups, not ours, were rendered.
"""

from __future__ import annotations

import json
import math
from dataclasses import replace

import numpy as np
import pytest

from clevr_poc.commands.main import main
from clevr_poc.errors import FormatError
from clevr_poc.rendering import CAMERA_PRESETS, camera_preset, check_visibility, decode_rle, official_camera, project
from clevr_poc.rendering.shapes import unit_mesh
from clevr_poc.rendering.styles import OFFICIAL, OURS, get_style
from clevr_poc.scene import Scene, SceneObject


def _obj(color, shape, size, material, region, x, y, rotation=0.0):
    return SceneObject(color, shape, size, material, region, (x, y, 0.0), rotation=rotation)


def _srgb_to_linear(c):
    c = np.asarray(c, dtype=float) / 255.0
    return np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)


def _linear_to_srgb255(c):
    c = np.asarray(c, dtype=float)
    return 255.0 * np.where(c <= 0.0031308, 12.92 * c, 1.055 * c ** (1 / 2.4) - 0.055)


# ---------------------------------------------------------------------- no Blender needed
def test_official_camera_preset_has_the_official_intrinsics_and_pose():
    camera = official_camera()
    assert (camera.width, camera.height) == (320, 320)
    assert camera.K.tolist() == [[210.0, 0.0, 160.0], [0.0, 210.0, 160.0], [0.0, 0.0, 1.0]]  # 21 / 32 * 320
    assert camera.position == pytest.approx((10.0, -6.50764, 5.34367))
    assert project((0.0, 0.0, 0.0), camera)[:2] == pytest.approx((160.0, 160.0))  # aimed at the origin
    assert project((0.0, 0.0, 0.0), camera)[2] == pytest.approx(13.07, abs=0.01)
    assert camera_preset("official", 320, 240).K[1, 2] == 120.0 and camera_preset("official", 320, 240).K[0, 0] == 210
    assert set(CAMERA_PRESETS) == {"official", "ours"} and camera_preset("ours").width == 320
    with pytest.raises(FormatError, match="unknown camera preset"):
        camera_preset("clevr")


def test_styles_carry_the_official_numbers_and_bad_names_are_format_errors():
    key = OFFICIAL.lights[0]
    assert (key.name, key.location, key.energy, key.size, key.colour) == (
        "key", (6.4467, -2.9052, 4.2584), 78.54, 0.5, (1.0, 0.932, 0.817))
    assert [light.energy for light in OFFICIAL.lights] == [78.54, 23.56, 39.27]
    assert (OFFICIAL.camera_jitter, OFFICIAL.light_jitter, OFFICIAL.shrink_cube, OFFICIAL.colour_space) == (
        0.0, 0.0, False, "linear")
    assert (OURS.width, OURS.height, OURS.shrink_cube, OURS.colour_space) == (320, 240, True, "srgb")
    assert get_style("official", colour_space="srgb").colour_space == "srgb"
    with pytest.raises(FormatError, match="unknown render style"):
        get_style("clevr")
    with pytest.raises(FormatError, match="colour_space"):
        get_style("official", colour_space="cmyk")


def test_variation_knobs_camera_jitter_and_colour_space():
    from clevr_poc.rendering.blender import colour_rgb
    from clevr_poc.rendering.render import scene_camera

    assert scene_camera(3) == scene_camera(4) == official_camera()  # the official camera is fixed
    moved = scene_camera(3, jitter=0.5)
    assert moved != official_camera() and np.abs(moved.position - official_camera().position).max() <= 0.5
    assert project((0.0, 0.0, 0.0), moved)[:2] == pytest.approx((160.0, 160.0))  # still aimed at the origin
    assert moved.K.tolist() == official_camera().K.tolist()
    assert scene_camera(3, width=480, height=320).K[0, 0] == pytest.approx(315.0)  # 21 / 32 * 480
    assert colour_rgb("red", "linear") == pytest.approx((173 / 255, 35 / 255, 35 / 255))
    assert colour_rgb("red", "srgb") == pytest.approx((0.4179, 0.0168, 0.0168), abs=1e-4)


def test_official_meshes_flat_cone_with_32_sides_and_unshrunk_cubes_are_bigger():
    cone = unit_mesh("cone")
    assert not cone.smooth and len(np.unique(np.round(cone.vertices[cone.vertices[:, 2] < -0.99], 9), axis=0)) == 33
    camera = official_camera()
    def pixels(shape, style="official"):
        return check_visibility(Scene((_obj("red", shape, "large", "rubber", 3, 0.0, 0.0),)), camera=camera,
                                style=style).pixels[0]

    # at the same place, a 2 x 2 x 2 cube covers about 2.1 times a sphere of radius 1 (sum of its projected
    # faces, 4 (|d_x| + |d_y| + |d_z|), over pi); the sqrt(2)-shrunk cube of the 'ours' style half of that
    sphere = pixels("sphere")
    assert 1.8 * sphere < pixels("cube") < 2.4 * sphere
    assert 0.9 * sphere < pixels("cube", "ours") < 1.2 * sphere


# ---------------------------------------------------------------------- Blender renders (official style)
@pytest.fixture(scope="module")
def bpy():
    return pytest.importorskip("bpy")


OFFICIAL_SCENE = Scene((
    _obj("red", "sphere", "large", "rubber", 0, 0.0, 0.0),
    _obj("red", "sphere", "large", "metal", 1, 2.6, 2.6),
    _obj("blue", "cube", "large", "rubber", 2, -2.5, -2.2, rotation=20.0),
    _obj("cyan", "cone", "medium", "metal", 3, 2.8, -1.2),
    _obj("yellow", "cylinder", "small", "rubber", 0, -2.4, 2.4),
), split="val", image_index=0, image_filename="CLEVR_val_000000.png")


@pytest.fixture(scope="module")
def official_render(bpy, tmp_path_factory):
    from clevr_poc.rendering import render_scene

    out = tmp_path_factory.mktemp("official")
    return render_scene(OFFICIAL_SCENE, out / "official.png", seed=3, index_pass=True)


def _image(path):
    from PIL import Image

    with Image.open(path) as im:
        return np.asarray(im.convert("RGB")).astype(int)


def test_official_render_is_320x320_from_the_official_camera_with_linear_colours(official_render):
    image = _image(official_render.image_path)
    assert image.shape == (320, 320, 3)
    assert official_render.camera == official_camera()
    data = official_render.scene.to_json()
    assert data["render"]["style"] == "official" and data["render"]["colour_space"] == "linear"
    red = data["objects"][0]
    assert red["3d_coords"] == [0.0, 0.0, 1.0]
    u, v, _ = project((0.0, 0.0, 1.0), official_camera())
    assert red["pixel_coords"][:2] == pytest.approx([u, v]) and (u, v) == pytest.approx((160.0, 144.87), abs=0.01)
    mask = decode_rle(red["mask"])
    rows, cols = np.nonzero(mask)
    assert np.hypot(cols.mean() + 0.5 - u, rows.mean() + 0.5 - v) < 1.0  # the sphere is drawn where project() says
    lin = _srgb_to_linear(image[mask].mean(axis=0))
    # c / 255 as *linear* albedo: green / red = 35 / 173 = 0.20 (the sRGB reading would give 0.04); the
    # warm key light and the white sheen move it a little
    assert 0.13 < lin[1] / lin[0] < 0.3 and abs(lin[1] - lin[2]) < 0.05 * lin[0]
    # the cube is not shrunk: z = its radius, and it covers more than the sphere of its size class
    cube = data["objects"][2]
    assert cube["3d_coords"][2] == 1.0 and cube["visible_pixels"] > 1.4 * red["visible_pixels"]


def test_official_metal_differs_from_rubber(official_render):
    image = _image(official_render.image_path)
    rubber, metal = (decode_rle(o["mask"]) for o in official_render.scene.to_json()["objects"][:2])
    a, b = image[rubber].astype(float), image[metal].astype(float)
    # same colour, same size: the metal sphere is darker on average and far less uniform (reflections)
    assert a.mean() > 1.3 * b.mean() and b.std(axis=0).mean() > 1.3 * a.std(axis=0).mean()


def test_official_masks_equal_blenders_object_index_pass(official_render):
    index_pass = official_render.index_pass
    assert index_pass.shape == (320, 320) and set(np.unique(index_pass)) == {0, 1, 2, 3, 4, 5}
    union = np.zeros((320, 320), dtype=bool)
    for k, obj in enumerate(official_render.scene.to_json()["objects"]):
        ours, blender = decode_rle(obj["mask"]), index_pass == k + 1
        assert (ours & blender).sum() / (ours | blender).sum() >= 0.97, k
        union |= ours
    assert (union == (index_pass > 0)).mean() > 0.998


def test_ours_style_keeps_its_look_and_scene_files(bpy, tmp_path):
    from clevr_poc.rendering import render_scene, scene_camera

    result = render_scene(OFFICIAL_SCENE, tmp_path / "ours.png", style="ours", samples=1, seed=3, width=80,
                          height=60)
    data = result.scene.to_json()
    assert "style" not in data["render"]  # the scene files of 'ours' renders are as they were
    assert result.camera == scene_camera(3, width=80, height=60, style="ours") != scene_camera(3, width=80, height=60)
    assert data["objects"][2]["3d_coords"][2] == pytest.approx(1 / math.sqrt(2))  # ours shrinks cubes


# ---------------------------------------------------------------------- --assets with a fake data/ folder
def _write_fake_assets(root):
    """A tiny data/ folder in the official layout, written with bpy: base scene (official camera with a
    TRACK_TO constraint, three area lights, a ground plane), four shapes (the cone stored at the official
    cone's offset), and node groups 'Rubber' (emission of Color) and 'MyMetal' (emission of Color x 0.25)."""
    import bpy

    from clevr_poc.rendering.geometry import OFFICIAL_CAMERA_POSITION

    bpy.ops.wm.read_factory_settings(use_empty=True)
    (root / "shapes").mkdir(parents=True)
    (root / "materials").mkdir()
    for shape, name in (("cube", "SmoothCube_v2"), ("sphere", "Sphere"), ("cylinder", "SmoothCylinder"),
                        ("cone", "Cone")):
        mesh = unit_mesh(shape)
        data = bpy.data.meshes.new(name)
        data.from_pydata(mesh.vertices.tolist(), [], mesh.triangles.tolist())
        obj = bpy.data.objects.new(name, data)
        if shape == "cone":
            obj.location = (0.734, -0.477, 0.118)
        bpy.data.libraries.write(str(root / "shapes" / f"{name}.blend"), {obj}, fake_user=True)
    for name, strength in (("Rubber", 1.0), ("MyMetal", 0.25)):
        group = bpy.data.node_groups.new(name, "ShaderNodeTree")
        group.interface.new_socket(name="Color", in_out="INPUT", socket_type="NodeSocketColor")
        group.interface.new_socket(name="Shader", in_out="OUTPUT", socket_type="NodeSocketShader")
        emission = group.nodes.new("ShaderNodeEmission")
        emission.inputs["Strength"].default_value = strength
        group.links.new(group.nodes.new("NodeGroupInput").outputs["Color"], emission.inputs["Color"])
        group.links.new(emission.outputs[0], group.nodes.new("NodeGroupOutput").inputs["Shader"])
        bpy.data.libraries.write(str(root / "materials" / f"{name}.blend"), {group}, fake_user=True)
    scene = bpy.context.scene
    target = bpy.data.objects.new("Empty", None)
    camera = bpy.data.objects.new("Camera", bpy.data.cameras.new("Camera"))
    camera.data.lens, camera.data.sensor_width, camera.data.sensor_fit = 21.0, 32.0, "AUTO"
    camera.location = OFFICIAL_CAMERA_POSITION
    track = camera.constraints.new("TRACK_TO")
    track.target, track.track_axis, track.up_axis = target, "TRACK_NEGATIVE_Z", "UP_Y"
    for obj in (target, camera):
        scene.collection.objects.link(obj)
    scene.camera = camera
    for name, location in (("Lamp_Key", (6.4, -2.9, 4.3)), ("Lamp_Fill", (-4.7, -4.0, 3.0)),
                           ("Lamp_Back", (-1.2, 2.6, 5.8))):
        light = bpy.data.objects.new(name, bpy.data.lights.new(name, "AREA"))
        light.location = location
        scene.collection.objects.link(light)
    ground = bpy.data.meshes.new("Ground")
    ground.from_pydata([(-50, -50, 0), (50, -50, 0), (50, 50, 0), (-50, 50, 0)], [], [(0, 1, 2, 3)])
    scene.collection.objects.link(bpy.data.objects.new("Ground", ground))
    bpy.ops.wm.save_as_mainfile(filepath=str(root / "base_scene.blend"), copy=True)
    return root


def test_assets_folder_is_loaded_end_to_end(bpy, tmp_path):
    from clevr_poc.rendering import render_scene

    assets = _write_fake_assets(tmp_path / "data")
    scene = Scene((_obj("red", "sphere", "large", "rubber", 0, 0.0, 0.0),
                   _obj("blue", "cube", "medium", "metal", 1, 2.5, 2.5, rotation=30.0),
                   _obj("yellow", "cone", "large", "rubber", 3, 2.5, -2.5)))
    result = render_scene(scene, tmp_path / "assets.png", assets=assets, samples=4, denoise=False, index_pass=True)
    # the camera read from the file (TRACK_TO an empty at the origin) is the official preset: Blender agrees
    assert np.allclose(result.camera.K, official_camera().K)
    assert np.allclose(result.camera.world_to_camera, official_camera().world_to_camera, atol=1e-5)
    image = _image(result.image_path)
    data = result.scene.to_json()
    assert data["render"]["assets"] == str(assets)
    for k, (obj, strength) in enumerate(zip(data["objects"], (1.0, 0.25, 1.0))):
        mask = decode_rle(obj["mask"])
        blender = result.index_pass == k + 1
        assert (mask & blender).sum() / (mask | blender).sum() >= 0.95, k  # the files' meshes, our placement
        inner = mask & np.roll(mask, 2, 0) & np.roll(mask, -2, 0) & np.roll(mask, 2, 1) & np.roll(mask, -2, 1)
        rgb = np.asarray({"red": (173, 35, 35), "blue": (42, 75, 215), "yellow": (255, 238, 51)}[obj["color"]])
        expected = _linear_to_srgb255(strength * rgb / 255.0)  # the file's emission group, colour c / 255 linear
        assert np.abs(np.median(image[inner], axis=0) - expected).max() <= 4, (obj["color"], expected)
    # the release's cone: its layout (x, y), floating 0.118 above the floor (CLEVR-POC blender.py add_object)
    assert data["objects"][2]["3d_coords"] == pytest.approx([2.5, -2.5, 1.118])
    assert data["render"]["cone_lift"] == pytest.approx(0.118)


def test_bad_assets_folder_is_a_typed_one_line_error(tmp_path, capsys):
    from clevr_poc.rendering.assets import AssetsError, find_assets

    with pytest.raises(AssetsError, match="not a folder"):
        find_assets(tmp_path / "nowhere")
    (tmp_path / "data" / "shapes").mkdir(parents=True)
    (tmp_path / "data" / "base_scene.blend").write_bytes(b"BLENDER")
    with pytest.raises(AssetsError, match=r"missing shapes/SmoothCube_v2\.blend"):
        find_assets(tmp_path / "data")
    scenes = tmp_path / "ds" / "incomplete" / "scenes" / "val"
    scenes.mkdir(parents=True)
    OFFICIAL_SCENE.to_file(scenes / "CLEVR_000000.json")
    assert main(["render", "--dataset", str(tmp_path / "ds"), "--assets", str(tmp_path / "data"), "--no-progress"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "shapes/SmoothCube_v2.blend" in err and len(err.strip().splitlines()) == 1


def test_render_command_style_flag(bpy, tmp_path, capsys):
    scenes = tmp_path / "incomplete" / "scenes" / "val"
    scenes.mkdir(parents=True)
    OFFICIAL_SCENE.to_file(scenes / "CLEVR_000000.json")
    argv = ["render", "--dataset", str(tmp_path), "--style", "ours", "--samples", "1", "--width", "64",
            "--height", "48", "--camera-jitter", "0", "--no-progress", "--json"]
    assert main(argv) == 0
    assert json.loads(capsys.readouterr().out)["rendered"] == 1
    written = json.loads((scenes / "CLEVR_000000.json").read_text())
    assert written["objects"][2]["3d_coords"][2] == pytest.approx(1 / math.sqrt(2))
    with pytest.raises(SystemExit) as exit_info:  # argparse: not a style
        main(["render", "--dataset", str(tmp_path), "--style", "clevr"])
    assert exit_info.value.code == 2 and "invalid choice: 'clevr'" in capsys.readouterr().err


def test_official_backdrop_is_a_floor_that_sweeps_up_behind_the_scene():
    from clevr_poc.rendering.blender import backdrop_mesh
    from clevr_poc.rendering.styles import OFFICIAL_BACKDROP

    vertices, quads = backdrop_mesh(OFFICIAL_BACKDROP)
    assert vertices.shape == (2 * (OFFICIAL_BACKDROP.segments + 2), 3) and quads.shape == (OFFICIAL_BACKDROP.segments + 1, 4)
    assert vertices[:, 2].min() == 0.0 and vertices[:, 2].max() == pytest.approx(23.215)
    # the profile in the backdrop's own (u, z) frame: floor under the scene (u of the world origin), wall behind
    c, s_ = math.cos(OFFICIAL_BACKDROP.rotation_z), math.sin(OFFICIAL_BACKDROP.rotation_z)
    end = vertices[: OFFICIAL_BACKDROP.segments + 2]
    u = c * (end[:, 0] - OFFICIAL_BACKDROP.location[0]) + s_ * (end[:, 1] - OFFICIAL_BACKDROP.location[1])
    u_origin = c * -OFFICIAL_BACKDROP.location[0] + s_ * -OFFICIAL_BACKDROP.location[1]
    assert np.all(np.diff(u) > 0)
    assert np.interp(u_origin, u, end[:, 2]) < 0.01 and np.interp(u_origin + 4.0, u, end[:, 2]) < 0.2
    assert np.interp(u_origin + 14.0, u, end[:, 2]) > 1.0  # the wall rises 14 units behind the origin
    # the wall stands behind the scene, away from the official camera (at +x, -y)
    wall = vertices[vertices[:, 2] > 10.0]
    camera = np.array(official_camera().position)
    assert np.all(np.linalg.norm(wall[:, :2] - camera[:2], axis=1) > np.linalg.norm(camera[:2]) + 5.0)


def test_official_style_renders_the_grey_backdrop_lit_by_the_sun(bpy, tmp_path):
    from clevr_poc.rendering import render_scene

    scene = Scene((_obj("red", "sphere", "large", "rubber", 0, 0.0, 0.0),))
    official = _image(render_scene(scene, tmp_path / "o.png", samples=2, width=80, height=80).image_path)
    bare = replace(OFFICIAL, sun=None, backdrop=None)
    dark = _image(render_scene(scene, tmp_path / "s.png", style=bare, samples=2, width=80, height=80).image_path)
    # the release's images: a grey backdrop at the top of the frame (mean about 100 of 255), not a black sky
    assert 80 < official[:8].mean() < 140 and official.mean() > 90
    assert dark[:8].mean() < 15


def test_demo_refuses_a_bad_assets_folder_before_any_work(bpy, tmp_path, capsys):
    pytest.importorskip("torch")  # the demo checks its extras first (the render-only venv has no torch)
    pytest.importorskip("torchvision")
    out = tmp_path / "demo"
    assert main(["demo", "--assets", str(tmp_path / "nowhere"), "--out", str(out), "--no-progress"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and "not a folder" in err[0]
    assert not (out / "dataset").exists()
