"""The deterministic answer: the direct answer first, then the points that support it."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any, NamedTuple

from graph.algorithms.answer_points import (
    answer_candidates,
    answer_rankings,
    chunk_title,
    cite,
    document_points,
    document_titles,
    listed_points,
    measure_elsewhere,
    part_of,
    passage_points,
    select_points,
    take_in_order,
)
from graph.algorithms.cross_language import answered_by_meaning, in_another_language
from graph.algorithms.decomposition import split_question
from graph.algorithms.direct_answer import (
    MAX_WORDS,
    Candidate,
    DirectAnswer,
    QuestionWords,
    direct_answer,
    holds_value,
    side_value,
    states_answer,
)
from graph.algorithms.missing_parts import answers_every_part, pointing_words, unanswered_words, uncovered_parts
from graph.algorithms.opposites import senses_named
from graph.algorithms.periods import of_the_period, period_words
from graph.algorithms.question_form import QuestionForm, question_form
from graph.algorithms.text import Analyzer, fold, has_any_phrase
from graph.algorithms.unattested import documents_naming
from graph.prompts import phrase
from graph.state import Chunk


class ExtractiveAnswer(NamedTuple):
    """The deterministic answer's lines, its direct answer (None: abstained), whether its sentences
    answer every part of the question (`answers_every_part`) and the parts it names as missing."""

    lines: list[str]
    found: DirectAnswer | None
    complete: bool
    missing_parts: list[str]


def direct_settings(policy, language: str) -> dict[str, Any]:
    """`direct_answer`'s lexicons and thresholds, from the policy."""
    cfg = policy.compose.direct
    return dict(months=policy.languages.months, negations=policy.languages.negations.get(language, ()),
                floor=cfg.sentence_floor, depth=cfg.depth, part_floor=cfg.part_floor, name_floor=cfg.name_floor,
                name_margin=cfg.name_margin, own_language_margin=cfg.own_language_margin, on_topic=cfg.point_floor,
                synonyms=policy.languages.synonyms(language),
                number_words=policy.languages.number_words.get(language, {}),
                relations=policy.retrieval.date_relations, light_words=policy.languages.light_verbs.get(language, ()),
                direct=cfg)


def direct_line(found: DirectAnswer, language: str) -> str:
    """The answer's first line: the direct answer, cited."""
    text = direct_text(found, language) or ""
    return cite(text[:1].upper() + text[1:], found.doc_ids)


def direct_text(found: DirectAnswer | None, language: str) -> str | None:
    """The `direct_answer` of the output contract: the short answer without its citations."""
    if found is None:
        return None
    return phrase(language, found.method) if found.method in ("yes", "no") else found.text


def side_label(side: str, others: list[str]) -> str:
    """The names a side of a comparison holds and the other sides do not ("Google" of "the ROAS of Google
    campaigns" beside "the ROAS of the TikTok")."""
    elsewhere = {fold(w) for other in others for w in other.split()}
    return " ".join(w for w in side.split() if w[:1].isupper() and fold(w) not in elsewhere).strip(" ,.;:?")


def answer_by_part(parts: list[str], chunks: list[Chunk], language: str, analyzer: Analyzer, policy,
                   relevance: Callable[[list[str]], list[float]] | None = None,
                   compares: bool = False) -> DirectAnswer | None:
    """A question whose parts ask for values or dates ("Qual foi a receita … e quanto cresceu …?") is
    answered with each such part's own, from the sentences ranked by that part's words: "R$ 93.587.114,46;
    11,1%" — or, when one part asks for one ("What is the return rate and the main reason?"), with that
    part's. When the question `compares` its parts ("Compare o ROAS das campanhas do TikTok e do Google"),
    each side is given the value of the measure it names, labelled by the name only it holds: "TikTok:
    ROAS 4,2; Google: ROAS 5.6". None when no part gets one, or when they do not fit in the direct
    answer's length."""
    if len(parts) < 2:
        return None
    found: list[DirectAnswer] = []
    doc_titles = document_titles(chunks)
    settings = direct_settings(policy, language)
    for part in parts:
        form = question_form(part, language, policy.languages.question_cues)
        side = compares and form.kind not in ("how_much", "when")
        if form.kind not in ("how_much", "when") and not side:
            continue
        words = QuestionWords(part, analyzer, language)
        candidates = of_the_period(answer_candidates(words, chunks, relevance, policy.compose.direct.header_weight),
                                   part, doc_titles, policy.languages.period_units)
        if side:
            # A side is read in the documents about it, the ones whose title names it: the Pinterest report's
            # "the budget was moved to TikTok" is no figure of the TikTok campaign.
            label = side_label(part, [p for p in parts if p is not part])
            about = [c for c in candidates if label and has_any_phrase(doc_titles.get(c.doc_id, ""), [label])]
            answer = side_value(part, about or candidates, words, settings["floor"], settings["depth"])
            if answer and label:
                answer = replace(answer, text=f"{label}: {answer.text}")
        else:
            answer = direct_answer(part, form, [part], candidates, words, **settings)
        if answer and all(answer.text != f.text for f in found):
            found.append(answer)
    text = "; ".join(f.text for f in found)
    if not found or len(text.split()) > MAX_WORDS:
        return None
    doc_ids = tuple(dict.fromkeys(d for f in found for d in f.doc_ids))
    return DirectAnswer(text, doc_ids, found[0].method, found[0].sentence,
                        tuple(f.sentence for f in found[1:] if f.sentence != found[0].sentence))


