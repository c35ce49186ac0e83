"""What a question asks that the evidence or the answer leaves open, and the words that only point at documents."""

from __future__ import annotations

import re
from collections.abc import Sequence

from graph.algorithms.direct_answer import Candidate, QuestionWords
from graph.algorithms.question_form import KINDS, asked_act, question_form
from graph.algorithms.text import Analyzer, fold, ring_mates, with_synonyms
from graph.state import Chunk, SearchResult


def part_leads(hits: dict[str, SearchResult], chunks: list[Chunk]) -> dict[str, Chunk]:
    """For each part of a split question, the first of `chunks` in its own search's dense list: by meaning,
    which (unlike words) reaches across languages."""
    by_point = {c.get("pointId"): c for c in chunks}
    leads: dict[str, Chunk] = {}
    for result in hits.values():
        if result.get("kind") == "sub_query" and result["sub_query"] not in leads:
            lead = next((by_point[h["pointId"]] for h in result.get("dense") or [] if h.get("pointId") in by_point), None)
            if lead is not None:
                leads[result["sub_query"]] = lead
    return leads


def uncovered_parts(parts: list[str], chunks: list[Chunk], language: str, analyzer: Analyzer,
                    synonyms: Sequence[Sequence[str]] = (), cues=None,
                    pointing: frozenset[str] = frozenset()) -> list[str]:
    """The parts of a split question that nothing retrieved speaks of: a part with two or more terms of
    its own (not shared with another part) none of which any relevant chunk holds, itself or by a synonym;
    and a part asking how to do something whose act no relevant chunk names ("otimizar" of "como otimizar o
    CPC": the CPC is reported, how to lower it is not; `asked_act`, by the policy's question `cues`).
    A part's numbers and its `pointing` words (`pointing_words`, folded) do not count towards the two: they
    say which documents it means, not what it asks ("as reported by both The Verge and TechCrunch", "the
    subsequent TechCrunch article on October 30, 2023" are no part a document could fail to cover)."""
    if len(parts) < 2:
        return []
    present: set[int] = set()
    for c in chunks:
        # The content's own terms (cached by the analyzer), and those of its synonyms.
        present |= analyzer.terms(c["content"], language) | analyzer.terms(" ".join(ring_mates(c["content"], synonyms)),
                                                                           language)
    terms = [analyzer.terms(p, language) for p in parts]
    out = []
    for i, part in enumerate(parts):
        unsaid = pointing | (asked_kind(part, language, cues) if cues is not None else frozenset())
        saying = set().union(*(ids for w, ids in analyzer.content_words(part, language)
                               if fold(w) not in unsaid and not any(ch.isdigit() for ch in w)))
        own = terms[i] - set().union(*(t for j, t in enumerate(terms) if j != i))
        act = asked_act(part, language, cues) if cues is not None else None
        if (len(own & saying) >= 2 and not own & present) or (act and not analyzer.terms(act, language) & present):
            out.append(part)
    return out


def unanswered_words(parts: list[str], read: list[Candidate], words: QuestionWords,
                     titles: dict[str, frozenset[int]]) -> frozenset[int]:
    """The question words of the parts the direct answer leaves open. A one-part question is what the
    direct answer answers; a part of a longer one is answered when the sentences the direct answer was
    `read` from, with their documents' titles ("Vendas de inverno 2025"), hold all its words but one at
    most ("the main reason" of "What is the return rate and the main reason?" is open after "9.8%")."""
    if len(parts) < 2:
        return frozenset()
    held = held_with_titles(read, titles)
    open_words: set[int] = set()
    for part in parts:
        unheld = words.held(part) - held
        if len(unheld) >= min(2, len(words.held(part))):
            open_words |= unheld
    return frozenset(open_words)


