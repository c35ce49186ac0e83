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
do the boosts' conditions (recency: the chunk's `year` is the current year; playbook: its `docType`),
which multiply here; then `min_score` drops, the survivors' texts are fetched (gated again), and
`max_chunks` / `max_context_chars` cut.
Every chunk keeps its score breakdown.
"""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
from langgraph.runtime import Runtime

from graph.algorithms.fusion import fused_ids
from graph.algorithms.passages import best_sentence_match, best_window
from graph.algorithms.text import get_analyzer, instruction_matcher, is_number, strip_instructions
from graph.context import Context
from graph.policy import LongQuestions, ModelRerankSettings, RerankSettings, RerankWeights
from graph.providers.relevance import choose_relevance, relevance_scorer
from graph.providers.resources import bounded_index
from graph.providers.specs import failure_reason
from graph.providers.vectorstore import VectorIndex, payload_passes_gates
from graph.runtime.query_vectors import collection_manifest, vectors_by_collection
from graph.runtime.request_reads import read_payloads, request_reads
from graph.runtime.run_policy import run_policy
from graph.runtime.tenant_binding import run_context
from graph.runtime.timing import timed
from graph.state import OTHER_LANGUAGE_FLAG, Chunk, State


def term_weights(question_terms: set[int], chunk_terms: list[set[int]]) -> dict[int, float]:
    """IDF of each question term over the candidate chunks (rare terms discriminate more)."""
    df = Counter(t for terms in chunk_terms for t in terms if t in question_terms)
    n = max(1, len(chunk_terms))
    return {t: math.log(1 + n / (1 + df[t])) for t in question_terms}


def lexical_coverage(weights: dict[int, float], terms: set[int], total: float | None = None) -> float:
    """The IDF-weighted share of the question's terms among `terms`; `total`: the weights' sum, when the
    caller scores many chunks against the same weights."""
    total = sum(weights.values()) if total is None else total
    # Over `terms`: the engine's matched terms are the question's, and a chunk holds few of them.
    return sum(weights[t] for t in terms if t in weights) / total if total else 0.0


def question_language_share(chunks: list[Chunk], neighbours: int) -> float | None:
    """The share of the question's language among the `neighbours` chunks most similar to it (the
    engine's language-neutral signal); None when the engine gave no similarity (no dense search)."""
    nearest = sorted((c for c in chunks if c.get("similarity")), key=lambda c: -c["similarity"])[:neighbours]
    if not nearest:
        return None
    return 1.0 - sum(OTHER_LANGUAGE_FLAG in (c.get("flags") or ()) for c in nearest) / len(nearest)


def nearest_in_other_language(chunks: list[Chunk], margin: float) -> bool:
    """True when the chunk most similar to the question is in another language, by at least `margin`
    cosine over the most similar one in the question's language (the engine's language-neutral signal)."""
    best = {True: 0.0, False: 0.0}
    for c in chunks:
        other = OTHER_LANGUAGE_FLAG in (c.get("flags") or ())
        best[other] = max(best[other], c.get("similarity") or 0.0)
    return best[True] > 0.0 and best[True] >= best[False] + margin


def blend(weights: RerankWeights, long_weights: RerankWeights | None, length_share: float) -> RerankWeights:
    """A question's weights: `weights` for a short one, `long_weights` for a long one, linear in between."""
    if long_weights is None or length_share <= 0:
        return weights
    mix = lambda a, b: (1 - length_share) * a + length_share * b
    return RerankWeights(dense=mix(weights.dense, long_weights.dense), lexical=mix(weights.lexical, long_weights.lexical),
                         bm25=mix(weights.bm25, long_weights.bm25), fused=mix(weights.fused, long_weights.fused))


def question_weights(model: ModelRerankSettings, length_share: float) -> tuple[RerankWeights, RerankWeights]:
    """(order weights, score weights) of a model's chunks for a question of this length share."""
    return blend(model.weights, model.long_question_weights, length_share), model.score_weights or model.weights


