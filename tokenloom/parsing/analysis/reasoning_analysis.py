"""Phase 1 of template analysis: reasoning markers and mode, content wrapping (seed 000's four methods).

Works on rendered probe texts only (see `probes.py`); knows nothing of tool calls.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

from tokenloom.parsing.analysis.probes import CONTENT_TEXT, THINK_TEXT, Prober
from tokenloom.parsing.markers import TAG_RE
from tokenloom.parsing.structures import ContentMode, ContentStructure, ReasoningMode

_REASONING_WORDS = ("think", "reason", "thought")
_ROLE_WORDS = ("assistant", "user", "system", "im_start", "im_end", "turn", "role", "bot", "eos", "bos")


def thinking_kwargs(on: bool) -> dict[str, bool]:
    """Both names of the thinking switch (Qwen3 `enable_thinking`, DeepSeek V3.1 `thinking`)."""
    return {"enable_thinking": on, "thinking": on}


def closer_of(tag: str) -> str:
    """The closing marker that pairs with an opening marker (e.g. "<think>" -> "</think>")."""
    if tag.startswith("<|START_") and tag.endswith("|>"):
        return "<|END_" + tag[len("<|START_") :]
    if tag.startswith("<|") and tag.endswith("|>"):
        return "<|/" + tag[2:]
    if tag.startswith("[") and not tag.startswith("[/"):
        return "[/" + tag[1:]
    if tag.startswith("<") and not tag.startswith("</"):
        return "</" + tag[1:]
    return ""


def opener_of(tag: str) -> str:
    """The opening marker that pairs with a closing one (e.g. "<|END_THINKING|>" -> "<|START_THINKING|>")."""
    if tag.startswith("<|END_"):
        return "<|START_" + tag[len("<|END_") :]
    if tag.startswith("<|/"):
        return "<|" + tag[3:]
    if tag.startswith("[/"):
        return "[" + tag[2:]
    if tag.startswith("</"):
        return "<" + tag[2:]
    return ""


# A block named by a word between two tags, e.g. Kimi K3's "<|open|>think<|sep|>" ... "<|close|>think<|sep|>"
_NAMED = re.compile(f"(?P<a>{TAG_RE.pattern})(?P<word>\\w+)(?P<b>{TAG_RE.pattern})")


def named_pair(pre: str, post: str) -> tuple[str, str] | None:
    """The last named opener of `pre` whose closer (another first tag, the same word and last tag) is in
    `post`: ("<|open|>response<|sep|>", "<|close|>response<|sep|>")."""
    for m in reversed(list(_NAMED.finditer(pre))):
        for c in _NAMED.finditer(post):
            if c["word"] == m["word"] and c["b"] == m["b"] and c["a"] != m["a"]:
                return m.group(), c.group()
    return None


def _named_opener(prompt: str, closer: str) -> str:
    """The named opener the prompt ends with that `closer` closes ("<|open|>think<|sep|>"), else ""."""
    c = _NAMED.fullmatch(closer)
    found = list(_NAMED.finditer(prompt))
    if c is None or not found or found[-1].end() != len(prompt):
        return ""
    m = found[-1]
    return m.group() if m["word"] == c["word"] and m["b"] == c["b"] and m["a"] != c["a"] else ""


def _is_reasoning_tag(tag: str) -> bool:
    low = tag.lower()
    return any(w in low for w in _REASONING_WORDS) and not any(w in low for w in _ROLE_WORDS)


def _channel_pair(text: str) -> tuple[str, str] | None:
    """An empty block named by a word, e.g. Gemma 4's "<|channel>thought\n<channel|>" -> its markers."""
    found = list(TAG_RE.finditer(text))
    if len(found) != 2:
        return None
    word = text[found[0].end() : found[1].start()].strip()
    if word and word.isidentifier() and any(w in word.lower() for w in _REASONING_WORDS):
        return found[0].group() + word, found[1].group()
    return None


def _opening(before: str) -> str:
    """The reasoning opener from the text before the reasoning: its last tag, with a recipient word that
    is glued to it (muse's "to=self<|message|>")."""
    tags = list(TAG_RE.finditer(before))
    if not tags or tags[-1].end() != len(before):
        return _last_tag(before)
    word = before[: tags[-1].start()].split()[-1:] if before[: tags[-1].start()].strip() else []
    glued = word and before[: tags[-1].start()].endswith(word[0]) and not TAG_RE.search(word[0])
    return before[len(before) - len(word[0]) - len(tags[-1].group()) :] if glued else tags[-1].group()


