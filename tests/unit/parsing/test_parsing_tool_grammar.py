"""The tool-call grammar of each template accepts the template's own rendered calls."""

from __future__ import annotations

import json
from functools import cache

import pytest
from parsing_helpers import read_template, template_names

from tokenloom.cli.roundtrip import TOOLS, Case, round_trip_cases
from tokenloom.constrain.api import build
from tokenloom.constrain.parser import Grammar, ParserState
from tokenloom.grammar import (
    Choice,
    JsonValue,
    Literal,
    Node,
    Repeat,
    Sequence,
    Text,
    ToolCallGrammar,
    Whitespace,
)
from tokenloom.parsing.analysis.analyze import analyze
from tokenloom.parsing.analysis.tool_grammar import tool_call_grammar

_DECODER = json.JSONDecoder()


def _ends(node: Node, text: str, pos: int) -> set[int]:
    """All positions where `node` can end when it starts at `pos` (a small backtracking matcher)."""
    if isinstance(node, Literal):
        return {pos + len(node.text)} if text.startswith(node.text, pos) else set()
    if isinstance(node, Whitespace):
        ends, i = {pos}, pos
        while i < len(text) and text[i] in " \t\r\n" and i - pos < node.max_length:
            i += 1
            ends.add(i)
        return ends
    if isinstance(node, Text):
        stop = min((i for s in node.stop if (i := text.find(s, pos)) >= 0), default=len(text))
        return set(range(pos, stop + 1))
    if isinstance(node, JsonValue):
        try:
            _, end = _DECODER.raw_decode(text, pos)
        except ValueError:
            return set()
        return {end}
    if isinstance(node, Sequence):
        ends = {pos}
        for item in node.items:
            ends = {e for start in ends for e in _ends(item, text, start)}
        return ends
    if isinstance(node, Choice):
        return {e for option in node.options for e in _ends(option, text, pos)}
    if isinstance(node, Repeat):
        result = {pos} if node.min_count == 0 else set()
        frontier, count = {pos}, 0
        while frontier and (node.max_count is None or count < node.max_count):
            starts = (
                frontier
                if count == 0 or node.separator is None
                else {e for f in frontier for e in _ends(node.separator, text, f)}
            )
            frontier = {e for s in starts for e in _ends(node.item, text, s)} - {pos}
            count += 1
            if count >= node.min_count:
                result |= frontier
        return result
    raise TypeError(node)


@cache
def _tool_cases() -> list[Case]:
    cases: list[Case] = []
    for name in template_names():
        template = read_template(name)
        if analyze(template).caps.supports_tools:
            cases += [c for c in round_trip_cases(template, name) if c.expected.tool_calls]
    return cases


@pytest.mark.parametrize("case", _tool_cases(), ids=lambda c: f"{c.template_name}/{c.label}")
def test_grammar_accepts_the_rendered_section(case: Case) -> None:
    grammar = tool_call_grammar(analyze(read_template(case.template_name)), TOOLS)
    assert grammar is not None
    # Triggers are precise: muse-glimmer's name the tool ("to=get_weather"), not its "to=self" header.
    starts = [i for t in grammar.triggers if (i := case.output.find(t)) >= 0]
    assert starts, grammar.triggers
    section = case.output[min(starts) :].rstrip()
    ends = _ends(grammar.root, section, 0)
    assert ends, section
    assert section[max(ends) :].strip() in ("", case.expected.content)  # content may follow the calls


@pytest.mark.parametrize("case", _tool_cases(), ids=lambda c: f"{c.template_name}/{c.label}")
def test_the_compiled_constraint_accepts_the_rendered_section(case: Case) -> None:
    """The same through the real constraint compiler, which also enforces the schemas and key order."""
    grammar = tool_call_grammar(analyze(read_template(case.template_name)), TOOLS, parallel=True)
    assert grammar is not None
    section = case.output[min(i for t in grammar.triggers if (i := case.output.find(t)) >= 0) :]
    state: ParserState | None = Grammar(build({"tool_calls": grammar})[0]).initial
    end = 0
    for i, c in enumerate(section):
        assert state is not None
        state = state.add_char(c)
        if state is None:
            break
        end = i + 1 if state.can_end() else end
    assert end, section
    assert section[end:].strip() in ("", case.expected.content), section[end:]


def _constraint_end(grammar_root: Node, triggers: tuple[str, ...], text: str) -> int:
    """How far the compiled constraint accepts `text` and could stop there (0: nowhere)."""
    state: ParserState | None = Grammar(
        build({"tool_calls": ToolCallGrammar(triggers, grammar_root)})[0]
    ).initial
    end = 0
    for i, c in enumerate(text):
        assert state is not None
        state = state.add_char(c)
        if state is None:
            break
        end = i + 1 if state.can_end() else end
    return end


def _calls_only_cases() -> list[Case]:
    """The cases whose turn is calls only (no reasoning or content before the first trigger)."""
    out = []
    for case in _tool_cases():
        grammar = tool_call_grammar(
            analyze(read_template(case.template_name)), TOOLS, parallel=True, forced=True
        )
        assert grammar is not None
        start = min(i for t in grammar.triggers if (i := case.output.find(t)) >= 0)
        if not case.output[:start].strip():
            out.append(case)
    return out


