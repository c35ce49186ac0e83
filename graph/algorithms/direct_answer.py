"""The direct answer: what the question asks for, in at most a dozen words, from one cited sentence.

The composer opens its answer with it (nodes/compose.py); `ragate eval answers` scores it alone. It
is extracted, never written: a value, a date or a name from a retrieved sentence, or yes/no decided from what the retrieved sentences support. When the evidence does not support one, there is
none (`None`): a wrong direct answer is worse than no direct answer.

Sentences are ranked by how much of the question they hold — the IDF weight of the question's terms
they contain, scaled by their chunk's rerank score — and, when a relevance model is given (the
cross-encoder for English), by its score of the sentence against the question. Then, by the
question's form (graph/algorithms/question_form.py):

- how_much / when: the best sentence holding a value / a date; the answer is the one the question's
  own words point at, a value with its currency and unit (a percentage for a share question); a count
  is the number, in digits or words, said of what the question counts ("em três segundos");
- who / which: a measure the question names with its value ("ROAS 4,2"), else the name (a run of
  capitalised words) the sentences near the question mention most, that the question does not say
  itself (nor in other words: "Engenharia de Computação" for "engenheiro de computação"), that clearly
  outweighs the next and that one of the best sentences on the question's topic holds (for a question in
  one part, its best sentence must name someone), said in full ("Sam Bankman-Fried", "Federal Reserve"
  for "Fed") where the evidence gives its fuller form; no acronym nor brand for a question about a
  person;
- yes_no: "yes" when every part of the question is held by one retrieved document whose sentence says what
  the part says; "no" when it says the opposite: the other side of a state the part names ("below" for "meet",
  graph/algorithms/opposites.py), or, for a part naming no state, a negation on one side only; otherwise none;
- open: none (an explanation has no dozen-word answer); the supporting points answer it.
"""

from __future__ import annotations

import functools
import math
import re
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from graph.algorithms.changes import asked_end, change_ends
from graph.algorithms.opposites import names_a_state, state_words, yes_or_no
from graph.algorithms.question_form import QuestionForm
from graph.algorithms.text import (
    YEAR,
    Analyzer,
    connector_pattern,
    find_dates,
    fold,
    has_any_phrase,
    holds_words,
    month_names,
    ring_mates,
    shared_words,
    value_spans,
)
from graph.policy import DirectAnswerSettings

MAX_WORDS = 12
_WORDS = re.compile(r"\w+", re.UNICODE)
_CLAUSE_SPLIT = re.compile(r"\s*(?:[;:()]|,\s|\s[-–—]\s)\s*")


@functools.lru_cache(maxsize=8)
def _name_pattern(joiners: tuple[str, ...]) -> re.Pattern[str]:
    """A name: capitalised words, joined by "&" or a short word (the language packs' `name_joiners.answers`:
    "Bank of America", "Sam Bankman-Fried")."""
    joining = "|".join(map(re.escape, (*joiners, "&")))
    return re.compile(rf"(?<![\w-])(?:[A-ZÀ-Ý][\w'’&.-]*)(?:\s+(?:(?:{joining})\s+)?[A-ZÀ-Ý][\w'’&.-]*)*", re.UNICODE)


@dataclass(frozen=True)
class Candidate:
    """One sentence of a retrieved chunk, with its share of the question (`score`, 0..1)."""

    doc_id: str
    text: str
    terms: frozenset  # indexes of the question words it holds (QuestionWords.held)
    score: float
    rank: int  # the chunk's place in the reranked list
    # In another language than the question: its words cannot match the question's, so neither can
    # they say where in it the answer is (scored by meaning, `rank_sentences`'s `wordless`).
    wordless: bool = False


@dataclass(frozen=True)
class DirectAnswer:
    """The short answer (`text`, no citation markers), the documents it comes from, and how it was
    found (`method`: value, date, name, yes, no). `sentence`: where it was read; `also_from`: the
    sentences of its further parts, when it answers several ("R$ 93,5 mi; 11,1%")."""

    text: str
    doc_ids: tuple[str, ...]
    method: str
    sentence: str
    also_from: tuple[str, ...] = ()

    @property
    def sentences(self) -> tuple[str, ...]:
        """Every sentence it was read from: its first part's, then the further parts'."""
        return (self.sentence, *self.also_from)


def states_answer(sentence: str, found: DirectAnswer) -> bool:
    """The sentence states the direct answer (one of its values, dates or names, as written), or is
    where one of them was read."""
    return sentence in found.sentences or has_any_phrase(sentence, found.text.split(";"))


@functools.lru_cache(maxsize=1 << 16)
def _word_prefix(word: str, size: int) -> str | None:
    """A word's first `size` letters, folded, when it is longer than that and not a number."""
    w = fold(word)
    return w[:size] if len(w) >= size + 1 and not w.isdigit() else None


@functools.lru_cache(maxsize=8192)
def _text_prefixes(text: str, size: int) -> frozenset[str]:
    """The `_word_prefix` of each word of `text` (the same sentences are read for every question word list)."""
    return frozenset(p for p in (_word_prefix(w, size) for w in _WORDS.findall(text)) if p)


class QuestionWords:
    """The question's content words, and which of them a text holds: the same stem, or the same first
    five letters for longer words (truncation: "cresceram" holds "crescimento", which the Snowball
    stemmer keeps apart; a known light stemmer for Portuguese)."""

    PREFIX = 5

    def __init__(self, question: str, analyzer: Analyzer, language: str, synonyms: Sequence[Sequence[str]] = ()):
        self.text, self.analyzer, self.language = question, analyzer, language
        # A word is held through its `synonyms` too (the policy's rings: "decide" by "ruled", "ordered").
        self.words = [(w, ids.union(*(analyzer.terms(m, language) for m in ring_mates(w, synonyms))))
                      for w, ids in analyzer.content_words(question, language)]
        self._prefixes = [self._prefix(w) for w, _ in self.words]
        # The composer and the judge ask about the same sentences many times over (~200 asks a question).
        self._held: dict[str, frozenset[int]] = {}

    @classmethod
    def _prefix(cls, word: str) -> str | None:
        return _word_prefix(word, cls.PREFIX)

    def held(self, text: str) -> frozenset[int]:
        """Indexes (into `words`) of the question words `text` holds."""
        found = self._held.get(text)
        if found is None:
            terms = self.analyzer.terms(text, self.language)
            prefixes = _text_prefixes(text, self.PREFIX)
            found = self._held[text] = frozenset(
                i for i, (_, ids) in enumerate(self.words)
                if ids & terms or (self._prefixes[i] and self._prefixes[i] in prefixes))
        return found

    def __len__(self) -> int:
        return len(self.words)


def rank_sentences(question: QuestionWords, sentences: Sequence[tuple[str, str, int, float]],
                   relevance: Callable[[list[str]], list[float]] | None = None,
                   wordless: Sequence[bool] | None = None, headers: Sequence[str] | None = None,
                   header_weight: float = 0.0) -> list[Candidate]:
    """`sentences`: (doc_id, text, chunk rank, chunk rerank score). Best first. Each sentence scores the
    IDF-weighted share of the question's words it holds (IDF over these sentences), times 0.5 + half
    its chunk's score; a relevance model's score, when given, is averaged in. `wordless`: the sentences
    whose words cannot match the question's (another language); with a model, their share of the
    question's words is taken to be the model's score (missing evidence, not evidence against)."""
    return rankings(question, sentences, relevance, wordless, headers, (header_weight,))[0]


