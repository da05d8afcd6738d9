"""Behaviour of the streaming output parser on hand-written outputs of real templates."""

from __future__ import annotations

import json

import pytest
from parsing_helpers import feed_all, joined, random_pieces, read_template

from tokenloom.cli.roundtrip import TOOLS
from tokenloom.events import ContentDelta, ToolCallArgsDelta, ToolCallEnd, ToolCallStart
from tokenloom.parsing.analysis.analyze import analyze
from tokenloom.parsing.arguments import convert_value
from tokenloom.parsing.stream.output_parser import AutoOutputParser, make_output_parser


def _parser(name: str, **kwargs: object) -> AutoOutputParser:
    kwargs.setdefault("tools", TOOLS)
    return make_output_parser(analyze(read_template(name)), id_prefix="call_", **kwargs)  # type: ignore[arg-type]


HERMES = "Qwen-Qwen2.5-7B-Instruct.jinja"
QWEN3 = "Qwen-Qwen3-0.6B.jinja"
CALL = '<tool_call>\n{"name": "get_weather", "arguments": {"location": "Oslo", "days": 2}}\n</tool_call>'


def test_optional_reasoning_then_content() -> None:
    parser = _parser(QWEN3)
    feed_all(parser, list("<think>\nLet me see.\n</think>\n\nHello there."))
    message = parser.message()
    assert (message.reasoning_content, message.content) == ("Let me see.", "Hello there.")


def test_reasoning_format_none_keeps_markers_in_content() -> None:
    parser = _parser(QWEN3, reasoning_format="none")
    feed_all(parser, ["<think>\nhmm\n</think>\n\nHi"])
    assert parser.message().content == "<think>\nhmm\n</think>\n\nHi"
    assert parser.message().reasoning_content is None


def test_forced_open_from_generation_prompt() -> None:
    parser = _parser(QWEN3, generation_prompt="<|im_start|>assistant\n<think>\n")
    feed_all(parser, list("I should greet.\n</think>\n\nHello!"))
    assert parser.message().reasoning_content == "I should greet."
    assert parser.message().content == "Hello!"


def test_enable_thinking_false_means_plain_content() -> None:
    parser = _parser("GLM-4.7-Flash.jinja", enable_thinking=False)
    feed_all(parser, ["Just an answer."])
    assert parser.message().content == "Just an answer."
    forced = _parser("GLM-4.7-Flash.jinja", enable_thinking=True)
    feed_all(forced, ["Thinking</think>Answer"])
    assert (forced.message().reasoning_content, forced.message().content) == ("Thinking", "Answer")


def test_partial_marker_is_held_back() -> None:
    parser = _parser(HERMES)
    events = parser.feed("Sure. <tool")
    assert "".join(e.text for e in events if isinstance(e, ContentDelta)) == "Sure."
    parser.feed("_ca")
    events = parser.feed(CALL[len("<tool_ca") :]) + parser.finish()
    assert [type(e) for e in events] == [ToolCallStart, ToolCallArgsDelta, ToolCallEnd]  # fed whole
    assert parser.message().content == "Sure."


def test_a_prefix_that_never_becomes_a_marker_is_content() -> None:
    parser = _parser(HERMES)
    feed_all(parser, ["a <tool", "box> and <tool"])
    assert parser.message().content == "a <toolbox> and <tool"


def test_parallel_calls_and_content_around_them() -> None:
    parser = _parser(HERMES)
    second = CALL.replace("Oslo", "Rome")
    events = feed_all(parser, list(f"Checking both.\n{CALL}\n{second}\nDone."))
    message = parser.message()
    assert message.content == "Checking both.\n\n\nDone."  # the text with the two sections cut out
    assert [json.loads(c.arguments)["location"] for c in message.tool_calls] == ["Oslo", "Rome"]
    assert [c.id for c in message.tool_calls] == ["call_0", "call_1"]
    starts = [e for e in events if isinstance(e, ToolCallStart)]
    assert [(s.index, s.name) for s in starts] == [(0, "get_weather"), (1, "get_weather")]
    assert joined(events)[2] == {0: message.tool_calls[0].arguments, 1: message.tool_calls[1].arguments}


def test_tagged_arguments_follow_the_schema() -> None:
    parser = _parser("Qwen3-Coder.jinja")
    text = (
        "<tool_call>\n<function=get_weather>\n<parameter=location>\n007\n</parameter>\n"
        "<parameter=days>\n5\n</parameter>\n</function>\n</tool_call>"
    )
    feed_all(parser, list(text))
    assert json.loads(parser.message().tool_calls[0].arguments) == {"location": "007", "days": 5}