def choose_points(question: str, parts: list[str], language: str, chunks: list[Chunk], candidates: list[Candidate],
                  words: QuestionWords, form: QuestionForm, first: Candidate | None, titles: dict[str, frozenset[int]],
                  period: frozenset[int], max_points: int, policy,
                  relevance: Callable[[list[str]], list[float]] | None, by_meaning: bool,
                  found: DirectAnswer | None) -> tuple[list[Candidate], list[Candidate], dict[int, int], dict[int, str]]:
    """The sentences an extractive answer quotes after its direct answer (`first`: the direct answer's own
    sentence, which leads), and the candidates they were chosen among (with those read by meaning in another
    language); the list points by the part of the question whose heading they answer, and the heading each
    list's first point is quoted with (by candidate id)."""
    cfg = policy.compose
    synonyms = policy.languages.synonyms(language)
    doc_titles = document_titles(chunks)
    units = policy.languages.period_units
    listed: dict[int, int] = {}  # a listed point's part (by the candidate's id)
    lead_in: dict[int, str] = {}  # the heading a list's first point is quoted with
    # A question of what a document is, every word of it in the document's title ("What is the return policy?"
    # beside "Globex Electronics returns policy — 2026 edition"), asks what it says too, when it wants no name and
    # no value was found. (Not one the title holds only part of: "Quais disciplinas não são aproveitáveis …?" asks
    # for the sentence that lists them, not for the regulation's first sentences.)
    held_by_title = len(titles[chunks[0]["docId"]])
    about_document = ((form.kind == "open" and held_by_title >= cfg.direct.document_share * len(words))
                      or (form.kind == "which" and not form.wants_name and found is None and held_by_title == len(words)))
    if about_document:
        picked = document_points(candidates, chunks[0], max_points, cfg.max_answer_chars, words)
    elif relevance is not None and not by_meaning and measure_elsewhere(candidates, words, form, synonyms):
        # Nothing in the question's language speaks of the measure asked ("a taxa de devolução online" beside
        # a refund case and a conversion rate): the points are the other language's, ranked by meaning.
        other_language = [c for c in chunks if in_another_language(c, language)]
        by_meaning_there = answer_candidates(words, other_language, relevance)
        picked = select_points(by_meaning_there, question, max_points, cfg.max_answer_chars, cfg.direct.point_floor,
                               first, titles, by_meaning=True, doc_titles=doc_titles, units=units,
                               covered_weight=cfg.covered_word_weight)
        candidates = [*candidates, *by_meaning_there]
    else:
        # Sentences of the documents naming what the question names, when some do ("Pinterest"): another
        # document's sentence holding the question's other words is about something else.
        # (Not for a question of several parts or a comparison: its evidence is spread over documents that each
        # name part of it, and measured on MultiHop-RAG dev this cost more evidence than it saved.)
        one_subject = len(parts) <= 1 and not form.compares
        naming = documents_naming(question, language, chunks, words.analyzer, policy) if one_subject else None
        about = [c for c in candidates if naming is None or c.doc_id in naming] or candidates
        if first is None and form.kind == "yes_no" and one_subject:
            # A yes/no question about a state ("still active?") is answered by the sentence that names it or its
            # opposite ("The campaign was paused …"), even where no yes or no could be read from it.
            asked = set(senses_named(question))
            first = next((c for c in about if not c.wordless and asked & set(senses_named(c.text))), None)
        picked = select_points(about, question, max_points, cfg.max_answer_chars, cfg.direct.point_floor,
                               first, titles, by_meaning=by_meaning, doc_titles=doc_titles,
                               period=period, units=units, covered_weight=cfg.covered_word_weight)
        if not picked and found is None:
            # Every sentence that matches only repeats its document's title ("Quais ações o playbook de
            # inverno recomenda?"): the question is about that document, which is answered by what it says.
            picked = document_points(candidates, chunks[0], max_points, cfg.max_answer_chars, words)
        elif form.kind == "open" and picked:
            passage = passage_points(candidates, chunks, picked[0], question, cfg.direct.passage_sentences)
            picked = take_in_order(passage + picked[1:], max_points, cfg.max_answer_chars)
        # A part that a heading names is answered by the list under it (its items hold none of its words).
        for part_index, heading, items in listed_points(parts, chunks, candidates, words, titles, synonyms):
            fresh = [c for c in items if all(c.text != p.text for p in picked)]
            if not fresh:
                continue
            # The whole list, within the answer's size: half a list answers the part wrongly.
            picked = take_in_order(fresh, len(picked) + len(fresh), cfg.max_answer_chars, picked)
            listed.update({id(c): part_index for c in fresh if c in picked})
            lead_in[id(fresh[0])] = heading
    return picked, candidates, listed, lead_in


