"""graph/providers/persistence.py: the memory store and the checkpointer, on SQLite (embedded default) and on a
REAL PostgreSQL that these tests start themselves (tests/pg_server.py). Without the PostgreSQL
server binaries the Postgres cases skip with the reason; CI (.ci/run) installs them."""

from __future__ import annotations

import operator
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Annotated, TypedDict

import pg_server
import pytest

from graph.providers.persistence import (
    CHECKPOINT_FILE,
    SETTING,
    STORE_FILE,
    PersistenceError,
    close_all,
    open_checkpointer,
    open_store,
    redact_url,
)

ROOT = Path(__file__).resolve().parent.parent


def ns(tenant: str) -> tuple[str, ...]:
    return ("ragate", "memory", tenant)


# --- fixtures -------------------------------------------------------------------------------------


@pytest.fixture(autouse=True)
def _close_after():
    yield
    close_all()


@pytest.fixture(params=["sqlite", "postgres"])
def backend(request, tmp_path):
    url = request.getfixturevalue("pg_url") if request.param == "postgres" else None
    return SimpleNamespace(name=request.param, home=tmp_path / "home", url=url)


# --- store ----------------------------------------------------------------------------------------


def test_store_round_trip(backend):
    store = open_store(backend.home, backend.url)
    store.put(ns("acme"), "q1", {"answer": "Winter sales grew 12%.", "verdict": "OK"})
    store.put(ns("acme"), "q2", {"answer": "Revenue was flat.", "verdict": "WARNING", "tags": ["warning"]})

    item = store.get(ns("acme"), "q1")
    assert item is not None and item.value == {"answer": "Winter sales grew 12%.", "verdict": "OK"}
    assert tuple(item.namespace) == ns("acme")
    assert sorted(i.key for i in store.search(ns("acme"))) == ["q1", "q2"]
    assert [i.key for i in store.search(ns("acme"), filter={"verdict": "WARNING"})] == ["q2"]

    store.put(ns("acme"), "q1", {"answer": "Winter sales grew 13%.", "verdict": "OK"})
    assert store.get(ns("acme"), "q1").value["answer"] == "Winter sales grew 13%."
    store.delete(ns("acme"), "q1")
    assert store.get(ns("acme"), "q1") is None
    assert [i.key for i in store.search(ns("acme"))] == ["q2"]

    # A configured URL means PostgreSQL only: no SQLite file appears beside it.
    assert (backend.home / STORE_FILE).exists() == (backend.name == "sqlite")


def test_tenants_do_not_see_each_other(backend):
    store = open_store(backend.home, backend.url)
    for tenant in ("acme", "globex", "acmecorp"):  # acmecorp: a prefix of the namespace text, not a child
        for k in ("shared-key", f"only-{tenant}"):
            store.put(ns(tenant), k, {"answer": f"{tenant} says {k}", "tenant": tenant})

    acme = store.search(ns("acme"), limit=100)
    assert sorted(i.key for i in acme) == ["only-acme", "shared-key"]
    assert all(tuple(i.namespace) == ns("acme") and i.value["tenant"] == "acme" for i in acme)
    assert store.get(ns("acme"), "only-globex") is None
    assert store.get(ns("acme"), "shared-key").value["tenant"] == "acme"
    globex = store.search(ns("globex"), limit=100)
    assert {i.value["tenant"] for i in globex} == {"globex"}
    # The other tenants' items are really there: the isolation above is not an empty store.
    assert {i.value["tenant"] for i in store.search(("ragate", "memory"), limit=100)} == {"acme", "globex", "acmecorp"}
    store.delete(ns("globex"), "shared-key")
    assert store.get(ns("acme"), "shared-key") is not None


CHILD = textwrap.dedent("""
    import os, signal, sys
    from graph.providers.persistence import open_store
    store = open_store(sys.argv[1], sys.argv[2] or None)
    store.put(("ragate", "memory", "acme"), "durable", {"answer": "written then killed"})
    os.kill(os.getpid(), signal.SIGKILL)  # no close, no atexit, no flush: only what put() made durable
""")


