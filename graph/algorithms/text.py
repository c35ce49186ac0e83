"""Text utilities shared by ingest and the nodes: language detection, phrase matching,
sentence splitting, lexical terms (the engine's own BM25 analyzer) and value extraction.

Word lists come from the policy and its language packs; nothing here hard-codes a lexicon. The words
read in every text whatever its language (scale words, abbreviations, date connectors: `SharedWords`)
are passed by callers that hold the policy, and are the current run's policy's otherwise.
"""

from __future__ import annotations

import functools
import json
import math
import re
import unicodedata
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import date
from typing import TYPE_CHECKING, Any

from graph.policy import SharedWords, run_languages

if TYPE_CHECKING:
    from qdrant_edge import Bm25

_WORD = re.compile(r"\w+", re.UNICODE)


def tokens_f1(said: Sequence[str], meant: Sequence[str]) -> float:
    """SQuAD's token F1 of two token lists (counted with multiplicity): how the reader's span is compared with a
    direct answer, and a direct answer with a gold one (each after its own normalisation)."""
    common = sum((Counter(said) & Counter(meant)).values())
    if not common:
        return 0.0
    precision, recall = common / len(said), common / len(meant)
    return 2 * precision * recall / (precision + recall)


def fold(text: str) -> str:
    """Lower-case and NFC-normalise. Accents are kept on purpose: "é" (is) is not "e" (and)."""
    return unicodedata.normalize("NFC", text).casefold()


def month_names(months: Mapping[str, Sequence[str]]) -> frozenset[str]:
    """Every language's month names (`languages.months`), folded as the words they are compared with are."""
    return frozenset(fold(m) for names in months.values() for m in names)


@functools.lru_cache(maxsize=4096)
def _phrase_pattern(phrase: str) -> tuple[tuple[str, ...], re.Pattern[str]]:
    """The phrase's folded words, and the pattern that finds them on word boundaries."""
    words = tuple(fold(phrase).split())
    # Word boundaries that understand accented letters: \w is Unicode-aware.
    return words, re.compile(r"(?<!\w)" + r"\s+".join(map(re.escape, words)) + r"(?!\w)", re.UNICODE)


def count_phrases(text: str, phrases: Iterable[str]) -> dict[str, int]:
    """How often each phrase occurs in `text` on word boundaries (case-insensitive)."""
    folded = fold(text)
    hits: dict[str, int] = {}
    for phrase in phrases:
        words, pattern = _phrase_pattern(phrase)
        # A phrase whose words are not all in the text cannot match: most of a lexicon is ruled out by a
        # substring test, without running its pattern (route_gate counts hundreds of phrases a question).
        if not all(w in folded for w in words):
            continue
        n = len(pattern.findall(folded))
        if n:
            hits[phrase] = n
    return hits


def opens_with_phrase(text: str, phrases: Iterable[str]) -> bool:
    """Whether `text`'s first words are one of `phrases` (case, accents and clause punctuation aside): a
    clause that opens with a question word asks something of its own."""
    folded = [fold(t).strip(",;:") for t in text.split()]
    return any((ws := fold(p).split()) and folded[: len(ws)] == ws for p in phrases)


def holds_words(text: str, phrase: str, *, ends_word: bool = True) -> bool:
    """Whether `phrase` occurs in `text` as it is written, neither starting nor (`ends_word`) ending inside a
    word (what `(?<!\\w)phrase(?!\\w)` matches, without compiling a pattern for each phrase: the bridge
    and the name finder ask this of every name their sentences give)."""
    start = text.find(phrase)
    while start >= 0 and phrase:
        end = start + len(phrase)
        if not (start and _is_word_char(text[start - 1])) and not (
                ends_word and end < len(text) and _is_word_char(text[end])):
            return True
        start = text.find(phrase, start + 1)
    return False


def _is_word_char(char: str) -> bool:
    return char.isalnum() or char == "_"  # re's \w for str patterns


def phrase_alternation(phrases: Iterable[str]) -> str:
    """A regular expression's alternatives for `phrases` as folded text holds them (any run of spaces between
    their words); "" when there is none."""
    return "|".join(r"\s+".join(map(re.escape, fold(p).split())) for p in phrases if p.strip())


