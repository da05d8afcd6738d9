"""Parse one finished (or possibly finished) tool-call section of model output into calls.

Driven by `ToolCallStructure.call_pattern`; literals match with free whitespace around them. Raises
`Incomplete` when more text could still complete the section and `SectionError` when it never will.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from tokenloom.json_brackets import scan_brackets
from tokenloom.parsing.arguments import (
    ArgumentsError,
    pythonic_arguments,
    pythonic_end,
    relaxed_end,
    relaxed_to_json,
)
from tokenloom.parsing.markers import fault_excerpt
from tokenloom.parsing.structures import (
    SLOT_ARGS,
    SLOT_CALL,
    SLOT_ID,
    SLOT_INDEX,
    SLOT_NAME,
    SLOTS,
    ArgumentFormat,
    ToolCallStructure,
    literal_parts,
)
from tokenloom.parsing.tagged import parse_tagged


class Incomplete(Exception):
    """The section may still be completed by more text."""


class SectionError(Exception):
    """The section does not follow the template's format; `kind` goes into the ParseError event."""

    def __init__(self, message: str, kind: str = "tool_call_parse_error") -> None:
        super().__init__(message)
        self.kind = kind


@dataclass(frozen=True, slots=True)
class CallHead:
    """What precedes a call's arguments: known before they start, so a stream can announce the call."""

    name: str | None  # None for a {call} object, whose name is one of its fields
    call_id: str | None
    index: int | None  # the index the model wrote (Kimi's functions.NAME:INDEX)
    slot: int  # position of the {args} or {call} slot in the call pattern (its length when there is none)
    pos: int  # where the slot's text starts in the section
    stops: tuple[str, ...]  # literals that end the slot's text (tagged bodies); () runs to the end


@dataclass(frozen=True, slots=True)
class RawCall:
    name: str
    call_id: str | None
    arguments: dict[str, Any]
    index: int | None = None  # the index the model wrote (Kimi's functions.NAME:INDEX)


def json_end(text: str, pos: int) -> int:
    """Index after the JSON object/array starting at `pos`, or -1 if it is not closed yet."""
    return scan_brackets(text, pos, (0, False, False))[1]


def _get(obj: Any, path: tuple[str, ...]) -> Any:
    for key in path:
        if not isinstance(obj, dict) or key not in obj:
            return None
        obj = obj[key]
    return obj


