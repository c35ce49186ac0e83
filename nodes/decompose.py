"""decompose: score the question's complexity and split complex questions into 2–4 sub-queries.

`should_decompose` is a pure function of the question and the policy's lexicons. The
deterministic splitter handles several questions ("?"), named perspectives, comparisons and
enumerations joined by connectives. Any failure, or a split that yields fewer than two usable
sub-queries, falls back to the original question. A failure is recorded in `errors`: the chat model
failing gives the rule-based split, the engine failing to list the values a question names gives a
split that may cut one of them.
"""

from __future__ import annotations

import re
import time
from collections import OrderedDict
from datetime import timedelta
from string import Template
from typing import Any

from langgraph.constants import TAG_NOSTREAM
from langgraph.runtime import Runtime

from graph.context import Context
from graph.policy import Policy, load_policy
from graph.prompts import llm_prompt
from graph.providers import chat_model, failure_reason, json_reply
from graph.resources import BoundedIndex, bounded_index
from graph.state import State
from graph.text import count_phrases, detect_language, find_dates, fold, words
from nodes.instrumentation import context_of, timed


def _lexicon(policy: Policy, key: str) -> list[str]:
    """Union of one word list over every language (questions mix languages: "vs", "ROAS")."""
    out: list[str] = []
    for lex in policy.raw["decomposition"]["lexicons"].values():
        out.extend(w for w in lex.get(key, []) if w not in out)
    return out


def should_decompose(question: str, policy: Policy) -> tuple[bool, float]:
    """(decompose?, complexity score). See `complexity` for what the score counts."""
    decide, score, _ = complexity(question, policy)
    return decide, score


def complexity(question: str, policy: Policy) -> tuple[bool, float, list[str]]:
    cfg = policy.raw["decomposition"]
    weights = cfg["weights"]
    reasons: list[str] = []
    score = 0.0
    connectives = count_phrases(question, _lexicon(policy, "connectives"))
    if connectives:
        n = min(2, sum(connectives.values()))
        score += n * weights.get("connective", 1.0)
        reasons.append(f"connectives: {', '.join(sorted(connectives))}")
    perspectives = count_phrases(question, _lexicon(policy, "perspectives"))
    all_perspectives = count_phrases(question, _lexicon(policy, "all_perspectives"))
    if all_perspectives or len(perspectives) >= 2:
        score += weights.get("perspectives", 2.0)
        reasons.append(f"perspectives: {', '.join(sorted(all_perspectives or perspectives))}")
    if question.count("?") >= 2:
        score += weights.get("questions", 2.0)
        reasons.append(f"{question.count('?')} question marks")
    complexity_words = count_phrases(question, _lexicon(policy, "complexity"))
    if complexity_words:
        score += min(2, sum(complexity_words.values())) * weights.get("complexity", 1.0)
        reasons.append(f"complexity words: {', '.join(sorted(complexity_words))}")
    question_words = count_phrases(question, _lexicon(policy, "question_words"))
    if len(question_words) >= 2:
        score += weights.get("question_words", 1.0)
        reasons.append(f"question words: {', '.join(sorted(question_words))}")
    long_enough = len(question) >= cfg["min_length"]
    if not long_enough:
        reasons.append(f"shorter than {cfg['min_length']} characters")
    return long_enough and score >= cfg["threshold"], round(score, 3), reasons


def _connective_pattern(policy: Policy) -> re.Pattern[str]:
    phrases = sorted(set(_lexicon(policy, "connectives")) | set(_lexicon(policy, "comparison_markers")), key=len, reverse=True)
    alternation = "|".join(r"\s+".join(map(re.escape, p.split())) for p in phrases)
    # Split at connectives (and commas / semicolons) standing between words.
    return re.compile(rf"\s*[;,]\s*(?:(?:{alternation})\s+)?|\s+(?:{alternation})\s+", re.IGNORECASE | re.UNICODE)


# Commas that do not end a clause: inside numbers ("1,000") and dates ("October 18, 2023").
_INNER_COMMA = re.compile(r"(?<=\d),(?=\d)|(?<=\d),(?= \d{4}\b)")
_MASK = "\u2063"  # invisible separator: stands for a protected comma or space while splitting


def _protect(text: str, keep_whole: list[str]) -> str:
    text = _INNER_COMMA.sub(_MASK + "c", text)
    for phrase in sorted(keep_whole, key=len, reverse=True):
        # Named values ("The Roar | Sports Writers Blog", "Procter and Gamble") are never split.
        text = re.sub(re.escape(phrase), lambda m: m.group(0).replace(",", _MASK + "c").replace(" ", _MASK + "s"),
                      text, flags=re.IGNORECASE)
    return text


