"""Extracts the parse expectations of llama.cpp's tests/test-chat.cpp into cases.jsonl (our own format).

Reads the C++ test file as data: a small lexer plus an evaluator for the few forms its PEG-parser tests use
(string literals, brace lists, the message helpers, fluent `tst.test(...)...run()` chains, local message
variables, `for` loops over template paths). Knows nothing of tokenloom: it only writes JSON lines.

    python tests/golden/llamacpp/extract.py /path/to/llama.cpp/tests/test-chat.cpp
"""

from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

OUT = Path(__file__).with_name("cases.jsonl")
_TOKEN = re.compile(
    r"""(?P<ws>\s+)|(?P<line_comment>//[^\n]*)|(?P<block_comment>/\*.*?\*/)
    |(?P<raw>(?:u8|u|U|L)?R"(?P<delim>[^(\s]*)\()
    |(?P<str>(?:u8|u|U|L)?"(?:[^"\\\n]|\\.)*")|(?P<chr>'(?:[^'\\\n]|\\.)*')
    |(?P<num>\d[\w.]*)|(?P<ident>[A-Za-z_]\w*)
    |(?P<op>::|->|==|!=|&&|\|\||<=|>=|\+=|<<|>>|[{}()\[\];,.=+\-*/&|!<>?:%~^#])""",
    re.S | re.X,
)
_ESCAPES = {"n": b"\n", "t": b"\t", "r": b"\r", "0": b"\0", "\\": b"\\", '"': b'"', "'": b"'", "?": b"?",
            "a": b"\a", "b": b"\b", "f": b"\f", "v": b"\v"}  # fmt: skip
_ENUM_PREFIXES = ("COMMON_REASONING_FORMAT_", "COMMON_CHAT_CONTINUATION_", "COMMON_CHAT_TOOL_CHOICE_")


@dataclass
class Tok:
    kind: str  # "str", "num", "ident", "op", "chr"
    value: Any
    line: int


def _unescape(body: str) -> bytes:
    out, i = bytearray(), 0
    while i < len(body):
        ch = body[i]
        if ch != "\\":
            out += ch.encode("utf-8")
            i += 1
            continue
        nxt = body[i + 1]
        if nxt == "x":
            m = re.match(r"[0-9a-fA-F]+", body[i + 2 :])
            assert m
            out.append(int(m.group(), 16))
            i += 2 + len(m.group())
        elif nxt in "uU":
            width = 4 if nxt == "u" else 8
            out += chr(int(body[i + 2 : i + 2 + width], 16)).encode("utf-8")
            i += 2 + width
        elif nxt in "01234567" and (m := re.match(r"[0-7]{1,3}", body[i + 1 :])):
            out.append(int(m.group(), 8))
            i += 1 + len(m.group())
        else:
            out += _ESCAPES[nxt]
            i += 2
    return bytes(out)


def lex(source: str) -> list[Tok]:
    toks: list[Tok] = []
    pos, line = 0, 1
    while pos < len(source):
        m = _TOKEN.match(source, pos)
        if not m:
            raise SyntaxError(f"line {line}: cannot read {source[pos : pos + 20]!r}")
        kind = m.lastgroup if m.lastgroup != "delim" else "raw"
        text = m.group()
        if m.group("raw"):
            close = ")" + m.group("delim") + '"'
            end = source.index(close, m.end())
            toks.append(Tok("str", source[m.end() : end].encode("utf-8"), line))
            line += source.count("\n", pos, end + len(close))
            pos = end + len(close)
            continue
        if kind == "str":
            toks.append(Tok("str", _unescape(text[text.index('"') + 1 : -1]), line))
        elif kind in ("num", "ident", "op", "chr"):
            toks.append(Tok(kind, text, line))
        line += text.count("\n")
        pos = m.end()
    return toks


class Unknown(Exception):
    """An expression the evaluator does not model (its statement is skipped)."""


