"""Clients nobody on the project wrote, against a real `ragate serve` on 127.0.0.1: LangGraph's SDK,
`RemoteGraph` as a node of another graph, and the `mcp` package's streamable-HTTP client.

Each client is driven twice: against `make serve`'s set-up (`ragate serve --samples --local-dev`,
RAGATE_TENANT=acme, no keys), where a keyless caller is tenant acme on every route unless it names
another, and against the keyed server of conftest's `served` (no local development), where the key
decides the tenant, naming another one is refused (403) and a keyless request is refused (401).
"""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import httpx
import pytest
from jsonschema import Draft202012Validator

from graph import Ragate
from graph.entrypoints import http_app, mcp_server
from graph.output import to_output

ACME, GLOBEX = "acme-test-key-0001", "globex-test-key-0001"  # conftest.SERVER_KEYS
QUESTION = "Quanto cresceram as vendas de inverno em 2025?"
GLOBEX_QUESTION = "How much did sales grow in Q1 2026?"
ACME_DOC, GLOBEX_DOC = "acme-bi-2025-inverno-sales", "globex-bi-2026-q1-sales"
ROOT = Path(__file__).resolve().parent.parent
UPDATES = ["route_gate", "retrieve", "rrf", "rerank", "compose", "judge", "memory_shield"]  # a question not split: no bridge
CALL_SECONDS = 120  # one MCP session (initialize, list, a few calls): bounded, whatever the server does


@pytest.fixture(scope="module")
def served_local(tmp_path_factory):
    """What `make serve` runs: `ragate serve --samples --local-dev` with RAGATE_TENANT=acme, no keys."""
    pytest.importorskip("langgraph_api", reason="the LangGraph server is the serve extra: pip install -e '.[serve]'")
    from ragate_server import RagateServer

    with RagateServer(tmp_path_factory.mktemp("served-local-home"), local_dev=True, env={"RAGATE_TENANT": "acme"}) as srv:
        yield srv


def auth(key: str | None) -> dict[str, str] | None:
    return {"Authorization": f"Bearer {key}"} if key else None


def sdk(server, key: str | None = None):
    from langgraph_sdk import get_sync_client

    return get_sync_client(url=server.url, headers=auth(key), timeout=60)


def retrieved(state: dict) -> set[str]:
    return {c["docId"] for c in state.get("reranked") or []}


def status_of(exc: BaseException) -> int | None:
    return getattr(getattr(exc, "response", None), "status_code", None)


def server_paths(server) -> list[str]:
    """Paths only the server knows: the checkout (its policy file, prompts) and its data folder."""
    return [str(ROOT), str(server.home)]


# --- langgraph_sdk ---------------------------------------------------------------------------------


def check_sdk_client(client, tenant: str, question: str, doc: str) -> None:
    """runs.wait, runs.stream and two questions on one thread, all as `tenant`."""
    state = client.runs.wait(None, "ragate", input={"question": question})
    assert state["tenant"] == tenant and doc in state["citations_used"], state.get("rag")
    assert retrieved(state) and all(d.startswith(f"{tenant}-") for d in retrieved(state))

    updates, final = [], None
    for part in client.runs.stream(None, "ragate", input={"question": question}, stream_mode=["updates", "values"]):
        if part.event == "updates":
            updates.extend(part.data)
        elif part.event == "values":
            final = part.data
    assert updates == UPDATES and final["tenant"] == tenant and doc in final["citations_used"]

    thread_id = client.threads.create()["thread_id"]
    first = client.runs.wait(thread_id, "ragate", input={"question": question})
    second = client.runs.wait(thread_id, "ragate", input={"question": "E em 2024?" if tenant == "acme" else "And in 2025?"})
    assert first["tenant"] == second["tenant"] == tenant
    assert [turn["request_id"] for turn in second["history"]][:1] == [first["request_id"]]
    assert client.threads.get_state(thread_id)["values"]["request_id"] == second["request_id"]

    record = client.store.get_item(["ragate", "requests", tenant], second["request_id"])
    assert record["value"]["tenant"] == tenant and record["value"]["request_id"] == second["request_id"]


