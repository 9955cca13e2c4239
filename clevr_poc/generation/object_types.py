"""Object types: the 768 tuples (color, shape, size, material, region) an object of a scene graph can be,
encoded as integers for the vectorised scene sampler (:mod:`clevr_poc.generation.scene_sampler`).

Type id = ((((c*4 + s)*3 + z)*2 + m)*4 + r) with the value indices of :data:`clevr_poc.domain.DOMAINS`
and :data:`clevr_poc.domain.REGIONS` (our encoding; the official generator has none).
"""

from __future__ import annotations

import math

import numpy as np

from clevr_poc import domain
from clevr_poc.scene import Scene, SceneObject

#: Attributes of an object type in encoding order: type id = ((((c*4 + s)*3 + z)*2 + m)*4 + r).
TYPE_FIELDS: tuple[str, ...] = ("color", "shape", "size", "material", "region")
#: Domain of every field (the region's: the region ids 0..3).
FIELD_DOMAIN: dict[str, tuple] = {**{a: domain.DOMAINS[a] for a in domain.ATTRIBUTES}, "region": domain.REGIONS}
_SIZES = tuple(len(FIELD_DOMAIN[f]) for f in TYPE_FIELDS)
#: Number of object types: 8 colors x 4 shapes x 3 sizes x 2 materials x 4 regions.
NUM_TYPES: int = math.prod(_SIZES)
#: Multiplier of each field's value index in the type id.
FIELD_STRIDE = {f: math.prod(_SIZES[k + 1:]) for k, f in enumerate(TYPE_FIELDS)}
_ALL = np.arange(NUM_TYPES)
#: ``FIELD_VALUE[f][t]``: index of type t's value of field f in its domain (numpy int64, length 768).
FIELD_VALUE: dict[str, np.ndarray] = {
    f: (_ALL // FIELD_STRIDE[f]) % len(FIELD_DOMAIN[f]) for f in TYPE_FIELDS
}
#: ``VALUE_INDEX[f][value]``: index of a value in its field's domain.
VALUE_INDEX = {f: {v: i for i, v in enumerate(FIELD_DOMAIN[f])} for f in TYPE_FIELDS}
#: Region of every type id (numpy int64, length 768).
TYPE_REGION = FIELD_VALUE["region"]
#: Number of regions; the region is the last field, so ``type // NUM_REGIONS`` is the description.
NUM_REGIONS = len(domain.REGIONS)
#: Maximum number of objects in one region (background theory, Appendix A lines 41-43).
REGION_CAPACITY = 3

#: Templates whose constraint concerns one object at a time: they only forbid object types.
UNARY_TEMPLATES = frozenset({"value_restriction", "negation_two", "negation_same_property", "or", "negation",
                             "generic"})
#: Templates that count objects or pairs of objects (checked on whole scenes).
COUNTING_TEMPLATES = frozenset({"exactly_n", "at_least_pairs", "at_least_pairs_with_value", "at_most_pairs",
                                "at_most_pairs_with_value"})


def type_id(obj: SceneObject) -> int:
    """The type id (0..767) of an object's (color, shape, size, material, region) (one look-up in
    :data:`TYPE_OF_TUPLE`; a value outside the domains raises the KeyError of :data:`VALUE_INDEX`)."""
    try:
        return TYPE_OF_TUPLE[(obj.color, obj.shape, obj.size, obj.material, obj.region)]
    except (KeyError, TypeError):
        return sum(VALUE_INDEX[f][getattr(obj, f)] * FIELD_STRIDE[f] for f in TYPE_FIELDS)


def type_object(tid: int) -> SceneObject:
    """The :class:`SceneObject` (no coordinates) of type id ``tid`` (0..767)."""
    values = {f: FIELD_DOMAIN[f][int(FIELD_VALUE[f][tid])] for f in TYPE_FIELDS}
    return SceneObject(values["color"], values["shape"], values["size"], values["material"], int(values["region"]))


#: ``TYPE_TUPLES[t]``: (color, shape, size, material, region) of type id t (0..767).
TYPE_TUPLES: tuple[tuple[str, str, str, str, int], ...] = tuple(
    (o.color, o.shape, o.size, o.material, o.region) for o in map(type_object, range(NUM_TYPES)))
#: ``TYPE_OF_TUPLE[(color, shape, size, material, region)]``: the type id (the inverse of :data:`TYPE_TUPLES`).
TYPE_OF_TUPLE: dict[tuple[str, str, str, str, int], int] = {t: k for k, t in enumerate(TYPE_TUPLES)}


def scene_from_types(types) -> Scene:
    """A scene without layout whose object i has type ``types[i]``.

    Every object is a copy of the field values of ``SceneObject(*TYPE_TUPLES[t])`` (built once per type)
    with a fresh ``extra`` dict: an equal object with the same field values (``tests/test_scene_check_rows.py``),
    without the dataclass ``__init__`` and ``__post_init__`` per object (issue 27: 22 -> 7 microseconds for
    8 objects; the scene sampler builds one scene per sample). The copies become the new instances' ``__dict__``
    and the scene is a copy of ``Scene(())``'s fields with these objects and fresh empty ``relationships`` and
    ``extra``: equal to ``Scene(tuple(objects))``, field for field (tested; issue 27: 6 -> 3.5 microseconds)."""
    templates = _TYPE_TEMPLATES or _type_templates()
    new = object.__new__
    set_fields = object.__setattr__
    objects = []
    for t in (types if type(types) is list else np.asarray(types).tolist()):  # a list: the scene sampler's ids
        fields = templates[t].copy()
        fields["extra"] = {}
        obj = new(SceneObject)
        set_fields(obj, "__dict__", fields)
        objects.append(obj)
    fields = _EMPTY_SCENE[0].copy()
    fields["objects"] = tuple(objects)
    fields["relationships"] = {}
    fields["extra"] = {}
    scene = new(Scene)
    set_fields(scene, "__dict__", fields)
    return scene


#: ``_TYPE_TEMPLATES[t]``: the field values (``__dict__``) of ``SceneObject(*TYPE_TUPLES[t])``, built on first use.
_TYPE_TEMPLATES: list[dict] = []


def _type_templates() -> list[dict]:
    _TYPE_TEMPLATES.extend(dict(SceneObject(*TYPE_TUPLES[t]).__dict__) for t in range(NUM_TYPES))
    _EMPTY_SCENE.append(dict(Scene(()).__dict__))
    return _TYPE_TEMPLATES


#: The field values of ``Scene(())``: :func:`scene_from_types` copies them with the objects, a fresh empty
#: ``relationships`` and ``extra`` (what ``Scene(objects)`` holds, without its ``__init__`` and ``__post_init__``).
_EMPTY_SCENE: list[dict] = []
