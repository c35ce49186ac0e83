"""compose: an answer only from the reranked chunks, every claim followed by its `[doc_id]`.

The answer opens with the direct answer when the evidence gives one (graph/algorithms/direct_answer.py:
the value, date, name or yes/no the question asks for, cited; one value per part when it asks for
several: "R$ 93.587.114,46; 11,1%"), then lists only the points that support
it or answer another part of the question: a sentence of another period than the question names, far
below the best one, or adding nothing new is left out, so length follows the question, not the context
budget. A part of the question no point covers is named as missing; a comparison lists its sides in
order. It also decides the coverage level, resolves conflicting versions of one asset (higher score,
then newer date, said in one sentence when the answer uses the winner) and, with low or no coverage,
gives exactly three concrete suggestions. It says "nothing found" only when it has nothing to say.

With a chat model (`RAGATE_CHAT_MODEL`), the model writes the answer from the same relevant chunks
under the rules of `prompts/compose.yaml`, token by token: the tokens reach LangGraph's
`stream_mode="messages"` (a preview; the judged `answer` in the final state is what counts). Coverage,
conflict resolution and suggestions stay deterministic. The prompt asks the model to open with the
direct answer: when its draft does (`draft_direct_answer`: a short first line, cited, or a yes/no to a
yes/no question; its values pass the groundedness checks with the rest), that is `direct_answer`; when
it does not, the deterministic direct answer is `direct_answer` and is put on top of the draft. An empty reply, one citing nothing or an id
that was not retrieved, one the judge's hard checks would block (an invented value, an uncited fact),
or a failing model gives the extractive answer, with the reason in `errors`. A model that streams
on and on fails too: the whole answer must arrive within the provider timeout (per retry), as a
non-streamed reply must; the client's own timeout only bounds the wait for each piece.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from string import Template
from typing import Any, NamedTuple

import numpy as np
from langgraph.runtime import Runtime

from graph.algorithms.decomposition import split_question
from graph.algorithms.direct_answer import (
    MAX_WORDS,
    AskedMeasure,
    Candidate,
    DirectAnswer,
    QuestionWords,
    direct_answer,
    holds_value,
    names_in,
    rankings,
    side_value,
    states_answer,
)
from graph.algorithms.judging import checker_for, sources_of
from graph.algorithms.passages import block_after, claim_sentences
from graph.algorithms.question_form import KINDS, QuestionForm, asked_act, question_form
from graph.algorithms.text import (
    YEAR,
    Analyzer,
    citations_in,
    fold,
    get_analyzer,
    has_any_phrase,
    ring_mates,
    strip_citations,
    with_synonyms,
)
from graph.context import Context
from graph.policy import ComposeSettings, DenseCalibration
from graph.prompts import llm_prompt, phrase, phrases
from graph.providers.chat import chat_model
from graph.providers.resources import embeddings_for
from graph.providers.specs import ProviderError, failure_reason
from graph.providers.translation import translator_for
from graph.runtime.run_policy import run_policy
from graph.runtime.tenant_binding import run_context
from graph.runtime.timing import timed
from graph.state import Chunk, SearchResult, State


def is_relevant(chunk: Chunk, cfg: ComposeSettings) -> bool:
    """The chunk's score reaches the relevance floor of its scale (its embedding model's, set by rerank;
    else `compose.relevance_floor`)."""
    return chunk["rerankScore"] >= chunk.get("relevanceFloor", cfg.relevance_floor)


def coverage_level(chunks: list[Chunk], cfg: ComposeSettings) -> str:
    """high: 3+ docs, mean ≥ 0.7; medium: 2+ docs, mean ≥ 0.5; low: 1+ relevant doc; none otherwise."""
    best_per_doc: dict[str, float] = {}
    for c in chunks:
        if is_relevant(c, cfg):
            best_per_doc[c["docId"]] = max(best_per_doc.get(c["docId"], 0.0), c["rerankScore"])
    if not best_per_doc:
        return "none"
    n, mean = len(best_per_doc), sum(best_per_doc.values()) / len(best_per_doc)
    high, medium = cfg.coverage.high, cfg.coverage.medium
    if n >= high.min_docs and mean >= high.min_mean_score:
        return "high"
    if n >= medium.min_docs and mean >= medium.min_mean_score:
        return "medium"
    return "low"


def _date_key(chunk: Chunk) -> str:
    meta = chunk.get("metadata") or {}
    return str(meta.get("date") or meta.get("version") or "")


def _names_year(question: str, chunk: Chunk) -> bool:
    """The question names the year of the chunk's version (its date's or version's first four digits)."""
    year = _date_key(chunk)[:4]
    return bool(year) and re.search(rf"\b{re.escape(year)}\b", question) is not None


def resolve_conflicts(chunks: list[Chunk], language: str, question: str = "") -> tuple[list[Chunk], list[str]]:
    """Two documents of one asset (e.g. the 2025 and 2026 playbook) may disagree: keep the one with
    the higher score, then the newer date, and say so in one sentence. A version whose year the
    question names is what the user asked about, so it is never dropped ("compare 2025 and 2026");
    when the question names the kept version's year only, the others are dropped without a note (they
    are another period, not another opinion)."""
    by_asset: dict[str, list[Chunk]] = {}
    for c in chunks:
        by_asset.setdefault(c.get("assetId") or c["docId"], []).append(c)
    dropped: set[str] = set()
    notes: list[str] = []
    for asset, members in by_asset.items():
        docs: dict[str, Chunk] = {}
        for c in members:
            if c["docId"] not in docs or c["rerankScore"] > docs[c["docId"]]["rerankScore"]:
                docs[c["docId"]] = c
        if len(docs) < 2:
            continue
        best = max(docs.values(), key=lambda c: c["rerankScore"])
        # Within 0.05 the scores are a tie: the newer version wins.
        close = [c for c in docs.values() if best["rerankScore"] - c["rerankScore"] <= 0.05]
        winner = max(close, key=_date_key) if len(close) > 1 else best
        reason_key = "conflict_reason_date" if len(close) > 1 else "conflict_reason_score"
        for loser in (c for c in docs.values() if c["docId"] != winner["docId"]):
            if _names_year(question, loser):
                continue
            dropped.add(loser["docId"])
            if _names_year(question, winner):
                # "o playbook de inverno 2026": the 2025 version is another period, not a disagreement.
                continue
            notes.append(phrase(language, "conflict", asset=winner.get("assetName") or asset, winner=winner["docId"],
                                reason=phrases(language)[reason_key], loser=loser["docId"]))
    return [c for c in chunks if c["docId"] not in dropped], notes


