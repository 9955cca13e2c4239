"""Named render styles: what a CLEVR-POC image looks like (camera, lights, world, ground, meshes, shaders).

numpy-free and bpy-free: plain frozen dataclasses, read by :mod:`clevr_poc.rendering.render` (geometry,
masks) and :mod:`clevr_poc.rendering.blender` (the Blender scene).

Two styles (:data:`STYLES`):

``official`` (the default)
    The released CLEVR-POC images (the official image generator and its ``base_scene.blend``, read in
    Blender 5.0.1; numbers in ``docs/rendering.md``): 320 x 320, the fixed official camera
    (:func:`clevr_poc.camera.official_camera`; no jitter), three area lights with the
    official positions, Blender 5 energies, sizes and colours (no jitter), a world of colour 0.0509 at
    strength 0 (no ambient light), a ground plane without material (Blender's default grey diffuse),
    bevelled cube and cylinder, UV sphere, flat-shaded 32-sided cone, cubes *not* shrunk (the official
    code's ``shape_name == 'Cube'`` test never matches its lower-case names), colours ``c / 255`` fed as
    linear values, and the two node-group shaders ``Rubber`` and ``MyMetal``
    (:mod:`clevr_poc.rendering.shaders`).

``ours``
    The look this project rendered before the official look became the default (kept unchanged, so the
    images of old datasets can be reproduced): 320 x 240, our wider framing
    (:func:`clevr_poc.camera.default_camera`) with camera jitter 0.5 and light jitter 1.0,
    brighter white lights, a dim grey world, a grey Principled ground, cubes shrunk by sqrt(2), colours
    converted from sRGB to linear, Principled BSDF rubber and metal.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from clevr_poc.render_settings import RenderSettings

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
class Sun:
    """A sun (distant) light.

    Attributes:
        direction: unit vector the light travels along (world; pointing down into the scene).
        strength: irradiance, W/m^2 (Blender 5 units).
        angle: angular diameter of the sun disc, radians (soft shadows).
    """

    direction: tuple[float, float, float]
    strength: float
    angle: float


@dataclass(frozen=True)
class Backdrop:
    """A studio backdrop: a floor that sweeps up into a wall behind the scene (no material: Blender's
    default grey diffuse), modelled as a profile curve extruded along a straight line.

    In the backdrop's own (u, z) plane the profile is flat floor (z = 0) from ``floor_start`` to ``bend``,
    then a cubic Bézier from ``(bend, 0)`` with control points ``(control1_u, 0)`` (so the floor meets
    the curve without a kink) and ``control2`` to ``end`` (z below 0 is clamped to 0). The surface spans v
    in [``v_min``, ``v_max``]. The frame sits at ``location`` (x, y, z = 0) rotated by ``rotation_z``
    radians about z (u -> world x axis before the rotation, v -> world y).

    Attributes:
        location: (x, y) of the frame's origin, world units.
        rotation_z: radians.
        floor_start, bend, control1_u: u of the floor's start, of the curve's start, of the first control point.
        control2, end: (u, z) points of the curve, world units.
        v_min, v_max: extent along v, world units.
        segments: samples of the curve (smooth shading between them).
    """

    location: tuple[float, float]
    rotation_z: float
    floor_start: float
    bend: float
    control1_u: float
    control2: tuple[float, float]
    end: tuple[float, float]
    v_min: float
    v_max: float
    segments: int = 96


@dataclass(frozen=True)
class RenderStyle:
    """Everything that makes a look; :func:`clevr_poc.rendering.render.render_scene` takes its name.

    Attributes:
        name: the style's name (a key of :data:`STYLES`).
        camera: camera preset (:data:`clevr_poc.camera.CAMERA_PRESETS`).
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
        sun: a sun light besides the area lights, or None.
        backdrop: a :class:`Backdrop` instead of the flat ground plane, or None.
        cone_lift: default height cones float above the floor, world units (official: 0.118, module doc).
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
    sun: Sun | None = None
    backdrop: Backdrop | None = None
    cone_lift: float = 0.0

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

#: The official sun lamp (object "Area" of ``base_scene.blend``, a SUN light: strength 0.45, angle 0.199 rad,
#: pointing along (-0.4145, 0.1946, -0.8890)); it lights the backdrop grey.
OFFICIAL_SUN = Sun((-0.4145, 0.1946, -0.8890), 0.45, 0.1993)
#: The official ground ("Ground" of ``base_scene.blend``: a floor sweeping up into a wall behind the scene,
#: no material, Catmull-Clark level 2): frame at (-24.063, -17.997) rotated 154.58 deg, extent v in
#: [-56.48, 0], the scene's origin at u = -14.0 (on the floor). Our floor + cubic Bézier profile deviates
#: at most 0.061 units (mean 0.030) from the file's profile polygon (least-squares fit; docs/rendering.md).
OFFICIAL_BACKDROP = Backdrop(location=(-24.0628, -17.9967), rotation_z=2.69798, floor_start=-23.556, bend=-14.885,
                             control1_u=4.166, control2=(1.642, -1.009), end=(4.081, 23.215),
                             v_min=-56.485, v_max=0.0)
#: Height the official cones float at (their ``.blend`` stores the object at z = 0.118; CLEVR's
#: ``utils.add_object`` moves it up by r and CLEVR-POC's ``blender.py`` ``add_object`` then resets x and y
#: only: ``obj.location = Vector((x, y, obj.location[2]))``).
OFFICIAL_CONE_LIFT = 0.118

OFFICIAL = RenderStyle(
    name="official", camera="official", width=320, height=320, camera_jitter=0.0, light_jitter=0.0,
    lights=OFFICIAL_LIGHTS, world_rgb=(0.0509, 0.0509, 0.0509), world_strength=0.0, ground_rgb=None,
    shaders="official", colour_space="linear", meshes="official", shrink_cube=False,
    sun=OFFICIAL_SUN, backdrop=OFFICIAL_BACKDROP, cone_lift=OFFICIAL_CONE_LIFT)

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


@dataclass(frozen=True)
class ResolvedLook:
    """What :class:`~clevr_poc.render_settings.RenderSettings` leave to the style, resolved
    (:func:`resolve_look`): the style itself, the image size in pixels and the camera/light jitter and
    cone lift in world units."""

    style: RenderStyle
    width: int
    height: int
    camera_jitter: float
    light_jitter: float
    cone_lift: float


def resolve_look(settings: "RenderSettings") -> ResolvedLook:
    """The style of ``settings`` (:func:`get_style` with its colour space) and each setting left None
    replaced by that style's own value; the one place :func:`clevr_poc.rendering.render.render_scene` and the
    render manifest resolve them. Values are not validated here (``render_scene`` does).

    Raises:
        FormatError: unknown style name or colour space.
    """
    st = get_style(settings.style, colour_space=settings.colour_space)

    def own(value, default):
        return default if value is None else value

    return ResolvedLook(st, own(settings.width, st.width), own(settings.height, st.height),
                        own(settings.camera_jitter, st.camera_jitter), own(settings.light_jitter, st.light_jitter),
                        own(settings.cone_lift, st.cone_lift))
