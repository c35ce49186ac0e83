"""Memory, thread history, request records, feedback and the request log, on the embedded default
(SQLite) and on a real PostgreSQL that the tests start (tests/pg_server.py)."""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from types import SimpleNamespace

import pytest

from graph.entrypoints.api import Ragate
from graph.entrypoints.cli import main as cli_main
from graph.governance.audit import FEEDBACK, REQUESTS, namespace
from graph.governance.feedback import FeedbackError, get_feedback, parse_rating
from graph.governance.logs import configure_request_log
from graph.providers.persistence import close_all, open_checkpointer, open_store
from graph.state import QuestionError
from nodes.memory_shield import memory_shield

ROOT = Path(__file__).resolve().parent.parent
FIRST = "Quanto cresceram as vendas de inverno em 2025?"
FOLLOW_UP = "E em 2026?"


def runtime_for(ctx, store) -> SimpleNamespace:
    return SimpleNamespace(context=ctx, store=store)


@pytest.fixture(autouse=True)
def _close_after():
    yield
    close_all()
    configure_request_log("off")  # a CLI test installs the log handler; it must not outlive the test


@pytest.fixture(params=["sqlite", "postgres"])
def rag(request, corpus, tmp_path):
    """A Ragate on the session corpus with its own memory: SQLite under tmp, or a fresh PostgreSQL db."""
    url = request.getfixturevalue("pg_url") if request.param == "postgres" else None
    ctx = dataclasses.replace(corpus.context("acme"), memory_url=url)
    if url:
        return Ragate(ctx)
    return Ragate(ctx, store=open_store(tmp_path / "mem"), checkpointer=open_checkpointer(tmp_path / "mem"))


def test_a_thread_remembers_its_turns_and_starts_each_one_clean(rag):
    first = rag.invoke(FIRST, thread_id="t1")
    second = rag.invoke(FOLLOW_UP, thread_id="t1")
    assert second["request_id"] != first["request_id"]
    assert [t["question"] for t in second["history"]] == [FIRST, FOLLOW_UP]
    assert second["history"][0]["request_id"] == first["request_id"]
    assert second["history"][0]["answer"] == first["answer"]
    # the follow-up names no topic: it stays on the thread's intent
    assert first["rag"]["intent"] == "sales"
    assert (second["rag"]["intent"], second["rag"]["intent_source"]) == ("sales", "history")
    # nothing of turn 1's retrieval leaks into turn 2's state
    assert {h["sub_query"] for h in second["hits"].values() if h["kind"] == "sub_query"} <= {FOLLOW_UP} | set(second["sub_queries"])
    assert second["errors"] == [] and set(second["timings_ms"]) >= {"route_gate", "judge", "memory_shield"}
    assert second["intent"] is None  # per-request inputs are not inherited by the next question
    # another thread, and the same thread id of another tenant, start empty
    assert rag.invoke(FIRST, thread_id="t2")["history"][:-1] == []
    other = rag.invoke(FIRST, thread_id="t1", context=dataclasses.replace(rag.context, tenant="globex"))
    assert [t["question"] for t in other["history"]] == [FIRST]


def test_a_caller_intent_is_not_inherited_by_the_next_question(rag):
    rag.invoke(FIRST, thread_id="t3", intent="legal")
    second = rag.invoke(FOLLOW_UP, thread_id="t3")
    assert second["rag"]["intent_source"] == "history"  # from the thread's last turn, not a stale caller field


def test_history_is_capped_by_the_policy(rag):
    for i in range(7):
        state = rag.invoke(f"{FIRST} ({i})", thread_id="long")
    assert len(state["history"]) == 5 and state["history"][-1]["question"].endswith("(6)")


def test_thread_history_survives_a_restart(corpus, tmp_path):
    ctx = dataclasses.replace(corpus.context("acme"), home=str(corpus.home))
    mem = tmp_path / "mem"
    Ragate(ctx, store=open_store(mem), checkpointer=open_checkpointer(mem)).invoke(FIRST, thread_id="r")
    close_all()
    again = Ragate(ctx, store=open_store(mem), checkpointer=open_checkpointer(mem)).invoke(FOLLOW_UP, thread_id="r")
    assert [t["question"] for t in again["history"]] == [FIRST, FOLLOW_UP]


