"""Measuring perception on rendered partial-scene images: detection, attributes, regions, relationships,
whole scenes, and the answers the reasoner gives from perceived scenes.

For every example of a split (``clevr_poc.dataset_reader.load_dataset``: environment, partial scene with
ground truth, question, image) the detector runs once; its detections are decoded twice, plainly
(``argmax``) and consistently with the example's environment (``constraints``,
:mod:`clevr_poc.perception.decoding`). Predicted objects are matched to the visible ground-truth
objects greedily by descending score at IoU >= 0.5 (the usual detection criterion). Scenes without
boxes (the official release's) are matched by ground position instead: a prediction and a ground-truth
object within :data:`POSITION_MATCH_DISTANCE` world units (every object of such a scene counts as
visible).

The camera of each image is the scene's own or a preset (``camera_source``, :mod:`.cameras`: ``auto``
uses the scene's camera when it has one, else the official camera).

Metrics per decoding:

* ``detection``: precision and recall of the objects kept (IoU 0.5);
* ``attributes``: accuracy of color/shape/size/material over matched objects;
* ``region``: accuracy of the region over matched objects; ``position_error``: mean distance (world
  units) between estimated and true centres;
* ``relationships``: over ordered pairs of matched objects and the 4 relations, how often "j is rel of
  i" agrees with the ground truth;
* ``scene_exact``: images where every visible object is found, nothing else is, and all 4 attributes
  and the region of every object are right;
* ``answers`` (``answers_jaccard``: the mean Jaccard index): exact-match accuracy of the reasoner's answer (gold ASP query, official semantics) from
  the perceived scene against the gold answer (a perceived scene the solver cannot settle within its
  time limit counts as wrong; ``solver_timeouts`` counts them per decoding); ``answers_gold_scene`` is
  the same from the ground-truth scene (1.0 by construction, a check). With constraint-aware decoding the
  answer presupposes that the question has one, as :class:`~clevr_poc.pipeline.Pipeline` does
  (:mod:`clevr_poc.answer_presupposition`: an empty answer on the MAP scene is replaced by that of the most
  probable of the ``presupposition_k`` best consistent scenes that answers); ``presupposition`` counts
  the questions searched, those answered by the search, and the exact accuracy of the MAP scene's answer
  alone (``answers_map``);
* ``breakdowns`` (constraint-aware decoding; argmax without it): answers by question family (template
  file), answers by occlusion (the image's least visible object, :data:`VISIBILITY_BINS` of visible mask
  pixels) and detection recall by each object's visible pixels (the last two need rendered masks).
"""

from __future__ import annotations

import os
import time
from typing import Any, Sequence

import numpy as np

from clevr_poc import domain
from clevr_poc.answer_presupposition import DEFAULT_PRESUPPOSITION_K, check_presupposition_k, searched_answer
from clevr_poc.dataset_reader import load_dataset
from clevr_poc.errors import FormatError, SolverTimeoutError
from clevr_poc.evaluation.metrics import jaccard_index
from clevr_poc.perception.cameras import DEFAULT_CAMERA_SOURCE, CameraSource, check_camera_source, scene_camera
from clevr_poc.perception.rendered_truth import image_truth
from clevr_poc.reasoning import Reasoner
from clevr_poc.scene import Scene

IOU_THRESHOLD = 0.5
#: Greatest distance (world units) between a predicted and a true centre matched without boxes: under half
#: the official minimum distance between two small objects' centres (0.3 + 2 x 0.39 = 1.08).
POSITION_MATCH_DISTANCE = 0.5
DECODINGS: tuple[str, ...] = ("argmax", "constraints")


def box_iou(a: Sequence[float], b: Sequence[float]) -> float:
    """Intersection over union of two ``(x1, y1, x2, y2)`` boxes."""
    iw = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    ih = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    inter = iw * ih
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / union if union > 0 else 0.0