def rankings(question: QuestionWords, sentences: Sequence[tuple[str, str, int, float]],
             relevance: Callable[[list[str]], list[float]] | None, wordless: Sequence[bool] | None,
             headers: Sequence[str] | None, header_weights: Sequence[float]) -> list[list[Candidate]]:
    """`rank_sentences` once per header weight, the words held and the model's scores computed once."""
    if not sentences or not len(question):
        return [[] for _ in header_weights]
    held = [question.held(text) for _, text, _, _ in sentences]
    n = len(sentences)
    idf = [math.log(1 + n / (1 + sum(1 for h in held if i in h))) for i in range(len(question))]
    total = sum(idf) or 1.0
    own = [sum(idf[i] for i in h) / total for h in held]
    # A sentence is read in its document: words of the question that its title holds ("Campanha TikTok"
    # for "ROAS 4.2") count too, at the header weight.
    titled = {h: question.held(h) for h in set(headers)} if headers and any(header_weights) else {}
    from_title = [sum(idf[i] for i in titled[hd] - h) / total for h, hd in zip(held, headers)] if titled else []
    model = relevance([s[1] for s in sentences]) if relevance else None
    out = []
    for weight in header_weights:
        lexical = [x + weight * t for x, t in zip(own, from_title)] if weight and from_title else own
        ranked = []
        for i, (doc_id, text, rank, chunk_score) in enumerate(sentences):
            prior = 0.5 + 0.5 * chunk_score
            score = lexical[i] * prior
            if model is not None:
                share = max(lexical[i], model[i]) if wordless and wordless[i] else lexical[i]
                score = 0.5 * share * prior + 0.5 * model[i] * prior
            ranked.append(Candidate(doc_id, text, held[i], score, rank, bool(wordless and wordless[i])))
        ranked.sort(key=lambda c: (-c.score, c.rank))
        out.append(ranked)
    return out


def measure_qualifiers(question: QuestionWords, measure: str, side: str = "after") -> frozenset[int]:
    """The question words that say which of its kind the `measure` is (indexes into `question.words`):
    "devolução" of "taxa de devolução", "bruta" of "receita bruta" (`side` "after": the content word right
    after the measure, or after one function word between); "return" of "online return rate" (`side`
    "before": the content word right before it; "sales" of "Which sales channel" is narrowed by nothing).
    Not a name ("a receita da Globex"), nor a word with a digit ("Q1", a year)."""
    tokens = _WORDS.findall(question.text)
    at = next((i for i, t in enumerate(tokens) if fold(t) == measure), None)
    if at is None:
        return frozenset()
    content = {fold(w) for w, _ in question.words}

    def qualifier(word: str | None) -> bool:
        return (word is not None and fold(word) in content and fold(word) != measure and not word[0].isupper()
                and not any(ch.isdigit() for ch in word))

    if side == "before":
        word = tokens[at - 1] if at > 0 else None
    else:
        word = tokens[at + 1] if at + 1 < len(tokens) else None
        if word is not None and fold(word) not in content and at + 2 < len(tokens):
            word = tokens[at + 2]  # past one function word ("taxa de devolução")
    return question.held(word) if qualifier(word) else frozenset()


@dataclass(frozen=True)
class AskedMeasure:
    """The measure a value question names, as question words: the measure itself (`named`, indexes into
    `QuestionWords.words`), the word that narrows it (`qualifiers`, see `measure_qualifiers`), and the
    words that say it too (`synonyms`: its ring-mates in the policy, "faturou" for "receita"). Empty when
    the question names none."""

    named: frozenset[int] = frozenset()
    qualifiers: frozenset[int] = frozenset()
    synonyms: tuple[str, ...] = ()

    @classmethod
    def of(cls, form: QuestionForm, question: QuestionWords, synonyms: Sequence[Sequence[str]] = ()) -> AskedMeasure:
        named = question.held(form.measure) if form.measure else frozenset()
        if not named:
            return cls()
        return cls(named, measure_qualifiers(question, form.measure, form.qualifier_side) - named,
                   tuple(w for w in ring_mates(form.measure, synonyms) if fold(w) != form.measure))

    def held_by(self, candidate: Candidate) -> bool:
        """The sentence speaks of the measure: it holds the word or one of its synonyms, and the word that
        narrows it in the question (a conversion rate is no answer about the return rate). True when the
        question names no measure."""
        if not self.named:
            return True
        return bool((self.named & candidate.terms or has_any_phrase(candidate.text, self.synonyms))
                    and (not self.qualifiers or self.qualifiers & candidate.terms))


def _measure_at(sentence: str, question: QuestionWords, measure: AskedMeasure) -> list[tuple[int, int]]:
    """Where `sentence` names the question's measure: its word or one of its synonyms."""
    if not measure.named:
        return []
    folded = {fold(w) for w in measure.synonyms}
    return [(m.start(), m.end()) for m in _WORDS.finditer(sentence)
            if question.held(m.group(0)) & measure.named or fold(m.group(0)) in folded]


def _nearest(spans: list[tuple[int, int]], sentence: str, question: QuestionWords,
             measure_at: Sequence[tuple[int, int]] = ()) -> tuple[int, int]:
    """The span the question's words point at: first one whose label (the content word right before it)
    is a question word ("Sudeste, 3,2; Nordeste, 6,8"). Then, when the sentence names the question's
    measure (`measure_at`), the span closest to it on either side: a value belongs to its measure ("with a
    6.8 business-day average lead time" for "the average delivery time", not the region's 19.3% growth
    before it). Otherwise a subject comes before its value ("the
    media budget rises to R$ 3.9 million"): each question word among the eight content words before a
    span counts 1/distance (at its nearest), one among the four after a quarter of that, and a word
    beyond another span belongs to that one ("crescimento de 7,9% sobre 2024 e 3,0% acima da meta":
    growth is the 7,9%). The earliest span on a tie. Content words: not a stopword, a lone letter ("R" of
    "R$") or a word with a digit: a year or "Q1" says when, not what ("net sales reached $968.3 million in
    Q1 2026, a 7.4% increase": the sales are the $968.3 million)."""
    words = [(m.start(), question.held(m.group(0))) for m in _WORDS.finditer(sentence)
             if len(m.group(0)) > 1 and not any(ch.isdigit() for ch in m.group(0))
             and question.analyzer.terms(m.group(0), question.language)]
    ordered = sorted(spans)

    def pointed(span: tuple[int, int]) -> tuple[int, float, int]:
        i = ordered.index(span)
        since = ordered[i - 1][1] if i > 0 else 0
        until = ordered[i + 1][0] if i + 1 < len(ordered) else len(sentence)
        before = [h for at, h in words if since <= at < span[0]][-8:]
        after = [h for at, h in words if span[1] <= at < until][:4]
        weight: dict[int, float] = {}
        for distance, held in enumerate(reversed(before), start=1):
            for w in held:
                weight[w] = max(weight.get(w, 0.0), 1.0 / distance)
        for distance, held in enumerate(after, start=1):
            for w in held:
                weight[w] = max(weight.get(w, 0.0), 0.25 / distance)
        # The word right before a value is its label in a list ("Sudeste, 3,2; Nordeste, 6,8").
        labelled = 1 if before and before[-1] else 0
        if measure_at:
            return (labelled, -min(max(a - span[1], span[0] - b, 0) for a, b in measure_at), -span[0])
        return (labelled, sum(weight.values()), -span[0])

    return max(spans, key=pointed)


