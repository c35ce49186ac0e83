"""ragate over HTTP: the routes people and programs use, mounted into the LangGraph server.

`langgraph.json` mounts `app` (`"http": {"app": "./graph/http_app.py:app"}`), so one process
serves LangGraph's API (Studio, /runs, threads, the store) and these routes:

    GET  /                          the question page (graph/entrypoints/web/)
    GET  /api/session               who the credentials say you are (tenant, local development mode)
    POST /api/chat                  {question, intent?, entity?, thread_id?, correlation_id?, context?} -> the output contract
    POST /api/chat/stream           the same as server-sent events: `token`s, then one `result` (with sources)
    POST /api/feedback              {request_id, rating: up|down|1-5, comment?}
    GET  /ops/rag_debug/{id}        the request record the graph wrote for that request
    GET  /api/health                liveness without credentials
    *    /mcp                       the graph as the MCP tool `ragate` (graph/entrypoints/mcp_server.py)

The tenant comes from the caller's API key (graph/governance/tenancy.py), never from the body; a body that
names another tenant is refused. Bad input gets a 4xx whose message says what to fix; a 500 means
a fault of ours, and says the reference to look for in the log. A wrong method on these routes gets
405 with an `Allow` header. The app also runs on its own (`uvicorn graph.entrypoints.http_app:app`),
without the LangGraph server.

Request ids are the server's: the graph gives every request a new one (nodes/route_gate.py). A
caller that sends `request_id` to /api/chat gets 422 saying to send `correlation_id`, its own id
for the request, which is kept beside it (output, request record, log line) and never keys it.
"""

from __future__ import annotations

import collections
import contextlib
import json
import logging
import math
import re
import threading
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from typing import Any

import anyio
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response, StreamingResponse
from starlette.routing import Mount, Route, request_response
from starlette.staticfiles import StaticFiles

from graph import settings
from graph.assets import WEB_DIR
from graph.context import Context
from graph.entrypoints.api import Ragate
from graph.entrypoints.mcp_server import McpEndpoint
from graph.entrypoints.process import tune_garbage_collector
from graph.governance.audit import REQUESTS, namespace
from graph.governance.feedback import FeedbackError, UnknownRequestError, parse_rating
from graph.governance.tenancy import AccessError, Caller, KeyRing, caller_context, server_keyring
from graph.policy import PolicyError, load_policy
from graph.providers.data_folder import DataFolderBusy
from graph.state import (
    MAX_QUESTION_CHARS,
    REQUEST_ID_PATTERN,
    REQUEST_ID_REFUSED,
    QuestionError,
    check_correlation_id,
    check_question,
)

log = logging.getLogger("ragate.http")

MAX_BODY_BYTES = 64 * 1024
THREAD_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$")
REQUEST_ID_RE = re.compile(REQUEST_ID_PATTERN)
MAX_RUNS_SETTING = "RAGATE_MAX_CONCURRENT_RUNS"
SLOT_SECONDS_SETTING = "RAGATE_RUN_SLOT_SECONDS"
# Runs in the graph at once, waiting ones included: below anyio's default of 40 worker threads, which
# every other route's blocking call shares.
MAX_RUNS_IN_GRAPH = 32
CHAT_FIELDS = {"question", "intent", "entity", "thread_id", "tenant", "context", "correlation_id"}
# Fields a chat body may not hold, refused by name with what to send instead.
CHAT_REFUSED = {"request_id": REQUEST_ID_REFUSED}
# What a chat body may name: its fields, and the refused ones (parse_chat says what to send instead).
CHAT_BODY_FIELDS = CHAT_FIELDS | set(CHAT_REFUSED)
FEEDBACK_FIELDS = {"request_id", "rating", "comment", "tenant"}


