"""The frozen encoders of the CLIP baseline (paper §4.1.1, Fig. 3): CLIP ViT-B/32 for the image and the
question, GPT-2 for the environment's constraints.

Weights load through the libraries' own paths:

- CLIP: ``open_clip.create_model_and_transforms(model, pretrained=...)`` with ``pretrained`` an
  open_clip tag (``"openai"``: OpenAI's ViT-B/32, the paper's model), a local checkpoint file, or None
  (random weights, seeded: offline tests and smoke runs). The tokenizer is open_clip's bundled BPE.
- GPT-2: ``transformers.GPT2Model.from_pretrained(name_or_local_dir)`` and ``AutoTokenizer`` from the
  same place (``"gpt2"``: the 124M model, 768-d hidden states, as the paper and the official code), or
  ``"tiny"``: a random 2-layer, 64-d GPT-2 built from a :class:`transformers.GPT2Config` (seeded). A
  GPT-2 tokenizer cannot be built offline (its vocabulary files come from the Hub and no installed
  package ships them), so ``"tiny"`` tokenises with open_clip's bundled CLIP BPE (49,408 tokens, the
  same byte-level BPE family) — a documented stand-in, only for random-weight runs.

Nothing is downloaded when ``HF_HUB_OFFLINE`` (or ``TRANSFORMERS_OFFLINE``) is set: pretrained weights
missing from the local cache raise :class:`PretrainedModelError` at once, naming the model and the
option that takes a local path. Online, a failed download raises the same error.

Embeddings (all ``float32`` numpy arrays):

- image / question: CLIP's projected embeddings, L2-normalised (as ``image_embeds``/``text_embeds`` of
  the official code's ``CLIPModel``), shape ``(n, 512)`` for ViT-B-32;
- constraints: GPT-2's last hidden states, mean-pooled over the tokens of each sentence (attention
  mask respected), then averaged over the sentences (official ``environment_embedding.py``), shape
  ``(768,)`` for ``gpt2``, ``(64,)`` for ``tiny``.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from clevr_poc.baselines.clip.clip_errors import PretrainedModelError
from clevr_poc.errors import FormatError

#: The paper's CLIP model (§4.1.1: "ViT-B/32"), its open_clip name.
DEFAULT_CLIP_MODEL = "ViT-B-32"
#: open_clip tag of OpenAI's weights (the paper's pre-trained CLIP).
DEFAULT_CLIP_PRETRAINED = "openai"
#: The paper's constraint encoder (§4.1.1: "pre-trained GPT-2"), its Hugging Face name.
DEFAULT_GPT2 = "gpt2"
#: ``--gpt2 tiny``: random GPT-2 for offline tests (2 layers, 64-d, 2 heads, CLIP-BPE vocabulary).
TINY_GPT2 = "tiny"
TINY_GPT2_CONFIG: dict[str, int] = {"n_layer": 2, "n_embd": 64, "n_head": 2, "n_positions": 512,
                                    "vocab_size": 49408, "bos_token_id": 49406, "eos_token_id": 49407}
#: Token limit of one constraint sentence for GPT-2 (its context length is 1024; sentences are short).
MAX_SENTENCE_TOKENS = 256

_TRUE = {"1", "ON", "YES", "TRUE"}
_CLIP_HINT = ("Give a local open_clip checkpoint file with --clip-pretrained PATH (Python: "
              "EncoderSpec(clip_pretrained=PATH)), put the weights in the Hugging Face cache first "
              "(HF_HOME), or use --clip-pretrained none for random weights")
_GPT2_HINT = ("Give a local folder written by GPT2Model.save_pretrained() and the tokenizer's "
              "save_pretrained() with --gpt2 PATH (Python: EncoderSpec(gpt2=PATH)), put the model in the "
              "Hugging Face cache first (HF_HOME), or use --gpt2 tiny for a random 2-layer model")


def hub_offline() -> bool:
    """True when ``HF_HUB_OFFLINE`` / ``TRANSFORMERS_OFFLINE`` is set (read now, and as huggingface_hub
    read it at import)."""
    if any(os.environ.get(name, "").strip().upper() in _TRUE for name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")):
        return True
    try:
        from huggingface_hub import constants
    except ImportError:  # pragma: no cover - huggingface_hub comes with open_clip and transformers
        return False
    return bool(getattr(constants, "HF_HUB_OFFLINE", False))


def _looks_like_path(text: str) -> bool:
    """A local path rather than a hub name: it exists, starts with ``/``, ``.`` or ``~``, names a weights
    file, or has more than one separator (hub ids are ``name`` or ``org/name``)."""
    return (Path(text).expanduser().exists() or text.startswith(("/", ".", "~", os.sep))
            or text.endswith((".pt", ".pth", ".bin", ".safetensors")) or text.replace(os.sep, "/").count("/") > 1)


@dataclass(frozen=True)
class EncoderSpec:
    """Which frozen encoders to use; recorded in a trained checkpoint so evaluation rebuilds the same ones.

    Attributes:
        clip_model: open_clip model name (``"ViT-B-32"``, the paper's ViT-B/32).
        clip_pretrained: open_clip tag (``"openai"``), a local checkpoint file, or None (random weights).
        gpt2: Hugging Face model name (``"gpt2"``), a local folder, ``"tiny"`` (random 2-layer model), or
            None (no constraint encoder: the "CLIP (no knowledge)" variant).
        seed: seed of the random weights (``clip_pretrained=None`` / ``gpt2="tiny"``): the same seed
            rebuilds the same encoders, so cached features stay valid.
    """

    clip_model: str = DEFAULT_CLIP_MODEL
    clip_pretrained: str | None = DEFAULT_CLIP_PRETRAINED
    gpt2: str | None = DEFAULT_GPT2
    seed: int = 0

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: object, *, source: object = None) -> "EncoderSpec":
        if not isinstance(data, dict):
            raise FormatError("encoder spec must be a JSON object", source=source, field="encoders", value=data)
        try:
            return cls(clip_model=str(data["clip_model"]), clip_pretrained=data.get("clip_pretrained"),
                       gpt2=data.get("gpt2"), seed=int(data.get("seed", 0)))
        except (KeyError, TypeError, ValueError) as exc:
            raise FormatError(f"bad encoder spec ({exc})", source=source, field="encoders") from None

    def clip_identity(self) -> dict[str, Any]:
        """What determines the CLIP features (the cache folder name is a hash of it)."""
        return {"clip_model": self.clip_model, **_weights_identity(self.clip_pretrained, self.seed)}

    def gpt2_identity(self) -> dict[str, Any]:
        """What determines the constraint features."""
        if self.gpt2 is None:
            return {"gpt2": None}
        if self.gpt2 == TINY_GPT2:
            return {"gpt2": TINY_GPT2, "config": TINY_GPT2_CONFIG, **_weights_identity(None, self.seed),
                    "max_tokens": MAX_SENTENCE_TOKENS}
        return {"gpt2": "model", **_weights_identity(self.gpt2, self.seed), "max_tokens": MAX_SENTENCE_TOKENS}


def _weights_identity(source: str | None, seed: int) -> dict[str, Any]:
    if source is None:
        import torch

        return {"weights": "random", "seed": seed, "torch": torch.__version__}
    if _looks_like_path(source):
        path = Path(source).expanduser().resolve()
        stamp = [(str(p.relative_to(path)) if p != path else p.name, p.stat().st_size)
                 for p in ([path] if path.is_file() else sorted(path.rglob("*")) if path.is_dir() else []) if p.is_file()]
        return {"weights": str(path), "files": stamp}
    return {"weights": source}


def identity_hash(identity: dict[str, Any]) -> str:
    """12 hex digits of the SHA-1 of an identity's canonical JSON."""
    return hashlib.sha1(json.dumps(identity, sort_keys=True).encode()).hexdigest()[:12]


def weights_digest(module: Any) -> str:
    """A short digest of a module's weights (first values of its first and last parameter tensors)."""
    params = list(module.parameters())
    h = hashlib.sha1()
    for p in params[:3] + params[-1:]:
        h.update(p.detach().float().flatten()[:512].cpu().numpy().tobytes())
    return h.hexdigest()[:16]


# ---------------------------------------------------------------------------- CLIP
def _clip_cached(model_name: str, tag: str) -> bool:
    import open_clip

    cfg = open_clip.get_pretrained_cfg(model_name, tag) or {}
    if "file" in cfg:
        return Path(cfg["file"]).is_file()
    hub = cfg.get("hf_hub", "")
    if hub:
        from huggingface_hub import try_to_load_from_cache

        repo_id, filename = os.path.split(hub)
        names = [filename] if filename else ["open_clip_model.safetensors", "open_clip_pytorch_model.bin"]
        return any(isinstance(try_to_load_from_cache(repo_id, name), str) for name in names)
    url = cfg.get("url", "")
    return bool(url) and (Path("~/.cache/clip").expanduser() / os.path.basename(url)).is_file()


def load_clip(model_name: str = DEFAULT_CLIP_MODEL, pretrained: str | None = DEFAULT_CLIP_PRETRAINED, *,
              seed: int = 0, device: str = "cpu") -> tuple[Any, Callable[[Any], Any], Callable[..., Any]]:
    """Build a frozen open_clip model: ``(model, preprocess, tokenizer)``.

    Args:
        model_name: open_clip model name.
        pretrained: open_clip tag, local checkpoint file, or None (random weights, seeded).
        seed: seed of random weights.
        device: torch device.

    Returns:
        The model in eval mode with ``requires_grad=False``, the image transform (PIL -> ``(3, 224, 224)``
        float tensor), and the tokenizer (list of str -> ``(n, 77)`` int64 token ids).

    Raises:
        FormatError: ``model_name`` is not an open_clip model.
        PretrainedModelError: the weights are missing (offline and not cached, no such file) or failed to
            download/load.
    """
    import open_clip
    import torch

    if model_name not in open_clip.list_models():
        raise FormatError("not an open_clip model name (see open_clip.list_models())", field="clip_model",
                          value=model_name)
    what = f"open_clip {model_name} (pretrained={pretrained!r})"
    if pretrained is None:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            model, _, preprocess = open_clip.create_model_and_transforms(model_name, pretrained=None)
    elif _looks_like_path(pretrained):
        path = Path(pretrained).expanduser()
        if not path.is_file():
            raise PretrainedModelError(what, f"no checkpoint file at {path}", _CLIP_HINT)
        try:
            model, _, preprocess = open_clip.create_model_and_transforms(model_name, pretrained=str(path))
        except Exception as exc:  # noqa: BLE001 - any loading failure becomes one typed error
            raise PretrainedModelError(what, f"cannot load {path} ({exc.__class__.__name__}: {exc})", _CLIP_HINT) from None
    else:
        tags = open_clip.list_pretrained_tags_by_model(model_name)
        if pretrained not in tags:
            raise PretrainedModelError(what, f"unknown pretrained tag for this model (tags: {', '.join(tags) or 'none'})",
                                       _CLIP_HINT)
        if hub_offline() and not _clip_cached(model_name, pretrained):
            raise PretrainedModelError(what, "the weights are not in the local cache and HF_HUB_OFFLINE is set",
                                       _CLIP_HINT)
        try:
            model, _, preprocess = open_clip.create_model_and_transforms(model_name, pretrained=pretrained)
        except Exception as exc:  # noqa: BLE001
            raise PretrainedModelError(what, f"download or loading failed ({exc.__class__.__name__}: "
                                       f"{str(exc)[:200]})", _CLIP_HINT) from None
    model = model.to(device).eval()
    for parameter in model.parameters():
        parameter.requires_grad_(False)
    return model, preprocess, open_clip.get_tokenizer(model_name)


# ---------------------------------------------------------------------------- GPT-2
class ClipBpeTokenizer:
    """Stand-in tokenizer of ``--gpt2 tiny``: open_clip's bundled CLIP BPE (no download needed).

    ``__call__(sentences, max_length) -> (input_ids, attention_mask)``, both ``(n, L)`` int64 tensors,
    right-padded with the end-of-text id.
    """

    def __init__(self) -> None:
        from open_clip.tokenizer import SimpleTokenizer

        self._bpe = SimpleTokenizer()
        self.pad_id = self._bpe.eot_token_id

    def __call__(self, sentences: Sequence[str], max_length: int) -> tuple[Any, Any]:
        import torch

        ids = [self._bpe.encode(s)[:max_length] or [self.pad_id] for s in sentences]
        width = max(len(i) for i in ids)
        input_ids = torch.full((len(ids), width), self.pad_id, dtype=torch.long)
        mask = torch.zeros((len(ids), width), dtype=torch.long)
        for row, tokens in enumerate(ids):
            input_ids[row, : len(tokens)] = torch.tensor(tokens, dtype=torch.long)
            mask[row, : len(tokens)] = 1
        return input_ids, mask


class HFTokenizer:
    """A Hugging Face GPT-2 tokenizer with the end-of-text token as padding (as the official code)."""

    def __init__(self, tokenizer: Any) -> None:
        if tokenizer.pad_token is None:
            tokenizer.pad_token = tokenizer.eos_token
        self._tokenizer = tokenizer

    def __call__(self, sentences: Sequence[str], max_length: int) -> tuple[Any, Any]:
        encoded = self._tokenizer(list(sentences), padding=True, truncation=True, max_length=max_length,
                                  return_tensors="pt")
        return encoded["input_ids"], encoded["attention_mask"]


def load_gpt2(name: str = DEFAULT_GPT2, *, seed: int = 0, device: str = "cpu") -> tuple[Any, Any]:
    """Build a frozen GPT-2: ``(model, tokenizer)``; see the module docstring for ``name``.

    Returns:
        ``transformers.GPT2Model`` in eval mode with ``requires_grad=False``, and a tokenizer
        ``(sentences, max_length) -> (input_ids, attention_mask)``.

    Raises:
        PretrainedModelError: the model (or its tokenizer) is missing: no such folder, offline and not
            cached, or the download failed.
    """
    import torch
    from transformers import AutoTokenizer, GPT2Config, GPT2Model

    what = f"GPT-2 {name!r}"
    if name == TINY_GPT2:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            model = GPT2Model(GPT2Config(**TINY_GPT2_CONFIG))
        tokenizer: Any = ClipBpeTokenizer()
    else:
        local_only = hub_offline()
        if _looks_like_path(name):
            path = Path(name).expanduser()
            if not path.is_dir():
                raise PretrainedModelError(what, f"no model folder at {path}", _GPT2_HINT)
            source, local_only = str(path), True
        else:
            source = name
        try:
            model = GPT2Model.from_pretrained(source, local_files_only=local_only)
            tokenizer = HFTokenizer(AutoTokenizer.from_pretrained(source, local_files_only=local_only))
        except Exception as exc:  # noqa: BLE001 - OSError, ValueError, HTTP errors: one typed error
            reason = ("not in the local cache and HF_HUB_OFFLINE is set" if local_only and not _looks_like_path(name)
                      else f"cannot load ({exc.__class__.__name__}: {str(exc)[:200]})")
            raise PretrainedModelError(what, reason, _GPT2_HINT) from None
    model = model.to(device).eval()
    for parameter in model.parameters():
        parameter.requires_grad_(False)
    return model, tokenizer


# ---------------------------------------------------------------------------- the frozen encoders
class FrozenEncoders:
    """CLIP and GPT-2 of an :class:`EncoderSpec`, each built on first use.

    Args:
        spec: the encoders.
        device: torch device (``"cpu"``, ``"cuda"``, ...).
        batch_size: images/texts per forward pass.
    """

    def __init__(self, spec: EncoderSpec, *, device: str = "cpu", batch_size: int = 32) -> None:
        self.spec = spec
        self.device = device
        self.batch_size = max(1, batch_size)
        self._clip: tuple[Any, Any, Any] | None = None
        self._gpt2: tuple[Any, Any] | None = None

    @property
    def clip(self) -> tuple[Any, Any, Any]:
        if self._clip is None:
            self._clip = load_clip(self.spec.clip_model, self.spec.clip_pretrained, seed=self.spec.seed,
                                   device=self.device)
        return self._clip

    @property
    def gpt2(self) -> tuple[Any, Any]:
        if self.spec.gpt2 is None:
            raise FormatError("no constraint encoder in this encoder spec (variant 'none')", field="gpt2")
        if self._gpt2 is None:
            self._gpt2 = load_gpt2(self.spec.gpt2, seed=self.spec.seed, device=self.device)
        return self._gpt2

    def clip_digest(self) -> str:
        return weights_digest(self.clip[0])

    def gpt2_digest(self) -> str:
        return weights_digest(self.gpt2[0])

    def encode_images(self, images: Sequence[Any]) -> np.ndarray:
        """PIL images -> ``(n, D)`` float32 L2-normalised CLIP image embeddings."""
        import torch

        model, preprocess, _ = self.clip
        out = []
        with torch.inference_mode():
            for start in range(0, len(images), self.batch_size):
                pixels = torch.stack([preprocess(im) for im in images[start:start + self.batch_size]]).to(self.device)
                out.append(model.encode_image(pixels, normalize=True).float().cpu().numpy())
        return np.concatenate(out).astype(np.float32) if out else np.zeros((0, 0), np.float32)

    def encode_texts(self, texts: Sequence[str]) -> np.ndarray:
        """Strings -> ``(n, D)`` float32 L2-normalised CLIP text embeddings (77-token context; longer
        texts are cut by the tokenizer)."""
        import torch

        model, _, tokenizer = self.clip
        out = []
        with torch.inference_mode():
            for start in range(0, len(texts), self.batch_size):
                tokens = tokenizer(list(texts[start:start + self.batch_size])).to(self.device)
                out.append(model.encode_text(tokens, normalize=True).float().cpu().numpy())
        return np.concatenate(out).astype(np.float32) if out else np.zeros((0, 0), np.float32)

    def encode_constraints(self, sentences: Sequence[str]) -> np.ndarray:
        """Constraint sentences -> ``(H,)`` float32: per-sentence masked mean of GPT-2's last hidden
        states, averaged over sentences (official ``environment_embedding.py``).

        Raises:
            FormatError: no sentences.
        """
        import torch

        if not sentences:
            raise FormatError("no constraint sentences to encode", field="constraints")
        model, tokenizer = self.gpt2
        pooled = []
        with torch.inference_mode():
            for start in range(0, len(sentences), self.batch_size):
                ids, mask = tokenizer(list(sentences[start:start + self.batch_size]), MAX_SENTENCE_TOKENS)
                ids, mask = ids.to(self.device), mask.to(self.device)
                hidden = model(input_ids=ids, attention_mask=mask).last_hidden_state
                weights = mask.unsqueeze(-1).to(hidden.dtype)
                pooled.append((hidden * weights).sum(1) / weights.sum(1).clamp(min=1e-9))
        return torch.cat(pooled).mean(0).float().cpu().numpy().astype(np.float32)
