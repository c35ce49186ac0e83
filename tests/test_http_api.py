"""ragate's own routes (graph/entrypoints/http_app.py) on the real server over HTTP on 127.0.0.1: /api/chat and
its streaming variant, /api/feedback, /ops/rag_debug, /api/session; the tenant from the API key;
and a 4xx that says what to fix for every kind of bad input, never a 500."""

from __future__ import annotations

import json

import httpx
import pytest

ACME, GLOBEX = "acme-test-key-0001", "globex-test-key-0001"
QUESTION = "Quanto cresceram as vendas de inverno em 2025?"
CONTRACT = {"request_id", "answer", "direct_answer", "citations_used", "coverage_level", "suggestions", "verdict", "sources", "thread_id"}


def auth(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def post(server, path: str, key: str | None = ACME, headers: dict | None = None, **kw) -> httpx.Response:
    return httpx.post(f"{server.url}{path}", headers={**(auth(key) if key else {}), **(headers or {})}, timeout=60, **kw)


def chat(server, key: str = ACME, **body) -> dict:
    r = post(server, "/api/chat", key, json=body)
    assert r.status_code == 200, r.text
    return r.json()


def sse_events(text: str) -> list[tuple[str, dict]]:
    events = []
    for block in text.strip().split("\n\n"):
        lines = dict(line.split(": ", 1) for line in block.splitlines())
        events.append((lines["event"], json.loads(lines["data"])))
    return events


# --- /api/chat --------------------------------------------------------------------------------------


def test_chat_returns_the_contract_with_sources_but_no_document_text(served):
    out = chat(served, question=QUESTION)
    assert CONTRACT <= set(out)
    assert out["verdict"]["final_decision"] == "OK" and out["coverage_level"] in ("high", "medium")
    assert "acme-bi-2025-inverno-sales" in out["citations_used"] and "[acme-bi-2025-inverno-sales]" in out["answer"]
    assert out["sources"] and all(s["docId"].startswith("acme-") for s in out["sources"])
    assert all("content" not in s and len(s["snippet"]) <= 240 for s in out["sources"])


def test_the_key_decides_the_tenant_and_a_body_cannot_change_it(served):
    out = chat(served, GLOBEX, question="How much did sales grow in Q1 2026?")
    assert out["sources"] and all(s["docId"].startswith("globex-") for s in out["sources"])
    r = post(served, "/api/chat", GLOBEX, json={"question": QUESTION, "tenant": "acme"})
    assert r.status_code == 403 and "cannot read tenant 'acme'" in r.json()["error"]
    r = post(served, "/api/chat", GLOBEX, json={"question": QUESTION, "context": {"tenant": "acme"}})
    assert r.status_code == 403
    assert chat(served, GLOBEX, question=QUESTION, tenant="globex")["sources"][0]["docId"].startswith("globex-")


def test_without_a_valid_key_nothing_is_answered(served):
    for headers in ({}, auth("wrong-key-00000000"), {"Authorization": "Basic YWNtZTpwdw=="}):
        r = httpx.post(f"{served.url}/api/chat", headers=headers, json={"question": QUESTION}, timeout=30)
        assert r.status_code == 401 and r.headers["www-authenticate"] == "Bearer" and r.json()["error"]
        assert "acme" not in r.text
    assert httpx.get(f"{served.url}/api/session", timeout=30).status_code == 401
    assert httpx.get(f"{served.url}/api/session", headers=auth(GLOBEX), timeout=30).json()["tenant"] == "globex"


def test_threads_keep_their_history_per_tenant(served):
    first = chat(served, question=QUESTION, thread_id="t-1")
    follow = chat(served, question="E em 2024?", thread_id="t-1")
    assert follow["thread_id"] == "t-1" and follow["rag"]["intent_source"] == "history"
    assert follow["request_id"] != first["request_id"]
    other = chat(served, GLOBEX, question="E em 2024?", thread_id="t-1")  # same id, another tenant: a new thread
    assert other["rag"]["intent_source"] != "history"


def test_the_streaming_variant_ends_with_the_same_contract_and_its_sources(served):
    r = post(served, "/api/chat/stream", json={"question": QUESTION})
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
    events = sse_events(r.text)
    assert events[0][0] == "start" and events[-1][0] == "result"
    result = events[-1][1]
    assert result["request_id"] == events[0][1]["request_id"] and CONTRACT <= set(result)
    assert result["sources"] and "acme-bi-2025-inverno-sales" in result["citations_used"]


def test_a_streamed_request_is_validated_before_it_streams(served):
    r = post(served, "/api/chat/stream", json={"question": "  "})
    assert r.status_code == 422 and r.json()["error"] == "question is empty"


# --- bad input: a 4xx that says what to fix ---------------------------------------------------------

BAD_BODIES = [
    ({"question": ""}, 422, "question is empty"),
    ({"question": " \n\t "}, 422, "question is empty"),
    ({}, 422, "question is required"),
    ({"question": "x" * 4001}, 413, "at most 4000"),
    ({"question": 42}, 422, "question must be a string"),
    ({"question": ["a"]}, 422, "question must be a string"),
    ({"question": "ok?\x00\x01"}, 422, "control characters"),
    ({"question": QUESTION, "intent": "astrology"}, 422, "unknown intent 'astrology'"),
    ({"question": QUESTION, "intent": 7}, 422, "intent must be a string"),
    ({"question": QUESTION, "entity": "nowhere"}, 422, "unknown entity 'nowhere'"),
    ({"question": QUESTION, "thread_id": "../etc"}, 422, "thread_id must be"),
    ({"question": QUESTION, "thread_id": "t" * 200}, 422, "at most 128"),
    ({"question": QUESTION, "thread_id": "has space"}, 422, "thread_id must be"),
    ({"question": QUESTION, "colour": "red"}, 422, "unknown field(s): colour"),
    ({"question": QUESTION, "context": "fast"}, 422, "context must be an object"),
    ({"question": QUESTION, "context": {"top_n": "many"}}, 422, "top_n must be an integer"),
    ({"question": QUESTION, "context": {"retrieval_mode": "magic"}}, 422, "retrieval_mode must be one of"),
    ({"question": QUESTION, "context": {"nonsense": 1}}, 422, "unknown context field(s): nonsense"),
    ({"question": QUESTION, "context": {"policy_path": "/etc/passwd"}}, 403, "server's settings"),
    ({"question": QUESTION, "correlation_id": "a/b"}, 422, "correlation_id must be 1-128 letters"),
    ({"question": QUESTION, "correlation_id": 7}, 422, "correlation_id must be a string"),
    ({"question": QUESTION, "request_id": "mine-1"}, 422, "send correlation_id"),
]


@pytest.mark.parametrize("body, status, says", BAD_BODIES, ids=[str(i) for i in range(len(BAD_BODIES))])
def test_bad_chat_bodies_get_a_4xx_that_says_what_to_fix(served, body, status, says):
    r = post(served, "/api/chat", json=body)
    assert r.status_code == status, r.text
    assert says in r.json()["error"]


@pytest.mark.parametrize("raw, content_type, status, says", [
    (b"{not json", "application/json", 400, "not valid JSON"),
    (b"\xff\xfe\x00garbage", "application/json", 400, "not UTF-8"),
    (b'["question"]', "application/json", 422, "must be a JSON object"),
    (b"", "application/json", 422, "must be a JSON object"),
    (b"question=hi", "application/x-www-form-urlencoded", 415, "application/json"),
    (json.dumps({"question": "q", "pad": "x" * 70000}).encode(), "application/json", 413, "at most 65536"),
])
def test_bodies_that_are_not_a_json_object_are_refused(served, raw, content_type, status, says):
    r = post(served, "/api/chat", content=raw, headers={"Content-Type": content_type})
    assert r.status_code == status, r.text
    assert says in r.json()["error"]


def test_mixed_script_and_emoji_questions_are_answered(served):
    out = chat(served, question="Vendas 🛍️ de inverno 2025 — 販売 — ¿cuánto?")
    assert out["request_id"] and out["verdict"]["final_decision"] in ("OK", "WARNING", "BLOCK")


# --- feedback and the debug record -----------------------------------------------------------------


def test_feedback_is_stored_against_the_request_of_the_same_tenant(served):
    out = chat(served, question=QUESTION)
    r = post(served, "/api/feedback", json={"request_id": out["request_id"], "rating": "up", "comment": "useful"})
    assert r.status_code == 200, r.text
    stored = r.json()
    assert stored["rating"] == "up" and stored["final_decision"] == out["verdict"]["final_decision"]
    assert post(served, "/api/feedback", json={"request_id": out["request_id"], "rating": 4}).status_code == 200
    r = post(served, "/api/feedback", GLOBEX, json={"request_id": out["request_id"], "rating": "down"})
    assert r.status_code == 404  # another tenant's request is as unknown as one that never happened


@pytest.mark.parametrize("body, status, says", [
    ({"request_id": "nope-123", "rating": "up"}, 404, "unknown request id"),
    ({"rating": "up"}, 422, "request_id is required"),
    ({"request_id": "x", "rating": "meh"}, 422, "rating must be"),
    ({"request_id": "x", "rating": 9}, 422, "rating must be"),
    ({"request_id": "x", "rating": True}, 422, "rating must be"),
    ({"request_id": "x", "rating": "up", "comment": 5}, 422, "comment must be a string"),
    ({"request_id": "x", "rating": "up", "comment": "c" * 5000}, 422, "at most 4000"),
    ({"request_id": "x", "rating": "up", "extra": 1}, 422, "unknown field(s): extra"),
])
def test_bad_feedback_is_refused_with_a_reason(served, body, status, says):
    r = post(served, "/api/feedback", json=body)
    assert r.status_code == status, r.text
    assert says in r.json()["error"]


def test_the_debug_record_is_the_one_the_graph_wrote(served):
    out = chat(served, question="Compare as vendas de inverno de 2025 e 2026 e quais ações o playbook recomenda?")
    r = httpx.get(f"{served.url}/ops/rag_debug/{out['request_id']}", headers=auth(ACME), timeout=30)
    assert r.status_code == 200
    record = r.json()
    assert record["request_id"] == out["request_id"] and record["tenant"] == "acme"
    assert record["route"]["enabled"] and record["route"]["intent"] == out["rag"]["intent"]
    assert record["policy"]["allow_intents"] and record["policy"]["route"]["collections"] == ["documents"]
    assert record["sub_queries"] == out["sub_queries"] and len(record["sub_queries"]) >= 2
    # written by memory_shield, before its own time is known
    assert record["timings_ms"] == {k: v for k, v in out["timings_ms"].items() if k != "memory_shield"}
    assert {"route_gate", "compose", "judge"} <= set(record["timings_ms"])
    assert record["scores"] == out["verdict"]["scores"] and record["final_decision"] == out["verdict"]["final_decision"]
    assert [x["docId"] for x in record["retrieved"]] == [s["docId"] for s in out["sources"]]
    assert "answer" not in record and "content" not in json.dumps(record["retrieved"])  # no document text
    for key, rid, status in ((GLOBEX, out["request_id"], 404), (ACME, "never-was", 404), (ACME, "bad id!", 422)):
        r = httpx.get(f"{served.url}/ops/rag_debug/{rid}", headers=auth(key), timeout=30)
        assert r.status_code == status, r.text


# --- request ids are the server's; a caller's own id is a correlation id ----------------------------


def debug_record(server, request_id: str, key: str = ACME) -> httpx.Response:
    return httpx.get(f"{server.url}/ops/rag_debug/{request_id}", headers=auth(key), timeout=30)


def test_a_caller_cannot_name_the_request_id_not_even_an_existing_one(served):
    """It used to be taken: a new question rewrote the earlier request's record, and the earlier
    rating then belonged to another question."""
    first = chat(served, question=QUESTION)
    assert post(served, "/api/feedback", json={"request_id": first["request_id"], "rating": "up"}).status_code == 200
    for path in ("/api/chat", "/api/chat/stream"):
        for request_id in (first["request_id"], "brand-new-id-1"):
            r = post(served, path, json={"question": "vendas", "request_id": request_id})
            assert r.status_code == 422, r.text
            body = r.json()
            assert body["field"] == "request_id" and "send correlation_id" in body["error"], body
    record = debug_record(served, first["request_id"])
    assert record.status_code == 200 and record.json()["question"] == QUESTION
    assert record.json()["final_decision"] == first["verdict"]["final_decision"]
    assert debug_record(served, "brand-new-id-1").status_code == 404


def test_a_correlation_id_is_kept_beside_the_request_and_never_keys_it(served):
    one = chat(served, question=QUESTION, correlation_id="desk-7:a")
    two = chat(served, question="vendas de inverno", correlation_id="desk-7:a")
    assert one["correlation_id"] == two["correlation_id"] == "desk-7:a"
    assert len({one["request_id"], two["request_id"], "desk-7:a"}) == 3
    for out, question in ((one, QUESTION), (two, "vendas de inverno")):
        record = debug_record(served, out["request_id"]).json()
        assert (record["request_id"], record["correlation_id"], record["question"]) == \
            (out["request_id"], "desk-7:a", question)
    assert debug_record(served, "desk-7:a").status_code == 404
    rated = post(served, "/api/feedback", json={"request_id": one["request_id"], "rating": "down"}).json()
    assert rated["request_id"] == one["request_id"] and rated["correlation_id"] == "desk-7:a"
    assert chat(served, question=QUESTION)["correlation_id"] is None
    # the streaming variant: the server's id from the first event on, the caller's beside it
    r = post(served, "/api/chat/stream", json={"question": QUESTION, "correlation_id": "desk-7:b"})
    events = sse_events(r.text)
    (kind, start), (last, result) = events[0], events[-1]
    assert (kind, last) == ("start", "result")
    assert start == {"request_id": result["request_id"], "correlation_id": "desk-7:b"}
    assert result["correlation_id"] == "desk-7:b" and result["request_id"] not in (one["request_id"], "desk-7:b")


# --- a wrong method: 405 with Allow, also inside the LangGraph server --------------------------------

WRONG_METHODS = [
    ("GET", "/api/chat", "POST"),
    ("PUT", "/api/chat", "POST"),
    ("GET", "/api/chat/stream", "POST"),
    ("GET", "/api/feedback", "POST"),
    ("DELETE", "/api/feedback", "POST"),
    ("POST", "/api/session", "GET, HEAD"),
    ("POST", "/api/health", "GET, HEAD"),
    ("POST", "/ops/rag_debug/some-request-id", "GET, HEAD"),
    ("DELETE", "/ops/rag_debug/some-request-id", "GET, HEAD"),
]


@pytest.mark.parametrize("method, path, allow", WRONG_METHODS, ids=[f"{m} {p}" for m, p, _ in WRONG_METHODS])
def test_a_wrong_method_on_ragates_routes_gets_405_with_allow(served, method, path, allow):
    """The routes live inside the LangGraph server: a request they did not take used to fall through
    to LangGraph's own routes and come back 404."""
    r = httpx.request(method, f"{served.url}{path}", headers=auth(ACME), timeout=30)
    assert r.status_code == 405, (r.status_code, r.text)
    assert r.headers["allow"] == allow
    assert f"use {allow}" in r.json()["error"]


def test_the_right_methods_still_reach_the_routes(served):
    assert httpx.head(f"{served.url}/api/health", timeout=30).status_code == 200
    assert httpx.get(f"{served.url}/api/nothing-here", headers=auth(ACME), timeout=30).status_code == 404


def test_the_page_and_health_are_served(served):
    page = httpx.get(f"{served.url}/", timeout=30)
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert httpx.get(f"{served.url}/api/health", timeout=30).json() == {"ok": True}