def parts_left_open(parts: list[str], by_list: set[str], chunks: list[Chunk], language: str, analyzer: Analyzer,
                    policy, part_leads: dict[str, Chunk] | None,
                    by_meaning: bool) -> tuple[list[str], dict[str, Chunk]]:
    """The parts of the question the answer names as missing, and those it points to a document in another
    language (by part). `by_list`: parts answered by the list under a heading that names them.
    A part's words cannot be looked for in text of another language. When the answer was chosen by meaning
    (`by_meaning`: its best evidence is in another language), such text may hold any part: none is named
    missing. Otherwise a part nothing in the question's language covers is pointed to the text in another
    language its own search ranked first by meaning (`part_leads`; "a taxa atual de devolução": the English
    returns report), or, when that search ranked text in the question's language first, named missing."""
    synonyms = policy.languages.synonyms(language)
    uncovered = [p for p in uncovered_parts(parts, chunks, language, analyzer, synonyms, policy.languages.question_cues,
                                            pointing_words(policy, language, chunks))
                 if p not in by_list]
    leads = part_leads or {}
    other_language_at_hand = any(in_another_language(c, language) for c in chunks)
    elsewhere: dict[str, Chunk] = {}
    missing: list[str] = []
    if not by_meaning or not other_language_at_hand:
        for part in uncovered:
            lead = leads.get(part)
            if lead is not None and in_another_language(lead, language):
                elsewhere[part] = lead
            elif lead is not None or not other_language_at_hand:
                missing.append(part)
    return missing, elsewhere


