"""A tiny, real OpenAI-compatible chat-completions server on 127.0.0.1, for tests and demos.

It speaks enough of the OpenAI HTTP API for the ``openai`` SDK (and so :class:`OpenAIChatBackend`):
``POST /v1/chat/completions`` and ``GET /v1/models``. Replies come from a user-supplied function of the
request's messages; the server applies ``stop`` sequences like a real one. Every request body is kept in
:attr:`ChatCompletionsServer.requests` so a test can check what the client really sent, and every image
(``image_url`` content part) is decoded as a vision server would and kept in
:attr:`ChatCompletionsServer.images` (:class:`ReceivedImage`: bytes, size, whether it decoded).

Example::

    with ChatCompletionsServer(lambda messages: "The answer is A.") as server:
        backend = OpenAIChatBackend(model="echo", base_url=server.base_url)
        backend.complete([{"role": "user", "content": "Hi"}])   # -> "The answer is A."

Only the loopback interface is used; the server runs in a daemon thread and stops on ``close()``.
"""

from __future__ import annotations

import base64
import json
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable

from clevr_poc.llm.base import apply_stop

#: A reply function: the request's messages (OpenAI format) -> the assistant text.
ReplyFunction = Callable[[list[dict[str, Any]]], str]


class ServerFailure(Exception):
    """Raise inside a reply function to make the server answer with an HTTP error.

    Args:
        status: HTTP status code (e.g. 500, 429, 400).
        message: the error message put in the OpenAI-style error body.
    """

    def __init__(self, status: int = 500, message: str = "simulated server failure"):
        super().__init__(message)
        self.status = int(status)
        self.message = message


@dataclass(frozen=True)
class ReceivedImage:
    """One image part the server received.

    Attributes:
        request: index of the request in :attr:`ChatCompletionsServer.requests`.
        message, part: indices of the message and of the content part in that request.
        url_prefix: the URL up to the comma (e.g. ``"data:image/png;base64"``).
        data: the decoded bytes (b"" when the URL was not base64 data).
        size: ``(width, height)`` as Pillow reads it, or None when it did not decode.
        error: why it did not decode, else None.
    """

    request: int
    message: int
    part: int
    url_prefix: str
    data: bytes
    size: tuple[int, int] | None
    error: str | None

    @property
    def decodable(self) -> bool:
        return self.error is None

    def pixels(self) -> Any:
        """The decoded image as an RGB ``PIL.Image.Image`` (ValueError when it did not decode)."""
        if self.error is not None:
            raise ValueError(f"image did not decode: {self.error}")
        from PIL import Image

        from clevr_poc.image_files import open_image, rgb_pixels

        return Image.fromarray(rgb_pixels(open_image(self.data)))


def _decode_received(url: Any, request: int, message: int, part: int) -> ReceivedImage:
    text = url if isinstance(url, str) else ""
    prefix, comma, payload = text.partition(",")
    if not comma or not prefix.startswith("data:image/") or not prefix.endswith(";base64"):
        return ReceivedImage(request, message, part, prefix[:64], b"", None, "not a data:image/...;base64 URL")
    try:
        data = base64.b64decode(payload, validate=True)
    except ValueError as exc:
        return ReceivedImage(request, message, part, prefix, b"", None, f"bad base64: {exc}")
    from clevr_poc.image_files import ImageFileError, open_image

    try:
        image = open_image(data)
        size = (int(image.size[0]), int(image.size[1]))
    except ImageFileError as exc:  # the one reader's error: "not decodable"
        return ReceivedImage(request, message, part, prefix, data, None, exc.message)
    return ReceivedImage(request, message, part, prefix, data, size, None)


def _image_urls(messages: list[Any]) -> list[tuple[int, int, Any]]:
    """(message index, part index, url) of every image_url part."""
    found = []
    for m_index, message in enumerate(messages):
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, list):
            for p_index, part in enumerate(content):
                if isinstance(part, dict) and part.get("type") == "image_url":
                    image_url = part.get("image_url")
                    found.append((m_index, p_index, image_url.get("url") if isinstance(image_url, dict)
                                  else image_url))
    return found


def content_text(content: Any) -> str:
    """The text of a message content as the server sees it: a string, or the text parts joined by newlines."""
    if isinstance(content, list):
        return "\n".join(str(p.get("text", "")) for p in content if isinstance(p, dict) and p.get("type") == "text")
    return "" if content is None else str(content)


def echo_last_user(messages: list[dict[str, Any]]) -> str:
    """Reply function that returns the (text) content of the last user message."""
    for message in reversed(messages):
        if message.get("role") == "user":
            return content_text(message.get("content", ""))
    return ""


