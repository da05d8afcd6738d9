"""The property names of an object schema by prefix (json_objects._Names), made lazily from the sorted
names: each prefix's names, next chars and whole names must equal a count over every name."""

from __future__ import annotations

from tokenloom.constrain.json_objects import _Names
from tokenloom.constrain.schema_ir import Schema

NAMES = ["name", "nickname", "nick", "", "é-ü", "é", "n", "name", "zeta\U0010ffff", "zeta", "a\\b", "a"]


def _schema(names: list[str]) -> Schema:
    schema = Schema()
    schema.props = tuple((name, Schema()) for name in names)
    return schema


def test_every_prefix_equals_a_count_over_all_names() -> None:
    index = _Names(_schema(NAMES))
    prefixes = {name[:n] for name in NAMES for n in range(len(name) + 1)}
    for prefix in sorted(prefixes, reverse=True):  # longest first: nothing asked before its parents
        entry = index.get(prefix)
        assert entry is not None, prefix
        starting = [i for i, name in enumerate(NAMES) if name.startswith(prefix)]
        assert entry.names == sum(1 << i for i in starting)
        assert entry.whole == tuple(i for i in starting if NAMES[i] == prefix)
        following: dict[str, int] = {}
        for i in starting:
            if len(NAMES[i]) > len(prefix):
                following[NAMES[i][len(prefix)]] = following.get(NAMES[i][len(prefix)], 0) | 1 << i
        assert entry.next_chars == tuple(sorted(following.items()))
        assert index.get(prefix) is entry  # kept


def test_a_text_no_name_starts_with_has_no_entry() -> None:
    index = _Names(_schema(NAMES))
    for text in ["q", "nam e", "namex", "zeta\U0010ffffx", "a\\c", "é-üx"]:
        assert index.get(text) is None, text
    assert _Names(_schema([])).get("") is None
