"""A direct answer read against the sentences it was read from: does the reader find the same answer there?

The extractor (graph/algorithms/direct_answer.py) matches words. It can give "16" where its sentence says the
refund time fell from 16 to 8 days, or "Yes" to "Did the campaign meet the minimum ROAS?" where the sentence
says it stayed below it: every word is there, the reading is wrong. The reader (graph/providers/reader.py, passed
in by the node) reads the question against the same sentences. A direct answer is shown only when the reader
confirms it (for a value, date or name, when the policy asks for that: else one it does not contradict); one
the reader contradicts, or does not confirm, is withheld, and the answer opens with its evidence instead
(`DirectCheck.reason` says why). The judge runs the same check on the direct answer it
is given (a chat model's too) and blocks a contradicted one.

- yes / no: when the question names a state (met, below, active, paused), the sentences' words of that state and
  its opposite (graph/algorithms/opposites.py); else the reader's yes/no head over the sentences, confirmed when
  it reads the same answer with at least `yes_no_floor`, contradicted when it reads the other with at least
  `contradiction_floor`.
- a value, date, name or phrase: the reader's best answer span in each part's sentence; confirmed when every
  part and its span share at least `span_agreement` of their words (token F1); contradicted when a part shares
  none with a span the reader finds likelier than "no answer here" by `span_margin`, or when the span is a
  change of which the part holds one end ("16 to 8" for "16") and the question does not ask for that end
  (graph/algorithms/changes.py: "before the changes" asks for 16).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from graph.algorithms.changes import asked_end, end_held
from graph.algorithms.direct_answer import DirectAnswer
from graph.algorithms.opposites import yes_or_no
from graph.algorithms.passages import claim_sentences
from graph.algorithms.text import citations_in, fold, split_sentences, tokens_f1
from graph.policy import ReaderChecks
from graph.prompts import phrase
from graph.state import Chunk, Verdict

CONFIRMED, CONTRADICTED, UNSURE, UNCHECKED = "confirmed", "contradicted", "unsure", "unchecked"
_WORDS = re.compile(r"\w+", re.UNICODE)


@dataclass(frozen=True)
class DirectCheck:
    """What the reader made of a direct answer: `outcome` (confirmed, contradicted, unsure, unchecked), what
    it read (`reading`, e.g. "no 0.91" or "16 to 8"), and one line saying so (`reason`)."""

    outcome: str
    reading: str
    reason: str
    shown: bool   # whether the direct answer may be given (`ReaderChecks.confirm_yes_no`, `.confirm_values`)

    def as_record(self) -> dict[str, str]:
        return {"outcome": self.outcome, "reading": self.reading, "reason": self.reason}


def unchecked(why: str) -> DirectCheck:
    """No reading: the reader is missing or failed (`why`), or there was nothing to read. The direct answer is
    given as without the reader, and the reasoning says it was not checked."""
    return DirectCheck(UNCHECKED, "", why, True)


def _decided(outcome: str, reading: str, reason: str, confirm: bool) -> DirectCheck:
    """A reading's check: a contradicted answer is never given, an unsure one only when `confirm` is off."""
    return DirectCheck(outcome, reading, reason, outcome == CONFIRMED or (outcome == UNSURE and not confirm))


def token_f1(said: str, read: str) -> float:
    """SQuAD's token F1 of two short answers, over folded words."""
    return tokens_f1(_WORDS.findall(fold(said)), _WORDS.findall(fold(read)))


