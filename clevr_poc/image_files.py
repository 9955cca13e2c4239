"""The one image reader of clevr_poc: image files, bytes, PIL images and arrays to checked RGB pixels.

Perception, the pipeline, the VLM reader (:mod:`clevr_poc.llm.images`), the CLIP baseline and the
evaluator read images only through this module. An image is untrusted data:

1. a file must be a regular file of at most ``max_bytes`` bytes (its size from ``stat``, then at most
   that many bytes read: no FIFO, ``/dev/zero`` or 2 GB file is ever read);
2. Pillow opens it with only the formats of :data:`FORMATS`, reading the *header*; the size is checked
   there (``max_pixels``, ``max_side``, ``min_side``) *before* anything is decoded, so a 420 KB
   12000 x 12000 PNG is refused in milliseconds, not after 2.7 GB of decoding;
3. every Pillow failure (unidentified data, truncated data, ``DecompressionBombError``, a zTXt/iCCP
   chunk over Pillow's text limit, ``SyntaxError``, ``ValueError``, ...) becomes :class:`ImageFileError`
   (a :class:`~clevr_poc.errors.FormatError`, one line) naming the file and Pillow's reason;
4. pixels become uint8 RGB the way each mode means them (:func:`rgb_pixels`): 16-bit greyscale
   (``I;16``, ``I``) is scaled by 255/65535 (Pillow's ``convert("RGB")`` would clip every value over 255
   to white), palette images go through their palette, alpha is dropped (not composited).

Needs Pillow (``pip install '.[vision]' in the clevr_poc folder``) for files, bytes and PIL images; arrays need only numpy.
"""

from __future__ import annotations

import io
import os
import stat
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias

import numpy as np

from clevr_poc.errors import FormatError

if TYPE_CHECKING:
    from PIL.Image import Image as PILImage

#: An image: a file path, a PIL image, or a numpy array (H, W, 3 or 4) of uint8 or of floats in [0, 1].
ImageInput: TypeAlias = "str | os.PathLike[str] | np.ndarray | PILImage"

#: Pillow formats read (every format clevr_poc writes or users send: the OpenAI API's four, plus BMP and
#: TIFF); anything else is refused before a decoder runs.
FORMATS: tuple[str, ...] = ("PNG", "JPEG", "WEBP", "GIF", "BMP", "TIFF")
#: Largest image file or byte string read (20 MiB: the OpenAI API's per-image limit).
MAX_IMAGE_BYTES = 20 * 1024 * 1024
#: Largest image (width x height pixels) decoded: 40 megapixels, below Pillow's own decompression-bomb
#: warning at ~89 Mpx; a 40 Mpx RGB image is 120 MB of pixels.
MAX_IMAGE_PIXELS = 40_000_000
_SIXTEEN_BIT = ("I;16", "I;16L", "I;16B", "I;16N", "I")


class ImageFileError(FormatError):
    """An image (file, bytes, PIL image or array) is missing, unreadable, of a refused format or mode,
    or outside the size caps. ``source`` names the file (or where the image came from)."""


def require_pillow() -> None:
    """Raise :class:`ImageFileError` (``reading images needs Pillow: ...``) when Pillow is not installed:
    for callers that check many images, so that a missing dependency is reported once as itself and not
    as a problem of every file."""
    _pil()


def _pil() -> Any:
    try:
        from PIL import Image
    except ImportError:  # pragma: no cover - every extra that reads images ships Pillow
        raise ImageFileError("reading images needs Pillow: pip install '.[vision]' in the clevr_poc folder") from None
    return Image