class SectionParser:
    """One parse attempt over `text`, which starts at a trigger."""

    def __init__(
        self,
        text: str,
        structure: ToolCallStructure,
        schemas: dict[str, Any] | None,
        final: bool,
    ) -> None:
        self.text, self.s, self.schemas, self.final = text, structure, schemas, final
        self.pos = 0
        self.calls: list[RawCall] = []  # complete calls so far, valid even if the section later fails
        self.call_ends: list[int] = []  # where each of them ends in `text`

    def parse(self) -> tuple[list[RawCall], int]:
        pos, first = 0, True
        while (head := self.next_head(pos, first)) is not None:
            name, call_id, args = head.name, head.call_id, self._args(head)
            if head.slot < len(self.s.call_pattern) and self.s.call_pattern[head.slot] == SLOT_CALL:
                name, call_id, args = self._json_call(args)
            self.tail(head)
            call = self._checked(name, call_id, args)
            self.calls.append(RawCall(call.name, call.call_id, call.arguments, head.index))
            self.call_ends.append(self.pos)
            pos, first = self.pos, False
        return self.calls, self.pos

    def next_head(self, pos: int, first: bool) -> CallHead | None:
        """From `pos` (0, or the end of the previous call): the head of the next call, or None when the
        section ends here (`self.pos` is then after its end)."""
        s = self.s
        self.pos = pos
        if first:
            self._literal(s.tool_section_start)
            return self._head()
        if not s.tool_section_end.strip():
            return None  # one call per section
        self._skip_ws()
        if self.final and self.pos >= len(self.text):
            return None  # the section end was a stop token
        if self._try_literal(s.tool_section_end):  # whitespace inside it may vary
            return None
        self._literal(s.call_separator)
        return self._head()

    def tail(self, head: CallHead) -> None:
        """Match what follows a call's arguments, from `self.pos` (where they end)."""
        pattern = self.s.call_pattern
        for i in range(head.slot + 1, len(pattern)):
            if pattern[i] in SLOTS:
                raise SectionError(f"unsupported call pattern: {pattern[i]} after the arguments")
            self._literal(pattern[i], closing=pattern[i - 1] in (SLOT_ARGS, SLOT_CALL))

    def _try_literal(self, literal: str) -> bool:
        """Match `literal` here if it is there; a mismatch leaves the position alone."""
        start = self.pos
        try:
            self._literal(literal, closing=True)
        except SectionError:
            self.pos = start
            return False
        return True

    def _skip_ws(self) -> None:
        while self.pos < len(self.text) and self.text[self.pos].isspace():
            self.pos += 1

    def _need_more(self, what: str) -> SectionError:
        if self.final:
            return SectionError(f"tool-call section ended early: expected {what}", "unterminated_section")
        raise Incomplete

    def _literal(self, literal: str, closing: bool = False) -> None:
        for part in literal_parts(literal):
            self._skip_ws()
            if closing and self.final and self.pos >= len(self.text):
                return  # a closing marker that is also a stop token may never reach the text
            if self.text.startswith(part, self.pos):
                self.pos += len(part)
                continue
            if part.startswith(self.text[self.pos :]):
                raise self._need_more(repr(literal))
            raise SectionError(f"expected {literal.strip()!r} at {fault_excerpt(self.text, self.pos, part)}")

    def _until(self, stops: tuple[str, ...]) -> str:
        best = -1
        for stop in stops:
            if stop and (i := self.text.find(stop, self.pos)) >= 0 and (best < 0 or i < best):
                best = i
        if best < 0:
            raise self._need_more(" or ".join(repr(s) for s in stops))
        value, self.pos = self.text[self.pos : best], best
        return value

    def _stops_after(self, index: int) -> tuple[str, ...]:
        """Literals that can end the slot at `index` of the call pattern."""
        pattern = self.s.call_pattern
        for j in range(index + 1, len(pattern)):
            token = pattern[j]
            if token == SLOT_ARGS:
                if self.s.argument_format is ArgumentFormat.PYTHONIC:
                    return ("(",)
                if self.s.argument_format in (ArgumentFormat.JSON, ArgumentFormat.RELAXED_OBJECT):
                    return ("{", "\n")  # only blank literals between: the name ends where the JSON starts
                return (self.s.arg_prefix.strip(), *self._stops_after(j))
            if token not in SLOTS and token.strip():
                return (token.strip(),)
        tail = self.s.call_separator.strip() or self.s.tool_section_end.strip()
        return (tail,) if tail else ()

    def _json(self) -> Any:
        self._skip_ws()
        if self.pos >= len(self.text):
            raise self._need_more("JSON")
        if self.text[self.pos] not in "{[":
            raise SectionError(f"expected JSON at {fault_excerpt(self.text, self.pos)}")
        end = json_end(self.text, self.pos)
        if end < 0:
            raise self._need_more("the end of the JSON")
        try:
            value = json.loads(self.text[self.pos : end])
        except ValueError as exc:
            raise SectionError(f"invalid JSON in tool call: {exc}") from exc
        self.pos = end
        return value

    def _head(self) -> CallHead:
        name: str | None = None
        call_id: str | None = None
        written_index: int | None = None
        pattern = self.s.call_pattern
        for i, token in enumerate(pattern):
            if token in (SLOT_ARGS, SLOT_CALL):
                stops = self._stops_after(i) if token == SLOT_ARGS else ()
                return CallHead(name, call_id, written_index, i, self.pos, stops)
            if token == SLOT_NAME:
                again = self._until(self._stops_after(i)).strip()
                if name is not None and again != name:  # a header and the call block name it twice
                    raise SectionError(f"the call names {name!r} and then {again!r}")
                name = again
            elif token == SLOT_ID:
                call_id = self._until(self._stops_after(i)).strip()
            elif token == SLOT_INDEX:
                self._skip_ws()
                digits_at = self.pos
                while self.pos < len(self.text) and self.text[self.pos].isdigit():
                    self.pos += 1
                if self.pos > digits_at:
                    written_index = int(self.text[digits_at : self.pos])
            else:
                self._literal(token)
        return CallHead(name, call_id, written_index, len(pattern), self.pos, ())

    def _args(self, head: CallHead) -> Any:
        """The arguments (or, for a {call} slot, the whole call object) starting at `head.pos`."""
        if head.slot >= len(self.s.call_pattern):
            return {}
        if self.s.call_pattern[head.slot] == SLOT_CALL or self.s.argument_format is ArgumentFormat.JSON:
            return self._json()
        if self.s.argument_format is ArgumentFormat.RELAXED_OBJECT:
            return self._relaxed()
        if self.s.argument_format is ArgumentFormat.PYTHONIC:
            return self._pythonic()
        body = self._until(head.stops) if head.stops else self._rest()
        try:
            return parse_tagged(body, self.s, self._schema(head.name))
        except ArgumentsError as exc:
            raise SectionError(str(exc)) from exc

    def _relaxed(self) -> Any:
        self._skip_ws()
        if self.pos >= len(self.text):
            raise self._need_more("arguments")
        if self.text[self.pos] != "{":
            raise SectionError(f"expected arguments at {fault_excerpt(self.text, self.pos)}")
        end = relaxed_end(self.text, self.pos, self.s.string_quote)
        if end < 0:
            raise self._need_more("the end of the arguments")
        try:
            value = relaxed_to_json(self.text[self.pos : end], self.s.string_quote)
        except ArgumentsError as exc:
            raise SectionError(str(exc)) from exc
        self.pos = end
        return value

    def _pythonic(self) -> Any:
        if self.pos >= len(self.text):
            raise self._need_more("arguments")
        if self.text[self.pos] != "(":
            raise SectionError(f"expected '(' at {fault_excerpt(self.text, self.pos)}")
        end = pythonic_end(self.text, self.pos)
        if end < 0:
            raise self._need_more("the end of the arguments")
        try:
            value = pythonic_arguments(self.text[self.pos : end])
        except ArgumentsError as exc:
            raise SectionError(str(exc)) from exc
        self.pos = end
        return value

    def _rest(self) -> str:
        if not self.final:
            raise Incomplete
        value, self.pos = self.text[self.pos :], len(self.text)
        return value

    def _json_call(self, obj: Any) -> tuple[str | None, str | None, Any]:
        if not isinstance(obj, dict):
            raise SectionError("tool call is not a JSON object")
        if not self.s.name_path:
            if len(obj) != 1:
                raise SectionError("expected one {name: arguments} pair")
            ((name, args),) = obj.items()
            return str(name), None, args
        name, args = _get(obj, self.s.name_path), _get(obj, self.s.args_path)
        call_id = _get(obj, self.s.id_path) if self.s.id_path else None
        return (
            name if isinstance(name, str) else None,
            call_id if isinstance(call_id, str) else None,
            {} if args is None else args,
        )

    def _schema(self, name: str | None) -> Any:
        return (self.schemas or {}).get(name or "")

    def _checked(self, name: str | None, call_id: str | None, args: Any) -> RawCall:
        name = checked_name(name, self.schemas)
        if isinstance(args, str):
            try:
                args = json.loads(args)
            except ValueError as exc:
                raise SectionError(f"arguments are not JSON: {exc}") from exc
        if not isinstance(args, dict):
            raise SectionError("arguments are not a JSON object")
        return RawCall(name, call_id or None, args)


def checked_name(name: str | None, schemas: dict[str, Any] | None) -> str:
    """The function name of a call, or SectionError when it is missing or not one of the request's tools."""
    if not name:
        raise SectionError("tool call without a function name")
    if schemas is not None and name not in schemas:
        raise SectionError(f"unknown function {name!r}", "unknown_tool")
    return name


def parse_all(text: str, structure: ToolCallStructure) -> list[RawCall]:
    """Every section in a finished text (the analysis' self-check); raises SectionError or Incomplete."""
    calls: list[RawCall] = []
    pos = 0
    triggers = structure.triggers
    if structure.recipient_delimiter:
        text = structure.recipient_delimiter + text
    while True:
        starts = [i for t in triggers if (i := text.find(t, pos)) >= 0]
        if not starts:
            return calls
        found, used = SectionParser(text[min(starts) :], structure, None, final=True).parse()
        calls += found
        pos = min(starts) + max(used, 1)
