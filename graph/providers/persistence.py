"""Where ragate keeps what must outlive a request: the memory store and the thread checkpointer.

ragate remembers vetted answers in a LangGraph `BaseStore` (namespaced by tenant,
`("ragate", "memory", tenant)`) and keeps thread history in a LangGraph checkpointer. Both come in
two flavours, chosen by one setting, `RAGATE_MEMORY_URL`:

* empty (the embedded default): SQLite files under the data folder, `memory.sqlite` for the store
  and `checkpoints.sqlite` for the checkpointer;
* `postgresql://...` (or `postgres://...`): LangGraph's `PostgresStore` / `PostgresSaver`
  (package `langgraph-checkpoint-postgres`, psycopg 3) for production.

Anything else is refused with a `PersistenceError` naming the setting, and so is a PostgreSQL that
cannot be reached; a message never carries the URL's password.

Durability (SQLite). A remembered answer is a promise: once `put` has returned, the answer must be
there after a crash. The files run in WAL journal mode (readers never block the writer, so a server
answering questions is not stalled by a memory write) with `synchronous=FULL`: SQLite fsyncs the
WAL at every commit, so an acknowledged write survives a killed process and a power cut too
(`NORMAL`, the usual WAL pairing, only promises the former: the last commits may roll back after a
power loss). `synchronous` is a per-connection setting, which is one more reason every connection
is made here and nowhere else. The connection is opened with `check_same_thread=False`: LangGraph
runs nodes in worker threads, and both `SqliteStore` and `SqliteSaver` serialise their own use of
the connection with a lock. The store's connection is in autocommit mode (`isolation_level=None`)
because `SqliteStore` issues its own BEGIN/COMMIT; the saver keeps sqlite3's default transaction
handling because `SqliteSaver` calls `commit()` itself (that is how its own `from_conn_string`
opens it).

Durability (PostgreSQL). The LangGraph Postgres classes require connections in autocommit mode with
`prepare_threshold=0` and a `dict_row` row factory (their setup runs `CREATE INDEX CONCURRENTLY`,
which cannot run in a transaction block, and their queries read rows as dicts); a write is
committed when the call returns, and the server's own fsync settings do the rest. The connections
come from a psycopg `ConnectionPool` that lives as long as the process and checks a connection
before lending it, so a restarted database does not leave a server holding a dead connection. The
store and the checkpointer on one URL share one pool.

One per process. Opening is not free (a setup pass over the migrations, a pool of connections),
SQLite's locks and WAL index work best with one connection per process per file, and a server must
not open a new pool per request. So `open_store` / `open_checkpointer` cache what they open by
(kind, resolved path or URL): opening twice returns the same object. `close_all()` closes every
connection and pool (tests, and a server shutting down). A forked child does not reuse its parent's
connections (sharing a SQLite handle or a libpq socket across processes corrupts both): it opens
its own on first use and leaves the parent's alone.

Namespace labels. Tenant ids may hold periods (`graph.governance.tenancy.TENANT_RE`: `acme.com.br`), but a
LangGraph store namespace label may not (the stores join labels with '.'), nor hold NUL, nor be
empty. Every namespace ragate writes is built by `graph.governance.audit.namespace`, which passes each label
through `namespace_label`: '%', '.' and NUL are percent-encoded (`acme.br` -> `acme%2Ebr`). The
encoding is injective (two tenants never share a namespace, whatever the Python API is given) and
is the identity for every label without those characters, so the namespaces of tenants without a
period, and the data already stored under them, are unchanged. Refusing periods instead would break
API keys and ingested collections that already use such tenant ids: the tenant id is the product's
public identifier, the label is a storage detail.
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
import sqlite3
import threading
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from langgraph.store.base import BaseStore
from langgraph.store.sqlite import SqliteStore

log = logging.getLogger(__name__)

SETTING = "RAGATE_MEMORY_URL"
STORE_FILE = "memory.sqlite"
CHECKPOINT_FILE = "checkpoints.sqlite"
POSTGRES_SCHEMES = ("postgresql", "postgres")
CONNECT_TIMEOUT_S = 10  # libpq connect_timeout when the URL does not set one
POOL_MAX_SIZE = 8  # LangGraph's Postgres classes take a lock per call anyway: a small pool is plenty


_LABEL_ESCAPES = {"%": "%25", ".": "%2E", "\x00": "%00"}
_LABEL_TEXT = {code: ch for ch, code in _LABEL_ESCAPES.items()}
_LABEL_SPECIAL = re.compile("[%.\x00]")
_LABEL_CODE = re.compile("|".join(_LABEL_TEXT))


def namespace_label(text: str) -> str:
    """`text` as a store namespace label: '%', '.' and NUL percent-encoded, anything else as is (see
    the module docstring). `label_text` reverses it."""
    return _LABEL_SPECIAL.sub(lambda m: _LABEL_ESCAPES[m.group()], text)


def label_text(label: str) -> str:
    """The text a `namespace_label` encodes (an operator reading namespaces back to tenant ids)."""
    return _LABEL_CODE.sub(lambda m: _LABEL_TEXT[m.group()], label)


class PersistenceError(ValueError):
    """The memory / checkpoint backend cannot be opened (bad setting, unreachable database, ...)."""


_lock = threading.RLock()
_pid = os.getpid()
_objects: dict[tuple[str, str], Any] = {}  # (kind, path or url) -> store / saver
_closers: list[Any] = []  # sqlite connections and psycopg pools, closed by close_all()
_pools: dict[str, Any] = {}  # url -> ConnectionPool (shared by the store and the saver)


class ThreadedSqliteStore(SqliteStore):
    """`SqliteStore` whose async API runs the sync one in a worker thread. LangGraph's SqliteStore
    refuses async use, but the LangGraph server (langgraph.json's `store`) and async web handlers
    call it; SqliteStore's own lock already serialises the connection."""

    async def abatch(self, ops):
        return await asyncio.get_running_loop().run_in_executor(None, self.batch, list(ops))


def open_store(home: Path | str, url: str | None = None) -> BaseStore:
    """The LangGraph store for remembered answers: SQLite `home/memory.sqlite` when `url` is empty,
    `PostgresStore` when it is a postgresql:// URL. Cached per process: the same arguments give the
    same object. Raises `PersistenceError`."""
    return _open("store", home, url)


def open_checkpointer(home: Path | str, url: str | None = None):
    """The LangGraph checkpointer for thread history: `SqliteSaver` on `home/checkpoints.sqlite` when
    `url` is empty, `PostgresSaver` when it is a postgresql:// URL. Cached per process like
    `open_store`. Raises `PersistenceError`."""
    return _open("checkpointer", home, url)


def close_all() -> None:
    """Close every connection and pool opened by this module in this process and forget them;
    the next open_* opens afresh."""
    with _lock:
        _forget_if_forked()
        closers = list(reversed(_closers))
        _objects.clear()
        _pools.clear()
        _closers.clear()
    for c in closers:
        try:
            c.close()
        except Exception as e:  # noqa: BLE001 -- best effort: one broken handle must not keep the others open
            log.debug("closing %r failed: %s", c, e)


def redact_url(url: str) -> str:
    """`url` with its password (in the user info or a `password=` query parameter) replaced by ***."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "<unparseable URL>"
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, _, hostport = netloc.rpartition("@")
        if ":" in userinfo:
            netloc = f"{userinfo.split(':', 1)[0]}:***@{hostport}"
    query = "&".join(
        f"{k}=***" if k.lower() == "password" else p
        for p in parts.query.split("&") if p
        for k in [p.split("=", 1)[0]]
    )
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


# --- internals ------------------------------------------------------------------------------------


def _open(kind: str, home: Path | str, url: str | None):
    url = (url or "").strip()
    if url:
        scheme = url.split("://", 1)[0].lower() if "://" in url else ""
        if scheme not in POSTGRES_SCHEMES:
            raise PersistenceError(
                f"{SETTING} must be empty (SQLite under the data folder) or a postgresql:// URL, "
                f"got {redact_url(url)!r}")
        key = (kind, url)
    else:
        key = (kind, str(Path(home).expanduser().resolve() / (STORE_FILE if kind == "store" else CHECKPOINT_FILE)))
    with _lock:
        _forget_if_forked()
        obj = _objects.get(key)
        if obj is None:
            obj = _open_postgres(kind, url) if url else _open_sqlite(kind, Path(key[1]))
            _objects[key] = obj
        return obj


def _forget_if_forked() -> None:
    """In a forked child, drop (never close) the parent's handles: they belong to the parent."""
    global _pid
    if os.getpid() != _pid:
        _objects.clear()
        _pools.clear()
        _closers.clear()
        _pid = os.getpid()


def _open_sqlite(kind: str, path: Path):
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(str(path), check_same_thread=False, timeout=30.0,
                               **({"isolation_level": None} if kind == "store" else {}))
    except (OSError, sqlite3.Error) as e:
        raise PersistenceError(f"cannot open the SQLite {kind} at {path}: {_one_line(e)}") from e
    try:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=FULL")
        if kind == "store":
            obj = ThreadedSqliteStore(conn)
        else:
            from langgraph.checkpoint.sqlite import SqliteSaver

            obj = SqliteSaver(conn)
        obj.setup()
    except sqlite3.Error as e:
        conn.close()
        raise PersistenceError(f"cannot open the SQLite {kind} at {path}: {_one_line(e)}") from e
    _closers.append(conn)
    return obj


def _open_postgres(kind: str, url: str):
    import psycopg

    pool = _pools.get(url)
    if pool is None:
        pool = _open_pool(url)
    try:
        if kind == "store":
            from langgraph.store.postgres import PostgresStore

            obj = PostgresStore(pool)
        else:
            from langgraph.checkpoint.postgres import PostgresSaver

            obj = PostgresSaver(pool)
        obj.setup()
    except psycopg.Error as e:
        raise PersistenceError(
            f"{SETTING}: cannot set up the PostgreSQL {kind} at {redact_url(url)}: {_scrub(url, e)}") from e
    return obj


def _open_pool(url: str):
    import psycopg
    from psycopg.conninfo import conninfo_to_dict
    from psycopg.rows import dict_row
    from psycopg_pool import ConnectionPool

    where = redact_url(url)
    try:
        params = conninfo_to_dict(url)
    except psycopg.Error as e:
        raise PersistenceError(f"{SETTING} is not a valid PostgreSQL URL ({where}): {_scrub(url, e)}") from e
    timeout = {} if "connect_timeout" in params else {"connect_timeout": CONNECT_TIMEOUT_S}
    # Try one connection first: a pool retries in the background and only says "timeout", while
    # libpq's own message says why (refused, unknown host, authentication failed, no such database).
    try:
        psycopg.connect(url, autocommit=True, **timeout).close()
    except psycopg.Error as e:
        raise PersistenceError(f"{SETTING}: cannot reach PostgreSQL at {where}: {_scrub(url, e)}") from e
    pool = ConnectionPool(
        url,
        min_size=1,
        max_size=POOL_MAX_SIZE,
        kwargs={"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row, **timeout},
        check=ConnectionPool.check_connection,
        name="ragate-memory",
        open=False,
    )
    try:
        pool.open(wait=True, timeout=CONNECT_TIMEOUT_S + 5)
    except Exception as e:
        pool.close()
        raise PersistenceError(f"{SETTING}: cannot reach PostgreSQL at {where}: {_scrub(url, e)}") from e
    _pools[url] = pool
    _closers.append(pool)
    return pool


def _scrub(url: str, err: BaseException) -> str:
    """The error on one line, without the URL's password in any spelling."""
    text = _one_line(err)
    secrets: set[str] = set()
    import psycopg
    from psycopg.conninfo import conninfo_to_dict

    try:
        pw = conninfo_to_dict(url).get("password")
    except psycopg.Error:
        pw = None
    if pw:
        secrets.add(str(pw))
    try:
        parts = urlsplit(url)
        if parts.password:
            secrets.add(parts.password)
    except ValueError:
        pass
    if url:
        text = text.replace(url, redact_url(url))
    for s in sorted(secrets, key=len, reverse=True):
        text = text.replace(s, "***")
    return text


def _one_line(err: BaseException) -> str:
    text = " ".join(line.strip() for line in str(err).splitlines() if line.strip())
    return text or type(err).__name__