def test_ok_and_warning_are_remembered_block_never_and_every_request_is_recorded(rag):
    ok = rag.ask(FIRST)
    warn = rag.ask("What is the CEO's favourite football team?")
    assert (ok["verdict"]["final_decision"], warn["verdict"]["final_decision"]) == ("OK", "WARNING")
    memory = {i.key: i.value for i in rag.store.search(namespace("memory", "acme"), limit=50)}
    assert memory[ok["request_id"]]["tags"] == [] and memory[warn["request_id"]]["tags"] == ["warning"]
    for out in (ok, warn):
        record = rag.store.get(namespace(REQUESTS, "acme"), out["request_id"]).value
        assert record["final_decision"] == out["verdict"]["final_decision"]
        assert record["scores"] == out["verdict"]["scores"] and record["memory"]["saved"] is True
    assert rag.store.search(namespace(REQUESTS, "globex")) == []


def test_feedback_is_stored_with_the_judges_scores(rag):
    out = rag.ask(FIRST)
    stored = rag.feedback(out["request_id"], rating="down", comment="faltou o canal online")
    again = get_feedback(rag.store, "acme", out["request_id"])
    assert again == stored
    assert (again["rating"], again["score"], again["comment"]) == ("down", 0.0, "faltou o canal online")
    assert again["scores"] == out["verdict"]["scores"] and again["reasoning"] == out["verdict"]["reasoning"]
    assert again["final_decision"] == out["verdict"]["final_decision"]


def test_feedback_on_unknown_or_other_tenants_requests_is_refused(rag):
    out = rag.ask(FIRST)
    with pytest.raises(FeedbackError, match="unknown request id 'nope' for tenant 'acme'"):
        rag.feedback("nope", rating="up")
    globex = dataclasses.replace(rag.context, tenant="globex")
    with pytest.raises(FeedbackError, match="unknown request id"):
        rag.feedback(out["request_id"], rating="up", context=globex)
    with pytest.raises(FeedbackError, match="rating must be up, down or 1-5"):
        rag.feedback(out["request_id"], rating="great")
    assert rag.store.search(namespace(FEEDBACK, "acme")) == [] and rag.store.search(namespace(FEEDBACK, "globex")) == []


# --- request ids are the server's ------------------------------------------------------------------


def test_a_correlation_id_is_kept_beside_the_servers_request_id(rag):
    one = rag.ask(FIRST, correlation_id="desk-1")
    two = rag.ask("What is the CEO's favourite football team?", correlation_id="desk-1")
    assert one["correlation_id"] == two["correlation_id"] == "desk-1"
    assert len({one["request_id"], two["request_id"], "desk-1"}) == 3
    for out, question in ((one, FIRST), (two, "What is the CEO's favourite football team?")):
        record = rag.store.get(namespace(REQUESTS, "acme"), out["request_id"]).value
        assert (record["request_id"], record["correlation_id"], record["question"]) == (out["request_id"], "desk-1", question)
    assert rag.store.get(namespace(REQUESTS, "acme"), "desk-1") is None
    assert rag.feedback(one["request_id"], rating="up")["correlation_id"] == "desk-1"
    assert rag.ask(FIRST)["correlation_id"] is None
    streamed = list(rag.stream(FIRST, correlation_id="desk-2"))
    (start_kind, start), (last_kind, output) = streamed[0], streamed[-1]
    assert (start_kind, last_kind) == ("start", "output")
    assert start == {"request_id": output["request_id"], "correlation_id": "desk-2"} and output["correlation_id"] == "desk-2"
    with pytest.raises(QuestionError, match="correlation_id must be 1-128 letters"):
        rag.ask(FIRST, correlation_id="has space")


