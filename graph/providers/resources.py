"""Heavy, shareable objects a run needs (vector index, embedder, lexical analyzer), resolved from
the run's `Context`. They are cached per process: model weights load once and the embedded
engine is opened once per data folder, whichever graph entry asks.

The embedded engine opens a data folder in one process at a time: opening it takes the folder for
this process (graph/providers/data_folder.py), and a process that cannot is told who holds it
(`DataFolderBusy`) when it starts (`check_providers`, `hold_vector_engine`), not by empty answers.

`bounded_index` gives the nodes the index with every read held to the run's `provider_timeout_s`
wherever a deadline can hold: the Qdrant server's client times out on its own; an index whose reads let
other threads run while they wait gets the deadline by running its reads on a small pool of threads. The
embedded engine's reads cannot be given one (`EdgeVectorIndex.READS_HOLD_GIL`): they run in the caller's
thread.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from typing import Any

from graph import settings
from graph.context import Context
from graph.providers.chat import chat_model
from graph.providers.embeddings import CachedEmbeddings, base_embeddings, get_embeddings, is_auto
from graph.providers.local_models import model_folder
from graph.providers.relevance import check_relevance
from graph.providers.specs import ProviderError, env_required
from graph.providers.translation import translator_for
from graph.providers.vectorstore import CollectionError, VectorIndex, open_index
from graph.providers.vectorstore_server import open_server_index


class CollectionModelError(CollectionError):
    """A run names an embedding model other than the one a collection was embedded with."""


def embeddings_named(ctx: Context, spec: str) -> CachedEmbeddings:
    """The embedder `spec` names, with the context's provider timeout and retries."""
    return get_embeddings(spec, ctx.home_path, float(ctx.provider_timeout_s), int(ctx.provider_retries))


def embeddings_for(ctx: Context) -> CachedEmbeddings:
    """The run's sentence embedder (the composer's and the judge's comparisons): the model the run
    names, or under `auto` the multilingual one (embeddings.SENTENCE_MODEL)."""
    return embeddings_named(ctx, ctx.embedding_model)


def collection_model(ctx: Context, collection: str, manifest: dict[str, Any]) -> str:
    """The model that embeds questions for `collection`: the one its manifest records. A run that names
    another gets CollectionModelError (its vectors would not be comparable), never a silent mismatch."""
    model = manifest["embedding_model"]
    if not is_auto(ctx.embedding_model) and ctx.embedding_model.strip() != model:
        raise CollectionModelError(
            f"collection '{collection}' was embedded with {model}, not {ctx.embedding_model.strip()}: set the "
            f"embedding model to auto (each collection's own) or re-embed it: ragate reembed --collection "
            f"{collection} --embedding-model {ctx.embedding_model.strip()}")
    return model


def collection_embeddings(ctx: Context, collection: str, manifest: dict[str, Any]) -> CachedEmbeddings:
    """The embedder of `collection` (`collection_model`)."""
    return embeddings_named(ctx, collection_model(ctx, collection, manifest))


@dataclass(frozen=True)
class Resources:
    index: VectorIndex
    embeddings: CachedEmbeddings  # the sentence embedder (`embeddings_for`); collections: `collection_embeddings`


VECTOR_STORES = ("embedded", "qdrant")


def vector_index_for(ctx: Context) -> VectorIndex:
    """'embedded': the in-process engine under `home`; 'qdrant': the server at QDRANT_URL."""
    if ctx.vector_store == "embedded":
        return open_index(ctx.home_path)
    if ctx.vector_store == "qdrant":
        url = env_required("QDRANT_URL", "RAGATE_VECTOR_STORE", ctx.vector_store, "e.g. http://localhost:6333")
        return open_server_index(url, settings.text("QDRANT_API_KEY"), float(ctx.provider_timeout_s),
                                 int(ctx.provider_retries))
    raise ProviderError(f"RAGATE_VECTOR_STORE={ctx.vector_store!r}: expected one of {', '.join(VECTOR_STORES)}")


def get_resources(ctx: Context) -> Resources:
    return Resources(index=vector_index_for(ctx), embeddings=embeddings_for(ctx))


class EngineTimeout(TimeoutError):
    """A read of the embedded engine did not finish within the provider timeout."""


