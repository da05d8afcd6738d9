"""The regex subset, character by character, and its limits."""

from __future__ import annotations

import random
import re
import time

import pytest

import tokenloom.constrain.regex as regex_module
from tests.unit.constrain.chars import initial
from tokenloom.constrain.api import build
from tokenloom.constrain.charset import CharSet
from tokenloom.constrain.formats import FORMATS
from tokenloom.constrain.json_frames import ValueFrame
from tokenloom.constrain.parser import accepts
from tokenloom.constrain.regex import Regex, shared_regex
from tokenloom.errors import GrammarError


@pytest.mark.parametrize(
    ("pattern", "good", "bad"),
    [
        (r"\d{3}-\d{4}", ["123-4567"], ["12-4567", "123-45678", "abc-defg"]),
        (r"(yes|no|maybe)", ["yes", "maybe"], ["ye", "yesno"]),
        (r"[A-Z][a-z]+( [A-Z][a-z]+)*", ["Hello World", "Ab"], ["hello", "Hello world"]),
        (r"\$\d+(\.\d{2})?", ["$12.50", "$1"], ["$1.5", "12"]),
        (r"[^\n]{0,5}x?", ["abc", "éé😀x"], ["a\nb", "abcdefgh"]),
        (r"(?P<k>\w+)=(?:\w|-)+", ["a_1=b-c"], ["=b", "a="]),
        (r"\u00e9+\x41", ["ééA"], ["A"]),
    ],
)
def test_regex_by_char(pattern: str, good: list[str], bad: list[str]) -> None:
    st = initial({"regex": pattern})
    for text in good:
        assert accepts(st, text), text
        assert Regex(pattern).fullmatch(text)
    for text in bad:
        assert not accepts(st, text), text


def test_prefix_states_are_live() -> None:
    st = initial({"regex": "ab|ac"})
    after_a = st.add_char("a")
    assert after_a is not None
    assert set("bc") == {c for c in "abcdz" if after_a.add_char(c) is not None}
    assert after_a.add_char("z") is None


@pytest.mark.parametrize("pattern", ["(a", "a)", "[a-", "(?=a)b", r"\1", r"\k", "*a", "a{2,1}"])
def test_unsupported_or_invalid(pattern: str) -> None:
    with pytest.raises(GrammarError):
        initial({"regex": pattern})


def test_huge_repetition_is_refused_quickly() -> None:
    t0 = time.monotonic()
    with pytest.raises(GrammarError, match="too large"):
        initial({"regex": "(ab){1000000}"})
    assert time.monotonic() - t0 < 5


# Patterns whose DFA differs from Python `re` only if the class-by-class stepping or the dropping of
# epsilon-only NFA states from DFA states were wrong: anchors inside alternatives, nested optional
# repeats, classes cutting through each other, and format "regex" (whose full DFA has over 200k states).
_AGREE_PATTERNS = [
    r"^(a|b)*c$|^d",
    r"(a*)*b?(c|)",
    r"[a-f][c-x]*[^e-g]+\d?",
    r"(x{1,3}y?){2,}z",
    r"(^a|b$)*",
    FORMATS["regex"],
]


@pytest.mark.parametrize("pattern", _AGREE_PATTERNS)
def test_dfa_agrees_with_python_re_on_random_strings(pattern: str) -> None:
    rng = random.Random(12)
    alphabet = "abcdefgxyz019-" if pattern != FORMATS["regex"] else "ab(?:)[]^\\|*+{2,}<>=!\n"
    compiled = re.compile(pattern)
    ours = Regex(pattern)
    for _ in range(3000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 10)))
        assert ours.fullmatch(text) == (compiled.fullmatch(text) is not None), repr(text)


_BOUNDARY_PATTERNS = [
    r"\bfoo\b",
    r"a\b",
    r"\Ba",
    r"^\w+\b\s*$",
    r"x\B-",
    r"(\b|-)+a",
    r"a\B\b",
    r"(a\b)*b",
    # schemastore's dein: the boundary after the host's last label
    r"^https?:\/\/(www\.)?[-a-zA-Z0-9@:%._\+~#=]{1,256}\.[a-zA-Z0-9()]{1,6}\b([-a-zA-Z0-9()@:%_\+.~#?&//=]*)$",
]