_CURRENCY_BEFORE = re.compile(r"(?:R\$|US\$|A\$|\$|€|£)\s*$")
_TAIL_WORDS = re.compile(r"(?:\s+[^\W\d_][\w-]*){1,2}")


def _value_phrase(sentence: str, start: int, end: int, question: QuestionWords) -> str:
    """The value with its currency and unit, nothing else: "R$ 3,9 milhões", "6,8 dias úteis", "9.8%".
    Up to two words after it are its unit when they are content words the question does not use. A bare
    number in a list whose first value has a unit takes that unit ("Sudeste, 3,2 dias úteis; Sul, 4,1;
    Nordeste, 6,8": 6,8 dias úteis)."""
    lead = _CURRENCY_BEFORE.search(sentence[:start])
    start = lead.start() if lead else start
    unit = _unit_after(sentence, end, question)
    if unit is None and not lead and sentence[start:end].strip().replace(",", "").replace(".", "").isdigit():
        first = min(_value_spans(sentence), default=None)
        if first and first[1] < start and _LIST_GAP.fullmatch(sentence[first[1]:start]):
            listed = _unit_after(sentence, first[1], question)
            return f"{sentence[start:end].strip()} {sentence[first[1]:listed].strip()}" if listed else \
                sentence[start:end].strip()
    return sentence[start:unit or end].strip()


# Between a list's values: labels and separators only, no sentence end ("3,2 dias úteis; Sul, 4,1; … Nordeste, ").
_LIST_GAP = re.compile(r"[^.!?]*[;,][^.!?]*")


def _unit_after(sentence: str, end: int, question: QuestionWords) -> int | None:
    """Where the unit after a value ends (up to two content words the question does not use: "6,8 dias
    úteis"; one when the second is the question's own, "6.8 business-day average"), or None. A function
    word of any language is no unit: the sentence may be in another language than the question ("R$ 742,6
    milhões em 2025" for an English question)."""
    tail = _TAIL_WORDS.match(sentence, end)
    if tail:
        words = tail.group(0).split()
        unit = ""
        analyzer = question.analyzer
        languages = {question.language, *analyzer.languages}
        for w in words:
            if not all(analyzer.terms(w, language) for language in languages):
                return None  # "38% year over year": a stopword after it, no unit
            if question.held(w):
                break
            unit = w
        if unit:
            return sentence.index(unit, end) + len(unit)
    return None


# A time of day right after a number: "8 p.m.", "8pm", "20h", "20h30", "8:30".
_CLOCK = re.compile(r"\s*(?:[ap]\.\s?m\.|[ap]m(?!\w)|h(?:\d{2})?(?!\w)|:\d{2})", re.IGNORECASE)
_CLOCK_MINUTES = re.compile(r"\d[:h]$")  # the "30" of "8:30" or "20h30"


# A number sign right before a number makes it a label: "edital nº 163", "Lei n.º 1.920", "Case No. 25", "#3".
_NUMBER_SIGN = re.compile(r"(?:(?<!\w)n\.?\s?[º°]|(?<!\w)no\.|#)\s*$", re.IGNORECASE)


def _amounts(sentence: str, months: Mapping[str, Sequence[str]] | None = None) -> list[tuple[int, int]]:
    """The value spans a how-much question may be answered with: not a number after a number sign, which
    names what it labels ("Quanto é o montante do edital nº 163?" is not answered "163"; "Qual lei …?" may
    still be "Lei nº 1.862")."""
    return [(a, b) for a, b in _value_spans(sentence, months) if not _NUMBER_SIGN.search(sentence, 0, a)]


def _value_spans(sentence: str, months: Mapping[str, Sequence[str]] | None = None) -> list[tuple[int, int]]:
    """Amounts, counts and percentages; a bare year is a date, not an amount ("in 2025"), and so, with the
    `months` to read dates by, is a day ("12" of "em 12 de fevereiro de 2026" counts no stores); a time
    of day is no amount either ("at 8 p.m." is no revenue target)."""
    dates = _dates_written(sentence, months) if months else []
    return [(a, b) for a, b in value_spans(sentence) if not YEAR.fullmatch(sentence[a:b])
            and not any(start <= a and b <= end for start, end in dates)
            and not _CLOCK.match(sentence, b) and not _CLOCK_MINUTES.search(sentence, 0, a)]


def holds_value(sentence: str, months: Mapping[str, Sequence[str]] | None = None) -> bool:
    """The sentence gives an amount, a count or a percentage (`_value_spans`: a year, a day or a time of
    day is none)."""
    return bool(_value_spans(sentence, months))


# A day of the month in a date ("12 de fevereiro de 2026"), not a year alone ("setembro de 2025").
_DAY = re.compile(r"(?<!\d)\d{1,2}(?!\d)")


@functools.lru_cache(maxsize=8)
def _range_start(connectors: tuple[str, ...]) -> re.Pattern[str]:
    """The first day of a range written before a date: "from 24 to 30 November", "de 24 a 30 de novembro", "24–30"
    (the language packs' `range_connectors`, or a dash)."""
    joining = "|".join(map(re.escape, (*connectors, "-", "–", "—")))
    return re.compile(rf"\b\d{{1,2}}\s*(?:{joining})\s*$", re.IGNORECASE)


def _full_dates(sentence: str, months: Mapping[str, Sequence[str]]) -> list[tuple[int, int]]:
    """The dates of `sentence` with their year, a range whole ("24 to 30 November 2025")."""
    spans = []
    range_start = _range_start(shared_words().range_connectors)
    for d in find_dates(sentence, months, {}):
        before = range_start.search(sentence[max(0, d.start - 16):d.start])
        spans.append((d.start - len(before.group(0)) if before else d.start, d.end))
    return spans


@functools.lru_cache(maxsize=8)
def _day_month(month_names: frozenset[str], connectors: tuple[str, ...]) -> re.Pattern[str]:
    alternation = "|".join(sorted((re.escape(m) for m in month_names), key=len, reverse=True))
    return re.compile(rf"(?<!\w)(?:\d{{1,2}}(?:st|nd|rd|th|º)?\s+{connector_pattern(connectors)}(?:{alternation})"
                      rf"|(?:{alternation})\s+\d{{1,2}}(?:st|nd|rd|th)?)(?!\w)", re.IGNORECASE)


def _days_and_months(sentence: str, months: Mapping[str, Sequence[str]]) -> list[tuple[int, int]]:
    """A day and a month written without the year ("on 27 April", "em 27 de abril")."""
    pattern = _day_month(month_names(months), shared_words().date_connectors)
    return [(m.start(), m.end()) for m in pattern.finditer(fold(sentence))]


def _dates_written(sentence: str, months: Mapping[str, Sequence[str]]) -> list[tuple[int, int]]:
    """Every date of `sentence` that names a day: with its year or without."""
    return _full_dates(sentence, months) + _days_and_months(sentence, months)


