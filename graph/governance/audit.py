"""The request record: what one request decided, kept for feedback, debugging and the log.

Built from the final state by memory_shield (the last node of every path), it is
- written to the store under `("ragate", "requests", tenant)`, keyed by the request id (the
  server's, new for every request: nodes/route_gate.py; a caller's own id is the record's
  `correlation_id`, never its key), so that feedback can be checked against a real request of the
  same tenant and an operator can look the request up later (the same record the graph produced,
  not a reconstruction; memory_shield never writes over one);
- emitted as one JSON line on the `ragate.requests` logger.

It holds ids, decisions, scores and timings, never document text: no chunk content, no snippets, no
answer text (an extractive answer is document text) and no per-claim quotes. The question and the
sub-queries are the caller's own words. Secrets never enter the state, so they cannot leak from it.
"""

from __future__ import annotations

import datetime as _dt
import json
import logging
from typing import Any

from graph.providers.persistence import namespace_label
from graph.state import State

REQUESTS = "requests"
FEEDBACK = "feedback"
logger = logging.getLogger("ragate.requests")


def utc_now() -> str:
    """The timestamp every stored record carries (ISO 8601, UTC)."""
    return _dt.datetime.now(_dt.UTC).isoformat()


def namespace(kind: str, tenant: str) -> tuple[str, ...]:
    """Store namespaces are per tenant: one tenant's records are invisible from another's. Every
    namespace ragate reads or writes is built here, its labels encoded by `namespace_label`, so a
    tenant id with a period (`acme.com.br`, valid for TENANT_RE) is a valid namespace and a tenant
    without one keeps the namespace it always had."""
    return ("ragate", namespace_label(kind), namespace_label(tenant))


def request_record(state: State, memory: dict[str, Any] | None = None) -> dict[str, Any]:
    rag = state.get("rag") or {}
    verdict = state.get("verdict") or {}
    decomposition = state.get("decomposition") or {}
    return {
        "ts": utc_now(),
        "request_id": state.get("request_id"),
        "correlation_id": rag.get("correlation_id"),
        "tenant": state.get("tenant"),
        "question": state.get("question"),
        "language": state.get("language"),
        "route": {
            "enabled": rag.get("enabled", False),
            "intent": rag.get("intent"),
            "intent_source": rag.get("intent_source"),
            "entity": rag.get("entity"),
            "collections": rag.get("collections", []),
            "profile": rag.get("profile", {}),
            "max_chunks": rag.get("max_chunks"),
            "disabled_reason": rag.get("disabled_reason"),
            "error": rag.get("error"),
        },
        "policy": rag.get("policy", {}),
        "decomposition": {k: decomposition.get(k) for k in ("complex", "decomposed", "method", "score", "reasons")
                          if k in decomposition},
        # What was searched: the sub-queries, or the question itself when it was not decomposed.
        "sub_queries": state.get("sub_queries") or ([state["question"]] if rag.get("enabled") and state.get("question") else []),
        "scoped_searches": [s.get("filters", {}) for s in state.get("scoped_queries") or []],
        "retrieved": [{"id": c.get("id"), "docId": c.get("docId"), "rank": c.get("rank"),
                       "rerankScore": round(float(c.get("rerankScore") or 0.0), 4)}
                      for c in state.get("reranked") or []],
        "citations_used": state.get("citations_used", []),
        "coverage_level": state.get("coverage_level"),
        "answer_chars": len(state.get("answer") or ""),
        "timings_ms": state.get("timings_ms", {}),
        "scores": verdict.get("scores", {}),
        "reasoning": verdict.get("reasoning", {}),
        "judge_method": verdict.get("method"),
        "final_decision": verdict.get("final_decision"),
        "memory": memory if memory is not None else state.get("memory", {}),
        "errors": state.get("errors", []),
    }


def emit(record: dict[str, Any]) -> None:
    """One JSON line per request on the `ragate.requests` logger (handlers: graph/governance/logs.py)."""
    if logger.isEnabledFor(logging.INFO):
        logger.info(json.dumps(record, ensure_ascii=False, default=str))