_SQUARE = str.maketrans("[]", "()")


def _cite(sentence: str, doc_ids: Sequence[str]) -> str:
    """'Sales grew 10%.' -> 'Sales grew 10% [doc].' Square brackets the document wrote ("in Arrowhead
    [Stadium]", "[sic]") become round ones: in an answer, square brackets hold citations."""
    sentence = sentence.translate(_SQUARE)
    end = sentence[-1] if sentence[-1] in ".!?" else "."
    body = sentence[:-1] if sentence[-1] in ".!?" else sentence
    marks = " ".join(f"[{d}]" for d in doc_ids)
    return f"{body.rstrip()} {marks}{end}"


def answer_candidates(question: QuestionWords, chunks: list[Chunk],
                      relevance: Callable[[list[str]], list[float]] | None = None,
                      header_weight: float = 0.0) -> list[Candidate]:
    """Every quotable sentence of the relevant chunks, ranked by its share of the question (best first;
    the question words its chunk's title holds count at `header_weight`), averaged with `relevance`
    (each sentence's meaning-based relevance, 0–1) when given; then a sentence in another language than
    the question is ranked by meaning alone."""
    return answer_rankings(question, chunks, relevance, (header_weight,))[0]


def answer_rankings(question: QuestionWords, chunks: list[Chunk],
                    relevance: Callable[[list[str]], list[float]] | None,
                    header_weights: Sequence[float]) -> list[list[Candidate]]:
    """`answer_candidates` once per header weight, each sentence read and scored by the model once."""
    rows = [(chunk["docId"], sentence, rank, chunk["rerankScore"], in_another_language(chunk, question.language),
             _title(chunk)) for rank, chunk in enumerate(chunks) for _, sentence in claim_sentences(chunk["content"])]
    return rankings(question, [r[:4] for r in rows], relevance, [r[4] for r in rows], [r[5] for r in rows],
                    header_weights)


def answered_by_meaning(chunks: list[Chunk], language: str) -> bool:
    """The best evidence is in another language than the question: the answer is chosen by meaning."""
    return bool(chunks) and in_another_language(chunks[0], language)


def in_another_language(chunk: Chunk, language: str) -> bool:
    """The chunk's text is in another language than the question (its metadata says which)."""
    return ((chunk.get("metadata") or {}).get("language") or language) != language


def meaning_relevance(question: str, embeddings: Any,
                      calibration: DenseCalibration) -> Callable[[list[str]], list[float]]:
    """Each sentence's relevance to the question by meaning: the multilingual sentence embedder's cosine,
    scaled 0–1 like the reranker's dense signal (`calibration`). Words cannot match across languages,
    so this is how an English question finds its answer in a Portuguese sentence, and the reverse."""
    span = max(1e-9, calibration.ceiling - calibration.floor)

    def score(texts: list[str]) -> list[float]:
        q = np.asarray(embeddings.embed_query(question), dtype=np.float64)
        m = np.asarray(embeddings.embed_documents(texts), dtype=np.float64).reshape(len(texts), -1)
        cosine = (m @ q) / np.maximum(1e-9, np.linalg.norm(m, axis=1) * np.linalg.norm(q))
        return [min(1.0, max(0.0, (c - calibration.floor) / span)) for c in cosine.tolist()]

    return score


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


def document_titles(chunks: list[Chunk]) -> dict[str, str]:
    """Each document's title (its asset's name), by document id: the period a sentence speaks of is often
    only there."""
    return {c["docId"]: str(c.get("assetName") or "") for c in chunks}


def of_the_period(candidates: list[Candidate], question: str, doc_titles: dict[str, str],
                  units: Mapping[str, Sequence[str]] | None = None) -> list[Candidate]:
    """The candidates not of another period than the question names (`off_period`, each read with its
    document's title)."""
    asked = _period_asked(question, units)
    return [c for c in candidates if not _other_period(asked, f"{doc_titles.get(c.doc_id, '')} {c.text}", units)]


