"""Round-trip cases: messages rendered through a template, cut to what the model would emit, and the message
the rendered text really carries. Used by the tests, the benchmark and `template analyze --roundtrip`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from tokenloom.events import ParsedMessage, ParseError, ToolCall
from tokenloom.parsing.analysis.analyze import analyze
from tokenloom.parsing.analysis.probes import (
    CONTENT_TEXT,
    PROBE_CLOCK,
    cut_output,
    flat_tools,
    strip_turn_end,
    try_render,
)
from tokenloom.parsing.analysis.reasoning_analysis import thinking_kwargs
from tokenloom.parsing.stream.output_parser import is_forced_open, make_output_parser
from tokenloom.parsing.structures import ContentStructure, ToolCallStructure

TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Weather forecast for a city",
            "parameters": {
                "type": "object",
                "properties": {"location": {"type": "string"}, "days": {"type": "integer"}},
                "required": ["location"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "run_code",
            "description": "Run a Python snippet",
            "parameters": {
                "type": "object",
                "properties": {
                    "code": {"type": "string"},
                    "options": {
                        "type": "object",
                        "properties": {"timeout": {"type": "integer"}, "flags": {"type": "array"}},
                    },
                },
                "required": ["code"],
            },
        },
    },
]

FIXED_CLOCK = PROBE_CLOCK  # templates that print the time print the same one in every render of a case
CODE = "def double(x):\n    return x * 2\n\nprint(double(21))"
WEATHER = {"location": "Paris", "days": 3}
RUN = {"code": CODE, "options": {"timeout": 5, "flags": ["-v", "--fast"]}}


def _call(index: int, name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {"id": f"call{index:05d}", "type": "function", "function": {"name": name, "arguments": args}}


def _with_ids(assistant: dict[str, Any], id_template: str) -> dict[str, Any]:
    """Ids in the shape the template prints and the model writes (e.g. functions.NAME:INDEX)."""
    calls = [
        dict(c, id=id_template.format(name=c["function"]["name"], index=i))
        for i, c in enumerate(assistant.get("tool_calls", ()))
    ]
    return dict(assistant, tool_calls=calls) if calls else assistant


@dataclass(frozen=True, slots=True)
class Case:
    """One model output and the message it must parse to."""

    template_name: str
    label: str
    generation_prompt: str
    output: str
    expected: ParsedMessage  # arguments as canonical JSON (json.dumps with sort_keys)
    tools: list[dict[str, Any]] | None


def _as_string(call: dict[str, Any]) -> dict[str, Any]:
    function = dict(call["function"], arguments=json.dumps(call["function"]["arguments"]))
    return dict(call, function=function)


def _assistants(has_tools: bool, has_reasoning: bool) -> list[tuple[str, dict[str, Any]]]:
    cases: list[tuple[str, dict[str, Any]]] = []
    if has_reasoning:
        cases.append(
            (
                "reasoning+content",
                {
                    "role": "assistant",
                    "content": "The answer is 42.",
                    "reasoning_content": "Six times seven.",
                },
            )
        )
    if has_tools and not has_reasoning:
        cases.append(("content", {"role": "assistant", "content": "The answer is 42."}))
    if has_tools:
        one = {
            "role": "assistant",
            "content": "Let me check.",
            "tool_calls": [_call(1, "get_weather", WEATHER)],
        }
        if has_reasoning:
            one["reasoning_content"] = "The user wants the weather."
        cases.append(("one call", one))
        two = [_call(2, "get_weather", {"location": "Tokyo", "days": 1}), _call(3, "run_code", RUN)]
        cases.append(("two parallel calls", {"role": "assistant", "content": None, "tool_calls": two}))
    return cases


def canonical(args: Any) -> str:
    return json.dumps(args, sort_keys=True, ensure_ascii=False)


def _expected(
    assistant: dict[str, Any], output: str, content_structure: ContentStructure, gp: str
) -> ParsedMessage:
    """What the rendered text carries: reasoning, content or calls the template dropped are not expected.

    A template may open the reasoning block in the generation prompt but render a past turn without
    its reasoning and without the closing marker: that content sits inside the open block, so the
    rendered text carries it as reasoning.
    """
    content = assistant.get("content") or None
    reasoning = assistant.get("reasoning_content")
    if reasoning and reasoning not in output:
        reasoning = None
    if content and content not in output:
        content = None
    end = content_structure.reasoning_end
    if end and end not in output and is_forced_open(content_structure, True, gp) and not reasoning:
        reasoning, content = content, None
    calls = []
    position = 0
    for call in assistant.get("tool_calls", ()):
        name = call["function"]["name"]
        found = output.find(name, position)
        if found >= 0:
            calls.append((name, canonical(call["function"]["arguments"])))
            position = found + len(name)
    return ParsedMessage(
        content=content,
        reasoning_content=reasoning,
        tool_calls=tuple(ToolCall("", name, args) for name, args in calls),
    )


def _as_template_wants(assistant: dict[str, Any], tools: ToolCallStructure) -> dict[str, Any]:
    """The message as the template expects it: ids, string arguments, "" for a null it would print."""
    rendered = assistant
    if assistant.get("content", "") is None and tools.requires_nonnull_content:
        rendered = dict(rendered, content="")  # the template would print "None"
    if tools.call_id_template:
        rendered = _with_ids(rendered, tools.call_id_template)
    if tools.string_arguments and "tool_calls" in assistant:  # arguments concatenated as text
        rendered = dict(rendered, tool_calls=[_as_string(c) for c in rendered.get("tool_calls", ())])
    return rendered


def round_trip_cases(template: str, template_name: str = "") -> list[Case]:
    """Render the corpus messages this template supports; skip what it refuses to render."""
    analysis = analyze(template)
    caps = analysis.caps
    tools = TOOLS if caps.supports_tools else None
    render_tools = flat_tools(TOOLS) if tools and analysis.tools.flat_tools else tools
    user = {"role": "user", "content": "What is the weather in Paris?"}

    def render_turn(messages: list[dict[str, Any]], add_generation_prompt: bool = False) -> str | None:
        kwargs = {**thinking_kwargs(True), **FIXED_CLOCK}
        return try_render(
            template,
            messages,
            tools=render_tools,
            add_generation_prompt=add_generation_prompt,
            template_kwargs=kwargs,
        )

    prompt = render_turn([user], add_generation_prompt=True)
    plain = render_turn([user, {"role": "assistant", "content": CONTENT_TEXT}])
    if prompt is None or plain is None:
        return []
    content_output = cut_output(prompt, plain)
    cases: list[Case] = []
    for label, assistant in _assistants(caps.supports_tools, caps.supports_reasoning):
        rendered = _as_template_wants(assistant, analysis.tools)
        full = render_turn([user, rendered])
        if full is None and rendered.get("content", "") is None:  # some templates need a string
            full = render_turn([user, dict(rendered, content="")])
        if full is None:
            continue
        emitted = cut_output(prompt, full)
        output = strip_turn_end(emitted, content_output)  # the model stops at its first turn end
        for stop in analysis.tools.stop_markers:  # generation stops there: the text never holds it
            output = output[: -len(stop)] if output.endswith(stop) else output
        gp = full[: len(full) - len(emitted)]
        expected = _expected(assistant, output, analysis.content, gp)
        cases.append(Case(template_name, label, gp, output, expected, tools))
    return cases


def normalized(message: ParsedMessage) -> ParsedMessage:
    """Ids dropped and arguments canonical, so parsed and expected messages compare."""
    return ParsedMessage(
        content=(message.content or "").strip() or None,
        reasoning_content=(message.reasoning_content or "").strip() or None,
        tool_calls=tuple(
            ToolCall("", c.name, canonical(json.loads(c.arguments))) for c in message.tool_calls
        ),
    )


def check_case(case: Case, template: str) -> str | None:
    """None when the case parses back to its expected message, else why not."""
    parser = make_output_parser(
        analyze(template), tools=case.tools, generation_prompt=case.generation_prompt, id_prefix="call_"
    )
    events = parser.feed(case.output) + parser.finish()
    errors = [e.message for e in events if isinstance(e, ParseError)]
    if errors:
        return errors[0]
    got = normalized(parser.message())
    if got != case.expected:
        for field in ("content", "reasoning_content", "tool_calls"):
            if getattr(got, field) != getattr(case.expected, field):
                return f"{field} differs"
    return None


def family(template: str) -> str:
    """A coarse format family from the analysis, for pass-rate tables."""
    analysis = analyze(template)
    if analysis.caps.is_harmony:
        return "harmony"
    if analysis.tools.supports_tools:
        return f"{analysis.tools.function_format.value}/{analysis.tools.argument_format.value}"
    return "reasoning only" if analysis.caps.supports_reasoning else "content only"