@pytest.mark.parametrize("case", _calls_only_cases(), ids=lambda c: f"{c.template_name}/{c.label}")
def test_forced_calls_start_as_the_template_writes_them_after_the_prompt(case: Case) -> None:
    """tool_choice "required": the constraint applies from the first character after the generation prompt,
    so it must accept a calls-only turn as rendered, with the whitespace the template writes before the first
    call (the round-trip output may have lost it where the case's prompt opens a thinking block)."""
    analysis = analyze(read_template(case.template_name))
    grammar = tool_call_grammar(analysis, TOOLS, parallel=True, forced=True)
    assert grammar is not None
    start = min(i for t in grammar.triggers if (i := case.output.find(t)) >= 0)
    text = analysis.tools.call_lead + case.output[start:]
    end = _constraint_end(grammar.root, grammar.triggers, text)
    assert end, text
    assert text[end:].strip() in ("", case.expected.content), text[end:]


def test_muse_glimmer_forced_calls_keep_the_space_after_the_assistant_header() -> None:
    """The generation prompt ends with "<|start|>assistant"; the template writes " to=NAME<|message|>"."""
    template = read_template("muse-glimmer.jinja")
    case = next(
        c for c in round_trip_cases(template, "muse-glimmer.jinja") if c.label == "two parallel calls"
    )
    assert case.generation_prompt.endswith("<|start|>assistant") and case.output.startswith(" to=get_weather")
    forced = tool_call_grammar(analyze(template), TOOLS, forced=True)
    lazy = tool_call_grammar(analyze(template), TOOLS)
    assert forced is not None and lazy is not None
    section = case.output[: case.output.index("</atem:function_calls>") + len("</atem:function_calls>")]
    assert _constraint_end(forced.root, forced.triggers, section) == len(section)
    assert _constraint_end(forced.root, forced.triggers, section[1:]) == 0  # "to=" glued to "assistant"
    assert (
        _constraint_end(lazy.root, lazy.triggers, section[1:]) == len(section) - 1
    )  # lazy: from the trigger


def test_no_grammar_without_tools_or_for_harmony() -> None:
    assert tool_call_grammar(analyze(read_template("Qwen3-Coder.jinja")), []) is None
    assert tool_call_grammar(analyze(read_template("openai-gpt-oss-120b.jinja")), TOOLS) is None
    assert tool_call_grammar(analyze(read_template("google-gemma-2-2b-it.jinja")), TOOLS) is None


def test_triggers_that_begin_another_marker_name_the_tool() -> None:
    analysis = analyze(read_template("muse-glimmer.jinja"))
    assert analysis.tools.triggers == ("to=",)  # also the start of "to=self<|message|>" (reasoning)
    grammar = tool_call_grammar(analysis, TOOLS)
    assert grammar is not None and grammar.triggers == ("to=get_weather", "to=run_code")
    selfish = [{"type": "function", "function": {"name": "self", "parameters": {"type": "object"}}}]
    grammar = tool_call_grammar(analysis, selfish)
    assert grammar is not None
    assert grammar.triggers == ('to=self<|message|><atem:function_calls>\n<atem:invoke name="',)
    assert _ends(grammar.root, grammar.triggers[0] + 'self">\n</atem:invoke>\n</atem:function_calls>', 0)
    qwen = tool_call_grammar(analyze(read_template("Qwen3-Coder.jinja")), TOOLS)
    assert qwen is not None and qwen.triggers == ("<tool_call>",)


def test_json_bodies_carry_the_tool_schema() -> None:
    grammar = tool_call_grammar(analyze(read_template("Qwen-Qwen2.5-7B-Instruct.jinja")), TOOLS[:1])
    assert grammar is not None and grammar.triggers == ("<tool_call>",)
    schemas = [n.schema for n in _walk(grammar.root) if isinstance(n, JsonValue)]
    assert schemas[0]["properties"]["name"] == {"const": "get_weather"}
    assert schemas[0]["properties"]["arguments"] == TOOLS[0]["function"]["parameters"]


def test_json_call_objects_follow_the_templates_key_order_and_constants() -> None:
    """Phi-4-mini renders {"id": ..., "type": "function", "function": {"name": ..., "arguments": ...}}."""
    grammar = tool_call_grammar(
        analyze(read_template("llama-cpp-microsoft-Phi-4-mini-instruct.jinja")), TOOLS
    )
    assert grammar is not None
    schema = next(n.schema for n in _walk(grammar.root) if isinstance(n, JsonValue))
    assert list(schema["properties"]) == ["id", "type", "function"]
    assert schema["properties"]["type"] == {"const": "function"}
    assert list(schema["properties"]["function"]["properties"]) == ["name", "arguments"]
    assert sorted(schema["required"]) == ["function", "id", "type"]


def test_tagged_string_values_are_text_until_the_close_tag() -> None:
    grammar = tool_call_grammar(analyze(read_template("Qwen3-Coder.jinja")), TOOLS[:1])
    assert grammar is not None
    texts = [n for n in _walk(grammar.root) if isinstance(n, Text)]
    assert texts and texts[0].stop == ("\n</parameter>",)


def _walk(node: Node) -> list[Node]:
    out = [node]
    if isinstance(node, Sequence):
        for item in node.items:
            out += _walk(item)
    elif isinstance(node, Choice):
        for option in node.options:
            out += _walk(option)
    elif isinstance(node, Repeat):
        out += _walk(node.item)
    return out
