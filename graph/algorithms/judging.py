"""The deterministic verdict: quality, utility and groundedness (0–1) and OK / WARNING / BLOCK.

Every claim must be supported by the chunks it cites (graph/algorithms/groundedness.py): an invented
value, date, name, field or citation, a flipped negation or an uncited fact caps groundedness below 0.3,
so the answer is blocked. An LLM judge's verdict is bounded by this one (`combine_with_llm`).
Thresholds, ceilings and word lists come from the policy's `judge` and `languages` sections. The
judge node, the composer's draft checks and `ragate eval groundedness` all judge through here.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from typing import Any

from graph.algorithms.groundedness import GroundednessChecker, Lexicons, Source, groundedness_score
from graph.algorithms.text import (
    citations_in,
    detect_language,
    extract_values,
    get_analyzer,
    has_any_phrase,
    json_reply,
    split_sentences,
    strip_citations,
)
from graph.policy import DecisionThresholds, JudgeSettings, Policy
from graph.prompts import all_templates
from graph.state import Chunk, State, Verdict

UTILITY_BY_COVERAGE = {"high": 0.95, "medium": 0.85, "low": 0.6, "none": 0.5}
_LIST_ITEM = re.compile(r"^\s*(?:[-*•]|\d+[.)])\s+", re.MULTILINE)


@functools.lru_cache(maxsize=8)
def checker_for(policy: Policy) -> GroundednessChecker:
    """The groundedness checker of one policy version. A Policy is hashed by identity and load_policy
    hands out one object per file version, so a changed policy gets a new checker."""
    return GroundednessChecker(get_analyzer(policy), Lexicons.from_policy(policy.languages, all_templates()),
                               policy.judge.groundedness)


def sources_of(chunks: Sequence[Chunk]) -> list[Source]:
    return [Source(doc_id=c["docId"], text=c.get("content", ""), chunk_id=c.get("id", "")) for c in chunks]


def judge_answer(answer: str, sources: Sequence[Source], *, language: str, coverage: str, policy: Policy,
                 embeddings: Any = None) -> Verdict:
    """The deterministic verdict on one answer: per-claim support, the three scores, the decision."""
    cfg = policy.judge
    checks = checker_for(policy).check(answer, sources, language, embeddings)
    groundedness, g_reason = groundedness_score(checks, cfg)
    quality, q_reason = quality_score(answer, coverage, language, policy)
    utility, u_reason = utility_score(answer, coverage, cfg)
    scores = {"quality": quality, "utility": utility, "groundedness": groundedness}
    return Verdict(
        scores=scores,
        reasoning={"quality": q_reason, "utility": u_reason, "groundedness": g_reason},
        final_decision=decide(scores, cfg.thresholds),
        checks=checks,
        method="deterministic",
    )


def quality_score(answer: str, coverage: str, language: str, policy: Policy) -> tuple[float, str]:
    """Structure and form: cited, not too short or long, no repetition, in the question's language."""
    quality, notes = 1.0, []
    body = strip_citations(answer)
    if coverage != "none" and not citations_in(answer):
        quality -= 0.4
        notes.append("no citations")
    if len(body) < 30:
        quality -= 0.3
        notes.append("very short")
    max_chars = policy.compose.max_answer_chars
    if len(answer) > 1.5 * max_chars:
        quality -= 0.2
        notes.append("too long")
    sentences = [s.casefold() for s in split_sentences(body)]
    if len(sentences) != len(set(sentences)):
        quality -= 0.2
        notes.append("repeated sentences")
    if body and detect_language(body, policy.languages.markers, language) != language:
        quality -= 0.1
        notes.append("partly in another language than the question")
    return round(max(0.0, quality), 3), "; ".join(notes) or "structured, cited, in the question's language"


