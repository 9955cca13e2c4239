"""Issue 27: perception's fast CPU paths (:mod:`clevr_poc.perception.fast_inference`: the detector's
backbone, FPN and RPN head, and the attribute network, as frozen TorchScript graphs with the batch norms
folded; anchors kept per image size) give the eager modules' outputs up to the last float bits, and
:class:`~clevr_poc.perception.Perception` never uses a stale copy."""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torchvision")

from clevr_poc.image_files import as_rgb_array  # noqa: E402
from clevr_poc.perception import Perception  # noqa: E402
from clevr_poc.perception.fast_inference import FastAttributes, FastDetector, _BackboneAndHead, frozen_graph  # noqa: E402
from clevr_poc.perception.models import attribute_inputs, context_images  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
IMAGES = Path(__file__).resolve().parent / "fixtures" / "perception" / "dataset" / "incomplete" / "images" / "test"
MODEL = ROOT / "models" / "perception"

pytestmark = pytest.mark.skipif(not (MODEL / "perception.pt").exists(), reason="shipped perception checkpoint missing")


@pytest.fixture(scope="module")
def perception():
    torch.set_num_threads(1)
    return Perception.from_pretrained(MODEL, device="cpu")


def _tensor(name: str) -> torch.Tensor:
    return torch.from_numpy(as_rgb_array(IMAGES / name)).permute(2, 0, 1).float().div_(255.0)


def _assert_same_detections(a: dict, b: dict) -> None:
    assert len(a["boxes"]) == len(b["boxes"])
    assert torch.equal(a["labels"], b["labels"])
    assert torch.allclose(a["boxes"], b["boxes"], atol=1e-3, rtol=0)
    assert torch.allclose(a["scores"], b["scores"], atol=1e-5, rtol=0)


def test_fast_path_gives_the_eager_detections(perception):
    fast = perception._fast_path()
    assert isinstance(fast, FastDetector) and fast.graph is not None
    with torch.no_grad():
        for name, count, first_box in (("CLEVR_test_000005.png", 4, (130.83, 123.32, 175.86, 177.26)),
                                       ("CLEVR_test_000006.png", 5, (77.67, 97.10, 99.38, 118.21))):
            image = _tensor(name)   # 320 x 240: the graph was traced at 320 x 320
            eager = perception.detector([image])[0]
            out = perception.detector_outputs([image])[0]
            _assert_same_detections(out, eager)
            assert len(out["boxes"]) == count
            assert np.allclose(out["boxes"][0].tolist(), first_box, atol=0.01)
            assert float(out["scores"][0]) > 0.9999
            # another size (anchors kept per size): 320 x 320, zero-padded at the bottom
            square = torch.zeros(3, 320, 320)
            square[:, :240] = image
            _assert_same_detections(fast([square])[0], perception.detector([square])[0])
    assert len(fast._anchors) == 2   # one entry per image size


def test_backbone_graph_matches_the_modules_within_1e5(perception):
    image = _tensor("CLEVR_test_000005.png")                                  # 320 x 240
    eager_batch = perception.detector.transform([image])[0]
    batch = perception._fast_path()._batch([image])
    assert batch.image_sizes == eager_batch.image_sizes == [(240, 320)]
    assert batch.tensors.shape == eager_batch.tensors.shape == (1, 3, 256, 320)   # padded to a multiple of 32
    module = _BackboneAndHead(perception.detector).eval()
    assert torch.equal((batch.tensors - module.mean) / module.std, eager_batch.tensors)  # padding normalises to 0
    graph = frozen_graph(module, (batch.tensors,))
    with torch.no_grad():
        features, objectness, deltas = graph(batch.tensors)
        eager = perception.detector.backbone(eager_batch.tensors)
        eager_objectness, eager_deltas = perception.detector.rpn.head(list(eager.values()))
    assert list(features) == ["0", "1", "2", "pool"]
    assert [tuple(f.shape) for f in features.values()] == [(1, 32, 64, 80), (1, 32, 32, 40), (1, 32, 16, 20),
                                                            (1, 32, 8, 10)]
    for key in eager:
        assert torch.allclose(features[key], eager[key], atol=1e-4, rtol=1e-5)
    for a, b in zip(objectness + deltas, eager_objectness + eager_deltas):
        assert torch.allclose(a, b, atol=1e-4, rtol=1e-5)


