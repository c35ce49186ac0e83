"""route_gate: decide from the policy whether and how this question may use retrieval.

Produces the deterministic context record `rag` (enabled, intent, entity, collections, profile,
filters, policy snapshot, error). A missing or invalid policy, an empty question or a missing
tenant disable retrieval with the reason in `rag.error`. A question no entry point takes (not
text, too long, control characters, not valid Unicode: graph/state.py `check_question`) raises
QuestionError naming the problem: the graph run directly (LangGraph's /runs, Studio) has no entry
point's checks in front of it. So does a malformed correlation id; a run that names `request_id` is
refused before this node runs (graph/state.py `server_assigned`).

Every request gets a new request id here (uuid4 hex), whoever calls: the id keys the request record,
the remembered answer and the feedback, so a caller never chooses it. A caller's own id travels as
`correlation_id`, kept beside the request in `rag`.
"""

from __future__ import annotations

import uuid

from langgraph.runtime import Runtime
from langgraph.types import Overwrite

from graph.algorithms.decomposition import assess
from graph.algorithms.routing import infer_intent
from graph.algorithms.text import detect_language, has_any_phrase
from graph.context import Context
from graph.policy import Policy, PolicyError, load_policy, shipped_languages
from graph.runtime.run_policy import keep_run_version
from graph.runtime.tenant_binding import run_context
from graph.runtime.timing import timed
from graph.state import RouteRecord, State, check_correlation_id, check_question, fresh_turn


def question_language(question: str, policy: Policy | None) -> str:
    """The question's language by the policy's markers; by the shipped policy's when the run's is broken (its
    answer, that retrieval is off, is still said in the asker's language)."""
    languages = policy.languages if policy is not None else shipped_languages()
    return detect_language(question, languages.markers, languages.default)


def policy_snapshot(policy: Policy, entity_spec: dict, intent: str | None, intent_source: str) -> dict:
    """The parts of the policy that decided this request, so a reader can audit it."""
    routing = policy.routing
    return {
        "path": policy.path,
        "version": policy.version,
        "digest": policy.digest,
        "allow_intents": list(routing.allow_intents),
        "deny_intents": list(routing.deny_intents),
        "fallback_intent": routing.fallback_intent,
        "intent_filter": dict(routing.intent_filters[intent]) if intent in routing.intent_filters else None,
        "intent_filter_applies_as": filter_role(intent_source),
        "route": entity_spec,
    }


def filter_role(intent_source: str) -> str:
    """How the intent's filters apply: a gate inside the engine when the caller named the intent; a rerank
    boost when it was inferred (from the question's words or the thread's topic), which can be wrong."""
    return "gate" if intent_source == "caller" else "boost"


@timed("route_gate")
def route_gate(state: State, runtime: Runtime[Context]) -> dict:
    """Decide from the policy whether and how this question may use retrieval.

    Reads `question`, `intent`, `entity`, `correlation_id` and `history` (a thread's earlier turns).
    Writes `rag` (the route record: enabled, intent, entity, collections, profile, the intent's filters —
    `filters`, a gate, when the caller named it, else `preferred_filters`, a rerank boost —, policy
    snapshot with its digest, error, the caller's correlation id), `request_id` (always a new one,
    as an Overwrite: graph/state.py `server_assigned`), `correlation_id` (cleared: the next question
    of a thread sends its own or has none), `question` (checked), `tenant`, `language`, `history`,
    `decomposition` (the complexity assessment) and clears the previous turn's results
    (graph/state.py `fresh_turn`)."""
    ctx = run_context(runtime)
    raw = state.get("question")
    question = check_question(raw) if raw is not None and (not isinstance(raw, str) or raw.strip()) else ""
    correlation_id = check_correlation_id(state.get("correlation_id"))
    history = list(state.get("history") or [])
    record: RouteRecord = {
        "enabled": False, "question": question, "intent": state.get("intent"), "entity": state.get("entity"),
        "collections": [], "filters": {}, "policy": {}, "performance_injection": False, "error": None,
        "correlation_id": correlation_id,
    }
    policy: Policy | None = None
    try:
        policy = load_policy(ctx.policy_path)
        keep_run_version(policy, ctx)
    except PolicyError as exc:
        record["error"] = f"retrieval disabled: {exc}"
        record["disabled_reason"] = "policy_invalid"
    language = question_language(question, policy)
    record["language"] = language
    update = {**fresh_turn(), "request_id": Overwrite(uuid.uuid4().hex), "correlation_id": None, "question": question,
              "tenant": ctx.tenant, "language": language, "history": history, "rag": record}
    if policy is None:
        return update

    intent = (state.get("intent") or "").strip() or None
    source = "caller"
    if intent is None:
        intent, source = infer_intent(question, policy)
        if source == "fallback" and history and history[-1].get("intent"):
            # A follow-up ("and in 2024?") names no topic of its own: it stays on the thread's topic.
            intent, source = history[-1]["intent"], "history"
    record["intent"], record["intent_source"] = intent, source

    intent_filters, gated = dict(policy.routing.intent_filters.get(intent) or {}), filter_role(source) == "gate"
    route = policy.entity_route(state.get("entity"))
    profile = route.profile
    record.update(
        entity=route.entity,
        collections=list(ctx.collections or route.collections),
        profile={"name": route.profile_name, "k": ctx.k or profile.k,
                 "min_score": profile.min_score if ctx.min_score is None else ctx.min_score,
                 "max_context_chars": ctx.max_context_chars or profile.max_context_chars,
                 "rerank_depth": profile.rerank_depth},
        max_chunks=ctx.top_n or route.max_chunks,
        filters=intent_filters if gated else {},
        preferred_filters={} if gated else intent_filters,
        performance_injection=has_any_phrase(question, policy.retrieval.performance_keywords),
        policy=policy_snapshot(policy, {"entity": route.entity, "profile": route.profile_name,
                                        "collections": list(route.collections), "max_chunks": route.max_chunks},
                               intent, source),
    )

    if not question:
        record["error"], record["disabled_reason"] = "retrieval disabled: the question is empty", "empty_question"
    elif not ctx.tenant or not str(ctx.tenant).strip():
        record["error"] = "retrieval disabled: no tenant given (every search is restricted to the caller's tenant)"
        record["disabled_reason"] = "no_tenant"
    elif intent is None:
        record["error"] = "retrieval disabled: no intent given, none inferred and no routing.fallback_intent"
        record["disabled_reason"] = "no_intent"
    else:
        allowed, why = policy.routing.intent_allowed(intent)
        record["enabled"] = allowed
        if allowed:
            update["decomposition"] = assess(question, policy)
            if not ctx.decompose:
                update["decomposition"].update(complex=False, note="decomposition switched off (Context.decompose)")
        if not allowed:
            record["error"] = f"retrieval disabled: {why}"
            record["disabled_reason"] = "intent_denied" if intent in policy.routing.deny_intents else "intent_unlisted"
    return update
