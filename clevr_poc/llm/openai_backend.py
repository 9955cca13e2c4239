"""Chat backend for any OpenAI-compatible chat-completions endpoint (OpenAI, vLLM, Ollama, LM Studio,
llama.cpp server, ...). Messages with images are sent as OpenAI content parts (``image_url`` with a
``data:`` URL, :mod:`clevr_poc.llm.images`); whether the served model reads them is the server's business
(a text-only model usually answers HTTP 400, raised as :class:`LLMBackendError` with ``status=400``)."""

from __future__ import annotations

import os
import threading
from typing import Any

from clevr_poc.llm.base import LLMBackendError, PromptTooLongError, check_generation_args, validate_messages

#: Environment variable naming the default model for :class:`OpenAIChatBackend`.
MODEL_ENV = "CLEVR_POC_LLM_MODEL"
#: Environment variables the OpenAI SDK itself uses for the endpoint and the key.
BASE_URL_ENV = "OPENAI_BASE_URL"
API_KEY_ENV = "OPENAI_API_KEY"
#: The official endpoint, used when neither ``base_url`` nor ``OPENAI_BASE_URL`` is given.
OFFICIAL_BASE_URL = "https://api.openai.com/v1"
#: Key sent to servers that need none (local vLLM / llama.cpp servers accept any string).
PLACEHOLDER_API_KEY = "sk-no-key-required"


class OpenAIChatBackend:
    """Chat completions through the ``openai`` SDK (``client.chat.completions.create``).

    Args:
        model: model name; default ``$CLEVR_POC_LLM_MODEL``.
        base_url: endpoint such as ``http://127.0.0.1:8000/v1``; default ``$OPENAI_BASE_URL``, else the
            official OpenAI endpoint.
        api_key: default ``$OPENAI_API_KEY``; a placeholder is sent to a non-official endpoint when no key
            is set (local servers need none).
        timeout: seconds per HTTP request (> 0).
        max_retries: SDK retries on connection errors, 408/409/429 and 5xx answers (>= 0).

    Raises:
        LLMBackendError: no model given, no key for the official endpoint, or the ``openai`` package
            is missing.
    """

    def __init__(self, model: str | None = None, base_url: str | None = None, api_key: str | None = None,
                 timeout: float = 60, max_retries: int = 2):
        try:
            import openai
        except ImportError:  # pragma: no cover - exercised only without the [llm] extra
            raise LLMBackendError("the 'openai' package is not installed (pip install '.[llm]' in the clevr_poc folder)",
                                  backend="openai") from None
        self._openai = openai
        self.model = model or os.environ.get(MODEL_ENV) or ""
        self.base_url = (base_url or os.environ.get(BASE_URL_ENV) or OFFICIAL_BASE_URL).rstrip("/")
        if not self.model:
            raise LLMBackendError(f"no model given: pass model= or set ${MODEL_ENV}", backend="openai",
                                  url=self.base_url)
        key = api_key or os.environ.get(API_KEY_ENV)
        if not key:
            if self.base_url == OFFICIAL_BASE_URL:
                raise LLMBackendError(f"no API key for the official OpenAI endpoint: set ${API_KEY_ENV}",
                                      backend="openai", model=self.model, url=self.base_url)
            key = PLACEHOLDER_API_KEY
        if timeout <= 0:
            raise ValueError(f"timeout must be > 0 seconds, got {timeout!r}")
        if max_retries < 0:
            raise ValueError(f"max_retries must be >= 0, got {max_retries!r}")
        self.timeout = float(timeout)
        self.max_retries = int(max_retries)
        self._client = openai.OpenAI(api_key=key, base_url=self.base_url, timeout=self.timeout,
                                     max_retries=self.max_retries)
        self.name = f"openai:{self.model}@{self.base_url}"
        #: Images are sent as content parts (the server's model must be a vision-language model).
        self.supports_images = True
        #: Requests answered and the token counts the server reported (``usage``), summed.
        self.usage = {"requests": 0, "prompt_tokens": 0, "completion_tokens": 0}
        self._usage_lock = threading.Lock()

    def __repr__(self) -> str:
        return f"OpenAIChatBackend(model={self.model!r}, base_url={self.base_url!r})"

    def _error(self, message: str, status: int | None = None) -> LLMBackendError:
        return LLMBackendError(message, backend="openai", model=self.model, url=self.base_url, status=status)

    def complete(self, messages: list[dict[str, Any]], *, max_tokens: int = 256, temperature: float = 0.0,
                 stop: list[str] | None = None, seed: int | None = None) -> str:
        """Send one chat-completions request and return the first choice's text.

        Sends ``model, messages, max_tokens, temperature`` and, when given, ``stop`` and ``seed``; contents
        that are lists of text / image parts go as they are (checked first: decodable images within the caps).
        A reply whose ``content`` is null (e.g. a refusal or a tool call) is returned as ``""``.

        Raises:
            PromptTooLongError: HTTP 400 whose message mentions the context length / window.
            LLMBackendError: connection refused / time-out (after ``max_retries``), an HTTP error status
                (``status`` attribute set), or a reply without choices.
            clevr_poc.errors.FormatError: malformed ``messages`` (``ImageInputError`` for a bad image).
        """
        checked = validate_messages(messages)
        check_generation_args(max_tokens, temperature)
        request: dict[str, Any] = {"model": self.model, "messages": checked, "max_tokens": max_tokens,
                                   "temperature": temperature}
        if stop:
            request["stop"] = list(stop)
        if seed is not None:
            request["seed"] = int(seed)
        openai = self._openai
        try:
            response = self._client.chat.completions.create(**request)
        except openai.APITimeoutError:
            raise self._error(f"request timed out after {self.timeout:g} s") from None
        except openai.APIConnectionError as exc:
            cause = exc.__cause__ or exc
            raise self._error(f"cannot connect ({cause.__class__.__name__}: {cause})") from None
        except openai.APIStatusError as exc:
            detail = _error_detail(exc)
            if exc.status_code == 400 and "context" in detail.lower() and ("length" in detail.lower()
                                                                            or "window" in detail.lower()):
                raise PromptTooLongError(f"prompt too long: {detail}", backend="openai", model=self.model,
                                         url=self.base_url, status=400) from None
            raise self._error(f"server answered with an error: {detail}", status=exc.status_code) from None
        except openai.APIResponseValidationError as exc:
            raise self._error(f"malformed reply: {exc}") from None
        except openai.APIError as exc:
            raise self._error(f"request failed: {exc}") from None
        usage = getattr(response, "usage", None)
        with self._usage_lock:
            self.usage["requests"] += 1
            self.usage["prompt_tokens"] += int(getattr(usage, "prompt_tokens", 0) or 0)
            self.usage["completion_tokens"] += int(getattr(usage, "completion_tokens", 0) or 0)
        choices = getattr(response, "choices", None)
        if not choices:
            raise self._error("reply has no choices")
        content = choices[0].message.content
        return content if isinstance(content, str) else ""


def _error_detail(exc: Any) -> str:
    """The server's error message from an :class:`openai.APIStatusError`, else its string form."""
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        error = body.get("error", body)
        if isinstance(error, dict) and error.get("message"):
            return str(error["message"])
        if isinstance(error, str):
            return error
    return str(getattr(exc, "message", None) or exc)
