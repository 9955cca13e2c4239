"""Perception: ground geometry, constraint-aware decoding, the shipped model on fixture renders, the CLI.

The fixture ``tests/fixtures/perception/dataset`` is a two-example dataset folder (test split) rendered
once by ``python -m clevr_poc render`` (320x240, Cycles, 8 samples) from a generated dataset (``generate
--environments 10 --scenes-per-environment 60 --seed 3``); the shipped model never saw these images.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from clevr_poc import domain
from clevr_poc.environments import Constraint, Environment
from clevr_poc.errors import FormatError
from clevr_poc.perception import box_geometry as geo
from clevr_poc.perception.decoding import ObjectCandidate, argmax_decode, constraint_decode, decoding_symbols
from clevr_poc.rendering.geometry import default_camera, project

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = Path(__file__).resolve().parent / "fixtures" / "perception" / "dataset"
MODEL = ROOT / "models" / "perception"


# ---------------------------------------------------------------------- geometry
def _box_standing_on(x: float, y: float, camera, half_width: float = 6.0, height: float = 20.0):
    """A box whose bottom-centre is the image of the ground point (x, y, 0)."""
    u, v, _ = project((x, y, 0.0), camera)
    return (u - half_width, v - height, u + half_width, v)


@pytest.mark.parametrize("x, y, region", [(-3.0, 2.0, 0), (3.0, 4.0, 1), (-1.0, -4.0, 2), (2.5, -0.5, 3)])
def test_ground_contact_maps_back_to_the_world_point_and_its_region(x, y, region):
    camera = default_camera()
    box = _box_standing_on(x, y, camera)
    gx, gy = geo.ground_point(box, camera)
    assert gx == pytest.approx(x, abs=1e-6) and gy == pytest.approx(y, abs=1e-6)
    assert geo.nearest_region(gx, gy) == region
    assert int(np.argmax(geo.region_probabilities(gx, gy, 0.3))) == region


def test_points_between_regions_go_to_the_nearest_region():
    # the strip 0 < x < 0.5 belongs to no region (official boxes); its halves go to either side
    assert domain.region_of_point(0.2, 1.0) is None
    assert geo.nearest_region(0.2, 1.0) == 0
    assert geo.nearest_region(0.3, 1.0) == 1
    assert geo.nearest_region(0.3, -1.0) == 3
    assert geo.nearest_region(-7.0, -9.0) == 2          # outside every box: nearest corner region
    p = geo.region_probabilities(geo.REGION_SPLIT_X, 3.0, 0.5)
    assert p.sum() == pytest.approx(1.0)
    assert p[0] == pytest.approx(0.5 * p[:2].sum() * 2 / 2, abs=1e-3) and p[0] == pytest.approx(p[1], abs=1e-9)
    assert p[2] + p[3] == pytest.approx(1 - 0.5 * (1 + math.erf(3.0 / 0.5 / math.sqrt(2))), abs=1e-12)
    assert list(geo.region_probabilities(1.0, -1.0, 0.0)) == [0, 0, 0, 1]


def test_offset_frame_round_trip_and_centre():
    camera = default_camera()
    forward, right = geo.ground_frame(camera)
    assert abs(float(forward @ right)) < 1e-9
    # the camera stands at about (11.7, -11.0): looking towards the origin means forward ~ (-0.73, 0.69)
    assert forward[0] < -0.6 and forward[1] > 0.6
    delta = geo.offset_to_world((0.5, -0.2), camera)
    assert geo.world_to_offset(delta, camera) == pytest.approx((0.5, -0.2))
    box = _box_standing_on(1.0, 1.0, camera)
    cx, cy = geo.object_centre(box, camera, (0.5, 0.0))
    assert (cx, cy) == pytest.approx((1.0 + 0.5 * forward[0], 1.0 + 0.5 * forward[1]))


def test_box_features_recover_metric_size():
    camera = default_camera()
    box = _box_standing_on(0.0, 0.0, camera, half_width=10.0, height=30.0)
    features = geo.box_features(box, camera)
    depth = 20.0 * features[6]
    assert features.shape == (9,) and features.dtype == np.float32
    assert features[7] == pytest.approx(20.0 * depth / camera.K[0, 0], rel=1e-5)   # width in world units


# ---------------------------------------------------------------------- decoding
def _probs(attribute: str, value: str, p: float = 0.99) -> tuple[float, ...]:
    values = domain.DOMAINS[attribute]
    return tuple(p if v == value else (1 - p) / (len(values) - 1) for v in values)


def _candidate(score, color, shape, size, material, region, position, color_probs=None):
    probabilities = {"color": color_probs or _probs("color", color), "shape": _probs("shape", shape),
                     "size": _probs("size", size), "material": _probs("material", material)}
    regions = tuple(0.98 if r == region else 0.02 / 3 for r in domain.REGIONS)
    return ObjectCandidate(score, probabilities, regions, position)


def test_constraint_decoding_fixes_a_value_the_environment_forbids():
    env = Environment((Constraint("negation", {"r": 0, "p1": "color", "v1": "red"}),), 3, id=7)
    red_or_blue = tuple(0.6 if c == "red" else 0.3 if c == "blue" else 0.1 / 6 for c in domain.COLORS)
    candidates = [_candidate(0.95, None, "cube", "large", "metal", 0, (-2.0, 2.0), red_or_blue),
                  _candidate(0.9, "green", "sphere", "small", "rubber", 3, (2.0, -2.0))]
    plain = argmax_decode(candidates)
    assert plain.values[0]["color"] == "red"                       # inconsistent: no red object in region 0
    decoded = constraint_decode(candidates, env)
    assert decoded.status == "optimal" and decoded.keep == (0, 1)
    assert decoded.values[0] == {"color": "blue", "shape": "cube", "size": "large", "material": "metal"}
    assert decoded.values[1]["color"] == "green" and decoded.regions == (0, 3)
    # the cost is -log(0.3) of the changed color plus the unchanged values' -log p, scaled by 1000
    expected = round(-1000 * math.log(0.3))
    assert decoded.cost - expected == round(-1000 * math.log(0.95)) + round(-1000 * math.log(0.9)) \
        + 2 * (3 * round(-1000 * math.log(0.99)) + round(-1000 * math.log(0.98))) + round(-1000 * math.log(0.99))


def test_constraint_decoding_keeps_n_minus_1_objects_and_removes_duplicates():
    env = Environment((Constraint("generic", {"p1": "color", "v1": "yellow"}),), 3, id=8)
    twin = tuple(0.7 if c == "red" else 0.25 if c == "purple" else 0.05 / 6 for c in domain.COLORS)
    candidates = [_candidate(0.95, "red", "cube", "small", "rubber", 2, (-2.0, -2.0)),
                  _candidate(0.9, None, "cube", "small", "rubber", 2, (-3.0, -3.0), twin),
                  _candidate(0.6, "cyan", "cone", "large", "metal", 1, (3.0, 3.0))]
    plain = argmax_decode(candidates)
    assert plain.keep == (0, 1, 2) and plain.values[0] == plain.values[1]   # 3 objects, two identical
    decoded = constraint_decode(candidates, env)
    assert decoded.keep == (0, 1)                                           # N - 1 = 2 visible objects
    assert decoded.values[0]["color"] == "red" and decoded.values[1]["color"] == "purple"


def test_decoding_facts_and_candidate_validation():
    c = _candidate(0.5, "red", "cube", "small", "rubber", 0, (-1.0, 1.0))
    facts = {str(s) for s in decoding_symbols([c], 4)}
    assert {"keep_count(1)", "unseen(1)", "unseen(2)", "unseen(3)", "keep_cost(0,693)"} <= facts
    assert "unseen(0)" not in facts and "unseen(4)" not in facts
    with pytest.raises(FormatError, match="probabilities.shape"):
        ObjectCandidate(0.5, {**c.probabilities, "shape": (1.0,)}, c.region_probabilities, (0.0, 0.0))
    with pytest.raises(FormatError, match="score"):
        ObjectCandidate(1.5, c.probabilities, c.region_probabilities, (0.0, 0.0))


# ---------------------------------------------------------------------- the shipped model
try:
    import torch
    import torchvision  # noqa: F401
except ImportError:  # the [vision] extra is not installed: the tests above still run
    torch = None
vision = pytest.mark.skipif(torch is None, reason="needs the [vision] extra (torch, torchvision)")


@pytest.fixture(scope="module")
def perception():
    if torch is None:
        pytest.skip("needs the [vision] extra")
    from clevr_poc.perception import Perception

    torch.set_num_threads(1)
    return Perception.from_pretrained(MODEL)


@pytest.fixture(scope="module")
def fixture_examples():
    from clevr_poc.dataset_reader import load_dataset
    from clevr_poc.perception.rendered_truth import rendered_image

    examples = [e for e in load_dataset(FIXTURE, split="test")]
    out = []
    for e in examples:
        scene_path = FIXTURE / "incomplete" / "scenes" / "test" / f"CLEVR_{e.image_index:06d}.json"
        out.append((e, rendered_image(scene_path, e.image_path)))
    return out


@vision
def test_shipped_model_finds_the_objects_of_a_fixture_image(perception, fixture_examples):
    from clevr_poc.scene import Scene

    for example, truth in fixture_examples:
        scene = perception(example.image_path, truth.camera)
        assert isinstance(scene, Scene)
        assert len(scene.objects) == len(truth.objects) == example.environment.num_objects - 1
        for obj in scene.objects:
            probabilities = obj.probabilities
            assert set(probabilities) == set(domain.ATTRIBUTES)
            assert sum(probabilities["color"].values()) == pytest.approx(1.0, abs=1e-4)
            assert obj.color == max(probabilities["color"], key=probabilities["color"].get)
            # resting height = size radius, cubes included (the official renderer never shrinks cubes)
            assert obj.coords_3d[2] == domain.SIZE_RADIUS[obj.size]
        facts = scene.to_asp_facts()
        assert facts.count("hasProperty(") == 4 * len(scene.objects) and facts.count("at(") == len(scene.objects)
        decoded = perception(example.image_path, truth.camera, environment=example.environment)
        assert len(decoded.objects) == example.environment.num_objects - 1
        assert decoded.perception.decoding in ("optimal", "interrupted")


@vision
def test_perception_rejects_bad_inputs(perception, fixture_examples):
    _, truth = fixture_examples[0]
    with pytest.raises(FormatError, match="made for 320x240 images but the image is 100x100"):
        perception(np.zeros((100, 100, 3), dtype=np.uint8), truth.camera)   # a crop, not a resize
    with pytest.raises(FormatError, match="image sides must be 64-2048"):
        perception(np.zeros((20, 30, 3), dtype=np.uint8))
    with pytest.raises(FormatError, match="unknown camera preset"):
        perception(np.zeros((240, 320, 3), dtype=np.uint8), "fisheye")
    with pytest.raises(FormatError, match="file path, a PIL image or a numpy array"):
        perception(42, truth.camera)
    with pytest.raises(FormatError, match="not found"):
        perception(FIXTURE / "missing.png", truth.camera)
    with pytest.raises(FormatError, match="camera"):
        perception(np.zeros((240, 320, 3), dtype=np.uint8), 42)
    with pytest.raises(FormatError, match="model file not found"):
        type(perception).from_pretrained(FIXTURE)
    not_a_model = FIXTURE / "incomplete" / "scenes" / "test"
    with pytest.raises(FormatError):
        type(perception).from_pretrained(next(not_a_model.glob("*.json")))


@vision
def test_evaluate_command_on_the_fixture(capsys):
    import json

    from clevr_poc.commands.perception_command import main

    assert main(["evaluate", "--dataset", str(FIXTURE), "--checkpoint", str(MODEL), "--split", "test", "--json",
                 "--no-progress", "--threads", "1"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["images"] == 2 and report["answers_gold_scene"] == 1.0
    assert report["argmax"]["detection"]["recall"] >= 0.5
    assert set(report["gain"]) >= {"scene_exact", "answers", "region"}
    # both fixture questions are answered on the MAP scene: nothing to search, the same accuracy either way
    assert report["presupposition"] == {"k": 16, "searched": 0, "answered": 0,
                                        "answers_map": report["constraints"]["answers"]}


@vision
@pytest.mark.parametrize("argv, message", [
    (["evaluate", "--dataset", "/nonexistent/data", "--checkpoint", str(MODEL)], "not found"),
    (["evaluate", "--dataset", str(FIXTURE), "--checkpoint", "/nonexistent/model.pt"], "model file not found"),
    (["evaluate", "--dataset", str(FIXTURE), "--checkpoint", str(MODEL), "--split", "val"], "split"),
    (["train", "--dataset", str(FIXTURE), "--out", "OUT", "--kinds", "partial"], "unknown scene kind"),
])
def test_cli_bad_inputs_give_one_line_errors(argv, message, capsys, tmp_path):
    from clevr_poc.commands.perception_command import main

    argv = [str(tmp_path / "out") if a == "OUT" else a for a in argv]
    assert main(argv) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and "\n" not in err and message in err


@vision
def test_training_resumes_exactly_after_an_interruption(tmp_path, capsys):
    from clevr_poc.perception import Perception
    from clevr_poc.commands.perception_command import main

    def run(out, *extra):
        return main(["train", "--dataset", str(FIXTURE), "--out", str(out), "--split", "test", "--kinds",
                     "incomplete", "--no-progress", "--seed", "3", "--detector-batch", "1", "--attribute-batch", "8",
                     "--threads", "1", "--detector-steps", "1", "--attribute-steps", "2", *extra])

    assert run(tmp_path / "straight", "--part", "attributes") == 0
    assert run(tmp_path / "resumed", "--part", "attributes", "--stop-after", "1") == 0
    assert "run the same command to go on" in capsys.readouterr().out
    assert torch.load(tmp_path / "resumed" / "attributes.pt", weights_only=True)["step"] == 1
    assert run(tmp_path / "resumed", "--part", "attributes") == 0
    assert "resuming at step 1 / 2" in capsys.readouterr().err
    straight = torch.load(tmp_path / "straight" / "attributes.pt", weights_only=True)
    resumed = torch.load(tmp_path / "resumed" / "attributes.pt", weights_only=True)
    assert resumed["step"] == 2 and not (tmp_path / "resumed" / "perception.pt").exists()
    for name, tensor in straight["model"].items():
        assert torch.equal(tensor, resumed["model"][name]), name
    # other settings in the same folder: refused rather than mixed
    assert main(["train", "--dataset", str(FIXTURE), "--out", str(tmp_path / "resumed"), "--split", "test",
                 "--kinds", "incomplete", "--no-progress", "--part", "attributes", "--attribute-steps", "5"]) == 1
    assert "other settings" in capsys.readouterr().err
    assert run(tmp_path / "resumed", "--part", "detector") == 0
    assert "model written to" in capsys.readouterr().out
    model = Perception.from_pretrained(tmp_path / "resumed")
    assert model.metadata["train_config"]["seed"] == 3 and model.metadata["images"] == 2


@vision
def test_training_data_pools_datasets_and_splits(tmp_path):
    import shutil

    from clevr_poc.perception.models import ModelConfig
    from clevr_poc.perception.perception_training import TrainingData

    copy = tmp_path / "copy"
    shutil.copytree(FIXTURE, copy)
    one = TrainingData.load(FIXTURE, "test", ModelConfig(), kinds=("incomplete",))
    pooled = TrainingData.load([FIXTURE, copy], ["train", "test"], ModelConfig(), kinds=("incomplete",))
    assert len(one.records) == 2 and len(pooled.records) == 4   # no train split: skipped, not an error
    assert len(pooled.images) == 4 and pooled.images[3].shape == one.images[1].shape == (3, 240, 320)
    assert pooled.contexts.shape == (4, 3, 30, 40)
    with pytest.raises(FormatError, match="dataset folder not found"):
        TrainingData.load([FIXTURE, tmp_path / "missing"], "test", ModelConfig(), kinds=("incomplete",))
    with pytest.raises(FormatError, match="no scenes for split 'train'"):
        TrainingData.load(FIXTURE, "train", ModelConfig(), kinds=("incomplete",))


@vision
def test_evaluate_scores_a_scene_with_too_many_objects_as_wrong():
    """An argmax scene with as many objects as the environment (none left for the hidden one) cannot be
    answered: it counts as a wrong answer instead of ending the evaluation."""
    from clevr_poc.perception import Perception
    from clevr_poc.perception.evaluation import evaluate

    perception = Perception.from_pretrained(MODEL)
    perception.score_threshold = perception.candidate_threshold = 0.0   # every box the detector proposes,
    perception.detector.roi_heads.score_thresh = 0.0                      # however unlikely,
    perception.detector.roi_heads.nms_thresh = 1.0                        # duplicates included
    report = evaluate(perception, FIXTURE, split="test", decode=False, progress=False)
    assert report["images"] == 2 and report["argmax"]["answers"] == 0.0
    assert report["argmax"]["detection"]["false_positives"] >= 2


# ---------------------------------------------------------------------- cameras, image sizes, devices
def test_camera_sources_pick_the_scene_camera_or_a_preset():
    from clevr_poc.perception.cameras import camera_spec, fit_camera, resolve_camera
    from clevr_poc.rendering.geometry import official_camera
    from clevr_poc.scene import Scene
    from clevr_poc.scene_metadata import ImageInfo

    ours = default_camera(320, 240)
    rendered = Scene((), {}, image=ImageInfo(ours))
    released = Scene((), {})                                   # the official release's scenes: no camera
    assert resolve_camera(320, 240, scene=rendered) == ours
    official = resolve_camera(320, 320, scene=released)
    assert official == official_camera() and official.K[0, 0] == pytest.approx(210.0)
    assert official.K[0, 2] == official.K[1, 2] == 160.0
    wide = resolve_camera(480, 320, scene=released)            # the preset is built at the image's size
    assert wide.K[0, 0] == pytest.approx(21 / 32 * 480) and (wide.K[0, 2], wide.K[1, 2]) == (240.0, 160.0)
    assert resolve_camera(320, 240, scene=rendered, camera_source="official") == official_camera(320, 240)
    assert camera_spec(released, "auto") == "official" and camera_spec(rendered, "ours") == "ours"
    with pytest.raises(FormatError, match="the scene has no camera"):
        camera_spec(released, "from-scene")
    with pytest.raises(FormatError, match="unknown camera source"):
        camera_spec(rendered, "scene")
    # a camera of another size is scaled to the image (a resize of the same aspect ratio) ...
    big = fit_camera(ours, 640, 480)
    assert big.K[0, 0] == pytest.approx(2 * ours.K[0, 0]) and big.K[1, 2] == pytest.approx(240.0)
    u, v, _ = project((1.0, -2.0, 0.5), ours)
    assert project((1.0, -2.0, 0.5), big)[:2] == pytest.approx((2 * u, 2 * v))
    # ... but a camera of another aspect ratio is refused rather than distorted
    with pytest.raises(FormatError, match="another aspect ratio"):
        fit_camera(ours, 320, 320)


def test_the_detector_reads_images_of_any_size_without_resizing():
    if torch is None:
        pytest.skip("needs the [vision] extra")
    from clevr_poc.perception.models import ModelConfig, attribute_inputs, build_detector, context_images

    detector = build_detector(ModelConfig()).eval()
    images = [torch.rand(3, 320, 480), torch.rand(3, 240, 320)]
    batch, _ = detector.transform(images)
    assert batch.image_sizes == [(320, 480), (240, 320)]            # torchvision would scale to 240 px high
    # attribute inputs of boxes in images of two sizes equal those computed image by image
    config = ModelConfig()
    boxes = torch.tensor([[10.0, 20.0, 60.0, 90.0], [100.0, 50.0, 140.0, 100.0], [5.0, 5.0, 30.0, 40.0]])
    index = torch.tensor([0, 1, 0])
    contexts = torch.cat([context_images(image[None], config) for image in images])
    crops, masks = attribute_inputs(images, contexts, index, boxes, config)
    for k in range(3):
        image = images[int(index[k])][None]
        one_crop, one_mask = attribute_inputs(image, context_images(image, config), torch.zeros(1, dtype=torch.long),
                                              boxes[k:k + 1], config)
        assert torch.allclose(crops[k], one_crop[0]) and torch.equal(masks[k], one_mask[0])
    assert masks[0, 3].sum() > 0 and masks.shape == (3, 4, 30, 40)


def test_device_auto_is_cpu_here_and_cuda_without_cuda_is_a_typed_error():
    if torch is None:
        pytest.skip("needs the [vision] extra")
    from clevr_poc.perception.devices import DeviceError, resolve_device

    assert resolve_device("cpu") == torch.device("cpu")
    assert resolve_device("auto") == torch.device("cuda" if torch.cuda.is_available() else "cpu")
    for bad in ("tpu", "", 3):
        with pytest.raises(DeviceError, match="--device"):
            resolve_device(bad)
    if not torch.cuda.is_available():
        with pytest.raises(DeviceError, match="CUDA is not available"):
            resolve_device("cuda")


@vision
def test_cli_device_cuda_without_cuda_is_one_line(capsys):
    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    from clevr_poc.commands.perception_command import main

    assert main(["evaluate", "--dataset", str(FIXTURE), "--checkpoint", str(MODEL), "--device", "cuda",
                 "--no-progress"]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: --device cuda: CUDA is not available") and "\n" not in err


@vision
def test_fine_tuning_starts_from_a_model_on_the_chosen_device(tmp_path, capsys):
    from clevr_poc.perception import Perception
    from clevr_poc.commands.perception_command import main

    assert main(["train", "--dataset", str(FIXTURE), "--out", str(tmp_path), "--split", "test", "--kinds",
                 "incomplete", "--no-progress", "--detector-batch", "1", "--attribute-batch", "8", "--threads", "1",
                 "--detector-steps", "1", "--attribute-steps", "1", "--init", str(MODEL), "--device", "cpu"]) == 0
    assert "starting from the weights of" in capsys.readouterr().err
    tuned = Perception.from_pretrained(tmp_path, device="cpu")
    shipped = Perception.from_pretrained(MODEL)
    assert tuned.metadata["device"] == "cpu" and tuned.metadata["train_config"]["init"] == str(MODEL)
    # one small step away from the shipped weights, not a fresh initialisation
    a = dict(tuned.attributes.named_parameters())["heads.color.weight"]
    b = dict(shipped.attributes.named_parameters())["heads.color.weight"]
    assert 0 < float((a - b).detach().abs().max()) < 0.05


def test_position_matching_and_photometric_augmentation():
    from clevr_poc.perception.evaluation import match_by_position

    # greedy by score, nearest free truth object within 0.5 world units
    pairs = match_by_position([(0.0, 0.0), (0.1, 0.0), (3.0, 3.0)], [0.9, 0.8, 0.7], [(0.05, 0.0), (3.6, 3.0)])
    assert pairs == [(0, 0)]
    assert match_by_position([(3.0, 3.0)], [0.5], [(3.4, 3.2)]) == [(0, 0)]
    if torch is None:
        return
    from clevr_poc.perception.perception_training import photometric

    image = torch.tensor([0.0, 0.25, 0.5, 1.0])
    assert photometric(image, 0.0, 0.0) is image
    assert torch.allclose(photometric(image, 1.0, 0.0), torch.tensor([0.0, 0.5, 1.0, 1.0]))   # one stop brighter
    assert torch.allclose(photometric(image, 0.0, 1.0), image ** 2)                           # gamma 2


def test_visibility_bins_have_sharp_edges():
    from clevr_poc.perception.evaluation import visibility_bin

    assert [visibility_bin(p) for p in (0, 149, 150, 399, 400, 999, 1000, 10 ** 6)] == [
        "<150 px", "<150 px", "150-400 px", "150-400 px", "400-1000 px", "400-1000 px", ">=1000 px", ">=1000 px"]


@vision
def test_evaluate_breaks_answers_down_by_family_and_occlusion():
    from clevr_poc.perception import Perception
    from clevr_poc.perception.evaluation import evaluate

    report = evaluate(Perception.from_pretrained(MODEL, device="cpu"), FIXTURE, split="test", progress=False)
    parts = report["breakdowns"]
    assert parts["decoding"] == "constraints"
    assert sum(v["n"] for v in parts["answers_by_family"].values()) == report["constraints"]["images"] == 2
    assert sum(v["n"] for v in parts["answers_by_occlusion"].values()) == 2
    detection = report["constraints"]["detection"]
    # every ground-truth object falls in one visibility bin; recall per bin adds up to the overall recall
    assert sum(v["n"] for v in parts["recall_by_visibility"].values()) == detection["true_positives"] + detection["false_negatives"]
    found = sum(round(v["n"] * v["accuracy"]) for v in parts["recall_by_visibility"].values())
    assert found == detection["true_positives"]


@vision
def test_detector_batch_puts_boxes_and_labels_on_the_training_device():
    # a CUDA run on a lent GPU failed: labels were made on the CPU beside boxes on the GPU (torchvision's
    # RoIHeads indexes one with the other); "meta" stands in for any non-CPU device here
    import torch

    from clevr_poc.perception.models import ModelConfig
    from clevr_poc.perception.perception_training import TrainConfig, TrainingData, _detector_batch

    data = TrainingData.load(FIXTURE, "test", ModelConfig())
    images, targets = _detector_batch(data, [0], torch.Generator().manual_seed(0), device="meta",
                                      train=TrainConfig(exposure_jitter=0.5, gamma_jitter=0.3))
    assert images[0].device.type == "meta"
    assert targets[0]["boxes"].device.type == targets[0]["labels"].device.type == "meta"
    assert targets[0]["labels"].shape == (len(data.records[0].objects),)
