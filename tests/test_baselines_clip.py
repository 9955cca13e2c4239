"""CLIP baselines (paper §4.1.1, eq. 1): loss values by hand, offline encoders with random weights, the
feature cache, typed errors, and tiny end-to-end train + evaluate runs of every variant (real encoders,
real clingo-labelled data, no network)."""

from __future__ import annotations

import json
import math
import socket
from dataclasses import replace

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("open_clip")
pytest.importorskip("transformers")
Image = pytest.importorskip("PIL.Image")

from clevr_poc import domain  # noqa: E402
from clevr_poc.baselines.clip import (  # noqa: E402
    CLIPBaseline, EncoderSpec, FeatureExtractor, FrozenEncoders, MissingImageError, PretrainedModelError, TrainConfig,
    constraint_sentences, decode, load_clip, load_gpt2, train, weighted_bce,
)
from clevr_poc.commands import clip_command as clip_cli  # noqa: E402
from clevr_poc.baselines.clip.encoders import _clip_cached  # noqa: E402
from clevr_poc.commands.main import main as clevr_main  # noqa: E402
from clevr_poc.dataset_reader import load_dataset  # noqa: E402
from clevr_poc.errors import FormatError  # noqa: E402
from clevr_poc.evaluation import evaluate, write_outputs  # noqa: E402
from clevr_poc.generation.dataset_writer import generate_dataset  # noqa: E402

RANDOM = EncoderSpec(clip_pretrained=None, gpt2="tiny", seed=0)
TINY_TRAIN = dict(epochs=3, hidden=(32,), batch_size=2, seed=0)


# ---------------------------------------------------------------------------- no network
@pytest.fixture(autouse=True)
def no_network(monkeypatch):
    """Every socket connection attempt is recorded and refused; HF_HUB_OFFLINE is set."""
    attempts: list[object] = []

    def refuse(self, address, *args, **kwargs):
        attempts.append(address)
        raise OSError(f"network disabled in tests (tried {address!r})")

    def refuse_dns(host, *args, **kwargs):
        attempts.append(host)
        raise socket.gaierror(f"network disabled in tests (tried {host!r})")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse_dns)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    yield attempts
    assert attempts == [], f"network was used: {attempts}"


# ---------------------------------------------------------------------------- eq. 1 by hand
def test_weighted_bce_positives_is_eq_1_by_hand():
    # p = sigmoid(ln 3) = 0.75 on a positive label, p = sigmoid(0) = 0.5 on a negative label, beta = 2
    logits = torch.tensor([[math.log(3.0), 0.0]])
    targets = torch.tensor([[1.0, 0.0]])
    expected = (-2 * math.log(0.75) + -math.log(1 - 0.5)) / 2  # (0.575364 + 0.693147) / 2
    loss = weighted_bce(logits, targets, beta=2.0, weighting="positives")
    assert loss.item() == pytest.approx(expected, abs=1e-6)
    assert loss.item() == pytest.approx(0.634256, abs=1e-6)


def test_weighted_bce_negatives_is_the_official_weighting_by_hand():
    logits = torch.tensor([[math.log(3.0), 0.0]])
    targets = torch.tensor([[1.0, 0.0]])
    expected = (-math.log(0.75) + -2 * math.log(0.5)) / 2  # (0.287682 + 1.386294) / 2
    assert weighted_bce(logits, targets, beta=2.0, weighting="negatives").item() == pytest.approx(0.836988, abs=1e-6)
    assert expected == pytest.approx(0.836988, abs=1e-6)
    # the official engine.py: BCELoss(reduction='none') on sigmoid outputs, times where(t > 0, t, 5), mean
    g = torch.Generator().manual_seed(0)
    z = torch.randn(4, 17, generator=g)
    t = (torch.rand(4, 17, generator=g) < 0.3).float()
    official = (torch.nn.BCELoss(reduction="none")(torch.sigmoid(z), t) * torch.where(t > 0, t, 5)).mean()
    assert weighted_bce(z, t, beta=5.0, weighting="negatives").item() == pytest.approx(official.item(), rel=1e-5)
    # beta = 1 is plain binary cross-entropy
    plain = torch.nn.functional.binary_cross_entropy_with_logits(z, t)
    assert weighted_bce(z, t, beta=1.0, weighting="positives").item() == pytest.approx(plain.item(), rel=1e-6)


