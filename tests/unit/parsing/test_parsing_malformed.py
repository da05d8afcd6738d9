"""Malformed output of each format family: a ParseError, never an exception, the same in any chunking.

The rule (see `tokenloom/parsing/stream/section_stream.py`): a call is announced once its first argument
was read; a fault found before that sends the section's text to the content; a fault found after (the
arguments were streaming) closes the call with exactly the argument text already streamed, and the raw text
from there on goes to the content.
"""

from __future__ import annotations

import time

import pytest
from parsing_helpers import feed_all, joined, random_pieces, read_template

from tokenloom.cli.roundtrip import TOOLS, round_trip_cases
from tokenloom.events import ParseError, ToolCallEnd
from tokenloom.parsing.analysis.analyze import analyze
from tokenloom.parsing.stream.output_parser import make_output_parser

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
    "relaxed_object": "google-gemma-4-31B-it.jinja",
    "pythonic": "LFM2.5-8B-A1B.jinja",
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


def _canonical_args(name: str) -> str:
    output, prompt = _one_call(name)
    parser = make_output_parser(analyze(read_template(name)), tools=TOOLS, generation_prompt=prompt)
    feed_all(parser, [output])
    return parser.message().tool_calls[0].arguments


@pytest.mark.parametrize("family", sorted(FAMILIES))
@pytest.mark.parametrize("mutation", ["unterminated_section", "unknown_tool", "broken"])
def test_malformed_gives_an_error_and_keeps_the_text(family: str, mutation: str) -> None:
    name = FAMILIES[family]
    output, prompt = _one_call(name)
    text = _mutations(output)[mutation]
    results = []
    for pieces in ([text], list(text), random_pieces(text, 7)):
        parser = make_output_parser(
            analyze(read_template(name)), tools=TOOLS, generation_prompt=prompt, id_prefix="c"
        )
        events = feed_all(parser, pieces)
        results.append((parser.message(), joined(events)))
        errors = [e for e in events if isinstance(e, ParseError)]
        assert errors, (family, mutation, text)
        message = parser.message()
        if mutation == "unknown_tool":  # known before the call is announced: all of it is content
            assert message.tool_calls == ()
            assert [e.kind for e in errors] == ["unknown_tool"]
            assert message.content and "no_such_tool" in message.content
            continue
        if mutation == "unterminated_section":
            assert [e.kind for e in errors] == ["unterminated_section"]
        if (
            not message.tool_calls
        ):  # cut or broken before its first argument: no call, every character is content
            content = (message.content or "").strip()
            assert "get_weather" in content and text.rstrip().endswith(content), (family, mutation)
            assert not joined(events)[2]
            continue
        # Announced, then broken: the call ends with what was streamed, a prefix of the intended arguments.
        (call,) = message.tool_calls
        assert call.name == "get_weather"
        assert _canonical_args(name).startswith(call.arguments)
        assert joined(events)[2] == {0: call.arguments}
        after_error = events[events.index(errors[0]) + 1 :]
        assert any(isinstance(e, ToolCallEnd) for e in after_error)
        if mutation == "broken":
            assert message.content and "Paris" in message.content
    assert results[0] == results[1] == results[2]


def test_garbage_after_a_trigger_is_content() -> None:
    parser = make_output_parser(analyze(read_template(FAMILIES["json_object"])), tools=TOOLS)
    events = feed_all(parser, list("Hi <tool_call>\nnot json at all"))
    assert (parser.message().content or "").endswith("<tool_call>\nnot json at all")
    assert parser.message().tool_calls == ()
    assert joined(events)[3] == ["tool_call_parse_error"]


def test_json_breaking_midway_closes_the_call_with_what_was_streamed() -> None:
    parser = make_output_parser(analyze(read_template(FAMILIES["json_object"])), tools=TOOLS, id_prefix="c")
    text = (
        '<tool_call>\n{"name": "get_weather", "arguments": {"location": "Oslo", "days": three}}\n</tool_call>'
    )
    events = feed_all(parser, list(text))
    message = parser.message()
    expected = '{"location": "Oslo", "days": '
    assert [(c.name, c.arguments) for c in message.tool_calls] == [("get_weather", expected)]
    assert message.content == "three}}\n</tool_call>"
    kinds = [type(e).__name__ for e in events]
    assert kinds[kinds.index("ParseError") + 1] == "ToolCallEnd"


def test_duplicate_keys_break_the_call() -> None:
    parser = make_output_parser(analyze(read_template(FAMILIES["json_object"])), tools=TOOLS, id_prefix="c")
    text = (
        '<tool_call>\n{"name": "get_weather", "arguments": {"location": "A", "location": "B"}}\n</tool_call>'
    )
    events = feed_all(parser, [text])
    assert parser.message().tool_calls[0].arguments == '{"location": "A", '
    assert "duplicate" in next(e.message for e in events if isinstance(e, ParseError))


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_a_section_that_falls_back_keeps_the_whitespace_before_its_trigger(family: str) -> None:
    """The content is the text as written ("Hi <tool_call>..." keeps its space); a section that parses keeps
    that whitespace only if content follows, so none of it may go out before the section is decided."""
    name = FAMILIES[family]
    analysis = analyze(read_template(name))
    output, prompt = _one_call(name)
    at, trigger = min((output.find(t), t) for t in analysis.tools.triggers if t in output)
    head, section = output[:at] + "Hi \n\t", output[at:]
    before = ""  # the content when the call parses: the head without its trailing whitespace
    for section_text, is_call in ((section, True), (section.replace("get_weather", "no_such_tool"), False)):
        text = head + section_text
        results = []
        for pieces in ([text], list(text), random_pieces(text, 11)):
            parser = make_output_parser(analysis, tools=TOOLS, generation_prompt=prompt, id_prefix="c")
            content = joined(feed_all(parser, pieces))[0]
            results.append((parser.message(), content))
            if is_call:  # content after the section (Gemma 4's) keeps the whitespace held before it
                assert "Hi" in content and len(parser.message().tool_calls) == 1, (family, content)
                before = content[: content.rindex("Hi") + 2]
                assert content == before or content.startswith(before + " \n\t"), (family, content)
            else:
                assert content.startswith(before + " \n\t" + trigger), (family, content)
                assert content[len(before) :] in text, (family, content)
        assert results[0] == results[1] == results[2]


