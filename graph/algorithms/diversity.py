"""The first places of a split question's ranking chosen to cover its parts (xQuAD)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from graph.algorithms.fusion import fused_ids
from graph.state import OTHER_LANGUAGE_FLAG, Chunk

if TYPE_CHECKING:
    import numpy as np


def aspect_relevance(hits: dict[str, dict], question: str, candidates: list[Chunk], rank_decay: float) -> np.ndarray:
    """How well each candidate answers each aspect of a split question, 0–1: one column per part
    (sub-query), per part searched with the bridging name and per scoped search; the whole question and
    the performance search are not
    aspects (the base relevance covers them). Within an aspect, its dense and lexical lists are
    fused (RRF) and a chunk's place p there gives exp(−p / rank_decay): an aspect is answered by its
    first few chunks, not by the fiftieth. An aspect whose nearest chunk by meaning is in another language than
    the question (the engine's OTHER_LANGUAGE_FLAG) is ordered by its dense list alone: its words can only
    find text in its own language, which meaning already ranked below ("qual é a taxa de devolução online"
    of a Portuguese question is the English returns report's, not a Portuguese legal note's that holds
    "devolução" and "online")."""
    import numpy as np  # here, not at the top: a module of the bottom layer loads no numpy on import
    keys = [k for k in sorted(hits) if hits[k]["kind"] in ("scoped", "bridge") or
            (hits[k]["kind"] == "sub_query" and hits[k]["sub_query"] != question)]
    # By point id: the hits name chunks by it, and a chunk fetched early (for a provider reranker) has
    # already been renamed "<docId>#<chunk index>".
    row = {c["pointId"]: i for i, c in enumerate(candidates)}
    other_language = {c["pointId"] for c in candidates if OTHER_LANGUAGE_FLAG in (c.get("flags") or ())}
    rel = np.zeros((len(candidates), len(keys)), dtype=np.float64)
    for j, key in enumerate(keys):
        result = hits[key]
        dense = result.get("dense") or []
        nearest = next((h["pointId"] for h in dense if h["pointId"] in row), None)
        lists = [dense] if nearest in other_language else [dense, result.get("lexical") or []]
        # Only the order matters here: ids, not fused chunk copies (this runs per aspect, per question).
        for place, (cid, _) in enumerate(fused_ids(lists)):
            if (i := row.get(cid)) is not None:
                rel[i, j] = math.exp(-place / rank_decay)
    return rel


def diversify(ranked: list[Chunk], aspects: np.ndarray, weight: float, n: int, coverage: float = 1.0) -> list[Chunk]:
    """xQuAD (Santos et al., 2010): pick chunks greedily by (1 − w)·relevance + w·(how much of each
    aspect they answer that the chunks picked so far left unanswered), so that the first places
    cover every part of a multi-part question instead of repeating the part that matches best.
    A picked chunk answers `coverage` × its relevance to an aspect of what was left of it (1: all of it
    when it is the aspect's first chunk). The first `n` places are chosen this way (the first one by
    relevance alone); the rest keep their relevance order."""
    import numpy as np  # here, not at the top: a module of the bottom layer loads no numpy on import
    if aspects.shape[1] < 2 or weight <= 0 or len(ranked) < 2:
        return ranked
    relevance = np.array([c["scores"]["rerank"] for c in ranked], dtype=np.float64)
    relevance /= relevance.max() or 1.0
    uncovered = np.ones(aspects.shape[1]) / aspects.shape[1]
    free = np.ones(len(ranked), dtype=bool)
    order: list[int] = []
    for place in range(min(n, len(ranked))):
        # The first place stays the most relevant chunk (as in MMR): the answer to the whole
        # question comes first, then the parts it leaves uncovered.
        gain = relevance.copy() if place == 0 else (1 - weight) * relevance + weight * (aspects @ uncovered)
        gain[~free] = -np.inf
        pick = int(np.argmax(gain))
        order.append(pick)
        free[pick] = False
        uncovered *= 1 - coverage * aspects[pick]
    rest = [i for i in range(len(ranked)) if free[i]]
    for place, i in enumerate(order):
        ranked[i]["scores"]["diversity_rank"] = place + 1
    return [ranked[i] for i in order + rest]
