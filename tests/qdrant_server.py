"""A Qdrant-REST-compatible HTTP server on 127.0.0.1 (free port) for tests of ragate's "Qdrant server" path.

Why it exists: no Qdrant server binary is reachable from this machine, yet what needs testing is the REAL
client stack ragate uses in production, ``qdrant_client.QdrantClient(url=..., api_key=...)`` over REST and
``langchain_qdrant.QdrantVectorStore`` on top of it: request building, (de)serialization, auth headers, error
handling. So this server speaks Qdrant's REST protocol over real HTTP, and the engine behind it is
qdrant-client's own local mode (``QdrantClient(location=":memory:")``), which implements Qdrant's search,
filter, fusion, IDF and facet semantics in Python. Request bodies are parsed with the pydantic models of
``qdrant_client.http.models`` (they are the REST schemas) and replies use the REST envelope
``{"result": ..., "status": "ok", "time": ...}``.

    from qdrant_server import QdrantTestServer   # tests/ is on sys.path under pytest

    with QdrantTestServer(api_key="secret") as srv:
        client = QdrantClient(url=srv.url, api_key="secret", prefer_grpc=False)
        client.create_collection("docs", vectors_config={"dense": VectorParams(size=8, distance=Distance.COSINE)})
        srv.fail_next(1, status=503)              # the next request gets a 503 (UnexpectedResponse)
        assert srv.requests_to("/collections/docs")

Routes (``{c}`` a collection; unknown routes answer 404, a body that does not validate 400, a missing
collection 404 with Qdrant's own message):
  * GET /                                  version info (the client probes it on construction)
  * GET /collections                       list
  * GET|PUT|PATCH|DELETE /collections/{c}  info / create / update (metadata, sparse vectors, hnsw) / drop
  * GET /collections/{c}/exists
  * PUT /collections/{c}/index, DELETE /collections/{c}/index/{field}   payload indexes
  * PUT /collections/{c}/points            upsert (``wait`` -> status "completed", else "acknowledged")
  * POST /collections/{c}/points           retrieve by ids
  * POST /collections/{c}/points/delete    by ids or by filter
  * POST /collections/{c}/points/batch     upserts and deletes, in order
  * POST /collections/{c}/points/query, /points/query/batch, /points/scroll, /points/count
  * POST /collections/{c}/facet

Where local mode differs from a server, and what this server does about it:
  * Payload indexes: local mode has no use for them (it scans). The server records each index so that
    ``payload_schema`` in the collection info is what a real server reports, and, like a real server,
    refuses a facet on a key without a keyword/integer/uuid/bool index and a scroll ``order_by`` on a key
    without an integer/float/datetime index.
  * ``hnsw_config`` given at creation or update is merged into the info's config (local mode reports
    fixed defaults). Other tuning (optimizers, quantization, shards, strict mode) is accepted and ignored;
    in particular filters on unindexed keys are allowed, as on a default server, whereas a strict-mode
    collection (Qdrant Cloud's default) answers 400 "Index required but not found".
  * Search params: local search is exact, so only ``idf`` is passed on; ``hnsw_ef``, ``exact`` & co. are
    dropped here because local mode would otherwise warn about them.
  * Collection ``metadata`` and sparse vectors with ``modifier: idf`` are kept by local mode itself.

Test hooks: ``requests`` / ``requests_to()`` (every request, as ``Request(method, path, body)``),
``fail_next()`` / ``delay_next()`` (fault injection), ``reset()``, ``errors`` (engine exceptions answered
500). Faults never hit ``GET /``: the client sends that version probe from a background thread when it is
constructed, so letting it consume a fault would make fault tests racy. For the same reason a client
built just before ``stop()`` may warn "Failed to obtain server version"; wait for its ``GET /`` in
``requests`` (or pass ``check_compatibility=False``) when a server is that short-lived.

Client note: ``QdrantClient(url="http://...", api_key=...)`` warns "Api key is used with an insecure
connection" (a UserWarning); filter it where a test passes a key.
"""

