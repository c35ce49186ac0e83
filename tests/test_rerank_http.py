"""Cohere-compatible reranking through the real `CohereRerank` client over HTTP against a scripted
server on 127.0.0.1 (tests/scripted_server.py): its scores drive the ranking, the policy's boosts
apply after, and a failing endpoint falls back to ragate's own reranker with the reason recorded."""

from __future__ import annotations

import pytest
from scripted_server import Reply

from graph.graph import compile_graph

RERANK = "/v2/rerank"
QUESTION = "O que o playbook de campanhas de inverno recomenda?"


@pytest.fixture
def cohere_env(scripted_server, monkeypatch):
    server = scripted_server.reset()
    monkeypatch.setenv("COHERE_BASE_URL", server.url)
    monkeypatch.setenv("COHERE_API_KEY", "co-test")
    return server


@pytest.fixture(scope="module")
def graph():
    return compile_graph(retrieval_only=True)


def run(graph, corpus, **ctx):
    return graph.invoke({"question": QUESTION},
                        context=corpus.context("acme", rerank_model="cohere/rerank-v3.5", provider_retries=0, **ctx))


def test_the_models_scores_rank_and_boosts_apply_after(cohere_env, graph, corpus):
    baseline = graph.invoke({"question": QUESTION}, context=corpus.context("acme"))
    state = run(graph, corpus)
    (req,) = cohere_env.requests_to(RERANK)
    body = req["json"]
    assert body["model"] == "rerank-v3.5" and body["query"] == QUESTION
    assert req["headers"]["authorization"] == "Bearer co-test"
    assert body["top_n"] == len(body["documents"]) and 1 <= len(body["documents"]) <= 25
    # every kept chunk carries the model's score, and its rerankScore is that score times its boosts
    for c in state["reranked"]:
        s = c["scores"]
        assert s["provider_rerank"] is not None and s["rerank_base"] == s["provider_rerank"]
        factor = 1.0
        for b in s["boosts"]:
            factor *= b["factor"]
        assert c["rerankScore"] == pytest.approx(min(1.0, s["provider_rerank"] * factor))
        assert c["content"] in body["documents"]
    assert state["errors"] == []
    assert baseline["reranked"][0]["scores"].get("provider_rerank") is None


def test_scripted_scores_decide_the_order(cohere_env, graph, corpus):
    # first call learns the documents; the second scripts scores that reverse the embedded order
    run(graph, corpus)
    n = len(cohere_env.requests_to(RERANK)[0]["json"]["documents"])
    cohere_env.reset()
    cohere_env.script(RERANK, Reply.rerank([i / n for i in range(n)]))  # the last document scores highest
    state = run(graph, corpus, boosts=False)
    docs = cohere_env.requests_to(RERANK)[0]["json"]["documents"]
    assert state["reranked"][0]["content"] == docs[-1]


@pytest.mark.parametrize("reply", [Reply.status(500, {"message": "boom"}), Reply.raw(b"not json"),
                                   Reply.delay(5, Reply.rerank())])
def test_a_failing_reranker_falls_back_to_the_embedded_one(cohere_env, graph, corpus, reply):
    baseline = graph.invoke({"question": QUESTION}, context=corpus.context("acme"))
    cohere_env.script(RERANK, reply)
    state = run(graph, corpus, provider_timeout_s=0.5)
    assert [c["id"] for c in state["reranked"]] == [c["id"] for c in baseline["reranked"]]
    assert len(state["errors"]) == 1 and state["errors"][0].startswith("rerank: cohere/rerank-v3.5 failed")


def test_a_split_question_is_still_diversified_after_the_model_reranks(cohere_env, graph, corpus, monkeypatch):
    # The model reranks fetched (renamed) chunks: the parts of the question must still be found for them.
    from nodes import rerank

    seen = []
    diversify = rerank.diversify
    monkeypatch.setattr(rerank, "diversify", lambda ranked, aspects, *a: seen.append(aspects) or diversify(ranked, aspects, *a))
    question = "Compare as vendas de inverno de 2025 e 2026 e quais ações o playbook recomenda?"
    graph.invoke({"question": question}, context=corpus.context("acme"))
    graph.invoke({"question": question}, context=corpus.context("acme", rerank_model="cohere/rerank-v3.5", provider_retries=0))
    embedded, provider = seen
    assert embedded.shape[1] >= 2 and embedded.sum() > 0
    assert provider.shape[1] == embedded.shape[1] and provider.sum() > 0


def test_the_texts_the_model_read_are_not_fetched_again(cohere_env, graph, corpus, monkeypatch):
    from graph.providers.vectorstore import EdgeVectorIndex

    fetched = []
    fetch = EdgeVectorIndex.fetch
    monkeypatch.setattr(EdgeVectorIndex, "fetch",
                        lambda self, coll, tenant, ids, fields=None: fetched.append(len(ids)) or fetch(self, coll, tenant, ids, fields))
    state = run(graph, corpus)
    assert len(fetched) == 1 and fetched[0] == len(cohere_env.requests_to(RERANK)[0]["json"]["documents"])
    assert state["reranked"] and all(c["content"] for c in state["reranked"])
