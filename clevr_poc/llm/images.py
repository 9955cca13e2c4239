"""Images in chat messages: OpenAI-style content parts, built from files, bytes or PIL images, and validated.

A user message may carry a list of *content parts* instead of a string (OpenAI chat-completions format)::

    {"role": "user", "content": [
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0..."}},
        {"type": "text", "text": "What colour is the cube?"},
    ]}

:func:`image_part` turns a path, raw bytes or a ``PIL.Image.Image`` into such an ``image_url`` part with a
``data:`` URL: PNG, JPEG, WebP and GIF files keep their exact bytes (the formats the OpenAI API accepts);
anything else and every PIL image is encoded as PNG (lossless: the pixels are kept). :func:`decode_image_url`
checks a part: base64 that decodes, an image the library's one reader (:mod:`clevr_poc.image_files`: format
and size from the header first, then decoded) accepts, at most :data:`MAX_IMAGE_BYTES` bytes and
:data:`MAX_IMAGE_PIXELS` pixels. Only ``data:`` URLs are accepted (a remote ``http(s)`` URL would
make the run depend on the network and could not be checked here).

Errors are :class:`ImageInputError` (a :class:`~clevr_poc.errors.FormatError`) naming the message, the part
and what is wrong. Needs Pillow (``pip install Pillow``).
"""

from __future__ import annotations

import base64
import binascii
import io
import os
import re
from dataclasses import dataclass
from typing import Any

from clevr_poc import image_files
from clevr_poc.image_files import ImageFileError

#: Largest decoded image accepted, in bytes (:data:`clevr_poc.image_files.MAX_IMAGE_BYTES`, 20 MiB: the
#: OpenAI API's per-image limit).
MAX_IMAGE_BYTES = image_files.MAX_IMAGE_BYTES
#: Largest image accepted, in pixels (:data:`clevr_poc.image_files.MAX_IMAGE_PIXELS`, 40 megapixels).
MAX_IMAGE_PIXELS = image_files.MAX_IMAGE_PIXELS
#: Most images in one request.
MAX_IMAGES_PER_REQUEST = 16
#: Image types sent with their original bytes; others are re-encoded as PNG.
PASS_THROUGH_MIME: dict[str, str] = {"PNG": "image/png", "JPEG": "image/jpeg", "WEBP": "image/webp",
                                     "GIF": "image/gif"}
_DATA_URL = re.compile(r"^data:(image/[a-z0-9.+-]+);base64,", re.IGNORECASE)


class ImageInputError(ImageFileError):
    """An image given to a chat backend is unreadable, too large, of an unknown type or not a ``data:`` URL."""


@dataclass(frozen=True)
class DecodedImage:
    """A checked image of a message.

    Attributes:
        mime: the data URL's media type (e.g. ``"image/png"``).
        data: the decoded bytes (exactly what was sent).
        width, height: size in pixels.
        format: Pillow's format name (``"PNG"``, ``"JPEG"``, ...).
    """

    mime: str
    data: bytes
    width: int
    height: int
    format: str

    @property
    def size(self) -> tuple[int, int]:
        return (self.width, self.height)

    def to_pil(self) -> Any:
        """The image as an RGB ``PIL.Image.Image`` (loaded, detached from the bytes; 16-bit greyscale scaled,
        :func:`clevr_poc.image_files.rgb_pixels`)."""
        image = _open_checked(self.data, "image")[0]
        return _pil().fromarray(image_files.rgb_pixels(image, error=ImageInputError))


def _pil() -> Any:
    try:
        from PIL import Image
    except ImportError:  # pragma: no cover - Pillow ships with every extra that sends images
        raise ImageInputError("images need Pillow (pip install Pillow)") from None
    return Image


def _open_checked(data: bytes, where: str) -> tuple[Any, str]:
    """Open and fully decode ``data`` inside the caps (:func:`clevr_poc.image_files.open_image`); returns
    (image, PIL format)."""
    image = image_files.open_image(data, where=where, max_bytes=MAX_IMAGE_BYTES, max_pixels=MAX_IMAGE_PIXELS,
                                   error=ImageInputError)
    return image, str(image.format or "")


def encode_png(image: Any) -> bytes:
    """PNG bytes of a ``PIL.Image.Image`` (modes other than 1/L/LA/P/RGB/RGBA/I/I;16 are converted to RGB)."""
    if image.mode not in ("1", "L", "LA", "P", "RGB", "RGBA", "I", "I;16"):
        image = image.convert("RGB")
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()