class ChatCompletionsServer:
    """Run an OpenAI-compatible chat-completions server on ``127.0.0.1:<free port>`` in a thread.

    Args:
        reply: function of the request's ``messages`` returning the reply text; it may raise
            :class:`ServerFailure` to answer with an HTTP error. Default: echo the last user message.
        model_name: the model id ``GET /v1/models`` lists (any requested model is accepted).
        host: interface to bind; only loopback addresses are allowed.

    Attributes:
        base_url: ``http://127.0.0.1:PORT/v1`` once started.
        requests: list of the JSON bodies received by ``/v1/chat/completions``, in order.
        images: every image part received, decoded (:class:`ReceivedImage`), in arrival order.
    """

    def __init__(self, reply: ReplyFunction | None = None, *, model_name: str = "test-model",
                 host: str = "127.0.0.1"):
        if not (host.startswith("127.") or host in ("localhost", "::1")):
            raise ValueError(f"the test server binds loopback addresses only, got {host!r}")
        self.reply: ReplyFunction = reply or echo_last_user
        self.model_name = model_name
        self.host = host
        self.requests: list[dict[str, Any]] = []
        self.images: list[ReceivedImage] = []
        self._lock = threading.Lock()
        self._httpd: ThreadingHTTPServer | None = None
        self._port: int | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle -------------------------------------------------------------------------------
    def start(self) -> "ChatCompletionsServer":
        """Bind a free port and serve in a daemon thread; returns self."""
        if self._httpd is not None:
            return self
        server = self

        class Handler(_Handler):
            owner = server

        self._httpd = ThreadingHTTPServer((self.host, 0), Handler)
        self._httpd.daemon_threads = True
        self._port = int(self._httpd.server_address[1])
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        name="chat-completions-server", daemon=True)
        self._thread.start()
        return self

    def close(self) -> None:
        """Stop serving and release the port."""
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> "ChatCompletionsServer":
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @property
    def port(self) -> int:
        """The bound port (kept after :meth:`close` for messages); RuntimeError before :meth:`start`."""
        if self._port is None:
            raise RuntimeError("server not started")
        return self._port

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    # -- request handling ------------------------------------------------------------------------
    def _record(self, body: dict[str, Any]) -> int:
        with self._lock:
            self.requests.append(body)
            index = len(self.requests) - 1
        received = [_decode_received(url, index, m, p) for m, p, url in _image_urls(body["messages"])]
        with self._lock:
            self.images.extend(received)
        return index


class _Handler(BaseHTTPRequestHandler):
    owner: ChatCompletionsServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # silence the default stderr log
        return

    def _send_json(self, status: int, payload: dict[str, Any]) -> None:
        data = json.dumps(payload).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _send_error(self, status: int, message: str, kind: str = "server_error") -> None:
        self._send_json(status, {"error": {"message": message, "type": kind, "param": None, "code": None}})

    def do_GET(self) -> None:  # noqa: N802 - http.server naming
        if self.path.rstrip("/") == "/v1/models":
            self._send_json(200, {"object": "list", "data": [
                {"id": self.owner.model_name, "object": "model", "created": 0, "owned_by": "clevr_poc"}]})
        else:
            self._send_error(404, f"no route GET {self.path}", "invalid_request_error")

    def do_POST(self) -> None:  # noqa: N802
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        if self.path.rstrip("/") != "/v1/chat/completions":
            self._send_error(404, f"no route POST {self.path}", "invalid_request_error")
            return
        try:
            body = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            self._send_error(400, f"request body is not JSON: {exc}", "invalid_request_error")
            return
        if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
            self._send_error(400, "body must be an object with a 'messages' list", "invalid_request_error")
            return
        self.owner._record(body)
        try:
            text = self.owner.reply(body["messages"])
        except ServerFailure as failure:
            self._send_error(failure.status, failure.message)
            return
        except Exception as exc:  # a bug in the reply function becomes a 500, as on a real server
            self._send_error(500, f"reply function failed: {exc.__class__.__name__}: {exc}")
            return
        text = apply_stop(str(text), body.get("stop"))
        # "tokens" of this server are whitespace-separated words of the text parts (no real tokenizer)
        prompt_tokens = sum(len(content_text(m.get("content", "")).split()) for m in body["messages"]
                            if isinstance(m, dict))
        completion_tokens = len(text.split())
        self._send_json(200, {
            "id": f"chatcmpl-test-{len(self.owner.requests)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model") or self.owner.model_name,
            "choices": [{"index": 0, "finish_reason": "stop", "logprobs": None,
                         "message": {"role": "assistant", "content": text}}],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                      "total_tokens": prompt_tokens + completion_tokens},
        })


__all__ = ["ChatCompletionsServer", "ReceivedImage", "ServerFailure", "ReplyFunction", "apply_stop", "content_text",
           "echo_last_user"]
