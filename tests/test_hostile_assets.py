"""``render --assets DIR`` with hostile ``.blend`` files (issue #26 items 1, 3, 7): each file is written by
bpy here, from the tiny fake ``data/`` folder of ``test_render_styles`` plus one attack; skipped without
``bpy``. The official files pass the same checks (compared before/after: identical renders)."""

from __future__ import annotations

import os

import pytest

from clevr_poc.scene import Scene
from test_render_styles import _obj, _write_fake_assets

SCENE = Scene((_obj("red", "sphere", "large", "rubber", 0, 0.0, 0.0),))


@pytest.fixture(scope="module")
def bpy():
    return pytest.importorskip("bpy")


def _edit(path, change):
    """Open ``path``, apply ``change(bpy)``, save it back."""
    import bpy

    bpy.ops.wm.open_mainfile(filepath=str(path), load_ui=False)
    change(bpy)
    bpy.ops.wm.save_as_mainfile(filepath=str(path), copy=True)


def _render(assets, out):
    from clevr_poc.rendering import render_scene

    return render_scene(SCENE, out, assets=assets, width=48, height=48, samples=1, denoise=False)


def _file_output_node(target_dir):
    def change(bpy):
        scene = bpy.context.scene
        tree = bpy.data.node_groups.new("Evil", "CompositorNodeTree")
        scene.compositing_node_group = tree
        scene.render.use_compositing = True
        layers = tree.nodes.new("CompositorNodeRLayers")
        out = tree.nodes.new("CompositorNodeOutputFile")
        out.directory = str(target_dir) + os.sep
        out.file_name = "victim.txt"
        out.format.media_type = "IMAGE"
        out.format.file_format = "PNG"
        out.file_output_items.new("RGBA", "Image")
        tree.links.new(layers.outputs["Image"], out.inputs["Image"])
    return change


def test_file_output_node_of_the_base_scene_writes_nothing(bpy, tmp_path):
    assets = _write_fake_assets(tmp_path / "data")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "victim.txt").write_text("keep me")
    _edit(assets / "base_scene.blend", _file_output_node(outside))
    result = _render(assets, tmp_path / "ds" / "image.png")
    assert result.image_path.stat().st_size > 0
    assert sorted(p.name for p in outside.iterdir()) == ["victim.txt"]
    assert (outside / "victim.txt").read_text() == "keep me"
    assert sorted(p.name for p in (tmp_path / "ds").iterdir()) == ["image.png"]


def test_subdivision_over_the_polygon_bound_is_refused(bpy, tmp_path):
    from clevr_poc.rendering.assets import AssetsError

    assets = _write_fake_assets(tmp_path / "data")

    def change(bpy):
        n = 16  # a 16 x 16 grid, 256 quads, x 4^5 = 262,144 polygons > 250,000
        verts = [(i - n / 2, j - n / 2, 0.0) for j in range(n + 1) for i in range(n + 1)]
        faces = [(j * (n + 1) + i, j * (n + 1) + i + 1, (j + 1) * (n + 1) + i + 1, (j + 1) * (n + 1) + i)
                 for j in range(n) for i in range(n)]
        mesh = bpy.data.meshes.new("Grid")
        mesh.from_pydata(verts, [], faces)
        ground = bpy.data.objects["Ground"]
        ground.data = mesh
        modifier = ground.modifiers.new("Subsurf", "SUBSURF")
        modifier.levels, modifier.render_levels = 1, 5
    _edit(assets / "base_scene.blend", change)
    with pytest.raises(AssetsError, match=r"base_scene\.blend: object 'Ground' has 256 polygons.*level 5 "
                                          r"\(262,144 polygons; at most 250,000"):
        _render(assets, tmp_path / "ds" / "image.png")
    assert not (tmp_path / "ds" / "image.png").exists()


def test_driver_on_a_shape_is_refused(bpy, tmp_path):
    from clevr_poc.rendering.assets import AssetsError

    assets = _write_fake_assets(tmp_path / "data")

    path = assets / "shapes" / "Sphere.blend"
    bpy.ops.wm.read_factory_settings(use_empty=True)
    with bpy.data.libraries.load(str(path)) as (source, target):
        target.objects = ["Sphere"]
    curve = target.objects[0].driver_add("location", 2)
    curve.driver.type, curve.driver.expression = "SCRIPTED", "2.5"  # a simple expression, no Python needed
    bpy.data.libraries.write(str(path), {target.objects[0]}, fake_user=True)
    with pytest.raises(AssetsError, match=r"Sphere\.blend: object 'Sphere' has drivers or animation"):
        _render(assets, tmp_path / "ds" / "image.png")