def _date_spans(sentence: str, months: Mapping[str, Sequence[str]]) -> list[tuple[int, int]]:
    """The dates of `sentence`, a range whole ("24 to 30 November 2025"); else its years, with their month."""
    spans = _full_dates(sentence, months)
    if spans:
        return spans
    # A day and a month without the year ("on 27 April", "em 27 de abril") is the date; the year alone
    # is only the period it falls in.
    days = _days_and_months(sentence, months)
    if days:
        return days
    names = month_names(months)
    out = []
    for m in YEAR.finditer(sentence):
        before = fold(sentence[max(0, m.start() - 12):m.start()]).split()
        start = m.start() - len(before[-1]) - 1 if before and before[-1].strip(",.") in names else m.start()
        out.append((max(0, start), m.end()))
    return out


def _counted(sentence: str, spans: Sequence[tuple[int, int]], counted: frozenset[int], question: QuestionWords,
             number_words: Mapping[str, float]) -> str | None:
    """The first count in `sentence` written right before the thing a count question counts (`counted`:
    its question words): "9" of "ampliado para 9 membros, e depois para 14 em 2009" for "quantos membros",
    "três" of "em três segundos" for "em quantos segundos": a count is said of what it counts. Digits or a
    number word of the question's language, with at most one word between ("dois novos campi"). A word
    right after the counted thing that narrows it, and that the question does not say, comes with the count:
    "cinco dias úteis" for "quantos dias", five business days not being five days. `spans`: the sentence's
    values the question may be answered with (its caller's), of which a count in digits is one."""
    tokens = list(_WORDS.finditer(sentence))
    for i, token in enumerate(tokens):
        if i == 0 or not question.held(token.group(0)) & counted:
            continue
        for before in tokens[max(i - 2, 0):i][::-1]:
            word = before.group(0)
            if any(ch.isdigit() for ch in word):
                span = next(((a, b) for a, b in spans if a <= before.start() < b), None)
                if span is None or sentence[span[0]:span[1]].rstrip().endswith("%"):
                    break
                start, end = span
            elif fold(word) in number_words:
                start, end = before.start(), before.end()
            else:
                continue
            count = sentence[start:end].strip()
            after = tokens[i + 1] if i + 1 < len(tokens) else None
            if (after is not None and sentence[token.end():after.start()] == " " and after.group(0).islower()
                    and not question.held(after.group(0))
                    and question.analyzer.terms(after.group(0), question.language)):
                return f"{count} {sentence[token.start():after.end()]}"
            return count
    return None


def _from_spans(candidates: Sequence[Candidate], find: Callable[[str], list[tuple[int, int]]], method: str,
                question: QuestionWords, floor: float, depth: int, focus: str | None,
                percent_only: bool = False, own_language_margin: float = 1.0,
                measure: AskedMeasure = AskedMeasure(), count_only: bool = False,
                amount_only: bool = False, number_words: Mapping[str, float] | None = None, *,
                focus_weight: float) -> DirectAnswer | None:
    """The value (or date) of the best sentence that holds one, the sentences holding the `focus` word
    first (their score counts `focus_weight` times: "quanto cresceram": a sentence about growth before one
    that merely mentions sales); a
    percentage when `percent_only` and the sentence has one; when `count_only`, neither a percentage nor
    an amount of money ("how many SKUs": "1,200", not the "50%" off them); when `amount_only`, no
    percentage ("41% da receita" is a share of it); a count said of what the question counts (the `focus`,
    `_counted`) first, in any of the sentences looked at. A question that names its `measure` ("Qual foi a
    margem bruta …?") takes its value only from a sentence in its language that holds it, or one of its
    synonyms ("faturou" for "receita"): the season's revenue is no answer about its margin; and the word
    that narrows the measure in the question: "taxa de conversão de 2,1%" is no answer about "a taxa de
    devolução".
    When the best sentence is in another language (`wordless`), no words can say which of its values is
    asked for: the value comes from a
    sentence in the question's language that holds the focus word and scores at least
    `own_language_margin` of it ("412 mil seguidores" over "538,000 followers … 412,000 at the end of
    Q3 2025"), else none is given — unless the sentence holds one date with its day, or one value of the
    asked kind, only ("When did Acme open its store in Recife?": "12 de fevereiro de 2026")."""
    about = question.held(focus) if focus else frozenset()
    asked = fold(question.text)

    def weight(c: Candidate) -> float:
        return c.score * (focus_weight if c.wordless or about & c.terms else 1.0)

    def answer_at(c: Candidate, span: tuple[int, int]) -> DirectAnswer:
        start, end = span
        text = _value_phrase(c.text, start, end, question) if method == "value" else c.text[start:end].strip()
        return DirectAnswer(text, (c.doc_id,), method, c.text)

    def of_the_kind(c: Candidate, strict: bool = False) -> list[tuple[int, int]]:
        """The spans of `c` that can be what is asked: not a date the question already names ("When will the
        2026 collection launch?": 2026), of the asked kind. A share is the percentage when the sentence has
        one, any value otherwise, none when `strict`."""
        spans = [sp for sp in find(c.text) if method != "date" or fold(c.text[sp[0]:sp[1]].strip()) not in asked]
        if percent_only:
            # "What share came from the app": of "R$ 14,1 million (15.1%)" the share is the percentage.
            shares = [sp for sp in spans if c.text[sp[0]:sp[1]].endswith("%")]
            return shares if shares or strict else spans
        if count_only or amount_only:
            return [sp for sp in spans if not c.text[sp[0]:sp[1]].rstrip().endswith("%")
                    and not (count_only and _CURRENCY_BEFORE.search(c.text[:sp[0]]))]
        return spans

    ranked = sorted((c for c in candidates[:depth] if c.score >= floor), key=lambda c: -weight(c))
    if measure.named:
        ranked = [c for c in ranked if c.wordless or measure.held_by(c)]
    if ranked and ranked[0].wordless:
        best = ranked[0]
        # A value of the asked kind (a count, an amount, a share) or a day's date reads the same in any language:
        # a sentence that holds one only leaves nothing to choose ("12 de fevereiro de 2026"; "R$ 3,9 milhões"
        # beside the channels' shares for "the media budget").
        # Here a share must be a percentage: "Spend: R$ 286 thousand" is no conversion rate.
        only = of_the_kind(best, strict=True)
        unambiguous = len(only) == 1 and (
            (method == "date" and _DAY.search(best.text[only[0][0]:only[0][1]]))
            or (method == "value" and (percent_only or count_only or amount_only)))
        if unambiguous:
            return answer_at(best, only[0])
        ranked = [c for c in ranked if not c.wordless and about & c.terms
                  and weight(c) >= own_language_margin * weight(best)]
    if count_only and about:
        for c in ranked:
            if c.wordless:
                break
            if (count := _counted(c.text, find(c.text), about, question, number_words or {})) is not None:
                return DirectAnswer(count, (c.doc_id,), method, c.text)
    for c in ranked:
        if c.wordless:
            return None
        spans = of_the_kind(c)
        if spans:
            return answer_at(c, _nearest(spans, c.text, question, _measure_at(c.text, question, measure)))
    return None


