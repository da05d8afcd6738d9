"""One forked process per engine for the structured-output benchmark, so that work stuck in C can be stopped.

A Python signal cannot interrupt a compile that never returns to the interpreter (xgrammar's sat 11
minutes on one schema). Each engine therefore lives in its own worker process, forked once and kept
across schemas (its caches stay warm, as in a server). Within a worker, `limit_cpu` sets two budgets on
the process's CPU time: a soft one (SIGPROF raises `Timeout` in Python code) and, GRACE_S later, a
hard one (RLIMIT_CPU: the kernel's SIGXCPU ends the process wherever it is). The parent sees the death,
reports it, and forks a fresh worker for the next request. A worker that uses no CPU at all for
STALL_S seconds (a deadlock) is killed too. Knows nothing of engines, schemas or measurements.
"""

from __future__ import annotations

import math
import os
import pickle
import resource
import select
import signal
import struct
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

GRACE_S = 3  # hard (kernel) limit this long after the soft (Python) one
STALL_S = 300.0  # wall seconds without any CPU use: a deadlock, killed
_POLL_S = 5.0
_AGAIN_S = 0.05  # a Timeout swallowed by Python code (a __del__, an engine's handler) comes back this often
_armed = [False]
_HEADER = struct.Struct("<Q")
_OPEN_FDS: set[int] = set()  # every worker's parent-side pipe ends: a new worker closes them

Send = Callable[[str, Any], None]
Handler = Callable[[Any, Send], None]


class Timeout(BaseException):
    """The soft CPU budget ran out (a BaseException: an engine's `except Exception` must not take it for a
    compile failure)."""


def _alarm(_sig: int, _frame: Any) -> None:
    if not _armed[0]:
        return
    signal.setitimer(signal.ITIMER_PROF, _AGAIN_S)
    raise Timeout


def limit_cpu(seconds: float) -> None:
    """From now on, `seconds` more of this process's CPU time (0: no limit): then Timeout in Python code
    (again every 50 ms until lifted), and GRACE_S later the kernel ends the process."""
    _armed[0] = seconds > 0
    signal.setitimer(signal.ITIMER_PROF, seconds)
    if seconds > 0:
        used = resource.getrusage(resource.RUSAGE_SELF)
        soft = math.ceil(used.ru_utime + used.ru_stime + seconds) + GRACE_S
    else:
        soft = resource.RLIM_INFINITY
    resource.setrlimit(resource.RLIMIT_CPU, (soft, resource.RLIM_INFINITY))


def _write(fd: int, message: Any) -> None:
    data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    view = memoryview(_HEADER.pack(len(data)) + data)
    while view:
        view = view[os.write(fd, view) :]


