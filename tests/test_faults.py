"""Faults: each part ragate depends on fails, in the ways it realistically can, at each node that uses
it, and the graph still ends with a well-formed result, in bounded time, with the failure recorded.

The matrix (one parametrized test per component, each case named `<node>-<mode>`):

  component           nodes that call it                        failure modes
  embedding provider  retrieve (query vectors), compose (the    HTTP 500 after retries, hang-up, refused
  (openai/…)          draft's semantic check), judge (same      connection, timeout, malformed JSON, wrong
                      check, for what compose could not cache)  shape, no vectors, wrong dimension, NaN,
                                                                wrong count, a model of another dimension
                                                                than the collection's
  chat model          decompose, compose (streamed), judge      HTTP 500 after retries, hang-up, timeout,
  (openai/…)                                                    a stream that trickles past the timeout,
                                                                malformed JSON, empty choices, null
                                                                content, prose instead of JSON, JSON of
                                                                another shape, unknown citations, refused
  reranker            rerank                                    HTTP 500, hang-up, refused, timeout,
  (cohere/…)                                                    malformed JSON, index out of range or
                                                                repeated, NaN / huge / negative / string
                                                                scores, results of the wrong type or none
  embedded engine     retrieve (search), rerank (features,      raises, sleeps past the timeout, garbage
                      fetch, also for the provider reranker),   (NaN scores, unknown ids, wrong types,
                      decompose and retrieve (values a          features out of range or not asked for,
                      question names)                           another tenant's payload, no text)
  Qdrant server       the same reads, over REST                 HTTP 503 after retries, timeout, hang-up,
                                                                malformed JSON, wrong shape, NaN-scored
                                                                unknown points, refused connection
  memory store        memory_shield                             writes fail (memory, request record, both)

Every case asserts (`check_run`): the run returned within a bound computed from the configured
timeout (timeout × (retries + 1) × the calls that can time out one after the other, plus a margin,
while every injected delay is far longer); the output contract is well formed (answer, verdict in
OK / WARNING / BLOCK, citations ⊆ the sources, coverage, suggestions, strict JSON); the failure is in
`errors`, named by its node (for the safe response: in the verdict's reasoning); the path taken is
the degraded one the node promises (lexical-only retrieval, the extractive composer, the
deterministic verdict, ragate's own reranker, an unscoped search, an honest "not found") or the safe
response; and nothing of the other tenant (nor any gated document) appears. The corpus holds both
sample tenants, ingested once per module with the scripted server's embeddings, into the embedded
engine and into the Qdrant REST server of tests/qdrant_server.py (Qdrant's REST API in front of
qdrant-client's local engine: no Qdrant binary is available here), both on 127.0.0.1.

What this matrix found, now fixed: an engine failure while rerank fetched texts crashed the graph,
and any payload a fetch returned was used (another tenant's, one without text); a failing embedder
crashed the composer's and the judge's checks; retrieval lost a whole branch to a failed values
lookup, to a vector of the collection's wrong dimension or to one malformed hit, and used NaN
vectors silently; a provider reranker's NaN, huge or negative scores were used (NaN as 1.0, in an
output that is not JSON); the embedded engine had no timeout; decompose's fallback recorded nothing.
"""

from __future__ import annotations

import base64
import contextlib
import json
import math
import re
import socket
import sqlite3
import struct
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
from conftest import SAMPLES, TENANTS, sample_documents
from faults import FaultyIndex, FaultyQdrant, drip_chat, qdrant_points
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.memory import InMemoryStore
from scripted_server import Reply
from test_governance import CANARIES

import graph.providers.resources as resources_module
from graph.algorithms import scoping as scoping_module
from graph.context import Context
from graph.entrypoints.api import Ragate
from graph.graph import compile_graph
from graph.indexing.ingest import ingest_path
from graph.output import to_output
from graph.prompts import phrase
from graph.providers.resources import embeddings_for
from nodes import decompose as decompose_module

EMB, CHAT, RERANK = "/v1/embeddings", "/v1/chat/completions", "/v2/rerank"
MODEL = "openai/fault-embedder"
Q_SIMPLE = "Quanto cresceram as vendas de inverno em 2025?"
Q_COMPLEX = "Compare as vendas de inverno de 2025 e 2026 e quais ações o playbook recomenda?"
DOC = "acme-bi-2025-inverno-sales"
DIMS = 64

T = 0.5           # provider timeout of the HTTP providers' cases (seconds)
T_SERVER = 1.0    # the Qdrant client's timeout is whole seconds, at least 1
MARGIN = 2.5      # a run's own work, on a busy 2-core machine, on top of the timeouts
LONG = 10.0       # every injected delay: far past every bound, so a case only passes if a timeout fired

COMPOSED = {Q_SIMPLE: f"As vendas do inverno 2025 cresceram 7,9% sobre o inverno 2024 [{DOC}].",
            Q_COMPLEX: "O playbook de inverno 2026 substitui o de 2025 [acme-playbook-inverno-2026]."}