def test_multiline_code_in_tagged_arguments() -> None:
    parser = _parser("GLM-4.6.jinja")
    code = "for i in range(3):\n    print(i)\n"
    text = f"<tool_call>run_code\n<arg_key>code</arg_key>\n<arg_value>{code}</arg_value>\n</tool_call>"
    feed_all(parser, list(text))
    assert json.loads(parser.message().tool_calls[0].arguments) == {"code": code}


def test_unicode_markers_one_char_at_a_time() -> None:
    parser = _parser("deepseek-ai-DeepSeek-V3.1.jinja")
    text = (
        "Let me look.<|tool▁calls▁begin|><|tool▁call▁begin|>get_weather<|tool▁sep|>"
        '{"location": "Lima"}<|tool▁call▁end|><|tool▁calls▁end|>'
    ).replace("|", "\uff5c")  # DeepSeek's fullwidth bars
    events = feed_all(parser, list(text))
    assert parser.message().content == "Let me look."
    assert parser.message().tool_calls[0].name == "get_weather"
    assert all("\uff5c" not in e.text for e in events if isinstance(e, ContentDelta))


def test_model_ids_are_kept() -> None:
    parser = _parser("Mistral-Small-3.2-24B-Instruct-2506.jinja")
    feed_all(parser, ['[TOOL_CALLS]get_weather[CALL_ID]abc123xyz[ARGS]{"location": "Bern"}'])
    assert parser.message().tool_calls[0].id == "abc123xyz"


def test_without_tools_calls_stay_content() -> None:
    parser = _parser(HERMES, tools=None)
    feed_all(parser, [CALL])
    assert parser.message().content == CALL and parser.message().tool_calls == ()


def test_harmony_templates_get_the_harmony_parser_through_the_same_factory() -> None:
    parser = make_output_parser(
        analyze(read_template("openai-gpt-oss-120b.jinja")), tools=TOOLS, id_prefix="call_"
    )
    text = (
        "<|channel|>analysis<|message|>Check Oslo.<|end|><|start|>assistant<|channel|>commentary "
        'to=functions.get_weather <|constrain|>json<|message|>{"location": "Oslo"}<|call|>'
    )
    for piece in text:
        parser.feed(piece)
    parser.finish()
    message = parser.message()
    assert message.reasoning_content == "Check Oslo."
    assert [(c.id, c.name, json.loads(c.arguments)) for c in message.tool_calls] == [
        ("call_0", "get_weather", {"location": "Oslo"})
    ]


@pytest.mark.parametrize(
    ("raw", "types", "expected"),
    [
        ("5", {"integer"}, 5),
        ("5", {"string"}, "5"),
        ("2.5", {"number"}, 2.5),
        ("true", {"boolean"}, True),
        ("True", {"boolean"}, True),
        ('{"a": [1]}', {"object"}, {"a": [1]}),
        ("{'a': True}", {"object"}, {"a": True}),
        ("hello", {"integer"}, "hello"),
        ("null", {"string", "null"}, None),
        ("12", set(), 12),
        ("Paris", set(), "Paris"),
    ],
)
def test_convert_value(raw: str, types: set[str], expected: object) -> None:
    assert convert_value(raw, types) == expected


def test_recipient_routing_content_then_calls() -> None:
    parser = _parser("meetkai-functionary-medium-v3.2.jinja")
    text = 'all\nLet me check.>>>get_weather\n{"location": "Oslo"}>>>get_weather\n{"location": "Rome"}'
    feed_all(parser, list(text))
    message = parser.message()
    assert message.content == "Let me check."
    assert [json.loads(c.arguments)["location"] for c in message.tool_calls] == ["Oslo", "Rome"]


KIMI_CALL = "<|tool_call_begin|>functions.get_weather:{i}<|tool_call_argument_begin|>{args}<|tool_call_end|>"


def test_each_call_of_a_section_goes_out_when_it_is_complete() -> None:
    parser = _parser("moonshotai-Kimi-K2.jinja")
    first = KIMI_CALL.format(i=0, args='{"location": "Oslo"}')
    events = parser.feed("<|tool_calls_section_begin|>" + first)
    assert [type(e) for e in events] == [ToolCallStart, ToolCallArgsDelta, ToolCallEnd]
    events = parser.feed(KIMI_CALL.format(i=1, args='{"location": "Rome"}') + "<|tool_calls_section_end|>")
    assert [e.index for e in events if isinstance(e, ToolCallStart)] == [1]
    assert len(parser.message().tool_calls) == 2 and not parser.finish()


