"""``make_backend(spec)``: build a chat backend from a short command-line spec."""

from __future__ import annotations

from clevr_poc.errors import FormatError
from clevr_poc.llm.base import ChatBackend

#: Specs naming the offline SmolLM2 model.
LOCAL_SPECS: frozenset[str] = frozenset({"local", "smollm2", "local-gguf", "gguf"})


def make_backend(spec: str, *, timeout: float = 60, max_retries: int = 2, device: str = "auto",
                 dtype: str = "auto") -> ChatBackend:
    """Build a backend from ``spec``:

    * ``local`` / ``smollm2`` — :class:`~clevr_poc.llm.local.LocalGGUFBackend` with SmolLM2-135M-Instruct;
    * ``gguf:PATH`` — a local GGUF file;
    * ``openai`` — :class:`~clevr_poc.llm.openai_backend.OpenAIChatBackend`, model and URL from the environment;
    * ``openai:MODEL`` — that model, URL from ``$OPENAI_BASE_URL`` or the official endpoint;
    * ``openai:MODEL@URL`` — e.g. ``openai:qwen2.5-7b@http://127.0.0.1:8000/v1``;
    * ``transformers:PATH_OR_HUB_ID`` (alias ``hf:``) — a local vision-language model,
      :class:`~clevr_poc.llm.transformers_backend.TransformersVLMBackend`, on ``device`` / ``dtype``
      (``auto``: CUDA when present, bf16/fp16 there, float32 on the CPU).

    ``timeout`` and ``max_retries`` apply to HTTP backends, ``device`` and ``dtype`` to ``transformers:``.

    Raises:
        FormatError: an unknown or malformed spec. LLMBackendError: the backend cannot be set up.
    """
    text = spec.strip()
    kind, _, rest = text.partition(":")
    kind = kind.lower()
    if text.lower() in LOCAL_SPECS:
        from clevr_poc.llm.local import LocalGGUFBackend

        return LocalGGUFBackend()
    if kind == "gguf" and rest:
        from clevr_poc.llm.local import LocalGGUFBackend

        return LocalGGUFBackend(rest)
    if kind == "openai":
        from clevr_poc.llm.openai_backend import OpenAIChatBackend

        model, at, url = rest.partition("@")
        if at and not url.startswith(("http://", "https://")):
            raise FormatError("the URL after '@' must start with http:// or https://", field="backend", value=spec)
        if at and not model:
            raise FormatError("expected openai:MODEL@URL", field="backend", value=spec)
        return OpenAIChatBackend(model=model or None, base_url=url or None, timeout=timeout, max_retries=max_retries)
    if kind in ("transformers", "hf") and rest.strip():
        from clevr_poc.llm.transformers_backend import TransformersVLMBackend

        return TransformersVLMBackend(rest.strip(), device=device, dtype=dtype)
    raise FormatError("unknown backend; expected local, smollm2, gguf:PATH, openai, openai:MODEL, "
                      "openai:MODEL@URL or transformers:PATH_OR_HUB_ID", field="backend", value=spec)