# Cited, no value, wording only partly the document's (lexical support 0.71, in the policy's semantic
# band): the composer's own check asks the embedder to rescue it.
PARAPHRASE = f"A temporada de inverno foi positiva para a Acme Moda, com casacos na liderança [{DOC}]."
# Cited, but its wording is not the document's: the judge blocks it.
UNSUPPORTED = f"A Acme faturou mais no inverno passado do que no anterior [{DOC}]."
VERDICT = {"scores": {"quality": 0.9, "utility": 0.9, "groundedness": 0.95},
           "reasoning": {"quality": "clara", "utility": "números", "groundedness": "citada"}, "final_decision": "OK"}
SUB_QUERIES = {"sub_queries": ["vendas de inverno de 2025 e 2026", "ações recomendadas pelo playbook de inverno"]}

OTHER_TENANT_IDS = set(sample_documents("globex"))
OUTPUT_KEYS = {"request_id", "correlation_id", "answer", "direct_answer", "citations_used", "coverage_level", "suggestions", "verdict",
               "rag", "sub_queries", "decomposition", "sources", "memory", "timings_ms", "errors", "language"}


# --- the environment: providers on 127.0.0.1, a two-tenant corpus in both engines ----------------


@pytest.fixture(scope="module")
def qdrant():
    with FaultyQdrant() as server:
        yield server


@pytest.fixture(scope="module")
def env(scripted_server, qdrant):
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("OPENAI_BASE_URL", scripted_server.openai_base_url)
        mp.setenv("OPENAI_API_KEY", "fault-key")
        mp.setenv("COHERE_BASE_URL", scripted_server.url)
        mp.setenv("COHERE_API_KEY", "fault-key")
        mp.setenv("QDRANT_URL", qdrant.url)
        yield mp


def good_embeddings(body: dict | None) -> Reply:
    return Reply.embeddings(dims=DIMS)


@pytest.fixture(scope="module")
def home(env, scripted_server, tmp_path_factory):
    """Both tenants ingested with the scripted embedder, into the embedded engine and the server (the
    second ingest reads every vector from the embedding cache)."""
    scripted_server.reset().default(EMB, good_embeddings)
    home = tmp_path_factory.mktemp("faults-home")
    for store in ("embedded", "qdrant"):
        for tenant in TENANTS:
            ingest_path(SAMPLES / tenant, collection="documents", tenant=tenant,
                        context=Context(home=str(home), tenant=None, embedding_model=MODEL, vector_store=store))
    return home


@pytest.fixture(scope="module")
def graph():
    return compile_graph()


def context(home, **kw) -> Context:
    return Context(home=str(home), tenant="acme", **{"embedding_model": MODEL, "provider_timeout_s": T,
                                                     "provider_retries": 0, **kw})


def good_chat(body: dict | None) -> Reply:
    """What a healthy chat model answers each node: sub-queries, a cited answer, a verdict."""
    body = body or {}
    system = ((body.get("messages") or [{}])[0] or {}).get("content") or ""
    if body.get("stream"):
        user = (body.get("messages") or [{}, {}])[-1].get("content") or ""
        return Reply.chat(COMPOSED[Q_COMPLEX if Q_COMPLEX in user else Q_SIMPLE])
    return Reply.chat(json.dumps(SUB_QUERIES if "sub_queries" in system else VERDICT))


def node_of(body: dict | None) -> str:
    body = body or {}
    if body.get("stream"):
        return "compose"
    system = ((body.get("messages") or [{}])[0] or {}).get("content") or ""
    return "decompose" if "sub_queries" in system else "judge"


@pytest.fixture(autouse=True)
def fresh(env, scripted_server, qdrant, home):
    """Each case starts from healthy providers and empty per-process caches (a cached vector, values
    list or LLM split would let a case skip the call its fault is meant for)."""
    scripted_server.reset()
    scripted_server.default(EMB, good_embeddings).default(CHAT, good_chat)
    qdrant.reset()
    scoping_module._values_cache.clear()
    decompose_module._llm_cache.clear()
    embeddings_for(context(home)).clear_query_cache()
    with contextlib.closing(sqlite3.connect(home / "embeddings.sqlite")) as db, db:
        db.execute("DELETE FROM embeddings")  # the chunks are in the engines: only the semantic checks read these
    yield
    FaultyIndex.release()


# --- what every case checks -----------------------------------------------------------------------


@dataclass
class Injected:
    """How many faults a case injected (every failed or garbled request or engine call)."""

    n: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def count(self, k: int = 1) -> None:
        with self.lock:
            self.n += k


TOTALS = {"cells": 0, "faults": 0}


@pytest.fixture(scope="module", autouse=True)
def report_totals(request):
    yield
    request.config.add_cleanup(lambda: print(f"\ntest_faults: {TOTALS['cells']} cells ran, "
                                              f"{TOTALS['faults']} faults injected"))


def bound(timeout: float, retries: int, sequential: int) -> float:
    """The longest a run may take: `sequential` calls that may each time out, each tried retries + 1 times."""
    return timeout * (retries + 1) * sequential + MARGIN


