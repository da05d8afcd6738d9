"""The `ChatFormat` interface: how one model's requests become prompts and its output becomes Events.

Two implementations, chosen once at load by `choose_format`: `JinjaFormat` (the model's chat template and
the auto-parser) and `HarmonyFormat` (gpt-oss). Nothing outside them asks which one is in use.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

from tokenloom.chat.fallback import GEMMA_TURNS
from tokenloom.engine.vocab import Tokenizer
from tokenloom.events import OutputParser
from tokenloom.grammar import Constrained
from tokenloom.harmony import is_harmony_architecture, is_harmony_template
from tokenloom.pipeline.budget import ReasoningMarkers
from tokenloom.pipeline.request import ChatRequest

CacheMode = Literal["none", "system", "first"]


@dataclass(frozen=True, slots=True)
class Prompt:
    """A rendered request: the text and tokens the model reads, and what the output parser needs."""

    text: str
    tokens: list[int]
    generation_prompt: str  # the text before the model's first token, minus any prefill
    prefill: str = ""  # the final assistant message's text the model continues (already in `text`)
    cache_prefix_len: int = 0  # leading tokens seed 003's cache keeps in sequence 0
    images: dict[int, Any] = field(default_factory=dict)  # first placeholder -> engine media.ImageChunk


@dataclass(frozen=True, slots=True)
class PrefixPolicy:
    """Seed 003's cache modes: keep the first system (or user) message in sequence 0 when long enough."""

    mode: CacheMode = "none"
    min_tokens: int = 100


class ChatFormat(Protocol):
    """What the pipeline asks of a chat format; every method renders or analyses nothing twice."""

    template: str  # the Jinja template text (harmony: the GGUF's, kept for `/props`-like reporting)
    template_source: str  # "gguf", "file" or "fallback"
    tokenizer: Tokenizer
    accepts_images: bool  # whether `prompt` places ImageParts (their `prepared` tokens)

    def prompt(self, request: ChatRequest, policy: PrefixPolicy) -> Prompt: ...

    def stops(self) -> tuple[str, ...]: ...

    def output_parser(self, request: ChatRequest, prompt: Prompt) -> OutputParser: ...

    def constraint(self, request: ChatRequest, prompt: Prompt) -> Constrained | None: ...

    def reasoning_markers(self, request: ChatRequest, prompt: Prompt) -> ReasoningMarkers | None: ...

    def tokenize_text(self, text: str) -> list[int]: ...

    def capabilities(self) -> frozenset[str]:
        """What the template can do beyond completion: "tools", "thinking" (Ollama's `/api/show`)."""
        ...


@dataclass(frozen=True, slots=True)
class TemplateChoice:
    """The template a model is served with and where it came from."""

    text: str
    source: str  # "gguf", "file" or "fallback"


def choose_template(gguf_template: str | None, override: Path | None) -> TemplateChoice:
    """`--chat-template-file` first, then the GGUF's template, then a plain Gemma-style fallback."""
    if override is not None:
        return TemplateChoice(override.read_text(encoding="utf-8"), "file")
    if gguf_template:
        return TemplateChoice(gguf_template, "gguf")
    return TemplateChoice(GEMMA_TURNS, "fallback")


def is_harmony_model(template: str, architecture: str, forced: str = "auto") -> bool:
    """The one detector: `--chat-format` wins; otherwise the template's structure or the architecture."""
    if forced != "auto":
        return forced == "harmony"
    return is_harmony_template(template) or is_harmony_architecture(architecture)


def tokenize_prompt_text(tokenizer: Tokenizer, text: str, *, parse_special: bool = True) -> list[int]:
    """Prompt text -> tokens, with the BOS the model expects exactly once at the start."""
    return with_bos(tokenizer, tokenizer.tokenize(text, add_bos=False, parse_special=parse_special))


def with_bos(tokenizer: Tokenizer, tokens: list[int]) -> list[int]:
    """`tokens` starting with the model's BOS exactly once, when the model expects one."""
    bos = tokenizer.bos_id
    if tokenizer.adds_bos and bos is not None and (not tokens or tokens[0] != bos):
        tokens.insert(0, bos)
    return tokens