_POSSESSIVE = re.compile(r"['’]s?$")
_ROMAN = re.compile(r"[IVX]+")  # centuries and reigns; with L, C, D or M it is more often an acronym ("DC")


# The most words a person's or organisation's full name has ("Sam Bankman-Fried", "Federal Reserve Bank").
FULL_NAME_WORDS = 3
_ACRONYM = re.compile(r"[A-Z][A-Z0-9&.]{1,5}")
# A capital inside a word after a small letter ("OpenAI", "YouTube", "FanDuel"): a brand's spelling, no
# person's, except the prefixes of family names ("McCarthy", "MacKenzie", "DeShawn", "LeBron", "DiCaprio").
_BRAND = re.compile(r"(?<![\w'’])(?!Mc|Mac|De|Di|Le|La|Van|Von|O['’])\w*?[a-z][A-Z]")


def _person_name(name: str) -> str:
    """A person's name without what a run of capitalised words holds before it: a title in capitals ("CEO
    Sam Altman") or a phrase ending in "of" ("Two of Sam Bankman-Fried", a sentence's opening)."""
    words = name.split()
    while len(words) > 2 and _ACRONYM.fullmatch(words[0]):
        words = words[1:]
    if "of" in words[:-2]:
        tail = words[len(words) - words[::-1].index("of"):]
        if len(tail) >= 2:
            words = tail
    return " ".join(words)


def _initials(names: Iterable[Sequence[tuple[str, bool]]]) -> dict[str, str]:
    """Acronyms spelled out by the one name of two or three words among `names` (those `names_in` found in
    each sentence or title) whose words' (and hyphenated parts') first letters they are: "SBF" → "Sam
    Bankman-Fried"."""
    spelled: dict[str, set[str]] = defaultdict(set)
    for found in names:
        for name, _ in found:
            words = name.split()
            if 2 <= len(words) <= FULL_NAME_WORDS and not any(_ACRONYM.fullmatch(w) for w in words):
                spelled["".join(part[0] for w in words for part in w.split("-") if part)].add(name)
    return {acronym: next(iter(names)) for acronym, names in spelled.items() if len(names) == 1}


def names_in(sentence: str, is_stopword: Callable[[str], bool]) -> list[tuple[str, bool]]:
    """(name, opens the sentence) for each run of capitalised words, without the function words at its
    ends ("On Amazon’s" → "Amazon") or a possessive."""
    out = []
    for m in _name_pattern(shared_words().name_joiners.answers).finditer(sentence):
        tokens = m.group(0).split()
        opening = m.start() == 0
        while tokens and is_stopword(tokens[0]):
            tokens, opening = tokens[1:], False
        while tokens and is_stopword(tokens[-1]):
            tokens = tokens[:-1]
        name = _POSSESSIVE.sub("", " ".join(tokens)).strip(" .-&")
        # A lone letter ("C" of "a.C.") or a Roman numeral ("século XIII") names no one.
        if len(name) > 1 and not _ROMAN.fullmatch(name):
            out.append((name, opening and " " not in name))
    return out


def _named_by(question_text: str, question: QuestionWords, is_stopword: Callable[[str], bool]) -> Callable[[str], bool]:
    """Whether a name is one the question says itself, in other words: each of its content words is one of the
    question's, by stem or first letters ("Engenharia de Computação" for "Quem é considerado engenheiro de
    computação?"), or it is the initials of a run of the question's words ("TI" of "Tecnologia da
    Informação"). Only the question's own words: the parts searched for it may hold the very name asked."""
    own = QuestionWords(question_text, question.analyzer, question.language)
    content = [w for w in _WORDS.findall(question_text) if not is_stopword(w)]
    initials = {"".join(w[0] for w in content[i:j]).casefold()
                for i in range(len(content)) for j in range(i + 2, min(i + 6, len(content) + 1))}

    def said(name: str) -> bool:
        words = [w for w in _WORDS.findall(name) if not is_stopword(w)]
        if not words:
            return False
        if len(words) == 1 and _ACRONYM.fullmatch(words[0]):
            return words[0].casefold() in initials
        return all(own.held(w) for w in words)

    return said


