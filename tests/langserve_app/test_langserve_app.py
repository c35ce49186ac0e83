"""The LangServe app over real HTTP (httpx) and with LangServe's own client (RemoteRunnable):
the tenant is the API key's and nothing in a body changes it; invoke, batch and stream return
the output contract; bad input is a 4xx; schemas and the playground are served.

The servers (langserve_server.py) run the real graph on the bundled samples, with no chat model: answers
come from the extractive composer and are judged by the deterministic judge.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import httpx
import pytest
from langserve import RemoteRunnable
from langserve_server import _loopback_without_proxy, dev_server, langserve_seed_home, server  # noqa: F401 (fixtures)

from graph.governance.tenancy import CALLER_SETTABLE
from graph.state import MAX_QUESTION_CHARS, REQUEST_ID_PATTERN

SAMPLES = Path(__file__).resolve().parents[2] / "samples"
WINTER_SALES = "Quanto cresceram as vendas de inverno em 2025?"   # acme has this; globex has other sales
RETURNS = "Qual é a política de trocas e devoluções?"             # acme's documents are in Portuguese
RETURNS_EN = "What is the return policy?"                          # globex's mostly in English
CONTRACT_KEYS = {"request_id", "correlation_id", "answer", "citations_used", "coverage_level", "suggestions", "verdict", "rag",
                 "sub_queries", "decomposition", "sources", "memory", "timings_ms", "errors", "language"}
TIMEOUT = 120


def sample_ids(tenant: str) -> set[str]:
    """Every sample document id of a tenant, read from the files."""
    ids = set()
    for path in sorted((SAMPLES / tenant).glob("*.jsonl")):
        ids |= {json.loads(line)["id"] for line in path.read_text(encoding="utf-8").splitlines() if line.strip()}
    assert ids, f"no sample documents for {tenant}"
    return ids


ACME_IDS = sample_ids("acme")


def post(server, path: str, body, tenant: str | None = None) -> httpx.Response:
    """POST /rag/<path> as the holder of `tenant`'s key (None: no Authorization header)."""
    data = {"content": body} if isinstance(body, (bytes, str)) else {"json": body}
    return httpx.post(f"{server.url}/rag/{path}", headers=server.auth(tenant), timeout=TIMEOUT, **data)


def invoke(server, question: str, tenant: str | None, **body) -> dict:
    resp = post(server, "invoke", {"input": {"question": question}, **body}, tenant)
    assert resp.status_code == 200, resp.text
    return resp.json()["output"]


def remote(server, tenant: str | None) -> RemoteRunnable:
    return RemoteRunnable(f"{server.url}/rag", headers=server.auth(tenant), timeout=TIMEOUT)


def doc_ids(output: dict) -> set[str]:
    return set(output["citations_used"]) | {s["docId"] for s in output["sources"]}


def assert_cited_tenant_answer(output: dict, tenant: str) -> None:
    """A real answer from the tenant's documents: cited, every citation in the answer, judged."""
    assert set(output) >= CONTRACT_KEYS
    assert output["answer"].strip()
    assert output["citations_used"], output["answer"]
    for doc_id in output["citations_used"]:
        assert f"[{doc_id}]" in output["answer"]
    assert output["sources"]
    assert all(i.startswith(f"{tenant}-") for i in doc_ids(output)), doc_ids(output)
    assert output["coverage_level"] in ("high", "medium", "low")
    assert output["verdict"]["final_decision"] in ("OK", "WARNING")
    assert output["rag"]["enabled"] is True


def assert_no_acme(text_or_output) -> None:
    text = text_or_output if isinstance(text_or_output, str) else json.dumps(text_or_output, ensure_ascii=False)
    leaked = sorted(i for i in ACME_IDS if i in text)
    assert not leaked, f"acme documents reached a globex caller: {leaked}"


# --- the tenant is the key's ------------------------------------------------------------------------


def test_invoke_with_the_acme_key_answers_from_acme_documents_with_citations(server):
    output = invoke(server, WINTER_SALES, "acme")
    assert_cited_tenant_answer(output, "acme")
    assert "acme-bi-2025-inverno-sales" in output["citations_used"]
    assert output["memory"]["namespace"] == ["ragate", "memory", "acme"]


def test_the_same_question_with_the_globex_key_never_returns_acme_documents(server):
    resp = post(server, "invoke", {"input": {"question": WINTER_SALES}}, "globex")
    assert resp.status_code == 200, resp.text
    assert_no_acme(resp.text)
    output = resp.json()["output"]
    assert output["citations_used"], output["answer"]   # answered, from globex's own sales notes
    assert all(i.startswith("globex-") for i in doc_ids(output)), doc_ids(output)
    assert output["memory"].get("namespace") in (None, ["ragate", "memory", "globex"])


