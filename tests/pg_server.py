"""A throwaway PostgreSQL server for the tests: initdb into a tmp folder, start it on 127.0.0.1 with
a free port (its unix socket in the same tmp folder), create databases, stop it, remove the folder.

Used by tests/test_persistence.py. Nothing here touches a system cluster: the server has its own
data folder, port and socket, and is gone when `stop()` returns.

PostgreSQL refuses to run as root, so under root every server binary runs as the `postgres` system
user (`runuser -u postgres -- ...`) on a folder chown'ed to it. `unavailable_reason()` says why no
server can be started here (no binaries, root without a `postgres` user or `runuser`); the tests
skip with that reason. A server that is installed but fails to start is an error, not a skip.
"""

from __future__ import annotations

import os
import secrets
import shutil
import socket
import subprocess
import tempfile
import time
from glob import glob
from pathlib import Path

SERVER_BINARIES = ("initdb", "pg_ctl", "postgres")
USER = "ragate"


def find_bindir() -> Path | None:
    """The folder with initdb, pg_ctl and postgres: `pg_config --bindir` (Debian's pg_config comes
    with libpq-dev and may point at a folder without the server), else the newest
    /usr/lib/postgresql/*/bin, else the PATH."""
    candidates: list[Path] = []
    pg_config = shutil.which("pg_config")
    if pg_config:
        try:
            out = subprocess.run([pg_config, "--bindir"], capture_output=True, text=True, timeout=10, check=False)
            if out.returncode == 0 and out.stdout.strip():
                candidates.append(Path(out.stdout.strip()))
        except (OSError, subprocess.SubprocessError):
            pass

    def version(p: str) -> tuple[int, ...]:
        v = Path(p).parent.name
        return tuple(int(x) for x in v.split(".") if x.isdigit())

    candidates += [Path(p) for p in sorted(glob("/usr/lib/postgresql/*/bin"), key=version, reverse=True)]
    initdb = shutil.which("initdb")
    if initdb:
        candidates.append(Path(initdb).resolve().parent)
    for d in candidates:
        if all(os.access(d / b, os.X_OK) for b in SERVER_BINARIES):
            return d
    return None


def _as_root() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0


def unavailable_reason() -> str | None:
    """Why a server cannot be started on this machine, or None when it can."""
    if find_bindir() is None:
        return ("PostgreSQL server binaries (initdb, pg_ctl, postgres) not found via `pg_config --bindir`, "
                "/usr/lib/postgresql/*/bin or PATH; install the `postgresql` package to run these tests")
    if _as_root():
        try:
            import pwd

            pwd.getpwnam("postgres")
        except (ImportError, KeyError):
            return "running as root and there is no `postgres` system user to run the PostgreSQL server as"
        if shutil.which("runuser") is None:
            return "running as root and `runuser` is missing (needed to run the PostgreSQL server as `postgres`)"
    return None


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PostgresServer:
    """One private cluster. `start()` returns when it accepts connections; `url(db)` gives a URL
    with a password (host connections use scram-sha-256, so the password is really checked)."""

    def __init__(self) -> None:
        bindir = find_bindir()
        if bindir is None:
            raise RuntimeError(unavailable_reason())
        self.bindir = bindir
        self.password = secrets.token_hex(12)
        self.port = 0
        # /tmp directly (not pytest's 0700 /tmp/pytest-of-root): under root the `postgres` user must
        # be able to reach the folder; also keeps the unix socket path short (107-byte limit).
        base = "/tmp" if os.path.isdir("/tmp") else None
        self.root = Path(tempfile.mkdtemp(prefix="ragate-pg-", dir=base))
        self.data = self.root / "data"
        self.sockets = self.root / "sock"
        self.log = self.root / "server.log"
        self.started = False

    # --- running the server binaries ---------------------------------------------------------

    def _run(self, *args: str, timeout: float = 60) -> subprocess.CompletedProcess:
        cmd = [str(self.bindir / args[0]), *args[1:]]
        if _as_root():
            cmd = ["runuser", "-u", "postgres", "--", *cmd]
        env = {**os.environ, "LC_ALL": "C", "LANG": "C"}
        for var in ("PGHOST", "PGPORT", "PGDATA", "PGUSER", "PGPASSWORD", "PGDATABASE", "PGSERVICE"):
            env.pop(var, None)
        return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env, cwd=self.root,
                              check=False)

    def _check(self, what: str, proc: subprocess.CompletedProcess) -> None:
        if proc.returncode != 0:
            log = self.log.read_text(errors="replace")[-3000:] if self.log.exists() else ""
            raise RuntimeError(f"PostgreSQL {what} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}\n{log}")

    def start(self) -> PostgresServer:
        self.sockets.mkdir()
        pwfile = self.root / "pwfile"
        pwfile.write_text(self.password + "\n")
        if _as_root():
            for p in (self.root, self.sockets, pwfile):
                shutil.chown(p, "postgres", "postgres")
        os.chmod(self.root, 0o700)
        self._check("initdb", self._run(
            "initdb", "-D", str(self.data), "-U", USER, f"--pwfile={pwfile}", "--auth-local=trust",
            "--auth-host=scram-sha-256", "-E", "UTF8", "--locale=C", "--no-sync", "--no-instructions"))
        # The throwaway cluster skips fsync: these tests check ragate's use of PostgreSQL, not the
        # server's own crash safety (a production server keeps fsync on).
        opts = (f"-c listen_addresses=127.0.0.1 -c unix_socket_directories={self.sockets} "
                "-c fsync=off -c full_page_writes=off -c synchronous_commit=off -c max_connections=50")
        last: subprocess.CompletedProcess | None = None
        for _ in range(3):  # the free port can be taken between picking it and binding it
            self.port = free_port()
            last = self._run("pg_ctl", "-D", str(self.data), "-l", str(self.log), "-w", "-t", "30",
                             "-o", f"-p {self.port} {opts}", "start")
            if last.returncode == 0:
                break
        assert last is not None
        self._check("start", last)
        self.started = True
        self._wait_ready()
        return self

    def _wait_ready(self, timeout: float = 30) -> None:
        import psycopg

        deadline = time.monotonic() + timeout
        while True:
            try:
                psycopg.connect(self.url("postgres"), connect_timeout=2).close()
                return
            except psycopg.OperationalError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)

    def url(self, dbname: str = "postgres", *, password: str | None = None) -> str:
        pw = self.password if password is None else password
        return f"postgresql://{USER}:{pw}@127.0.0.1:{self.port}/{dbname}"

    def create_database(self, name: str) -> str:
        """A new empty database; its URL."""
        import psycopg
        from psycopg import sql

        with psycopg.connect(self.url("postgres"), autocommit=True) as conn:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        return self.url(name)

    def stop(self) -> None:
        try:
            if self.started:
                self._run("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "-t", "30", "stop")
                self.started = False
        finally:
            shutil.rmtree(self.root, ignore_errors=True)