def base_scores(question_terms: set[int], chunks: list[Chunk], cfg: RerankSettings,
                by_collection: dict[str, ModelRerankSettings] | None = None, length_share: float = 0.0) -> list[Chunk]:
    """Relevance before boosts, best first. `by_collection`: each collection's weights and cosine scale
    (its embedding model's; the policy's defaults for a collection not given), blended towards its long-question
    weights by the question's `length_share` (`rerank.long_questions`). When the question's
    nearest chunks are partly in another language, the lexical weights shrink to that share and such
    chunks count their dense relevance as lexical (`rerank.cross_lingual`), provided the chunks in its
    own language hold most of its words, or there are none, or the chunk nearest it in meaning is in
    another language."""
    default = ModelRerankSettings(cfg.weights, cfg.dense_calibration)
    by_collection = by_collection or {}
    share = question_language_share(chunks, cfg.cross_lingual.neighbours)
    lexical_scale = 1.0 if share is None else max(cfg.cross_lingual.lexical_floor, share)
    # Which question terms each chunk holds was answered by the engine's lexical index.
    c_terms = [set(c.get("matchedTerms") or ()) for c in chunks]
    idf = term_weights(question_terms, c_terms)
    idf_total = sum(idf.values())
    # Words missing across languages are missing evidence, not evidence against, only where the question's
    # subject is attested: the chunks in its own language hold most of its words, or there are none to ask,
    # or its meaning is nearest to text in another language.
    own = [t for c, t in zip(chunks, c_terms) if OTHER_LANGUAGE_FLAG not in (c.get("flags") or ())]
    attested = (not own or lexical_coverage(idf, set().union(*own)) >= cfg.cross_lingual.attested_share
                or nearest_in_other_language(chunks, cfg.cross_lingual.meaning_margin))
    best_fused = max((c["scores"].get("fused", 0.0) for c in chunks), default=0.0) or 1.0
    # The engine's BM25 score (corpus IDF, term frequency, length norm), relative to the best one.
    best_bm25 = max((c["scores"].get("lexical") or 0.0 for c in chunks), default=0.0) or 1.0
    # Each collection's (order weights, score weights) for this question, worked out once.
    weights_of = {name: question_weights(m, length_share) for name, m in by_collection.items()}
    default_weights = question_weights(default, length_share)
    out = []
    for chunk, terms in zip(chunks, c_terms):
        model = by_collection.get(chunk.get("collection", ""), default)
        order_weights, score_weights = weights_of.get(chunk.get("collection", ""), default_weights)
        scale = model.dense_calibration
        span = max(1e-9, scale.ceiling - scale.floor)
        dense = min(1.0, max(0.0, (chunk.get("similarity", 0.0) - scale.floor) / span))
        lexical = lexical_coverage(idf, terms, idf_total)
        fused = chunk["scores"].get("fused", 0.0) / best_fused
        # Relative BM25 says which candidate matches best, not whether it matches at all: scaled by
        # the chunk's coverage of the question's terms, a best match on one stray word stays low.
        bm25 = (chunk["scores"].get("lexical") or 0.0) / best_bm25 * lexical
        scores = dict(chunk["scores"], dense_relevance=dense, lexical_relevance=lexical, fused_relevance=fused,
                      bm25_relevance=bm25)
        if lexical_scale < 1.0 and attested:
            if OTHER_LANGUAGE_FLAG in (chunk.get("flags") or ()):
                lexical, bm25 = max(lexical, dense), max(bm25, dense)
            order_weights, score_weights = (shrink_lexical(order_weights, lexical_scale),
                                            shrink_lexical(score_weights, lexical_scale))
            scores["question_language_share"] = share
        signals = (dense, lexical, bm25, fused)
        scores["rerank_base"] = weigh(order_weights, *signals)
        scores["scale_base"] = weigh(score_weights, *signals)
        out.append(dict(chunk, scores=scores))
    out.sort(key=lambda c: (-c["scores"]["rerank_base"], c["id"]))
    return out


