"""Bad input, full queues and vanished clients: clear errors, no 5xx, the server stays up."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from tests.integration.server_process import ServerProcess

pytestmark = pytest.mark.integration

USER = [{"role": "user", "content": "Hello"}]


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({"messages": [{"role": "user", "content": 5}]}, "messages[0].content"),
        ({"messages": [{"role": "wizard", "content": "hi"}]}, "messages[0].role"),
        ({"messages": USER, "max_tokens": -1}, "max_tokens"),
        ({"messages": USER, "temperature": "hot"}, "temperature"),
        ({"messages": []}, "messages"),
        ({"messages": USER, "seed": 2**32 + 5}, "seed"),
        ({"messages": USER, "top_k": 2**40}, "top_k"),
        ({"messages": USER, "logit_bias": {"999999999": 1}}, "logit_bias.999999999"),
        ({"messages": USER, "stop": [""]}, "stop[0]"),
        ({"messages": USER, "chat_template_kwargs": {"messages": []}}, "chat_template_kwargs.messages"),
        ({"messages": USER, "n": 3}, "n"),
        ({"messages": "hello"}, "messages"),
    ],
)
def test_bad_fields_are_400_naming_the_field(http: httpx.Client, body: dict, param: str) -> None:
    r = http.post("/v1/chat/completions", json=body)
    assert r.status_code == 400, r.text
    error = r.json()["error"]
    assert error["type"] == "invalid_request_error"
    assert error["param"] == param


@pytest.mark.parametrize(
    "raw",
    [
        b"{not json",
        b'{"messages": [{"role": "user", "content": "x"}], "temperature": NaN}',
        b'{"messages": [{"role": "user", "content": "x"}], "temperature": Infinity}',
        b'{"messages": [], "max_tokens": ' + b"9" * 5000 + b"}",
        b'{"messages": [], "temperature": 1' + b"0" * 5000 + b".5}",
        b"[" * 100_000 + b"]" * 100_000,
        b'{"messages": [{"role": "user", "content": "\xff\xfe"}]}',
        b'{"messages": [{"role": "user", "content": "\\ud800"}]}',
        b"[]",
    ],
    ids=[
        "syntax",
        "nan",
        "infinity",
        "huge-int",
        "huge-float",
        "deep",
        "bad-utf8",
        "lone-surrogate",
        "not-object",
    ],
)
def test_malformed_bodies_are_400(http: httpx.Client, raw: bytes) -> None:
    r = http.post("/v1/chat/completions", content=raw, headers={"content-type": "application/json"})
    assert r.status_code == 400, r.text
    assert r.json()["error"]["message"]


def test_prompt_longer_than_the_context_is_400_naming_the_limits(http: httpx.Client) -> None:
    long_text = "word " * 5000
    r = http.post("/v1/chat/completions", json={"messages": [{"role": "user", "content": long_text}]})
    assert r.status_code == 400
    error = r.json()["error"]
    assert error["code"] == "context_length_exceeded"
    assert "2048" in error["message"]


def test_generation_reaching_the_context_end_is_length(http: httpx.Client) -> None:
    text = "word " * 2000  # about 2,010 prompt tokens of the 2,048 a slot holds
    r = http.post(
        "/v1/chat/completions",
        json={"messages": [{"role": "user", "content": text}], "max_tokens": 500, "temperature": 0},
        timeout=300,  # a 2,000-token prefill on a loaded 2-core machine
    )
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["choices"][0]["finish_reason"] == "length"
    assert body["usage"]["prompt_tokens"] + body["usage"]["completion_tokens"] <= 2048


def test_full_queue_gives_429_and_every_accepted_request_completes(server: ServerProcess) -> None:
    # 4 slots + a queue of 2: exactly 6 of 10 simultaneous requests are accepted
    barrier = threading.Barrier(10)

    def one(i: int) -> httpx.Response:
        with httpx.Client(timeout=300) as c:
            barrier.wait()
            return c.post(
                f"{server.base_url}/chat/completions",
                json={"messages": [{"role": "user", "content": f"Count to {i}"}], "max_tokens": 60},
            )

    with ThreadPoolExecutor(10) as pool:
        responses = list(pool.map(one, range(10)))
    codes = sorted(r.status_code for r in responses)
    assert codes == [200] * 6 + [429] * 4
    for r in responses:
        if r.status_code == 429:
            assert r.headers["retry-after"]
            assert r.json()["error"]["code"] == "server_busy"
        else:
            assert r.json()["usage"]["completion_tokens"] > 0


def _busy_slots(server: ServerProcess) -> float:
    for line in httpx.get(f"{server.url}/metrics", timeout=10).text.splitlines():
        if line.startswith("tokenloom_busy_slots "):
            return float(line.split()[1])
    raise AssertionError("no busy-slots metric")


def _wait_until_idle(server: ServerProcess, limit: float = 120.0) -> float:
    """Seconds until no slot is busy. The limit only bounds a leak (a slot never freed): on a loaded machine
    the server may notice a hang-up late, but it must notice it."""
    started = time.monotonic()
    while _busy_slots(server) > 0 and time.monotonic() - started < limit:
        time.sleep(0.05)
    return time.monotonic() - started


def _generated_tokens(server: ServerProcess) -> float:
    for line in httpx.get(f"{server.url}/metrics", timeout=10).text.splitlines():
        if line.startswith("tokenloom_generated_tokens_total "):
            return float(line.split()[1])
    raise AssertionError("no generated-tokens metric")


LONG = {
    "messages": [{"role": "user", "content": "Tell me a long story."}],
    "max_tokens": 1500,
    "ignore_eos": True,
}


def test_disconnecting_a_stream_frees_its_slot(server: ServerProcess) -> None:
    _wait_until_idle(server)
    before = _generated_tokens(server)
    with httpx.Client(timeout=60) as c:
        for _ in range(4):  # fill every slot, then hang up on each
            with c.stream("POST", f"{server.base_url}/chat/completions", json={**LONG, "stream": True}) as r:
                assert r.status_code == 200
                next(r.iter_lines())
    _wait_until_idle(server)
    assert _busy_slots(server) == 0
    # freed by the hang-ups, not by running to max_tokens (which takes minutes here, loaded or not)
    assert _generated_tokens(server) - before < 4 * 1500 / 2


def test_disconnecting_a_non_streamed_request_frees_its_slot(server: ServerProcess) -> None:
    _wait_until_idle(server)
    before = _generated_tokens(server)
    with pytest.raises(httpx.ReadTimeout), httpx.Client(timeout=1.0) as c:
        c.post(f"{server.base_url}/chat/completions", json=LONG)
    _wait_until_idle(server)
    assert _busy_slots(server) == 0
    assert _generated_tokens(server) - before < 1500 / 2


def test_server_is_still_healthy(server: ServerProcess, http: httpx.Client) -> None:
    assert server.is_alive()
    assert http.get("/health").json() == {"status": "ok"}