def run(graph, ctx: Context, question: str, limit: float) -> tuple[dict, dict, float]:
    """The final state, its output contract and the wall time. The run is watched from outside: a run
    that hangs fails the case (after `limit` + 5 s) instead of hanging the suite."""
    box: dict[str, Any] = {}

    def target():
        try:
            box["state"] = graph.invoke({"question": question}, context=ctx)
        except BaseException as exc:  # noqa: BLE001 - reported below, with the case
            box["error"] = exc

    started = time.perf_counter()
    worker = threading.Thread(target=target, daemon=True)
    worker.start()
    worker.join(limit + 5)
    elapsed = time.perf_counter() - started
    assert not worker.is_alive(), f"the run hung: still running after {elapsed:.1f} s (bound {limit:.1f} s)"
    if "error" in box:
        raise box["error"]
    return box["state"], to_output(box["state"]), elapsed


def check_run(state: dict, out: dict, elapsed: float, limit: float, injected: Injected, *,
              errors: list[str], timeout_floor: float = 0.0) -> None:
    """The assertions every case shares; `errors` are regexes each some entry of `errors` must match."""
    TOTALS["cells"] += 1
    TOTALS["faults"] += injected.n
    assert injected.n > 0, "the fault was never triggered: the case tests nothing"
    assert elapsed < limit, f"{elapsed:.2f} s, bound {limit:.2f} s"
    assert elapsed >= timeout_floor, f"{elapsed:.2f} s: finished before the timeout could have fired"
    # The output contract.
    assert set(out) == OUTPUT_KEYS
    assert isinstance(out["answer"], str) and out["answer"].strip()
    assert out["verdict"]["final_decision"] in ("OK", "WARNING", "BLOCK")
    assert out["coverage_level"] in ("high", "medium", "low", "none")
    sources = {s["docId"] for s in out["sources"]}
    assert set(out["citations_used"]) <= sources
    assert all(isinstance(s, str) for s in out["suggestions"]) and all(isinstance(e, str) for e in out["errors"])
    for name, score in out["verdict"]["scores"].items():
        assert isinstance(score, (int, float)) and 0 <= score <= 1, (name, score)
    for s in out["sources"]:
        assert isinstance(s["snippet"], str)
        assert s["rerankScore"] is None or (math.isfinite(s["rerankScore"]) and 0 <= s["rerankScore"] <= 1)
    json.dumps(out, allow_nan=False)  # strict JSON: no NaN or infinity leaked into the scores
    if out["verdict"]["final_decision"] == "BLOCK":
        assert out["answer"].startswith(phrase(state["language"], "safe_intro")) and out["citations_used"] == []
    else:
        cited = set(re.findall(r"\[([A-Za-z0-9._:#-]+)\]", out["answer"]))
        assert cited <= sources, f"the answer cites {cited - sources}, which are not among its sources"
    # Tenant isolation and governance, whatever failed.
    dumped = json.dumps(state, ensure_ascii=False, default=str)
    assert not sources & OTHER_TENANT_IDS and not any(i in dumped for i in OTHER_TENANT_IDS)
    assert "globex-intruder" not in dumped
    assert not any(c in out["answer"] for canaries in CANARIES.values() for c in canaries)
    # The failure is recorded, named by the node that met it.
    for pattern in errors:
        assert any(re.search(pattern, e) for e in out["errors"]), f"no error matches {pattern!r}: {out['errors']}"