def answers_every_part(parts: list[str], said: list[Candidate], direct: bool, words: QuestionWords,
                       titles: dict[str, frozenset[int]], language: str, cues,
                       synonyms: Sequence[Sequence[str]] = (), long_part_words: int | None = None,
                       period: frozenset[int] = frozenset()) -> bool:
    """Nothing the question asks is left unsaid: a question asking for a value, date, name or yes/no has
    its `direct` answer, and the answer's sentences (`said`: the direct answer's and the points), with their
    documents' titles, hold every word of every part of the question, the words of its cue aside ("share"
    of "what share", "fast" of "how fast") — but one, when a direct answer vouches for the part ("came"
    of "what share of revenue came from the app": 15.1%), or when the part has `long_part_words` words or
    more: a long part mostly says which case it means ("no caso da jaqueta devolvida sem etiqueta após
    compra pelo app"), and the answer need not repeat each of its words ("caso"). A word is held through
    its `synonyms` too. The `period` words need not be held: no sentence of another period is a point
    (`select_points`), and one that only repeats the period says nothing more."""
    if not said or (not direct and question_form(" ".join(parts), language, cues).wants_short_answer):
        return False
    held = held_with_titles(said, titles)
    if synonyms:
        held |= frozenset().union(*(words.held(with_synonyms(c.text, synonyms)) for c in said))
    for part in parts:
        asked = words.held(part) - words.held(question_form(part, language, cues).cue) - period
        spare = 1 if direct or (long_part_words is not None and len(asked) >= long_part_words) else 0
        if len(asked - held) > spare:
            return False
    return True


def held_with_titles(sentences: list[Candidate], titles: dict[str, frozenset[int]]) -> frozenset[int]:
    """The question words the sentences hold, or their documents' titles do."""
    return frozenset().union(*(c.terms | titles.get(c.doc_id, frozenset()) for c in sentences))


def missing_terms(question: str, language: str, chunks: list[Chunk], analyzer: Analyzer,
                  asking_words: frozenset[str] = frozenset()) -> list[str]:
    """Content words of the question that no retrieved chunk contains. Numbers are left out: echoed
    back uncited, a year would read as an unsupported value; so are the words that ask or point at
    documents (`asking_words`, folded: "quais", "which"; `pointing_words`: "article", "The Verge"),
    which are no subject."""
    present: set[int] = set()
    for c in chunks:
        present |= analyzer.terms(c["content"], language)
    return [w for w, ids in analyzer.content_words(question, language)
            if not ids & present and not any(ch.isdigit() for ch in w) and fold(w) not in asking_words]


def asking_words(policy, language: str) -> frozenset[str]:
    """The words of the language's question cues (`languages.question_cues`: "quais", "how", "much") and its
    light verbs (`languages.light_verbs`: "vai", "fazer"), folded: they ask, they name no subject."""
    light = frozenset(fold(word) for word in policy.languages.light_verbs.get(language, ()))
    cues = policy.languages.question_cues.get(language)
    if cues is None:
        return light
    return light | frozenset(fold(word) for kind in KINDS for phrase in getattr(cues, kind) for word in phrase.split())


def asked_kind(question: str, language: str, cues) -> frozenset[str]:
    """What a question asking for a name calls the thing it asks for ("the individual", "the name of the
    organization": its language's `entity_nouns` or `person_nouns` right after the cue), folded: no more
    for a document to hold than the name of its source."""
    form = question_form(question, language, cues)
    if not form.wants_name or language not in cues:
        return frozenset()
    return frozenset(form.focus) & {fold(n) for n in (*cues[language].entity_nouns, *cues[language].person_nouns)}


def pointing_words(policy, language: str, chunks: list[Chunk]) -> frozenset[str]:
    """Words by which a question points at documents rather than says what it asks, folded: its asking
    words (`asking_words`), how it attributes to a source (`source_cues`: "article", "reported by",
    "discussed"), month names, and the words of the values the retrieved `chunks` carry in the fields a
    question names ("TechCrunch", "The Verge": `retrieval.mention_fields`)."""
    languages = policy.languages
    source = languages.source_cues.get(language)
    phrases = [*languages.months.get(language, ()),
               *(w for kind in ("nouns", "links", "before", "verbs") for w in (getattr(source, kind) if source else ()))]
    for c in chunks:
        metadata = c.get("metadata") or {}
        phrases += [str(metadata[f]) for f in policy.retrieval.mention_fields if metadata.get(f)]
    # Split as the analyzer splits ("CBSSports.com": "cbssports", "com").
    return asking_words(policy, language) | frozenset(w for phrase_ in phrases for w in re.findall(r"\w+", fold(phrase_)))