def match_by_position(predicted: Sequence[Sequence[float]], scores: Sequence[float],
                      truth: Sequence[Sequence[float]], max_distance: float = POSITION_MATCH_DISTANCE
                      ) -> list[tuple[int, int]]:
    """Greedy matching by descending score of world ``(x, y)`` positions: pairs ``(predicted index, truth
    index)`` whose distance is at most ``max_distance`` (the nearest free truth object each)."""
    order = sorted(range(len(predicted)), key=lambda i: -scores[i])
    used: set[int] = set()
    pairs = []
    for i in order:
        best, best_distance = None, max_distance
        for j, t in enumerate(truth):
            if j in used:
                continue
            distance = float(np.hypot(predicted[i][0] - t[0], predicted[i][1] - t[1]))
            if distance <= best_distance:
                best, best_distance = j, distance
        if best is not None:
            used.add(best)
            pairs.append((i, best))
    return pairs


def match_objects(predicted: Sequence[Sequence[float]], scores: Sequence[float], truth: Sequence[Sequence[float]],
                  threshold: float = IOU_THRESHOLD) -> list[tuple[int, int]]:
    """Greedy matching by descending score: pairs ``(predicted index, truth index)`` with IoU >= threshold."""
    order = sorted(range(len(predicted)), key=lambda i: -scores[i])
    used: set[int] = set()
    pairs = []
    for i in order:
        best, best_iou = None, threshold
        for j, t in enumerate(truth):
            if j in used:
                continue
            iou = box_iou(predicted[i], t)
            if iou >= best_iou:
                best, best_iou = j, iou
        if best is not None:
            used.add(best)
            pairs.append((i, best))
    return pairs


class _Tally:
    def __init__(self) -> None:
        self.tp = self.fp = self.fn = 0
        self.attribute_right = {a: 0 for a in domain.ATTRIBUTES}
        self.region_right = 0
        self.matched = 0
        self.position_errors: list[float] = []
        self.relation_right = self.relation_total = 0
        self.scene_exact = 0
        self.answer_right = 0
        self.answer_jaccard = 0.0
        self.answered = 0
        self.images = 0

    def report(self) -> dict[str, Any]:
        def ratio(a: float, b: float) -> float | None:
            return round(a / b, 4) if b else None

        return {
            "images": self.images,
            "detection": {"precision": ratio(self.tp, self.tp + self.fp), "recall": ratio(self.tp, self.tp + self.fn),
                          "true_positives": self.tp, "false_positives": self.fp, "false_negatives": self.fn},
            "attributes": {a: ratio(v, self.matched) for a, v in self.attribute_right.items()},
            "region": ratio(self.region_right, self.matched),
            "position_error": round(float(np.mean(self.position_errors)), 4) if self.position_errors else None,
            "relationships": ratio(self.relation_right, self.relation_total),
            "scene_exact": ratio(self.scene_exact, self.images),
            "answers": ratio(self.answer_right, self.answered),
            "answers_jaccard": ratio(self.answer_jaccard, self.answered),
        }


def _score(tally: _Tally, scene: Scene, truth_scene: Scene, truth_boxes: list, truth_objects: list,
           answer_ok: bool | None, answer_jaccard: float | None = None) -> list[tuple[int, int]]:
    """Add one image to ``tally``; returns the matched (predicted index, truth index) pairs."""
    tally.images += 1
    boxes = []
    for o in scene.objects:
        x, y, w, h = o.bbox
        boxes.append((x, y, x + w, y + h))
    scores = [o.score for o in scene.objects]
    if all(b is not None for b in truth_boxes):
        pairs = match_objects(boxes, scores, truth_boxes)
    else:
        pairs = match_by_position([o.coords_3d[:2] for o in scene.objects], scores,
                                  [t.centre for t in truth_objects])
    tally.tp += len(pairs)
    tally.fp += len(boxes) - len(pairs)
    tally.fn += len(truth_boxes) - len(pairs)
    all_right = len(pairs) == len(boxes) == len(truth_boxes)
    for i, j in pairs:
        p, t = scene.objects[i], truth_objects[j]
        tally.matched += 1
        for a in domain.ATTRIBUTES:
            ok = p.attribute(a) == t.attribute(a)
            tally.attribute_right[a] += ok
            all_right &= ok
        tally.region_right += p.region == t.region
        all_right &= p.region == t.region
        tally.position_errors.append(float(np.hypot(p.coords_3d[0] - t.centre[0], p.coords_3d[1] - t.centre[1])))
    for rel in domain.RELATIONS:
        predicted_rows = scene.relationships.get(rel, ())
        truth_rows = truth_scene.relationships.get(rel, ())
        if not truth_rows:
            continue
        for i, ti in pairs:
            for j, tj in pairs:
                if i == j:
                    continue
                tally.relation_total += 1
                tally.relation_right += (j in predicted_rows[i]) == (truth_objects[tj].index in
                                                                     truth_rows[truth_objects[ti].index])
    tally.scene_exact += all_right
    if answer_ok is not None:
        tally.answered += 1
        tally.answer_right += answer_ok
        tally.answer_jaccard += float(answer_ok) if answer_jaccard is None else answer_jaccard
    return pairs


