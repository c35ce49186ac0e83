"""Reciprocal Rank Fusion (Cormack et al., 2009) of ranked lists of chunks.

score(chunk) = Σ over lists containing it of 1 / (k + rank), k = 60. Chunks are deduplicated by id;
ties break by id so the order is deterministic. The rrf node fuses every branch's lists with it, and
rerank reads each aspect's order of a split question with `fused_ids`.
"""

from __future__ import annotations

from graph.state import Chunk

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


def best_engine_scores(lists: list[list[Chunk]]) -> dict[str, float]:
    """The best raw engine score of each chunk over `lists` (for the per-chunk score breakdown)."""
    best: dict[str, float] = {}
    for ranked in lists:
        for chunk in ranked:
            score = chunk["scores"]["engine"]
            if score > best.get(chunk["id"], float("-inf")):
                best[chunk["id"]] = score
    return best
