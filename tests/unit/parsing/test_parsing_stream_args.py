"""Argument streaming: canonical JSON re-encoding, fragments while a call grows, and cut-short outputs."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest
from parsing_helpers import feed_all, joined, random_pieces, read_template

from tokenloom.cli.roundtrip import CODE, TOOLS, round_trip_cases
from tokenloom.events import Event, ToolCallArgsDelta, ToolCallEnd, ToolCallStart
from tokenloom.parsing.analysis.analyze import analyze
from tokenloom.parsing.arguments import dump_arguments, pythonic_arguments, relaxed_to_json
from tokenloom.parsing.stream.canonical_json import JsonReencoder
from tokenloom.parsing.stream.output_parser import AutoOutputParser, make_output_parser
from tokenloom.parsing.stream.stream_pairs import PairArgs

QWEN25 = "Qwen-Qwen2.5-7B-Instruct.jinja"
CODER = "Qwen3-Coder.jinja"
MISTRAL = "Mistral-Small-3.2-24B-Instruct-2506.jinja"
LONG_CODE = CODE + "\n# " + 'très long commentaire, with "quotes" and a tab\t' * 8


def _parser(name: str) -> AutoOutputParser:
    return make_output_parser(analyze(read_template(name)), tools=TOOLS, id_prefix="call_")


def _reencode(pieces: list[str]) -> tuple[JsonReencoder, str]:
    encoder, text = JsonReencoder(0), ""
    for piece in pieces:
        text += piece
        encoder.feed(text, len(text))
    return encoder, "".join(encoder.pieces)


@pytest.mark.parametrize(
    "raw",
    [
        '{"a": 1.50, "b": [1e2, -0, true, NaN, -Infinity, 1E+400], "c": {}}',
        '{ "s" : "x\\u00e9\\ud83d\\ude00\\n\\/\\u001f\\"", "lone": "\\ud83d", "pair2": "\\ud83d\\u0041" }',
        '\n {"nested": {"list": [[], [{"k": null}], "é"]}, "big": 123456789012345678901234567890}',
    ],
)
def test_reencoder_matches_json_dumps_in_any_chunking(raw: str) -> None:
    expected = json.dumps(json.loads(raw), ensure_ascii=False)
    for pieces in ([raw], list(raw), random_pieces(raw, 3)):
        encoder, text = _reencode(pieces)
        assert encoder.done and text == expected
        assert encoder.end == len(raw)


@pytest.mark.parametrize(
    "raw", ['{"a": 01}', '{"a": 1,}', '{"a" 1}', '{"a": "x\ny"}', '{"a": tru}', '{"a": 1, "a": 2}', "[1]"]
)
def test_reencoder_rejects_what_json_loads_rejects_and_duplicates(raw: str) -> None:
    for pieces in ([raw], list(raw)):
        encoder, _ = _reencode(pieces)
        assert encoder.failed and not encoder.done


KEY_TAILS = ["", "é", "\n", '"']


def _random_value(rng: random.Random, depth: int = 0) -> Any:
    roll = rng.random()
    if depth < 3 and roll < 0.25:
        return {f"k{i}" + rng.choice(KEY_TAILS): _random_value(rng, depth + 1) for i in range(3)}
    if depth < 3 and roll < 0.4:
        return [_random_value(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    return rng.choice([0, -7, 2.5e-8, 1e21, True, None, "", "tab\there", 'q"b\\s/é😀\x01', "\u2028"])


def test_reencoder_on_random_documents() -> None:
    rng = random.Random(5)
    for trial in range(300):
        value = {"root": _random_value(rng)}
        raw = json.dumps(value, ensure_ascii=rng.random() < 0.5, indent=rng.choice([None, 1]))
        _, text = _reencode(random_pieces(raw, trial))
        assert text == json.dumps(value, ensure_ascii=False)


def _fed_in_pieces(name: str, text: str, size: int = 3) -> list[Event]:
    parser = _parser(name)
    events: list[Event] = []
    for i in range(0, len(text), size):
        events += parser.feed(text[i : i + size])
    return events + parser.finish()


def _check_streamed(name: str, text: str, expected: dict[str, Any]) -> list[Event]:
    events = _fed_in_pieces(name, text)
    kinds = [type(e) for e in events]
    start, end = kinds.index(ToolCallStart), kinds.index(ToolCallEnd)
    fragments = [e.text for e in events[start:end] if isinstance(e, ToolCallArgsDelta)]
    assert len(fragments) > 1  # the arguments went out while they grew
    assert "".join(fragments) == json.dumps(expected, ensure_ascii=False)
    assert joined(events)[3] == []
    return events


def test_json_call_object_streams_its_arguments() -> None:
    args = {"code": LONG_CODE, "options": {"timeout": 5, "flags": ["-v"]}}
    call = json.dumps({"name": "run_code", "arguments": args}, indent=1)
    _check_streamed(QWEN25, f"Running it.\n<tool_call>\n{call}\n</tool_call>", args)


def test_tagged_arguments_stream_string_values_as_they_grow() -> None:
    text = (
        "<tool_call>\n<function=run_code>\n<parameter=code>\n" + LONG_CODE + "\n</parameter>\n"
        '<parameter=options>\n{"timeout": 5}\n</parameter>\n</function>\n</tool_call>'
    )
    events = _check_streamed(CODER, text, {"code": LONG_CODE, "options": {"timeout": 5}})
    fragments = [e for e in events if isinstance(e, ToolCallArgsDelta)]
    assert len(fragments) > len(LONG_CODE) // 10  # the code value itself arrived in many pieces


def test_bracket_tag_arguments_stream() -> None:
    args = {"location": "Reykjavík, " * 10, "days": 7}
    text = "[TOOL_CALLS]get_weather[CALL_ID]abc123xyz[ARGS]" + json.dumps(args, ensure_ascii=False)
    events = _check_streamed(MISTRAL, text, args)
    assert next(e for e in events if isinstance(e, ToolCallStart)).id == "abc123xyz"


@pytest.mark.parametrize(
    ("name", "head", "body"),
    [
        (QWEN25, '<tool_call>\n{"name": "get_weather", "arguments": ', '{"location": "Oslo", "days": 2}}'),
        (CODER, "<tool_call>\n<function=get_weather>\n", "<parameter=location>\nOslo\n</parameter>\n"),
        (MISTRAL, "[TOOL_CALLS]get_weather[CALL_ID]abc123xyz[ARGS]", '{"location": "Oslo"}'),
    ],
)
def test_the_call_is_announced_before_its_arguments_are_complete(name: str, head: str, body: str) -> None:
    """Announced with its first argument's key: a call cut off before that is no call; its text is content."""
    parser = _parser(name)
    assert not any(isinstance(e, ToolCallStart) for e in parser.feed(head))
    events = parser.feed(body[:-3])
    assert [(type(e), getattr(e, "name", None)) for e in events][:1] == [(ToolCallStart, "get_weather")]
    assert not any(isinstance(e, ToolCallEnd) for e in events)
    (call,) = parser.message().tool_calls  # the open call shows what was streamed so far
    assert call.arguments.startswith('{"location": "O') and not call.arguments.endswith("}")