def test_a_caller_cannot_name_the_request_id(rag):
    """Ragate.ask(request_id=...) and a graph input naming request_id used to set it: an existing
    request's record (and the rating on it) was rewritten with another question."""
    first = rag.ask(FIRST)
    rag.feedback(first["request_id"], rating="up")
    for call in (rag.ask, rag.invoke, lambda q, **kw: list(rag.stream(q, **kw))):
        with pytest.raises(TypeError, match="send correlation_id"):
            call("vendas", request_id=first["request_id"])
    for run_input in ({"question": "vendas", "request_id": first["request_id"]}, {"question": "vendas", "request_id": "new-1"}):
        with pytest.raises(QuestionError, match="send correlation_id") as refused:
            rag.graph.invoke(run_input, context=rag.context)
        assert refused.value.status == 422
    record = rag.store.get(namespace(REQUESTS, "acme"), first["request_id"]).value
    assert record["question"] == FIRST and record["final_decision"] == first["verdict"]["final_decision"]
    assert rag.store.get(namespace(REQUESTS, "acme"), "new-1") is None
    assert get_feedback(rag.store, "acme", first["request_id"])["final_decision"] == first["verdict"]["final_decision"]
    # a thread: naming the thread's last id is refused too, and the thread goes on
    turn = rag.invoke(FIRST, thread_id="rid")
    config = {"configurable": {"thread_id": "acme:rid"}}
    with pytest.raises(QuestionError, match="send correlation_id"):
        rag.thread_graph.invoke({"question": FOLLOW_UP, "request_id": turn["request_id"]}, config, context=rag.context)
    follow = rag.invoke(FOLLOW_UP, thread_id="rid")
    assert follow["request_id"] != turn["request_id"] and [t["question"] for t in follow["history"]] == [FIRST, FOLLOW_UP]


def test_a_thread_turn_does_not_inherit_the_previous_turns_correlation_id(rag):
    first = rag.ask(FIRST, thread_id="corr", correlation_id="turn-1")
    second = rag.ask(FOLLOW_UP, thread_id="corr")
    assert (first["correlation_id"], second["correlation_id"]) == ("turn-1", None)
    assert rag.store.get(namespace(REQUESTS, "acme"), second["request_id"]).value["correlation_id"] is None


def test_memory_shield_never_overwrites_a_request_record_or_a_remembered_answer(rag):
    """Belt and braces: route_gate gives every request a new id, and memory_shield still refuses to
    write over a record (or a memory entry) that exists under the id it is given."""
    first = rag.ask(FIRST)
    rag.feedback(first["request_id"], rating="down")
    before = {kind: rag.store.get(namespace(kind, "acme"), first["request_id"]).value for kind in (REQUESTS, "memory")}
    state = {"request_id": first["request_id"], "question": "vendas", "tenant": "acme", "answer": "another answer",
             "rag": {"enabled": False, "question": "vendas"}, "verdict": {"final_decision": "OK", "scores": {}},
             "history": [], "errors": []}
    update = memory_shield(state, runtime_for(rag.context, rag.store))
    for kind in (REQUESTS, "memory"):
        assert rag.store.get(namespace(kind, "acme"), first["request_id"]).value == before[kind], kind
    assert update["memory"]["saved"] is False and "not overwritten" in update["memory"]["reason"]
    assert any("request record" in e and "not overwritten" in e for e in update["errors"]), update["errors"]
    assert get_feedback(rag.store, "acme", first["request_id"])["final_decision"] == first["verdict"]["final_decision"]


@pytest.mark.parametrize("rating, label, score", [("up", "up", 1.0), ("DOWN", "down", 0.0), ("5", "5", 1.0),
                                                  (3, "3", 0.5), ("1", "1", 0.0)])
def test_ratings(rating, label, score):
    assert parse_rating(rating) == (label, score)


# --- the CLI and durability ----------------------------------------------------------------------


