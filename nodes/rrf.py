"""rrf: Reciprocal Rank Fusion (k = 60) of every ranked list from every retrieve branch.

The algorithm is graph/algorithms/fusion.py; this node applies it to the state's branches.
"""

from __future__ import annotations

from langgraph.runtime import Runtime

from graph.algorithms.fusion import best_engine_scores, reciprocal_rank_fusion
from graph.context import Context
from graph.runtime.timing import timed
from graph.state import State


@timed("rrf")
def rrf(state: State, runtime: Runtime[Context]) -> dict:
    """Fuse the dense and lexical lists of every retrieve branch into one ranking.

    Reads `hits` (every branch's lists). Writes `fused`: each chunk once, best first, with
    `scores.fused` (its RRF score) and `scores.dense` / `scores.lexical` (its best raw engine score
    in lists of that kind, or None)."""
    results = [state["hits"][key] for key in sorted(state.get("hits") or {})]
    dense_lists = [r["dense"] for r in results]
    lexical_lists = [r["lexical"] for r in results]
    fused = reciprocal_rank_fusion([*dense_lists, *lexical_lists])
    dense_best, lexical_best = best_engine_scores(dense_lists), best_engine_scores(lexical_lists)
    for chunk in fused:
        chunk["scores"]["dense"] = dense_best.get(chunk["id"])
        chunk["scores"]["lexical"] = lexical_best.get(chunk["id"])
    return {"fused": fused}
