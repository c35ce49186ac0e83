"""The whole graph with the LLM judge on, driving the real `ChatOpenAI` client over HTTP against a
scripted OpenAI-compatible server on 127.0.0.1 (tests/scripted_server.py): good JSON, broken JSON
repaired once, broken twice, 429 retried, 500 and timeouts falling back to the deterministic judge."""

from __future__ import annotations

import json
import time

import pytest
from scripted_server import Reply

from graph.graph import compile_graph

CHAT = "/v1/chat/completions"
QUESTION = "Quanto cresceram as vendas de inverno em 2025?"
# The composer asks the same chat model first (a streamed request); the judge's request comes second.
COMPOSED = ("A temporada de inverno 2025 gerou receita bruta de R$ 118.430.227,35, crescimento de 7,9% sobre o "
            "inverno 2024 [acme-bi-2025-inverno-sales].")
VERDICT = {"scores": {"quality": 0.92, "utility": 0.88, "groundedness": 0.97},
           "reasoning": {"quality": "clara", "utility": "números", "groundedness": "tudo citado"}, "final_decision": "OK"}


@pytest.fixture
def llm_env(scripted_server, monkeypatch):
    server = scripted_server.reset()
    monkeypatch.setenv("OPENAI_BASE_URL", server.openai_base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    return server


@pytest.fixture(scope="module")
def graph():
    return compile_graph()


def script_judge(server, *replies):
    """The composer's answer, then these replies for the judge."""
    server.script(CHAT, Reply.chat(COMPOSED), *replies)


def judge_requests(server):
    return server.requests_to(CHAT)[1:]


def run(graph, corpus, **ctx):
    context = corpus.context("acme", chat_model="openai/judge-model", **ctx)
    return graph.invoke({"question": QUESTION}, context=context)


def test_the_llm_verdict_is_used_and_what_was_sent_is_right(llm_env, graph, corpus):
    script_judge(llm_env, Reply.chat(json.dumps(VERDICT)))
    state = run(graph, corpus, provider_retries=0)
    v = state["verdict"]
    assert v["method"] == "llm+deterministic" and v["scores"]["quality"] == 0.92
    assert v["scores"]["groundedness"] <= 0.97 and v["final_decision"] == "OK"
    (req,) = judge_requests(llm_env)
    assert req["json"]["model"] == "judge-model" and req["headers"]["authorization"] == "Bearer test-key"
    system, user = req["json"]["messages"]
    assert system["role"] == "system" and "senior retail-data auditor" in system["content"]
    assert QUESTION in user["content"] and state["answer"] in user["content"]
    assert all(f"[{c['docId']}]" in user["content"] for c in state["reranked"])
    assert state["errors"] == []


def test_broken_json_is_repaired_once_over_http(llm_env, graph, corpus):
    script_judge(llm_env, Reply.chat('{"scores": {"quality": 0.9'), Reply.chat(json.dumps(VERDICT)))
    state = run(graph, corpus, provider_retries=0)
    assert state["verdict"]["method"] == "llm+deterministic"
    first, second = judge_requests(llm_env)
    assert second["json"]["messages"][-2]["content"] == '{"scores": {"quality": 0.9'
    assert "could not be used" in second["json"]["messages"][-1]["content"]
    assert any("repaired" in e for e in state["errors"])


def test_broken_twice_falls_back_to_the_deterministic_judge(llm_env, graph, corpus):
    script_judge(llm_env, Reply.chat("I think it is fine."), Reply.chat("Still fine!"))
    state = run(graph, corpus, provider_retries=0)
    assert state["verdict"]["method"] == "deterministic" and state["verdict"]["final_decision"] == "OK"
    assert any("unusable after one repair" in e for e in state["errors"])


def test_429_is_retried_by_the_client(llm_env, graph, corpus):
    script_judge(llm_env, Reply.status(429, {"error": {"message": "slow down"}}), Reply.chat(json.dumps(VERDICT)))
    state = run(graph, corpus, provider_retries=1)
    assert state["verdict"]["method"] == "llm+deterministic" and len(judge_requests(llm_env)) == 2


@pytest.mark.parametrize("reply", [Reply.status(500, {"error": {"message": "boom"}}), Reply.raw(b"<html>502</html>")])
def test_server_errors_fall_back_and_are_recorded(llm_env, graph, corpus, reply):
    script_judge(llm_env, reply)
    state = run(graph, corpus, provider_retries=0)
    assert state["verdict"]["method"] == "deterministic"
    assert any(e.startswith("judge: chat model failed") for e in state["errors"])


def test_a_timeout_falls_back_within_the_configured_time(llm_env, graph, corpus):
    script_judge(llm_env, Reply.delay(5, Reply.chat(json.dumps(VERDICT))))
    started = time.perf_counter()
    state = run(graph, corpus, provider_retries=0, provider_timeout_s=0.5)
    assert time.perf_counter() - started < 4
    assert state["verdict"]["method"] == "deterministic"
    assert any("Timeout" in e for e in state["errors"])


def test_an_llm_that_approves_an_invented_value_cannot_unblock_it(llm_env, corpus):
    invented = "As vendas de inverno cresceram 987,65% em 2025 [acme-bi-2025-inverno-sales]."

    def composer(state, runtime):
        return {"answer": invented, "citations_used": ["acme-bi-2025-inverno-sales"], "coverage_level": "medium",
                "suggestions": []}

    llm_env.script(CHAT, Reply.chat(json.dumps({**VERDICT, "scores": {"quality": 1, "utility": 1, "groundedness": 1}})))
    state = compile_graph(nodes={"compose": composer}).invoke(
        {"question": QUESTION}, context=corpus.context("acme", chat_model="openai/judge-model", provider_retries=0))
    assert state["verdict"]["scores"]["groundedness"] < 0.3 and state["verdict"]["final_decision"] == "BLOCK"
    assert "bounded by the deterministic checks" in state["verdict"]["reasoning"]["groundedness"]
    assert state["answer"] != invented  # the safe response replaced it
