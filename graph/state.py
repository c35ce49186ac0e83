"""The typed state that flows through the graph.

Each node returns a partial update of `State`. Fields written by parallel branches (`hits`,
`timings_ms`, `errors`) carry reducers so that the branches' updates merge instead of clashing.
All values are plain JSON-serialisable types so the state can be checkpointed, shown in
LangGraph Studio and returned over HTTP unchanged.
"""

from __future__ import annotations

import operator
from typing import Annotated, Any, Literal

from typing_extensions import NotRequired, TypedDict

Coverage = Literal["high", "medium", "low", "none"]
Decision = Literal["OK", "WARNING", "BLOCK"]


def merge_dicts(left: dict | None, right: dict | None) -> dict:
    """Reducer: shallow dict merge, right wins (parallel branches write distinct keys)."""
    return {**(left or {}), **(right or {})}


class RouteRecord(TypedDict, total=False):
    """The deterministic context record produced by `route_gate` (the output contract's `rag`)."""

    enabled: bool
    question: str
    intent: str
    intent_source: Literal["caller", "rule", "fallback", "history"]
    entity: str
    collections: list[str]
    profile: dict[str, Any]
    max_chunks: int
    filters: dict[str, Any]
    language: str
    performance_injection: bool
    policy: dict[str, Any]
    error: str | None
    # Why retrieval is off, as a code: policy_invalid, empty_question, no_tenant, no_intent,
    # intent_denied, intent_unlisted.
    disabled_reason: str


class Chunk(TypedDict, total=False):
    """A retrieved chunk. `scores` explains its ranking: dense, lexical, fused, rerank, boosts.
    `content` and the full `metadata` are filled in by rerank for the chunks it keeps."""

    id: str                    # "<docId>#<chunk index>"
    pointId: str               # the engine's point id
    matchedTerms: list[int]    # lexical term ids of the original question that the chunk holds
    flags: list[str]           # rerank boosts whose conditions the chunk meets (decided by the engine)
    docId: str
    assetId: str
    assetName: str
    collection: str
    content: str
    metadata: dict[str, Any]
    similarity: float
    rerankScore: float
    rank: int
    scores: dict[str, Any]


class SearchResult(TypedDict):
    """What one retrieve branch found for one sub-query: a dense and a lexical ranked list."""

    sub_query: str
    kind: Literal["sub_query", "performance", "scoped"]
    dense: list[Chunk]
    lexical: list[Chunk]
    error: NotRequired[str]


class Verdict(TypedDict, total=False):
    scores: dict[str, float]
    reasoning: dict[str, str]
    final_decision: Decision
    checks: list[dict[str, Any]]
    method: str


class MemoryOutcome(TypedDict, total=False):
    saved: bool
    tag: str | None
    namespace: list[str]
    key: str
    reason: str


class Turn(TypedDict, total=False):
    """One finished exchange of a thread, as the next question sees it."""

    request_id: str
    question: str
    answer: str
    intent: str | None
    final_decision: Decision


# Limits of what a caller sends, the same on every entry point (/api/chat, LangServe's /rag).
MAX_QUESTION_CHARS = 4000
REQUEST_ID_PATTERN = r"^[A-Za-z0-9._:-]{1,128}$"


class InputState(TypedDict, total=False):
    """What a caller sends."""

    question: str
    intent: NotRequired[str | None]
    entity: NotRequired[str | None]
    request_id: NotRequired[str]
    history: NotRequired[list[Turn]]           # a stateless caller's own history (a thread keeps its own)


class State(TypedDict, total=False):
    """The whole run: input, route decision, retrieval, answer, verdict, memory and timings."""

    request_id: str
    question: str
    intent: str | None
    entity: str | None
    tenant: str | None
    # Recent turns of the thread, oldest first. With a checkpointer, memory_shield appends each
    # finished turn and the next question of the thread finds them here (policy memory.history_turns).
    history: list[Turn]
    language: str                           # language of the question ("pt", "en")

    rag: RouteRecord                        # route_gate's decision and policy snapshot
    decomposition: dict[str, Any]           # score, reasons, method, decomposed
    sub_queries: list[str]
    scoped_queries: list[dict[str, Any]]    # searches restricted to a value the question names: {query, filters}

    hits: Annotated[dict[str, SearchResult], merge_dicts]   # one entry per retrieve branch
    fused: list[Chunk]                      # after RRF, best first
    reranked: list[Chunk]                   # after rerank, boosts and budgets: what compose sees

    answer: str
    citations_used: list[str]
    coverage_level: Coverage
    suggestions: list[str]
    verdict: Verdict
    blocked_answer: str                     # the composer's answer a BLOCK verdict replaced (audit only)
    memory: MemoryOutcome

    timings_ms: Annotated[dict[str, float], merge_dicts]
    errors: Annotated[list[str], operator.add]   # degradations recorded along the way


class RetrieveTask(TypedDict):
    """The payload `Send` hands to one retrieve branch."""

    question: str
    sub_query: str
    index: int
    kind: Literal["sub_query", "performance", "scoped"]
    rag: RouteRecord
