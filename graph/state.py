"""The typed state that flows through the graph.

Each node returns a partial update of `State`. Fields written by parallel branches (`hits`,
`timings_ms`, `errors`) carry reducers so that the branches' updates merge instead of clashing;
`request_id` carries one that refuses every write but route_gate's (`server_assigned`).
All values are plain JSON-serialisable types so the state can be checkpointed, shown in
LangGraph Studio and returned over HTTP unchanged.
"""

from __future__ import annotations

import copy
import functools
import operator
import re
import typing
import unicodedata
from typing import Annotated, Any, Literal, NotRequired

from pydantic.json_schema import SkipJsonSchema
from typing_extensions import TypedDict

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
    filters: dict[str, Any]                   # engine filters of an intent the caller named (a gate)
    preferred_filters: dict[str, Any]         # an inferred intent's filters: a rerank boost, never a gate
    language: str
    performance_injection: bool
    policy: dict[str, Any]
    error: str | None
    correlation_id: str | None                # the caller's own id for this request, if it sent one (never its key)
    # Why retrieval is off, as a code: policy_invalid, empty_question, no_tenant, no_intent,
    # intent_denied, intent_unlisted.
    disabled_reason: str


# The engine flag a chunk carries when its `language` is not the question's (set by retrieve for the
# collections not wholly in the question's language, read by rerank).
OTHER_LANGUAGE_FLAG = "other_language"


class Chunk(TypedDict, total=False):
    """A retrieved chunk. `scores` explains its ranking: dense, lexical, fused, rerank, boosts.
    `content` and the full `metadata` are filled in by rerank for the chunks it keeps."""

    id: str                    # "<docId>#<chunk index>"
    pointId: str               # the engine's point id
    matchedTerms: list[int]    # lexical term ids of the original question that the chunk holds
    flags: list[str]           # rerank boosts and OTHER_LANGUAGE_FLAG whose conditions it meets (engine-decided)
    docId: str
    assetId: str
    assetName: str
    collection: str
    content: str
    metadata: dict[str, Any]
    similarity: float
    rerankScore: float
    relevanceFloor: float      # below this rerankScore the chunk is irrelevant (its embedding model's scale)
    rank: int
    scores: dict[str, Any]


class SearchResult(TypedDict):
    """What one retrieve branch found for one sub-query: a dense and a lexical ranked list."""

    sub_query: str
    kind: Literal["sub_query", "performance", "scoped", "bridge"]  # "bridge": a part searched with bridge_name
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
# A request id as a caller names one (feedback, /ops/rag_debug); the ids route_gate gives are uuid4 hex.
REQUEST_ID_PATTERN = r"^[A-Za-z0-9._:-]{1,128}$"
# A caller's own id for a request: stored beside the request (record, output, log line), never its key.
CORRELATION_ID_PATTERN = REQUEST_ID_PATTERN  # the same form as a request id
_CORRELATION_ID = re.compile(CORRELATION_ID_PATTERN)
# What every entry point says to a caller that sends a request id.
REQUEST_ID_REFUSED = ("request_id is assigned by the server, a new one for every request, and cannot be sent; "
                      "send correlation_id to tag the request with an id of yours")


class QuestionError(ValueError):
    """Input no entry point takes (a question, a correlation id, a request id the caller may not
    set), said so that the caller knows what to fix. `status` is the HTTP status for it: 413 for a
    question that is too long, 422 otherwise."""

    def __init__(self, message: str, status: int = 422):
        super().__init__(message)
        self.status = status


def check_correlation_id(value: Any) -> str | None:
    """A caller's correlation id as it is stored (None when it sent none), or QuestionError: text of
    1-128 letters, digits, '.', '_', ':' or '-'. One rule for every entry point and route_gate."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise QuestionError(f"correlation_id must be a string, not {type(value).__name__}")
    if not _CORRELATION_ID.match(value):
        raise QuestionError("correlation_id must be 1-128 letters, digits, '.', '_', ':' or '-'")
    return value


def server_assigned(current: str, update: Any) -> str:
    """Reducer of `State.request_id`: the request id is the server's. route_gate gives every request
    a new one, written with `Overwrite`, which skips this reducer; any other write is a caller naming
    the id (a graph run's input, a parent graph's state, a state update) and is refused, so that no
    request can take an existing request's id and rewrite its record or the feedback on it."""
    raise QuestionError(REQUEST_ID_REFUSED)


