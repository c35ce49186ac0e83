"""Answer relevance: does a grounded answer address the question it was given?

Groundedness (graph/algorithms/groundedness.py) asks whether each claim is supported by what it cites;
a claim copied from a passage that shares the question's words but answers something else passes it.
This module reads the question, the answer, the sources (the retrieved chunks), the language and the
policy's `judge.relevance` settings. A text's share of the question is the IDF-weighted share of the
question's content words (`QuestionWords`: stems, or the first letters of long words) it holds. IDF is
taken over the sources' sentences, so words every passage shares (the topic) weigh little and the ones
that single out the asked-about passage weigh most; a word no source holds (a publication's name, the
question's own phrasing) weighs nothing, since no answer drawn from these sources could hold it. It
measures:

- passage: the share held by the best passage the answer cites, against the best source's. A question
  is asked about one passage more than the others; an answer citing a passage that holds much less
  of the question than another retrieved one took a near miss: a passage that shares the question's
  words without being about what it asks;
- claims: the same for the answer's best claim against the best source sentence;
- parts: each clause of a multi-part question (`split_question`), by its own words; a part whose own
  words the answer holds less than `part_floor` of is missing, and named;
- directness: whether the answer's opening gives what the question asks for (`question_form`: a value,
  a date, a name, yes or no) — and the composer's direct answer, when there is one;
- redundancy: the share of claims whose words an earlier claim already holds;
- model (optional, English): a relevance scorer's score (the local cross-encoder) of each part of the
  question against the claims, the best claim per part, averaged over the parts.

relevance = passage_weight · passage + (1 − passage_weight) · claims, blended with the model's score
when there is one, times (1 − indirect_penalty) when the opening does not give what is asked. Below
its floor the answer is off-topic: `answer_floor` for a one-part question, `multi_part_floor` for one
of several parts, whose answer draws on several passages none of which holds the whole question.
graph/algorithms/judging.py turns this into quality (relevance, directness, redundancy) and utility
(the parts covered).
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from graph.algorithms.decomposition import split_question
from graph.algorithms.direct_answer import QuestionWords
from graph.algorithms.groundedness import Source, extract_names, spelled_numbers, split_claims, template_pattern
from graph.algorithms.question_form import question_form
from graph.algorithms.text import (
    YEAR,
    citations_in,
    detect_language,
    extract_values,
    find_dates,
    fold,
    get_analyzer,
    month_names,
    split_sentences,
    strip_citations,
    with_synonyms,
)
from graph.policy import Policy, RelevanceSettings
from graph.prompts import all_templates, phrase

_BULLET = re.compile(r"^\s*(?:[-*•]+|\d{1,3}[.)])\s+")
# Claims with fewer content terms than this are not compared for redundancy ("Sim [d].").
_MIN_REPEAT_TERMS = 3
_QUOTED_WORDS = 3


@dataclass(frozen=True)
class Part:
    """One clause of the question. `share`: the IDF-weighted share of its own words (those no other
    part holds) that the answer holds, over the ones some source holds; `judged`: it has such words
    and the question has other parts (a one-part question is judged whole, by the relevance)."""

    text: str
    share: float
    judged: bool


@dataclass(frozen=True)
class AnswerRelevance:
    """What `answer_relevance` measured (see the module docstring). `relevance` is the blended score,
    directness included, `floor` the one it is held to; `best_passage`: the doc id of the source that
    holds most of the question; `unheld`: the rarest answerable question words no claim holds."""

    relevance: float
    floor: float
    passage: float
    best_passage: str
    claims: float
    model: float | None
    kind: str
    direct: bool
    parts: tuple[Part, ...]
    redundancy: float
    unheld: tuple[str, ...]
    off_topic: bool
    missing: tuple[Part, ...]

    @property
    def parts_covered(self) -> float:
        """The share of the judged parts the answer addresses (1.0 for a one-part question)."""
        judged = [p for p in self.parts if p.judged]
        return 1.0 - len(self.missing) / len(judged) if judged else 1.0


@functools.lru_cache(maxsize=1)
def _framing() -> tuple[re.Pattern[str], ...]:
    return tuple(template_pattern(t) for t in all_templates())


def answer_claims(answer: str) -> list[str]:
    """The answer's claims (graph/algorithms/groundedness.py's split), without citations or list
    markers; the composer's own framing ("Os documentos não cobrem: «…»") is no claim: it quotes
    the question."""
    out = []
    for claim in split_claims(answer):
        text = _BULLET.sub("", strip_citations(claim)).strip()
        if text and not any(p.match(text) or p.match(claim) for p in _framing()):
            out.append(text)
    return out


def answer_relevance(question: str, answer: str, sources: Sequence[Source], language: str, policy: Policy, *,
                     scorer: Any = None, direct_answer: str | None = None) -> AnswerRelevance | None:
    """How well `answer` addresses `question` (module docstring), or None when that cannot be told:
    no question, no claim, every cited source in another language than the question, or no source
    holding any of the question's words. `scorer` (optional): a
    `RelevanceScorer` (graph/providers/relevance.py) whose score of each part against the claims is
    blended in; `direct_answer`: the short answer the composer opened with, if any."""
    cfg = policy.judge.relevance
    claims = answer_claims(answer)
    if not question.strip() or not claims:
        return None
    cited_sources = [src for src in sources if src.doc_id in set(citations_in(answer))]
    if cited_sources and all(detect_language(src.text, policy.languages.markers, language) != language
                             for src in cited_sources):
        # The answer quotes evidence in another language: words cannot tell whether it addresses the
        # question (retrieval and the composer chose it by meaning), so no relevance is claimed.
        return None
    analyzer = get_analyzer(policy)
    words = QuestionWords(question, analyzer, language)
    sentences = [s for src in sources for s in split_sentences(src.text, policy.languages.shared)]
    held_by_sentence = [words.held(s) for s in sentences]
    df = [sum(1 for h in held_by_sentence if i in h) for i in range(len(words))]
    # Unanswerable words weigh 0, and so does a word whose terms an earlier one has ("report", "reported").
    first = {ids: i for i, (_, ids) in reversed(list(enumerate(words.words)))}
    idf = [math.log(1 + len(sentences) / (1 + d)) if d and first[words.words[i][1]] == i else 0.0
           for i, d in enumerate(df)]
    if not any(idf):
        return None

    def share(held: frozenset[int], among: Sequence[int] | None = None) -> float:
        pool = range(len(words)) if among is None else among
        weight = sum(idf[i] for i in pool)
        return sum(idf[i] for i in pool if i in held) / weight if weight else 1.0

    held_by_claim = [words.held(c) for c in claims]
    held = frozenset().union(*held_by_claim)
    claims_share = min(1.0, max(share(h) for h in held_by_claim) / max(share(h) for h in held_by_sentence))
    by_source = [(src.doc_id, share(words.held(src.text))) for src in sources]
    cited = set(citations_in(answer))
    best_passage, best = max(by_source, key=lambda item: item[1])
    passage = max((v for d, v in by_source if d in cited), default=0.0) / best
    # A part is covered through the policy's synonyms too ("divisão" says "dividido"; the composer answers
    # "what changed afterwards" with the list under "Actions taken …:", which it quotes).
    rings = policy.languages.synonyms(language)
    held_or_synonym = frozenset().union(*(words.held(with_synonyms(c, rings)) for c in claims)) if rings else held
    parts = _parts(question, words, held_or_synonym, idf, share, policy, language)
    missing = tuple(p for p in parts if p.judged and p.share < cfg.part_floor)

    score = cfg.passage_weight * passage + (1 - cfg.passage_weight) * claims_share
    model = _model_score(scorer, [p.text for p in parts] if len(parts) > 1 else [question], claims)
    if model is not None:
        score = (1 - cfg.model_weight) * score + cfg.model_weight * model
    form = question_form(question, language, policy.languages.question_cues)
    direct = _opens_with_answer(form.kind, answer, question, language, policy, direct_answer)
    if not direct:
        score *= 1 - cfg.indirect_penalty
    floor = cfg.multi_part_floor if len(parts) > 1 else cfg.answer_floor
    unheld = sorted((i for i in range(len(words)) if idf[i] and i not in held), key=lambda i: -idf[i])
    return AnswerRelevance(
        relevance=round(score, 3), floor=floor, passage=round(passage, 3), best_passage=best_passage,
        claims=round(claims_share, 3),
        model=None if model is None else round(model, 3), kind=form.kind, direct=direct, parts=parts,
        redundancy=round(redundancy(claims, language, policy), 3),
        unheld=tuple(words.words[i][0] for i in unheld[:_QUOTED_WORDS]),
        off_topic=score < floor, missing=missing)


def _parts(question: str, words: QuestionWords, held: frozenset[int], idf: list[float],
           share: Callable[[frozenset[int], Sequence[int] | None], float], policy: Policy,
           language: str) -> tuple[Part, ...]:
    """The question's clauses, each with the share of its own answerable words the answer holds."""
    texts = split_question(question, policy, language)
    if len(texts) < 2:
        return (Part(question.strip(), share(held), False),)
    asked = [words.held(t) for t in texts]
    out = []
    for i, text in enumerate(texts):
        others = frozenset().union(*(a for j, a in enumerate(asked) if j != i))
        own = [w for w in asked[i] - others if idf[w]]
        out.append(Part(text.strip(), share(held, own), bool(own)))
    return tuple(out)


