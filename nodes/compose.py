"""compose: an answer only from the reranked chunks, every claim followed by its `[doc_id]`.

Without a chat model, an extractive composer does this for real: it scores every sentence of the
retrieved chunks against the question's terms, greedily picks sentences that cover terms not yet
covered (so the answer spans the question's parts instead of repeating one), orders them by
source rank and position, and cites each. It also decides the coverage level, resolves conflicting
versions of one asset (higher score, then newer date, said in one sentence) and, with low or no
coverage, says what is missing and gives exactly three concrete suggestions.

With a chat model (`RAGATE_CHAT_MODEL`), the model writes the answer from the same relevant chunks
under the rules of `prompts/compose.yaml`, token by token: the tokens reach LangGraph's
`stream_mode="messages"` (a preview; the judged `answer` in the final state is what counts). Coverage,
conflict resolution and suggestions stay deterministic. An empty reply, one citing nothing or an id
that was not retrieved, one the judge's hard checks would block (an invented value, an uncited fact),
or a failing model gives the extractive answer, with the reason in `errors`. A model that streams
on and on fails too: the whole answer must arrive within the provider timeout (per retry), as a
non-streamed reply must; the client's own timeout only bounds the wait for each piece.
"""

from __future__ import annotations

import math
import re
import time
from string import Template
from typing import Any

from langgraph.runtime import Runtime

from graph.algorithms.judging import checker_for, sources_of
from graph.algorithms.text import Analyzer, citations_in, get_analyzer, split_sentences
from graph.context import Context
from graph.policy import ComposeSettings
from graph.prompts import llm_prompt, phrase, phrases
from graph.providers.chat import chat_model
from graph.providers.resources import embeddings_for
from graph.providers.specs import ProviderError, failure_reason
from graph.runtime.run_policy import run_policy
from graph.runtime.tenant_binding import run_context
from graph.runtime.timing import timed
from graph.state import Chunk, State

_BULLET = re.compile(r"^\s*(?:[-*•]+|#+|\d+[.)])\s*")


def is_relevant(chunk: Chunk, cfg: ComposeSettings) -> bool:
    """The chunk's score reaches the relevance floor of its scale (its embedding model's, set by rerank;
    else `compose.relevance_floor`)."""
    return chunk["rerankScore"] >= chunk.get("relevanceFloor", cfg.relevance_floor)


def coverage_level(chunks: list[Chunk], cfg: ComposeSettings) -> str:
    """high: 3+ docs, mean ≥ 0.7; medium: 2+ docs, mean ≥ 0.5; low: 1+ relevant doc; none otherwise."""
    best_per_doc: dict[str, float] = {}
    for c in chunks:
        if is_relevant(c, cfg):
            best_per_doc[c["docId"]] = max(best_per_doc.get(c["docId"], 0.0), c["rerankScore"])
    if not best_per_doc:
        return "none"
    n, mean = len(best_per_doc), sum(best_per_doc.values()) / len(best_per_doc)
    high, medium = cfg.coverage.high, cfg.coverage.medium
    if n >= high.min_docs and mean >= high.min_mean_score:
        return "high"
    if n >= medium.min_docs and mean >= medium.min_mean_score:
        return "medium"
    return "low"


def _date_key(chunk: Chunk) -> str:
    meta = chunk.get("metadata") or {}
    return str(meta.get("date") or meta.get("version") or "")


def resolve_conflicts(chunks: list[Chunk], language: str, question: str = "") -> tuple[list[Chunk], list[str]]:
    """Two documents of one asset (e.g. the 2025 and 2026 playbook) may disagree: keep the one with
    the higher score, then the newer date, and say so in one sentence. A version whose year the
    question names is what the user asked about, so it is never dropped ("compare 2025 and 2026")."""
    by_asset: dict[str, list[Chunk]] = {}
    for c in chunks:
        by_asset.setdefault(c.get("assetId") or c["docId"], []).append(c)
    dropped: set[str] = set()
    notes: list[str] = []
    for asset, members in by_asset.items():
        docs: dict[str, Chunk] = {}
        for c in members:
            if c["docId"] not in docs or c["rerankScore"] > docs[c["docId"]]["rerankScore"]:
                docs[c["docId"]] = c
        if len(docs) < 2:
            continue
        best = max(docs.values(), key=lambda c: c["rerankScore"])
        # Within 0.05 the scores are a tie: the newer version wins.
        close = [c for c in docs.values() if best["rerankScore"] - c["rerankScore"] <= 0.05]
        winner = max(close, key=_date_key) if len(close) > 1 else best
        reason_key = "conflict_reason_date" if len(close) > 1 else "conflict_reason_score"
        for loser in (c for c in docs.values() if c["docId"] != winner["docId"]):
            if _date_key(loser)[:4] and re.search(rf"\b{re.escape(_date_key(loser)[:4])}\b", question):
                continue
            dropped.add(loser["docId"])
            notes.append(phrase(language, "conflict", asset=winner.get("assetName") or asset, winner=winner["docId"],
                                reason=phrases(language)[reason_key], loser=loser["docId"]))
    return [c for c in chunks if c["docId"] not in dropped], notes


