"""Heavy, shareable objects a run needs (vector index, embedder, lexical analyzer), resolved from
the run's `Context`. They are cached per process: model weights load once and the embedded
engine is opened once per data folder, whichever graph entry asks."""

from __future__ import annotations

import os
from dataclasses import dataclass

from graph.context import Context
from graph.embeddings import CachedEmbeddings, get_embeddings
from graph.providers import ProviderError, env_required
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


VECTOR_STORES = ("embedded", "qdrant")


def vector_index_for(ctx: Context) -> VectorIndex:
    """'embedded': the in-process engine under `home`; 'qdrant': the server at QDRANT_URL."""
    if ctx.vector_store == "embedded":
        return open_index(ctx.home_path)
    if ctx.vector_store == "qdrant":
        from graph.vectorstore_server import open_server_index

        url = env_required("QDRANT_URL", "RAGATE_VECTOR_STORE", ctx.vector_store, "e.g. http://localhost:6333")
        return open_server_index(url, os.environ.get("QDRANT_API_KEY") or None, float(ctx.provider_timeout_s))
    raise ProviderError(f"RAGATE_VECTOR_STORE={ctx.vector_store!r}: expected one of {', '.join(VECTOR_STORES)}")


def get_resources(ctx: Context) -> Resources:
    return Resources(index=vector_index_for(ctx), embeddings=embeddings_for(ctx))


def get_analyzer(policy: Policy) -> Analyzer:
    return analyzer_for(tuple(sorted(policy.raw["languages"]["analyzers"].items())))
