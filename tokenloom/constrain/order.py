"""Reorder an instance's object keys into the order the constraint enforces (the schema's order).

JSON objects are unordered, but the constraint emits properties in the order the schema lists them
(as OpenAI's strict mode does). Tests and the benchmark use this to serialise known-valid instances
the way a constrained model writes them. It walks the compiled schema (so `$ref`, `allOf` merges and
patternProperties are seen exactly as the parser sees them) and, in a union, follows the first branch
that accepts the value. Not a hot path: branches are checked by running the parser on the value.
"""

from __future__ import annotations

import json
from typing import Any

from tokenloom.constrain.json_frames import ValueFrame
from tokenloom.constrain.json_schema import SchemaCompiler
from tokenloom.constrain.parser import Grammar, accepts
from tokenloom.constrain.schema_ir import Schema
from tokenloom.errors import GrammarError


class _Orderer:
    """Orders values against one compiled schema; grammars per branch are made once."""

    def __init__(self) -> None:
        self.grammars: dict[int, Grammar] = {}

    def fits(self, node: Schema, data: Any) -> bool:
        g = self.grammars.get(id(node))
        if g is None:
            g = self.grammars[id(node)] = Grammar((ValueFrame(node),))
        return accepts(g.initial, json.dumps(data, ensure_ascii=False, separators=(",", ":")))

    def order(self, data: Any, node: Schema, depth: int = 0) -> Any:
        if depth > 64 or not isinstance(data, dict | list):
            return data
        alts = _branches(node)
        if len(alts) > 1:
            tries = [self.order(data, alt, depth + 1) for alt in alts]
            for alt, out in zip(alts, tries, strict=True):
                if self.fits(alt, out):
                    return out
            return tries[0]
        node = alts[0]
        if isinstance(data, dict):
            rank = {name: i for i, (name, _) in enumerate(node.props)}
            keys = sorted(data, key=lambda k: rank.get(k, len(rank)))
            return {k: self.order(data[k], _value_schema(node, k), depth + 1) for k in keys}
        out = []
        for i, v in enumerate(data):
            item = node.prefix[i] if i < len(node.prefix) else node.items
            out.append(v if item is None else self.order(v, item, depth + 1))
        return out


def _branches(node: Schema) -> tuple[Schema, ...]:
    """The plain schemas a value of `node` may follow (unions and checked unions opened)."""
    out: list[Schema] = []
    for alt in node.alternatives():
        if alt.combo is not None:
            parts = alt.combo.parts if alt.combo.kind == "oneOf" else alt.combo.parts[:1]
            for part in parts:
                out.extend(_branches(part))
        else:
            out.append(alt)
    return tuple(out)


def _value_schema(node: Schema, key: str) -> Schema:
    for name, sub in node.props:
        if name == key:
            return sub
    matched = frozenset(i for i, r in enumerate(node.pattern_props) if r.fullmatch(key))
    if matched:
        return node.pattern_sets.get(matched) or node.pattern_sets[frozenset((min(matched),))]
    if node.additional is not None:
        return node.additional
    s = Schema()
    s.additional = s.items = s
    return s


def schema_order(data: Any, schema: Any) -> Any:
    """`data` with every object's keys in schema order (unknown keys last, in their own order)."""
    try:
        root = SchemaCompiler(schema).compile()
    except GrammarError:
        return data
    return _Orderer().order(data, root)