def _text(value: Any) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8")
    if value is None or value == []:
        return ""
    if isinstance(value, str):
        return value
    raise Unknown(f"not a string: {value!r}")


def make_msg(role: str = "", content: Any = "", reasoning: Any = "") -> dict[str, Any]:
    return {"role": role, "content": _text(content), "content_parts": [], "tool_calls": [],
            "reasoning_content": _text(reasoning), "tool_name": "", "tool_call_id": ""}  # fmt: skip


def tool_call(values: list[Any]) -> dict[str, str]:
    name, arguments, call_id = [*values, "", "", ""][:3]
    return {"name": _text(name), "arguments": _text(arguments), "id": _text(call_id)}


def simple_assist_msg(
    content: Any = "", reasoning: Any = "", name: Any = "", args: Any = "", call_id: Any = ""
):  # type: ignore[no-untyped-def]
    msg = make_msg("assistant", content, reasoning)
    if _text(name) or _text(call_id):
        msg["tool_calls"].append(tool_call([name, args, call_id]))
    return msg


def _multi_calls(reasoning: Any, content: Any, calls: list[Any]) -> dict[str, Any]:
    msg = make_msg("assistant", content, reasoning)
    msg["tool_calls"] = [tool_call([name, args, ""]) for name, args in calls]
    return msg


FUNCTIONS = {
    "simple_assist_msg": simple_assist_msg,
    "message_with_tool_calls": lambda n, a: simple_assist_msg("", "", n, a),
    "message_with_tool_calls_and_reasoning": lambda n, a, r: simple_assist_msg("", r, n, a),
    "message_with_reasoning_content_and_multiple_tool_calls": _multi_calls,
    "message_with_content_and_tool_call": lambda c, n, a: simple_assist_msg(c, "", n, a),
    "message_with_reasoning_and_tool_call": lambda r, n, a: simple_assist_msg("", r, n, a),
    "peg_tester": lambda path, *rest: {"tester": Path(_text(path)).name},
}