def test_weighted_bce_rejects_bad_settings():
    z = torch.zeros(1, 17)
    with pytest.raises(FormatError, match="weighting"):
        weighted_bce(z, z, weighting="both")
    with pytest.raises(FormatError, match="beta"):
        weighted_bce(z, z, beta=0.0)
    with pytest.raises(FormatError, match="shape"):
        weighted_bce(z, torch.zeros(1, 16))


def test_decode_threshold_and_attribute_restriction():
    probs = torch.zeros(2, 17).numpy()
    index = {label: i for i, label in enumerate(domain.LABELS)}
    probs[0, index["red"]], probs[0, index["blue"]], probs[0, index["cube"]] = 0.9, 0.5, 0.7
    probs[1, index["small"]] = 0.49
    assert decode(probs) == [frozenset({"red", "blue", "cube"}), frozenset()]
    assert decode(probs, threshold=0.6) == [frozenset({"red", "cube"}), frozenset()]
    assert decode(probs, restrict="attribute", attributes=["color", None]) == [frozenset({"red", "blue"}), frozenset()]
    assert decode(probs, restrict="attribute", attributes=["shape", "size"], threshold=0.4) == [
        frozenset({"cube"}), frozenset({"small"})]


# ---------------------------------------------------------------------------- encoders, offline
@pytest.fixture(scope="module")
def encoders():
    """Random-weight ViT-B-32 and tiny GPT-2, built once for the module (no network)."""
    frozen = FrozenEncoders(RANDOM)
    frozen.clip, frozen.gpt2  # build now  # noqa: B018
    return frozen


def test_random_encoders_build_offline_with_the_paper_shapes(encoders, no_network):
    clip_model, preprocess, tokenizer = encoders.clip
    gpt2, _ = encoders.gpt2
    assert type(gpt2).__name__ == "GPT2Model" and gpt2.config.n_layer == 2 and gpt2.config.n_embd == 64
    assert not any(p.requires_grad for p in clip_model.parameters())
    images = [Image.new("RGB", (320, 240), (200, 30, 30)), Image.new("RGB", (320, 240), (30, 30, 200))]
    vectors = encoders.encode_images(images)
    assert vectors.shape == (2, 512) and vectors.dtype.name == "float32"
    assert (abs((vectors ** 2).sum(1) - 1) < 1e-4).all()  # L2-normalised
    assert abs(vectors[0] - vectors[1]).max() > 1e-4
    texts = encoders.encode_texts(["What color is the cube?", "What shape is the red thing?"])
    assert texts.shape == (2, 512)
    constraints = encoders.encode_constraints(["There are 5 objects.", "All objects in region 0 are red."])
    assert constraints.shape == (64,)
    # the same seed rebuilds the same weights (cached features stay valid); another seed does not
    again, _ = load_gpt2("tiny", seed=0)
    other, _ = load_gpt2("tiny", seed=1)
    from clevr_poc.baselines.clip.encoders import weights_digest

    assert weights_digest(again) == encoders.gpt2_digest() != weights_digest(other)
    assert no_network == []


def test_missing_pretrained_weights_are_a_typed_error(tmp_path, no_network):
    with pytest.raises(PretrainedModelError, match="no checkpoint file") as error:
        load_clip("ViT-B-32", str(tmp_path / "missing.pt"))
    assert "ViT-B-32" in str(error.value) and "--clip-pretrained PATH" in str(error.value)
    with pytest.raises(PretrainedModelError, match="no model folder") as error:
        load_gpt2(str(tmp_path / "no-gpt2"))
    assert "--gpt2 PATH" in str(error.value)
    with pytest.raises(PretrainedModelError, match="HF_HUB_OFFLINE"):
        load_gpt2("clevr-poc-tests/no-such-gpt2")
    if not _clip_cached("ViT-B-32", "openai"):  # a machine with the weights cached would load them
        with pytest.raises(PretrainedModelError, match="HF_HUB_OFFLINE") as error:
            load_clip("ViT-B-32", "openai")
        assert error.value.model == "open_clip ViT-B-32 (pretrained='openai')"
    with pytest.raises(PretrainedModelError, match="unknown pretrained tag"):
        load_clip("ViT-B-32", "no-such-tag")
    assert no_network == []  # HF_HUB_OFFLINE respected: failed without trying the network


