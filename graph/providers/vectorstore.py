"""The vector engine behind one small interface, with governance gates enforced inside it.

Embedded default: Qdrant's own engine in-process (`qdrant-edge`), one shard folder per
collection under `$RAGATE_HOME/collections/<name>/`, with a dense vector (`dense`) and the
engine's BM25 sparse vector with an IDF modifier (`bm25`), each tenant's terms in dimensions of its own and
its IDF computed over its own servable chunks (LEXICAL_TERMS_PER_TENANT).

One process per data folder: the engine locks each collection it opens and has no read-only mode, so
the index takes the folder for this process before it opens one (`hold`, graph/providers/data_folder.py);
a second process is refused at once, naming the holder (`DataFolderBusy`), rather than finding every
collection locked and answering from nothing. `close()` lets the folder go; using the index again
takes it again.

Payload schema (the same one the Qdrant-server path writes):
  brandId            keyword, tenant index: the ingesting tenant, never taken from the document
  isApprovedForAI    keyword "true"/"false" (qdrant-edge 0.9.0's bool MatchValue matches nothing,
                     so the flag is stored as a keyword; `metadata.isApprovedForAI` keeps the bool)
  status, docType, category, docId, assetId, language   keyword indexes
  text, header, assetName, metadata, content_hash, chunk_index, date, version
"""

from __future__ import annotations

import functools
import hashlib
import json
import shutil
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np
from qdrant_edge import (
    DatetimeIndexParams,
    Distance,
    EdgeConfig,
    EdgeShard,
    EdgeSparseVectorParams,
    EdgeVectorParams,
    FacetRequest,
    FieldCondition,
    Filter,
    HasIdCondition,
    HnswIndexConfig,
    IdfParams,
    IntegerIndexParams,
    KeywordIndexParams,
    MatchAny,
    MatchValue,
    Memory,
    Modifier,
    Point,
    QuantizationSearchParams,
    Query,
    QueryBatchRequest,
    QueryRequest,
    RangeDateTime,
    ScalarQuantizationConfig,
    ScalarType,
    ScrollRequest,
    SearchParams,
    SparseVector,
    UpdateOperation,
)

from graph.providers import data_folder
from graph.providers.data_folder import DataFolderBusy

# Governance is not configurable: no policy file or request can loosen these gates.
APPROVED_STATUSES = ("ready", "approved")
TENANT_FIELD = "brandId"
GATE_FIELDS = frozenset({TENANT_FIELD, "isApprovedForAI", "status"})
# Fields a policy may add as extra equality filters (all indexed).
FILTERABLE_FIELDS = frozenset({"docType", "category", "assetId", "docId", "language", "source", "date"})
KEYWORD_INDEXES = ("status", "isApprovedForAI", "docType", "category", "docId", "assetId", "language", "source")
INTEGER_INDEXES = ("year",)
DATETIME_INDEXES = ("date",)  # collections made before this index filter dates by payload scan

DENSE, SPARSE = "dense", "bm25"
# Layout of a collection (point ids, payload fields, indexes); a collection of another schema is refused.
COLLECTION_SCHEMA = 3
# Every search is tenant-filtered. When the gated set is small (≲ 10k chunks of 512 dims: 20 MB of
# vectors), the planner scans it exactly; above that, filtered HNSW with a wide beam. Measured at
# 100k chunks / 20 tenants (bench/RESULTS.md): exact recall at ~1.4 ms, where plain HNSW gave 0.92
# recall and ACORN a 20 ms tail for some tenants.
HNSW = HnswIndexConfig(m=16, ef_construct=100, full_scan_threshold=20_000)
# The dense vectors are also kept as int8 (a quarter of their size, in memory): a search scores and walks the graph
# with those, then scores the best 2 × limit again with the full vectors, so the scores it returns are exact cosines.
# On 100k random 384-d vectors over 2 tenants: a filtered graph search 2.97 → 1.33 ms at the same recall, the graph
# built in 16 s instead of 60; a tenant's 5,000 chunks scanned in 0.47 ms instead of 0.79, the exact top 50. The
# retrieval evaluations (MultiHop-RAG, SciFact, FaQuAD) are unchanged (bench/RESULTS.md, Scale notes). Exact
# searches (`features`' similarities) read the full vectors. A collection keeps the settings it was created with.
DENSE_QUANTIZATION = ScalarQuantizationConfig(type=ScalarType.Int8, quantile=0.99, memory=Memory.Pinned)
DENSE_SEARCH = SearchParams(hnsw_ef=256, quantization=QuantizationSearchParams(rescore=True, oversampling=2.0))
# The lexical list. The engine scores every point a filter leaves when they are fewer than the sparse index's
# `full_scan_threshold` (5,000 points by default) instead of walking the query terms' posting lists, and every
# search is filtered (the gates): a tenant's BM25 list was a full scan. On MultiHop-RAG's 2,552 chunks 1.0 ms
# against 0.20 with 1,000; 0.84 against 0.61 with 20 tenants of them in one collection (51k points); the same
# top 10 either way (bench/RESULTS.md). A collection keeps the setting it was created with; a server's too.
SPARSE_FULL_SCAN_THRESHOLD = 1_000
SPARSE_INDEX = EdgeSparseVectorParams(full_scan_threshold=SPARSE_FULL_SCAN_THRESHOLD, modifier=Modifier.Idf)
# A tenant's lexical (BM25) statistics are its own. The IDF of a question's terms is computed over the chunks the
# tenant may be answered from (the gates: `IdfParams(corpus=…)`), not over the whole collection: what other tenants
# store no longer moves a tenant's term weights, and so its answers. Over the samples, acme's null question had
# found nothing only while globex's documents were beside acme's (tests/test_retrieval.py). A collection of one
# tenant ranks as before.
# And each tenant's terms are dimensions of its own: term t of tenant T is stored as t XOR `tenant_term_key(T)`. A
# filtered BM25 search walks the posting lists of the question's terms; shared, they held every tenant's chunks,
# each then dropped by the filter, and at a million chunks that walk was most of a search. Measured on Zipf-distributed
# 150-word texts over 20 tenants, five frequent terms a question, tenant IDF: 10.93 → 1.37 ms p50 at 1M points, 2.77
# → 0.35 at 200k; the same scores (bench/RESULTS.md, Scale). The map is one-to-one for each tenant. A collection
# records it in its manifest ("lexical_terms"); one made before keeps shared dimensions (key 0), and is slower.
LEXICAL_TERMS_PER_TENANT = "per-tenant"