# Reads of an index `bounded_index` wraps run here, so that a caller can stop waiting for one. A read that
# never returns keeps its thread; once every thread is held, later reads time out in the queue
# (still within the deadline) instead of hanging the graph.
_ENGINE_THREADS = 16
_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def _engine_pool() -> ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=_ENGINE_THREADS, thread_name_prefix="ragate-engine")
        return _pool


class BoundedIndex:
    """An index whose reads (`search`, `features`, `fetch`, `values`) each fail with EngineTimeout after
    `timeout_s`; everything else is the index's own."""

    def __init__(self, inner: VectorIndex, timeout_s: float):
        self.inner, self.timeout_s = inner, timeout_s

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def _bounded(self, name: str, *args: Any, **kwargs: Any) -> Any:
        future = _engine_pool().submit(getattr(self.inner, name), *args, **kwargs)
        try:
            return future.result(timeout=self.timeout_s)
        except FutureTimeout:
            future.cancel()
            raise EngineTimeout(f"the vector engine's {name} took longer than {self.timeout_s:g} s") from None

    def search(self, *args: Any, **kwargs: Any) -> Any:
        return self._bounded("search", *args, **kwargs)

    def features(self, *args: Any, **kwargs: Any) -> Any:
        return self._bounded("features", *args, **kwargs)

    def fetch(self, *args: Any, **kwargs: Any) -> Any:
        return self._bounded("fetch", *args, **kwargs)

    def values(self, *args: Any, **kwargs: Any) -> Any:
        return self._bounded("values", *args, **kwargs)


_bounded: dict[tuple[int, float], BoundedIndex] = {}


def bounded_index(ctx: Context, index: VectorIndex | None = None) -> VectorIndex:
    """`index` (default: the run's) with its reads held to `ctx.provider_timeout_s` (one wrapper per
    index and timeout, reused), where a deadline can hold; the index itself where none can. The wrapper's
    `inner` is the index itself."""
    index = index if index is not None else vector_index_for(ctx)
    if ctx.vector_store != "embedded" or isinstance(index, BoundedIndex):
        return index  # the server's client applies the timeout itself
    if getattr(index, "READS_HOLD_GIL", False):
        # A read that keeps the GIL until it returns cannot be stopped waiting for: the waiting thread needs the
        # GIL to notice its deadline, so it raises only once the read is over, and throws the answer away. Such
        # reads run in the caller's thread: the hand-off to the pool and back cost ~0.4 ms a read for nothing.
        return index
    key = (id(index), float(ctx.provider_timeout_s))
    wrapper = _bounded.get(key)
    if wrapper is None or wrapper.inner is not index:
        if len(_bounded) >= 64:  # a run's context may carry any timeout: the table stays small
            _bounded.clear()
        wrapper = _bounded[key] = BoundedIndex(index, float(ctx.provider_timeout_s))
    return wrapper


def hold_vector_engine(ctx: Context, *, open_collections: bool = False) -> None:
    """The embedded engine's data folder taken for this process: DataFolderBusy (one line naming the
    folder and the process that holds it) when another process has it. With `open_collections`, every
    collection is opened too (a server's start-up: a collection that cannot be opened refuses the
    start, not the first question). Nothing to take for a Qdrant server, which is shared by design."""
    if ctx.vector_store != "embedded":
        return
    index = open_index(ctx.home_path)
    index.hold()
    if open_collections:
        index.open_all()


def check_providers(ctx: Context) -> None:
    """Fail now, with one line naming the setting, if a configured provider cannot be built, or (the
    embedded engine) naming the process that holds the data folder."""
    chat_model(ctx)
    check_relevance(ctx)
    translator_for(ctx.translation_model)
    base_embeddings(ctx.embedding_model, float(ctx.provider_timeout_s), int(ctx.provider_retries))
    if is_auto(ctx.embedding_model):
        # Collections chosen to be English get bge-small: its package and files are checked now too.
        model_folder("bge-small")
    if ctx.vector_store == "embedded":
        hold_vector_engine(ctx)  # the data folder, taken for this process now: another process holding it is named here
    else:
        index = vector_index_for(ctx)
        # The one provider without which nothing can be answered: reach it now, not on the first question.
        try:
            index.client.get_collections()
        except Exception as exc:
            raise ProviderError(f"RAGATE_VECTOR_STORE={ctx.vector_store!r}: the server at QDRANT_URL={index.url} did not "
                                f"answer ({type(exc).__name__}: {str(exc).strip()[:160]}); check QDRANT_URL / QDRANT_API_KEY") from None
