"""Coverage of the evidence and of an answer, and conflicting versions of one asset."""

from __future__ import annotations

import re

from graph.algorithms.extractive_answer import ExtractiveAnswer
from graph.policy import ComposeSettings
from graph.prompts import phrase, phrases
from graph.state import Chunk


def is_relevant(chunk: Chunk, cfg: ComposeSettings) -> bool:
    """The chunk's score reaches the relevance floor of its scale (its embedding model's, set by rerank;
    else `compose.relevance_floor`)."""
    return chunk["rerankScore"] >= chunk.get("relevanceFloor", cfg.relevance_floor)


def coverage_level(chunks: list[Chunk], cfg: ComposeSettings) -> str:
    """high: 3+ docs, mean ≥ 0.7; medium: 2+ docs, mean ≥ 0.5; low: 1+ relevant doc; none otherwise."""
    best_per_doc: dict[str, float] = {}
    for c in chunks:
        if is_relevant(c, cfg):
            best_per_doc[c["docId"]] = max(best_per_doc.get(c["docId"], 0.0), c["rerankScore"])
    if not best_per_doc:
        return "none"
    n, mean = len(best_per_doc), sum(best_per_doc.values()) / len(best_per_doc)
    high, medium = cfg.coverage.high, cfg.coverage.medium
    if n >= high.min_docs and mean >= high.min_mean_score:
        return "high"
    if n >= medium.min_docs and mean >= medium.min_mean_score:
        return "medium"
    return "low"


def _date_key(chunk: Chunk) -> str:
    meta = chunk.get("metadata") or {}
    return str(meta.get("date") or meta.get("version") or "")


def _names_year(question: str, chunk: Chunk) -> bool:
    """The question names the year of the chunk's version (its date's or version's first four digits)."""
    year = _date_key(chunk)[:4]
    return bool(year) and re.search(rf"\b{re.escape(year)}\b", question) is not None


def resolve_conflicts(chunks: list[Chunk], language: str, question: str,
                      tie_margin: float) -> tuple[list[Chunk], list[str]]:
    """Two documents of one asset (e.g. the 2025 and 2026 playbook) may disagree: keep the one with
    the higher score, then the newer date, and say so in one sentence. A version whose year the
    question names is what the user asked about, so it is never dropped ("compare 2025 and 2026");
    when the question names the kept version's year only, the others are dropped without a note (they
    are another period, not another opinion)."""
    by_asset: dict[str, list[Chunk]] = {}
    for c in chunks:
        by_asset.setdefault(c.get("assetId") or c["docId"], []).append(c)
    dropped: set[str] = set()
    notes: list[str] = []
    for asset, members in by_asset.items():
        docs: dict[str, Chunk] = {}
        for c in members:
            if c["docId"] not in docs or c["rerankScore"] > docs[c["docId"]]["rerankScore"]:
                docs[c["docId"]] = c
        if len(docs) < 2:
            continue
        best = max(docs.values(), key=lambda c: c["rerankScore"])
        # Within `tie_margin` the scores are a tie: the newer version wins.
        close = [c for c in docs.values() if best["rerankScore"] - c["rerankScore"] <= tie_margin]
        winner = max(close, key=_date_key) if len(close) > 1 else best
        reason_key = "conflict_reason_date" if len(close) > 1 else "conflict_reason_score"
        for loser in (c for c in docs.values() if c["docId"] != winner["docId"]):
            if _names_year(question, loser):
                continue
            dropped.add(loser["docId"])
            if _names_year(question, winner):
                # "o playbook de inverno 2026": the 2025 version is another period, not a disagreement.
                continue
            notes.append(phrase(language, "conflict", asset=winner.get("assetName") or asset, winner=winner["docId"],
                                reason=phrases(language)[reason_key], loser=loser["docId"]))
    return [c for c in chunks if c["docId"] not in dropped], notes


def answer_coverage(evidence: str, answer: ExtractiveAnswer, chunks: list[Chunk], cfg: ComposeSettings) -> str:
    """The coverage level the answer earns: the evidence's (`coverage_level`), at most "low" when a part of
    the question is named missing, and at least "medium" when one strong document (best score at least
    the medium level's mean) answers every part: corroboration by more documents is what "high" adds,
    and a complete answer from one source is not a low-coverage one."""
    if answer.missing_parts:
        return "low" if evidence in ("high", "medium") else evidence
    best = max((c["rerankScore"] for c in chunks if is_relevant(c, cfg)), default=0.0)
    if evidence == "low" and answer.complete and best >= cfg.coverage.medium.min_mean_score:
        return "medium"
    return evidence