def test_acknowledged_write_survives_a_killed_process(backend):
    watching = open_store(backend.home, backend.url)  # opened before the child writes
    proc = subprocess.run([sys.executable, "-c", CHILD, str(backend.home), backend.url or ""],
                          cwd=ROOT, capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == -9, proc.stderr
    assert watching.get(ns("acme"), "durable").value == {"answer": "written then killed"}
    close_all()
    reopened = open_store(backend.home, backend.url)
    assert reopened is not watching
    assert reopened.get(ns("acme"), "durable").value == {"answer": "written then killed"}


def test_store_is_usable_from_several_threads(backend):
    from concurrent.futures import ThreadPoolExecutor

    store = open_store(backend.home, backend.url)

    def work(i: int) -> str:
        tenant = ("acme", "globex")[i % 2]
        store.put(ns(tenant), f"k{i}", {"i": i})
        return store.get(ns(tenant), f"k{i}").value["i"]

    with ThreadPoolExecutor(max_workers=8) as pool:
        assert list(pool.map(work, range(40))) == list(range(40))
    assert len(store.search(ns("acme"), limit=100)) == 20 and len(store.search(ns("globex"), limit=100)) == 20


def test_sqlite_durability_settings(tmp_path):
    store = open_store(tmp_path)
    saver = open_checkpointer(tmp_path)
    for conn in (store.conn, saver.conn):
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL: fsync at every commit
    assert store.conn.isolation_level is None  # SqliteStore issues its own BEGIN/COMMIT
    assert (tmp_path / STORE_FILE).exists() and (tmp_path / CHECKPOINT_FILE).exists()


def test_sqlite_creates_the_data_folder(tmp_path):
    home = tmp_path / "not" / "yet"
    open_store(home).put(ns("acme"), "k", {"v": 1})
    assert (home / STORE_FILE).exists()


def test_opened_once_per_process(backend, monkeypatch):
    store = open_store(backend.home, backend.url)
    saver = open_checkpointer(backend.home, backend.url)
    assert open_store(backend.home, backend.url) is store
    assert open_checkpointer(backend.home, backend.url) is saver
    assert store is not saver
    if backend.name == "sqlite":
        monkeypatch.chdir(backend.home.parent)
        assert open_store(str(backend.home)) is store
        assert open_store(Path(backend.home.name)) is store  # relative path, same file
        assert open_store(backend.home, "") is store and open_store(backend.home, "  ") is store
    else:
        assert store.conn is saver.conn  # one pool per URL, shared
        assert open_store(backend.home / "elsewhere", backend.url) is store  # the URL decides, not home
    close_all()
    assert open_store(backend.home, backend.url) is not store


# --- checkpointer ---------------------------------------------------------------------------------


class ThreadState(TypedDict):
    items: Annotated[list[str], operator.add]


def tiny_graph(checkpointer):
    from langgraph.graph import END, START, StateGraph

    g = StateGraph(ThreadState)
    g.add_node("first", lambda s: {"items": [f"first saw {len(s['items'])}"]})
    g.add_node("second", lambda s: {"items": [f"second saw {len(s['items'])}"]})
    g.add_edge(START, "first")
    g.add_edge("first", "second")
    g.add_edge("second", END)
    return g.compile(checkpointer=checkpointer)


def test_checkpointer_keeps_a_thread_across_invocations(backend):
    graph = tiny_graph(open_checkpointer(backend.home, backend.url))
    t1 = {"configurable": {"thread_id": "t1"}}
    assert graph.invoke({"items": ["q1"]}, t1)["items"] == ["q1", "first saw 1", "second saw 2"]
    assert graph.invoke({"items": ["q2"]}, t1)["items"] == [
        "q1", "first saw 1", "second saw 2", "q2", "first saw 4", "second saw 5"]
    # Another thread starts empty.
    assert graph.invoke({"items": ["x"]}, {"configurable": {"thread_id": "t2"}})["items"] == [
        "x", "first saw 1", "second saw 2"]

    # Reopened (what a restarted server does): the thread's history is still there and continues.
    close_all()
    graph = tiny_graph(open_checkpointer(backend.home, backend.url))
    assert graph.get_state(t1).values["items"][-1] == "second saw 5"
    assert graph.invoke({"items": ["q3"]}, t1)["items"][-3:] == ["q3", "first saw 7", "second saw 8"]
    assert (backend.home / CHECKPOINT_FILE).exists() == (backend.name == "sqlite")


# --- refusals -------------------------------------------------------------------------------------


@pytest.mark.parametrize("opener", [open_store, open_checkpointer])
@pytest.mark.parametrize("url", ["mysql://ragate:hunter2@db:3306/ragate", "sqlite:///var/ragate/memory.sqlite",
                                 "localhost:5432", "http://ragate:hunter2@db/"])
def test_bad_url_scheme_names_the_setting(tmp_path, opener, url):
    with pytest.raises(PersistenceError) as err:
        opener(tmp_path / "home", url)
    msg = str(err.value)
    assert isinstance(err.value, ValueError)
    assert SETTING in msg and "RAGATE_MEMORY_URL" in msg
    assert "hunter2" not in msg and "\n" not in msg
    assert not (tmp_path / "home").exists()  # a mistyped URL never falls back to SQLite silently


@pytest.mark.parametrize("opener", [open_store, open_checkpointer])
def test_unreachable_postgres_is_one_clear_line_without_the_password(tmp_path, opener):
    port = pg_server.free_port()  # bound then released: nothing listens there
    url = f"postgresql://ragate:s3cret-pw%21@127.0.0.1:{port}/ragate"
    started = time.monotonic()
    with pytest.raises(PersistenceError) as err:
        opener(tmp_path, url)
    msg = str(err.value)
    assert time.monotonic() - started < 10
    assert SETTING in msg and "cannot reach PostgreSQL" in msg and str(port) in msg
    assert "s3cret" not in msg and "\n" not in msg
    assert "postgresql://ragate:***@127.0.0.1" in msg


def test_wrong_postgres_password_is_refused_without_it(postgres, tmp_path):
    url = postgres.url("postgres", password="not-the-password")
    with pytest.raises(PersistenceError) as err:
        open_store(tmp_path, url)
    msg = str(err.value)
    assert SETTING in msg and "not-the-password" not in msg and postgres.password not in msg
    assert "authentication failed" in msg and "\n" not in msg


def test_redact_url():
    assert redact_url("postgresql://u:p%40ss@h:5432/db") == "postgresql://u:***@h:5432/db"
    assert redact_url("postgres://u@h/db?password=x&sslmode=require") == "postgres://u@h/db?password=***&sslmode=require"
    assert redact_url("postgresql://h/db") == "postgresql://h/db"