def _clean_sentence(sentence: str) -> str:
    s = _BULLET.sub("", sentence).strip()
    s = re.sub(r"\s+", " ", s)
    return s


def _is_title(line: str) -> bool:
    """A heading line: no bullet, no closing punctuation, short. It names a topic, it claims nothing."""
    return not _BULLET.match(line) and line.rstrip()[-1:] not in ".!?:;" and len(line.split()) < 15


def _cite(sentence: str, doc_id: str) -> str:
    """'Sales grew 10%.' -> 'Sales grew 10% [doc].'"""
    end = sentence[-1] if sentence[-1] in ".!?" else "."
    body = sentence[:-1] if sentence[-1] in ".!?" else sentence
    return f"{body.rstrip()} [{doc_id}]{end}"


def select_sentences(question_terms: set[int], language: str, chunks: list[Chunk], analyzer: Analyzer,
                     max_sentences: int, max_chars: int) -> list[tuple[Chunk, int, str]]:
    """Greedy coverage: each pick maximises the IDF weight of question terms it adds (terms already
    covered count a third), scaled by its chunk's rerank score."""
    candidates: list[tuple[Chunk, int, str, set[int]]] = []
    for chunk in chunks:
        for pos, raw in enumerate(split_sentences(chunk["content"])):
            if _is_title(raw):
                continue
            sentence = _clean_sentence(raw)
            if len(sentence) < 20 or sentence.startswith("#") or len(sentence) > 600:
                continue
            candidates.append((chunk, pos, sentence, analyzer.terms(sentence, language)))
    if not candidates:
        return []
    n = len(candidates)
    idf = {t: math.log(1 + n / (1 + sum(1 for c in candidates if t in c[3]))) for t in question_terms}
    covered: set[int] = set()
    picked: list[tuple[Chunk, int, str]] = []
    used_chars = 0
    remaining = list(candidates)
    def gain(candidate, covered: set[int]) -> float:
        chunk, _, _, terms = candidate
        g = sum(idf[t] * (0.35 if t in covered else 1.0) for t in terms & question_terms)
        same_language = 1.1 if (chunk.get("metadata") or {}).get("language") == language else 1.0
        return g * (0.5 + 0.5 * chunk["rerankScore"]) * same_language

    while remaining and len(picked) < max_sentences:
        best = max(remaining, key=lambda c: gain(c, covered))
        if gain(best, covered) <= 0:
            break
        remaining.remove(best)
        if used_chars + len(best[2]) > max_chars and picked:
            continue
        picked.append(best[:3])
        used_chars += len(best[2])
        covered |= best[3] & question_terms
        if covered >= question_terms and len(picked) >= 2:
            break
    if not picked:
        # No sentence shares a term with the question (e.g. the sources are in another language):
        # the lead sentences of the best chunks carry its dense match.
        for chunk in chunks[:2]:
            picked.extend((chunk, pos, s) for chunk_, pos, s, _ in candidates if chunk_ is chunk and pos < 2)
    rank_of = {c["id"]: i for i, c in enumerate(chunks)}
    picked.sort(key=lambda p: (rank_of[p[0]["id"]], p[1]))
    return picked


def missing_terms(question: str, language: str, chunks: list[Chunk], analyzer: Analyzer) -> list[str]:
    """Content words of the question that no retrieved chunk contains. Numbers are left out: echoed
    back uncited, a year would read as an unsupported value."""
    present: set[int] = set()
    for c in chunks:
        present |= analyzer.terms(c["content"], language)
    return [w for w, ids in analyzer.content_words(question, language)
            if not ids & present and not any(ch.isdigit() for ch in w)]


