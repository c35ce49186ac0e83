"""safe_response: on a BLOCK verdict, replace the answer with a cautious one in the question's
language that says what could not be confirmed, keeping the retrieved sources for the reader."""

from __future__ import annotations

from langgraph.runtime import Runtime

from graph.context import Context
from graph.policy import run_language
from graph.prompts import phrase
from graph.runtime.timing import timed
from graph.state import State


def unconfirmed_items(verdict: dict) -> list[str]:
    items: list[str] = []
    for check in verdict.get("checks", []):
        items += check.get("unsupported_values", []) + check.get("unsupported_fields", [])
        items += [f"[{i}]" for i in check.get("unknown_citations", [])]
    return list(dict.fromkeys(items))


@timed("safe_response")
def safe_response(state: State, runtime: Runtime[Context]) -> dict:
    """Replace a blocked answer with a cautious one that names what could not be confirmed.

    Reads `verdict` (the unsupported values, fields and citations), `reranked` and `language`.
    Writes `answer` (the safe response), `direct_answer` (none: nothing was confirmed),
    `citations_used` (none) and `blocked_answer` (the composer's answer, kept for audit)."""
    language = run_language(state)
    items = unconfirmed_items(state.get("verdict") or {})
    doc_ids = list(dict.fromkeys(c["docId"] for c in state.get("reranked") or []))
    lines = [phrase(language, "safe_intro")]
    if items:
        # Quoted so the reader sees exactly which values failed; they are not asserted as facts.
        lines.append(phrase(language, "safe_unconfirmed", items=", ".join(f"«{i}»" for i in items)))
    lines.append(phrase(language, "safe_sources", sources=", ".join(doc_ids)) if doc_ids else phrase(language, "safe_no_sources"))
    return {"answer": "\n".join(lines), "direct_answer": None, "citations_used": [],
            "blocked_answer": state.get("answer", "")}
