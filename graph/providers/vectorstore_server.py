"""A Qdrant server or cluster as the vector engine (`RAGATE_VECTOR_STORE=qdrant`, `QDRANT_URL`,
`QDRANT_API_KEY`): the same `VectorIndex` interface, payload schema, indexes and gates as the
embedded engine (graph/providers/vectorstore.py), over the REST API through `qdrant_client`.

The collection layout follows Qdrant's multitenancy guide: `brandId` is a keyword index with
`is_tenant=True`, and the HNSW graph is built per tenant (`payload_m=16`, `m=0`: no global graph,
which no ragate query could use since every query is tenant-filtered). The manifest (embedding
model, dimensions, schema) lives in the collection's metadata.

The graph's reads use the client directly: a governed search needs the dense and lexical lists with
ranks plus per-hit features, in one batched request, which LangChain's interface does not express.
`langchain_store()` gives the same collection as a `langchain_qdrant.QdrantVectorStore` (hybrid,
with ragate's own lexical vectors) and `governed_retriever()` a retriever bound to the gates, for
other agents and chains.

Reads are retried `retries` times (the context's `provider_retries`) when the server answers 408, 429
or 5xx, or the connection fails or times out, as every provider call is; each try has the client's
timeout. A reply that cannot be read (broken JSON, another shape) is not retried: it fails the read,
and the node that asked records it.
"""

from __future__ import annotations

import functools
import threading
import time
from typing import Any

from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.retrievers import BaseRetriever

from graph.providers.vectorstore import (
    COLLECTION_SCHEMA,
    DATETIME_INDEXES,
    DENSE,
    FILTERABLE_FIELDS,
    GATE_FIELDS,
    INTEGER_INDEXES,
    KEYWORD_INDEXES,
    SPARSE,
    SPARSE_FULL_SCAN_THRESHOLD,
    TENANT_FIELD,
    ChunkRecord,
    CollectionError,
    TenantRequiredError,
    check_collection_name,
    check_same_model,
    engine_ids,
    gate_fields,
    hit_features,
    new_manifest,
    payload_passes_gates,
    point_id,
    to_hits,
)

MANIFEST_KEY = "ragate"
HNSW_EF = 256  # the embedded engine's beam: the same recall on filtered searches


def _models():
    from qdrant_client import models

    return models


def _condition(key: str, value: Any):
    """A value matches itself; a list, any of its values; a mapping of gte/gt/lte/lt, a date range."""
    m = _models()
    if isinstance(value, dict):
        return m.FieldCondition(key=key, range=m.DatetimeRange(**value))
    if isinstance(value, (list, tuple, set)):
        return m.FieldCondition(key=key, match=m.MatchAny(any=list(value)))
    return m.FieldCondition(key=key, match=m.MatchValue(value=value))


def server_filter(fields: dict[str, Any], *extra: Any):
    return _models().Filter(must=[*(_condition(k, v) for k, v in fields.items()), *extra])


def governance_filter(tenant: str | None, extra: dict[str, Any] | None = None):
    """`gate_fields` as a Qdrant server filter, evaluated inside the server."""
    return server_filter(gate_fields(tenant, extra))