def build_suggestions(language: str, rag: dict, chunks: list[Chunk], missing: list[str], policy_allow: list[str]) -> list[str]:
    """Exactly three concrete ways to refine the search, built from what was and was not found."""
    intents = ", ".join(policy_allow[:4]) or "knowledge"
    out = []
    if rag.get("disabled_reason") in ("intent_denied", "intent_unlisted"):
        out.append(phrase(language, "suggestion_allowed_intent", intents=intents))
    if missing:
        out.append(phrase(language, "suggestion_missing_terms", terms=", ".join(missing[:4])))
    out.append(phrase(language, "suggestion_period"))
    if chunks:
        top = chunks[0]
        out.append(phrase(language, "suggestion_closest_doc", asset=top.get("assetName") or top["docId"], doc_id=top["docId"]))
    else:
        out.append(phrase(language, "suggestion_ingest", collections=", ".join(rag.get("collections") or ["documents"])))
    if rag.get("intent_source") == "fallback":
        out.append(phrase(language, "suggestion_intent", intents=intents))
    out.append(phrase(language, "suggestion_split"))
    unique = list(dict.fromkeys(out))
    return unique[:3]


_THINKING = re.compile(r"<think>.*?(?:</think>|$)", re.S | re.I)


def _documents_block(chunks: list[Chunk]) -> str:
    return "\n\n".join(f"Document [{c['docId']}]:\n{c['content']}" for c in chunks)


class StreamTimeout(TimeoutError):
    """The streamed answer did not end within its time."""


def llm_answer(llm: Any, question: str, language: str, coverage: str, chunks: list[Chunk],
               max_tokens: int, deadline_s: float | None = None) -> tuple[str | None, str | None]:
    """(answer, None) from the chat model, streamed token by token; (None, why) when it cannot be used,
    including when the stream has not ended `deadline_s` seconds after the call."""
    from langchain_core.messages import HumanMessage, SystemMessage

    prompt = llm_prompt("compose")
    language_name = prompt["language_names"].get(language, prompt["language_names"]["en"])
    note = prompt["coverage_notes"].get(coverage, "")
    messages = [SystemMessage(Template(prompt["system"]).safe_substitute(language_name=language_name,
                                                                         example_id=chunks[0]["docId"])),
                HumanMessage(Template(prompt["user"]).safe_substitute(
                    question=question, coverage_note=note, documents=_documents_block(chunks),
                    language_name=language_name))]
    started, parts = time.monotonic(), []
    try:
        # .stream, not .invoke: each token is an on_llm_new_token event that stream_mode="messages" forwards.
        for part in llm.bind(max_tokens=max_tokens).stream(messages):
            parts.append(part.text)
            if deadline_s is not None and time.monotonic() - started > deadline_s:
                # Leaving the loop closes the stream (and its connection).
                raise StreamTimeout(f"the answer was still streaming after {deadline_s:g} s")
        text = "".join(parts)
    except Exception as exc:  # timeouts, 429/5xx after the client's retries, connection errors
        return None, f"chat model failed ({failure_reason(exc)})"
    answer = _THINKING.sub("", text).strip()
    retrieved = {c["docId"] for c in chunks}
    cited = citations_in(answer)
    if not answer:
        return None, "chat model answer empty"
    if not cited:
        return None, "chat model answer cites no [doc_id]"
    unknown = [cid for cid in cited if cid not in retrieved]
    if unknown:
        return None, f"chat model answer cites ids that were not retrieved ({', '.join(unknown[:5])})"
    return answer, None


def draft_failures(draft: str, chunks: list[Chunk], language: str, policy, ctx: Context,
                   notes: list[str] | None = None) -> str | None:
    """Why the model's draft cannot be shown, or None. The judge's own hard checks run on it first: a
    draft with an invented value, an uncited fact or a flipped negation would be blocked, and the
    extractive answer serves the user better than a refusal. Then each value's context: a real value
    of the cited document said of something else ("the salary is R$ 1,85" from a CPC of R$ 1,85).
    Unsupported wording is left to the judge (a paraphrase may be fine). A failing embedder (asked
    to rescue a paraphrase) leaves the checks lexical, and says so in `notes`."""
    try:
        embeddings = embeddings_for(ctx)
    except Exception:  # the hard checks need no embeddings
        embeddings = None
    checker, sources = checker_for(policy), sources_of(chunks)
    try:
        checks = checker.check(draft, sources, language, embeddings)
    except Exception as exc:
        if embeddings is None:
            raise
        if notes is not None:
            notes.append(f"compose: embeddings unavailable for the draft's checks ({failure_reason(exc)}); "
                         "lexical support only")
        checks = checker.check(draft, sources, language, None)
    hard = [(i, check) for i, check in enumerate(checks, start=1) if check["hard_failure"]]
    if hard:
        i, first = hard[0]
        return (f"chat model answer failed the groundedness checks in {len(hard)} claim(s) (claim {i}: "
                f"{first['reasons'][0][:160]})")
    # Stricter than the judge, because a false alarm here only costs fluency: a value must sit in a
    # cited sentence about the same thing (measured on the labelled sets: 1 of 1,716 faithful answers flagged).
    misplaced = checker.values_out_of_context(draft, sources, language,
                                              policy.compose.draft_value_context_floor)
    if misplaced:
        i, value = misplaced[0]
        return f"chat model answer puts {value} (claim {i}) in a context its cited sentences do not give it"
    return None


