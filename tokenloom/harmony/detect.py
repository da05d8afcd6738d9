"""Recognise a harmony (gpt-oss) chat template by its structure, so the server can route it here.

Looks for the markers the format cannot do without, not for a file hash: fine-tunes and re-exports of
gpt-oss change the template's text but keep its message grammar.
"""

from __future__ import annotations

import re

# `<|start|>` ... `<|message|>` headers with a `<|channel|>`, and an assistant-side stop (`<|call|>` or
# `<|return|>`); plain ChatML-like templates share `<|start|>`-style names but not this combination.
_REQUIRED = ("<|start|>", "<|message|>", "<|channel|>", "<|end|>")
_STOPS = ("<|call|>", "<|return|>")
_CHANNEL_WORDS = re.compile(r"<\|channel\|>\s*(?:analysis|commentary|final)|channel\|>(?:analysis|final)")


def is_harmony_template(template_text: str) -> bool:
    """True for the gpt-oss template and templates speaking the same format."""
    if not all(marker in template_text for marker in _REQUIRED):
        return False
    if not any(stop in template_text for stop in _STOPS):
        return False
    return bool(_CHANNEL_WORDS.search(template_text)) or "Valid channels:" in template_text


def is_harmony_architecture(architecture: str | None) -> bool:
    """GGUF `general.architecture` of gpt-oss models (llama.cpp names it "gpt-oss")."""
    return (architecture or "").lower().replace("_", "-") in ("gpt-oss", "gptoss")
