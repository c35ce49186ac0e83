"""Question decomposition by rules: the complexity score and the deterministic splitter.

`complexity` is a pure function of the question and the policy's lexicons (pt and en): connectives,
named perspectives, several question marks, complexity words ("compare", "evolução") and several
question words. `split_question` handles several questions ("?"), named perspectives, comparisons and
enumerations joined by connectives; a split that yields fewer than two usable sub-queries gives the
original question back. `validate_sub_queries` checks a chat model's split by the same standards.
"""

from __future__ import annotations

import functools
import re
from typing import Any

from graph.algorithms.text import count_phrases, detect_language, fold, opens_with_phrase, phrase_alternation, words
from graph.policy import Policy


def should_decompose(question: str, policy: Policy) -> tuple[bool, float]:
    """(decompose?, complexity score). See `complexity` for what the score counts."""
    decide, score, _ = complexity(question, policy)
    return decide, score


def complexity(question: str, policy: Policy) -> tuple[bool, float, list[str]]:
    cfg = policy.decomposition
    weights = cfg.weights
    reasons: list[str] = []
    score = 0.0
    connectives = count_phrases(question, policy.decomposition.words("connectives"))
    if connectives:
        n = min(2, sum(connectives.values()))
        score += n * weights.connective
        reasons.append(f"connectives: {', '.join(sorted(connectives))}")
    perspectives = count_phrases(question, policy.decomposition.words("perspectives"))
    all_perspectives = count_phrases(question, policy.decomposition.words("all_perspectives"))
    if all_perspectives or len(perspectives) >= 2:
        score += weights.perspectives
        reasons.append(f"perspectives: {', '.join(sorted(all_perspectives or perspectives))}")
    if question.count("?") >= 2:
        score += weights.questions
        reasons.append(f"{question.count('?')} question marks")
    complexity_words = count_phrases(question, policy.decomposition.words("complexity"))
    if complexity_words:
        score += min(2, sum(complexity_words.values())) * weights.complexity
        reasons.append(f"complexity words: {', '.join(sorted(complexity_words))}")
    question_words = count_phrases(question, policy.decomposition.words("question_words"))
    if len(question_words) >= 2 or (sum(question_words.values()) >= 2 and asks_again(question, policy)):
        score += weights.question_words
        reasons.append(f"question words: {', '.join(sorted(question_words))}")
    long_enough = len(question) >= cfg.min_length
    if not long_enough:
        reasons.append(f"shorter than {cfg.min_length} characters")
    return long_enough and score >= cfg.threshold, round(score, 3), reasons


def asks_again(question: str, policy: Policy) -> bool:
    """Whether a clause after a connective opens with a question word: "Qual é o orçamento … e qual é a taxa
    …?", "What … and what …?" ask two things even when their question words are the same one."""
    pattern = _asked_again_pattern(tuple(policy.decomposition.words("connectives")),
                                   tuple(policy.decomposition.words("question_words")))
    return pattern is not None and pattern.search(fold(question)) is not None


@functools.lru_cache(maxsize=16)
def _asked_again_pattern(connectives: tuple[str, ...], asking: tuple[str, ...]) -> re.Pattern[str] | None:
    joining, opening = phrase_alternation(connectives), phrase_alternation(asking)
    if not joining or not opening:
        return None
    return re.compile(rf"(?<!\w)(?:{joining})\s+(?:{opening})(?!\w)", re.UNICODE)


