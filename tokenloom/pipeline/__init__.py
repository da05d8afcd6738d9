"""The layer between the APIs and the cores: one `ChatRequest`, one `ChatFormat` per model, one `submit`.

Every API's adapter produces a `ChatRequest`; `Pipeline.submit` renders it once, compiles its constraint,
queues it on the engine and returns a `Submission` whose Events every API's encoder consumes.
"""

from __future__ import annotations

from pathlib import Path

from tokenloom.engine.vocab import Tokenizer
from tokenloom.pipeline.chat_format import (
    ChatFormat,
    PrefixPolicy,
    Prompt,
    choose_template,
    is_harmony_model,
)
from tokenloom.pipeline.harmony_format import HarmonyFormat
from tokenloom.pipeline.jinja_format import JinjaFormat
from tokenloom.pipeline.request import ChatRequest
from tokenloom.pipeline.submit import Pipeline, Submission

__all__ = [
    "ChatFormat",
    "ChatRequest",
    "HarmonyFormat",
    "JinjaFormat",
    "Pipeline",
    "PrefixPolicy",
    "Prompt",
    "Submission",
    "format_for_model",
]


def format_for_model(
    tokenizer: Tokenizer,
    gguf_template: str | None,
    override: Path | None,
    *,
    architecture: str = "",
    forced_kind: str = "auto",
    reasoning_format: str = "auto",
) -> ChatFormat:
    """The served model's chat format, decided once at load."""
    choice = choose_template(gguf_template, override)
    if is_harmony_model(choice.text, architecture, forced_kind):
        return HarmonyFormat(choice.text, choice.source, tokenizer)
    bos = tokenizer.token_text(tokenizer.bos_id) if tokenizer.bos_id is not None else ""
    eos = tokenizer.token_text(tokenizer.eos_id) if tokenizer.eos_id is not None else ""
    jinja = JinjaFormat(
        choice.text, choice.source, tokenizer, bos, eos, keep_reasoning_in_content=reasoning_format == "none"
    )
    _ = jinja.controls  # the turn-forgery guard's index, built at load rather than by the first request
    return jinja