def _max_concurrent_runs() -> int:
    """RAGATE_MAX_CONCURRENT_RUNS: graph runs /api/chat lets in at once (default in graph/settings.py);
    a bad value names the variable at start-up."""
    runs = settings.number(MAX_RUNS_SETTING)
    if not 1 <= runs <= 256:
        raise ValueError(f"{MAX_RUNS_SETTING}={runs!r}: expected an integer from 1 to 256")
    return runs


def _run_slot_seconds() -> float:
    """RAGATE_RUN_SLOT_SECONDS: how long a graph run holds one of the RAGATE_MAX_CONCURRENT_RUNS slots
    (default in graph/settings.py); a bad value names the variable at start-up."""
    seconds = settings.number(SLOT_SECONDS_SETTING)
    if not 0 < seconds <= 600:  # NaN too
        raise ValueError(f"{SLOT_SECONDS_SETTING}={seconds!r}: expected a number of seconds above 0, at most 600")
    return seconds


class RunAdmission:
    """Admits graph runs first come first served: at most `slots` runs that entered the graph less than
    `slot_seconds` ago, and at most `in_graph` runs in all.

    The graph is CPU-bound Python: twenty runs sharing one interpreter do not finish sooner than four,
    they all finish late (bench/RESULTS.md, "Load": p99 1.6 s with every request in the graph, 0.5 s
    with four). A run computes for tens of milliseconds; one still in the graph after `slot_seconds`
    is waiting on a provider (a chat model's answer, a timeout, a retry's back-off) and stops counting
    against the slots, or a few slow provider calls would hold every request behind them (bench/RESULTS.md,
    "Load with injected provider faults"). Not less than 1 s: with twenty clients a healthy run waits
    for the CPU inside the graph for up to ~0.75 s (graph time p99), and 0.5 s let those in too (p99 1.0
    s against 0.62 s at 1 s, bench/RESULTS.md "Load")."""

    def __init__(self, slots: int, slot_seconds: float, in_graph: int = MAX_RUNS_IN_GRAPH):
        self.slots, self.slot_seconds, self.in_graph = slots, slot_seconds, max(slots, in_graph)
        self._running: dict[object, float] = {}  # run -> when it entered the graph (anyio clock)
        self._queue: collections.deque[object] = collections.deque()
        self._changed: anyio.Event | None = None  # made in the event loop, on first wait

    def _busy(self, now: float) -> list[float]:
        """Entry times of the runs that still hold a slot."""
        return [t for t in self._running.values() if now - t < self.slot_seconds]

    def _wake(self) -> None:
        if self._changed is not None:
            self._changed.set()
            self._changed = None

    @contextlib.asynccontextmanager
    async def admitted(self) -> AsyncIterator[None]:
        run = object()
        self._queue.append(run)
        try:
            while True:
                now = anyio.current_time()
                busy = self._busy(now)
                head = self._queue[0] is run
                if head and len(busy) < self.slots and len(self._running) < self.in_graph:
                    break
                # The first in line also wakes when the oldest busy run's slot expires.
                wait = (min(busy) + self.slot_seconds - now) if head and busy and len(busy) >= self.slots else math.inf
                if self._changed is None:
                    self._changed = anyio.Event()
                changed = self._changed
                with anyio.move_on_after(max(wait, 0.001)):
                    await changed.wait()
        finally:
            self._queue.remove(run)  # admitted, or cancelled while waiting: either way out of the line
            self._wake()  # the next in line looks again
        self._running[run] = anyio.current_time()
        try:
            yield
        finally:
            del self._running[run]
            self._wake()


class BadRequest(Exception):
    """Input the caller must fix: `status` (400, 404, 413, 415, 422) and what to fix."""

    def __init__(self, status: int, message: str, field: str | None = None):
        super().__init__(message)
        self.status, self.message, self.field = status, message, field


def _error(status: int, message: str, *, headers: dict[str, str] | None = None, **extra: Any) -> JSONResponse:
    if status == 401:
        headers = {**(headers or {}), "WWW-Authenticate": "Bearer"}
    return JSONResponse({"error": message, **{k: v for k, v in extra.items() if v is not None}}, status, headers=headers)


