"""The official CLEVR-POC materials as Blender node groups, built in code (needs ``bpy``, imported inside).

The official generator appends two node groups from ``data/materials/*.blend`` and gives every object a
material holding one group node whose ``Color`` input is the object's colour (official
``render_images.py``/``utils.add_material``). This module builds node groups with the same names and
the same interface (input ``Color``, RGBA; output ``Shader``), so that :func:`group_material` works the
same for these and for the official files (``--assets``, :mod:`clevr_poc.rendering.assets`):

``Rubber``
    a diffuse BSDF mixed with a velvet (Ashikhmin sheen, sigma :data:`RUBBER_SHEEN_ROUGHNESS`) BSDF by a
    Fresnel term at IOR :data:`RUBBER_SHEEN_IOR`, under a grey (0.8) Beckmann glossy layer of roughness
    :data:`RUBBER_GLOSS_ROUGHNESS` mixed in by a second Fresnel term at IOR :data:`RUBBER_GLOSS_IOR`: a matte
    look with a soft sheen at grazing angles. Numbers of the official ``Rubber.blend`` group read in Blender
    5.0.1: group inputs ``IOR`` 1.2 and ``Roughness`` 0.35 (defaults; the official code sets only
    ``Color``), the sheen Fresnel at ``IOR + 0.2``, the glossy roughness ``Roughness ** 0.5``.
``MyMetal``
    ``0.4 * rough + 0.6 * sharp`` of two anisotropic GGX glossy BSDFs tinted by the colour (roughness 0.447 and
    0.1, anisotropy 0.25; the official group's Fresnel node is not connected): brushed, fairly dark metal.
"""

from __future__ import annotations

from typing import Sequence

#: Node group names (official ``properties.json``: ``"materials": {"rubber": "Rubber", "metal": "MyMetal"}``).
GROUP_NAMES: dict[str, str] = {"rubber": "Rubber", "metal": "MyMetal"}

#: Rubber (official ``Rubber.blend``, module doc): Fresnel IOR of the velvet mix (1.2 + 0.2), of the glossy
#: mix, roughness of the glossy layer (0.35 ** 0.5), velvet sigma, glossy colour.
RUBBER_SHEEN_IOR = 1.4
RUBBER_GLOSS_IOR = 1.2
RUBBER_GLOSS_ROUGHNESS = 0.35 ** 0.5
RUBBER_SHEEN_ROUGHNESS = 0.6
RUBBER_GLOSS_GREY = 0.8
#: MyMetal (official ``MyMetal.blend``): weight of the sharp lobe, the two roughnesses (rough, sharp), anisotropy.
METAL_MIX = 0.6
METAL_ROUGHNESS = (0.447, 0.1)
METAL_ANISOTROPY = 0.25


def _new_group(name: str):
    import bpy

    group = bpy.data.node_groups.new(name, "ShaderNodeTree")
    group.interface.new_socket(name="Color", in_out="INPUT", socket_type="NodeSocketColor")
    group.interface.new_socket(name="Shader", in_out="OUTPUT", socket_type="NodeSocketShader")
    nodes = group.nodes
    group_in = nodes.new("NodeGroupInput")
    group_out = nodes.new("NodeGroupOutput")
    return group, group_in, group_out


def _glossy(nodes, distribution: str, roughness: float, anisotropy: float = 0.0):
    node = nodes.new("ShaderNodeBsdfGlossy")
    node.distribution = distribution
    node.inputs["Roughness"].default_value = roughness
    if "Anisotropy" in node.inputs:
        node.inputs["Anisotropy"].default_value = anisotropy
    return node


def _mix(group, fac_socket_or_value, first, second):
    mix = group.nodes.new("ShaderNodeMixShader")
    if isinstance(fac_socket_or_value, float):
        mix.inputs[0].default_value = fac_socket_or_value
    else:
        group.links.new(fac_socket_or_value, mix.inputs[0])
    group.links.new(first, mix.inputs[1])
    group.links.new(second, mix.inputs[2])
    return mix


def _fresnel(nodes, ior: float):
    node = nodes.new("ShaderNodeFresnel")
    node.inputs["IOR"].default_value = ior
    return node


def build_rubber_group(name: str = GROUP_NAMES["rubber"]):
    """The ``Rubber`` node group (module doc); returns the ``bpy`` node tree."""
    group, group_in, group_out = _new_group(name)
    nodes, links = group.nodes, group.links
    diffuse = nodes.new("ShaderNodeBsdfDiffuse")
    diffuse.inputs["Roughness"].default_value = 0.0
    sheen = nodes.new("ShaderNodeBsdfSheen")
    sheen.distribution = "ASHIKHMIN"  # Blender 4+: the former Velvet BSDF
    sheen.inputs["Roughness"].default_value = RUBBER_SHEEN_ROUGHNESS
    links.new(group_in.outputs["Color"], diffuse.inputs["Color"])
    links.new(group_in.outputs["Color"], sheen.inputs["Color"])
    base = _mix(group, _fresnel(nodes, RUBBER_SHEEN_IOR).outputs["Fac"], diffuse.outputs[0], sheen.outputs[0])
    gloss = _glossy(nodes, "BECKMANN", RUBBER_GLOSS_ROUGHNESS)
    gloss.inputs["Color"].default_value = (RUBBER_GLOSS_GREY, RUBBER_GLOSS_GREY, RUBBER_GLOSS_GREY, 1.0)
    top = _mix(group, _fresnel(nodes, RUBBER_GLOSS_IOR).outputs["Fac"], base.outputs[0], gloss.outputs[0])
    links.new(top.outputs[0], group_out.inputs["Shader"])
    return group


def build_metal_group(name: str = GROUP_NAMES["metal"]):
    """The ``MyMetal`` node group (module doc); returns the ``bpy`` node tree."""
    group, group_in, group_out = _new_group(name)
    nodes, links = group.nodes, group.links
    rough = _glossy(nodes, "GGX", METAL_ROUGHNESS[0], METAL_ANISOTROPY)
    sharp = _glossy(nodes, "GGX", METAL_ROUGHNESS[1], METAL_ANISOTROPY)
    for node in (rough, sharp):
        links.new(group_in.outputs["Color"], node.inputs["Color"])
    tinted = _mix(group, METAL_MIX, rough.outputs[0], sharp.outputs[0])
    links.new(tinted.outputs[0], group_out.inputs["Shader"])
    return group


def ensure_official_groups() -> None:
    """Build ``Rubber`` and ``MyMetal`` unless node groups of those names exist (appended from files)."""
    import bpy

    if GROUP_NAMES["rubber"] not in bpy.data.node_groups:
        build_rubber_group()
    if GROUP_NAMES["metal"] not in bpy.data.node_groups:
        build_metal_group()


def group_material(name: str, group_name: str, rgba: Sequence[float]):
    """A material holding one node of group ``group_name`` wired to its output, ``Color`` input = ``rgba``
    (official ``utils.add_material``). Raises KeyError when the group does not exist."""
    import bpy

    group = bpy.data.node_groups[group_name]
    material = bpy.data.materials.new(name)
    tree = material.node_tree
    for node in list(tree.nodes):
        if node.type != "OUTPUT_MATERIAL":
            tree.nodes.remove(node)
    output = next(n for n in tree.nodes if n.type == "OUTPUT_MATERIAL")
    node = tree.nodes.new("ShaderNodeGroup")
    node.node_tree = group
    for socket in node.inputs:
        if socket.name == "Color":
            socket.default_value = tuple(rgba)
    tree.links.new(node.outputs["Shader"], output.inputs["Surface"])
    return material
