"""memory_shield: only vetted answers are remembered; every request is recorded.

OK answers are written to the LangGraph store, WARNING answers are written with a `warning` tag,
BLOCK answers are never written. Memory is namespaced by tenant, so one tenant's remembered
answers are never visible to another.

As the last node of every path it also
- writes the request record (graph/governance/audit.py) under `("ragate", "requests", tenant)`, which feedback
  is checked against, and emits it as the request's one JSON log line;
- never writes over a request record or a remembered answer that exists under the request's id
  (route_gate gives every request a new id; this holds even if something handed it an old one);
- appends the finished turn to the thread's `history` (kept by the checkpointer, capped by the
  policy's `memory.history_turns`) and clears the per-request inputs `intent` and `entity`, so the
  next question of the thread does not inherit them.
"""

from __future__ import annotations

from langgraph.runtime import Runtime

from graph.context import Context
from graph.governance.audit import REQUESTS, emit, namespace, request_record, utc_now
from graph.policy import MemorySettings
from graph.runtime.run_policy import run_policy
from graph.runtime.tenant_binding import run_context
from graph.runtime.timing import timed
from graph.state import MemoryOutcome, State, Turn


def memory_namespace(tenant: str, policy_namespace: str = "memory") -> tuple[str, ...]:
    return namespace(policy_namespace, tenant)


def remember(state: State, store, tenant: str | None, ns_name: str) -> tuple[MemoryOutcome, list[str]]:
    """Write an OK / WARNING answer to memory; never a BLOCK one, nor without a `tenant` (None or blank)."""
    decision = (state.get("verdict") or {}).get("final_decision", "BLOCK")
    key = state["request_id"]
    if decision == "BLOCK":
        return MemoryOutcome(saved=False, tag=None, key=key, reason="BLOCK verdicts are never remembered"), []
    if store is None:
        return MemoryOutcome(saved=False, tag=None, key=key, reason="no store configured for this run"), []
    if not tenant:
        return MemoryOutcome(saved=False, tag=None, key=key, reason="no tenant: nothing is remembered"), []
    ns = memory_namespace(tenant, ns_name)
    tag = "warning" if decision == "WARNING" else None
    verdict = state.get("verdict") or {}
    value = {
        "request_id": key,
        "question": state.get("question"),
        "answer": state.get("answer"),
        "citations_used": state.get("citations_used", []),
        "coverage_level": state.get("coverage_level"),
        "final_decision": decision,
        "scores": verdict.get("scores", {}),
        "reasoning": verdict.get("reasoning", {}),
        "tags": [tag] if tag else [],
        "created_at": utc_now(),
    }
    try:
        if store.get(ns, key) is not None:
            return (MemoryOutcome(saved=False, tag=tag, namespace=list(ns), key=key,
                                  reason="an answer is already remembered under this request id: not overwritten"),
                    [f"memory_shield: an answer is already remembered under request id {key!r}: not overwritten"])
        store.put(ns, key, value, index=False)
    except Exception as exc:  # a failing store must not lose the answer
        return (MemoryOutcome(saved=False, tag=tag, namespace=list(ns), key=key,
                              reason=f"store write failed: {type(exc).__name__}: {exc}"),
                [f"memory_shield: store write failed: {exc}"])
    return MemoryOutcome(saved=True, tag=tag, namespace=list(ns), key=key,
                         reason="remembered" + (" with a warning tag" if tag else "")), []


@timed("memory_shield")
def memory_shield(state: State, runtime: Runtime[Context]) -> dict:
    """Remember vetted answers (OK; WARNING with a tag; never BLOCK), record the request, close the turn.

    Reads the whole state: `verdict`, `answer`, `request_id`, `question`, `history`, `rag`, ... for
    the memory entry and the request record. Writes `memory` (saved or not, and why), `history` (the
    finished turn appended, capped by the policy), `intent` and `entity` (cleared for the thread's
    next question) and `errors`. Also writes the request record to the store (unless one exists
    under that id: it is kept, and `errors` says so) and the request log."""
    ctx = run_context(runtime)
    try:
        memory_cfg = run_policy(state.get("rag"), ctx).memory
    except Exception:  # no policy for this run: the defaults (answers are still vetted by the verdict)
        memory_cfg = MemorySettings()
    store = getattr(runtime, "store", None)
    tenant = ctx.tenant if ctx.tenant and str(ctx.tenant).strip() else None
    memory, errors = remember(state, store, tenant, memory_cfg.namespace)

    record = request_record({**state, "errors": (state.get("errors") or []) + errors}, dict(memory))
    if store is not None and tenant:
        requests_ns = namespace(REQUESTS, tenant)
        try:
            if store.get(requests_ns, state["request_id"]) is not None:
                errors.append(f"memory_shield: a request record exists under request id {state['request_id']!r}: "
                              "not overwritten")
                record["errors"] = record["errors"] + errors[-1:]
            else:
                store.put(requests_ns, state["request_id"], record, index=False)
        except Exception as exc:
            errors.append(f"memory_shield: request record not written: {exc}")
            record["errors"] = record["errors"] + errors[-1:]
    emit(record)

    turns = memory_cfg.history_turns
    turn = Turn(request_id=state["request_id"], question=state.get("question", ""), answer=state.get("answer", ""),
                intent=(state.get("rag") or {}).get("intent"),
                final_decision=(state.get("verdict") or {}).get("final_decision", "BLOCK"))
    history = ((state.get("history") or []) + [turn])[-turns:] if turns > 0 else []
    update = {"memory": memory, "history": history, "intent": None, "entity": None}
    if errors:
        update["errors"] = errors
    return update