def closed_port_url(path: str = "") -> str:
    """A loopback URL nothing listens on (connection refused)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}{path}"


def counted(injected: Injected, fault: Callable[[dict | None], Reply]) -> Callable[[dict | None], Reply]:
    def reply(body: dict | None) -> Reply:
        injected.count()
        return fault(body)
    return reply


# --- 1. the embedding provider ---------------------------------------------------------------------


def _inputs(body: dict | None) -> list:
    inp = (body or {}).get("input")
    return inp if isinstance(inp, list) and not (inp and isinstance(inp[0], int)) else [inp]


def _vectors_reply(body: dict | None, vectors: list[list[float]]) -> Reply:
    """`vectors` as the embeddings endpoint sends them (base64 float32 when asked, as the SDK does)."""
    b64 = (body or {}).get("encoding_format") == "base64"
    data = [{"object": "embedding", "index": i,
             "embedding": base64.b64encode(struct.pack(f"<{len(v)}f", *v)).decode() if b64 else v}
            for i, v in enumerate(vectors)]
    return Reply.raw(json.dumps({"object": "list", "data": data, "model": "m",
                                 "usage": {"prompt_tokens": 1, "total_tokens": 1}}))


EMBEDDING_FAULTS: dict[str, tuple[Callable[[dict | None], Reply], int, str]] = {
    # mode: (reply, retries, what the recorded reason says)
    "http-500": (lambda b: Reply.status(500), 1, r"InternalServerError|500"),
    "hang-up": (lambda b: Reply.hangup(), 0, r"Connection error"),
    "timeout": (lambda b: Reply.delay(LONG, Reply.embeddings(dims=DIMS)), 0, r"[Tt]imed? ?out"),
    "malformed-json": (lambda b: Reply.raw("{not json"), 0, r"JSONDecodeError"),
    "wrong-shape": (lambda b: Reply.raw(json.dumps({"data": 5})), 0, r"TypeError"),
    "no-vectors": (lambda b: _vectors_reply(b, []), 0, r"No embedding data"),
    "wrong-dimension": (lambda b: Reply.embeddings(dims=DIMS // 2), 0, r"32-dimensional vectors"),
    "nan-vector": (lambda b: _vectors_reply(b, [[math.nan] * DIMS for _ in _inputs(b)]), 0, r"NaN"),
    "wrong-count": (lambda b: _vectors_reply(b, [[0.1] * DIMS for _ in range(len(_inputs(b)) + 1)]), 0,
                    r"vectors for \d+ texts"),
}


def _retrieve_cases():
    for mode in [m for m in EMBEDDING_FAULTS if m != "wrong-count"] + ["refused", "another-model"]:
        yield pytest.param("retrieve", mode, Q_SIMPLE, id=f"retrieve-{mode}")
    # A split question: every branch embeds at once, in parallel; the bound does not grow with them.
    yield pytest.param("retrieve", "timeout", Q_COMPLEX, id="retrieve-timeout-all-branches")
    yield pytest.param("retrieve", "http-500", Q_COMPLEX, id="retrieve-http-500-all-branches")


@pytest.mark.parametrize("node, mode, question", list(_retrieve_cases()))
def test_embedding_provider_fails_at_retrieve(graph, home, scripted_server, monkeypatch, node, mode, question):
    injected, model, expected = Injected(), MODEL, None
    if mode == "refused":
        monkeypatch.setenv("OPENAI_BASE_URL", closed_port_url("/v1"))
        retries, reason = 0, r"Connection error"
        injected.count()  # every embedding call of the run is refused
    elif mode == "another-model":
        # A healthy provider, but the run names another model than the one the collection was built
        # with: its vectors would not be comparable, so it is never asked (the collection's manifest
        # says so before any call) and every branch searches lexically, saying why.
        model, retries = "openai/another-embedder", 0
        scripted_server.default(EMB, lambda b: Reply.embeddings(dims=DIMS // 2))
        injected.count()  # the fault is the run's setting itself
        expected = (rf"^retrieve\[\d\]: collection 'documents' was embedded with {MODEL}, not openai/another-embedder: "
                    r".*ragate reembed --collection documents --embedding-model openai/another-embedder; "
                    r"lexical search only$")
    else:
        fault, retries, reason = EMBEDDING_FAULTS[mode]
        scripted_server.default(EMB, counted(injected, fault))
    limit = bound(T, retries, 1)
    state, out, elapsed = run(graph, context(home, provider_retries=retries, embedding_model=model), question, limit)
    check_run(state, out, elapsed, limit, injected, timeout_floor=T if mode == "timeout" else 0,
              errors=[expected or rf"^retrieve\[\d\]: embeddings unavailable \(.*{reason}.*\); lexical search only$"])
    # Degraded path: the lexical lists alone found the evidence.
    assert all(not r["dense"] and r["lexical"] for r in state["hits"].values())
    assert out["citations_used"] and out["verdict"]["final_decision"] != "BLOCK"
    if question == Q_SIMPLE:
        assert DOC in out["citations_used"]
    if retries and mode != "refused":
        branches = [k for k in state["hits"] if ":" not in k]
        # Each call was retried, then given up. Branches asking for the question's vector at the same
        # time share one call (and its failure); one that asks after a failure tries again.
        assert injected.n % (retries + 1) == 0 and retries + 1 <= injected.n <= len(branches) * (retries + 1)


def _rescue_requests(body: dict | None) -> bool:
    """The composer's and judge's semantic check embed a claim with its closest sentences (≥ 2
    texts); a query vector is one text."""
    return len(_inputs(body)) >= 2


RESCUE_MODES = ["http-500", "timeout", "malformed-json", "wrong-dimension", "nan-vector", "wrong-count"]


@pytest.mark.parametrize("mode", RESCUE_MODES, ids=[f"compose-{m}" for m in RESCUE_MODES])
def test_embedding_provider_fails_at_compose(graph, home, scripted_server, mode):
    """The draft's check loses its embedder once: the claim is judged on its lexical support (enough
    here), the draft stands, and the judge's own check, asked again, gets its vectors."""
    injected = Injected()
    fault, retries, reason = EMBEDDING_FAULTS[mode]
    budget = {"left": retries + 1}  # one failed call: its tries

    def reply(body):
        if _rescue_requests(body) and budget["left"] > 0:
            budget["left"] -= 1
            injected.count()
            return fault(body)
        return good_embeddings(body)

    scripted_server.default(EMB, reply).default(CHAT, lambda b: Reply.chat(PARAPHRASE) if b.get("stream") else good_chat(b))
    limit = bound(T, retries, 1)
    state, out, elapsed = run(graph, context(home, chat_model="openai/chat", provider_retries=retries), Q_SIMPLE, limit)
    check_run(state, out, elapsed, limit, injected, timeout_floor=T if mode == "timeout" else 0,
              errors=[rf"^compose: embeddings unavailable for the draft's checks \(.*{reason}.*\); lexical support only$"])
    # The draft stands (it opens with no direct answer, so the deterministic one is put on top of it).
    assert out["answer"] == f"7,9% [{DOC}].\n\n{PARAPHRASE}" and not any(e.startswith("judge:") for e in out["errors"])
    assert any(c["semantic"] is not None for c in out["verdict"]["checks"])  # the judge's check had its vectors


