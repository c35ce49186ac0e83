"""decompose: score the question's complexity and split complex questions into 2–4 sub-queries.

`should_decompose` is a pure function of the question and the policy's lexicons. The
deterministic splitter handles several questions ("?"), named perspectives, comparisons and
enumerations joined by connectives. Any failure, or a split that yields fewer than two usable
sub-queries, falls back to the original question.
"""

from __future__ import annotations

import re
import time

from langgraph.runtime import Runtime

from graph.context import Context
from graph.policy import Policy, PolicyError, load_policy
from graph.state import State
from graph.text import count_phrases, fold, words
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


def split_question(question: str, policy: Policy, language: str) -> list[str]:
    """The deterministic splitter: one sub-query per question mark, per named perspective, or per
    clause between connectives (short enumerated items inherit the first clause's head)."""
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

    body = question.rstrip("?. ")
    # A leading complexity verb ("Compare", "Analise") is a request, not content to search for.
    head_words = _lexicon(policy, "complexity")
    clauses = [c for c in _connective_pattern(policy).split(body) if c and c.strip()]
    if len(clauses) < 2:
        return [question]
    first = clauses[0].split()
    if first and fold(first[0]) in {fold(w) for w in head_words}:
        first = first[1:]
    subs = [" ".join(first)]
    for clause in clauses[1:]:
        tokens = clause.split()
        if len(tokens) <= 2 and len(first) > len(tokens):
            # "vendas de 2025 e 2026": "2026" replaces the tail of the first clause.
            subs.append(" ".join(first[: len(first) - len(tokens)] + tokens))
        else:
            subs.append(clause.strip())
    return _clean(subs, question, max_n)


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


_values_cache: dict[tuple, tuple[float, list[str]]] = {}
VALUES_TTL_SECONDS = 30.0


def named_values(question: str, field: str, collections: list[str], tenant: str, index) -> list[str]:
    """Values of `field` among the tenant's documents that the question names (word boundaries,
    case-insensitive), longest first. The values are asked of the engine (facet) at most every
    `VALUES_TTL_SECONDS` per collection and tenant."""
    values: set[str] = set()
    now = time.monotonic()
    for collection in collections:
        key = (id(index), collection, tenant, field)
        hit = _values_cache.get(key)
        if hit is None or now - hit[0] > VALUES_TTL_SECONDS:
            hit = (now, index.values(collection, tenant, field))
            _values_cache[key] = hit
        values.update(hit[1])
    candidates = sorted((v for v in values if len(v) >= 3), key=len, reverse=True)
    return [v for v in candidates if count_phrases(question, [v])]


def scope_to_mentions(question: str, policy: Policy, rag: dict, tenant: str, index) -> list[dict]:
    cfg = policy.section("retrieval")
    scoped: list[dict] = []
    for field in cfg.get("mention_fields") or []:
        for value in named_values(question, field, rag.get("collections") or [], tenant, index):
            scoped.append({"query": question, "filters": {field: value}})
    return scoped[: int(cfg.get("max_mentions", 4))]


@timed("decompose")
def decompose(state: State, runtime: Runtime[Context]) -> dict:
    """Runs for the questions route_gate found complex: split them, or fall back to the original."""
    ctx = context_of(runtime)
    question = state["question"]
    language = state.get("language", "en")
    info = dict(state.get("decomposition") or {})
    try:
        policy = load_policy(ctx.policy_path)
        if "complex" not in info:  # called on its own, without route_gate's assessment
            info.update(assess(question, policy))
        sub_queries = split_question(question, policy, language) if info.get("complex") else [question]
    except (PolicyError, KeyError, ValueError, re.error) as exc:
        info.update(decomposed=False, method="fallback", error=f"decomposition failed, using the original question: {exc}")
        return {"sub_queries": [question], "decomposition": info}
    decomposed = len(sub_queries) >= 2
    info.update(decomposed=decomposed, method="rules" if decomposed else "none")
    if info.get("complex") and not decomposed:
        info["note"] = "complex, but no split gave two independent sub-queries: using the original question"
    return {"sub_queries": sub_queries, "decomposition": info}