# A little over a page, most of it its docstring: the order of reading (direct answer, points, parts left
# open, completeness) is the algorithm; each step is a function.
def extractive_answer(question: str, sub_queries: list[str], language: str, chunks: list[Chunk], analyzer: Analyzer,
                      policy, relevance: Callable[[list[str]], list[float]] | None = None,
                      part_leads: dict[str, Chunk] | None = None, reply_language: str | None = None,
                      part_names: Mapping[str, str] | None = None, give_direct: bool = True,
                      direct: DirectAnswer | None = None) -> ExtractiveAnswer:
    """The deterministic answer: the direct answer first (when the evidence gives one), then only the
    points that support it or answer another part of the question, then the parts nothing covers.
    `relevance` (`meaning_relevance`, for evidence in another language): when the best chunk is in
    another language, sentences are ranked and chosen by meaning as well as by words; otherwise only
    when nothing in the question's language speaks of the measure it asks for (`measure_elsewhere`).
    `part_leads` (`part_leads`): the chunk each part's own search ranked first by meaning; a part nothing in the question's language covers, whose lead is in another
    language, is pointed to that document rather than said missing. `reply_language` (default `language`):
    the language the answer's own words are in, when the question was put into its evidence's language
    (`read_in_evidence_language`); `part_names`: how the reply names those parts (the asker's words).
    `give_direct` false: no direct answer (one the reader did not confirm), the points chosen as without one;
    `direct`: this direct answer (the reader's), not the extractor's."""
    cfg = policy.compose
    reply = reply_language or language
    named = part_names or {}
    synonyms = policy.languages.synonyms(language)
    words = QuestionWords(" ".join([question, *sub_queries]), analyzer, language, synonyms)
    # The direct answer reads each sentence with its document's title; the points do not (a title that
    # holds the question's words would bring in more of its document's sentences, cited for nothing).
    by_meaning = relevance is not None and answered_by_meaning(chunks, language)
    ranking_relevance = relevance if by_meaning else None
    candidates, titled = answer_rankings(words, chunks, ranking_relevance, (0.0, cfg.direct.header_weight))
    if not candidates:
        return ExtractiveAnswer([], None, False, [])
    form = question_form(question, language, policy.languages.question_cues)
    parts = sub_queries if len(sub_queries) > 1 else split_question(question, policy, language)
    doc_titles = document_titles(chunks)
    units = policy.languages.period_units
    # Nothing of another period than the question names, the direct answer included.
    # A yes/no question that compares ("Does X report …, while Y …?") asks yes or no, not each side's value.
    found = direct
    if give_direct and direct is None:
        found = (answer_by_part(parts, chunks, language, analyzer, policy, ranking_relevance,
                                form.compares and form.kind in ("open", "which", "how_much"))
                 or direct_answer(question, form, parts, of_the_period(titled, question, doc_titles, units), words,
                                  **direct_settings(policy, language), titles=doc_titles))
    source = next((c for c in candidates if found and c.text == found.sentence), None)
    read = [c for c in candidates if found and c.text in found.sentences]  # where the direct answer was read
    # The direct answer's sentence follows it when it says more than the direct answer does.
    first = source if source and len(found.text.split()) < 0.5 * len(source.text.split()) else None
    # A short answer needs a point per part of the question; an explanation may take more.
    max_points = (min(cfg.direct.max_points, len(parts) + 1) if form.wants_short_answer
                  else cfg.max_sentences)
    titles = {c["docId"]: words.held(chunk_title(c)) for c in chunks}
    period = period_words(words, policy)
    picked, candidates, listed, lead_in = choose_points(question, parts, language, chunks, candidates, words, form,
                                                       first, titles, period, max_points, policy, relevance,
                                                       by_meaning, found)
    if found and found.method not in ("yes", "no") and not listed:
        # After a direct answer come its evidence and what answers the parts it leaves open, not the
        # other sentences that share the question's words ("Indicadores acompanhados…" after the
        # category's sales; a national retail figure after "the Northeast").
        open_words = unanswered_words(parts, read, words, titles)
        picked = [c for c in picked if c is source or states_answer(c.text, found) or c.terms & open_words]
    if source and first is None:
        picked = [c for c in picked if c is not source]
    if found and found.also_from:
        # Each further part's value is shown where it was read, after the first part's sentence.
        also = [next(c for c in candidates if c.text == text) for text in found.also_from
                if any(c.text == text for c in candidates)]
        picked = (picked[:1] + also + [c for c in picked[1:] if c not in also])[:max(max_points, 1 + len(also))]
    lines: list[str] = []
    if found:
        lines += [direct_line(found, reply), ""]
    order = {id(c): i for i, c in enumerate(candidates)}
    if form.compares and len(parts) > 1:
        picked.sort(key=lambda c: listed.get(id(c), part_of(c, parts, words)))
    elif found is None and form.kind != "open" and not listed:  # an explanation keeps its passage in order
        # A value question opens with a sentence that gives a value ("net sales reached $968.3 million"),
        # not with a better-ranked one that only speaks of the subject ("the strongest growth since 2021").
        valued = {id(c) for c in picked if form.kind == "how_much" and holds_value(c.text, policy.languages.months)}
        best = min(picked, key=lambda c: (bool(valued) and id(c) not in valued, order[id(c)]), default=None)
        picked.sort(key=lambda c: (c is not best, c.rank, order[id(c)]))
    lines += [f"- {cite(' '.join(filter(None, [lead_in.get(id(c)), c.text])), [c.doc_id])}" for c in picked]
    # A part answered by the list under a heading that names it is covered, whatever words the list uses.
    by_list = {parts[i] for i in listed.values()}
    missing, elsewhere = parts_left_open(parts, by_list, chunks, language, analyzer, policy, part_leads, by_meaning)
    if missing:
        lines += ["", phrase(reply, "missing_part",
                             parts=", ".join(f"«{named.get(p, p).strip(' ?')}»" for p in missing))]
    for part, lead in elsewhere.items():
        lines += ["", phrase(reply, "part_in_other_language", part=f"«{named.get(part, part).strip(' ?')}»",
                             doc_id=lead["docId"])]
    unanswered = [*missing, *elsewhere]
    complete = not unanswered and answers_every_part([p for p in parts or [question] if p not in by_list] or [question],
                                                     read + picked, found is not None, words, titles, language,
                                                     policy.languages.question_cues, synonyms, cfg.long_part_words,
                                                     period)
    return ExtractiveAnswer(lines, found, complete, unanswered)


def converging_name(question: str, sub_queries: list[str], language: str, chunks: list[Chunk], analyzer: Analyzer,
                    policy) -> bool:
    """A question asking for a name, whose chunks all score below the relevance floor, is still answered
    by them when its direct answer is a name at least `compose.direct.converging_documents` of their
    documents write (its last word, whole): a long question that paraphrases every clause scores low even
    over the right articles, and several documents agreeing on one name are evidence that one weak chunk
    is not."""
    needed = policy.compose.direct.converging_documents
    if not needed or not chunks or not question_form(question, language, policy.languages.question_cues).wants_name:
        return False
    found = extractive_answer(question, sub_queries, language, chunks, analyzer, policy).found
    if found is None or found.method != "name":
        return False
    last = found.text.split()[-1]
    writing = {c["docId"] for c in chunks if has_any_phrase(c["content"], [last])}
    return len(writing) >= needed
