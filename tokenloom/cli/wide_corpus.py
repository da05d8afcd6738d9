"""Round-trip cases that look like real conversations: multi-line and fenced content, JSON and angle
brackets in the text, reasoning with blank lines, several calls with nested and unicode arguments, empty
content with calls, thinking on and off, and the last answer of a conversation with tool results before it.

Each message is rendered through the template, cut after the generation prompt and compared (by the
roundtrip module's rules) with what the rendered text really carries. Harmony templates are included.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tokenloom.cli.roundtrip import FIXED_CLOCK, TOOLS, Case, _as_template_wants, _call, _expected
from tokenloom.events import ParsedMessage
from tokenloom.parsing.analysis.analyze import analyze
from tokenloom.parsing.analysis.probes import CONTENT_TEXT, cut_output, flat_tools, strip_turn_end, try_render
from tokenloom.parsing.analysis.reasoning_analysis import thinking_kwargs
from tokenloom.parsing.markers import common_prefix

USER = {"role": "user", "content": "Plan my day in Zürich and check the weather."}
MULTILINE = "Here is the plan:\n\n1. Breakfast at 8.\n2. Museum at 10.\n\nEnjoy!"
FENCED = "Use this:\n```python\ndef pick(xs):\n    return [x for x in xs if 0 < x < 10]\n```\nThat is all."
JSON_TEXT = 'The API answered {"status": "ok", "items": [1, 2, {"id": "a<b"}]} just now.'
ANGLES = "Compare a < b and b > c; HTML like <b>bold</b> or <br/> stays text, as does x->y."
UNICODE = "Grüße aus Zürich — 東京 is far 🌸, naïve café."
REASONING = "First, find the city.\n\nThen check the forecast: 3 days.\n\n  Indented note."
NESTED = {
    "code": 'print("a\\\\b")\nif x < 3 and y > 2:\n    s = \'<tag attr="v">\'',
    "options": {"timeout": 30, "flags": ["--fast", "ünï"], "env": {"LANG": "de_CH.UTF-8"}},
}
UNICODE_ARGS = {"location": "Zürich, 東京", "days": 2}


@dataclass(frozen=True, slots=True)
class Scenario:
    label: str
    assistant: dict[str, Any]
    thinking: bool = True
    history: list[dict[str, Any]] = field(default_factory=list)


def _assistant(
    content: str | None, reasoning: str | None = None, calls: list[Any] | None = None
) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if reasoning:
        message["reasoning_content"] = reasoning
    if calls:
        message["tool_calls"] = calls
    return message


def scenarios(has_tools: bool, has_reasoning: bool) -> list[Scenario]:
    """The corpus for a template that can write tool calls and/or reasoning."""
    out = [
        Scenario(label, _assistant(text))
        for label, text in (
            ("multi-line", MULTILINE),
            ("code block", FENCED),
            ("json in content", JSON_TEXT),
            ("angle brackets", ANGLES),
            ("unicode", UNICODE),
        )
    ]
    if has_reasoning:
        out.append(Scenario("reasoning with blank lines", _assistant(MULTILINE, REASONING)))
        out.append(Scenario("reasoning + code block", _assistant(FENCED, "Think <carefully> about it.")))
        out.append(Scenario("thinking off", _assistant(UNICODE), thinking=False))
    if has_tools:
        weather = _call(1, "get_weather", UNICODE_ARGS)
        code = _call(2, "run_code", NESTED)
        out.append(Scenario("empty content, one call", _assistant("", None, [weather])))
        out.append(Scenario("null content, nested call", _assistant(None, None, [code])))
        out.append(Scenario("content + two calls", _assistant(ANGLES, None, [weather, code])))
        if has_reasoning:
            out.append(
                Scenario("reasoning + content + two calls", _assistant(MULTILINE, REASONING, [weather, code]))
            )
            out.append(Scenario("thinking off, one call", _assistant(None, None, [weather]), thinking=False))
        call = _call(0, "get_weather", {"location": "Zürich", "days": 1})
        history = [
            USER,
            _assistant("Checking.", None, [call]),
            {"role": "tool", "tool_call_id": call["id"], "name": "get_weather", "content": '{"temp": 21}'},
        ]
        out.append(Scenario("after a tool result", _assistant(MULTILINE), history=history))
        out.append(
            Scenario("after a tool result, another call", _assistant(None, None, [code]), history=history)
        )
    return out


def wide_cases(template: str, template_name: str = "") -> list[Case]:
    """Render each scenario the template supports; skip what it refuses to render."""
    analysis = analyze(template)
    caps = analysis.caps
    has_tools = caps.supports_tools or caps.is_harmony
    tools = TOOLS if has_tools else None
    render_tools = flat_tools(TOOLS) if tools and analysis.tools.flat_tools else tools
    has_reasoning = caps.supports_reasoning or caps.is_harmony
    cases: list[Case] = []
    for scenario in scenarios(has_tools, has_reasoning):
        kwargs = {**thinking_kwargs(scenario.thinking), **FIXED_CLOCK}
        history = scenario.history or [USER]

        def render(messages: list[dict[str, Any]], gen: bool, kw: dict[str, Any] = kwargs) -> str | None:
            return try_render(
                template, messages, tools=render_tools, add_generation_prompt=gen, template_kwargs=kw
            )

        prompt = render(history, True)
        plain = render([*history, {"role": "assistant", "content": CONTENT_TEXT}], False)
        assistant = scenario.assistant
        rendered = _as_template_wants(assistant, analysis.tools)
        full = render([*history, rendered], False)
        if full is None and rendered.get("content", "") is None:
            full = render([*history, dict(rendered, content="")], False)
        before = render(history, False)
        if prompt is None or plain is None or full is None or before is None:
            continue
        if len(common_prefix(prompt, full)) < len(common_prefix(prompt, before)):
            continue  # the template renders the earlier turns differently once this answer follows
        emitted = cut_output(prompt, full)
        output = strip_turn_end(emitted, cut_output(prompt, plain))
        for stop in analysis.tools.stop_markers:
            output = output[: -len(stop)] if output.endswith(stop) else output
        gp = full[: len(full) - len(emitted)]
        expected = _expected(assistant, output, analysis.content, gp)
        content = expected.content
        if caps.is_harmony and content and f"analysis<|message|>{content}" in output:
            # gpt-oss writes the text of a message with calls on the analysis channel: it is reasoning
            expected = ParsedMessage(None, content, expected.tool_calls)
        cases.append(Case(template_name, scenario.label, gp, output, expected, tools))
    return cases
