"""ragate as an MCP tool: `/mcp` on the server (streamable HTTP), mounted by graph/entrypoints/http_app.py.

The protocol is the `mcp` package's (its low-level `Server` behind a `StreamableHTTPSessionManager`,
stateless, JSON responses); ragate decides three things:

* who is calling: the same API keys as every other route (`Authorization: Bearer KEY`, through the
  `authenticate` it is given: http_app's `Server.caller`, i.e. graph/governance/tenancy.py). No key
  or an unknown one is an HTTP 401 before any JSON-RPC is read; a keyless request passes only in
  local development mode, where the tool's `tenant` argument may name the tenant (default
  `RAGATE_TENANT`). With a key, the key's tenant is used and naming another is refused.
* what the tool takes and gives: one tool, `ragate`, whose input is /api/chat's body (`question`,
  `intent`, `entity`, `thread_id`, `tenant`, `context`, `correlation_id`) and whose result is the output
  contract (graph/output.py `to_output`, plus `thread_id`) as `structuredContent` and as one JSON text
  block, described by the tool's `outputSchema`;
* how it fails: input the caller must fix (a bad question, an unknown intent, a tenant the key may not
  read) is a tool error (`isError`) with /api/chat's message; a fault of ours is a tool error naming a
  reference to look for in the log. Never an HTTP 500, never a traceback, never the server's state.

The graph runs in-process through the `answer` coroutine it is given (http_app's: /api/chat's parsing,
admission and `Ragate.ask`), so runs made here share /api/chat's store, limits and records.

Stateless: every HTTP request gets a fresh transport, and its own session manager (the manager only
holds the task group the request's transport runs in), so the endpoint needs no lifespan hook from
whichever ASGI server hosts it.
"""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Awaitable, Callable, Iterable
from importlib import metadata
from typing import Any

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel.server import Server as McpServer
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.types import Receive, Scope, Send

from graph.governance.tenancy import CALLER_SETTABLE, AccessError, Caller
from graph.state import MAX_QUESTION_CHARS

log = logging.getLogger("ragate.mcp")

TOOL_NAME = "ragate"
CALLER_SCOPE_KEY = "ragate.caller"  # where the endpoint leaves the authenticated caller for the tool

Authenticate = Callable[[Request], Caller]
Answer = Callable[[Caller, dict[str, Any]], Awaitable[dict[str, Any]]]

DESCRIPTION = (
    "Ask ragate a question. It answers from your tenant's approved documents only, with [doc_id] citations, "
    "a coverage level (high/medium/low/none) and a judge's verdict (OK / WARNING / BLOCK); when the documents "
    "do not cover the question it says so and suggests rephrasings. The result is ragate's output contract: "
    "answer, direct_answer, citations_used, coverage_level, suggestions, verdict, sources (the documents it was composed from, "
    "with snippets and scores), request_id (for feedback and the debug record), thread_id, ..."
)

_NULLABLE_STRING = {"type": ["string", "null"]}

INPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "question": {"type": "string", "minLength": 1, "maxLength": MAX_QUESTION_CHARS,
                     "description": f"The question, in any language (at most {MAX_QUESTION_CHARS} characters)."},
        "thread_id": {"type": "string",
                      "description": "Continue a conversation: questions with the same thread_id (1-128 letters, "
                                     "digits, '.', '_', ':' or '-') see the thread's earlier turns (threads are "
                                     "per tenant)."},
        "intent": {"type": "string", "description": "The policy's intent for the question (inferred when left out)."},
        "entity": {"type": "string", "description": "The policy's entity route (its default when left out)."},
        "tenant": {"type": "string",
                   "description": "The tenant whose documents to read. With an API key it is the key's tenant and "
                                  "naming another is refused; without a key (a server in local development mode "
                                  "only) the tenant to read, default the server's RAGATE_TENANT."},
        "context": {"type": "object",
                    "description": "Per-request settings: " + ", ".join(CALLER_SETTABLE) + " (any Context field "
                                   "in local development mode), e.g. {\"top_n\": 3}."},
        "correlation_id": {"type": "string",
                           "description": "Your own id for this request (1-128 letters, digits, '.', '_', ':' or "
                                          "'-'), kept beside the request id the server gives it."},
    },
    "required": ["question"],
    "additionalProperties": False,
}

# graph/output.py `to_output` plus /api/chat's `thread_id`. Fields may be added to the contract (no
# additionalProperties: false), the ones here keep their types: MCP clients validate structuredContent
# against this schema.
_SOURCE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "id": {"type": "string"}, "docId": {"type": "string"}, "assetId": _NULLABLE_STRING,
        "assetName": _NULLABLE_STRING, "similarity": {"type": ["number", "null"]},
        "rerankScore": {"type": ["number", "null"]}, "rank": {"type": ["integer", "null"]},
        "metadata": {"type": "object"}, "snippet": {"type": "string"}, "scores": {"type": "object"},
    },
    "required": ["id", "docId", "snippet"],
}

OUTPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "request_id": {"type": "string", "description": "The id of this answer: rate it with it, look it up in "
                                                        "/ops/rag_debug/{request_id}."},
        "correlation_id": {**_NULLABLE_STRING, "description": "Your correlation_id, if you sent one."},
        "answer": {"type": "string", "description": "The judged answer, with [doc_id] citations."},
        "direct_answer": {**_NULLABLE_STRING, "description": "The short answer the answer opens with (a value, "
                                                             "date, name, yes/no; no citations), or null when the "
                                                             "documents support none."},
        "citations_used": {"type": "array", "items": {"type": "string"},
                           "description": "The documents the answer cites, each one retrieved for this question."},
        "coverage_level": {"enum": ["high", "medium", "low", "none"],
                           "description": "How well the documents cover the question."},
        "suggestions": {"type": "array", "items": {"type": "string"},
                        "description": "Rephrasings to try when the documents do not cover the question."},
        "verdict": {
            "type": "object",
            "properties": {
                "final_decision": {"enum": ["OK", "WARNING", "BLOCK", None]},
                "scores": {"type": "object", "additionalProperties": {"type": ["number", "null"]}},
                "reasoning": {"type": "object"},
                "checks": {"type": "array"},
            },
            "description": "The judge's verdict: OK, WARNING (answered with a caveat) or BLOCK (a safe response).",
        },
        "sources": {"type": "array", "items": _SOURCE_SCHEMA,
                    "description": "The retrieved documents, ranked: snippet, metadata and the scores that ranked them."},
        "rag": {"type": "object", "description": "The route decision: intent, entity, collections, filters, policy "
                                                 "version and digest, why retrieval was off if it was."},
        "sub_queries": {"type": "array", "items": {"type": "string"}},
        "decomposition": {"type": "object"},
        "memory": {"type": "object"},
        "timings_ms": {"type": "object", "additionalProperties": {"type": "number"}},
        "errors": {"type": "array", "items": {"type": "string"},
                   "description": "Degradations along the way (a provider that failed, ...)."},
        "language": _NULLABLE_STRING,
        "thread_id": _NULLABLE_STRING,
    },
    "required": ["request_id", "answer", "citations_used", "coverage_level", "verdict", "sources"],
}

TOOL = types.Tool(
    name=TOOL_NAME,
    title="Ask ragate",
    description=DESCRIPTION,
    input_schema=INPUT_SCHEMA,
    output_schema=OUTPUT_SCHEMA,
    # A question writes a request record and (on a thread) a turn: not read-only, but nothing is lost.
    annotations=types.ToolAnnotations(title="Ask ragate", read_only_hint=False, destructive_hint=False,
                                      idempotent_hint=False, open_world_hint=False),
)


def _version() -> str:
    try:
        return metadata.version("ragate")
    except metadata.PackageNotFoundError:
        return ""


def tool_error(message: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=message)], is_error=True)


def tool_result(output: dict[str, Any]) -> types.CallToolResult:
    text = json.dumps(output, ensure_ascii=False, default=str)
    # structuredContent is that same JSON (a value JSON has no type for, a date say, as the text has it).
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], structured_content=json.loads(text))


class McpEndpoint:
    """The ASGI app of `/mcp`: authenticates the request, then lets the MCP SDK speak the protocol.

    `authenticate(request)` returns the Caller or raises AccessError (run in a worker thread: it may
    read the key file); `answer(caller, arguments)` returns the output contract, raising one of
    `refusals` (exceptions with a `message`) for input the caller must fix. Arguments named in neither
    the input schema nor `accepted` (names `answer` takes, or refuses by name itself) are refused here."""

    def __init__(self, authenticate: Authenticate, answer: Answer, *, refusals: tuple[type[Exception], ...] = (),
                 accepted: Iterable[str] = ()):
        self.authenticate = authenticate
        self.answer = answer
        self.refusals = (AccessError, *refusals)
        self.accepted = frozenset(INPUT_SCHEMA["properties"]) | frozenset(accepted)
        self.server = McpServer(TOOL_NAME, version=_version(), title="ragate",
                                description="Governed answers from your tenant's documents, with citations.",
                                on_list_tools=self._list_tools, on_call_tool=self._call_tool)

    async def _list_tools(self, ctx: ServerRequestContext, params: types.PaginatedRequestParams | None
                          ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[TOOL])

    async def _call_tool(self, ctx: ServerRequestContext, params: types.CallToolRequestParams) -> types.CallToolResult:
        if params.name != TOOL_NAME:
            return tool_error(f"unknown tool {params.name!r}; this server has one tool, {TOOL_NAME!r}")
        arguments = dict(params.arguments or {})
        unknown = sorted(set(arguments) - self.accepted)
        if unknown:  # /api/chat's words for an unknown field
            return tool_error(f"unknown field(s): {', '.join(unknown)}; "
                              f"accepted: {', '.join(sorted(INPUT_SCHEMA['properties']))}")
        caller = ctx.request.scope.get(CALLER_SCOPE_KEY) if isinstance(ctx.request, Request) else None
        if not isinstance(caller, Caller):  # not through McpEndpoint.__call__: refuse rather than guess
            return tool_error("not authenticated")
        try:
            return tool_result(await self.answer(caller, arguments))
        except self.refusals as exc:
            return tool_error(getattr(exc, "message", None) or str(exc))
        except Exception:
            reference = uuid.uuid4().hex[:12]
            log.exception("ragate: MCP tools/call failed (reference %s)", reference)
            return tool_error(f"internal error (reference {reference} in the server log)")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope, receive)
        if request.method != "POST":
            # Stateless with JSON responses: no server-sent event stream to open (GET) and no session to
            # end (DELETE). Streamable HTTP lets a server answer those with 405; the SDK would instead
            # hold a GET stream open on which nothing is ever sent.
            await JSONResponse({"error": f"{request.method} is not served here: send MCP's JSON-RPC messages with "
                                         "POST (stateless, JSON responses)"}, 405, headers={"Allow": "POST"}
                               )(scope, receive, send)
            return
        try:
            caller = await run_in_threadpool(self.authenticate, request)
        except AccessError as exc:
            headers = {"WWW-Authenticate": "Bearer"} if exc.status == 401 else None
            await JSONResponse({"error": exc.message}, exc.status, headers=headers)(scope, receive, send)
            return
        scope[CALLER_SCOPE_KEY] = caller
        manager = StreamableHTTPSessionManager(self.server, json_response=True, stateless=True)
        async with manager.run():
            await manager.handle_request(scope, receive, send)