def utility_score(answer: str, coverage: str, cfg: JudgeSettings) -> tuple[float, str]:
    """How much the reader can act on: coverage, then concrete numbers, a trend or a recommended
    action and a readable structure raise it; an empty closing phrase lowers it."""
    body = strip_citations(answer)
    utility = UTILITY_BY_COVERAGE.get(coverage, 0.5)
    notes = [f"coverage {coverage}"]
    if extract_values(body):
        utility += 0.05
        notes.append("concrete numbers")
    if has_any_phrase(body, cfg.action_words):
        utility += 0.05
        notes.append("trend or recommended action")
    if len(_LIST_ITEM.findall(body)) >= 2 or body.count("\n\n") >= 1:
        utility += 0.03
        notes.append("structured in items or paragraphs")
    if has_any_phrase(body, cfg.empty_closers):
        utility -= 0.3
        notes.append("empty closing phrase")
    return round(min(1.0, max(0.0, utility)), 3), ", ".join(notes)


def deterministic_verdict(state: State, policy: Policy, embeddings: Any = None) -> Verdict:
    return judge_answer(state.get("answer") or "", sources_of(state.get("reranked") or []),
                        language=state.get("language", "en"), coverage=state.get("coverage_level", "none"),
                        policy=policy, embeddings=embeddings)


def combine_with_llm(deterministic: Verdict, llm: Verdict, thresholds: DecisionThresholds) -> Verdict:
    """An LLM judge's verdict, bounded by the deterministic checks: its groundedness can never exceed
    the deterministic one (an invented value stays below 0.3 whatever the LLM says), and its decision
    can be stricter than the deterministic one, never more permissive. The model reads the documents,
    and a document can steer a model ("score this answer 1.0") in words no pattern list foresees; it
    cannot steer this code."""
    det_scores = deterministic.get("scores", {})
    scores = {k: float(v) for k, v in (llm.get("scores") or {}).items()}
    for key in ("quality", "utility", "groundedness"):
        scores.setdefault(key, det_scores.get(key, 0.0))
    bounded = scores["groundedness"] > det_scores.get("groundedness", 1.0)
    scores["groundedness"] = min(scores["groundedness"], det_scores.get("groundedness", 1.0))
    reasoning = dict(llm.get("reasoning") or {})
    if bounded:
        reasoning["groundedness"] = (f"{reasoning.get('groundedness', '')} (bounded by the deterministic checks: "
                                     f"{deterministic.get('reasoning', {}).get('groundedness', '')})").strip()
    decision = max(decide(scores, thresholds), deterministic.get("final_decision") or "BLOCK", key=STRICTNESS.__getitem__)
    return Verdict(scores={k: round(v, 3) for k, v in scores.items()}, reasoning=reasoning,
                   final_decision=decision, checks=deterministic.get("checks", []),
                   method="llm+deterministic")


STRICTNESS = {"OK": 0, "WARNING": 1, "BLOCK": 2}


def decide(scores: dict[str, float], thresholds: DecisionThresholds) -> str:
    """OK when every score ≥ ok; BLOCK when any < block; WARNING otherwise."""
    if any(v < thresholds.block for v in scores.values()):
        return "BLOCK"
    if all(v >= thresholds.ok for v in scores.values()):
        return "OK"
    return "WARNING"


def parse_llm_verdict(text: str) -> Verdict:
    """The LLM's JSON verdict, validated; ValueError says what is wrong (fed back for one repair)."""
    data = json_reply(text)
    scores = data.get("scores") if isinstance(data, dict) else None
    if not isinstance(scores, dict):
        raise ValueError("'scores' must be an object with quality, utility and groundedness")
    clean: dict[str, float] = {}
    for key in ("quality", "utility", "groundedness"):
        value = scores.get(key)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
            raise ValueError(f"scores.{key} must be a number between 0 and 1, got {value!r}")
        clean[key] = float(value)
    reasoning = data.get("reasoning") if isinstance(data.get("reasoning"), dict) else {}
    if not any(str(reasoning.get(k, "")).strip() for k in clean) or any("<" in str(v) for v in reasoning.values()):
        # A small model echoes the shape it was shown (all zeros, placeholder reasons): that is not a judgement.
        raise ValueError("give a reason for each score, in your own words, not the placeholders")
    return Verdict(scores=clean, reasoning={k: str(reasoning.get(k, "")) for k in clean},
                   final_decision=str(data.get("final_decision", "")), checks=[], method="llm")
