"""Probe conversations for template analysis and the cut of "what the model emitted" from a rendering.

Renders through `tokenloom.chat.render` only; a template that cannot render a probe gives None, never raises.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from tokenloom.chat.render import render
from tokenloom.errors import TemplateError
from tokenloom.parsing.markers import (
    TAG_RE,
    common_prefix,
    common_suffix,
    token_aligned_prefix,
    token_aligned_suffix,
)

logger = logging.getLogger(__name__)
USER_TEXT = "USER_PROBE_TEXT"
CONTENT_TEXT = "CONTENT_PROBE_TEXT"
THINK_TEXT = "THINK_PROBE_TEXT"
NAME_A = "probe_alpha"
NAME_B = "probe_beta"
ID_A = "a1b2c3d4e"  # nine alphanumerics: Mistral templates insist
ID_B = "f5g6h7i8j"
ARGS_A: dict[str, Any] = {"key_one": "value_one", "key_two": 7}
ARGS_B: dict[str, Any] = {"key_three": "value_three"}

# Templates that print the time (firefunction's `datetime`) print the same one in every probe of a template
PROBE_CLOCK = {"datetime": "Jan 01 2026 00:00:00 GMT"}
PROBE_TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": NAME_A,
            "description": "probe tool",
            "parameters": {
                "type": "object",
                "properties": {"key_one": {"type": "string"}, "key_two": {"type": "integer"}},
                "required": ["key_one"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": NAME_B,
            "description": "probe tool",
            "parameters": {"type": "object", "properties": {"key_three": {"type": "string"}}},
        },
    },
]


def flat_tools(tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Tools without the OpenAI "function" wrapper, plus Cohere's `parameter_definitions`.

    Some templates (Command R+ tool_use, early Apertus) read `tool.name` and `tool.parameter_definitions`.
    """
    flat = []
    for tool in tools:
        function = tool.get("function", tool)
        params = function.get("parameters") or {}
        required = set(params.get("required") or ())
        definitions = {
            key: {"type": prop.get("type", "string"), "description": "", "required": key in required}
            for key, prop in (params.get("properties") or {}).items()
        }
        flat.append({**function, "parameter_definitions": definitions})
    return flat


def tool_call(call_id: str, name: str, args: dict[str, Any], as_string: bool) -> dict[str, Any]:
    arguments: Any = json.dumps(args, ensure_ascii=False) if as_string else args
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def try_render(template: str, messages: list[dict[str, Any]], **kwargs: Any) -> str | None:
    """Render, or None when the template refuses the conversation."""
    try:
        return render(template, messages, **kwargs)
    except (TemplateError, ArithmeticError, LookupError, TypeError, ValueError, AttributeError) as exc:
        logger.debug("probe render failed: %s", exc)
        return None
    except RecursionError:
        return None  # an untrusted template failing on a probe means it cannot express that conversation


class Prober:
    """Renders probe conversations of one template and cuts out the assistant's own output."""

    def __init__(self, template: str, tools: list[dict[str, Any]] | None = None) -> None:
        self.template = template
        self.tools = tools
        self.user = {"role": "user", "content": USER_TEXT}

    def prompt(self, add_generation_prompt: bool, kwargs: dict[str, Any] | None = None) -> str | None:
        return try_render(
            self.template,
            [self.user],
            tools=self.tools,
            add_generation_prompt=add_generation_prompt,
            template_kwargs={**PROBE_CLOCK, **(kwargs or {})},
        )

    def generation_prompt(self, kwargs: dict[str, Any] | None = None) -> str | None:
        """The text the template appends for the assistant to start (header, maybe an open <think>)."""
        with_gp, without = self.prompt(True, kwargs), self.prompt(False, kwargs)
        if with_gp is None or without is None:
            return None
        if with_gp.startswith(without):
            return with_gp[len(without) :]
        return with_gp[len(common_prefix(with_gp, without)) :]

    def output(self, assistant: dict[str, Any], kwargs: dict[str, Any] | None = None) -> str | None:
        """What follows the generation prompt when `assistant` is the last turn (turn end included)."""
        full = try_render(
            self.template,
            [self.user, assistant],
            tools=self.tools,
            add_generation_prompt=False,
            template_kwargs={**PROBE_CLOCK, **(kwargs or {})},
        )
        prompt = self.prompt(True, kwargs)
        if full is None or prompt is None:
            return None
        return cut_output(prompt, full)


def cut_output(prompt: str, full: str) -> str:
    """The part of `full` (a rendered conversation) that the model would emit after `prompt`.

    Where the template renders a past assistant turn differently from the generation prompt (e.g. the
    prompt ends with "<think>\\n" but the turn has none), cut at the last token boundary they share.
    """
    if full.startswith(prompt):
        return full[len(prompt) :]
    shared = token_aligned_prefix(common_prefix(prompt, full))
    rest = full[len(shared) :]
    # A template that appends text after the assistant header (Command R+ repeats its instructions)
    # still ends the prompt with the header the turn starts with: skip that overlap.
    for n in range(min(len(rest), 200), 0, -1):
        if rest[n - 1] in ">]\n" and prompt.endswith(rest[:n]):
            return rest[n:]
    return rest


def strip_turn_end(text: str, content_output: str, after: int = 0) -> str:
    """Drop the end-of-turn text (e.g. "<|im_end|>\n") from a tool-call output.

    The turn end is what follows the probe content in a content output; its longest tag-aligned end
    found after `after` (the last call's name) cuts the text, else the suffix both outputs share does.
    """
    if CONTENT_TEXT in content_output:
        tail = content_output[content_output.find(CONTENT_TEXT) + len(CONTENT_TEXT) :]
        for match in TAG_RE.finditer(tail):  # the longest end of the tail that the text has too
            if (cut := text.find(tail[match.start() :].rstrip(), after)) >= 0:
                return text[:cut]
    end = token_aligned_suffix(common_suffix(text, content_output))
    return text[: len(text) - len(end)] if end else text


def find_turn_end(prober: Prober, content_end: str) -> str:
    """The tag(s) a past answer ends with after its text and any content wrapper, e.g. "<|im_end|>";
    "" when that is no tag (plain text or whitespace only)."""
    output = prober.output({"role": "assistant", "content": CONTENT_TEXT})
    if output is None or CONTENT_TEXT not in output:
        return ""
    tail = output[output.find(CONTENT_TEXT) + len(CONTENT_TEXT) :].strip()
    if content_end and tail.startswith(content_end):
        tail = tail[len(content_end) :].lstrip()
    run = _tag_run(tail)  # Command R+ writes its tool preamble after the turn's end tags
    return run if len(run) <= 64 else ""


def _tag_run(text: str) -> str:
    """The tags `text` starts with, back to back or with a word glued between them
    ("<|close|>message<|sep|>"), up to the first other text."""
    end = 0
    for match in TAG_RE.finditer(text):
        gap = text[end : match.start()]
        if gap and not (gap.isidentifier() and end > 0):
            break
        end = match.end()
    return text[:end]


def find_assistant_header(prober: Prober, reasoning_markers: tuple[str, str]) -> str:
    """The generation prompt's own text before any reasoning marker, when it holds a tag
    ("<|im_start|>assistant", DeepSeek's Assistant tag); "" otherwise."""
    prompt = prober.generation_prompt() or ""
    for marker in reasoning_markers:
        if marker and (at := prompt.find(marker)) >= 0:
            prompt = prompt[:at]
    header = prompt.strip()
    return header if TAG_RE.search(header) and len(header) <= 64 else ""
