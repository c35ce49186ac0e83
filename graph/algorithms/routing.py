"""Which intent a text speaks of, by the policy's keyword rules (`routing.intent_rules`): route_gate routes a
question by it when the caller names none. An intent inferred so only ranks (`routing.inferred_intent_boost`)."""

from __future__ import annotations

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
