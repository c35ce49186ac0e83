"""The Qdrant test server (tests/qdrant_server.py) driven by the REAL clients over loopback HTTP:
``qdrant_client.QdrantClient(url=..., prefer_grpc=False)`` and ``langchain_qdrant.QdrantVectorStore``."""

from __future__ import annotations

import importlib.metadata
import time
import uuid
import warnings
import zlib
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
from langchain_core.embeddings import Embeddings
from langchain_qdrant import QdrantVectorStore, RetrievalMode, SparseEmbeddings, SparseVector
from qdrant_client import QdrantClient, models
from qdrant_client.common.client_exceptions import ResourceExhaustedResponse
from qdrant_client.common.version_check import get_server_version, is_compatible
from qdrant_client.http.exceptions import UnexpectedResponse
from qdrant_server import QdrantTestServer
from scripted_server import hash_vector

DIMS = 8
MANIFEST = {"schema": 1, "embedding_model": "hash-8", "chunk_tokens": 200}
TENANT_INDEX = models.KeywordIndexParams(type=models.KeywordIndexType.KEYWORD, is_tenant=True)

# (id, tenant, doc_id, updated_at, text). globex repeats acme's first text word for word: only the tenant
# filter can keep it out of acme's results.
CHUNKS = [
    (1, "acme", "a-handbook", "2024-01-10T00:00:00Z", "refund policy: refunds within thirty days"),
    (2, "acme", "a-handbook", "2024-03-05T00:00:00Z", "shipping takes five business days"),
    (3, "acme", "a-pricing", "2024-06-20T00:00:00Z", "enterprise pricing starts at ten seats"),
    (11, "globex", "g-handbook", "2024-02-01T00:00:00Z", "refund policy: refunds within thirty days"),
    (12, "globex", "g-handbook", "2024-04-01T00:00:00Z", "globex travel expenses need approval"),
]


def sparse(text: str) -> tuple[list[int], list[float]]:
    """Term counts keyed by a crc32 bucket: the shape of BM25 input, whose IDF the engine applies."""
    counts: dict[int, float] = {}
    for word in text.lower().replace(":", " ").split():
        idx = zlib.crc32(word.encode()) % 4096
        counts[idx] = counts.get(idx, 0.0) + 1.0
    indices = sorted(counts)
    return indices, [counts[i] for i in indices]