def select_points(candidates: list[Candidate], question: str, max_points: int, max_chars: int,
                  point_floor: float, first: Candidate | None = None,
                  given: dict[str, frozenset[int]] | None = None, by_meaning: bool = False,
                  doc_titles: dict[str, str] | None = None, period: frozenset[int] = frozenset(),
                  units: Mapping[str, Sequence[str]] | None = None) -> list[Candidate]:
    """The sentences that address the question, greedily: each pick adds the most IDF weight of question
    words not yet covered (covered ones count a third). A sentence below `point_floor` of the best
    one's score, of another period than the question names, or adding no new word is left out: it
    shares words with the question without answering it. `given`: per document, the question words
    its title already names ("playbook de inverno 2026"), which its sentences get no credit for.
    `first` (the direct answer's sentence) leads. `by_meaning` (the candidates are scored by meaning, not
    only by words, because the evidence is in another language): words cannot say what a sentence adds
    there, so the points are the best-scoring sentences, each once; otherwise a sentence in another
    language is not a point. `doc_titles` (`document_titles`): a sentence is dated by its document's title
    too; `units`: the spans of a year (`off_period`). `period`: the question words that only say when
    ("Q1", "2026", "trimestre"): a sentence that adds none but those shares the question's period, not its
    subject ("Spend in Q1 2026: R$ 286 thousand" after the app's growth, for "Which channel grew fastest
    in Q1 2026?")."""
    given = given or {}
    pool = of_the_period(candidates, question, doc_titles or {}, units)
    if not pool:
        return [first] if first else []
    best_score = pool[0].score
    pool = [c for c in pool if c.score >= point_floor * best_score]
    if by_meaning:
        return take_in_order(pool, max_points, max_chars, [first] if first else [])
    # Nor can words say what a sentence in another language adds: a year or a cognate ("compared" for
    # "compare") is all it shares with the question. Without its meaning to rank it by, it is left out.
    pool = [c for c in pool if not c.wordless]
    n = len(candidates)
    words = set().union(*(c.terms for c in candidates))
    idf = {i: math.log(1 + n / (1 + sum(1 for c in candidates if i in c.terms))) for i in words}

    def new_words(c: Candidate, covered: set[int]) -> set[int]:
        return set(c.terms) - covered - given.get(c.doc_id, frozenset())

    def gain(c: Candidate, covered: set[int]) -> float:
        return sum(idf[i] * (0.35 if i in covered else 1.0) for i in c.terms) * (0.5 + 0.5 * c.score)

    picked: list[Candidate] = [first] if first else []
    covered: set[int] = set(first.terms) if first else set()
    used = len(first.text) if first else 0
    remaining = [c for c in pool if not first or c.text != first.text]
    while remaining and len(picked) < max_points:
        best = max(remaining, key=lambda c: gain(c, covered))
        remaining.remove(best)
        if not new_words(best, covered) - period:
            continue  # everything it holds is said already, is the document's own title, or is the period
        if used + len(best.text) > max_chars and picked:
            continue
        picked.append(best)
        used += len(best.text)
        covered |= best.terms
    return picked


def measure_elsewhere(candidates: list[Candidate], words: QuestionWords, form: QuestionForm,
                      synonyms: Sequence[Sequence[str]]) -> bool:
    """The question names a measure (`form.measure`) that no sentence in its language speaks of
    (`AskedMeasure.held_by`, the word narrowing it included), while sentences in another language are at hand."""
    if not form.measure or not any(c.wordless for c in candidates):
        return False
    measure = AskedMeasure.of(form, words, synonyms)
    return not any(measure.held_by(c) for c in candidates if not c.wordless)


def period_words(words: QuestionWords, policy) -> frozenset[int]:
    """The question words that only say when: numbers ("2026", "Q1"), months and the policy's time words
    ("trimestre", "quarter"), as indexes into `words`."""
    cues = policy.languages.question_cues.get(words.language)
    timely = {fold(w) for names in policy.languages.months.values() for w in names}
    timely |= {fold(w) for w in (cues.time_words if cues else ())}
    return frozenset(i for i, (w, _) in enumerate(words.words) if any(ch.isdigit() for ch in w) or fold(w) in timely)


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


def direct_line(found: DirectAnswer, language: str) -> str:
    """The answer's first line: the direct answer, cited."""
    text = direct_text(found, language) or ""
    return _cite(text[:1].upper() + text[1:], found.doc_ids)


def direct_text(found: DirectAnswer | None, language: str) -> str | None:
    """The `direct_answer` of the output contract: the short answer without its citations."""
    if found is None:
        return None
    return phrase(language, found.method) if found.method in ("yes", "no") else found.text


class ExtractiveAnswer(NamedTuple):
    """The deterministic answer's lines, its direct answer (None: abstained), whether its sentences
    answer every part of the question (`answers_every_part`) and the parts it names as missing."""

    lines: list[str]
    found: DirectAnswer | None
    complete: bool
    missing_parts: list[str]


def extractive_answer(question: str, sub_queries: list[str], language: str, chunks: list[Chunk], analyzer: Analyzer,
                      policy, relevance: Callable[[list[str]], list[float]] | None = None,
                      part_leads: dict[str, Chunk] | None = None, reply_language: str | None = None,
                      part_names: Mapping[str, str] | None = None) -> ExtractiveAnswer:
    """The deterministic answer: the direct answer first (when the evidence gives one), then only the
    points that support it or answer another part of the question, then the parts nothing covers.
    `relevance` (`meaning_relevance`, for evidence in another language): when the best chunk is in
    another language, sentences are ranked and chosen by meaning as well as by words; otherwise only
    when nothing in the question's language speaks of the measure it asks for (`measure_elsewhere`).
    `part_leads` (`part_leads`): the chunk each part's own search ranked first by meaning; a part nothing in the question's language covers, whose lead is in another
    language, is pointed to that document rather than said missing. `reply_language` (default `language`):
    the language the answer's own words are in, when the question was put into its evidence's language
    (`read_in_evidence_language`); `part_names`: how the reply names those parts (the asker's words)."""
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
    titles = {c["docId"]: words.held(_title(c)) for c in chunks}
    period = period_words(words, policy)
    listed: dict[int, int] = {}  # a listed point's part (by the candidate's id)
    lead_in: dict[int, str] = {}  # the heading a list's first point is quoted with
    if form.kind == "open" and len(titles[chunks[0]["docId"]]) >= cfg.direct.document_share * len(words):
        picked = document_points(candidates, chunks[0], max_points, cfg.max_answer_chars, words)
    elif relevance is not None and not by_meaning and measure_elsewhere(candidates, words, form, synonyms):
        # Nothing in the question's language speaks of the measure asked ("a taxa de devolução online" beside
        # a refund case and a conversion rate): the points are the other language's, ranked by meaning.
        other_language = [c for c in chunks if in_another_language(c, language)]
        by_meaning_there = answer_candidates(words, other_language, relevance)
        picked = select_points(by_meaning_there, question, max_points, cfg.max_answer_chars, cfg.direct.point_floor,
                               first, titles, by_meaning=True, doc_titles=doc_titles, units=units)
        candidates = [*candidates, *by_meaning_there]
    else:
        picked = select_points(candidates, question, max_points, cfg.max_answer_chars, cfg.direct.point_floor,
                               first, titles, by_meaning=by_meaning, doc_titles=doc_titles,
                               period=period, units=units)
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
        picked.sort(key=lambda c: listed.get(id(c), _part_of(c, parts, words)))
    elif found is None and form.kind != "open" and not listed:  # an explanation keeps its passage in order
        # A value question opens with a sentence that gives a value ("net sales reached $968.3 million"),
        # not with a better-ranked one that only speaks of the subject ("the strongest growth since 2021").
        valued = {id(c) for c in picked if form.kind == "how_much" and holds_value(c.text, policy.languages.months)}
        best = min(picked, key=lambda c: (bool(valued) and id(c) not in valued, order[id(c)]), default=None)
        picked.sort(key=lambda c: (c is not best, c.rank, order[id(c)]))
    lines += [f"- {_cite(' '.join(filter(None, [lead_in.get(id(c)), c.text])), [c.doc_id])}" for c in picked]
    # A part answered by the list under a heading that names it is covered, whatever words the list uses.
    by_list = {parts[i] for i in listed.values()}
    uncovered = [p for p in uncovered_parts(parts, chunks, language, analyzer, synonyms, policy.languages.question_cues,
                                            pointing_words(policy, language, chunks))
                 if p not in by_list]
    # A part's words cannot be looked for in text of another language. When the answer was chosen by meaning
    # (its best evidence is in another language), such text may hold any part: none is named missing.
    # Otherwise a part nothing in the question's language covers is pointed to the text in another language
    # its own search ranked first by meaning ("a taxa atual de devolução": the English returns report), or,
    # when that search ranked text in the question's language first, named missing.
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


