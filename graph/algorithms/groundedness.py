"""Groundedness without an LLM: is every claim of an answer supported by the chunks it cites?

An answer is split into claims (sentences; list items; clauses split at ";"). Each claim is checked
against the chunks of the ids it cites, and fails hard when it
- cites an id that was not retrieved;
- states a number, amount, percentage, spelled-out number ("dez por cento" = 10%) or field name that
  no cited chunk holds (amounts are compared as numbers: R$ 1.234,56 = 1234.56 = 1,234.56);
- states a calendar date no cited chunk holds;
- names a person, company or place (a capitalised name) no cited chunk mentions;
- flips the polarity of the source sentence it restates ("X grew" → "X did not grow"), or names the opposite
  state ("met the minimum" → "stayed below the minimum": graph/algorithms/opposites.py);
- states values or names without citing anything.
It fails soft when its wording is not supported: lexical support (share of its stemmed terms found
in the cited chunks), rescued by semantic support (the embedded embedding model, only consulted when
the lexical support is borderline, which keeps a check within a few milliseconds).

Every verdict says, per claim, which chunk supports it best and why it is unsupported. Word lists
(negations, spelled-out numbers, month names) and thresholds come from the policy.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from graph.algorithms.opposites import yes_or_no
from graph.algorithms.text import (
    Analyzer,
    citations_in,
    detect_language,
    extract_fields,
    extract_values,
    find_dates,
    fold,
    shared_words,
    split_sentences,
    strip_citations,
    value_pool,
    value_supported,
)
from graph.policy import GroundednessThresholds, JudgeSettings, Languages, SharedWords

# A list marker; a number is one only when a space follows ("152.67 yards" is a value, not item 152).
_BULLET = re.compile(r"^\s*(?:[-*•]+\s*|#+\s*|\d{1,3}[.)]\s+)")
_TOKEN = re.compile(r"\w+(?:[-'’]\w+)*|[^\w\s]", re.UNICODE)
# A capitalised word: an upper-case first letter (any script with case), then word characters,
# hyphens or apostrophes ("Bankman-Fried", "O'Neil", "McDonald's").
_CAPITALISED = re.compile(r"^[A-ZÀ-ÖØ-ÞĀ-Ž][\w'’-]*$", re.UNICODE)
_CLAUSE_SPLIT = re.compile(r"\s*;\s+")


@dataclass(frozen=True)
class Source:
    """One retrieved chunk as the checker sees it."""

    doc_id: str
    text: str
    chunk_id: str = ""


@dataclass(frozen=True)
class Lexicons:
    """The policy's word lists the checks need, per language."""

    negations: Mapping[str, frozenset[str]]
    number_words: Mapping[str, Mapping[str, float]]
    months: Mapping[str, Sequence[str]]
    ignore_phrases: tuple[re.Pattern[str], ...] = ()
    markers: Mapping[str, Sequence[str]] = field(default_factory=dict)  # to tell a source sentence's language
    shared: SharedWords | None = None  # the words read in every language (None: the shipped policy's)

    @classmethod
    def from_policy(cls, langs: Languages, templates: Sequence[str] = ()) -> Lexicons:
        """The word lists of the policy's `languages` section; `templates` are the composer's own phrases."""
        return cls(
            negations={lang: frozenset(fold(w) for w in ws) for lang, ws in langs.negations.items()},
            number_words={lang: {fold(w): float(v) for w, v in ws.items()} for lang, ws in langs.number_words.items()},
            months=dict(langs.months),
            markers={lang: tuple(ws) for lang, ws in langs.markers.items()},
            ignore_phrases=tuple(template_pattern(t) for t in templates),
            shared=langs.shared,
        )

    def negations_in(self, text: str, default: str) -> frozenset[str]:
        """The negation words of `text`'s language. Never all languages at once: Portuguese "no" is
        "in the", so an English list applied to "definida no playbook" would negate "playbook"."""
        language = detect_language(text, self.markers, default) if self.markers else default
        return self.negations.get(language) or self.negations.get(default) or frozenset()