def _unprotect(text: str) -> str:
    return text.replace(_MASK + "c", ",").replace(_MASK + "s", " ")


def split_question(question: str, policy: Policy, language: str, keep_whole: list[str] | None = None) -> list[str]:
    """The deterministic splitter: one sub-query per question mark, per named perspective, or per
    clause between connectives (short enumerated items inherit the first clause's head; clauses
    too short to stand alone join their neighbour). `keep_whole` are phrases never cut (values the
    question names, such as a source)."""
    cfg = policy.raw["decomposition"]
    max_n = int(cfg["max_subqueries"])

    if question.count("?") >= 2:
        parts = [p.strip() for p in re.findall(r"[^?]+\?", question)]
        return _clean(parts, question, max_n)

    lexicons = cfg["lexicons"]
    lex = lexicons.get(language) or next(iter(lexicons.values()))
    named = list(count_phrases(question, lex.get("perspectives", [])))
    if count_phrases(question, lex.get("all_perspectives", [])):
        named = list(lex.get("default_perspectives") or lex.get("perspectives", []))[:max_n]
    if len(named) >= 2:
        core = question.rstrip("?. ")
        return _clean([f"{core} ({p})" for p in named], question, max_n)

    body = _protect(question.rstrip("?. "), keep_whole or [])
    # A leading complexity verb ("Compare", "Analise") is a request, not content to search for.
    head_words = _lexicon(policy, "complexity")
    clauses = [c for c in _connective_pattern(policy).split(body) if c and c.strip()]
    if len(clauses) < 2:
        return [question]
    first = clauses[0].split()
    if first and fold(first[0]) in {fold(w) for w in head_words}:
        first = first[1:]
    min_words = int(cfg.get("min_clause_words", 4))
    subs = [first]
    for clause in clauses[1:]:
        tokens = clause.split()
        if len(tokens) <= 2 and len(first) > len(tokens) and any(ch.isdigit() for ch in clause):
            # "vendas de 2025 e 2026": "2026" replaces the tail of the first clause.
            subs.append(first[: len(first) - len(tokens)] + tokens)
        elif len(tokens) < min_words or len(subs[-1]) < min_words:
            # "covered by The Verge" is no question on its own: it belongs to the clause before.
            subs[-1] = subs[-1] + tokens
        else:
            subs.append(tokens)
    while len(subs) > max_n:
        # Too many clauses: join the adjacent pair that is shortest together (nothing is dropped).
        i = min(range(len(subs) - 1), key=lambda j: len(subs[j]) + len(subs[j + 1]))
        subs[i: i + 2] = [subs[i] + subs[i + 1]]
    return _clean([_unprotect(" ".join(t)) for t in subs], question, max_n)


def _clean(parts: list[str], question: str, max_n: int) -> list[str]:
    seen, out = {fold(question).strip(" ?."), ""}, []
    for p in parts:
        p = p.strip(" ,;")
        key = fold(p).strip(" ?.")
        if len(words(p)) < 2 or key in seen:
            continue
        seen.add(key)
        out.append(p)
    return out[:max_n] if len(out) >= 2 else [question]


def assess(question: str, policy: Policy) -> dict:
    """The decomposition record route_gate writes: the complexity score, its reasons, and whether
    the question goes through `decompose` (only complex questions do)."""
    decide, score, reasons = complexity(question, policy)
    return {"complex": decide, "decomposed": False, "score": score, "method": "none", "reasons": reasons}


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
        engine = index.inner if isinstance(index, BoundedIndex) else index
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
    fields = policy.section("retrieval").get("mention_fields") or []
    found = {f: named_values(question, f, rag.get("collections") or [], tenant, index) for f in fields}
    return {f: v for f, v in found.items() if v}


def date_ranges(text: str, policy: Policy) -> list[dict[str, str]]:
    """The document-date range each date `text` writes out stands for: that day ± the policy's
    window ("published on October 18, 2023"), or everything before / after it."""
    cfg = policy.section("retrieval")
    window = timedelta(days=int(cfg.get("date_window_days", 1)))
    ranges = []
    for mention in find_dates(text, policy.section("languages").get("months") or {}, cfg.get("date_relations") or {}):
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
    return scoped[: int(policy.section("retrieval").get("max_mentions", 4))]


# --- LLM decomposition (RAGATE_CHAT_MODEL) --------------------------------------------------------

_llm_cache: OrderedDict[tuple[str, str], list[str]] = OrderedDict()
LLM_CACHE_SIZE = 1024


def _normalized(question: str) -> str:
    return " ".join(words(fold(question)))