def test_langgraph_sdk_without_a_key_in_local_development_then_with_keys(served_local, served):
    # make serve: no key, the server's RAGATE_TENANT on /runs, threads and the store, as on /api/*
    check_sdk_client(sdk(served_local), "acme", QUESTION, ACME_DOC)
    assert httpx.get(f"{served_local.url}/api/session", timeout=30).json()["tenant"] == "acme"
    # local development lets a keyless run name its tenant
    state = sdk(served_local).runs.wait(None, "ragate", input={"question": GLOBEX_QUESTION}, context={"tenant": "globex"})
    assert state["tenant"] == "globex" and GLOBEX_DOC in state["citations_used"]

    # keys: the key's tenant, another one refused, no key refused
    check_sdk_client(sdk(served, GLOBEX), "globex", GLOBEX_QUESTION, GLOBEX_DOC)
    check_sdk_client(sdk(served, ACME), "acme", QUESTION, ACME_DOC)
    with pytest.raises(Exception) as err:
        sdk(served, GLOBEX).runs.wait(None, "ragate", input={"question": QUESTION}, context={"tenant": "acme"})
    assert status_of(err.value) == 403, err.value
    with pytest.raises(Exception) as err:
        sdk(served).runs.wait(None, "ragate", input={"question": QUESTION})
    assert status_of(err.value) == 401, err.value


# --- RemoteGraph as a node of another graph ----------------------------------------------------------


def desk_graph(remote):
    """Another team's graph with ragate's server as one of its nodes."""
    from langgraph.graph import END, START, StateGraph
    from typing_extensions import TypedDict

    class Desk(TypedDict, total=False):
        question: str
        answer: str
        citations_used: list[str]

    desk = StateGraph(Desk)
    desk.add_node("ragate", remote)
    desk.add_edge(START, "ragate")
    desk.add_edge("ragate", END)
    return desk.compile()


def test_remote_graph_as_a_node_without_a_key_in_local_development_then_with_keys(served_local, served):
    from langgraph.pregel.remote import RemoteGraph

    out = desk_graph(RemoteGraph("ragate", url=served_local.url)).invoke({"question": QUESTION})
    assert out["answer"] and ACME_DOC in out["citations_used"]
    assert all(d.startswith("acme-") for d in out["citations_used"])

    out = desk_graph(RemoteGraph("ragate", url=served.url, headers=auth(GLOBEX))).invoke({"question": GLOBEX_QUESTION})
    assert GLOBEX_DOC in out["citations_used"] and all(d.startswith("globex-") for d in out["citations_used"])
    with pytest.raises(Exception) as err:
        RemoteGraph("ragate", url=served.url, headers=auth(GLOBEX)).invoke({"question": QUESTION},
                                                                          context={"tenant": "acme"})
    assert status_of(err.value) == 403, err.value
    with pytest.raises(Exception) as err:
        desk_graph(RemoteGraph("ragate", url=served.url)).invoke({"question": QUESTION})
    assert status_of(err.value) == 401, err.value


# --- the mcp client ---------------------------------------------------------------------------------


def mcp_session(server, key: str | None, action):
    """`action(session)` in an initialized MCP session over streamable HTTP, within CALL_SECONDS."""
    import httpx2
    from mcp.client.session import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    async def run():
        with anyio.fail_after(CALL_SECONDS):
            async with (httpx2.AsyncClient(headers=auth(key), timeout=60, trust_env=False) as http,
                        streamable_http_client(f"{server.url}/mcp", http_client=http) as (read, write),
                        ClientSession(read, write) as session):
                await session.initialize()
                return await action(session)

    return anyio.run(run)


def calls(*arguments: dict):
    """An MCP action: the tool's listing, then one tools/call per arguments."""

    async def action(session):
        (tool,) = [t for t in (await session.list_tools()).tools if t.name == mcp_server.TOOL_NAME]
        return tool, [await session.call_tool(mcp_server.TOOL_NAME, args) for args in arguments]

    return action


def contract_of(result, server) -> dict:
    """The structured output of a successful call, checked: the JSON text block says the same, and
    neither holds a state dump or a path of the server's."""
    assert not result.is_error, result.content
    output = result.structured_content
    assert isinstance(output, dict)
    (block,) = result.content
    assert block.type == "text" and json.loads(block.text) == output
    assert {"answer", "direct_answer", "citations_used", "coverage_level", "verdict", "sources", "request_id", "thread_id"} <= set(output)
    assert output["verdict"]["final_decision"] in ("OK", "WARNING", "BLOCK")
    assert "reranked" not in output and "hits" not in output and "'tenant':" not in block.text  # no state, no repr
    assert output["rag"]["policy"]["digest"] and "path" not in output["rag"]["policy"]
    for path in server_paths(server):
        assert path not in block.text, path
    return output


def chat_error(server, key: str | None, body: dict) -> str:
    """What /api/chat says to the same body."""
    r = httpx.post(f"{server.url}/api/chat", json=body, headers=auth(key), timeout=60)
    assert 400 <= r.status_code < 500, r.text
    return r.json()["error"]


BAD_ARGUMENTS = [{"question": 5}, {"question": ""}, {"question": "   "}, {"question": "x" * 4001}, {},
                 {"question": QUESTION, "intent": "no-such-intent"}]


