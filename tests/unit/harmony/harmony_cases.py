"""Conversations shared by the harmony tests (OpenAI-shaped requests and their tools)."""

from __future__ import annotations

from typing import Any

WEATHER_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "get_current_weather",
        "description": "Gets the current weather in the provided location.",
        "parameters": {
            "type": "object",
            "properties": {
                "location": {"type": "string", "description": "The city and state, e.g. San Francisco, CA"},
                "format": {"type": "string", "enum": ["celsius", "fahrenheit"], "default": "celsius"},
            },
            "required": ["location"],
        },
    },
}

LOCATION_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "get_location",
        "description": "Gets the location of the user.",
        "parameters": {"type": "object", "properties": {}},
    },
}

# Every schema feature: nested object, array of strings and of objects, integer default, enum default,
# anyOf with null, nullable with a string default, oneOf with descriptions and a default, boolean default.
FLIGHTS_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "search_flights",
        "description": "Search flights.\nReturns at most `limit` results.",
        "parameters": {
            "type": "object",
            "properties": {
                "route": {
                    "type": "object",
                    "description": "Where to fly",
                    "properties": {
                        "from": {"type": "string", "description": "IATA code"},
                        "to": {"type": "string"},
                    },
                    "required": ["from", "to"],
                },
                "dates": {"type": "array", "items": {"type": "string"}, "description": "ISO dates"},
                "passengers": {"type": "integer", "default": 1},
                "cabin": {"type": "string", "enum": ["economy", "business"], "default": "economy"},
                "max_price": {
                    "anyOf": [{"type": "number"}, {"type": "null"}],
                    "description": "Upper bound in EUR",
                },
                "airline": {"type": "string", "default": "any", "nullable": True},
                "sort": {
                    "description": "How to sort",
                    "default": "price",
                    "oneOf": [
                        {"type": "string", "enum": ["price", "duration"], "description": "a field"},
                        {"type": "number", "description": "a strategy id"},
                    ],
                },
                "flexible": {"type": "boolean", "default": False},
                "legs": {
                    "type": "array",
                    "items": {"type": "object", "properties": {"id": {"type": "integer"}}},
                },
            },
            "required": ["route", "dates"],
        },
    },
}

WEATHER_CALL: dict[str, Any] = {
    "id": "call_1",
    "type": "function",
    "function": {"name": "get_current_weather", "arguments": '{"location": "Tokyo"}'},
}

TOOL_ROUND: list[dict[str, Any]] = [
    {"role": "user", "content": "What is the weather in Tokyo?"},
    {
        "role": "assistant",
        "content": None,
        "reasoning_content": "Need to use function get_current_weather.",
        "tool_calls": [WEATHER_CALL],
    },
    {"role": "tool", "tool_call_id": "call_1", "content": '{"sunny": true, "temperature": 20}'},
]

TOOL_ROUND_FINISHED: list[dict[str, Any]] = [
    *TOOL_ROUND,
    {
        "role": "assistant",
        "content": "It is sunny and 20°C in Tokyo.",
        "reasoning_content": "The tool says sunny, 20 degrees.",
    },
    {"role": "user", "content": "And in Paris?"},
]

SHOPPING_FORMAT: dict[str, Any] = {
    "type": "json_schema",
    "json_schema": {
        "name": "shopping_list",
        "description": "A list of things to buy",
        "schema": {
            "properties": {
                "items": {
                    "type": "array",
                    "description": "entries on the shopping list",
                    "items": {"type": "string"},
                }
            },
            "type": "object",
        },
    },
}
