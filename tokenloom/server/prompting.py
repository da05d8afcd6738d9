"""From a validated chat request to prompt tokens and an output parser, for the model's chat format.

The server's one place that knows which template a model uses and which parser reads its output.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from tokenloom.chat.fallback import GEMMA_TURNS
from tokenloom.chat.render import render_chat
from tokenloom.engine.vocab import Tokenizer
from tokenloom.errors import InvalidRequest
from tokenloom.events import OutputParser
from tokenloom.harmony import STOP_STRINGS as HARMONY_STOPS
from tokenloom.harmony import (
    HarmonyOutputParser,
    is_harmony_architecture,
    is_harmony_template,
    render_chat_request_segments,
)
from tokenloom.parsing.analyze import analyze
from tokenloom.parsing.output_parser import make_output_parser
from tokenloom.server.wire import ChatCompletionRequest, ChatMessage

logger = logging.getLogger(__name__)

CacheMode = Literal["none", "system", "first"]
ChatFormatKind = Literal["jinja", "harmony"]


HARMONY_BUILTINS = ("browser", "python")


def _builtin_tools(request: ChatCompletionRequest) -> tuple[str, ...]:
    """gpt-oss's built-in tools a request enables (as llama.cpp: chat_template_kwargs.builtin_tools)."""
    wanted = (request.chat_template_kwargs or {}).get("builtin_tools") or ()
    if not isinstance(wanted, list | tuple) or any(name not in HARMONY_BUILTINS for name in wanted):
        raise InvalidRequest(
            f"builtin_tools must be a list drawn from {list(HARMONY_BUILTINS)}",
            param="chat_template_kwargs.builtin_tools",
        )
    return tuple(wanted)


@dataclass(slots=True)
class ChatFormat:
    """The chat template of the served model and how to read what the model writes."""

    template: str
    template_source: str  # "gguf", "file" or "fallback"
    tokenizer: Tokenizer
    bos_token: str
    eos_token: str
    kind: ChatFormatKind = "jinja"
    reasoning_format: str = "auto"  # "none" leaves reasoning markers and text in the content

    @classmethod
    def for_model(
        cls,
        tokenizer: Tokenizer,
        gguf_template: str | None,
        override: Path | None,
        *,
        architecture: str = "",
        forced_kind: str = "auto",
        reasoning_format: str = "auto",
    ) -> ChatFormat:
        if override is not None:
            template, source = override.read_text(encoding="utf-8"), "file"
        elif gguf_template:
            template, source = gguf_template, "gguf"
        else:
            template, source = GEMMA_TURNS, "fallback"
        bos = tokenizer.token_text(tokenizer.bos_id) if tokenizer.bos_id is not None else ""
        eos = tokenizer.token_text(tokenizer.eos_id) if tokenizer.eos_id is not None else ""
        if forced_kind == "auto":
            is_harmony = is_harmony_template(template) or is_harmony_architecture(architecture)
            kind: ChatFormatKind = "harmony" if is_harmony else "jinja"
        else:
            kind = "harmony" if forced_kind == "harmony" else "jinja"
        return cls(
            template=template,
            template_source=source,
            tokenizer=tokenizer,
            bos_token=bos,
            eos_token=eos,
            kind=kind,
            reasoning_format=reasoning_format,
        )

    def prompt(self, request: ChatCompletionRequest) -> tuple[str, list[int]]:
        """The prompt text and its tokens (harmony's special tokens are placed exactly, never parsed)."""
        if self.kind == "harmony":
            tokens: list[int] = []
            parts: list[str] = []
            for text, is_special in render_chat_request_segments(
                [m.model_dump(exclude_none=True) for m in request.messages], **self._harmony_options(request)
            ):
                parts.append(text)
                tokens.extend(self.tokenizer.tokenize(text, parse_special=is_special))
            return "".join(parts), tokens
        text = self.render(request)
        return text, self.tokenize_prompt(text)

    def _harmony_options(self, request: ChatCompletionRequest) -> dict[str, Any]:
        tools = [t.model_dump(exclude_none=True) for t in request.tools] if request.tools else None
        response_format = (
            request.response_format.model_dump(exclude_none=True, by_alias=True)
            if request.response_format
            else None
        )
        return {
            "tools": None if request.tool_choice == "none" else tools,
            "reasoning_effort": request.reasoning_effort,
            "response_format": response_format,
            "builtin_tools": _builtin_tools(request),
        }

    def extra_stops(self) -> tuple[str, ...]:
        return HARMONY_STOPS if self.kind == "harmony" else ()

    def render(self, request: ChatCompletionRequest, *, add_generation_prompt: bool = True) -> str:
        kwargs = dict(request.chat_template_kwargs or {})
        if request.reasoning_effort is not None:
            kwargs.setdefault("reasoning_effort", request.reasoning_effort)
        tools = [tool.model_dump(exclude_none=True) for tool in request.tools] if request.tools else None
        if request.tool_choice == "none":
            tools = None
        return render_chat(
            self.template,
            [m.model_dump(exclude_none=True) for m in request.messages],
            tools=tools,
            add_generation_prompt=add_generation_prompt,
            bos_token=self.bos_token,
            eos_token=self.eos_token,
            template_kwargs=kwargs,
        )

    def tokenize_prompt(self, text: str) -> list[int]:
        tokens = self.tokenizer.tokenize(text, add_bos=False, parse_special=True)
        bos = self.tokenizer.bos_id
        if self.tokenizer.adds_bos and bos is not None and (not tokens or tokens[0] != bos):
            tokens.insert(0, bos)
        return tokens

    def cacheable_prefix(self, request: ChatCompletionRequest, mode: CacheMode, full_text: str) -> str | None:
        """The rendered text seed 003's cache modes keep in sequence 0: the first message, as rendered.

        Templates may fold a system prompt into the next turn, so the first message is rendered with a
        probe conversation after it and the prefix it shares with the real prompt is what can be cached.
        """
        if mode == "none" or not request.messages:
            return None
        first = request.messages[0]
        wanted = ("system", "developer") if mode == "system" else ("user",)
        if first.role not in wanted:
            return None
        probe = ChatMessage(role="user", content="\u2063probe\u2063")
        tail = (
            [probe]
            if mode == "system"
            else [ChatMessage(role="assistant", content="\u2063probe\u2063"), probe]
        )
        probed, _ = self.prompt(request.model_copy(update={"messages": [first, *tail]}))
        return os.path.commonprefix([probed, full_text]) or None  # noqa: RUF071 - text, not paths

    def output_parser(self, request: ChatCompletionRequest, prompt_text: str) -> OutputParser:
        """The parser for this request's output: harmony's, or the auto-parser built from the template."""
        tools = [t.model_dump(exclude_none=True) for t in request.tools] if request.tools else []
        if request.tool_choice == "none":
            tools = []
        if self.kind == "harmony":
            return HarmonyOutputParser(tools=tools, builtin_tools=_builtin_tools(request))
        kwargs = request.chat_template_kwargs or {}
        thinking = kwargs.get("enable_thinking", kwargs.get("thinking"))
        return make_output_parser(
            analyze(self.template),
            tools=tools or None,
            reasoning_format="none" if self.reasoning_format == "none" else "auto",
            enable_thinking=thinking if isinstance(thinking, bool) else None,
            generation_prompt=prompt_text,
        )
