"""A costly structured-output mask never stalls the other streams, and one over its budget ends only its
own request with a clear error (real model, real HTTP)."""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from tests.integration.conftest import _serve
from tests.integration.server_process import ServerProcess

# Each mask of this pattern costs about 0.65 s of Python on the test machine (a counted repeat of
# counted runs: many parser states per byte). Not hostile, just slow: the shape of issue 12's tail.
SLOW_PATTERN = r"(?:\S{1,20}\s{1,5}){0,30}\S{1,20}"


@pytest.fixture(scope="module")
def patient(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    yield from _serve(tmp_path_factory, "patient", "--parallel", "2", "--ctx-size", "512")


@pytest.fixture(scope="module")
def strict(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    yield from _serve(
        tmp_path_factory, "strict", "--parallel", "2", "--ctx-size", "512", "--mask-timeout", "0.05"
    )


def _slow_body(max_tokens: int, stream: bool = False) -> dict:
    return {
        "messages": [{"role": "user", "content": "Describe the sea."}],
        "max_tokens": max_tokens,
        "temperature": 0,
        "stream": stream,
        "response_format": {"type": "regex", "regex": SLOW_PATTERN},
    }


def test_a_stream_beside_a_slow_mask_is_not_held_back(patient: ServerProcess) -> None:
    """With masks on the scheduler thread, each of the free request's 48 steps would wait for one slow mask
    (about 30 s) and it would end long after the 10-token constrained one; computed beside the batch, it
    ends first. Those costly masks run at idle priority, so they get only CPU time the batch leaves."""
    finished: dict[str, float] = {}
    started = threading.Event()
    idle_threads: list[int] = []

    def constrained() -> httpx.Response:
        with httpx.Client(timeout=600) as c:
            started.set()
            r = c.post(f"{patient.base_url}/chat/completions", json=_slow_body(10))
        finished["constrained"] = time.monotonic()
        return r

    def free() -> httpx.Response:
        started.wait()
        time.sleep(0.5)  # the constrained request is in its slot and computing masks
        body = {
            "messages": [{"role": "user", "content": "Count slowly."}],
            "max_tokens": 48,
            "temperature": 0,
            "ignore_eos": True,
        }
        with httpx.Client(timeout=600) as c:
            r = c.post(f"{patient.base_url}/chat/completions", json=body)
        finished["free"] = time.monotonic()
        assert patient.proc is not None
        idle_threads.extend(_idle_threads(patient.proc.pid))  # the slow request is still masking
        return r

    with ThreadPoolExecutor(2) as pool:
        slow, fast = pool.submit(constrained), pool.submit(free)
        slow_r, fast_r = slow.result(), fast.result()
    assert fast_r.status_code == 200 and fast_r.json()["usage"]["completion_tokens"] == 48
    assert slow_r.status_code == 200, slow_r.text
    assert slow_r.json()["usage"]["completion_tokens"] >= 5  # it really was slow all along
    assert finished["free"] < finished["constrained"]
    assert idle_threads, "the costly masks were not computed at idle priority"


def _idle_threads(pid: int) -> list[int]:
    """The threads of process `pid` at Linux's idle scheduling priority."""
    found = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        with contextlib.suppress(OSError):  # a thread that ended meanwhile
            if os.sched_getscheduler(int(task.name)) == os.SCHED_IDLE:
                found.append(int(task.name))
    return found


def test_a_mask_over_its_budget_ends_its_request_with_a_clear_error(strict: ServerProcess) -> None:
    with httpx.Client(timeout=120) as c:
        r = c.post(f"{strict.base_url}/chat/completions", json=_slow_body(10))
        assert r.status_code == 400, r.text
        error = r.json()["error"]
        assert error["code"] == "constraint_timeout" and "--mask-timeout" in error["message"]
        with c.stream("POST", f"{strict.base_url}/chat/completions", json=_slow_body(10, stream=True)) as s:
            assert s.status_code == 200
            text = "".join(s.iter_text())
        assert "constraint_timeout" in text and "[DONE]" in text
        # the server and its other requests are untouched
        ok = c.post(
            f"{strict.base_url}/chat/completions",
            json={"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 4, "temperature": 0},
        )
        assert ok.status_code == 200 and ok.json()["usage"]["completion_tokens"] >= 1
        easy = c.post(
            f"{strict.base_url}/chat/completions",
            json={**_slow_body(6), "response_format": {"type": "regex", "regex": "(yes|no)"}},
        )
        assert easy.status_code == 200 and easy.json()["choices"][0]["message"]["content"] in ("yes", "no")
        assert c.get(f"{strict.url}/health").json() == {"status": "ok"}