def unattested_measure(measure: str, language: str, chunks: list[Chunk], analyzer: Analyzer) -> str | None:
    """The measure a value question asks for (`QuestionForm.measure`: "salário" of "Qual é o salário médio
    …?") when no relevant chunk in the question's language, title included, holds it; None otherwise, and
    always when the best evidence is in another language (its words cannot be looked for, and it was
    chosen by meaning). Text in another language ranked below text in the question's language that does
    not speak of the measure is no sign that it is answered ("What is the average salary of Acme store
    staff?" over the English channel report and Portuguese playbooks)."""
    if not measure or not chunks or answered_by_meaning(chunks, language):
        return None
    asked = analyzer.terms(measure, language)
    held = any(asked & analyzer.terms(f"{_title(c)} {c['content']}", language) for c in chunks
               if not in_another_language(c, language))
    return None if held or not asked else measure


def question_names(question: str, language: str, analyzer: Analyzer, months: Sequence[str] = ()) -> list[str]:
    """The names a question speaks of (`names_in`: runs of capitalised words, "Does the TechCrunch" →
    "TechCrunch", "Google's" → "Google"), but not its first word ("Quais", "Which") nor a month."""
    found = names_in(question, lambda token: not analyzer.terms(token, language))
    return list(dict.fromkeys(name for name, opening in found if not opening and fold(name) not in months))


def unattested_names(question: str, language: str, chunks: list[Chunk], analyzer: Analyzer, policy,
                     named_sources: Sequence[str] = ()) -> list[str]:
    """The names the question speaks of ("Dia das Mães" of "Quais foram as vendas da Acme no Dia das
    Mães de 2025?") that no relevant chunk holds, in its text, title or metadata; the sources the source
    check looked at (`sources_named`) aside. A chunk holds a name when it holds most of its words ("Acme
    Moda S.A." is held by "Acme Moda": the question may write a name more fully than the documents do;
    "Dia das Mães" is not held by "no mesmo dia"). Empty when some evidence is in another language: a name
    may be translated there."""
    if not chunks or any(in_another_language(c, language) for c in chunks):
        return []
    months = {fold(m) for names in policy.languages.months.values() for m in names}
    sources = {fold(s) for s in named_sources}
    names = [n for n in question_names(question, language, analyzer, months) if fold(n) not in sources]
    if not names:
        return []
    texts = [_chunk_text(c) for c in chunks]
    return [n for n in names if not any(_holds_name(t, n, analyzer, language) for t in texts)]


def _holds_name(text: str, name: str, analyzer: Analyzer, language: str) -> bool:
    """`text` holds the whole name, or more than half of its words (its connectors, "das", "of", aside)."""
    if has_any_phrase(text, [name]):
        return True
    tokens = [w for w in name.split() if analyzer.terms(w, language) or not w.islower()]
    return len(tokens) > 1 and sum(has_any_phrase(text, [w]) for w in tokens) * 2 > len(tokens)


def unattested_subject(question: str, language: str, sub_queries: list[str], chunks: list[Chunk], analyzer: Analyzer,
                       policy, named_sources: Sequence[str] = ()) -> list[str]:
    """What a question asking for a value or a date asks about that no relevant chunk holds: the measure
    of a value question (`unattested_measure`), else, for a question that was not split in parts, the
    names and years it speaks of (`unattested_names`, `unattested_years`). Empty when the evidence holds
    them all. A split question's parts may each be answered by other documents, and a yes/no or
    which-question's names are what it claims or compares (MultiHop-RAG dev: looking for every
    short-answer question's names sent 9.5% of the answerable questions to none instead of 3.4%, and no
    more unanswerable ones), so neither is looked at."""
    form = question_form(question, language, policy.languages.question_cues)
    measure = unattested_measure(form.measure, language, chunks, analyzer)
    if measure:
        return [measure]
    if form.kind not in ("how_much", "when") or len(sub_queries) > 1:
        return []
    return [*unattested_names(question, language, chunks, analyzer, policy, named_sources),
            *unattested_years(question, chunks)]