def test_an_id_written_after_the_arguments_is_kept() -> None:
    """Mistral Nemo writes "id" last: the call waits for it and keeps the model's id, in every chunking."""
    template = "mistralai-Mistral-Nemo-Instruct-2407.jinja"
    text = '[TOOL_CALLS][{"name": "get_weather", "arguments": {"location": "Bern"}, "id": "abcdefghi"}]'
    ids = set()
    for pieces in ([text], list(text)):
        parser = _parser(template)
        feed_all(parser, pieces)
        ids.add(parser.message().tool_calls[0].id)
    assert ids == {"abcdefghi"}
    phi = "llama-cpp-microsoft-Phi-4-mini-instruct.jinja"  # "id" first: the model's id is kept
    parser = _parser(phi)
    call = {"id": "xyz", "type": "function", "function": {"name": "get_weather", "arguments": {"a": 1}}}
    feed_all(parser, list(f"<|tool_call|>{json.dumps(call)}<|/tool_call|>"))
    assert parser.message().tool_calls[0].id == "xyz"


def test_cdata_values_go_out_whole_without_the_wrapper() -> None:
    text = (
        "<tool_call>\n<function=run_code>\n<parameter=code>\n<![CDATA[" + LONG_CODE + "]]>\n</parameter>\n"
        "</function>\n</tool_call>"
    )
    events = _fed_in_pieces(CODER, text)
    assert joined(events)[2] == {0: json.dumps({"code": LONG_CODE}, ensure_ascii=False)}


GEMMA4 = "google-gemma-4-31B-it.jinja"
LFM2 = "LFM2.5-8B-A1B.jinja"
CUT_TEMPLATES = [
    QWEN25,
    CODER,
    MISTRAL,
    "GLM-4.7-Flash.jinja",
    "meta-llama-Llama-3.1-8B-Instruct.jinja",
    GEMMA4,
    LFM2,
]


