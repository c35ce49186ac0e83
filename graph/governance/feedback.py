"""Feedback on an answer, stored against its request id.

`record_feedback` checks that the request exists for the caller's tenant (the request record that
memory_shield wrote, see graph/governance/audit.py) and stores, under `("ragate", "feedback", tenant)`, the
rating, the comment, the request id (and the caller's correlation id of that request, if it sent
one) and the judge's scores, reasoning and decision of that request, so that a rating can be read
beside what the judge thought. Request ids are the server's (nodes/route_gate.py gives every
request a new one and memory_shield never writes over a record), so a rating stays with the
answer it was given on. A request of another tenant is as unknown as one that never happened.
The write is acknowledged only after the store has committed it (SQLite with synchronous=FULL or
PostgreSQL, see graph/providers/persistence.py).
"""

from __future__ import annotations

from typing import Any

from graph.governance.audit import FEEDBACK, REQUESTS, namespace, utc_now

# Ratings: thumbs or a 1–5 scale, normalised to 0–1 so both can be aggregated.
THUMBS = {"up": 1.0, "down": 0.0, "+1": 1.0, "-1": 0.0}
MAX_COMMENT_CHARS = 4000


class FeedbackError(ValueError):
    """Feedback that cannot be recorded: unknown request id, bad rating, no tenant."""


class UnknownRequestError(FeedbackError):
    """No request with this id for this tenant (never one, or another tenant's)."""


def parse_rating(rating: Any) -> tuple[str, float]:
    """('up' | 'down' | '1'..'5', score 0–1); anything else is refused."""
    text = str(rating).strip().casefold()
    if text in THUMBS:
        return text, THUMBS[text]
    if text in {"1", "2", "3", "4", "5"}:
        return text, (int(text) - 1) / 4
    raise FeedbackError(f"rating must be up, down or 1-5, not {rating!r}")


def record_feedback(store: Any, tenant: str | None, request_id: str, rating: Any,
                    comment: str | None = None) -> dict[str, Any]:
    """Store feedback on `request_id`; returns what was stored. Raises FeedbackError."""
    if not tenant or not str(tenant).strip():
        raise FeedbackError("no tenant given: feedback is recorded against a request of the caller's tenant")
    request_id = str(request_id or "").strip()
    if not request_id:
        raise FeedbackError("request id is empty")
    label, score = parse_rating(rating)
    if comment is not None and len(comment) > MAX_COMMENT_CHARS:
        raise FeedbackError(f"comment is {len(comment)} characters, at most {MAX_COMMENT_CHARS} are kept")
    item = store.get(namespace(REQUESTS, tenant), request_id)
    if item is None:
        raise UnknownRequestError(f"unknown request id {request_id!r} for tenant {tenant!r}")
    request = item.value
    value = {
        "request_id": request_id,
        "correlation_id": request.get("correlation_id"),
        "rating": label,
        "score": score,
        "comment": comment or "",
        "scores": request.get("scores", {}),
        "reasoning": request.get("reasoning", {}),
        "final_decision": request.get("final_decision"),
        "created_at": utc_now(),
    }
    store.put(namespace(FEEDBACK, tenant), request_id, value, index=False)
    return value


def get_feedback(store: Any, tenant: str, request_id: str) -> dict[str, Any] | None:
    item = store.get(namespace(FEEDBACK, tenant), request_id)
    return item.value if item else None
