"""One data folder, one owner (graph/providers/data_folder.py): the embedded engine opens a folder in
one process at a time, so the process that opens it takes the folder, and every other process is
refused at start-up in ONE line naming the folder and the holder (pid, command) — never a traceback,
never answers from nothing.

Covered: the lock itself (a killed holder leaves no stale lock), `ragate serve` twice, `ragate ask`,
`ingest` and `demo` while a server holds the folder, the Python API (a clear exception), the server
itself (it answers under the lock `ragate serve` took before it became the server, `--reload` worker
too), and `ragate serve`'s start-up with a setting it cannot start with (one line, exit 2).
Servers run on 127.0.0.1 (tests/ragate_server.py); every child process is bounded in time.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from child_processes import child_env, folder_holder, output_lines
from ragate_server import ROOT, RagateServer, free_port

from graph import Context, Ragate
from graph.governance.tenancy import MIN_KEY_CHARS, parse_key_entries
from graph.providers import data_folder
from graph.providers.data_folder import LOCK_NAME, DataFolderBusy
from graph.providers.vectorstore import close_all, open_index

CHILD_TIMEOUT = 120
WINTER_SALES = "Quanto cresceram as vendas de inverno em 2025?"
KEY = "acme-owner-key-0001"
def ragate(home: Path, *argv: str, timeout: float = CHILD_TIMEOUT, **env: str) -> subprocess.CompletedProcess:
    """`ragate ARGV...` (python -m graph.entrypoints.cli) on `home`, to its end."""
    return subprocess.run([sys.executable, "-m", "graph.entrypoints.cli", *argv], cwd=ROOT, env=child_env(home, env),
                          capture_output=True, text=True, timeout=timeout, check=False)


def holder_of(home: Path) -> dict:
    return json.loads((home / LOCK_NAME).read_text(encoding="utf-8"))


@pytest.fixture(autouse=True)
def _close_after():
    yield
    close_all()


# --- the lock -------------------------------------------------------------------------------------


def test_a_second_process_is_refused_naming_the_folder_and_the_holder(tmp_path):
    home = tmp_path / "home"
    with folder_holder(home) as holder:
        assert holder_of(home)["pid"] == holder.pid
        index = open_index(home)  # nothing is opened yet ...
        with pytest.raises(DataFolderBusy) as refused:
            index.hold()           # ... taking the folder (as opening a collection does) is refused
    message = str(refused.value)
    assert "\n" not in message
    assert message.startswith(f"data folder {home.resolve()} is in use by process {holder.pid} (python -c")
    assert "RAGATE_HOME" in message and "RAGATE_VECTOR_STORE=qdrant" in message
    assert refused.value.holder.pid == holder.pid


def test_a_killed_holder_leaves_no_stale_lock(tmp_path):
    home = tmp_path / "home"
    with folder_holder(home) as holder:
        os.killpg(holder.pid, signal.SIGKILL)
        holder.wait(10)
    assert holder_of(home)["pid"] == holder.pid  # the file still names it ...
    index = open_index(home)
    index.hold()                                  # ... and the folder is taken all the same
    assert index.held and holder_of(home)["pid"] == os.getpid()
    close_all()
    assert not data_folder.claimed(home)  # closing lets the folder go: a child may take it now
    with folder_holder(home) as again:
        assert holder_of(home)["pid"] == again.pid


# --- ragate serve, ask, ingest, demo and the Python API while a server holds the folder ---------------


@pytest.fixture(scope="module")
def served(tmp_path_factory) -> Iterator[RagateServer]:
    """`ragate serve --samples` on its own data folder, holding it."""
    home = tmp_path_factory.mktemp("owned") / "home"
    with RagateServer(home, keys={KEY: "acme"}, startup_timeout=180) as srv:
        yield srv


def _refused_by_server(done: subprocess.CompletedProcess, prefix: str, served: RagateServer) -> None:
    output = output_lines(done)
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    assert "Traceback" not in done.stdout + done.stderr
    assert len(output) == 1 and output[0].startswith(
        f"{prefix}: data folder {served.home.resolve()} is in use by process {served.proc.pid} "
        f"(python -m graph.entrypoints.cli serve --port {served.port}"), output


def test_the_server_holds_its_folder_and_answers_under_that_lock(served):
    assert holder_of(served.home)["pid"] == served.proc.pid  # `ragate serve` took it, the server kept it
    assert holder_of(served.home)["command"].startswith("python -m graph.entrypoints.cli serve")
    resp = httpx.post(f"{served.url}/runs/wait", headers=served.auth(KEY), timeout=CHILD_TIMEOUT,
                      json={"assistant_id": "ragate", "input": {"question": WINTER_SALES}})
    assert resp.status_code == 200, resp.text
    state = resp.json()
    assert "acme-bi-2025-inverno-sales" in state["citations_used"], state.get("errors")


def test_a_second_ragate_serve_on_the_folder_is_refused_in_one_line(served):
    done = ragate(served.home, "serve", "--port", str(free_port()), "--local-dev", "--samples")
    _refused_by_server(done, "ragate serve", served)


@pytest.mark.parametrize("argv, prefix", [
    (["ask", WINTER_SALES, "--tenant", "acme"], "ragate ask"),
    (["ingest", str(ROOT / "samples" / "acme"), "--tenant", "acme", "--quiet"], "ragate ingest"),
    (["demo", "--quiet"], "ragate demo"),
], ids=["ask", "ingest", "demo"])
def test_cli_commands_while_a_server_holds_the_folder_are_refused_in_one_line(served, argv, prefix):
    _refused_by_server(ragate(served.home, *argv), prefix, served)


def test_the_python_api_raises_a_clear_exception_while_a_server_holds_the_folder(served):
    rag = Ragate(Context(home=str(served.home), tenant="acme"))
    with pytest.raises(DataFolderBusy, match=rf"is in use by process {served.proc.pid} \(python -m graph.entrypoints.cli serve"):
        rag.ask(WINTER_SALES)


class ReloadingServer(RagateServer):
    def argv(self) -> list[str]:
        return [*super().argv(), "--reload"]


def test_a_reload_worker_uses_the_folder_under_the_servers_lock(tmp_path):
    """With --reload the graph runs in a worker process the server starts: RAGATE_SERVE_PID tells it
    the lock is held for it."""
    with ReloadingServer(tmp_path / "home", keys={KEY: "acme"}, startup_timeout=180) as srv:
        assert holder_of(srv.home)["pid"] == srv.proc.pid
        resp = httpx.post(f"{srv.url}/runs/wait", headers=srv.auth(KEY), timeout=CHILD_TIMEOUT,
                          json={"assistant_id": "ragate", "input": {"question": WINTER_SALES}})
        assert resp.status_code == 200, resp.text
        assert "acme-bi-2025-inverno-sales" in resp.json()["citations_used"], resp.json().get("errors")
        _refused_by_server(ragate(srv.home, "ask", WINTER_SALES, "--tenant", "acme"), "ragate ask", srv)


# --- ragate serve's start-up: a setting it cannot start with is one line ------------------------------


@pytest.mark.parametrize("env, fragment", [
    ({"RAGATE_API_KEYS": "key1:acme"}, f"RAGATE_API_KEYS: entry 1: a key has at least {MIN_KEY_CHARS} characters"),
    ({"RAGATE_API_KEYS": "acme-key-0001:ac me"}, "RAGATE_API_KEYS: entry 1: tenant 'ac me' is not a tenant id"),
    ({"RAGATE_LOCAL_DEV": "1", "RAGATE_PROVIDER_TIMEOUT": "soon"}, "RAGATE_PROVIDER_TIMEOUT='soon' is not a number"),
    ({"RAGATE_LOCAL_DEV": "1", "RAGATE_CHAT_MODEL": "openai/gpt-4o-mini"}, "needs OPENAI_API_KEY"),
], ids=["short-key", "bad-tenant", "bad-number", "provider-without-key"])
def test_serve_with_a_setting_it_cannot_start_with_is_one_line(tmp_path, env, fragment):
    done = ragate(tmp_path / "home", "serve", "--port", str(free_port()), timeout=60, **env)
    output = output_lines(done)
    assert done.returncode == 2 and "Traceback" not in done.stdout + done.stderr, (done.stdout, done.stderr)
    assert len(output) == 1 and fragment in output[0], output  # nothing else: no banner of a server that never ran


def test_the_readme_states_the_key_rules_and_its_example_keys_follow_them():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    examples = re.findall(r'RAGATE_API_KEYS="([^"]+)"', text)
    assert examples
    for example in examples:
        assert parse_key_entries(example, "RAGATE_API_KEYS")  # KeyConfigError for a key a server refuses
    assert f"at least {MIN_KEY_CHARS} characters" in text


def test_the_settings_describe_the_key_rules_tenancy_enforces():
    from graph import settings
    assert f"at least {MIN_KEY_CHARS} characters" in settings.declared("RAGATE_API_KEYS").description


def test_serve_takes_the_folder_for_the_server_and_lets_it_go_when_it_cannot_start(tmp_path, monkeypatch):
    """What `ragate serve` hands the server (execve caught): the folder's lock, kept across execve, and
    RAGATE_SERVE_PID; a start that fails (here execve itself) lets the folder go."""
    pytest.importorskip("langgraph_cli", reason="the LangGraph server is the serve extra")
    from graph.entrypoints import cli

    home = tmp_path / "home"
    seen = {}

    def execve(path, argv, env):
        held = data_folder._claims[home.resolve()]
        seen.update(env=env, inheritable=os.get_inheritable(held.fd), holder=holder_of(home))
        raise OSError("no server here")

    monkeypatch.setattr(os, "execve", execve)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("RAGATE_LOCAL_DEV", "1")
    with pytest.raises(OSError, match="no server here"):
        cli.main(["serve", "--home", str(home), "--port", str(free_port())])
    assert seen["env"]["RAGATE_SERVE_PID"] == str(os.getpid()) and seen["inheritable"] is True
    assert seen["holder"]["pid"] == os.getpid()
    assert not data_folder.claimed(home)
    shutil.rmtree(home)