@functools.lru_cache(maxsize=256)
def _any_phrase_pattern(phrases: tuple[str, ...]) -> re.Pattern[str] | None:
    alternatives = phrase_alternation(phrases)
    return re.compile(r"(?<!\w)(?:" + alternatives + r")(?!\w)", re.UNICODE) if alternatives else None


def has_any_phrase(text: str, phrases: Iterable[str]) -> bool:
    """Whether any phrase occurs in `text` on word boundaries (one combined pattern per list)."""
    pattern = _any_phrase_pattern(tuple(phrases))
    return bool(pattern and pattern.search(fold(text)))


@functools.lru_cache(maxsize=32)
def _distinct_markers(markers: tuple[tuple[str, tuple[str, ...]], ...]) -> dict[str, frozenset[str]]:
    """Each language's markers minus the words another language lists too."""
    sets = {lang: {fold(w) for w in words} for lang, words in markers}
    return {lang: frozenset(ws - {w for other, os_ in sets.items() if other != lang for w in os_})
            for lang, ws in sets.items()}


def detect_language(text: str, markers: Mapping[str, Sequence[str]], default: str = "en") -> str:
    """The language whose marker words occur most often in `text`; `default` on a tie. A word listed
    for several languages ("a", "do") says nothing and is ignored."""
    tokens = _WORD.findall(fold(text))
    best, best_hits = default, 0
    sets = _distinct_markers(tuple((lang, tuple(words)) for lang, words in markers.items()))
    scores = {lang: sum(1 for t in tokens if t in ws) for lang, ws in sets.items()}
    for lang, hits in scores.items():
        if hits > best_hits or (hits == best_hits and hits > 0 and lang == default):
            best, best_hits = lang, hits
    return best


def corpus_language(documents: Iterable[tuple[str, int]], monolingual_share: float) -> str | None:
    """The language of a corpus from its documents' (language, characters): the one that holds at least
    `monolingual_share` of the text, else "mixed"; None when there is no text."""
    sizes: dict[str, int] = {}
    for language, chars in documents:
        sizes[language] = sizes.get(language, 0) + max(0, chars)
    total = sum(sizes.values())
    if not total:
        return None
    language, chars = max(sizes.items(), key=lambda kv: kv[1])
    return language if chars / total >= monolingual_share else "mixed"


# --- JSON lines ----------------------------------------------------------------------------


def json_lines(lines: Iterable[str]) -> Iterator[tuple[int, Any, json.JSONDecodeError | None]]:
    """(line number, parsed value or None, the parse error or None) for every non-blank line of a
    JSONL text: the ingest, the datasets and the groundedness input each say what is wrong in their
    own words."""
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            yield number, json.loads(line), None
        except json.JSONDecodeError as exc:
            yield number, None, exc


# --- sentences -----------------------------------------------------------------------------

_SENTENCE_END = re.compile(r"(?:(?<=[.!?…])|(?<=[.!?…][\"”')\]]))\s+(?=[\"“(\[]?[A-ZÀ-ÖØ-Þ0-9•\-])|\n\s*\n|\n(?=\s*(?:[-*•]|\d+[.)])\s)")


_ENUMERATOR = re.compile(r"(?:^|\s)\d{1,2}[.)]$")
# A piece that is only citation markers: "… em torno de 2700–2300 a.C. [2-3]." splits after "a.C.", and the
# "[2-3]." left over cites the sentence before it (alone it would leave that sentence uncited).
_ONLY_CITATIONS = re.compile(r"^(?:\[[^\[\]\s][^\[\]]{0,200}\]\s*)+[.!?…]?$")


def shared_words(words: SharedWords | None = None) -> SharedWords:
    """`words` (a policy's `languages.shared`), or, when the caller passes none, the current run's policy's
    (the shipped policy's outside a run: graph/policy.py `run_languages`)."""
    return words if words is not None else run_languages().shared