@dataclass
class Extractor:
    toks: list[Tok]
    scopes: list[dict[str, Any]] = field(default_factory=lambda: [{}])
    cases: list[dict[str, Any]] = field(default_factory=list)
    functions: dict[str, tuple[list[str], int]] = field(default_factory=dict)  # name -> (params, body start)

    # -- expressions -----------------------------------------------------------------------------------

    def lookup(self, name: str) -> Any:
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        if name.startswith(_ENUM_PREFIXES):
            return name.split("_")[-1].lower()
        if name in ("true", "false"):
            return name == "true"
        raise Unknown(name)

    def expr(self, i: int) -> tuple[Any, int]:
        value, i = self.term(i)
        while self.toks[i].value == "+":
            right, i = self.term(i + 1)
            value = _text(value).encode() + _text(right).encode()
        return value, i

    def term(self, i: int) -> tuple[Any, int]:
        tok = self.toks[i]
        if tok.kind == "str":
            data = b""
            while self.toks[i].kind == "str":
                data += self.toks[i].value
                i += 1
            return data, i
        if tok.value == "{":
            return self.brace_list(i)
        if tok.value == "(":
            value, i = self.expr(i + 1)
            return value, self.expect(i, ")")
        if tok.kind == "num":
            return int(tok.value) if tok.value.isdigit() else tok.value, i + 1
        if tok.kind == "ident":
            name, i = self.qualified(i)
            if name == "std::string" and self.toks[i].value == "(":
                value, i = self.expr(i + 1)
                return value, self.expect(i, ")")
            if self.toks[i].value == "(":
                args, i = self.args(i, ")")
                if name not in FUNCTIONS:
                    raise Unknown(name)
                return FUNCTIONS[name](*args), i
            return self.lookup(name), i
        raise Unknown(f"line {tok.line}: {tok.value!r}")

    def qualified(self, i: int) -> tuple[str, int]:
        name = self.toks[i].value
        i += 1
        while self.toks[i].value == "::" and self.toks[i + 1].kind == "ident":
            name += "::" + self.toks[i + 1].value
            i += 2
        return name, i

    def brace_list(self, i: int) -> tuple[list[Any], int]:
        return self.args(i, "}")

    def args(self, i: int, close: str) -> tuple[list[Any], int]:
        i += 1
        values: list[Any] = []
        while self.toks[i].value != close:
            value, i = self.expr(i)
            values.append(value)
            if self.toks[i].value == ",":
                i += 1
        return values, i + 1

    def expect(self, i: int, value: str) -> int:
        if self.toks[i].value != value:
            raise Unknown(f"line {self.toks[i].line}: wanted {value!r}, got {self.toks[i].value!r}")
        return i + 1

    # -- statements ------------------------------------------------------------------------------------

    def skip_statement(self, i: int) -> int:
        depth = 0
        while True:
            v = self.toks[i].value if self.toks[i].kind == "op" else None
            if v in ("(", "{", "["):
                depth += 1
            elif v in (")", "}", "]"):
                depth -= 1
                if (
                    depth == 0
                    and v == "}"
                    and self.toks[i + 1].value != ";"
                    and self.toks[i + 1].value != ")"
                ):
                    return i + 1
            elif v == ";" and depth == 0:
                return i + 1
            i += 1

    def skip_group(self, i: int) -> int:
        """From an opening bracket to just past its match."""
        depth = 0
        while True:
            v = self.toks[i].value if self.toks[i].kind == "op" else None
            if v in ("(", "{", "["):
                depth += 1
            elif v in (")", "}", "]"):
                depth -= 1
                if depth == 0:
                    return i + 1
            i += 1

    def block(self, i: int) -> int:
        """Runs the statements of the block opening at i; returns the index after its '}'."""
        i = self.expect(i, "{")
        self.scopes.append({})
        while self.toks[i].value != "}":
            i = self.statement(i)
        self.scopes.pop()
        return i + 1

    def statement(self, i: int) -> int:
        tok = self.toks[i]
        if tok.value == "{":
            return self.block(i)
        if tok.value == ";":
            return i + 1
        if tok.value == "for":
            return self.for_loop(i)
        if tok.value in ("if", "while", "switch", "catch"):
            i = self.skip_group(i + 1)
            i = self.skip_group(i) if self.toks[i].value == "{" else self.skip_statement(i)
            while self.toks[i].value == "else":
                i += 1
                if self.toks[i].value == "if":
                    i = self.skip_group(i + 1)
                i = self.skip_group(i) if self.toks[i].value == "{" else self.skip_statement(i)
            return i
        if tok.value == "try":
            return self.skip_group(i + 1)
        try:
            return self.simple_statement(i)
        except Unknown:
            return self.skip_statement(i)

    def for_loop(self, i: int) -> int:
        close = self.skip_group(i + 1)  # the (...) header
        colon = next(j for j in range(i + 2, close) if self.toks[j].value == ":")
        var = self.toks[colon - 1].value
        values, _ = self.brace_list(colon + 1)
        body = close
        end = self.skip_group(body) if self.toks[body].value == "{" else self.skip_statement(body)
        for value in values:
            self.scopes.append({var: value})
            self.statement(body)
            self.scopes.pop()
        return end

    def simple_statement(self, i: int) -> int:
        toks = self.toks
        j = i
        while toks[j].kind == "ident" or toks[j].value in ("::", "*", "&"):
            j += 1
        names = [t for t in toks[i:j] if t.kind == "ident"]
        if len(names) >= 2 and toks[j].value in ("=", ";", "{"):  # a declaration: TYPE NAME ...
            name = names[-1].value
            if toks[j].value == ";":
                self.scopes[-1][name] = make_msg() if names[-2].value == "common_chat_msg" else None
                return j + 1
            if toks[j].value == "{":
                values, k = self.brace_list(j)
                self.scopes[-1][name] = values
                return self.expect(k, ";")
            try:
                value, k = self.expr(j + 1)
            except Unknown:
                self.scopes[-1][name] = None
                raise
            self.scopes[-1][name] = value
            return self.expect(k, ";")
        if tok_is(toks[i], "ident") and toks[i + 1].value == "." and toks[i + 2].value == "test":
            return self.test_chain(i)
        if tok_is(toks[i], "ident") and toks[i].value in self.functions and toks[i + 1].value == "(":
            args, k = self.args(i + 1, ")")
            self.call(toks[i].value, args)
            return self.expect(k, ";")
        if tok_is(toks[i], "ident") and toks[i + 1].value == ".":  # msg.field = value / push_back
            target = self.lookup(toks[i].value)
            path, k = [], i
            while toks[k + 1].value == ".":
                path.append(toks[k + 2].value)
                k += 2
            k += 1
            if path[-1] == "push_back" and isinstance(target, dict):
                args, k = self.args(k, ")")
                target[path[0]].append(args[0] if isinstance(args[0], dict) else tool_call(args[0]))
                return self.expect(k, ";")
            if toks[k].value == "=" and isinstance(target, dict) and len(path) == 1:
                value, k = self.expr(k + 1)
                target[path[0]] = _field_value(path[0], value)
                return self.expect(k, ";")
        raise Unknown(f"line {toks[i].line}")

    def call(self, name: str, args: list[Any]) -> None:
        params, body = self.functions[name]
        self.scopes.append(dict(zip(params, args, strict=False)))
        self.block(body)
        self.scopes.pop()

    def test_chain(self, i: int) -> int:
        toks = self.toks
        tester = self.lookup(toks[i].value)
        line = toks[i].line
        case: dict[str, Any] = {"setters": {}, "expect": make_msg("assistant")}
        k = i + 1
        while toks[k].value == ".":
            method = toks[k + 1].value
            args, k = self.args(k + 2, ")")
            if method == "run":
                break
            apply_method(case, method, args)
        self.cases.append(finish_case(tester["tester"], line, case))
        return self.expect(k, ";")