class _Reader:
    """Length-prefixed pickles from a pipe, read as they come."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self._buf = b""

    def take(self) -> list[Any] | None:
        """The messages completed by one read (None at end of file)."""
        chunk = os.read(self.fd, 1 << 20)
        if not chunk:
            return None
        self._buf += chunk
        out = []
        while len(self._buf) >= _HEADER.size:
            (n,) = _HEADER.unpack_from(self._buf)
            if len(self._buf) < _HEADER.size + n:
                break
            out.append(pickle.loads(self._buf[_HEADER.size : _HEADER.size + n]))
            self._buf = self._buf[_HEADER.size + n :]
        return out

    def blocking(self) -> Any:
        while True:
            got = self.take()
            if got is None:
                raise EOFError
            if got:
                if len(got) > 1:
                    raise RuntimeError("worker sent more than one request")
                return got[0]


@dataclass
class Reply:
    """What a worker said while handling one request; `death` says how it ended if it did not finish."""

    messages: list[tuple[str, Any]]
    death: str | None = None
    cpu_s: float = 0.0  # the worker's CPU time spent on this request (all its threads)


def _cpu_ticks(pid: int) -> int:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return -1
    return int(fields[11]) + int(fields[12])  # utime + stime


class Worker:
    """A forked process running `setup()`'s handler on each request; restarted after it dies."""

    def __init__(self, name: str, setup: Callable[[], Handler]) -> None:
        self.name = name
        self._setup = setup
        self.pid = 0
        self.starts = 0
        self._last_cpu = 0.0
        self._idle = True

    def _start(self) -> None:
        to_child_r, to_child_w = os.pipe()
        from_child_r, from_child_w = os.pipe()
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:  # the worker
            code = 0
            try:
                for fd in [*_OPEN_FDS, to_child_w, from_child_r]:
                    os.close(fd)
                self._serve(to_child_r, from_child_w)
            except BaseException:
                print(f"{self.name} worker failed:", file=sys.stderr)
                traceback.print_exc()
                code = 1
            finally:
                os._exit(code)
        os.close(to_child_r)
        os.close(from_child_w)
        self.pid, self._to, self._from = pid, to_child_w, _Reader(from_child_r)
        _OPEN_FDS.update((to_child_w, from_child_r))
        self.starts += 1
        ready = self._collect()
        if ready.death is not None:
            raise RuntimeError(f"{self.name} worker died while starting: {ready.death}")

    def _serve(self, requests: int, replies: int) -> None:
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        signal.signal(signal.SIGPROF, _alarm)
        signal.signal(signal.SIGXCPU, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent handles ^C and ends its workers
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.signal(signal.SIGUSR1, signal.SIG_IGN)

        def send(kind: str, payload: Any) -> None:
            _write(replies, (kind, payload))

        handler = self._setup()
        send("end", None)
        reader = _Reader(requests)
        while True:
            try:
                request = reader.blocking()
            except EOFError:
                return
            if request is None:
                return
            handler(request, send)
            send("end", None)

    def ask(self, request: Any) -> Reply:
        """Hand the request to the worker (started first if need be) and collect what it says."""
        if not self.pid:
            self._start()
        before = self._child_cpu()
        self._idle = False
        _write(self._to, request)
        reply = self._collect()
        self._idle = True
        after = self._last_cpu if reply.death is not None else self._child_cpu()
        reply.cpu_s = max(0.0, after - before)
        return reply

    def _child_cpu(self) -> float:
        return max(_cpu_ticks(self.pid), 0) / os.sysconf("SC_CLK_TCK")

    def _collect(self) -> Reply:
        reply = Reply([])
        ticks, since = _cpu_ticks(self.pid), time.monotonic()
        while True:
            readable, _, _ = select.select([self._from.fd], [], [], _POLL_S)
            if readable:
                got = self._from.take()
                if got is None:
                    reply.death = self._reap(None)
                    return reply
                for kind, payload in got:
                    if kind == "end":
                        return reply
                    reply.messages.append((kind, payload))
                continue
            now_ticks = _cpu_ticks(self.pid)
            if now_ticks != ticks:
                ticks, since = now_ticks, time.monotonic()
            elif time.monotonic() - since > STALL_S:
                os.kill(self.pid, signal.SIGKILL)
                reply.death = self._reap(f"stalled: no CPU use for {STALL_S:.0f} s, killed")
                return reply

    def _reap(self, why: str | None) -> str:
        _, status, usage = os.wait4(self.pid, 0)
        self._last_cpu = usage.ru_utime + usage.ru_stime  # the dead worker's whole CPU time
        self._close()
        if why:
            return why
        if os.WIFSIGNALED(status):
            return f"ended by {signal.Signals(os.WTERMSIG(status)).name}"
        return f"exited with status {os.WEXITSTATUS(status)}"

    def _close(self) -> None:
        for fd in (self._to, self._from.fd):
            os.close(fd)
            _OPEN_FDS.discard(fd)
        self.pid = 0

    def stop(self) -> None:
        """Ends the worker: asked to between requests, killed if it is busy (the parent was interrupted)."""
        if not self.pid:
            return
        if select.select([self._from.fd], [], [], 0)[0] or not self._idle:
            os.kill(self.pid, signal.SIGKILL)
        else:
            _write(self._to, None)
        os.waitpid(self.pid, 0)
        self._close()