# Over 80 lines, a third of them its docstring: counting the mentions, choosing the name and checking that the
# evidence singles it out all read the same weighted counts, which splitting would pass through four functions.
def _name_answer(question: QuestionWords, question_text: str, candidates: Sequence[Candidate], floor: float,
                 focus: str | None = None, margin: float = 1.0,
                 titles: Mapping[str, str] | None = None, person: bool = False,
                 on_topic: float = 0.0, single: bool = False, *,
                 direct: DirectAnswerSettings) -> DirectAnswer | None:
    """The name the retrieved sentences are about: mentioned most, each mention weighted by its sentence's
    score (`direct.focus_clause_weight` times in the clause that holds the `focus` word: "which region" →
    the clause about a region; `focus_phrase_weight` times right after the focus word's phrase: "a diretora
    de expansão, Carla Menezes"), over the sentences scoring at least `floor` of the best one; a name the
    question names
    itself is not an answer. A lone capitalised word opening a sentence counts only if it is
    capitalised elsewhere too: "However" is not a name, "Google" is. A question about a `person` counts
    no acronym but the initials of a full name the evidence gives ("SBF"), and no brand's spelling
    ("OpenAI"). None when the runner-up (not part of the best name, nor its fuller form) weighs more than
    1/`margin` of it, or when none of the `name_holders` best sentences scoring at least `on_topic` of the best one
    holds the name (or its last name, or its initials). A `single` question (one part) is answered where it
    is best matched: when that sentence names no one, what it asks for is said there in common words
    ("saqueada por invasores muçulmanos"), and a name frequent around it ("Índia") is no answer. The name
    is said in full where the documents' `titles` or the sentences give its fuller form (`_full_name`)."""
    if not candidates:
        return None
    asked = fold(question_text)

    def is_stopword(token: str) -> bool:
        return not question.analyzer.terms(token, question.language)

    titles = titles or {}
    named_by_question = _named_by(question_text, question, is_stopword)
    # The names in every sentence and title, read once: the pool's count, and all of them spell out
    # initials and give fuller forms.
    in_sentence = {c.text: names_in(c.text, is_stopword) for c in candidates}
    in_title = {doc_id: names_in(title, is_stopword) for doc_id, title in titles.items()}
    pool = [c for c in candidates if c.score >= floor * candidates[0].score]
    names = [(c, in_sentence[c.text]) for c in pool]
    if person:
        # A person is not named by an acronym ("FTX", "FTC"), except by the initials of a full name the
        # evidence gives ("SBF": "Sam Bankman-Fried"), which then counts as that name.
        spelled = _initials([*in_sentence.values(), *in_title.values()])
        names = [(c, [(_person_name(spelled.get(n, n)), opening) for n, opening in found
                      if (not _ACRONYM.fullmatch(n) or n in spelled) and not _BRAND.search(n)])
                 for c, found in names]
    else:
        spelled = {}
    mid_sentence = {fold(n) for _, found in names for n, opening in found if not opening}
    weight: dict[str, float] = defaultdict(float)
    where: dict[str, Candidate] = {}
    about_focus: Candidate | None = None  # the best sentence with a clause about the kind asked for
    surface: dict[str, str] = {}
    for c, found in names:
        # The clause that holds the focus word names what is asked ("The Northeast was the fastest-growing
        # region, up 19.3%, driven by the Fortaleza and Salvador stores"): its names count more.
        clause = next((fold(piece) for piece in _CLAUSE_SPLIT.split(c.text)
                       if focus and holds_words(fold(piece), focus, ends_word=False)), "")
        if clause and about_focus is None:
            about_focus = c
        folded = fold(c.text) if focus else ""
        for name, opening in dict.fromkeys(found):
            key = fold(name)
            if (opening and key not in mid_sentence) or holds_words(asked, key) or named_by_question(name):
                continue
            about = direct.focus_clause_weight if clause and holds_words(clause, key) else 1.0
            # A name right after the focus word's phrase is that phrase's name: "a diretora de expansão,
            # Carla Menezes, …", "OpenAI's CEO Sam Altman".
            if focus and focus in folded and re.search(
                    rf"(?<!\w){re.escape(focus)}\w*(?:\s+\w+){{0,3}},?\s+{re.escape(key)}(?!\w)", folded):
                about = direct.focus_phrase_weight
            weight[key] += c.score * about
            where.setdefault(key, c)
            surface.setdefault(key, name)
    # (Not for a question in several parts: its name is where they converge, often not its best sentence.) The
    # best sentence about the kind asked for counts as well: "The Northeast was the fastest-growing region"
    # answers "Which region grew fastest in H1 2025?" below a national figure for the half-year.
    if not weight or (single and not any(where[k] is candidates[0] or where[k] is about_focus for k in weight)):
        return None
    # A name that a longer candidate contains lends it its weight ("Bankman-Fried" -> "Sam Bankman-Fried").
    lent = dict(weight)
    for key, own in weight.items():
        for other in weight:
            if other != key and holds_words(other, key):
                lent[other] += own * direct.contained_name_share
    ranked = sorted(lent, key=lambda k: (lent[k], len(k)), reverse=True)
    best = ranked[0]

    # The runner-up is another name: not a part of the best, nor its fuller form ("Sam Bankman-Fried" of
    # "Bankman-Fried"; "FTX and Alameda" is another name than "FTX").
    runner_up = next((k for k in ranked[1:] if not has_any_phrase(best, [k])
                      and not (k.endswith(" " + best) and len(k.split()) <= FULL_NAME_WORDS)), None)
    # Two names about as central as each other: the evidence does not single one out.
    if runner_up is not None and lent[best] < margin * lent[runner_up]:
        return None
    if len(surface[best].split()) > MAX_WORDS:
        return None
    # The answer is said where the question is: a name none of the best sentences holds is only
    # frequent around it ("UFMS" throughout a paragraph about something else).
    # (By its last name or its initials too: "Bankman-Fried" or "SBF" for "Sam Bankman-Fried".) A sentence far
    # below the best is about something else: "Engenharia Elétrica" is no answer to "Por quem são operados os
    # softwares …?" because a sentence on the course's place among the engineerings names it.
    forms = [best, *(k for k in weight if best.endswith(" " + k)),
             *(fold(a) for a, n in spelled.items() if fold(n) == best)]
    holder = next((c for c in candidates[:direct.name_holders]
                   if c.score >= on_topic * candidates[0].score and has_any_phrase(c.text, forms)), None)
    if holder is None:
        return None
    docs = dict.fromkeys(c.doc_id for c in candidates)
    fuller = _full_name(best, surface[best], [[(d, titles[d], in_title[d]) for d in docs if d in titles],
                                              [(c.doc_id, c.text, in_sentence[c.text]) for c in candidates]],
                        is_stopword)
    name = fuller[0] if fuller else surface[best]
    name = _person_name(name) if person else name
    # Cited with a document that writes the name as said ("Sam Bankman-Fried", not only "SBF").
    said_in = fuller[1] if fuller else next(
        (d for d, text in [*((c.doc_id, c.text) for c in candidates), *titles.items()]
         if has_any_phrase(text, [best])), holder.doc_id)
    return DirectAnswer(name, tuple(dict.fromkeys([holder.doc_id, said_in])), "name", holder.text)


def _full_name(best: str, best_surface: str, sources: Sequence[Sequence[tuple[str, str, Sequence[tuple[str, bool]]]]],
               is_stopword: Callable[[str], bool]) -> tuple[str, str] | None:
    """The fuller form of the name `best` that the evidence gives, to be said instead, and the document
    that gives it: capitalised words before it, up to FULL_NAME_WORDS in all ("Sam Bankman-Fried" for
    "Bankman-Fried", "Shohei Ohtani" for "Ohtani"), or the name a one-word name shortens ("Federal Reserve"
    for "Fed"). Not a name after it ("Google Play" is another thing
    than Google), nor one joined by a small word or a possessive ("Google and Apple", "Tesla’s Cybertruck"),
    nor a word that only opens sentences ("Whereas Google"). `sources`: groups of (document id, text, the
    names `names_in` found in it), read in order until one gives a fuller form: the documents' titles,
    which name their subject in full ("… a timeline of Britney Spears’ relationships" over the "Jamie
    Spears" of one sentence), then the sentences. None when that group gives two ("Jamie Spears", "Britney
    Spears": which one is meant, the evidence does not say)."""
    size = len(best_surface.split())

    def full_forms(texts: Sequence[tuple[str, str, Sequence[tuple[str, bool]]]]) -> dict[str, tuple[str, str]]:
        forms: dict[str, tuple[str, str]] = {}
        for doc_id, text, names in texts:
            folded = fold(text)
            for name, _ in names:
                key, added = fold(name), name.split()[:-size]
                # A shortened name is said as written in full: "Fed" is the "Federal Reserve".
                shortened = (size == 1 and len(best) >= 3 and not _ACRONYM.fullmatch(best_surface)
                             and len(key.split()) > 1 and key.split()[0] != best and key.split()[0].startswith(best))
                if shortened:
                    added = name.split()
                if (key in forms or not (key.endswith(" " + best) or shortened) or len(key.split()) > FULL_NAME_WORDS
                        or not all(len(w) > 1 and w[0].isupper() and not is_stopword(w)
                                   and not _POSSESSIVE.search(w) for w in added)):
                    continue
                # Inside a sentence or title, not only at its start, somewhere: then its first word is the
                # name's ("Check India's squad" opens a title).
                if re.search(rf"[^\s.!?:;\"“”'‘’]\s+{re.escape(key)}(?!\w)", folded):
                    forms[key] = (name, doc_id)
        # A title before a full name is the same person ("CEO Sam Altman", "Sam Altman").
        return {k: v for k, v in forms.items() if not any(k != o and k.endswith(" " + o) for o in forms)}

    for group in sources:
        forms = full_forms(group)
        if forms:
            return next(iter(forms.values())) if len(forms) == 1 else None
    return None


def _polarity(terms_text: str, negations: Sequence[str]) -> bool:
    """True when the text negates (holds one of the language's negation words)."""
    words = set(fold(terms_text).split())
    return any(n in words for n in negations)


