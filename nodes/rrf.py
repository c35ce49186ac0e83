"""rrf: Reciprocal Rank Fusion of every ranked list from every retrieve branch.

score(chunk) = Σ over lists containing it of 1 / (k + rank), k = 60 (Cormack et al., 2009).
Chunks are deduplicated by id; ties break by id so the order is deterministic.
"""

from __future__ import annotations

from langgraph.runtime import Runtime

from graph.context import Context
from graph.state import Chunk, State
from nodes.instrumentation import timed

RRF_K = 60


def fused_ids(ranked_lists: list[list[Chunk]], k: int = RRF_K) -> list[tuple[str, float]]:
    """(chunk id, RRF score) of every chunk in the lists, best first, ties by id."""
    totals: dict[str, float] = {}
    for ranked in ranked_lists:
        for rank, chunk in enumerate(ranked, start=1):
            totals[chunk["id"]] = totals.get(chunk["id"], 0.0) + 1.0 / (k + rank)
    return sorted(totals.items(), key=lambda item: (-item[1], item[0]))


def reciprocal_rank_fusion(ranked_lists: list[list[Chunk]], k: int = RRF_K) -> list[Chunk]:
    """The fused list: each chunk once (as first seen), scored {"fused": its RRF score}."""
    first: dict[str, Chunk] = {}
    for ranked in ranked_lists:
        for chunk in ranked:
            first.setdefault(chunk["id"], chunk)
    return [Chunk(**{**first[cid], "scores": {"fused": score}}) for cid, score in fused_ids(ranked_lists, k)]


def _best_engine_scores(lists: list[list[Chunk]]) -> dict[str, float]:
    best: dict[str, float] = {}
    for ranked in lists:
        for chunk in ranked:
            score = chunk["scores"]["engine"]
            if score > best.get(chunk["id"], float("-inf")):
                best[chunk["id"]] = score
    return best


@timed("rrf")
def rrf(state: State, runtime: Runtime[Context]) -> dict:
    results = [state["hits"][key] for key in sorted(state.get("hits") or {})]
    dense_lists = [r["dense"] for r in results]
    lexical_lists = [r["lexical"] for r in results]
    fused = reciprocal_rank_fusion([*dense_lists, *lexical_lists])
    # Best raw engine score per list type, for the per-chunk score breakdown.
    dense_best, lexical_best = _best_engine_scores(dense_lists), _best_engine_scores(lexical_lists)
    for chunk in fused:
        chunk["scores"]["dense"] = dense_best.get(chunk["id"])
        chunk["scores"]["lexical"] = lexical_best.get(chunk["id"])
    return {"fused": fused}