def validate_sub_queries(raw: Any, question: str, language: str, max_n: int, policy: Policy) -> list[str]:
    """The LLM's sub-queries, or ValueError: 2..max_n non-empty strings, none the question itself,
    no two alike, in the question's language."""
    items = raw.get("sub_queries") if isinstance(raw, dict) else raw
    if not isinstance(items, list) or not all(isinstance(q, str) for q in items):
        raise ValueError("'sub_queries' must be a list of strings")
    subs = [" ".join(q.split()) for q in items if q.strip()]
    if not 2 <= len(subs) <= max_n:
        raise ValueError(f"{len(subs)} sub-queries, expected 2 to {max_n}")
    keys = [_normalized(q) for q in subs]
    if _normalized(question) in keys:
        raise ValueError("a sub-query repeats the whole question")
    for i, a in enumerate(keys):
        for b in keys[i + 1:]:
            wa, wb = set(a.split()), set(b.split())
            if a == b or len(wa & wb) / max(1, len(wa | wb)) > 0.8:
                raise ValueError("two sub-queries overlap")
    langs = policy.raw["languages"]
    if detect_language(" ".join(subs), langs["markers"], language) != language:
        raise ValueError(f"sub-queries not in the question's language ({language})")
    return subs


def llm_sub_queries(llm: Any, spec: str, question: str, language: str, policy: Policy) -> list[str]:
    """2–4 sub-queries from the chat model, cached by normalized question (a repeated question costs
    no call). Raises on any failure; the caller falls back to the rules."""
    from langchain_core.messages import HumanMessage, SystemMessage

    key = (spec, _normalized(question))
    if key in _llm_cache:
        _llm_cache.move_to_end(key)
        return list(_llm_cache[key])
    max_n = int(policy.section("decomposition")["max_subqueries"])
    prompt = llm_prompt("decompose")
    reply = llm.invoke([SystemMessage(Template(prompt["system"]).safe_substitute(max_n=max_n, language=language)),
                        HumanMessage(Template(prompt["user"]).safe_substitute(question=question))],
                       config={"tags": [TAG_NOSTREAM]})  # sub-query JSON is not answer text for stream_mode="messages"
    subs = validate_sub_queries(json_reply(reply.content), question, language, max_n, policy)
    _llm_cache[key] = subs
    while len(_llm_cache) > LLM_CACHE_SIZE:
        _llm_cache.popitem(last=False)
    return list(subs)


@timed("decompose")
def decompose(state: State, runtime: Runtime[Context]) -> dict:
    """Runs for the questions route_gate found complex: split them, or fall back to the original."""
    ctx = context_of(runtime)
    question = state["question"]
    language = state.get("language", "en")
    info = dict(state.get("decomposition") or {})
    errors: list[str] = []
    try:
        policy = load_policy(ctx.policy_path)
        if "complex" not in info:  # called on its own, without route_gate's assessment
            info.update(assess(question, policy))
        sub_queries = [question]
        if info.get("complex"):
            # Values the question names (a source, ...) are kept whole: the sub-query that names one
            # is searched within it (see retrieve).
            rag = state.get("rag") or {}
            named = {}
            if rag.get("enabled"):
                try:
                    named = mentioned_values(question, policy, rag, ctx.tenant, bounded_index(ctx))
                except Exception as exc:  # the split goes on without them: a named value may be cut
                    errors.append(f"decompose: values the question names unavailable ({failure_reason(exc)}); "
                                  "split without them")
            llm = None
            try:
                llm = chat_model(ctx)
                if llm is not None:
                    sub_queries = llm_sub_queries(llm, ctx.chat_model, question, language, policy)
                    info.update(decomposed=True, method="llm")
                    return {"sub_queries": sub_queries, "decomposition": info, **({"errors": errors} if errors else {})}
            except Exception as exc:  # the rules below are the fallback, and the reason is kept
                info["llm_error"] = failure_reason(exc)
                errors.append(f"decompose: chat model unusable ({info['llm_error']}); rule-based split")
            sub_queries = split_question(question, policy, language, [v for vs in named.values() for v in vs])
    except Exception as exc:  # any failure (policy, splitter): the original question stands
        info.update(decomposed=False, method="fallback", error=f"decomposition failed, using the original question: {exc}")
        return {"sub_queries": [question], "decomposition": info,
                "errors": [*errors, f"decompose: {failure_reason(exc)}; the original question is searched"]}
    decomposed = len(sub_queries) >= 2
    info.update(decomposed=decomposed, method="rules" if decomposed else "none")
    if info.get("complex") and not decomposed:
        info["note"] = "complex, but no split gave two independent sub-queries: using the original question"
    return {"sub_queries": sub_queries, "decomposition": info, **({"errors": errors} if errors else {})}