def _model_score(scorer: Any, parts: Sequence[str], claims: Sequence[str]) -> float | None:
    """The scorer's best claim per part, averaged over the parts (a claim answers one part of a
    comparison, not the whole question)."""
    if scorer is None:
        return None
    return sum(max(scorer.score(part, list(claims))) for part in parts) / len(parts)


def _opening(answer: str) -> str:
    """The answer's first line that is not the composer's framing, without citations or list marker."""
    for line in answer.strip().splitlines():
        text = _BULLET.sub("", strip_citations(line)).strip()
        if text and not any(p.match(text) for p in _framing()):
            return text
    return ""


def _opens_with_answer(kind: str, answer: str, question: str, language: str, policy: Policy,
                       direct_answer: str | None) -> bool:
    """Whether the opening gives what the question asks for: a value (how much), a date or year
    (when), a name the question does not already name (who), yes or no (yes/no); the composer's
    direct answer, when given, must be in it. "which" and open questions have no such test."""
    opening = _opening(answer)
    folded = fold(opening)
    if direct_answer and fold(direct_answer) not in folded:
        return False
    if kind == "how_much":
        numbers = policy.languages.number_words.get(language, {})
        return (any(not YEAR.fullmatch(surface) for surface, _ in extract_values(opening, policy.languages.shared))
                or bool(spelled_numbers(opening, {fold(w): v for w, v in numbers.items()}, policy.languages.shared)))
    if kind == "when":
        return bool(YEAR.search(opening) or find_dates(opening, policy.languages.months, {}, policy.languages.shared)
                    or any(re.search(rf"(?<!\w){re.escape(m)}(?!\w)", folded)
                           for m in month_names(policy.languages.months)))
    if kind == "who":
        asked = fold(question)
        return any(fold(name) not in asked for name in extract_names(opening, policy.languages.shared))
    if kind == "yes_no":
        return any(re.match(rf"{re.escape(fold(phrase(language, key)))}(?!\w)", folded) for key in ("yes", "no"))
    return True


def redundancy(claims: Sequence[str], language: str, policy: Policy) -> float:
    """The share of claims (of those with a few content terms) whose terms an earlier claim already
    holds, `repeat_overlap` of them or more."""
    cfg: RelevanceSettings = policy.judge.relevance
    analyzer = get_analyzer(policy)
    seen: list[frozenset[int]] = []
    repeats = 0
    for claim in claims:
        terms = analyzer.terms(claim, language)
        if len(terms) < _MIN_REPEAT_TERMS:
            continue
        if any(len(terms & earlier) >= cfg.repeat_overlap * len(terms) for earlier in seen):
            repeats += 1
        seen.append(terms)
    return repeats / len(seen) if seen else 0.0