def test_changed_weights_rebuild_the_fast_path(perception):
    first = perception._fast_path()
    assert first.current(perception.detector)
    weight = perception.detector.backbone.stem[0][0].weight
    with torch.no_grad():
        weight.mul_(1.0)   # an in-place change (as an optimizer step): the frozen copy may be stale
    assert not first.current(perception.detector)
    second = perception._fast_path()
    assert second is not first and second.current(perception.detector)
    weight.data = weight.data.clone()   # new storage (as .to() or a swap of weights)
    assert not second.current(perception.detector)
    third = perception._fast_path()
    assert third is not second and third.current(perception.detector)
    perception.detector.train()
    try:
        assert perception._fast_path() is None   # training mode: the eager modules
    finally:
        perception.detector.eval()


def test_fast_path_pickles_as_its_detector_and_can_be_switched_off(perception):
    image = _tensor("CLEVR_test_000006.png")
    copy = pickle.loads(pickle.dumps(perception))   # worker processes receive perception pickled
    assert isinstance(copy._fast, FastDetector) and copy._fast.detector is copy.detector
    assert isinstance(copy._fast_attributes, FastAttributes) and copy._fast_attributes.net is copy.attributes
    with torch.no_grad():
        _assert_same_detections(copy.detector_outputs([image])[0], perception.detector_outputs([image])[0])
    eager = Perception(perception.detector, perception.attributes, perception.config, device="cpu",
                       fast_inference=False)
    assert eager._fast_path() is None and eager._fast_attribute_path() is None
    scene_fast = perception(IMAGES / "CLEVR_test_000006.png")
    scene_eager = eager(IMAGES / "CLEVR_test_000006.png")
    assert [(o.color, o.shape, o.size, o.material, o.region) for o in scene_fast.objects] == \
        [(o.color, o.shape, o.size, o.material, o.region) for o in scene_eager.objects]
    assert [o.bbox for o in scene_fast.objects] == [o.bbox for o in scene_eager.objects]
    for a, b in zip(scene_fast.objects, scene_eager.objects):
        for attribute, values in a.probabilities.items():
            assert np.allclose(list(values.values()), list(b.probabilities[attribute].values()), atol=2e-6)


def test_attribute_graph_gives_the_eager_logits(perception):
    image = _tensor("CLEVR_test_000005.png")
    with torch.no_grad():
        boxes = perception.detector([image])[0]["boxes"]
        images = image[None]
        crops, contexts = attribute_inputs(images, context_images(images, perception.config),
                                           torch.zeros(len(boxes), dtype=torch.long), boxes, perception.config)
        geometry = torch.rand(len(boxes), 9, generator=torch.Generator().manual_seed(0))
        fast = perception._fast_attribute_path()
        assert fast.graph is not None and fast.current(perception.attributes)
        out, eager = fast(crops, contexts, geometry), perception.attributes(crops, contexts, geometry)
    assert sorted(out) == ["color", "material", "offset", "shape", "size"]
    assert out["color"].shape == (4, 8) and out["offset"].shape == (4, 2)
    for key in eager:
        assert torch.allclose(out[key], eager[key], atol=1e-4, rtol=1e-5)
    assert [int(x) for x in out["shape"].argmax(1)] == [int(x) for x in eager["shape"].argmax(1)]
    with torch.no_grad():
        perception.attributes.offset.bias.add_(0.0)   # in place: the copy may be stale
    assert not fast.current(perception.attributes)
    assert perception._fast_attribute_path() is not fast


def test_rpn_keeps_200_proposals_per_level_before_nms_at_inference(perception):
    from clevr_poc.perception.models import RPN_PRE_NMS_TEST, build_detector

    assert RPN_PRE_NMS_TEST == 200
    assert build_detector().rpn._pre_nms_top_n == {"training": 300, "testing": 200}
    assert build_detector().rpn._post_nms_top_n == {"training": 150, "testing": 100}
    assert perception.detector.rpn._pre_nms_top_n["testing"] == 200