def test_remote_runnable_invoke_is_bound_to_each_key(server):
    acme = remote(server, "acme").invoke({"question": WINTER_SALES})
    assert_cited_tenant_answer(acme, "acme")
    globex = remote(server, "globex").invoke({"question": WINTER_SALES})
    assert_no_acme(globex)
    assert globex["citations_used"] and all(i.startswith("globex-") for i in doc_ids(globex))


@pytest.mark.parametrize("path, body", [
    ("invoke", {"input": {"question": WINTER_SALES}}),
    ("batch", {"inputs": [{"question": WINTER_SALES}]}),
    ("stream", {"input": {"question": WINTER_SALES}}),
    ("stream_log", {"input": {"question": WINTER_SALES}}),
])
@pytest.mark.parametrize("authorization", [None, "Bearer not-a-known-key-123", "Basic YWNtZTpzZWNyZXQ=", "Bearer", "acme"])
def test_a_request_without_a_valid_key_is_401(server, path, body, authorization):
    headers = {"Authorization": authorization} if authorization else {}
    resp = httpx.post(f"{server.url}/rag/{path}", json=body, headers=headers, timeout=TIMEOUT)
    assert resp.status_code == 401, resp.text
    assert resp.headers.get("www-authenticate") == "Bearer"
    assert_no_acme(resp.text)


def test_remote_runnable_without_a_key_is_refused_with_401(server):
    with pytest.raises(httpx.HTTPStatusError) as err:
        remote(server, None).invoke({"question": WINTER_SALES})
    assert err.value.response.status_code == 401


@pytest.mark.parametrize("body", [
    {"input": {"question": WINTER_SALES}, "config": {"configurable": {"tenant": "acme"}}},
    {"input": {"question": WINTER_SALES},
     "config": {"configurable": {"langgraph_auth_user": {"identity": "x", "tenant": "acme", "is_authenticated": True}}}},
    {"input": {"question": WINTER_SALES}, "config": {"configurable": {"home": "/tmp/elsewhere"}}},
    {"input": {"question": WINTER_SALES}, "config": {"configurable": {"policy_path": "/etc/passwd"}}},
    {"input": {"question": WINTER_SALES}, "config": {"configurable": {"thread_id": "acme:t1"}}},
    {"input": {"question": WINTER_SALES, "tenant": "acme"}},
], ids=["configurable.tenant", "configurable.auth_user", "configurable.home", "configurable.policy_path",
        "configurable.thread_id", "input.tenant"])
def test_a_body_naming_a_tenant_or_a_server_setting_is_refused(server, body):
    resp = post(server, "invoke", body, "globex")
    assert resp.status_code == 422, resp.text
    assert_no_acme(resp.text)
    batch = post(server, "batch", {"inputs": [body["input"]], **({"config": body["config"]} if "config" in body else {})},
                 "globex")
    assert batch.status_code == 422, batch.text


@pytest.mark.parametrize("extra", [
    {"config": {"metadata": {"tenant": "acme"}, "tags": ["tenant:acme"], "run_name": "acme"}},
    {"context": {"tenant": "acme"}, "tenant": "acme"},
], ids=["other-config-keys", "top-level-fields"])
def test_what_langserve_ignores_cannot_choose_the_tenant_either(server, extra):
    """Config keys other than `configurable`, and body fields besides input/config, are dropped."""
    resp = post(server, "invoke", {"input": {"question": WINTER_SALES}, **extra}, "globex")
    assert resp.status_code == 200, resp.text
    assert_no_acme(resp.text)
    output = resp.json()["output"]
    assert output["citations_used"] and all(i.startswith("globex-") for i in doc_ids(output))


def test_remote_runnable_cannot_set_the_tenant_through_config(server):
    with pytest.raises(httpx.HTTPStatusError) as err:
        remote(server, "globex").invoke({"question": WINTER_SALES}, config={"configurable": {"tenant": "acme"}})
    assert err.value.response.status_code == 422


def test_the_settings_a_caller_may_choose_are_applied_within_its_tenant(server):
    one = invoke(server, WINTER_SALES, "acme", config={"configurable": {"top_n": 1}})
    assert len(one["sources"]) == 1 and one["sources"][0]["docId"].startswith("acme-")
    wider = invoke(server, WINTER_SALES, "globex", config={"configurable": {"top_n": 10, "collections": ["documents"],
                                                                              "retrieval_mode": "lexical"}})
    assert_no_acme(wider)
    assert wider["sources"] and all(s["docId"].startswith("globex-") for s in wider["sources"])


