"""`compile(spec, vocab) -> Constraint` and `check_spec(spec)`: the entry points of structured output.

A spec is a typed `grammar.ConstraintSpec` (`JsonSchemaSpec`, `JsonObjectSpec`, `RegexSpec`,
`ToolCallSpec`), optionally wrapped in `grammar.Constrained` whose `source` prefixes error locations.
Tests and tools may still pass the older dict form (`{"json_schema": {...}}`, `{"regex": "..."}`, ...), which
`spec_of` converts. Compiled grammars are cached by spec value.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from typing import Any

import tokenloom.constrain.json_values  # noqa: F401  # installs the one value dispatch of the JSON frames
from tokenloom import grammar as g
from tokenloom.constrain.charset import CharSet
from tokenloom.constrain.constraint import Compiled, Constraint
from tokenloom.constrain.json_containers import pattern_runs
from tokenloom.constrain.json_frames import ValueFrame, WsFrame
from tokenloom.constrain.json_schema import SchemaCompiler
from tokenloom.constrain.parser import Grammar, Stack
from tokenloom.constrain.regex import RegexFrame, shared_regex
from tokenloom.constrain.schema_finite import reachable
from tokenloom.constrain.schema_ir import Schema, any_schema
from tokenloom.constrain.tool_section import Section, SeqFrame
from tokenloom.constrain.trie import ByteTrie, Vocab, trie_for
from tokenloom.errors import GrammarError

_CACHE_SIZE = 64
# Vocabulary indexes of pattern runs one compile builds at most (trie.FreeIndex: a few ms each; the trie
# keeps 64): a schema of many patterns leaves the rest to the masks that first need them.
MAX_PREPARED_RUNS = 16
PREPARE_SECONDS = 0.05  # ... and the time it may spend finding their classes
_cache: OrderedDict[tuple[g.ConstraintSpec, int], Compiled] = OrderedDict()
_cache_lock = threading.Lock()

SpecLike = g.ConstraintSpec | g.Constrained | dict[str, Any]

_DEFAULT_SOURCE: dict[type, str] = {
    g.JsonSchemaSpec: "response_format.json_schema.schema",
    g.JsonObjectSpec: "response_format",
    g.RegexSpec: "response_format.regex",
    g.ToolCallSpec: "tools",
}


def _object_schema() -> Schema:
    s = any_schema()
    obj = Schema()
    obj.types = frozenset({"object"})
    obj.additional = s
    return obj


def spec_of(spec: SpecLike) -> g.Constrained:
    """Any accepted spec form -> a typed spec with its error source (GrammarError for a malformed dict)."""
    if isinstance(spec, g.Constrained):
        return spec
    if isinstance(spec, g.JsonSchemaSpec | g.JsonObjectSpec | g.RegexSpec | g.ToolCallSpec):
        return g.Constrained(spec, _DEFAULT_SOURCE[type(spec)])
    if not isinstance(spec, dict):
        raise GrammarError("constraint spec must be an object", param="response_format")
    typed: g.ConstraintSpec
    if "json_schema" in spec:
        typed = g.JsonSchemaSpec.of(spec["json_schema"], strict=bool(spec.get("strict")))
    elif spec.get("json_object"):
        typed = g.JsonObjectSpec()
    elif "regex" in spec:
        pattern = spec["regex"]
        if not isinstance(pattern, str):
            raise GrammarError("regex must be a string", param=spec.get("param", "regex"))
        typed = g.RegexSpec(pattern)
    elif "tool_calls" in spec:
        grammar = spec["tool_calls"]
        if not isinstance(grammar, g.ToolCallGrammar):
            raise GrammarError("tool_calls must be a ToolCallGrammar", param=spec.get("param", "tools"))
        typed = g.ToolCallSpec(grammar, bool(spec.get("lazy")))
    else:
        raise GrammarError(
            "unknown constraint: expected json_schema, json_object, regex or tool_calls",
            param="response_format",
        )
    default = "regex" if isinstance(typed, g.RegexSpec) else _DEFAULT_SOURCE[type(typed)]
    return g.Constrained(typed, str(spec.get("param", default)))


def build(spec: SpecLike) -> tuple[Stack, frozenset[str], tuple[str, ...]]:
    """The start stack, unenforced keywords and lazy triggers of a spec (GrammarError if invalid)."""
    start, unenforced, triggers, _ = _build(spec)
    return start, unenforced, triggers


def _build(spec: SpecLike) -> tuple[Stack, frozenset[str], tuple[str, ...], tuple[Schema, ...]]:
    """`build`, and the root schema nodes of the JSON values the grammar reads."""
    constrained = spec_of(spec)
    typed, param = constrained.spec, constrained.source
    if isinstance(typed, g.JsonSchemaSpec):
        comp = SchemaCompiler(typed.schema, param)
        root = comp.compile()
        if typed.strict and comp.unenforced:
            raise GrammarError(f"unsupported schema keyword {sorted(comp.unenforced)[0]!r}", param=param)
        return (ValueFrame(root), WsFrame()), frozenset(comp.unenforced), (), (root,)
    if isinstance(typed, g.JsonObjectSpec):
        return (ValueFrame(_object_schema()), WsFrame()), frozenset(), (), ()
    if isinstance(typed, g.RegexSpec):
        try:
            return (RegexFrame(shared_regex(typed.pattern).initial),), frozenset(), (), ()
        except GrammarError as e:
            raise GrammarError(e.message, param=param) from None
    grammar = typed.grammar
    if typed.lazy and not any(grammar.triggers):
        raise GrammarError("a lazy tool-call grammar needs trigger texts", param=param)
    section = Section(grammar.root, param)
    top = SeqFrame(section, g.Sequence((grammar.root,)), 0)
    triggers = tuple(t for t in grammar.triggers if t) if typed.lazy else ()
    return (top,), frozenset(section.unenforced), triggers, tuple(section.schemas.values())


def prepare_runs(roots: tuple[Schema, ...], trie: ByteTrie) -> list[CharSet]:
    """Build the trie's indexes of the free runs the pattern strings under `roots` start in (at most
    MAX_PREPARED_RUNS), and return their classes. An index is a pass over every token (2-3 ms with
    Gemma's 262k): built here, it is part of the compile, where xgrammar too prepares per grammar
    position, instead of stalling the first mask inside such a string, mid-generation."""
    nodes = dict.fromkeys(node for root in roots for node in reachable(root))
    runs = pattern_runs(nodes, time.monotonic() + PREPARE_SECONDS)[:MAX_PREPARED_RUNS]
    for klass in runs:
        trie.free_index(klass)
    return runs


def check_spec(spec: SpecLike) -> None:
    """Validate a spec without a vocabulary (for an early 400 at the HTTP edge)."""
    build(spec)


def compile(spec: SpecLike, vocab: Vocab) -> Constraint:
    """A fresh constraint for one request; the grammar and its masks are shared through a cache keyed by
    the spec's value (typed specs are hashable)."""
    constrained = spec_of(spec)
    trie = trie_for(vocab)
    key = (constrained.spec, id(trie))
    with _cache_lock:
        compiled = _cache.get(key)
        if compiled is not None:
            _cache.move_to_end(key)
    triggers: tuple[str, ...] = ()
    if compiled is None or isinstance(constrained.spec, g.ToolCallSpec):
        start, unenforced, triggers, roots = _build(constrained)
        if compiled is None:
            compiled = Compiled(Grammar(start), trie, unenforced)
            prepare_runs(roots, trie)
            with _cache_lock:
                _cache[key] = compiled
                if len(_cache) > _CACHE_SIZE:
                    _cache.popitem(last=False)
    return Constraint(compiled, vocab, triggers)