def _yes_no(parts: Sequence[str], candidates: Sequence[Candidate], question: QuestionWords,
            negations: Sequence[str], part_floor: float, needs_state: bool = False,
            light_words: Sequence[str] = ()) -> DirectAnswer | None:
    """yes when every part of the question is held by one retrieved document (at least `part_floor` of
    the part's words across its sentences) and its best sentence says what the part says; no when a part is held
    that well and its best sentence says the opposite; otherwise none. A part that names a state (met, below,
    active, paused: graph/algorithms/opposites.py) is read by those words in the document's sentences that hold
    enough of the part and name that state or its opposite: naming the same side answers yes, the other no, and
    sentences that differ none. A part that names none is read by its negations (a negation on one side
    only is no) when `needs_state` is off, and is not answered when on (a question with no cue word, "A campanha
    segue ativa?", is yes/no only by its question mark). Word overlap alone cannot tell "the articles agree" from
    "they differ" (measured on MultiHop-RAG dev: the share of a part's words found is the same for gold yes and
    gold no), so anything less is left unanswered."""
    if not candidates:
        return None
    by_doc: dict[str, list[Candidate]] = defaultdict(list)
    for c in candidates:
        by_doc[c.doc_id].append(c)
    light = {fold(w) for w in light_words}
    supporting: list[Candidate] = []
    for part in parts:
        states = names_a_state(part)
        words = question.held(part)
        # A state word is read by its sense, not matched ("encerrada" answers "segue ativa?"): the document must
        # hold the rest of the part.
        stated = question.held(" ".join(state_words(part))) if states else frozenset()
        # Nor is a word of tense or aspect ("still", `light_words`: the language's `light_verbs`): it names nothing.
        rest = words - stated - question.held(" ".join(w for w in _WORDS.findall(part) if fold(w) in light))
        if not rest:
            continue
        share = {doc: len(rest & frozenset().union(*(c.terms for c in cs))) / len(rest) for doc, cs in by_doc.items()}
        doc = max(share, key=share.get)
        if share[doc] < part_floor:
            return None
        ranked = sorted(by_doc[doc], key=lambda c: (len(words & c.terms), c.score), reverse=True)
        best = ranked[0]
        if states:
            # The sentences that read its state, holding two of the part's words (its state by either side) and half
            # as many as the one holding most, the fullest first; all must read it alike. One holding less is about
            # something else ("the refund time fell" for "did the return rate rise?").
            read = [(yes_or_no(part, c.text), c) for c in ranked]
            holding = {id(c): len((words - stated) & c.terms) + (reading is not None) for reading, c in read}
            least = max(2.0, max(holding.values()) / 2)
            years = set(YEAR.findall(part))
            # A sentence of several years states its latest ("9.8% in 2025, down from 11.2% in 2024" is 2025's
            # fall): it does not decide a question about an earlier one.
            readings = sorted(((reading, c) for reading, c in read if reading is not None and holding[id(c)] >= least
                               and (not years or max(YEAR.findall(c.text), default=next(iter(years))) in years)),
                              key=lambda rc: -holding[id(rc[1])])
            if len({reading for reading, _ in readings}) != 1:
                return None
            reading, best = readings[0]
        elif needs_state:
            return None
        else:
            reading = "no" if _polarity(part, negations) != _polarity(best.text, negations) else "yes"
        if reading == "no":
            return DirectAnswer("no", (best.doc_id,), "no", best.text)
        supporting.append(best)
    if not supporting:
        return None
    doc_ids = tuple(dict.fromkeys(c.doc_id for c in supporting))
    return DirectAnswer("yes", doc_ids, "yes", supporting[0].text)


def _focus_noun(form: QuestionForm, question: QuestionWords) -> str | None:
    """What the question asks about: a how-much question's word of change wherever it stands ("Quanto as
    vendas cresceram": "cresceram"), else the first content word after the cue ("region", "ROAS")."""
    content = {fold(w) for w, _ in question.words}
    if form.change and form.change in content:
        return form.change
    return next((w for w in form.focus if w in content), None)


# Between a measure's name and its value: nothing, a colon or equals sign, or one short word ("ROAS
# 4,2", "ROAS: 4.2", "ROAS of 4.2", "CPC de R$ 1,85"); a comma ends the phrase ("region, up 19.3%").
_MEASURE_GAP = re.compile(r"\s*(?:[:=]\s*|\s\w{1,3}\s+)?(?:R\$|US\$|\$|€|£)?\s*$", re.UNICODE)


def _value_after_focus(form: QuestionForm, candidates: Sequence[Candidate], question: QuestionWords, floor: float,
                       depth: int) -> DirectAnswer | None:
    """"Qual foi o ROAS …": a value right after the word the question asks about ("ROAS 4,2", "ROAS of 4.2")
    answers a which-question that names a measure; the answer is the measure and its value, and those
    of the other measures the question names that its sentence gives ("ROAS and CPC": "ROAS 5.6; CPC
    1.12")."""
    focus = _focus_noun(form, question)
    if not focus:
        return None
    for c in candidates[:depth]:
        if c.score < floor:
            break
        first = _measure(c.text, focus)
        if first is None:
            continue
        others = [found for word, _ in question.words if fold(word) != focus
                  and (found := _measure(c.text, fold(word))) is not None and found != first]
        text = "; ".join(dict.fromkeys([first, *others]))
        return DirectAnswer(text if len(text.split()) <= MAX_WORDS else first, (c.doc_id,), "value", c.text)
    return None


def _measure(sentence: str, word: str) -> str | None:
    """`word` and the value right after it in `sentence` ("ROAS 5.6"), or None."""
    for m in re.finditer(rf"(?<!\w){re.escape(word)}(?!\w)", fold(sentence)):
        for start, end in _value_spans(sentence):
            if start >= m.end() and _MEASURE_GAP.fullmatch(sentence[m.end():start]):
                return sentence[m.start():end].strip()
    return None


def side_value(side: str, candidates: Sequence[Candidate], question: QuestionWords, floor: float,
               depth: int) -> DirectAnswer | None:
    """One side of a requested comparison ("o ROAS das campanhas do TikTok"): the value right after the
    measure it names first, in the best of `candidates` (ranked by the side's own words) that gives one
    ("ROAS 4,2"); None when none does."""
    return _value_after_focus(QuestionForm("which", focus=tuple(fold(w) for w in _WORDS.findall(side))),
                              candidates, question, floor, depth)


def _span_of(found: DirectAnswer, spans: Sequence[tuple[int, int]]) -> tuple[int, int] | None:
    """Which of its sentence's value `spans` the direct answer gives, or None."""
    sentence = found.sentence
    return next((sp for sp in spans if found.text.startswith(sentence[sp[0]:sp[1]].strip())
                 or sentence[sp[0]:sp[1]].strip() in found.text), None)


def _is_percent(sentence: str, span: tuple[int, int]) -> bool:
    return sentence[span[0]:span[1]].rstrip().endswith("%")