@timed("compose")
def compose(state: State, runtime: Runtime[Context]) -> dict:
    """Write the answer from the reranked chunks only, each claim cited `[doc_id]`.

    Reads `question`, `language`, `rag` (enabled, disabled_reason, collections), `reranked`,
    `sub_queries` (their terms count as the question's). Writes `answer`, `citations_used` (ids of
    retrieved documents the answer cites), `coverage_level`, `suggestions` (three when coverage is
    low or none) and `errors` (a chat model's draft refused, and why)."""
    ctx = run_context(runtime)
    rag = state.get("rag") or {}
    language = state.get("language") or rag.get("language") or "en"
    chunks = state.get("reranked") or []
    question = state.get("question", "")

    try:
        policy = run_policy(rag, ctx)
    except Exception:
        policy = None
    if policy is None or not rag.get("enabled"):
        reason_code = rag.get("disabled_reason") or "policy_invalid"
        reason = phrases(language)["reasons"][reason_code].format(intent=rag.get("intent") or "")
        allow = list(policy.routing.allow_intents) if policy else []
        return {"answer": phrase(language, "retrieval_disabled", reason=reason), "citations_used": [],
                "coverage_level": "none", "suggestions": build_suggestions(language, rag, [], [], allow)}

    cfg = policy.compose
    analyzer = get_analyzer(policy)
    coverage = coverage_level(chunks, cfg)
    relevant = [c for c in chunks if is_relevant(c, cfg)]
    relevant, conflict_notes = resolve_conflicts(relevant, language, question)
    missing = missing_terms(question, language, chunks, analyzer)

    lines: list[str] = []
    errors: list[str] = []
    if coverage != "none":
        written = None
        try:
            llm = chat_model(ctx)
        except ProviderError as exc:
            llm = None
            errors.append(f"compose: {exc}; extractive answer")
        if llm is not None and relevant:
            written, problem = llm_answer(llm, question, language, coverage, relevant,
                                          cfg.llm_max_tokens,
                                          ctx.provider_timeout_s * (ctx.provider_retries + 1))
            if written:
                problem = draft_failures(written, chunks, language, policy, ctx, errors)
                written = None if problem else written
            if problem:
                errors.append(f"compose: {problem}; extractive answer")
        if written:
            lines.append(written)
        else:
            q_terms = analyzer.terms(" ".join([question, *(state.get("sub_queries") or [])]), language)
            picked = select_sentences(q_terms, language, relevant, analyzer, cfg.max_sentences,
                                      cfg.max_answer_chars)
            claims = [_cite(sentence, chunk["docId"]) for chunk, _, sentence in picked]
            if claims:
                lines.append(phrase(language, "intro"))
                lines.append("")
                lines.extend(f"- {c}" for c in claims) if len(claims) > 1 else lines.append(claims[0])
        if lines and conflict_notes:
            lines.append("")
            lines.extend(conflict_notes)
        if not lines:
            coverage = "none"
    if coverage in ("low", "none"):
        if lines:
            lines.append("")
        lines.append(phrase(language, "missing", terms=", ".join(missing[:6])) if missing else phrase(language, "missing_generic"))

    answer = "\n".join(lines).strip()
    retrieved_ids = {c["docId"] for c in chunks}
    citations = [cid for cid in citations_in(answer) if cid in retrieved_ids]
    suggestions = (build_suggestions(language, rag, chunks, missing, list(policy.routing.allow_intents))
                   if coverage in ("low", "none") else [])
    return {"answer": answer, "citations_used": citations, "coverage_level": coverage, "suggestions": suggestions,
            **({"errors": errors} if errors else {})}
