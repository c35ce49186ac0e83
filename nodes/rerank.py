"""rerank: relevance of each fused chunk to the *original* question, then policy boosts and budgets.

Embedded reranker (`local/hybrid`, no downloaded model): a blend of
  dense   — cosine of question and chunk, calibrated to 0–1 by the policy's floor/ceiling;
  lexical — share of the question's terms (stemmed, IDF-weighted over the candidates) in the chunk;
  bm25    — the engine's BM25 score relative to the best one, times the lexical coverage;
  fused   — the RRF score relative to the best one.
Weights and the cosine scale are the chunk's embedding model's (`rerank.models` in the policy); a long,
many-part question moves towards the model's long-question weights and gives a share of its score to each
candidate's best sentence for one of its parts (`sentence_evidence`, `rerank.long_questions`). When some
of the question's nearest chunks are in another language (the engine flags them), words cannot match
across languages: the lexical weights shrink to the question-language share and go to the dense one, and
an other-language chunk counts its dense relevance as its lexical one (`rerank.cross_lingual`). A
relevance model then rescores the best candidates (`relevance_rerank`: under `auto`, the local
cross-encoder for an English question over English collections where the policy or a profile asks for it;
`cohere/<model>` when configured).
For a split question, the first places are then chosen to cover its parts (`diversify`, xQuAD).
The signals come from the vector index (`engine_features`: one request for all the branches'
candidates, not one per search), so scoring reads no text but for a long question's best candidates. So
do the boosts' conditions (recency: the chunk's `year` is the current year; playbook: its `docType`;
intent: the filters of an intent inferred from the question's words, `rag.preferred_filters`), which
multiply here; then `min_score` drops, the survivors' texts are fetched (gated again), and
`max_chunks` / `max_context_chars` cut.
Every chunk keeps its score breakdown.
"""

from __future__ import annotations

from langgraph.runtime import Runtime

from graph.algorithms.context_budget import apply_budgets, instruction_screen
from graph.algorithms.diversity import aspect_relevance, diversify
from graph.algorithms.passages import best_window
from graph.algorithms.rerank_scores import apply_boosts, base_scores, on_score_scale, sentence_evidence
from graph.algorithms.text import get_analyzer, instruction_matcher
from graph.context import Context
from graph.output import failure_reason
from graph.policy import run_language
from graph.providers.relevance import choose_relevance, relevance_scorer
from graph.providers.resources import bounded_index
from graph.providers.vectorstore import VectorIndex
from graph.runtime.candidate_reads import engine_features, fetch_texts, model_settings
from graph.runtime.request_reads import request_reads
from graph.runtime.run_policy import run_policy
from graph.runtime.tenant_binding import run_context
from graph.runtime.timing import timed
from graph.state import Chunk, State


