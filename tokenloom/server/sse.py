"""Server-sent events framing for OpenAI-style streams."""

from __future__ import annotations

import json
from typing import Any


def sse_data(payload: dict[str, Any]) -> bytes:
    return b"data: " + json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode() + b"\n\n"


SSE_DONE = b"data: [DONE]\n\n"
