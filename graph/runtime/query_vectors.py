"""A text's vector for each collection of a route, by the model that collection was embedded with.

retrieve embeds each part of a question (and the whole question) to search with; rerank asks for the
whole question's vector again to score the candidates against it, and gets the one retrieve made
(`cached_only`): a model is asked once per text and run, and a model that failed in retrieve is not
waited on a second time.
"""

from __future__ import annotations

from graph.context import Context
from graph.output import failure_reason
from graph.providers.resources import CollectionModelError, collection_model, embeddings_named


def vectors_by_collection(ctx: Context, index, collections: list[str], text: str, problems: list[str], *,
                          cached_only: bool = False) -> dict[str, list[float] | None]:
    """Each collection's vector of `text`, embedded by the model its manifest records (once per model).
    A collection that does not exist gets None (the engine has nothing to search); one whose model the
    run cannot use (it names another, the embedder fails, or its vectors have another dimension) gets
    None too, with the reason in `problems`. `cached_only`: only a vector this process already holds (None otherwise, no reason)."""
    by_model: dict[str, list[float] | None] = {}
    out: dict[str, list[float] | None] = {}
    for collection in collections:
        manifest = collection_manifest(index, collection)
        if not manifest:
            out[collection] = None
            continue
        try:
            model = collection_model(ctx, collection, manifest)
        except CollectionModelError as exc:
            problems.append(f"{exc}; lexical search only")
            out[collection] = None
            continue
        if model not in by_model:
            by_model[model] = _embed(ctx, model, text, problems, cached_only)
        out[collection] = by_model[model]
        if problem := dimension_problem(manifest, collection, out[collection]):
            problems.append(problem)
            out[collection] = None
    return out


def collection_manifest(index, collection: str) -> dict:
    """The collection's manifest; empty when the index keeps none or cannot read it (the search itself
    will fail, and say why)."""
    manifest = getattr(index, "manifest", None)
    try:
        return (manifest(collection) if manifest else None) or {}
    except Exception:
        return {}


def dimension_problem(manifest: dict, collection: str, vector: list[float] | None) -> str | None:
    """Why `vector` cannot search `collection`'s dense vectors (another dimension than its manifest's), or None."""
    dims = manifest.get("dimensions")
    if vector is not None and isinstance(dims, int) and len(vector) != dims:
        return (f"embeddings of {len(vector)} dimensions cannot search collection '{collection}' ({dims} dimensions); "
                "lexical search only")
    return None


def _embed(ctx: Context, model: str, text: str, problems: list[str], cached_only: bool) -> list[float] | None:
    try:
        embeddings = embeddings_named(ctx, model)
        return embeddings.cached_query(text) if cached_only else embeddings.embed_query(text)
    except Exception as exc:  # timeouts, 429/5xx after the client's retries, connection errors, a missing model
        problems.append(f"embeddings unavailable ({failure_reason(exc)}); lexical search only")
        return None