PERSISTENT_MODES = ["http-500", "timeout", "nan-vector"]


@pytest.mark.parametrize("mode", PERSISTENT_MODES, ids=[f"compose+judge-{m}" for m in PERSISTENT_MODES])
def test_embedding_provider_fails_at_compose_and_judge(graph, home, scripted_server, mode):
    """The embedder stays down: both checks fall back to lexical support, each says so."""
    injected = Injected()
    fault, retries, reason = EMBEDDING_FAULTS[mode]
    scripted_server.default(EMB, lambda b: counted(injected, fault)(b) if _rescue_requests(b) else good_embeddings(b))
    scripted_server.default(CHAT, lambda b: Reply.chat(PARAPHRASE) if b.get("stream") else good_chat(b))
    limit = bound(T, retries, 2)
    state, out, elapsed = run(graph, context(home, chat_model="openai/chat", provider_retries=retries), Q_SIMPLE, limit)
    check_run(state, out, elapsed, limit, injected,
              errors=[r"^compose: embeddings unavailable for the draft's checks",
                      rf"^judge: embeddings unavailable, lexical support only: .*{reason}"])
    assert out["answer"] == f"7,9% [{DOC}].\n\n{PARAPHRASE}" and all(c["semantic"] is None for c in out["verdict"]["checks"])


# --- 2. the chat model -------------------------------------------------------------------------------


def _sse(*chunks: dict) -> Reply:
    head = {"id": "x", "object": "chat.completion.chunk", "created": 0, "model": "m"}
    events = "".join(f"data: {json.dumps({**head, **c})}\n\n" for c in chunks) + "data: [DONE]\n\n"
    return Reply.raw(events, content_type="text/event-stream")


def _completion(choices: list) -> Reply:
    return Reply.raw(json.dumps({"id": "x", "object": "chat.completion", "created": 0, "model": "m", "choices": choices}))


CHAT_FAULTS: dict[str, tuple[Callable[[dict | None], Reply], int]] = {
    "http-500": (lambda b: Reply.status(500), 1),
    "hang-up": (lambda b: Reply.hangup(), 0),
    "timeout": (lambda b: Reply.delay(LONG, Reply.chat("too late")), 0),
    "malformed-json": (lambda b: Reply.raw("{not json"), 0),
    "empty-choices": (lambda b: _sse({"choices": []}) if b.get("stream") else _completion([]), 0),
    "null-content": (lambda b: _sse({"choices": [{"index": 0, "delta": {"content": None}, "finish_reason": "stop"}]})
                     if b.get("stream") else
                     _completion([{"index": 0, "message": {"role": "assistant", "content": None}, "finish_reason": "stop"}]), 0),
    "prose-not-json": (lambda b: Reply.chat("Sure! Everything looks fine to me."), 0),
    "wrong-shape-json": (lambda b: Reply.chat(json.dumps({"sub_queries": 5, "scores": [1, 2], "answer": None})), 0),
}
# What each node records, whatever the fault.
CHAT_ERRORS = {"decompose": r"^decompose: chat model unusable \(.+\); rule-based split$",
               "compose": r"^compose: .+; extractive answer$",
               "judge": r"^judge: chat model (failed \(.+\)|verdict unusable after one repair \(.+\)); deterministic verdict$"}


def _chat_cases():
    for node in ("decompose", "compose", "judge"):
        for mode in CHAT_FAULTS:
            yield pytest.param(node, mode, id=f"{node}-{mode}")
    yield pytest.param("compose", "unknown-citation", id="compose-unknown-citation")
    yield pytest.param("compose", "trickling-stream", id="compose-trickling-stream")


@pytest.mark.parametrize("node, mode", list(_chat_cases()))
def test_chat_model_fails(graph, home, scripted_server, node, mode):
    injected = Injected()
    if mode == "unknown-citation":
        fault, retries = (lambda b: Reply.chat("As vendas cresceram 7,9% [acme-inventado-2099]."), 0)
    elif mode == "trickling-stream":
        # Each piece comes sooner than the client's read timeout; the whole answer far later.
        fault, retries = (lambda b: drip_chat(COMPOSED[Q_SIMPLE], every_s=T * 0.6, pieces=int(LONG / (T * 0.6)))), 0
    else:
        fault, retries = CHAT_FAULTS[mode]
    scripted_server.default(CHAT, lambda b: counted(injected, fault)(b) if node_of(b) == node else good_chat(b))
    question = Q_COMPLEX if node == "decompose" else Q_SIMPLE
    # The composer's stream is held to timeout × tries, checked as each piece arrives (≤ one read timeout later).
    limit = bound(T, retries, 2 if node == "compose" else 1)
    state, out, elapsed = run(graph, context(home, chat_model="openai/chat", provider_retries=retries), question, limit)
    check_run(state, out, elapsed, limit, injected, errors=[CHAT_ERRORS[node]],
              timeout_floor=T if mode in ("timeout", "trickling-stream") else 0)
    assert not [e for e in out["errors"] if not e.startswith(f"{node}:")], "only the failing node degrades"
    if node == "decompose":
        assert state["decomposition"]["method"] == "rules" and len(state["sub_queries"]) >= 2
    elif node == "compose":
        assert DOC in out["citations_used"] and any("extractive answer" in e for e in out["errors"])
    else:
        assert state["verdict"]["method"] == "deterministic" and out["answer"] == COMPOSED[Q_SIMPLE]
    if retries:
        assert injected.n == retries + 1
    if mode == "trickling-stream":
        assert "streaming after" in " ".join(out["errors"])