@timed("rerank")
def rerank(state: State, runtime: Runtime[Context]) -> dict:
    """Score the first fused chunks against the original question, boost, diversify, fetch texts and cut.

    Reads `fused` (its first `rerank.candidates`), `hits` (each aspect's own order, for a split question),
    `question` and `rag` (profile: min_score and max_context_chars; max_chunks). Writes `reranked` (the chunks compose
    sees, best first, each with its text, metadata, rank and score breakdown) and `errors` (the
    engine's scores of the candidates missing or malformed, a provider reranker that failed, payloads
    refused, text addressed to a model removed). Reads
    `sub_queries` too: the parts a long question's sentences are matched against; and `request_id`: a
    candidate's features and payload read earlier in the request are not read again (bridge's second pass,
    graph/runtime/request_reads.py)."""
    ctx = run_context(runtime)
    rag = state["rag"]
    fused = state.get("fused") or []
    if not fused:
        return {"reranked": []}
    policy = run_policy(rag, ctx)
    cfg = policy.rerank
    analyzer, language = get_analyzer(policy), run_language(state, policy)
    question_terms = set(analyzer.terms(state["question"], language))
    profile = rag["profile"]
    max_chunks = int(rag.get("max_chunks") or cfg.top_n)
    # The first of the fused list are scored: below them nothing reaches the cut (`rerank.candidates`).
    fused = fused[: max(cfg.candidates, 2 * max_chunks)]
    index = bounded_index(ctx)
    settings_of = model_settings(index, rag["collections"], cfg)
    length_share = cfg.length_share(len(question_terms))
    errors: list[str] = []
    # A question reranked again in this request (bridge) reads from the engine only what is new.
    features_read = request_reads(state.get("request_id"), "features")
    payloads_read = request_reads(state.get("request_id"), "payloads")
    # The boosts' conditions are answered by the engine with the other features; they multiply after the blend.
    boosts = policy.boosts(ctx.current_year, rag.get("preferred_filters")) if ctx.boosts else {}
    scored_by_engine = engine_features(fused, ctx, index, policy, rag, state["question"], question_terms, boosts,
                                       errors, features_read)
    scored = base_scores(question_terms, fused, cfg, settings_of, length_share)
    if ctx.rerank and scored_by_engine:
        parts = [set(analyzer.terms(part, language)) for part in state.get("sub_queries") or [state["question"]]]
        try:
            scored = sentence_evidence(scored, parts, length_share, cfg.long_questions,
                                       lambda head: fetch_texts(head, ctx.tenant, index, errors, payloads_read),
                                       lambda text: analyzer.sentence_terms(text, language))
        except Exception as exc:  # the texts could not be read: the blend without them stands
            errors.append(f"rerank: the candidates' texts could not be read for their best sentences "
                          f"({failure_reason(exc)}); ranked without them")
        scored = on_score_scale(scored)
    else:
        # Switched off (or the engine could not score the candidates): the fused order stands, scored
        # relative to the best fused chunk.
        for c in scored:
            c["scores"]["rerank_base"] = c["scores"]["fused_relevance"]
        scored.sort(key=lambda c: (-c["scores"]["rerank_base"], c["id"]))
    ranked = apply_boosts(scored, boosts)
    if ctx.rerank:
        ranked, provider_errors = relevance_rerank(ctx, policy, rag, state["question"], question_terms, ranked, boosts,
                                                   index, payloads_read)
        aspects = aspect_relevance(state.get("hits") or {}, state["question"], ranked, cfg.diversity.rank_decay)
        ranked = diversify(ranked, aspects, cfg.diversity.weight, 2 * max_chunks, cfg.diversity.coverage)
        errors += provider_errors
    # Texts are read only for the chunks that made the cut once boosted: twice the budget, so the
    # character limit still has chunks to choose from.
    try:
        ranked = fetch_texts([c for c in ranked if c["rerankScore"] >= profile["min_score"]][: 2 * max_chunks],
                             ctx.tenant, index, errors, payloads_read)
    except Exception as exc:  # no texts, nothing to answer from: compose says so, the failure is recorded
        errors.append(f"rerank: the vector engine did not return the chunks' texts ({failure_reason(exc)}); "
                      "no chunk kept")
        ranked = []
    # Each chunk carries the relevance floor of its embedding model's scale, for the composer.
    for chunk in ranked:
        floor = settings_of.get(chunk.get("collection", ""), cfg.for_model(None)).relevance_floor
        if floor is not None:
            chunk["relevanceFloor"] = floor
    # Text addressed to a model is looked for in the chunks that are kept, as they are kept.
    quarantined: list[str] = []
    update = {"reranked": apply_budgets(ranked, profile["min_score"], max_chunks, profile["max_context_chars"],
                                        instruction_screen(instruction_matcher(policy.documents.instruction_patterns),
                                                           quarantined))}
    if quarantined:
        errors = errors + [f"rerank: text addressed to a model removed from {', '.join(quarantined)} (prompt injection)"]
    return {**update, "errors": errors} if errors else update


