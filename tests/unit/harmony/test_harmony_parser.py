"""Streaming parser: round trips, split invariance, tolerance, and malformed input that never raises."""

from __future__ import annotations

import random

import pytest

from tokenloom.harmony import HarmonyMessage, HarmonyParseError, HarmonyStreamParser, parse_messages
from tokenloom.harmony.messages import STOP_MARKERS, assistant, tool_result
from tokenloom.harmony.parser import FormatIssue, MessageDelta, MessageEnd, MessageStart
from tokenloom.harmony.render import render_conversation, render_message

ASSISTANT_MESSAGES = [
    assistant("Let me think: 2 + 2 = 4.", channel="analysis"),
    assistant("4", channel="final"),
    assistant("I'll check two cities.", channel="commentary"),
    assistant(
        '{"location": "Tokyo"}',
        channel="commentary",
        recipient="functions.get_weather",
        content_type="<|constrain|>json",
    ),
    assistant('{"query": "tour"}', channel="analysis", recipient="browser.search", content_type="json"),
    assistant("print(1 + 1)", channel="analysis", recipient="python", content_type="code"),
    assistant("{}", channel="commentary", recipient="functions.get_location"),
    assistant("plain, no channel"),
    assistant("multi\nline <b>html</b> a<|start|>b and <|channel|> kept as text", channel="final"),
    assistant("", channel="final"),
]

OUTPUT = (
    "<|channel|>analysis<|message|>User asks weather. Need get_weather.<|end|>"
    "<|start|>assistant<|channel|>commentary<|message|>Checking the weather…<|end|>"
    "<|start|>assistant to=functions.get_weather<|channel|>commentary <|constrain|>json<|message|>"
    '{"location": "Tokyo", "unit": "c"}<|call|>'
)


@pytest.mark.parametrize("message", ASSISTANT_MESSAGES, ids=range(len(ASSISTANT_MESSAGES)))
def test_rendered_assistant_message_parses_back(message: HarmonyMessage) -> None:
    text = render_message(message)
    assert parse_messages(text, role=None) == [message]
    assert parse_messages(text.removeprefix("<|start|>assistant"), role="assistant") == [message]
    assert parse_messages(text, role="assistant") == [message]  # a leading `<|start|>assistant` is tolerated


def test_conversation_parses_back() -> None:
    messages = [
        HarmonyMessage("user", "What is the weather in Tokyo?"),
        *ASSISTANT_MESSAGES[:4],
        tool_result("functions.get_weather", '{"sunny": true}'),
        tool_result("functions.get_weather", "20 degrees", channel=None),
        assistant("Sunny.", channel="final"),
    ]
    text = render_conversation(messages, auto_drop_analysis=False)
    assert parse_messages(text, role=None) == messages


def test_recipient_after_channel_and_without_space_before_constrain() -> None:
    a = parse_messages("<|channel|>commentary to=functions.f <|constrain|>json<|message|>{}<|call|>")
    b = parse_messages(" to=functions.f<|channel|>commentary<|constrain|>json<|message|>{}<|call|>")
    expected = assistant(
        "{}", channel="commentary", recipient="functions.f", content_type="<|constrain|>json"
    )
    assert a == b == [expected]


def test_whitespace_between_messages_and_missing_start() -> None:
    text = "<|channel|>analysis<|message|>a<|end|>\n <|channel|>final<|message|>b<|return|>"
    parser = HarmonyStreamParser()
    events = [*parser.feed(text), *parser.finish()]
    assert parser.messages == [assistant("a", channel="analysis"), assistant("b", channel="final")]
    assert [e.kind for e in events if isinstance(e, FormatIssue)] == ["missing_start"]


def test_stops_at_return_and_call() -> None:
    for stop in ("<|return|>", "<|call|>"):
        parser = HarmonyStreamParser()
        events = parser.feed(
            f"<|channel|>final<|message|>done{stop}<|start|>assistant<|channel|>final<|message|>x"
        )
        assert parser.is_stopped
        assert [m.content for m in parser.messages] == ["done"]
        assert [e.kind for e in events if isinstance(e, FormatIssue)] == ["trailing_text"]