def unattested_years(question: str, chunks: list[Chunk]) -> list[str]:
    """The years the question names ("Qual é o orçamento de mídia da Acme para 2027?") that no relevant chunk
    holds, in its text, title or metadata. A year reads the same in every language: unlike a name, it is
    looked for in text in another language too."""
    asked = list(dict.fromkeys(YEAR.findall(question)))
    if not asked or not chunks:
        return []
    held = set(YEAR.findall(" ".join(map(_chunk_text, chunks))))
    return [year for year in asked if year not in held]


def _chunk_text(chunk: Chunk) -> str:
    """What a chunk says and is labelled with: its title, its text and its metadata's text values."""
    metadata = (chunk.get("metadata") or {}).values()
    return " ".join([_title(chunk), chunk["content"], *(str(v) for v in metadata if isinstance(v, str))])


def answer_coverage(evidence: str, answer: ExtractiveAnswer, chunks: list[Chunk], cfg: ComposeSettings) -> str:
    """The coverage level the answer earns: the evidence's (`coverage_level`), at most "low" when a part of
    the question is named missing, and at least "medium" when one strong document (best score at least
    the medium level's mean) answers every part: corroboration by more documents is what "high" adds,
    and a complete answer from one source is not a low-coverage one."""
    if answer.missing_parts:
        return "low" if evidence in ("high", "medium") else evidence
    best = max((c["rerankScore"] for c in chunks if is_relevant(c, cfg)), default=0.0)
    if evidence == "low" and answer.complete and best >= cfg.coverage.medium.min_mean_score:
        return "medium"
    return evidence


def direct_settings(policy, language: str) -> dict[str, Any]:
    """`direct_answer`'s lexicons and thresholds, from the policy."""
    cfg = policy.compose.direct
    return dict(months=policy.languages.months, negations=policy.languages.negations.get(language, ()),
                floor=cfg.sentence_floor, depth=cfg.depth, part_floor=cfg.part_floor, name_floor=cfg.name_floor,
                name_margin=cfg.name_margin, own_language_margin=cfg.own_language_margin, on_topic=cfg.point_floor,
                synonyms=policy.languages.synonyms(language),
                number_words=policy.languages.number_words.get(language, {}))


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


def side_label(side: str, others: list[str]) -> str:
    """The names a side of a comparison holds and the other sides do not ("Google" of "the ROAS of Google
    campaigns" beside "the ROAS of the TikTok")."""
    elsewhere = {fold(w) for other in others for w in other.split()}
    return " ".join(w for w in side.split() if w[:1].isupper() and fold(w) not in elsewhere).strip(" ,.;:?")


def _title(chunk: Chunk) -> str:
    """The chunk's title line (title | source | date), else its asset's name."""
    return str((chunk.get("metadata") or {}).get("header") or chunk.get("assetName") or "")


_HEADING = re.compile(r"^[^\n.!?]{2,80}:[ \t]*$", re.MULTILINE)


def document_points(candidates: list[Candidate], chunk: Chunk, max_points: int, max_chars: int,
                    words: QuestionWords | None = None) -> list[Candidate]:
    """A question about a document ("What does the 2026 winter playbook recommend?") is answered by what
    the document says: its chunk's sentences in their order, within the answer's size (all of them: the
    document is the one asked about, so a sentence of it citing another year is still its content). A
    heading that holds a word of the question ("Ações recomendadas:") introduces what it asks for: the
    sentences under it come first; without one, the sentences from the best one holding a word of the
    question its title does not hold."""
    content = chunk["content"]
    own = [c for c in candidates if c.rank == 0 and c.doc_id == chunk["docId"]]
    title = words.held(_title(chunk)) if words else frozenset()
    anchor = next((m.start() for m in _HEADING.finditer(content)
                   if words and words.held(m.group(0)) - title), None)
    if anchor is None and words:
        # No heading says where, but a sentence holds what the question asks beyond the document's title
        # ("Do que se tratam as atividades complementares?": "… trata-se de atividades que não constam …"):
        # the document is read from the best such sentence on.
        asked = next((c for c in own if c.terms - title), None)
        anchor = content.find(asked.text) if asked else None
    own.sort(key=lambda c: (anchor is None or content.find(c.text) < anchor, content.find(c.text)))
    return take_in_order(own, max_points, max_chars)


def passage_points(candidates: list[Candidate], chunks: list[Chunk], best: Candidate, question: str,
                   after: int) -> list[Candidate]:
    """`best` and up to `after` sentences that follow it in its chunk (an explanation goes on past its
    first sentence: "A consumidora comprou …" is followed by what the judge decided), none of another
    period than the question names."""
    chunk = next((c for c in chunks if c["docId"] == best.doc_id and best.text in c["content"]), None)
    if chunk is None:
        return [best]
    start = chunk["content"].find(best.text)
    following = sorted((c for c in candidates if c.doc_id == best.doc_id and c.rank == best.rank
                        and chunk["content"].find(c.text) > start and not off_period(c.text, question)),
                       key=lambda c: chunk["content"].find(c.text))
    return [best, *following[:after]]


def listed_points(parts: list[str], chunks: list[Chunk], candidates: list[Candidate], words: QuestionWords,
                  titles: dict[str, frozenset[int]],
                  synonyms: Sequence[Sequence[str]] = ()) -> list[tuple[int, str, list[Candidate]]]:
    """What a heading lists for a part of a multi-part question: (part index, heading, the sentences under
    it, in order). A part whose own words (not its document's title's, not another part's) a heading holds,
    most of them ("quais ações o playbook recomenda" and "Ações recomendadas:"), is answered by the list
    under that heading (its numbered or bulleted lines, `block_after`), whose items hold none of those
    words and so are never chosen for them. `titles`: the question words each document's title holds. The
    first such heading of the best chunk holding one wins; one per part."""
    if len(parts) < 2:
        return []
    asked = [words.held(p) for p in parts]
    out, used = [], set()
    for i, part_words in enumerate(asked):
        others = frozenset().union(*(a for j, a in enumerate(asked) if j != i))
        for rank, chunk in enumerate(chunks):
            own = part_words - others - titles[chunk["docId"]]
            content = chunk["content"]
            heading = next((m for m in _HEADING.finditer(content)
                            if own and len(words.held(with_synonyms(m.group(0), synonyms)) & own) * 2 >= len(own)
                            and (rank, m.start()) not in used),
                           None)
            if heading is None:
                continue
            section = " ".join(block_after(content, heading.end()).split())
            items = sorted((c for c in candidates if c.rank == rank and c.text in section),
                           key=lambda c: section.find(c.text))
            if items:
                used.add((rank, heading.start()))
                out.append((i, heading.group(0).strip(), items))
                break
    return out


