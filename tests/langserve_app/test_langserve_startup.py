"""The LangServe app's start-up and its data folder: a setting it cannot start with is ONE line naming
the setting and the rule (never a traceback) and a non-zero exit; a data folder another process holds
refuses the start in one line naming the folder and that process; a request that reaches an app that
cannot open the engine gets 503 with the reason, never a 200 with an answer from nothing.

Every app runs on 127.0.0.1 in a child process (langserve_server.py), each run bounded in time.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import httpx
import pytest
from child_processes import child_env, folder_holder, output_lines
from langserve_server import (  # noqa: F401 (fixtures)
    KEYS,
    ROOT,
    LangServeServer,
    _loopback_without_proxy,
    langserve_seed_home,
    server,
)

from graph.governance.tenancy import MIN_KEY_CHARS, parse_key_entries

STARTUP_TIMEOUT = 120
WINTER_SALES = "Quanto cresceram as vendas de inverno em 2025?"
README = ROOT / "README.md"


def start_and_exit(home: Path, keys: str | None, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """Start the app with `RAGATE_API_KEYS=keys` (None: unset) on `home`; it must end by itself."""
    app = LangServeServer(home, {}, env)
    extra = {**app.extra_env}
    extra.pop("RAGATE_API_KEYS", None)
    if keys is not None:
        extra["RAGATE_API_KEYS"] = keys
    return subprocess.run(app.argv(), cwd=ROOT, env=child_env(home, extra), capture_output=True, text=True,
                          timeout=STARTUP_TIMEOUT, check=False)


# --- a setting the app cannot start with: one line ----------------------------------------------------


@pytest.mark.parametrize("keys, line", [
    ("key1:acme", f"ragate langserve: RAGATE_API_KEYS: entry 1: a key has at least {MIN_KEY_CHARS} characters"),
    ("acme-key-0001:acme,short:globex",
     f"ragate langserve: RAGATE_API_KEYS: entry 2: a key has at least {MIN_KEY_CHARS} characters"),
    ("acme-key-0001:ac me", ("ragate langserve: RAGATE_API_KEYS: entry 1: tenant 'ac me' is not a tenant id "
                             "(letters, digits, '.', '_', '-'; at most 64)")),
    ("acme-key-0001", "ragate langserve: RAGATE_API_KEYS: entry 1 is not 'key:tenant'"),
], ids=["short-key", "second-entry", "bad-tenant", "no-tenant"])
def test_a_bad_key_setting_is_one_line_naming_the_setting_and_the_rule(tmp_path, keys, line):
    done = start_and_exit(tmp_path / "home", keys)
    assert done.returncode != 0
    assert "Traceback" not in done.stdout + done.stderr
    assert output_lines(done) == [line], done.stdout + done.stderr


def test_other_settings_it_cannot_start_with_are_one_line_too(tmp_path):
    cases = [({"RAGATE_API_KEYS_FILE": str(tmp_path / "missing-keys")}, "RAGATE_API_KEYS_FILE="),
             ({"RAGATE_PROVIDER_TIMEOUT": "soon"}, "RAGATE_PROVIDER_TIMEOUT='soon' is not a number"),
             ({"RAGATE_CHAT_MODEL": "openai/gpt-4o-mini"}, "needs OPENAI_API_KEY")]
    for env, fragment in cases:
        done = start_and_exit(tmp_path / "home", "acme-key-0001:acme", env)
        lines = output_lines(done)
        assert done.returncode != 0 and len(lines) == 1 and fragment in lines[0], (env, done.stdout + done.stderr)
        assert lines[0].startswith("ragate langserve: ")


def test_the_readme_langserve_example_keys_are_valid():
    text = README.read_text(encoding="utf-8")
    examples = re.findall(r'RAGATE_API_KEYS="([^"]+)"[^\n]*langserve_app', text)
    assert examples, "README.md has no LangServe example with RAGATE_API_KEYS"
    for example in examples:
        assert parse_key_entries(example, "RAGATE_API_KEYS")  # raises KeyConfigError on a key the app refuses
    assert f"at least {MIN_KEY_CHARS} characters" in text  # the rule is written down


# --- one data folder, one owner ---------------------------------------------------------------------


def test_a_second_app_on_the_same_data_folder_is_refused_in_one_line_naming_the_holder(server):
    done = start_and_exit(server.home, ",".join(f"{k}:{t}" for t, k in KEYS.items()))
    lines = output_lines(done)
    assert done.returncode != 0 and "Traceback" not in done.stdout + done.stderr, done.stdout + done.stderr
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"ragate langserve: data folder {server.home.resolve()} is in use by process "
                               f"{server.proc.pid} (python -m uvicorn graph.entrypoints.langserve_app:app"), lines[0]
    assert "RAGATE_HOME" in lines[0] and "RAGATE_VECTOR_STORE=qdrant" in lines[0]
    # the first app was not disturbed
    resp = httpx.post(f"{server.url}/rag/invoke", json={"input": {"question": WINTER_SALES}},
                      headers=server.auth("acme"), timeout=120)
    assert resp.status_code == 200 and resp.json()["output"]["citations_used"], resp.text


def test_an_app_refuses_to_start_on_a_folder_another_ragate_process_holds(langserve_seed_home, tmp_path):
    home = tmp_path / "home"
    shutil.copytree(langserve_seed_home, home)
    with folder_holder(home, open_collections=True) as holder:
        done = start_and_exit(home, "acme-key-0001:acme")
    lines = output_lines(done)
    assert done.returncode != 0 and len(lines) == 1, done.stdout + done.stderr
    assert f"data folder {home.resolve()} is in use by process {holder.pid} (python -c" in lines[0], lines[0]


class NoLifespanServer(LangServeServer):
    """The app served without its lifespan (`--lifespan off`): nothing is opened before the first request."""

    def argv(self) -> list[str]:
        return [*super().argv(), "--lifespan", "off"]


def test_a_request_to_an_app_that_cannot_open_the_engine_is_503_not_an_empty_answer(server, tmp_path):
    """Started without its lifespan, the app first meets the engine on a request: the folder another
    app holds is a 503 with the reason, on every route that runs the graph."""
    with NoLifespanServer(server.home, KEYS) as app:
        for path, body in (("invoke", {"input": {"question": WINTER_SALES}}),
                           ("batch", {"inputs": [{"question": WINTER_SALES}]}),
                           ("stream", {"input": {"question": WINTER_SALES}}),
                           ("stream_log", {"input": {"question": WINTER_SALES}})):
            resp = httpx.post(f"{app.url}/rag/{path}", json=body, headers=app.auth("acme"), timeout=60)
            assert resp.status_code == 503, (path, resp.status_code, resp.text[:500])
            detail = resp.json()["detail"]
            assert "data folder is in use by another process" in detail, detail
            assert str(server.home) not in detail  # where the server keeps its files is not the caller's
        # without a key it is still a 401 first: the reason is for callers the server knows
        assert httpx.post(f"{app.url}/rag/invoke", json={"input": {"question": WINTER_SALES}},
                          timeout=60).status_code == 401
        assert f"process {server.proc.pid}" in app.log_text()  # the operator's log names the holder
