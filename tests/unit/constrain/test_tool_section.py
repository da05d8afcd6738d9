"""Tool-call grammar descriptions (three template styles) by character, and lazy triggering by token."""

from __future__ import annotations

import json

import numpy as np

from tests.conftest import TEMPLATES
from tests.unit.constrain.chars import initial
from tests.unit.constrain.conftest import force
from tokenloom import grammar as g
from tokenloom.cli.roundtrip import TOOLS
from tokenloom.constrain import compile
from tokenloom.constrain.parser import accepts
from tokenloom.engine.vocab import Tokenizer, Vocab
from tokenloom.parsing.analysis.analyze import analyze
from tokenloom.parsing.analysis.tool_grammar import tool_call_grammar

WEATHER = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
    "required": ["city"],
}
CALL = g.JsonValue.of(
    {
        "type": "object",
        "properties": {"name": {"const": "get_weather"}, "arguments": WEATHER},
        "required": ["name", "arguments"],
    }
)
# JSON in tags (Hermes / Qwen)
HERMES = g.ToolCallGrammar(
    ("<tool_call>",),
    g.Repeat(
        g.Sequence((g.Literal("<tool_call>\n"), CALL, g.Literal("\n</tool_call>"))), 1, None, g.Whitespace(2)
    ),
)
# tagged arguments (Qwen3-Coder style)
TAGGED = g.ToolCallGrammar(
    ("<tool_call>",),
    g.Sequence(
        (
            g.Literal("<tool_call>\n<function=get_weather>\n"),
            g.Repeat(
                g.Choice(
                    (
                        g.Sequence(
                            (
                                g.Literal("<parameter=city>\n"),
                                g.Text(("\n</parameter>",)),
                                g.Literal("\n</parameter>\n"),
                            )
                        ),
                        g.Sequence(
                            (
                                g.Literal("<parameter=days>\n"),
                                g.JsonValue.of({"type": "integer"}),
                                g.Literal("\n</parameter>\n"),
                            )
                        ),
                    )
                ),
                1,
                2,
            ),
            g.Literal("</function>\n</tool_call>"),
        )
    ),
)
# bracket tag (Mistral)
BRACKET = g.ToolCallGrammar(
    ("[TOOL_CALLS]",),
    g.Sequence((g.Literal("[TOOL_CALLS]get_weather[ARGS]"), g.JsonValue.of(WEATHER))),
)


def test_three_styles_by_char() -> None:
    args = {"city": "Paris", "days": 2}
    call = json.dumps({"name": "get_weather", "arguments": args})
    hermes = initial({"tool_calls": HERMES})
    assert accepts(hermes, f"<tool_call>\n{call}\n</tool_call>")
    assert accepts(hermes, f"<tool_call>\n{call}\n</tool_call>\n<tool_call>\n{call}\n</tool_call>")
    assert not accepts(hermes, f"<tool_call>\n{call}\n</tool_call>\n")
    assert not accepts(hermes, '<tool_call>\n{"name":"other","arguments":{"city":"x"}}\n</tool_call>')
    tagged = initial({"tool_calls": TAGGED})
    good = (
        "<tool_call>\n<function=get_weather>\n<parameter=city>\nNew\nYork\n</parameter>\n"
        "<parameter=days>\n3\n</parameter>\n</function>\n</tool_call>"
    )
    assert accepts(tagged, good)
    assert not accepts(tagged, good.replace("\n3\n", "\nthree\n"))
    assert not accepts(tagged, "<tool_call>\n<function=get_weather>\n</function>\n</tool_call>")
    bracket = initial({"tool_calls": BRACKET})
    assert accepts(bracket, '[TOOL_CALLS]get_weather[ARGS]{"city": "Rome"}')
    assert not accepts(bracket, '[TOOL_CALLS]get_weather[ARGS]{"days": 1}')


