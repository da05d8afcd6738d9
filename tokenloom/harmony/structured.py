"""The structured-output hook for harmony: which part of the output a response format constrains.

Only the `final` channel carries the answer, so a `json_schema` response format constrains the content
after `<|channel|>final<|message|>` (analysis stays free). `constrain/` compiles the schema; the server
activates it lazily on `trigger` (DESIGN.md: `lazy(trigger)`) and, once the JSON is complete, should
allow only `end` (or `<|end|>`). Until the structured-outputs work lands, nothing enforces it and the
`# Response Formats` section of the developer message only asks the model to follow the schema.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

FINAL_TRIGGER = "<|channel|>final<|message|>"  # e.g. `<|start|>assistant<|channel|>final<|message|>{...`


@dataclass(frozen=True, slots=True)
class FinalChannelConstraint:
    """What to constrain: the `final` content, to `schema` (None: any JSON object)."""

    schema: dict[str, Any] | None
    trigger: str = FINAL_TRIGGER
    end: str = "<|return|>"


def final_channel_constraint(response_format: Mapping[str, Any] | None) -> FinalChannelConstraint | None:
    """The constraint a request's `response_format` asks for, or None for free text."""
    if not response_format:
        return None
    kind = response_format.get("type")
    if kind == "json_object":
        return FinalChannelConstraint(None)
    if kind == "json_schema":
        spec = response_format.get("json_schema")
        schema = spec.get("schema") if isinstance(spec, Mapping) else None
        return FinalChannelConstraint(dict(schema) if isinstance(schema, Mapping) else None)
    return None