def read_image_bytes(path: str | os.PathLike[str], *, max_bytes: int = MAX_IMAGE_BYTES,
                     error: type[ImageFileError] = ImageFileError) -> bytes:
    """The bytes of the image file ``path``: a regular file of at most ``max_bytes`` bytes.

    Raises:
        ImageFileError (or ``error``): missing, not a regular file, larger than ``max_bytes``.
    """
    path = Path(path)
    try:
        with open(path, "rb", opener=lambda p, flags: os.open(p, flags | os.O_NONBLOCK)) as handle:
            info = os.fstat(handle.fileno())
            if not stat.S_ISREG(info.st_mode):
                raise error("not a regular image file", source=path)
            if info.st_size > max_bytes:
                raise error(f"image larger than {max_bytes} bytes", source=path, value=info.st_size)
            data = handle.read(max_bytes + 1)
    except FileNotFoundError:
        raise error("image file not found", source=path) from None
    except IsADirectoryError:
        raise error("not a regular image file", source=path) from None
    except OSError as exc:
        raise error(f"cannot read the image ({exc.__class__.__name__}: {exc.strerror or exc})",
                    source=path) from None
    if len(data) > max_bytes:  # grew while read
        raise error(f"image larger than {max_bytes} bytes", source=path, value=len(data))
    return data


def _check_size(width: int, height: int, where: object, error: type[ImageFileError], max_pixels: int,
                min_side: int, max_side: int | None) -> None:
    if width * height > max_pixels:
        raise error(f"image larger than {max_pixels} pixels", source=where, value=f"{width}x{height}")
    if not min_side <= min(width, height) or (max_side is not None and max(width, height) > max_side):
        sides = f"{min_side}-{max_side}" if max_side is not None else f">= {min_side}"
        raise error(f"image sides must be {sides} pixels", source=where, value=f"{width}x{height}")


def open_image(source: bytes | str | os.PathLike[str], *, where: object = None, max_bytes: int = MAX_IMAGE_BYTES,
               max_pixels: int = MAX_IMAGE_PIXELS, min_side: int = 1, max_side: int | None = None,
               error: type[ImageFileError] = ImageFileError) -> Any:
    """A decoded ``PIL.Image.Image`` of a file or byte string, checked as the module doc says.

    Args:
        source: a path, or the image's bytes.
        where: how errors name the image (default: the path, or ``"image"``).
        max_bytes, max_pixels: caps (:data:`MAX_IMAGE_BYTES`, :data:`MAX_IMAGE_PIXELS`).
        min_side, max_side: allowed side lengths in pixels, checked from the header.
        error: the :class:`ImageFileError` subclass to raise (the VLM reader's ``ImageInputError``).

    Raises:
        ImageFileError (or ``error``): every failure, naming ``where``.
    """
    Image = _pil()
    if isinstance(source, (str, os.PathLike)):
        where = Path(source) if where is None else where
        data = read_image_bytes(source, max_bytes=max_bytes, error=error)
    elif isinstance(source, (bytes, bytearray, memoryview)):
        where = "image" if where is None else where
        data = bytes(source)
        if len(data) > max_bytes:
            raise error(f"image larger than {max_bytes} bytes", source=where, value=len(data))
    else:
        raise error("an image is a path or bytes here", source=where, value=type(source).__name__)
    if not data:
        raise error("empty image", source=where)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)  # our caps are lower
            image = Image.open(io.BytesIO(data), formats=FORMATS)  # the header only
            _check_size(int(image.width), int(image.height), where, error, max_pixels, min_side, max_side)
            image.load()
    except ImageFileError:
        raise
    except Exception as exc:  # Pillow raises UnidentifiedImageError, OSError, SyntaxError, ValueError, ...
        raise error(_reason(exc), source=where) from None
    return image


def _reason(exc: Exception) -> str:
    """One line of why Pillow failed (no object addresses, at most 200 characters of Pillow's text)."""
    from PIL import UnidentifiedImageError

    if isinstance(exc, UnidentifiedImageError):
        return f"cannot read the image: not one of the formats {', '.join(FORMATS)}"
    text = " ".join(str(exc).split())[:200]
    return f"cannot read the image ({exc.__class__.__name__}: {text})" if text else \
        f"cannot read the image ({exc.__class__.__name__})"