class QdrantServerIndex:
    """ragate collections on a Qdrant server (one client, thread-safe, shared per process)."""

    def __init__(self, url: str, api_key: str | None = None, timeout_s: float = 30.0, retries: int = 0):
        from qdrant_client import QdrantClient

        self.url = url
        self.retries = retries
        self.writes = 0  # documents written (or tried) through this object: caches of its reads key on it
        # REST, not gRPC: one port to open, and what every Qdrant deployment (Cloud, self-hosted) serves.
        self.client = QdrantClient(url=url, api_key=api_key or None, prefer_grpc=False, timeout=max(1, round(timeout_s)),
                                   check_compatibility=False)
        self._manifests: dict[str, dict[str, Any]] = {}
        self._lock = threading.Lock()

    def _read(self, method: str, *args: Any, **kwargs: Any) -> Any:
        """`self.client.<method>(...)`, tried again (up to `retries` times) after a transient failure."""
        for attempt in range(self.retries + 1):
            try:
                return getattr(self.client, method)(*args, **kwargs)
            except Exception as exc:
                if attempt == self.retries or not _transient(exc):
                    raise
                time.sleep(min(1.0, 0.05 * 2 ** attempt))  # a short pause: an overloaded server gets air

    # --- collections ------------------------------------------------------------------------
    def manifest(self, collection: str) -> dict[str, Any] | None:
        if collection in self._manifests:
            return self._manifests[collection]
        if not self._read("collection_exists", collection):
            return None
        info = self._read("get_collection", collection)
        manifest = (info.config.metadata or {}).get(MANIFEST_KEY)
        if not isinstance(manifest, dict):
            raise CollectionError(f"collection '{collection}' on {self.url} was not made by ragate (no '{MANIFEST_KEY}' "
                                  "metadata); ingest into another collection")
        if manifest.get("schema") != COLLECTION_SCHEMA:
            raise CollectionError(f"collection '{collection}' on {self.url} has schema {manifest.get('schema')}, "
                                  f"not {COLLECTION_SCHEMA}; ingest into a new collection")
        self._manifests[collection] = manifest
        return manifest

    def ensure_collection(self, collection: str, dimensions: int, embedding_model: str,
                          language: str | None = None) -> None:
        m = _models()
        check_collection_name(collection)
        with self._lock:
            # Read afresh: the collection may have been dropped or re-created on the server since this
            # process cached its manifest (searches keep the cache; an ingest is worth one more request).
            self._manifests.pop(collection, None)
            manifest = self.manifest(collection)
            if manifest is None:
                manifest = new_manifest(embedding_model, dimensions, language)
                try:
                    self.client.create_collection(
                        collection,
                        vectors_config={DENSE: m.VectorParams(size=dimensions, distance=m.Distance.COSINE)},
                        sparse_vectors_config={SPARSE: m.SparseVectorParams(
                            modifier=m.Modifier.IDF,
                            index=m.SparseIndexParams(full_scan_threshold=SPARSE_FULL_SCAN_THRESHOLD))},
                        hnsw_config=m.HnswConfigDiff(m=0, payload_m=16, ef_construct=100, full_scan_threshold=20_000),
                        metadata={MANIFEST_KEY: manifest},
                    )
                except Exception:
                    if not self.client.collection_exists(collection):  # not another ingest's concurrent create
                        raise
                    manifest = self.manifest(collection)
                else:
                    self._create_indexes(collection)
                    self._manifests[collection] = manifest
            check_same_model(collection, manifest, embedding_model, dimensions)

    def _create_indexes(self, collection: str) -> None:
        m = _models()
        index = functools.partial(self.client.create_payload_index, collection, wait=True)
        index(TENANT_FIELD, m.KeywordIndexParams(type=m.KeywordIndexType.KEYWORD, is_tenant=True))
        for name in KEYWORD_INDEXES:
            index(name, m.PayloadSchemaType.KEYWORD)
        for name in INTEGER_INDEXES:
            index(name, m.PayloadSchemaType.INTEGER)
        for name in DATETIME_INDEXES:
            index(name, m.PayloadSchemaType.DATETIME)

    def count(self, collection: str) -> int:
        if not self.client.collection_exists(collection):
            return 0
        return self.client.count(collection, exact=True).count

    # --- reads ------------------------------------------------------------------------------
    def search(self, collection, *, dense, sparse, tenant, filters, limit):
        m = _models()
        gate = governance_filter(tenant, filters)  # raises before touching the server
        if self.manifest(collection) is None:
            return [], []
        lexical = m.SparseVector(indices=list(sparse.indices), values=list(sparse.values))
        # As in the embedded engine: the term statistics of what the tenant may be answered from (the server keeps
        # the tenants' terms in shared dimensions; Qdrant 1.19 and later take `idf`, an older server ignores it).
        statistics = m.SearchParams(idf=m.IdfCorpusParams(corpus=governance_filter(tenant)))
        lists = [m.QueryRequest(query=lexical, using=SPARSE, filter=gate, limit=limit, with_payload=False,
                                params=statistics)]
        if dense is not None:
            lists.append(m.QueryRequest(query=list(dense), using=DENSE, filter=gate, limit=limit, with_payload=False,
                                        params=m.SearchParams(hnsw_ef=HNSW_EF)))
        sparse_res, *dense_lists = self._read("query_batch_points", collection, lists)
        dense_hits = [(p.id, p.score) for p in dense_lists[0].points] if dense_lists else []
        return to_hits(dense_hits), to_hits([(p.id, p.score) for p in sparse_res.points])

    def features(self, collection, *, tenant, point_ids, similarity_to, match_terms, flags=None):
        m = _models()
        gate = governance_filter(tenant)  # raises before touching the server
        ids = engine_ids(point_ids)
        if not ids or (similarity_to is None and not match_terms) or self.manifest(collection) is None:
            return {}
        # As in the embedded engine: over just these points, behind the gate, the server says which hold
        # each question term, which meet each flag, and their similarity to the question.
        only_these = m.HasIdCondition(has_id=ids)
        exact = m.SearchParams(exact=True)
        terms = list(match_terms or [])
        named = list((flags or {}).items()) if similarity_to is not None else []
        requests = [m.QueryRequest(query=m.SparseVector(indices=[t], values=[1.0]), using=SPARSE, limit=len(ids),
                                   filter=m.Filter(must=[*gate.must, only_these]), with_payload=False)
                    for t in terms]
        for _, condition in named:
            requests.append(m.QueryRequest(query=list(similarity_to), using=DENSE, limit=len(ids), params=exact,
                                           filter=m.Filter(must=[*gate.must, only_these,
                                                                 *(_condition(k, v) for k, v in condition.items())]),
                                           with_payload=False))
        if similarity_to is not None:
            requests.append(m.QueryRequest(query=list(similarity_to), using=DENSE, limit=len(ids), params=exact,
                                           filter=m.Filter(must=[*gate.must, only_these]), with_payload=False))
        results = [r.points for r in self._read("query_batch_points", collection, requests)]
        return hit_features(results, terms, [name for name, _ in named], similarity_to is not None)

    def fetch(self, collection: str, tenant: str, point_ids: list[str],
              fields: list[str] | None = None) -> dict[str, dict[str, Any]]:
        gate_fields(tenant)  # no tenant, no read
        if not point_ids or self.manifest(collection) is None:
            return {}
        selected = sorted({*fields, *GATE_FIELDS}) if fields else True
        ids = engine_ids(point_ids)
        if not ids:
            return {}
        records = self._read("retrieve", collection, ids, with_payload=selected, with_vectors=False)
        # Ids come from gated searches; the gates are checked again on each stored payload.
        return {str(r.id): dict(r.payload or {}) for r in records if payload_passes_gates(dict(r.payload or {}), tenant)}

    def values(self, collection, tenant, field, limit=1000):
        gate = governance_filter(tenant)
        if field not in FILTERABLE_FIELDS:
            raise ValueError(f"'{field}' is not an indexed filterable field")
        if self.manifest(collection) is None:
            return []
        hits = self._read("facet", collection, field, facet_filter=gate, limit=limit, exact=True).hits
        return [str(h.value) for h in hits if h.value]

    def existing_hashes(self, collection: str, tenant: str, doc_id: str) -> set[str]:
        if self.manifest(collection) is None:
            return set()
        flt = server_filter({TENANT_FIELD: tenant, "docId": doc_id})
        hashes: set[str] = set()
        offset = None
        while True:
            records, offset = self.client.scroll(collection, scroll_filter=flt, limit=1000, offset=offset,
                                                 with_payload=["content_hash"], with_vectors=False)
            hashes |= {r.payload["content_hash"] for r in records if r.payload}
            if offset is None:
                return hashes

    # --- writes -----------------------------------------------------------------------------
    def replace_document(self, collection: str, tenant: str, doc_id: str, chunks: list[ChunkRecord]) -> None:
        m = _models()
        if not tenant:
            raise TenantRequiredError("a tenant is required to write documents")
        if self.manifest(collection) is None:
            raise CollectionError(f"collection '{collection}' does not exist")
        points = [m.PointStruct(
            id=point_id(tenant, doc_id, c.chunk_index),
            vector={DENSE: list(c.dense), SPARSE: m.SparseVector(indices=list(c.sparse[0]), values=list(c.sparse[1]))},
            payload={**c.payload, TENANT_FIELD: tenant},
        ) for c in chunks]
        # Upsert first (point ids are stable per chunk index), then drop the chunks the new version
        # no longer has: readers never see the document missing, as a delete-then-write would show.
        # Both in one request, applied in order: a request that fails (a timeout, a 5xx, a dropped
        # connection) leaves the old version whole, never new chunks beside the old version's tail.
        stale = server_filter({TENANT_FIELD: tenant, "docId": doc_id})
        operations: list[Any] = []
        if points:
            stale.must_not = [m.HasIdCondition(has_id=[p.id for p in points])]
            operations.append(m.UpsertOperation(upsert=m.PointsList(points=points)))
        operations.append(m.DeleteOperation(delete=m.FilterSelector(filter=stale)))
        try:
            self.client.batch_update_points(collection, operations, wait=True)
        finally:
            self.writes += 1

    def flush(self) -> None:
        """Writes are acknowledged by the server (`wait=True`): nothing to flush."""

    def build_search_index(self, collection: str) -> float | None:
        """A Qdrant server indexes what it is written on its own (its optimizer's `indexing_threshold`)."""
        return None

    def close(self) -> None:
        self.client.close()

    # --- LangChain --------------------------------------------------------------------------
    def langchain_store(self, collection: str, embeddings: Embeddings, sparse_embeddings: Any = None):
        """The collection as a `langchain_qdrant.QdrantVectorStore` (hybrid when `sparse_embeddings`
        is given). Reads through it are NOT gated: use `governed_retriever` for a tenant's reads."""
        from langchain_qdrant import QdrantVectorStore, RetrievalMode

        return QdrantVectorStore(
            client=self.client, collection_name=collection, embedding=embeddings, vector_name=DENSE,
            sparse_embedding=sparse_embeddings, sparse_vector_name=SPARSE,
            retrieval_mode=RetrievalMode.HYBRID if sparse_embeddings is not None else RetrievalMode.DENSE,
            content_payload_key="text", metadata_payload_key="metadata", validate_collection_config=False,
        )

    def governed_retriever(self, collection: str, tenant: str, embeddings: Embeddings, sparse_embeddings: Any = None,
                           k: int = 5) -> GovernedRetriever:
        """A LangChain retriever over `collection` that only ever sees `tenant`'s servable chunks."""
        gate_fields(tenant)  # no tenant, no retriever
        return GovernedRetriever(store=self.langchain_store(collection, embeddings, sparse_embeddings),
                                 tenant=str(tenant), k=k)