@functools.lru_cache(maxsize=256)
def template_pattern(template: str) -> re.Pattern[str]:
    """A composer phrase with {placeholders} as a pattern: sentences the composer itself frames
    ("The sources disagree about …") are not claims about the documents."""
    parts = re.split(r"\{[a-z_]+\}", template.strip())
    return re.compile("^" + ".+?".join(re.escape(p) for p in parts) + "$", re.DOTALL)


# --- claims ----------------------------------------------------------------------------------


_CURRENCY = re.compile(r"(?:R|US|A|C)?\$|€|£")


def split_claims(answer: str) -> list[str]:
    """Sentences of the answer (each list item on its own), clauses at ";" split further. A citation
    that closes a sentence covers all of its clauses."""
    claims: list[str] = []
    for sentence in split_sentences(answer):
        sentence = _BULLET.sub("", sentence).strip()
        clauses = [c for c in _CLAUSE_SPLIT.split(sentence) if c.strip()]
        if len(clauses) > 1:
            tail = citations_in(clauses[-1])
            for c in clauses[:-1]:
                if not citations_in(c) and tail:
                    c = f"{c} [{', '.join(tail)}]"
                claims.append(c)
            claims.append(clauses[-1])
        elif sentence:
            claims.append(sentence)
    return claims


# --- values --------------------------------------------------------------------------------


@functools.lru_cache(maxsize=8)
def _per_cent(percent_words: tuple[str, ...]) -> re.Pattern[str] | None:
    alternation = "|".join(r"\s+".join(map(re.escape, fold(p).split())) for p in percent_words)
    return re.compile(rf"\b(?:{alternation})\b") if alternation else None


def spelled_numbers(text: str, number_words: Mapping[str, float],
                    words: SharedWords | None = None) -> list[tuple[str, float]]:
    """Numbers written in words ("twenty-five", "vinte e cinco", "dez por cento" → 25, 25, 10).
    Consecutive number words add up; "and"/"e" may join them; a hundred (and a thousand, where the policy
    lists one) multiplies the words before it ("three hundred", "cento e vinte")."""
    if not number_words:
        return []
    shared = shared_words(words)
    # "por cento" (the language packs' `percent_words`) is a percent sign, not the number "cento" (100) of
    # "cento e vinte".
    per_cent = _per_cent(shared.percent_words)
    folded = fold(text).replace("-", " ")
    tokens = re.findall(r"\w+", per_cent.sub(" percent ", folded) if per_cent else folded)
    joiners = shared.number_joiners
    found: list[tuple[str, float]] = []
    i = 0
    while i < len(tokens):
        if tokens[i] not in number_words:
            i += 1
            continue
        words_, j = [], i
        total = group = 0.0  # the thousands said so far, and the group of hundreds being said
        while j < len(tokens):
            if tokens[j] in number_words:
                value = number_words[tokens[j]]
                if value == 1000:
                    total, group = total + (group or 1) * 1000, 0.0
                elif value == 100:
                    group = (group or 1) * 100
                else:
                    group += value
                words_.append(tokens[j])
                j += 1
            elif tokens[j] in joiners and j + 1 < len(tokens) and tokens[j + 1] in number_words:
                j += 1
            else:
                break
        found.append((" ".join(words_), total + group))
        i = j
    return found


def _dates(text: str, months: Mapping[str, Sequence[str]], words: SharedWords | None = None) -> list:
    return find_dates(text, months, {}, words) if months else []


def _mask(text: str, spans: Sequence[tuple[int, int]]) -> str:
    out = list(text)
    for start, end in spans:
        out[start:end] = " " * (end - start)
    return "".join(out)


# --- names ---------------------------------------------------------------------------------


