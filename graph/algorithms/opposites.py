"""Yes or no read from the words of a state and of its opposite.

"Did the Pinterest campaign meet the minimum ROAS?" shares every word but one with "it stayed below the minimum ROAS
of 3.0", and the answer is no: the sentence says the other side of what the question asks. Shared words cannot tell
that; the words of a state and its opposite can. The language packs' `opposites` name senses, each with two sides
(attainment: met, reached, atingiu, … / below, missed, abaixo, …; activity: active, ativa, … / paused, encerrada,
…). A statement and a sentence:

- agree when, for every sense the statement names one side of, the sentence names that side and not the other;
- disagree when, for one of them, the sentence names the other side only;
- are not read here otherwise: the statement names no such word, or the sentence names neither side or both.

A state named in a condition ("if their first bet loses": the packs' `conditionals`) is not what is asked or said.
A negation on one of them only (the `negations` of its own language: "not", "não") turns agreeing into disagreeing
and back. The sides' words of every language count together: a question in Portuguese is read against a sentence in
English.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping

from graph.algorithms.text import detect_language, fold
from graph.policy import Languages, run_languages

_WORDS = re.compile(r"\w+", re.UNICODE)


@functools.lru_cache(maxsize=8)
def _sides_of(opposites: tuple[tuple[str, str, int], ...]) -> Mapping[str, tuple[str, int]]:
    """Each folded word's (sense, side); a word that folds onto two places says nothing and is left out."""
    places: dict[str, set[tuple[str, int]]] = {}
    for word, sense, side in opposites:
        places.setdefault(fold(word), set()).add((sense, side))
    return {word: next(iter(found)) for word, found in places.items() if len(found) == 1}


_CLAUSE_END = re.compile(r"[,;:.!?()]")


def state_words(text: str, languages: Languages | None = None) -> list[str]:
    """The words of `text` that name a side of a sense ("below" of "stayed below the minimum"), folded; not those
    of a condition, from one of the packs' `conditionals` to the clause's end ("… if their first bet loses"), nor
    those of a name (capitalised inside a clause: "Raiders of the Lost Ark")."""
    shared = (languages or run_languages()).shared
    sides = _sides_of(shared.opposites)
    phrases = [p for p in sides if " " in p]
    conditionals = {fold(w) for w in shared.conditionals}
    found = []
    for clause in _CLAUSE_END.split(text):
        words = _WORDS.findall(clause)
        cut = next((i for i, w in enumerate(words) if fold(w) in conditionals), len(words))
        # A capitalised word inside a clause is part of a name ("Raiders of the Lost Ark", "Things Fall Apart").
        found += [fold(w) for i, w in enumerate(words[:cut]) if fold(w) in sides and (i == 0 or not w[0].isupper())]
        # A phrase of several words ("down from"), in the clause's words before any condition.
        before = " ".join(fold(w) for w in words[:cut])
        found += [p for p in phrases if f" {p} " in f" {before} "]
    return found


def senses_named(text: str, languages: Languages | None = None) -> dict[str, set[int]]:
    """The sides of each sense that `text` names: {"attainment": {1}} for "stayed below the minimum"."""
    sides = _sides_of((languages or run_languages()).shared.opposites)
    named: dict[str, set[int]] = {}
    for word in state_words(text, languages):
        sense, side = sides[word]
        named.setdefault(sense, set()).add(side)
    return named


def negates(text: str, languages: Languages | None = None) -> bool:
    """Whether a clause of `text` that names a state holds a negation word of the text's own language (English
    "no" is Portuguese "in the"); a negation elsewhere ("No. The kick was missed", an answer's opening) is not the
    state's."""
    languages = languages or run_languages()
    negations = {fold(n) for n in languages.negations.get(detect_language(text, languages.markers, languages.default), ())}
    return any(state_words(clause, languages) and any(w in negations for w in _WORDS.findall(fold(clause)))
               for clause in _CLAUSE_END.split(text))


def yes_or_no(statement: str, sentence: str, languages: Languages | None = None) -> str | None:
    """"yes" when `sentence` says what `statement` says, "no" when it says the opposite, by the words of a state
    and its opposite (see the module docstring); None when they do not decide it."""
    asked = {sense: sides for sense, sides in senses_named(statement, languages).items() if len(sides) == 1}
    if not asked:
        return None
    said = senses_named(sentence, languages)
    readings = set()
    for sense, sides in asked.items():
        found = said.get(sense, set())
        if found == sides:
            readings.add("yes")
        elif found and not found & sides:
            readings.add("no")
        else:
            return None
    if len(readings) != 1:
        return None
    reading = readings.pop()
    if negates(statement, languages) != negates(sentence, languages):
        reading = "no" if reading == "yes" else "yes"
    return reading


def names_a_state(statement: str, languages: Languages | None = None) -> bool:
    """Whether the statement names one side of a sense (and so is read by `yes_or_no`, not by shared words)."""
    return any(len(sides) == 1 for sides in senses_named(statement, languages).values())
