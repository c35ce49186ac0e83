"""The period a question names (years, spans of a year) and sentences of another period."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from graph.algorithms.direct_answer import Candidate, QuestionWords
from graph.algorithms.text import YEAR, fold, month_names


def off_period(sentence: str, question: str, title: str = "",
               units: Mapping[str, Sequence[str]] | None = None) -> bool:
    """The question names years and the sentence, read with its document's `title`, speaks of other years
    only: another period ("Channel plan: 45% of the media budget …" of the "Black Friday 2025 playbook" is
    no answer about the 2026 winter playbook, though the sentence itself names no year). So too with the
    spans of a year (`units`, the policy's `languages.period_units`): a question about a half-year and a
    sentence that names quarters only."""
    return _other_period(_period_asked(question, units), f"{title} {sentence}", units)


def _period_asked(question: str, units: Mapping[str, Sequence[str]] | None) -> tuple[set[str], set[str]]:
    """The years and the spans of a year (`units`) the question names: read once for all its candidates."""
    return set(YEAR.findall(question)), _period_units(question, units) if units else set()


def _other_period(asked: tuple[set[str], set[str]], text: str, units: Mapping[str, Sequence[str]] | None) -> bool:
    """`text` speaks of other years only than those `asked` (`_period_asked`), or of other spans of a year."""
    asked_years, asked_units = asked
    said = set(YEAR.findall(text))
    if asked_years and said and not asked_years & said:
        return True
    if not asked_units:
        return False
    said_units = _period_units(text, units)
    return bool(said_units and not asked_units & said_units)


def _period_units(text: str, units: Mapping[str, Sequence[str]]) -> set[str]:
    words = set(re.findall(r"\w+", fold(text)))
    return {unit for unit, names in units.items() if any(fold(n) in words for n in names)}


def of_the_period(candidates: list[Candidate], question: str, doc_titles: dict[str, str],
                  units: Mapping[str, Sequence[str]] | None = None) -> list[Candidate]:
    """The candidates not of another period than the question names (`off_period`, each read with its
    document's title)."""
    asked = _period_asked(question, units)
    return [c for c in candidates if not _other_period(asked, f"{doc_titles.get(c.doc_id, '')} {c.text}", units)]


def period_words(words: QuestionWords, policy) -> frozenset[int]:
    """The question words that only say when: numbers ("2026", "Q1"), months and the policy's time words
    ("trimestre", "quarter"), as indexes into `words`."""
    cues = policy.languages.question_cues.get(words.language)
    timely = month_names(policy.languages.months) | {fold(w) for w in (cues.time_words if cues else ())}
    return frozenset(i for i, (w, _) in enumerate(words.words) if any(ch.isdigit() for ch in w) or fold(w) in timely)
