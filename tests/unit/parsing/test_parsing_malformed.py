"""Malformed output of each format family: content plus a ParseError, never an exception."""

from __future__ import annotations

import pytest
from parsing_helpers import feed_all, joined, read_template

from tokenloom.parsing.analyze import analyze
from tokenloom.parsing.output_parser import make_output_parser
from tokenloom.parsing.roundtrip import TOOLS, round_trip_cases

FAMILIES = {
    "json_object": "Qwen-Qwen2.5-7B-Instruct.jinja",
    "json_array": "mistralai-Mistral-Nemo-Instruct-2407.jinja",
    "bare_json": "meta-llama-Llama-3.1-8B-Instruct.jinja",
    "tagged": "Qwen3-Coder.jinja",
    "key_value_tags": "GLM-4.6.jinja",
    "invoke": "MiniMax-M2.jinja",
    "prefixed_indexed": "moonshotai-Kimi-K2.jinja",
    "bracket_tag": "Mistral-Small-3.2-24B-Instruct-2506.jinja",
    "name_as_key": "Apertus-8B-Instruct.jinja",
    "deepseek_code_block": "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja",
    "cohere_array": "CohereForAI-c4ai-command-r7b-12-2024-tool_use.jinja",
    "dsml": "deepseek-ai-DeepSeek-V3.2.jinja",
}


def _one_call(name: str) -> tuple[str, str]:
    case = next(c for c in round_trip_cases(read_template(name), name) if c.label == "one call")
    return case.output, case.generation_prompt


def _mutations(output: str) -> dict[str, str]:
    start = output.find("get_weather")
    if start < 0:  # the call is a JSON object whose name comes later: cut inside it anyway
        start = output.find("{")
    cut = start + (len(output) - start) * 2 // 3
    broken = output.replace('"location"', "location", 1) if '"location"' in output else None
    if broken is None:  # tagged arguments: break the first argument's opening tag
        broken = output.replace("location", "<<<", 1)
    return {
        "unterminated_section": output[:cut],
        "unknown_tool": output.replace("get_weather", "no_such_tool"),
        "broken": broken,
    }


@pytest.mark.parametrize("family", sorted(FAMILIES))
@pytest.mark.parametrize("mutation", ["unterminated_section", "unknown_tool", "broken"])
def test_malformed_becomes_content_and_error(family: str, mutation: str) -> None:
    name = FAMILIES[family]
    output, prompt = _one_call(name)
    text = _mutations(output)[mutation]
    for pieces in ([text], list(text)):
        parser = make_output_parser(analyze(read_template(name)), tools=TOOLS, generation_prompt=prompt)
        events = feed_all(parser, pieces)
        _, _, _, errors = joined(events)
        message = parser.message()
        assert errors, (family, mutation, text)
        assert message.tool_calls == ()
        assert message.content
        if mutation == "unknown_tool":
            assert "unknown_tool" in errors
            assert "no_such_tool" in message.content
        if mutation == "unterminated_section":
            assert "unterminated_section" in errors