@pytest.mark.parametrize("name", [GEMMA4, LFM2])
def test_relaxed_and_python_arguments_stream_one_argument_at_a_time(name: str) -> None:
    """Gemma 4's `{days:3,location:<|"|>Paris<|"|>}` and LFM2's `(location='Paris', days=3)`: each argument
    goes out once the comma after it arrives, before the call closes."""
    template = read_template(name)
    case = next(c for c in round_trip_cases(template, name) if c.label == "two parallel calls")
    parser = make_output_parser(analyze(template), tools=TOOLS, generation_prompt=case.generation_prompt)
    events: list[Event] = []
    first_arg_at = close_at = -1
    for i, ch in enumerate(case.output):
        events += parser.feed(ch)
        if first_arg_at < 0 and any(isinstance(e, ToolCallArgsDelta) and '": ' in e.text for e in events):
            first_arg_at = i
        if close_at < 0 and any(isinstance(e, ToolCallEnd) for e in events):
            close_at = i
    events += parser.finish()
    assert 0 <= first_arg_at < close_at
    deltas = [e.text for e in events if isinstance(e, ToolCallArgsDelta) and e.index == 1]
    assert (
        deltas[0].startswith('{"code": ') and len(deltas) == 2
    )  # "{" and the code, then the options and "}"
    expected = [json.loads(c.arguments) for c in case.expected.tool_calls]
    arguments = [c.arguments for c in parser.message().tool_calls]
    assert [json.loads(a) for a in arguments] == expected
    assert joined(events)[2] == dict(enumerate(arguments))


@pytest.mark.parametrize("name", CUT_TEMPLATES)
def test_output_cut_anywhere_parses_the_same_in_any_chunking(name: str) -> None:
    """A response that stops at any character (max_tokens) gives one outcome, whatever the chunking, and the
    deltas of each call add up to its arguments in the message."""
    template = read_template(name)
    analysis = analyze(template)
    case = [c for c in round_trip_cases(template, name) if "call" in c.label][-1]
    for cut in range(len(case.output) + 1):
        text = case.output[:cut]
        results = []
        for pieces in ([text], list(text), random_pieces(text, cut)):
            parser = make_output_parser(
                analysis, tools=case.tools, generation_prompt=case.generation_prompt, id_prefix="c"
            )
            events = feed_all(parser, pieces)
            calls = parser.message().tool_calls
            assert joined(events)[2] == {i: c.arguments for i, c in enumerate(calls) if c.arguments}
            results.append((parser.message(), joined(events)))
        assert results[0] == results[1] == results[2], text


def _pairs(name: str, pieces: list[str]) -> tuple[PairArgs, str]:
    reader, text, out = PairArgs(0, analyze(read_template(name)).tools), "", ""
    for piece in pieces:
        text += piece
        reader.feed(text, False)
        out += reader.take()
    reader.feed(text, True)
    return reader, out + reader.take()


@pytest.mark.parametrize(
    ("name", "raw"),
    [
        (GEMMA4, '{a:<|"|>x, y}<|"|>,b:[1,{c:<|"|>]<|"|>}],d:"q,\\"}",e:true,f:null}'),
        (GEMMA4, " {}"),
        (LFM2, "(a='x, y)', b=[1, {'c': ']'}], d=\"q,\\\"\", e=True, f=None,)"),
        (LFM2, "(s='it\\'s\nok', t=(1, 2))"),
        (LFM2, "()"),
    ],
)
def test_pair_arguments_match_the_whole_reading_in_any_chunking(name: str, raw: str) -> None:
    quote = analyze(read_template(name)).tools.string_quote
    whole = pythonic_arguments(raw) if name == LFM2 else relaxed_to_json(raw.strip(), quote)
    for pieces in ([raw], list(raw), random_pieces(raw, 5)):
        reader, out = _pairs(name, pieces)
        assert reader.done and not reader.failed, reader.error
        assert out == dump_arguments(whole) and reader.end == len(raw)


@pytest.mark.parametrize(
    ("name", "raw"),
    [(GEMMA4, "{a:1,a:2}"), (GEMMA4, "{a:1,}"), (GEMMA4, "[1]"), (LFM2, "(1, a=2)"), (LFM2, "(a=1, a=2)")],
)
def test_pair_arguments_reject_duplicates_and_bad_pairs(name: str, raw: str) -> None:
    for pieces in ([raw], list(raw)):
        reader, _ = _pairs(name, pieces)
        assert reader.failed and not reader.done
