"""A value that changed, and the end of the change a question asks for.

"The average refund time fell from 16 to 8 business days" gives two values of one thing: 16 before the change, 8
after it. Matching words cannot tell which of them "What was the average refund time after the process changes?"
asks for; the question's own before / after words can (the language packs' `date_relations`: "after", "depois de",
"before", "antes de", …). A change, or a range, is two values joined by a dash or by one of the packs'
`range_connectors` or `change_connectors` ("16 to 8", "de 16 para 8"); the first is its before end.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from graph.algorithms.text import fold, has_any_phrase, shared_words, value_spans
from graph.policy import SharedWords

Span = tuple[int, int]


def asked_end(question: str, relations: Mapping[str, Sequence[str]]) -> str | None:
    """"before" or "after" when the question says one of them (`retrieval.date_relations`' phrases) and not the
    other; None otherwise."""
    said = [relation for relation, phrases in relations.items() if has_any_phrase(question, phrases)]
    return said[0] if len(said) == 1 else None


def _joins(gap: str, words: SharedWords) -> bool:
    """Whether the text between two values joins them as a change or range: a dash or a connector word alone."""
    gap = fold(gap).strip()
    return gap in ("-", "–", "—") or gap in {fold(w) for w in (*words.range_connectors, *words.change_connectors)}


def change_ends(text: str, spans: Sequence[Span] | None = None, words: SharedWords | None = None) -> list[tuple[Span, Span]]:
    """The (before, after) value spans of each change or range in `text` (`spans`: its value spans, when the
    caller has read them; by default every number `value_spans` finds)."""
    words = shared_words(words)
    spans = sorted(value_spans(text, words) if spans is None else spans)
    return [(a, b) for a, b in zip(spans, spans[1:]) if _joins(text[a[1]:b[0]], words)]


_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")


def end_held(answer: str, read: str, words: SharedWords | None = None) -> str | None:
    """Which end ("before" or "after") of a change read in `read` ("16 to 8 business days") the short `answer`
    holds the number of, when it holds one end's and not the other's; None when `read` is no change or the
    answer holds neither or both."""
    numbers = set(_NUMBER.findall(fold(answer)))
    for before, after in change_ends(read, words=words):
        ends = {"before": set(_NUMBER.findall(read[slice(*before)])), "after": set(_NUMBER.findall(read[slice(*after)]))}
        held = [end for end, found in ends.items() if found & numbers and not (found & numbers) <= ends[_other(end)]]
        if len(held) == 1:
            return held[0]
    return None


def _other(end: str) -> str:
    return "after" if end == "before" else "before"
