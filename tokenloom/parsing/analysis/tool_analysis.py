"""Phase 2 of template analysis: the tool-call section, one call's pattern and its argument format.

Renders one call and two parallel calls through the template, locates the probe names, ids and arguments
in the rendered text and keeps what surrounds them as literal markers (seed 000's differential analysis).
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import product
from typing import Any

from tokenloom.parsing.analysis.locate import (
    ID_MARK,
    Located,
    Tagged,
    locate,
    locate_json,
    locate_pythonic,
    locate_relaxed,
    locate_tagged,
    relaxed_quote,
    tagged_markers,
)
from tokenloom.parsing.analysis.probes import (
    ARGS_A,
    ARGS_B,
    CONTENT_TEXT,
    ID_A,
    ID_B,
    NAME_A,
    NAME_B,
    PROBE_TOOLS,
    Prober,
    flat_tools,
    strip_turn_end,
    tool_call,
)
from tokenloom.parsing.markers import TAG_RE, align_split, common_prefix, common_suffix, token_aligned_prefix
from tokenloom.parsing.stream.section import Incomplete, SectionError, parse_all
from tokenloom.parsing.structures import (
    SLOT_ARGS,
    SLOT_CALL,
    SLOT_ID,
    SLOT_INDEX,
    SLOT_NAME,
    SLOTS,
    ArgumentFormat,
    ContentStructure,
    FunctionFormat,
    ToolCallStructure,
)

_NAME_MARK = "\x02"  # stands in for the function name repeated between a header and the call block


def _split_slots(literal: str, out: list[str]) -> None:
    for n, named in enumerate(literal.split(_NAME_MARK)):
        if n:
            out.append(SLOT_NAME)
        for i, part in enumerate(named.split(ID_MARK)):
            if i:
                out.append(SLOT_ID)
            if part:
                out.append(part)


def _name_suffix(b1: str, b2: str | None, out: list[str]) -> None:
    """The text between name and arguments; an index that differs between calls becomes a slot, and so
    does the name written again (a header `to=NAME<|message|>` before `<invoke name="NAME">`)."""
    b1 = b1.replace(NAME_A, _NAME_MARK)
    b2 = b2.replace(NAME_B, _NAME_MARK) if b2 is not None else None
    if b2 is None or b1 == b2:
        _split_slots(b1, out)
        return
    head = common_prefix(b1, b2)
    tail = common_suffix(b1[len(head) :], b2[len(head) :])
    middle = b1[len(head) : len(b1) - len(tail)]
    _split_slots(head, out)
    out.append(SLOT_INDEX if middle.isdigit() else SLOT_ID)
    _split_slots(tail, out)


# Call ids to probe with: plain ones, then Kimi's "functions.NAME:INDEX" (some templates print only the id).
_ID_STYLES = ((ID_A, ID_B), (f"functions.{NAME_A}:0", f"functions.{NAME_B}:1"))


def analyze_tools(template: str, content: ContentStructure, notes: list[str]) -> ToolCallStructure:
    """Find the tool-call structure, or `supports_tools=False` when calls never render."""
    rendered = False
    for flat in (False, True):
        prober = Prober(template, flat_tools(PROBE_TOOLS) if flat else PROBE_TOOLS)
        out_c = prober.output({"role": "assistant", "content": CONTENT_TEXT}) or ""
        for as_string in (False, True):
            for (id_a, id_b), text in product(_ID_STYLES, ("", None)):  # some render calls only for null
                one = [tool_call(id_a, NAME_A, ARGS_A, as_string)]
                two = [*one, tool_call(id_b, NAME_B, ARGS_B, as_string)]
                o1 = prober.output({"role": "assistant", "content": text, "tool_calls": one})
                if o1 is None or NAME_A not in o1:
                    continue
                rendered = True
                o2 = prober.output({"role": "assistant", "content": text, "tool_calls": two})
                structure = _derive(o1, o2, out_c, as_string, content)
                if structure is None or not _self_check(structure, o1, o2, out_c, content):
                    continue
                if not as_string and structure.argument_format in _TAG_FORMATS:
                    structure = _replace(structure, python_values=_prints_python(prober, id_a, text))
                null = prober.output({"role": "assistant", "content": None, "tool_calls": one})
                if null is not None and "None" in null and "None" not in o1:
                    structure = _replace(structure, requires_nonnull_content=True)
                structure = _replace(structure, call_lead=_call_lead(o1, structure))
                structure = _replace(structure, calls_turn_end=_calls_turn_end(o1, out_c))
                if flat:
                    notes.append("the template reads tools without the OpenAI 'function' wrapper")
                if id_a != ID_A:
                    notes.append("the template prints call ids as functions.NAME:INDEX")
                return _replace(structure, flat_tools=flat)
    notes.append(
        "tool calls render but their structure was not recognised"
        if rendered
        else "the template renders no tool calls"
    )
    return ToolCallStructure()


def _calls_turn_end(output: str, out_c: str) -> str:
    """The tags a turn of calls ends with (what the turn end cut off the one-call rendering)."""
    after = output.find(NAME_A)
    kept = strip_turn_end(output, out_c, after)
    tail = output[len(kept) :].strip()
    return tail if TAG_RE.match(tail) and len(tail) <= 64 else ""


def _call_lead(output: str, structure: ToolCallStructure) -> str:
    """The whitespace before the first call of a calls-only turn: a forced call writes it too."""
    starts = [i for trigger in structure.triggers if (i := output.find(trigger)) >= 0]
    lead = output[: min(starts)] if starts else ""
    return lead if not lead.strip() else ""


_TAG_FORMATS = (ArgumentFormat.TAGGED, ArgumentFormat.KEY_VALUE_TAGS)
_NESTED_PROBE: dict[str, Any] = {"key_one": "value_one", "key_two": {"k": ["v", True, None, 1.5]}}


def _prints_python(prober: Prober, call_id: str, text: str | None) -> bool:
    """Does a tagged value that is an object come out as Python's str() (`{'k': ['v', True, None]}`)?"""
    call = tool_call(call_id, NAME_A, _NESTED_PROBE, False)
    output = prober.output({"role": "assistant", "content": text, "tool_calls": [call]}) or ""
    return repr(_NESTED_PROBE["key_two"]) in output


