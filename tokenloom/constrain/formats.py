"""String formats (JSON Schema `format`) as regular expressions the string parser can follow.

"regex" is approximated by a regular language: Python `re` syntax with groups nested at most three
deep. Knows nothing of frames or vocabularies.
"""

from __future__ import annotations

import re
from typing import Any

FORMATS = {
    "date": r"\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])",
    "time": r"([01]\d|2[0-3]):[0-5]\d:([0-5]\d|60)(\.\d{1,9})?(Z|[+-]([01]\d|2[0-3]):[0-5]\d)?",
    "date-time": r"\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])[Tt ]([01]\d|2[0-3]):[0-5]\d:([0-5]\d|60)"
    r"(\.\d{1,9})?([Zz]|[+-]([01]\d|2[0-3]):[0-5]\d)",
    "uuid": r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}",
    "email": r"[A-Za-z0-9._%+\-]+@[A-Za-z0-9\-]+(\.[A-Za-z0-9\-]+)+",
    "uri": r"[A-Za-z][A-Za-z0-9+.\-]*:[^\s\x00-\x1f\\\"<>^`{|}]*",
    "hostname": r"[A-Za-z0-9]([A-Za-z0-9\-]{0,61}[A-Za-z0-9])?"
    r"(\.[A-Za-z0-9]([A-Za-z0-9\-]{0,61}[A-Za-z0-9])?)*",
    "ipv4": r"((25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)",
}


def _regex_syntax(depth: int) -> str:
    """The text of a regular expression with groups nested at most `depth` deep (format "regex")."""
    escape = r"\\[^\n]"
    klass = r"\[\^?\]?([^\]\\\n]|\\[^\n])*\]"
    literal = r"[^\\\[\]()|*+?\n]"
    quant = r"(([*+?]|\{[0-9]+(,[0-9]*)?\})\??)"
    atom = f"({escape}|{klass}|{literal})"
    for _ in range(depth):
        seq = f"({atom}{quant}?)*"
        name = r"(\?(:|=|!|<=|<!|P?<[A-Za-z_][A-Za-z0-9_]*>))?"
        group = rf"\({name}{seq}(\|{seq})*\)"
        atom = f"({escape}|{klass}|{literal}|{group})"
    seq = f"({atom}{quant}?)*"
    return rf"{seq}(\|{seq})*"


FORMATS["regex"] = _regex_syntax(3)


# keywords that check nothing
ANNOTATIONS = frozenset({"title", "description", "$comment", "examples", "default"})


def names_pattern(schema: Any) -> str | None:
    """A `propertyNames` schema as one anchored pattern, when it is a single kind of string check
    (pattern, length bounds, enum/const, format); None when it says more than that."""
    if not isinstance(schema, dict):
        return None
    keys = {k for k in schema if k not in ANNOTATIONS} - {"type"}
    if schema.get("type", "string") != "string":
        return None
    if keys == {"pattern"} and isinstance(schema["pattern"], str):
        return str(schema["pattern"])
    if keys and keys <= {"minLength", "maxLength"}:
        lo, hi = schema.get("minLength", 0), schema.get("maxLength", "")
        if isinstance(lo, int) and (hi == "" or isinstance(hi, int)):
            return rf"^[\s\S]{{{lo},{hi}}}$"
    if keys in ({"enum"}, {"const"}):
        values = [schema["const"]] if "const" in schema else schema["enum"]
        if isinstance(values, list) and values and all(isinstance(v, str) for v in values):
            return "^(" + "|".join(re.escape(v) for v in values) + ")$"
    if keys == {"format"} and schema["format"] in FORMATS:
        return f"^({FORMATS[schema['format']]})$"
    return None
