"""The one value dispatch of the JSON frames: which frames a value opens with its first character.

It imports every frame module (objects, arrays, strings, numbers, literals, oneOf/not combinations, probed
values) and installs itself in `json_frames`, so those modules push `ValueFrame`s without importing it: no
import circle (and `json_probe.start_probe` in `json_objects`, which json_probe builds on).
"""

from __future__ import annotations

from tokenloom.constrain.json_checks import start_combo
from tokenloom.constrain.json_containers import ArrFrame, StrFrame
from tokenloom.constrain.json_frames import EnumFrame, NumFrame, Replacements, WsFrame, install_value_dispatch
from tokenloom.constrain.json_objects import ObjFrame, Phase, install_probe_start
from tokenloom.constrain.json_probe import start_probe
from tokenloom.constrain.json_unique import Slot, UniqFrame
from tokenloom.constrain.number import number_chars
from tokenloom.constrain.schema_ir import Schema


def start_value(schema: Schema, c: str, depth: int = 0) -> Replacements:
    """Frames for a value of `schema` whose first character `c` was just read."""
    out: Replacements = []
    for alt in schema.alternatives():
        if alt.combo is not None:
            out.extend(start_combo(alt.combo, c, depth))
            continue
        if alt.literals is not None:
            out.extend(EnumFrame(alt.literals, 0).feed(c))
            continue
        types = alt.types
        if c == "{" and "object" in types:
            out.append((ObjFrame(alt, Phase.OPEN, depth=depth + 1), WsFrame(0, depth + 1)))
        elif c == "[" and "array" in types and alt.unique:
            out.append((UniqFrame(alt, Slot.OPEN, depth + 1),))
        elif c == "[" and "array" in types:
            out.append((ArrFrame(alt, 0, False, depth + 1), WsFrame(0, depth + 1)))
        elif c == '"' and "string" in types:
            regex = alt.regex.initial if alt.regex is not None else None
            out.append((StrFrame(alt, 0, regex),))
        elif c in "-0123456789" and ("number" in types or "integer" in types):
            if number_chars("", alt).contains_cp(ord(c)):
                out.append((NumFrame(alt, c),))
        elif c in "tfn":
            for word, typ in (("true", "boolean"), ("false", "boolean"), ("null", "null")):
                if word[0] == c and typ in types:
                    out.append((EnumFrame((word,), 1),))
    return out


install_value_dispatch(start_value)
install_probe_start(start_probe)