def _self_check(
    structure: ToolCallStructure, o1: str, o2: str | None, out_c: str, content: ContentStructure
) -> bool:
    """Parse the probe renderings back with the derived structure: a wrong guess must not be used."""
    markers = (*structure.call_pattern, structure.tool_section_start, structure.tool_section_end)
    if any(probe in marker for marker in markers for probe in ("probe_", "key_", "value_")):
        return False  # probe data leaked into a marker: the name or arguments were not isolated
    expected = [[(NAME_A, ARGS_A)], [(NAME_A, ARGS_A), (NAME_B, ARGS_B)]]
    for output, calls in zip((o1, o2), expected, strict=True):
        if output is None or (NAME_B not in output and len(calls) == 2):
            continue
        try:
            found = parse_all(_clean(output, out_c, content, mark_ids=False), structure)
        except (SectionError, Incomplete):
            return False
        if [(c.name, c.arguments) for c in found] != calls:
            return False
    return True


def _replace(structure: ToolCallStructure, **changes: Any) -> ToolCallStructure:
    from dataclasses import replace

    return replace(structure, **changes)


def _unclosed_tag(text: str) -> bool:
    return text.rfind("<") > text.rfind(">")


def _clean(output: str, out_c: str, content: ContentStructure, mark_ids: bool = True) -> str:
    """The tool-call text alone: no turn end, no header shared with content, no empty reasoning block."""
    text = strip_turn_end(output, out_c, output.find(NAME_B) if NAME_B in output else output.find(NAME_A))
    prelude = token_aligned_prefix(common_prefix(text, out_c))
    text = text[len(prelude) :]
    start, end = content.reasoning_start, content.reasoning_end
    if end:
        body = text.lstrip()
        if start and body.startswith(start) and body[len(start) :].lstrip().startswith(end):
            body = body[len(start) :].lstrip()
        if body.startswith(end):
            text = body[len(end) :]
    return text.replace(ID_A, ID_MARK).replace(ID_B, ID_MARK) if mark_ids else text