#: Visible-pixel bins (upper bounds, pixels of the object's visible mask at the image's size) of the
#: breakdowns ``recall_by_visibility`` (per object) and ``answers_by_occlusion`` (per image, by its least
#: visible object): heavily occluded or far and small, partly occluded, mostly visible, large.
VISIBILITY_BINS: tuple[tuple[str, float], ...] = (("<150 px", 150), ("150-400 px", 400), ("400-1000 px", 1000),
                                                   (">=1000 px", float("inf")))


def visibility_bin(pixels: int) -> str:
    """The :data:`VISIBILITY_BINS` label of an object covering ``pixels`` visible pixels."""
    return next(label for label, upper in VISIBILITY_BINS if pixels < upper)


class _Breakdown:
    """Right/total counts per group label; ``report()`` gives ``{label: {"n", "accuracy"}}`` in label order."""

    def __init__(self, order: Sequence[str] = ()) -> None:
        self.order = list(order)
        self.counts: dict[str, list[int]] = {}

    def add(self, label: str, ok: bool) -> None:
        right_total = self.counts.setdefault(label, [0, 0])
        right_total[0] += bool(ok)
        right_total[1] += 1

    def report(self) -> dict[str, dict[str, float | int]]:
        labels = [x for x in self.order if x in self.counts] + sorted(set(self.counts) - set(self.order))
        return {x: {"n": self.counts[x][1], "accuracy": round(self.counts[x][0] / self.counts[x][1], 4)}
                for x in labels}