def test_chat_and_embeddings_server_refused_everywhere(graph, home, monkeypatch):
    """The OpenAI-compatible server is down: decompose splits by rules, retrieval is lexical, the
    composer extractive, the verdict deterministic."""
    monkeypatch.setenv("OPENAI_BASE_URL", closed_port_url("/v1"))
    injected = Injected(n=1)
    limit = bound(T, 0, 4)
    state, out, elapsed = run(graph, context(home, chat_model="openai/chat"), Q_COMPLEX, limit)
    check_run(state, out, elapsed, limit, injected,
              errors=[CHAT_ERRORS["decompose"], r"^retrieve\[\d\]: embeddings unavailable", CHAT_ERRORS["compose"],
                      CHAT_ERRORS["judge"]])
    assert state["verdict"]["method"] == "deterministic" and any("extractive answer" in e for e in out["errors"])


def test_a_chat_answer_the_judge_cannot_vouch_for_gives_the_safe_response(graph, home, scripted_server):
    """A well-formed, cited answer whose wording its source does not support: the judge blocks it,
    the reader gets the safe response (with the sources), and the blocked draft is kept for audit."""
    injected = Injected()
    scripted_server.default(CHAT, lambda b: counted(injected, lambda _: Reply.chat(UNSUPPORTED))(b)
                            if b.get("stream") else good_chat(b))
    limit = bound(T, 0, 2)
    state, out, elapsed = run(graph, context(home, chat_model="openai/chat"), Q_SIMPLE, limit)
    check_run(state, out, elapsed, limit, injected, errors=[])
    assert out["verdict"]["final_decision"] == "BLOCK" and state["blocked_answer"] == UNSUPPORTED
    assert "unsupported" in out["verdict"]["reasoning"]["groundedness"] and DOC in out["answer"]


# --- 3. the reranker -----------------------------------------------------------------------------------


def _results(results: Any) -> Reply:
    return Reply.raw(json.dumps({"id": "x", "results": results, "meta": {"api_version": {"version": "2"}}}))


def _scored(score: str) -> Callable[[dict | None], Reply]:
    """Every document scored `score`, written as is (NaN and Infinity are not JSON; Python reads them)."""
    def reply(b):
        n = len((b or {}).get("documents") or [])
        items = ",".join(f'{{"index": {i}, "relevance_score": {score}}}' for i in range(n))
        return Reply.raw(f'{{"id": "x", "results": [{items}]}}')
    return reply


RERANK_FAULTS: dict[str, Callable[[dict | None], Reply]] = {
    "http-500": lambda b: Reply.status(500),
    "hang-up": lambda b: Reply.hangup(),
    "timeout": lambda b: Reply.delay(LONG, Reply.rerank()),
    "malformed-json": lambda b: Reply.raw("{not json"),
    "index-out-of-range": lambda b: _results([{"index": len(b["documents"]) + 3, "relevance_score": 0.9}]),
    "index-repeated": lambda b: _results([{"index": 0, "relevance_score": 0.9}, {"index": 0, "relevance_score": 0.8}]),
    "nan-scores": _scored("NaN"),
    "huge-scores": _scored("1e300"),
    "negative-scores": _scored("-4.2"),
    "string-scores": _scored('"high"'),
    "results-not-a-list": lambda b: _results("all good"),
    "no-results": lambda b: _results([]),
}


@pytest.fixture(scope="module")
def own_ranking(graph, home, env, scripted_server):
    """The chunks ragate's own reranker keeps for the question (what a failing provider falls back to)."""
    scripted_server.reset().default(EMB, good_embeddings)
    state = graph.invoke({"question": Q_SIMPLE}, context=context(home))
    return [c["id"] for c in state["reranked"]]


@pytest.mark.parametrize("mode", [*RERANK_FAULTS, "refused"], ids=[f"rerank-{m}" for m in [*RERANK_FAULTS, "refused"]])
def test_reranker_fails(graph, home, scripted_server, monkeypatch, own_ranking, mode):
    injected = Injected()
    if mode == "refused":
        monkeypatch.setenv("COHERE_BASE_URL", closed_port_url())
        injected.count()
    else:
        scripted_server.default(RERANK, counted(injected, RERANK_FAULTS[mode]))
    limit = bound(T, 0, 1)
    state, out, elapsed = run(graph, context(home, rerank_model="cohere/fault-reranker"), Q_SIMPLE, limit)
    check_run(state, out, elapsed, limit, injected, timeout_floor=T if mode == "timeout" else 0,
              errors=[r"^rerank: cohere/fault-reranker failed \(.+\); ragate's own reranker used$"])
    assert [c["id"] for c in state["reranked"]] == own_ranking
    assert all(c["scores"].get("provider_rerank") is None for c in state["reranked"])
    assert DOC in out["citations_used"] and out["verdict"]["final_decision"] == "OK"