def image_bytes(source: Any, *, where: str = "image") -> tuple[bytes, str]:
    """The bytes and media type to send for ``source`` (a path, bytes or a PIL image), checked.

    Returns:
        ``(data, mime)``: the original bytes for PNG/JPEG/WebP/GIF input, else PNG bytes of the image.

    Raises:
        ImageInputError: a missing file, undecodable data or an image over the caps.
    """
    Image = _pil()
    if isinstance(source, Image.Image):
        width, height = source.size
        if width * height > MAX_IMAGE_PIXELS:
            raise ImageInputError(f"image larger than {MAX_IMAGE_PIXELS} pixels", source=where,
                                  value=f"{width}x{height}")
        data = encode_png(source)
        _open_checked(data, where)
        return data, "image/png"
    if isinstance(source, (str, os.PathLike)):
        where = str(source)
        data = image_files.read_image_bytes(source, max_bytes=MAX_IMAGE_BYTES, error=ImageInputError)
    elif isinstance(source, (bytes, bytearray, memoryview)):
        data = bytes(source)
    else:
        raise ImageInputError("an image must be a path, bytes or a PIL image", source=where,
                              value=type(source).__name__)
    image, fmt = _open_checked(data, where)
    if fmt in PASS_THROUGH_MIME:
        return data, PASS_THROUGH_MIME[fmt]
    data = encode_png(image)
    return data, "image/png"


def data_url(data: bytes, mime: str = "image/png") -> str:
    """``data:<mime>;base64,<data>``."""
    return f"data:{mime};base64,{base64.b64encode(data).decode('ascii')}"


def image_part(source: Any, *, detail: str | None = None, where: str = "image") -> dict[str, Any]:
    """An OpenAI ``image_url`` content part for a path, bytes or PIL image (see the module docstring).

    Args:
        source: the image.
        detail: OpenAI's ``"low"`` / ``"high"`` / ``"auto"``, or None to leave it out.

    Raises:
        ImageInputError: see :func:`image_bytes`; a ``detail`` that is not low/high/auto.
    """
    data, mime = image_bytes(source, where=where)
    url: dict[str, Any] = {"url": data_url(data, mime)}
    if detail is not None:
        if detail not in ("low", "high", "auto"):
            raise ImageInputError("detail must be low, high or auto", source=where, field="detail", value=detail)
        url["detail"] = detail
    return {"type": "image_url", "image_url": url}


def text_part(text: str) -> dict[str, str]:
    """An OpenAI ``text`` content part."""
    return {"type": "text", "text": text}


def user_message(text: str, images: Any = ()) -> dict[str, Any]:
    """A user message: plain text when ``images`` is empty, else the image parts followed by the text.

    ``images``: one image or a sequence of paths / bytes / PIL images (see :func:`image_part`).
    """
    if images is None or (isinstance(images, (list, tuple)) and not images):
        return {"role": "user", "content": text}
    sources = images if isinstance(images, (list, tuple)) else [images]
    return {"role": "user", "content": [*(image_part(s) for s in sources), text_part(text)]}


def decode_image_url(url: Any, *, where: str = "image_url") -> DecodedImage:
    """Check a ``data:image/...;base64,`` URL and decode it.

    Raises:
        ImageInputError: not a string, not a base64 ``data:image/...`` URL, bad base64, an undecodable
            image or one over :data:`MAX_IMAGE_BYTES` / :data:`MAX_IMAGE_PIXELS`.
    """
    if not isinstance(url, str):
        raise ImageInputError("image_url.url must be a string", source=where, value=type(url).__name__)
    match = _DATA_URL.match(url)
    if match is None:
        shown = url[:40] + ("..." if len(url) > 40 else "")
        raise ImageInputError("only data:image/...;base64 URLs are accepted (build one with "
                              "clevr_poc.llm.images.image_part)", source=where, value=shown)
    payload = url[match.end():]
    if len(payload) > (MAX_IMAGE_BYTES * 4) // 3 + 4:
        raise ImageInputError(f"image larger than {MAX_IMAGE_BYTES} bytes", source=where,
                              value=f"{len(payload)} base64 characters")
    try:
        data = base64.b64decode(payload, validate=True)
    except (binascii.Error, ValueError):
        raise ImageInputError("image_url is not valid base64", source=where) from None
    image, fmt = _open_checked(data, where)
    return DecodedImage(mime=match.group(1).lower(), data=data, width=int(image.size[0]),
                        height=int(image.size[1]), format=fmt)


__all__ = ["DecodedImage", "ImageInputError", "MAX_IMAGES_PER_REQUEST", "MAX_IMAGE_BYTES", "MAX_IMAGE_PIXELS",
           "data_url", "decode_image_url", "encode_png", "image_bytes", "image_part", "text_part", "user_message"]