@dataclass(slots=True)
class _FirstCall:
    """Where the one-call rendering holds its call, and how the call's arguments are written."""

    text: str  # the one-call rendering, cleaned of the turn's frame and the content
    loc: Located
    tagged: Tagged | None = None  # <parameter=k>v</parameter>-style arguments
    quote: str = ""  # relaxed objects: the string quote; Pythonic calls: "("


@dataclass(slots=True)
class _Layout:
    """The literal text around calls, from the one-call and two-call renderings: what opens and closes the
    section, what opens and closes each call, what separates two calls."""

    section_start: str
    call_start: str
    call_end: str
    separator: str
    section_end: str
    parallel: bool
    second_name_suffix: str | None  # the text after the second call's name, where the name is not a field
    call_fields: tuple[tuple[tuple[str, ...], str], ...]  # a call object's fields, constants kept
    second: Located | None


def _derive(
    one_call: str, two_calls: str | None, content_only: str, as_string: bool, content: ContentStructure
) -> ToolCallStructure | None:
    """A call structure from the renderings of one call and of two parallel calls (None if not found)."""
    first = _find_first_call(_clean(one_call, content_only, content))
    if first is None:
        return None
    two = _clean(two_calls, content_only, content) if two_calls is not None and NAME_B in two_calls else None
    layout = _layout(first, two)
    pattern = _call_pattern(first, layout)
    name_path, args_path, id_path = first.loc.paths
    index_id = None
    if not id_path and layout.parallel and layout.second is not None:
        index_id = _index_id_path(first.loc.fields, layout.second.fields)
    call_fields = layout.call_fields
    if index_id:  # Command R7B writes "tool_call_id": "<index>": the model's id, kept as written
        id_path = index_id
        call_fields = tuple(
            (path, SLOT_ID) if path == index_id else (path, text)
            for path, text in first.loc.fields
            if path == index_id or (path, text) in call_fields
        )
    section_start, section_end, stops = _turn_stops(layout, pattern)
    structure = ToolCallStructure(
        supports_tools=True,
        parallel_calls=layout.parallel,
        tool_section_start=section_start.lstrip() if section_start.strip() else "",
        tool_section_end=section_end.rstrip(),
        call_separator=layout.separator,
        call_pattern=tuple(pattern),
        name_path=name_path,
        args_path=args_path,
        id_path=id_path,
        call_fields=call_fields,
        string_arguments=as_string,
        stop_markers=stops,
    )
    if index_id:
        structure = _replace(structure, call_id_template="{index}")
    structure = _with_argument_format(structure, first)
    if pattern[0] == SLOT_NAME and layout.separator.strip() and not section_start.strip():
        return _recipient(structure, layout.separator.strip(), content_only)
    function_format = _classify(structure, first.loc)
    if function_format is FunctionFormat.PREFIXED_INDEXED:  # the model writes functions.NAME:INDEX itself
        opener = next(p for p in structure.call_pattern if p not in SLOTS)
        namespace = opener[opener.rfind(">") + 1 :].strip()
        structure = _replace(structure, call_id_template=namespace + "{name}:{index}")
    return _replace(structure, function_format=function_format)


