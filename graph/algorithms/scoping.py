"""Question scoping: the values and dates a question names, turned into engine filters.

A question that names a source ("as TechCrunch reported") or writes out a date ("published on
October 18, 2023") is searched within it too: `scope_to_mentions` gives those restricted searches,
`mentioned_filters` the filters of one part of a split question. The values come from the engine's
facet of the tenant's documents (`named_values`), never from a list in code.

A question can also attribute what it asks about to a source none of the tenant's documents comes from
("a Bloomberg article", "according to Reuters"): `unheld_sources` finds those names (the policy's
`languages.source_cues` say how a source is named), so that the answer says the documents hold nothing
from them instead of quoting another source.
"""

from __future__ import annotations

import functools
import re
import time
from collections.abc import Iterable
from datetime import timedelta

from graph.algorithms.text import count_phrases, find_dates, fold, has_any_phrase, shared_words
from graph.policy import Policy, SharedWords, SourceCues


def engine_of(index):
    """The engine behind a wrapper that gives its reads a deadline (providers.resources.BoundedIndex
    keeps it as `inner`), or `index` itself."""
    return getattr(index, "__dict__", {}).get("inner", index)


_values_cache: dict[tuple, tuple[float, list[str], object, int]] = {}
VALUES_TTL_SECONDS = 30.0


def field_values(field: str, collections: list[str], tenant: str, index) -> set[str]:
    """The values of `field` among the tenant's servable documents. They are asked of the engine (facet)
    at most every `VALUES_TTL_SECONDS` per collection and tenant, and again after a write through the
    same engine object (a re-ingest that gates or removes a document must not leave its source named)."""
    values: set[str] = set()
    now = time.monotonic()
    for collection in collections:
        # Cached per engine (not per wrapper giving its reads a deadline), and only for that object:
        # an id can be reused once its object is gone.
        engine = engine_of(index)
        key = (id(engine), collection, tenant, field)
        writes = getattr(engine, "writes", 0)
        hit = _values_cache.get(key)
        if hit is None or hit[2] is not engine or hit[3] != writes or now - hit[0] > VALUES_TTL_SECONDS:
            found = index.values(collection, tenant, field)
            # An engine answering anything but names is not trusted, nor cached: the callers record it.
            if not isinstance(found, (list, tuple)) or not all(isinstance(v, str) for v in found):
                raise ValueError(f"the vector engine listed {field} values that are not names")
            hit = (now, list(found), engine, writes)
            _values_cache[key] = hit
        values.update(hit[1])
    return values


def named_values(question: str, field: str, collections: list[str], tenant: str, index) -> list[str]:
    """Values of `field` among the tenant's documents (`field_values`) that the question names (word
    boundaries, case-insensitive), longest first."""
    candidates = sorted((v for v in field_values(field, collections, tenant, index) if len(v) >= 3),
                        key=len, reverse=True)
    return [v for v in candidates if count_phrases(question, [v])]


def _name(joiners: tuple[str, ...]) -> str:
    """A name: capitalised words, joined by "&" or a few small words (the language packs'
    `name_joiners.sources`: "Wall Street Journal", "Times of India")."""
    joining = "|".join(map(re.escape, (*joiners, "&")))
    return rf"[A-Z][\w&'’.-]*(?:\s+(?:(?:{joining})\s+)?[A-Z][\w&'’.-]*)*"


@functools.lru_cache(maxsize=16)
def _attribution_patterns(cues: SourceCues, joiners: tuple[str, ...]) -> tuple[re.Pattern[str], ...]:
    """"<name> <noun>", "<noun> <link> <name>" and "<before> <name>", each capturing the name."""
    name = _name(joiners)
    def alternatives(words: tuple[str, ...]) -> str:
        return "|".join(r"\s+".join(map(re.escape, w.split())) for w in sorted(words, key=len, reverse=True))

    # The cue words in any case, the name capitalised.
    nouns, links, before = (f"(?i:{alternatives(w)})" if w else "" for w in (cues.nouns, cues.links, cues.before))
    article = rf"(?:(?i:{alternatives(cues.articles)})\s+)?" if cues.articles else ""
    out = []
    if nouns:
        out.append(re.compile(rf"(?<![\w'’])({name})['\"’]?\s+{nouns}\b"))
        if links:
            out.append(re.compile(rf"\b{nouns}\s+{links}\s+{article}['\"‘“]?({name})"))
    if before:
        out.append(re.compile(rf"\b{before}\s+{article}['\"‘“]?({name})"))
    return tuple(out)


