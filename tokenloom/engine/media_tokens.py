"""Image placeholders in a token prompt: negative ids that say which image and which of its tokens.

An image's N embedding positions stand in the prompt as N placeholder ids derived from the image's hash, so
the KV-prefix machinery compares images as it compares text (the same image, the same ids). Pure arithmetic
over ints; knows nothing of llama.cpp.
"""

from __future__ import annotations

import hashlib

_OFFSET_BITS = 16  # a placeholder's offset inside its image: up to 65,535 tokens per image
MAX_IMAGE_TOKENS = (1 << _OFFSET_BITS) - 1
_KEY_MASK = (1 << 40) - 1


def image_key(data: bytes) -> int:
    """A 40-bit key of the image's bytes (sha256): the part of the prefix key that names the image."""
    return int.from_bytes(hashlib.sha256(data).digest()[:5], "big") & _KEY_MASK


def placeholders(key: int, n_tokens: int) -> list[int]:
    """The N placeholder ids of one image; the first one also keys the image's chunk in a job."""
    if not 0 < n_tokens <= MAX_IMAGE_TOKENS:
        raise ValueError(f"an image of {n_tokens} tokens cannot be placed (at most {MAX_IMAGE_TOKENS})")
    base = (key & _KEY_MASK) << _OFFSET_BITS
    return [-(base + offset + 1) for offset in range(n_tokens)]


def is_placeholder(token: int) -> bool:
    return token < 0


def offset_in_image(token: int) -> int:
    """Which of its image's tokens a placeholder is (0 for the first)."""
    return (-token - 1) & MAX_IMAGE_TOKENS


def whole_images(tokens: list[int], n: int) -> int:
    """`n`, moved back to the start of an image it would cut: a KV prefix holds whole images or none."""
    if 0 < n < len(tokens) and is_placeholder(tokens[n]):
        return n - offset_in_image(tokens[n])
    return n


def text_run(tokens: list[int], limit: int) -> int:
    """How many of `tokens[:limit]` come before the first placeholder (they can go into a text batch)."""
    for index in range(min(limit, len(tokens))):
        if tokens[index] < 0:
            return index
    return min(limit, len(tokens))
