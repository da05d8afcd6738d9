"""Argument values in a template's own syntax, by character through the real constraint compiler, and read
back by the output parser's converters."""

from __future__ import annotations

import ast
from typing import Any

from tokenloom import grammar as g
from tokenloom.constrain.api import build
from tokenloom.constrain.parser import Grammar, accepts
from tokenloom.parsing.analysis.value_grammar import python_value, relaxed_value, tag_value
from tokenloom.parsing.arguments import relaxed_to_json

OPTIONS: dict[str, Any] = {
    "type": "object",
    "properties": {"timeout": {"type": "integer"}, "flags": {"type": "array"}, "on": {"type": "boolean"}},
}
QUOTE = '<|"|>'
NS = "]<]minimax[>["


def _accepts(node: g.Node, text: str) -> bool:
    return accepts(Grammar(build({"tool_calls": g.ToolCallGrammar(("x",), node)})[0]).initial, text)


def test_python_values_as_str_prints_them() -> None:
    value = {"flags": ["-v", "it's", 'say "hi"', "a\nb\\", {"deep": None}], "timeout": 5, "on": True}
    node = python_value(OPTIONS)
    assert _accepts(node, repr(value))
    assert ast.literal_eval(repr(value)) == value
    assert _accepts(node, "{}")
    assert not _accepts(node, '{"timeout": 5}')  # JSON is not what the template prints
    assert not _accepts(node, "{'timeout': '5'}")
    assert not _accepts(node, "{'flags': ['a\nb']}")  # repr() never writes a raw newline
    assert _accepts(python_value({"type": "boolean"}), "False")
    assert not _accepts(python_value({"type": "boolean"}), "false")


def test_relaxed_values_as_gemma_4_prints_them() -> None:
    text = '{flags:[<|"|>-v<|"|>,<|"|>a\nb<|"|>,{deep:null}],on:true,timeout:5}'
    node = relaxed_value(OPTIONS, QUOTE)
    assert _accepts(node, text)
    assert relaxed_to_json(text, QUOTE) == {
        "flags": ["-v", "a\nb", {"deep": None}],
        "on": True,
        "timeout": 5,
    }
    assert not _accepts(node, '{"timeout":5}')
    assert not _accepts(node, '{timeout:<|"|>5<|"|>}')
    assert _accepts(relaxed_value({"enum": ["a b", "c"]}, QUOTE), '<|"|>a b<|"|>')


def test_nested_tags_as_minimax_m3_prints_them() -> None:
    text = (
        f"{NS}<timeout>5{NS}</timeout>{NS}<flags>{NS}<item>-v{NS}</item>{NS}<item>x y{NS}</item>{NS}</flags>"
    )
    node = tag_value(OPTIONS, NS)
    assert _accepts(node, text)
    assert _accepts(node, text + f"{NS}<on>true{NS}</on>")
    assert not _accepts(node, text + f"{NS}<on>yes{NS}</on>")
    assert not _accepts(node, f"{NS}<timeout>five{NS}</timeout>")


def test_open_schemas_nest_only_so_deep() -> None:
    node = python_value({})
    assert _accepts(node, "[[['x']]]")
    assert not _accepts(node, "[[[['x']]]]")