# --- 4. the embedded engine ------------------------------------------------------------------------


def _engine_cases():
    for op, question in (("search", Q_SIMPLE), ("features", Q_SIMPLE), ("fetch", Q_SIMPLE), ("values", Q_COMPLEX)):
        for mode in ("raise", "sleep", "garbage"):
            yield pytest.param(op, mode, question, False, id=f"{op}-{mode}")
    for mode in ("raise", "sleep"):  # the provider reranker reads the texts first
        yield pytest.param("fetch", mode, Q_SIMPLE, True, id=f"fetch-{mode}-with-provider-reranker")


ENGINE_ERRORS = {
    ("search", "raise"): [r"^retrieve\[0\] \(.+\): RuntimeError: injected"],
    ("search", "sleep"): [r"^retrieve\[0\] \(.+\): EngineTimeout: the vector engine's search took longer than"],
    ("search", "garbage"): [r"^retrieve\[0\]: the vector engine returned 3 malformed hit\(s\) \(no id or no finite score\): dropped$"],
    ("features", "raise"): [(r"^rerank: the vector engine could not score the candidates against the question "
                            r"\(RuntimeError: injected.*\); ranked by their lists$")],
    ("features", "sleep"): [(r"^rerank: the vector engine could not score the candidates against the question "
                            r"\(EngineTimeout")],
    ("features", "garbage"): [(r"^rerank: the vector engine returned 9 malformed candidate feature\(s\) "
                              r"\(similarity, terms, flags\): ignored$")],
    ("fetch", "raise"): [r"^rerank: the vector engine did not return the chunks' texts \(RuntimeError"],
    ("fetch", "sleep"): [r"^rerank: the vector engine did not return the chunks' texts \(EngineTimeout"],
    ("fetch", "garbage"): [r"^rerank: the vector engine returned 2 payload\(s\) that fail the gates"],
    ("values", "raise"): [r"^decompose: values the question names unavailable \(RuntimeError",
                          r"^retrieve\[0\]: values the question names unavailable \(RuntimeError.*searched unscoped$"],
    ("values", "sleep"): [r"^decompose: values the question names unavailable \(EngineTimeout",
                          r"^retrieve\[0\]: values the question names unavailable \(EngineTimeout"],
    ("values", "garbage"): [r"^decompose: values the question names unavailable \(ValueError: .*not names",
                            r"^retrieve\[\d\]: values the question names unavailable"],
}


@pytest.mark.parametrize("op, mode, question, provider_rerank", list(_engine_cases()))
def test_embedded_engine_fails(graph, home, scripted_server, monkeypatch, op, mode, question, provider_rerank):
    real = resources_module.vector_index_for(context(home))
    faulty = FaultyIndex(real, op, mode, seconds=LONG)
    monkeypatch.setattr(resources_module, "vector_index_for", lambda ctx: faulty)
    # Reads that can wait out the timeout one after another: decompose's and then a branch's values
    # lookup; the provider reranker's fetch and then rerank's own.
    sequential = 2 if op == "values" or provider_rerank else 1
    limit = bound(T, 0, sequential)
    ctx = context(home, **({"rerank_model": "cohere/fault-reranker"} if provider_rerank else {}))
    state, out, elapsed = run(graph, ctx, question, limit)
    injected = Injected(n=faulty.faults)
    check_run(state, out, elapsed, limit, injected, errors=ENGINE_ERRORS[(op, mode)],
              timeout_floor=T if mode == "sleep" else 0)
    if op == "search" and mode != "garbage" or op == "fetch" and mode != "garbage":
        # Nothing to answer from: an honest "not found", with three ways to refine the search.
        assert out["coverage_level"] == "none" and out["citations_used"] == [] and len(out["suggestions"]) == 3
        assert out["verdict"]["final_decision"] == "WARNING"
    else:
        assert out["citations_used"] and out["verdict"]["final_decision"] in ("OK", "WARNING")
    if op == "search" and mode == "garbage":
        pids = {c["pointId"] for r in state["hits"].values() for c in r["dense"] + r["lexical"]}
        assert not pids & {"123456789", "not-a-point", "None"} and DOC in out["citations_used"]
        assert "123456788" not in {s["id"] for s in out["sources"]}  # an id the engine does not hold: no text, no source


# --- 5. the Qdrant server ----------------------------------------------------------------------------

SERVER_PATHS = {"search": "/points/query/batch", "fetch": "/documents/points", "values": "/facet"}


def _server_cases():
    # Searches and rerank's features are both /points/query/batch requests: "search" faults both.
    for op, question in (("search", Q_SIMPLE), ("fetch", Q_SIMPLE), ("values", Q_COMPLEX)):
        modes = ["http-503", "timeout", "hang-up", "malformed-json", "wrong-shape"]
        if op == "search":
            modes.append("nan-unknown-points")
        for mode in modes:
            yield pytest.param(op, mode, question, id=f"{op}-{mode}")
    yield pytest.param("all", "refused", Q_SIMPLE, id="all-refused")