def take_in_order(candidates: list[Candidate], max_points: int, max_chars: int,
                  picked: list[Candidate] | None = None) -> list[Candidate]:
    """The candidates in their order after those `picked` already, each text once, up to `max_points`
    and `max_chars` (the first one whatever its size)."""
    picked = list(picked or [])
    used = sum(len(c.text) for c in picked)
    for c in candidates:
        if len(picked) >= max_points:
            break
        if any(c.text == p.text for p in picked) or (used + len(c.text) > max_chars and picked):
            continue
        picked.append(c)
        used += len(c.text)
    return picked


def _part_of(c: Candidate, parts: list[str], words: QuestionWords) -> int:
    """The index of the question part the sentence holds most of (a comparison lists its sides in order)."""
    shares = [len(words.held(p) & c.terms) for p in parts]
    return max(range(len(parts)), key=lambda i: shares[i])


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


def build_suggestions(language: str, rag: dict, chunks: list[Chunk], missing: list[str], policy_allow: list[str]) -> list[str]:
    """Exactly three concrete ways to refine the search, built from what was and was not found."""
    intents = ", ".join(policy_allow[:4]) or "knowledge"
    out = []
    if rag.get("disabled_reason") in ("intent_denied", "intent_unlisted"):
        out.append(phrase(language, "suggestion_allowed_intent", intents=intents))
    if missing:
        out.append(phrase(language, "suggestion_missing_terms", terms=", ".join(missing[:4])))
    out.append(phrase(language, "suggestion_period"))
    if chunks:
        top = chunks[0]
        out.append(phrase(language, "suggestion_closest_doc", asset=top.get("assetName") or top["docId"], doc_id=top["docId"]))
    else:
        out.append(phrase(language, "suggestion_ingest", collections=", ".join(rag.get("collections") or ["documents"])))
    if rag.get("intent_source") == "fallback":
        out.append(phrase(language, "suggestion_intent", intents=intents))
    out.append(phrase(language, "suggestion_split"))
    unique = list(dict.fromkeys(out))
    return unique[:3]


_THINKING = re.compile(r"<think>.*?(?:</think>|$)", re.S | re.I)


def _documents_block(chunks: list[Chunk]) -> str:
    return "\n\n".join(f"Document [{c['docId']}]:\n{c['content']}" for c in chunks)


class StreamTimeout(TimeoutError):
    """The streamed answer did not end within its time."""


def llm_answer(llm: Any, question: str, language: str, coverage: str, chunks: list[Chunk],
               max_tokens: int, deadline_s: float | None = None) -> tuple[str | None, str | None]:
    """(answer, None) from the chat model, streamed token by token; (None, why) when it cannot be used,
    including when the stream has not ended `deadline_s` seconds after the call."""
    from langchain_core.messages import HumanMessage, SystemMessage

    prompt = llm_prompt("compose")
    language_name = prompt["language_names"].get(language, prompt["language_names"]["en"])
    note = prompt["coverage_notes"].get(coverage, "")
    messages = [SystemMessage(Template(prompt["system"]).safe_substitute(language_name=language_name,
                                                                         example_id=chunks[0]["docId"])),
                HumanMessage(Template(prompt["user"]).safe_substitute(
                    question=question, coverage_note=note, documents=_documents_block(chunks),
                    language_name=language_name))]
    started, parts = time.monotonic(), []
    try:
        # .stream, not .invoke: each token is an on_llm_new_token event that stream_mode="messages" forwards.
        for part in llm.bind(max_tokens=max_tokens).stream(messages):
            parts.append(part.text)
            if deadline_s is not None and time.monotonic() - started > deadline_s:
                # Leaving the loop closes the stream (and its connection).
                raise StreamTimeout(f"the answer was still streaming after {deadline_s:g} s")
        text = "".join(parts)
    except Exception as exc:  # timeouts, 429/5xx after the client's retries, connection errors
        return None, f"chat model failed ({failure_reason(exc)})"
    answer = _THINKING.sub("", text).strip()
    retrieved = {c["docId"] for c in chunks}
    cited = citations_in(answer)
    if not answer:
        return None, "chat model answer empty"
    if not cited:
        return None, "chat model answer cites no [doc_id]"
    unknown = [cid for cid in cited if cid not in retrieved]
    if unknown:
        return None, f"chat model answer cites ids that were not retrieved ({', '.join(unknown[:5])})"
    return answer, None


_BULLET_OPENING = re.compile(r"^\s*(?:[-*•]|\d{1,3}[.)])\s")


def draft_direct_answer(draft: str, question: str, language: str, policy) -> str | None:
    """The direct answer a chat model's draft opens with (prompts/compose.yaml, rule 5), without its
    citations, or None: its first line is a bullet, longer than the direct answer's `MAX_WORDS`, cites
    nothing (a small model's "No. The documents do not cover this." is no answer), is a yes/no the question
    does not ask for, or says both ("Yes and no")."""
    opening = next((line for line in draft.splitlines() if line.strip()), "")
    text = strip_citations(opening).strip().rstrip(".").strip()
    if not text or _BULLET_OPENING.match(opening) or len(text.split()) > MAX_WORDS or not citations_in(opening):
        return None
    said = [fold(w) for w in re.findall(r"\w+", text)]
    yes, no = fold(phrase(language, "yes")), fold(phrase(language, "no"))
    answers_yes_no = said[0] in (yes, no)
    if answers_yes_no and {yes, no} <= set(said):
        return None
    if answers_yes_no != (question_form(question, language, policy.languages.question_cues).kind == "yes_no"):
        return None
    return text


