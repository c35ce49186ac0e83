"""The LangServe app (graph/entrypoints/langserve_app.py) under test: uvicorn in a child process on 127.0.0.1,
and the session fixtures of tests/langserve_app/ (imported by its test module).

These tests run only where the `langserve` extra is installed — its own virtual environment
(`make test-langserve`), because langserve pins sse-starlette<2 and the LangGraph server of the
test extra needs >=2.1.3. Anywhere else tests/conftest.py does not collect this folder.

The samples are ingested ONCE, by `python -m graph.entrypoints.cli ingest` subprocesses, into a seed data
folder that each server gets a copy of before it starts: the embedded vector engine allows one
opener per folder, so no two processes ever share one.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from child_processes import child_env  # tests/ is on sys.path: the root conftest's folder
from ragate_server import ChildServer

ROOT = Path(__file__).resolve().parents[2]
TENANTS = ("acme", "globex")
KEYS = {"acme": "acme-langserve-key-01", "globex": "globex-langserve-key-01"}   # tenant -> its API key
def ingest_samples(home: Path, timeout: float = 300) -> None:
    """`python -m graph.entrypoints.cli ingest samples/<tenant> ...` for each tenant, one after the other."""
    home.mkdir(parents=True, exist_ok=True)
    for tenant in TENANTS:
        argv = [sys.executable, "-m", "graph.entrypoints.cli", "ingest", f"samples/{tenant}", "--tenant", tenant,
                "--collection", "documents", "--quiet"]
        done = subprocess.run(argv, cwd=ROOT, env=child_env(home), capture_output=True, text=True, timeout=timeout)
        assert done.returncode == 0, f"ingest {tenant} exited {done.returncode}:\n{done.stdout}\n{done.stderr}"


class LangServeServer(ChildServer):
    """`uvicorn graph.entrypoints.langserve_app:app` with its own RAGATE_HOME, ready when /health answers."""

    name = "the LangServe app"
    ready_path = "/health"

    def __init__(self, home: Path, keys: dict[str, str], env: dict[str, str] | None = None,
                 startup_timeout: float = 120.0):
        super().__init__(home.parent / f"{home.name}-server.log", startup_timeout)
        self.home = home
        self.keys = dict(keys)
        self.extra_env = {"RAGATE_API_KEYS": ",".join(f"{key}:{tenant}" for tenant, key in self.keys.items()),
                          **(env or {})}

    def argv(self) -> list[str]:
        return [sys.executable, "-m", "uvicorn", "graph.entrypoints.langserve_app:app", "--host", "127.0.0.1",
                "--port", str(self.port), "--log-level", "warning"]

    def env(self) -> dict[str, str]:
        return child_env(self.home, self.extra_env)

    def auth(self, tenant: str | None) -> dict[str, str]:
        """The headers of a caller holding `tenant`'s key; none for a keyless caller."""
        return {"Authorization": f"Bearer {self.keys[tenant]}"} if tenant else {}



@pytest.fixture(scope="session")
def langserve_seed_home(tmp_path_factory) -> Path:
    """A data folder with the samples of both tenants ingested (copied, never opened, by the servers)."""
    home = tmp_path_factory.mktemp("langserve-seed") / "home"
    ingest_samples(home)
    return home


def _copy_home(seed: Path, tmp_path_factory, name: str) -> Path:
    home = tmp_path_factory.mktemp(name) / "home"
    shutil.copytree(seed, home)
    return home


@pytest.fixture(scope="session")
def _loopback_without_proxy():
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("NO_PROXY", "127.0.0.1,localhost")
        mp.setenv("no_proxy", "127.0.0.1,localhost")
        yield


@pytest.fixture(scope="session")
def server(langserve_seed_home, tmp_path_factory, _loopback_without_proxy) -> LangServeServer:
    """The app with API keys for acme and globex, no local development mode."""
    home = _copy_home(langserve_seed_home, tmp_path_factory, "langserve-keys")
    with LangServeServer(home, KEYS) as srv:
        yield srv


@pytest.fixture(scope="session")
def dev_server(langserve_seed_home, tmp_path_factory, _loopback_without_proxy) -> LangServeServer:
    """The app in local development mode (RAGATE_LOCAL_DEV=1) with RAGATE_TENANT=globex and the
    acme key still configured."""
    home = _copy_home(langserve_seed_home, tmp_path_factory, "langserve-dev")
    env = {"RAGATE_LOCAL_DEV": "1", "RAGATE_TENANT": "globex"}
    with LangServeServer(home, {"acme": KEYS["acme"]}, env) as srv:
        yield srv