def weigh(w: RerankWeights, dense: float, lexical: float, bm25: float, fused: float) -> float:
    return w.dense * dense + w.lexical * lexical + w.bm25 * bm25 + w.fused * fused


def shrink_lexical(w: RerankWeights, lexical_scale: float) -> RerankWeights:
    """The lexical weights scaled to the question-language share; the dense weight takes the rest."""
    moved = (w.lexical + w.bm25) * (1.0 - lexical_scale)
    return RerankWeights(dense=w.dense + moved, lexical=w.lexical * lexical_scale, bm25=w.bm25 * lexical_scale,
                         fused=w.fused)


def on_score_scale(ranked: list[Chunk]) -> list[Chunk]:
    """Keep the order, give the scores of the models' score blend (`score_weights`): the k-th place gets the
    k-th best of them (the blend that orders a long question is not the one the composer's relevance floor
    and coverage levels, nor the profiles' min_score, were set on). Each chunk keeps its order score as
    `order_base`. Where the two blends are one (no `score_weights`, and a short question or no
    `long_question_weights`) nothing changes."""
    scale = sorted((c["scores"]["scale_base"] for c in ranked), reverse=True)
    for chunk, value in zip(ranked, scale):
        chunk["scores"].update(order_base=chunk["scores"]["rerank_base"], rerank_base=value)
    return ranked


def model_settings(index: VectorIndex, collections: list[str], cfg: RerankSettings) -> dict[str, ModelRerankSettings]:
    """Each collection's weights and cosine scale: its embedding model's (the manifest names it)."""
    out = {}
    for collection in collections:
        try:
            model = (index.manifest(collection) or {}).get("embedding_model")
        except Exception:  # the engine failed: retrieve has said so; the defaults stand
            model = None
        out[collection] = cfg.for_model(model)
    return out


def engine_features(chunks: list[Chunk], ctx: Context, index: VectorIndex, policy, rag: dict, question: str,
                    question_terms: set[int], problems: list[str], known: dict | None = None) -> bool:
    """Give each candidate `similarity` (cosine to the whole question), `matchedTerms` (the question's
    terms it holds) and `flags` (the boosts and OTHER_LANGUAGE_FLAG whose conditions it meets), asked
    of the engine once per collection for every branch's candidates together. The question's vector is
    the one retrieve embedded (never a second model call: a model that failed there is not waited on
    again); without it there is no similarity and no flag. Whether the engine answered for every
    collection: a failure says so in `problems` (the candidates are then ranked by their lists);
    malformed values are ignored, and counted. `known`: this request's earlier answers, by (collection,
    point id): those candidates are not asked again, and the new answers are added."""
    known = {} if known is None else known
    language = rag.get("language", "en")
    boost_flags = {n: c for n, (_, c) in policy.boosts(ctx.current_year).items()} if ctx.boosts else {}
    other_languages = [lang for lang in policy.languages.markers if lang != language]
    by_collection: dict[str, list[Chunk]] = {}
    for chunk in chunks:
        chunk.update(similarity=0.0, matchedTerms=[], flags=[])
        answered_before = known.get((chunk.get("collection", ""), chunk["pointId"]))
        if answered_before is not None:
            similarity, matched, met = answered_before
            chunk.update(similarity=similarity, matchedTerms=list(matched), flags=list(met))
            continue
        by_collection.setdefault(chunk.get("collection", ""), []).append(chunk)
    # Any reason the question has no vector was given by retrieve, which embedded it.
    vectors = vectors_by_collection(ctx, index, list(by_collection), question, [], cached_only=True)
    terms, malformed, answered = sorted(question_terms), 0, True
    for collection, group in by_collection.items():
        flags = boost_flags
        # The manifest records the language of all the collection's text ("mixed" when several).
        if other_languages and collection_manifest(index, collection).get("language") != language:
            flags = {**boost_flags, OTHER_LANGUAGE_FLAG: {"language": other_languages}}
        try:
            found = index.features(collection, tenant=ctx.tenant, point_ids=[c["pointId"] for c in group],
                                   similarity_to=vectors.get(collection), match_terms=terms, flags=flags)
        except Exception as exc:
            problems.append(f"rerank: the vector engine could not score the candidates against the question "
                            f"({failure_reason(exc)}); ranked by their lists")
            answered = False
            continue
        if not isinstance(found, dict):
            found, malformed = {}, malformed + len(group)
        for chunk in group:
            features = found.get(chunk["pointId"])
            if features is None:
                continue
            similarity = getattr(features, "similarity", None)
            matched, met = getattr(features, "matched_terms", None), getattr(features, "flags", None)
            if similarity is not None and not (is_number(similarity) and -1.0001 <= similarity <= 1.0001):
                similarity, malformed = None, malformed + 1
            # Set tests, not a loop per term: this runs for every candidate of every question.
            if not isinstance(matched, list) or not question_terms.issuperset(matched):
                matched, malformed = [], malformed + 1
            if not isinstance(met, list) or (met and not flags.keys() >= set(met)):
                met, malformed = [], malformed + 1
            chunk.update(similarity=float(similarity or 0.0), matchedTerms=matched, flags=met)
            known[(collection, chunk["pointId"])] = (chunk["similarity"], tuple(matched), tuple(met))
    if malformed:
        problems.append(f"rerank: the vector engine returned {malformed} malformed candidate feature(s) "
                        "(similarity, terms, flags): ignored")
    return answered


