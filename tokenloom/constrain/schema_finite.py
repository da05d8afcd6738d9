"""Which compiled schema nodes some finite JSON value satisfies, and pruning of the ones none does.

A `$ref` cycle can describe values that never end: `{"type": "object", "properties": {"x": {"$ref": "#"}},
"required": ["x"]}` asks for `{"x": {"x": ...}}` forever. Generation under such a schema can only stop at
`max_tokens`. Here a least fixpoint marks the nodes that admit a finite value (leaves first, then objects
whose required properties do, arrays whose minimum items do, unions with one such branch). The compiler
refuses a root without one, and removes the optional ways into the others (an optional property, a union
branch, the items of an array that may be empty), which changes no finite value the schema accepts.
"""

from __future__ import annotations

from collections.abc import Iterable

from tokenloom.constrain.schema_ir import Schema

_LEAF_TYPES = frozenset({"string", "number", "integer", "boolean", "null"})


def reachable(root: Schema) -> list[Schema]:
    """Every node a value of `root` can reach: union branches, checked parts, properties, items."""
    seen: dict[Schema, None] = {}
    stack = [root]
    while stack:
        node = stack.pop()
        if node in seen:
            continue
        seen[node] = None
        stack.extend(node.children())
    return list(seen)


def finite_nodes(nodes: Iterable[Schema]) -> set[Schema]:
    """The nodes that admit at least one finite value (a least fixpoint over the node graph)."""
    pending = list(nodes)
    finite: set[Schema] = set()
    changed = True
    while changed:
        changed = False
        for node in pending:
            if node not in finite and _admits_finite(node, finite):
                finite.add(node)
                changed = True
    return finite


def _admits_finite(node: Schema, finite: set[Schema]) -> bool:
    if node.combo is not None:
        parts = node.combo.parts if node.combo.kind == "oneOf" else node.combo.parts[:1]
        return any(p in finite for p in parts)
    if node.options is not None:
        return any(option in finite for option in node.options)
    if node.literals is not None:
        return bool(node.literals)
    if node.types & _LEAF_TYPES:
        return True
    if "object" in node.types and _object_can_end(node, finite):
        return True
    return "array" in node.types and _array_can_end(node, finite)


def _object_can_end(node: Schema, finite: set[Schema]) -> bool:
    by_name = dict(node.props)
    for name in node.required:
        value = by_name.get(name, node.additional)
        if value is not None and value not in finite:
            return False
    return True


def _array_can_end(node: Schema, finite: set[Schema]) -> bool:
    if node.min_contains and not any(
        f in finite for f in (*node.prefix_found, node.items_found) if f is not None
    ):
        return False  # no item can be counted toward contains (a bound on where it goes is not checked)
    needed = node.min_items
    if any(item not in finite for item in node.prefix[:needed]):
        return False
    if needed > len(node.prefix):
        return node.items is not None and node.items in finite
    return True


def _enterable_endless(node: Schema, finite: set[Schema]) -> bool:
    """No finite value satisfies `node`, yet a value of it can start (so generation could enter it)."""
    return node not in finite and not node.first_chars().is_empty()


def _never() -> Schema:
    """A schema no value satisfies (JSON Schema's `false`)."""
    node = Schema()
    node.types = frozenset()
    return node


def prune_endless(nodes: list[Schema], finite: set[Schema]) -> bool:
    """Remove the optional ways into nodes no finite value satisfies; True when anything changed."""
    changed = False
    for node in nodes:
        if node not in finite:
            continue
        if node.options is not None:
            kept = tuple(option for option in node.options if option in finite)
            if kept != node.options:
                node.options, changed = kept, True
            continue
        if node.combo is not None or node.literals is not None:
            continue
        if any(_enterable_endless(value, finite) and name not in node.required for name, value in node.props):
            # the key stays claimed (so `additionalProperties` cannot take it), but no value can follow it
            node.props = tuple(
                (name, _never() if _enterable_endless(value, finite) and name not in node.required else value)
                for name, value in node.props
            )
            changed = True
        if node.additional is not None and node.additional not in finite:
            node.additional, changed = None, True
        endless_at = next((i for i, item in enumerate(node.prefix) if item not in finite), None)
        if endless_at is not None and endless_at >= node.min_items:  # the array ends before that item
            node.prefix, node.items, changed = node.prefix[:endless_at], None, True
        if node.items is not None and node.items not in finite and node.min_items <= len(node.prefix):
            node.items, changed = None, True
        found = tuple(f if f is None or f in finite else None for f in node.prefix_found)
        if found != node.prefix_found:
            node.prefix_found, changed = found, True
        if node.items_found is not None and node.items_found not in finite:
            node.items_found, changed = None, True
        missed = tuple(f if f is None or f in finite else None for f in node.prefix_missed)
        if missed != node.prefix_missed:
            node.prefix_missed, changed = missed, True
        if node.items_missed is not None and node.items_missed not in finite:
            node.items_missed, changed = None, True
    if changed:
        for node in nodes:
            node.reset()
    return changed
