"""Named render styles: what a CLEVR-POC image looks like (camera, lights, world, ground, meshes, shaders).

numpy-free and bpy-free: plain frozen dataclasses, read by :mod:`clevr_poc.rendering.render` (geometry,
masks) and :mod:`clevr_poc.rendering.blender` (the Blender scene).

Two styles (:data:`STYLES`):

``official`` (the default)
    The released CLEVR-POC images (the official image generator and its ``base_scene.blend``, read in
    Blender 5.0.1; numbers in ``docs/rendering.md``): 320 x 320, the fixed official camera
    (:func:`clevr_poc.rendering.geometry.official_camera`; no jitter), three area lights with the
    official positions, Blender 5 energies, sizes and colours (no jitter), a world of colour 0.0509 at
    strength 0 (no ambient light), a ground plane without material (Blender's default grey diffuse),
    bevelled cube and cylinder, UV sphere, flat-shaded 32-sided cone, cubes *not* shrunk (the official
    code's ``shape_name == 'Cube'`` test never matches its lower-case names), colours ``c / 255`` fed as
    linear values, and the two node-group shaders ``Rubber`` and ``MyMetal``
    (:mod:`clevr_poc.rendering.shaders`).

``ours``
    The look this project rendered before the official look became the default (kept unchanged, so the
    images of old datasets can be reproduced): 320 x 240, our wider framing
    (:func:`clevr_poc.rendering.geometry.default_camera`) with camera jitter 0.5 and light jitter 1.0,
    brighter white lights, a dim grey world, a grey Principled ground, cubes shrunk by sqrt(2), colours
    converted from sRGB to linear, Principled BSDF rubber and metal.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from clevr_poc.errors import FormatError

#: How the 0-255 colours of ``properties.json`` become shader colours: ``linear`` = ``c / 255`` as linear
#: values (official ``render_images.py``); ``srgb`` = ``c / 255`` read as sRGB and converted to linear.
COLOUR_SPACES: tuple[str, ...] = ("linear", "srgb")
#: Shader families: ``official`` = node groups ``Rubber``/``MyMetal``; ``principled`` = Principled BSDF.
SHADER_KINDS: tuple[str, ...] = ("official", "principled")
#: Mesh sets of :mod:`clevr_poc.rendering.shapes`.
MESH_SETS: tuple[str, ...] = ("official", "ours")


@dataclass(frozen=True)
class Light:
    """A square area light aimed at the world origin.

    Attributes:
        name: ``key``, ``fill`` or ``back``.
        location: (x, y, z), world units.
        energy: power in watts (Blender 5 units).
        size: side of the square, metres.
        colour: linear RGB, 0..1.
    """

    name: str
    location: tuple[float, float, float]
    energy: float
    size: float
    colour: tuple[float, float, float] = (1.0, 1.0, 1.0)


@dataclass(frozen=True)
class RenderStyle:
    """Everything that makes a look; :func:`clevr_poc.rendering.render.render_scene` takes its name.

    Attributes:
        name: the style's name (a key of :data:`STYLES`).
        camera: camera preset (:data:`clevr_poc.rendering.geometry.CAMERA_PRESETS`).
        width, height: default image size, pixels.
        camera_jitter, light_jitter: default uniform jitter per coordinate, world units (0: fixed).
        lights: the area lights.
        world_rgb, world_strength: world (background) colour (linear) and strength.
        ground_rgb: colour of a grey Principled ground (roughness 0.9), or None for a ground without
            material (Blender's default surface: grey diffuse).
        shaders: a :data:`SHADER_KINDS` entry.
        colour_space: a :data:`COLOUR_SPACES` entry.
        meshes: a :data:`MESH_SETS` entry.
        shrink_cube: divide a cube's scale by sqrt(2) (what CLEVR means to do; CLEVR-POC's code does not).
    """

    name: str
    camera: str
    width: int
    height: int
    camera_jitter: float
    light_jitter: float
    lights: tuple[Light, ...]
    world_rgb: tuple[float, float, float]
    world_strength: float
    ground_rgb: tuple[float, float, float] | None
    shaders: str
    colour_space: str
    meshes: str
    shrink_cube: bool

    def __post_init__(self) -> None:
        if self.shaders not in SHADER_KINDS:
            raise FormatError(f"shaders must be one of {list(SHADER_KINDS)}", field="style.shaders",
                              value=self.shaders)
        if self.colour_space not in COLOUR_SPACES:
            raise FormatError(f"colour_space must be one of {list(COLOUR_SPACES)}", field="colour_space",
                              value=self.colour_space)
        if self.meshes not in MESH_SETS:
            raise FormatError(f"meshes must be one of {list(MESH_SETS)}", field="style.meshes", value=self.meshes)


#: The official lights (``base_scene.blend`` read in Blender 5.0.1): location, energy (W), size, colour.
OFFICIAL_LIGHTS: tuple[Light, ...] = (
    Light("key", (6.4467, -2.9052, 4.2584), 78.54, 0.5, (1.0, 0.932, 0.817)),
    Light("fill", (-4.6711, -4.0136, 3.0112), 23.56, 0.5, (0.762, 0.818, 1.0)),
    Light("back", (-1.1685, 2.646, 5.8157), 39.27, 1.0, (1.0, 1.0, 1.0)),
)
#: Our lights (the ``ours`` style): white, further away, brighter.
OURS_LIGHTS: tuple[Light, ...] = (
    Light("key", (14.0, -7.0, 16.0), 3000.0, 4.0),
    Light("fill", (-9.0, -9.0, 6.0), 500.0, 3.0),
    Light("back", (-2.0, 10.0, 12.0), 900.0, 3.0),
)

OFFICIAL = RenderStyle(
    name="official", camera="official", width=320, height=320, camera_jitter=0.0, light_jitter=0.0,
    lights=OFFICIAL_LIGHTS, world_rgb=(0.0509, 0.0509, 0.0509), world_strength=0.0, ground_rgb=None,
    shaders="official", colour_space="linear", meshes="official", shrink_cube=False)

OURS = RenderStyle(
    name="ours", camera="ours", width=320, height=240, camera_jitter=0.5, light_jitter=1.0,
    lights=OURS_LIGHTS, world_rgb=(0.1, 0.1, 0.1), world_strength=1.0, ground_rgb=(0.42, 0.42, 0.42),
    shaders="principled", colour_space="srgb", meshes="ours", shrink_cube=True)

#: Style name -> style. ``official`` is the default everywhere.
STYLES: dict[str, RenderStyle] = {"official": OFFICIAL, "ours": OURS}
DEFAULT_STYLE = "official"
STYLE_NAMES: tuple[str, ...] = tuple(STYLES)


def get_style(name: str | RenderStyle, *, colour_space: str | None = None) -> RenderStyle:
    """The style called ``name`` (or ``name`` itself when it is a :class:`RenderStyle`), with its colour
    handling replaced by ``colour_space`` when given.

    Raises:
        FormatError: unknown style name or colour space.
    """
    if isinstance(name, RenderStyle):
        style = name
    elif name in STYLES:
        style = STYLES[name]
    else:
        raise FormatError(f"unknown render style; expected one of {list(STYLES)}", field="style", value=name)
    if colour_space is not None and colour_space != style.colour_space:
        style = replace(style, colour_space=colour_space)  # validated by __post_init__
    return style
