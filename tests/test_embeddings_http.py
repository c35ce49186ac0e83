"""OpenAI-compatible embeddings (graph/providers/embeddings.py): the real `OpenAIEmbeddings` client over HTTP
against a scripted server on 127.0.0.1. Ingest and questions run on it; what was sent (model, texts,
key) is checked; no tokenizer file is fetched; a failing or slow embedder degrades retrieval to the
lexical list instead of failing the question."""

from __future__ import annotations

import time

import pytest
from scripted_server import Reply

from graph.graph import compile_graph
from graph.indexing.ingest import ingest_path
from graph.providers.resources import check_providers
from graph.providers.specs import ProviderError
from graph.providers.vectorstore import open_index

EMB = "/v1/embeddings"
MODEL = "openai/text-embedding-3-small"
SAMPLES_ACME = __import__("conftest").SAMPLES / "acme"
QUESTION = "Quanto cresceram as vendas de inverno em 2025?"


@pytest.fixture
def emb_env(scripted_server, monkeypatch):
    server = scripted_server.reset()
    monkeypatch.setenv("OPENAI_BASE_URL", server.openai_base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "emb-key")
    # 64-dim hashed bag-of-words vectors: texts that share words are close, as a real model's would be
    server.default(EMB, lambda body: Reply.embeddings(dims=64))
    return server


@pytest.fixture(scope="module")
def graph():
    return compile_graph()


def context(home, **kw):
    from graph.context import Context

    return Context(home=str(home), tenant="acme", **{"embedding_model": MODEL, "provider_retries": 0, **kw})


@pytest.fixture
def openai_home(emb_env, tmp_path):
    ingest_path(SAMPLES_ACME, collection="documents", tenant="acme", context=context(tmp_path))
    emb_env.reset()
    emb_env.default(EMB, lambda body: Reply.embeddings(dims=64))
    return tmp_path


def test_ingest_sends_the_chunk_texts_to_the_configured_model(emb_env, tmp_path):
    report = ingest_path(SAMPLES_ACME, collection="documents", tenant="acme", context=context(tmp_path))
    sent = emb_env.requests_to(EMB)
    assert report.documents_written == 27 and report.chunks_written >= 27
    assert len(sent) == 2  # the dimension probe, then every chunk in one batched request
    assert {r["json"]["model"] for r in sent} == {"text-embedding-3-small"}
    assert {r["headers"]["authorization"] for r in sent} == {"Bearer emb-key"}
    texts = [t for r in sent for t in r["json"]["input"]]
    assert all(isinstance(t, str) for t in texts)  # strings, not token ids: no tokenizer was needed
    assert any("R$ 118.430.227,35" in t for t in texts)
    assert open_index(tmp_path).manifest("documents")["embedding_model"] == MODEL
    assert open_index(tmp_path).manifest("documents")["dimensions"] == 64
    # unchanged documents are not embedded again
    emb_env.reset()
    ingest_path(SAMPLES_ACME, collection="documents", tenant="acme", context=context(tmp_path))
    assert emb_env.requests_to(EMB) == []  # (the dimension probe is a query: cached in memory)


def test_no_tokenizer_file_is_fetched(emb_env, tmp_path, monkeypatch):
    import tiktoken

    def offline(*args, **kwargs):
        raise AssertionError("tiktoken asked for a tokenizer file")

    monkeypatch.setattr(tiktoken, "get_encoding", offline)
    monkeypatch.setattr(tiktoken, "encoding_for_model", offline)
    report = ingest_path(SAMPLES_ACME, collection="documents", tenant="acme", context=context(tmp_path, provider_timeout_s=7))
    assert report.chunks_written > 0


def test_a_question_is_answered_on_the_openai_embeddings(openai_home, emb_env, graph):
    state = graph.invoke({"question": QUESTION}, context=context(openai_home))
    assert state["errors"] == [] and "acme-bi-2025-inverno-sales" in state["citations_used"]
    assert [r["json"]["input"] for r in emb_env.requests_to(EMB)] == [[QUESTION]]  # one call: question = sub-query
    assert any(c["scores"].get("dense") is not None for c in state["reranked"])


