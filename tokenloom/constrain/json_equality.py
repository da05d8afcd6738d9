"""Equality of JSON values as JSON Schema defines it (1 == 1.0, key order ignored), as comparable strings.

Used by `uniqueItems` (items read so far) and by `not` over listed values; knows nothing of parsers.
"""

from __future__ import annotations

import json
from typing import Any


def value_key(value: Any) -> str:
    """Equal JSON values give equal keys (1 and 1.0 alike, at any depth; true and 1 apart)."""
    return json.dumps(_normal(value), sort_keys=True, ensure_ascii=False)


def _normal(v: Any) -> Any:
    if isinstance(v, float) and v.is_integer():
        return int(v)
    if isinstance(v, list):
        return [_normal(x) for x in v]
    if isinstance(v, dict):
        return {k: _normal(x) for k, x in v.items()}
    return v
