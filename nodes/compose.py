"""compose: an answer only from the reranked chunks, every claim followed by its `[doc_id]`.

The answer opens with the direct answer when the evidence gives one (graph/algorithms/direct_answer.py:
the value, date, name or yes/no the question asks for, cited; one value per part when it asks for
several: "R$ 93.587.114,46; 11,1%"), then lists only the points that support
it or answer another part of the question: a sentence of another period than the question names, far
below the best one, or adding nothing new is left out, so length follows the question, not the context
budget. A part of the question no point covers is named as missing; a comparison lists its sides in
order. It also decides the coverage level, resolves conflicting versions of one asset (higher score,
then newer date, said in one sentence when the answer uses the winner) and, with low or no coverage,
gives exactly three concrete suggestions. It says "nothing found" only when it has nothing to say.

With a chat model (`RAGATE_CHAT_MODEL`), the model writes the answer from the same relevant chunks
under the rules of `prompts/compose.yaml`, token by token: the tokens reach LangGraph's
`stream_mode="messages"` (a preview; the judged `answer` in the final state is what counts). Coverage,
conflict resolution and suggestions stay deterministic. The prompt asks the model to open with the
direct answer: when its draft does (`draft_direct_answer`: a short first line, cited, or a yes/no to a
yes/no question; its values pass the groundedness checks with the rest), that is `direct_answer`; when
it does not, the deterministic direct answer is `direct_answer` and is put on top of the draft. An empty reply, one citing nothing or an id
that was not retrieved, one the judge's hard checks would block (an invented value, an uncited fact),
or a failing model gives the extractive answer, with the reason in `errors`. A model that streams
on and on fails too: the whole answer must arrive within the provider timeout (per retry), as a
non-streamed reply must; the client's own timeout only bounds the wait for each piece.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

from langgraph.runtime import Runtime

from graph.algorithms.answer_reading import CONFIRMED, DirectCheck, cited_texts, yes_no_said
from graph.algorithms.chat_draft import draft_direct_answer, llm_answer
from graph.algorithms.coverage import answer_coverage, coverage_level, is_relevant, resolve_conflicts
from graph.algorithms.cross_language import (
    answered_by_meaning,
    in_another_language,
    meaning_relevance,
    own_language_close,
)
from graph.algorithms.direct_answer import DirectAnswer
from graph.algorithms.extractive_answer import (
    ExtractiveAnswer,
    converging_name,
    direct_line,
    direct_text,
    extractive_answer,
)
from graph.algorithms.judging import checker_for, sources_of
from graph.algorithms.missing_parts import asked_kind, missing_terms, part_leads, pointing_words
from graph.algorithms.suggestions import build_suggestions
from graph.algorithms.text import Analyzer, citations_in, get_analyzer, has_any_phrase
from graph.algorithms.unattested import unattested_subject
from graph.context import Context
from graph.output import failure_reason
from graph.policy import Policy, PolicyError, run_language
from graph.prompts import phrase, phrases
from graph.providers.chat import chat_model
from graph.providers.resources import embeddings_for
from graph.providers.specs import ProviderError
from graph.providers.translation import translator_for
from graph.runtime.direct_reading import reader_answer, reader_check
from graph.runtime.run_policy import run_policy
from graph.runtime.tenant_binding import run_context
from graph.runtime.timing import timed
from graph.state import Chunk, SearchResult, State


def cross_lingual_relevance(question: str, language: str, chunks: list[Chunk], policy, ctx: Context,
                            notes: list[str]) -> Callable[[list[str]], list[float]] | None:
    """`meaning_relevance` when a chunk is in another language than the question, else None (words do the
    work). With no sentence embedder the answer stays lexical, and `notes` say so."""
    if not any(in_another_language(chunk, language) for chunk in chunks):
        return None
    try:
        embeddings = embeddings_for(ctx)
        score = meaning_relevance(question, embeddings, policy.rerank.for_model(embeddings.model_name).dense_calibration)
    except Exception as exc:
        notes.append(f"compose: sentence embedder unavailable ({failure_reason(exc)}); evidence in another "
                     "language ranked by words only")
        return None

    def guarded(texts: list[str]) -> list[float]:
        try:
            return score(texts)
        except Exception as exc:  # a failing embedder must not cost the answer: words alone rank
            notes.append(f"compose: sentence embedder failed ({failure_reason(exc)}); evidence in another "
                         "language ranked by words only")
            return [0.0] * len(texts)

    return guarded


def read_in_evidence_language(question: str, sub_queries: list[str], language: str, chunks: list[Chunk],
                              ctx: Context, notes: list[str]) -> tuple[str, list[str], str] | None:
    """(the question, its parts, the language) put into the language of the best chunk, when that is another
    than the question's and the configured translator (`Context.translation_model`) translates between them;
    else None, and the composer ranks that evidence by meaning (`cross_lingual_relevance`). Words match
    where meaning alone chose the wrong sentence: "What is the media budget of the 2026 winter playbook?"
    was answered "Esta versão substitui o playbook de inverno 2025" by meaning, and by the words of
    "Qual é o orçamento da mídia do playbook de inverno 2026?" with its R$ 3,9 milhões. A failing
    translator leaves the meaning path, and `notes` say so."""
    if not answered_by_meaning(chunks, language):
        return None
    evidence_language = (chunks[0].get("metadata") or {}).get("language") or language
    try:
        translator = translator_for(ctx.translation_model)
        if translator is None or not translator.supports(language, evidence_language):
            return None
        return (translator.translate(question, language, evidence_language),
                [translator.translate(part, language, evidence_language) for part in sub_queries], evidence_language)
    except Exception as exc:  # a failing translator must not cost the answer: meaning alone ranks
        notes.append(f"compose: translation unavailable ({failure_reason(exc)}); evidence in another language "
                     "ranked by meaning")
        return None


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


def disabled_answer(rag: dict, language: str, policy: Policy | None) -> dict:
    """The update when retrieval is off for this run (its policy is broken, or its intent is not allowed):
    the reason, and suggestions of what is allowed."""
    reason_code = rag.get("disabled_reason") or "policy_invalid"
    reason = phrases(language)["reasons"][reason_code].format(intent=rag.get("intent") or "")
    allow = list(policy.routing.allow_intents) if policy else []
    return {"answer": phrase(language, "retrieval_disabled", reason=reason), "citations_used": [],
            "coverage_level": "none", "suggestions": build_suggestions(language, rag, [], [], allow)}


def checked_draft(question: str, language: str, coverage: str, relevant: list[Chunk], chunks: list[Chunk],
                  policy: Policy, ctx: Context, errors: list[str]) -> str | None:
    """The configured chat model's draft of the answer over the `relevant` chunks, when it passes
    `draft_failures`; else None, and `errors` say why (the extractive answer is given instead). None without
    a chat model."""
    try:
        llm = chat_model(ctx)
    except ProviderError as exc:
        errors.append(f"compose: {exc}; extractive answer")
        return None
    if llm is None or not relevant:
        return None
    written, problem = llm_answer(llm, question, language, coverage, relevant, policy.compose.llm_max_tokens,
                                  ctx.provider_timeout_s * (ctx.provider_retries + 1))
    if written:
        problem = draft_failures(written, chunks, language, policy, ctx, errors)
        written = None if problem else written
    if problem:
        errors.append(f"compose: {problem}; extractive answer")
    return written


def read_extractive(question: str, sub_queries: list[str], language: str, relevant: list[Chunk],
                    hits: dict[str, SearchResult], analyzer: Analyzer, policy: Policy, ctx: Context,
                    errors: list[str]) -> tuple[ExtractiveAnswer, DirectCheck | None]:
    """The deterministic answer (`extractive_answer`), and what the reader made of its direct answer (None:
    it gave none). When the best evidence is in another language, the question put into it is read there by
    its words; otherwise it is read as asked, evidence in another language by meaning, and read again in that
    language's words when that gives no direct answer. A direct answer the reader does not confirm is withheld:
    the answer is read again without one, and opens with its evidence."""
    own_first = own_language_close(relevant, language, policy.compose.direct.own_language_margin)
    reading = None if own_first else read_in_evidence_language(question, sub_queries, language, relevant, ctx, errors)
    relevance = None if reading else cross_lingual_relevance(question, language, relevant, policy, ctx, errors)
    leads = part_leads(hits, relevant)

    def reading_in(asked: str, parts_asked: list[str], read_language: str, relevance) -> Callable[..., ExtractiveAnswer]:
        return functools.partial(extractive_answer, asked, parts_asked, read_language, relevant, analyzer, policy,
                                 relevance, leads, reply_language=language, part_names=dict(zip(parts_asked, sub_queries)))

    asked, parts_asked, read_language = reading or (question, sub_queries, language)
    read = reading_in(asked, parts_asked, read_language, relevance)
    extractive = read()
    if extractive.found is None and own_first:
        # No direct answer in the question's words, over a best chunk in another language: read it again in that
        # language's words, and keep that reading when it gives one. "A taxa de devolução online da Acme caiu em
        # 2025?" holds too few of the English report's words ("taxa de devolução" is its "return rate") to be
        # read there; put into English, it is answered by "9.8% of orders in 2025, down from 11.2% in 2024".
        again = read_in_evidence_language(question, sub_queries, language, relevant, ctx, errors)
        read_again = reading_in(*again, None) if again else None
        translated = read_again() if read_again else None
        if translated and translated.found is not None:
            (asked, parts_asked, read_language), read, extractive = again, read_again, translated
    check = None
    if extractive.found is not None:
        found = extractive.found
        check = reader_check(asked, found.text, found.method, found.sentences, policy, errors,
                             several_parts=len(parts_asked) > 1)
        if check.shown:
            return extractive, check
    # Nothing kept from the extractor: the reader's own answer, when the policy asks for it and it finds one.
    own = reader_answer(asked, read_language, parts_asked, relevant, policy, errors)
    if own is not None:
        return read(direct=own), DirectCheck(CONFIRMED, own.text, "the reader's own answer, read in the best "
                                                                  "passages", True)
    return (read(give_direct=False) if check else extractive), check


def draft_lines(written: str, found: DirectAnswer | None, question: str, language: str,
                policy: Policy) -> tuple[list[str], str | None]:
    """The answer's lines from the model's draft, shown as it streamed, and the draft's own direct answer (or
    None). Its opening is the direct answer when it is one (short, not a bullet; its values passed the
    groundedness checks with the rest of the draft); a draft that opens otherwise gets the deterministic
    direct answer (`found`) on top."""
    drafted = draft_direct_answer(written, question, language, policy)
    if drafted:
        return [written], drafted
    return ([direct_line(found, language), ""] if found else []) + [written], None


# A little over a page: the order of the composer's decisions (coverage, a chat model's draft, the extractive
# answer, what is unattested, what is said missing) is the node's logic; each decision is a function.
@timed("compose")
def compose(state: State, runtime: Runtime[Context]) -> dict:
    """Write the answer from the reranked chunks only, each claim cited `[doc_id]`.

    Reads `question`, `language`, `rag` (enabled, disabled_reason, collections), `reranked`,
    `sub_queries` (their terms count as the question's), `hits` (which chunk each part's own search
    found first: `part_leads`), `sources_named` and `sources_unheld` (a
    question about sources the caller holds nothing from gets coverage none and says so). Writes
    `answer`, `direct_answer` (the short answer it opens with, or None: none found, or one the reader did
    not confirm), `direct_check` (what the reader made of it: `read_extractive`), `citations_used` (ids of
    retrieved documents the answer cites), `coverage_level` (the evidence's, adjusted by what the
    answer covers: `answer_coverage`), `suggestions` (three when coverage is low or none) and
    `errors` (a chat model's draft refused, and why)."""
    ctx = run_context(runtime)
    rag = state.get("rag") or {}
    chunks = state.get("reranked") or []
    question = state.get("question", "")
    sub_queries = state.get("sub_queries") or []

    try:
        policy = run_policy(rag, ctx)
    except PolicyError:  # the run has no valid policy: retrieval is off, and the answer says why
        policy = None
    language = run_language(state, policy)
    if policy is None or not rag.get("enabled"):
        return disabled_answer(rag, language, policy)

    cfg = policy.compose
    analyzer = get_analyzer(policy)
    coverage = coverage_level(chunks, cfg)
    above_floor = [c for c in chunks if is_relevant(c, cfg)]
    relevant, conflict_notes = resolve_conflicts(above_floor, language, question, cfg.conflict_tie_margin)
    # Named as not found: what the question says, not how it points at documents ("individual", "The Verge").
    missing = missing_terms(question, language, chunks, analyzer,
                            pointing_words(policy, language, chunks)
                            | asked_kind(question, language, policy.languages.question_cues))

    lines: list[str] = []
    errors: list[str] = []
    found: DirectAnswer | None = None
    check: DirectCheck | None = None  # what the reader made of the direct answer
    direct: str | None = None  # the chat model's own direct answer, when its draft opens with one
    # Sources the question attributes what it asks about to, none of the caller's documents comes from
    # (retrieve): another source's text is no answer to "what did the Bloomberg article say".
    unheld = state.get("sources_unheld") or []
    if unheld and set(unheld) >= set(state.get("sources_named") or []):
        coverage = "none"
        lines.append(phrase(language, "unheld_sources", sources=", ".join(unheld)))
    elif coverage == "none" and not unheld and converging_name(question, sub_queries, language, chunks, analyzer,
                                                               policy):
        # (Not when the question names a source the caller holds nothing from: what it asks may be there only.)
        coverage, relevant = "low", chunks
    if coverage != "none":
        written = checked_draft(question, language, coverage, relevant, chunks, policy, ctx, errors)
        extractive, check = read_extractive(question, sub_queries, language, relevant, state.get("hits") or {},
                                            analyzer, policy, ctx, errors)
        found = extractive.found
        coverage = answer_coverage(coverage, extractive, relevant, cfg)
        # (A direct answer withheld by the reader was found: what the question asks about is attested.)
        unattested = [] if found or check else unattested_subject(question, language, sub_queries,
                                                         relevant, analyzer, policy, state.get("sources_named") or [])
        if unattested:
            # "Qual é o salário médio …?" over documents that never speak of salaries, "… no Dia das Mães de
            # 2025?" over documents that never name it: a sentence about something else is no answer.
            coverage, written, extractive = "none", None, extractive._replace(lines=[])
            missing = [*unattested, *(m for m in missing if not has_any_phrase(" ".join(unattested), [m]))]
        if written:
            drafted, direct = draft_lines(written, found, question, language, policy)
            lines += drafted
            found = None if direct else found
            if direct:  # the model's own direct answer, read in the documents its opening cites (the judge blocks
                # a contradicted one)
                check = reader_check(question, direct, yes_no_said(direct, language), cited_texts(written, chunks),
                                     policy, errors)
        else:
            lines += extractive.lines
        cited = set(citations_in("\n".join(lines)))
        notes = [n for n in conflict_notes if set(citations_in(n)) & cited]
        if lines and notes:
            lines += ["", *notes]
        if lines and unheld:
            lines += ["", phrase(language, "unheld_sources", sources=", ".join(unheld))]
            coverage = "low" if coverage in ("high", "medium") else coverage
        if not lines:
            coverage = "none"
    if not lines:
        # Figures or "nothing found", never both: a partial answer names its missing parts itself.
        lines.append(phrase(language, "missing", terms=", ".join(missing[:cfg.max_missing_terms])) if missing else phrase(language, "missing_generic"))

    answer = "\n".join(lines).strip()
    retrieved_ids = {c["docId"] for c in chunks}
    citations = [cid for cid in citations_in(answer) if cid in retrieved_ids]
    # The closest document is named only when it reaches the relevance floor: one below it is not close to the
    # question ("the CEO's favourite football team" is not in the TikTok report), and the collection may hold
    # nothing on it, which the suggestions then say instead.
    suggestions = (build_suggestions(language, rag, above_floor, missing, list(policy.routing.allow_intents))
                   if coverage in ("low", "none") else [])
    direct = direct or direct_text(found, language)
    return {"answer": answer, "direct_answer": direct if lines and coverage != "none" else None,
            "direct_check": check.as_record() if check and lines and coverage != "none" else {},
            "citations_used": citations, "coverage_level": coverage, "suggestions": suggestions,
            **({"errors": errors} if errors else {})}
