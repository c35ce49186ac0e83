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


def reciprocal_rank_fusion(ranked_lists: list[list[Chunk]], k: int = RRF_K) -> list[Chunk]:
    first: dict[str, Chunk] = {}
    totals: dict[str, float] = {}
    for ranked in ranked_lists:
        for rank, chunk in enumerate(ranked, start=1):
            cid = chunk["id"]
            totals[cid] = totals.get(cid, 0.0) + 1.0 / (k + rank)
            first.setdefault(cid, chunk)
    order = sorted(totals, key=lambda cid: (-totals[cid], cid))
    return [Chunk(**{**first[cid], "scores": {"fused": totals[cid]}}) for cid in order]


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
