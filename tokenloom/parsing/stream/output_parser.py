"""The streaming output parser of the auto-parser: model text -> reasoning, content and tool-call events.

A small state machine (reasoning / content / tool section) built from a `TemplateAnalysis`; it looks only at
new text and holds back what could still become a marker. A tool-call section is handed to `SectionStream`,
which announces each call early and streams its arguments (its docstring states the rule for broken calls).
"""

from __future__ import annotations

import secrets
from enum import Enum
from typing import Any, Literal

from tokenloom.events import ContentDelta, Event, ParsedMessage, ReasoningDelta, ToolCall
from tokenloom.harmony import HarmonyOutputParser
from tokenloom.parsing.markers import find_first, hold_back_len, partial_start
from tokenloom.parsing.stream.output_markers import (
    after_last_tag,
    call_opener,
    header_forms,
    is_forced_open,
    tool_schemas,
    turn_end_forms,
)
from tokenloom.parsing.stream.section_stream import SectionStream
from tokenloom.parsing.structures import SLOT_ID, TemplateAnalysis, literal_parts

__all__ = ["AutoOutputParser", "ReasoningFormat", "is_forced_open", "make_output_parser"]

_Mode = Enum("_Mode", "REASONING CONTENT SECTION HELD")
_ALNUM = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
ReasoningFormat = Literal["auto", "none"]