def tok_is(tok: Tok, kind: str) -> bool:
    return tok.kind == kind


def _field_value(name: str, value: Any) -> Any:
    if name == "content_parts":
        return [{"type": _text(t), "text": _text(x)} for t, x in value]
    if name == "tool_calls":
        return [tool_call(v) for v in value]
    return _text(value)


def _tool(values: list[Any]) -> dict[str, Any]:
    name, description, parameters = values
    function = {"name": _text(name), "description": _text(description)}
    return {"type": "function", "function": {**function, "parameters": json.loads(_text(parameters))}}


def apply_method(case: dict[str, Any], method: str, args: list[Any]) -> None:
    setters, expect = case["setters"], case["expect"]
    if method == "test":
        case["input"] = _text(args[0])
    elif method == "tools":
        setters["tools"] = [_tool(t) for t in args[0]]
    elif method == "messages":
        setters["messages"] = args[0]
    elif method in ("reasoning_format", "continue_final_message", "tool_choice"):
        setters[method] = args[0]
    elif method in ("enable_thinking", "parallel_tool_calls", "add_generation_prompt", "is_partial"):
        setters[method] = bool(args[0])
    elif method == "json_schema":
        setters[method] = _text(args[0])
    elif method == "expect":
        case["expect"] = json.loads(json.dumps(args[0]))
    elif method == "expect_content":
        expect["content"] = _text(args[0])
    elif method == "expect_reasoning":
        expect["reasoning_content"] = _text(args[0])
    elif method == "expect_tool_calls":
        expect["tool_calls"] = [tool_call(c) for c in args[0]]
    elif method != "expect_reconstruction":
        raise Unknown(method)


