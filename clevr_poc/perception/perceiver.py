"""``Perception``: image (+ camera) -> :class:`~clevr_poc.scene.Scene` (detector, attribute network,
ground geometry, optional constraint-aware decoding).

::

    perception = Perception.from_pretrained("models/perception")      # folder or .pt file; device="auto"
    scene = perception("CLEVR_000003.png")                              # no camera: the official preset
    scene = perception("CLEVR_test_000003.png", camera)                 # a Camera, its JSON or a preset name
    scene = perception(image_array, camera, environment=env)            # most probable consistent scene

Images of any size are read (320 x 240, the official 320 x 320, 480 x 320, ...); the camera is fitted to
the image's size (:mod:`.cameras`: a preset is built at that size, a given camera's intrinsics are
scaled). ``camera=None`` means the camera of images that come without one: the official CLEVR-POC
camera. The networks run on ``device`` (``"auto"``: CUDA when present, else the CPU; :mod:`.devices`).

Each object of the returned scene carries (typed fields of :class:`~clevr_poc.scene.SceneObject`):
``probabilities`` (attribute -> value -> probability), ``region_probabilities`` (region id as a string
-> probability), ``score`` (detector), ``bbox`` (``(x, y, w, h)`` pixels, COCO) and ``detection`` (index
among the candidates); ``coords_3d`` is the estimated centre (x, y, half the object's height for its
size). The scene's ``image`` holds the camera (:class:`~clevr_poc.scene_metadata.ImageInfo`) and its
``perception`` the decoding (:class:`~clevr_poc.scene_metadata.PerceptionInfo`: status, cost,
thresholds). Relationships follow the official convention from the estimated centres.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Iterator, Sequence

import numpy as np
import torch

from clevr_poc import domain
from clevr_poc.environments.environment import Environment
from clevr_poc.errors import FormatError
from clevr_poc.perception import box_geometry as geo
from clevr_poc.perception.cameras import FALLBACK_PRESET, CameraSpec, as_camera, resolve_camera
from clevr_poc.image_files import as_rgb_array
from clevr_poc.perception.devices import DEFAULT_DEVICE, resolve_device
from clevr_poc.perception.fast_inference import FastAttributes, FastDetector
from clevr_poc.perception.decoding import DecodedScene, ObjectCandidate, argmax_decode, constraint_decode
from clevr_poc.perception.ranked_decoding import DEFAULT_K, DEFAULT_MAX_MODELS, DEFAULT_MIN_RATIO, ranked_decode
from clevr_poc.perception.models import AttributeNet, ModelConfig, attribute_inputs, build_detector, context_images
from clevr_poc.perception.model_file import MODEL_FILE, read_model_file
from clevr_poc.camera import Camera, project
from clevr_poc.scene import Scene, SceneObject, compute_relationships
from clevr_poc.scene_distribution import SceneDistribution
from clevr_poc.scene_metadata import ImageInfo, PerceptionInfo

#: Default detection score an object needs in argmax decoding.
DEFAULT_SCORE_THRESHOLD = 0.5
#: Detections above this score are candidates for constraint-aware decoding (the object count decides).
DEFAULT_CANDIDATE_THRESHOLD = 0.2
#: Detections above this score (and below the candidate threshold) are searched only under the question's
#: presupposition, when no scene of the candidates answers (:meth:`Perception.searched_scenes`). 0.05 is
#: the detector's own floor (``box_score_thresh`` of :func:`~clevr_poc.perception.models.build_detector`).
#: Measured (``docs/benchmarks.md``, the release's look, 320 questions): 2 questions left empty by the
#: candidates were answered, both right.
DEFAULT_WEAK_CANDIDATE_THRESHOLD = 0.05
#: Image sides (pixels) perception accepts: CLEVR renders are 240-480 px; far smaller images hold no
#: readable object, far larger ones only cost memory (the detector never resizes).
MIN_IMAGE_SIDE, MAX_IMAGE_SIDE = 64, 2048


@dataclass(frozen=True)
class Detection:
    """One detected object before decoding.

    Attributes:
        box: ``(x1, y1, x2, y2)`` pixels.
        candidate: score, attribute and region probabilities, estimated centre (world x, y).
        offset: predicted centre offset from the ground point (forward, right), world units.
    """

    box: tuple[float, float, float, float]
    candidate: ObjectCandidate
    offset: tuple[float, float]


def _probability(field: str, value: Any) -> float:
    """``value`` as a detection score threshold in [0, 1].

    Raises:
        FormatError: not a number in [0, 1] (naming the field and the value).
    """
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = float("nan")
    if isinstance(value, bool) or not 0.0 <= number <= 1.0:
        raise FormatError("must be a detection score in [0, 1]", field=field, value=value)
    return number


class Perception:
    """The perception pipeline.

    Args:
        detector: torchvision Faster R-CNN (:func:`~clevr_poc.perception.models.build_detector`).
        attributes: :class:`~clevr_poc.perception.models.AttributeNet`.
        config: their :class:`~clevr_poc.perception.models.ModelConfig`.
        position_sigma: standard deviation (world units) of the estimated centres, for region
            probabilities (measured when training).
        score_threshold: detection score of an object in argmax decoding.
        candidate_threshold: detection score of a candidate in constraint-aware decoding.
        weak_candidate_threshold: detection score of a candidate searched only under the presupposition
            (:meth:`searched_scenes`); >= ``candidate_threshold`` turns that stage off.
        decode_time_limit: seconds for clingo per image.
        metadata: training metadata of the model file.
        device: torch device of both networks (``"auto"``: CUDA when present, else CPU; :mod:`.devices`).
        fast_inference: on the CPU, run both networks as frozen, BatchNorm-folded graphs
            (:mod:`.fast_inference`: the detector x1.2 faster, the attribute network x1.4; the same
            outputs up to the last float bits); False: the eager modules.

    Raises:
        DeviceError: a device this machine does not have.
        FormatError: a threshold that is not a score in [0, 1].
    """

    def __init__(self, detector: torch.nn.Module, attributes: AttributeNet, config: ModelConfig, *,
                 position_sigma: float = 0.3, score_threshold: float = DEFAULT_SCORE_THRESHOLD,
                 candidate_threshold: float = DEFAULT_CANDIDATE_THRESHOLD,
                 weak_candidate_threshold: float = DEFAULT_WEAK_CANDIDATE_THRESHOLD, decode_time_limit: float = 10.0,
                 metadata: dict[str, Any] | None = None, device: str | torch.device = DEFAULT_DEVICE,
                 fast_inference: bool = True) -> None:
        self.device = resolve_device(device)
        self.detector = detector.to(self.device).eval()
        self.fast_inference = bool(fast_inference)
        self._fast: FastDetector | None = None
        self._fast_attributes: FastAttributes | None = None
        self.attributes = attributes.to(self.device).eval()
        self.config = config
        self.position_sigma = float(position_sigma)
        self.score_threshold = _probability("score_threshold", score_threshold)
        self.candidate_threshold = _probability("candidate_threshold", candidate_threshold)
        self.weak_candidate_threshold = _probability("weak_candidate_threshold", weak_candidate_threshold)
        self.decode_time_limit = float(decode_time_limit)
        self.metadata = dict(metadata or {})
        self._fast_path(), self._fast_attribute_path()   # built now, with the model, not on the first image
        # the last image's detections: (image array, camera, detections); see _detect
        self._last_detections: tuple[np.ndarray, Camera, tuple[Detection, ...]] | None = None

    # ------------------------------------------------------------------ loading
    @classmethod
    def from_pretrained(cls, path: str | os.PathLike[str], **kwargs: Any) -> "Perception":
        """Load a model written by training (``perception.pt``, or a folder holding it); ``kwargs`` go to
        the constructor (``device="auto"``, thresholds, ...).

        Raises:
            DeviceError: ``device`` is not available here.
            FormatError: no such file, or not a perception model (wrong format tag, missing weights,
                weights that do not fit the stored configuration).
        """
        path = Path(path)
        if path.is_dir():
            path = path / MODEL_FILE
        data = read_model_file(path)
        try:
            config = ModelConfig.from_json(data["model_config"])
            detector = build_detector(config)
            detector.load_state_dict({k: v.float() for k, v in data["detector"].items()})
            attributes = AttributeNet(config)
            attributes.load_state_dict({k: v.float() for k, v in data["attributes"].items()})
        except (KeyError, TypeError, RuntimeError) as exc:
            raise FormatError(f"the model's weights do not fit its configuration ({str(exc)[:120]})",
                              source=path) from None
        kwargs.setdefault("position_sigma", data.get("position_sigma", 0.3))
        return cls(detector, attributes, config, metadata=data.get("training"), **kwargs)

    # ------------------------------------------------------------------ inference
    def camera_for(self, image: Any, camera: Any = None) -> tuple[np.ndarray, Camera]:
        """The image as uint8 (H, W, 3) and its camera fitted to its size (``camera``: a Camera, its
        JSON, a preset name, or None for the official preset; :func:`.cameras.resolve_camera`).

        Raises:
            FormatError: bad image, unknown preset, malformed camera or one of another aspect ratio.
        """
        array = as_rgb_array(image, min_side=MIN_IMAGE_SIDE, max_side=MAX_IMAGE_SIDE)
        height, width = array.shape[:2]
        if camera is None:
            camera = FALLBACK_PRESET
        return array, resolve_camera(width, height, camera=camera)

    def detect(self, image: Any, camera: Any = None) -> list[Detection]:
        """Every detection with score >= the lowest of the three thresholds, by descending score.

        ``camera``: see :meth:`camera_for` (None: the official camera).

        Raises:
            FormatError: bad image (type, shape, size) or camera.
        """
        array, cam = self.camera_for(image, camera)
        return self._detect(array, cam)

    def _detect(self, array: np.ndarray, cam: Camera) -> list[Detection]:
        """The detections of ``array`` (uint8 (H, W, 3)) seen with ``cam``; those of the last image are
        kept, so that decoding the same image again (the presupposition search of
        :mod:`clevr_poc.answer_presupposition` re-decodes an image whose MAP answer is empty:
        :meth:`scene_distribution` after :meth:`__call__`) does not rerun the networks (issue 27). The
        image is compared pixel for pixel (``np.array_equal``, about 0.05 ms at 320 x 320) and the camera
        by value; the networks are deterministic on a given device, so the detections are those a rerun
        gives."""
        last = self._last_detections
        if last is not None and last[1] == cam and last[0].shape == array.shape and np.array_equal(last[0], array):
            return list(last[2])
        detections = self._run_networks(array, cam)
        self._last_detections = (np.array(array, copy=True), cam, tuple(detections))
        return detections

    def _fast_applies(self, module: Any, kind: type) -> bool:
        return (getattr(self, "fast_inference", False) and self.device.type == "cpu" and isinstance(module, kind)
                and not module.training)

    def _fast_path(self) -> FastDetector | None:
        """The detector's :class:`~.fast_inference.FastDetector` when it applies (``fast_inference``, the
        CPU, a torchvision Faster R-CNN in eval mode), rebuilt when the detector or its weights changed."""
        from torchvision.models.detection import FasterRCNN

        detector, fast = self.detector, getattr(self, "_fast", None)
        if not self._fast_applies(detector, FasterRCNN):
            return None
        if fast is None or not fast.current(detector):
            fast = self._fast = FastDetector(detector)
        return fast

    def _fast_attribute_path(self) -> FastAttributes | None:
        """The attribute network's :class:`~.fast_inference.FastAttributes`, as :meth:`_fast_path`."""
        net, fast = self.attributes, getattr(self, "_fast_attributes", None)
        if not self._fast_applies(net, AttributeNet):
            return None
        if fast is None or not fast.current(net):
            fast = self._fast_attributes = FastAttributes(net, self.config)
        return fast

    @torch.no_grad()
    def detector_outputs(self, images: list[torch.Tensor]) -> list[dict[str, torch.Tensor]]:
        """``self.detector(images)`` (float (3, H, W) images in [0, 1] on :attr:`device`), through the fast
        path where it applies (:meth:`_fast_path`): per image ``{"boxes": (D, 4), "scores": (D,),
        "labels": (D,)}``, by descending score."""
        fast = self._fast_path()
        return fast(images) if fast is not None else self.detector(images)

    @torch.no_grad()
    def _run_networks(self, array: np.ndarray, cam: Camera) -> list[Detection]:
        """:meth:`_detect` without the cache: the detector, then the attribute network on its boxes."""
        tensor = torch.from_numpy(array).to(self.device).permute(2, 0, 1).float().div_(255.0)
        output = self.detector_outputs([tensor])[0]
        threshold = min(self.candidate_threshold, self.score_threshold, self.weak_candidate_threshold)
        keep = output["scores"] >= threshold
        boxes, scores = output["boxes"][keep], output["scores"][keep].cpu()
        if len(boxes) == 0:
            return []
        images = tensor[None]
        crops, contexts = attribute_inputs(images, context_images(images, self.config),
                                           torch.zeros(len(boxes), dtype=torch.long, device=self.device), boxes,
                                           self.config)
        features = torch.from_numpy(np.stack([geo.box_features(b, cam) for b in boxes.tolist()])).to(self.device)
        attributes = self._fast_attribute_path() or self.attributes
        out = {k: v.cpu() for k, v in attributes(crops, contexts, features).items()}
        probs = {a: torch.softmax(out[a], dim=1).numpy().astype(float) for a in domain.ATTRIBUTES}
        detections = []
        for k, box in enumerate(boxes.cpu().tolist()):
            offset = tuple(float(v) for v in out["offset"][k])
            try:
                x, y = geo.object_centre(box, cam, offset)
            except ValueError:  # contact point above the horizon: no ground position
                continue
            candidate = ObjectCandidate(float(scores[k]), {a: tuple(probs[a][k]) for a in domain.ATTRIBUTES},
                                        tuple(geo.region_probabilities(x, y, self.position_sigma)), (x, y))
            detections.append(Detection(tuple(box), candidate, offset))
        return detections

    def decode(self, detections: Sequence[Detection], camera: CameraSpec, environment: Environment | None = None
               ) -> Scene:
        """The scene of ``detections``: argmax decoding, or constraint-aware decoding in ``environment``.

        ``camera``: the :class:`Camera` the detections were made with (:meth:`camera_for`), or its JSON.
        """
        cam = as_camera(camera)
        if environment is None:
            decoded = argmax_decode([d.candidate for d in detections], self.score_threshold)
        else:
            index = [i for i, d in enumerate(detections) if d.candidate.score >= self.candidate_threshold]
            inner = constraint_decode([detections[i].candidate for i in index], environment,
                                      time_limit=self.decode_time_limit, fallback_threshold=self.score_threshold)
            decoded = replace(inner, keep=tuple(index[i] for i in inner.keep))   # back to detection indices
        return self._scene(detections, decoded, cam, environment)

    def __call__(self, image: Any, camera: Any = None, environment: Environment | None = None) -> Scene:
        """Perceive one image: ``image`` is a path, a PIL image or a uint8 (H, W, 3) array (float in [0, 1]
        accepted) of any size; ``camera`` a :class:`~clevr_poc.camera.Camera`, its JSON (the
        scene JSON's ``camera``), a preset name (``"official"``, ``"ours"``) or None (the official camera,
        that of the release's images), fitted to the image's size. With ``environment``,
        constraint-aware decoding (:mod:`.decoding`).

        Raises:
            FormatError: bad image or camera.
        """
        array, cam = self.camera_for(image, camera)
        return self.decode(self._detect(array, cam), cam, environment)

    def scene_distribution(self, image: Any, camera: Any = None, environment: Environment | None = None, *,
                           k: int = DEFAULT_K, min_ratio: float = DEFAULT_MIN_RATIO,
                           max_models: int = DEFAULT_MAX_MODELS) -> SceneDistribution:
        """The ``k`` most probable scenes of one image consistent with ``environment``, with their
        probabilities (:func:`~clevr_poc.perception.ranked_decoding.ranked_decode`; ``image``, ``camera``
        as for :meth:`__call__`). Without an environment, or when no consistent scene exists, the one scene
        of :meth:`decode` with probability 1.

        Raises:
            FormatError: bad image or camera.
            ValueError: bad ``k``, ``min_ratio`` or ``max_models`` (see ``ranked_decode``).
        """
        array, cam = self.camera_for(image, camera)
        return self.decode_distribution(self._detect(array, cam), cam, environment, k=k, min_ratio=min_ratio,
                                        max_models=max_models)

    def decode_distribution(self, detections: Sequence[Detection], camera: Any, environment: Environment | None = None,
                            *, k: int = DEFAULT_K, min_ratio: float = DEFAULT_MIN_RATIO,
                            max_models: int = DEFAULT_MAX_MODELS,
                            candidate_threshold: float | None = None) -> SceneDistribution:
        """:meth:`scene_distribution` of detections already made (:meth:`detect`), as :meth:`decode` is
        to :meth:`__call__`; ``candidate_threshold`` (None: the perception's) is the score a detection
        needs to be a candidate."""
        cam = as_camera(camera)
        if environment is None:
            return SceneDistribution.certain(self.decode(detections, cam, None))
        floor = self.candidate_threshold if candidate_threshold is None else float(candidate_threshold)
        index = [i for i, d in enumerate(detections) if d.candidate.score >= floor]
        ranked = ranked_decode([detections[i].candidate for i in index], environment, k=k, min_ratio=min_ratio,
                               max_models=max_models, time_limit=self.decode_time_limit)
        if not ranked.scenes:
            return SceneDistribution.certain(self.decode(detections, cam, environment))
        scenes = tuple(self._scene(detections, replace(s, keep=tuple(index[i] for i in s.keep)), cam, environment)
                       for s in ranked.scenes)
        return SceneDistribution(scenes, ranked.probabilities, ranked.complete)

    def presupposition_scenes(self, image: Any, camera: Any = None, environment: Environment | None = None, *,
                              k: int = DEFAULT_K) -> Iterator[Scene]:
        """:meth:`searched_scenes` of one image (``image``, ``camera`` as for :meth:`__call__`).

        Raises:
            FormatError: bad image or camera.
        """
        array, cam = self.camera_for(image, camera)
        return self.searched_scenes(self._detect(array, cam), cam, environment, k=k)

    def searched_scenes(self, detections: Sequence[Detection], camera: Any, environment: Environment | None, *,
                        k: int = DEFAULT_K) -> Iterator[Scene]:
        """The scenes the question's presupposition searches (:mod:`clevr_poc.answer_presupposition`), most
        plausible first, computed lazily: the ``k`` most probable consistent scenes of the candidates
        (:meth:`decode_distribution`), then, only when the caller asks for more (none of those answered),
        the ``k`` most probable of the candidates and the weak detections (score >=
        ``weak_candidate_threshold``). A missed object, often an occluded one that the detector saw
        at a score under the candidate threshold, leaves a question about its neighbours without an
        answer in every scene of the candidates; the question's answer is evidence that it is there.
        """
        cam = as_camera(camera)
        yield from self.decode_distribution(detections, cam, environment, k=k).scenes
        weak = self.weak_candidate_threshold
        if environment is not None and weak < self.candidate_threshold and any(
                weak <= d.candidate.score < self.candidate_threshold for d in detections):
            yield from self.decode_distribution(detections, cam, environment, k=k, candidate_threshold=weak).scenes

    # ------------------------------------------------------------------ scene
    def _scene(self, detections: Sequence[Detection], decoded: DecodedScene, camera: Camera,
               environment: Environment | None) -> Scene:
        objects = []
        for d_index, values, region in zip(decoded.keep, decoded.values, decoded.regions):
            detection = detections[d_index]
            c = detection.candidate
            x, y = c.position
            # the object rests at z = radius, cubes included: the official renderer never shrinks cubes
            # (OFFICIAL_RENDER.md, "Objects"; clevr_poc.rendering.shapes.object_scale, shrink_cube=False)
            z = domain.SIZE_RADIUS[values["size"]]
            try:
                pixel = project((x, y, z), camera)
            except ValueError:
                pixel = None
            x1, y1, x2, y2 = detection.box
            objects.append(SceneObject(
                values["color"], values["shape"], values["size"], values["material"], int(region),
                (float(x), float(y), float(z)), pixel,
                probabilities={a: {v: round(float(p), 6) for v, p in zip(domain.DOMAINS[a], c.probabilities[a])}
                               for a in domain.ATTRIBUTES},
                region_probabilities={str(r): round(float(p), 6)
                                      for r, p in zip(domain.REGIONS, c.region_probabilities)},
                score=round(float(c.score), 6),
                bbox=(round(x1, 2), round(y1, 2), round(x2 - x1, 2), round(y2 - y1, 2)),
                detection=int(d_index)))
        relationships = compute_relationships([o.coords_3d[:2] for o in objects])
        info = PerceptionInfo(decoded.status, decoded.cost, self.score_threshold, self.candidate_threshold,
                              len(detections))
        if environment is not None:
            info = replace(info, environment=environment.id, relations_used=decoded.relations_used)
        return Scene(tuple(objects), relationships, image=ImageInfo(camera), perception=info)