def _array_modifier(bpy):
    modifier = bpy.data.objects["Ground"].modifiers.new("Array", "ARRAY")
    modifier.count = 100_000


def _child_of_constraint(bpy):
    bpy.data.objects["Ground"].constraints.new("CHILD_OF").target = bpy.data.objects["Empty"]


def _image_texture(bpy):
    material = bpy.data.materials.new("Ground")
    node = material.node_tree.nodes.new("ShaderNodeTexImage")
    node.image = bpy.data.images.new("secret", 4, 4)
    node.image.source, node.image.filepath = "FILE", "/etc/hostname"
    bpy.data.objects["Ground"].data.materials.append(material)


def _text_object(bpy):
    text = bpy.data.objects.new("Text", bpy.data.curves.new("Text", "FONT"))
    bpy.context.scene.collection.objects.link(text)


@pytest.mark.parametrize("change, message", [
    (_array_modifier, r"object 'Ground' has the modifier 'Array' \(ARRAY\) \(refused: only \['SUBSURF'\]"),
    (_child_of_constraint, r"object 'Ground' has the constraint 'Child Of' \(CHILD_OF\)"),
    (_image_texture, r"image 'secret' \(FILE '/etc/hostname'\) \(refused: asset files may not read images\)"),
    (_text_object, r"object 'Text' is a FONT"),
])
def test_what_is_not_on_the_list_is_refused_naming_it(bpy, tmp_path, change, message):
    from clevr_poc.rendering.assets import AssetsError

    assets = _write_fake_assets(tmp_path / "data")
    _edit(assets / "base_scene.blend", change)
    with pytest.raises(AssetsError, match=r"base_scene\.blend: " + message):
        _render(assets, tmp_path / "ds" / "image.png")


def _link_stdin_library(tmp_path):
    def change(bpy):
        other = tmp_path / "other.blend"
        bpy.data.libraries.write(str(other), {bpy.data.objects["Empty"]}, fake_user=True)
        with bpy.data.libraries.load(str(other), link=True) as (source, target):
            target.objects = ["Empty"]
        bpy.context.scene.collection.objects.link(target.objects[0])
        bpy.data.libraries[0].filepath = "/dev/stdin"
    return change


def test_library_linked_at_dev_stdin_is_refused_before_blender_opens_the_file(bpy, tmp_path):
    from clevr_poc.rendering.assets import AssetsError

    assets = _write_fake_assets(tmp_path / "data")
    _edit(assets / "base_scene.blend", _link_stdin_library(tmp_path))
    with pytest.raises(AssetsError, match=r"base_scene\.blend: links the library '/dev/stdin'"):
        _render(assets, tmp_path / "ds" / "image.png")


def test_all_four_attacks_in_one_base_scene_give_one_typed_error_and_write_nothing(bpy, tmp_path):
    from clevr_poc.rendering.assets import AssetsError

    assets = _write_fake_assets(tmp_path / "data")
    outside = tmp_path / "outside"
    outside.mkdir()

    def change(bpy):
        _file_output_node(outside)(bpy)
        ground = bpy.data.objects["Ground"]
        modifier = ground.modifiers.new("Subsurf", "SUBSURF")
        modifier.levels = modifier.render_levels = 8
        ground.driver_add("location", 2).driver.expression = "1.0"
        _link_stdin_library(tmp_path)(bpy)
    _edit(assets / "base_scene.blend", change)
    with pytest.raises(AssetsError):
        _render(assets, tmp_path / "ds" / "image.png")
    assert list(outside.iterdir()) == []


def test_blender_reads_no_stdin():
    from clevr_poc.rendering.asset_safety import closed_stdin

    read_fd, write_fd = os.pipe()  # a pipe nobody writes to: reading it would block
    saved = os.dup(0)
    os.dup2(read_fd, 0)
    try:
        with closed_stdin():
            assert os.read(0, 10) == b""  # /dev/null: end of file at once
        assert os.path.samestat(os.fstat(0), os.fstat(read_fd))  # restored
    finally:
        os.dup2(saved, 0)
        for fd in (saved, read_fd, write_fd):
            os.close(fd)