class AutoOutputParser:
    """Implements `tokenloom.events.OutputParser` for one response of a template analysed by `analyze`."""

    def __init__(
        self,
        analysis: TemplateAnalysis,
        *,
        tools: list[dict[str, Any]] | None,
        reasoning_format: ReasoningFormat = "auto",
        enable_thinking: bool | None = None,
        generation_prompt: str | None = None,
        id_prefix: str | None = None,
        prefill: str = "",
        json_answer: bool = False,
    ) -> None:
        """`prefill`: the start of the assistant message the model continues (the text after the generation
        prompt). It is read first, as if the model had written it, so parsing goes on in the state it
        leaves (inside reasoning, say); its events are not returned, but `message()` includes it.
        `json_answer`: the request asked for a JSON answer (response_format json_schema); a ```json fence
        around it is dropped."""
        content, structure = analysis.content, analysis.tools
        extract = reasoning_format != "none" and bool(content.reasoning_end)
        forced = extract and is_forced_open(content, enable_thinking, generation_prompt)
        # reasoning_format="none" keeps reasoning as text: a block the prompt opened gets its opener back
        # so the content reads "<think>...</think>answer" as the model saw it.
        reopen = not extract and reasoning_format == "none" and bool(content.reasoning_start)
        reopen = reopen and is_forced_open(content, enable_thinking, generation_prompt)
        self._structure = structure
        self._schemas = tool_schemas(tools)
        self._triggers = structure.triggers if self._schemas is not None else ()
        # A call opener without its section opener ("<function=f>...</tool_call>") still starts a section.
        self._lead_text, self._bare_opener = call_opener(structure) if self._triggers else ("", "")
        if self._bare_opener:
            self._triggers += (self._bare_opener,)
        self._r_start = content.reasoning_start if extract else ""
        self._r_end = content.reasoning_end if extract else ""
        # After the answer began, an empty reasoning block or a lone closer is debris, dropped (Gemma 4
        # "Hi<|channel>thought\n<channel|>"); a stuttered opener ("<|channel><|channel>thought") is one.
        self._debris: tuple[str, ...] = ()
        self._r_alias = ""
        if self._r_end:
            if self._r_start:
                self._debris = tuple(self._r_start + gap + self._r_end for gap in ("", "\n", "\n\n"))
                parts = literal_parts(self._r_start)
                self._r_alias = parts[0] + self._r_start if len(parts) > 1 else ""
            self._debris += (self._r_end,)
        # Content wrappers (<|START_RESPONSE|>...<|END_RESPONSE|>) are not reasoning: dropped in every mode.
        self._wrappers = tuple(m for m in (content.content_start, content.content_end) if m)
        self._wrappers += structure.stop_markers  # dropped like wrappers when they reach the text
        self._wrappers += turn_end_forms(content.turn_end)
        self._wrappers += ("```json", "```") if json_answer else ()
        self._wrappers += turn_end_forms(structure.calls_turn_end) if self._triggers else ()
        self._id_prefix = id_prefix if id_prefix is not None else f"call_{secrets.token_hex(6)}_"
        self._explicit_prefix = id_prefix is not None
        self._mode = _Mode.REASONING if forced else _Mode.CONTENT
        self._pending = ""  # text that may still become a marker
        self._recipient = structure.recipient_delimiter
        self._trigger = ""  # the trigger that opened the current section
        self._lead = 0  # how much of the section's text the parser supplied (the prompt's delimiter, a
        # section opener the model left out before "<function=..."): not the model's text, never content
        if self._recipient:  # the generation prompt ends with the delimiter: the output starts a message
            self._triggers = (self._recipient,)
            self._pending, self._lead = self._recipient, len(self._recipient)
        self._section: SectionStream | None = None  # the tool-call section being read
        # HELD: a tool call began inside reasoning. If the reasoning closes later it was reasoning text
        # ("<think>about <tool_call>... hmm</think>"); if the output ends first, the call ended the reasoning.
        self._held = ""
        self._ws = ""  # trailing whitespace held until more text of the same channel follows
        self._section_ws = ""  # the whitespace held before the section's trigger, if it becomes text
        self._fresh = True  # at the start of a channel: leading whitespace is dropped
        self._content_started = False
        self._reasoning_seen = forced
        self._content: list[str] = []
        self._reasoning: list[str] = []
        self._calls: list[ToolCall] = []
        self._content_start = content.content_start
        self._headers = header_forms(content.assistant_header)
        self._reopen = ""  # the opener to give back, once the output shows it did not skip the reasoning
        if reopen:  # goes out with the first delta, as the prompt wrote it ("<think>\n", whitespace kept)
            opener = content.reasoning_start
            if generation_prompt and (at := generation_prompt.rfind(opener)) >= 0:
                opener = generation_prompt[at:]
            self._reopen = opener
        if forced and not content.reasoning_start and generation_prompt:
            # Reasoning with no opener starts where the prompt's last tag ends: text the prompt writes after
            # it ("<|begin_assistant|>\nHere are my reasoning steps:\n", Apriel) is the reasoning's start.
            self._pending = after_last_tag(generation_prompt).lstrip() + self._pending
        if prefill:
            self.feed(prefill)
            # Whitespace the prefill ends with ("Hello, ") is the prefill's own: it joins the message now
            # rather than going out with the model's first delta.
            if self._ws and self._mode is not _Mode.SECTION:
                channel = self._reasoning if self._mode is _Mode.REASONING else self._content
                channel.append(self._ws)
                self._ws = ""

    # -- public API -------------------------------------------------------------------------------------

    def feed(self, text: str) -> list[Event]:
        out: list[Event] = []
        self._pending += text
        self._run(out, final=False)
        return out

    def finish(self) -> list[Event]:
        out: list[Event] = []
        self._run(out, final=True)
        self._ws = ""
        return out

    def message(self) -> ParsedMessage:
        """What the events so far add up to; a call still being read shows its arguments so far."""
        open_call = self._section.open_call() if self._section is not None else None
        return ParsedMessage(
            content="".join(self._content) or None,
            reasoning_content="".join(self._reasoning) or None,
            tool_calls=(*self._calls, open_call) if open_call is not None else tuple(self._calls),
        )

    # -- state machine ----------------------------------------------------------------------------------

    def _markers(self) -> tuple[str, ...]:
        if self._mode is _Mode.REASONING:
            if not self._reasoning:
                # Nothing reasoned yet: a repeated opener is dropped, a tool call or the answer's opener
                # ("<|open|>response<|sep|>") may skip the reasoning.
                skips = (self._r_start, self._content_start, *self._triggers)
                return (self._r_end, *(m for m in skips if m))
            return (self._r_end, *self._triggers)  # a tool call ends the reasoning it interrupts
        markers = self._triggers + self._wrappers
        if self._r_end and not self._content_started and not self._reasoning_seen:
            markers += (self._r_start, self._r_end, self._r_alias) if self._r_start else (self._r_end,)
        else:
            markers += self._debris
        return tuple(m for m in markers if m)

    def _run(self, out: list[Event], final: bool) -> None:
        if self._headers:  # the output's very start: a repeated answer header is dropped
            head = self._pending.lstrip()
            if not final and any(h.startswith(head) for h in self._headers):
                return  # too early to tell
            header = next((h for h in self._headers if head.startswith(h)), "")
            if header:
                self._pending = head[len(header) :]
            self._headers = ()
        if self._reopen:
            head = self._pending.lstrip()
            if not final and self._content_start.startswith(head) and self._content_start:
                return  # too early to tell
            if not (self._content_start and head.startswith(self._content_start)):  # the answer first:
                # no reasoning to give back
                self._pending = self._reopen + self._pending
            self._reopen = ""
        while True:
            if self._mode is _Mode.HELD:
                if not self._release_held(out, final):
                    return
                continue
            if self._mode is _Mode.SECTION:
                if not self._advance_section(out, final):
                    return
                continue
            markers = self._markers()
            index, marker = find_first(self._pending, markers)
            if index >= 0 and not final and (held := partial_start(self._pending, markers, index)) >= 0:
                self._emit(self._pending[:held], out)  # a longer marker may still match: wait for it
                self._pending = self._pending[held:]
                return
            if index < 0:
                keep = 0 if final else hold_back_len(self._pending, markers)
                cut = len(self._pending) - keep
                self._emit(self._pending[:cut], out)
                self._pending = self._pending[cut:]
                return
            self._emit(self._pending[:index], out)
            if self._markers() != markers:  # that text started the content: "to=self<|message|>" is no
                self._pending = self._pending[index:]  # reasoning header any more, look again
                continue
            self._pending = self._pending[index + len(marker) :]
            self._on_marker(marker, out)

    def _on_marker(self, marker: str, out: list[Event]) -> None:
        if marker == self._r_alias:
            marker = self._r_start
        if self._mode is _Mode.REASONING:
            if marker == self._r_end:
                self._switch(_Mode.CONTENT)
                return
            if marker == self._content_start and marker != self._r_start:
                self._switch(_Mode.CONTENT)
                return
            if marker not in self._triggers:
                return  # a repeated reasoning opener: dropped
            if self._reasoning:
                self._held, self._mode = marker, _Mode.HELD
                return
        if marker in self._triggers:
            self._section_ws, self._ws = self._ws, ""
            lead = self._lead_text if marker == self._bare_opener else ""
            self._trigger, self._lead = lead + marker, len(lead) or self._lead
            self._mode = _Mode.SECTION
            self._section = SectionStream(
                lead + marker + self._pending, self._structure, self._schemas, self._calls, self._new_id
            )
            self._pending = ""
        elif marker == self._r_start and not self._content_started and not self._reasoning_seen:
            self._reasoning_seen = True
            self._switch(_Mode.REASONING)
        elif marker == self._r_end and not self._content_started and not self._reasoning_seen:
            self._reasoning_seen = True  # "</think>" closing an empty block the prompt opened
        elif marker not in self._wrappers and marker not in self._debris:
            self._emit(marker, out)

    def _release_held(self, out: list[Event], final: bool) -> bool:
        """HELD: True once the held text was resolved as reasoning (its end marker came) or as calls."""
        scan_from = max(0, len(self._held) - len(self._r_end) + 1)  # look only at new text
        self._held += self._pending
        self._pending = ""
        if (at := self._held.find(self._r_end, scan_from)) >= 0:
            self._mode = _Mode.REASONING
            self._emit(self._held[:at], out)
            self._pending, self._held = self._held[at + len(self._r_end) :], ""
            self._switch(_Mode.CONTENT)
            return True
        if not final:
            return False
        self._pending, self._held = self._held, ""
        self._switch(_Mode.CONTENT)
        return True

    def _switch(self, mode: _Mode) -> None:
        self._mode, self._ws, self._fresh = mode, "", True

    def _emit(self, text: str, out: list[Event]) -> None:
        if not text:
            return
        if self._fresh:
            text = text.lstrip()
            if not text:
                return
            self._fresh = False
        body = text.rstrip()
        if not body:
            self._ws += text
            return
        piece, self._ws = self._ws + body, text[len(body) :]
        if self._mode is _Mode.REASONING:
            self._reasoning.append(piece)
            out.append(ReasoningDelta(piece))
        else:
            self._content_started = True
            self._content.append(piece)
            out.append(ContentDelta(piece))

    # -- tool-call sections -----------------------------------------------------------------------------

    def _advance_section(self, out: list[Event], final: bool) -> bool:
        """Read the section as far as the text allows; True when the parser left the section state."""
        section = self._section
        assert section is not None
        section.text += self._pending
        self._pending = ""
        if self._recipient and (routed := self._route(section, final)) is not None:
            return routed
        left = section.advance(out, final)
        if left is None:
            return False
        trigger_end = len(self._trigger)
        if left.rest_at is not None and left.rest_at >= trigger_end:
            rest = section.text[left.rest_at :]
            if left.failed or self._content_started:  # "Hi <call> after" reads "Hi  after": the
                # section's place keeps its whitespace, still sent only when more content follows
                self._ws = self._section_ws
        else:  # the trigger itself is plain text now; it is not scanned again, so parsing moves on
            rest = section.text[trigger_end:]
            if self._lead < trigger_end:
                self._ws = self._section_ws  # "Hi <tool_call>{bad" stays "Hi <tool_call>{bad"
                self._emit(section.text[max(left.rest_at or 0, self._lead) : trigger_end], out)
        self._pending, self._section, self._lead = rest, None, 0
        if left.failed and (left.rest_at or 0) < trigger_end and self._bare_opener:
            # the whole section is text again: the call opener inside it starts no new section
            self._triggers = tuple(t for t in self._triggers if t != self._bare_opener)
            self._bare_opener = ""
        if left.failed or self._content_started:  # the text goes on as output where it was
            self._mode = _Mode.CONTENT
        else:
            self._switch(_Mode.CONTENT)
        return True

    def _route(self, section: SectionStream, final: bool) -> bool | None:
        """Recipient formats: a message to the content recipient ("all") is plain content."""
        text = section.text
        newline = text.find("\n", len(self._recipient))
        if newline < 0:
            return None if final else False
        if text[len(self._recipient) : newline].strip() != self._structure.content_recipient:
            return None
        self._pending, self._section, self._lead = text[newline + 1 :], None, 0
        self._mode = _Mode.CONTENT
        return True

    def _new_id(self, name: str, written_index: int | None, index: int) -> str:
        """An id for a call the model wrote without one, in the shape the template prints back."""
        s = self._structure
        if s.call_id_template:
            return s.call_id_template.format(
                name=name, index=index if written_index is None else written_index
            )
        if self._explicit_prefix or not (s.id_path or SLOT_ID in s.call_pattern):
            return f"{self._id_prefix}{index}"
        return "".join(secrets.choice(_ALNUM) for _ in range(9))  # Mistral templates insist on 9 alnums


