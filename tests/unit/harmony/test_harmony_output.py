"""OpenAI layer: harmony output -> Events through `HarmonyOutputParser` (the server's parser path)."""

from __future__ import annotations

import json
import random

import pytest

from tokenloom.events import (
    ContentDelta,
    Event,
    OutputParser,
    ParsedMessage,
    ParseError,
    ReasoningDelta,
    ToolCall,
    ToolCallArgsDelta,
    ToolCallEnd,
    ToolCallStart,
)
from tokenloom.harmony import HarmonyOutputParser, is_harmony_template, render_chat_request

TOOL_OUTPUT = (
    "<|channel|>analysis<|message|>User asks weather in Tokyo. Use get_weather.<|end|>"
    "<|start|>assistant<|channel|>commentary<|message|>Let me check.<|end|>"
    "<|start|>assistant to=functions.get_weather<|channel|>commentary <|constrain|>json<|message|>"
    '{"location": "Tokyo"}<|call|>'
)


def _parser(**kwargs: object) -> HarmonyOutputParser:
    return HarmonyOutputParser(make_call_id=lambda i: f"call_{i}", **kwargs)  # type: ignore[arg-type]


def _feed_all(parser: OutputParser, pieces: list[str]) -> list[Event]:
    return [e for p in pieces for e in parser.feed(p)] + parser.finish()


def test_tool_call_and_reasoning() -> None:
    parser = _parser(tools=["get_weather"])
    events = _feed_all(parser, [TOOL_OUTPUT])
    assert parser.message() == ParsedMessage(
        content="Let me check.",
        reasoning_content="User asks weather in Tokyo. Use get_weather.",
        tool_calls=(ToolCall("call_0", "get_weather", '{"location": "Tokyo"}'),),
    )
    kinds = [type(e) for e in events]
    assert kinds == [ReasoningDelta, ContentDelta, ToolCallStart, ToolCallArgsDelta, ToolCallEnd]
    assert not any(isinstance(e, ParseError) for e in events)


def test_args_stream_as_they_arrive() -> None:
    parser = _parser()
    events = _feed_all(parser, list(TOOL_OUTPUT))
    args = [e.text for e in events if isinstance(e, ToolCallArgsDelta)]
    assert len(args) == len('{"location": "Tokyo"}')
    assert json.loads("".join(args)) == {"location": "Tokyo"}
    assert events.index(next(e for e in events if isinstance(e, ToolCallStart))) < events.index(
        next(e for e in events if isinstance(e, ToolCallArgsDelta))
    )


def _joined(events: list[Event]) -> tuple[str, str, str]:
    return (
        "".join(e.text for e in events if isinstance(e, ReasoningDelta)),
        "".join(e.text for e in events if isinstance(e, ContentDelta)),
        "".join(e.text for e in events if isinstance(e, ToolCallArgsDelta)),
    )


@pytest.mark.parametrize("seed", range(5))
def test_split_invariance_of_events(seed: int) -> None:
    whole = _parser()
    whole_events = _feed_all(whole, [TOOL_OUTPUT])
    rng = random.Random(seed)
    cuts = sorted(rng.sample(range(1, len(TOOL_OUTPUT)), 25))
    pieces = [TOOL_OUTPUT[i:j] for i, j in zip([0, *cuts], [*cuts, len(TOOL_OUTPUT)], strict=True)]
    split = _parser()
    assert _joined(_feed_all(split, pieces)) == _joined(whole_events)
    assert split.message() == whole.message()


def test_call_without_stop_token_is_complete() -> None:
    # The engine may end on the EOG token without passing its text: valid JSON arguments are no error.
    parser = _parser()
    events = _feed_all(parser, [TOOL_OUTPUT.removesuffix("<|call|>")])
    assert not any(isinstance(e, ParseError) for e in events)
    assert parser.message().tool_calls[0].arguments == '{"location": "Tokyo"}'