@dataclass
class Server:
    """What the routes share: the key ring (the process's, unless one is given), the server's base
    context and one `Ragate` (opened on first use, so importing the app opens nothing)."""

    context: Context | None = None
    keyring: KeyRing | None = None
    max_concurrent_runs: int = field(default_factory=lambda: _max_concurrent_runs())
    run_slot_seconds: float = field(default_factory=lambda: _run_slot_seconds())

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._ragate = None
        if self.keyring is None:
            try:
                server_keyring()
            except AccessError as exc:  # said on every request instead of crashing the server
                log.error("ragate: %s", exc.message)

    @property
    def base_context(self) -> Context:
        return self.context or Context()

    @property
    def ragate(self):
        with self._lock:
            if self._ragate is None:
                self._ragate = Ragate(self.base_context)
            return self._ragate

    def caller(self, request: Request) -> Caller:
        return (self.keyring or server_keyring()).authenticate(request.headers.get("authorization"))

    def parse_chat(self, request: Request, data: dict[str, Any]) -> ChatRequest:
        return parse_chat(data, self.caller(request), self.base_context)

    def tenant_context(self, request: Request, data: dict[str, Any]) -> Context:
        """The context of a request that only needs the tenant (feedback, debug)."""
        caller = self.caller(request)
        tenant = _optional_str(data, "tenant", 64)
        try:
            return caller_context(caller, {"tenant": tenant} if tenant else {}, self.base_context)
        except ValueError as exc:
            raise BadRequest(422, str(exc)) from None


# --- input --------------------------------------------------------------------------------------


