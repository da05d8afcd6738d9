"""Reorder an instance's object keys into the order the constraint enforces (the schema's order).

JSON objects are unordered, but the constraint emits properties in the order the schema lists them
(as OpenAI's strict mode does). Tests and the benchmark use this to serialise known-valid instances
the way a constrained model writes them. Knows nothing of parsers.
"""

from __future__ import annotations

from typing import Any


def _resolve(schema: Any, root: Any, hops: int = 0) -> Any:
    while isinstance(schema, dict) and isinstance(schema.get("$ref"), str) and hops < 32:
        target: Any = root
        for part in [p for p in schema["$ref"][1:].split("/") if p]:
            part = part.replace("~1", "/").replace("~0", "~")
            target = target.get(part) if isinstance(target, dict) else None
        schema = target
        hops += 1
    return schema


def _property_schemas(schema: Any, root: Any, depth: int = 0) -> list[tuple[str, Any]]:
    """Properties in the order compilation merges them: own, then allOf/anyOf/oneOf parts, in order."""
    schema = _resolve(schema, root)
    if not isinstance(schema, dict) or depth > 16:
        return []
    out = list((schema.get("properties") or {}).items()) if isinstance(schema.get("properties"), dict) else []
    for kw in ("allOf", "anyOf", "oneOf"):
        for sub in schema.get(kw) or []:
            out.extend(_property_schemas(sub, root, depth + 1))
    for name in schema.get("required") or []:
        out.append((name, {}))
    return out


def schema_order(data: Any, schema: Any, root: Any | None = None) -> Any:
    """`data` with every object's keys in schema order (unknown keys last, in their own order)."""
    root = schema if root is None else root
    schema = _resolve(schema, root)
    if isinstance(data, dict):
        props = _property_schemas(schema, root)
        rank: dict[str, int] = {}
        subs: dict[str, Any] = {}
        for i, (name, sub) in enumerate(props):
            rank.setdefault(name, i)
            if name not in subs or sub:
                subs.setdefault(name, sub)
        extra = schema.get("additionalProperties", {}) if isinstance(schema, dict) else {}
        keys = sorted(data, key=lambda k: (rank.get(k, len(props)), 0))
        return {
            k: schema_order(data[k], subs.get(k, extra if isinstance(extra, dict) else {}), root)
            for k in keys
        }
    if isinstance(data, list) and isinstance(schema, dict) and "items" not in schema:
        for kw in ("anyOf", "oneOf", "allOf"):  # an array branch of a union: order its items by it
            for sub in schema.get(kw) or []:
                sub = _resolve(sub, root)
                if isinstance(sub, dict) and ("items" in sub or "prefixItems" in sub):
                    return schema_order(data, sub, root)
    if isinstance(data, list) and isinstance(schema, dict):
        prefix: list[Any] = schema.get("prefixItems") or (
            schema["items"] if isinstance(schema.get("items"), list) else []
        )
        items = schema.get("items") if isinstance(schema.get("items"), dict) else {}
        return [schema_order(v, prefix[i] if i < len(prefix) else items, root) for i, v in enumerate(data)]
    return data