# Invisible formatting that copy and paste brings along: soft hyphen, zero-width space, direction
# marks, embeddings, overrides and isolates, word joiner, byte order mark. Removed from a question,
# or "ven\u200bdas" is not "vendas" for the intent rules, the lexical search and the embedder. The
# joiners (ZWNJ, ZWJ) are kept: they shape scripts and emoji sequences.
_INVISIBLE = re.compile("[\u00ad\u200b\u200e\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff]")


def check_question(question: Any) -> str:
    """The question as the graph should see it (stripped, invisible formatting removed), if a caller
    may ask it; QuestionError naming the problem otherwise. One rule for every entry point (the Python
    API, the CLI, /api/chat, /rag, and route_gate for a graph run directly): text (str); valid Unicode (no lone
    surrogate: what undecodable bytes become in a command line, or a broken JSON escape, and neither
    can be stored or sent back as UTF-8); no control characters but tab and new lines; not empty,
    nor only invisible characters; at most MAX_QUESTION_CHARS. Anything else (any script, emoji,
    punctuation) is a question. Positions in messages count characters from 1."""
    if question is None:
        raise QuestionError("question is required")
    if isinstance(question, (bytes, bytearray, memoryview)):
        raise QuestionError(f"question must be text (str), not {type(question).__name__}: decode it first, "
                            "e.g. question.decode('utf-8')")
    if not isinstance(question, str):
        raise QuestionError(f"question must be a string, not {type(question).__name__}")
    for position, ch in enumerate(question, start=1):
        if "\ud800" <= ch <= "\udfff":
            if "\udc80" <= ch <= "\udcff":  # Python's stand-in for a byte that was not UTF-8 (surrogateescape)
                raise QuestionError(f"question is not valid UTF-8: byte 0x{ord(ch) - 0xDC00:02X} at character "
                                    f"{position}; send UTF-8 text")
            raise QuestionError(f"question is not valid Unicode: a lone surrogate U+{ord(ch):04X} at character "
                                f"{position}; send UTF-8 text")
    if any(unicodedata.category(ch) == "Cc" and ch not in "\t\n\r" for ch in question):
        raise QuestionError("question holds control characters; send plain text")
    text = _INVISIBLE.sub("", question).strip()
    if not text:
        raise QuestionError("question is empty" + (": it holds only invisible characters (zero-width spaces, "
                                                   "direction marks)" if question.strip() else ""))
    if all(unicodedata.category(ch) == "Cf" or ch.isspace() for ch in text):
        raise QuestionError("question is empty: it holds only invisible characters (joiners)")
    if len(text) > MAX_QUESTION_CHARS:
        raise QuestionError(f"question is {len(text)} characters; at most {MAX_QUESTION_CHARS}", status=413)
    return text


class InputState(TypedDict, total=False):
    """What a caller sends."""

    question: str
    intent: NotRequired[str | None]
    entity: NotRequired[str | None]
    correlation_id: NotRequired[str]           # the caller's own id for this request (CORRELATION_ID_PATTERN)
    history: NotRequired[list[Turn]]           # a stateless caller's own history (a thread keeps its own)
    # Not an input: declared so that a run naming it reaches `server_assigned` and is refused by name
    # (LangGraph drops input keys its input schema lacks), and left out of the schema Studio, MCP and
    # RemoteGraph callers read.
    request_id: NotRequired[SkipJsonSchema[str]]


