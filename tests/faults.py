"""Fault injection for tests/test_faults.py: what each failing part of ragate's stack can do to a run.

* `FaultyQdrant`: the Qdrant REST test server (tests/qdrant_server.py) that can also answer a request
  with bytes that are not Qdrant's reply (broken JSON, a wrong envelope, NaN scores, unknown point
  ids) or hang up without answering. Its own `fail_next` / `delay_next` give 5xx and slow answers.
* `FaultyIndex`: a `VectorIndex` wrapped so that one of its reads (search, fetch, values) raises,
  sleeps, or returns garbage; the embedded engine behind it is the real one.
* `drip_chat`: an OpenAI chat stream whose tokens trickle in (each one sooner than the client's
  read timeout, the whole answer far later): a slow model the per-read timeout does not catch.
"""

from __future__ import annotations

import json
import threading
import time
import weakref
from collections import deque
from dataclasses import dataclass
from typing import Any

from qdrant_server import QdrantTestServer, _RequestHandler
from scripted_server import Reply, _Response

from graph.providers.vectorstore import HitFeatures, SearchHit

# --- the Qdrant server path -----------------------------------------------------------------------


@dataclass
class _Rewrite:
    remaining: int
    path: str
    body: bytes | None  # None: hang up without answering


class _FaultyHandler(_RequestHandler):
    def _send(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        rewrite = self.server.owner._take_rewrite(self.path.split("?")[0])
        if rewrite is None:
            return super()._send(status, payload, headers)
        if rewrite.body is None:
            return  # the connection closes with no answer
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(rewrite.body)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(rewrite.body)
        self.wfile.flush()


class FaultyQdrant(QdrantTestServer):
    """`QdrantTestServer` whose next answers to a path can be replaced by garbage or a hang-up. The
    request is still served by the engine (writes happen), only the reply is lost."""

    handler_class = _FaultyHandler

    def __init__(self) -> None:
        super().__init__()
        self._rewrites: deque[_Rewrite] = deque()

    def garbage_next(self, n: int, path: str, body: bytes | str) -> FaultyQdrant:
        with self._lock:
            self._rewrites.append(_Rewrite(n, path, body.encode() if isinstance(body, str) else body))
        return self

    def hangup_next(self, n: int, path: str) -> FaultyQdrant:
        with self._lock:
            self._rewrites.append(_Rewrite(n, path, None))
        return self

    def reset(self) -> FaultyQdrant:
        super().reset()
        with self._lock:
            self._rewrites.clear()
        return self

    def _take_rewrite(self, path: str) -> _Rewrite | None:
        with self._lock:
            for rewrite in self._rewrites:
                if path.rstrip("/").endswith(rewrite.path):
                    rewrite.remaining -= 1
                    if rewrite.remaining <= 0:
                        self._rewrites.remove(rewrite)
                    return rewrite
        return None


def qdrant_points(n: int, *, score: Any = "NaN", first_id: int = 1) -> str:
    """A query batch reply whose lists hold points the collection does not have, scored `score`
    (written as is: NaN is not JSON, but Python's parser, and so the client's, reads it)."""
    points = ",".join(f'{{"id": {first_id + i}, "version": 0, "score": {score}}}' for i in range(n))
    return '{"result": [' + ",".join([f'{{"points": [{points}]}}'] * 8) + '], "status": "ok", "time": 0.0}'


# --- a VectorIndex that fails -------------------------------------------------------------------


GARBAGE_HITS = [
    SearchHit(point_id="123456789", score=float("nan"), rank=1),  # NaN score
    SearchHit(point_id="not-a-point", score=float("inf"), rank=2),  # infinite score
    SearchHit(point_id=None, score="high", rank="first"),  # type: ignore[arg-type]  # no id, no number
    SearchHit(point_id="123456788", score=0.5, rank=4),  # a usable id and score, of a point that does not exist
]
# Features of the wrong kind: a similarity that is no cosine, terms that are not a list of the question's,
# flags the request did not name.
GARBAGE_FEATURES = HitFeatures(similarity=7.5, matched_terms="abc", flags=["not-asked"])  # type: ignore[arg-type]
INTRUDER = {"docId": "globex-intruder", "text": "Globex: margem de 99,9% no inverno.", "brandId": "globex",
            "isApprovedForAI": "true", "status": "approved"}


class FaultyIndex:
    """Wraps a real index; `op` ("search", "features", "fetch" or "values") fails as `mode` says:
    "raise" (an engine error), "sleep" (`seconds`, then the real answer) or "garbage" (the real
    answer spoiled: malformed hits first; three candidates' features malformed; the first payload
    another tenant's, the second without text or document id; values that are not strings). Every fault is counted in `faults`; a sleep
    ends early on `release()` (so that no abandoned read outlives its test)."""

    _live: weakref.WeakSet[FaultyIndex] = weakref.WeakSet()

    def __init__(self, inner: Any, op: str, mode: str, seconds: float = 0.0):
        self.inner, self.op, self.mode, self.seconds = inner, op, mode, seconds
        self.faults = 0
        self._wake = threading.Event()
        FaultyIndex._live.add(self)

    @classmethod
    def release(cls) -> None:
        for index in list(cls._live):
            index._wake.set()

    # Its "sleep" fault waits with the GIL released: a read that hangs while other threads run, which a deadline
    # can stop waiting for (the embedded engine's own reads cannot hang that way: `READS_HOLD_GIL`).
    READS_HOLD_GIL = False

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def _call(self, name: str, *args: Any, **kwargs: Any) -> Any:
        if name != self.op:
            return getattr(self.inner, name)(*args, **kwargs)
        self.faults += 1
        if self.mode == "raise":
            raise RuntimeError(f"injected: the engine's {name} failed")
        if self.mode == "sleep":
            self._wake.wait(self.seconds)
            return getattr(self.inner, name)(*args, **kwargs)
        out = getattr(self.inner, name)(*args, **kwargs)
        if name == "search":
            dense, lexical = out
            return [*GARBAGE_HITS, *dense], [*GARBAGE_HITS, *lexical]
        if name == "features":
            return {**out, **{pid: GARBAGE_FEATURES for pid in list(out)[:3]}}
        if name == "fetch":
            ids = list(out)
            spoiled = dict(out)
            if ids:
                spoiled[ids[0]] = dict(INTRUDER)
            if len(ids) > 1:
                spoiled[ids[1]] = {**out[ids[1]], "text": None, "docId": 42}
            return spoiled
        return [None, 7, {"value": "x"}, *out]  # values

    def search(self, *args: Any, **kwargs: Any) -> Any:
        return self._call("search", *args, **kwargs)

    def features(self, *args: Any, **kwargs: Any) -> Any:
        return self._call("features", *args, **kwargs)

    def fetch(self, *args: Any, **kwargs: Any) -> Any:
        return self._call("fetch", *args, **kwargs)

    def values(self, *args: Any, **kwargs: Any) -> Any:
        return self._call("values", *args, **kwargs)


# --- a chat stream that trickles ------------------------------------------------------------------


def drip_chat(text: str, every_s: float, pieces: int) -> Reply:
    """A streamed chat answer of `pieces` SSE chunks of `text`, `every_s` seconds apart."""

    def build(req: dict | None) -> _Response:
        def events():
            head = {"id": "drip", "object": "chat.completion.chunk", "created": 0, "model": "drip"}
            yield b"data: " + json.dumps({**head, "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""},
                                                               "finish_reason": None}]}).encode() + b"\n\n"
            for i in range(pieces):
                time.sleep(every_s)
                piece = text if i == 0 else " ."
                yield b"data: " + json.dumps({**head, "choices": [{"index": 0, "delta": {"content": piece},
                                                                   "finish_reason": None}]}).encode() + b"\n\n"
            yield b"data: [DONE]\n\n"

        return _Response(200, {"Content-Type": "text/event-stream"}, events=events())

    return Reply("response", build)

