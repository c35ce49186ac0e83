"""judge: score the answer's quality, utility and groundedness (0–1) and decide OK / WARNING / BLOCK.

The deterministic checks always run, whoever composed the answer:
- every cited id must be one that was retrieved (an invented citation caps groundedness);
- every number, amount, date, percentage and field name in a sentence must appear in the chunks
  that sentence cites (an invented value caps groundedness below 0.3, so the answer is blocked);
- each cited claim's terms should be found in its cited chunks (lexical support).
Thresholds, ceilings and word lists come from the policy's `judge` section.
"""

from __future__ import annotations

import re

from langgraph.runtime import Runtime

from graph.context import Context
from graph.policy import Policy, load_policy
from graph.resources import get_analyzer
from graph.state import Chunk, State, Verdict
from graph.text import (
    Analyzer,
    citations_in,
    detect_language,
    extract_fields,
    extract_values,
    has_any_phrase,
    split_sentences,
    strip_citations,
    value_pool,
    value_supported,
)
from nodes.instrumentation import context_of, timed

_BULLET = re.compile(r"^\s*(?:[-*•]+|\d+[.)])\s+")
UTILITY_BY_COVERAGE = {"high": 0.95, "medium": 0.85, "low": 0.6, "none": 0.5}


def check_claims(answer: str, chunks: list[Chunk], analyzer: Analyzer, language: str) -> list[dict]:
    """Per-sentence support: which ids it cites, which values or fields are not in them, how much of
    its wording the cited chunks contain."""
    by_doc: dict[str, list[str]] = {}
    for c in chunks:
        by_doc.setdefault(c["docId"], []).append(c["content"])
    # What each cited document offers, computed once: its values, its text, its terms.
    doc_values = {d: value_pool(texts) for d, texts in by_doc.items()}
    doc_text = {d: "\n".join(texts).casefold() for d, texts in by_doc.items()}
    doc_terms = {d: set().union(*(analyzer.terms(t, language) for t in texts)) for d, texts in by_doc.items()}
    checks = []
    for line in answer.splitlines():
        for sentence in split_sentences(line):
            cited = citations_in(sentence)
            text = strip_citations(_BULLET.sub("", sentence))
            values = extract_values(text)
            fields = extract_fields(text)
            if not cited and not values and not fields:
                continue  # framing ("Based on the retrieved documents:") makes no factual claim
            unknown = [c for c in cited if c not in by_doc]
            known = [c for c in cited if c in by_doc]
            pool = set().union(*(doc_values[c] for c in known))
            bad_values = [surface for surface, readings in values if not value_supported(readings, pool)]
            bad_fields = [f for f in fields if not any(f.casefold() in doc_text[c] for c in known)]
            terms = analyzer.terms(text, language)
            source_terms = set().union(*(doc_terms[c] for c in known))
            support = len(terms & source_terms) / len(terms) if terms else 1.0
            reasons = []
            if unknown:
                reasons.append(f"cites ids that were not retrieved: {', '.join(unknown)}")
            if not cited:
                reasons.append("states values without citing a source")
            if bad_values:
                reasons.append(f"values not found in the cited chunks: {', '.join(bad_values)}")
            if bad_fields:
                reasons.append(f"field names not found in the cited chunks: {', '.join(bad_fields)}")
            checks.append({"claim": text, "cited": cited, "support": round(support, 3),
                           "unsupported_values": bad_values, "unsupported_fields": bad_fields,
                           "unknown_citations": unknown, "supported": not reasons, "reasons": reasons})
    return checks


