"""The real ragate server for tests: `ragate serve` (the LangGraph dev server with ragate's graph,
routes, auth and store) in a child process on 127.0.0.1, with its own data folder.

    with RagateServer(home, keys={"acme-key-1": "acme"}) as srv:
        httpx.post(f"{srv.url}/api/chat", headers=srv.auth("acme-key-1"), json={...})

It is started with the samples ingested (`--samples`), waits for `/ok` within `startup_timeout`,
and is stopped by its pid (its process group: SIGTERM, then SIGKILL), whatever the test did.
The embedded engine allows one opener per folder, so the server never shares the test session's
data folder.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any, Self

ROOT = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ChildServer:
    """A server in a child process on 127.0.0.1 and a free port: started with `argv()` and `env()`,
    ready when `ready_path` answers 200 within `startup_timeout`, stopped by its process group
    (SIGTERM, then SIGKILL) whatever the test did. Subclasses say what to run."""

    name = "server"
    ready_path = "/ok"

    def __init__(self, log_path: Path, startup_timeout: float):
        self.startup_timeout = startup_timeout
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = log_path
        self.proc: subprocess.Popen | None = None

    def argv(self) -> list[str]:
        raise NotImplementedError

    def env(self) -> dict[str, str]:
        raise NotImplementedError

    def start(self) -> Self:
        with open(self.log_path, "wb") as log:
            self.proc = subprocess.Popen(self.argv(), cwd=ROOT, env=self.env(), stdout=log, stderr=subprocess.STDOUT,
                                         start_new_session=True)
        deadline = time.monotonic() + self.startup_timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.name} exited with {self.proc.returncode}:\n{self.log_tail()}")
            try:
                with urllib.request.urlopen(f"{self.url}{self.ready_path}", timeout=2) as r:
                    if r.status == 200:
                        return self
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(0.3)
        self.stop()
        raise RuntimeError(f"{self.name} did not answer {self.ready_path} within {self.startup_timeout} s:\n{self.log_tail()}")

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        for sig, wait in ((signal.SIGTERM, 15), (signal.SIGKILL, 10)):
            try:
                os.killpg(self.proc.pid, sig)
            except ProcessLookupError:
                return
            try:
                self.proc.wait(wait)
                return
            except subprocess.TimeoutExpired:
                continue

    def log_text(self) -> str:
        try:
            return self.log_path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return ""

    def log_tail(self, lines: int = 60) -> str:
        return "\n".join(self.log_text().splitlines()[-lines:])

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()


class RagateServer(ChildServer):
    """`ragate serve`, the samples ingested into `home` first (`--samples`)."""

    name = "ragate serve"

    def __init__(self, home: Path, *, keys: dict[str, str] | None = None, local_dev: bool = False,
                 env: dict[str, str] | None = None, startup_timeout: float = 90.0, samples: bool = True):
        self.home = Path(home)
        self.home.mkdir(parents=True, exist_ok=True)
        super().__init__(self.home / "server.log", startup_timeout)
        self.keys = dict(keys or {})
        self.local_dev = local_dev
        self.extra_env = dict(env or {})
        self.samples = samples

    def auth(self, key: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {key}"}

    def argv(self) -> list[str]:
        argv = [sys.executable, "-m", "graph.entrypoints.cli", "serve", "--port", str(self.port)]
        if self.samples:
            argv.append("--samples")
        if self.local_dev:
            argv.append("--local-dev")
        return argv

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("RAGATE_", "LANGSMITH_", "LANGCHAIN_"))}
        env.update({"RAGATE_HOME": str(self.home), "PYTHONUNBUFFERED": "1"})
        if self.keys:
            env["RAGATE_API_KEYS"] = ",".join(f"{k}:{t}" for k, t in self.keys.items())
        env.update(self.extra_env)
        return env