def test_cli_ask_then_feedback(corpus, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("RAGATE_LOG", str(tmp_path / "requests.jsonl"))
    monkeypatch.delenv("RAGATE_MEMORY_URL", raising=False)
    args = ["--tenant", "acme", "--home", str(corpus.home)]
    assert cli_main(["ask", FIRST, "--json", "--correlation-id", "cli-1", *args]) == 0
    out = json.loads(capsys.readouterr().out)
    request_id = out["request_id"]
    assert out["correlation_id"] == "cli-1" and request_id != "cli-1"
    assert cli_main(["feedback", request_id, "--rating", "4", "--comment", "bom", *args]) == 0
    assert f"feedback recorded for request {request_id}: rating 4" in capsys.readouterr().out
    assert cli_main(["feedback", "no-such-request", "--rating", "up", *args]) == 2
    assert "unknown request id 'no-such-request'" in capsys.readouterr().err
    assert cli_main(["feedback", request_id, "--rating", "up", "--tenant", "globex", "--home", str(corpus.home)]) == 2
    assert cli_main(["feedback", request_id, "--rating", "up", "--home", str(corpus.home)]) == 2  # no tenant
    assert "no tenant given" in capsys.readouterr().err


KILLED_AFTER_ACK = textwrap.dedent("""
    import os, signal, sys
    from graph.providers.persistence import open_store
    from graph.governance.feedback import record_feedback
    store = open_store(sys.argv[1], sys.argv[2] or None)
    record_feedback(store, "acme", sys.argv[3], "down", "written, acknowledged, then killed")
    print("ACK", flush=True)
    signal.pause()  # the parent kills us now: no close, no atexit, nothing flushed after the ack
""")


def test_acknowledged_feedback_survives_kill_9(rag):
    out = rag.ask(FIRST)
    url = rag.context.memory_url or ""
    home = str(rag.context.home_path) if url else str(Path(rag.store.conn.execute("PRAGMA database_list").fetchone()[2]).parent)
    child = subprocess.Popen([sys.executable, "-c", KILLED_AFTER_ACK, home, url, out["request_id"]], cwd=ROOT,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == "ACK", child.stderr.read()
        os.kill(child.pid, signal.SIGKILL)
        assert child.wait(timeout=30) == -signal.SIGKILL
    finally:
        if child.poll() is None:
            child.kill()
    close_all()
    reopened = open_store(home, url or None)
    assert get_feedback(reopened, "acme", out["request_id"])["comment"] == "written, acknowledged, then killed"


# --- the request log -----------------------------------------------------------------------------


def test_one_json_log_line_per_request_without_document_text_or_secrets(corpus, tmp_path, monkeypatch):
    secret = "sk-test-" + "x" * 24
    monkeypatch.setenv("OPENAI_API_KEY", secret)
    monkeypatch.setenv("RAGATE_LOG", str(tmp_path / "log" / "requests.jsonl"))
    assert configure_request_log("stderr") == str(tmp_path / "log" / "requests.jsonl")
    try:
        rag = Ragate(corpus.context("acme"), store=open_store(tmp_path / "mem"), checkpointer=open_checkpointer(tmp_path / "mem"))
        outs = [rag.invoke(q, correlation_id=f"log-{i}")
                for i, q in enumerate((FIRST, "Compare as vendas de inverno de 2025 e 2026 e quais ações o playbook recomenda?",
                                       "What is the CEO's favourite football team?"))]
    finally:
        configure_request_log("off")
    lines = (tmp_path / "log" / "requests.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(lines) == 3
    records = [json.loads(line) for line in lines]
    for out, rec in zip(outs, records):
        assert rec["request_id"] == out["request_id"] and rec["tenant"] == "acme"
        assert rec["correlation_id"] == out["rag"]["correlation_id"] == f"log-{records.index(rec)}"
        assert rec["route"]["intent"] == out["rag"]["intent"] and rec["route"]["enabled"] is True
        assert rec["sub_queries"] == (out["sub_queries"] or [out["question"]])
        assert set(rec["timings_ms"]) >= {"route_gate", "rerank", "compose", "judge"}
        assert rec["scores"] == out["verdict"]["scores"] and rec["reasoning"] == out["verdict"]["reasoning"]
        assert rec["final_decision"] == out["verdict"]["final_decision"] and "saved" in rec["memory"]
        for chunk in out["reranked"]:
            for sentence in (s for s in chunk["content"].split(". ") if len(s) > 40):
                assert sentence not in lines[records.index(rec)], "document text in the log"
        assert out["answer"] not in lines[records.index(rec)] or not out["answer"]
    assert records[1]["decomposition"]["decomposed"] is True and len(records[1]["sub_queries"]) >= 2
    assert secret not in "\n".join(lines)


def test_log_can_go_to_stderr_or_nowhere(corpus, tmp_path, monkeypatch, capfd):
    monkeypatch.delenv("RAGATE_LOG", raising=False)
    rag = Ragate(corpus.context("acme"), store=open_store(tmp_path / "m"), checkpointer=open_checkpointer(tmp_path / "m"))
    try:
        assert configure_request_log("stderr") == "stderr"
        rid = rag.invoke(FIRST)["request_id"]
        assert json.loads(capfd.readouterr().err.strip().splitlines()[-1])["request_id"] == rid
        monkeypatch.setenv("RAGATE_LOG", "off")
        configure_request_log("stderr")
        rag.invoke(FIRST)
        assert capfd.readouterr().err == ""
    finally:
        configure_request_log("off")
        logging.getLogger("ragate.requests").setLevel(logging.WARNING)