class TenantRequiredError(ValueError):
    """A search or write without a tenant. Refused: there is no "all tenants" query."""


class CollectionError(ValueError):
    """A collection is missing or was built with a different embedding model."""


class CollectionBusy(CollectionError, DataFolderBusy):
    """A collection's files are locked by another opener of the engine (one that did not take the
    data folder first: an older ragate, or a second index object in one process). Like
    DataFolderBusy it stops a run instead of degrading it to an answer from nothing."""

    def __init__(self, message: str, folder: Path):
        ValueError.__init__(self, message)
        self.folder, self.holder = folder, None


def check_collection_name(collection: str) -> None:
    if not collection or "/" in collection or collection.startswith("."):
        raise CollectionError(f"invalid collection name '{collection}'")


def new_manifest(embedding_model: str, dimensions: int, language: str | None) -> dict[str, Any]:
    """What a collection records when it is created: the model that embeds it (every search of it embeds
    the question with this model), its vectors' dimensions, the corpus language the model was chosen
    for ("en", "pt", "mixed"; None when unknown) and the storage schema."""
    return {"embedding_model": embedding_model, "dimensions": dimensions, "language": language,
            "schema": COLLECTION_SCHEMA}


def check_same_model(collection: str, manifest: dict[str, Any], embedding_model: str, dimensions: int) -> None:
    """A collection answers only queries embedded by the model it was built with."""
    if manifest["embedding_model"] != embedding_model or manifest["dimensions"] != dimensions:
        raise CollectionError(
            f"collection '{collection}' was embedded with {manifest['embedding_model']} "
            f"({manifest['dimensions']} dims), not {embedding_model} ({dimensions} dims); use embedding model "
            f"auto (each collection's own), or re-embed it: ragate reembed --collection {collection} "
            f"--embedding-model {embedding_model}"
        )


@functools.lru_cache(maxsize=4096)
def tenant_term_key(tenant: str) -> int:
    """The 32 bits a tenant's lexical term ids are XORed with in a collection that keeps them per tenant."""
    return int.from_bytes(hashlib.blake2b(f"lexical\x1f{tenant}".encode(), digest_size=4).digest(), "big")


def point_id(tenant: str, doc_id: str, chunk_index: int) -> int:
    """Stable point id: 63 bits of a hash of tenant, document and chunk, so two tenants' documents
    with the same id never collide. Integers, not UUIDs: the engine hands every UUID back as a new
    Python object, which costs more than the search itself at a hundred hits."""
    digest = hashlib.blake2b(f"{tenant}\x1f{doc_id}\x1f{chunk_index}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") >> 1


@dataclass
class ChunkRecord:
    """One chunk ready to be written."""

    doc_id: str
    chunk_index: int
    text: str
    header: str
    payload: dict[str, Any]
    content_hash: str
    dense: list[float] = field(default_factory=list)
    sparse: tuple[list[int], list[float]] = ((), ())


@dataclass
class SearchHit:
    """One point returned by a search list, with its rank (1-based) and raw score in that list."""

    point_id: str
    score: float
    rank: int


@dataclass
class HitFeatures:
    """What the engine says about one candidate against the original question (`VectorIndex.features`)."""

    similarity: float | None = None  # cosine to `similarity_to` (the question's vector), when given
    matched_terms: list[int] = field(default_factory=list)  # which of `match_terms` the chunk holds
    flags: list[str] = field(default_factory=list)  # which of the named `flags` conditions it meets


