"""What a question asks for: a value, a date, a name, yes or no, or an explanation.

The composer's direct answer gives exactly that (graph/algorithms/direct_answer.py), and the judge
checks that the answer does. The cue words live in the policy (`languages.question_cues`: each language pack's `question_cues`).
A yes/no cue counts where a clause starts — the question's start, or after a comma, semicolon or
colon — so "Between the Verge's report and Wired's, has the coverage changed?" is a yes/no question
while "Which company, reported by both TechCrunch and The Verge, has …" asks for a name. A wh-cue also
counts inside the question ("Em quantas cidades a UFMS mantém campi?"), except a short one-word cue
("que", "who"), which there is a pronoun. The earliest cue wins; at one place the longest ("what
year" over "what"). "What is the budget …" and "Qual é o
orçamento …" ask for a value: an open or which-cue followed within a few words by a quantity word
asks how much, by a time word when. A which-question asks for a name when its cue always does
(`name_cues`: English "which") or when it is about a kind of entity (`entity_nouns`: "what company",
"qual região"; `person_nouns`: "which pop star"); "Qual a duração …" asks for a phrase. In a language that asks yes or no in the order of a statement (`bare_yes_no`:
"A campanha segue ativa?"), a question with no cue and no wh-word anywhere ("que" of "Para que …?") and a question
mark asks yes or no.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass

from graph.algorithms.text import fold, has_any_phrase
from graph.policy import QuestionCues

# What the direct answer must be, for each kind.
KINDS = ("how_much", "when", "who", "which", "yes_no", "open")
# Words looked at after a which/open cue for a quantity or time word ("what is the total budget").
_FOCUS_WINDOW = 4
_CLAUSE_START = re.compile(r"(?:^|[,;:()]\s*|\?\s+)(?=\w)", re.UNICODE)
_WORD = re.compile(r"\w+(?:[-']\w+)*", re.UNICODE)


@dataclass(frozen=True)
class QuestionForm:
    """kind: what a direct answer must give (see KINDS; "open" has no short answer). cue: the phrase
    that decided it. compares: the question sets two things side by side (a compare cue anywhere).
    focus: the words just after the cue, where a which-question names what it asks about."""

    kind: str
    cue: str = ""
    compares: bool = False
    focus: tuple[str, ...] = ()  # the words right after the cue ("o", "roas", "da", "campanha"), folded
    wants_share: bool = False    # a share word anywhere: the value asked is a percentage
    # The answer is a name: a who-question, or a which-question about a kind of entity ("which company").
    wants_name: bool = False
    # The quantity word that made a which/what question ask for a value ("salário" of "Qual é o salário
    # médio …?"), folded; "" otherwise.
    measure: str = ""
    # A count is asked ("how many", "quantas": the policy's `count_cues`): not a percentage, not an amount.
    wants_count: bool = False
    # An amount is asked ("Qual foi a receita …": the measure is one of the policy's `amount_words`): not a
    # percentage ("41% da receita" is a share of it).
    wants_amount: bool = False
    # Where a word that narrows the measure stands in this language (`QuestionCues.qualifier_side`).
    qualifier_side: str = "after"
    # The name is a person's: the question is about a kind of person ("who is the individual", "which pop
    # star": `QuestionCues.person_nouns`).
    wants_person: bool = False
    # A how-much question's word of change (`QuestionCues.change_words`: "cresceram", "grow"), folded; "" otherwise.
    change: str = ""

    @property
    def wants_short_answer(self) -> bool:
        """A value, a date, a name or yes/no; not an explanation, nor a which-question about something
        other than a kind of entity ("Quais ações …": a list)."""
        return self.kind != "open" and (self.kind != "which" or self.wants_name)


def _asks_wh(text: str, lexicon: QuestionCues) -> bool:
    """Whether one of the language's wh-cues occurs anywhere in `text` ("Para que o POSCOMP foi concebido?" asks
    what for, though no cue opens it; the "o" of "o que" alone is an article)."""
    return has_any_phrase(text, [cue for kind in KINDS if kind != "yes_no" for cue in getattr(lexicon, kind)])


@functools.lru_cache(maxsize=64)
def _cue_patterns(cues: QuestionCues) -> tuple[tuple[str, str, re.Pattern[str]], ...]:
    """(kind, cue, pattern anchored at a position) for every cue, longest first."""
    out = []
    for kind in KINDS:
        for cue in getattr(cues, kind):
            words = fold(cue).split()
            if words:
                out.append((kind, cue, re.compile(r"\s+".join(map(re.escape, words)) + r"(?!\w)", re.UNICODE)))
    out.sort(key=lambda item: -len(item[1]))
    return tuple(out)


def _cues_for(language: str, cues: Mapping[str, QuestionCues]) -> QuestionCues | None:
    return cues.get(language) or next(iter(cues.values()), None)


def asked_act(question: str, language: str, cues: Mapping[str, QuestionCues]) -> str | None:
    """The act a question asking how to do something is about: the word after one of its language's `method`
    cues at its start ("otimizar" of "como otimizar o CPC"; "lower" of "how to lower the CPC"), if it has the
    form `method_verb` asks for; None for any other question ("como evoluiu o engajamento" asks what happened)."""
    lexicon = _cues_for(language, cues)
    if lexicon is None or not lexicon.method:
        return None
    text = fold(question).strip()
    for cue in sorted(lexicon.method, key=len, reverse=True):
        m = re.match(r"\s+".join(map(re.escape, fold(cue).split())) + r"\s+(\w+)", text)
        if m and (not lexicon.method_verb or re.search(lexicon.method_verb, m.group(1))):
            return m.group(1)
    return None


def question_form(question: str, language: str, cues: Mapping[str, QuestionCues]) -> QuestionForm:
    """The form of `question` by the cue lists of its language (the policy's `languages.question_cues`)."""
    lexicon = _cues_for(language, cues)
    if lexicon is None:
        return QuestionForm("open")
    return _form(fold(question).strip(), lexicon)


# The composer and the judge each ask the form of the question (and of its parts) several times.
@functools.lru_cache(maxsize=1024)
def _form(text: str, lexicon: QuestionCues) -> QuestionForm:
    patterns = _cue_patterns(lexicon)
    compares = has_any_phrase(text, lexicon.compare)
    wants_share = has_any_phrase(text, lexicon.share_words)
    clause_starts = {m.end() for m in _CLAUSE_START.finditer(text)}
    for start in (m.start() for m in _WORD.finditer(text)):
        for kind, cue, pattern in patterns:
            if start not in clause_starts and (kind == "yes_no" or (" " not in cue and len(cue) <= 3)):
                continue  # "does"/"é" only open a question; "que"/"who" inside one are pronouns
            m = pattern.match(text, start)
            if not m:
                continue
            after = tuple(w for w in _WORD.findall(text[m.end():])[:_FOCUS_WINDOW] if fold(w) not in lexicon.yes_no)
            window = " ".join(after)
            measure = ""
            if kind in ("which", "open"):
                if has_any_phrase(window, lexicon.quantity_words):
                    kind = "how_much"
                    # The head of "average salary" / "salário médio" is where the language puts it: last where
                    # the narrowing word comes first (`qualifier_side` "before"), first otherwise.
                    quantities = [w for w in after if has_any_phrase(w, lexicon.quantity_words)] or [""]
                    measure = quantities[-1] if lexicon.qualifier_side == "before" else quantities[0]
                elif has_any_phrase(window, lexicon.time_words):
                    kind = "when"
            # "Onde o candidato …": a where-question asks for a place, whoever its subject is.
            about_person = (has_any_phrase(window, lexicon.person_nouns)
                            and fold(cue) not in {fold(c) for c in lexicon.place_cues})
            wants_name = kind == "who" or (kind == "which" and (fold(cue) in {fold(c) for c in lexicon.name_cues}
                                                                or has_any_phrase(window, lexicon.entity_nouns)
                                                                or about_person))
            # A bare who asks for an organisation as often ("Quem fiscaliza o ensino superior?" → MEC).
            wants_person = wants_name and about_person
            wants_count = kind == "how_much" and fold(cue) in {fold(c) for c in lexicon.count_cues}
            wants_amount = bool(measure) and not wants_share and fold(measure) in {fold(w) for w in lexicon.amount_words}
            change = next((w for w in _WORD.findall(text[m.end():]) if has_any_phrase(w, lexicon.change_words)),
                          "") if kind == "how_much" else ""
            return QuestionForm(kind, cue, compares, after, wants_share, wants_name, measure, wants_count,
                                wants_amount, lexicon.qualifier_side, wants_person, change)
    if lexicon.bare_yes_no and text.endswith("?") and not _asks_wh(text, lexicon):
        return QuestionForm("yes_no", "", compares, (), wants_share)
    return QuestionForm("open", "", compares, (), wants_share)