from __future__ import annotations

import importlib.metadata
import json
import re
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from http import HTTPStatus
from typing import Any, NamedTuple, Self
from urllib.parse import parse_qs, unquote, urlsplit

from local_http_server import LocalHTTPServer, QuietHandler
from pydantic import BaseModel, TypeAdapter, ValidationError
from qdrant_client import QdrantClient
from qdrant_client.http import models

# Index types a real server can facet on (its "map" indexes) and order by (its "range" indexes).
_FACET_INDEX_TYPES = {models.PayloadSchemaType.KEYWORD, models.PayloadSchemaType.INTEGER,
                      models.PayloadSchemaType.UUID, models.PayloadSchemaType.BOOL}
_ORDER_BY_INDEX_TYPES = {models.PayloadSchemaType.INTEGER, models.PayloadSchemaType.FLOAT,
                         models.PayloadSchemaType.DATETIME}
_INDEX_HELP = "Check https://qdrant.tech/documentation/concepts/indexing/#payload-index to see which payload schemas"


class Request(NamedTuple):
    """One request as received: method, path (URL-decoded, no query string) and parsed JSON body or None."""

    method: str
    path: str
    body: Any


class _ApiError(Exception):
    """Answered as ``{"status": {"error": message}}`` with `status`."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status, self.message = status, message


@dataclass
class _Fault:
    remaining: int
    path: str | None
    status: int = 0
    seconds: float = 0.0
    retry_after: int | None = None


@dataclass
class _Extras:
    """What a server reports about a collection but local mode does not keep."""

    hnsw: models.HnswConfigDiff | None = None
    indexes: dict[str, models.PayloadFieldSchema] = field(default_factory=dict)


@cache
def _adapter(type_: Any) -> TypeAdapter:
    return TypeAdapter(type_)


def _parse(type_: Any, body: Any) -> Any:
    return _adapter(type_).validate_python({} if body is None else body)


def _jsonable(obj: Any) -> Any:
    if isinstance(obj, BaseModel):
        # by_alias: fields such as MatchExcept.except_ travel as "except"; None fields are omitted, as the
        # server does (every Optional field of the REST models defaults to None).
        return obj.model_dump(mode="json", by_alias=True, exclude_none=True)
    if isinstance(obj, list):
        return [_jsonable(x) for x in obj]
    return obj


def _data_type(fs: models.PayloadFieldSchema) -> models.PayloadSchemaType:
    """The index type of a field schema, given either as a bare type or as index params."""
    return fs if isinstance(fs, models.PayloadSchemaType) else models.PayloadSchemaType(fs.type.value)


def _engine_search_params(params: models.SearchParams | None) -> models.SearchParams | None:
    # Local search is exact; `idf` (which scopes IDF statistics) is the only param that changes its results.
    if params is None or params.idf is None:
        return None
    return models.SearchParams(idf=params.idf)


_Op = Callable[..., Any]
_ROUTES: list[tuple[str, re.Pattern[str], _Op, bool]] = []


def _route(method: str, template: str, *, needs_collection: bool = True) -> Callable[[_Op], _Op]:
    """Register an engine method for `method` + `template` ("{c}" and "{field}" become path parameters).
    `needs_collection`: answer 404 before calling it when collection {c} does not exist."""
    pattern = re.compile("^" + re.sub(r"\{(\w+)\}", r"(?P<\1>[^/]+)", template) + "$")

    def register(fn: _Op) -> _Op:
        _ROUTES.append((method, pattern, fn, needs_collection))
        return fn

    return register


class _Engine:
    """The REST operations, each ``(body, query, **path_params) -> result``, over a local-mode client.
    Callers hold `lock`: local mode is not thread-safe."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.local = QdrantClient(location=":memory:")
        self.extras: dict[str, _Extras] = {}
        self._operation_id = 0

    def dispatch(self, method: str, path: str, body: Any, query: dict[str, str]) -> Any:
        for route_method, pattern, fn, needs_collection in _ROUTES:
            m = pattern.match(path)
            if m is None or route_method != method:
                continue
            params = {k: unquote(v) for k, v in m.groupdict().items()}
            if needs_collection and not self.local.collection_exists(params["c"]):
                raise _ApiError(404, f"Not found: Collection `{params['c']}` doesn't exist!")
            return fn(self, body, query, **params)
        raise _ApiError(404, f"Not found: no route for {method} {path}")

    def _update_result(self, query: dict[str, str]) -> models.UpdateResult:
        # Local mode applies every update at once; the status mirrors what a server reports for `wait`.
        self._operation_id += 1
        done = query.get("wait") == "true"
        return models.UpdateResult(operation_id=self._operation_id,
                                   status=models.UpdateStatus.COMPLETED if done else models.UpdateStatus.ACKNOWLEDGED)

    # --- service & collections ---------------------------------------------------------------------

    @_route("GET", "/collections", needs_collection=False)
    def list_collections(self, body: Any, query: dict[str, str]) -> Any:
        return self.local.get_collections()

    @_route("GET", "/collections/{c}/exists", needs_collection=False)
    def collection_exists(self, body: Any, query: dict[str, str], c: str) -> Any:
        return models.CollectionExistence(exists=self.local.collection_exists(c))

    @_route("PUT", "/collections/{c}", needs_collection=False)
    def create_collection(self, body: Any, query: dict[str, str], c: str) -> Any:
        req: models.CreateCollection = _parse(models.CreateCollection, body)
        if self.local.collection_exists(c):
            raise _ApiError(409, f"Wrong input: Collection `{c}` already exists!")
        self.local.create_collection(c, vectors_config=req.vectors, sparse_vectors_config=req.sparse_vectors,
                                     metadata=req.metadata)
        self.extras[c] = _Extras(hnsw=req.hnsw_config)
        return True

    @_route("PATCH", "/collections/{c}")
    def update_collection(self, body: Any, query: dict[str, str], c: str) -> Any:
        req: models.UpdateCollection = _parse(models.UpdateCollection, body)
        self.local.update_collection(c, vectors_config=req.vectors, sparse_vectors_config=req.sparse_vectors,
                                     metadata=req.metadata)
        if req.hnsw_config is not None:
            old = self.extras[c].hnsw.model_dump(exclude_none=True) if self.extras[c].hnsw else {}
            self.extras[c].hnsw = models.HnswConfigDiff(**old, **req.hnsw_config.model_dump(exclude_none=True))
        return True

    @_route("DELETE", "/collections/{c}", needs_collection=False)
    def delete_collection(self, body: Any, query: dict[str, str], c: str) -> Any:
        self.extras.pop(c, None)
        return self.local.delete_collection(c)

    @_route("GET", "/collections/{c}")
    def collection_info(self, body: Any, query: dict[str, str], c: str) -> Any:
        info = self.local.get_collection(c)
        extras = self.extras[c]
        hnsw = info.config.hnsw_config
        if extras.hnsw is not None:
            hnsw = models.HnswConfig(**{**hnsw.model_dump(), **extras.hnsw.model_dump(exclude_none=True)})
        schema = {name: self._index_info(c, name, fs) for name, fs in extras.indexes.items()}
        return info.model_copy(update={"payload_schema": schema,
                                       "config": info.config.model_copy(update={"hnsw_config": hnsw})})

    def _index_info(self, c: str, key: str, fs: models.PayloadFieldSchema) -> models.PayloadIndexInfo:
        has_value = models.Filter(must_not=[models.IsEmptyCondition(is_empty=models.PayloadField(key=key))])
        params = None if isinstance(fs, models.PayloadSchemaType) else fs
        return models.PayloadIndexInfo(data_type=_data_type(fs), params=params,
                                       points=self.local.count(c, count_filter=has_value).count)

    @_route("PUT", "/collections/{c}/index")
    def create_index(self, body: Any, query: dict[str, str], c: str) -> Any:
        req: models.CreateFieldIndex = _parse(models.CreateFieldIndex, body)
        if req.field_schema is None:
            raise _ApiError(400, f"Wrong input: field_schema is required to index `{req.field_name}`")
        self.extras[c].indexes[req.field_name] = req.field_schema  # a new index of a field replaces the old
        return self._update_result(query)

    @_route("DELETE", "/collections/{c}/index/{field}")
    def delete_index(self, body: Any, query: dict[str, str], c: str, field: str) -> Any:
        self.extras[c].indexes.pop(field, None)
        return self._update_result(query)

    # --- points ------------------------------------------------------------------------------------

    @_route("PUT", "/collections/{c}/points")
    def upsert(self, body: Any, query: dict[str, str], c: str) -> Any:
        req = _parse(models.PointInsertOperations, body)
        points = req.points if isinstance(req, models.PointsList) else req.batch
        self.local.upsert(c, points=points, update_filter=req.update_filter, update_mode=req.update_mode)
        return self._update_result(query)

    @_route("POST", "/collections/{c}/points/delete")
    def delete_points(self, body: Any, query: dict[str, str], c: str) -> Any:
        self.local.delete(c, points_selector=_parse(models.PointsSelector, body))
        return self._update_result(query)

    @_route("POST", "/collections/{c}/points/batch")
    def batch_update(self, body: Any, query: dict[str, str], c: str) -> Any:
        """Upserts and deletes, applied in order (other operations of the batch API answer 400)."""
        req: models.UpdateOperations = _parse(models.UpdateOperations, body)
        results = []
        for op in req.operations:
            if isinstance(op, models.UpsertOperation):
                points = op.upsert.points if isinstance(op.upsert, models.PointsList) else op.upsert.batch
                self.local.upsert(c, points=points)
            elif isinstance(op, models.DeleteOperation):
                self.local.delete(c, points_selector=op.delete)
            else:
                raise _ApiError(400, f"Wrong input: {type(op).__name__} is not served by this test server")
            results.append(self._update_result(query))
        return results

    @_route("POST", "/collections/{c}/points")
    def retrieve(self, body: Any, query: dict[str, str], c: str) -> Any:
        req: models.PointRequest = _parse(models.PointRequest, body)
        return self.local.retrieve(c, ids=req.ids, with_payload=True if req.with_payload is None else req.with_payload,
                                   with_vectors=req.with_vector or False)

    @_route("POST", "/collections/{c}/points/query")
    def query(self, body: Any, query: dict[str, str], c: str) -> Any:
        return self._query(c, _parse(models.QueryRequest, body))

    @_route("POST", "/collections/{c}/points/query/batch")
    def query_batch(self, body: Any, query: dict[str, str], c: str) -> Any:
        req: models.QueryRequestBatch = _parse(models.QueryRequestBatch, body)
        return [self._query(c, search) for search in req.searches]

    def _query(self, c: str, req: models.QueryRequest) -> models.QueryResponse:
        # REST defaults (limit 10, no payload, no vectors) differ from the Python API's (payload included).
        return self.local.query_points(
            c, query=req.query, using=req.using, prefetch=req.prefetch, query_filter=req.filter,
            search_params=_engine_search_params(req.params), limit=10 if req.limit is None else req.limit,
            offset=req.offset, with_payload=req.with_payload or False, with_vectors=req.with_vector or False,
            score_threshold=req.score_threshold, lookup_from=req.lookup_from)

    @_route("POST", "/collections/{c}/points/scroll")
    def scroll(self, body: Any, query: dict[str, str], c: str) -> Any:
        req: models.ScrollRequest = _parse(models.ScrollRequest, body)
        if req.order_by is not None:
            key = req.order_by if isinstance(req.order_by, str) else req.order_by.key
            self._require_index(c, key, _ORDER_BY_INDEX_TYPES,
                                f"No range index for `order_by` key: `{key}`. Please create one to use `order_by`. "
                                f"{_INDEX_HELP} support Range conditions")
        points, next_offset = self.local.scroll(
            c, scroll_filter=req.filter, limit=10 if req.limit is None else req.limit, order_by=req.order_by,
            offset=req.offset, with_payload=True if req.with_payload is None else req.with_payload,
            with_vectors=req.with_vector or False)
        return models.ScrollResult(points=points, next_page_offset=next_offset)

    @_route("POST", "/collections/{c}/points/count")
    def count(self, body: Any, query: dict[str, str], c: str) -> Any:
        req: models.CountRequest = _parse(models.CountRequest, body)
        return self.local.count(c, count_filter=req.filter, exact=True if req.exact is None else req.exact)

    @_route("POST", "/collections/{c}/facet")
    def facet(self, body: Any, query: dict[str, str], c: str) -> Any:
        req: models.FacetRequest = _parse(models.FacetRequest, body)
        self._require_index(c, req.key, _FACET_INDEX_TYPES,
                            f"No appropriate index for faceting: `{req.key}`. Please create one to facet on this "
                            f"field. {_INDEX_HELP} support Match conditions")
        return self.local.facet(c, key=req.key, facet_filter=req.filter, limit=10 if req.limit is None else req.limit,
                                exact=bool(req.exact))


    def _require_index(self, c: str, key: str, types: set[models.PayloadSchemaType], message: str) -> None:
        """What local mode skips: a server facets and orders only through a payload index of a fitting type
        (segment errors MissingMapIndexForFacet / MissingRangeIndexForOrderBy, both bad input)."""
        fs = self.extras[c].indexes.get(key)
        if fs is None or _data_type(fs) not in types:
            raise _ApiError(400, f"Wrong input: {message}")