# ---------------------------------------------------------------------------- a tiny dataset with images
@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    """2 environments x 4 scenes (train 4 / val 2 / test 2), each partial scene with a small PNG."""
    out = tmp_path_factory.mktemp("clip") / "data"
    generate_dataset(out, environments=2, scenes_per_environment=4, seed=5,
                     splits={"train": 0.5, "val": 0.25, "test": 0.25}, progress=False)
    for number, example in enumerate(load_dataset(out)):
        path = out / "incomplete" / "images" / example.split / example.question.image_filename
        path.parent.mkdir(parents=True, exist_ok=True)
        Image.new("RGB", (64, 48), (40 * number % 256, 90, 200 - 20 * number)).save(path)
    return out


@pytest.fixture(scope="module")
def trained(dataset, encoders, tmp_path_factory):
    """A checkpoint per variant, trained through the Python API on one shared feature cache."""
    root = tmp_path_factory.mktemp("runs")
    cache = root / "cache"
    train_examples, val_examples = list(load_dataset(dataset, "train")), list(load_dataset(dataset, "val"))
    results = {}
    for variant in ("nl", "asp", "none"):
        results[variant] = train(train_examples, root / variant, TrainConfig(variant=variant, **TINY_TRAIN), RANDOM,
                                 val_examples=val_examples, cache_dir=cache, device="cpu", frozen=encoders)
    return {"root": root, "cache": cache, "results": results}


def test_dataset_fixture_has_images_for_every_split(dataset):
    examples = list(load_dataset(dataset))
    assert [e.split for e in examples].count("train") == 4 and len(examples) == 8
    assert all(e.image_path is not None and e.image_path.is_file() for e in examples)


def test_each_variant_trains_and_evaluates_end_to_end(dataset, trained, encoders):
    test_examples = list(load_dataset(dataset, "test"))
    widths = {"nl": 512 + 512 + 64, "asp": 512 + 512 + 64, "none": 512 + 512}
    names = {"nl": "CLIP-NL", "asp": "CLIP-ASP", "none": "CLIP (no knowledge)"}
    for variant, result in trained["results"].items():
        config = json.loads((result.checkpoint / "config.json").read_text())
        assert config["head"]["input_dim"] == widths[variant]
        assert config["encoders"]["gpt2"] == (None if variant == "none" else "tiny")
        assert len(result.history) == 3 and 1 <= result.selected_epoch <= 3
        assert all(r.val_jaccard is not None and 0 <= r.val_jaccard <= 1 for r in result.history)
        model = CLIPBaseline.from_checkpoint(result.checkpoint, device="cpu", frozen=encoders)
        assert model.name == names[variant]
        predictions = model.predict_batch(test_examples)
        for prediction in predictions:
            assert isinstance(prediction.values, frozenset) and prediction.values <= set(domain.LABELS)
            probabilities = json.loads(prediction.raw)
            assert list(probabilities) == list(domain.LABELS)
            assert prediction.values == {k for k, p in probabilities.items() if p >= 0.5} or any(
                abs(p - 0.5) < 1e-4 for p in probabilities.values())
        assert isinstance(model.predict(test_examples[0]), frozenset)
        report = evaluate(model, test_examples, progress=False, split="test")
        assert report.n == 2 and report.parse_failures == 0 and report.model == names[variant]
        assert 0.0 <= report.jaccard <= 1.0
        written = write_outputs(report, result.checkpoint / "results", plots=False)
        assert f"| test | {report.exact_accuracy:.4f} |" in written["table2.md"].read_text()


def test_constraint_inputs_differ_by_variant(dataset):
    example = load_dataset(dataset, "train")[0]
    nl = constraint_sentences(example.environment, "nl")
    asp = constraint_sentences(example.environment, "asp")
    assert nl[0].startswith(f"There are {example.environment.num_objects} objects")
    assert asp[0] == f"object(0..{example.environment.num_objects - 1})."
    rules = [line.strip() for line in example.environment.constraints_asp().splitlines() if line.strip()]
    assert asp[1:] == rules and all(rule.startswith(":-") for rule in rules)
    assert len(nl) == 1 + len(example.environment.constraints)  # one English sentence per constraint
    assert constraint_sentences(example.environment, "none") == []
    with pytest.raises(FormatError, match="variant"):
        constraint_sentences(example.environment, "english")