def _run(pieces: list[str]) -> tuple[list[HarmonyMessage], list[tuple[str, str]]]:
    """Messages, and per message (header summary, joined deltas)."""
    parser = HarmonyStreamParser()
    events = [e for piece in pieces for e in parser.feed(piece)] + parser.finish()
    joined: list[tuple[str, str]] = []
    for event in events:
        if isinstance(event, MessageStart):
            joined.append((repr(event.header), ""))
        elif isinstance(event, MessageDelta):
            assert not any(m in event.text for m in STOP_MARKERS)
            joined[-1] = (joined[-1][0], joined[-1][1] + event.text)
        elif isinstance(event, MessageEnd):
            assert joined[-1][1] == event.message.content
    return parser.messages, joined


def _random_split(text: str, rng: random.Random) -> list[str]:
    cuts = sorted(rng.sample(range(1, len(text)), k=min(len(text) - 1, rng.randint(1, 30))))
    return [text[i:j] for i, j in zip([0, *cuts], [*cuts, len(text)], strict=True)]


@pytest.mark.parametrize(
    "text",
    [
        OUTPUT,
        "<|start|>assistant<|channel|>final<|message|>Hello <world> <| not a marker |> <|en<|end|>",
        "<|channel|>analysis I must refuse<|end|><|start|>assistant<|channel|>final<|message|>ok<|return|>",
        "<|channel|>final<|message|>cut short <|ret",
        "x" * 250 + "<|channel|>final<|message|>header at the limit<|end|>",
        "y" * 300 + "<|message|>no header, long<|end|>",
    ],
)
def test_split_invariance(text: str) -> None:
    whole = _run([text])
    assert _run(list(text)) == whole
    rng = random.Random(4)
    for _ in range(50):
        assert _run(_random_split(text, rng)) == whole
    for i in range(1, len(text)):
        assert _run([text[:i], text[i:]]) == whole


@pytest.mark.parametrize(
    ("text", "kind", "content"),
    [
        ("I must refuse<|end|>", "missing_message", "I must refuse"),
        ("<|channel|>analysis I must refuse<|end|>", "missing_message", "I must refuse"),
        ("<|channel|>final<|mess", "truncated_header", "<|mess"),
        ("<|channel|><|message|>x<|end|>", "bad_header", "x"),
        ("<|channel|>final a b c<|message|>x<|end|>", "bad_header", "x"),
        ("no header at all " * 20, "missing_message", "no header at all " * 20),
    ],
)
def test_malformed_gives_content_and_issue(text: str, kind: str, content: str) -> None:
    parser = HarmonyStreamParser()
    events = [*parser.feed(text), *parser.finish()]
    assert kind in [e.kind for e in events if isinstance(e, FormatIssue)]
    assert "".join(m.content for m in parser.messages if isinstance(m.content, str)) == content
    with pytest.raises(HarmonyParseError):
        parse_messages(text, strict=True)


def test_plain_text_without_header_keeps_its_whitespace() -> None:
    text = "Just text.\n\n- one\n- two"
    assert parse_messages(text, strict=False) == [assistant(text)]


def test_lenient_reference_cases() -> None:
    assert parse_messages("I must refuse<|end|>", strict=False) == [assistant("I must refuse")]
    got = parse_messages("<|channel|>analysis I must refuse<|end|>", strict=False)
    assert got == [assistant("I must refuse", channel="analysis")]


def test_garbage_never_raises() -> None:
    rng = random.Random(7)
    alphabet = [
        "<|start|>",
        "<|end|>",
        "<|message|>",
        "<|channel|>",
        "<|constrain|>",
        "<|call|>",
        "<|return|>",
    ]
    alphabet += ["assistant", "to=functions.f", "final", "analysis", " ", "json", "x", "<", "|", "\n"]
    for _ in range(300):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 25)))
        for role in ("assistant", None):
            parser = HarmonyStreamParser(role)  # type: ignore[arg-type]
            for piece in _random_split(text, rng) if len(text) > 1 else [text]:
                parser.feed(piece)
            parser.finish()
            parse_messages(text, role=role, strict=False)  # type: ignore[arg-type]
