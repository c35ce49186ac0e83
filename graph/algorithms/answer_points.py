"""Choosing the sentences an answer quotes, and citing them."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence

from graph.algorithms.cross_language import in_another_language
from graph.algorithms.direct_answer import AskedMeasure, Candidate, QuestionWords, rankings
from graph.algorithms.passages import block_after, claim_sentences
from graph.algorithms.periods import of_the_period, off_period
from graph.algorithms.question_form import QuestionForm
from graph.algorithms.text import with_synonyms
from graph.state import Chunk

_SQUARE = str.maketrans("[]", "()")


def cite(sentence: str, doc_ids: Sequence[str]) -> str:
    """'Sales grew 10%.' -> 'Sales grew 10% [doc].' Square brackets the document wrote ("in Arrowhead
    [Stadium]", "[sic]") become round ones: in an answer, square brackets hold citations."""
    sentence = sentence.translate(_SQUARE)
    end = sentence[-1] if sentence[-1] in ".!?" else "."
    body = sentence[:-1] if sentence[-1] in ".!?" else sentence
    marks = " ".join(f"[{d}]" for d in doc_ids)
    return f"{body.rstrip()} {marks}{end}"


def chunk_title(chunk: Chunk) -> str:
    """The chunk's title line (title | source | date), else its asset's name."""
    return str((chunk.get("metadata") or {}).get("header") or chunk.get("assetName") or "")


def document_titles(chunks: list[Chunk]) -> dict[str, str]:
    """Each document's title (its asset's name), by document id: the period a sentence speaks of is often
    only there."""
    return {c["docId"]: str(c.get("assetName") or "") for c in chunks}


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
             chunk_title(chunk)) for rank, chunk in enumerate(chunks) for _, sentence in claim_sentences(chunk["content"])]
    return rankings(question, [r[:4] for r in rows], relevance, [r[4] for r in rows], [r[5] for r in rows],
                    header_weights)


def select_points(candidates: list[Candidate], question: str, max_points: int, max_chars: int,
                  point_floor: float, first: Candidate | None = None,
                  given: dict[str, frozenset[int]] | None = None, by_meaning: bool = False,
                  doc_titles: dict[str, str] | None = None, period: frozenset[int] = frozenset(),
                  units: Mapping[str, Sequence[str]] | None = None, *, covered_weight: float) -> list[Candidate]:
    """The sentences that address the question, greedily: each pick adds the most IDF weight of question
    words not yet covered (covered ones count `covered_weight` of theirs). A sentence below `point_floor` of the best
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
        return sum(idf[i] * (covered_weight if i in covered else 1.0) for i in c.terms) * (0.5 + 0.5 * c.score)

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
    title = words.held(chunk_title(chunk)) if words else frozenset()
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


def part_of(c: Candidate, parts: list[str], words: QuestionWords) -> int:
    """The index of the question part the sentence holds most of (a comparison lists its sides in order)."""
    shares = [len(words.held(p) & c.terms) for p in parts]
    return max(range(len(parts)), key=lambda i: shares[i])
