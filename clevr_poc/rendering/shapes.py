"""The four CLEVR shapes as procedural triangle meshes (numpy only; no .blend assets).

The same meshes are handed to Blender for rendering and to :mod:`clevr_poc.rendering.masks` for the
per-object instance masks, so masks and renders agree to the pixel.

Shapes (object space; CLEVR's unit shapes ``SmoothCube_v2``, ``Sphere``, ``SmoothCylinder``, ``Cone``
of ``data/shapes/*.blend`` span [-1, 1] on every axis and are scaled by the object's size):

* ``cube``: a cube of half-extent 1 whose edges and corners are rounded with radius :data:`CUBE_BEVEL`
  (CLEVR's *smooth* cube);
* ``sphere``: a UV sphere of radius 1;
* ``cylinder``: radius 1, height 2, rims rounded with radius :data:`CYLINDER_BEVEL` (CLEVR's *smooth*
  cylinder);
* ``cone``: base radius 1, height 2, apex up.

World placement (CLEVR ``render_images.py``/``utils.add_object``): the unit shape is scaled by ``s`` and
rotated by ``rotation`` degrees about the vertical axis; its centre is at ``(x, y, s)`` so that it rests
on the ground. ``s`` is the size's radius (:data:`clevr_poc.domain.SIZE_RADIUS`). CLEVR means to divide
it by sqrt(2) for cubes (``if shape_name == 'Cube': r /= math.sqrt(2)``), but its shape names are lower
case, so the official CLEVR-POC cubes keep the full radius (``shrink_cube=False``, the default); the
``ours`` style shrinks them (``shrink_cube=True``: every footprint fits in its size's circle).

Two mesh sets (``mesh_set``):

* ``official`` (default): the official shapes' look: bevelled cube (:data:`CUBE_BEVEL`), UV sphere and
  bevelled cylinder with 64 segments, and a *flat-shaded* cone with 32 sides (the official ``Cone``
  has 33 vertices and flat shading);
* ``ours``: the meshes this project rendered before (40 segments, a smooth-shaded cone).

Every vertex carries its exact surface normal (rounded surfaces shade smoothly, flat faces stay flat,
the cone's base edge and apex stay sharp); ``Mesh.smooth`` False asks for flat shading instead.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from clevr_poc import domain
from clevr_poc.errors import FormatError
from clevr_poc.scene import SceneObject

#: Edge/corner radius of the cube, in units of its half-extent.
CUBE_BEVEL = 0.1
#: Rim radius of the cylinder, in units of its radius.
CYLINDER_BEVEL = 0.06
#: Segments around the vertical axis (sphere, cylinder, cone) and rings of the sphere (``ours`` meshes).
SEGMENTS = 40
SPHERE_RINGS = 20
#: Steps per 45 degrees of a rounded edge (``ours`` meshes).
BEVEL_STEPS = 3
#: The ``official`` mesh set: segments and rings of sphere and cylinder, bevel steps, cone sides.
OFFICIAL_SEGMENTS = 64
OFFICIAL_SPHERE_RINGS = 32
OFFICIAL_BEVEL_STEPS = 4
OFFICIAL_CONE_SIDES = 32
#: Mesh sets (:mod:`clevr_poc.rendering.styles`).
MESH_SETS: tuple[str, ...] = ("official", "ours")


@dataclass(frozen=True, eq=False)
class Mesh:
    """A closed, convex triangle mesh.

    Attributes:
        vertices: float64 (V, 3), world or object units.
        normals: float64 (V, 3), unit outward surface normals per vertex.
        triangles: int64 (F, 3), vertex indices, counter-clockwise seen from outside (normals out).
        smooth: shade with the vertex normals (True) or flat, one normal per face (False).
    """

    vertices: np.ndarray
    normals: np.ndarray
    triangles: np.ndarray
    smooth: bool = True

    def transformed(self, scale: float, rotation_deg: float, location: tuple[float, float, float]) -> "Mesh":
        """Scale uniformly, rotate about +z by ``rotation_deg`` degrees (counter-clockwise seen from above),
        then translate."""
        vertices, Rz = transformed_vertices(self.vertices, scale, rotation_deg, location)
        return Mesh(vertices, self.normals @ Rz.T, self.triangles, self.smooth)

    def planes(self) -> tuple[np.ndarray, np.ndarray]:
        """Face planes ``n . x <= d`` bounding the (convex) solid: unit normals (F, 3) and offsets (F,)."""
        a, b, c = (self.vertices[self.triangles[:, k]] for k in range(3))
        n = np.cross(b - a, c - a)
        n /= np.linalg.norm(n, axis=1, keepdims=True)
        return n, np.einsum("ij,ij->i", n, a)


def _finish(vertices: np.ndarray, normals: np.ndarray, triangles: np.ndarray, smooth: bool = True) -> Mesh:
    """Drop degenerate triangles and orient the rest outwards (the solids are convex around the origin)."""
    a, b, c = (vertices[triangles[:, k]] for k in range(3))
    cross = np.cross(b - a, c - a)
    area2 = np.linalg.norm(cross, axis=1)
    keep = area2 > 1e-10
    triangles, cross = triangles[keep], cross[keep]
    centroid = (vertices[triangles[:, 0]] + vertices[triangles[:, 1]] + vertices[triangles[:, 2]]) / 3
    flip = np.einsum("ij,ij->i", cross, centroid) < 0
    triangles[flip] = triangles[flip][:, [0, 2, 1]]
    return Mesh(vertices.astype(np.float64), normals / np.linalg.norm(normals, axis=1, keepdims=True),
                triangles.astype(np.int64), smooth)


def _revolve(profile: list[tuple[float, float, float, float]], segments: int = SEGMENTS, smooth: bool = True
             ) -> Mesh:
    """Surface of revolution about z of a profile of (rho, z, normal_rho, normal_z) points, top to bottom.

    Two consecutive profile points at the same position make a sharp edge (no faces between them).
    """
    P = len(profile)
    angles = np.arange(segments) * (2 * math.pi / segments)
    cos, sin = np.cos(angles), np.sin(angles)
    prof = np.asarray(profile, dtype=float)
    vertices = np.stack([prof[:, None, 0] * cos, prof[:, None, 0] * sin, np.repeat(prof[:, None, 1], segments, 1)],
                        axis=-1).reshape(-1, 3)
    normals = np.stack([prof[:, None, 2] * cos, prof[:, None, 2] * sin, np.repeat(prof[:, None, 3], segments, 1)],
                       axis=-1).reshape(-1, 3)
    tris = []
    k = np.arange(segments)
    k1 = (k + 1) % segments
    for i in range(P - 1):
        if np.allclose(prof[i, :2], prof[i + 1, :2]):
            continue
        a0, a1 = i * segments + k, i * segments + k1
        b0, b1 = (i + 1) * segments + k, (i + 1) * segments + k1
        tris.append(np.stack([a0, b0, b1], axis=1))
        tris.append(np.stack([a0, b1, a1], axis=1))
    return _finish(vertices, normals, np.concatenate(tris), smooth)


def _arc(center: tuple[float, float], radius: float, start_deg: float, stop_deg: float, steps: int):
    out = []
    for t in np.linspace(math.radians(start_deg), math.radians(stop_deg), steps + 1):
        out.append((center[0] + radius * math.cos(t), center[1] + radius * math.sin(t), math.cos(t), math.sin(t)))
    return out


def _sphere(segments: int = SEGMENTS, rings: int = SPHERE_RINGS) -> Mesh:
    profile = []
    for phi in np.linspace(0.0, math.pi, rings + 1):
        s, c = math.sin(phi), math.cos(phi)
        profile.append((s, c, s, c))
    return _revolve(profile, segments)


def _cylinder(segments: int = SEGMENTS, bevel_steps: int = BEVEL_STEPS) -> Mesh:
    b = CYLINDER_BEVEL
    steps = 2 * bevel_steps
    profile = [(0.0, 1.0, 0.0, 1.0)]
    profile += _arc((1 - b, 1 - b), b, 90.0, 0.0, steps)
    profile += _arc((1 - b, -1 + b), b, 0.0, -90.0, steps)
    profile += [(0.0, -1.0, 0.0, -1.0)]
    return _revolve(profile, segments)


def _cone(segments: int = SEGMENTS, smooth: bool = True) -> Mesh:
    n_rho, n_z = 2 / math.sqrt(5), 1 / math.sqrt(5)  # side of a cone of radius 1 and height 2
    profile = [(0.0, 1.0, n_rho, n_z), (1.0, -1.0, n_rho, n_z), (1.0, -1.0, 0.0, -1.0), (0.0, -1.0, 0.0, -1.0)]
    return _revolve(profile, segments, smooth)


def _rounded_cube(bevel_steps: int = BEVEL_STEPS) -> Mesh:
    """Cube [-1, 1]^3 with edges/corners rounded (radius b): every point p of a subdivided cube is mapped
    to ``q + b * (p - q) / |p - q|`` with ``q = clip(p, -a, a)``, ``a = 1 - b``; the grid is placed so that
    the rounded parts are sampled at equal angles."""
    b = CUBE_BEVEL
    a = 1.0 - b
    m = bevel_steps
    outer = [a + b * math.tan(math.radians(45.0 * k / m)) for k in range(1, m + 1)]
    ts = np.array([-t for t in reversed(outer)] + [-a, a] + outer)
    n = len(ts)
    verts, tris = [], []
    for axis in range(3):
        i_ax, j_ax = [ax for ax in range(3) if ax != axis]
        for sign in (-1.0, 1.0):
            ti, tj = np.meshgrid(ts, ts, indexing="ij")
            p = np.zeros((n, n, 3))
            p[..., axis] = sign
            p[..., i_ax] = ti
            p[..., j_ax] = tj
            base = sum(len(v) for v in verts)
            verts.append(p.reshape(-1, 3))
            idx = base + np.arange(n * n).reshape(n, n)
            q00, q10, q01, q11 = idx[:-1, :-1].ravel(), idx[1:, :-1].ravel(), idx[:-1, 1:].ravel(), idx[1:, 1:].ravel()
            tris += [np.stack([q00, q10, q11], 1), np.stack([q00, q11, q01], 1)]
    p = np.concatenate(verts)
    q = np.clip(p, -a, a)
    d = p - q
    normals = d / np.linalg.norm(d, axis=1, keepdims=True)
    return _finish(q + b * normals, normals, np.concatenate(tris))


_BUILDERS = {
    "ours": {"cube": _rounded_cube, "sphere": _sphere, "cylinder": _cylinder, "cone": _cone},
    "official": {
        "cube": lambda: _rounded_cube(OFFICIAL_BEVEL_STEPS),
        "sphere": lambda: _sphere(OFFICIAL_SEGMENTS, OFFICIAL_SPHERE_RINGS),
        "cylinder": lambda: _cylinder(OFFICIAL_SEGMENTS, OFFICIAL_BEVEL_STEPS),
        "cone": lambda: _cone(OFFICIAL_CONE_SIDES, smooth=False),
    },
}


@lru_cache(maxsize=None)
def unit_mesh(shape: str, mesh_set: str = "official") -> Mesh:
    """The unit shape (object space, extent [-1, 1] on every axis) of a mesh set (module doc).

    Raises:
        KeyError: an unknown shape or mesh set.
    """
    if mesh_set not in _BUILDERS:
        raise KeyError(f"unknown mesh set {mesh_set!r}; expected one of {list(_BUILDERS)}")
    if shape not in _BUILDERS[mesh_set]:
        raise KeyError(f"unknown shape {shape!r}; expected one of {list(_BUILDERS[mesh_set])}")
    mesh = _BUILDERS[mesh_set][shape]()
    for arr in (mesh.vertices, mesh.normals, mesh.triangles):
        arr.setflags(write=False)
    return mesh


def object_rotation(obj: SceneObject) -> float:
    """Rotation about z in degrees: ``obj.rotation`` when set, else a value in [0, 360) hashed from the
    object's attributes and position (the same in the complete and the partial scene).

    Raises:
        FormatError: ``rotation`` is not a finite number.
    """
    value = obj.rotation
    if value is not None:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise FormatError("rotation must be a number of degrees", field="objects[].rotation", value=value)
        return float(value)
    key = repr((obj.color, obj.shape, obj.size, obj.material, obj.region,
                tuple(round(float(c), 6) for c in (obj.coords_3d or ())[:2]))).encode()
    return int.from_bytes(hashlib.sha256(key).digest()[:8], "big") / 2 ** 64 * 360.0


def object_scale(shape: str, size: str, *, shrink_cube: bool = False) -> float:
    """Scale ``s`` of the unit shape: the size's radius (world units; official: large 1.0, medium 0.58,
    small 0.39), divided by sqrt(2) for cubes when ``shrink_cube`` (the ``ours`` style; module doc).

    Also the object's half-height, i.e. the ``z`` of its centre when it rests on the ground.
    """
    radius = domain.SIZE_RADIUS[size]
    return radius / math.sqrt(2.0) if shrink_cube and shape == "cube" else radius


def transformed_vertices(vertices: np.ndarray, scale: float, rotation_deg: float,
                         location: tuple[float, float, float]) -> tuple[np.ndarray, np.ndarray]:
    """:meth:`Mesh.transformed`'s vertices (V, 3) and its rotation matrix Rz (3, 3): scaled, rotated about +z,
    translated (the one computation of both, so that their vertices are the same floats)."""
    Rz = rotation_z(rotation_deg)
    return (vertices * scale) @ Rz.T + np.asarray(location, dtype=float), Rz


def rotation_z(rotation_deg: float) -> np.ndarray:
    """The rotation matrix (3, 3) of ``rotation_deg`` degrees about +z (counter-clockwise seen from above)."""
    a = math.radians(rotation_deg)
    c, s = math.cos(a), math.sin(a)
    return np.array((c, -s, 0.0, s, c, 0.0, 0.0, 0.0, 1.0)).reshape(3, 3)


def object_mesh(shape: str, size: str, x: float, y: float, rotation_deg: float = 0.0, *,
                mesh_set: str = "official", shrink_cube: bool = False,
                offset: tuple[float, float, float] = (0.0, 0.0, 0.0)) -> Mesh:
    """World-space mesh of an object resting on the ground at (x, y) (centre at ``z = object_scale``),
    moved by ``offset`` (world units; the official cone quirk, :mod:`clevr_poc.rendering.render`)."""
    s = object_scale(shape, size, shrink_cube=shrink_cube)
    return unit_mesh(shape, mesh_set).transformed(s, rotation_deg, (x + offset[0], y + offset[1], s + offset[2]))