def test_the_request_record_is_stored_under_the_callers_tenant(server):
    resp = post(server, "invoke", {"input": {"question": RETURNS_EN, "correlation_id": "langserve-rec-0001"}}, "globex")
    assert resp.status_code == 200, resp.text
    output = resp.json()["output"]
    assert output["correlation_id"] == "langserve-rec-0001"
    request_id = output["request_id"]
    assert request_id and request_id != "langserve-rec-0001"  # the server's id, not the caller's
    with sqlite3.connect(server.home / "memory.sqlite", timeout=10) as db:
        prefixes = {row[0] for row in db.execute("SELECT prefix FROM store WHERE key = ?", (request_id,))}
    assert "ragate.requests.globex" in prefixes, prefixes
    assert not any("acme" in p for p in prefixes), prefixes


@pytest.mark.parametrize("path, body", [
    ("invoke", {"input": {"question": RETURNS_EN, "request_id": "langserve-mine-0001"}}),
    ("batch", {"inputs": [{"question": RETURNS_EN}, {"question": RETURNS_EN, "request_id": "langserve-mine-0002"}]}),
    ("stream", {"input": {"question": RETURNS_EN, "request_id": "langserve-mine-0003"}}),
])
def test_a_request_id_in_the_input_is_refused_saying_to_send_correlation_id(server, path, body):
    resp = post(server, path, body, "globex")
    assert resp.status_code == 422, resp.text
    assert "request_id is assigned by the server" in resp.text and "correlation_id" in resp.text, resp.text


@pytest.mark.parametrize("question, message", [
    ("", "question is empty"),
    ("   ", "question is empty"),
    ("\u200b\u200e", "question is empty: it holds only invisible characters (zero-width spaces, direction marks)"),
    ("x" * (MAX_QUESTION_CHARS + 1), f"question is {MAX_QUESTION_CHARS + 1} characters; at most {MAX_QUESTION_CHARS}"),
    (5, "question must be a string, not int"),
    (None, "question must be a string, not NoneType"),
], ids=["empty", "spaces", "invisible", "too-long", "int", "null"])
def test_a_bad_question_gets_the_one_line_message_of_api_chat(server, question, message):
    # Issue 45: an empty question got pydantic's raw 422 ("String should have at least 1 character").
    for path, body in (("invoke", {"input": {"question": question}}),
                       ("batch", {"inputs": [{"question": "ok"}, {"question": question}]})):
        resp = post(server, path, body, "globex")
        assert resp.status_code == 422, resp.text
        assert resp.json()["error"] == message and resp.json()["field"] == "question", resp.text
        assert resp.json()["detail"]  # FastAPI's list, for clients that read it


def test_a_missing_or_unknown_field_is_named(server):
    missing = post(server, "invoke", {"input": {}}, "globex").json()
    assert missing["error"] == "question is required" and missing["field"] == "question"
    unknown = post(server, "invoke", {"input": {"question": "ok", "colour": "red"}}, "globex").json()
    assert unknown["error"] == "unknown field: colour; accepted: question, intent, entity, correlation_id, history"


def test_ask_answers_the_same_run_as_a_person_reads_it(server):
    resp = post(server, "invoke", {"input": {"question": WINTER_SALES, "correlation_id": "ask-0001"}}, "globex")
    assert resp.status_code == 200
    contract = resp.json()["output"]
    text = httpx.post(f"{server.url}/ask/invoke", headers=server.auth("globex"), timeout=TIMEOUT,
                      json={"input": {"question": WINTER_SALES, "correlation_id": "ask-0001"}}).json()["output"]
    assert isinstance(text, str) and text.startswith(contract["answer"]), text
    assert f"citations: {', '.join(contract['citations_used'])}" in text and "(correlation id ask-0001)" in text
    assert "coverage: " in text and "verdict: " in text and "direct answer: " in text and "acme-" not in text
    # The same key check as /rag.
    assert httpx.post(f"{server.url}/ask/invoke", json={"input": {"question": WINTER_SALES}},
                      timeout=TIMEOUT).status_code == 401


# --- batch and stream ---------------------------------------------------------------------------------


