"""What a question names that no retrieved text attests: a measure, a name, a year."""

from __future__ import annotations

from collections.abc import Sequence

from graph.algorithms.answer_points import chunk_title
from graph.algorithms.cross_language import answered_by_meaning, in_another_language, nearest_in_another_language
from graph.algorithms.direct_answer import names_in
from graph.algorithms.question_form import question_form
from graph.algorithms.text import YEAR, Analyzer, fold, has_any_phrase, month_names
from graph.state import Chunk


def unattested_measure(measure: str, language: str, chunks: list[Chunk], analyzer: Analyzer) -> str | None:
    """The measure a value question asks for (`QuestionForm.measure`: "salário" of "Qual é o salário médio
    …?") when no relevant chunk in the question's language, title included, holds it; None otherwise, and
    always when the best evidence, or the relevant chunk nearest the question in meaning, is in another
    language: its words cannot be looked for, and it was chosen by meaning ("Qual é a taxa de devolução
    online da Acme?" is nearest the English returns report, below a Portuguese refund case that shares its
    words). Text in another language ranked below text in the question's language, and farther in meaning,
    is no sign that it is answered ("What is the average salary of Acme store staff?" over the English
    channel report and Portuguese playbooks)."""
    if not measure or not chunks:
        return None
    if answered_by_meaning(chunks, language) or nearest_in_another_language(chunks, language):
        return None
    asked = analyzer.terms(measure, language)
    held = any(asked & analyzer.terms(f"{chunk_title(c)} {c['content']}", language) for c in chunks
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
    months = month_names(policy.languages.months)
    sources = {fold(s) for s in named_sources}
    names = [n for n in question_names(question, language, analyzer, months) if fold(n) not in sources]
    if not names:
        return []
    texts = [_chunk_text(c) for c in chunks]
    return [n for n in names if not any(_holds_name(t, n, analyzer, language) for t in texts)]


def documents_naming(question: str, language: str, chunks: list[Chunk], analyzer: Analyzer, policy) -> set[str] | None:
    """The documents that hold a name the question speaks of which other retrieved documents lack ("Pinterest" of
    "Is the Pinterest campaign still active?"; not "Acme", which every one of a tenant's documents holds), in their
    text, title or metadata; None when the question names no such name, or several. A sentence of a document that names none
    of them is about something else ("The campaign is active" of the Google campaign's report)."""
    months = month_names(policy.languages.months)
    names = question_names(question, language, analyzer, months)
    if not names:
        return None
    texts: dict[str, str] = {}
    for c in chunks:
        texts[c["docId"]] = f"{texts.get(c['docId'], '')} {_chunk_text(c)}"
    holders = [{doc for doc, text in texts.items() if _holds_name(text, n, analyzer, language)} for n in names]
    telling = [held for held in holders if held and len(held) < len(texts)]
    # One such name is what the question is about; several (sources, people, a comparison) are spread over
    # documents that each name some, and a sentence naming none may still be the evidence.
    return telling[0] if len(telling) == 1 else None


def _holds_name(text: str, name: str, analyzer: Analyzer, language: str) -> bool:
    """`text` holds the whole name, or more than half of its words (its connectors, "das", "of", aside)."""
    if has_any_phrase(text, [name]):
        return True
    tokens = [w for w in name.split() if analyzer.terms(w, language) or not w.islower()]
    return len(tokens) > 1 and sum(has_any_phrase(text, [w]) for w in tokens) * 2 > len(tokens)


def unattested_subject(question: str, language: str, sub_queries: list[str], chunks: list[Chunk], analyzer: Analyzer,
                       policy, named_sources: Sequence[str] = ()) -> list[str]:
    """What a question asks about that no relevant chunk holds: the measure of a value question
    (`unattested_measure`); else, for a question that was not split in parts, the years it names
    (`unattested_years`: "What is Acme's carbon-emissions target for 2030?" over documents of 2025 and 2026 is
    not answered by their targets), and for one asking for a value or a date, the names it speaks of too
    (`unattested_names`). Empty when the evidence holds them all. A split question's parts may each be answered by
    other documents; a yes/no question's names and years are what it claims ("Did TechCrunch report on it in
    2024?" is answered no, not left open), and a which-question's names what it compares (MultiHop-RAG dev:
    looking for every short-answer question's names sent 9.5% of the answerable questions to none instead of
    3.4%, and no more unanswerable ones), so neither is looked at there. Years beyond value and date questions:
    MultiHop-RAG's 1,000 dev answers unchanged, one of FaQuAD's 837 left open (it asks about 2019, its passage
    speaks of 2016); the samples' null question gets none over acme's documents alone too (it had got a
    low-coverage answer unless globex's documents were beside them)."""
    form = question_form(question, language, policy.languages.question_cues)
    measure = unattested_measure(form.measure, language, chunks, analyzer)
    if measure:
        return [measure]
    if len(sub_queries) > 1 or form.kind == "yes_no":
        return []
    years = unattested_years(question, chunks)
    if form.kind not in ("how_much", "when"):
        return years
    return [*unattested_names(question, language, chunks, analyzer, policy, named_sources), *years]


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
    return " ".join([chunk_title(chunk), chunk["content"], *(str(v) for v in metadata if isinstance(v, str))])
