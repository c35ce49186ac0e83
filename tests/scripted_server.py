"""A scripted, stdlib-only HTTP server imitating the OpenAI chat/embeddings API and Cohere's v2
rerank API on 127.0.0.1 (free port), so tests can drive the REAL clients (`langchain_openai.ChatOpenAI`,
`langchain_openai.OpenAIEmbeddings`, `langchain_cohere.CohereRerank`) over real HTTP.

    from scripted_server import Reply, ScriptedServer   # tests/ is on sys.path under pytest

    with ScriptedServer() as srv:
        srv.script("/v1/chat/completions", Reply.status(429), Reply.chat("hello"))
        llm = ChatOpenAI(model="m", base_url=srv.openai_base_url, api_key="test", max_retries=1)
        assert llm.invoke("hi").content == "hello"
        assert len(srv.requests_to("/v1/chat/completions")) == 2

Base URLs the clients expect:
  * ChatOpenAI / OpenAIEmbeddings / openai.OpenAI: ``base_url=srv.openai_base_url`` ("http://127.0.0.1:PORT/v1");
    the SDK appends "chat/completions" / "embeddings".
  * CohereRerank / cohere.ClientV2: ``base_url=srv.url`` ("http://127.0.0.1:PORT"); the SDK appends "v2/rerank".

Routes answered by default (``script()`` / ``default()`` can add any other path, e.g. "/v1/models"):
  * POST /v1/chat/completions -> ``Reply.chat("ok")`` (streamed as SSE when the body has ``"stream": true``)
  * POST /v1/embeddings       -> ``Reply.embeddings()`` (feature-hashed word vectors; dims = request
                                 ``dimensions`` or 8; base64 float32 when ``encoding_format`` is "base64",
                                 which is what the openai SDK asks for unless told otherwise)
  * POST /v2/rerank           -> ``Reply.rerank()`` (word-overlap scores, sorted, honours ``top_n``)
  * anything else             -> 404 JSON

Every request is recorded in ``srv.requests`` as ``{"path", "method", "headers" (lower-case keys),
"json" (parsed body or None), "body" (raw bytes)}``. A reply that cannot be built (e.g. wrong number of
scripted rerank scores) answers 500 and is recorded in ``srv.errors``.

Notes on the clients (see the module's tests, tests/test_scripted_server.py):
  * openai retries 408/409/429/5xx and timeouts/connection errors (``max_retries`` default 2). A scripted
    retryable status gets ``retry-after-ms: 1`` unless ``headers`` are given, so retries are instant.
  * cohere.ClientV2 retries 408/409/429/5xx twice with ~1 s, ~2 s back-off (it ignores ``retry-after: 0``
    and, due to a bug, ``retry-after-ms``); CohereRerank exposes neither retries nor a timeout (default
    300 s). Use ``cohere_client(srv.url, max_retries=0, timeout=...)`` and pass it as ``CohereRerank(client=...)``.
  * Always build OpenAIEmbeddings with ``check_embedding_ctx_length=False`` (raw strings are sent; True
    tokenizes with tiktoken first, which downloads its BPE file, and sends token-id lists).
  * Pass base URLs explicitly: ChatOpenAI/OpenAIEmbeddings otherwise read OPENAI_API_BASE, then the SDK
    reads OPENAI_BASE_URL (and LANGSMITH_GATEWAY may redirect them); cohere.ClientV2 reads CO_API_URL once,
    when cohere.client_v2 is first imported (a default argument), while CohereRerank ignores it.

``reset()`` forgets queues, custom defaults, requests and errors, so one server can serve a whole module.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import struct
import time
from collections import deque
from collections.abc import Callable, Iterable
from typing import Any, Self
from urllib.parse import urlsplit

from local_http_server import LocalHTTPServer, QuietHandler

CHAT_PATH = "/v1/chat/completions"
EMBEDDINGS_PATH = "/v1/embeddings"
RERANK_PATH = "/v2/rerank"

_RETRYABLE = {408, 409, 429}
_WORD = re.compile(r"\w+", re.UNICODE)


def _words(text: str) -> list[str]:
    return _WORD.findall(str(text).lower())


def _f32(x: float) -> float:
    """Round to float32 so a vector is identical whether sent as JSON floats or base64 float32."""
    return struct.unpack("<f", struct.pack("<f", x))[0]


def hash_vector(text: Any, dims: int = 8) -> list[float]:
    """Deterministic unit vector for `text` by feature hashing its lower-cased words (signed buckets), so
    texts sharing words are closer. A text without words (or a token-id list) is hashed as a whole."""
    vec = [0.0] * dims
    words = _words(text) if isinstance(text, str) else []
    for w in words or [json.dumps(text, ensure_ascii=False)]:
        h = hashlib.sha256(w.encode("utf-8")).digest()
        bucket = int.from_bytes(h[:4], "little") % dims
        vec[bucket] += 1.0 if h[4] & 1 else -1.0
    norm = sum(v * v for v in vec) ** 0.5
    if norm == 0:  # all words cancelled out: fall back to a whole-text hash
        h = hashlib.sha256(json.dumps(text, ensure_ascii=False).encode("utf-8")).digest()
        vec = [((h[i % len(h)] / 255.0) - 0.5) for i in range(dims)]
        norm = sum(v * v for v in vec) ** 0.5 or 1.0
    return [_f32(v / norm) for v in vec]


def overlap_score(query: str, document: str) -> float:
    """Share of the query's distinct words found in the document, in [0, 1]."""
    q = set(_words(query))
    if not q:
        return 0.0
    return len(q & set(_words(document))) / len(q)