def test_a_broken_second_call_keeps_the_first() -> None:
    first = KIMI_CALL.format(i=0, args='{"location": "Oslo"}')
    broken = KIMI_CALL.format(i=1, args='{"location": Rome}')
    text = "<|tool_calls_section_begin|>" + first + broken + "<|tool_calls_section_end|>"
    for pieces in ([text], list(text)):
        parser = _parser("moonshotai-Kimi-K2.jinja")
        events = feed_all(parser, pieces)
        calls = parser.message().tool_calls
        # The second call was announced before its arguments broke: it ends with what was streamed.
        assert [c.arguments for c in calls] == ['{"location": "Oslo"}', '{"location": ']
        assert joined(events)[3] == ["tool_call_parse_error"]
        assert parser.message().content is not None and "Rome" in parser.message().content


def test_gemma4_relaxed_object_arguments() -> None:
    parser = _parser("google-gemma-4-31B-it.jinja", enable_thinking=True)
    text = (
        '<|channel>thought\nWeather.<channel|><|tool_call>call:run_code{code:<|"|>print("}")<|"|>,'
        'options:{flags:[<|"|>-v<|"|>],timeout:5}}<tool_call|>'
    )
    feed_all(parser, list(text))
    message = parser.message()
    assert message.reasoning_content == "Weather."
    assert json.loads(message.tool_calls[0].arguments) == {
        "code": 'print("}")',
        "options": {"flags": ["-v"], "timeout": 5},
    }


def test_kimi_ids_are_the_written_functions_name_index() -> None:
    parser = _parser("moonshotai-Kimi-K2.jinja")
    call = KIMI_CALL.format(i=3, args='{"location": "Oslo"}')
    feed_all(parser, ["<|tool_calls_section_begin|>" + call + "<|tool_calls_section_end|>"])
    assert parser.message().tool_calls[0].id == "functions.get_weather:3"


def test_reasoning_format_none_reopens_a_forced_block() -> None:
    parser = _parser(QWEN3, reasoning_format="none", generation_prompt="<|im_start|>assistant\n<think>\n")
    feed_all(parser, list("Why.\n</think>\n\nBecause."))  # the opener as the prompt wrote it, "\n" kept
    assert parser.message().content == "<think>\nWhy.\n</think>\n\nBecause."
    assert parser.message().reasoning_content is None


def test_minimax_m3_closing_tags_name_the_key() -> None:
    parser = _parser("MiniMax-M3.jinja")
    m = "]<]minimax[>["
    text = (
        f'{m}<tool_call>\n{m}<invoke name="get_weather">{m}<location>Oslo{m}</location>{m}<days>4{m}</days>'
        f"{m}</invoke>\n{m}</tool_call>"
    )
    feed_all(parser, list(text))
    assert json.loads(parser.message().tool_calls[0].arguments) == {"location": "Oslo", "days": 4}


def test_generated_ids_fit_templates_that_check_them() -> None:
    parser = make_output_parser(
        analyze(read_template("mistralai-Mistral-Nemo-Instruct-2407.jinja")), tools=TOOLS
    )
    feed_all(parser, ['[TOOL_CALLS][{"name": "get_weather", "arguments": {"location": "Bern"}}]'])
    call_id = parser.message().tool_calls[0].id
    assert len(call_id) == 9 and call_id.isalnum()
    hermes = make_output_parser(analyze(read_template(HERMES)), tools=TOOLS)
    feed_all(hermes, [CALL])
    assert hermes.message().tool_calls[0].id.startswith("call_")


def test_minimax_m3_nested_arguments_are_tags_too() -> None:
    parser = _parser("MiniMax-M3.jinja")
    m = "]<]minimax[>["
    text = (
        f'{m}<tool_call>\n{m}<invoke name="run_code">{m}<code>x = 1{m}</code>{m}<options>'
        f"{m}<timeout>5{m}</timeout>{m}<flags>{m}<item>-v{m}</item>{m}</flags>{m}</options>"
        f"{m}</invoke>\n{m}</tool_call>"
    )
    feed_all(parser, list(text))
    assert json.loads(parser.message().tool_calls[0].arguments) == {
        "code": "x = 1",
        "options": {"timeout": 5, "flags": ["-v"]},
    }


def test_lfm2_pythonic_calls() -> None:
    parser = _parser("LFM2.5-8B-A1B.jinja")
    text = (
        "<|tool_call_start|>[get_weather(location='Oslo', days=2), "
        "run_code(code='print(1)\nprint(\"(\")', options={'flags': ['-v'], 'fast': True})]<|tool_call_end|>"
    )
    feed_all(parser, list(text))
    calls = parser.message().tool_calls
    assert json.loads(calls[0].arguments) == {"location": "Oslo", "days": 2}
    assert json.loads(calls[1].arguments) == {
        "code": 'print(1)\nprint("(")',
        "options": {"flags": ["-v"], "fast": True},
    }