def cross_lingual_relevance(question: str, language: str, chunks: list[Chunk], policy, ctx: Context,
                            notes: list[str]) -> Callable[[list[str]], list[float]] | None:
    """`meaning_relevance` when a chunk is in another language than the question, else None (words do the
    work). With no sentence embedder the answer stays lexical, and `notes` say so."""
    if not any(in_another_language(chunk, language) for chunk in chunks):
        return None
    try:
        embeddings = embeddings_for(ctx)
        score = meaning_relevance(question, embeddings, policy.rerank.for_model(embeddings.model_name).dense_calibration)
    except Exception as exc:
        notes.append(f"compose: sentence embedder unavailable ({failure_reason(exc)}); evidence in another "
                     "language ranked by words only")
        return None

    def guarded(texts: list[str]) -> list[float]:
        try:
            return score(texts)
        except Exception as exc:  # a failing embedder must not cost the answer: words alone rank
            notes.append(f"compose: sentence embedder failed ({failure_reason(exc)}); evidence in another "
                         "language ranked by words only")
            return [0.0] * len(texts)

    return guarded


def read_in_evidence_language(question: str, sub_queries: list[str], language: str, chunks: list[Chunk],
                              ctx: Context, margin: float, notes: list[str]) -> tuple[str, list[str], str] | None:
    """(the question, its parts, the language) put into the language of the best chunk, when that is another
    than the question's and the configured translator (`Context.translation_model`) translates between them;
    else None, and the composer ranks that evidence by meaning (`cross_lingual_relevance`). Words match
    where meaning alone chose the wrong sentence: "What is the media budget of the 2026 winter playbook?"
    was answered "Esta versão substitui o playbook de inverno 2025" by meaning, and by the words of
    "Qual é o orçamento da mídia do playbook de inverno 2026?" with its R$ 3,9 milhões. A failing
    translator leaves the meaning path, and `notes` say so."""
    if not answered_by_meaning(chunks, language):
        return None
    # Evidence in the question's language that scores close to the best is read as it is, and wins where it
    # holds what is asked (`compose.direct.own_language_margin`, as for the direct answer): "Quantos seguidores
    # … ao fim do 3º trimestre de 2025" is answered by the Portuguese report's 412 mil, not by the English
    # one's later count, read with the question in English.
    own = max((c["rerankScore"] for c in chunks if not in_another_language(c, language)), default=0.0)
    if own >= margin * chunks[0]["rerankScore"]:
        return None
    evidence_language = (chunks[0].get("metadata") or {}).get("language") or language
    try:
        translator = translator_for(ctx.translation_model)
        if translator is None or not translator.supports(language, evidence_language):
            return None
        return (translator.translate(question, language, evidence_language),
                [translator.translate(part, language, evidence_language) for part in sub_queries], evidence_language)
    except Exception as exc:  # a failing translator must not cost the answer: meaning alone ranks
        notes.append(f"compose: translation unavailable ({failure_reason(exc)}); evidence in another language "
                     "ranked by meaning")
        return None


def draft_failures(draft: str, chunks: list[Chunk], language: str, policy, ctx: Context,
                   notes: list[str] | None = None) -> str | None:
    """Why the model's draft cannot be shown, or None. The judge's own hard checks run on it first: a
    draft with an invented value, an uncited fact or a flipped negation would be blocked, and the
    extractive answer serves the user better than a refusal. Then each value's context: a real value
    of the cited document said of something else ("the salary is R$ 1,85" from a CPC of R$ 1,85).
    Unsupported wording is left to the judge (a paraphrase may be fine). A failing embedder (asked
    to rescue a paraphrase) leaves the checks lexical, and says so in `notes`."""
    try:
        embeddings = embeddings_for(ctx)
    except Exception:  # the hard checks need no embeddings
        embeddings = None
    checker, sources = checker_for(policy), sources_of(chunks)
    try:
        checks = checker.check(draft, sources, language, embeddings)
    except Exception as exc:
        if embeddings is None:
            raise
        if notes is not None:
            notes.append(f"compose: embeddings unavailable for the draft's checks ({failure_reason(exc)}); "
                         "lexical support only")
        checks = checker.check(draft, sources, language, None)
    hard = [(i, check) for i, check in enumerate(checks, start=1) if check["hard_failure"]]
    if hard:
        i, first = hard[0]
        return (f"chat model answer failed the groundedness checks in {len(hard)} claim(s) (claim {i}: "
                f"{first['reasons'][0][:160]})")
    # Stricter than the judge, because a false alarm here only costs fluency: a value must sit in a
    # cited sentence about the same thing (measured on the labelled sets: 1 of 1,716 faithful answers flagged).
    misplaced = checker.values_out_of_context(draft, sources, language,
                                              policy.compose.draft_value_context_floor)
    if misplaced:
        i, value = misplaced[0]
        return f"chat model answer puts {value} (claim {i}) in a context its cited sentences do not give it"
    return None