def check_direct_answer(reader: Any, question: str, text: str, method: str, sentences: Sequence[str],
                        settings: ReaderChecks, several_parts: bool = False,
                        relations: Mapping[str, Sequence[str]] | None = None) -> DirectCheck:
    """Read the direct answer `text` (found by `method`: yes, no, value, date, name, ...) against the
    `sentences` it was read from (one per part of a several-part answer, "a; b"). A value or name that
    answers a question of `several_parts` is gathered across them (the company "reported by TechCrunch
    and The Verge" is named in both): one sentence read against the whole question cannot confirm or
    contradict it, so it is left unsure (and given unless the policy asks for confirmation). `relations`: the
    phrases of "before" and "after" (`retrieval.date_relations`), by which a question asks for one end of a
    change the reader reads ("after the changes": 8 of "16 to 8")."""
    sentences = [s for s in sentences if s.strip()]
    if not sentences:
        return unchecked("the direct answer names no sentence to read it in")
    if method in ("yes", "no"):
        return _check_yes_no(reader, question, method, " ".join(sentences), settings)
    if several_parts:
        return _decided(UNSURE, "", "not read: a question of several parts is answered across them, not by one "
                                    "sentence", settings.confirm_values)
    parts = [p.strip() for p in text.split(";") if p.strip()]
    if len(parts) != len(sentences):  # parts read from one sentence: each is looked for in all of them
        sentences = [" ".join(sentences)] * len(parts)
    spans = reader.spans(question, sentences)
    asked = asked_end(question, relations or {})
    outcomes = []
    for part, span in zip(parts, spans):
        # Its best span agreeing confirms, even where the reader would rather say "no answer here"; only a span
        # it finds likelier than that (`span_margin`) can contradict.
        overlap = token_f1(part, span.text)
        end = end_held(part, span.text) if overlap else None
        if end is not None and asked is not None:
            # The reader reads a change ("16 to 8"): the answer is right when it is the end the question asks for.
            outcomes.append(CONFIRMED if end == asked else CONTRADICTED)
        elif overlap >= settings.span_agreement:
            outcomes.append(CONFIRMED)
        elif (span.score > settings.span_margin and overlap == 0.0) or end is not None:
            # A span of its own, or a range or change of which the answer is one end ("16 to 8" for "16": the
            # time fell from 16 to 8 days, and the question does not say which end it asks for).
            outcomes.append(CONTRADICTED)
        else:
            outcomes.append(UNSURE)
    # The reasons quote neither the documents nor the answer: they go into request records, which hold no
    # document text (`reading`, the tenant's own state, holds what the reader read).
    reading = "; ".join(s.text for s in spans)
    if CONTRADICTED in outcomes:
        return _decided(CONTRADICTED, reading, "the reader reads another answer in the sentence it was read from",
                        settings.confirm_values)
    if all(o == CONFIRMED for o in outcomes):
        return _decided(CONFIRMED, reading, "the reader reads the same answer in the sentence it was read from",
                        settings.confirm_values)
    return _decided(UNSURE, reading, "the reader does not clearly read that answer in the sentence it was read from",
                    settings.confirm_values)


def _check_yes_no(reader: Any, question: str, said: str, passage: str, settings: ReaderChecks) -> DirectCheck:
    """Yes or no read in `passage`: by the words of a state and its opposite when the question names one (below
    / met, paused / active: graph/algorithms/opposites.py), else by the reader's yes/no head. Where the words decide,
    the head is not asked: it reads "Did the Pinterest campaign meet the minimum ROAS?" as yes (0.88) against "it
    stayed below the minimum ROAS of 3.0", and is right about half the time on MultiHop-RAG's yes/no questions
    (balanced accuracy 0.553; README "The reader in compose and judge")."""
    by_words = yes_or_no(question, passage)  # None when the question names no state, or the passage does not decide
    if by_words is not None:
        outcome = CONFIRMED if by_words == said else CONTRADICTED
        return _decided(outcome, f"{by_words} (its words of a state and its opposite)",
                        f"the sentence's words of a state and its opposite read «{by_words}»", settings.confirm_yes_no)
    choice = reader.yes_no(question, [passage])[0]
    other = "no" if said == "yes" else "yes"
    p_said, p_other = choice.probabilities.get(said, 0.0), choice.probabilities.get(other, 0.0)
    reading = f"{choice.label} {choice.confidence:.2f}"
    if p_other >= settings.contradiction_floor:
        return _decided(CONTRADICTED, reading, f"the reader reads «{other}» ({p_other:.2f}) where the direct answer "
                                               f"says «{said}»", settings.confirm_yes_no)
    if p_said >= settings.yes_no_floor:
        return _decided(CONFIRMED, reading, f"the reader reads «{said}» ({p_said:.2f}) there too", settings.confirm_yes_no)
    return _decided(UNSURE, reading, f"the reader is not sure of «{said}» ({p_said:.2f})", settings.confirm_yes_no)


