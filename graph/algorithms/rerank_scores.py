"""The embedded reranker's relevance of a candidate to the question: the blend of its signals, a long question's best sentence, and the policy's boosts."""

from __future__ import annotations

import math
from collections import Counter

from graph.algorithms.passages import best_sentence_match
from graph.policy import LongQuestions, ModelRerankSettings, RerankSettings, RerankWeights
from graph.state import OTHER_LANGUAGE_FLAG, Chunk


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