def split_sentences(text: str, words: SharedWords | None = None) -> list[str]:
    """Split prose into sentences. Every line is split on its own, so titles, bullets and
    paragraphs never run into the next sentence; "Dr." (the language packs' `abbreviations`) and
    inline "1." enumerators do not end one.
    A sentence is kept as its pieces until the end: "Item 1. Item 2. …" joins thousands of pieces,
    and re-reading the joined text at each one made a long list take hours."""
    abbreviations = shared_words(words).abbreviations
    parts: list[list[str]] = []
    for line in text.splitlines():
        joined_prev = False
        for piece in _SENTENCE_END.split(line.strip()):
            piece = piece.strip() if piece else ""
            if not piece:
                continue
            # The joined sentence ends as its last piece does: its last word, or an enumerator.
            last = parts[-1][-1] if parts else ""
            if parts and joined_prev and (last.rsplit(None, 1)[-1].lstrip("([\"“'").casefold() in abbreviations
                                          or _ENUMERATOR.search(last) or _ONLY_CITATIONS.match(piece)):
                parts[-1].append(piece)
            else:
                parts.append([piece])
            joined_prev = True
    return [" ".join(p) for p in parts]


# Letters outside ASCII that a case-insensitive pattern still matches to an ASCII one (Python's `re`
# documentation: "İ", "ı", "ſ" and the Kelvin sign), as they read once lower-cased ("İ" becomes "i" and a
# combining dot, the Kelvin sign "k" already).
_ASCII_CASE_PARTNERS = (("i\u0307", "i"), ("\u0131", "i"), ("\u017f", "s"))


def _lowered_for_words(text: str) -> str:
    """`text` lower-cased, with the non-ASCII letters a case-insensitive pattern takes for ASCII ones
    written as those."""
    lowered = text.lower()
    if not lowered.isascii():
        for partner, letter in _ASCII_CASE_PARTNERS:
            if partner in lowered:
                lowered = lowered.replace(partner, letter)
    return lowered


def _required_words(pattern: str) -> frozenset[str] | None:
    """Strings, lower-case ASCII, one of which every match of `pattern` (case-insensitive) holds, read off
    its parse: a literal run at its top level, or a group of alternatives each of which holds one; the
    choice whose shortest string is longest. None when it has none (or the parse cannot be read): the
    pattern is then tried on every text."""
    try:
        from re import _constants as c  # the `re` module's own parser: private, so any surprise means no shortcut
        from re import _parser as parser
        tree = parser.parse(pattern, re.IGNORECASE | re.MULTILINE)
    except (ImportError, AttributeError, re.error):
        return None

    def required(items) -> frozenset[str] | None:
        choices: list[frozenset[str]] = []
        run: list[str] = []
        for op, arg in list(items) + [(None, None)]:
            # ASCII only: its letters' case partners are known (above); a non-ASCII letter ends the run.
            if op is c.LITERAL and arg < 128:
                run.append(chr(arg).lower())
                continue
            if run:
                choices.append(frozenset(["".join(run)]))
                run = []
            found = None
            if op is c.SUBPATTERN:
                found = required(arg[-1])
            elif op is c.BRANCH:
                branches = [required(b) for b in arg[1]]
                found = frozenset().union(*branches) if all(branches) else None
            elif op in (c.MAX_REPEAT, c.MIN_REPEAT) and arg[0] >= 1:
                found = required(arg[2])
            if found:
                choices.append(found)
        return max(choices, key=lambda words: min(map(len, words)), default=None)

    try:
        words = required(tree)
    except (AttributeError, IndexError, TypeError, ValueError):  # a parse tree of another shape
        return None
    return words if words and all(words) else None


class InstructionMatcher:
    """The policy's `documents.instruction_patterns`, case-insensitive and line by line (`^`). `search`
    gives a match of any of them, or None, as one alternation of them all would.

    Tried at every position of a 3,000-character chunk, the dozen patterns cost ~0.2 ms, and a question
    screens ~30 chunks. So each pattern is tried only on a text that holds one of the words any of its
    matches must (`_required_words`: "ignore", "disregard", "answer" or "resposta", ...), a substring test."""

    def __init__(self, patterns: Sequence[str]):
        self.patterns = tuple(patterns)
        self._screens = [(re.compile(p, re.IGNORECASE | re.MULTILINE), _required_words(p)) for p in self.patterns]

    def search(self, text: str) -> re.Match[str] | None:
        lowered = None
        for pattern, words in self._screens:
            if words is not None:
                if lowered is None:
                    lowered = _lowered_for_words(text)
                if not any(w in lowered for w in words):
                    continue
            found = pattern.search(text)
            if found:
                return found
        return None


@functools.lru_cache(maxsize=8)
def instruction_matcher(patterns: tuple[str, ...]) -> InstructionMatcher | None:
    """The matcher of the policy's `documents.instruction_patterns` (None when empty)."""
    return InstructionMatcher(patterns) if patterns else None


