"""`compile(spec, vocab) -> Constraint` and `check_spec(spec)`: the entry points of structured output.

spec is one of `{"json_schema": {...}}`, `{"json_object": True}`, `{"regex": "..."}`,
`{"tool_calls": ToolCallGrammar, "lazy": bool}`; optional `"param"` names the request field for errors
and `"strict": True` refuses schema keywords that cannot be enforced. Compiled grammars are cached.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from typing import Any

from tokenloom import grammar as g
from tokenloom.constrain.constraint import Compiled, Constraint
from tokenloom.constrain.json_frames import ValueFrame, WsFrame
from tokenloom.constrain.json_schema import SchemaCompiler
from tokenloom.constrain.parser import Grammar, Stack
from tokenloom.constrain.regex import Regex, RegexFrame
from tokenloom.constrain.schema_ir import Schema, any_schema
from tokenloom.constrain.tool_section import Section, SeqFrame
from tokenloom.constrain.trie import Vocab, trie_for
from tokenloom.errors import GrammarError

_CACHE_SIZE = 64
_cache: OrderedDict[tuple[object, int], Compiled] = OrderedDict()
_cache_lock = threading.Lock()


def _object_schema() -> Schema:
    s = any_schema()
    obj = Schema()
    obj.types = frozenset({"object"})
    obj.additional = s
    return obj


def build(spec: dict[str, Any]) -> tuple[Stack, frozenset[str], tuple[str, ...]]:
    """The start stack, unenforced keywords and lazy triggers of a spec (GrammarError if invalid)."""
    if not isinstance(spec, dict):
        raise GrammarError("constraint spec must be an object", param="response_format")
    if "json_schema" in spec:
        param = spec.get("param", "response_format.json_schema.schema")
        comp = SchemaCompiler(spec["json_schema"], param)
        root = comp.compile()
        if spec.get("strict") and comp.unenforced:
            raise GrammarError(f"unsupported schema keyword {sorted(comp.unenforced)[0]!r}", param=param)
        return (ValueFrame(root), WsFrame()), frozenset(comp.unenforced), ()
    if spec.get("json_object"):
        return (ValueFrame(_object_schema()), WsFrame()), frozenset(), ()
    if "regex" in spec:
        pattern = spec["regex"]
        if not isinstance(pattern, str):
            raise GrammarError("regex must be a string", param=spec.get("param", "regex"))
        try:
            return (RegexFrame(Regex(pattern).initial),), frozenset(), ()
        except GrammarError as e:
            raise GrammarError(e.message, param=spec.get("param", "regex")) from None
    if "tool_calls" in spec:
        tg = spec["tool_calls"]
        param = spec.get("param", "tools")
        if not isinstance(tg, g.ToolCallGrammar):
            raise GrammarError("tool_calls must be a ToolCallGrammar", param=param)
        lazy = bool(spec.get("lazy"))
        if lazy and not any(tg.triggers):
            raise GrammarError("a lazy tool-call grammar needs trigger texts", param=param)
        section = Section(tg.root, param)
        top = SeqFrame(section, g.Sequence((tg.root,)), 0)
        return (top,), frozenset(section.unenforced), tuple(t for t in tg.triggers if t) if lazy else ()
    raise GrammarError(
        "unknown constraint: expected json_schema, json_object, regex or tool_calls", param="response_format"
    )


def check_spec(spec: dict[str, Any]) -> None:
    """Validate a spec without a vocabulary (for an early 400 at the HTTP edge)."""
    build(spec)


def _key(spec: dict[str, Any]) -> object:
    if "tool_calls" in spec:
        return ("tool_calls", spec["tool_calls"], bool(spec.get("lazy")))
    try:
        return json.dumps(spec, sort_keys=True, default=str)
    except (TypeError, ValueError):
        return id(spec)


def compile(spec: dict[str, Any], vocab: Vocab) -> Constraint:
    """A fresh constraint for one request; the grammar and its masks are shared through a cache."""
    trie = trie_for(vocab)
    key = (_key(spec), id(trie))
    with _cache_lock:
        compiled = _cache.get(key)
        if compiled is not None:
            _cache.move_to_end(key)
    triggers: tuple[str, ...] = ()
    if compiled is None or "tool_calls" in spec:
        start, unenforced, triggers = build(spec)
        if compiled is None:
            compiled = Compiled(Grammar(start), trie, unenforced)
            with _cache_lock:
                _cache[key] = compiled
                if len(_cache) > _CACHE_SIZE:
                    _cache.popitem(last=False)
    return Constraint(compiled, vocab, triggers)