class GovernedRetriever(BaseRetriever):
    """A retriever bound to one tenant's gates. LangChain's own `VectorStoreRetriever` merges the
    arguments of each call over its `search_kwargs`, so `retriever.invoke(q, filter=None)` would drop a
    tenant filter kept there: here the gates are built at every call, and a caller's `filter` (a Qdrant
    `Filter` or {field: value}) can only narrow them."""

    store: Any
    tenant: str
    k: int = 5

    def _get_relevant_documents(self, query: str, *, run_manager: Any = None, filter: Any = None,
                                k: int | None = None, **kwargs: Any) -> list[Document]:
        if kwargs:
            raise TypeError(f"unsupported search arguments {sorted(kwargs)} (allowed: filter, k)")
        if isinstance(filter, dict):
            gates = governance_filter(self.tenant, filter)  # refuses a filter on a gate field
        else:
            gates = governance_filter(self.tenant)
            if filter is not None:
                gates = _models().Filter(must=[gates, filter])
        return self.store.similarity_search(query, k=int(k or self.k), filter=gates)


def _transient(exc: Exception) -> bool:
    """Whether a failed read may succeed when tried again: 408 / 429 / 5xx, a timeout, a lost connection."""
    import httpx
    from qdrant_client.common.client_exceptions import ResourceExhaustedResponse
    from qdrant_client.http.exceptions import ResponseHandlingException, UnexpectedResponse

    if isinstance(exc, ResourceExhaustedResponse):
        return True
    if isinstance(exc, UnexpectedResponse):
        return exc.status_code is not None and (exc.status_code in (408, 429) or exc.status_code >= 500)
    if isinstance(exc, ResponseHandlingException):
        return isinstance(exc.source, httpx.TransportError)
    return isinstance(exc, httpx.TransportError)


_indexes: dict[tuple[str, str | None, float, int], QdrantServerIndex] = {}
_indexes_lock = threading.Lock()


def open_server_index(url: str, api_key: str | None, timeout_s: float, retries: int = 0) -> QdrantServerIndex:
    """The process-wide index for a server and settings (one client, one connection pool)."""
    key = (url, api_key, float(timeout_s), int(retries))
    with _indexes_lock:
        if key not in _indexes:
            _indexes[key] = QdrantServerIndex(url, api_key, timeout_s, int(retries))
        return _indexes[key]


def close_all() -> None:
    with _indexes_lock:
        for index in _indexes.values():
            index.close()
        _indexes.clear()