def test_final_answer_is_content() -> None:
    parser = _parser()
    _feed_all(
        parser,
        [
            "<|channel|>analysis<|message|>2+2=4<|end|><|start|>assistant<|channel|>final<|message|>4<|return|>"
        ],
    )
    assert parser.message() == ParsedMessage(content="4", reasoning_content="2+2=4")


def test_builtin_tools_only_when_enabled() -> None:
    text = '<|channel|>analysis to=browser.search code<|message|>{"query": "tour de france"}<|call|>'
    enabled = _parser(builtin_tools=["browser"])
    _feed_all(enabled, [text])
    assert enabled.message().tool_calls == (
        ToolCall("call_0", "browser.search", '{"query": "tour de france"}'),
    )
    disabled = _parser()
    events = _feed_all(disabled, [text])
    assert disabled.message() == ParsedMessage()  # no answer to the user: dropped (as llama.cpp)
    assert [e.kind for e in events if isinstance(e, ParseError)] == ["unknown_tool"]


def test_undeclared_function_is_content_with_error() -> None:
    parser = _parser(tools=[{"type": "function", "function": {"name": "get_weather"}}])
    events = _feed_all(parser, ["<|channel|>commentary to=functions.rm_rf json<|message|>{}<|call|>"])
    assert parser.message() == ParsedMessage(content="{}")
    assert [e.kind for e in events if isinstance(e, ParseError)] == ["unknown_tool"]


@pytest.mark.parametrize(
    "text",
    [
        "<|channel|>weird<|message|>hello<|end|>",  # unknown channel
        "<|channel|>final hello<|end|>",  # missing <|message|>
        "<|channel|>fin",  # truncated header
        '<|channel|>commentary to=functions.f json<|message|>{"a":',  # truncated call
    ],
)
def test_malformed_gives_content_or_call_plus_parse_error(text: str) -> None:
    parser = _parser()
    events = _feed_all(parser, list(text))
    assert any(isinstance(e, ParseError) for e in events)
    message = parser.message()
    assert message.content is not None or message.tool_calls


def test_request_to_events_round_trip() -> None:
    """What the server does: render the request, (the model answers), parse the answer into tool_calls."""
    tools = [
        {
            "type": "function",
            "function": {
                "name": "get_weather",
                "parameters": {"type": "object", "properties": {"location": {"type": "string"}}},
            },
        }
    ]
    prompt = render_chat_request(
        [{"role": "user", "content": "Weather in Tokyo?"}], tools=tools, current_date=None
    )
    assert prompt.endswith("<|start|>user<|message|>Weather in Tokyo?<|end|><|start|>assistant")
    parser = _parser(tools=[t["function"]["name"] for t in tools])
    _feed_all(parser, [TOOL_OUTPUT[i : i + 3] for i in range(0, len(TOOL_OUTPUT), 3)])
    message = parser.message()
    assert message.reasoning_content and message.tool_calls[0].name == "get_weather"


def test_is_harmony_template() -> None:
    from pathlib import Path

    shared = Path(__file__).resolve().parents[4] / "shared" / "templates"
    assert is_harmony_template((shared / "openai-gpt-oss-120b.jinja").read_text())
    assert not is_harmony_template((shared / "Qwen-Qwen3-0.6B.jinja").read_text())
    assert not is_harmony_template("{% for m in messages %}<|im_start|>{{ m.role }}{% endfor %}")


def test_output_parser_never_raises_on_garbage() -> None:
    rng = random.Random(11)
    alphabet = [
        "<|start|>",
        "<|end|>",
        "<|message|>",
        "<|channel|>",
        "<|constrain|>json",
        "<|call|>",
        "<|return|>",
    ]
    alphabet += [
        "assistant",
        "to=functions.f",
        "to=python",
        "final",
        "analysis",
        "commentary",
        " ",
        "{",
        "x",
        "<|",
    ]
    for _ in range(300):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 20)))
        parser = _parser(tools=["f"], builtin_tools=["python"])
        step = rng.randint(1, 5)
        pieces = [text[i : i + step] for i in range(0, len(text), step)]
        _feed_all(parser, pieces)
        parser.message()