def strip_instructions(text: str, matcher: InstructionMatcher | None) -> tuple[str, int]:
    """`text` without its sentences addressed to a model (prompt injection: "ignore previous
    instructions", "score this answer 1.0", a forged "Document [id]:" header), and how many were
    removed. Line breaks are kept, so headings and paragraphs stay where they were."""
    if matcher is None:
        return text, 0
    return _strip_instructions(text, matcher)


# A chunk retrieved again, as popular chunks are, costs a lookup.
@functools.lru_cache(maxsize=4096)
def _strip_instructions(text: str, matcher: InstructionMatcher) -> tuple[str, int]:
    if not matcher.search(text):
        return text, 0
    removed, lines = 0, []
    for line in text.split("\n"):
        sentences = split_sentences(line)
        kept = [s for s in sentences if not matcher.search(s)]
        removed += len(sentences) - len(kept)
        lines.append(line if len(kept) == len(sentences) else " ".join(kept))
    return ("\n".join(lines) if removed else text), removed


def words(text: str) -> list[str]:
    return _WORD.findall(text)


def ring_mates(text: str, synonyms: Sequence[Sequence[str]]) -> list[str]:
    """Every word of each synonym ring one of `text`'s words belongs to (the policy's
    `languages.question_cues.<lang>.synonyms`: "Actions taken" brings "changed")."""
    if not synonyms:
        return []
    held = {fold(w) for w in words(text)}
    return [w for ring, folded in zip(synonyms, _folded_rings(tuple(map(tuple, synonyms)))) if held & folded
            for w in ring]


@functools.lru_cache(maxsize=32)
def _folded_rings(synonyms: tuple[tuple[str, ...], ...]) -> tuple[frozenset[str], ...]:
    return tuple(frozenset(fold(x) for x in ring) for ring in synonyms)


def with_synonyms(text: str, synonyms: Sequence[Sequence[str]]) -> str:
    """`text`, followed by its `ring_mates`: "Actions taken" then holds "changed"."""
    extra = ring_mates(text, synonyms)
    return f"{text} {' '.join(extra)}" if extra else text


def is_number(x: object) -> bool:
    """A finite int or float, and not a bool: what an engine or a provider must give as a score."""
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


# --- lexical terms -------------------------------------------------------------------------


class Analyzer:
    """Stemmed, stopword-free term ids, produced by the vector engine's own BM25 encoders so that
    the index, the reranker and the composer agree on what a "term" is."""

    def __init__(self, analyzers: Mapping[str, str], cache_size: int = 16384):
        self._languages = dict(analyzers)
        self._models: dict[str, Bm25] = {}
        # The same chunk and sentence texts are analysed by rerank, compose and judge in one run.
        self.terms = functools.lru_cache(maxsize=cache_size)(self._terms)  # type: ignore[method-assign]
        # Popular chunks come back question after question: their sentences are split and analysed once.
        self.sentence_terms = functools.lru_cache(maxsize=4096)(self._sentence_terms)  # type: ignore[method-assign]

    def model(self, lang: str) -> Bm25:
        name = self._languages.get(lang) or next(iter(self._languages.values()))
        if name not in self._models:
            # The engine's module is loaded on the first text analysed, not when an algorithm is imported.
            from qdrant_edge import Bm25, Bm25Config

            self._models[name] = Bm25(Bm25Config(language=name))
        return self._models[name]

    @property
    def languages(self) -> tuple[str, ...]:
        """The languages it analyses (the policy's `languages.analyzers`)."""
        return tuple(self._languages)

    def _terms(self, text: str, lang: str) -> frozenset[int]:
        return frozenset(self.model(lang).embed_query(text).indices)

    def _sentence_terms(self, text: str, lang: str) -> tuple[frozenset[int], ...]:
        """The terms of each sentence of `text`, in order."""
        return tuple(self.terms(s, lang) for s in split_sentences(text) if s.strip())

    def query_vector(self, text: str, lang: str):
        return self.model(lang).embed_query(text)

    def document_vector(self, text: str, lang: str):
        return self.model(lang).embed_document(text)

    def content_words(self, text: str, lang: str) -> list[tuple[str, frozenset[int]]]:
        """The surface words of `text` that carry a term (stopwords dropped), with their term ids."""
        seen: dict[str, frozenset[int]] = {}
        for w in words(text):
            key = w.casefold()
            if key in seen:
                continue
            ids = self.terms(w, lang)
            if ids:
                seen[key] = ids
        return [(w, ids) for w, ids in seen.items()]