class State(TypedDict, total=False):
    """The whole run: input, route decision, retrieval, answer, verdict, memory and timings."""

    request_id: Annotated[str, server_assigned]   # route_gate's, new for every request; nobody else writes it
    correlation_id: str | None              # the caller's own id, taken into `rag` and cleared by route_gate
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
    # The sources the question attributes what it asks about to ("a Bloomberg article"), and those of
    # them none of the caller's documents comes from (retrieve's first branch; scoping.unheld_sources).
    sources_named: list[str]
    sources_unheld: list[str]
    fused: list[Chunk]                      # after RRF, best first
    # The name the evidence of a split which/who-question is about ("" when none, or the question asks for
    # none); each part is then searched again with it (nodes/bridge.py). None until bridge runs.
    bridge_name: str | None
    reranked: list[Chunk]                   # after rerank, boosts and budgets: what compose sees

    answer: str
    # The short answer the answer opens with (a value, a date, a name, yes/no; at most a dozen words,
    # no citation markers), or None when the evidence supports none (graph/algorithms/direct_answer.py).
    direct_answer: str | None
    # What the reader made of the direct answer the evidence gave (graph/algorithms/answer_reading.py): its
    # outcome (confirmed, contradicted, unsure, unchecked), what it read, and why the answer was given or
    # withheld. Empty when there was no direct answer to check.
    direct_check: dict[str, str]
    citations_used: list[str]
    coverage_level: Coverage
    suggestions: list[str]
    verdict: Verdict
    blocked_answer: str                     # the composer's answer a BLOCK verdict replaced (audit only)
    memory: MemoryOutcome

    timings_ms: Annotated[dict[str, float], merge_dicts]
    errors: Annotated[list[str], operator.add]   # degradations recorded along the way


# What the next question of a thread finds of the previous one (the checkpointer keeps the state).
# Every State field is in exactly one of the three groups (tests/test_state.py fails otherwise), so a
# field added to State cannot silently carry one question's results into the next.
THREAD_CARRIED = ("history",)  # kept: the thread's earlier turns
# Written anew at the start of every turn: by the caller, or by route_gate (memory_shield clears the
# per-request inputs `intent` and `entity` when a turn ends; route_gate moves `correlation_id` into
# `rag` and clears it, so that a turn that sends none, or follows a failed one, has none).
TURN_INPUTS = ("request_id", "correlation_id", "question", "intent", "entity", "tenant", "language", "rag")
# Reset to these values by route_gate before a new question starts (`fresh_turn`).
TURN_RESULTS: dict[str, Any] = {
    "decomposition": {}, "sub_queries": [], "scoped_queries": [], "sources_named": [], "sources_unheld": [],
    "hits": {}, "fused": [], "bridge_name": None, "reranked": [],
    "answer": "", "direct_answer": None, "direct_check": {}, "citations_used": [], "coverage_level": "none", "suggestions": [], "verdict": {},
    "blocked_answer": "", "memory": {}, "timings_ms": {}, "errors": [],
}


@functools.cache
def merged_fields() -> frozenset[str]:
    """State fields with a reducer: parallel branches' updates are merged into them (and
    `request_id`, whose reducer refuses every write but an Overwrite)."""
    hints = typing.get_type_hints(State, include_extras=True)
    return frozenset(name for name, hint in hints.items() if typing.get_origin(hint) is Annotated)


def fresh_turn() -> dict[str, Any]:
    """The update that clears the previous question's results (`TURN_RESULTS`) from a thread's state.
    Fields with a reducer (merged across parallel branches) are overwritten, not merged into."""
    # LangGraph is imported here, not at the top: every layer imports this module (the algorithms too), and
    # only a graph update needs Overwrite.
    from langgraph.types import Overwrite

    merged = merged_fields()
    return {name: Overwrite(copy.deepcopy(empty)) if name in merged else copy.deepcopy(empty)
            for name, empty in TURN_RESULTS.items()}


def question_parts(state: State) -> list[str]:
    """The parts a split question was searched by: its sub-queries but the question itself (none when it
    was not split)."""
    return [p for p in state.get("sub_queries") or [] if p != state["question"]]


class RetrieveTask(TypedDict):
    """The payload `Send` hands to one retrieve branch."""

    question: str
    sub_query: str
    index: int
    kind: Literal["sub_query", "performance", "scoped", "bridge"]  # "bridge": a part searched with bridge_name
    rag: RouteRecord
