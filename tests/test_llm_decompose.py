"""LLM decomposition (nodes/decompose.py): validated sub-queries from the real ChatOpenAI client over
HTTP (scripted server on 127.0.0.1), a cache that spares repeated questions the call, and the rules
as the fallback for anything unusable."""

from __future__ import annotations

import json

import pytest
from scripted_server import Reply

from graph.algorithms.decomposition import validate_sub_queries
from graph.graph import compile_graph
from graph.policy import load_policy
from nodes import decompose as decompose_module

CHAT = "/v1/chat/completions"
QUESTION = "Compare as vendas de inverno de 2025 e 2026 e quais ações o playbook recomenda?"
SUBS = ["Quanto venderam as lojas no inverno de 2025?", "Quanto venderam as lojas no inverno de 2026?",
        "Quais ações o playbook de inverno recomenda?"]


@pytest.fixture
def llm_env(scripted_server, monkeypatch):
    server = scripted_server.reset()
    decompose_module._llm_cache.clear()
    monkeypatch.setenv("OPENAI_BASE_URL", server.openai_base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    # the judge also asks the chat model: it gets a valid verdict, decompose gets what each test scripts
    server.default(CHAT, lambda body: Reply.chat(json.dumps(
        {"scores": {"quality": 0.9, "utility": 0.9, "groundedness": 0.9}, "reasoning": {}, "final_decision": "OK"})))
    return server


@pytest.fixture(scope="module")
def graph():
    return compile_graph(retrieval_only=True)


def run(graph, corpus, question=QUESTION):
    return graph.invoke({"question": question},
                        context=corpus.context("acme", chat_model="openai/decomposer", provider_retries=0))


def test_llm_sub_queries_are_searched_and_cached(llm_env, graph, corpus):
    llm_env.script(CHAT, Reply.chat(json.dumps({"sub_queries": SUBS})))
    state = run(graph, corpus)
    assert state["sub_queries"] == SUBS and state["decomposition"]["method"] == "llm"
    searched = {h["sub_query"] for h in state["hits"].values() if h["kind"] == "sub_query"}
    assert set(SUBS) <= searched
    (req,) = llm_env.requests_to(CHAT)
    assert req["json"]["model"] == "decomposer"
    system, user = req["json"]["messages"]
    assert "between 2 and 4" in system["content"] and "(pt)" in system["content"] and user["content"].strip() == QUESTION
    # the same question again (other spacing and case): no second call
    again = run(graph, corpus, "  compare as vendas de inverno de 2025 e 2026 e quais ações o playbook recomenda? ")
    assert again["sub_queries"] == SUBS and len(llm_env.requests_to(CHAT)) == 1


@pytest.mark.parametrize("reply, why", [
    (Reply.chat(json.dumps({"sub_queries": [QUESTION, SUBS[0]]})), "repeats the whole question"),
    (Reply.chat(json.dumps({"sub_queries": [SUBS[0]]})), "1 sub-queries"),
    (Reply.chat(json.dumps({"sub_queries": ["How much did stores sell in winter 2025?", "What does the playbook recommend?"]})),
     "language"),
    (Reply.chat("Claro! Aqui estão as perguntas: 1) vendas 2025 2) vendas 2026"), "JSON"),
    (Reply.status(500, {"error": {"message": "boom"}}), "500"),
])
def test_unusable_replies_fall_back_to_the_rules(llm_env, graph, corpus, reply, why):
    llm_env.script(CHAT, reply)
    state = run(graph, corpus)
    info = state["decomposition"]
    assert info["method"] == "rules" and info["decomposed"] and len(state["sub_queries"]) >= 2
    assert why in info["llm_error"] and any(e.startswith("decompose: chat model unusable") for e in state["errors"])


def test_validation_rejects_overlapping_sub_queries():
    policy = load_policy()
    with pytest.raises(ValueError, match="overlap"):
        validate_sub_queries({"sub_queries": [SUBS[0], "No inverno de 2025, quanto venderam as lojas?"]}, QUESTION, "pt",
                             4, policy)
    with pytest.raises(ValueError, match="list of strings"):
        validate_sub_queries({"sub_queries": "a, b"}, QUESTION, "pt", 4, policy)
    assert validate_sub_queries({"sub_queries": SUBS}, QUESTION, "pt", 4, policy) == SUBS