def sentence_evidence(chunks: list[Chunk], parts: list[set[int]], share: float, settings: LongQuestions,
                      read_texts, sentence_terms) -> list[Chunk]:
    """Blend into each candidate's relevance its best single-sentence match to one part of a long question:
    `share` × `sentence_weight` of `rerank_base` (the question's length share, `rerank.long_questions`).
    The best `candidates` by the blend are read (`read_texts`: fetch_texts bound to the run); the rest
    match nothing, as they ranked below them already. A chunk in another language counts its dense
    relevance as its sentence match (words cannot match across languages). Best first again."""
    weight = settings.sentence_weight * share
    if weight <= 0 or not chunks or not any(parts):
        return chunks
    head = read_texts(chunks[: settings.candidates])
    matches = best_sentence_match([c["content"] for c in head], parts, sentence_terms)
    for chunk, match in zip(head, matches):
        if OTHER_LANGUAGE_FLAG in (chunk.get("flags") or ()):
            match = max(match, chunk["scores"]["dense_relevance"])
        chunk["scores"]["sentence_relevance"] = match
    rest = chunks[settings.candidates:]
    for chunk in head + rest:
        match = chunk["scores"].get("sentence_relevance", 0.0)
        chunk["scores"]["rerank_base"] = (1 - weight) * chunk["scores"]["rerank_base"] + weight * match
    return sorted(head + rest, key=lambda c: (-c["scores"]["rerank_base"], c["id"]))


def apply_boosts(chunks: list[Chunk], boosts: dict[str, tuple[float, dict]]) -> list[Chunk]:
    for chunk in chunks:
        applied, factor = [], 1.0
        for name, (boost, _) in boosts.items():
            if name in (chunk.get("flags") or ()):
                factor *= boost
                applied.append({"name": name, "factor": boost})
        raw = chunk["scores"]["rerank_base"] * factor
        chunk["scores"].update(boosts=applied, rerank=raw)
        chunk["rerankScore"] = min(1.0, raw)
    return sorted(chunks, key=lambda c: (-c["scores"]["rerank"], c["id"]))


