"""Issue 27's CPU savings in perception keep its output: the constant symbols of constraint-aware
decoding made once (:func:`clevr_poc.perception.decoding.decoding_symbols`) and the last image's
detections kept (:meth:`clevr_poc.perception.Perception._detect`), so that the presupposition search's
re-decoding of an image does not rerun the networks."""

from __future__ import annotations

import math
from pathlib import Path

import clingo
import numpy as np
import pytest

from clevr_poc import domain
from clevr_poc.perception.decoding import ObjectCandidate, decoding_symbols
from clevr_poc.scene import compute_relationships

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = Path(__file__).resolve().parent / "fixtures" / "perception" / "dataset"
MODEL = ROOT / "models" / "perception"


def _candidate(score: float, hot: dict[str, int], region: int, position: tuple[float, float]) -> ObjectCandidate:
    probabilities = {}
    for a in domain.ATTRIBUTES:
        n = len(domain.DOMAINS[a])
        probabilities[a] = tuple(0.7 if i == hot[a] else 0.3 / (n - 1) for i in range(n))
    regions = tuple(0.8 if r == region else 0.2 / (len(domain.REGIONS) - 1) for r in domain.REGIONS)
    return ObjectCandidate(score, probabilities, regions, position)


def _afresh(candidates, num_objects: int, relations: bool) -> list[clingo.Symbol]:
    """The facts with every symbol built anew (the code before issue 27)."""
    f, n = clingo.Function, clingo.Number
    cost = lambda p: int(round(-1000 * math.log(min(max(float(p), 1e-6), 1 - 1e-6))))  # noqa: E731
    k = len(candidates)
    keep = min(k, num_objects - 1)
    out = [f("keep_count", [n(keep)])] + [f("detection", [n(d)]) for d in range(k)]
    out += [f("unseen", [n(u)]) for u in range(k, k + num_objects - keep)]
    for d, c in enumerate(candidates):
        out += [f("keep_cost", [n(d), n(cost(c.score))]), f("drop_cost", [n(d), n(cost(1 - c.score))])]
        for a in domain.ATTRIBUTES:
            out += [f("cost", [n(d), f(a), f(v), n(cost(p))]) for v, p in zip(domain.DOMAINS[a], c.probabilities[a])]
        out += [f("region_cost", [n(d), n(r), n(cost(p))]) for r, p in zip(domain.REGIONS, c.region_probabilities)]
    if relations and k > 1:
        rel = compute_relationships([c.position for c in candidates])
        for name in domain.RELATIONS:
            for i, row in enumerate(rel[name]):
                out += [f("observed", [f(name), n(i), n(j)]) for j in row]
    return out


def test_decoding_symbols_are_those_built_afresh():
    candidates = [_candidate(0.95, {"color": 2, "shape": 1, "size": 0, "material": 1}, 0, (-1.0, 2.0)),
                  _candidate(0.40, {"color": 0, "shape": 0, "size": 1, "material": 0}, 3, (2.5, -0.5)),
                  _candidate(0.25, {"color": 7, "shape": 2, "size": 1, "material": 1}, 5, (0.0, 0.0))]
    for relations in (True, False):
        for num_objects in (3, 4, 6):
            assert decoding_symbols(candidates, num_objects, relations=relations) == \
                _afresh(candidates, num_objects, relations)
    facts = [str(s) for s in decoding_symbols(candidates, 4)]
    assert facts[:5] == ["keep_count(3)", "detection(0)", "detection(1)", "detection(2)", "unseen(3)"]
    assert "keep_cost(0,51)" in facts and "drop_cost(0,2996)" in facts          # -1000 ln 0.95, -1000 ln 0.05
    assert f"cost(0,color,{domain.DOMAINS['color'][2]},357)" in facts          # -1000 ln 0.7
    assert sum(s.startswith("observed(") for s in facts) == 12                  # 4 relations x 3 ordered pairs


try:
    import torch
except ImportError:  # pragma: no cover
    torch = None