def _of_the_asked_month(found: DirectAnswer, question: QuestionWords, months: Mapping[str, Sequence[str]],
                        reach_chars: int) -> DirectAnswer:
    """The value its sentence ties to the month the question names, when that is another than the one found:
    "O perfil … terminou o 3º trimestre de 2025 com 412 mil seguidores, alta de 31% em relação ao fim de junho
    (315 mil)" for "Quantos seguidores … ao fim de junho de 2025?" is 315 mil, though "412 mil seguidores" is the
    count written before the thing counted. A value is the month's when it is the nearest of its kind to the
    month's name, on either side, within `reach_chars` characters (`compose.direct.month_reach`), and nearer than
    the one found; a value of another kind (a percentage for a count) does not compete. Answers of several parts
    are left as found."""
    names = month_names(months)
    asked = {w for w in _WORDS.findall(fold(question.text)) if w in names}
    sentence = found.sentence
    mentions = [(m.start(), m.end()) for m in _WORDS.finditer(sentence) if fold(m.group(0)) in asked]
    if not mentions or found.also_from:
        return found
    spans = _amounts(sentence, months)
    chosen = _span_of(found, spans)
    if chosen is None:
        return found

    def reach(span: tuple[int, int]) -> int:
        return min(max(span[0] - end, start - span[1], 0) for start, end in mentions)

    kin = [sp for sp in spans if _is_percent(sentence, sp) == _is_percent(sentence, chosen)]
    nearest = min(kin, key=reach)
    if nearest == chosen or reach(nearest) > reach_chars or reach(nearest) >= reach(chosen):
        return found
    return DirectAnswer(_value_phrase(sentence, *nearest, question), found.doc_ids, found.method, sentence)


def _of_the_asked_year(found: DirectAnswer, question: QuestionWords, months: Mapping[str, Sequence[str]]) -> DirectAnswer:
    """The value its sentence gives for the year the question names, when the sentence gives values of several
    years: "Acme Moda's online return rate was 9.8% of orders in 2025, down from 11.2% in 2024" answers "What was
    the online return rate in 2024?" with 11.2%. Each value is the year's written nearest to it, on either side;
    the one value of the asked year, of the kind found (a percentage for a percentage), replaces the one found. A
    question that names a month is the month's (`_of_the_asked_month`); answers of several parts are left as found."""
    asked = set(YEAR.findall(question.text))
    sentence = found.sentence
    years = [(m.start(), m.end(), m.group(0)) for m in YEAR.finditer(sentence)]
    if (len(asked) != 1 or found.also_from or len({y for _, _, y in years}) < 2
            or not month_names(months).isdisjoint(_WORDS.findall(fold(question.text)))):
        return found
    spans = _amounts(sentence, months)
    chosen = _span_of(found, spans)

    def year_of(span: tuple[int, int]) -> str:
        return min(years, key=lambda y: max(span[0] - y[1], y[0] - span[1], 0))[2]

    if chosen is None or year_of(chosen) in asked:
        return found
    kin = [sp for sp in spans if year_of(sp) in asked and _is_percent(sentence, sp) == _is_percent(sentence, chosen)]
    if len(kin) != 1:
        return found
    return DirectAnswer(_value_phrase(sentence, *kin[0], question), found.doc_ids, found.method, sentence)


def _of_the_asked_end(found: DirectAnswer, question: QuestionWords, months: Mapping[str, Sequence[str]],
                      relations: Mapping[str, Sequence[str]]) -> DirectAnswer:
    """The end of a change the question asks for (graph/algorithms/changes.py): "The average refund time fell from
    16 to 8 business days" answers "… after the process changes?" with 8 business days and "… before …" with 16,
    whichever end the words matched. Left as found when the question says neither, or the value is no end of a
    change."""
    end = asked_end(question.text, relations)
    sentence = found.sentence
    if end is None or found.also_from:
        return found
    spans = _amounts(sentence, months)
    chosen = _span_of(found, spans)
    for before, after in change_ends(sentence, spans):
        if chosen in (before, after):
            wanted = before if end == "before" else after
            text = _value_phrase(sentence, *wanted, question)
            if end == "before" and text == sentence[slice(*before)].strip():
                # The unit is written once, after the second value ("from 16 to 8 business days"): 16 business days.
                text += _value_phrase(sentence, *after, question)[len(sentence[slice(*after)].strip()):]
            return DirectAnswer(text, found.doc_ids, found.method, sentence)
    return found


def direct_answer(question_text: str, form: QuestionForm, parts: Sequence[str], candidates: Sequence[Candidate],
                  question: QuestionWords, *, months: Mapping[str, Sequence[str]], negations: Sequence[str],
                  floor: float, depth: int, part_floor: float, name_floor: float = 0.1,
                  name_margin: float = 1.0, own_language_margin: float = 1.0,
                  synonyms: Sequence[Sequence[str]] = (), titles: Mapping[str, str] | None = None,
                  on_topic: float = 0.0,
                  number_words: Mapping[str, float] | None = None,
                  relations: Mapping[str, Sequence[str]] | None = None, light_words: Sequence[str] = (),
                  direct: DirectAnswerSettings | None = None) -> DirectAnswer | None:
    """The direct answer to the question from the ranked `candidates` (see the module docstring), or None.
    `floor`: a sentence holding less of the question than this cannot give it; `depth`: how many of the
    best sentences are looked at for a value or a date; `part_floor`: the share of a yes/no part's words
    one document must hold; `name_floor`: names are counted in the sentences scoring at least this share
    of the best one; `name_margin`: how much more the chosen name must weigh than the next one;
    `own_language_margin`: the share of a better sentence in another language's score that one in the
    question's language, holding what is asked about, needs to give the value or date instead; `titles`:
    the documents' titles by id, where a name is looked for in full ("Sam Bankman-Fried"); `on_topic`: the share
    of the best sentence's score a sentence holding the name needs (below it, it is about something else);
    `number_words`: the
    language's numbers written as words, read as counts ("três segundos"); `relations`: the phrases of "before"
    and "after" (`retrieval.date_relations`), by which a question asks for one end of a change; `light_words`: the
    language's words of tense or aspect ("still"), not looked for in a yes/no answer's document; `direct`: the policy's
    `compose.direct`, whose `focus_weight`, `focus_clause_weight`, `focus_phrase_weight`,
    `contained_name_share`, `name_holders` and `month_reach` are read here (None: their defaults)."""
    direct = direct or DirectAnswerSettings()
    if form.kind == "how_much":
        found = _from_spans(candidates, lambda text: _amounts(text, months), "value", question, floor, depth,
                            _focus_noun(form, question), form.wants_share, own_language_margin,
                            AskedMeasure.of(form, question, synonyms), form.wants_count, form.wants_amount,
                            {fold(w): v for w, v in (number_words or {}).items()}, focus_weight=direct.focus_weight)
        if found is None:
            return None
        found = _of_the_asked_month(found, question, months, direct.month_reach)
        return _of_the_asked_end(_of_the_asked_year(found, question, months), question, months, relations or {})
    if form.kind == "when":
        return _from_spans(candidates, lambda s: _date_spans(s, months), "date", question, floor, depth,
                           _focus_noun(form, question), own_language_margin=own_language_margin,
                           focus_weight=direct.focus_weight)
    if form.kind in ("who", "which"):
        found = _value_after_focus(form, candidates, question, floor, depth)
        if found or not form.wants_name:
            return found
        return _name_answer(question, question_text, candidates, name_floor, _focus_noun(form, question), name_margin,
                            titles, form.wants_person, on_topic, len(parts) <= 1, direct=direct)
    if form.kind == "yes_no":
        return _yes_no(parts or [question_text], candidates, question, negations, part_floor, needs_state=not form.cue,
                       light_words=light_words)
    return None