def evaluate(perception: Any, dataset: str | os.PathLike[str], *, split: str = "test", limit: int | None = None,
             decode: bool = True, answers: bool = True, progress: bool = True,
             camera_source: CameraSource | str = DEFAULT_CAMERA_SOURCE,
             presupposition_k: int = DEFAULT_PRESUPPOSITION_K) -> dict[str, Any]:
    """Metrics (module doc) of ``perception`` on the rendered partial-scene images of ``split``.

    ``dataset``: a folder in our layout or the official release's (:func:`clevr_poc.dataset_reader.load_dataset`);
    ``camera_source``: :data:`clevr_poc.perception.cameras.CAMERA_SOURCES`; ``presupposition_k``: scenes
    searched when the MAP scene leaves the question without an answer (module doc; 0: none).

    Returns ``{"split", "images", "camera_source", "cameras": {"scene": n, "preset": m}, "matching": "iou" |
    "position" | "mixed", "argmax": {...}, "constraints": {...} (when ``decode``), "gain": constraints minus
    argmax for the headline numbers, "decoding": statuses and seconds, "detect_seconds_per_image"}``.

    Raises:
        FormatError: not a dataset folder, no such split, no rendered image in it, an unknown camera
            source, or ``from-scene`` on a scene without a camera.
    """
    from tqdm import tqdm

    camera_source = check_camera_source(camera_source)
    presupposition_k = check_presupposition_k(presupposition_k)
    presupposition = {"k": presupposition_k, "searched": 0, "answered": 0, "answers_map": 0}
    data = load_dataset(dataset, split=split)
    examples = [e for e in data if e.image_path is not None]
    if limit is not None:
        examples = examples[:limit]
    if not examples:
        raise FormatError(f"no rendered partial-scene image in split {split!r} (render it first)", source=dataset,
                          field="split", value=split)
    reasoner = Reasoner() if answers else None
    tallies = {name: _Tally() for name in (DECODINGS if decode else DECODINGS[:1])}
    gold = _Tally()
    statuses: dict[str, int] = {}
    changed = 0
    detect_seconds = decode_seconds = 0.0
    cameras = {"scene": 0, "preset": 0}
    timeouts: dict[str, int] = {}
    matching: set[str] = set()
    bins = [label for label, _ in VISIBILITY_BINS]
    by_family, by_occlusion, recall_by_visibility = _Breakdown(), _Breakdown(bins), _Breakdown(bins)
    headline = DECODINGS[-1] if decode else DECODINGS[0]
    for example in tqdm(examples, desc="evaluate", disable=not progress, unit="image"):
        truth = image_truth(example.partial_scene, example.image_path, camera_source=camera_source,
                            scene_path=example.scene_path)
        truth_boxes = [o.box for o in truth.objects]
        matching.add("iou" if truth.annotated else "position")
        own = camera_source in (CameraSource.AUTO, CameraSource.FROM_SCENE) and scene_camera(example.partial_scene) is not None
        cameras["scene" if own else "preset"] += 1
        camera = truth.camera
        start = time.perf_counter()
        detections = perception.detect(example.image_path, camera)
        detect_seconds += time.perf_counter() - start
        scenes = {"argmax": perception.decode(detections, camera)}
        if decode:
            start = time.perf_counter()
            scenes["constraints"] = perception.decode(detections, camera, example.environment)
            decode_seconds += time.perf_counter() - start
            status = scenes["constraints"].perception.decoding
            statuses[status] = statuses.get(status, 0) + 1
            changed += scenes["constraints"].to_asp_facts() != scenes["argmax"].to_asp_facts()
        for name, scene in scenes.items():
            answer_ok = answer_jaccard = None
            if reasoner is not None and example.question.answer is not None:
                if len(scene) >= example.environment.num_objects:
                    # more visible objects than the environment leaves for the hidden one (an argmax
                    # scene with an extra detection): no answer, scored wrong rather than aborting
                    answer_ok = False
                else:
                    try:
                        answer = reasoner.answer(example.environment, scene, example.question.asp_query)
                        if name == "constraints":
                            presupposition["answers_map"] += answer.values == example.question.answer
                            if not answer.values and presupposition_k:
                                answer = _presupposed(reasoner, perception, detections, camera, example,
                                                      answer, presupposition_k, presupposition)
                        answer_ok = answer.values == example.question.answer
                        answer_jaccard = jaccard_index(example.question.answer, answer.values)
                    except SolverTimeoutError:  # a perceived scene clingo cannot settle in time: wrong
                        answer_ok = False
                        timeouts[name] = timeouts.get(name, 0) + 1
            pairs = _score(tallies[name], scene, truth.scene, truth_boxes, list(truth.objects), answer_ok,
                           answer_jaccard)
            if name == headline and truth.annotated:
                found = {j for _, j in pairs}
                for j, obj in enumerate(truth.objects):
                    recall_by_visibility.add(visibility_bin(obj.visible_pixels), j in found)
            if name == headline and answer_ok is not None:
                by_family.add(example.question.template_filename or "unknown", answer_ok)
                if truth.annotated and truth.objects:
                    least = min(obj.visible_pixels for obj in truth.objects)
                    by_occlusion.add(visibility_bin(least), answer_ok)
        if reasoner is not None and example.question.answer is not None:
            answer = reasoner.answer(example.environment, example.partial_scene, example.question.asp_query)
            gold.answered += 1
            gold.answer_right += answer.values == example.question.answer
    report: dict[str, Any] = {"split": split, "images": len(examples), "camera_source": camera_source.value,
                              "cameras": cameras, "matching": matching.pop() if len(matching) == 1 else "mixed"}
    for name, tally in tallies.items():
        report[name] = tally.report()
    if decode:
        a, c = report["argmax"], report["constraints"]
        gain = {key: _diff(c[key], a[key]) for key in ("scene_exact", "region", "relationships", "answers")}
        gain.update({f"attribute_{k}": _diff(c["attributes"][k], a["attributes"][k]) for k in domain.ATTRIBUTES})
        gain["detection_precision"] = _diff(c["detection"]["precision"], a["detection"]["precision"])
        gain["detection_recall"] = _diff(c["detection"]["recall"], a["detection"]["recall"])
        report["gain"] = gain
        report["decoding"] = {"statuses": statuses, "changed_scenes": changed,
                              "seconds_per_image": round(decode_seconds / len(examples), 4)}
    if answers:
        report["answers_gold_scene"] = round(gold.answer_right / gold.answered, 4) if gold.answered else None
        if decode:
            answered = tallies["constraints"].answered
            presupposition["answers_map"] = round(presupposition["answers_map"] / answered, 4) if answered else None
            report["presupposition"] = presupposition
    report["breakdowns"] = {"decoding": headline, "answers_by_family": by_family.report(),
                            "answers_by_occlusion": by_occlusion.report(),
                            "recall_by_visibility": recall_by_visibility.report()}
    report["solver_timeouts"] = timeouts
    report["detect_seconds_per_image"] = round(detect_seconds / len(examples), 4)
    return report


