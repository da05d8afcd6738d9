"""What an image's first bytes say: its format and its size, read from the header before anything decodes.

A 20,000 x 20,000 PNG is a few kilobytes on the wire and 1.2 GB once decoded; its header says so first.
Knows PNG, JPEG, WebP and GIF headers (GIF only to name it); decodes no pixels.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

MAX_SIDE = 8192  # pixels on either side
MAX_PIXELS = 8192 * 8192 // 2  # 33.5 megapixels: 100 MB of RGB once decoded
ACCEPTED = {"png": "image/png", "jpeg": "image/jpeg", "webp": "image/webp"}


class ImageRejected(ValueError):
    """The bytes are not an image this server takes; the message says why."""


@dataclass(frozen=True, slots=True)
class ImageHeader:
    kind: str  # "png", "jpeg" or "webp"
    width: int
    height: int


def probe_image(data: bytes, declared: str | None) -> ImageHeader:
    """The header of an accepted image whose declared media type (if any) matches its bytes."""
    kind = sniff(data)
    if kind is None:
        raise ImageRejected("the bytes are not a PNG, JPEG or WebP image")
    if kind not in ACCEPTED:
        raise ImageRejected(f"{kind.upper()} images are not accepted (PNG, JPEG or WebP)")
    if declared is not None and declared.lower() not in (
        ACCEPTED[kind],
        "image/jpg" if kind == "jpeg" else "",
    ):
        raise ImageRejected(f"the bytes are a {kind.upper()} image but the media type says {declared}")
    width, height = _SIZE_READERS[kind](data)
    if width <= 0 or height <= 0:
        raise ImageRejected("the image header gives no size")
    if width > MAX_SIDE or height > MAX_SIDE or width * height > MAX_PIXELS:
        raise ImageRejected(
            f"the image is {width} x {height} pixels; at most {MAX_SIDE} on a side and "
            f"{MAX_PIXELS:,} pixels are accepted"
        )
    return ImageHeader(kind, width, height)


def sniff(data: bytes) -> str | None:
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return "png"
    if data.startswith(b"\xff\xd8\xff"):
        return "jpeg"
    if len(data) >= 12 and data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "webp"
    if data[:6] in (b"GIF87a", b"GIF89a"):
        return "gif"
    return None


def _png_size(data: bytes) -> tuple[int, int]:
    if len(data) < 24 or data[12:16] != b"IHDR":
        raise ImageRejected("the PNG has no IHDR header")
    width, height = struct.unpack(">II", data[16:24])
    return int(width), int(height)


_SOF_MARKERS = frozenset({0xC0, 0xC1, 0xC2, 0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA, 0xCB, 0xCD, 0xCE, 0xCF})


def _jpeg_size(data: bytes) -> tuple[int, int]:
    """Walk the JPEG segments to the first start-of-frame, which holds the size."""
    at = 2
    while at + 4 <= len(data):
        if data[at] != 0xFF:
            raise ImageRejected("the JPEG's segments are malformed")
        marker = data[at + 1]
        if marker == 0xFF:  # fill byte
            at += 1
            continue
        if marker in (0xD8, 0x01) or 0xD0 <= marker <= 0xD7:  # markers without a length
            at += 2
            continue
        (length,) = struct.unpack(">H", data[at + 2 : at + 4])
        if marker in _SOF_MARKERS:
            if at + 9 > len(data):
                break
            height, width = struct.unpack(">HH", data[at + 5 : at + 9])
            return int(width), int(height)
        if length < 2:
            raise ImageRejected("the JPEG's segments are malformed")
        at += 2 + length
    raise ImageRejected("the JPEG has no frame header (no size)")


def _webp_size(data: bytes) -> tuple[int, int]:
    chunk = data[12:16]
    body = data[20:]
    if chunk == b"VP8 " and len(body) >= 10 and body[3:6] == b"\x9d\x01\x2a":
        width, height = struct.unpack("<HH", body[6:10])
        return int(width) & 0x3FFF, int(height) & 0x3FFF
    if chunk == b"VP8L" and len(body) >= 5 and body[0] == 0x2F:
        bits = int.from_bytes(body[1:5], "little")
        return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
    if chunk == b"VP8X" and len(body) >= 10:
        width = int.from_bytes(body[4:7], "little") + 1
        height = int.from_bytes(body[7:10], "little") + 1
        return width, height
    raise ImageRejected("the WebP has no VP8, VP8L or VP8X header (no size)")


_SIZE_READERS = {"png": _png_size, "jpeg": _jpeg_size, "webp": _webp_size}
