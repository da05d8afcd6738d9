"""A real `tokenloom serve` in a subprocess on 127.0.0.1, polled on /health until ready."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class ServerProcess:
    """Starts the server with extra CLI flags; `base_url` ends in /v1."""

    def __init__(self, *flags: str, log_path: Path | None = None) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.base_url = f"{self.url}/v1"
        self.flags = flags
        self._log_path = log_path
        self._log = None
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 120.0) -> ServerProcess:
        command = [sys.executable, "-m", "tokenloom", "serve", "--port", str(self.port), *self.flags]
        self._log = open(self._log_path or os.devnull, "wb")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(command, stdout=self._log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"server exited with {self.proc.returncode}: {command}")
            try:
                if httpx.get(f"{self.url}/health", timeout=2).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.3)
        self.stop()
        raise TimeoutError("server did not become ready")

    def is_alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=5)
        if self._log is not None:
            self._log.close()
