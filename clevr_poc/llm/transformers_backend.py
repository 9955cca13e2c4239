"""Local vision-language chat backend: a Hugging Face ``transformers`` model run in-process.

Loads ``AutoProcessor`` + ``AutoModelForImageTextToText`` from a folder or a Hub id (families with a chat
template in their processor: Qwen2-VL / Qwen2.5-VL, LLaVA / LLaVA-NeXT, SmolVLM / Idefics3, and others
that ``AutoModelForImageTextToText`` knows). The processor's own chat template formats the messages;
images (OpenAI ``image_url`` parts, :mod:`clevr_poc.llm.images`) are decoded and handed to it as PIL
images in place. Decoding is greedy when ``temperature`` is 0.

Device and precision (``device="auto"``, ``dtype="auto"``): CUDA when ``torch.cuda.is_available()``, else
the CPU; on CUDA bfloat16 where the GPU supports it (``torch.cuda.is_bf16_supported()``), else float16;
float32 on the CPU. A Hub id is looked up in the local cache first; with ``HF_HUB_OFFLINE=1`` nothing is
downloaded.

Needs ``torch``, ``transformers`` (>= 4.45 for ``AutoModelForImageTextToText``; tested with 5.x) and Pillow.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

from clevr_poc.llm.base import (LLMBackendError, PromptTooLongError, apply_stop, check_generation_args,
                               validate_messages)

DEVICES_HELP = "auto, cpu, cuda or cuda:N"
DTYPES: tuple[str, ...] = ("auto", "float32", "bfloat16", "float16")


def resolve_device(device: str = "auto") -> str:
    """``"auto"`` -> ``"cuda"`` when a GPU is visible else ``"cpu"``; ``cpu``/``cuda``/``cuda:N`` are checked.

    Raises:
        LLMBackendError: CUDA asked for but not available; an unknown device string.
    """
    import torch

    text = (device or "auto").strip().lower()
    if text == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if text == "cpu":
        return "cpu"
    if text == "cuda" or (text.startswith("cuda:") and text[5:].isdigit()):
        if not torch.cuda.is_available():
            raise LLMBackendError(f"device {device!r} asked for, but no CUDA device is available",
                                  backend="transformers")
        return text
    raise LLMBackendError(f"unknown device {device!r}; expected {DEVICES_HELP}", backend="transformers")


def resolve_dtype(dtype: str, device: str) -> Any:
    """The torch dtype for ``dtype`` on ``device`` (rules in the module docstring).

    Raises:
        LLMBackendError: an unknown dtype name.
    """
    import torch

    text = (dtype or "auto").strip().lower()
    if text not in DTYPES:
        raise LLMBackendError(f"unknown dtype {dtype!r}; expected one of {list(DTYPES)}", backend="transformers")
    if text == "auto":
        if device.startswith("cuda"):
            return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
        return torch.float32
    return getattr(torch, text)


def processor_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Validated OpenAI messages -> the processor chat-template format: every content a list of
    ``{"type": "text", "text"}`` and ``{"type": "image", "image": PIL.Image}`` parts (string contents become
    one text part, so templates that iterate over parts, e.g. Idefics3's, work)."""
    from clevr_poc.llm.images import decode_image_url

    converted = []
    for index, message in enumerate(messages):
        content = message["content"]
        if isinstance(content, str):
            parts: list[dict[str, Any]] = [{"type": "text", "text": content}]
        else:
            parts = []
            for p_index, part in enumerate(content):
                if part["type"] == "text":
                    parts.append({"type": "text", "text": part["text"]})
                else:
                    decoded = decode_image_url(part["image_url"]["url"],
                                               where=f"messages[{index}].content[{p_index}]")
                    parts.append({"type": "image", "image": decoded.to_pil()})
        converted.append({"role": message["role"], "content": parts})
    return converted


