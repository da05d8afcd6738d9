"""The built-in tools gpt-oss was trained with (`browser`, `python`), declared in the system message.

Texts follow the reference renderer's `browser` and `python` namespaces, so the model sees what it saw in
training; the schemas render through `typescript.py` like any other tool.
"""

from __future__ import annotations

from collections.abc import Iterable

from tokenloom.errors import InvalidRequest
from tokenloom.harmony.messages import ToolDescription, ToolNamespace

_NUMBER_MINUS_ONE = {"type": "number", "default": -1}

BROWSER = ToolNamespace(
    name="browser",
    description=(
        "Tool for browsing.\n"
        "The `cursor` appears in brackets before each browsing display: `[{cursor}]`.\n"
        "Cite information from the tool using the following format:\n"
        "`【{cursor}†L{line_start}(-L{line_end})?】`, for example: `【6†L9-L11】` or `【8†L3】`.\n"
        "Do not quote more than 10 words directly from the tool output.\n"
        "sources=web (default: web)"
    ),
    tools=(
        ToolDescription(
            "search",
            "Searches for information related to `query` and displays `topn` results.",
            {
                "type": "object",
                "properties": {
                    "query": {"type": "string"},
                    "topn": {"type": "number", "default": 10},
                    "source": {"type": "string"},
                },
                "required": ["query"],
            },
        ),
        ToolDescription(
            "open",
            "Opens the link `id` from the page indicated by `cursor` starting at line number `loc`, "
            "showing `num_lines` lines.\n"
            "Valid link ids are displayed with the formatting: `【{id}†.*】`.\n"
            "If `cursor` is not provided, the most recent page is implied.\n"
            "If `id` is a string, it is treated as a fully qualified URL associated with `source`.\n"
            "If `loc` is not provided, the viewport will be positioned at the beginning of the document "
            "or centered on the most relevant passage, if available.\n"
            "Use this function without `id` to scroll to a new location of an opened page.",
            {
                "type": "object",
                "properties": {
                    "id": {"type": ["number", "string"], "default": -1},
                    "cursor": _NUMBER_MINUS_ONE,
                    "loc": _NUMBER_MINUS_ONE,
                    "num_lines": _NUMBER_MINUS_ONE,
                    "view_source": {"type": "boolean", "default": False},
                    "source": {"type": "string"},
                },
            },
        ),
        ToolDescription(
            "find",
            "Finds exact matches of `pattern` in the current page, or the page given by `cursor`.",
            {
                "type": "object",
                "properties": {"pattern": {"type": "string"}, "cursor": _NUMBER_MINUS_ONE},
                "required": ["pattern"],
            },
        ),
    ),
)

PYTHON = ToolNamespace(
    name="python",
    description=(
        "Use this tool to execute Python code in your chain of thought. The code will not be shown to "
        "the user. This tool should be used for internal reasoning, but not for code that is intended to "
        "be visible to the user (e.g. when creating plots, tables, or files).\n\n"
        "When you send a message containing Python code to python, it will be executed in a stateful "
        "Jupyter notebook environment. python will respond with the output of the execution or time out "
        "after 120.0 seconds. The drive at '/mnt/data' can be used to save and persist user files. "
        "Internet access for this session is UNKNOWN. Depends on the cluster."
    ),
)

BUILTIN_NAMESPACES = {"browser": BROWSER, "python": PYTHON}


def builtin_namespaces(names: Iterable[str]) -> tuple[ToolNamespace, ...]:
    """The namespaces for `builtin_tools` (e.g. ("browser", "python")); unknown names are a 400."""
    out: list[ToolNamespace] = []
    for name in dict.fromkeys(names):
        if name not in BUILTIN_NAMESPACES:
            message = f"unknown built-in tool {name!r} (expected browser or python)"
            raise InvalidRequest(message, param="builtin_tools")
        out.append(BUILTIN_NAMESPACES[name])
    return tuple(out)


def is_builtin_recipient(recipient: str, enabled: Iterable[str]) -> bool:
    """`browser.search` or `python` addressed to a built-in tool the request enabled."""
    return any(recipient == ns or recipient.startswith(ns + ".") for ns in enabled)
