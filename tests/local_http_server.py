"""What the tests' HTTP servers (scripted_server.py, qdrant_server.py) share: a threaded server on
127.0.0.1 with a free port, served from a background thread, that joins its handler threads when it
stops (with a deadline) and records handler crashes in `errors` instead of printing them."""

from __future__ import annotations

import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self


class QuietHandler(BaseHTTPRequestHandler):
    """Base request handler: one request per connection, no log lines; `self.server.owner` is the
    `LocalHTTPServer`."""

    # HTTP/1.0: one request per connection, so no idle keep-alive threads linger at shutdown.
    protocol_version = "HTTP/1.0"
    timeout = 10  # a connection that never sends its request does not hold a thread forever
    server: OwnedHTTPServer

    def log_message(self, format: str, *args: Any) -> None:
        pass


class OwnedHTTPServer(ThreadingHTTPServer):
    """A threading server whose handlers reach the `LocalHTTPServer` that runs it as `self.server.owner`."""

    daemon_threads = True
    block_on_close = False  # LocalHTTPServer.stop() joins its handler threads itself, with a deadline
    request_queue_size = 128  # socketserver's 5 overflows under concurrent clients: a dropped SYN costs 1 s
    owner: LocalHTTPServer

    def process_request(self, request: Any, client_address: Any) -> None:
        t = threading.Thread(target=self.process_request_thread, args=(request, client_address),
                             name=f"{self.owner.thread_name}-{self.server_address[1]}-handler", daemon=True)
        with self.owner._lock:
            self.owner._threads = [x for x in self.owner._threads if x.is_alive()]
            self.owner._threads.append(t)
        t.start()

    def handle_error(self, request: Any, client_address: Any) -> None:
        exc = sys.exc_info()[1]
        if isinstance(exc, (BrokenPipeError, ConnectionResetError, ConnectionAbortedError, socket.timeout)):
            return  # the client went away (e.g. it timed out first)
        self.owner.errors.append(f"handler error: {type(exc).__name__}: {exc}")


class LocalHTTPServer:
    """Base class: set `handler_class` (its handlers reach this object as `self.server.owner`) and
    `thread_name`. Use as a context manager or call ``start()`` / ``stop()``. `_stopping` is set while
    stopping, so a handler that waits on it (a scripted delay) wakes up and drops its connection."""

    handler_class: type[BaseHTTPRequestHandler]
    thread_name = "test-server"

    def __init__(self) -> None:
        self._lock = threading.Lock()  # subclasses guard their own request log and scripts with it too
        self._threads: list[threading.Thread] = []
        self._stopping = threading.Event()
        self._httpd: OwnedHTTPServer | None = None
        self._serve_thread: threading.Thread | None = None
        self.errors: list[str] = []
        self.url = ""
        self.port = 0

    def start(self) -> Self:
        if self._httpd is not None:
            return self
        self._stopping.clear()
        httpd = OwnedHTTPServer(("127.0.0.1", 0), self.handler_class)
        httpd.owner = self
        self._httpd = httpd
        self.port = httpd.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self._serve_thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.01},
                                              name=f"{self.thread_name}-{self.port}", daemon=True)
        self._serve_thread.start()
        return self

    def stop(self, timeout: float = 5.0) -> None:
        """Stop serving, wake delayed handlers (they drop their connection), close the port and join the
        handler threads (at most `timeout` seconds in all)."""
        httpd = self._httpd
        if httpd is None:
            return
        self._stopping.set()
        httpd.shutdown()
        httpd.server_close()
        deadline = time.monotonic() + timeout
        if self._serve_thread is not None:
            self._serve_thread.join(max(0.0, deadline - time.monotonic()))
        with self._lock:
            threads = list(self._threads)
        for t in threads:
            t.join(max(0.0, deadline - time.monotonic()))
        self._httpd = None
        self._serve_thread = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