class HashEmbeddings(Embeddings):
    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [hash_vector(t, DIMS) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return hash_vector(text, DIMS)


class WordSparseEmbeddings(SparseEmbeddings):
    def embed_documents(self, texts: list[str]) -> list[SparseVector]:
        return [self.embed_query(t) for t in texts]

    def embed_query(self, text: str) -> SparseVector:
        indices, values = sparse(text)
        return SparseVector(indices=indices, values=values)


def tenant_is(tenant: str) -> models.Filter:
    return models.Filter(must=[models.FieldCondition(key="tenant", match=models.MatchValue(value=tenant))])


@pytest.fixture(scope="module")
def server():
    with QdrantTestServer() as srv:
        yield srv


@pytest.fixture
def srv(server):
    server.reset()
    yield server
    assert server.errors == []


@pytest.fixture
def client(srv):
    # No background version probe: one still pending when the module's server stops warned in a later,
    # unrelated test. The probe is tested on its own (test_version_probe_is_compatible, the api-key test).
    c = QdrantClient(url=srv.url, prefer_grpc=False, timeout=5, check_compatibility=False)
    yield c
    c.close()


def create_collection(client: QdrantClient, name: str) -> None:
    client.create_collection(
        name,
        vectors_config={"dense": models.VectorParams(size=DIMS, distance=models.Distance.COSINE)},
        sparse_vectors_config={"bm25": models.SparseVectorParams(modifier=models.Modifier.IDF)},
        hnsw_config=models.HnswConfigDiff(m=0, payload_m=16),  # Qdrant's multitenancy recipe
        metadata=MANIFEST,
    )
    client.create_payload_index(name, "tenant", field_schema=TENANT_INDEX)
    client.create_payload_index(name, "doc_id", field_schema=models.PayloadSchemaType.KEYWORD)
    client.create_payload_index(name, "chunk", field_schema=models.PayloadSchemaType.INTEGER)
    client.create_payload_index(name, "updated_at", field_schema=models.PayloadSchemaType.DATETIME)


@pytest.fixture
def coll(client):
    """A fresh collection holding CHUNKS with both vectors."""
    name = f"t_{uuid.uuid4().hex[:8]}"
    create_collection(client, name)
    points = []
    for chunk, (pid, tenant, doc_id, updated_at, text) in enumerate(CHUNKS):
        indices, values = sparse(text)
        points.append(models.PointStruct(
            id=pid,
            vector={"dense": hash_vector(text, DIMS), "bm25": models.SparseVector(indices=indices, values=values)},
            payload={"tenant": tenant, "doc_id": doc_id, "chunk": chunk, "updated_at": updated_at, "text": text,
                     "metadata": {"doc_id": doc_id, "tenant": tenant}},
        ))
    result = client.upsert(name, points=points, wait=True)
    assert result.status == models.UpdateStatus.COMPLETED
    yield name
    client.delete_collection(name)


# --- collections ------------------------------------------------------------------------------


def test_version_probe_is_compatible(srv, client):
    assert client.info().title == "qdrant - vector search engine"
    version = get_server_version(srv.url, {}, None, 5)
    assert is_compatible(importlib.metadata.version("qdrant-client"), version)


def test_collection_config_metadata_and_payload_schema(srv, client, coll):
    info = client.get_collection(coll)
    dense = info.config.params.vectors["dense"]
    assert (dense.size, dense.distance) == (DIMS, models.Distance.COSINE)
    assert info.config.params.sparse_vectors["bm25"].modifier == models.Modifier.IDF
    assert info.config.metadata == MANIFEST
    assert (info.config.hnsw_config.m, info.config.hnsw_config.payload_m) == (0, 16)
    assert info.points_count == len(CHUNKS)
    schema = info.payload_schema
    assert schema["tenant"].data_type == models.PayloadSchemaType.KEYWORD
    assert schema["tenant"].params.is_tenant is True and schema["tenant"].points == len(CHUNKS)
    assert {k: v.data_type for k, v in schema.items() if k != "tenant"} == {
        "doc_id": models.PayloadSchemaType.KEYWORD, "chunk": models.PayloadSchemaType.INTEGER,
        "updated_at": models.PayloadSchemaType.DATETIME}

    assert client.collection_exists(coll) and not client.collection_exists("nope")
    assert coll in {c.name for c in client.get_collections().collections}
    client.update_collection(coll, metadata={"reindexed": True})  # metadata updates merge
    assert client.get_collection(coll).config.metadata == {**MANIFEST, "reindexed": True}

    body = srv.requests_to(f"/collections/{coll}", method="PUT")[0].body
    assert body["sparse_vectors"] == {"bm25": {"modifier": "idf"}} and body["metadata"] == MANIFEST


def test_create_existing_and_missing_collection_errors(client, coll):
    with pytest.raises(UnexpectedResponse) as exc:
        create_collection(client, coll)
    assert exc.value.status_code == 409
    with pytest.raises(UnexpectedResponse) as exc:
        client.get_collection("nope")
    assert exc.value.status_code == 404
    assert exc.value.structured()["status"]["error"] == "Not found: Collection `nope` doesn't exist!"
    assert client.delete_collection("nope") is False


# --- points -----------------------------------------------------------------------------------


def test_query_batch_tenant_filter_never_leaks(srv, client, coll):
    question = "refund policy thirty days"
    indices, values = sparse(question)
    requests = [
        models.QueryRequest(query=hash_vector(question, DIMS), using="dense", filter=tenant_is("acme"),
                            limit=10, with_payload=True),
        models.QueryRequest(query=models.SparseVector(indices=indices, values=values), using="bm25",
                            filter=tenant_is("acme"), limit=10, with_payload=["tenant", "text"]),
        models.QueryRequest(query=hash_vector(question, DIMS), using="dense", filter=tenant_is("globex"), limit=1),
    ]
    dense, sparse_hits, globex = client.query_batch_points(coll, requests=requests)
    assert {p.id for p in dense.points} == {1, 2, 3}
    assert {p.payload["tenant"] for p in dense.points + sparse_hits.points} == {"acme"}
    assert sparse_hits.points[0].id == 1 and set(sparse_hits.points[0].payload) == {"tenant", "text"}
    assert [p.id for p in globex.points] == [11] and globex.points[0].payload is None  # REST default: no payload
    assert len(srv.requests_to(f"/collections/{coll}/points/query/batch")) == 1


def test_has_id_match_any_datetime_range_and_exact_params(client, coll, recwarn):
    query = hash_vector("shipping", DIMS)
    hits = client.query_points(
        coll, query=query, using="dense", limit=5, with_payload=False,
        query_filter=models.Filter(must=[models.HasIdCondition(has_id=[2, 3, 12])]),
        search_params=models.SearchParams(exact=True, hnsw_ef=128),
    ).points
    assert {p.id for p in hits} == {2, 3, 12} and all(p.payload is None for p in hits)

    recent_acme_docs = models.Filter(must=[
        models.FieldCondition(key="doc_id", match=models.MatchAny(any=["a-handbook", "a-pricing"])),
        models.FieldCondition(key="updated_at", range=models.DatetimeRange(gte="2024-02-01T00:00:00Z")),
    ])
    hits = client.query_points(coll, query=query, using="dense", query_filter=recent_acme_docs).points
    assert {p.id for p in hits} == {2, 3}
    # Local mode warns about search params it ignores; the server strips them so tests stay quiet.
    assert not [w for w in recwarn if "search_params" in str(w.message)]


def test_retrieve_scroll_count(client, coll):
    records = client.retrieve(coll, ids=[1, 11, 99], with_payload=["doc_id"], with_vectors=True)
    assert sorted(r.id for r in records) == [1, 11]
    assert all(set(r.payload) == {"doc_id"} for r in records)
    assert set(records[0].vector) == {"dense", "bm25"}
    assert all(r.vector is None for r in client.retrieve(coll, ids=[1]))

    page, next_offset = client.scroll(coll, scroll_filter=tenant_is("acme"), limit=2, with_payload=True)
    assert [r.id for r in page] == [1, 2] and next_offset == 3
    page, next_offset = client.scroll(coll, scroll_filter=tenant_is("acme"), limit=2, offset=next_offset)
    assert [r.id for r in page] == [3] and next_offset is None

    assert client.count(coll).count == len(CHUNKS)
    assert client.count(coll, count_filter=tenant_is("globex"), exact=True).count == 2


def test_facet_and_order_by_need_an_index_like_the_server(client, coll):
    hits = client.facet(coll, key="doc_id", facet_filter=tenant_is("acme"))
    assert {(h.value, h.count) for h in hits.hits} == {("a-handbook", 2), ("a-pricing", 1)}
    newest = models.OrderBy(key="updated_at", direction=models.Direction.DESC)
    assert [r.id for r in client.scroll(coll, order_by=newest, limit=2)[0]] == [3, 12]

    with pytest.raises(UnexpectedResponse) as exc:
        client.facet(coll, key="text")
    assert exc.value.status_code == 400
    assert "No appropriate index for faceting: `text`" in exc.value.structured()["status"]["error"]
    with pytest.raises(UnexpectedResponse) as exc:
        client.scroll(coll, order_by="doc_id")  # a keyword index cannot order
    assert "No range index for `order_by` key: `doc_id`" in exc.value.structured()["status"]["error"]


def test_delete_by_filter_and_by_ids(client, coll):
    client.delete(coll, points_selector=models.FilterSelector(filter=tenant_is("globex")), wait=True)
    assert client.count(coll, count_filter=tenant_is("globex")).count == 0
    result = client.delete(coll, points_selector=models.PointIdsList(points=[1]), wait=False)
    assert result.status == models.UpdateStatus.ACKNOWLEDGED  # what a server says without `wait`
    assert sorted(r.id for r in client.scroll(coll)[0]) == [2, 3]


def test_bad_requests_answer_qdrant_errors(srv, client, coll):
    with pytest.raises(UnexpectedResponse) as exc:  # wrong dense dimension: the engine's ValueError
        client.upsert(coll, points=[models.PointStruct(id=50, vector={"dense": [1.0, 0.0]})])
    assert exc.value.status_code == 400
    response = httpx.post(f"{srv.url}/collections/{coll}/points/count", json={"filter": {"must": "nope"}})
    assert response.status_code == 400 and "error" in response.json()["status"]
    response = httpx.get(f"{srv.url}/no/such/route")
    assert response.status_code == 404 and response.json()["status"]["error"].startswith("Not found")


def test_concurrent_clients_are_served_consistently(client, coll):
    def add_and_count(i: int) -> int:
        vector = {"dense": hash_vector(f"note {i}", DIMS)}
        client.upsert(coll, points=[models.PointStruct(id=100 + i, vector=vector, payload={"tenant": "acme"})])
        return client.count(coll, count_filter=tenant_is("acme")).count

    with ThreadPoolExecutor(max_workers=8) as pool:
        counts = list(pool.map(add_and_count, range(24)))
    assert all(3 < n <= 27 for n in counts)
    assert client.count(coll, count_filter=tenant_is("acme")).count == 27


# --- auth and faults --------------------------------------------------------------------------


def test_api_key_required_when_set():
    with QdrantTestServer(api_key="s3cret") as srv:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="Api key is used with an insecure connection")
            good = QdrantClient(url=srv.url, api_key="s3cret", prefer_grpc=False, timeout=5)
            bad = QdrantClient(url=srv.url, api_key="wrong", prefer_grpc=False, timeout=5)
        anonymous = QdrantClient(url=srv.url, prefer_grpc=False, timeout=5)
        assert good.get_collections().collections == []
        for client in (bad, anonymous):
            with pytest.raises(UnexpectedResponse) as exc:
                client.get_collections()
            assert exc.value.status_code == 401
        assert httpx.get(f"{srv.url}/collections", headers={"Authorization": "Bearer s3cret"}).status_code == 200
        # The version probes (one per client, from background threads) need no key, as on a server.
        deadline = time.monotonic() + 5
        while len([r for r in srv.requests if r.path == "/"]) < 3 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert len([r for r in srv.requests if r.path == "/"]) == 3
        for c in (good, bad, anonymous):
            c.close()


