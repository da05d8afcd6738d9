"""Image headers are read before anything decodes: format, size, and what the client claimed."""

from __future__ import annotations

import io
import struct
import zlib

import pytest
from PIL import Image

from tokenloom.pipeline.image_probe import ImageRejected, probe_image


def _encoded(kind: str, width: int = 33, height: int = 21, **options: object) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (width, height), (1, 2, 3)).save(buffer, kind, **options)
    return buffer.getvalue()


@pytest.mark.parametrize(
    ("kind", "options", "name", "media_type"),
    [
        ("PNG", {}, "png", "image/png"),
        ("JPEG", {}, "jpeg", "image/jpeg"),
        ("JPEG", {"progressive": True}, "jpeg", "image/jpeg"),
        ("WEBP", {}, "webp", "image/webp"),
        ("WEBP", {"lossless": True}, "webp", "image/webp"),
    ],
)
def test_sizes_come_from_the_header(
    kind: str, options: dict[str, object], name: str, media_type: str
) -> None:
    header = probe_image(_encoded(kind, **options), media_type)
    assert (header.kind, header.width, header.height) == (name, 33, 21)
    assert probe_image(_encoded(kind, **options), None).kind == name  # no declared type: the bytes say


def test_a_huge_png_is_refused_from_its_header_alone() -> None:
    ihdr = struct.pack(">IIBBBBB", 20_000, 20_000, 8, 2, 0, 0, 0)
    crc = struct.pack(">I", zlib.crc32(b"IHDR" + ihdr))
    data = b"\x89PNG\r\n\x1a\n" + struct.pack(">I", 13) + b"IHDR" + ihdr + crc  # no pixels at all
    with pytest.raises(ImageRejected, match="20000 x 20000"):
        probe_image(data, "image/png")


@pytest.mark.parametrize(
    ("data", "declared", "words"),
    [
        (_encoded("GIF"), "image/jpeg", "GIF images are not accepted"),
        (_encoded("PNG"), "image/jpeg", "the media type says image/jpeg"),
        (b"hello", None, "not a PNG, JPEG or WebP"),
        (b"\xff\xd8\xff\xe0\x00\x10JFIF", "image/jpeg", "no frame header"),
        (b"RIFF\x00\x00\x00\x00WEBPVP8 ", "image/webp", "no VP8"),
    ],
)
def test_what_is_refused_says_why(data: bytes, declared: str | None, words: str) -> None:
    with pytest.raises(ImageRejected, match=words):
        probe_image(data, declared)
