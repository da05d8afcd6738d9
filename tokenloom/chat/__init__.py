"""Chat-template rendering: untrusted Jinja templates in a sandbox, capabilities, fallbacks.

The server calls `render_chat` (adapted render) and `detect_caps`; template analysis calls `render`
(faithful render) to probe templates.
"""

from __future__ import annotations

from tokenloom.chat.bounds import RenderLimits
from tokenloom.chat.caps import TemplateCaps, detect_caps
from tokenloom.chat.fallback import GEMMA_TURNS
from tokenloom.chat.render import render, render_chat

__all__ = ["GEMMA_TURNS", "RenderLimits", "TemplateCaps", "detect_caps", "render", "render_chat"]
