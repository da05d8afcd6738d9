"""`JinjaFormat`: the model's own chat template renders the prompt; the auto-parser reads the output.

One render per request: the cache prefix of seed 003's modes is found by a marker written after the first
message's content in that same render, and a continued assistant message (prefill) is appended after the
generation prompt, as llama-server does.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from tokenloom.chat.render import render_chat
from tokenloom.engine.slots import common_prefix_len
from tokenloom.engine.vocab import Tokenizer
from tokenloom.events import OutputParser
from tokenloom.grammar import Constrained
from tokenloom.parsing.analysis.analyze import analyze
from tokenloom.parsing.stream.output_parser import is_forced_open, make_output_parser
from tokenloom.pipeline.budget import ReasoningMarkers
from tokenloom.pipeline.chat_format import PrefixPolicy, Prompt, tokenize_prompt_text, with_bos
from tokenloom.pipeline.guard import ControlTexts, HiddenSpecials
from tokenloom.pipeline.request import ChatRequest, ImagePart
from tokenloom.pipeline.tool_constraints import jinja_constraint

# Written after the first message's content to find where it ends in the rendered prompt; private-use
# characters no tokenizer-visible text contains, removed again before tokenizing.
_CACHE_MARK = "\ue000tokenloom:cache-end\ue000"
# Where an image goes, written as the image's text part; the tokenizer puts the image's tokens there.
_IMAGE_MARK = "\ue000tokenloom:image:{}\ue000"
_IMAGE_MARKS = re.compile("\ue000tokenloom:image:(\\d+)\ue000")


@dataclass(slots=True)
class JinjaFormat:
    """A chat template plus the auto-parser built from its analysis."""

    template: str
    template_source: str
    tokenizer: Tokenizer
    bos_token: str = ""
    eos_token: str = ""
    keep_reasoning_in_content: bool = False  # the server's --reasoning-format none
    _controls: ControlTexts | None = None
    accepts_images: bool = True  # placed where the template writes the image's part (engine/media.py)

    def prompt(self, request: ChatRequest, policy: PrefixPolicy) -> Prompt:
        hidden = HiddenSpecials(self.controls)  # request text never becomes control tokens (guard.py)
        images = _Images()
        messages = [hidden.hide(message.template_dict(images.mark)) for message in request.messages]
        prefill = ""
        if request.continues_assistant:
            prefill = hidden.hide(request.messages[-1].text())
            messages.pop()
        marked = _mark_cache_end(messages, policy)
        text = render_chat(
            self.template,
            messages,
            tools=hidden.hide(request.tool_dicts()) or None,
            add_generation_prompt=True,
            bos_token=self.bos_token,
            eos_token=self.eos_token,
            template_kwargs=hidden.hide(_template_kwargs(request)),
        )
        cache_end = text.find(_CACHE_MARK) if marked else -1
        if marked:
            text = text.replace(_CACHE_MARK, "")
        tokens = self._tokenize_guarded(hidden, text + prefill, images)
        cache_len = 0
        if cache_end >= 0:
            shared = common_prefix_len(self._tokenize_guarded(hidden, text[:cache_end], images), tokens)
            cache_len = shared if shared >= policy.min_tokens else 0
        text, prefill = hidden.reveal(images.reveal(text)), hidden.reveal(prefill)
        return Prompt(text + prefill, tokens, text, prefill, cache_len, images.chunks())

    @property
    def controls(self) -> ControlTexts:
        """The model's control-token texts, indexed once per format."""
        if self._controls is None:
            self._controls = ControlTexts.of(self.tokenizer.control_texts)
        return self._controls

    def _tokenize_guarded(self, hidden: HiddenSpecials, text: str, images: _Images) -> list[int]:
        def tokenize(run: str, special: bool) -> list[int]:
            return self.tokenizer.tokenize(run, add_bos=False, parse_special=special)

        if not images.parts:
            return with_bos(self.tokenizer, hidden.tokenize(text, tokenize))
        tokens: list[int] = []
        at = 0
        for match in _IMAGE_MARKS.finditer(text):
            index = int(match.group(1))
            if index >= len(images.parts):
                continue  # not one of this request's marks: text like any other
            tokens.extend(hidden.tokenize(text[at : match.start()], tokenize))
            tokens.extend(images.parts[index].prepared.tokens)
            at = match.end()
        tokens.extend(hidden.tokenize(text[at:], tokenize))
        return with_bos(self.tokenizer, tokens)

    def stops(self) -> tuple[str, ...]:
        return ()

    def output_parser(self, request: ChatRequest, prompt: Prompt) -> OutputParser:
        thinking = request.template_kwargs.get("enable_thinking", request.template_kwargs.get("thinking"))
        if request.reasoning.enabled is not None:
            thinking = request.reasoning.enabled
        keep = self.keep_reasoning_in_content or request.reasoning.keep_in_content
        return make_output_parser(
            analyze(self.template),
            tools=request.tool_dicts() or None,
            reasoning_format="none" if keep else "auto",
            enable_thinking=thinking if isinstance(thinking, bool) else None,
            generation_prompt=prompt.generation_prompt,
            prefill=prompt.prefill,
        )

    def constraint(self, request: ChatRequest, prompt: Prompt) -> Constrained | None:
        return jinja_constraint(request, analyze(self.template), prompt.generation_prompt, prompt.prefill)

    def reasoning_markers(self, request: ChatRequest, prompt: Prompt) -> ReasoningMarkers | None:
        """The template's reasoning markers, and whether this output starts inside reasoning."""
        content = analyze(self.template).content
        if not content.reasoning_end or request.reasoning.enabled is False:
            return None
        is_open = is_forced_open(content, request.reasoning.enabled, prompt.generation_prompt)
        if prompt.prefill:
            start_at = prompt.prefill.rfind(content.reasoning_start) if content.reasoning_start else -1
            end_at = prompt.prefill.rfind(content.reasoning_end)
            is_open = start_at > end_at or (is_open and end_at < 0)
        return ReasoningMarkers(content.reasoning_start, content.reasoning_end + "\n\n", is_open)

    def tokenize_text(self, text: str) -> list[int]:
        return tokenize_prompt_text(self.tokenizer, text)

    def capabilities(self) -> frozenset[str]:
        analysis = analyze(self.template)
        found = {"completion"}
        if analysis.caps.supports_tools or analysis.tools.supports_tools:
            found.add("tools")
        if analysis.caps.supports_reasoning or analysis.content.reasoning_end:
            found.add("thinking")
        return frozenset(found)


