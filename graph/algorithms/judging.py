"""The deterministic verdict: quality, utility and groundedness (0–1) and OK / WARNING / BLOCK.

Every claim must be supported by the chunks it cites (graph/algorithms/groundedness.py): an invented
value, date, name, field or citation, a flipped negation or an uncited fact caps groundedness below 0.3,
so the answer is blocked. Every answer must also address its question (graph/algorithms/answer_relevance.py):
quality reads its relevance, directness and redundancy besides its form, utility the share of the
question's parts it covers besides the coverage level. An off-topic answer is at most WARNING, and
relevance alone never blocks a grounded answer. An LLM judge's verdict is bounded by this one (`combine_with_llm`).
Thresholds, ceilings and word lists come from the policy's `judge` and `languages` sections. The
judge node, the composer's draft checks and `ragate eval groundedness` all judge through here.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from typing import Any

from graph.algorithms.answer_relevance import AnswerRelevance, answer_relevance
from graph.algorithms.decomposition import asks_again
from graph.algorithms.groundedness import GroundednessChecker, Lexicons, Source, groundedness_score
from graph.algorithms.text import (
    citations_in,
    detect_language,
    extract_values,
    fold,
    get_analyzer,
    has_any_phrase,
    json_reply,
    opens_with_phrase,
    split_sentences,
    strip_citations,
)
from graph.policy import DecisionThresholds, JudgeSettings, Policy, run_language
from graph.prompts import all_templates
from graph.state import Chunk, State, Verdict

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
                 embeddings: Any = None, question: str = "", direct_answer: str | None = None,
                 scorer: Any = None) -> Verdict:
    """The deterministic verdict on one answer: per-claim support, the three scores, the decision.
    With the `question`, quality and utility also read how well the answer addresses it (`direct_answer`:
    the short answer the composer opened with; `scorer`: an optional relevance model, see
    graph/algorithms/answer_relevance.py)."""
    cfg = policy.judge
    checks = checker_for(policy).check(answer, sources, language, embeddings)
    groundedness, g_reason = groundedness_score(checks, cfg)
    relevance = answer_relevance(question, answer, sources, language, policy, scorer=scorer,
                                 direct_answer=direct_answer)
    quality, q_reason = quality_score(answer, coverage, language, policy, relevance)
    utility, u_reason = utility_score(answer, coverage, cfg, relevance, policy.decomposition.words("question_words"),
                                      question.count("?") >= 2 or asks_again(question, policy))
    scores = {"quality": quality, "utility": utility, "groundedness": groundedness}
    return Verdict(
        scores=scores,
        reasoning={"quality": q_reason, "utility": u_reason, "groundedness": g_reason},
        final_decision=decide(scores, cfg.thresholds),
        checks=checks,
        method="deterministic",
    )


def quality_score(answer: str, coverage: str, language: str, policy: Policy,
                  relevance: AnswerRelevance | None = None) -> tuple[float, str]:
    """Form — cited, not too short or long, no repeated sentence, in the question's language — then,
    when the relevance was measured: redundant claims lower it, and an off-topic answer (relevance
    below its floor, `judge.relevance.answer_floor` or `multi_part_floor`, a missing direct answer
    counted in) is held in the WARNING band, lower the less relevant it is, naming what it misses."""
    scoring = policy.judge.quality
    quality, notes = 1.0, []
    body = strip_citations(answer)
    if coverage != "none" and not citations_in(answer):
        quality -= scoring.uncited_penalty
        notes.append("no citations")
    if len(body) < scoring.short_chars:
        quality -= scoring.short_penalty
        notes.append("very short")
    max_chars = policy.compose.max_answer_chars
    if len(answer) > scoring.long_factor * max_chars:
        quality -= scoring.long_penalty
        notes.append("too long")
    sentences = [s.casefold() for s in split_sentences(body, policy.languages.shared)]
    if len(sentences) != len(set(sentences)):
        quality -= scoring.repeated_penalty
        notes.append("repeated sentences")
    if body and detect_language(body, policy.languages.markers, language) != language:
        quality -= scoring.other_language_penalty
        notes.append("partly in another language than the question")
    quality = max(0.0, quality)
    if relevance is None:
        return round(quality, 3), "; ".join(notes) or "structured, cited, in the question's language"
    cfg, thresholds = policy.judge.relevance, policy.judge.thresholds
    if relevance.redundancy:
        quality = _lowered(quality, cfg.redundancy_penalty * relevance.redundancy, thresholds)
        notes.append(f"{relevance.redundancy:.0%} of the claims repeat an earlier one")
    if not relevance.direct:
        notes.append(_INDIRECT.get(relevance.kind, "does not open with the direct answer"))
    if relevance.off_topic:
        quality = min(quality, _warning(relevance.relevance / relevance.floor, thresholds))
        notes.append(f"off-topic (relevance {relevance.relevance:.2f}): {off_topic_note(relevance)}")
    else:
        notes.append(f"addresses the question (relevance {relevance.relevance:.2f})")
    return round(quality, 3), "; ".join(notes)


def utility_score(answer: str, coverage: str, cfg: JudgeSettings,
                  relevance: AnswerRelevance | None = None, asking: Sequence[str] = (),
                  asks_several: bool = False) -> tuple[float, str]:
    """How much the reader can act on: coverage, then concrete numbers, a trend or a recommended
    action and a readable structure raise it; an empty closing phrase lowers it, and so does each part
    of the question the answer leaves out (`judge.relevance.missing_part_utility`, pro rata), never
    below the WARNING band; of a question that `asks_several` things (a question word again after a connective,
    or several question marks), a part opening with one of the `asking` words that the answer passes over in
    silence keeps it in the WARNING band."""
    body = strip_citations(answer)
    scoring = cfg.utility
    utility = scoring.coverage.of(coverage)
    notes = [f"coverage {coverage}"]
    if extract_values(body):
        utility += scoring.numbers_bonus
        notes.append("concrete numbers")
    if has_any_phrase(body, cfg.action_words):
        utility += scoring.action_bonus
        notes.append("trend or recommended action")
    if len(_LIST_ITEM.findall(body)) >= scoring.structure_items or body.count("\n\n") >= 1:
        utility += scoring.structure_bonus
        notes.append("structured in items or paragraphs")
    if has_any_phrase(body, cfg.empty_closers):
        utility -= scoring.empty_closer_penalty
        notes.append("empty closing phrase")
    utility = min(1.0, max(0.0, utility))
    if relevance is not None and relevance.missing:
        utility = _lowered(utility, cfg.relevance.missing_part_utility * (1 - relevance.parts_covered), cfg.thresholds)
        notes.append(f"covers {len(relevance.parts) - len(relevance.missing)} of {len(relevance.parts)} parts of the "
                     f"question; not addressed: {_quoted(p.text for p in relevance.missing)}")
        # A question that asks several things (a question word again after a connective, or several question
        # marks: "Qual é o orçamento … e qual é a taxa de devolução?"), one part of which, opening with a
        # question word, the answer neither addresses nor says it found nothing on (the composer quotes such a
        # part), passes that one over in silence: the reader takes the answer for whole. At most WARNING. The
        # clauses cut from one long question ("Which company, defended in court …, also held …"; "Who is the
        # individual …, who was described by …") describe one thing: a right answer often paraphrases their
        # words (MultiHop-RAG's gold evidence, bench/make_relevance_set.py), and they are left to the relevance.
        asked = [p for p in relevance.parts if opens_with_phrase(p.text, asking)]
        said = fold(body)
        silent = [p for p in relevance.missing if p in asked and fold(p.text.strip(" ?.")) not in said]
        silent = silent if len(asked) >= 2 and asks_several else []
        if silent and utility >= cfg.thresholds.block:
            utility = min(utility, _warning(relevance.parts_covered, cfg.thresholds))
            notes.append("passed over in silence (the answer does not say the documents do not cover it)"
                         if len(silent) == len(relevance.missing) else
                         f"passed over in silence: {_quoted(p.text for p in silent)}")
    return round(utility, 3), ", ".join(notes)


_INDIRECT = {"how_much": "does not open with the value asked for", "when": "does not open with the date asked for",
             "who": "does not open with the name asked for", "yes_no": "does not open with yes or no"}


def _quoted(texts: Any) -> str:
    return ", ".join(f"«{t.strip(' ?.')}»" for t in texts)


def off_topic_note(relevance: AnswerRelevance) -> str:
    """What an off-topic answer leaves out: the parts of the question it does not address (else its
    least addressed part; the question itself when it has one part), the question's rarest words the
    sources hold that no claim does, and the source that speaks more of the question."""
    parts = relevance.missing or [min(relevance.parts, key=lambda p: (not p.judged, p.share))]
    note = f"the claims do not address {_quoted(p.text for p in parts)}"
    if relevance.unheld:
        note += f" (no claim speaks of {', '.join(relevance.unheld)})"
    if relevance.passage < 1:
        note += f"; [{relevance.best_passage}] holds more of the question than the passages cited"
    return note


def _lowered(score: float, penalty: float, thresholds: DecisionThresholds) -> float:
    """`score` minus a relevance penalty, which never takes it below the WARNING band on its own."""
    return score if score < thresholds.block else max(thresholds.block, score - penalty)


def _warning(fraction: float, thresholds: DecisionThresholds) -> float:
    """A score in the WARNING band [block, ok), from its bottom (fraction 0) towards its top (1)."""
    return round(thresholds.block + (thresholds.ok - thresholds.block) * min(max(fraction, 0.0), 0.99), 3)


def deterministic_verdict(state: State, policy: Policy, embeddings: Any = None, scorer: Any = None) -> Verdict:
    """`judge_answer` on the run's answer, question, direct answer and reranked chunks."""
    return judge_answer(state.get("answer") or "", sources_of(state.get("reranked") or []),
                        language=run_language(state, policy), coverage=state.get("coverage_level", "none"),
                        policy=policy, embeddings=embeddings, question=state.get("question") or "",
                        direct_answer=state.get("direct_answer"), scorer=scorer)


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
