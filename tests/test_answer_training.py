"""Learning from answers alone (issue #24, item 4): NeurASP's semantic loss and its gradient on hand-made
scenes whose probabilities are computed by hand, and a few answer-only steps on the fixture renders."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torchvision")

from clevr_poc import domain  # noqa: E402
from clevr_poc.perception import box_geometry as geo  # noqa: E402
from clevr_poc.perception.answer_loss import (region_log_probabilities, scene_log_probabilities,  # noqa: E402
                                              semantic_loss)
from clevr_poc.perception.decoding import DecodedScene, DecodingStatus  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = Path(__file__).resolve().parent / "fixtures" / "perception" / "dataset"
MODEL = ROOT / "models" / "perception"
COLORS = domain.DOMAINS["color"]


def _one_detection():
    """One detection (score 0.8): colour probabilities 4/12, 2/12 and 1/12 for the other six (logits are
    logs of 4, 2, 1, ...); shape, size, material uniform (1/4, 1/3, 1/2); regions 0.7, 0.1, 0.1, 0.1."""
    color = torch.tensor([[math.log(4), math.log(2)] + [0.0] * 6], requires_grad=True)
    logits = {"color": color, **{a: torch.zeros(1, len(domain.DOMAINS[a])) for a in ("shape", "size", "material")}}
    log_probs = {a: torch.log_softmax(v, dim=1) for a, v in logits.items()}
    regions = torch.log(torch.tensor([[0.7, 0.1, 0.1, 0.1]]))
    return color, log_probs, regions, torch.tensor([0.8])


def _scene(color: str | None) -> DecodedScene:
    """Detection 0 kept with ``color`` (cube, small, rubber, region 0), or dropped (None)."""
    if color is None:
        return DecodedScene((), (), (), 0, DecodingStatus.OPTIMAL)
    values = {"color": color, "shape": "cube", "size": "small", "material": "rubber"}
    return DecodedScene((0,), (values,), (0,), 0, DecodingStatus.OPTIMAL)


def test_scene_log_probability_is_the_product_of_the_chosen_values():
    _, log_probs, regions, scores = _one_detection()
    scenes = [_scene(COLORS[0]), _scene(COLORS[1]), _scene(COLORS[2]), _scene(None)]
    got = scene_log_probabilities(log_probs, regions, scores, scenes).exp().tolist()
    rest = 0.8 * 0.7 * (1 / 4) * (1 / 3) * (1 / 2)          # score, region, shape, size, material
    assert got == pytest.approx([rest * 4 / 12, rest * 2 / 12, rest / 12, 0.2], rel=1e-6)


def test_neurasp_loss_and_gradient_by_hand():
    color, log_probs, regions, scores = _one_detection()
    scenes = [_scene(COLORS[0]), _scene(COLORS[1])]     # p(s1) : p(s2) = 2 : 1
    p = [4 / 12, 2 / 12] + [1 / 12] * 6
    rest = 0.8 * 0.7 * (1 / 4) * (1 / 3) * (1 / 2)
    # only s1 gives the gold answer: L = -log p(s1); dL/dz = p - onehot(colour of s1)
    loss = semantic_loss(scene_log_probabilities(log_probs, regions, scores, scenes), [True, False])
    assert float(loss.detach()) == pytest.approx(-math.log(rest * 4 / 12), rel=1e-6)
    (grad,) = torch.autograd.grad(loss, color, retain_graph=True)
    assert grad[0].tolist() == pytest.approx([p[0] - 1] + p[1:], abs=1e-6)
    # both give it: L = -log(p(s1) + p(s2)); dL/dz = p - (2/3 onehot(s1) + 1/3 onehot(s2))
    loss = semantic_loss(scene_log_probabilities(log_probs, regions, scores, scenes), [True, True])
    assert float(loss.detach()) == pytest.approx(-math.log(rest * 6 / 12), rel=1e-6)
    (grad,) = torch.autograd.grad(loss, color)
    assert grad[0].tolist() == pytest.approx([-1 / 3, -1 / 6] + [1 / 12] * 6, abs=1e-6)


def test_normalised_loss_and_gradient_by_hand():
    color, log_probs, regions, scores = _one_detection()
    scenes = [_scene(COLORS[0]), _scene(COLORS[1])]
    # normalised over the two scenes: L = -log(2/3); dL/dz = -(e1 - p) + (2/3 e1 + 1/3 e2 - p) = (-1/3, 1/3, 0, ...)
    loss = semantic_loss(scene_log_probabilities(log_probs, regions, scores, scenes), [True, False], normalise=True)
    assert float(loss.detach()) == pytest.approx(math.log(1.5), rel=1e-6)
    (grad,) = torch.autograd.grad(loss, color, retain_graph=True)
    assert grad[0].tolist() == pytest.approx([-1 / 3, 1 / 3] + [0.0] * 6, abs=1e-6)
    # every scene matches: nothing to learn once normalised
    loss = semantic_loss(scene_log_probabilities(log_probs, regions, scores, scenes), [True, True], normalise=True)
    assert float(loss.detach()) == pytest.approx(0.0, abs=1e-7)
    # no scene matches: the question is skipped
    assert semantic_loss(scene_log_probabilities(log_probs, regions, scores, scenes), [False, False]) is None


def test_a_dropped_detection_weighs_one_minus_its_score_and_carries_no_gradient():
    color, log_probs, regions, scores = _one_detection()
    loss = semantic_loss(scene_log_probabilities(log_probs, regions, scores, [_scene(None), _scene(COLORS[0])]),
                         [True, False])
    assert float(loss.detach()) == pytest.approx(-math.log(0.2), rel=1e-6)
    (grad,) = torch.autograd.grad(loss, color)
    assert grad.abs().max().item() == 0.0


def test_region_log_probabilities_match_the_numpy_ones():
    sigma = 0.3
    centres = torch.tensor([[geo.REGION_SPLIT_X, 0.0], [geo.REGION_SPLIT_X + sigma, -2 * sigma], [-3.0, 2.0]],
                           dtype=torch.float64, requires_grad=True)
    got = region_log_probabilities(centres, sigma)
    assert got[0].exp().tolist() == pytest.approx([0.25] * 4, abs=1e-12)       # on both borders
    for row, (x, y) in zip(got, centres.tolist()):
        assert row.exp().tolist() == pytest.approx(list(geo.region_probabilities(x, y, sigma)), abs=1e-12)
    # one sigma right of the left/right border: P(left) = Phi(-1) = 0.158655...
    phi = 0.5 * (1 + math.erf(-1 / math.sqrt(2)))
    assert float((got[1, 0].exp() + got[1, 2].exp()).detach()) == pytest.approx(phi, abs=1e-12)
    # d log P(region 3) / dx at the border = phi(0) / (sigma * Phi(0)) = 2 / (sigma sqrt(2 pi))
    (grad,) = torch.autograd.grad(got[0, 3], centres)
    assert float(grad[0, 0]) == pytest.approx(2 / (sigma * math.sqrt(2 * math.pi)), rel=1e-9)
    with pytest.raises(ValueError):
        region_log_probabilities(centres, 0.0)


def test_config_bounds_are_typed_errors():
    from clevr_poc.errors import FormatError
    from clevr_poc.perception.answer_training import AnswerTrainConfig

    for bad in ({"k": 0}, {"k": 257}, {"k": 32, "max_models": 16}, {"min_ratio": 0.0}, {"batch": 0}):
        with pytest.raises(FormatError):
            AnswerTrainConfig(**bad)


def _total_loss(perception, examples, config):
    from clevr_poc.perception.answer_training import network_outputs, question_loss
    from clevr_poc.reasoning import Reasoner

    reasoner = Reasoner()
    with torch.no_grad():
        outputs = network_outputs(perception, examples)
        results = [question_loss(perception, e, o, reasoner, config) for e, o in zip(examples, outputs)]
    return [r[0] for r in results], [r[1] for r in results]


def test_answer_only_steps_on_the_fixture_lower_the_loss_and_leave_the_detector(tmp_path):
    from clevr_poc.perception import Perception
    from clevr_poc.perception.answer_training import (AnswerTrainConfig, QuestionStatus, load_answer_examples,
                                                      train_answers)

    torch.set_num_threads(1)
    # the shipped network already answers the fixture's questions with a loss near 0: start from a copy whose
    # attribute heads are made unsure (logits x 0.2), so that the answer-only steps have something to learn
    state = torch.load(MODEL / "perception.pt", map_location="cpu", weights_only=True)
    for attribute in domain.ATTRIBUTES:
        for part in ("weight", "bias"):
            state["attributes"][f"heads.{attribute}.{part}"] = state["attributes"][f"heads.{attribute}.{part}"] * 0.2
    start = tmp_path / "unsure.pt"
    torch.save(state, start)
    shipped = Perception.from_pretrained(start, device="cpu")
    examples = load_answer_examples(shipped, FIXTURE, "test")
    assert [e.image_index for e in examples] == [5, 6] and all(len(e.boxes) >= 3 for e in examples)
    config = AnswerTrainConfig(steps=4, batch=2, lr=1e-3, warmup_steps=0, k=8, checkpoint_every=2)
    before, outcomes = _total_loss(shipped, examples, config)
    assert all(o.status is QuestionStatus.MATCHED and o.scenes >= 1 for o in outcomes)
    result = train_answers(start, FIXTURE, tmp_path / "run", split="test", config=config, progress=False, log=lambda m: None,
                           examples=examples)
    assert result.step == 4 and result.counts["matched"] == 8 and result.questions == 2
    assert len(result.losses) == 2 and all(math.isfinite(x) and x >= 0 for x in result.losses)
    tuned = Perception.from_pretrained(result.model, device="cpu")
    after, _ = _total_loss(tuned, examples, config)
    assert all(math.isfinite(float(x)) for x in before + after)
    assert sum(float(x) for x in after) < sum(float(x) for x in before)
    for (name, a), b in zip(tuned.detector.state_dict().items(), shipped.detector.state_dict().values()):
        assert torch.equal(a, b), name
    moved = tuned.attributes.state_dict()["heads.color.weight"] - shipped.attributes.state_dict()["heads.color.weight"]
    assert float(moved.abs().max()) > 0
    assert tuned.metadata["answer_training"]["counts"]["matched"] == 8


def test_cli_trains_from_answers_and_refuses_other_settings_on_resume(tmp_path, capsys):
    from clevr_poc.commands.perception_command import main

    args = ["train-answers", "--dataset", str(FIXTURE), "--split", "test", "--init", str(MODEL), "--out",
            str(tmp_path), "--steps", "2", "--batch", "1", "--k", "4", "--no-progress", "--device", "cpu"]
    assert main(args + ["--stop-after", "1"]) == 0
    assert "stopped at step 1 / 2" in capsys.readouterr().out
    assert main(args) == 0
    assert "resuming at step 1 / 2" in capsys.readouterr().err
    assert (tmp_path / "perception.pt").is_file()
    assert main(args[:-2] + ["--k", "5", "--device", "cpu"]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and "other settings" in err and "\n" not in err


def test_cli_bad_dataset_leaves_no_output_folder(tmp_path, capsys):
    from clevr_poc.commands.perception_command import main

    out = tmp_path / "out"
    assert main(["train-answers", "--dataset", str(tmp_path / "missing"), "--out", str(out), "--init", str(MODEL),
                 "--no-progress", "--device", "cpu"]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and "dataset folder not found" in err and "\n" not in err
    assert not out.exists()