def gate_fields(tenant: str | None, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """The gates every read goes through, as {field: value, list of values, or date range}: the
    caller's tenant, approved for AI, status ready/approved; plus optional filters from the policy or
    from values the question names. Each engine turns them into its own filter."""
    if not tenant or not str(tenant).strip():
        raise TenantRequiredError("a tenant is required for every search (set Context.tenant / --tenant)")
    for key in extra or {}:
        if key in GATE_FIELDS or key not in FILTERABLE_FIELDS:
            raise ValueError(f"filter on '{key}' is not allowed (filterable: {sorted(FILTERABLE_FIELDS)})")
    return {TENANT_FIELD: str(tenant), "isApprovedForAI": "true", "status": list(APPROVED_STATUSES), **(extra or {})}


def governance_filter(tenant: str | None, extra: dict[str, Any] | None = None) -> Filter:
    """`gate_fields` as the embedded engine's filter, evaluated inside the engine."""
    return Filter(must=_conditions(gate_fields(tenant, extra)))


def payload_passes_gates(payload: dict[str, Any], tenant: str) -> bool:
    """The gates checked again in Python on a fetched payload: the engine already filtered, and this
    second look turns a broken engine filter into a recorded error instead of a leak."""
    return (bool(tenant) and payload.get(TENANT_FIELD) == tenant and payload.get("isApprovedForAI") == "true"
            and payload.get("status") in APPROVED_STATUSES)


class VectorIndex(Protocol):
    """What the nodes and ingest need from a vector engine."""

    def search(
        self, collection: str, *, dense: list[float] | None, sparse: SparseVector, tenant: str,
        filters: dict[str, Any] | None, limit: int,
    ) -> tuple[list[SearchHit], list[SearchHit]]:
        """Dense and lexical result lists, both gated: point ids and scores, no payload (reading a
        payload costs the engine ~10 µs a point; `fetch` reads them for the few chunks that survive
        reranking). `dense=None` (the embedder failed) gives an empty dense list."""

    def features(
        self, collection: str, *, tenant: str, point_ids: list[str], similarity_to: list[float] | None,
        match_terms: list[int], flags: dict[str, dict[str, Any]] | None = None,
    ) -> dict[str, HitFeatures]:
        """For each of `point_ids` that passes the gates: its cosine to `similarity_to`, which of
        `match_terms` (lexical term ids) its text holds, and which named `flags` conditions
        ({field: value or [values]} on indexed fields, e.g. the rerank boosts) it meets (flags are
        scored through `similarity_to`: none without it). Asked once per question over every list's
        candidates: a server computes them itself; the embedded index too, except for the points it keeps in
        memory (`StoredPoints`), answered from there."""

    def fetch(self, collection: str, tenant: str, point_ids: list[str],
              fields: list[str] | None = None) -> dict[str, dict[str, Any]]:
        """Payloads of these points (all fields, or just `fields`); a point that fails the gates
        is absent."""

    def values(self, collection: str, tenant: str, field: str, limit: int = 1000) -> list[str]:
        """The distinct values of an indexed keyword field among the tenant's servable chunks."""

    def existing_hashes(self, collection: str, tenant: str, doc_id: str) -> set[str]: ...

    def replace_document(self, collection: str, tenant: str, doc_id: str, chunks: list[ChunkRecord]) -> None: ...

    # Documents written (or tried) through this object; a cache of its reads (nodes/decompose.py's facet
    # values) is stale once this changes.
    writes: int

    def ensure_collection(self, collection: str, dimensions: int, embedding_model: str,
                          language: str | None = None) -> None: ...

    def count(self, collection: str) -> int: ...

    def build_search_index(self, collection: str) -> float | None:
        """Index the collection for search when its engine does not do so on its own; the seconds it took."""

    def manifest(self, collection: str) -> dict[str, Any] | None:
        """The collection's embedding model, dimensions and schema; None when it does not exist."""


def engine_ids(point_ids: list[Any]) -> list[int]:
    """The engine ids among `point_ids` (ragate's are non-negative integers, handed around as
    strings): anything else cannot name a stored point, so it is skipped rather than failing the read."""
    return [int(i) for i in point_ids
            if (isinstance(i, int) and not isinstance(i, bool) and i >= 0) or (isinstance(i, str) and i.isascii() and i.isdigit())]


# A collection this large gets its search index built after a write (`EdgeVectorIndex.build_search_index`); a
# smaller one is searched as fast without it, and every small ingest would pay for the build.
SEARCH_INDEX_MIN_POINTS = 10_000


@dataclass(frozen=True, slots=True)
class StoredPoint:
    """One point as the engine stores it, read once (`StoredPoints`)."""

    payload: dict[str, Any]  # every field; callers get copies
    terms: np.ndarray  # its BM25 vector's dimensions as stored (its tenant's: `EdgeVectorIndex.stored_terms`), int64


class StoredPoints:
    """The points reads have asked about, kept in memory, least recently used first out.

    Rerank reads the texts of a question's ~30 best candidates (`fetch`); in a served collection the same
    chunks come back question after question. Kept here, a point is read once, with its payload and its
    BM25 terms, and then answered from memory: its text, and which of a later question's terms it holds
    and which boost conditions it meets (`features`, which asks the engine about the ~100 candidates it
    does not keep, reading none of them). Its dense vector is not kept: the engine computes the
    similarities itself.

    Only this process writes the data folder (graph/providers/data_folder.py), and every write goes
    through the index, which forgets the collection's points once it has written (`forget`); a read that
    was under way meanwhile keeps nothing it read: what is kept is what is stored. The gates are checked
    on every answer, as the engine's filter does."""

    # ~10 KB a point (measured on MultiHop-RAG's 650-token chunks: the payload with its text, the BM25 terms):
    # ~100 MB at most.
    CAPACITY = 10_000

    def __init__(self, capacity: int = CAPACITY):
        self.capacity = capacity
        self._points: OrderedDict[tuple[str, int], StoredPoint] = OrderedDict()
        # Times everything, and each collection, was forgotten: a read that spans a forgetting keeps nothing.
        self._epoch, self._forgotten = 0, {}
        self._lock = threading.Lock()

    def kept(self, collection: str, ids: list[int]) -> dict[int, StoredPoint]:
        """The points among `ids` kept in memory now; nothing is read."""
        return self._kept(collection, ids)[0]

    def _kept(self, collection: str, ids: list[int]) -> tuple[dict[int, StoredPoint], tuple[int, int]]:
        found: dict[int, StoredPoint] = {}
        with self._lock:
            generation = (self._epoch, self._forgotten.get(collection, 0))
            for pid in ids:
                point = self._points.get((collection, pid))
                if point is not None:
                    self._points.move_to_end((collection, pid))
                    found[pid] = point
        return found, generation

    def get(self, shard: EdgeShard, collection: str, ids: list[int]) -> dict[int, StoredPoint]:
        """The stored points among `ids` (an id the collection does not hold is absent), those not kept
        yet read from `shard` in one call."""
        found, generation = self._kept(collection, ids)
        missing = [pid for pid in dict.fromkeys(ids) if pid not in found]
        if not missing:
            return found
        read: dict[int, StoredPoint] = {}
        for record in shard.retrieve(missing, with_payload=True, with_vector=[SPARSE]):
            vectors = record.vector if isinstance(record.vector, dict) else {}
            sparse = vectors.get(SPARSE)
            read[int(record.id)] = StoredPoint(
                payload=dict(record.payload or {}),
                terms=np.asarray(list(sparse.indices) if sparse is not None else [], dtype=np.int64))
        with self._lock:
            if (self._epoch, self._forgotten.get(collection, 0)) == generation:  # no write since the read began
                for pid, point in read.items():
                    self._points[(collection, pid)] = point
                while len(self._points) > self.capacity:
                    self._points.popitem(last=False)
        return {**found, **read}

    def forget(self, collection: str | None = None) -> None:
        """Forget one collection's points (all, without one): it is being written."""
        with self._lock:
            if collection is None:
                self._epoch += 1
                self._points.clear()
            else:
                self._forgotten[collection] = self._forgotten.get(collection, 0) + 1
                for key in [k for k in self._points if k[0] == collection]:
                    del self._points[key]


def payload_test(condition: dict[str, Any]) -> Callable[[dict[str, Any]], bool] | None:
    """The test of whether a stored payload meets a flag's condition as the engine's filter would
    (`_condition`): each field equal to the value, or to one of a list's values; a stored list matches when
    one of its values does. None for a condition only the engine evaluates (a date range)."""
    fields: list[tuple[str, frozenset]] = []
    for key, wanted in condition.items():
        if isinstance(wanted, dict):
            return None
        options = wanted if isinstance(wanted, (list, tuple, set)) else [wanted]
        # A keyword never equals an integer, nor a bool a number: values are compared with their types.
        fields.append((key, frozenset((type(o), o) for o in options)))

    def test(payload: dict[str, Any]) -> bool:
        for key, options in fields:
            stored = payload.get(key)
            values = stored if isinstance(stored, list) else (stored,)
            if not any(_typed(v) in options for v in values):
                return False
        return True

    return test


def _typed(value: Any) -> tuple[type, Any] | None:
    try:
        hash(value)
    except TypeError:  # a mapping or a list stored inside a field: equal to no option
        return None
    return type(value), value


class EdgeVectorIndex:
    """qdrant-edge shards, one per collection; one opener per folder per process (the engine
    locks its folder), so every graph entry in a process shares one instance via `open_index`.
    Opening a shard takes the data folder for this process first (`hold`); `close` lets it go."""

    # The engine keeps the GIL for the whole of every call: no other Python thread ran during a 180 ms query,
    # a 140 ms retrieve or a 30 ms facet (bench/RESULTS.md). No thread can give up waiting on a read meanwhile,
    # so `bounded_index` gives these reads no deadline and runs them in the caller's thread.
    READS_HOLD_GIL = True

    def __init__(self, home: Path):
        self.home = Path(home)
        self.root = self.home / "collections"
        self._shards: dict[str, EdgeShard] = {}
        self._manifests: dict[str, dict[str, Any]] = {}  # a collection's model and dimensions never change
        self.writes = 0  # documents written (or tried) through this object: caches of its reads key on it
        self.stored = StoredPoints()  # the points rerank asked about (features, fetch), forgotten on a write
        self._lock = threading.RLock()
        self._held = False

    # --- the data folder ----------------------------------------------------------------------
    def hold(self) -> None:
        """Take the data folder for this process (once; again after `close`). DataFolderBusy, naming
        the holder, when another process has it."""
        with self._lock:
            if not self._held:
                data_folder.claim(self.home)
                self._held = True

    @property
    def held(self) -> bool:
        return self._held

    def open_all(self) -> list[str]:
        """Open every collection of the folder now (a server's start-up), so that a collection another
        opener holds is found before the first question: CollectionBusy / CollectionError."""
        self.hold()
        names = sorted(p.parent.name for p in self.root.glob("*/ragate.json")) if self.root.is_dir() else []
        for name in names:
            self._shard(name)
        return names

    # --- collections ------------------------------------------------------------------------
    def _manifest_path(self, collection: str) -> Path:
        return self.root / collection / "ragate.json"

    def manifest(self, collection: str) -> dict[str, Any] | None:
        if collection in self._manifests:
            return self._manifests[collection]
        path = self._manifest_path(collection)
        if not path.exists():
            return None  # not remembered: another process may create it
        manifest = self._manifests[collection] = json.loads(path.read_text())
        return manifest

    def stored_terms(self, collection: str, tenant: str, terms: Iterable[int]) -> list[int]:
        """Lexical term ids as `tenant`'s chunks store them in `collection`, or stored ones back as the analyzer gave
        them (the map is its own inverse): XORed with the tenant's key where the collection keeps each tenant's terms
        apart (LEXICAL_TERMS_PER_TENANT), as they are in one made before that shares them."""
        manifest = self.manifest(collection) or {}
        key = tenant_term_key(tenant) if manifest.get("lexical_terms") == LEXICAL_TERMS_PER_TENANT else 0
        return [t ^ key for t in terms]

    def _shard(self, collection: str) -> EdgeShard | None:
        with self._lock:
            if collection in self._shards:
                return self._shards[collection]
            shard_dir = self.root / collection / "shard"
            manifest = self.manifest(collection)
            if manifest is None or not shard_dir.exists():
                return None
            if manifest.get("schema") != COLLECTION_SCHEMA:
                raise CollectionError(
                    f"collection '{collection}' in {self.root} was written by an older ragate (schema "
                    f"{manifest.get('schema')}, now {COLLECTION_SCHEMA}); ingest into a new collection or home")
            self.hold()
            try:
                shard = EdgeShard.load(str(shard_dir))
            except Exception as exc:
                if "WouldBlock" in str(exc):  # the write-ahead log is locked by another process
                    raise CollectionBusy(
                        f"collection '{collection}' in {self.root} is open in another process (the embedded engine "
                        "allows one at a time): stop it, or use a server (vector_store) or another home",
                        self.home) from None
                raise
            self._shards[collection] = shard
            return shard

    def ensure_collection(self, collection: str, dimensions: int, embedding_model: str,
                          language: str | None = None) -> None:
        check_collection_name(collection)
        with self._lock:
            self.hold()
            manifest = self.manifest(collection)
            if manifest is not None:
                self._shard(collection)  # refuses another schema
                check_same_model(collection, manifest, embedding_model, dimensions)
                return
            shard_dir = self.root / collection / "shard"
            if shard_dir.exists():
                # A shard folder without a manifest is a create that was cut off (killed while the engine
                # built its indexes): no document was ever written to it, and the engine refuses to create
                # a shard over it. It is removed, unless another process holds it (creating it right now).
                try:
                    EdgeShard.load(str(shard_dir)).close()
                except Exception as exc:
                    if "WouldBlock" in str(exc):
                        raise CollectionBusy(
                            f"collection '{collection}' in {self.root} is being created by another process: wait "
                            "for it, or use another home", self.home) from None
                shutil.rmtree(shard_dir)
            shard_dir.mkdir(parents=True, exist_ok=True)
            config = EdgeConfig(
                vectors={DENSE: EdgeVectorParams(size=dimensions, distance=Distance.Cosine,
                                                 quantization_config=DENSE_QUANTIZATION)},
                sparse_vectors={SPARSE: SPARSE_INDEX},
                hnsw_config=HNSW,
            )
            shard = EdgeShard.create(str(shard_dir), config)
            shard.update(UpdateOperation.create_field_index(TENANT_FIELD, KeywordIndexParams(is_tenant=True)))
            # Only the tenant's values get graphs of their own (every search filters by one tenant). A field
            # indexed with its HNSW links left on gets a graph for each of its values holding more than
            # `full_scan_threshold` points: the gates' few values (status, isApprovedForAI) cover most of the
            # collection, so each is the whole graph built once more.
            for name in KEYWORD_INDEXES:
                shard.update(UpdateOperation.create_field_index(name, KeywordIndexParams(enable_hnsw=False)))
            for name in INTEGER_INDEXES:
                shard.update(UpdateOperation.create_field_index(name, IntegerIndexParams(lookup=True, range=True,
                                                                                         enable_hnsw=False)))
            for name in DATETIME_INDEXES:
                shard.update(UpdateOperation.create_field_index(name, DatetimeIndexParams(enable_hnsw=False)))
            shard.flush()
            self._shards[collection] = shard
            # The manifest is written last: a folder without it is an unfinished create.
            tmp = self._manifest_path(collection).with_suffix(".tmp")
            tmp.write_text(json.dumps({**new_manifest(embedding_model, dimensions, language),
                                       "lexical_terms": LEXICAL_TERMS_PER_TENANT}))
            tmp.replace(self._manifest_path(collection))

    def count(self, collection: str) -> int:
        shard = self._shard(collection)
        return shard.info().points_count if shard else 0

    def optimize(self, collection: str) -> None:
        shard = self._shard(collection)
        if shard:
            shard.optimize()

    def build_search_index(self, collection: str) -> float | None:
        """Build the collection's search index (HNSW) once it holds SEARCH_INDEX_MIN_POINTS or more; the seconds
        it took, or None below that. The engine keeps what is written in a segment it searches point by point:
        measured with 384-d vectors on 2 cores, a search took 2.3 ms at 10,000 chunks (1.2 ms indexed, a 2.9 s
        build) and 14.6 ms at 50,000 (3.0 ms indexed, a 23 s build). Built again after a small write, it takes
        no time: only what changed is indexed."""
        if self.count(collection) < SEARCH_INDEX_MIN_POINTS:
            return None
        started = time.perf_counter()
        self.optimize(collection)
        return round(time.perf_counter() - started, 1)

    # --- reads ------------------------------------------------------------------------------
    def search(self, collection, *, dense, sparse, tenant, filters, limit):
        gate = governance_filter(tenant, filters)  # raises before touching the engine
        shard = self._shard(collection)
        if shard is None:
            return [], []
        sparse = SparseVector(self.stored_terms(collection, tenant, sparse.indices), list(sparse.values))
        # The term statistics of what the tenant may be answered from, whatever else the question filters on.
        statistics = SearchParams(idf=IdfParams(corpus=governance_filter(tenant)))
        lists = [QueryRequest(query=Query.Nearest(sparse, using=SPARSE), limit=limit, filter=gate, with_payload=False,
                              params=statistics)]
        if dense is not None:
            lists.append(QueryRequest(query=Query.Nearest(list(dense), using=DENSE), limit=limit, filter=gate,
                                      with_payload=False, params=DENSE_SEARCH))
        sparse_res, *dense_lists = shard.query_batch(QueryBatchRequest(lists))
        dense_res = dense_lists[0] if dense_lists else []
        # Every `.id` / `.score` access converts the engine's value into a new Python object: read them once.
        return to_hits([(p.id, p.score) for p in dense_res]), to_hits([(p.id, p.score) for p in sparse_res])

    def features(self, collection, *, tenant, point_ids, similarity_to, match_terms, flags=None):
        gate = governance_filter(tenant)  # no tenant, no read
        shard = self._shard(collection)
        ids = list(dict.fromkeys(engine_ids(point_ids)))
        if shard is None or not ids or (similarity_to is None and not match_terms):
            return {}
        named = list((flags or {}).items()) if similarity_to is not None else []
        tests = [(name, payload_test(condition)) for name, condition in named]
        terms = list(match_terms or [])
        stored_terms = self.stored_terms(collection, tenant, terms)
        # The candidates kept in memory (`StoredPoints`: rerank fetched their texts for an earlier question) are
        # answered from it; the engine answers for the others, none of them read into Python. Read, a new
        # candidate's payload and BM25 vector cost ~35 µs, 3.5-5 ms for a question's ~100; the engine says which
        # of them hold each term and meet each flag in ~1.2 ms for them all (bench/RESULTS.md, run j). A
        # condition only the engine evaluates (a date range) leaves every candidate to the engine.
        kept = {} if any(test is None for _, test in tests) else self.stored.kept(collection, ids)
        new = [pid for pid in ids if pid not in kept]
        requests = _term_and_flag_requests(gate, new, stored_terms, named, similarity_to) if new else []
        if similarity_to is not None:
            requests.append(_similarity_request(gate, ids, similarity_to))
        results = list(shard.query_batch(QueryBatchRequest(requests))) if requests else []
        out = hit_features(results, terms if new else [], [name for name, _ in named] if new else [],
                           similarity_to is not None)
        # The kept points, behind the same gates as the engine's filter.
        kept = {pid: point for pid, point in kept.items() if payload_passes_gates(point.payload, tenant)}
        for pid in kept:
            out.setdefault(str(pid), HitFeatures())
        for name, test in tests:
            for pid, point in kept.items():
                if test(point.payload):
                    out[str(pid)].flags.append(name)
        if terms and kept:
            # Every kept candidate's term ids in one array, looked up at once (one lookup per candidate costs ~50 µs).
            pids = list(kept)
            held_terms = np.concatenate([kept[pid].terms for pid in pids])
            ends = np.cumsum([kept[pid].terms.size for pid in pids])
            hits = np.flatnonzero(np.isin(held_terms, np.asarray(stored_terms, dtype=np.int64)))
            held: dict[int, set[int]] = {}
            for owner, term in zip(np.searchsorted(ends, hits, side="right").tolist(), held_terms[hits].tolist()):
                held.setdefault(owner, set()).add(term)
            for owner, found in held.items():
                # In `match_terms`' order, as the engine answers.
                out[str(pids[owner])].matched_terms = [t for t, stored in zip(terms, stored_terms) if stored in found]
        return out

    def fetch(self, collection: str, tenant: str, point_ids: list[str],
              fields: list[str] | None = None) -> dict[str, dict[str, Any]]:
        governance_filter(tenant)  # no tenant, no read
        shard = self._shard(collection)
        if shard is None or not point_ids:
            return {}
        ids = engine_ids(point_ids)
        if not ids:
            return {}
        # Ids come from gated searches; the gates are checked again on each stored payload.
        selected = {*fields, *GATE_FIELDS} if fields else None
        out = {}
        for pid, point in self.stored.get(shard, collection, ids).items():
            if payload_passes_gates(point.payload, tenant):
                payload = point.payload
                copy = {k: v for k, v in payload.items() if k in selected} if selected else dict(payload)
                if isinstance(copy.get("metadata"), dict):  # the kept point's own stays as stored
                    copy["metadata"] = dict(copy["metadata"])
                out[str(pid)] = copy
        return out

    def values(self, collection, tenant, field, limit=1000):
        gate = governance_filter(tenant)
        if field not in FILTERABLE_FIELDS:
            raise ValueError(f"'{field}' is not an indexed filterable field")
        shard = self._shard(collection)
        if shard is None:
            return []
        return [str(h.value) for h in shard.facet(FacetRequest(key=field, limit=limit, exact=True, filter=gate)) if h.value]

    def existing_hashes(self, collection: str, tenant: str, doc_id: str) -> set[str]:
        shard = self._shard(collection)
        if shard is None:
            return set()
        flt = Filter(must=[FieldCondition(key=TENANT_FIELD, match=MatchValue(tenant)),
                           FieldCondition(key="docId", match=MatchValue(doc_id))])
        hashes: set[str] = set()
        offset = None
        while True:  # every page: a document over one page's chunks must not look changed on every run
            records, offset = shard.scroll(ScrollRequest(offset=offset, limit=10_000, filter=flt,
                                                         with_payload=["content_hash"]))
            hashes |= {r.payload["content_hash"] for r in records if r.payload}
            if offset is None:
                return hashes

    # --- writes -----------------------------------------------------------------------------
    def replace_document(self, collection: str, tenant: str, doc_id: str, chunks: list[ChunkRecord]) -> None:
        if not tenant:
            raise TenantRequiredError("a tenant is required to write documents")
        shard = self._shard(collection)
        if shard is None:
            raise CollectionError(f"collection '{collection}' does not exist")
        flt = Filter(must=[FieldCondition(key=TENANT_FIELD, match=MatchValue(tenant)),
                           FieldCondition(key="docId", match=MatchValue(doc_id))])
        points = [
            Point(
                id=point_id(tenant, doc_id, c.chunk_index),
                vector={DENSE: list(c.dense),
                        SPARSE: SparseVector(self.stored_terms(collection, tenant, c.sparse[0]), list(c.sparse[1]))},
                payload={**c.payload, TENANT_FIELD: tenant},
            )
            for c in chunks
        ]
        with self._lock:
            try:
                shard.update(UpdateOperation.delete_points_by_filter(flt))
                if points:
                    shard.update(UpdateOperation.upsert_points(points))
            finally:
                self.writes += 1
                # After the write, so a read between the two cannot keep the old point.
                self.stored.forget(collection)

    # --- re-embedding (operator: ragate reembed) ----------------------------------------------
    def stored_chunks(self, collection: str, page: int = 1000) -> Iterator[tuple[str, dict[str, Any], tuple[list[int], list[float]]]]:
        """Every chunk of `collection`, all tenants: (tenant, payload, lexical vector, with the term ids the analyzer
        gives, whatever the collection stores). For re-embedding a whole collection, never for answering (no gate
        applies)."""
        shard = self._shard(collection)
        if shard is None:
            return
        offset = None
        while True:
            records, offset = shard.scroll(ScrollRequest(offset=offset, limit=page, with_payload=True,
                                                         with_vector=[SPARSE]))
            for r in records:
                payload = dict(r.payload or {})
                tenant = payload.get(TENANT_FIELD, "")
                sparse = (r.vector or {}).get(SPARSE)
                lexical = ([], []) if sparse is None else (self.stored_terms(collection, tenant, sparse.indices),
                                                            list(sparse.values))
                yield tenant, payload, lexical
            if offset is None:
                return

    def drop_collection(self, collection: str) -> None:
        """Delete `collection` and its files (nothing when it does not exist)."""
        check_collection_name(collection)
        with self._lock:
            self.hold()
            shard = self._shards.pop(collection, None)
            if shard is not None:
                shard.close()
            self._manifests.pop(collection, None)
            self.stored.forget(collection)
            if (self.root / collection).exists():
                shutil.rmtree(self.root / collection)

    def replace_collection(self, collection: str, replacement: str) -> None:
        """`replacement` becomes `collection` (its files renamed into place); the old one is deleted.
        The old folder is moved aside before the new one moves in, so a crash leaves one of them whole."""
        with self._lock:
            self.hold()
            for name in (collection, replacement):
                shard = self._shards.pop(name, None)
                if shard is not None:
                    shard.flush()
                    shard.close()
                self._manifests.pop(name, None)
            aside = self.root / f"{collection}.replaced"
            if aside.exists():
                shutil.rmtree(aside)
            if (self.root / collection).exists():
                (self.root / collection).rename(aside)
            (self.root / replacement).rename(self.root / collection)
            if aside.exists():
                shutil.rmtree(aside)
            self.writes += 1
            self.stored.forget(collection)
            self.stored.forget(replacement)

    def flush(self) -> None:
        with self._lock:
            for shard in self._shards.values():
                shard.flush()

    def close(self) -> None:
        """Close every shard and let the data folder go (using the index again takes it again)."""
        with self._lock:
            try:
                for shard in self._shards.values():
                    shard.flush()
                    shard.close()
            finally:
                self._shards.clear()
                # The folder is let go: another process may write it before this one opens it again.
                self.stored.forget()
                if self._held:
                    self._held = False
                    data_folder.release(self.home)


def _condition(key: str, value: Any) -> FieldCondition:
    """A value matches itself; a list, any of its values; a mapping of gte/gt/lte/lt, a date range."""
    if isinstance(value, dict):
        return FieldCondition(key=key, range=RangeDateTime(**value))
    if isinstance(value, (list, tuple, set)):
        return FieldCondition(key=key, match=MatchAny(list(value)))
    return FieldCondition(key=key, match=MatchValue(value))


def _conditions(fields: dict[str, Any]) -> list[FieldCondition]:
    return [_condition(key, value) for key, value in fields.items()]


def _term_and_flag_requests(gate: Filter, ids: list[int], terms: list[int], named: list[tuple[str, dict[str, Any]]],
                            query: list[float] | None) -> list[QueryRequest]:
    """Which of the candidates `ids` that pass the `gate` hold each term (a request a term, in `terms`' order), then
    which meet each named condition (a request a condition: an exact search through `query` over them alone)."""
    only_these = [*gate.must, HasIdCondition(set(ids))]
    limit = len(set(ids))
    requests = [QueryRequest(query=Query.Nearest(SparseVector([t], [1.0]), using=SPARSE), limit=limit,
                             filter=Filter(must=only_these), with_payload=False) for t in terms]
    for _, condition in named if query is not None else []:
        requests.append(QueryRequest(query=Query.Nearest(list(query), using=DENSE), limit=limit,
                                     filter=Filter(must=[*only_these, *_conditions(condition)]),
                                     with_payload=False, params=SearchParams(exact=True)))
    return requests


def _similarity_request(gate: Filter, ids: list[int], query: list[float]) -> QueryRequest:
    """The cosine of each of the candidates `ids` that pass the `gate` (the tenant's `governance_filter`) to `query`:
    an exact search over them alone, every one of them returned."""
    only_these = [*gate.must, HasIdCondition(set(ids))]
    return QueryRequest(query=Query.Nearest(list(query), using=DENSE), limit=len(set(ids)),
                        filter=Filter(must=only_these), with_payload=False, params=SearchParams(exact=True))


def hit_features(results: list[list[Any]], terms: list[int], flag_names: list[str],
                 with_similarity: bool) -> dict[str, HitFeatures]:
    """Each point's features, read from the answers to the feature requests: one per term, one per flag,
    then (with_similarity) the similarity request."""
    out: dict[str, HitFeatures] = {}

    def of(pid: Any) -> HitFeatures:
        key = str(pid)
        if key not in out:
            out[key] = HitFeatures()
        return out[key]

    if with_similarity:
        for p in results.pop():
            of(p.id).similarity = float(p.score)
    for term, holders in zip(terms, results):
        for p in holders:
            of(p.id).matched_terms.append(term)
    for name, holders in zip(flag_names, results[len(terms):]):
        for p in holders:
            of(p.id).flags.append(name)
    return out


def to_hits(points: list[tuple[Any, float]]) -> list[SearchHit]:
    return [SearchHit(point_id=str(pid), score=float(score), rank=rank) for rank, (pid, score) in enumerate(points, start=1)]


_indexes: dict[str, EdgeVectorIndex] = {}
_by_given_path: dict[str, EdgeVectorIndex] = {}  # skips resolve() (syscalls) on every call
_indexes_lock = threading.Lock()


def open_index(home: Path) -> EdgeVectorIndex:
    """The process-wide index for a data folder (the engine allows one opener per folder). Nothing is
    opened yet: its first collection opened takes the folder for this process (`hold`, which a
    start-up calls itself: `resources.check_providers`), or DataFolderBusy names the process that has it."""
    given = str(home)
    index = _by_given_path.get(given)
    if index is not None:
        return index
    key = str(Path(home).resolve())
    with _indexes_lock:
        if key not in _indexes:
            _indexes[key] = EdgeVectorIndex(Path(key))
        _by_given_path[given] = _indexes[key]
        return _indexes[key]


def close_all() -> None:
    """Close every index of this process and let their data folders go."""
    with _indexes_lock:
        for index in _indexes.values():
            index.close()
        _indexes.clear()
        _by_given_path.clear()
