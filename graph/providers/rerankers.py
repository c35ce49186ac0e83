"""The Cohere-compatible reranker, picked by `RAGATE_RERANK_MODEL` ("cohere/<model>" or "none").

`cohere/...` goes through `langchain_cohere.CohereRerank` against `COHERE_BASE_URL` (or the SDK's `CO_API_URL`;
default Cohere's API) with `COHERE_API_KEY`: any Cohere-compatible `/v2/rerank` endpoint.

A reranker's reply is checked where its client is built (`check_rerank_reply`): each result names one of the
documents sent, once, with a relevance score between 0 and 1. Anything else (an index out of range, NaN, a raw
logit of 7.3) fails the call, which the rerank node records before falling back to ragate's own reranker.
"""

from __future__ import annotations

import functools
from typing import Any

from graph import settings
from graph.algorithms.text import is_number
from graph.providers.specs import RERANK_PROVIDERS, env_required, parse_spec


@functools.lru_cache(maxsize=16)
def _rerank(model: str, base_url: str | None, api_key: str, timeout: float, retries: int, top_n: int):
    import cohere
    from langchain_cohere import CohereRerank

    # CohereRerank has no timeout or retry setting (and passes no base_url of its own): the client is
    # built here with the timeout, and its rerank calls carry `retries` instead of the SDK's default
    # two retries with 1 s / 2 s back-off.
    client = cohere.ClientV2(api_key=api_key, base_url=base_url or None, timeout=timeout)
    call = client.rerank

    def rerank_with_retries(*args: Any, request_options: dict | None = None, **kwargs: Any) -> Any:
        reply = call(*args, request_options={"max_retries": retries, **(request_options or {})}, **kwargs)
        check_rerank_reply(reply, len(kwargs.get("documents") or ()))
        return reply

    client.rerank = rerank_with_retries  # type: ignore[method-assign]
    return CohereRerank(client=client, model=model, top_n=top_n)


def check_rerank_reply(reply: Any, documents: int) -> None:
    """ValueError unless `reply.results` are (index, relevance_score) pairs a ranking can use: at least
    one, each index an integer naming one of the `documents` sent (once), each score in [0, 1]."""
    results = getattr(reply, "results", None)
    if not isinstance(results, list) or not results:
        raise ValueError(f"unusable rerank reply: no results for {documents} documents")
    seen: set[int] = set()
    for result in results:
        index, score = getattr(result, "index", None), getattr(result, "relevance_score", None)
        if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < documents or index in seen:
            raise ValueError(f"unusable rerank reply: index {index!r} for {documents} documents")
        if not is_number(score) or not 0 <= score <= 1:
            raise ValueError(f"unusable rerank reply: relevance_score {score!r} is not a number between 0 and 1")
        seen.add(index)


def reranker(ctx: Any, top_n: int = 50):
    """The run's Cohere-compatible reranker, or None when `ctx.rerank_model` names none (`none`, `auto`, a
    local model: graph/providers/relevance.py)."""
    if (ctx.rerank_model or "").strip().casefold() == "auto":
        return None
    parsed = parse_spec("RAGATE_RERANK_MODEL", ctx.rerank_model, RERANK_PROVIDERS)
    if parsed is None or parsed[0] != "cohere":
        return None
    key = env_required("COHERE_API_KEY", "RAGATE_RERANK_MODEL", ctx.rerank_model)
    base_url = settings.text("COHERE_BASE_URL") or settings.text("CO_API_URL")
    return _rerank(parsed[1], base_url, key, float(ctx.provider_timeout_s), int(ctx.provider_retries), top_n)