def _connective_pattern(policy: Policy) -> re.Pattern[str]:
    phrases = sorted(set(policy.decomposition.words("connectives")) | set(policy.decomposition.words("comparison_markers")), key=len, reverse=True)
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
    cfg = policy.decomposition
    max_n = cfg.max_subqueries

    if question.count("?") >= 2:
        parts = [p.strip() for p in re.findall(r"[^?]+\?", question)]
        return _clean(parts, question, max_n)

    lexicons = cfg.lexicons
    lex = lexicons.get(language) or next(iter(lexicons.values()))
    named = list(count_phrases(question, lex.perspectives))
    if count_phrases(question, lex.all_perspectives):
        named = list(lex.default_perspectives or lex.perspectives)[:max_n]
    if len(named) >= 2:
        core = question.rstrip("?. ")
        return _clean([f"{core} ({p})" for p in named], question, max_n)

    body = _protect(question.rstrip("?. "), keep_whole or [])
    # A leading complexity verb ("Compare", "Analise") is a request, not content to search for.
    head_words = policy.decomposition.words("complexity")
    clauses = [c for c in _connective_pattern(policy).split(body) if c and c.strip()]
    if len(clauses) < 2:
        return [question]
    first = clauses[0].split()
    requested = bool(first) and fold(first[0]) in {fold(w) for w in head_words}
    if requested:
        first = first[1:]
    min_words = cfg.min_clause_words
    asking = lex.question_words
    subs = [first]
    for clause in clauses[1:]:
        tokens = clause.split()
        # A clause that opens with a question word asks something of its own, however short: "what changed
        # afterwards" of "How much was Acme fined, and what changed afterwards?".
        asks = len(tokens) >= 2 and opens_with_phrase(clause, asking)
        short_item = len(tokens) <= 2 and len(first) > len(tokens)
        if short_item and (any(ch.isdigit() for ch in clause)
                           or (requested and _names(tokens) and _names(first[len(first) - len(tokens):]))):
            # "vendas de 2025 e 2026": "2026" replaces the tail of the first clause; so does a name after a
            # name when a comparison is requested ("Compare o ROAS das campanhas do TikTok e do Google").
            subs.append(first[: len(first) - len(tokens)] + tokens)
        elif (len(tokens) < min_words and not asks) or len(subs[-1]) < min_words:
            # "covered by The Verge" is no question on its own: it belongs to the clause before.
            subs[-1] = subs[-1] + tokens
        else:
            subs.append(tokens)
    while len(subs) > max_n:
        # Too many clauses: join the adjacent pair that is shortest together (nothing is dropped).
        i = min(range(len(subs) - 1), key=lambda j: len(subs[j]) + len(subs[j + 1]))
        subs[i: i + 2] = [subs[i] + subs[i + 1]]
    return _clean([_unprotect(" ".join(t)) for t in subs], question, max_n)


def _names(tokens: list[str]) -> bool:
    """Whether one of `tokens` is capitalised: a name ("TikTok", "Google")."""
    return any(t[:1].isupper() for t in tokens)


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


def normalized_question(question: str) -> str:
    return " ".join(words(fold(question)))


def validate_sub_queries(raw: Any, question: str, language: str, max_n: int, policy: Policy) -> list[str]:
    """The LLM's sub-queries, or ValueError: 2..max_n non-empty strings, none the question itself,
    no two alike (sharing more than `decomposition.max_subquery_overlap` of their words), in the
    question's language."""
    items = raw.get("sub_queries") if isinstance(raw, dict) else raw
    if not isinstance(items, list) or not all(isinstance(q, str) for q in items):
        raise ValueError("'sub_queries' must be a list of strings")
    subs = [" ".join(q.split()) for q in items if q.strip()]
    if not 2 <= len(subs) <= max_n:
        raise ValueError(f"{len(subs)} sub-queries, expected 2 to {max_n}")
    keys = [normalized_question(q) for q in subs]
    if normalized_question(question) in keys:
        raise ValueError("a sub-query repeats the whole question")
    for i, a in enumerate(keys):
        for b in keys[i + 1:]:
            wa, wb = set(a.split()), set(b.split())
            if a == b or len(wa & wb) / max(1, len(wa | wb)) > policy.decomposition.max_subquery_overlap:
                raise ValueError("two sub-queries overlap")
    if detect_language(" ".join(subs), policy.languages.markers, language) != language:
        raise ValueError(f"sub-queries not in the question's language ({language})")
    return subs