@timed("compose")
def compose(state: State, runtime: Runtime[Context]) -> dict:
    """Write the answer from the reranked chunks only, each claim cited `[doc_id]`.

    Reads `question`, `language`, `rag` (enabled, disabled_reason, collections), `reranked`,
    `sub_queries` (their terms count as the question's), `hits` (which chunk each part's own search
    found first: `part_leads`), `sources_named` and `sources_unheld` (a
    question about sources the caller holds nothing from gets coverage none and says so). Writes
    `answer`, `direct_answer` (the short answer it opens with, or None), `citations_used` (ids of
    retrieved documents the answer cites), `coverage_level` (the evidence's, adjusted by what the
    answer covers: `answer_coverage`), `suggestions` (three when coverage is low or none) and
    `errors` (a chat model's draft refused, and why)."""
    ctx = run_context(runtime)
    rag = state.get("rag") or {}
    language = state.get("language") or rag.get("language") or "en"
    chunks = state.get("reranked") or []
    question = state.get("question", "")
    sub_queries = state.get("sub_queries") or []

    try:
        policy = run_policy(rag, ctx)
    except Exception:
        policy = None
    if policy is None or not rag.get("enabled"):
        reason_code = rag.get("disabled_reason") or "policy_invalid"
        reason = phrases(language)["reasons"][reason_code].format(intent=rag.get("intent") or "")
        allow = list(policy.routing.allow_intents) if policy else []
        return {"answer": phrase(language, "retrieval_disabled", reason=reason), "citations_used": [],
                "coverage_level": "none", "suggestions": build_suggestions(language, rag, [], [], allow)}

    cfg = policy.compose
    analyzer = get_analyzer(policy)
    coverage = coverage_level(chunks, cfg)
    above_floor = [c for c in chunks if is_relevant(c, cfg)]
    relevant, conflict_notes = resolve_conflicts(above_floor, language, question)
    # Named as not found: what the question says, not how it points at documents ("individual", "The Verge").
    missing = missing_terms(question, language, chunks, analyzer,
                            pointing_words(policy, language, chunks)
                            | asked_kind(question, language, policy.languages.question_cues))

    lines: list[str] = []
    errors: list[str] = []
    found: DirectAnswer | None = None
    direct: str | None = None  # the chat model's own direct answer, when its draft opens with one
    # Sources the question attributes what it asks about to, none of the caller's documents comes from
    # (retrieve): another source's text is no answer to "what did the Bloomberg article say".
    unheld = state.get("sources_unheld") or []
    if unheld and set(unheld) >= set(state.get("sources_named") or []):
        coverage = "none"
        lines.append(phrase(language, "unheld_sources", sources=", ".join(unheld)))
    elif coverage == "none" and not unheld and converging_name(question, sub_queries, language, chunks, analyzer,
                                                               policy):
        # (Not when the question names a source the caller holds nothing from: what it asks may be there only.)
        coverage, relevant = "low", chunks
    if coverage != "none":
        written = None
        try:
            llm = chat_model(ctx)
        except ProviderError as exc:
            llm = None
            errors.append(f"compose: {exc}; extractive answer")
        if llm is not None and relevant:
            written, problem = llm_answer(llm, question, language, coverage, relevant,
                                          cfg.llm_max_tokens,
                                          ctx.provider_timeout_s * (ctx.provider_retries + 1))
            if written:
                problem = draft_failures(written, chunks, language, policy, ctx, errors)
                written = None if problem else written
            if problem:
                errors.append(f"compose: {problem}; extractive answer")
        # When the best evidence is in another language, the question put into it is read there by its words;
        # otherwise it is read as asked, evidence in another language by meaning.
        reading = read_in_evidence_language(question, sub_queries, language, relevant, ctx,
                                            cfg.direct.own_language_margin, errors)
        asked, parts_asked, read_language = reading or (question, sub_queries, language)
        extractive = extractive_answer(asked, parts_asked, read_language, relevant, analyzer, policy,
                                       None if reading else cross_lingual_relevance(question, language, relevant,
                                                                                    policy, ctx, errors),
                                       part_leads(state.get("hits") or {}, relevant), reply_language=language,
                                       part_names=dict(zip(parts_asked, sub_queries)))
        found = extractive.found
        coverage = answer_coverage(coverage, extractive, relevant, cfg)
        unattested = [] if found else unattested_subject(question, language, sub_queries,
                                                         relevant, analyzer, policy, state.get("sources_named") or [])
        if unattested:
            # "Qual é o salário médio …?" over documents that never speak of salaries, "… no Dia das Mães de
            # 2025?" over documents that never name it: a sentence about something else is no answer.
            coverage, written, extractive = "none", None, extractive._replace(lines=[])
            missing = [*unattested, *(m for m in missing if not has_any_phrase(" ".join(unattested), [m]))]
        if written:
            # The model's draft is shown as it streamed. Its opening is the direct answer when it is one
            # (short, not a bullet; its values passed the groundedness checks with the rest of the draft);
            # a draft that opens otherwise gets the deterministic direct answer on top.
            drafted = draft_direct_answer(written, question, language, policy)
            if drafted:
                found, direct = None, drafted
            elif found:
                lines += [direct_line(found, language), ""]
            lines.append(written)
        else:
            lines += extractive.lines
        cited = set(citations_in("\n".join(lines)))
        notes = [n for n in conflict_notes if set(citations_in(n)) & cited]
        if lines and notes:
            lines += ["", *notes]
        if lines and unheld:
            lines += ["", phrase(language, "unheld_sources", sources=", ".join(unheld))]
            coverage = "low" if coverage in ("high", "medium") else coverage
        if not lines:
            coverage = "none"
    if not lines:
        # Figures or "nothing found", never both: a partial answer names its missing parts itself.
        lines.append(phrase(language, "missing", terms=", ".join(missing[:6])) if missing else phrase(language, "missing_generic"))

    answer = "\n".join(lines).strip()
    retrieved_ids = {c["docId"] for c in chunks}
    citations = [cid for cid in citations_in(answer) if cid in retrieved_ids]
    # The closest document is named only when it reaches the relevance floor: one below it is not close to the
    # question ("the CEO's favourite football team" is not in the TikTok report), and the collection may hold
    # nothing on it, which the suggestions then say instead.
    suggestions = (build_suggestions(language, rag, above_floor, missing, list(policy.routing.allow_intents))
                   if coverage in ("low", "none") else [])
    direct = direct or direct_text(found, language)
    return {"answer": answer, "direct_answer": direct if lines and coverage != "none" else None,
            "citations_used": citations, "coverage_level": coverage, "suggestions": suggestions,
            **({"errors": errors} if errors else {})}