def rgb_pixels(image: ImageInput, *, where: object = None, error: type[ImageFileError] = ImageFileError) -> np.ndarray:
    """uint8 (H, W, 3) RGB pixels of a ``PIL.Image.Image``, each mode read as it is meant (module doc).

    Raises:
        ImageFileError (or ``error``): a floating-point (``F``) image, whose scale is unknown.
    """
    if image.mode in _SIXTEEN_BIT:
        values = np.clip(np.asarray(image).astype(np.int64), 0, 65535)
        grey = ((values * 255 + 32767) // 65535).astype(np.uint8)
        return np.ascontiguousarray(np.repeat(grey[:, :, None], 3, axis=2))
    if image.mode == "F":
        raise error("floating-point images (mode F) are not read: their value range is unknown", source=where)
    try:
        if image.mode in ("P", "PA"):  # through the palette (and its transparency, then dropped)
            image = image.convert("RGBA")
        rgb = image if image.mode == "RGB" else image.convert("RGB")
        return np.array(rgb, dtype=np.uint8)
    except Exception as exc:  # a mode Pillow cannot convert
        raise error(_reason(exc), source=where) from None


def read_rgb(path: str | os.PathLike[str], *, min_side: int = 1, max_side: int | None = None) -> np.ndarray:
    """uint8 (H, W, 3) RGB pixels of an image file (:func:`open_image`, then :func:`rgb_pixels`).

    Raises:
        ImageFileError: see :func:`open_image`.
    """
    with open_image(path, min_side=min_side, max_side=max_side) as image:
        return rgb_pixels(image, where=path)


def image_size(path: str | os.PathLike[str]) -> tuple[int, int]:
    """``(width, height)`` of an image file, from its header (nothing is decoded).

    Raises:
        ImageFileError: missing, unreadable, or not one of :data:`FORMATS`.
    """
    Image = _pil()
    data = read_image_bytes(path)
    try:
        with Image.open(io.BytesIO(data), formats=FORMATS) as image:
            return int(image.width), int(image.height)
    except Exception as exc:
        raise ImageFileError(_reason(exc), source=path) from None


def _array_pixels(array: np.ndarray) -> np.ndarray:
    shape = tuple(array.shape)
    if array.ndim == 3 and array.shape[2] == 4:
        array = array[:, :, :3]
    if array.ndim != 3 or array.shape[2] != 3 or array.shape[0] < 1 or array.shape[1] < 1:
        raise ImageFileError("an image array must have shape (H, W, 3) (RGB) or (H, W, 4) (RGBA)", field="image",
                             value=shape)
    if array.dtype == np.uint8:
        return np.ascontiguousarray(array) if array.flags.writeable else np.array(array)
    if np.issubdtype(array.dtype, np.floating):
        if not np.isfinite(array).all() or array.min() < 0 or array.max() > 1:
            raise ImageFileError("a float image array must hold finite values in [0, 1]", field="image",
                                 value=str(array.dtype))
        return np.ascontiguousarray((array * 255).round().astype(np.uint8))
    raise ImageFileError("an image array must be uint8 (0-255) or float in [0, 1]", field="image",
                         value=str(array.dtype))


def as_rgb_array(image: ImageInput, *, min_side: int = 1, max_side: int | None = None) -> np.ndarray:
    """A writable, C-contiguous uint8 (H, W, 3) RGB array of a file path, a ``PIL.Image.Image`` or a numpy
    array (H, W, 3) / (H, W, 4) of uint8 (0-255) or floats in [0, 1] (alpha dropped); every side within
    ``min_side`` .. ``max_side`` pixels (files: checked from the header, before decoding).

    Raises:
        ImageFileError: None or another type, a missing or unreadable file, a bad shape, dtype or size.
    """
    if isinstance(image, (str, os.PathLike)):
        return read_rgb(image, min_side=min_side, max_side=max_side)
    if hasattr(image, "convert") and hasattr(image, "size") and hasattr(image, "mode"):  # PIL.Image.Image
        width, height = image.size
        _check_size(int(width), int(height), None, ImageFileError, MAX_IMAGE_PIXELS, min_side, max_side)
        return rgb_pixels(image)
    if isinstance(image, np.ndarray):
        array = _array_pixels(image)
        height, width = array.shape[:2]
        _check_size(width, height, None, ImageFileError, MAX_IMAGE_PIXELS, min_side, max_side)
        return array
    raise ImageFileError("an image is a file path, a PIL image or a numpy array (H, W, 3) uint8", field="image",
                         value=type(image).__name__)