def aspect_relevance(hits: dict[str, dict], question: str, candidates: list[Chunk], rank_decay: float) -> np.ndarray:
    """How well each candidate answers each aspect of a split question, 0–1: one column per part
    (sub-query), per part searched with the bridging name and per scoped search; the whole question and
    the performance search are not
    aspects (the base relevance covers them). Within an aspect, its dense and lexical lists are
    fused (RRF) and a chunk's place p there gives exp(−p / rank_decay): an aspect is answered by its
    first few chunks, not by the fiftieth. An aspect whose nearest chunk by meaning is in another language than
    the question (the engine's OTHER_LANGUAGE_FLAG) is ordered by its dense list alone: its words can only
    find text in its own language, which meaning already ranked below ("qual é a taxa de devolução online"
    of a Portuguese question is the English returns report's, not a Portuguese legal note's that holds
    "devolução" and "online")."""
    keys = [k for k in sorted(hits) if hits[k]["kind"] in ("scoped", "bridge") or
            (hits[k]["kind"] == "sub_query" and hits[k]["sub_query"] != question)]
    # By point id: the hits name chunks by it, and a chunk fetched early (for a provider reranker) has
    # already been renamed "<docId>#<chunk index>".
    row = {c["pointId"]: i for i, c in enumerate(candidates)}
    other_language = {c["pointId"] for c in candidates if OTHER_LANGUAGE_FLAG in (c.get("flags") or ())}
    rel = np.zeros((len(candidates), len(keys)), dtype=np.float64)
    for j, key in enumerate(keys):
        result = hits[key]
        dense = result.get("dense") or []
        nearest = next((h["pointId"] for h in dense if h["pointId"] in row), None)
        lists = [dense] if nearest in other_language else [dense, result.get("lexical") or []]
        # Only the order matters here: ids, not fused chunk copies (this runs per aspect, per question).
        for place, (cid, _) in enumerate(fused_ids(lists)):
            if (i := row.get(cid)) is not None:
                rel[i, j] = math.exp(-place / rank_decay)
    return rel


def diversify(ranked: list[Chunk], aspects: np.ndarray, weight: float, n: int, coverage: float = 1.0) -> list[Chunk]:
    """xQuAD (Santos et al., 2010): pick chunks greedily by (1 − w)·relevance + w·(how much of each
    aspect they answer that the chunks picked so far left unanswered), so that the first places
    cover every part of a multi-part question instead of repeating the part that matches best.
    A picked chunk answers `coverage` × its relevance to an aspect of what was left of it (1: all of it
    when it is the aspect's first chunk). The first `n` places are chosen this way (the first one by
    relevance alone); the rest keep their relevance order."""
    if aspects.shape[1] < 2 or weight <= 0 or len(ranked) < 2:
        return ranked
    relevance = np.array([c["scores"]["rerank"] for c in ranked], dtype=np.float64)
    relevance /= relevance.max() or 1.0
    uncovered = np.ones(aspects.shape[1]) / aspects.shape[1]
    free = np.ones(len(ranked), dtype=bool)
    order: list[int] = []
    for place in range(min(n, len(ranked))):
        # The first place stays the most relevant chunk (as in MMR): the answer to the whole
        # question comes first, then the parts it leaves uncovered.
        gain = relevance.copy() if place == 0 else (1 - weight) * relevance + weight * (aspects @ uncovered)
        gain[~free] = -np.inf
        pick = int(np.argmax(gain))
        order.append(pick)
        free[pick] = False
        uncovered *= 1 - coverage * aspects[pick]
    rest = [i for i in range(len(ranked)) if free[i]]
    for place, i in enumerate(order):
        ranked[i]["scores"]["diversity_rank"] = place + 1
    return [ranked[i] for i in order + rest]