@pytest.mark.parametrize("pattern", _BOUNDARY_PATTERNS)
def test_word_boundaries_match_as_python_does(pattern: str) -> None:
    """`\\b` and `\\B` against Python's ASCII word chars (JSON Schema's, from ECMA-262), whole and as a
    search. Python's `\\B` alone never matches the empty text; ECMA-262's does, as ours does, so the
    empty text is left out for `\\B`."""
    rng = random.Random(pattern)
    whole, search = Regex(pattern), Regex(pattern, search=True)
    for _ in range(2000):
        text = "".join(rng.choice("ab_- .:/w1") for _ in range(rng.randint(0, 8)))
        if rng.random() < 0.3:
            text = rng.choice(["foo", "http://a.bc", "https://www.x.io/a", "a-b", "_a"]) + text
        if not text and "\\B" in pattern:
            continue
        assert whole.fullmatch(text) == (re.fullmatch(pattern, text, re.ASCII) is not None), repr(text)
        assert search.fullmatch(text) == (re.search(pattern, text, re.ASCII) is not None), repr(text)


def test_a_boundary_inside_a_schema_pattern_is_enforced() -> None:
    spec = {"json_schema": {"type": "string", "pattern": "^[a-z]+\\b"}}
    assert build(spec)[1] == frozenset()
    st = initial(spec)
    assert accepts(st, '"ab-c"')
    assert accepts(st, '"ab"')
    assert not accepts(st, '"-ab"')
    with pytest.raises(GrammarError, match="beside look-aheads"):
        Regex("^(?=a)a\\b")


def test_states_differing_only_in_epsilon_states_are_one() -> None:
    """`(a?)*` nests epsilon-only states: after any number of a's the DFA is back in one state."""
    r = Regex("((a?)*b?)*")
    d = r.initial.step("a")
    assert d is not None and d.step("a") is d


def _regexes_of(schema: dict[str, object]) -> list[Regex]:
    """The compiled patterns a schema's string values are checked with."""
    stack = build({"json_schema": schema})[0]
    top = next(f for f in stack if isinstance(f, ValueFrame)).schema
    found: list[Regex] = []
    for node in [top, *(s for _, s in top.props)]:
        if node.regex is not None:
            found.append(node.regex)
    return found


def test_schemas_share_the_compiled_pattern_of_a_format_or_pattern() -> None:
    first = _regexes_of({"type": "object", "properties": {"at": {"type": "string", "format": "date-time"}}})
    second = _regexes_of({"type": "string", "format": "date-time"})
    assert first[0] is second[0]  # its DFA and tables, built by the first schema, serve the second
    a = _regexes_of({"type": "string", "pattern": "^[a-z]{3}$"})
    b = _regexes_of({"type": "object", "properties": {"x": {"type": "string", "pattern": "^[a-z]{3}$"}}})
    assert a[0] is b[0]
    assert shared_regex("^[a-z]{3}$") is not a[0]  # a whole-string match is another pattern than a search


def test_shared_patterns_are_bounded_and_refusals_are_not_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(regex_module, "SHARED_REGEXES", 2)
    one = shared_regex("one[0-9]")
    assert shared_regex("one[0-9]") is one
    shared_regex("two[0-9]")
    shared_regex("three[0-9]")  # the least recently used, "one", is dropped
    assert shared_regex("one[0-9]") is not one
    assert len(regex_module._shared) == 2
    for _ in range(2):
        with pytest.raises(GrammarError):
            shared_regex("(?<=a)b")
    assert all(key[0] != "(?<=a)b" for key in regex_module._shared)