def relevance_rerank(ctx: Context, policy, rag: dict, question: str, question_terms: set[int], ranked: list[Chunk],
                     boosts: dict, index: VectorIndex, payloads_read: dict | None = None) -> tuple[list[Chunk], list[str]]:
    """Rerank the best candidates with the run's relevance model (graph/providers/relevance.py: the local
    cross-encoder under `auto` for an English question over English collections where the policy's
    `auto_cross_encoder` or the profile's `rerank_depth` asks for it, or the configured
    `local/...` / `cohere/...` one). A local model reads each candidate as its header and its best
    window (algorithms/passages.py), a server the whole chunk (`rerank.relevance.cross_encoder` /
    `.server`: how many, and `weight`: the model's share of the score, kept in `scores.provider_rerank`;
    the rest is ragate's own, `scores.local_rerank`); the chunks below them keep their order under
    them; the boosts apply after. No model, or a profile's `rerank_depth` of 0: the ranking stands.
    Any failure keeps it too and says why."""
    depth = rag["profile"].get("rerank_depth")
    notes: list[str] = []
    models = policy.rerank.relevance
    try:
        languages = [(index.manifest(c) or {}).get("language") for c in rag["collections"]]
        # Under `auto` a profile that sets a depth asks for the cross-encoder on its intents.
        spec = choose_relevance(ctx, run_language({"rag": rag}, policy), languages,
                                auto_cross_encoder=models.auto_cross_encoder or bool(depth))
        if spec is None or depth == 0:
            return ranked, []
        analyzer, language = get_analyzer(policy), run_language({"rag": rag}, policy)
        settings = models.cross_encoder if spec.startswith("local/") else models.server
        depth = settings.candidates if depth is None else int(depth)
        scorer = relevance_scorer(spec, ctx, analyzer=analyzer, language=language, max_tokens=settings.max_tokens,
                                  top_n=depth)
        head = fetch_texts(ranked[:depth], ctx.tenant, index, notes, payloads_read)
        if scorer.reads_windows:
            passages = [_passage(c, question_terms, lambda text: analyzer.terms(text, language),
                                 settings.window_words) for c in head]
        else:
            passages = [c["content"] for c in head]
        relevance = scorer.score(question, passages)
    except Exception as exc:
        return ranked, notes + [f"rerank: {ctx.rerank_model} failed ({failure_reason(exc)}); "
                                "ragate's own reranker used"]
    weight = settings.weight
    for chunk, score in zip(head, relevance):
        local = chunk["scores"]["rerank_base"]
        chunk["scores"].update(local_rerank=local, provider_rerank=score,
                               rerank_base=weight * score + (1 - weight) * local)
    if settings.keep_scale:
        # The model's order, ragate's scale: the k-th place gets the k-th best local score.
        scale = sorted((c["scores"]["local_rerank"] for c in head), reverse=True)
        for chunk, local in zip(sorted(head, key=lambda c: (-c["scores"]["rerank_base"], c["id"])), scale):
            chunk["scores"].update(blended=chunk["scores"]["rerank_base"], rerank_base=local)
        return apply_boosts(head + _below(ranked[depth:], min(scale, default=0.0)), boosts), notes
    # The chunks below the scored ones stay below them: each is given the lowest relevance the model
    # gave (it ranked under all of those by ragate's own score), so the cut still has them to choose from.
    lowest = min(relevance, default=0.0)
    tail = ranked[depth:]
    for chunk in tail:
        local = chunk["scores"]["rerank_base"]
        chunk["scores"].update(local_rerank=local, provider_rerank=None,
                               rerank_base=weight * lowest + (1 - weight) * local)
    return apply_boosts(head + tail, boosts), notes


def _below(tail: list[Chunk], ceiling: float) -> list[Chunk]:
    """The unscored candidates, each kept at or under the lowest scored one (they ranked below it)."""
    for chunk in tail:
        local = chunk["scores"]["rerank_base"]
        chunk["scores"].update(local_rerank=local, provider_rerank=None, rerank_base=min(local, ceiling))
    return tail


def _passage(chunk: Chunk, question_terms: set[int], terms_of, window_words: int) -> str:
    """What the relevance model reads of a chunk: its header (title, source, date) and its best window."""
    header = ((chunk.get("metadata") or {}).get("header") or "").strip()
    window = best_window(chunk.get("content", ""), question_terms, terms_of, window_words)
    return f"{header}\n{window}" if header else window