@functools.lru_cache(maxsize=8)
def analyzer_for(items: tuple[tuple[str, str], ...]) -> Analyzer:
    return Analyzer(dict(items))


def get_analyzer(policy) -> Analyzer:
    """The lexical analyzer of a policy's `languages.analyzers` (one per distinct setting, shared)."""
    return analyzer_for(tuple(sorted(policy.languages.analyzers.items())))


# --- values: numbers, amounts, percentages, dates, field names -----------------------------

@functools.lru_cache(maxsize=8)
def _number_pattern(scale_words: tuple[tuple[str, float], ...]) -> re.Pattern[str]:
    """A number, with a percent sign or a scale word (the language packs' `scale_words`) after it."""
    scales = "|".join(re.escape(word) for word, _ in scale_words)
    return re.compile(
        r"(?<![\w.,])(\d{1,3}(?:[.,]\d{3})+(?:[.,]\d+)?|\d+(?:[.,]\d+)?)(\s?%" + (rf"|\s?(?:{scales})\b" if scales else "") + ")?",
        re.IGNORECASE | re.UNICODE,
    )
_FIELD = re.compile(r"`([^`\s]{2,60})`|\b([a-z][a-z0-9]*(?:_[a-z0-9]+)+)\b|\b([a-z]+[A-Z][A-Za-z0-9]+)\b")


def _readings(token: str) -> set[float]:
    """Every plausible numeric reading of a token: '1.234' is 1234 (pt) or 1.234 (en)."""
    out: set[float] = set()
    if "." in token and "," in token:
        dec = "." if token.rfind(".") > token.rfind(",") else ","
        thou = "," if dec == "." else "."
        out.add(float(token.replace(thou, "").replace(dec, ".")))
        return out
    for sep in (".", ","):
        if sep in token:
            groups = token.split(sep)
            if len(groups) > 2 or all(len(g) == 3 for g in groups[1:]):
                out.add(float("".join(groups)))  # thousands separators
            if len(groups) == 2:
                out.add(float(f"{groups[0]}.{groups[1]}"))  # decimal separator
            return out
    out.add(float(token))
    return out


def value_spans(text: str, words: SharedWords | None = None) -> list[tuple[int, int]]:
    """(start, end) of each number `extract_values` finds, its scale word or % included."""
    pattern = _number_pattern(shared_words(words).scale_words)
    return [(m.start(), m.start() + len(m.group(0).rstrip())) for m in pattern.finditer(text)]


def extract_values(text: str, words: SharedWords | None = None) -> list[tuple[str, set[float]]]:
    """Numbers found in `text` as (surface form, numeric readings). Scale words (the language packs'
    `scale_words`) multiply ("1,2 milhão" reads as 1.2 and 1 200 000) so that either spelling matches the other."""
    scale_words = shared_words(words).scale_words
    scales = dict(scale_words)
    found: list[tuple[str, set[float]]] = []
    for m in _number_pattern(scale_words).finditer(text):
        token, suffix = m.group(1), (m.group(2) or "").strip().casefold()
        readings = _readings(token)
        scale = scales.get(suffix)
        if scale:
            readings |= {round(r * scale, 6) for r in readings}
        found.append((m.group(0).strip(), readings))
    return found


def value_supported(readings: set[float], pool: set[float]) -> bool:
    return any(abs(r - p) <= 1e-6 * max(1.0, abs(p)) for r in readings for p in pool)


def value_pool(texts: Iterable[str], words: SharedWords | None = None) -> set[float]:
    pool: set[float] = set()
    for t in texts:
        for _, readings in extract_values(t, words):
            pool |= readings
    return pool


def extract_fields(text: str) -> list[str]:
    """Field-like names: `backticked`, snake_case or camelCase identifiers."""
    return [next(g for g in m.groups() if g) for m in _FIELD.finditer(text)]


_CITATION = re.compile(r"\[([^\[\]\s][^\[\]]{0,200})\]")


def citations_in(text: str) -> list[str]:
    """Ids cited as [doc_id] (several ids may be comma-separated inside one bracket)."""
    ids: list[str] = []
    for m in _CITATION.finditer(text):
        for part in m.group(1).split(","):
            part = part.strip()
            if part and part not in ids:
                ids.append(part)
    return ids


