"""The three suggestions given with low or no coverage."""

from __future__ import annotations

from graph.prompts import phrase
from graph.state import Chunk


def build_suggestions(language: str, rag: dict, chunks: list[Chunk], missing: list[str], policy_allow: list[str]) -> list[str]:
    """Exactly three concrete ways to refine the search, built from what was and was not found."""
    intents = ", ".join(policy_allow[:4]) or "knowledge"
    out = []
    if rag.get("disabled_reason") in ("intent_denied", "intent_unlisted"):
        out.append(phrase(language, "suggestion_allowed_intent", intents=intents))
    if missing:
        out.append(phrase(language, "suggestion_missing_terms", terms=", ".join(missing[:4])))
    out.append(phrase(language, "suggestion_period"))
    if chunks:
        top = chunks[0]
        out.append(phrase(language, "suggestion_closest_doc", asset=top.get("assetName") or top["docId"], doc_id=top["docId"]))
    else:
        out.append(phrase(language, "suggestion_ingest", collections=", ".join(rag.get("collections") or ["documents"])))
    if rag.get("intent_source") == "fallback":
        out.append(phrase(language, "suggestion_intent", intents=intents))
    out.append(phrase(language, "suggestion_split"))
    unique = list(dict.fromkeys(out))
    return unique[:3]