def extract_names(text: str, words: SharedWords | None = None) -> list[str]:
    """Runs of capitalised words ("Sam Bankman-Fried", "Banco do Brasil", "TechCrunch"), lower-case words of
    the language packs' `name_joiners.claims` (and "&") between them. The first word of the text is
    capitalised by position, so it is left out of a run it opens ("The Verge" → "Verge", "Segundo o
    texto" → nothing)."""
    joiners = _claim_joiners(shared_words(words).name_joiners.claims)
    tokens = _TOKEN.findall(text)
    first = next((i for i, t in enumerate(tokens) if re.match(r"\w", t)), -1)
    names: list[str] = []
    run: list[str] = []

    def close() -> None:
        while run and fold(run[-1]) in joiners:
            run.pop()
        if run:
            names.append(" ".join(run))
        run.clear()

    for i, tok in enumerate(tokens):
        if i == first:
            continue
        if _CAPITALISED.match(tok):
            run.append(tok)
        elif run and fold(tok) in joiners:
            run.append(tok)
        else:
            close()
    close()
    return names


def _word_set(text: str) -> frozenset[str]:
    return frozenset(re.findall(r"\w+", fold(text)))


@functools.lru_cache(maxsize=8)
def _claim_joiners(joiners: tuple[str, ...]) -> frozenset[str]:
    return frozenset((*(fold(j) for j in joiners), "&"))


def name_supported(name: str, source_words: frozenset[str], words: SharedWords | None = None) -> bool:
    """Every word of the name occurs in a cited chunk ("Elon Musk" does not stand for "Sam
    Bankman-Fried")."""
    joiners = _claim_joiners(shared_words(words).name_joiners.claims)
    parts = [w for w in re.findall(r"\w+", fold(name)) if w not in joiners]
    return all(p in source_words for p in parts)


# --- negation ------------------------------------------------------------------------------

_CONTRACTION = re.compile(r"n[’']t\b", re.IGNORECASE)


def negated_terms(text: str, negations: frozenset[str], analyzer: Analyzer, language: str,
                  scope: int = 2) -> tuple[frozenset[int], frozenset[int]]:
    """(terms under a negation, all terms): a negation word governs the next `scope` content words
    (stopwords skipped) up to a punctuation mark: "did not win, but rose" negates "win" only, and
    "no attempt to remove Sam Altman" negates the attempt, not Sam Altman."""
    text = _CONTRACTION.sub(" not", text)
    tokens = _TOKEN.findall(text)
    negated: set[int] = set()
    everything: set[int] = set()
    remaining = 0
    for tok in tokens:
        if not re.match(r"\w", tok):
            remaining = 0
            continue
        if fold(tok) in negations:
            remaining = scope
            continue
        ids = analyzer.terms(tok, language)
        everything |= ids
        if remaining and ids:
            negated |= ids
            remaining -= 1
    return frozenset(negated), frozenset(everything)


def polarity_flipped(claim: str, source_sentence: str, claim_negations: frozenset[str],
                     source_negations: frozenset[str], analyzer: Analyzer, language: str) -> bool:
    """Whether a word the claim and its source share is negated in one and not in the other (each
    read with the negation words of its own language)."""
    claim_neg, claim_all = negated_terms(claim, claim_negations, analyzer, language)
    src_neg, src_all = negated_terms(source_sentence, source_negations, analyzer, language)
    shared = claim_all & src_all
    return bool((claim_neg ^ src_neg) & shared)


# --- the checker ---------------------------------------------------------------------------


@dataclass
class _Doc:
    folded: str
    words: frozenset[str]
    values: set[float]
    dates: set
    terms: frozenset[int]
    sentences: list[tuple[str, frozenset[int], str]] = field(default_factory=list)  # (text, terms, chunk id)