def deterministic_verdict(state: State, policy: Policy) -> Verdict:
    cfg = policy.section("judge")
    answer = state.get("answer") or ""
    chunks = state.get("reranked") or []
    language = state.get("language", "en")
    coverage = state.get("coverage_level", "none")
    checks = check_claims(answer, chunks, get_analyzer(policy), language)

    # Groundedness: lexical support of the cited claims, capped by the hard checks.
    cited = [c for c in checks if c["cited"]]
    groundedness = 0.5 + 0.5 * (sum(c["support"] for c in cited) / len(cited)) if cited else 1.0
    g_reason = f"{len(cited)} cited claim(s), mean lexical support {groundedness:.2f}" if cited else "no factual claims made"
    invented_values = [v for c in checks for v in c["unsupported_values"] + c["unsupported_fields"]]
    invented_ids = [i for c in checks for i in c["unknown_citations"]]
    if invented_ids:
        groundedness = min(groundedness, cfg.get("invented_citation_groundedness", 0.2))
        g_reason = f"cites ids that were not retrieved: {', '.join(dict.fromkeys(invented_ids))}"
    if invented_values:
        groundedness = min(groundedness, cfg.get("invented_value_groundedness", 0.2))
        g_reason = f"values not found in the cited sources: {', '.join(dict.fromkeys(invented_values))}"

    # Quality: structure and form.
    quality, q_notes = 1.0, []
    body = strip_citations(answer)
    if coverage != "none" and not citations_in(answer):
        quality -= 0.4
        q_notes.append("no citations")
    if len(body) < 30:
        quality -= 0.3
        q_notes.append("very short")
    max_chars = policy.section("compose").get("max_answer_chars", 1600)
    if len(answer) > 1.5 * max_chars:
        quality -= 0.2
        q_notes.append("too long")
    sentences = [s.casefold() for s in split_sentences(body)]
    if len(sentences) != len(set(sentences)):
        quality -= 0.2
        q_notes.append("repeated sentences")
    langs = policy.raw["languages"]
    if body and detect_language(body, langs["markers"], language) != language:
        quality -= 0.1
        q_notes.append("partly in another language than the question")
    quality = max(0.0, quality)
    q_reason = "; ".join(q_notes) or "structured, cited, in the question's language"

    # Utility: how much the reader can act on.
    utility = UTILITY_BY_COVERAGE.get(coverage, 0.5)
    u_notes = [f"coverage {coverage}"]
    if extract_values(body):
        utility += 0.05
        u_notes.append("concrete numbers")
    if has_any_phrase(body, cfg.get("action_words", [])):
        utility += 0.05
        u_notes.append("trend or recommended action")
    if has_any_phrase(body, cfg.get("empty_closers", [])):
        utility -= 0.3
        u_notes.append("empty closing phrase")
    utility = min(1.0, max(0.0, utility))

    scores = {"quality": round(quality, 3), "utility": round(utility, 3), "groundedness": round(groundedness, 3)}
    return Verdict(
        scores=scores,
        reasoning={"quality": q_reason, "utility": ", ".join(u_notes), "groundedness": g_reason},
        final_decision=decide(scores, cfg["thresholds"]),
        checks=checks,
        method="deterministic",
    )


def decide(scores: dict[str, float], thresholds: dict[str, float]) -> str:
    """OK when every score ≥ ok; BLOCK when any < block; WARNING otherwise."""
    if any(v < thresholds["block"] for v in scores.values()):
        return "BLOCK"
    if all(v >= thresholds["ok"] for v in scores.values()):
        return "OK"
    return "WARNING"


@timed("judge")
def judge(state: State, runtime: Runtime[Context]) -> dict:
    ctx = context_of(runtime)
    try:
        policy = load_policy(ctx.policy_path)
    except Exception as exc:
        # Without a policy there are no thresholds to pass: nothing is vouched for.
        return {"verdict": Verdict(scores={"quality": 0.0, "utility": 0.0, "groundedness": 0.0},
                                   reasoning={"quality": "not judged", "utility": "not judged",
                                              "groundedness": f"policy unavailable: {exc}"},
                                   final_decision="BLOCK" if state.get("citations_used") else "WARNING",
                                   checks=[], method="unavailable")}
    return {"verdict": deterministic_verdict(state, policy)}