def _phrase(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "Error"


class _RequestHandler(QuietHandler):
    server_version = "QdrantTestServer/1.0"

    def _serve(self) -> None:
        owner = self.server.owner
        started = time.perf_counter()
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        url = urlsplit(self.path)
        path = re.sub(r"/{2,}", "/", url.path).rstrip("/") or "/"
        query = {k: v[-1] for k, v in parse_qs(url.query).items()}
        body, bad_json = None, None
        try:
            body = json.loads(raw) if raw else None
        except ValueError as e:
            bad_json = e
        fault, delay = owner._record(Request(self.command, unquote(path), body))
        if delay is not None and owner._stopping.wait(delay.seconds):
            return  # server stopping: drop the connection
        if fault is not None:
            headers = {"Retry-After": str(fault.retry_after)} if fault.retry_after is not None else {}
            self._error(fault.status, f"{_phrase(fault.status)}: injected by QdrantTestServer", started, headers)
            return
        if self.command == "GET" and path == "/":  # no envelope, and open without a key, as on a server
            self._send(200, {"title": "qdrant - vector search engine", "version": owner.version})
            return
        if owner.api_key is not None and not self._authorized(owner.api_key):
            self._error(401, "Must provide an API key or an Authorization bearer token", started)
            return
        if bad_json is not None:
            self._error(400, f"Json deserialize error: {bad_json}", started)
            return
        engine = owner._engine
        try:
            with engine.lock:
                result = engine.dispatch(self.command, path, body, query)
        except _ApiError as e:
            self._error(e.status, e.message, started)
            return
        except ValidationError as e:  # before ValueError: pydantic's error is one
            self._error(400, f"Json deserialize error: {e}", started)
            return
        except ValueError as e:  # local mode's way of rejecting bad input (wrong dimension, bad vector name, ...)
            message = str(e)
            self._error(400, message if message.startswith("Wrong input") else f"Wrong input: {message}", started)
            return
        except Exception as e:  # noqa: BLE001 - a gap in local mode or a bug here: answer 500 and keep it
            owner.errors.append(f"{self.command} {path}: {type(e).__name__}: {e}")
            self._error(500, f"Service internal error: {type(e).__name__}: {e}", started)
            return
        self._send(200, {"result": _jsonable(result), "status": "ok", "time": time.perf_counter() - started})

    def _authorized(self, key: str) -> bool:
        # Qdrant accepts the key in `api-key` (what qdrant-client sends) or as a bearer token.
        return self.headers.get("api-key") == key or self.headers.get("Authorization") == f"Bearer {key}"

    def _error(self, status: int, message: str, started: float, headers: dict[str, str] | None = None) -> None:
        self._send(status, {"status": {"error": message}, "time": time.perf_counter() - started}, headers)

    def _send(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()

    def _guarded(self) -> None:
        try:
            self._serve()
        except (TimeoutError, BrokenPipeError, ConnectionResetError, ConnectionAbortedError):
            pass  # the client went away (e.g. it timed out first)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _guarded


class QdrantTestServer(LocalHTTPServer):
    """A threaded Qdrant REST server on 127.0.0.1 with a free port, backed by qdrant-client's local mode.
    Use as a context manager or call ``start()`` / ``stop()``; data lives as long as the object (a restart
    keeps it). See the module docstring for routes and differences from a real server.

    `api_key`: when set, every request but ``GET /`` must carry it (``api-key`` header or
    ``Authorization: Bearer``), else 401. `version`: what ``GET /`` reports; default the installed
    qdrant-client's version, so the client's compatibility probe never warns."""

    handler_class = _RequestHandler
    thread_name = "qdrant-test-server"

    def __init__(self, api_key: str | None = None, version: str | None = None) -> None:
        super().__init__()  # its lock guards requests, faults and threads (the engine has its own lock)
        self.api_key = api_key
        self.version = version or importlib.metadata.version("qdrant-client")
        self._engine = _Engine()
        self._fails: deque[_Fault] = deque()
        self._delays: deque[_Fault] = deque()
        self.requests: list[Request] = []

    # --- test hooks -----------------------------------------------------------------------------

    def requests_to(self, path_suffix: str, method: str | None = None) -> list[Request]:
        """Recorded requests whose path ends with `path_suffix` (and of `method`, if given), in arrival order."""
        with self._lock:
            return [r for r in self.requests if r.path.endswith(path_suffix) and method in (None, r.method)]

    def fail_next(self, n: int = 1, status: int = 503, *, path: str | None = None,
                  retry_after: int | None = None) -> Self:
        """The next `n` requests (whose path ends with `path`, if given) answer `status` with a Qdrant error
        body, before auth and without touching data. `retry_after` adds a Retry-After header (with 429 the
        client then raises ResourceExhaustedResponse instead of UnexpectedResponse)."""
        with self._lock:
            self._fails.append(_Fault(n, path, status=status, retry_after=retry_after))
        return self

    def delay_next(self, n: int, seconds: float, *, path: str | None = None) -> Self:
        """Hold the next `n` requests (whose path ends with `path`, if given) `seconds` before handling them;
        other requests are not blocked. ``stop()`` cuts the wait short and drops the connection."""
        with self._lock:
            self._delays.append(_Fault(n, path, seconds=seconds))
        return self

    def reset(self) -> Self:
        """Forget recorded requests, errors and pending faults; collections and points stay."""
        with self._lock:
            self.requests.clear()
            self.errors.clear()
            self._fails.clear()
            self._delays.clear()
        return self

    def _record(self, request: Request) -> tuple[_Fault | None, _Fault | None]:
        """Log `request` and take the fault and delay that apply to it, if any."""
        with self._lock:
            self.requests.append(request)
            if request.method == "GET" and request.path == "/":
                return None, None
            return self._take(self._fails, request.path), self._take(self._delays, request.path)

    @staticmethod
    def _take(queue: deque[_Fault], path: str) -> _Fault | None:
        for fault in queue:
            if fault.path is None or path.endswith(fault.path):
                fault.remaining -= 1
                if fault.remaining <= 0:
                    queue.remove(fault)
                return fault
        return None
