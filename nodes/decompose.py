"""decompose: split a question route_gate found complex into 2–4 sub-queries.

With a chat model (`RAGATE_CHAT_MODEL`) the model splits it (prompts/decompose.yaml), checked by
`validate_sub_queries` and cached per question; otherwise, or when the model fails, the rules of
graph/algorithms/decomposition.py do. Values the question names (a source) are never cut. Any
failure, or a split that yields fewer than two usable sub-queries, falls back to the original
question. A failure is recorded in `errors`: the chat model failing gives the rule-based split, the
engine failing to list the values a question names gives a split that may cut one of them.
"""

from __future__ import annotations

from collections import OrderedDict
from string import Template
from typing import Any

from langgraph.constants import TAG_NOSTREAM
from langgraph.runtime import Runtime

from graph.algorithms.decomposition import assess, normalized_question, split_question, validate_sub_queries
from graph.algorithms.question_form import question_form
from graph.algorithms.scoping import mentioned_values
from graph.algorithms.text import json_reply
from graph.context import Context
from graph.output import failure_reason
from graph.policy import Policy, run_language
from graph.prompts import llm_prompt
from graph.providers.chat import chat_model
from graph.providers.resources import bounded_index
from graph.runtime.run_policy import run_policy
from graph.runtime.tenant_binding import run_context
from graph.runtime.timing import timed
from graph.state import State

# --- LLM decomposition (RAGATE_CHAT_MODEL) --------------------------------------------------------

_llm_cache: OrderedDict[tuple[str, str], list[str]] = OrderedDict()
LLM_CACHE_SIZE = 1024


def llm_sub_queries(llm: Any, spec: str, question: str, language: str, policy: Policy) -> list[str]:
    """2–4 sub-queries from the chat model, cached by normalized question (a repeated question costs
    no call). Raises on any failure; the caller falls back to the rules."""
    from langchain_core.messages import HumanMessage, SystemMessage

    key = (spec, normalized_question(question))
    if key in _llm_cache:
        _llm_cache.move_to_end(key)
        return list(_llm_cache[key])
    max_n = policy.decomposition.max_subqueries
    prompt = llm_prompt("decompose")
    reply = llm.invoke([SystemMessage(Template(prompt["system"]).safe_substitute(max_n=max_n, language=language)),
                        HumanMessage(Template(prompt["user"]).safe_substitute(question=question))],
                       config={"tags": [TAG_NOSTREAM]})  # sub-query JSON is not answer text for stream_mode="messages"
    subs = validate_sub_queries(json_reply(reply.content), question, language, max_n, policy)
    _llm_cache[key] = subs
    while len(_llm_cache) > LLM_CACHE_SIZE:
        _llm_cache.popitem(last=False)
    return list(subs)


@timed("decompose")
def decompose(state: State, runtime: Runtime[Context]) -> dict:
    """Split a question route_gate found complex into 2–4 sub-queries, or keep the original.

    Reads `question`, `language`, `decomposition` (route_gate's assessment) and `rag` (collections
    and tenant scope, for the values the question names; the intent and where it came from). Writes
    `sub_queries`,
    `decomposition` (decomposed, method, why it fell back, and for a split question `asks_for_name`: whether
    bridge may look for a name to search the parts again with) and `errors` (a chat model or engine that
    failed)."""
    ctx = run_context(runtime)
    question = state["question"]
    info = dict(state.get("decomposition") or {})
    errors: list[str] = []
    try:
        policy = run_policy(state.get("rag"), ctx)
        language = run_language(state, policy)
        if "complex" not in info:  # called on its own, without route_gate's assessment
            info.update(assess(question, policy))
        sub_queries, method = [question], "rules"
        if info.get("complex"):
            # Values the question names (a source, ...) are kept whole: the sub-query that names one
            # is searched within it (see retrieve).
            rag = state.get("rag") or {}
            named = {}
            if rag.get("enabled"):
                try:
                    named = mentioned_values(question, policy, rag, ctx.tenant, bounded_index(ctx))
                except Exception as exc:  # the split goes on without them: a named value may be cut
                    errors.append(f"decompose: values the question names unavailable ({failure_reason(exc)}); "
                                  "split without them")
            try:
                llm = chat_model(ctx)
                if llm is not None:
                    sub_queries = llm_sub_queries(llm, ctx.chat_model, question, language, policy)
                    method = "llm"
            except Exception as exc:  # the rules below are the fallback, and the reason is kept
                info["llm_error"] = failure_reason(exc)
                errors.append(f"decompose: chat model unusable ({info['llm_error']}); rule-based split")
            if method != "llm":
                sub_queries = split_question(question, policy, language, [v for vs in named.values() for v in vs])
    except Exception as exc:  # any failure (policy, splitter): the original question stands
        info.update(decomposed=False, method="fallback", error=f"decomposition failed, using the original question: {exc}")
        return {"sub_queries": [question], "decomposition": info,
                "errors": [*errors, f"decompose: {failure_reason(exc)}; the original question is searched"]}
    decomposed = len(sub_queries) >= 2
    info.update(decomposed=decomposed, method=method if decomposed else "none")
    if decomposed:
        # Whether the parts may be searched again with a name their evidence gives (nodes/bridge.py): only when
        # the question asks for one. Known here, a split question that asks none skips the bridge step.
        info["asks_for_name"] = question_form(question, language, policy.languages.question_cues).wants_name
    if info.get("complex") and not decomposed:
        info["note"] = "complex, but no split gave two independent sub-queries: using the original question"
    return {"sub_queries": sub_queries, "decomposition": info,
            **({"errors": errors} if errors else {})}