SERVER_REASONS = {"http-503": r"503", "timeout": r"timed out", "hang-up": r"disconnected",
                  "malformed-json": r"JSONDecodeError", "wrong-shape": r"validation error|Error",
                  "nan-unknown-points": r"malformed hit", "refused": r"[Cc]onnect"}


@pytest.mark.parametrize("op, mode, question", list(_server_cases()))
def test_qdrant_server_fails(graph, home, qdrant, monkeypatch, op, mode, question):
    retries = 1 if mode == "http-503" else 0
    path = SERVER_PATHS.get(op, "")
    many = 1000  # every matching request of the run
    if mode == "http-503":
        qdrant.fail_next(many, status=503, path=path)
    elif mode == "timeout":
        qdrant.delay_next(many, LONG, path=path)
    elif mode == "hang-up":
        qdrant.hangup_next(many, path)
    elif mode == "malformed-json":
        qdrant.garbage_next(many, path, "{nope")
    elif mode == "wrong-shape":
        qdrant.garbage_next(many, path, '{"result": "nope", "status": "ok", "time": 0}')
    elif mode == "nan-unknown-points":
        qdrant.garbage_next(1, path, qdrant_points(3))  # the first search of the run: NaN scores, unknown ids
    else:
        monkeypatch.setenv("QDRANT_URL", closed_port_url())
    sequential = 2 if op == "values" else 1
    limit = bound(T_SERVER, retries, sequential)
    ctx = context(home, vector_store="qdrant", provider_timeout_s=T_SERVER, provider_retries=retries)
    state, out, elapsed = run(graph, ctx, question, limit)
    served = [r for r in qdrant.requests if r.path.endswith(path)] if path else []
    injected = Injected(n=1 if mode in ("refused", "nan-unknown-points") else len(served))
    node = {"search": r"^retrieve\[\d\]", "fetch": r"^rerank: the vector engine did not return",
            "values": r"^(decompose|retrieve\[\d\]): values the question names unavailable", "all": r"^retrieve\[\d\]"}[op]
    check_run(state, out, elapsed, limit, injected, errors=[rf"{node}.*{SERVER_REASONS[mode]}"],
              timeout_floor=T_SERVER if mode == "timeout" else 0)
    if op == "values":
        assert out["citations_used"]  # unscoped searches still answered
    elif op in ("fetch", "all") or mode != "nan-unknown-points":
        assert out["coverage_level"] == "none" and out["verdict"]["final_decision"] == "WARNING"
    if retries:
        assert len(served) % (retries + 1) == 0  # each failed read was tried twice


def test_a_transient_server_error_is_retried_and_nothing_is_lost(graph, home, qdrant):
    qdrant.fail_next(1, status=503, path=SERVER_PATHS["search"])
    state = graph.invoke({"question": Q_SIMPLE}, context=context(home, vector_store="qdrant", provider_timeout_s=T_SERVER,
                                                                 provider_retries=1))
    assert state["errors"] == [] and DOC in state["citations_used"]
    assert len([r for r in qdrant.requests if r.path.endswith(SERVER_PATHS["search"])]) >= 2


# --- 6. the memory store -------------------------------------------------------------------------------


class FailingStore(InMemoryStore):
    """A store whose writes to some namespaces fail (a database gone away)."""

    def __init__(self, failing: tuple[str, ...]):
        super().__init__()
        self.failing, self.faults = failing, 0

    def batch(self, ops):
        from langgraph.store.base import PutOp

        for op in ops:
            if isinstance(op, PutOp) and op.namespace[1] in self.failing:
                self.faults += 1
                raise ConnectionError(f"store unreachable: {op.namespace[1]}")
        return super().batch(ops)


@pytest.mark.parametrize("failing", [("memory",), ("requests",), ("memory", "requests")],
                         ids=["memory_shield-memory-write", "memory_shield-request-record", "memory_shield-both"])
def test_a_failing_memory_store_loses_no_answer(home, failing):
    healthy = Ragate(context(home), store=InMemoryStore(), checkpointer=InMemorySaver()).ask(Q_SIMPLE)
    store = FailingStore(failing)
    rag = Ragate(context(home), store=store, checkpointer=InMemorySaver())
    started = time.perf_counter()
    out = rag.ask(Q_SIMPLE)
    elapsed = time.perf_counter() - started
    state = {**out, "language": out["language"]}
    expected = [r"^memory_shield: store write failed: store unreachable"] if "memory" in failing else []
    expected += [r"^memory_shield: request record not written: store unreachable"] if "requests" in failing else []
    check_run(state, out, elapsed, bound(T, 0, 0), Injected(n=store.faults), errors=expected)
    assert out["answer"] == healthy["answer"] and out["verdict"]["final_decision"] == healthy["verdict"]["final_decision"]
    assert out["memory"]["saved"] is ("memory" not in failing)
    if "memory" in failing:
        assert out["memory"]["reason"].startswith("store write failed")