def test_feature_cache_is_reused_and_guarded(dataset, trained, encoders, tmp_path):
    examples = list(load_dataset(dataset, "train"))
    cached = FeatureExtractor(RANDOM, "nl", trained["cache"], encoders=encoders)
    features = cached.features(examples)
    assert cached.computed == {"image": 0, "question": 0, "constraint": 0}  # all from the cache files
    assert features.inputs().shape == (4, 1088) and features.targets.sum(1).min() >= 1
    fresh = FeatureExtractor(RANDOM, "nl", tmp_path / "cache", encoders=encoders)
    again = fresh.features(examples[:2])
    fresh.flush()
    environments = len({e.environment.id for e in examples[:2]})
    assert fresh.computed == {"image": 2, "question": 2, "constraint": environments}
    assert abs(again.inputs() - features.inputs()[:2]).max() < 1e-5
    spec_file = next((tmp_path / "cache").glob("clip-*/spec.json"))
    spec_file.write_text(json.dumps({"digest": "0000"}))
    (spec_file.parent / "image.npz").unlink()
    with pytest.raises(FormatError, match="other than those"):
        FeatureExtractor(RANDOM, "nl", tmp_path / "cache", encoders=encoders).features(examples)


def test_missing_image_is_a_typed_error_unless_allowed(dataset, encoders, tmp_path):
    example = replace(load_dataset(dataset, "test")[0], image_path=None)
    strict = FeatureExtractor(RANDOM, "none", tmp_path / "cache", encoders=encoders)
    with pytest.raises(MissingImageError, match="--allow-missing-images") as error:
        strict.features([example])
    assert example.question.image_filename in str(error.value)
    assert f"incomplete/images/test/{example.question.image_filename}" in str(error.value)
    lenient = FeatureExtractor(RANDOM, "none", tmp_path / "cache", encoders=encoders, allow_missing_images=True)
    assert lenient.image_key_and_loader(example)[0] == "placeholder"
    assert lenient.features([example]).image.shape == (1, 512)


def test_command_lines_train_and_evaluate(dataset, trained, capsys, tmp_path):
    out = tmp_path / "asp"
    status = clip_cli.main(["train", "--dataset", str(dataset), "--variant", "asp", "--out", str(out),
                            "--clip-pretrained", "none", "--gpt2", "tiny", "--epochs", "2", "--hidden", "0",
                            "--weighting", "negatives", "--beta", "5", "--cache", str(trained["cache"]),
                            "--device", "cpu"])
    assert status == 0
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert summary["variant"] == "asp" and summary["train_examples"] == 4 and summary["val_examples"] == 2
    config = json.loads((out / "config.json").read_text())
    assert config["head"]["hidden"] == [] and config["train"]["weighting"] == "negatives"
    assert config["features_computed"] == {"image": 0, "question": 0, "constraint": 0}  # shared cache

    results = tmp_path / "results"
    status = clevr_main(["evaluate", "--dataset", str(dataset), "--split", "test", "--model", "clip-asp",
                         "--checkpoint", str(out), "--out", str(results), "--no-plots"])
    assert status == 0
    last = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert last["n"] == 2
    report = json.loads((results / "report.json").read_text())
    assert report["model"] == "CLIP-ASP" and report["exact_accuracy"] == last["exact_accuracy"]
    assert "CLIP-ASP" in (results / "table2.md").read_text()
    predictions = json.loads((results / "predictions.json").read_text())
    model = CLIPBaseline.from_checkpoint(out, device="cpu")
    examples = list(load_dataset(dataset, "test"))
    assert predictions == {e.question.image_filename: sorted(model.predict(e)) for e in examples}

    status = clip_cli.main(["evaluate", "--dataset", str(dataset), "--split", "test", "--checkpoint", str(out)])
    assert status == 0 and json.loads(capsys.readouterr().out.strip().splitlines()[-1]) == last

    # typed one-line errors: wrong variant, no checkpoint folder, missing weights
    assert clevr_main(["evaluate", "--dataset", str(dataset), "--split", "test", "--model", "clip-nl",
                       "--checkpoint", str(out)]) == 1
    assert "variant 'asp', not 'nl'" in capsys.readouterr().err
    assert clevr_main(["evaluate", "--dataset", str(dataset), "--split", "test", "--model", "clip-none"]) == 1
    assert "needs --checkpoint DIR" in capsys.readouterr().err
    assert clip_cli.main(["train", "--dataset", str(dataset), "--variant", "none", "--out", str(tmp_path / "x"),
                          "--clip-pretrained", str(tmp_path / "missing.pt"), "--cache", str(tmp_path / "c2")]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: open_clip ViT-B-32") and "no checkpoint file" in err and len(err.splitlines()) == 1