def _content_header(pre: str, start: str, end: str) -> str:
    """Constant text before every answer that ends in a tag (Solar's "<|content|>"), once an empty
    reasoning block is removed; "" when there is none."""
    text = pre.strip()
    if end:
        if start and text.startswith(start) and text[len(start) :].lstrip().startswith(end):
            text = text[len(start) :].lstrip()
        if text.startswith(end):
            text = text[len(end) :].strip()
    tags = list(TAG_RE.finditer(text))
    return text if text and tags and tags[-1].end() == len(text) else ""


def _last_tag(text: str) -> str:
    tags = TAG_RE.findall(text)
    return tags[-1] if tags else ""


def _ends_with_open(prompt: str | None, start: str) -> bool:
    return bool(start) and prompt is not None and prompt.rstrip().endswith(start)


@dataclass(frozen=True, slots=True)
class _Renders:
    """What the template prints for the probes: generation prompts (default, thinking on, thinking off), an
    assistant turn with content only (`out_c`) and one with reasoning as well (`out_r`)."""

    template: str
    gp: str | None
    gp_on: str | None
    gp_off: str | None
    out_c: str
    out_r: str | None

    @property
    def thinking_prompt(self) -> str:
        return (self.gp_on or self.gp or "").rstrip()


@dataclass(frozen=True, slots=True)
class _Markers:
    start: str
    end: str
    method: str


def analyze_content(prober: Prober) -> ContentStructure:
    """Find the reasoning markers (the first of four methods that finds an end marker wins), then the
    reasoning mode and the content wrappers."""
    renders = _Renders(
        template=prober.template,
        gp=prober.generation_prompt(),
        gp_on=prober.generation_prompt(thinking_kwargs(True)),
        gp_off=prober.generation_prompt(thinking_kwargs(False)),
        out_c=prober.output({"role": "assistant", "content": CONTENT_TEXT}) or "",
        out_r=prober.output(
            {"role": "assistant", "content": CONTENT_TEXT, "reasoning_content": THINK_TEXT},
            thinking_kwargs(True),
        ),
    )
    markers, between = _from_reasoning_diff(renders)
    for method in (_from_thinking_toggle, _from_prompt_ending, _from_template_pairs):
        if markers.end:
            break
        markers = method(renders) or markers
    return _finish(markers, renders, between)


def _from_reasoning_diff(r: _Renders) -> tuple[_Markers, str]:
    """Method 1: the turn with `reasoning_content` against the turn without. The text between the reasoning
    and the content holds the end marker (`</think>\n\n`), the text before the reasoning its opener.
    Also returns that in-between text: content wrappers that open with the reasoning's end are found there."""
    out_r, out_c = r.out_r, r.out_c
    if not (out_r and THINK_TEXT in out_r and CONTENT_TEXT in out_r):
        return _Markers("", "", ""), ""
    ti, ci = out_r.find(THINK_TEXT), out_r.find(CONTENT_TEXT)
    if ti >= ci:
        return _Markers("", "", ""), ""
    before, between = out_r[:ti], out_r[ti + len(THINK_TEXT) : ci]
    content_pre = out_c[: out_c.find(CONTENT_TEXT)].strip() if CONTENT_TEXT in out_c else ""
    end = between.strip()
    if (named := _NAMED.match(end)) and named.end() < len(end):
        end = named.group()  # "<|close|>think<|sep|><|open|>response<|sep|>": the named closer only
    elif content_pre and end.endswith(content_pre) and len(end) > len(content_pre):
        end = end[: -len(content_pre)].strip()  # "</think><|START_RESPONSE|>": the content's own opener goes
    elif len(tags := TAG_RE.findall(end)) > 1 and "".join(tags) == end:
        end = tags[0]
    start = _opening(before.strip())
    if not start:  # the generation prompt opened it: "<think>" at the prompt's end, or the closer's opener
        tail = _last_tag(r.thinking_prompt[-40:])
        start = tail if tail and closer_of(tail) == end else opener_of(end)
        start = start or _named_opener(r.thinking_prompt, end)
    return _Markers(start, end, "reasoning_content diff" if end else ""), between