def test_forced_tool_call_through_vocab(vocab: Vocab, tokenizer: Tokenizer) -> None:
    eog = min(vocab.eog_ids)
    text = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'
    assert force(compile({"tool_calls": HERMES}, vocab), tokenizer.tokenize(text, parse_special=False), eog)
    text = (
        "<tool_call>\n<function=get_weather>\n<parameter=city>\nSão Paulo\n</parameter>\n"
        "</function>\n</tool_call>"
    )
    assert force(compile({"tool_calls": TAGGED}, vocab), tokenizer.tokenize(text, parse_special=False), eog)
    c = compile({"tool_calls": TAGGED}, vocab)
    assert not force(c, tokenizer.tokenize("<tool_call>\n<function=other>", parse_special=False), eog)


def test_lazy_trigger_mid_token(vocab: Vocab, tokenizer: Tokenizer) -> None:
    c = compile({"tool_calls": BRACKET, "lazy": True}, vocab)
    assert c.allowed() is None and c.is_accepting()
    for tid in tokenizer.tokenize("Sure, let me check.", parse_special=False):
        c.advance(tid)
    assert c.allowed() is None
    # a token that carries text before the trigger and the trigger's first characters
    by_piece = {p: i for i, p in enumerate(vocab.pieces)}
    c.advance(by_piece[b" ["])
    text = b" ["
    for tid in tokenizer.tokenize("TOOL_CALLS]get_weather[ARGS]", parse_special=False):
        assert (c.allowed() is None) == (b"[TOOL_CALLS]" not in text)
        c.advance(tid)
        text += vocab.pieces[tid]
    mask = c.allowed()
    assert mask is not None and not c.is_accepting()
    assert not mask[min(vocab.eog_ids)]
    assert mask[by_piece[b"{"]] and not mask[by_piece[b"x"]]
    for tid in tokenizer.tokenize('{"city": "Oslo"}', parse_special=False):
        mask = c.allowed()
        assert mask is not None and mask[tid]
        c.advance(tid)
    assert c.is_accepting()
    mask = c.allowed()
    assert mask is not None and mask[min(vocab.eog_ids)] and int(np.count_nonzero(mask)) == len(vocab.eog_ids)


def test_lazy_trigger_waits_for_a_call_header_not_the_reasoning_header(
    vocab: Vocab, tokenizer: Tokenizer
) -> None:
    """muse-glimmer: `to=self<|message|>` opens reasoning and `to=NAME<|message|>` a call; only the call
    switches the constraint on (the trigger comes from the analysis, so it names the request's tools)."""
    analysis = analyze((TEMPLATES / "muse-glimmer.jinja").read_text(encoding="utf-8"))
    grammar = tool_call_grammar(analysis, TOOLS[:1])
    assert grammar is not None and grammar.triggers == ("to=get_weather",)
    c = compile({"tool_calls": grammar, "lazy": True}, vocab)
    free = (
        " to=self<|message|>The user wants weather; maybe send to=get later.<|eom|><|start|>assistant"
        " to=user<|message|>Let me check."
    )
    for tid in tokenizer.tokenize(free, parse_special=False):
        assert c.allowed() is None
        c.advance(tid)
    assert c.allowed() is None and c.is_accepting()
    call = (
        "<|eom|><|start|>assistant to=get_weather<|message|><atem:function_calls>\n"
        '<atem:invoke name="get_weather">\n<atem:parameter name="location">Oslo</atem:parameter>'
        "\n</atem:invoke>\n</atem:function_calls>"
    )
    text = b""
    for tid in tokenizer.tokenize(call, parse_special=False):
        mask = c.allowed()
        assert (mask is None) == (b"to=get_weather" not in text)
        assert mask is None or mask[tid]
        c.advance(tid)
        text += vocab.pieces[tid]
    assert c.is_accepting()


def test_a_whitespace_separator_may_be_empty() -> None:
    """Calls written back to back (`<|tool_call>...<tool_call|><|tool_call>...`) or with a newline between."""
    item = g.Sequence((g.Literal("<a>"), g.JsonValue.of({"type": "integer"}), g.Literal("</a>")))
    state = initial({"tool_calls": g.ToolCallGrammar(("<a>",), g.Repeat(item, 1, None, g.Whitespace(2)))})
    assert accepts(state, "<a>1</a><a>2</a>")
    assert accepts(state, "<a>1</a>\n<a>2</a>  <a>3</a>")
    assert not accepts(state, "<a>1</a>   <a>2</a>")
    assert not accepts(state, "<a>1</a>\n")