def check_bad_input(server, key: str | None, results) -> None:
    for args, result in zip(BAD_ARGUMENTS, results, strict=True):
        assert result.is_error and result.structured_content is None, (args, result)
        (block,) = result.content
        assert block.text == chat_error(server, key, args), args


def test_mcp_client_without_a_key_in_local_development(served_local):
    tool, results = mcp_session(served_local, None, calls(
        {"question": QUESTION},
        {"question": GLOBEX_QUESTION, "tenant": "globex"},          # local development may name a tenant
        {"question": QUESTION, "thread_id": "mcp-desk-1"},
        {"question": "E em 2024?", "thread_id": "mcp-desk-1", "context": {"top_n": 2}},
        {"question": QUESTION, "colour": "blue"},
        *BAD_ARGUMENTS))
    assert {"question", "tenant", "thread_id", "context"} <= set(tool.input_schema["properties"])
    assert tool.input_schema["required"] == ["question"]
    assert "citations" in tool.description and tool.output_schema["type"] == "object"

    acme = contract_of(results[0], served_local)
    assert ACME_DOC in acme["citations_used"] and all(s["docId"].startswith("acme-") for s in acme["sources"])
    globex = contract_of(results[1], served_local)
    assert GLOBEX_DOC in globex["citations_used"] and all(s["docId"].startswith("globex-") for s in globex["sources"])
    first, second = contract_of(results[2], served_local), contract_of(results[3], served_local)
    assert first["thread_id"] == second["thread_id"] == "mcp-desk-1" and len(second["sources"]) <= 2
    assert second["request_id"] != first["request_id"]
    assert results[4].is_error and results[4].content[0].text.startswith("unknown field(s): colour; accepted: ")
    check_bad_input(served_local, None, results[5:])


def test_mcp_client_with_keys(served):
    _, results = mcp_session(served, GLOBEX, calls(
        {"question": GLOBEX_QUESTION},
        {"question": GLOBEX_QUESTION, "tenant": "globex"},
        {"question": QUESTION, "tenant": "acme"},                   # not this key's tenant
        *BAD_ARGUMENTS))
    for result in results[:2]:
        out = contract_of(result, served)
        assert GLOBEX_DOC in out["citations_used"] and all(s["docId"].startswith("globex-") for s in out["sources"])
    assert results[2].is_error and results[2].content[0].text == chat_error(served, GLOBEX, {"question": QUESTION,
                                                                                             "tenant": "acme"})
    assert "cannot read tenant 'acme'" in results[2].content[0].text
    check_bad_input(served, GLOBEX, results[3:])

    _, (result,) = mcp_session(served, ACME, calls({"question": QUESTION}))
    out = contract_of(result, served)
    assert ACME_DOC in out["citations_used"] and all(s["docId"].startswith("acme-") for s in out["sources"])

    for key in (None, "not-a-real-key-000"):
        r = httpx.post(f"{served.url}/mcp", headers={"Accept": "application/json, text/event-stream", **(auth(key) or {})},
                       json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, timeout=30)
        assert r.status_code == 401 and r.headers["www-authenticate"] == "Bearer", r.text


# --- what the tool declares ---------------------------------------------------------------------------


def test_the_mcp_tool_takes_what_api_chat_takes_and_declares_the_output_contract(corpus):
    assert set(mcp_server.INPUT_SCHEMA["properties"]) == http_app.CHAT_FIELDS
    Draft202012Validator.check_schema(mcp_server.OUTPUT_SCHEMA)
    rag = Ragate(corpus.context("acme"))
    output = {**rag.ask(QUESTION), "thread_id": None}
    Draft202012Validator(mcp_server.OUTPUT_SCHEMA).validate(output)
    assert set(mcp_server.OUTPUT_SCHEMA["properties"]) >= set(to_output({})) | {"thread_id"}


def test_the_output_contract_names_no_server_path(corpus, write_policy):
    good = Ragate(corpus.context("acme")).ask(QUESTION)
    assert good["rag"]["policy"]["digest"] and "path" not in good["rag"]["policy"]
    assert str(ROOT) not in json.dumps(good, ensure_ascii=False)

    broken = write_policy(text="routing: [1, 2\n")  # not YAML: retrieval off, the reason in the answer
    out = Ragate(corpus.context("acme", policy_path=str(broken))).ask(QUESTION)
    assert out["rag"]["disabled_reason"] == "policy_invalid"
    assert out["rag"]["error"].startswith(f"retrieval disabled: policy {broken.name}: is not valid YAML")
    assert str(broken.parent) not in json.dumps(out, ensure_ascii=False)