def _find_first_call(text: str) -> _FirstCall | None:
    """The probe call in the one-call rendering: a JSON object first, then a relaxed object
    (`{k:<|"|>v<|"|>}`), a Python call (`NAME(k='v')`), or tagged arguments (`<parameter=k>v`)."""
    loc = locate_json(text, 0, NAME_A, ARGS_A)
    if loc is not None:
        return _FirstCall(text, loc)
    name_at = text.find(NAME_A)
    quote = relaxed_quote(text, name_at + len(NAME_A)) if name_at >= 0 else ""
    if quote:
        loc = locate_relaxed(text, 0, NAME_A, ARGS_A, quote)
        return _FirstCall(text, loc, quote=quote) if loc is not None else None
    loc = locate_pythonic(text, 0, NAME_A, ARGS_A)
    if loc is not None:
        return _FirstCall(text, loc, quote="(")  # `locate` finds the second call the same way
    tagged = tagged_markers(text, name_at + len(NAME_A)) if name_at >= 0 else None
    loc = locate_tagged(text, 0, NAME_A, ARGS_A, tagged) if tagged else None
    return _FirstCall(text, loc, tagged=tagged) if loc is not None else None


def _layout(first: _FirstCall, two: str | None) -> _Layout:
    """Split the text before and after the call into section and call markers. One call alone cannot
    tell them apart: the two-call rendering can, since the section's markers appear once and a call's
    twice (what stands between the calls is the call's end, the separator, then the call's start)."""
    before, after = first.text[: first.loc.start], first.text[first.loc.end :]
    layout = _Layout("", before, after, "", "", False, None, first.loc.fields, None)
    if two is None:
        return layout
    c1 = locate(two, 0, NAME_A, ARGS_A, first.tagged, first.quote)
    c2 = locate(two, c1.end, NAME_B, ARGS_B, first.tagged, first.quote) if c1 else None
    if c1 is None or c2 is None or not c1.kind == c2.kind == first.loc.kind:
        return layout
    layout.parallel, layout.second = True, c2
    middle = two[c1.end : c2.start]
    split = align_split(before, len(before) - len(common_suffix(before, middle)))
    layout.call_start, layout.section_start = before[split:], before[:split]
    inner = middle[: len(middle) - len(layout.call_start)]
    call_end = common_prefix(inner, after)
    end_split = align_split(after, len(call_end))
    if inner.startswith(after[:end_split]):
        call_end = after[:end_split]
    elif _unclosed_tag(call_end):
        call_end = token_aligned_prefix(call_end)
    layout.call_end, layout.separator = call_end, inner[len(call_end) :]
    layout.section_end = after[len(call_end) :]
    tail = two[c2.end :]
    if not layout.section_end.strip() and tail.startswith(call_end) and tail[len(call_end) :].strip():
        layout.section_end = tail[len(call_end) :]  # one call rendered without the section's end
    if c2.kind != "call":
        layout.second_name_suffix = two[c2.name_end : c2.args_start]
    else:  # a constant is one only if the second call writes it too
        layout.call_fields = tuple(f for f in layout.call_fields if f[1] in SLOTS or f in c2.fields)
    return layout


def _call_pattern(first: _FirstCall, layout: _Layout) -> list[str]:
    """One call as literals and slots (`<tool_call>\n{call}\n</tool_call>`, `{name}[ARGS]{args}`)."""
    pattern: list[str] = []
    _split_slots(layout.call_start, pattern)
    if first.loc.kind == "call":
        pattern.append(SLOT_CALL)
    else:
        pattern.append(SLOT_NAME)
        name_suffix = first.text[first.loc.name_end : first.loc.args_start]
        _name_suffix(name_suffix, layout.second_name_suffix, pattern)
        pattern.append(SLOT_ARGS)
    call_end = layout.call_end
    if not layout.section_end.strip():
        call_end = call_end.rstrip()  # trailing whitespace belongs to what follows the call
    _split_slots(call_end, pattern)
    return pattern


