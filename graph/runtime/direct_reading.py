"""The shipped reader put to a direct answer (graph/algorithms/answer_reading.py), for compose and judge alike."""

from __future__ import annotations

from collections.abc import Sequence

from graph.algorithms.answer_reading import DirectCheck, check_direct_answer, span_answer, unchecked
from graph.algorithms.direct_answer import MAX_WORDS, DirectAnswer
from graph.algorithms.question_form import question_form
from graph.output import failure_reason
from graph.policy import Policy
from graph.providers.reader import load_reader
from graph.state import Chunk


def reader_check(question: str, text: str, method: str, sentences: Sequence[str], policy: Policy,
                 notes: list[str], several_parts: bool = False) -> DirectCheck:
    """`check_direct_answer` with the shipped reader; unchecked, and `notes` say why, when the policy turns the
    reader off or it is missing or fails: the direct answer is then given as without it, and the reasoning
    says it was not checked."""
    if not policy.reader.enabled:
        return unchecked("not checked: the policy turns the reader off (reader.enabled)")
    try:
        reader = load_reader()
    except Exception as exc:  # a missing or corrupt model must not cost the answer
        notes.append(f"reader unavailable ({failure_reason(exc)}); direct answer not checked")
        return unchecked(f"not checked: the reader is unavailable ({failure_reason(exc)})")
    try:
        return check_direct_answer(reader, question, text, method, sentences, policy.reader, several_parts,
                                   policy.retrieval.date_relations)
    except Exception as exc:  # a failing read neither: the answer stands, unchecked, and says so
        notes.append(f"reader failed ({failure_reason(exc)}); direct answer not checked")
        return unchecked(f"not checked: the reader failed ({failure_reason(exc)})")


def reader_answer(question: str, language: str, parts: Sequence[str], chunks: Sequence[Chunk], policy: Policy,
                  notes: list[str]) -> DirectAnswer | None:
    """The reader's own direct answer to a one-part question (`parts`: its sub-queries) that asks for something
    other than yes or no: its best span over the first `reader.span_chunks` chunks, when it finds it likelier
    than "no answer here" by `reader.answer_margin`; None without one, or without the reader (`notes` say why).
    The settings are looked at first: turned off (`reader.span_chunks: 0`), it costs nothing."""
    settings = policy.reader
    if not settings.enabled or not settings.span_chunks or not chunks or len(parts) > 1:
        return None
    if question_form(question, language, policy.languages.question_cues).kind == "yes_no":
        return None
    head = list(chunks[: settings.span_chunks])
    try:
        spans = load_reader().spans(question, [c["content"] for c in head])
    except Exception as exc:  # without the reader, the extractor's answer (or none) stands
        notes.append(f"reader unavailable ({failure_reason(exc)}); no answer of its own")
        return None
    best = max(spans, key=lambda s: s.score, default=None)
    if best is None or best.score <= settings.answer_margin:
        return None
    return span_answer(best, head[best.passage], MAX_WORDS)