@pytest.mark.parametrize(
    ("family", "text"),
    [
        ("json_object", "Hi <tool_call>broken"),
        ("json_object", '<tool_call>\n{"name": "get_weather", "arguments": {"location" "Oslo"}}'),
        (
            "json_object",
            '<tool_call>\n{"name": "get_weather", "arguments": {"location": "Oslo"}}\n</tool_cull>',
        ),
        ("tagged", "<tool_call>\n<function=get_weather>\n<param=location>Oslo"),
        ("prefixed_indexed", "<|tool_calls_section_begin|><|tool_call_beginning|>"),
        ("bracket_tag", "[TOOL_CALLS]get_weather[ARGS]location"),
    ],
)
def test_parse_errors_do_not_depend_on_chunking(family: str, text: str) -> None:
    """The message quotes the text only up to the fault: `at 'b'` however the text was split, never `at
    'broken'` when it came whole."""
    analysis = analyze(read_template(FAMILIES[family]))
    results = []
    for pieces in ([text], list(text), random_pieces(text, 3)):
        parser = make_output_parser(analysis, tools=TOOLS, id_prefix="c")
        results.append([e for e in feed_all(parser, pieces) if isinstance(e, ParseError)])
    assert results[0], text
    assert results[0] == results[1] == results[2]


@pytest.mark.parametrize("levels", [100, 50_000])
def test_arguments_nested_past_the_cap_end_the_call_with_a_parse_error(levels: int) -> None:
    parser = make_output_parser(analyze(read_template(FAMILIES["json_object"])), tools=TOOLS)
    nested = "[" * levels + "]" * levels
    text = '<tool_call>\n{"name": "get_weather", "arguments": {"location": ' + nested + "}}\n</tool_call>"
    events = feed_all(parser, [text[i : i + 997] for i in range(0, len(text), 997)])
    errors = [e for e in events if isinstance(e, ParseError)]
    assert errors and "nested deeper than 64" in errors[0].message
    message = parser.message()
    assert len(message.tool_calls) == 1  # closed with what was streamed, like other malformed calls
    kept = message.tool_calls[0].arguments + (message.content or "")
    assert kept.count("[") + kept.count("]") >= 2 * levels - 200  # nothing lost beyond the call's head


def test_arguments_nested_within_the_cap_still_parse() -> None:
    parser = make_output_parser(analyze(read_template(FAMILIES["json_object"])), tools=TOOLS)
    nested = "[" * 40 + "]" * 40
    text = '<tool_call>\n{"name": "get_weather", "arguments": {"location": ' + nested + "}}\n</tool_call>"
    events = feed_all(parser, list(text))
    assert not [e for e in events if isinstance(e, ParseError)]
    assert parser.message().tool_calls[0].arguments == '{"location": ' + nested + "}"


def _parse_unclosed_pythonic(copies: int) -> tuple[str, float]:
    """LFM2's Pythonic list with `copies` unclosed `get_weather(city=` heads; the content and the CPU time."""
    analysis = analyze(read_template(FAMILIES["pythonic"]))
    text = "<|tool_call_start|>[" + "get_weather(city=" * copies
    best = float("inf")
    for _ in range(3):
        parser = make_output_parser(analysis, tools=TOOLS)
        started = time.process_time()
        events = feed_all(parser, [text[i : i + 5] for i in range(0, len(text), 5)])
        best = min(best, time.process_time() - started)
        content, _, args, errors, _ = joined(events)
        assert errors == ["unterminated_section"] and args == {}
        assert parser.message().tool_calls == ()
    return content, best


def test_unclosed_pythonic_calls_lose_no_character_and_parse_in_linear_time() -> None:
    """Every character of output that never became a call reaches the content, the call head included."""
    content, small = _parse_unclosed_pythonic(2000)
    assert content == "<|tool_call_start|>[" + "get_weather(city=" * 2000
    content, large = _parse_unclosed_pythonic(4000)
    assert len(content) == len("<|tool_call_start|>[") + 4000 * len("get_weather(city=")
    assert large <= 3 * small + 0.05, (
        small,
        large,
    )  # CPU time of this process, so load elsewhere is no matter


def test_a_call_cut_before_its_first_argument_is_content_in_every_family() -> None:
    for family, name in sorted(FAMILIES.items()):
        output, prompt = _one_call(name)
        cut = output[: output.find("get_weather") + len("get_weather") + 2]
        for pieces in ([cut], list(cut)):
            parser = make_output_parser(analyze(read_template(name)), tools=TOOLS, generation_prompt=prompt)
            events = feed_all(parser, pieces)
            assert parser.message().tool_calls == (), family
            assert not any(isinstance(e, ToolCallEnd) for e in events), family
            assert "get_weather" in (parser.message().content or ""), family