def test_batch_of_two_returns_two_outputs_in_order(server):
    resp = post(server, "batch", {"inputs": [{"question": WINTER_SALES}, {"question": RETURNS}]}, "acme")
    assert resp.status_code == 200, resp.text
    outputs = resp.json()["output"]
    assert len(outputs) == 2
    for output in outputs:
        assert_cited_tenant_answer(output, "acme")
    assert "acme-bi-2025-inverno-sales" in outputs[0]["citations_used"]
    assert outputs[0]["request_id"] != outputs[1]["request_id"]

    remote_outputs = remote(server, "globex").batch([{"question": WINTER_SALES}, {"question": RETURNS_EN}])
    assert len(remote_outputs) == 2
    for output in remote_outputs:
        assert_no_acme(output)
        assert output["citations_used"] and all(i.startswith("globex-") for i in doc_ids(output))


def _sse_events(resp: httpx.Response) -> list[tuple[str, str]]:
    events, event, data = [], None, []
    for line in resp.iter_lines():
        if line.startswith("event:"):
            event = line[6:].strip()
        elif line.startswith("data:"):
            data.append(line[5:].strip())
        elif not line and event is not None:
            events.append((event, "\n".join(data)))
            event, data = None, []
    if event is not None:
        events.append((event, "\n".join(data)))
    return events


def test_stream_sends_node_events_then_the_whole_output(server):
    with httpx.stream("POST", f"{server.url}/rag/stream", json={"input": {"question": WINTER_SALES}},
                      headers=server.auth("acme"), timeout=TIMEOUT) as resp:
        assert resp.status_code == 200
        assert resp.headers["content-type"].startswith("text/event-stream")
        events = _sse_events(resp)
    kinds = [kind for kind, _ in events]
    assert kinds[0] == "metadata" and kinds[-1] == "end", kinds
    assert "error" not in kinds, events
    chunks = [json.loads(data) for kind, data in events if kind == "data"]
    assert len(chunks) >= 2
    nodes = [c["node"] for c in chunks[:-1] if c.get("event") == "node"]
    for node in ("route_gate", "retrieve", "rerank", "compose", "judge", "memory_shield"):
        assert node in nodes, nodes
    assert nodes.index("route_gate") < nodes.index("compose") < nodes.index("judge") < nodes.index("memory_shield")
    final = chunks[-1]
    assert "event" not in final
    assert_cited_tenant_answer(final, "acme")


def test_remote_runnable_stream_ends_with_the_output_contract(server):
    chunks = list(remote(server, "globex").stream({"question": RETURNS_EN}))
    assert len(chunks) >= 2
    assert all(c.get("event") in ("node", "token") for c in chunks[:-1]), chunks[:-1]
    final = chunks[-1]
    assert set(final) >= CONTRACT_KEYS
    assert_cited_tenant_answer(final, "globex")
    assert_no_acme(chunks)


def test_stream_log_the_playgrounds_stream_completes_within_the_tenant(server):
    resp = post(server, "stream_log", {"input": {"question": WINTER_SALES}}, "globex")
    assert resp.status_code == 200
    events = _sse_events(resp)
    assert events[-1][0] == "end" and "error" not in [k for k, _ in events], events[-3:]
    assert_no_acme(resp.text)
    assert "globex-br-vendas-2025" in resp.text


# --- schemas, playground, bad input -------------------------------------------------------------------


def _nulls(schema) -> list:
    """Every {"type": "null"} (or a null default) in a JSON schema: what the playground cannot draw."""
    if isinstance(schema, dict):
        found = [schema] if schema.get("type") == "null" or ("default" in schema and schema["default"] is None) else []
        return found + [n for value in schema.values() for n in _nulls(value)]
    if isinstance(schema, list):
        return [n for value in schema for n in _nulls(value)]
    return []


def test_input_output_and_config_schemas(server):
    schema = httpx.get(f"{server.url}/rag/input_schema", timeout=TIMEOUT).json()
    assert "question" in schema["properties"] and schema["required"] == ["question"]
    assert "tenant" not in schema["properties"]
    assert "request_id" not in schema["properties"]  # the server's; a caller's own id is correlation_id
    assert schema["properties"]["correlation_id"]["pattern"] == REQUEST_ID_PATTERN
    assert schema["properties"]["question"]["maxLength"] == MAX_QUESTION_CHARS
    assert schema.get("additionalProperties") is False
    assert _nulls(schema) == []  # an optional field is its type, which the playground can draw

    out = httpx.get(f"{server.url}/rag/output_schema", timeout=TIMEOUT).json()
    assert CONTRACT_KEYS <= set(out["properties"])

    config = httpx.get(f"{server.url}/rag/config_schema", timeout=TIMEOUT).json()
    configurable = config["$defs"][config["properties"]["configurable"]["$ref"].rsplit("/", 1)[-1]]
    assert set(configurable["properties"]) == set(CALLER_SETTABLE)
    assert configurable.get("additionalProperties") is False
    assert _nulls(config) == []