def _from_thinking_toggle(r: _Renders) -> _Markers | None:
    """Method 2: `enable_thinking` changes the generation prompt; the text it adds or removes holds a
    reasoning tag (`<think>\n\n</think>` when off) or a channel pair."""
    if r.gp_on is None or r.gp_off is None or r.gp_on == r.gp_off:
        return None
    longer, shorter = (r.gp_off, r.gp_on) if len(r.gp_off) > len(r.gp_on) else (r.gp_on, r.gp_off)
    extra = longer[len(shorter) :] if longer.startswith(shorter) else longer
    tags = [t for t in TAG_RE.findall(extra) if _is_reasoning_tag(t)]
    if tags:
        first = tags[0]
        start, end = (opener_of(first), first) if opener_of(first) else (first, closer_of(first))
        return _Markers(start, end, "enable_thinking toggle")
    if (pair := _channel_pair(extra)) is not None:
        return _Markers(*pair, "enable_thinking toggle")
    return None


def _from_prompt_ending(r: _Renders) -> _Markers | None:
    """Method 3: the generation prompt ends with an open reasoning tag (`...assistant\n<think>\n`)."""
    tail = _last_tag(r.thinking_prompt)
    if tail and _is_reasoning_tag(tail) and closer_of(tail) and r.thinking_prompt.endswith(tail):
        return _Markers(tail, closer_of(tail), "prompt ending")
    return None


def _from_template_pairs(r: _Renders) -> _Markers | None:
    """Method 4: a reasoning tag and its closer both in the template's text (`<think></think>`,
    `[THINK]...[/THINK]`), the most frequent such pair."""
    counts = Counter(t for t in TAG_RE.findall(r.template) if _is_reasoning_tag(t))
    for tag, _ in counts.most_common():
        if closer_of(tag) and closer_of(tag) in counts:
            return _Markers(tag, closer_of(tag), "tag pair in template")
    return None


def _finish(markers: _Markers, r: _Renders, between: str) -> ContentStructure:
    """The reasoning mode (forced open when the prompt ends with the opener) and the content wrappers."""
    start, end, method = markers.start, markers.end, markers.method
    gp, gp_on, gp_off, out_c, out_r = r.gp, r.gp_on, r.gp_off, r.out_c, r.out_r
    if not end:
        mode = ReasoningMode.NONE
        forced_on = forced_off = False
    else:
        forced_on = not start or _ends_with_open(gp_on or gp, start)
        forced_off = not start or _ends_with_open(gp_off or gp, start)
        forced = not start or _ends_with_open(gp, start)
        mode = ReasoningMode.FORCED_OPEN if forced else ReasoningMode.OPTIONAL
    content_start = content_end = ""
    content_mode = ContentMode.PLAIN
    pre_c = out_c[: out_c.find(CONTENT_TEXT)] if CONTENT_TEXT in out_c else ""
    post_c = out_c[out_c.find(CONTENT_TEXT) + len(CONTENT_TEXT) :] if CONTENT_TEXT in out_c else ""
    for tag in reversed(TAG_RE.findall(pre_c)):
        if tag not in (start, end) and closer_of(tag) and closer_of(tag) in post_c:
            content_start, content_end, content_mode = tag, closer_of(tag), ContentMode.ALWAYS_WRAPPED
            break
    if content_mode is ContentMode.PLAIN and (pair := named_pair(pre_c.replace(end, ""), post_c)):
        content_start, content_end = pair
        content_mode = ContentMode.ALWAYS_WRAPPED
    if content_mode is ContentMode.PLAIN and (header := _content_header(pre_c, start, end)):
        content_start, content_mode = header, ContentMode.ALWAYS_WRAPPED
    if content_mode is ContentMode.PLAIN and out_r and CONTENT_TEXT in out_r:
        post_r = out_r[out_r.find(CONTENT_TEXT) + len(CONTENT_TEXT) :]
        for tag in TAG_RE.findall(between.replace(end, "", 1) if end else between):
            if closer_of(tag) and closer_of(tag) in post_r:
                content_start, content_end = tag, closer_of(tag)
                content_mode = ContentMode.WRAPPED_WITH_REASONING
                break
    return ContentStructure(
        reasoning_mode=mode,
        reasoning_start=start if end else "",
        reasoning_end=end,
        thinking_toggle=gp_on is not None and gp_off is not None and gp_on != gp_off,
        forced_when_enabled=forced_on,
        forced_when_disabled=forced_off,
        content_mode=content_mode,
        content_start=content_start,
        content_end=content_end,
        detection=method,
    )
