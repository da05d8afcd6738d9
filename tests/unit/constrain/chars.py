"""Character-level helper for the parser tests: a spec's initial parser state, no vocabulary."""

from __future__ import annotations

from typing import Any

from tokenloom.constrain.api import build
from tokenloom.constrain.parser import Grammar, ParserState, accepts


def initial(spec: dict[str, Any]) -> ParserState:
    return Grammar(build(spec)[0]).initial


def schema_accepts(schema: Any, text: str) -> bool:
    return accepts(initial({"json_schema": schema}), text)
