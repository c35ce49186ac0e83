"""Which intent a text speaks of, by the policy's keyword rules (`routing.intent_rules`).

route_gate routes a question by it; retrieve searches each part of a split question whose own words
speak of another topic than the whole question's under that topic's filters (`part_routes`).
"""

from __future__ import annotations

from collections.abc import Sequence

from graph.algorithms.text import count_phrases
from graph.policy import Policy


def infer_intent(question: str, policy: Policy) -> tuple[str | None, str]:
    """The intent rule with the most keyword hits (first listed wins a tie), else the fallback."""
    best, best_hits = None, 0
    for rule in policy.routing.intent_rules:
        hits = sum(count_phrases(question, rule.keywords).values())
        if hits > best_hits:
            best, best_hits = rule.intent, hits
    if best:
        return best, "rule"
    return policy.routing.fallback_intent, "fallback"


def part_routes(parts: Sequence[str], question_intent: str | None, intent_source: str,
                policy: Policy) -> dict[str, dict]:
    """{part: {"intent", "filters"}} for the parts of a split question searched under their own intent.

    A question's intent inferred from its words comes from the words of one part: "Como a decisão judicial
    mudou as devoluções e qual é a taxa atual de devolução?" is legal by its first part, and the legal
    filter (legal documents only) would hide the operations report that holds the rate. So a part whose
    own words give another allowed intent — or no topic at all, and so the fallback — is searched under
    that intent's filters, as if asked alone. An intent the caller gave, or a thread's, holds for every
    part; a part whose words give an intent the policy does not allow keeps the question's route."""
    if intent_source != "rule":
        return {}
    routes: dict[str, dict] = {}
    for part in parts:
        intent, _ = infer_intent(part, policy)
        if intent is None or intent == question_intent or not policy.routing.intent_allowed(intent)[0]:
            continue
        routes[part] = {"intent": intent, "filters": dict(policy.routing.intent_filters.get(intent) or {})}
    return routes
