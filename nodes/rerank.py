"""rerank: relevance of each fused chunk to the *original* question, then policy boosts and budgets.

Embedded reranker (`local/hybrid`, no downloaded model): a blend of
  dense   — cosine of question and chunk, calibrated to 0–1 by the policy's floor/ceiling;
  lexical — share of the question's terms (stemmed, IDF-weighted over the candidates) in the chunk;
  fused   — the RRF score relative to the best one.
Then boosts (recency, playbook) multiply, `min_score` drops, and `max_chunks` /
`max_context_chars` cut. Every chunk keeps its score breakdown.
"""

from __future__ import annotations

import datetime as _dt
import math

from langgraph.runtime import Runtime

from graph.context import Context
from graph.policy import load_policy
from graph.resources import get_analyzer
from graph.state import Chunk, State
from graph.text import Analyzer
from nodes.instrumentation import context_of, timed


def term_weights(question_terms: set[int], chunk_terms: list[set[int]]) -> dict[int, float]:
    """IDF of each question term over the candidate chunks (rare terms discriminate more)."""
    n = max(1, len(chunk_terms))
    return {t: math.log(1 + n / (1 + sum(1 for c in chunk_terms if t in c))) for t in question_terms}


def lexical_coverage(weights: dict[int, float], terms: set[int]) -> float:
    total = sum(weights.values())
    return sum(w for t, w in weights.items() if t in terms) / total if total else 0.0


def chunk_year(chunk: Chunk) -> int | None:
    meta = chunk.get("metadata") or {}
    for key in ("version", "date"):
        value = str(meta.get(key) or "")
        if len(value) >= 4 and value[:4].isdigit():
            return int(value[:4])
    return None


def score_chunks(question: str, language: str, chunks: list[Chunk], analyzer: Analyzer, policy_rerank: dict,
                 current_year: int) -> list[Chunk]:
    weights = policy_rerank.get("weights", {})
    w_dense, w_lex, w_fused = weights.get("dense", 0.45), weights.get("lexical", 0.45), weights.get("fused", 0.1)
    calib = policy_rerank.get("dense_calibration", {})
    floor, ceiling = calib.get("floor", 0.1), calib.get("ceiling", 0.6)
    boosts = policy_rerank.get("boosts", {})
    recency, playbook = boosts.get("recency") or {}, boosts.get("playbook") or {}
    playbook_types = set(playbook.get("doc_types", []))

    q_terms = analyzer.terms(question, language)
    c_terms = [analyzer.terms(f"{c['metadata'].get('header', '')}\n{c['content']}", language) for c in chunks]
    idf = term_weights(q_terms, c_terms)
    best_fused = max((c["scores"].get("fused", 0.0) for c in chunks), default=0.0) or 1.0

    out = []
    for chunk, terms in zip(chunks, c_terms):
        dense = min(1.0, max(0.0, (chunk.get("similarity", 0.0) - floor) / max(1e-9, ceiling - floor)))
        lexical = lexical_coverage(idf, terms)
        fused = chunk["scores"].get("fused", 0.0) / best_fused
        base = w_dense * dense + w_lex * lexical + w_fused * fused
        applied = []
        factor = 1.0
        if recency and chunk_year(chunk) == current_year:
            factor *= recency.get("factor", 1.0)
            applied.append({"name": "recency", "factor": recency.get("factor", 1.0)})
        if playbook and chunk.get("metadata", {}).get("docType") in playbook_types:
            factor *= playbook.get("factor", 1.0)
            applied.append({"name": "playbook", "factor": playbook.get("factor", 1.0)})
        raw = base * factor
        scored = Chunk(**chunk)
        scored["scores"] = {**chunk["scores"], "dense_relevance": round(dense, 4), "lexical_relevance": round(lexical, 4),
                            "fused_relevance": round(fused, 4), "rerank_base": round(base, 4), "boosts": applied,
                            "rerank": round(raw, 4)}
        scored["rerankScore"] = round(min(1.0, raw), 4)
        out.append(scored)
    out.sort(key=lambda c: (-c["scores"]["rerank"], c["id"]))
    return out


def apply_budgets(chunks: list[Chunk], min_score: float, max_chunks: int, max_context_chars: int) -> list[Chunk]:
    kept, used = [], 0
    for chunk in chunks:
        if chunk["rerankScore"] < min_score or len(kept) >= max_chunks:
            continue
        size = len(chunk["content"])
        if kept and used + size > max_context_chars:
            continue
        kept.append(chunk)
        used += size
    for rank, chunk in enumerate(kept, start=1):
        chunk["rank"] = rank
    return kept


@timed("rerank")
def rerank(state: State, runtime: Runtime[Context]) -> dict:
    ctx = context_of(runtime)
    rag = state["rag"]
    fused = state.get("fused") or []
    if not fused:
        return {"reranked": []}
    policy = load_policy(ctx.policy_path)
    cfg = policy.section("rerank")
    year = ctx.current_year or (cfg.get("boosts", {}).get("recency") or {}).get("current_year") or _dt.date.today().year
    scored = score_chunks(state["question"], rag.get("language", "en"), fused, get_analyzer(policy), cfg, int(year))
    profile = rag["profile"]
    kept = apply_budgets(scored, profile["min_score"], int(rag.get("max_chunks") or cfg.get("top_n", 5)),
                         profile["max_context_chars"])
    return {"reranked": kept}