def _approx_tokens(obj: Any) -> int:
    if isinstance(obj, str):
        return len(_words(obj))
    if isinstance(obj, dict):
        return sum(_approx_tokens(v) for v in obj.values())
    if isinstance(obj, list):
        return sum(_approx_tokens(v) for v in obj)
    return 0


def _split(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


class _Response:
    """What a handler sends: status, headers and either one body or an iterable of SSE events."""

    def __init__(self, status: int, headers: dict[str, str], body: bytes = b"", events: Iterable[bytes] | None = None):
        self.status, self.headers, self.body, self.events = status, headers, body, events


class Reply:
    """One scripted answer. Build with the class methods; a Reply is consumed by one request."""

    def __init__(self, kind: str, build: Callable[[dict | None], _Response] | None = None, *,
                 seconds: float = 0.0, then: Reply | None = None):
        self.kind = kind          # "response", "delay" or "hangup"
        self._build = build
        self.seconds = seconds
        self.then = then

    def __repr__(self) -> str:
        return f"Reply({self.kind})"

    def build(self, request_json: dict | None) -> _Response:
        assert self._build is not None
        return self._build(request_json)

    # --- OpenAI chat completions ---------------------------------------------------------------

    @classmethod
    def chat(cls, content: str, *, model: str | None = None, finish_reason: str = "stop",
             chunk_chars: int = 5) -> Reply:
        """An assistant message with `content`. `model` None echoes the request's model. When the request
        has ``"stream": true`` the content is sent as SSE chunks of `chunk_chars` characters, then a final
        chunk with `finish_reason` (and a usage chunk if ``stream_options.include_usage``), then [DONE]."""
        return cls._chat({"role": "assistant", "content": content, "refusal": None}, model, finish_reason, chunk_chars)

    @classmethod
    def chat_json(cls, obj: Any, **kw: Any) -> Reply:
        """An assistant message whose content is ``json.dumps(obj)`` (json_mode / json_schema structured output)."""
        return cls.chat(json.dumps(obj), **kw)

    @classmethod
    def chat_tool_call(cls, name: str | None, arguments: dict | str, *, content: str | None = None,
                       call_id: str = "call_scripted_1", model: str | None = None, chunk_chars: int = 8) -> Reply:
        """An assistant message with one function tool call (finish_reason "tool_calls"), e.g. for
        ``with_structured_output(method="function_calling")``. `name` None takes the function named by the
        request's ``tool_choice``, else the first of its ``tools``. `arguments` is a dict (JSON-encoded)
        or a raw string."""
        args = arguments if isinstance(arguments, str) else json.dumps(arguments)

        def message(req: dict | None) -> dict:
            fn = name
            if fn is None:
                req = req or {}
                choice = req.get("tool_choice")
                if isinstance(choice, dict):
                    fn = (choice.get("function") or {}).get("name")
                if fn is None and req.get("tools"):
                    fn = (req["tools"][0].get("function") or {}).get("name")
                fn = fn or "scripted_tool"
            return {"role": "assistant", "content": content, "refusal": None, "tool_calls": [
                {"id": call_id, "type": "function", "function": {"name": fn, "arguments": args}}]}

        return cls._chat(message, model, "tool_calls", chunk_chars)

    @classmethod
    def _chat(cls, message: dict | Callable[[dict | None], dict], model: str | None, finish_reason: str,
              chunk_chars: int) -> Reply:
        def build(req: dict | None) -> _Response:
            req = req if isinstance(req, dict) else {}
            msg = message(req) if callable(message) else dict(message)
            mdl = model or req.get("model") or "scripted"
            created = int(time.time())
            cid = "chatcmpl-scripted-" + hashlib.sha1(json.dumps(req, sort_keys=True, default=str).encode()).hexdigest()[:12]
            prompt_tokens = _approx_tokens(req.get("messages"))
            completion_tokens = _approx_tokens(msg.get("content") or "") + _approx_tokens(msg.get("tool_calls") or [])
            usage = {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                     "total_tokens": prompt_tokens + completion_tokens}
            if not req.get("stream"):
                body = {"id": cid, "object": "chat.completion", "created": created, "model": mdl,
                        "choices": [{"index": 0, "message": msg, "logprobs": None, "finish_reason": finish_reason}],
                        "usage": usage, "system_fingerprint": "scripted"}
                return _json_response(200, body)

            def chunk(delta: dict, finish: str | None = None, **extra: Any) -> bytes:
                data = {"id": cid, "object": "chat.completion.chunk", "created": created, "model": mdl,
                        "system_fingerprint": "scripted",
                        "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}], **extra}
                return b"data: " + json.dumps(data).encode() + b"\n\n"

            events = [chunk({"role": "assistant", "content": "" if msg.get("content") is not None else None})]
            if msg.get("content"):
                events += [chunk({"content": piece}) for piece in _split(msg["content"], chunk_chars)]
            for i, call in enumerate(msg.get("tool_calls") or []):
                pieces = _split(call["function"]["arguments"], chunk_chars)
                events.append(chunk({"tool_calls": [{"index": i, "id": call["id"], "type": "function",
                                                     "function": {"name": call["function"]["name"], "arguments": ""}}]}))
                events += [chunk({"tool_calls": [{"index": i, "function": {"arguments": p}}]}) for p in pieces]
            events.append(chunk({}, finish_reason))
            if (req.get("stream_options") or {}).get("include_usage"):
                data = {"id": cid, "object": "chat.completion.chunk", "created": created, "model": mdl,
                        "choices": [], "usage": usage}
                events.append(b"data: " + json.dumps(data).encode() + b"\n\n")
            events.append(b"data: [DONE]\n\n")
            return _Response(200, {"Content-Type": "text/event-stream; charset=utf-8", "Cache-Control": "no-cache"},
                             events=events)

        return cls("response", build)

    # --- OpenAI embeddings -----------------------------------------------------------------------

    @classmethod
    def embeddings(cls, vectors: list[list[float]] | None = None, dims: int | None = None,
                   *, model: str | None = None) -> Reply:
        """Embeddings for the request's ``input``. `vectors` None: ``hash_vector(text, dims)`` per input, with
        dims = `dims`, else the request's ``dimensions``, else 8. Honours ``encoding_format`` ("base64" ->
        little-endian float32, as the real API: the openai SDK asks for base64 unless ``encoding_format`` is
        set, so scripted values come back rounded to float32)."""

        def build(req: dict | None) -> _Response:
            req = req if isinstance(req, dict) else {}
            inp = req.get("input")
            if isinstance(inp, str) or (isinstance(inp, list) and inp and isinstance(inp[0], int)):
                inputs: list = [inp]
            else:
                inputs = list(inp or [])
            if vectors is not None:
                vecs = [list(v) for v in vectors]
                if len(vecs) != len(inputs):
                    raise ValueError(f"scripted {len(vecs)} vectors for {len(inputs)} inputs")
            else:
                d = dims or req.get("dimensions") or 8
                vecs = [hash_vector(t, int(d)) for t in inputs]
            b64 = req.get("encoding_format") == "base64"
            data = []
            for i, v in enumerate(vecs):
                emb: Any = base64.b64encode(struct.pack(f"<{len(v)}f", *v)).decode() if b64 else v
                data.append({"object": "embedding", "index": i, "embedding": emb})
            tokens = _approx_tokens(inputs) or len(inputs)
            body = {"object": "list", "data": data, "model": model or req.get("model") or "scripted",
                    "usage": {"prompt_tokens": tokens, "total_tokens": tokens}}
            return _json_response(200, body)

        return cls("response", build)

    # --- Cohere rerank ---------------------------------------------------------------------------

    @classmethod
    def rerank(cls, scores: list[float] | None = None) -> Reply:
        """Cohere v2 rerank results: ``{"index", "relevance_score"}`` sorted by score (ties: lower index
        first), cut to the request's ``top_n``. `scores` (one per document, in request order) or None for
        ``overlap_score(query, document)``."""

        def build(req: dict | None) -> _Response:
            req = req if isinstance(req, dict) else {}
            docs = req.get("documents") or []
            docs = [d if isinstance(d, str) else json.dumps(d) for d in docs]
            if scores is not None:
                if len(scores) != len(docs):
                    raise ValueError(f"scripted {len(scores)} rerank scores for {len(docs)} documents")
                sc = [float(s) for s in scores]
            else:
                sc = [overlap_score(req.get("query") or "", d) for d in docs]
            order = sorted(range(len(docs)), key=lambda i: (-sc[i], i))
            top_n = req.get("top_n")
            if isinstance(top_n, int) and top_n >= 0:
                order = order[:top_n]
            body = {"id": "rerank-scripted", "results": [{"index": i, "relevance_score": sc[i]} for i in order],
                    "meta": {"api_version": {"version": "2"}, "billed_units": {"search_units": 1}}}
            return _json_response(200, body)

        return cls("response", build)

    # --- failures ---------------------------------------------------------------------------------

    @classmethod
    def status(cls, code: int, body: dict | str | bytes | None = None, headers: dict[str, str] | None = None) -> Reply:
        """An error (or any) status. `body` None: an OpenAI-style error JSON (also carrying Cohere's
        ``message``). `headers` None on a retryable status (408, 409, 429, 5xx) adds ``retry-after-ms: 1``
        so openai retries at once (cohere ignores it); pass ``headers={}`` to send none."""
        if body is None:
            msg = f"scripted status {code}"
            body = {"error": {"message": msg, "type": "scripted_error", "param": None, "code": str(code)}, "message": msg}
        if headers is None:
            headers = {"retry-after-ms": "1"} if (code in _RETRYABLE or code >= 500) else {}
        if isinstance(body, dict):
            raw, ctype = json.dumps(body).encode(), "application/json"
        else:
            raw = body.encode() if isinstance(body, str) else body
            ctype = "application/json" if raw[:1] in (b"{", b"[") else "text/plain; charset=utf-8"
        hdrs = {"Content-Type": ctype, **headers}
        return cls("response", lambda req: _Response(code, hdrs, raw))

    @classmethod
    def raw(cls, body: bytes | str, content_type: str = "application/json", status: int = 200,
            headers: dict[str, str] | None = None) -> Reply:
        """Exactly these bytes (broken JSON, garbage, a hand-written SSE stream with content_type
        "text/event-stream", ...)."""
        data = body.encode() if isinstance(body, str) else body
        hdrs = {"Content-Type": content_type, **(headers or {})}
        return cls("response", lambda req: _Response(status, hdrs, data))

    @classmethod
    def delay(cls, seconds: float, then: Reply) -> Reply:
        """Wait `seconds` before answering with `then`. Does not block other requests; ``stop()`` cuts the
        wait short (the connection is then closed without an answer)."""
        return cls("delay", seconds=seconds, then=then)

    @classmethod
    def hangup(cls) -> Reply:
        """Close the connection without answering (a connection error for the client)."""
        return cls("hangup")


def _json_response(status: int, body: Any) -> _Response:
    return _Response(status, {"Content-Type": "application/json"}, json.dumps(body).encode())


def _default_factories() -> dict[str, Callable[[dict | None], Reply]]:
    return {
        CHAT_PATH: lambda req: Reply.chat("ok"),
        EMBEDDINGS_PATH: lambda req: Reply.embeddings(),
        RERANK_PATH: lambda req: Reply.rerank(),
    }


class _Handler(QuietHandler):
    server_version = "ScriptedServer/1.0"

    def _serve(self) -> None:
        owner = self.server.owner
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            parsed = json.loads(raw) if raw else None
        except ValueError:
            parsed = None
        path = re.sub(r"/{2,}", "/", urlsplit(self.path).path) or "/"
        record = {"path": path, "method": self.command,
                  "headers": {k.lower(): v for k, v in self.headers.items()}, "json": parsed, "body": raw}
        reply = owner._next_reply(path, record)
        while reply is not None and reply.kind == "delay":
            if owner._stopping.wait(reply.seconds):
                return  # server stopping: drop the connection
            reply = reply.then
        if reply is None:
            resp = _json_response(404, {"error": {"message": f"no scripted route for {self.command} {path}",
                                                  "type": "not_found", "param": None, "code": "404"}})
        elif reply.kind == "hangup":
            return
        else:
            try:
                resp = reply.build(parsed)
            except Exception as e:  # noqa: BLE001 - report a broken script as a 500 and keep it
                owner.errors.append(f"{path}: {type(e).__name__}: {e}")
                resp = _json_response(500, {"error": {"message": f"scripted reply failed: {e}",
                                                      "type": "scripted_error", "param": None, "code": "500"}})
        self._send(resp)

    def _send(self, resp: _Response) -> None:
        self.send_response(resp.status)
        for k, v in resp.headers.items():
            self.send_header(k, v)
        self.send_header("Connection", "close")
        if resp.events is None:
            self.send_header("Content-Length", str(len(resp.body)))
            self.end_headers()
            self.wfile.write(resp.body)
        else:
            self.end_headers()  # no length: the body ends when the connection closes
            for event in resp.events:
                self.wfile.write(event)
                self.wfile.flush()
        self.wfile.flush()

    def _guarded(self) -> None:
        try:
            self._serve()
        except (TimeoutError, BrokenPipeError, ConnectionResetError, ConnectionAbortedError):
            pass  # the client went away (e.g. it timed out first)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _guarded


class ScriptedServer(LocalHTTPServer):
    """A threaded scripted API server on 127.0.0.1 with a free port. Use as a context manager or call
    ``start()`` / ``stop()``. See the module docstring for routes and base URLs."""

    handler_class = _Handler
    thread_name = "scripted-server"

    def __init__(self) -> None:
        super().__init__()
        self._queues: dict[str, deque[Reply]] = {}
        self._defaults: dict[str, Callable[[dict | None], Reply]] = _default_factories()
        self.requests: list[dict] = []

    @property
    def openai_base_url(self) -> str:
        return self.url + "/v1"

    # --- scripting ------------------------------------------------------------------------------

    def script(self, path: str, *responses: Reply) -> Self:
        """Queue replies for `path` (e.g. "/v1/chat/completions"); served in order, one per request, then
        the path's default."""
        with self._lock:
            self._queues.setdefault(path, deque()).extend(responses)
        return self

    def default(self, path: str, reply_factory: Callable[[dict | None], Reply] | None) -> Self:
        """Set the reply used for `path` when nothing is queued: ``reply_factory(request_json) -> Reply``
        (None removes the default; an unscripted path then answers 404)."""
        with self._lock:
            if reply_factory is None:
                self._defaults.pop(path, None)
            else:
                self._defaults[path] = reply_factory
        return self

    def reset(self) -> Self:
        """Forget queued replies, custom defaults, recorded requests and errors (to share one server
        between tests)."""
        with self._lock:
            self._queues.clear()
            self._defaults = _default_factories()
            self.requests.clear()
            self.errors.clear()
        return self

    def pending(self, path: str) -> int:
        """How many scripted replies for `path` have not been served yet."""
        with self._lock:
            return len(self._queues.get(path, ()))

    def requests_to(self, path: str) -> list[dict]:
        """The recorded requests for `path`, in arrival order."""
        with self._lock:
            return [r for r in self.requests if r["path"] == path]

    def _next_reply(self, path: str, record: dict) -> Reply | None:
        with self._lock:
            self.requests.append(record)
            queue = self._queues.get(path)
            if queue:
                return queue.popleft()
            factory = self._defaults.get(path)
        return factory(record["json"]) if factory is not None else None


def cohere_client(base_url: str, *, api_key: str = "test", max_retries: int = 0, timeout: float | None = None,
                  client_name: str = "langchain:partner") -> Any:
    """A ``cohere.ClientV2`` for `base_url` whose ``rerank`` uses `max_retries` (cohere's default is 2
    with ~1 s/2 s back-off) and `timeout` seconds (cohere's default 300). Pass it as
    ``CohereRerank(model=..., client=cohere_client(srv.url))``: CohereRerank has no retry/timeout knobs."""
    import cohere

    client = cohere.ClientV2(api_key, base_url=base_url, timeout=timeout, client_name=client_name)
    original = client.rerank

    def rerank(*args: Any, request_options: dict | None = None, **kwargs: Any) -> Any:
        return original(*args, request_options={"max_retries": max_retries, **(request_options or {})}, **kwargs)

    client.rerank = rerank
    return client