def _turn_stops(layout: _Layout, pattern: list[str]) -> tuple[str, str, tuple[str, ...]]:
    """Section start and end, and the markers that end the turn after the calls instead of a section end."""
    start, end, separator = layout.section_start, layout.section_end, layout.separator
    if not start.strip() and end.strip():
        # Nothing opened a section: what follows the calls ends the turn (<|eom_id|>, <|tool_response>).
        return start, "", (end.strip(),)
    if not start.strip() and not end.strip() and separator.strip() and pattern[0] != SLOT_NAME:
        # Each call is its own message (`<|eom|><|start|>assistant` between them): the parser drops the
        # separator as text and the next call's opener starts a new section; the grammar keeps it.
        return start, end, (separator.strip(),)
    return start, end, ()


def _with_argument_format(structure: ToolCallStructure, first: _FirstCall) -> ToolCallStructure:
    """JSON arguments are the default; Pythonic, relaxed-object and tagged arguments say so."""
    if first.quote == "(":
        return _replace(structure, argument_format=ArgumentFormat.PYTHONIC)
    if first.quote:
        return _replace(structure, argument_format=ArgumentFormat.RELAXED_OBJECT, string_quote=first.quote)
    tagged = first.tagged
    if tagged is None:
        return structure
    kv = tagged.prefix.rstrip().endswith(">") and tagged.suffix.lstrip().startswith("<")
    return _replace(
        structure,
        argument_format=ArgumentFormat.KEY_VALUE_TAGS if kv else ArgumentFormat.TAGGED,
        arg_prefix=tagged.prefix,
        arg_suffix=tagged.suffix,
        arg_suffix_tail=tagged.suffix_tail,
        arg_close=tagged.close,
        arg_separator=tagged.separator,
    )


def _index_id_path(
    first: tuple[tuple[tuple[str, ...], str], ...], second: tuple[tuple[tuple[str, ...], str], ...]
) -> tuple[str, ...] | None:
    """A top-level "...id" field the template fills with the call's index (0 in the first call, 1 in the
    second) instead of the message's id: the model writes it too, and it is the call's id."""
    later = dict(second)
    for path, text in first:
        is_id = len(path) == 1 and path[0].lower().endswith("id")
        if is_id and text in ('"0"', "0") and later.get(path) in ('"1"', "1"):
            return path
    return None


def _recipient(structure: ToolCallStructure, delimiter: str, out_c: str) -> ToolCallStructure:
    """Functionary v3.2 style: every message starts with "NAME\n" after ">>>"; "all" means content."""
    head = out_c[: out_c.find(CONTENT_TEXT)] if CONTENT_TEXT in out_c else ""
    return _replace(
        structure,
        function_format=FunctionFormat.RECIPIENT_BASED,
        call_pattern=(delimiter, *structure.call_pattern),
        call_separator="",
        recipient_delimiter=delimiter,
        content_recipient=head.strip(),
    )


def _classify(structure: ToolCallStructure, loc: Located) -> FunctionFormat:
    opener = structure.tool_section_start + "".join(
        p
        for p in structure.call_pattern[
            : structure.call_pattern.index(SLOT_CALL if loc.kind == "call" else SLOT_NAME)
        ]
    )
    if loc.kind == "call":
        if "```" in opener:
            return FunctionFormat.MARKDOWN_CODE_BLOCK
        return FunctionFormat.JSON_OBJECT if structure.name_path else FunctionFormat.NAME_AS_KEY
    if SLOT_INDEX in structure.call_pattern and opener.endswith("."):
        return FunctionFormat.PREFIXED_INDEXED
    if opener.rstrip().endswith(">>>"):
        return FunctionFormat.RECIPIENT_BASED
    after_name = structure.call_pattern[structure.call_pattern.index(SLOT_NAME) + 1]
    if opener.strip().startswith("[") and after_name.startswith("["):
        return FunctionFormat.BRACKET_TAG
    if opener.endswith(("=", '"', " ")):
        return FunctionFormat.TAG_WITH_NAME
    return FunctionFormat.TAG_NAME_ONLY