def make_output_parser(
    analysis: TemplateAnalysis,
    *,
    tools: list[dict[str, Any]] | None,
    reasoning_format: ReasoningFormat = "auto",
    enable_thinking: bool | None = None,
    generation_prompt: str | None = None,
    id_prefix: str | None = None,
    prefill: str = "",
    json_answer: bool = False,
) -> AutoOutputParser | HarmonyOutputParser:
    """The output parser for one response of any template: harmony (gpt-oss) templates get
    `tokenloom.harmony`'s parser (channels, not markers; `enable_thinking` and `generation_prompt` do not
    apply to it). `prefill` is read first either way: events carry what the model adds, `message()` the
    whole message."""
    if not analysis.caps.is_harmony:
        return AutoOutputParser(
            analysis,
            tools=tools,
            reasoning_format=reasoning_format,
            enable_thinking=enable_thinking,
            generation_prompt=generation_prompt,
            id_prefix=id_prefix,
            prefill=prefill,
            json_answer=json_answer,
        )
    inline = reasoning_format == "none"
    if id_prefix is None:
        harmony = HarmonyOutputParser(tools=tools, inline_reasoning=inline)
    else:
        harmony = HarmonyOutputParser(
            tools=tools, make_call_id=lambda index: f"{id_prefix}{index}", inline_reasoning=inline
        )
    if prefill:  # plain text is the answer being continued: its header is implied
        harmony.feed(prefill if "<|" in prefill else "<|channel|>final<|message|>" + prefill)
    return harmony