def test_the_playground_page_is_served(server):
    resp = httpx.get(f"{server.url}/rag/playground/", timeout=TIMEOUT, follow_redirects=True)
    assert resp.status_code == 200 and resp.url.path == "/ask/playground/", resp.url
    assert resp.headers["content-type"].startswith("text/html")
    assert "<html" in resp.text.lower()


@pytest.mark.parametrize("path, body", [
    ("invoke", {"input": {}}),
    ("invoke", {"input": {"question": 42}}),
    ("invoke", {"input": {"question": ["a", "b"]}}),
    ("invoke", {"input": {"question": "   "}}),
    ("invoke", {"input": {"question": "x" * 5000}}),
    ("invoke", {"input": {"question": "ok", "history": [{"question": 1}]}}),
    ("invoke", {"input": {"question": "ok", "correlation_id": "not a valid id!"}}),
    ("invoke", {"input": {"question": "ok", "correlation_id": "x" * 129}}),
    ("invoke", {"input": {"question": "ok", "request_id": "a-valid-id-0001"}}),
    ("invoke", {"input": {"question": "ok", "intent": "x" * 65}}),
    ("invoke", {"input": {"question": "ok", "unknown": 1}}),
    ("invoke", {"input": "just a string"}),
    ("invoke", {"input": None}),
    ("invoke", {"question": "no input wrapper"}),
    ("invoke", b"{not json"),
    ("invoke", {"input": {"question": "ok"}, "config": {"configurable": {"top_n": "many"}}}),
    ("invoke", {"input": {"question": "ok"}, "config": {"configurable": {"retrieval_mode": "psychic"}}}),
    ("batch", {"inputs": [{"question": "ok"}, {"question": 5}]}),
    ("batch", {"inputs": [{"question": "ok"}, {}]}),
    ("batch", {"inputs": "not a list"}),
    ("stream", {"input": {"question": 5}}),
    ("stream", {"input": {}}),
    ("stream_log", {"input": {"question": None}}),
])
def test_bad_input_is_a_4xx_never_a_500(server, path, body):
    resp = post(server, path, body, "acme")
    assert 400 <= resp.status_code < 500, (resp.status_code, resp.text)
    assert httpx.get(f"{server.url}/health", timeout=10).status_code == 200


# --- local development mode -------------------------------------------------------------------------


def test_local_dev_serves_a_keyless_request_as_ragate_tenant(dev_server):
    resp = post(dev_server, "invoke", {"input": {"question": WINTER_SALES}}, None)
    assert resp.status_code == 200, resp.text
    assert_no_acme(resp.text)
    output = resp.json()["output"]
    assert output["citations_used"] and all(i.startswith("globex-") for i in doc_ids(output))


def test_local_dev_still_binds_a_key_to_its_tenant_and_refuses_a_named_tenant(dev_server):
    assert_cited_tenant_answer(invoke(dev_server, WINTER_SALES, "acme"), "acme")
    resp = post(dev_server, "invoke", {"input": {"question": WINTER_SALES}, "config": {"configurable": {"tenant": "acme"}}},
                None)
    assert resp.status_code == 422, resp.text
    unknown = httpx.post(f"{dev_server.url}/rag/invoke", json={"input": {"question": WINTER_SALES}},
                         headers={"Authorization": "Bearer not-a-known-key-123"}, timeout=TIMEOUT)
    assert unknown.status_code == 401, unknown.text


def test_remote_runnable_without_a_key_in_local_development_then_with_a_key(dev_server):
    """LangServe's own client, as a user of `make serve`-style local development would use it: no key
    (RAGATE_TENANT's documents), then with a key (the key's), streamed and invoked."""
    keyless = remote(dev_server, None)
    output = keyless.invoke({"question": WINTER_SALES, "correlation_id": "rr-local-1"})
    assert output["citations_used"] and all(i.startswith("globex-") for i in doc_ids(output))
    assert output["correlation_id"] == "rr-local-1" and output["request_id"] != "rr-local-1"
    streamed = list(keyless.stream({"question": WINTER_SALES}))
    assert streamed, "the stream yielded nothing"
    assert_cited_tenant_answer(remote(dev_server, "acme").invoke({"question": WINTER_SALES}), "acme")
