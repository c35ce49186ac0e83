"""Heavy, shareable objects a run needs (vector index, embedder, lexical analyzer), resolved from
the run's `Context`. They are cached per process: model weights load once and the embedded
engine is opened once per data folder, whichever graph entry asks."""

from __future__ import annotations

from dataclasses import dataclass

from graph.context import Context
from graph.embeddings import CachedEmbeddings, get_embeddings
from graph.providers import ProviderError
from graph.policy import Policy
from graph.text import Analyzer, analyzer_for
from graph.vectorstore import VectorIndex, open_index


@dataclass(frozen=True)
class Resources:
    index: VectorIndex
    embeddings: CachedEmbeddings


def embeddings_for(ctx: Context) -> CachedEmbeddings:
    """The run's embedder, with the context's provider timeout and retries."""
    return get_embeddings(ctx.embedding_model, ctx.home_path, float(ctx.provider_timeout_s), int(ctx.provider_retries))


def get_resources(ctx: Context) -> Resources:
    if ctx.vector_store != "embedded":
        raise ProviderError(f"vector_store '{ctx.vector_store}': only 'embedded' is supported")
    return Resources(index=open_index(ctx.home_path), embeddings=embeddings_for(ctx))


def get_analyzer(policy: Policy) -> Analyzer:
    return analyzer_for(tuple(sorted(policy.raw["languages"]["analyzers"].items())))