def test_whitespace_may_vary_inside_markers() -> None:
    parser = _parser("CohereForAI-c4ai-command-r7b-12-2024-tool_use.jinja")
    call = '{"tool_name": "get_weather", "parameters": {"location": "Oslo"}}'
    text = f"<|START_ACTION|>\n[ {call} ]\n<|END_ACTION|>"
    feed_all(parser, list(text))
    assert [c.name for c in parser.message().tool_calls] == ["get_weather"]
    assert parser.message().content is None


def test_muse_glimmer_header_names_the_call_and_longer_markers_win() -> None:
    """`to=NAME<|message|>` heads each call; "to=" starts a call only when it is not "to=self"/"to=user"."""
    call = (
        '<|start|>assistant to={n}<|message|><atem:function_calls>\n<atem:invoke name="{n}">\n'
        '<atem:parameter name="location">{city}</atem:parameter>\n</atem:invoke>\n'
        "</atem:function_calls><|eom|>"
    )
    text = (
        " to=self<|message|>Two cities.<|eom|><|start|>assistant to=user<|message|>Checking.<|eom|>"
        + call.format(n="get_weather", city="Oslo")
        + call.format(n="get_weather", city="Rome").removesuffix("<|eom|>")  # the turn ends with <|eot|>
    )
    for pieces in ([text], list(text)):
        parser = _parser("muse-glimmer.jinja")
        feed_all(parser, pieces)
        message = parser.message()
        assert (message.reasoning_content, message.content) == ("Two cities.", "Checking.")
        assert [json.loads(c.arguments)["location"] for c in message.tool_calls] == ["Oslo", "Rome"]
    parser = _parser("muse-glimmer.jinja")
    bad = call.format(n="get_weather", city="Oslo").replace('name="get_weather"', 'name="run_code"')
    events = feed_all(parser, [bad])
    assert joined(events)[3] and parser.message().tool_calls == ()  # the two names must agree


@pytest.mark.parametrize(
    ("name", "generation_prompt", "prefill"),
    [
        ("Qwen3.5-4B.jinja", "<|im_start|>assistant\n<think>\n", "I'm"),  # the prompt opened reasoning
        (QWEN3, "<|im_start|>assistant\n", "<think>\nI'm"),  # the prefill opened it
    ],
)
def test_a_prefill_inside_reasoning_is_continued_there(
    name: str, generation_prompt: str, prefill: str
) -> None:
    """The parser starts in the state the prefill leaves; the message is prefill and continuation together,
    the events only what the model added (in any chunking)."""
    output = " thinking\n</think>\n\nHello, world!"
    results = set()
    for pieces in ([output], list(output), random_pieces(output, 3)):
        parser = _parser(name, generation_prompt=generation_prompt, prefill=prefill)
        events = feed_all(parser, pieces)
        message = parser.message()
        assert (message.reasoning_content, message.content) == ("I'm thinking", "Hello, world!")
        content, reasoning, *_ = joined(events)
        results.add((content, reasoning))
    assert results == {("Hello, world!", " thinking")}


def test_a_content_prefill_keeps_its_trailing_space_and_calls_still_parse() -> None:
    parser = _parser(HERMES, prefill="Hello, ")
    events = feed_all(parser, list("world! " + CALL))
    assert parser.message().content == "Hello, world!"
    assert joined(events)[0] == "world!"
    assert [c.name for c in parser.message().tool_calls] == ["get_weather"]


def test_content_wrappers_go_in_every_reasoning_format() -> None:
    for fmt in ("auto", "none"):
        parser = _parser("CohereForAI-c4ai-command-r7b-12-2024-tool_use.jinja", reasoning_format=fmt)
        feed_all(parser, list("<|START_RESPONSE|>Hello<|END_RESPONSE|>"))
        assert parser.message().content == "Hello", fmt


def test_an_index_id_the_model_writes_is_kept_verbatim() -> None:
    """Command R7B renders "tool_call_id" as the call's index; the model's id is kept as written."""
    parser = _parser("CohereForAI-c4ai-command-r7b-12-2024-tool_use.jinja")
    call = '{"tool_call_id": "%s", "tool_name": "get_weather", "parameters": {"location": "Oslo"}}'
    feed_all(
        parser, list("<|START_ACTION|>[\n    " + call % "0" + ",\n    " + call % "7" + "\n]<|END_ACTION|>")
    )
    assert [c.id for c in parser.message().tool_calls] == ["0", "7"]
