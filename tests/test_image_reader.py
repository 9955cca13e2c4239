"""The one image reader (:mod:`clevr_poc.image_files`, issue #26 items 4, 5, 8): hostile images are typed
one-line errors naming the file in every reader of the library, sizes are checked from the header before
decoding, 16-bit greyscale and palette images keep their values. The PNGs are written here, by hand."""

from __future__ import annotations

import functools
import os
import re
import struct
import time
import zlib

import numpy as np
import pytest

from clevr_poc.errors import FormatError

Image = pytest.importorskip("PIL.Image")


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)


def blank_png(width: int, height: int, extra: bytes = b"", rows: int | None = None) -> bytes:
    """An 8-bit greyscale PNG of zeros, any size (a 12000 x 12000 one is ~140 KB); only ``rows`` rows of
    pixel data when given (a header that promises more than the file holds)."""
    compress = zlib.compressobj(6)
    block = b"\0" * (width + 1) * 256
    left = height if rows is None else rows
    parts = []
    while left > 0:
        parts.append(compress.compress(block if left >= 256 else block[:(width + 1) * left]))
        left -= 256
    body = b"".join(parts) + compress.flush()
    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", header) + extra + _chunk(b"IDAT", body) + _chunk(b"IEND", b"")


@functools.lru_cache(maxsize=1)
def hostile_images() -> dict[str, bytes]:
    """name -> bytes of images that made Pillow raise something other than OSError, or decode gigabytes."""
    small = blank_png(64, 64)
    ztxt_bomb = _chunk(b"zTXt", b"comment\0\0" + zlib.compress(b"A" * (8 * 1024 * 1024), 9))
    iccp_bomb = _chunk(b"iCCP", b"icc\0\0" + zlib.compress(b"\0" * (32 * 1024 * 1024), 9))
    return {
        "not an image": b"not an image at all",
        "truncated": small[:60],
        "bad crc": small[:40] + bytes([small[40] ^ 0xFF]) + small[41:],
        "ztxt bomb": blank_png(64, 64, ztxt_bomb),
        "iccp bomb": blank_png(64, 64, iccp_bomb),
        "decompression bomb 30000x30000": blank_png(30000, 30000, rows=2),  # the header says 900 Mpx
        "7000x7000 (49 Mpx, over the 40 Mpx cap)": blank_png(7000, 7000),
        "svg": b"<svg xmlns='http://www.w3.org/2000/svg'/>",
    }


def _readers():
    from clevr_poc.baselines.clip.features import _open_image
    from clevr_poc.image_files import read_rgb
    from clevr_poc.llm.images import image_part
    from clevr_poc.pipeline_inputs import as_image

    return {"pipeline as_image": as_image, "read_rgb (perception, evaluator)": read_rgb,
            "VLM image_part": image_part, "CLIP": lambda path: _open_image(path, path.read_bytes())}


@pytest.mark.parametrize("name", list(hostile_images()))
def test_every_reader_turns_a_hostile_image_into_a_typed_one_line_error(tmp_path, name):
    path = tmp_path / "hostile.png"
    path.write_bytes(hostile_images()[name])
    for reader_name, reader in _readers().items():
        with pytest.raises(FormatError) as info:
            reader(path)
        message = str(info.value)
        assert str(path) in message and "\n" not in message, (reader_name, message)
        assert re.search(r"0x[0-9a-f]{6}", message) is None, message  # no object addresses


def test_a_12000_pixel_png_is_refused_from_its_header(tmp_path):
    from clevr_poc.image_files import ImageFileError, read_rgb

    path = tmp_path / "big.png"
    path.write_bytes(blank_png(12000, 12000))
    assert path.stat().st_size < 500_000
    started = time.perf_counter()
    with pytest.raises(ImageFileError, match=r"big\.png: image larger than 40000000 pixels \(got '12000x12000'\)"):
        read_rgb(path)
    assert time.perf_counter() - started < 2.0  # measured ~0.01 s (benchmarks/fuzz.py); decoding took 10 s


def test_perception_sides_are_checked_before_decoding(tmp_path, monkeypatch):
    from clevr_poc.image_files import ImageFileError, as_rgb_array

    path = tmp_path / "wide.png"
    path.write_bytes(blank_png(4000, 64))
    decoded = []
    monkeypatch.setattr(Image.Image, "load", lambda self: decoded.append(1))
    with pytest.raises(ImageFileError, match=r"image sides must be 64-2048 pixels \(got '4000x64'\)"):
        as_rgb_array(path, min_side=64, max_side=2048)
    assert decoded == []


def test_sixteen_bit_greyscale_and_palette_pngs_keep_their_values(tmp_path):
    from clevr_poc.llm.images import decode_image_url, image_part
    from clevr_poc.pipeline_inputs import as_image

    values = np.array([[0, 257 * 64, 257 * 128, 65535]] * 4, dtype=np.uint16)
    Image.fromarray(values).save(tmp_path / "grey16.png")  # uint16 -> mode I;16
    with Image.open(tmp_path / "grey16.png") as check:
        assert check.mode in ("I;16", "I")  # Pillow keeps 16 bits
    expected = np.array([0, 64, 128, 255], dtype=np.uint8)
    array = as_image(tmp_path / "grey16.png")
    assert array.shape == (4, 4, 3) and np.array_equal(array[0, :, 0], expected), array[0, :, 0]
    assert np.array_equal(array[..., 0], array[..., 2])
    vlm = decode_image_url(image_part(tmp_path / "grey16.png")["image_url"]["url"]).to_pil()
    assert np.array_equal(np.asarray(vlm)[0, :, 1], expected)

    palette = Image.new("P", (3, 1))
    palette.putpalette([255, 0, 0, 0, 255, 0, 0, 0, 255] + [0] * 759)
    palette.putdata([2, 1, 0])
    palette.save(tmp_path / "palette.png")
    assert as_image(tmp_path / "palette.png")[0].tolist() == [[0, 0, 255], [0, 255, 0], [255, 0, 0]]


def test_a_fifo_or_folder_is_refused_without_reading(tmp_path):
    from clevr_poc.image_files import ImageFileError, read_rgb

    fifo = tmp_path / "pipe.png"
    os.mkfifo(fifo)  # nobody writes: reading it would block forever
    with pytest.raises(ImageFileError, match="not a regular image file"):
        read_rgb(fifo)
    with pytest.raises(ImageFileError, match="not a regular image file"):
        read_rgb(tmp_path)
    with pytest.raises(ImageFileError, match="image file not found"):
        read_rgb(tmp_path / "missing.png")