def yes_no_said(direct: str, language: str) -> str:
    """How a direct answer answers (a chat model's, or one the judge is given): "yes" / "no" when it opens with
    the language's word for one, else "value" (read as a span)."""
    first = fold((direct.split() or [""])[0]).strip(".,;:!")
    return {fold(phrase(language, "yes")): "yes", fold(phrase(language, "no")): "no"}.get(first, "value")


def cited_texts(answer: str, chunks: Sequence[Chunk]) -> list[str]:
    """The texts of the chunks an answer's opening line cites, where its direct answer is to be read."""
    opening = next((line for line in answer.splitlines() if line.strip()), "")
    cited = set(citations_in(opening))
    return [" ".join(c["content"] for c in chunks if c["docId"] in cited)]


def verdict_with_reading(verdict: Verdict, check: dict[str, str] | None, direct_answer: str | None,
                         contradicted_groundedness: float) -> Verdict:
    """The judge's verdict read with what the reader made of the direct answer (`DirectCheck.as_record`): a
    contradicted direct answer that was given is BLOCK, its groundedness at most `contradicted_groundedness`
    (the memory keeps nothing, the safe response explains); the reasoning says what the reader read, why a
    direct answer was withheld, or that it was not checked."""
    if not check:
        return verdict
    reasoning = dict(verdict.get("reasoning") or {})
    if direct_answer is None:
        reasoning["direct_answer"] = f"withheld: {check['reason']}"
        return {**verdict, "reasoning": reasoning}
    reasoning["direct_answer"] = check["reason"]
    if check["outcome"] != CONTRADICTED:
        return {**verdict, "reasoning": reasoning}
    scores = dict(verdict.get("scores") or {})
    scores["groundedness"] = min(scores.get("groundedness", 0.0), contradicted_groundedness)
    reasoning["groundedness"] = f"{reasoning.get('groundedness', '')}; the direct answer is contradicted: {check['reason']}"
    return {**verdict, "scores": scores, "reasoning": reasoning, "final_decision": "BLOCK"}


def span_answer(span: Any, chunk: Chunk, max_words: int) -> DirectAnswer | None:
    """The reader's answer span in `chunk` as a direct answer (method "span"), read in the sentence that holds
    it; None when it is longer than a direct answer may be or no quotable sentence holds it."""
    text = span.text.strip(" .,;:")
    if not text or len(text.split()) > max_words:
        return None
    sentence = _sentence_holding(text, span.start, chunk["content"])
    return DirectAnswer(text, (chunk["docId"],), "span", sentence) if sentence else None


def _sentence_holding(text: str, start: int, content: str) -> str | None:
    """The quotable sentence of `content` where the reader read `text` (at character `start`), not merely the
    first one holding the same words: "a melhor universidade de Mato Grosso do Sul" is read in the 2014 ranking's
    sentence, and the IGC's sentence, which says it too, is not its evidence. A span in a sentence that cannot
    be quoted (a title, a fragment) falls back to the first quotable one holding it."""
    nth = content[:start].count(text)  # the same words read earlier in the passage
    quotable = dict(claim_sentences(content))
    seen = 0
    for position, raw in enumerate(split_sentences(content)):
        held = raw.count(text)
        if seen <= nth < seen + held and text in quotable.get(position, ""):
            return quotable[position]
        seen += held
    return next((s for s in quotable.values() if text in s), None)