def fetch_texts(chunks: list[Chunk], tenant: str, index: VectorIndex, problems: list[str] | None = None,
                known: dict | None = None) -> list[Chunk]:
    """Name each chunk and give it its text and metadata (one engine call per collection, gated);
    a chunk whose payload is gone (re-ingested or re-gated since the search) is dropped, one that
    already has its text keeps it. A payload the engine should not have returned (another tenant's,
    not approved) or cannot have stored (no text, no document id) is dropped too, and counted in
    `problems`: the gates are checked here once more, whatever index answered. `known`: payloads this
    request read before, by (collection, point id): not read again, and the new ones are added."""
    # A chunk fetched already (for a provider reranker) is not read twice.
    payloads = read_payloads(index, tenant, [(c["collection"], c["pointId"]) for c in chunks if "content" not in c],
                             {} if known is None else known)
    out, refused = [], 0
    for c in chunks:
        p = payloads.get(c["pointId"])
        if p is not None and not (isinstance(p, dict) and payload_passes_gates(p, tenant)
                                  and isinstance(p.get("text"), str) and isinstance(p.get("docId"), str) and p["docId"]):
            p, refused = None, refused + 1
        if p is None:
            if "content" in c:
                out.append(c)
            continue
        c.update(id=f"{p.get('docId')}#{p.get('chunk_index', 0)}", docId=p.get("docId", ""),
                 assetId=p.get("assetId") or p.get("docId", ""), assetName=p.get("assetName") or p.get("docId", ""),
                 content=p.get("text", ""),
                 metadata={**(p.get("metadata") or {}), "header": p.get("header", ""), "language": p.get("language")})
        out.append(c)
    if refused and problems is not None:
        problems.append(f"rerank: the vector engine returned {refused} payload(s) that fail the gates or have no "
                        "text / document id: dropped")
    return out


def apply_budgets(chunks: list[Chunk], min_score: float, max_chunks: int, max_context_chars: int,
                  screen=None) -> list[Chunk]:
    """The chunks compose gets: best first, at least `min_score`, at most `max_chunks` of them and
    `max_context_chars` of text (a chunk too long for what is left is passed over for a shorter one).
    `screen(chunk)` (the text as it may be handed on, or None to drop it) runs only on chunks that can
    still be kept: a cut chunk is never read."""
    kept, used = [], 0
    for chunk in chunks:
        if len(kept) >= max_chunks:
            break
        if chunk["rerankScore"] < min_score:
            continue
        if screen is not None and (chunk := screen(chunk)) is None:
            continue
        size = len(chunk["content"])
        if kept and used + size > max_context_chars:
            continue
        kept.append(chunk)
        used += size
    for rank, chunk in enumerate(kept, start=1):
        chunk["rank"] = rank
    return kept


def instruction_screen(matcher, notes: list[str]):
    """Document text is data: sentences addressed to a model (the policy's
    `documents.instruction_patterns`) are removed before the composer, the judge or a model reads the
    chunk. The screen returns the chunk with them removed (noted in `notes`), or None when only
    headings are left: such a chunk must not raise the coverage level either."""
    def screen(chunk: Chunk) -> Chunk | None:
        text, removed = strip_instructions(chunk.get("content", ""), matcher)
        if not removed:
            return chunk
        # A heading has no closing punctuation and is short; anything else is a statement.
        states_something = any(line.strip() and (line.rstrip()[-1] in ".!?:;" or len(line.split()) >= 15)
                               for line in text.splitlines())
        notes.append(f"{chunk.get('id')} ({removed} sentence(s){'' if states_something else ', chunk dropped'})")
        if not states_something:
            return None
        chunk["content"] = text
        return chunk
    return screen


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
    analyzer, language = get_analyzer(policy), rag.get("language", "en")
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
    scored_by_engine = engine_features(fused, ctx, index, policy, rag, state["question"], question_terms, errors,
                                       features_read)
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
    boosts = policy.boosts(ctx.current_year) if ctx.boosts else {}
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
        spec = choose_relevance(ctx, rag.get("language", "en"), languages,
                                auto_cross_encoder=models.auto_cross_encoder or bool(depth))
        if spec is None or depth == 0:
            return ranked, []
        analyzer, language = get_analyzer(policy), rag.get("language", "en")
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
