"""`ragate serve` hands the LangGraph server what it needs: offline settings, the flags as the
environment Context reads, and absolute paths (the server runs from the data folder, so a path
given relative to where the command was typed would otherwise point elsewhere). The server itself
is started by tests/ragate_server.py; here `os.execve` is caught to see what it would get."""

from __future__ import annotations

import os
import socket

import pytest

from graph.entrypoints import cli


class Exec(Exception):
    pass


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def served_as(monkeypatch, tmp_path):
    """run(argv, **env) -> (argv, env, cwd) the server would be started with."""
    pytest.importorskip("langgraph_cli", reason="the LangGraph server is the serve extra")
    monkeypatch.chdir(tmp_path)
    for var in ("RAGATE_API_KEYS", "RAGATE_API_KEYS_FILE", "RAGATE_LOCAL_DEV", "RAGATE_POLICY",
                "LANGGRAPH_CLI_NO_ANALYTICS", "LANGSMITH_TRACING"):
        monkeypatch.delenv(var, raising=False)

    def execve(path, argv, env):
        raise Exec(argv, env, os.getcwd())

    monkeypatch.setattr(os, "execve", execve)

    def run(argv, **env):
        for k, v in env.items():
            monkeypatch.setenv(k, v)
        with pytest.raises(Exec) as caught:
            cli.main(["serve", *argv])
        return caught.value.args

    return run


def test_relative_paths_are_made_absolute_before_the_server_moves_to_the_data_folder(served_as, tmp_path):
    (tmp_path / "keys").write_text("some-key-0001:acme\n", encoding="utf-8")
    port = str(free_port())
    argv, env, cwd = served_as(["--port", port], RAGATE_HOME="rel-home", RAGATE_POLICY="policies/p.yaml",
                               RAGATE_API_KEYS_FILE="keys")
    assert cwd == str(tmp_path / "rel-home") == env["RAGATE_HOME"]
    assert env["RAGATE_POLICY"] == str(tmp_path / "policies" / "p.yaml")
    assert env["RAGATE_API_KEYS_FILE"] == str(tmp_path / "keys")
    assert argv[argv.index("--port") + 1] == port and "--no-browser" in argv and "--no-reload" in argv


def test_the_default_data_folder_is_where_the_command_was_typed(served_as, tmp_path, monkeypatch):
    monkeypatch.delenv("RAGATE_HOME", raising=False)
    argv, env, cwd = served_as(["--local-dev", "--home", "data", "--port", str(free_port())])
    assert cwd == env["RAGATE_HOME"] == str(tmp_path / "data") and env["RAGATE_LOCAL_DEV"] == "1"
    assert env["LANGGRAPH_CLI_NO_ANALYTICS"] == "1" and env["LANGSMITH_TRACING"] == "false"


def test_serve_refuses_to_start_without_keys_or_local_development(served_as, capsys):
    assert cli.main(["serve", "--port", "2102"]) == 2  # served_as caught os.execve: it was never reached
    assert "no API keys" in capsys.readouterr().err


def test_a_taken_port_stops_the_start_in_one_line_saying_how_to_pick_another(served_as, capsys):
    # Issue 45: the LangGraph dev server took another port when 2024 was taken, and the banner pointed at the
    # process that held it.
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        assert cli.main(["serve", "--local-dev", "--port", str(port)]) == 2  # os.execve was never reached
    err = capsys.readouterr().err.strip()
    assert err == (f"ragate serve: port {port} on 127.0.0.1 is in use by another process; pick another with --port "
                   f"(e.g. --port {port + 1}; make serve SERVE_PORT={port + 1}) and use it in the URLs"), err
    assert cli.port_unavailable("127.0.0.1", port) is None  # released: free again
    assert "cannot listen on" in cli.port_unavailable("no-such-host.invalid", port)