def attributed_names(question: str, cues: SourceCues | None, not_names: Iterable[str] = (),
                     words: SharedWords | None = None) -> list[str]:
    """The names the question gives as sources of what it asks about, in order, each once: "Bloomberg"
    of "a Bloomberg article", "Reuters" of "a report by Reuters", "Fortune" of "according to Fortune".
    A name that opens the question, one written with a possessive ("Tesla's report": whose report, not
    where it was published) or one of `not_names` (month names: "the report from Sporting News on
    November 7") is not one."""
    if cues is None:
        return []
    joiners = shared_words(words).name_joiners
    skip = {fold(w) for w in not_names}
    articles = {fold(a) for a in cues.articles}
    found: dict[int, str] = {}
    for pattern in _attribution_patterns(cues, joiners.sources):
        for m in pattern.finditer(question):
            if m.start(1) == 0 or re.search(r"['’]s?$", m.group(1)):
                continue
            # "TechCrunch and The Verge": two sources; "Life and Style" is matched by its parts just as well.
            for offset, name in _parts(m.group(1), joiners.splits):
                words = name.split()
                while words and fold(words[0]) in articles:
                    words = words[1:]
                if words and fold(" ".join(words)) not in skip:
                    found.setdefault(m.start(1) + offset, " ".join(words).strip(".-"))
    return list(dict.fromkeys(found[k] for k in sorted(found)))


def _parts(name: str, splits: tuple[str, ...]) -> list[tuple[int, str]]:
    """A name split where "&" or a word of `splits` ("and", "e") joins two: (offset, part)."""
    out, start = [], 0
    joining = "|".join(map(re.escape, (*splits, "&")))
    for m in re.finditer(rf"\s+(?:{joining})\s+", name):
        out.append((start, name[start:m.start()]))
        start = m.end()
    return [*out, (start, name[start:])]


def _held(name: str, values: set[str]) -> bool:
    """A source value is the name, holds it ("BBC News - Technology" holds "BBC News"), or is held by it."""
    return (any(has_any_phrase(v, (name,)) for v in values)
            or has_any_phrase(name, sorted(v for v in values if len(v) >= 3)))


def unheld_sources(question: str, language: str, policy: Policy, rag: dict, tenant: str,
                   index) -> tuple[list[str], list[str]]:
    """(the sources the question names, those of them none of the tenant's documents comes from).
    Nothing is checked when the documents record no source at all (`retrieval.mention_fields` names
    the field; a collection without it cannot say where its text was published)."""
    cues = policy.languages.source_cues.get(language)
    named = attributed_names(question, cues, [m for months in policy.languages.months.values() for m in months],
                             policy.languages.shared)
    if not named or "source" not in policy.retrieval.mention_fields:
        return named, []
    values = field_values("source", rag.get("collections") or [], tenant, index)
    if not values:
        return named, []
    return named, [n for n in named if not _held(n, values)]


def mentioned_values(question: str, policy: Policy, rag: dict, tenant: str, index) -> dict[str, list[str]]:
    """{field: values the question names} for the policy's `retrieval.mention_fields` (e.g. the
    sources a news question cites), longest first."""
    fields = policy.retrieval.mention_fields
    found = {f: named_values(question, f, rag.get("collections") or [], tenant, index) for f in fields}
    return {f: v for f, v in found.items() if v}


def date_ranges(text: str, policy: Policy) -> list[dict[str, str]]:
    """The document-date range each date `text` writes out stands for: that day ± the policy's
    window ("published on October 18, 2023"), or everything before / after it."""
    cfg = policy.retrieval
    window = timedelta(days=cfg.date_window_days)
    ranges = []
    for mention in find_dates(text, policy.languages.months, cfg.date_relations, policy.languages.shared):
        if mention.relation == "before":
            ranges.append({"lt": mention.day.isoformat()})
        elif mention.relation == "after":
            ranges.append({"gt": mention.day.isoformat()})
        else:
            ranges.append({"gte": (mention.day - window).isoformat(), "lte": (mention.day + window).isoformat()})
    return ranges


def mentioned_filters(text: str, policy: Policy, rag: dict, tenant: str, index) -> dict:
    """Engine filters for a part of a question: the values it names (any of them) and, when it
    writes out exactly one date, that date's range."""
    filters: dict = dict(mentioned_values(text, policy, rag, tenant, index))
    dates = date_ranges(text, policy)
    if len(dates) == 1:
        filters["date"] = dates[0]
    return filters


def scope_to_mentions(question: str, policy: Policy, rag: dict, tenant: str, index) -> list[dict]:
    """Searches of the whole question restricted to what it names: one per named value, and one per
    date it writes out (within the named value when it names just one)."""
    named = mentioned_values(question, policy, rag, tenant, index)
    scoped = [{"query": question, "filters": {field: value}} for field, values in named.items() for value in values]
    only = {f: v[0] for f, v in named.items() if len(v) == 1}
    for r in date_ranges(question, policy):
        if (search := {"query": question, "filters": {**only, "date": r}}) not in scoped:  # a date named twice
            scoped.append(search)
    return scoped[: policy.retrieval.max_mentions]