def test_a_shared_pattern_grown_big_is_compiled_anew(monkeypatch: pytest.MonkeyPatch) -> None:
    """What earlier grammars reached must not bring a new one nearer the DFA's state limit."""
    monkeypatch.setattr(regex_module, "SHARED_STATES", 3)
    regex = shared_regex("[a-z]{0,9}x")
    assert shared_regex("[a-z]{0,9}x") is regex
    assert regex.fullmatch("abcdex")  # five counts: more states than the limit
    fresh = shared_regex("[a-z]{0,9}x")
    assert fresh is not regex and fresh.states_made() <= 3
    assert shared_regex("[a-z]{0,9}x") is fresh


LOOKAHEADS = [
    r"^(?!x)[a-z]*$",
    r"^(?=.*\d$)[a-z0-9]{1,6}$",  # a `$` inside the look-ahead
    r"^(?=.*[A-Z])[a-z]+$",  # nothing matches
    r"^(?=[a-c]{2})[a-z]{1,3}",  # no `$`: the rest of the text is free
    r"^(?=.*[A-Z])(?=.*\d).{8,}$",
    r"^(?=.*[A-Z])(?=.*[0-9])(?!.*--)(?:[A-Za-z0-9]{2,4}(?:-[A-Za-z0-9]{1,3}){0,3}){1,4}$",  # issue 12
]


def test_lookaheads_before_top_level_branches_are_not_taken_for_the_whole() -> None:
    """In `^(?=a)b|c` the look-ahead belongs to the first branch: not extracted (dropped, as before)."""
    with pytest.raises(GrammarError):
        Regex(r"^(?=a)ab|c", search=True)
    lenient = Regex(r"^(?=a)ab|c", search=True, lenient=True)
    assert lenient.lenient and lenient.fullmatch("xc")


@pytest.mark.parametrize("pattern", LOOKAHEADS)
def test_leading_lookaheads_match_as_python_does(pattern: str) -> None:
    """Look-aheads right after `^` are intersections with the rest: no longer dropped, and the same
    verdict as Python's `re.search` on random texts over the characters they test."""
    compiled = Regex(pattern, search=True)
    assert not compiled.lenient
    rng = random.Random(pattern)
    for _ in range(2000):
        text = "".join(rng.choice("aAbBxZz019-_ ") for _ in range(rng.randrange(13)))
        assert compiled.fullmatch(text) is (re.search(pattern, text) is not None), text


@pytest.mark.parametrize("pattern", LOOKAHEADS)
def test_every_state_left_after_lookaheads_can_still_match(pattern: str) -> None:
    """A state alive in each part may be unable to match (no room left for the digit a look-ahead
    wants): such transitions are cut, so from every state some char or the end leads to a match."""
    compiled = Regex(pattern, search=True)
    seen = {compiled.initial}
    todo = [compiled.initial]
    while todo:
        d = todo.pop()
        assert d.accepting or not d.chars.is_empty() or d is compiled.initial, pattern
        for k in range(len(compiled.bounds)):
            t = d.step_class_index(k)
            if t is not None and t not in seen:
                seen.add(t)
                todo.append(t)
                assert t.accepting or not t.chars.is_empty()


def test_no_room_left_means_the_char_a_lookahead_wants() -> None:
    compiled = Regex(r"^(?=.*\d)[a-z0-9]{1,3}$", search=True)
    after = compiled.initial.step("a")
    assert after is not None
    after = after.step("b")
    assert after is not None and after.chars == CharSet([(ord("0"), ord("9"))])


def test_lookaheads_past_the_state_limit_are_dropped_and_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(regex_module, "MAX_LOOK_STATES", 20)
    pattern = r"^(?=.*[A-Z])(?=.*\d)[A-Za-z0-9]{6,12}$"  # about 60 states: over this test's limit
    with pytest.raises(GrammarError, match="look-aheads"):
        Regex(pattern, search=True)
    assert build({"json_schema": {"type": "string", "pattern": pattern}})[1] == frozenset({"pattern"})
    monkeypatch.setattr(regex_module, "MAX_LOOK_STATES", 2_000)
    regex_module._refused.clear()
    regex_module._shared.clear()
    assert build({"json_schema": {"type": "string", "pattern": pattern}})[1] == frozenset()