class GroundednessChecker:
    """Per-claim support of an answer against the sources it cites."""

    def __init__(self, analyzer: Analyzer, lexicons: Lexicons, thresholds: GroundednessThresholds | None = None):
        self.analyzer = analyzer
        self.lexicons = lexicons
        self.thresholds = thresholds or GroundednessThresholds()

    # What each cited document offers, computed once per answer.
    def _documents(self, sources: Sequence[Source], language: str) -> dict[str, _Doc]:
        grouped: dict[str, list[Source]] = {}
        for s in sources:
            grouped.setdefault(s.doc_id, []).append(s)
        numbers = self.lexicons.number_words.get(language, {})
        shared = self.lexicons.shared
        docs: dict[str, _Doc] = {}
        for doc_id, members in grouped.items():
            text = "\n".join(s.text for s in members)
            values = value_pool([text], shared) | {v for _, v in spelled_numbers(text, numbers, shared)}
            # Clauses, as the answer's claims are split: a claim restating one clause of a
            # sentence is compared with that clause, not with a negation in the other one.
            sentences = [(clause, self.analyzer.terms(clause, language), s.chunk_id or s.doc_id)
                         for s in members for sent in split_sentences(s.text, shared)
                         for clause in _CLAUSE_SPLIT.split(sent) if clause.strip()]
            docs[doc_id] = _Doc(
                folded=fold(text), words=_word_set(text), values=values,
                dates={d.day for d in _dates(text, self.lexicons.months, shared)},
                terms=frozenset().union(*(t for _, t, _ in sentences)) if sentences else frozenset(),
                sentences=sentences,
            )
        return docs

    def _ignored(self, claim: str) -> bool:
        return any(p.match(claim) for p in self.lexicons.ignore_phrases)

    def check(self, answer: str, sources: Sequence[Source], language: str,
              embeddings: Any = None) -> list[dict[str, Any]]:
        """Per-claim support. `embeddings` (optional) rescues paraphrases whose lexical support is borderline."""
        # Only the documents the answer cites are read (values, dates, terms of every clause): the
        # others can support nothing.
        cited_anywhere = set(citations_in(answer))
        docs = self._documents([s for s in sources if s.doc_id in cited_anywhere], language)
        numbers = self.lexicons.number_words.get(language, {})
        shared = self.lexicons.shared
        checks: list[dict[str, Any]] = []
        for claim in split_claims(answer):
            cited = citations_in(claim)
            text = strip_citations(claim)
            # Ended as a sentence or not: the direct answer "Yes" opens an answer as "Yes [doc]." and is still
            # the composer's verdict on the evidence that follows, no wording of a document.
            ended = text.rstrip(".!?…")
            if not text or self._ignored(claim) or self._ignored(text) or (ended != text and self._ignored(ended)):
                continue
            dates = _dates(text, self.lexicons.months, shared)
            undated = _mask(text, [(d.start, d.end) for d in dates]) if dates else text
            # find_dates reads folded text; its offsets match the original (NFC, same length) text.
            values = extract_values(undated, shared)
            spelled = spelled_numbers(undated, numbers, shared)
            fields_ = extract_fields(text)
            names = extract_names(undated, shared)
            if not cited and not values and not spelled and not fields_ and not names and not dates:
                continue  # framing ("Based on the retrieved documents:") makes no factual claim
            known = [c for c in cited if c in docs]  # every retrieved id the answer cites has a doc
            unknown = [c for c in cited if c not in docs]
            pool: set[float] = set().union(*(docs[c].values for c in known)) if known else set()
            source_words = frozenset().union(*(docs[c].words for c in known)) if known else frozenset()
            source_dates = set().union(*(docs[c].dates for c in known)) if known else set()
            bad_values = [s for s, readings in values if not value_supported(readings, pool)]
            bad_values += [s for s, v in spelled if not value_supported({v}, pool)]
            bad_dates = [text[d.start:d.end] for d in dates if d.day not in source_dates]
            bad_fields = [f for f in fields_ if not any(f.casefold() in docs[c].folded for c in known)]
            bad_names = [n for n in names if not name_supported(n, source_words, shared)]

            terms = self.analyzer.terms(text, language)
            lexical, best_sentence, best_chunk = self._lexical(terms, known, docs)
            semantic = None
            low, high = self.thresholds.semantic_band
            if known and terms and low <= lexical < high and embeddings is not None:
                semantic = self._semantic(embeddings, text, terms, known, docs)
            support = max(lexical, semantic if semantic is not None else 0.0) if known else 0.0
            flipped = bool(best_sentence) and self._flipped(text, best_sentence, language)
            # "met the minimum ROAS" restating "stayed below the minimum ROAS": the other side of a state.
            opposed = bool(best_sentence) and not flipped and yes_or_no(text, best_sentence) == "no"

            reasons = []
            if unknown:
                reasons.append(f"cites ids that were not retrieved: {', '.join(unknown)}")
            if not cited:
                reasons.append("states facts without citing a source")
            if bad_values:
                reasons.append(f"values not found in the cited chunks: {', '.join(bad_values)}")
            if bad_dates:
                reasons.append(f"dates not found in the cited chunks: {', '.join(bad_dates)}")
            if bad_fields:
                reasons.append(f"field names not found in the cited chunks: {', '.join(bad_fields)}")
            if bad_names:
                reasons.append(f"names not found in the cited chunks: {', '.join(bad_names)}")
            if flipped:
                reasons.append(f"contradicts its source sentence in {best_chunk}: a negation in one is not in the other")
            if opposed:
                reasons.append(f"contradicts its source sentence in {best_chunk}: it names the opposite of the state "
                               "the source names")
            hard = bool(reasons)
            if known and not hard and support < self.thresholds.claim_support_floor:
                reasons.append(f"wording not supported by the cited chunks (support {support:.2f})")
            checks.append({
                "claim": text, "cited": cited, "chunk": best_chunk,
                "support": round(support, 3), "lexical": round(lexical, 3),
                "semantic": None if semantic is None else round(semantic, 3),
                "unsupported_values": bad_values + bad_dates, "unsupported_fields": bad_fields,
                "unsupported_names": bad_names, "unknown_citations": unknown, "negation_flip": flipped or opposed,
                "hard_failure": hard, "supported": not reasons, "reasons": reasons,
            })
        return checks

    def values_out_of_context(self, answer: str, sources: Sequence[Source], language: str,
                              floor: float) -> list[tuple[int, str]]:
        """(claim number, value) for each value found in its cited chunks only in sentences about
        something else: "the average salary is R$ 1,85 [d]" when R$ 1,85 is d's CPC. A value's context
        is the claim's other content words; the best cited sentence holding the value must share at
        least `floor` of them. Claims with fewer than three such words are not judged."""
        cited_anywhere = set(citations_in(answer))
        holders: dict[str, list[tuple[set[float], frozenset[int]]]] = {}
        for src in sources:
            if src.doc_id in cited_anywhere:
                for sentence in split_sentences(src.text, self.lexicons.shared):
                    if readings := value_pool([sentence], self.lexicons.shared):
                        holders.setdefault(src.doc_id, []).append((readings, self.analyzer.terms(sentence, language)))
        found: list[tuple[int, str]] = []
        for number, claim in enumerate(split_claims(answer), start=1):
            text = strip_citations(claim)
            values = extract_values(text, self.lexicons.shared)
            if not values:
                continue
            masked = _mask(text, [(m.start(), m.end()) for surface, _ in values for m in re.finditer(re.escape(surface), text)])
            context = self.analyzer.terms(_CURRENCY.sub(" ", masked), language)  # "R$" says nothing of what is measured
            if len(context) < 3:
                continue
            for surface, readings in values:
                shares = [len(context & terms) / len(context) for c in citations_in(claim)
                          for pool, terms in holders.get(c, []) if value_supported(readings, pool)]
                if shares and max(shares) < floor:
                    found.append((number, surface))
        return found

    def _lexical(self, terms: frozenset[int], known: list[str], docs: dict[str, _Doc]) -> tuple[float, str, str]:
        """Share of the claim's terms in the cited documents, and the cited sentence that shares most."""
        if not known:
            return 0.0, "", ""
        source_terms = frozenset().union(*(docs[c].terms for c in known))
        lexical = len(terms & source_terms) / len(terms) if terms else 1.0
        best, best_chunk, best_overlap = "", "", -1.0
        for c in known:
            for sentence, sterms, chunk_id in docs[c].sentences:
                overlap = len(terms & sterms) / len(terms) if terms else 0.0
                if overlap > best_overlap:
                    best, best_chunk, best_overlap = sentence, chunk_id, overlap
        if best_overlap < self.thresholds.negation_min_overlap:
            best = ""  # no sentence restates this claim closely enough to compare polarity
        return lexical, best, best_chunk

    def _semantic(self, embeddings: Any, text: str, terms: frozenset[int], known: list[str],
                  docs: dict[str, _Doc]) -> float:
        """Cosine between the claim and its three lexically closest cited sentences, mapped to 0..1."""
        candidates = sorted(((len(terms & st), s) for c in known for s, st, _ in docs[c].sentences), reverse=True)[:3]
        if not candidates:
            return 0.0
        vectors = embeddings.embed_documents([text] + [s for _, s in candidates])
        claim, rest = vectors[0], vectors[1:]
        best = max(_cosine(claim, v) for v in rest)
        lo, hi = self.thresholds.semantic_scale
        return min(1.0, max(0.0, (best - lo) / (hi - lo)))

    def _flipped(self, text: str, source_sentence: str, language: str) -> bool:
        if not self.lexicons.negations:
            return False
        source_negations = self.lexicons.negations_in(source_sentence, language)
        claim_negations = self.lexicons.negations.get(language, frozenset())
        if source_negations != claim_negations and self.lexicons.negations_in(text, language) == source_negations:
            # A claim quoting a source in another language than the answer's is read in that language: in
            # an English answer, a Portuguese "acesso antecipado no app" is "in the app", not a negation.
            # Only then: a short English claim opening "No." may look Portuguese by itself.
            claim_negations = source_negations
        return polarity_flipped(text, source_sentence, claim_negations, source_negations, self.analyzer, language)


