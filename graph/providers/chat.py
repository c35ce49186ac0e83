"""The chat model, picked by `RAGATE_CHAT_MODEL` ("openai/<model>" or "none").

`openai/...` goes through `langchain_openai.ChatOpenAI`, so OpenAI, vLLM, Ollama, llama.cpp server and LM Studio
all work: `OPENAI_BASE_URL` points at the server, `OPENAI_API_KEY` is its key (any non-empty value for servers that
ignore keys). Clients are built once per process per configuration.
"""

from __future__ import annotations

import functools
from typing import Any

from graph import settings
from graph.providers.specs import CHAT_PROVIDERS, env_required, parse_spec


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
    return _chat(parsed[1], settings.text("OPENAI_BASE_URL"), key, float(ctx.provider_timeout_s),
                 int(ctx.provider_retries))