@pytest.mark.parametrize("failure", [Reply.status(500, {"error": {"message": "boom"}}),
                                     Reply.status(429, {"error": {"message": "slow down"}})])
def test_a_failing_embedder_degrades_to_the_lexical_list(openai_home, emb_env, graph, failure):
    emb_env.script(EMB, failure)
    state = graph.invoke({"question": "Qual foi a receita bruta do inverno 2025?"}, context=context(openai_home))
    assert any("embeddings unavailable" in e and e.endswith("lexical search only") for e in state["errors"])
    assert all(not r["dense"] for r in state["hits"].values()) and any(r["lexical"] for r in state["hits"].values())
    assert "acme-bi-2025-inverno-sales" in state["citations_used"]


def test_a_429_is_retried_with_the_configured_retries(openai_home, emb_env, graph):
    emb_env.script(EMB, Reply.status(429, {"error": {"message": "slow down"}}, headers={"retry-after-ms": "10"}))
    state = graph.invoke({"question": "Quais categorias lideraram o inverno 2025?"},
                         context=context(openai_home, provider_retries=1))
    assert len(emb_env.requests_to(EMB)) == 2 and not any("embeddings" in e for e in state["errors"])


def test_a_slow_embedder_times_out_within_the_configured_time(openai_home, emb_env, graph):
    emb_env.script(EMB, Reply.delay(5, Reply.embeddings(dims=64)))
    started = time.perf_counter()
    state = graph.invoke({"question": "Qual foi a ruptura de estoque em jaquetas?"},
                         context=context(openai_home, provider_timeout_s=0.5))
    assert time.perf_counter() - started < 4.5
    assert any("embeddings unavailable" in e for e in state["errors"]) and state["citations_used"]


def test_misconfiguration_fails_at_start_up_naming_the_setting(monkeypatch, tmp_path):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(ProviderError, match="RAGATE_EMBEDDING_MODEL='openai/text-embedding-3-small' needs OPENAI_API_KEY"):
        check_providers(context(tmp_path))
    for spec in ("cohere/embed-v4", "openai/", "text-embedding-3-small", "local/unknown"):
        with pytest.raises(ProviderError, match="RAGATE_EMBEDDING_MODEL"):
            check_providers(context(tmp_path, embedding_model=spec))


def test_concurrent_requests_for_one_query_share_one_call():
    """Single flight: the parallel retrieve branches asking for the same question at once get one
    embedding call between them, and share its failure too."""
    import threading
    import time as _time

    from langchain_core.embeddings import Embeddings

    from graph.providers.embeddings import CachedEmbeddings

    class Slow(Embeddings):
        def __init__(self, fail=False):
            self.calls, self.fail = 0, fail

        def embed_documents(self, texts):
            return [self.embed_query(t) for t in texts]

        def embed_query(self, text):
            self.calls += 1
            _time.sleep(0.2)
            if self.fail:
                raise RuntimeError("provider down")
            return [1.0, 0.0, 0.0]

    for fail in (False, True):
        inner = Slow(fail)
        cached = CachedEmbeddings(inner, "test/slow", None)
        results, errors = [], []

        def ask(cached=cached, results=results, errors=errors):
            try:
                results.append(cached.embed_query("what drove sales?"))
            except RuntimeError as exc:
                errors.append(str(exc))

        threads = [threading.Thread(target=ask) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert inner.calls == 1
        assert (errors, results) == ((["provider down"] * 4, []) if fail else ([], [[1.0, 0.0, 0.0]] * 4))
    # A failure is not remembered: the next request tries again.
    inner.fail = False
    assert cached.embed_query("what drove sales?") == [1.0, 0.0, 0.0] and inner.calls == 2