def _cosine(a: Sequence[float], b: Sequence[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b))
    na = math.sqrt(sum(x * x for x in a))
    nb = math.sqrt(sum(y * y for y in b))
    return dot / (na * nb) if na and nb else 0.0


def groundedness_score(checks: Sequence[Mapping[str, Any]], cfg: JudgeSettings) -> tuple[float, str]:
    """0–1 and its reason. Mean support of the cited claims (0.5–1.0) when every claim holds; capped
    below the block threshold by an invented value, name, date, citation or a flipped claim
    (`invented_value_groundedness`, `invented_citation_groundedness`), or by a claim the cited chunks
    do not support (`unsupported_claim_groundedness`)."""
    cited = [c for c in checks if c["cited"]]
    score = 0.5 + 0.5 * (sum(c["support"] for c in cited) / len(cited)) if cited else 1.0
    reason = f"{len(cited)} cited claim(s), mean support {score:.2f}" if cited else "no factual claims made"
    failing = [c for c in checks if not c["supported"]]
    if not failing:
        return round(score, 3), reason
    unknown_ids = [i for c in failing for i in c["unknown_citations"]]
    invented = [v for c in failing for v in c["unsupported_values"] + c["unsupported_fields"] + c["unsupported_names"]]
    if unknown_ids:
        score = min(score, cfg.invented_citation_groundedness)
    if invented or any(c["negation_flip"] or not c["cited"] for c in failing):
        score = min(score, cfg.invented_value_groundedness)
    score = min(score, cfg.unsupported_claim_groundedness)
    # Claims are named by position, not quoted: reasoning goes to logs, which never hold document text.
    first = next(i for i, c in enumerate(checks, 1) if not c["supported"])
    reason = f"{len(failing)} of {len(checks)} claim(s) unsupported; claim {first}: {checks[first - 1]['reasons'][0]}"
    return round(score, 3), reason
