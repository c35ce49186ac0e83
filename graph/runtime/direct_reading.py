"""The shipped reader put to a direct answer (graph/algorithms/answer_reading.py), for compose and judge alike."""

from __future__ import annotations

from collections.abc import Sequence

from graph.algorithms.answer_reading import DirectCheck, check_direct_answer, unchecked
from graph.output import failure_reason
from graph.policy import Policy
from graph.providers.reader import load_reader


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
        return check_direct_answer(reader, question, text, method, sentences, policy.reader, several_parts)
    except Exception as exc:  # a failing read neither: the answer stands, unchecked, and says so
        notes.append(f"reader failed ({failure_reason(exc)}); direct answer not checked")
        return unchecked(f"not checked: the reader failed ({failure_reason(exc)})")
