"""Content around tool-call sections is the output with the sections cut out, trimmed only at the ends of the
message, in every format family and every chunking."""

from __future__ import annotations

from functools import cache

import pytest
from parsing_helpers import feed_all, joined, random_pieces, read_template

from tokenloom.cli.roundtrip import TOOLS, round_trip_cases
from tokenloom.events import ContentDelta
from tokenloom.parsing.analysis.analyze import analyze
from tokenloom.parsing.analysis.tool_grammar import tool_call_grammar
from tokenloom.parsing.stream.output_parser import make_output_parser

FAMILIES = [
    "Qwen-Qwen2.5-7B-Instruct.jinja",  # JSON object in <tool_call> tags
    "llama-cpp-microsoft-Phi-4-mini-instruct.jinja",  # JSON object with id and type
    "meta-llama-Llama-3.1-8B-Instruct.jinja",  # bare JSON object
    "mistralai-Mistral-Nemo-Instruct-2407.jinja",  # JSON array after [TOOL_CALLS]
    "CohereForAI-c4ai-command-r7b-12-2024-tool_use.jinja",  # JSON list in an action block
    "Qwen3-Coder.jinja",  # tagged arguments
    "GLM-4.7-Flash.jinja",  # key-value tags
    "MiniMax-M2.jinja",  # <invoke name="X"> with parameter tags
    "moonshotai-Kimi-K2.jinja",  # prefixed-indexed
    "Mistral-Small-3.2-24B-Instruct-2506.jinja",  # bracket tag
    "deepseek-ai-DeepSeek-V3.1.jinja",  # name then JSON arguments
    "google-gemma-4-31B-it.jinja",  # relaxed object
    "LFM2.5-8B-A1B.jinja",  # pythonic
    "muse-glimmer.jinja",  # to=NAME headers
]


@cache
def _section(name: str) -> str:
    """A one-call section exactly as the template renders it (from the trigger to the end of the call)."""
    template = read_template(name)
    case = next(c for c in round_trip_cases(template, name) if len(c.expected.tool_calls) == 1)
    grammar = tool_call_grammar(analyze(template), TOOLS)
    assert grammar is not None
    start = min(i for t in grammar.triggers if (i := case.output.find(t)) >= 0)
    section = case.output[start:].rstrip()
    content = case.expected.content or ""
    if content and section.endswith(content):
        section = section[: -len(content)].rstrip()
    return section


def _parse(name: str, text: str) -> list[tuple[str | None, int, tuple[object, ...]]]:
    """(content, number of calls, joined deltas) for the text fed whole, by character and in random pieces."""
    analysis = analyze(read_template(name))
    results = []
    for pieces in ([text], list(text), random_pieces(text, len(text))):
        # A prompt that opens no reasoning block: the output starts as content.
        parser = make_output_parser(analysis, tools=TOOLS, id_prefix="c", generation_prompt="")
        events = feed_all(parser, pieces)
        deltas = [e.text for e in events if isinstance(e, ContentDelta)]
        assert not deltas or deltas[-1] == deltas[-1].rstrip()  # nothing held goes out at the end
        message = parser.message()
        results.append((message.content, len(message.tool_calls), joined(events)))
    return results


@pytest.mark.parametrize("name", FAMILIES)
def test_content_keeps_the_whitespace_where_the_call_was(name: str) -> None:
    results = _parse(name, "Hi " + _section(name) + " after")
    assert results[0] == results[1] == results[2]
    content, num_calls, deltas = results[0]
    assert (content, num_calls, deltas[3]) == ("Hi  after", 1, [])


@pytest.mark.parametrize("name", FAMILIES)
def test_whitespace_at_the_ends_of_the_message_is_trimmed(name: str) -> None:
    for text, expected in (
        ("Hi \n" + _section(name) + "\n ", "Hi"),
        ("\n" + _section(name) + "\n after \n", "after"),
        (" " + _section(name) + "\n", None),
    ):
        results = _parse(name, text)
        assert results[0] == results[1] == results[2], text
        assert results[0][:2] == (expected, 1), text
