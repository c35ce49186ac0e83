"""memory_shield: only vetted answers are remembered.

OK answers are written to the LangGraph store, WARNING answers are written with a `warning` tag,
BLOCK answers are never written. Memory is namespaced by tenant, so one tenant's remembered
answers are never visible to another.
"""

from __future__ import annotations

import datetime as _dt

from langgraph.runtime import Runtime

from graph.context import Context
from graph.policy import load_policy
from graph.state import MemoryOutcome, State
from nodes.instrumentation import context_of, timed


def memory_namespace(tenant: str, policy_namespace: str = "memory") -> tuple[str, ...]:
    return ("ragate", policy_namespace, tenant)


@timed("memory_shield")
def memory_shield(state: State, runtime: Runtime[Context]) -> dict:
    ctx = context_of(runtime)
    decision = (state.get("verdict") or {}).get("final_decision", "BLOCK")
    key = state["request_id"]
    if decision == "BLOCK":
        return {"memory": MemoryOutcome(saved=False, tag=None, key=key, reason="BLOCK verdicts are never remembered")}
    store = getattr(runtime, "store", None)
    if store is None:
        return {"memory": MemoryOutcome(saved=False, tag=None, key=key, reason="no store configured for this run")}
    if not ctx.tenant or not str(ctx.tenant).strip():
        return {"memory": MemoryOutcome(saved=False, tag=None, key=key, reason="no tenant: nothing is remembered")}
    try:
        ns_name = load_policy(ctx.policy_path).section("memory").get("namespace", "memory")
    except Exception:
        ns_name = "memory"
    namespace = memory_namespace(ctx.tenant, ns_name)
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
        "created_at": _dt.datetime.now(_dt.timezone.utc).isoformat(),
    }
    try:
        store.put(namespace, key, value, index=False)
    except Exception as exc:  # a failing store must not lose the answer
        return {"memory": MemoryOutcome(saved=False, tag=tag, namespace=list(namespace), key=key,
                                        reason=f"store write failed: {type(exc).__name__}: {exc}"),
                "errors": [f"memory_shield: store write failed: {exc}"]}
    return {"memory": MemoryOutcome(saved=True, tag=tag, namespace=list(namespace), key=key,
                                    reason="remembered" + (" with a warning tag" if tag else ""))}