def _template_kwargs(request: ChatRequest) -> dict[str, Any]:
    """The request's template variables plus its reasoning controls under the names clients use."""
    kwargs = dict(request.template_kwargs)
    if request.reasoning.effort is not None:
        kwargs.setdefault("reasoning_effort", request.reasoning.effort)
    if request.reasoning.enabled is not None:
        kwargs.setdefault("enable_thinking", request.reasoning.enabled)
    return kwargs


def _mark_cache_end(messages: list[dict[str, Any]], policy: PrefixPolicy) -> bool:
    """Write the cache marker after the first message's content when the policy caches that message."""
    if policy.mode == "none" or not messages:
        return False
    first = messages[0]
    wanted = ("system", "developer") if policy.mode == "system" else ("user",)
    content = first.get("content")
    if first["role"] not in wanted:
        return False
    if isinstance(content, str):
        messages[0] = {**first, "content": content + _CACHE_MARK}
        return True
    if isinstance(content, list) and content and content[-1].get("type") == "text":
        last = {**content[-1], "text": content[-1]["text"] + _CACHE_MARK}
        messages[0] = {**first, "content": [*content[:-1], last]}
        return True
    return False


class _Images:
    """One render's images, in the order the template wrote them, each behind its numbered mark."""

    def __init__(self) -> None:
        self.parts: list[ImagePart] = []

    def mark(self, part: ImagePart) -> str:
        self.parts.append(part)
        return _IMAGE_MARK.format(len(self.parts) - 1)

    def reveal(self, text: str) -> str:
        """The prompt text as a person reads it: each image as "<image>"."""
        if not self.parts:
            return text
        return _IMAGE_MARKS.sub(
            lambda m: "<image>" if int(m.group(1)) < len(self.parts) else m.group(0), text
        )

    def chunks(self) -> dict[int, Any]:
        return {part.prepared.chunk.first_placeholder: part.prepared.chunk for part in self.parts}