def strip_citations(text: str) -> str:
    return re.sub(r"\s+([.,;:!?])", r"\1", _CITATION.sub("", text)).strip()


# --- dates a question names ----------------------------------------------------------------


# A year written alone: 1800–2099, not inside a longer number ("1.2025", "20256").
YEAR = re.compile(r"(?<![\w.,])(?:1[89]|20)\d\d(?![\w.,]\d)")


@dataclass(frozen=True)
class DateMention:
    """A calendar date in a text, and how the text relates to it ("on", "before", "after")."""

    day: date
    relation: str
    start: int
    end: int


def connector_pattern(connectors: Sequence[str]) -> str:
    """An optional connector word and the spaces after it ("de " of "18 de outubro"), as a pattern."""
    alternation = "|".join(re.escape(fold(c)) for c in connectors)
    return rf"(?:(?:{alternation})\s+)?" if alternation else ""


@functools.lru_cache(maxsize=64)
def _date_patterns(months: tuple[tuple[str, ...], ...],
                   connectors: tuple[str, ...]) -> tuple[re.Pattern[str], dict[str, int]]:
    number = {fold(name): i % 12 + 1 for names in months for i, name in enumerate(names)}
    alternation = "|".join(sorted(map(re.escape, number), key=len, reverse=True))
    of = connector_pattern(connectors)
    pattern = re.compile(
        rf"(?<!\w)(?:(?P<m1>{alternation})\.?\s+(?P<d1>\d{{1,2}})(?:st|nd|rd|th)?,?\s+(?P<y1>\d{{4}})"  # October 18, 2023
        rf"|(?P<d2>\d{{1,2}})(?:º|°)?\s+{of}(?P<m2>{alternation})\.?,?\s+{of}(?P<y2>\d{{4}})"  # 18 de outubro de 2023
        r"|(?P<y3>\d{4})-(?P<m3>\d{2})-(?P<d3>\d{2}))(?!\w)",  # 2023-10-18
        re.IGNORECASE | re.UNICODE)
    return pattern, number


def find_dates(text: str, months: Mapping[str, Sequence[str]], relations: Mapping[str, Sequence[str]],
               words: SharedWords | None = None) -> list[DateMention]:
    """Dates written out in `text` (month names per language, each list January..December, and the words
    between day, month and year, `date_connectors`, from the language packs), each with the relation the
    words just before it give ("before", "after"; else "on")."""
    pattern, number = _date_patterns(tuple(tuple(names) for names in months.values()),
                                     shared_words(words).date_connectors)
    folded = fold(text)
    found: list[DateMention] = []
    for m in pattern.finditer(folded):
        g = m.groupdict()
        try:
            if g["y3"]:
                day = date(int(g["y3"]), int(g["m3"]), int(g["d3"]))
            else:
                month = number[fold(g["m1"] or g["m2"])]
                day = date(int(g["y1"] or g["y2"]), month, int(g["d1"] or g["d2"]))
        except ValueError:  # "February 30, 2023" is no date
            continue
        before = folded[max(0, m.start() - 40): m.start()]
        relation = next((rel for rel, phrases in relations.items()
                         if any(re.search(rf"(?<!\w){re.escape(fold(p))}\s*$", before) for p in phrases)), "on")
        found.append(DateMention(day=day, relation=relation, start=m.start(), end=m.end()))
    return found


# --- a chat model's JSON reply -----------------------------------------------------------------

_FENCE = re.compile(r"^\s*```(?:json)?\s*|\s*```\s*$")


def json_reply(text: Any) -> Any:
    """The JSON a chat model's reply holds: a code fence and any prose around the outermost
    {...} are dropped (small models wrap their JSON); a bare [...] is read as is. ValueError says
    what is wrong, in words that can be fed back to the model."""
    body = _FENCE.sub("", str(text or "")).strip()
    start, end = body.find("{"), body.rfind("}")
    if start >= 0 and end > start:
        body = body[start:end + 1]
    elif not body.startswith("["):
        raise ValueError("no JSON object in the reply")
    try:
        return json.loads(body)
    except json.JSONDecodeError as exc:
        raise ValueError(f"invalid JSON ({exc.msg} at character {exc.pos})") from None