def _openai_message(msg: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"role": msg["role"], "content": msg["content"]}
    if msg["content_parts"]:
        out["content"] = [{"type": p["type"], "text": p["text"]} for p in msg["content_parts"]]
    if msg["reasoning_content"]:
        out["reasoning_content"] = msg["reasoning_content"]
    if msg["tool_calls"]:
        out["tool_calls"] = [
            {"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": c["arguments"]}}
            for c in msg["tool_calls"]
        ]
    if msg["tool_name"]:
        out["name"] = msg["tool_name"]
    if msg["tool_call_id"]:
        out["tool_call_id"] = msg["tool_call_id"]
    return out


def finish_case(template: str, line: int, case: dict[str, Any]) -> dict[str, Any]:
    """One golden line: the test's inputs with llama.cpp's defaults filled in, and what it expects."""
    s, expect = case["setters"], case["expect"]
    messages = s.get("messages") or [make_msg("user", b"Hey there!")]
    return {
        "template": template,
        "source_line": line,
        "input": case["input"],
        "partial": s.get("is_partial", False),
        "tools": s.get("tools", []),
        "messages": [_openai_message(m) for m in messages],
        "reasoning_format": s.get("reasoning_format", "none"),
        "enable_thinking": s.get("enable_thinking", True),
        "add_generation_prompt": s.get("add_generation_prompt", True),
        "continue_final_message": s.get("continue_final_message", "none"),
        "parallel_tool_calls": s.get("parallel_tool_calls", False),
        "tool_choice": s.get("tool_choice", "auto"),
        "json_schema": s.get("json_schema"),
        "expect": {
            "content": expect["content"],
            "reasoning_content": expect["reasoning_content"],
            "tool_calls": expect["tool_calls"],
        },
    }


def find_function(toks: list[Tok], name: str) -> tuple[list[str], int]:
    """The parameter names and the body's '{' index of `static void name(...) {`."""
    for i, tok in enumerate(toks):
        if tok.value == name and toks[i + 1].value == "(" and toks[i - 1].value == "void":
            close = Extractor(toks).skip_group(i + 1)
            params = [toks[j - 1].value for j in range(i + 2, close) if toks[j].value in (",", ")")]
            return params, close
    raise LookupError(name)


def extract(path: Path) -> list[dict[str, Any]]:
    toks = lex(path.read_text(encoding="utf-8")) + [Tok("op", ";", 0)] * 4
    ex = Extractor(toks)
    start = next(
        i
        for i, t in enumerate(toks)
        if t.value == "special_function_tool" and toks[i - 1].value == "common_chat_tool"
    )
    end = find_function(toks, "test_lfm2_parser")[1]
    i = start - 2  # the globals: tools and messages, "static common_chat_tool name{...};" and alike
    while i < end - 10:
        if toks[i].value in ("static", "const") and toks[i + 1].kind == "ident":
            j = i
            while toks[j].value in ("static", "const"):
                j += 1
            try:
                i = ex.simple_statement(j)
                continue
            except Unknown:
                pass
        i += 1
    for name, values in ex.scopes[0].items():
        if (
            isinstance(values, list) and len(values) == 7 and not isinstance(values[0], dict)
        ):  # common_chat_msg{...}
            msg = make_msg(_text(values[0]), values[1])
            msg["content_parts"] = [{"type": _text(t), "text": _text(x)} for t, x in values[2]]
            ex.scopes[0][name] = msg
    for fn in ("test_lfm2_parser", "test_template_output_peg_parsers"):
        ex.functions[fn] = find_function(toks, fn)
    ex.call("test_template_output_peg_parsers", [False])
    return ex.cases


def main(argv: list[str]) -> int:
    cases = extract(Path(argv[1]))
    with OUT.open("w", encoding="utf-8") as out:
        for case in cases:
            out.write(json.dumps(case, ensure_ascii=False) + "\n")
    sys.stdout.write(f"{len(cases)} cases -> {OUT}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
