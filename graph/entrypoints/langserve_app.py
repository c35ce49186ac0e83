"""ragate over LangServe: the graph as a LangChain runnable at /rag.

    POST /rag/invoke           {"input": {"question": "..."}, "config": {...}?}  -> {"output": <output contract>}
    POST /rag/batch            {"inputs": [{...}, {...}]}                        -> {"output": [<contract>, ...]}
    POST /rag/stream           server-sent events: {"event": "node", "node": ...} per finished node,
                               {"event": "token", "text": ...} as a chat model writes the answer, and
                               last the output contract itself (what /invoke returns)
    POST /rag/stream_log       LangChain's run log
    GET  /rag/input_schema, /rag/output_schema, /rag/config_schema
    POST /ask/invoke, /ask/stream, /ask/stream_log   the same runs as one text a person reads (ReadableRagate:
                               the answer, coverage, verdict, direct answer, citations, request id)
    GET  /ask/playground/      LangServe's playground on /ask (/rag/playground/ leads there)
    GET  /health               liveness without credentials

Why a module of its own, in its own virtual environment: langserve 0.3 pins `sse-starlette<2`
while the LangGraph server (the `serve` / `test` extras) needs `sse-starlette>=2.1.3`, so the two
can never be installed together. This app imports only ragate's core and the `langserve` extra:

    python3 -m venv .venv-langserve && .venv-langserve/bin/pip install -e ".[langserve]"
    RAGATE_API_KEYS="acme-key-0001:acme" .venv-langserve/bin/uvicorn graph.entrypoints.langserve_app:app --port 8001
    # or the whole check: make test-langserve

A setting it cannot start with (a key under 8 characters, a tenant id that is not one, a provider
without its key, a data folder another process holds) ends it at start-up with ONE line on stderr
that names the setting and the rule, and exit status 3 (uvicorn's own for a failed start-up).

Who may read what is decided as everywhere else in ragate (graph/governance/tenancy.py):

* the tenant is the caller's API key's (`Authorization: Bearer KEY`; keys in RAGATE_API_KEYS /
  RAGATE_API_KEYS_FILE), never a field of the body: LangServe's `per_req_config_modifier`
  authenticates the request (401 without a known key, unless RAGATE_LOCAL_DEV=1, where a keyless
  request is served as RAGATE_TENANT) and puts the caller in `configurable.langgraph_auth_user`,
  where the graph itself reads it (`graph.runtime.tenant_binding.run_context` forces that tenant);
* `config.configurable` accepts only the per-request settings any caller may choose
  (`tenancy.CALLER_SETTABLE`: collections, k, top_n, ...); a tenant, a server setting (home,
  policy, providers) or a `langgraph_auth_user` of the client's own is refused with 422, and the
  other config keys (tags, metadata, ...) are dropped by LangServe (`config_keys`);
* the input is `question` (+ intent, entity, correlation_id, history) and nothing else: an unknown
  field, a missing question or a wrongly typed one is refused with 422 before anything runs. The
  server gives every request its id (the output's `request_id`); a body that sends a `request_id`
  is refused with a 422 that says to send `correlation_id` (an id of the caller's own) instead.

Each run uses the server's persistent store (RAGATE_HOME / RAGATE_MEMORY_URL, like the CLI and the
LangGraph server), so memory_shield writes the request record and the remembered answer under
the caller's tenant. With the embedded vector engine the data folder is this process's alone
(graph/providers/data_folder.py): taken at start-up, which is refused in one line naming the
process that holds it (`ragate serve` on the same RAGATE_HOME, say); a request that reaches the
app while it cannot open the engine gets 503 with that reason, never an answer from nothing. Beside
`ragate serve`, give it its own RAGATE_HOME, or have both use a Qdrant server.

LangServe runnables are stateless: no threads here (use /api/chat or the LangGraph server for a
thread's history; a stateless caller may send its own `history`).

The playground page needs no key, but the runs it starts do: in a browser it answers only when
the server runs with RAGATE_LOCAL_DEV=1 (your machine only). Its forms are drawn from the input and
config schemas, which say an optional field's type without "or null" (`drawable_schema`): the
playground's renderer knows no null type and would draw a blank page.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import sys
import threading
import typing
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import Any, Literal

import orjson
from fastapi import FastAPI, HTTPException, Request
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, RedirectResponse
from langchain_core.runnables import ConfigurableFieldSpec, Runnable, RunnableBinding, RunnableConfig
from langchain_core.runnables.config import patch_config
from langgraph.types import Send
from langserve import add_routes
from langserve.serialization import WellKnownLCSerializer
from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model, field_validator, model_validator
from pydantic_core import PydanticCustomError
from starlette.concurrency import run_in_threadpool

from graph.context import Context
from graph.entrypoints.api import open_memory_store
from graph.entrypoints.process import tune_garbage_collector
from graph.governance.tenancy import (
    AUTH_USER_KEY,
    CALLER_SETTABLE,
    AccessError,
    KeyConfigError,
    KeyRing,
    caller_context,
    caller_tenant,
    server_keyring,
)
from graph.graph import compile_graph
from graph.output import answer_report, to_output
from graph.providers.data_folder import DataFolderBusy
from graph.providers.persistence import PersistenceError
from graph.providers.persistence import close_all as close_stores
from graph.providers.resources import check_providers, hold_vector_engine
from graph.providers.specs import ProviderError
from graph.providers.vectorstore import CollectionError
from graph.providers.vectorstore import close_all as close_indexes
from graph.state import (
    CORRELATION_ID_PATTERN,
    MAX_QUESTION_CHARS,
    REQUEST_ID_PATTERN,
    REQUEST_ID_REFUSED,
    check_question,
)

log = logging.getLogger("ragate.langserve")

PATH = "/rag"
READABLE_PATH = "/ask"   # the same runs as a person reads them (ReadableRagate), and the playground
MAX_HISTORY_TURNS = 20
STREAM_MODES = ["updates", "messages", "values"]


# --- what a caller sends and receives -----------------------------------------------------------

NULL = {"type": "null"}


def drawable_schema(schema: dict[str, Any], _model: Any = None) -> None:
    """A model's JSON schema as LangServe's playground can draw it: an optional field is its type,
    not "its type or null" (the playground's form renderer knows no {"type": "null"} and draws a blank
    page), and has no `null` default (the form would start from a value its own check refuses).
    Only the schema changes: validation still takes a null or an absent value, and refuses the rest."""
    for prop in (schema.get("properties") or {}).values():
        options = prop.get("anyOf")
        if isinstance(options, list) and NULL in options:
            rest = [option for option in options if option != NULL]
            del prop["anyOf"]
            if len(rest) == 1:
                prop.update({k: v for k, v in rest[0].items() if k not in prop})
            else:
                prop["anyOf"] = rest
        if "default" in prop and prop["default"] is None:
            del prop["default"]


DRAWABLE = ConfigDict(json_schema_extra=drawable_schema)


class HistoryTurn(BaseModel):
    """One earlier exchange a stateless caller hands back (oldest first)."""

    model_config = ConfigDict(extra="forbid", **DRAWABLE)

    question: str = Field(max_length=MAX_QUESTION_CHARS)
    answer: str = Field(max_length=20_000)
    request_id: str | None = Field(None, pattern=REQUEST_ID_PATTERN)
    intent: str | None = Field(None, max_length=64)
    final_decision: Literal["OK", "WARNING", "BLOCK"] | None = None


class RagInput(BaseModel):
    """A question for ragate. There is no tenant here: the tenant is the caller's API key's. There is
    no request id either: the server gives every request a new one (the output's `request_id`); a
    caller tags a request with an id of its own as `correlation_id`."""

    model_config = ConfigDict(extra="forbid", title="RagInput", **DRAWABLE)

    # Its limits are checked by check_question, which says what is wrong as /api/chat does ("question is
    # empty"); the schema still shows them to forms and clients.
    question: str = Field(description="The question, in Portuguese or English.",
                          json_schema_extra={"minLength": 1, "maxLength": MAX_QUESTION_CHARS})
    intent: str | None = Field(None, max_length=64,
                                  description="An intent of the policy (e.g. sales); inferred from the question when absent.")
    entity: str | None = Field(None, max_length=64, description="An entity profile of the policy.")
    correlation_id: str | None = Field(None, pattern=CORRELATION_ID_PATTERN,
                                          description="An id of yours for this request, kept beside it (1-128 letters, "
                                                      "digits, '.', '_', ':', '-'); the server assigns the request_id.")
    history: list[HistoryTurn] | None = Field(None, max_length=MAX_HISTORY_TURNS,
                                                 description="Earlier turns of a conversation, oldest first.")

    @model_validator(mode="before")
    @classmethod
    def _no_request_id(cls, data: Any) -> Any:
        if isinstance(data, dict) and "request_id" in data:
            raise PydanticCustomError("request_id_refused", REQUEST_ID_REFUSED)
        return data

    @field_validator("question")
    @classmethod
    def _plain_question(cls, value: str) -> str:
        return check_question(value)  # the rule of every entry point; QuestionError is a ValueError


class Verdict(BaseModel):
    final_decision: Literal["OK", "WARNING", "BLOCK"] | None = None
    scores: dict[str, float] = Field(default_factory=dict, description="quality, utility, groundedness in 0-1")
    reasoning: dict[str, str] = Field(default_factory=dict)
    checks: list[dict[str, Any]] = Field(default_factory=list, description="per-claim checks")


class Source(BaseModel):
    id: str
    docId: str
    assetId: str | None = None
    assetName: str | None = None
    similarity: float | None = None
    rerankScore: float | None = None
    rank: int | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    snippet: str = ""
    scores: dict[str, Any] = Field(default_factory=dict)


class RagOutput(BaseModel):
    """The output contract (graph/output.py), the same as `ragate ask --json` and /api/chat."""

    model_config = ConfigDict(title="RagOutput")

    request_id: str | None = Field(None, description="The server's id of this request (feedback, /ops/rag_debug).")
    correlation_id: str | None = Field(None, description="The caller's own id of this request, when it sent one.")
    answer: str = Field("", description="The answer, each claim followed by [doc_id].")
    direct_answer: str | None = Field(None, description="The short answer the answer opens with (a value, date, "
                                                           "name, yes/no; no citations), or null when the "
                                                           "documents support none.")
    citations_used: list[str] = Field(default_factory=list, description="The ids the answer cites (all retrieved).")
    coverage_level: Literal["high", "medium", "low", "none"] = "none"
    suggestions: list[str] = Field(default_factory=list, description="Three refinements when coverage is low or none.")
    verdict: Verdict = Field(default_factory=Verdict)
    rag: dict[str, Any] = Field(default_factory=dict, description="The route record (intent, collections, filters...).")
    sub_queries: list[str] = Field(default_factory=list)
    decomposition: dict[str, Any] = Field(default_factory=dict)
    sources: list[Source] = Field(default_factory=list, description="The chunks the answer was composed from.")
    memory: dict[str, Any] = Field(default_factory=dict)
    timings_ms: dict[str, float] = Field(default_factory=dict)
    errors: list[str] = Field(default_factory=list)
    language: str | None = None


def _setting_fields() -> dict[str, tuple[Any, str]]:
    """`config.configurable`: the Context fields a caller may set (tenancy.CALLER_SETTABLE), each
    optional (absent: the server's), as {name: (annotation, description)}."""
    hints = typing.get_type_hints(Context)
    descriptions = Context.field_descriptions()
    fields = {name: (hints[name] | None, descriptions.get(name, "")) for name in CALLER_SETTABLE}
    if "retrieval_mode" in fields:
        fields["retrieval_mode"] = (Literal["hybrid", "dense", "lexical"] | None, descriptions["retrieval_mode"])
    return fields


SETTING_FIELDS = _setting_fields()


def _settings_model() -> type[BaseModel]:
    """The settings as a model that refuses anything else (an extra key is a 422)."""
    fields = {name: (annotation, Field(None, description=text)) for name, (annotation, text) in SETTING_FIELDS.items()}
    return create_model("RagSettings", __config__=ConfigDict(extra="forbid", **DRAWABLE), **fields)


RagSettings = _settings_model()
RagConfig = create_model("RagConfig", __config__=DRAWABLE, configurable=(RagSettings | None, Field(
    None, description="Per-request settings; the tenant and the server's settings are not among them.")))


# --- the runnable -------------------------------------------------------------------------------


class RagateRunnable(Runnable[dict, dict]):
    """ragate's compiled graph (with the server's persistent store) as a LangChain runnable:
    input `RagInput`, output the output contract. The run's `Context` is the server's, with the
    tenant of the authenticated caller (`configurable.langgraph_auth_user`, else the server's
    RAGATE_TENANT) and the caller's `CALLER_SETTABLE` settings from `configurable`."""

    name = "ragate"

    def __init__(self, context: Context | None = None, *, store: Any = None):
        self._context = context
        self._store = store
        self._graph = None
        self._lock = threading.Lock()

    # Opened on first use (or by the app's start-up), so importing this module opens nothing.
    @property
    def base_context(self) -> Context:
        with self._lock:
            if self._context is None:
                self._context = Context()
            return self._context

    @property
    def graph(self):
        ctx = self.base_context
        with self._lock:
            if self._graph is None:
                if self._store is None:
                    self._store = open_memory_store(ctx)
                self._graph = compile_graph(store=self._store)
            return self._graph

    # Types: LangServe builds /rag/input_schema, /rag/output_schema and /rag/config_schema from these.
    @property
    def InputType(self) -> type[RagInput]:  # noqa: N802 (LangChain's name)
        return RagInput

    @property
    def OutputType(self) -> type[RagOutput]:  # noqa: N802
        return RagOutput

    def get_input_schema(self, config: RunnableConfig | None = None) -> type[BaseModel]:
        return RagInput

    def get_output_schema(self, config: RunnableConfig | None = None) -> type[BaseModel]:
        return RagOutput

    @property
    def config_specs(self) -> list[ConfigurableFieldSpec]:
        """The settings for /rag/config_schema and the playground's form."""
        return [ConfigurableFieldSpec(id=name, annotation=annotation, name=name, description=text, default=None)
                for name, (annotation, text) in SETTING_FIELDS.items()]

    def config_schema(self, *, include: typing.Sequence[str] | None = None) -> type[BaseModel]:
        """What LangServe validates a request's config with: RagSettings, extra keys refused."""
        return RagConfig if "configurable" in (include or ()) else create_model("RagConfig")

    def with_config(self, config: RunnableConfig | None = None, **kwargs: Any) -> Runnable[dict, dict]:
        """LangServe's /rag/config_schema and playground describe the config of `with_config(...)`:
        that binding describes it as this runnable does (RagConfig)."""
        return BoundRagate(bound=self, config=typing.cast(RunnableConfig, {**(config or {}), **kwargs}), kwargs={})

    # What one run gets.
    def context_for(self, config: RunnableConfig | None) -> Context:
        configurable = (config or {}).get("configurable") or {}
        settings = {k: v for k in CALLER_SETTABLE if (v := configurable.get(k)) is not None}
        tenant = caller_tenant(configurable) or self.base_context.tenant
        return dataclasses.replace(self.base_context, tenant=tenant, **settings)

    @staticmethod
    def payload(value: Any) -> dict[str, Any]:
        """The graph's input: validated again here, so in-process callers get LangServe's checks."""
        model = value if isinstance(value, RagInput) else RagInput.model_validate(value)
        return model.model_dump(exclude_none=True)

    @staticmethod
    def _graph_config(config: RunnableConfig, run_manager: Any) -> RunnableConfig:
        """The graph runs as this run's child: tracers (and /stream_log's run log) see every node."""
        return patch_config(config, callbacks=run_manager.get_child())

    @staticmethod
    def _chunk(mode: str, item: Any) -> Iterator[dict[str, Any]]:
        """Stream chunks of one graph event: finished nodes and the chat model's tokens."""
        if mode == "updates":
            for node in item:
                if not node.startswith("__"):
                    yield {"event": "node", "node": node}
        elif mode == "messages":
            message, meta = item
            if meta.get("langgraph_node") == "compose" and message.text:
                yield {"event": "token", "text": message.text}

    # invoke / ainvoke: the output contract.
    def _invoke(self, value: Any, run_manager: Any, config: RunnableConfig) -> dict[str, Any]:
        state = self.graph.invoke(self.payload(value), self._graph_config(config, run_manager),
                                  context=self.context_for(config))
        return to_output(state)

    async def _ainvoke(self, value: Any, run_manager: Any, config: RunnableConfig) -> dict[str, Any]:
        graph, ctx = await run_in_threadpool(lambda: (self.graph, self.context_for(config)))
        state = await graph.ainvoke(self.payload(value), self._graph_config(config, run_manager), context=ctx)
        return to_output(state)

    def invoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> dict[str, Any]:
        return self._call_with_config(self._invoke, input, config, **kwargs)

    async def ainvoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> dict[str, Any]:
        return await self._acall_with_config(self._ainvoke, input, config, **kwargs)

    # stream / astream: node and token events, then the output contract.
    def _stream(self, inputs: Iterator[Any], run_manager: Any, config: RunnableConfig) -> Iterator[dict[str, Any]]:
        for value in inputs:
            final: dict[str, Any] = {}
            for mode, item in self.graph.stream(self.payload(value), self._graph_config(config, run_manager),
                                                context=self.context_for(config), stream_mode=STREAM_MODES):
                if mode == "values":
                    final = item
                yield from self._chunk(mode, item)
            yield to_output(final)

    async def _astream(self, inputs: AsyncIterator[Any], run_manager: Any,
                       config: RunnableConfig) -> AsyncIterator[dict[str, Any]]:
        graph, ctx = await run_in_threadpool(lambda: (self.graph, self.context_for(config)))
        async for value in inputs:
            final: dict[str, Any] = {}
            async for mode, item in graph.astream(self.payload(value), self._graph_config(config, run_manager),
                                                  context=ctx, stream_mode=STREAM_MODES):
                if mode == "values":
                    final = item
                for chunk in self._chunk(mode, item):
                    yield chunk
            yield to_output(final)

    def stream(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Iterator[dict[str, Any]]:
        yield from self._transform_stream_with_config(iter([input]), self._stream, config, **kwargs)

    async def astream(self, input: Any, config: RunnableConfig | None = None,
                      **kwargs: Any) -> AsyncIterator[dict[str, Any]]:
        async def one() -> AsyncIterator[Any]:
            yield input

        async for chunk in self._atransform_stream_with_config(one(), self._astream, config, **kwargs):
            yield chunk


class BoundRagate(RunnableBinding):
    """RagateRunnable with a config. A plain RunnableBinding would build its config schema from
    `config_specs` (every setting "its type or null", which the playground cannot draw); this one
    asks the runnable (RagConfig)."""

    def config_schema(self, *, include: typing.Sequence[str] | None = None) -> type[BaseModel]:
        return self.bound.config_schema(include=include)


class ReadableRagate(RagateRunnable):
    """The runs of `answers` (the /rag runnable: one graph, one store) answered as a person reads them
    (graph/output.py `answer_report`: the answer, coverage and verdict, the direct answer and why one was
    withheld, the citations, the request id), as one text. This is what the playground shows: it joins
    everything a run streams, and /rag's node events and output contract made a page of raw JSON 14,600 px
    tall with the answer somewhere inside."""

    name = "ragate-readable"

    def __init__(self, answers: RagateRunnable):
        super().__init__()
        self.answers = answers

    @property
    def base_context(self) -> Context:
        return self.answers.base_context

    @property
    def graph(self):
        return self.answers.graph

    @property
    def OutputType(self) -> type[str]:  # noqa: N802
        return str

    def get_output_schema(self, config: RunnableConfig | None = None) -> type[BaseModel]:
        return Runnable.get_output_schema(self, config)

    def _invoke(self, value: Any, run_manager: Any, config: RunnableConfig) -> str:  # type: ignore[override]
        return answer_report(super()._invoke(value, run_manager, config), with_direct=True)

    async def _ainvoke(self, value: Any, run_manager: Any, config: RunnableConfig) -> str:  # type: ignore[override]
        return answer_report(await super()._ainvoke(value, run_manager, config), with_direct=True)

    def _stream(self, inputs: Iterator[Any], run_manager: Any, config: RunnableConfig) -> Iterator[str]:  # type: ignore[override]
        for chunk in super()._stream(inputs, run_manager, config):
            if "event" not in chunk:  # the output contract, after the node and token events
                yield answer_report(chunk, with_direct=True)

    async def _astream(self, inputs: AsyncIterator[Any], run_manager: Any,  # type: ignore[override]
                       config: RunnableConfig) -> AsyncIterator[str]:
        async for chunk in super()._astream(inputs, run_manager, config):
            if "event" not in chunk:
                yield answer_report(chunk, with_direct=True)


# --- authentication: LangServe's per-request config modifier --------------------------------------

runnable = RagateRunnable()
readable = ReadableRagate(runnable)
def engine_unavailable_reason(exc: DataFolderBusy) -> str:
    """What a caller is told when this process cannot open the engine: the reason, without the
    folder or the other process's command line (server-side details; the log has them)."""
    log.error("ragate langserve: %s", exc)
    return DataFolderBusy.PUBLIC_REASON


def _http_error(status: int, message: str) -> HTTPException:
    headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
    return HTTPException(status_code=status, detail=message, headers=headers)


def authorize(config: dict[str, Any], request: Request) -> dict[str, Any]:
    """LangServe's `per_req_config_modifier` for /invoke, /batch, /stream and /stream_log: the
    caller from the Authorization header, the request's settings checked (only CALLER_SETTABLE,
    and values the Context accepts), and the caller put where the graph reads it. Everything the
    client sent under `configurable` besides those settings is gone from the run's config.
    (Synchronous: LangServe runs it in its event loop; a key file is a small local read.)"""
    try:
        caller = server_keyring().authenticate(request.headers.get("authorization"))
        sent = config.get("configurable") or {}
        settings = {k: v for k, v in sent.items() if v is not None}
        refused = sorted(set(settings) - set(CALLER_SETTABLE))
        if refused:  # RagSettings already refuses these (422); kept for a server built without it
            raise AccessError(403, f"configurable field(s) {', '.join(refused)} cannot be set by a caller; "
                                   f"a caller may set only {', '.join(CALLER_SETTABLE)}")
        caller_context(caller, settings, runnable.base_context)  # the tenant resolves; the values are valid
        # The data folder is this process's (taken at start-up; taken now when the app started without
        # its lifespan): a process that cannot open the engine says why, never answers from nothing.
        hold_vector_engine(runnable.base_context)
    except AccessError as exc:
        raise _http_error(exc.status, exc.message) from None
    except DataFolderBusy as exc:
        raise _http_error(503, engine_unavailable_reason(exc)) from None
    except ValueError as exc:
        raise _http_error(422, str(exc)) from None
    return {**config, "configurable": {**settings, AUTH_USER_KEY: caller.as_auth_user()}}


# --- the app --------------------------------------------------------------------------------------


def _json_default(obj: Any) -> Any:
    if isinstance(obj, BaseModel):
        return obj.model_dump()
    if isinstance(obj, Send):  # the retrieve fan-out, in /stream_log's nested run log
        return {"send": obj.node, "arg": obj.arg}
    return repr(obj)


class RagateSerializer(WellKnownLCSerializer):
    """LangServe's serializer, with a fallback for objects it cannot write (langserve 0.3.3's own
    fallback raises, which cut /stream_log — the playground's stream — at the first LangGraph `Send`)."""

    def dumps(self, obj: Any) -> bytes:
        return orjson.dumps(obj, default=_json_default)


# uvicorn's exit status for an app that cannot start (gunicorn reads it from a worker as "failed to boot").
STARTUP_FAILED = 3


class StartupError(Exception):
    """A setting the app cannot start with, said in one line that names it."""


def start() -> None:
    """What the app checks and opens before its first request: the keys, the settings, the providers,
    the data folder (taken for this process, every collection opened), the store and the graph."""
    try:
        keys = KeyRing()  # read now: a broken entry names the setting and the rule
    except KeyConfigError as exc:
        raise StartupError(str(exc)) from None
    try:
        ctx = runnable.base_context
    except ValueError as exc:  # a RAGATE_* value that cannot be read, named
        raise StartupError(f"bad setting in the environment: {exc}") from None
    if not keys.configured and not keys.local_dev:
        log.warning("ragate langserve: no API keys (RAGATE_API_KEYS / RAGATE_API_KEYS_FILE): every request will "
                    "be refused; set RAGATE_LOCAL_DEV=1 to serve keyless requests on your machine")
    try:
        server_keyring()
        check_providers(ctx)
        hold_vector_engine(ctx, open_collections=True)
        runnable.graph  # noqa: B018 (opens the store, compiles the graph)
    except AccessError as exc:
        raise StartupError(exc.message) from None
    except (ProviderError, CollectionError, PersistenceError) as exc:  # DataFolderBusy is a ProviderError
        raise StartupError(str(exc)) from None


@asynccontextmanager
async def lifespan(_app: FastAPI):
    """Open everything before the first request. A setting the app cannot start with ends the process
    here with ONE line on stderr naming it (never a traceback) and exit status 3: raising would have
    Starlette hand uvicorn the whole traceback to print."""
    tune_garbage_collector()
    try:
        await run_in_threadpool(start)
    except StartupError as exc:
        print(f"ragate langserve: {exc}", file=sys.stderr, flush=True)
        close_indexes()
        os._exit(STARTUP_FAILED)
    try:
        yield
    finally:
        close_stores()
        close_indexes()


app = FastAPI(
    title="ragate (LangServe)",
    version="0.1.0",
    description="Governed, cited, judged answers from your documents: ragate's graph at /rag. "
                "Send 'Authorization: Bearer <API key>'; the key names the tenant.",
    lifespan=lifespan,
)


def refusal(errors: list) -> JSONResponse:
    """A refused input as /api/chat refuses one: 422, `error` one line saying what to fix, `field` the field
    it concerns; `detail` keeps FastAPI's list for clients that read it."""
    first = errors[0] if errors else "invalid input"
    if isinstance(first, str):  # LangServe's own ("Invalid JSON body")
        return JSONResponse({"error": first, "detail": errors}, status_code=422)
    place = [str(p) for p in first.get("loc", ()) if p != "body"]
    where, field = ".".join(place), (place[-1] if place else None)
    kind, message = first.get("type"), str(first.get("msg") or "invalid input")
    if kind == "value_error":      # check_question's own words ("question is empty")
        message = message.removeprefix("Value error, ")
    elif kind == "extra_forbidden":
        accepted = f"; accepted: {', '.join(RagInput.model_fields)}" if len(place) == 1 else ""
        message = f"unknown field: {where}{accepted}"
    elif kind == "missing":
        message = f"{where} is required"
    elif kind == "string_type":
        message = f"{where} must be a string, not {type(first.get('input')).__name__}"
    elif where and not message.startswith(field or ""):
        message = f"{where}: {message[:1].lower()}{message[1:]}"
    return JSONResponse({"error": message, "field": field, "detail": jsonable_encoder(errors)}, status_code=422)


@app.exception_handler(RequestValidationError)
async def refused_input(request: Request, exc: RequestValidationError):
    return refusal(list(exc.errors()))


@app.exception_handler(ValidationError)
async def invalid_input(request: Request, exc: ValidationError):
    """An input LangServe validated outside its own error translation (a bad item of /rag/batch
    raises pydantic's error there: a 500 in langserve 0.3.3) is the caller's 422 like the others."""
    if exc.title == RagInput.__name__:
        return refusal(exc.errors(include_url=False, include_context=False))
    log.error("ragate langserve: %s %s failed: %s", request.method, request.url.path, exc)
    return JSONResponse({"detail": "Internal Server Error"}, status_code=500)


@app.exception_handler(DataFolderBusy)
async def engine_unavailable(request: Request, exc: DataFolderBusy):
    """A run that finds the engine's data folder held elsewhere is a 503 with the reason: never a 200
    with an answer from nothing."""
    return JSONResponse({"detail": engine_unavailable_reason(exc)}, status_code=503)


@app.get("/health")
async def health() -> dict[str, str]:
    return {"status": "ok"}


@app.get(f"{PATH}/playground", include_in_schema=False)
@app.get(f"{PATH}/playground/", include_in_schema=False)
async def playground_moved() -> RedirectResponse:
    """/rag's own playground would show its stream as raw JSON: the readable one answers the same runs."""
    return RedirectResponse(f"{READABLE_PATH}/playground/")


# /rag: the output contract (invoke, batch, stream, stream_log, schemas); /ask: the same runs as a person reads
# them, and the playground.
ROUTES = {PATH: (runnable, ["invoke", "batch", "stream", "stream_log", "input_schema", "output_schema",
                            "config_schema", "config_hashes"]),
          READABLE_PATH: (readable, ["invoke", "stream", "stream_log", "playground", "input_schema", "output_schema",
                                     "config_schema", "config_hashes"])}
for path, (served, endpoints) in ROUTES.items():
    add_routes(
        app,
        served,
        path=path,
        config_keys=["configurable"],          # validated: RagSettings, then authorize()
        per_req_config_modifier=authorize,
        enabled_endpoints=endpoints,
        include_callback_events=False,
        enable_feedback_endpoint=False,
        enable_public_trace_link_endpoint=False,
        serializer=RagateSerializer(),
    )