def test_fail_next_and_delay_next(srv, client, coll):
    srv.fail_next(1, status=503, path="/points/count")
    with pytest.raises(UnexpectedResponse) as exc:
        client.count(coll)
    assert exc.value.status_code == 503
    assert client.count(coll).count == len(CHUNKS)  # the fault is spent and no data was touched

    srv.fail_next(1, status=429, retry_after=1)
    with pytest.raises(ResourceExhaustedResponse):
        client.count(coll)

    srv.delay_next(1, 0.3)
    started = time.monotonic()
    assert client.collection_exists(coll)
    assert time.monotonic() - started >= 0.3
    assert len(srv.requests_to(f"/collections/{coll}/points/count")) == 3

    srv.fail_next(5).reset()
    assert srv.requests == [] and client.count(coll).count == len(CHUNKS)


# --- langchain_qdrant -------------------------------------------------------------------------


def test_langchain_hybrid_store_on_existing_collection(srv, client, coll):
    store = QdrantVectorStore(
        client=client, collection_name=coll, embedding=HashEmbeddings(), sparse_embedding=WordSparseEmbeddings(),
        retrieval_mode=RetrievalMode.HYBRID, vector_name="dense", sparse_vector_name="bm25",
        content_payload_key="text", metadata_payload_key="metadata",
    )
    faq = "acme refund exceptions need a manager"
    assert store.add_texts([faq], metadatas=[{"doc_id": "a-faq", "tenant": "acme"}], ids=[4]) == [4]
    assert client.retrieve(coll, ids=[4])[0].payload == {"text": faq, "metadata": {"doc_id": "a-faq", "tenant": "acme"}}

    # Filters are raw Qdrant filters over the payload; langchain's metadata sits under "metadata".
    acme = models.Filter(must=[models.FieldCondition(key="metadata.tenant", match=models.MatchValue(value="acme"))])
    docs = store.similarity_search("refund policy", k=3, filter=acme)
    assert len(docs) == 3 and {d.metadata["tenant"] for d in docs} == {"acme"}
    assert docs[0].page_content == CHUNKS[0][4] and docs[0].metadata["_id"] == 1
    assert {d.metadata["_id"] for d in docs} <= {1, 2, 3, 4}

    body = srv.requests_to(f"/collections/{coll}/points/query")[-1].body
    assert body["query"] == {"fusion": "rrf"}
    assert [p["using"] for p in body["prefetch"]] == ["dense", "bm25"]