def _presupposed(reasoner: Reasoner, perception: Any, detections: Any, camera: Any, example: Any, answer: Any, k: int,
                 counts: dict[str, Any]) -> Any:
    """The answer of the most probable scene that answers among the ``k`` best consistent scenes, then the
    ``k`` best with the weak detections (:meth:`Perception.searched_scenes`), or ``answer`` when none does or the search fails; ``counts`` tallies searches and answers found."""
    counts["searched"] += 1
    found = searched_answer(reasoner, example.environment, example.question.asp_query,
                            lambda: perception.searched_scenes(detections, camera, example.environment, k=k))
    if found is None:
        return answer
    counts["answered"] += 1
    return found


def _diff(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else round(a - b, 4)


def format_report(report: dict[str, Any]) -> str:
    """A short plain-text table of :func:`evaluate`'s report."""
    lines = [f"split {report['split']}: {report['images']} images (cameras: {report['cameras']['scene']} from "
             f"the scenes, {report['cameras']['preset']} preset; camera source {report['camera_source']}; "
             f"matching by {report['matching']})"]
    names = [n for n in DECODINGS if n in report]
    header = f"{'metric':<24}" + "".join(f"{n:>13}" for n in names)
    lines.append(header)

    def row(label: str, get) -> None:
        values = []
        for n in names:
            v = get(report[n])
            values.append(f"{v:>13.4f}" if isinstance(v, float) else f"{str(v):>13}")
        lines.append(f"{label:<24}" + "".join(values))

    row("detection precision", lambda r: r["detection"]["precision"])
    row("detection recall", lambda r: r["detection"]["recall"])
    for a in domain.ATTRIBUTES:
        row(f"{a} accuracy", lambda r, a=a: r["attributes"][a])
    row("region accuracy", lambda r: r["region"])
    row("position error (units)", lambda r: r["position_error"])
    row("relationship accuracy", lambda r: r["relationships"])
    row("scene exact", lambda r: r["scene_exact"])
    row("answer accuracy", lambda r: r["answers"])
    if "decoding" in report:
        lines.append(f"constraint-aware decoding: {report['decoding']}")
    if "presupposition" in report:
        lines.append(f"presupposition (k, searched, answered, MAP-scene answers alone): {report['presupposition']}")
    if report.get("answers_gold_scene") is not None:
        lines.append(f"answer accuracy from gold scenes: {report['answers_gold_scene']}")
    lines.append(f"detection + attributes: {report['detect_seconds_per_image']} s per image")
    return "\n".join(lines)