async def _json_body(request: Request, allowed: set[str]) -> dict[str, Any]:
    content_type = request.headers.get("content-type", "").split(";", 1)[0].strip().casefold()
    if content_type and content_type != "application/json":
        raise BadRequest(415, f"send the body as application/json, not {content_type}")
    body = await request.body()
    if len(body) > MAX_BODY_BYTES:
        raise BadRequest(413, f"the body is {len(body)} bytes; at most {MAX_BODY_BYTES} are accepted")
    try:
        data = json.loads(body.decode("utf-8")) if body.strip() else None
    except UnicodeDecodeError:
        raise BadRequest(400, "the body is not UTF-8 text") from None
    except json.JSONDecodeError as exc:
        raise BadRequest(400, f"the body is not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from None
    if not isinstance(data, dict):
        raise BadRequest(422, "the body must be a JSON object, e.g. {\"question\": \"...\"}")
    unknown = sorted(set(data) - allowed)
    if unknown:
        raise BadRequest(422, f"unknown field(s): {', '.join(unknown)}; accepted: {', '.join(sorted(allowed))}", unknown[0])
    return data


def _optional_str(data: dict[str, Any], name: str, limit: int = 200) -> str | None:
    value = data.get(name)
    if value is None:
        return None
    if not isinstance(value, str):
        raise BadRequest(422, f"{name} must be a string, not {type(value).__name__}", name)
    value = value.strip()
    if len(value) > limit:
        raise BadRequest(422, f"{name} is {len(value)} characters; at most {limit}", name)
    return value or None


def _question(data: dict[str, Any]) -> str:
    """The rule of every entry point (graph/state.py `check_question`): a JSON escape such as
    "\\ud800" (a lone surrogate) is refused here, not answered with a 500 when the output cannot
    be encoded."""
    try:
        return check_question(data.get("question"))
    except QuestionError as exc:
        raise BadRequest(exc.status, str(exc), "question") from None


def _check_request_id(request_id: str, name: str) -> str:
    if not REQUEST_ID_RE.match(request_id):
        raise BadRequest(422, f"{name} must be 1-128 letters, digits, '.', '_', ':' or '-'", "request_id")
    return request_id


def _known_routing(ctx: Context) -> tuple[set[str], set[str]] | None:
    """(intents, entities) the policy knows; None when the policy is broken (the graph then answers
    with retrieval disabled and says why, which is more useful than refusing the question)."""
    try:
        policy = load_policy(ctx.policy_path)
    except PolicyError:
        return None
    routing = policy.routing
    intents = set(routing.allow_intents) | set(routing.deny_intents) | {rule.intent for rule in routing.intent_rules}
    entities = set(policy.rag.entities) | {"default"}
    return intents, entities


@dataclass
class ChatRequest:
    question: str
    context: Context
    intent: str | None
    entity: str | None
    thread_id: str | None
    correlation_id: str | None


def parse_chat(data: dict[str, Any], caller: Caller, base: Context) -> ChatRequest:
    for name, message in CHAT_REFUSED.items():  # first: it is the one thing to fix, whatever else the body holds
        if name in data:
            raise BadRequest(422, message, name)
    question = _question(data)
    overrides = data.get("context")
    if overrides is not None and not isinstance(overrides, dict):
        raise BadRequest(422, "context must be an object of settings, e.g. {\"top_n\": 3}", "context")
    overrides = dict(overrides or {})
    if "tenant" in data:
        overrides["tenant"] = _optional_str(data, "tenant", 64)
    try:
        ctx = caller_context(caller, overrides, base)
    except ValueError as exc:
        raise BadRequest(422, str(exc), "context") from None
    intent, entity = _optional_str(data, "intent", 64), _optional_str(data, "entity", 64)
    known = _known_routing(ctx)
    if known is not None:
        if intent is not None and intent not in known[0]:
            raise BadRequest(422, f"unknown intent {intent!r}; the policy knows: {', '.join(sorted(known[0]))}", "intent")
        if entity is not None and entity not in known[1]:
            raise BadRequest(422, f"unknown entity {entity!r}; the policy knows: {', '.join(sorted(known[1]))}", "entity")
    thread_id = _optional_str(data, "thread_id", 128)
    if thread_id is not None and not THREAD_ID_RE.match(thread_id):
        raise BadRequest(422, "thread_id must be 1-128 letters, digits, '.', '_', ':' or '-', starting with a letter "
                              "or digit", "thread_id")
    try:
        correlation_id = check_correlation_id(data.get("correlation_id"))
    except QuestionError as exc:
        raise BadRequest(exc.status, str(exc), "correlation_id") from None
    return ChatRequest(question, ctx, intent, entity, thread_id, correlation_id)


# --- routes -------------------------------------------------------------------------------------


def _chat_output(output: dict[str, Any], thread_id: str | None) -> dict[str, Any]:
    return {**output, "thread_id": thread_id}


def _ask_kwargs(chat: ChatRequest) -> dict[str, Any]:
    return {"intent": chat.intent, "entity": chat.entity, "thread_id": chat.thread_id,
            "correlation_id": chat.correlation_id, "context": chat.context}


def _handles_errors(handler):
    """Turns BadRequest / AccessError into their 4xx (or a key-configuration 500) and anything else
    into a 500 that names a reference to look for in the log; the traceback stays in the log."""

    async def wrapped(request: Request) -> Response:
        try:
            return await handler(request)
        except BadRequest as exc:
            return _error(exc.status, exc.message, field=exc.field)
        except AccessError as exc:
            return _error(exc.status, exc.message)
        except DataFolderBusy as exc:  # another process holds the engine's folder: never an answer from nothing
            log.error("ragate: %s %s: %s", request.method, request.url.path, exc)
            return _error(503, DataFolderBusy.PUBLIC_REASON)
        except Exception:
            reference = uuid.uuid4().hex[:12]
            log.exception("ragate: %s %s failed (reference %s)", request.method, request.url.path, reference)
            return _error(500, f"internal error (reference {reference} in the server log)")

    wrapped.__name__ = handler.__name__
    return wrapped


class _OnlyAllowed:
    """The ASGI app of one of our routes: `methods` (and HEAD with GET) reach `handler`, any other
    method gets 405 with an `Allow` header. Starlette gives a function endpoint the methods it names
    and lets any other method through to whatever comes next: inside the LangGraph server, its own
    routes, which answer 404. An app (not a function) is matched on its path alone, so the wrong
    method ends here."""

    def __init__(self, handler, methods: list[str]):
        self.allowed = frozenset(methods) | ({"HEAD"} if "GET" in methods else frozenset())
        self.allow = ", ".join(sorted(self.allowed))
        self.app = request_response(handler)

    async def __call__(self, scope, receive, send) -> None:
        if scope["method"] in self.allowed:
            await self.app(scope, receive, send)
            return
        response = _error(405, f"{scope['method']} is not allowed on {scope['path']}; use {self.allow}",
                          headers={"Allow": self.allow})
        await response(scope, receive, send)


def _route(path: str, handler, methods: list[str]) -> Route:
    """A route of ours that answers every method (`_OnlyAllowed`): 405 with Allow for a wrong one."""
    return Route(path, _OnlyAllowed(handler, methods), name=handler.__name__)


# Long by nature: the routes are closures over one server and its run admission; each handler is a few lines.
def build_app(server: Server | None = None) -> Starlette:
    """The Starlette app around `server` (a default one: keys and context from the environment)."""
    tune_garbage_collector()  # the server's process
    server = server or Server()

    # Everything that may touch a file (the key file, the policy, the store, the graph) runs in a
    # worker thread: the event loop only reads bodies and writes responses (and the LangGraph dev
    # server refuses blocking calls on its loop).
    async def run_sync(fn, *args):
        return await run_in_threadpool(fn, *args)

    # Graph runs are admitted a few at a time, first come first served (RunAdmission says why).
    runs = RunAdmission(server.max_concurrent_runs, server.run_slot_seconds)

    async def run_graph(fn):
        async with runs.admitted():
            return await run_in_threadpool(fn)

    @_handles_errors
    async def session(request: Request) -> Response:
        caller = await run_sync(server.caller, request)
        return JSONResponse({"tenant": caller.tenant, "local_dev": caller.local_dev, "key_id": caller.key_id,
                             "max_question_chars": MAX_QUESTION_CHARS})

    async def answer(parsed: ChatRequest) -> dict[str, Any]:
        """One admitted graph run for a parsed chat request: what /api/chat and the MCP tool return."""
        output = await run_graph(lambda: server.ragate.ask(parsed.question, **_ask_kwargs(parsed)))
        return _chat_output(output, parsed.thread_id)

    @_handles_errors
    async def chat(request: Request) -> Response:
        data = await _json_body(request, CHAT_BODY_FIELDS)
        return JSONResponse(await answer(await run_sync(server.parse_chat, request, data)))

    @_handles_errors
    async def chat_stream(request: Request) -> Response:
        data = await _json_body(request, CHAT_BODY_FIELDS)
        parsed = await run_sync(server.parse_chat, request, data)
        ragate = await run_sync(lambda: server.ragate)

        def events() -> Iterator[str]:
            ids: dict[str, Any] = {"request_id": None, "correlation_id": parsed.correlation_id}
            try:
                for kind, item in ragate.stream(parsed.question, **_ask_kwargs(parsed)):
                    if kind == "start":  # the request id the graph gave it, as soon as it has one
                        ids = item
                        yield _sse("start", item)
                    elif kind == "token":
                        yield _sse("token", {"text": item})
                    else:
                        yield _sse("result", _chat_output(item, parsed.thread_id))
            except Exception:
                reference = uuid.uuid4().hex[:12]
                log.exception("ragate: streamed request %s (correlation id %s) failed (reference %s)",
                              ids["request_id"], ids["correlation_id"], reference)
                yield _sse("error", {"error": f"internal error (reference {reference} in the server log)",
                                     **{k: v for k, v in ids.items() if v is not None}})

        async def admitted_events() -> AsyncIterator[str]:
            async with runs.admitted():  # the whole stream is one graph run
                iterator = events()
                while (event := await run_in_threadpool(next, iterator, None)) is not None:
                    yield event

        return StreamingResponse(admitted_events(), media_type="text/event-stream",
                                 headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})

    @_handles_errors
    async def feedback(request: Request) -> Response:
        data = await _json_body(request, FEEDBACK_FIELDS)
        ctx = await run_sync(server.tenant_context, request, data)
        request_id = _optional_str(data, "request_id", 128)
        if not request_id:
            raise BadRequest(422, "request_id is required (the request_id of the answer you rate)", "request_id")
        rating = data.get("rating")
        if rating is None or isinstance(rating, (bool, list, dict, float)):
            raise BadRequest(422, "rating must be \"up\", \"down\" or an integer 1-5", "rating")
        try:
            parse_rating(rating)
        except FeedbackError as exc:
            raise BadRequest(422, str(exc), "rating") from None
        comment = data.get("comment")
        if comment is not None and not isinstance(comment, str):
            raise BadRequest(422, f"comment must be a string, not {type(comment).__name__}", "comment")
        try:
            stored = await run_sync(lambda: server.ragate.feedback(request_id, rating, comment, context=ctx))
        except UnknownRequestError as exc:
            raise BadRequest(404, str(exc), "request_id") from None
        except FeedbackError as exc:
            raise BadRequest(422, str(exc)) from None
        return JSONResponse(stored)

    @_handles_errors
    async def rag_debug(request: Request) -> Response:
        ctx = await run_sync(server.tenant_context, request, {"tenant": request.query_params.get("tenant")})
        request_id = _check_request_id(request.path_params["request_id"], "request id")
        item = await run_sync(lambda: server.ragate.store.get(namespace(REQUESTS, ctx.tenant), request_id))
        if item is None:
            raise BadRequest(404, f"unknown request id {request_id!r} for tenant {ctx.tenant!r}", "request_id")
        return JSONResponse(item.value)

    async def health(request: Request) -> Response:
        return JSONResponse({"ok": True})

    async def page(request: Request) -> Response:
        return FileResponse(WEB_DIR / "index.html", headers={"Cache-Control": "no-cache"})

    async def mcp_answer(caller: Caller, arguments: dict[str, Any]) -> dict[str, Any]:
        """The MCP tool (graph/entrypoints/mcp_server.py): /api/chat's parsing, admission and run."""
        return await answer(await run_sync(parse_chat, arguments, caller, server.base_context))

    routes = [
        Route("/", page, methods=["GET"]),
        # /api/* and /ops/*: a wrong method gets 405 with Allow (`_route`), also inside the LangGraph server.
        _route("/api/health", health, ["GET"]),
        _route("/api/session", session, ["GET"]),
        _route("/api/chat", chat, ["POST"]),
        _route("/api/chat/stream", chat_stream, ["POST"]),
        _route("/api/feedback", feedback, ["POST"]),
        _route("/ops/rag_debug/{request_id:str}", rag_debug, ["GET"]),
        # Ahead of the LangGraph server's own /mcp (custom routes come first), every method.
        Route("/mcp", McpEndpoint(server.caller, mcp_answer, refusals=(BadRequest,),
                                  accepted=CHAT_BODY_FIELDS)),
        Mount("/web", app=StaticFiles(directory=WEB_DIR, check_dir=False), name="web"),
    ]
    app = Starlette(routes=routes)
    app.state.ragate_server = server
    return app


def _sse(event: str, data: dict[str, Any]) -> str:
    return f"event: {event}\ndata: {json.dumps(data, ensure_ascii=False, default=str)}\n\n"


# What langgraph.json mounts: keys and context from the environment, opened on first request.
app = build_app()
