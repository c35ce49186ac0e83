"""A ragate process as a child of the test: its clean environment, the lines it printed, and a
process that holds a data folder's embedded engine (graph/providers/data_folder.py) until stopped.
Shared by tests/test_data_folder.py and the LangServe app's tests (tests/ is on their sys.path)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# The test run's own settings and provider keys never reach a child: it gets only what a test gives it.
_DROPPED_PREFIXES = ("RAGATE_", "LANGSMITH_", "LANGCHAIN_", "OPENAI_", "COHERE_", "CO_API_", "QDRANT_")


def child_env(home: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    """This process's environment without ragate's and the providers' settings, with RAGATE_HOME=`home`,
    loopback reached without a proxy, unbuffered output, then `extra`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(_DROPPED_PREFIXES)}
    env.update({"RAGATE_HOME": str(home), "PYTHONUNBUFFERED": "1", "LANGSMITH_TRACING": "false",
                "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost"})
    env.update(extra or {})
    return env


def output_lines(done: subprocess.CompletedProcess) -> list[str]:
    """The non-blank lines a finished child printed, stdout then stderr."""
    return [line for line in (done.stdout + done.stderr).splitlines() if line.strip()]


@contextmanager
def folder_holder(home: Path, *, open_collections: bool = False) -> Iterator[subprocess.Popen]:
    """Another ragate process that took `home`'s embedded engine (`open_index(home).hold()`, or with
    `open_collections` every collection opened, as a server's start-up does) until it is stopped."""
    take = "open_all()" if open_collections else "hold()"
    code = ("import sys, time; from pathlib import Path; from graph.providers.vectorstore import open_index; "
            f"open_index(Path(sys.argv[1])).{take}; print('held', flush=True); time.sleep(300)")
    proc = subprocess.Popen([sys.executable, "-c", code, str(home)], cwd=ROOT, env=child_env(home),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        assert proc.stdout.readline().strip() == "held", proc.stdout.read()
        yield proc
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(10)