class TransformersVLMBackend:
    """A vision-language chat model run by ``transformers`` (see the module docstring).

    Args:
        model: a folder written by ``save_pretrained`` (model + processor) or a Hub id in the local cache.
        device: ``auto`` (default), ``cpu``, ``cuda`` or ``cuda:N``.
        dtype: ``auto`` (default), ``float32``, ``bfloat16`` or ``float16``.
        trust_remote_code: passed to ``from_pretrained`` (off by default: remote code is not run).

    The model loads on the first :meth:`complete` call; calls are serialised by a lock (one model, one
    generation at a time). ``usage`` counts requests and prompt / completion tokens (the model's own
    tokenizer, image tokens included).

    Raises:
        LLMBackendError: torch / transformers missing, the model cannot be loaded, a bad device or dtype.
    """

    def __init__(self, model: str | os.PathLike[str], *, device: str = "auto", dtype: str = "auto",
                 trust_remote_code: bool = False):
        try:
            import torch  # noqa: F401
            import transformers  # noqa: F401
        except ImportError:
            raise LLMBackendError("the transformers backend needs torch and transformers "
                                  "(pip install '.[vlm]' in the clevr_poc folder)", backend="transformers") from None
        self.model_id = str(model)
        if not self.model_id.strip():
            raise LLMBackendError("no model given: expected transformers:PATH_OR_HUB_ID", backend="transformers")
        self.device = resolve_device(device)
        self.dtype = resolve_dtype(dtype, self.device)
        self.trust_remote_code = bool(trust_remote_code)
        self.name = f"transformers:{Path(self.model_id).name if Path(self.model_id).exists() else self.model_id}"
        self.supports_images = True
        self.usage = {"requests": 0, "prompt_tokens": 0, "completion_tokens": 0}
        self._processor: Any = None
        self._model: Any = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"TransformersVLMBackend(model={self.model_id!r}, device={self.device!r}, dtype={self.dtype})"

    def _error(self, message: str) -> LLMBackendError:
        return LLMBackendError(message, backend="transformers", model=self.model_id)

    def _load(self) -> tuple[Any, Any]:
        if self._model is None:
            from transformers import AutoModelForImageTextToText, AutoProcessor

            try:
                processor = AutoProcessor.from_pretrained(self.model_id, trust_remote_code=self.trust_remote_code)
                model = AutoModelForImageTextToText.from_pretrained(self.model_id, dtype=self.dtype,
                                                                    trust_remote_code=self.trust_remote_code)
            except (OSError, ValueError, KeyError, TypeError) as exc:
                hint = " (offline: is it in the Hugging Face cache?)" if os.environ.get("HF_HUB_OFFLINE") else ""
                raise self._error(f"cannot load the model{hint}: {exc.__class__.__name__}: "
                                  f"{str(exc).splitlines()[0] if str(exc) else ''}") from None
            if getattr(processor, "chat_template", None) is None:
                raise self._error("the processor has no chat template (not a chat / instruct model?)")
            self._processor, self._model = processor, model.to(self.device).eval()
        return self._processor, self._model

    def _context_limit(self, model: Any) -> int | None:
        config = model.config
        for part in (getattr(config, "text_config", None), config):
            limit = getattr(part, "max_position_embeddings", None) if part is not None else None
            if isinstance(limit, int) and limit > 0:
                return limit
        return None

    def complete(self, messages: list[dict[str, Any]], *, max_tokens: int = 256, temperature: float = 0.0,
                 stop: list[str] | None = None, seed: int | None = None) -> str:
        """Reply to ``messages`` (text and images) with the processor's chat template.

        ``stop`` strings end the reply (cut after generation, as OpenAI-compatible servers do); ``seed``
        seeds torch when sampling (``temperature`` > 0).

        Raises:
            PromptTooLongError: prompt + ``max_tokens`` exceed the model's ``max_position_embeddings``.
            LLMBackendError: the model failed to load or to generate.
            clevr_poc.errors.FormatError: malformed messages (ImageInputError for a bad image).
        """
        import torch

        checked = validate_messages(messages)
        check_generation_args(max_tokens, temperature)
        chat = processor_messages(checked)
        with self._lock:
            processor, model = self._load()
            try:
                inputs = processor.apply_chat_template(chat, add_generation_prompt=True, tokenize=True,
                                                       return_dict=True, return_tensors="pt")
            except (ValueError, TypeError, KeyError) as exc:
                raise self._error(f"the chat template cannot format these messages: {exc}") from None
            prompt_tokens = int(inputs["input_ids"].shape[-1])
            limit = self._context_limit(model)
            if limit is not None and prompt_tokens + max_tokens > limit:
                raise PromptTooLongError(f"prompt too long: {prompt_tokens} + {max_tokens} tokens > {limit}",
                                         backend="transformers", model=self.model_id)
            inputs = inputs.to(self.device)
            if "pixel_values" in inputs and torch.is_floating_point(inputs["pixel_values"]):
                inputs["pixel_values"] = inputs["pixel_values"].to(self.dtype)
            kwargs: dict[str, Any] = {"max_new_tokens": max_tokens, "do_sample": temperature > 0}
            if temperature > 0:
                kwargs["temperature"] = temperature
                if seed is not None:
                    torch.manual_seed(int(seed))
            try:
                with torch.inference_mode():
                    output = model.generate(**inputs, **kwargs)
            except (RuntimeError, ValueError) as exc:
                raise self._error(f"generation failed: {exc.__class__.__name__}: {exc}") from None
            new_tokens = output[:, prompt_tokens:]
            text = processor.batch_decode(new_tokens, skip_special_tokens=True)[0]
            self.usage["requests"] += 1
            self.usage["prompt_tokens"] += prompt_tokens
            self.usage["completion_tokens"] += int(new_tokens.shape[-1])
        return apply_stop(text, stop)


__all__ = ["DTYPES", "TransformersVLMBackend", "processor_messages", "resolve_device", "resolve_dtype"]
