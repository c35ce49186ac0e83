"""One data folder, one owner: the process that opens the embedded vector engine of a folder.

The embedded engine (qdrant-edge) opens a folder in one process at a time, and it has no read-only
mode that a second process could use. So a process that opens it takes the folder first: an
exclusive `fcntl.flock` on `<home>/ragate.lock`, with the holder's pid, command and start time
written in the file. A second process is refused at once, in one line naming the folder and the
holder (`DataFolderBusy`), instead of finding every collection locked and answering from nothing.
The kernel drops the lock when its holder ends, however it ends: a killed process never leaves
a stale lock (the file stays, with the last holder's details, and is simply taken again).

    claim(home)            take the folder for this process (counted: every claim needs a release)
    release(home)
    keep_across_exec(home) the lock survives `os.execve`, for the server `ragate serve` becomes

`ragate serve` takes the folder before it starts the LangGraph server, and the server runs in the same
process (execve keeps the pid and the lock). Its environment says so (`RAGATE_SERVE_PID`), so its own
processes — the worker of `--reload` — use the folder under that claim.

Only the embedded engine needs this: a Qdrant server (RAGATE_VECTOR_STORE=qdrant) is shared by design.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import shlex
import sys
import threading
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from graph import settings
from graph.providers.specs import ProviderError

LOCK_NAME = "ragate.lock"
SERVE_PID_SETTING = "RAGATE_SERVE_PID"
_MAX_COMMAND_CHARS = 120


class DataFolderBusy(ProviderError):
    """The data folder's embedded engine is held by another process. The message is one line that
    names the folder, the holder (pid, command) and what to do; `PUBLIC_REASON` is what a server
    tells its callers (the folder and the other process's command line are the server's business,
    its log names them)."""

    PUBLIC_REASON = ("the vector engine cannot be opened: the server's data folder is in use by another process "
                     "(the embedded engine opens a folder in one process at a time); the server's log names it")

    def __init__(self, folder: Path, holder: Holder | None):
        self.folder, self.holder = folder, holder
        who = holder.describe() if holder else "another process"
        super().__init__(
            f"data folder {folder} is in use by {who}: the embedded vector engine opens a folder in one "
            "process at a time; stop that process, give this one its own RAGATE_HOME, or share a Qdrant server "
            "(RAGATE_VECTOR_STORE=qdrant)")


@dataclass(frozen=True)
class Holder:
    """Who holds a data folder, as its lock file says."""

    pid: int | None
    command: str = ""
    since: str = ""

    def describe(self) -> str:
        what = f"process {self.pid}" if self.pid else "another process"
        details = ", ".join(d for d in (self.command, f"since {self.since}" if self.since else "") if d)
        return f"{what} ({details})" if details else what


@dataclass
class _Claim:
    fd: int | None   # None: held on this process's behalf by the process that started it (RAGATE_SERVE_PID)
    count: int = 0


_claims: dict[Path, _Claim] = {}
_lock = threading.Lock()


def lock_path(folder: Path | str) -> Path:
    return Path(folder) / LOCK_NAME


def _key(folder: Path | str) -> Path:
    return Path(folder).expanduser().resolve()


def _read_holder(path: Path) -> Holder | None:
    """The holder the lock file names (None when it names nobody). A holder writes its details
    right after taking the lock: an empty file is read again for a moment."""
    for _ in range(20):
        try:
            text = path.read_text(encoding="utf-8").strip()
        except OSError:
            return None
        if text:
            try:
                data = json.loads(text)
                return Holder(pid=int(data["pid"]), command=str(data.get("command", "")),
                              since=str(data.get("since", "")))
            except (ValueError, KeyError, TypeError):
                return Holder(pid=None)
        time.sleep(0.025)
    return Holder(pid=None)


def _this_command() -> str:
    """This process's command line as a person typed it: `ragate serve --port 2024`, `python -m uvicorn
    graph.entrypoints.langserve_app:app ...` (a `-c` program's code is left out)."""
    orig = list(getattr(sys, "orig_argv", None) or [])
    argv = [Path(sys.argv[0]).name if sys.argv and sys.argv[0] else "python", *sys.argv[1:]]
    for i, arg in enumerate(orig[1:], start=1):
        if arg in ("-m", "-c") and i + 1 < len(orig):
            argv = [Path(orig[0]).name, arg, orig[i + 1] if arg == "-m" else "…", *orig[i + 2:]]
            break
        if not arg.startswith("-"):
            break  # a script: sys.argv names it
    command = shlex.join(argv)
    return command if len(command) <= _MAX_COMMAND_CHARS else command[:_MAX_COMMAND_CHARS - 1] + "…"


def _on_behalf(holder: Holder | None) -> bool:
    """Whether the holder holds the folder for this process: it is this process (a lock kept across
    execve), or the `ragate serve` that started this process's server."""
    if holder is None or holder.pid is None:
        return False
    if holder.pid == os.getpid():
        return True
    try:
        return holder.pid == int(settings.text(SERVE_PID_SETTING) or 0)
    except ValueError:
        return False


def _take(folder: Path) -> _Claim:
    """Lock `folder` for this process; DataFolderBusy when another process holds it."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd = os.open(lock_path(folder), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    except OSError as exc:
        raise ProviderError(f"data folder {folder} cannot be used: {exc.strerror or exc}") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        os.close(fd)
        if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
            raise ProviderError(f"data folder {folder} cannot be locked: {exc.strerror or exc}") from None
        holder = _read_holder(lock_path(folder))
        if _on_behalf(holder):
            return _Claim(fd=None)
        raise DataFolderBusy(folder, holder) from None
    record = {"pid": os.getpid(), "command": _this_command(),
              "since": datetime.now().astimezone().isoformat(timespec="seconds")}
    os.ftruncate(fd, 0)
    os.pwrite(fd, (json.dumps(record, ensure_ascii=False) + "\n").encode("utf-8"), 0)
    return _Claim(fd=fd)


def claim(folder: Path | str) -> None:
    """Take `folder` for this process, or DataFolderBusy (a ProviderError) naming who holds it.
    Claims in one process add up; each is given back with `release`."""
    key = _key(folder)
    with _lock:
        held = _claims.get(key)
        if held is None:
            held = _claims[key] = _take(key)
        held.count += 1


def release(folder: Path | str) -> None:
    """Give back one claim; the folder is let go with the last one."""
    key = _key(folder)
    with _lock:
        held = _claims.get(key)
        if held is None:
            return
        held.count -= 1
        if held.count <= 0:
            del _claims[key]
            if held.fd is not None:
                os.close(held.fd)  # closing the only descriptor of the lock releases it


def claimed(folder: Path | str) -> bool:
    """Whether this process holds `folder` (itself, or through the process that started it)."""
    return _key(folder) in _claims


def keep_across_exec(folder: Path | str) -> None:
    """The claim on `folder` survives `os.execve`: the program this process becomes holds it, under
    the same pid the lock file names."""
    with _lock:
        held = _claims.get(_key(folder))
        if held is None or held.fd is None:
            raise RuntimeError(f"data folder {folder} is not claimed by this process")
        os.set_inheritable(held.fd, True)
