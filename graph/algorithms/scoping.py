"""Question scoping: the values and dates a question names, turned into engine filters.

A question that names a source ("as TechCrunch reported") or writes out a date ("published on
October 18, 2023") is searched within it too: `scope_to_mentions` gives those restricted searches,
`mentioned_filters` the filters of one part of a split question. The values come from the engine's
facet of the tenant's documents (`named_values`), never from a list in code.
"""

from __future__ import annotations

import time
from datetime import timedelta

from graph.algorithms.text import count_phrases, find_dates
from graph.policy import Policy


def engine_of(index):
    """The engine behind a wrapper that gives its reads a deadline (providers.resources.BoundedIndex
    keeps it as `inner`), or `index` itself."""
    return getattr(index, "__dict__", {}).get("inner", index)


_values_cache: dict[tuple, tuple[float, list[str], object, int]] = {}
VALUES_TTL_SECONDS = 30.0


def named_values(question: str, field: str, collections: list[str], tenant: str, index) -> list[str]:
    """Values of `field` among the tenant's documents that the question names (word boundaries,
    case-insensitive), longest first. The values are asked of the engine (facet) at most every
    `VALUES_TTL_SECONDS` per collection and tenant, and again after a write through the same engine
    object (a re-ingest that gates or removes a document must not leave its source named)."""
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
    candidates = sorted((v for v in values if len(v) >= 3), key=len, reverse=True)
    return [v for v in candidates if count_phrases(question, [v])]


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
    for mention in find_dates(text, policy.languages.months, cfg.date_relations):
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
