"""Perception for CLEVR-POC: from a rendered image to a scene graph (paper §4.1.2 assumed perfect
perception; this answers from pixels).

::

    from clevr_poc.perception import Perception

    perception = Perception.from_pretrained("models/perception")
    scene = perception("CLEVR_test_000000.png", camera)          # camera: clevr_poc.camera.Camera
    scene = perception(image, camera, environment=env)            # constraint-aware decoding (paper §5)
    scene.to_asp_facts(); scene.objects[0].probabilities

Modules: :mod:`.box_geometry` (box -> ground point -> region; numpy), :mod:`.decoding` (argmax and
constraint-aware decoding with clingo; no torch), :mod:`.rendered_truth` (rendered ground truth), :mod:`.models`,
:mod:`.perception_training`, :mod:`.perceiver`, :mod:`.evaluation` (torch / torchvision: the ``[vision]`` extra).
"""

from __future__ import annotations

from typing import Any

__all__ = ["Perception", "Detection", "ObjectCandidate", "DecodedScene", "argmax_decode", "constraint_decode"]


def __getattr__(name: str) -> Any:  # torch is imported only when the networks are needed
    if name in ("Perception", "Detection"):
        from clevr_poc.perception import perceiver

        return getattr(perceiver, name)
    if name in ("ObjectCandidate", "DecodedScene", "argmax_decode", "constraint_decode"):
        from clevr_poc.perception import decoding

        return getattr(decoding, name)
    raise AttributeError(f"module 'clevr_poc.perception' has no attribute {name!r}")
