"""Server-sent events framing: OpenAI-style `data:` chunks and named events."""

from __future__ import annotations

import json
from typing import Any


def sse_data(payload: dict[str, Any]) -> bytes:
    return b"data: " + json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode() + b"\n\n"


def sse_event(name: str, payload: dict[str, Any]) -> bytes:
    """A named event (`event:` line, then `data:`), as the Responses and Anthropic streams send them."""
    data = json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode()
    return b"event: " + name.encode() + b"\ndata: " + data + b"\n\n"


SSE_DONE = b"data: [DONE]\n\n"
