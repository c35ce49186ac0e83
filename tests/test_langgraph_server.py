"""The LangGraph server (`ragate serve` = `langgraph dev` on langgraph.json) over real HTTP on
127.0.0.1: the graph, its conditional edges and its context schema as Studio sees them; runs
through /runs/wait and /runs/stream (updates, and compose's tokens); the caller's API key deciding
the tenant everywhere (runs, threads, store, MCP); `langgraph-sdk`, `RemoteGraph` and an MCP client."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest
from scripted_server import Reply

ACME, GLOBEX = "acme-test-key-0001", "globex-test-key-0001"
QUESTION = "Quanto cresceram as vendas de inverno em 2025?"
NODES = {"route_gate", "decompose", "retrieve", "rrf", "rerank", "bridge", "compose", "judge", "safe_response", "memory_shield"}


def auth(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def sdk(server, key: str | None):
    from langgraph_sdk import get_sync_client

    return get_sync_client(url=server.url, headers=auth(key) if key else None, timeout=60)


def cited_docs(state: dict) -> list[str]:
    return list(state.get("citations_used") or [])


def retrieved_docs(state: dict) -> set[str]:
    return {c["docId"] for c in state.get("reranked") or []}


# --- what Studio sees -------------------------------------------------------------------------------


def test_the_assistant_shows_its_nodes_conditional_edges_and_context_schema(served):
    client = sdk(served, ACME)
    (assistant,) = client.assistants.search(graph_id="ragate")
    assert "tenant" in assistant["description"]
    drawn = client.assistants.get_graph(assistant["assistant_id"])
    assert NODES <= {n["id"] for n in drawn["nodes"]}
    conditional = {(e["source"], e["target"]) for e in drawn["edges"] if e.get("conditional")}
    assert {("route_gate", "decompose"), ("route_gate", "retrieve"), ("route_gate", "compose"),
            ("rerank", "bridge"), ("rerank", "compose"), ("bridge", "retrieve"), ("bridge", "compose"),
            ("judge", "safe_response"), ("judge", "memory_shield")} <= conditional
    schemas = client.assistants.get_schemas(assistant["assistant_id"])
    context = schemas["context_schema"]["properties"]
    assert {"tenant", "policy_path", "chat_model", "top_n"} <= set(context)
    assert "restricted to it inside the vector engine" in context["tenant"]["description"]
    assert "question" in schemas["input_schema"]["properties"]
    # a caller's own id is a correlation id; the request id is the server's and not an input
    assert "correlation_id" in schemas["input_schema"]["properties"]
    assert "request_id" not in schemas["input_schema"]["properties"]


# --- runs ---------------------------------------------------------------------------------------


def test_runs_wait_answers_from_the_keys_tenant_only(served):
    state = sdk(served, GLOBEX).runs.wait(None, "ragate", input={"question": "How much did sales grow in Q1 2026?"})
    assert state["tenant"] == "globex"
    assert retrieved_docs(state) and all(d.startswith("globex-") for d in retrieved_docs(state))
    state = sdk(served, ACME).runs.wait(None, "ragate", input={"question": QUESTION})
    assert state["tenant"] == "acme" and state["verdict"]["final_decision"] == "OK"
    assert "acme-bi-2025-inverno-sales" in cited_docs(state)
    assert all(d.startswith("acme-") for d in retrieved_docs(state))


@pytest.mark.parametrize("context, status, says", [
    ({"tenant": "globex"}, 403, "cannot read tenant 'globex'"),
    ({"policy_path": "/etc/passwd"}, 403, "policy_path are the server's settings"),
    ({"home": "/tmp/elsewhere"}, 403, "home are the server's settings"),
    ({"top_n": "many"}, 422, None),
])
def test_a_run_context_cannot_pick_another_tenant_or_a_server_setting(served, context, status, says):
    r = httpx.post(f"{served.url}/runs/wait", headers=auth(ACME), timeout=30,
                   json={"assistant_id": "ragate", "input": {"question": QUESTION}, "context": context})
    assert r.status_code == status, r.text
    if says:
        assert says in r.json()["detail"]


def test_the_caller_may_tune_a_run_within_its_tenant(served):
    state = sdk(served, ACME).runs.wait(None, "ragate", input={"question": QUESTION}, context={"top_n": 2, "tenant": "acme"})
    assert state["tenant"] == "acme" and len(state["reranked"]) <= 2


@pytest.mark.parametrize("method, path, body", [
    ("POST", "/runs/wait", {"assistant_id": "ragate", "input": {"question": QUESTION}}),
    ("POST", "/assistants/search", {}),
    ("POST", "/threads", {}),
    ("POST", "/store/items/search", {"namespace_prefix": ["ragate"]}),
])
def test_requests_without_a_key_or_with_an_unknown_one_are_refused(served, method, path, body):
    for headers in ({}, auth("not-a-real-key-000")):
        r = httpx.request(method, f"{served.url}{path}", json=body, headers=headers, timeout=30)
        assert r.status_code == 401, (path, r.text)


def test_runs_stream_shows_each_node_as_it_finishes(served):
    nodes = []
    for part in sdk(served, ACME).runs.stream(None, "ragate", input={"question": QUESTION}, stream_mode="updates"):
        if part.event == "updates":
            nodes.extend(part.data)
    assert nodes == ["route_gate", "retrieve", "rrf", "rerank", "compose", "judge", "memory_shield"]


COMPOSED = ("As vendas do inverno 2025 cresceram 7,9% sobre o inverno 2024 [acme-bi-2025-inverno-sales].\n\n"
            "- A receita bruta foi de R$ 118.430.227,35 [acme-bi-2025-inverno-sales].")
VERDICT = {"scores": {"quality": 0.9, "utility": 0.9, "groundedness": 0.95},
           "reasoning": {"quality": "q", "utility": "u", "groundedness": "g"}, "final_decision": "OK"}


def test_compose_tokens_stream_through_the_server(served_dev, scripted_server):
    scripted_server.reset()
    scripted_server.default("/v1/chat/completions", lambda body: Reply.chat(json.dumps(VERDICT)))  # the judge
    scripted_server.script("/v1/chat/completions", Reply.chat(COMPOSED, chunk_chars=8))           # compose, first
    tokens, final = [], None
    context = {"tenant": "acme", "chat_model": "openai/composer", "provider_retries": 0}
    for part in sdk(served_dev, None).runs.stream(None, "ragate", input={"question": QUESTION}, context=context,
                                                  stream_mode=["messages-tuple", "values"]):
        if part.event == "messages":
            message, meta = part.data
            assert meta["langgraph_node"] == "compose"  # the judge's JSON never streams
            tokens.append(message["content"])
        elif part.event == "values":
            final = part.data
    assert len(tokens) > 5 and "".join(tokens) == COMPOSED
    assert final["answer"].startswith(COMPOSED) and final["verdict"]["final_decision"] == "OK"


def test_local_development_mode_serves_keyless_callers_the_tenant_they_name(served_dev):
    state = sdk(served_dev, None).runs.wait(None, "ragate", input={"question": QUESTION}, context={"tenant": "globex"})
    assert state["tenant"] == "globex" and all(d.startswith("globex-") for d in retrieved_docs(state))
    # a key still binds its tenant, local development or not
    r = httpx.post(f"{served_dev.url}/runs/wait", headers=auth(ACME), timeout=30,
                   json={"assistant_id": "ragate", "input": {"question": QUESTION}, "context": {"tenant": "globex"}})
    assert r.status_code == 403


# --- threads and the store belong to a tenant -----------------------------------------------------


def test_threads_are_visible_to_their_tenant_only(served):
    acme, globex = sdk(served, ACME), sdk(served, GLOBEX)
    thread = acme.threads.create()
    first = acme.runs.wait(thread["thread_id"], "ragate", input={"question": QUESTION})
    second = acme.runs.wait(thread["thread_id"], "ragate", input={"question": "E em 2024?"})
    assert [t["request_id"] for t in second["history"]][:1] == [first["request_id"]]
    assert thread["thread_id"] in {t["thread_id"] for t in acme.threads.search(limit=100)}
    assert thread["thread_id"] not in {t["thread_id"] for t in globex.threads.search(limit=100)}
    for call in (lambda: globex.threads.get(thread["thread_id"]),
                 lambda: globex.threads.get_state(thread["thread_id"]),
                 lambda: globex.runs.wait(thread["thread_id"], "ragate", input={"question": QUESTION})):
        with pytest.raises(Exception) as err:
            call()
        assert getattr(getattr(err.value, "response", None), "status_code", None) in (403, 404), err.value


def test_the_store_is_readable_under_the_callers_tenant_only(served):
    state = sdk(served, ACME).runs.wait(None, "ragate", input={"question": QUESTION})
    acme = sdk(served, ACME)
    record = acme.store.get_item(["ragate", "requests", "acme"], state["request_id"])
    assert record["value"]["request_id"] == state["request_id"] and record["value"]["tenant"] == "acme"
    for ns in (["ragate", "requests", "globex"], ["ragate", "memory", "globex"], ["ragate"]):
        r = httpx.post(f"{served.url}/store/items/search", headers=auth(ACME), json={"namespace_prefix": ns}, timeout=30)
        assert r.status_code == 403, (ns, r.text)


def test_a_run_and_the_debug_route_share_one_store(served):
    state = sdk(served, ACME).runs.wait(None, "ragate", input={"question": QUESTION})
    r = httpx.get(f"{served.url}/ops/rag_debug/{state['request_id']}", headers=auth(ACME), timeout=30)
    assert r.status_code == 200 and r.json()["citations_used"] == state["citations_used"]
    assert httpx.get(f"{served.url}/ops/rag_debug/{state['request_id']}", headers=auth(GLOBEX), timeout=30).status_code == 404


# --- request ids are the server's ------------------------------------------------------------------


def run_wait(server, key: str, run_input: dict, thread_id: str | None = None) -> dict:
    path = f"/threads/{thread_id}/runs/wait" if thread_id else "/runs/wait"
    r = httpx.post(f"{server.url}{path}", headers=auth(key), timeout=60, json={"assistant_id": "ragate", "input": run_input})
    assert r.status_code == 200, r.text
    return r.json()


def test_a_run_naming_a_request_id_is_refused_and_the_record_stays(served):
    """A run's input used to set the request id: an existing id was reused and its record (and the
    rating on it) rewritten with another question."""
    acme = sdk(served, ACME)
    first = acme.runs.wait(None, "ragate", input={"question": QUESTION})
    for request_id in (first["request_id"], "a-new-id-of-mine"):
        refused = run_wait(served, ACME, {"question": "vendas", "request_id": request_id})
        assert refused["__error__"]["error"] == "QuestionError", refused
        assert "send correlation_id" in refused["__error__"]["message"]
    record = acme.store.get_item(["ragate", "requests", "acme"], first["request_id"])["value"]
    assert record["question"] == QUESTION and record["request_id"] == first["request_id"]
    assert not acme.store.get_item(["ragate", "requests", "acme"], "a-new-id-of-mine")


def test_a_thread_run_naming_its_last_request_id_is_refused_and_the_thread_goes_on(served):
    acme = sdk(served, ACME)
    thread_id = acme.threads.create()["thread_id"]
    turn = acme.runs.wait(thread_id, "ragate", input={"question": QUESTION})
    refused = run_wait(served, ACME, {"question": "E em 2024?", "request_id": turn["request_id"]}, thread_id)
    assert "send correlation_id" in refused["__error__"]["message"], refused
    follow = run_wait(served, ACME, {"question": "E em 2024?", "correlation_id": "desk-42"}, thread_id)
    assert follow["request_id"] not in (turn["request_id"], "desk-42")
    assert follow["rag"]["correlation_id"] == "desk-42"
    assert [t["request_id"] for t in follow["history"]] == [turn["request_id"], follow["request_id"]]
    record = acme.store.get_item(["ragate", "requests", "acme"], follow["request_id"])["value"]
    assert (record["correlation_id"], record["question"]) == ("desk-42", "E em 2024?")
    assert acme.store.get_item(["ragate", "requests", "acme"], turn["request_id"])["value"]["question"] == QUESTION
    # the next turn sends none: it does not inherit the previous turn's
    last = run_wait(served, ACME, {"question": "E em 2023?"}, thread_id)
    assert last["rag"]["correlation_id"] is None
    assert acme.store.get_item(["ragate", "requests", "acme"], last["request_id"])["value"]["correlation_id"] is None


def test_a_bad_correlation_id_is_refused_by_the_graph(served):
    refused = run_wait(served, ACME, {"question": QUESTION, "correlation_id": "not a valid id!"})
    assert "correlation_id must be 1-128 letters" in refused["__error__"]["message"], refused


# --- other agents: RemoteGraph and MCP -----------------------------------------------------------


def test_remote_graph_runs_on_the_server_and_nests_in_a_local_graph(served):
    from langgraph.graph import END, START, StateGraph
    from langgraph.pregel.remote import RemoteGraph
    from typing_extensions import TypedDict

    remote = RemoteGraph("ragate", url=served.url, headers=auth(ACME))
    state = remote.invoke({"question": QUESTION})
    assert "acme-bi-2025-inverno-sales" in cited_docs(state)

    class Desk(TypedDict, total=False):
        question: str
        answer: str
        citations_used: list[str]

    desk = StateGraph(Desk)
    desk.add_node("ragate", remote)
    desk.add_edge(START, "ragate")
    desk.add_edge("ragate", END)
    out = desk.compile().invoke({"question": QUESTION})
    assert out["answer"] and "acme-bi-2025-inverno-sales" in out["citations_used"]
    with pytest.raises(Exception, match="send correlation_id"):
        remote.invoke({"question": QUESTION, "request_id": "remote-1"})


def _mcp(server, key, action):
    import httpx2
    from mcp.client.session import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    async def run():
        async with httpx2.AsyncClient(headers=auth(key), timeout=60) as http:
            async with streamable_http_client(f"{server.url}/mcp", http_client=http) as (read, write):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    return await action(session)

    return asyncio.run(run())


def test_mcp_lists_the_graph_as_a_tool_and_calls_it_for_the_keys_tenant(served):
    async def list_tools(session):
        return (await session.list_tools()).tools

    (tool,) = [t for t in _mcp(served, ACME, list_tools) if t.name == "ragate"]
    assert "question" in tool.input_schema["properties"] and "citations" in tool.description

    async def call(session):
        return await session.call_tool("ragate", {"question": QUESTION})

    result = _mcp(served, GLOBEX, call)
    text = " ".join(c.text for c in result.content)
    assert not result.is_error and "acme-" not in text  # the output contract (tests/test_clients.py checks it)
    assert all(s["docId"].startswith("globex-") for s in result.structured_content["sources"])
    result = _mcp(served, ACME, call)
    assert "acme-bi-2025-inverno-sales" in " ".join(c.text for c in result.content)


def test_mcp_without_a_key_is_refused(served):
    r = httpx.post(f"{served.url}/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, timeout=30,
                   headers={"Accept": "application/json, text/event-stream"})
    assert r.status_code == 401

