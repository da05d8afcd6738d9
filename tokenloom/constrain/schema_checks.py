"""Passes over the compiled IR once every node exists: enum values against their sibling keywords,
`oneOf` exclusivity, and soundness of negations.

A node is *lossy* when it ignores a keyword (so it accepts more than the schema says). That is safe
anywhere except under a negation: a lossy `not` part, `oneOf` branch or `if` condition would refuse
valid values. Such checks fall back to their superset (the `not` dropped, `oneOf` as `anyOf`, the
condition ignored) and are reported as unenforced. Knows nothing of the JSON Schema text.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from tokenloom.constrain.disjoint import pairwise_disjoint
from tokenloom.constrain.json_frames import ValueFrame
from tokenloom.constrain.parser import Grammar, accepts
from tokenloom.constrain.schema_ir import Combo, Schema


@dataclass(slots=True)
class Check:
    """A node whose meaning depends on `critical` parts not accepting too much."""

    node: Schema
    keyword: str  # e.g. "not", "if"
    critical: tuple[Schema, ...]
    fallback: tuple[Schema, ...]  # the options the node becomes when a critical part is lossy


def reaching(nodes: Iterable[Schema], seeds: set[Schema]) -> set[Schema]:
    """The nodes from which some node of `seeds` is reachable (seeds included)."""
    parents: dict[Schema, list[Schema]] = {}
    for n in nodes:
        for c in n.children():
            parents.setdefault(c, []).append(n)
    out = set(seeds)
    todo = list(seeds)
    while todo:
        for p in parents.get(todo.pop(), ()):
            if p not in out:
                out.add(p)
                todo.append(p)
    return out


def filter_literals(literal_checks: list[tuple[Schema, Schema]]) -> None:
    """Drop enum/const values that the schema's other keywords (compiled as `rest`) refuse."""
    for node, rest in literal_checks:
        start = Grammar((ValueFrame(rest),)).initial
        assert node.literals is not None  # internal: recorded with its literals
        node.literals = tuple(t for t in node.literals if accepts(start, t))
        if not node.literals:
            node.types = frozenset()


def settle(
    nodes: list[Schema],
    literal_checks: list[tuple[Schema, Schema]],
    one_ofs: list[Schema],
    checks: list[Check],
    unenforced: set[str],
) -> None:
    """Run the passes; afterwards overlapping exact `oneOf`s are checked combinations."""
    filter_literals(literal_checks)
    pending_checks = list(checks)
    plain = set()  # oneOfs left as anyOf
    while True:
        lossy = reaching(nodes, {n for n in nodes if n.lossy})
        changed = False
        for node, rest in literal_checks:
            if rest in lossy and not node.lossy:
                node.lossy = changed = True
        for n in one_ofs:
            if n not in plain and n.options and any(p in lossy for p in n.options):
                plain.add(n)
                unenforced.add("oneOf")
                n.lossy = changed = True
        for chk in list(pending_checks):
            if any(p in lossy for p in chk.critical):
                pending_checks.remove(chk)
                chk.node.combo = None
                chk.node.probe = None
                chk.node.options = chk.fallback
                unenforced.add(chk.keyword)
                chk.node.lossy = changed = True
        if not changed:
            break
    for n in one_ofs:
        if n not in plain and n.options and not pairwise_disjoint(n.options):
            n.combo = Combo("oneOf", n.options)
            n.options = None
    for n in nodes:
        n.reset()