@pytest.mark.skipif(torch is None or not MODEL.exists(), reason="needs the [vision] extra and the shipped model")
def test_the_last_images_detections_are_reused_and_equal_a_rerun():
    from clevr_poc.dataset_reader import load_dataset
    from clevr_poc.perception import Perception
    from clevr_poc.perception.rendered_truth import rendered_image

    torch.set_num_threads(1)
    perception = Perception.from_pretrained(MODEL)
    detector, calls = perception.detector, []
    perception.detector = lambda images: (calls.append(len(images)), detector(images))[1]
    examples = list(load_dataset(FIXTURE, split="test"))[:2]
    cameras = [rendered_image(FIXTURE / "incomplete" / "scenes" / "test" / f"CLEVR_{e.image_index:06d}.json",
                              e.image_path).camera for e in examples]
    first, env = examples[0], examples[0].environment
    scene = perception(first.image_path, cameras[0], environment=env)
    assert calls == [1]
    distribution = perception.scene_distribution(first.image_path, cameras[0], env, k=4)
    assert calls == [1]                                     # the same image and camera: no rerun
    assert distribution.scenes[0].objects == scene.objects  # the MAP scene leads the ranked ones
    array, cam = perception.camera_for(first.image_path, cameras[0])
    assert perception.detect(array.copy(), cameras[0]) == perception._run_networks(array, cam)
    assert calls == [1, 1]                                  # a copy of the array is the same image
    changed = array.copy()
    changed[0, 0, 0] ^= 1                                   # one pixel differs: the networks run again
    perception.detect(changed, cameras[0])
    assert calls == [1, 1, 1]
    perception(examples[1].image_path, cameras[1])
    assert calls == [1, 1, 1, 1]
    assert np.array_equal(perception._last_detections[0], perception.camera_for(examples[1].image_path,
                                                                               cameras[1])[0])


def test_facts_marked_ascii_skip_the_check_and_later_facts_are_still_checked():
    from clevr_poc.errors import UnsafeProgramError
    from clevr_poc.solver.programs import Program

    trusted = [clingo.Function("keep_count", [clingo.Number(2)]), clingo.Function("detection", [clingo.Number(0)])]
    odd = clingo.Function("cost", [clingo.String("\u00e9")])
    program = Program().with_facts(trusted, ascii=True)
    assert program.ascii_facts == 2 and program.facts == tuple(trusted)
    program.check_ascii()
    later = program.with_facts([odd])                       # unmarked: checked
    assert later.ascii_facts == 2
    with pytest.raises(UnsafeProgramError, match="non-ASCII"):
        later.check_ascii()
    behind = Program().with_facts([odd]).with_facts(trusted, ascii=True)   # marked after an unmarked one
    assert behind.ascii_facts == 0
    with pytest.raises(UnsafeProgramError, match="non-ASCII"):
        behind.check_ascii()
    assert Program().with_facts(trusted).ascii_facts == 0   # the default checks everything


def test_decoded_scene_reads_the_kept_objects_of_an_answer_set():
    from clevr_poc.perception.decoding import DecodingStatus, decoded_scene

    f, n = clingo.Function, clingo.Number
    symbols = [f("hasProperty", [n(3), f("color"), f("red")]), f("keep", [n(2)]), f("at", [n(2), n(4)]),
               f("hasProperty", [n(0), f("color"), f("blue")]), f("keep", [n(0)]), f("at", [n(0), n(1)]),
               f("hasProperty", [n(2), f("shape"), f("cube")]), f("at", [n(3), n(7)]),
               f("hasProperty", [n(0), f("shape"), f("sphere")]), f("hasProperty", [n(2), f("color"), f("gray")])]
    scene = decoded_scene(symbols, 1234, "optimal", True)
    assert scene.keep == (0, 2)
    assert scene.values == ({"color": "blue", "shape": "sphere"}, {"shape": "cube", "color": "gray"})
    assert scene.regions == (1, 4)
    assert (scene.cost, scene.status, scene.relations_used) == (1234, DecodingStatus.OPTIMAL, True)
