#!/usr/bin/env python
"""Latency benchmark for ragate on a synthetic collection (default: 100k chunks, 512 dims, 20 tenants).

What it measures (see bench/README.md for how to read the figures):

1. Build: a synthetic collection written through the real `EdgeVectorIndex` (`open_index`,
   `ensure_collection`, `replace_document` per document, then `optimize()` so HNSW is built), with
   the exact payload schema `graph/indexing/ingest.py` writes. Dense vectors are seeded random unit vectors;
   sparse vectors are the engine's BM25 document vectors (`graph.algorithms.text.Analyzer`) over synthetic
   Portuguese/English text of ~150 words per chunk. The build is reused when `--home` already holds
   one with the same parameters (keyed by `bench-manifest.json`). Ingest throughput excludes embedding.
2. Retrieval: `index.search(collection, dense, sparse, tenant, filters=None, limit=50)` — one
   sub-query, dense + lexical lists in one engine call, with every governance gate — then, as rerank
   does, `index.features` over the union of the two lists — p50/p95/p99.
   Every hit is checked against the gates (tenant, approved, status) and the gated dense top-50 is
   compared with an exact numpy brute force over the same tenant's gated vectors (recall@50).
3. Whole graph: `compile_graph(store=InMemoryStore())` end to end on the same collection, with
   query embeddings served from the warmed `CachedEmbeddings` LRU (each question runs once before
   timing), so embedding costs ~0. Overhead = wall time − time inside `index.search` − time inside
   `embed_query` − time inside the reader's model calls (`spans`, `yes_no`, `entailment`: the model that reads
   a direct answer, a model call as embedding is), the union of intervals, per run.

    python bench/latency.py --chunks 100000 --dims 512 --queries 200 --home /tmp/ragate-bench-home \
        --tenants 20 --write-results
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import datetime as _dt
import functools
import gc
import hashlib
import io
import json
import os
import platform
import pstats
import shlex
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # `python bench/latency.py` from a checkout without `pip install -e .`
    sys.path.insert(0, str(ROOT))

from graph.algorithms.text import get_analyzer  # noqa: E402
from graph.assets import DEFAULT_POLICY_PATH
from graph.entrypoints.process import tune_garbage_collector  # noqa: E402
from graph.policy import load_policy  # noqa: E402
from graph.providers.vectorstore import (
    APPROVED_STATUSES,
    COLLECTION_SCHEMA,
    TENANT_FIELD,
    ChunkRecord,
    EdgeVectorIndex,
    open_index,
    payload_passes_gates,
    point_id,
)

GENERATOR_VERSION = 1  # bump when the synthetic data changes: a stored build is then rebuilt
COLLECTION = "documents"  # what the default policy routes every entity to
MANIFEST = "bench-manifest.json"
RESULTS_PATH = Path(__file__).resolve().parent / "RESULTS.md"
OUT_DIR = Path(__file__).resolve().parent / "out"
BEGIN, END = "<!-- bench:begin -->", "<!-- bench:end -->"
USE_MODEL = "local/use-multilingual"  # 512 dims

# --- synthetic vocabulary ------------------------------------------------------------------

FUNCTION_WORDS = {
    "pt": "de a o que e do da em um para é com não uma os no se na por mais as dos como mas foi ao ele das "
          "tem seu sua ou ser quando muito há nos já está também só pelo pela até isso entre era depois sem "
          "mesmo aos ter seus quem nas esse eles estão essa num nem suas meu às minha têm numa pelos".split(),
    "en": "the of and to a in is that for it as was with be by on not he this are or his from at which but "
          "have an they you were her she there been one all we their has would when if so no will more can "
          "about out up into than them only other its some what time could these two may then do first".split(),
}
DOMAIN_WORDS = {
    "pt": ("vendas receita faturamento inverno verão campanha coleção jaqueta jaquetas casaco casacos loja lojas "
           "entrega entregas frete devolução devoluções cliente clientes margem estoque logística região nordeste "
           "sul sudeste crescimento meta orçamento mídia influenciadores engajamento seguidores desconto promoção "
           "trimestre ticket médio aplicativo canal marketing preço produto produtos categoria tendência resultado "
           "planejamento playbook ações recomenda estratégia prazo taxa decisão judicial processo arrependimento "
           "conversão desempenho lançamento vitrine consumidor pedidos unidades varejo digital online crescimento "
           "participação ano anterior comparação semanas cobertura cápsula lives tiktok instagram meta google "
           "performance roas ctr cpc investimento retorno mercado concorrente concorrentes política trocas "
           "reembolso dias úteis operação centro distribuição tecido malha tricô moletom calça vestido bota "
           "temporada black friday natal dia mães relatório análise painel indicador indicadores").split(),
    "en": ("sales revenue turnover winter summer campaign collection jacket jackets coat coats store stores "
           "delivery deliveries shipping return returns customer customers margin inventory logistics region "
           "northeast south southeast growth target budget media influencers engagement followers discount "
           "promotion quarter ticket average app channel marketing price product products category trend result "
           "results planning playbook actions recommends strategy deadline rate decision court ruling lawsuit "
           "refund conversion performance launch showcase consumer orders units retail digital online share "
           "previous year comparison weeks coverage capsule live tiktok instagram meta google roas ctr cpc "
           "investment market competitor competitors policy exchanges business days operation center "
           "distribution fabric knit sweater hoodie trousers dress boots season black friday christmas report "
           "analysis dashboard indicator indicators financial operational evolved").split(),
}
SYLLABLES = ("ba be bi bo bu ca ce ci co cu da de di do du fa fe fi fo ga ge gi go la le li lo lu ma me mi mo mu "
             "na ne ni no nu pa pe pi po pu ra re ri ro ru sa se si so su ta te ti to tu va ve vi vo ven ter "
             "man dor cão ção ções mente dade tor tra pro con com per").split()
DOC_TYPES = (("report", 0.30), ("playbook", 0.15), ("legal", 0.10), ("social", 0.12), ("performance", 0.10),
             ("news", 0.10), ("operations", 0.13))
CATEGORY_OF = {"report": "sales", "playbook": "marketing", "legal": "legal", "social": "social",
               "performance": "marketing", "news": "market", "operations": "operations"}


def run_header(run: dict[str, Any]) -> list[str]:
    """The first lines of a RESULTS block of the load benches: when, which code, which machine, the command."""
    m = run["machine"]
    return [
        f"Run {run['started']} · commit `{run['commit']}` · code `{run['code']}` (sha256 of graph/, nodes/, "
        f"policies/) · machine: nproc {m['nproc']}, {m['cpu']}, {m['ram']} RAM · Python {m['python']}, langgraph "
        f"{m['langgraph']} · {m['os']}",
        "",
        f"`{run['command']}`",
        "",
    ]


def stop_process_group(proc: Any, waits: tuple[float, float] = (15, 10)) -> None:
    """Stop a child started in its own session (its process group id is its pid): SIGTERM, then
    SIGKILL, waiting `waits` seconds after each. A child already gone is fine."""
    import signal
    import subprocess

    if proc is None or proc.poll() is not None:
        return
    for sig, wait in zip((signal.SIGTERM, signal.SIGKILL), waits):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(wait)
            return
        except subprocess.TimeoutExpired:
            continue


def tenant_name(i: int) -> str:
    return f"tenant{i:02d}"


@dataclass
class Vocab:
    words: dict[str, np.ndarray]
    probs: dict[str, np.ndarray]
    content: dict[str, np.ndarray]  # domain words, for query text


def make_vocab(seed: int, n_pseudo: int = 4000) -> Vocab:
    rng = np.random.default_rng([seed, 11])
    pseudo: list[str] = []
    seen: set[str] = set()
    while len(pseudo) < n_pseudo:
        w = "".join(rng.choice(SYLLABLES, size=int(rng.integers(2, 5))))
        if w not in seen:
            seen.add(w)
            pseudo.append(w)
    words, probs, content = {}, {}, {}
    for lang in ("pt", "en"):
        domain = list(dict.fromkeys(DOMAIN_WORDS[lang]))
        # Zipf-like ranks: function words first (most frequent), then domain words, then the long tail.
        vocab = list(dict.fromkeys(FUNCTION_WORDS[lang] + domain + pseudo))
        ranks = np.arange(len(vocab), dtype=np.float64)
        p = 1.0 / (ranks + 2.7) ** 1.05
        words[lang] = np.array(vocab, dtype=object)
        probs[lang] = p / p.sum()
        content[lang] = np.array(domain, dtype=object)
    return Vocab(words, probs, content)


def _number(rng: np.random.Generator, lang: str) -> str:
    kind = rng.integers(0, 4)
    if kind == 0:
        return str(int(rng.integers(2023, 2027)))
    if kind == 1:
        v = f"{rng.uniform(0.5, 60):.1f}"
        return (v.replace(".", ",") if lang == "pt" else v) + "%"
    if kind == 2:
        v = f"{rng.uniform(1_000, 9_000_000):,.2f}"
        return "R$ " + v.replace(",", "_").replace(".", ",").replace("_", ".") if lang == "pt" else "$" + v
    return str(int(rng.integers(2, 500)))


def synth_text(rng: np.random.Generator, vocab: Vocab, lang: str, mean_words: int) -> str:
    n = int(np.clip(rng.normal(mean_words, mean_words / 6), mean_words * 0.5, mean_words * 1.5))
    ws = vocab.words[lang][rng.choice(len(vocab.words[lang]), size=n, p=vocab.probs[lang])].tolist()
    sentences, i = [], 0
    while i < n:
        size = int(rng.integers(8, 22))
        s = ws[i : i + size]
        if rng.random() < 0.35:
            s.insert(int(rng.integers(1, len(s) + 1)), _number(rng, lang))
        s[0] = s[0].capitalize()
        sentences.append(" ".join(s) + ".")
        i += size
    return " ".join(sentences)


# --- the synthetic corpus: structure and vectors are cheap to regenerate, text only on build ---


@dataclass
class Doc:
    doc_id: str
    tenant: int
    start: int  # first chunk row
    n_chunks: int
    language: str
    meta: dict[str, Any]
    asset_id: str
    asset_name: str


@dataclass
class Corpus:
    docs: list[Doc]
    tenant: np.ndarray  # per chunk row
    gated: np.ndarray  # per chunk row: approved and status ready/approved
    vectors: np.ndarray  # float32 (N, dims), unit rows
    row_of: dict[tuple[str, int], int] = field(default_factory=dict)  # (docId, chunk_index) -> row
    _by_point: dict[str, int] | None = None

    def row_by_point(self, pid: str) -> int | None:
        if self._by_point is None:
            self._by_point = {str(point_id(tenant_name(d.tenant), d.doc_id, i)): d.start + i
                              for d in self.docs for i in range(d.n_chunks)}
        return self._by_point.get(pid)


def make_corpus(n_chunks: int, dims: int, n_tenants: int, seed: int) -> Corpus:
    rng = np.random.default_rng([seed, 1])
    types, weights = zip(*DOC_TYPES)
    docs: list[Doc] = []
    tenant = np.empty(n_chunks, dtype=np.int32)
    gated = np.empty(n_chunks, dtype=bool)
    row = 0
    while row < n_chunks:
        n = int(min(rng.integers(1, 9), n_chunks - row))  # 1..8 chunks, ~4.5 on average
        t = int(rng.integers(0, n_tenants))
        doc_type = str(rng.choice(types, p=np.array(weights) / sum(weights)))
        approved = bool(rng.random() >= 0.10)  # ~10% not approved for AI
        status = "draft" if rng.random() < 0.10 else ("ready" if rng.random() < 0.5 else "approved")  # ~10% drafts
        lang = "pt" if rng.random() < 0.6 else "en"
        year = int(rng.integers(2024, 2027))
        meta: dict[str, Any] = {
            "isApprovedForAI": approved, "status": status, "docType": doc_type, "category": CATEGORY_OF[doc_type],
            "date": f"{year}-{int(rng.integers(1, 13)):02d}-{int(rng.integers(1, 29)):02d}",
            "sourceUrl": f"https://intranet.example/{tenant_name(t)}/{len(docs)}",
        }
        if doc_type == "playbook":
            meta["version"] = str(year)
        if doc_type == "performance":
            meta["performance_snapshot"] = {"ctr": round(float(rng.uniform(0.005, 0.06)), 4),
                                            "cvr": round(float(rng.uniform(0.005, 0.05)), 4),
                                            "cpc": round(float(rng.uniform(0.3, 3.0)), 2),
                                            "roas": round(float(rng.uniform(1.0, 8.0)), 1),
                                            "period": f"{year}-Q{int(rng.integers(1, 5))}", "status": "active"}
        doc_id = f"{tenant_name(t)}-{doc_type}-{len(docs):06d}"
        asset = f"asset-{t:02d}-{int(rng.integers(0, 2000)):04d}"
        docs.append(Doc(doc_id=doc_id, tenant=t, start=row, n_chunks=n, language=lang, meta=meta,
                        asset_id=asset, asset_name=f"{doc_type.title()} {asset}"))
        tenant[row : row + n] = t
        gated[row : row + n] = approved and status in APPROVED_STATUSES
        row += n
    vrng = np.random.default_rng([seed, 2])
    vectors = vrng.standard_normal((n_chunks, dims), dtype=np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    corpus = Corpus(docs=docs, tenant=tenant, gated=gated, vectors=vectors)
    for d in docs:
        for i in range(d.n_chunks):
            corpus.row_of[(d.doc_id, i)] = d.start + i
    return corpus


def doc_records(doc: Doc, corpus: Corpus, vocab: Vocab, analyzer, rng: np.random.Generator,
                mean_words: int) -> list[ChunkRecord]:
    """The chunks of one synthetic document, built by graph/indexing/ingest.py's own `chunk_record`."""
    from graph.indexing.ingest import Document, chunk_record, header_for

    tenant = tenant_name(doc.tenant)
    document = Document(id=doc.doc_id, content="", assetId=doc.asset_id, assetName=doc.asset_name,
                        metadata=doc.meta, source="synthetic")
    header = header_for(document)
    records = []
    for i in range(doc.n_chunks):
        piece = synth_text(rng, vocab, doc.language, mean_words)
        record = chunk_record(tenant, document, doc.meta, header, doc.language, i, piece)
        sv = analyzer.document_vector(f"{header}\n{piece}", doc.language)
        record.dense = corpus.vectors[doc.start + i].tolist()
        record.sparse = (list(sv.indices), list(sv.values))
        records.append(record)
    return records


# --- helpers -------------------------------------------------------------------------------


def pct(values, q: float) -> float:
    return float(np.percentile(np.asarray(values, dtype=np.float64), q)) if len(values) else float("nan")


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


class Probe:
    """Records the wall-clock intervals spent inside wrapped callables (any thread)."""

    def __init__(self):
        self.lock = threading.Lock()
        self.spans: dict[str, list[tuple[float, float]]] = {}

    def wrap(self, kind: str, fn):
        spans = self.spans.setdefault(kind, [])

        @functools.wraps(fn)
        def wrapper(*a, **kw):
            t0 = time.perf_counter()
            try:
                return fn(*a, **kw)
            finally:
                t1 = time.perf_counter()
                with self.lock:
                    spans.append((t0, t1))

        return wrapper

    def reset(self):
        with self.lock:
            for v in self.spans.values():
                v.clear()

    def union_ms(self, *kinds: str) -> float:
        spans = sorted(s for k in kinds for s in self.spans.get(k, []))
        total, cur_s, cur_e = 0.0, None, None
        for s, e in spans:
            if cur_e is None or s > cur_e:
                if cur_e is not None:
                    total += cur_e - cur_s
                cur_s, cur_e = s, e
            else:
                cur_e = max(cur_e, e)
        if cur_e is not None:
            total += cur_e - cur_s
        return total * 1000

    def count(self, kind: str) -> int:
        return len(self.spans.get(kind, []))


class CpuMonitor:
    """How busy the machine was with *other* processes during a phase (a benchmark on 2 cores is
    only as good as the quiet it ran in): machine busy time from /proc/stat minus this process's CPU."""

    def __init__(self):
        self.start = self._sample()

    @staticmethod
    def _sample():
        try:
            fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
        except (OSError, ValueError):
            return None
        idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
        return sum(fields), idle, time.process_time(), time.perf_counter()

    def other_load(self) -> float | None:
        end = self._sample()
        if self.start is None or end is None:
            return None
        tick = os.sysconf("SC_CLK_TCK")
        total, idle = (end[0] - self.start[0]) / tick, (end[1] - self.start[1]) / tick
        own = end[2] - self.start[2]
        return max(0.0, (total - idle) - own) / total if total > 0 else None


def proactive_reclaim() -> str | None:
    """DAMON-based proactive reclaim pages out memory that stays idle (some VMs run it). It decides
    what "first touch" costs: pages not used for a while are read from disk again."""
    found = None
    for state in Path("/sys/kernel/mm/damon/admin/kdamonds").glob("*/state"):
        with contextlib.suppress(OSError, ValueError):
            if state.read_text().strip() != "on":
                continue
            found = "DAMON on"
            for scheme in state.parent.glob("contexts/*/schemes/*"):
                with contextlib.suppress(OSError, ValueError):
                    if (scheme / "action").read_text().strip() == "pageout":
                        aggr_us = int((scheme.parent.parent / "monitoring_attrs/intervals/aggr_us").read_text())
                        min_age = int((scheme / "access_pattern/age/min").read_text())
                        return f"DAMON pageout of memory idle ≥ {min_age * aggr_us / 1e6:.0f} s"
    return found


def machine_info() -> dict[str, str]:
    cpu = "unknown"
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    mem = "unknown"
    with contextlib.suppress(OSError, ValueError, IndexError):
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                mem = f"{int(line.split()[1]) / 1024 / 1024:.1f} GiB"
                break
    versions = {}
    from importlib.metadata import PackageNotFoundError, version

    for pkg in ("qdrant-edge-py", "langgraph", "numpy"):
        try:
            versions[pkg] = version(pkg)
        except PackageNotFoundError:
            versions[pkg] = "?"
    return {"nproc": str(os.cpu_count()), "cpu": cpu, "ram": mem, "python": platform.python_version(),
            "reclaim": proactive_reclaim() or "none detected",
            "os": f"{platform.system()} {platform.release()}", **versions}


def command_line() -> str:
    """The command that is running: this script's, or that of the bench script that imported it (bench/scale.py)."""
    script = Path(sys.argv[0])
    name = script.name if script.suffix == ".py" and script.resolve().parent == OUT_DIR.parent else "latency.py"
    return shlex.join([sys.executable, f"bench/{name}", *sys.argv[1:]])


def git_commit(paths: Sequence[str] = ("graph", "nodes", "policies")) -> str:
    """The checked-out commit, and which of `paths` hold uncommitted changes ("unknown" outside a git checkout):
    what a recorded figure was measured on."""
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                              timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--", *paths], cwd=ROOT, capture_output=True,
                               text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    if not head:
        return "unknown"
    changed = sorted({line[3:].split("/")[0] if "/" in line[3:] else line[3:] for line in dirty.splitlines()})
    return f"{head}" + (f" + uncommitted changes in {', '.join(changed)}" if changed else "")


def code_fingerprint() -> str:
    """Short hash of graph/, nodes/ and policies/: which code and policy the figures belong to."""
    h = hashlib.sha256()
    for folder in ("graph", "nodes", "policies"):
        for f in sorted((ROOT / folder).rglob("*")):
            if f.is_file() and f.suffix in (".py", ".yaml"):
                h.update(f.relative_to(ROOT).as_posix().encode())
                h.update(f.read_bytes())
    return h.hexdigest()[:12]


class ShardTimer:
    """Stands in for an EdgeShard: forwards everything, timing each engine method call (the Rust
    side), so that `index.search` splits into engine time and Python-side time whatever its code."""

    def __init__(self, shard, probe: Probe):
        self._shard, self._probe = shard, probe

    def __getattr__(self, name):
        attr = getattr(self._shard, name)
        return self._probe.wrap("engine", attr) if callable(attr) else attr


@contextlib.contextmanager
def timing_engine(index: EdgeVectorIndex, probe: Probe):
    shard = index._shard(COLLECTION)
    index._shards[COLLECTION] = ShardTimer(shard, probe)
    try:
        yield
    finally:
        index._shards[COLLECTION] = shard


# --- 1. build ------------------------------------------------------------------------------


def build_params(args) -> dict[str, Any]:
    return {"generator": GENERATOR_VERSION, "chunks": args.chunks, "dims": args.dims, "tenants": args.tenants,
            "seed": args.seed, "words": args.words, "collection": COLLECTION, "schema": COLLECTION_SCHEMA}


def embedding_model_for(dims: int) -> str:
    return USE_MODEL if dims == 512 else f"local/bench-hash-{dims}"


def ensure_built(args, home: Path, corpus: Corpus, vocab: Vocab, analyzer) -> tuple[EdgeVectorIndex, dict]:
    params = build_params(args)
    manifest_path = home / MANIFEST
    index = open_index(home)
    if manifest_path.exists() and not args.rebuild:
        stored = json.loads(manifest_path.read_text())
        if stored.get("params") == params and index.count(COLLECTION) == args.chunks:
            log(f"reusing the collection in {home} (built {stored['build']['date']})")
            return index, stored
        log("stored collection has other parameters or is incomplete: rebuilding")
    # Only our own collection folder and manifest are removed, never the rest of --home.
    index.close()
    shutil.rmtree(home / "collections" / COLLECTION, ignore_errors=True)
    manifest_path.unlink(missing_ok=True)
    index = open_index(home)
    index.ensure_collection(COLLECTION, args.dims, embedding_model_for(args.dims))

    rng = np.random.default_rng([args.seed, 3])
    prep_s = write_s = 0.0
    done = 0
    started = time.perf_counter()
    next_report = 10_000
    for doc in corpus.docs:
        t0 = time.perf_counter()
        records = doc_records(doc, corpus, vocab, analyzer, rng, args.words)
        t1 = time.perf_counter()
        index.replace_document(COLLECTION, tenant_name(doc.tenant), doc.doc_id, records)
        t2 = time.perf_counter()
        prep_s += t1 - t0
        write_s += t2 - t1
        done += doc.n_chunks
        if done >= next_report:
            log(f"  {done:>7} chunks  ({done / (t2 - started):,.0f} chunks/s; write {done / write_s:,.0f} chunks/s)")
            next_report += 10_000
    t0 = time.perf_counter()
    index.flush()
    flush_s = time.perf_counter() - t0
    load_s = time.perf_counter() - started
    log(f"loaded {done} chunks in {load_s:.1f} s; optimizing (HNSW build)…")
    t0 = time.perf_counter()
    index.optimize(COLLECTION)
    optimize_s = time.perf_counter() - t0
    index.flush()
    info = index._shard(COLLECTION).info()
    log(f"optimize() took {optimize_s:.1f} s: {info.segments_count} segments, "
        f"{info.indexed_vectors_count} indexed vectors")
    du = sum(f.stat().st_size for f in (home / "collections" / COLLECTION).rglob("*") if f.is_file())
    build = {
        "date": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        "command": command_line(),
        "chunks": done, "docs": len(corpus.docs),
        "prep_s": round(prep_s, 2), "write_s": round(write_s, 2), "flush_s": round(flush_s, 2),
        "load_s": round(load_s, 2), "optimize_s": round(optimize_s, 2),
        "segments": info.segments_count, "indexed_vectors": info.indexed_vectors_count,
        "disk_mb": round(du / 1e6, 1),
        "machine": machine_info(),
    }
    stored = {"params": params, "build": build}
    manifest_path.write_text(json.dumps(stored, indent=2))
    return index, stored


def embed_sample(corpus: Corpus, vocab: Vocab, args, n: int) -> float | None:
    """Documents/s of the default embedder on `n` synthetic chunks, for context (not part of the load)."""
    if n <= 0:
        return None
    from graph.providers.embeddings import base_embeddings

    rng = np.random.default_rng([args.seed, 9])
    texts = [synth_text(rng, vocab, "pt", args.words) for _ in range(n)]
    model = base_embeddings(USE_MODEL)
    model.embed_documents(texts[:8])  # load weights / warm up
    t0 = time.perf_counter()
    model.embed_documents(texts)
    return n / (time.perf_counter() - t0)


# --- 2. retrieval --------------------------------------------------------------------------


def random_queries(n: int, corpus: Corpus, vocab: Vocab, analyzer, n_tenants: int, seed: int):
    rng = np.random.default_rng([seed, 4])
    dims = corpus.vectors.shape[1]
    out = []
    for i in range(n):
        v = rng.standard_normal(dims).astype(np.float32)
        v /= np.linalg.norm(v)
        lang = "pt" if rng.random() < 0.6 else "en"
        words = rng.choice(vocab.content[lang], size=int(rng.integers(3, 9)), replace=False).tolist()
        out.append({"tenant": i % n_tenants, "dense": v, "lang": lang, "text": " ".join(words),
                    "sparse": analyzer.query_vector(" ".join(words), lang)})
    return out


class GateViolation(AssertionError):
    pass


def check_hits(hits, tenant: int, corpus: Corpus, where: str, query: np.ndarray | None, shard) -> tuple[float, list[int]]:
    """Fail loudly on any hit that breaks a gate, checked twice: against the generator's ground truth
    (by point id) and against the payload stored in the engine (read back outside the timing).
    Returns the largest error of the hits' reported similarity to `query` (when the index reports
    one) against numpy, and the hits' corpus rows."""
    name = tenant_name(tenant)
    stored = {str(r.id): r.payload or {} for r in shard.retrieve(
        [int(h.point_id) for h in hits], with_payload=[TENANT_FIELD, "isApprovedForAI", "status"],
        with_vector=False)}
    worst, rows = 0.0, []
    for h in hits:
        p = stored.get(str(h.point_id), {})
        bad = []
        if p.get(TENANT_FIELD) != name:
            bad.append(f"{TENANT_FIELD}={p.get(TENANT_FIELD)!r} (asked {name!r})")
        if p.get("isApprovedForAI") != "true":
            bad.append(f"isApprovedForAI={p.get('isApprovedForAI')!r}")
        if p.get("status") not in APPROVED_STATUSES:
            bad.append(f"status={p.get('status')!r}")
        row = corpus.row_by_point(str(h.point_id))
        if row is None or not corpus.gated[row] or corpus.tenant[row] != tenant:
            bad.append("ground truth says this chunk must not be returned")
        if bad:
            raise GateViolation(f"GATE VIOLATION in {where}: point {h.point_id}: {'; '.join(bad)}")
        rows.append(row)
        if query is not None:
            got = getattr(h, "similarity", None)
            if got is None and getattr(h, "vector", None) is not None:
                got = float(np.dot(np.asarray(h.vector, dtype=np.float32), query))
            if got is None:
                raise GateViolation(f"{where}: hit {h.point_id} carries no similarity to the question")
            worst = max(worst, abs(got - float(corpus.vectors[row] @ query)))
    return worst, rows


def prewarm(index: EdgeVectorIndex) -> float:
    """Read every payload and vector (dense and BM25) once, so the timed queries see a process whose data is
    in memory (on machines that page idle memory out, e.g. with DAMON reclaim, it is not otherwise)."""
    from qdrant_edge import ScrollRequest

    shard, offset = index._shard(COLLECTION), None
    t0 = time.perf_counter()
    while True:
        _, offset = shard.scroll(ScrollRequest(offset=offset, limit=2000, with_payload=True, with_vector=True))
        if offset is None:
            return time.perf_counter() - t0


def retrieval_phase(index: EdgeVectorIndex, corpus: Corpus, vocab: Vocab, analyzer, args) -> dict:
    queries = random_queries(args.queries + args.warmup, corpus, vocab, analyzer, args.tenants, args.seed)
    warm, timed = queries[: args.warmup], queries[args.warmup :]
    # As the graph reads one sub-query: retrieve's dense + lexical lists, then rerank's features of their
    # union (similarity to the question, which of its analyzer terms each holds, the boosts' conditions),
    # when the index has that call; the hits carry their similarity for the checks below.
    with_features = callable(getattr(index, "features", None))
    with_similarity = with_terms = with_flags = with_features
    boost_flags = {name: cond for name, (_, cond) in load_policy(DEFAULT_POLICY_PATH).boosts().items()}
    for q in queries:
        q["terms"] = sorted(analyzer.terms(q["text"], q["lang"]))

    def search(q):
        dense = q["dense"].tolist()  # embed_query returns a list; the node hands that to the index
        tenant = tenant_name(q["tenant"])
        dense_hits, lex_hits = index.search(COLLECTION, dense=dense, sparse=q["sparse"], tenant=tenant, filters=None,
                                            limit=args.limit)
        if not with_features:
            return dense_hits, lex_hits
        ids = list(dict.fromkeys(h.point_id for h in [*dense_hits, *lex_hits]))
        feats = index.features(COLLECTION, tenant=tenant, point_ids=ids, similarity_to=dense, match_terms=q["terms"],
                               flags=boost_flags)

        def with_similarity_of(hits):
            return [SimpleNamespace(point_id=h.point_id, score=h.score,
                                    similarity=getattr(feats.get(h.point_id), "similarity", None)) for h in hits]

        return with_similarity_of(dense_hits), with_similarity_of(lex_hits)

    # The first queries after opening the collection pay first-touch costs (pages of the payload
    # and vector storage not yet mapped in this process): reported separately, as what a one-shot
    # `ragate ask` process sees.
    cold_lat = []
    for q in warm:
        t0 = time.perf_counter()
        search(q)
        cold_lat.append((time.perf_counter() - t0) * 1000)
    # Then the steady state of a long-running process: touch every payload and vector once.
    prewarm_s = prewarm(index) if args.prewarm else None
    lat, results = [], []
    for q in timed:
        t0 = time.perf_counter()
        res = search(q)
        lat.append((time.perf_counter() - t0) * 1000)
        results.append(res)

    # Correctness, outside the timed loop: gates on every hit, recall@limit against brute force.
    recalls, score_err, sim_err, dense_n, lex_n, lex_zero = [], 0.0, 0.0, [], [], 0
    by_tenant = {t: np.flatnonzero((corpus.tenant == t) & corpus.gated) for t in range(args.tenants)}
    for q, (dense_hits, lex_hits) in zip(timed, results):
        t = q["tenant"]
        shard = index._shard(COLLECTION)
        err_d, got = check_hits(dense_hits, t, corpus, "dense list", q["dense"], shard)
        err_l, _ = check_hits(lex_hits, t, corpus, "lexical list", q["dense"], shard)
        sim_err = max(sim_err, err_d, err_l)
        rows = by_tenant[t]
        sims = corpus.vectors[rows] @ q["dense"]
        k = min(args.limit, len(rows))
        exact = set(rows[np.argpartition(-sims, k - 1)[:k]].tolist())
        recalls.append(len(exact & set(got)) / k)
        for h, r in zip(dense_hits, got):
            score_err = max(score_err, abs(h.score - float(corpus.vectors[r] @ q["dense"])))
        dense_n.append(len(dense_hits))
        lex_n.append(len(lex_hits))
        lex_zero += sum(1 for h in lex_hits if h.score <= 0)
        if len(dense_hits) != k:
            raise GateViolation(f"dense list has {len(dense_hits)} hits, the tenant has {len(rows)} gated chunks")
    if lex_zero:
        raise GateViolation(f"{lex_zero} lexical hits with a non-positive BM25 score")

    # Where one search's time goes: engine calls (Rust) vs the Python around them. A second pass,
    # so that the proxy's own cost is not in the headline figure.
    probe = Probe()
    engine, calls = [], []
    with timing_engine(index, probe):
        for q in timed:
            probe.reset()
            search(q)
            engine.append(probe.union_ms("engine"))
            calls.append(probe.count("engine"))
    gated_per_tenant = [len(r) for r in by_tenant.values()]
    return {
        "cold_p50": pct(cold_lat, 50), "cold_n": len(cold_lat), "prewarm_s": prewarm_s,
        "slow": sum(1 for v in lat if v > 10), "slow_tenants": sorted({tenant_name(q["tenant"]) for q, v in zip(timed, lat) if v > 10}),
        "fast_p50": pct([v for q, v in zip(timed, lat) if tenant_name(q["tenant"]) not in
                         {tenant_name(x["tenant"]) for x, w in zip(timed, lat) if w > 10}], 50),
        "p50": pct(lat, 50), "p95": pct(lat, 95), "p99": pct(lat, 99), "mean": float(np.mean(lat)),
        "recall_mean": float(np.mean(recalls)), "recall_min": float(np.min(recalls)),
        "max_score_err": score_err, "max_similarity_err": sim_err, "with_similarity": with_similarity,
        "with_terms": with_terms, "with_flags": with_flags,
        "dense_hits_mean": float(np.mean(dense_n)), "lex_hits_mean": float(np.mean(lex_n)),
        "gated_per_tenant": int(np.median(gated_per_tenant)),
        "engine_p50": pct(engine, 50), "engine_calls": float(np.mean(calls)),
        "python_p50": pct(lat, 50) - pct(engine, 50),
        "n": len(lat),
    }


def measured_retrieval(index: EdgeVectorIndex, corpus: Corpus, vocab: Vocab, analyzer, args) -> dict:
    """`retrieval_phase` out of the harness's way, with the load other processes put on the machine meanwhile."""
    corpus.row_by_point("")  # build the lookup now
    # The harness's own ~10^6 long-lived objects (corpus, ground truth) would make every full
    # garbage collection scan them, inflating tail latencies of the code under test: exempt them.
    gc.collect()
    gc.freeze()
    cpu = CpuMonitor()
    ret = retrieval_phase(index, corpus, vocab, analyzer, args)
    ret["other_load"] = cpu.other_load()
    return ret


# --- 3. whole graph ------------------------------------------------------------------------

GRAPH_QUESTIONS = [
    "Quanto cresceram as vendas de inverno em 2025?",
    "What does the winter campaign playbook recommend?",
    "Qual é o prazo médio de entrega no Nordeste?",
    "What is the return rate of online customers?",
    "Qual foi o ROAS da campanha no TikTok?",
    "What were the main results of the collection launch?",
    "Compare as vendas de inverno de 2025 com a meta de inverno de 2026 e diga quais ações o playbook de 2026 recomenda.",
    "What was the ROAS of the TikTok campaign and how did engagement evolve from Q3 2025 to Q1 2026?",
    "Como a decisão judicial mudou o processo de devoluções online e qual é a taxa atual de devolução?",
    "Analyze the winter collection from all perspectives: financial, marketing, operational and customer.",
]
CRITICAL_PATH = ("route_gate", "decompose", "rrf", "rerank", "bridge", "compose", "judge", "safe_response", "memory_shield")


class HashEmbeddings:
    """Deterministic stand-in when --dims is not the default model's 512 (embedding is excluded anyway)."""

    def __init__(self, dims: int):
        self.dims = dims

    def embed_query(self, text: str) -> list[float]:
        rng = np.random.default_rng(int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little"))
        v = rng.standard_normal(self.dims)
        return (v / np.linalg.norm(v)).tolist()

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self.embed_query(t) for t in texts]


def graph_setup(home: Path, tenant: int, dims: int, nodes=None):
    from langgraph.store.memory import InMemoryStore

    from graph.context import Context
    from graph.graph import compile_graph
    from graph.providers import embeddings as emb_mod

    spec = embedding_model_for(dims)
    ctx = Context(tenant=tenant_name(tenant), home=str(home), policy_path=str(DEFAULT_POLICY_PATH),
                  embedding_model=spec, vector_store="embedded")
    if spec != USE_MODEL:
        # The stand-in joins the local models under its own name: the graph resolves it as it resolves any model.
        emb_mod.LOCAL_EMBEDDINGS.setdefault(spec.removeprefix("local/"), functools.partial(HashEmbeddings, dims))
    app = compile_graph(store=InMemoryStore(), nodes=nodes)
    return app, ctx


def text_caches(policy_path) -> list:
    """Caches keyed by chunk or sentence text that a repeated question would find warm (the
    analyzer's term cache). Cleared before each "cold" run so that every run pays for its texts as a
    new question would; the query-vector LRU is left warm on purpose (embedding is excluded)."""
    analyzer = get_analyzer(load_policy(policy_path))
    return [fn for fn in (getattr(analyzer, "terms", None),) if hasattr(fn, "cache_clear")]


def graph_runs(app, ctx, probe: Probe, rounds: int, cold: bool) -> list[dict]:
    caches = text_caches(ctx.policy_path) if cold else []
    runs = []
    for r in range(rounds):
        for qi, q in enumerate(GRAPH_QUESTIONS):
            for c in caches:
                c.cache_clear()
            probe.reset()
            t0 = time.perf_counter()
            out = app.invoke({"question": q, "correlation_id": f"r{r}q{qi}"}, context=ctx)
            wall = (time.perf_counter() - t0) * 1000
            if not out["rag"].get("enabled") or out.get("errors"):
                raise RuntimeError(f"graph run did not retrieve cleanly for {q!r}: "
                                   f"rag.error={out['rag'].get('error')!r} errors={out.get('errors')}")
            tm = out["timings_ms"]
            retrieve = [v for k, v in tm.items() if k.startswith("retrieve[")]
            search_ms = probe.union_ms("search")
            runs.append({
                "q": qi, "wall": wall, "timings": tm, "branches": len(retrieve),
                "decomposed": bool(out["decomposition"].get("decomposed")),
                "search": search_ms, "engine": probe.union_ms("engine"), "embed": probe.union_ms("embed"),
                "fetch": probe.union_ms("fetch"),
                "reader": probe.union_ms("reader"),
                "overhead": wall - probe.union_ms("search", "embed", "reader"),
                "python": wall - probe.union_ms("engine", "embed", "reader"),
                "retrieve_sum": sum(retrieve), "retrieve_max": max(retrieve),
                "framework": wall - sum(tm.get(k, 0.0) for k in CRITICAL_PATH) - max(retrieve),
                "searches": probe.count("search"), "embeds": probe.count("embed"),
                "fused": len(out.get("fused") or []), "verdict": out["verdict"]["final_decision"],
                "coverage": out.get("coverage_level"), "intent": out["rag"].get("intent"),
            })
    return runs


def summarize(rs: list[dict]) -> dict:
    nodes = {}
    for name in ("route_gate", "decompose", "rrf", "rerank", "bridge", "compose", "judge", "safe_response", "memory_shield"):
        vals = [r["timings"][name] for r in rs if name in r["timings"]]
        if vals:
            nodes[name] = pct(vals, 50)
    nodes["retrieve (per branch)"] = pct([v for r in rs for k, v in r["timings"].items() if k.startswith("retrieve[")], 50)
    nodes["retrieve (Σ branches)"] = pct([r["retrieve_sum"] for r in rs], 50)
    col = lambda k: [r[k] for r in rs]  # noqa: E731
    return {
        "n": len(rs), "branches_mean": float(np.mean(col("branches"))),
        "wall_p50": pct(col("wall"), 50), "wall_p95": pct(col("wall"), 95),
        "search_p50": pct(col("search"), 50), "engine_p50": pct(col("engine"), 50), "embed_p50": pct(col("embed"), 50),
        "reader_p50": pct(col("reader"), 50), "reader_p95": pct(col("reader"), 95),
        "fetch_p50": pct(col("fetch"), 50), "python_p50": pct(col("python"), 50), "python_p95": pct(col("python"), 95),
        "overhead_p50": pct(col("overhead"), 50), "overhead_p95": pct(col("overhead"), 95),
        "retrieve_minus_search_p50": pct([r["retrieve_sum"] - r["search"] for r in rs], 50),
        "framework_p50": pct(col("framework"), 50),
        "fused_mean": float(np.mean(col("fused"))),
        "nodes_p50": nodes,
    }


def shipped_reader():
    """The reader the graph loads (one instance per process), or None when it is missing: its model calls are
    timed apart from the overhead, as embedding is."""
    from graph.providers.reader import load_reader

    try:
        return load_reader()
    except Exception:
        return None


def graph_phase(index: EdgeVectorIndex, args, home: Path) -> dict:
    from graph.providers.resources import get_resources

    app, ctx = graph_setup(home, args.graph_tenant, args.dims)
    res = get_resources(ctx)
    assert res.index is index, "the graph must use the benchmark's index instance"
    probe = Probe()
    reads = [name for name in ("search", "features", "fetch") if callable(getattr(index, name, None))]
    for name in reads:  # instance attributes shadow the methods: the nodes call these
        # rerank's one features request completes the branches' searches: timed with them.
        setattr(index, name, probe.wrap("search" if name == "features" else name, getattr(index, name)))
    res.embeddings.embed_query = probe.wrap("embed", res.embeddings.embed_query)
    reader = shipped_reader()
    model_calls = ("spans", "yes_no", "entailment") if reader is not None else ()
    for name in model_calls:
        setattr(reader, name, probe.wrap("reader", getattr(reader, name)))
    try:
        with timing_engine(index, probe):
            # Warm-up: loads the model, the policy and the BM25 analyzers, and fills the query-vector
            # LRU with every question and sub-query (the cache key is the text).
            for q in GRAPH_QUESTIONS:
                app.invoke({"question": q, "correlation_id": "warmup"}, context=ctx)
            cold = graph_runs(app, ctx, probe, args.graph_rounds, cold=True)
            warm = graph_runs(app, ctx, probe, args.graph_rounds, cold=False)
    finally:
        for name in reads:
            delattr(index, name)
        del res.embeddings.embed_query
        for name in model_calls:
            delattr(reader, name)

    per_question = []
    for qi, q in enumerate(GRAPH_QUESTIONS):
        rs = [r for r in cold if r["q"] == qi]
        per_question.append({"question": q, "intent": rs[0]["intent"], "branches": rs[0]["branches"],
                             "decomposed": rs[0]["decomposed"], "wall_p50": pct([r["wall"] for r in rs], 50),
                             "search_p50": pct([r["search"] for r in rs], 50),
                             "overhead_p50": pct([r["overhead"] for r in rs], 50),
                             "warm_overhead_p50": pct([r["overhead"] for r in warm if r["q"] == qi], 50),
                             "coverage": rs[0]["coverage"], "verdict": rs[0]["verdict"], "fused": rs[0]["fused"]})
    simple = [r for r in cold if not r["decomposed"]]
    complex_ = [r for r in cold if r["decomposed"]]
    return {"all": summarize(cold), "simple": summarize(simple) if simple else None,
            "decomposed": summarize(complex_) if complex_ else None, "warm": summarize(warm),
            "per_question": per_question, "tenant": tenant_name(args.graph_tenant),
            "cold_caches": len(text_caches(ctx.policy_path))}


def profile_graph(args, home: Path, rounds: int) -> str:
    """cProfile of every node call (each node runs under its own profiler, in whatever thread
    LangGraph runs it), merged; plus the LangGraph driver in the calling thread, profiled separately."""
    from graph.graph import NODES

    profiles: list[cProfile.Profile] = []
    lock = threading.Lock()

    def profiled(fn):
        @functools.wraps(fn)
        def wrapper(state, runtime):
            prof = cProfile.Profile()
            prof.enable()
            try:
                return fn(state, runtime)
            finally:
                prof.disable()
                with lock:
                    profiles.append(prof)

        return wrapper

    app, ctx = graph_setup(home, args.graph_tenant, args.dims, nodes={k: profiled(v) for k, v in NODES.items()})
    for q in GRAPH_QUESTIONS:
        app.invoke({"question": q}, context=ctx)
    profiles.clear()
    caches = text_caches(ctx.policy_path)  # as in the timed runs: every run pays for its texts
    for _ in range(rounds):
        for q in GRAPH_QUESTIONS:
            for c in caches:
                c.cache_clear()
            app.invoke({"question": q}, context=ctx)
    buf = io.StringIO()
    st = pstats.Stats(profiles[0], stream=buf)
    for p in profiles[1:]:
        st.add(p)
    n = rounds * len(GRAPH_QUESTIONS)
    buf.write(f"# node code, {n} graph runs (divide the times by {n} for per-run ms)\n")
    st.sort_stats("tottime").print_stats(30)
    st.sort_stats("cumulative").print_stats(40)
    # The LangGraph driver (scheduling, channels, state merges) without the node bodies.
    app2, ctx2 = graph_setup(home, args.graph_tenant, args.dims)
    driver = cProfile.Profile()
    driver.enable()
    for _ in range(rounds):
        for q in GRAPH_QUESTIONS:
            for c in caches:
                c.cache_clear()
            app2.invoke({"question": q}, context=ctx2)
    driver.disable()
    buf.write(f"\n# whole invoke in the calling thread ({n} runs; branches run in worker threads are not in here)\n")
    pstats.Stats(driver, stream=buf).sort_stats("tottime").print_stats(30)
    return buf.getvalue()


# --- 5. what-ifs: engine-level measurements behind the recommendations (--explore) ------------

GRAPH_FIELDS = ["docId", "chunk_index", "assetId", "assetName", "text", "header", "language", "metadata"]


def explore(index: EdgeVectorIndex, corpus: Corpus, vocab: Vocab, analyzer, args, home: Path) -> dict:
    """Alternatives measured on the same collection, without changing the code under test: what a
    search costs without payloads, what payloads cost per point, dense recall with ACORN or exact
    search, the reranker's text analysis vs asking the engine which candidates hold each question
    term, and LangGraph's own cost with the node bodies replaced by recorded updates."""
    from qdrant_edge import (
        AcornSearchParams,
        Filter,
        HasIdCondition,
        IdfParams,
        Query,
        QueryBatchRequest,
        QueryRequest,
        SearchParams,
        SparseVector,
    )

    from graph.algorithms.text import Analyzer
    from graph.providers.vectorstore import DENSE, SPARSE, governance_filter

    shard = index._shard(COLLECTION)
    n = min(args.queries, 200)
    qs = random_queries(n + 20, corpus, vocab, analyzer, args.tenants, args.seed + 1000)
    gates = {t: governance_filter(tenant_name(t)) for t in range(args.tenants)}
    by_tenant = {t: np.flatnonzero((corpus.tenant == t) & corpus.gated) for t in range(args.tenants)}
    fresh = Analyzer({"pt": "portuguese", "en": "english"})  # no term cache: what a new question pays
    if args.prewarm:
        prewarm(index)

    def stored_terms(q, terms):
        return index.stored_terms(COLLECTION, tenant_name(q["tenant"]), terms)

    def batch(q, payload=False, params=None):
        g = gates[q["tenant"]]
        lexical = SparseVector(stored_terms(q, [int(x) for x in q["sparse"].indices]), list(q["sparse"].values))
        return shard.query_batch(QueryBatchRequest([
            QueryRequest(query=Query.Nearest(q["dense"].tolist(), using=DENSE), limit=args.limit, filter=g,
                         with_payload=payload, params=params),
            QueryRequest(query=Query.Nearest(lexical, using=SPARSE), limit=args.limit, filter=g,
                         with_payload=payload, params=SearchParams(idf=IdfParams(corpus=g)))]))

    def dense_only(q, params):
        return shard.query(QueryRequest(query=Query.Nearest(q["dense"].tolist(), using=DENSE), limit=args.limit,
                                        filter=gates[q["tenant"]], with_payload=False, params=params))

    dense_variants = {"default HNSW": None, "hnsw_ef=256": SearchParams(hnsw_ef=256),
                      "ACORN": SearchParams(acorn=AcornSearchParams(enable=True)), "exact": SearchParams(exact=True)}
    import graph.providers.vectorstore as vs

    light = getattr(vs, "LIGHT_PAYLOAD", None)
    t = {k: [] for k in ("ids", "payload", "light", "similarity", "analyze", "presence")}
    dense_t = {k: [] for k in dense_variants}
    dense_r = {k: [] for k in dense_variants}
    hits_per_query, agree, pairs = [], 0, 0
    for i, q in enumerate(qs):
        record = i >= 20
        t0 = time.perf_counter()
        d, s = batch(q)
        ids = list(dict.fromkeys([p.id for p in d] + [p.id for p in s]))
        t1 = time.perf_counter()
        pd, ps = batch(q, payload=GRAPH_FIELDS)
        for p in pd + ps:
            p.payload  # noqa: B018 — the conversion to Python is part of the cost
        payload_ms = (time.perf_counter() - t1) * 1000
        t2 = time.perf_counter()
        if light:
            ld, ls = batch(q, payload=list(light))
            for p in ld + ls:
                p.payload  # noqa: B018
        light_ms = (time.perf_counter() - t2) * 1000
        t2 = time.perf_counter()
        only = Filter(must=[HasIdCondition(set(ids))])
        shard.query(QueryRequest(query=Query.Nearest(q["dense"].tolist(), using=DENSE), limit=len(ids), filter=only,
                                 with_payload=False))
        t3 = time.perf_counter()
        recs = shard.retrieve(ids, with_payload=["header", "text", "language"], with_vector=False)
        texts = {r.id: (f"{r.payload['header']}\n{r.payload['text']}", r.payload["language"]) for r in recs}
        t4 = time.perf_counter()
        terms = {pid: frozenset(fresh.model(q["lang"]).embed_query(text).indices) for pid, (text, _) in texts.items()}
        t5 = time.perf_counter()
        q_terms = [int(x) for x in q["sparse"].indices]
        pres = shard.query_batch(QueryBatchRequest([
            QueryRequest(query=Query.Nearest(SparseVector([term], [1.0]), using=SPARSE), limit=len(ids), filter=only,
                         with_payload=False) for term in stored_terms(q, q_terms)]))
        holders = [{p.id for p in lst} for lst in pres]
        t6 = time.perf_counter()
        for pid, (_, lang) in texts.items():
            if lang == q["lang"]:  # same analyzer on both sides: the answers must agree
                for term, h in zip(q_terms, holders):
                    pairs += 1
                    agree += (term in terms[pid]) == (pid in h)
        items = list(dense_variants.items())
        for name, params in items[i % len(items):] + items[: i % len(items)]:
            d0 = time.perf_counter()
            out = dense_only(q, params)
            d1 = time.perf_counter()
            if record:
                dense_t[name].append((d1 - d0) * 1000)
                rows = by_tenant[q["tenant"]]
                k = min(args.limit, len(rows))
                sims = corpus.vectors[rows] @ q["dense"]
                exact = set(rows[np.argpartition(-sims, k - 1)[:k]].tolist())
                got = shard.retrieve([p.id for p in out], with_payload=["docId", "chunk_index"], with_vector=False)
                dense_r[name].append(len(exact & {corpus.row_of[(r.payload["docId"], r.payload["chunk_index"])]
                                                  for r in got}) / k)
        if record:
            t["ids"].append((t1 - t0) * 1000)
            t["payload"].append(payload_ms)
            t["light"].append(light_ms)
            t["similarity"].append((t3 - t2) * 1000)
            t["analyze"].append((t5 - t4) * 1000)
            t["presence"].append((t6 - t5) * 1000)
            hits_per_query.append((len(d) + len(s), len(ids), len(q_terms)))
    hp = np.array(hits_per_query)
    out = {k: pct(v, 50) for k, v in t.items()}
    out.update(hits=float(hp[:, 0].mean()), union=float(hp[:, 1].mean()), q_terms=float(hp[:, 2].mean()),
               agreement=agree / pairs if pairs else float("nan"), pairs=pairs,
               dense={k: (pct(dense_t[k], 50), pct(dense_t[k], 95), float(np.mean(dense_r[k])), float(np.min(dense_r[k])))
                      for k in dense_variants})
    out["hydrate"] = hydrate_variants(index, shard, qs, gates, args) if callable(getattr(index, "fetch", None)) else None
    out["light_fields"] = list(light) if light else None
    out["per_point_payload_us"] = (out["payload"] - out["ids"]) / out["hits"] * 1000

    # Per-call costs of the lookups every node repeats.
    from graph.context import Context
    from graph.providers.resources import get_resources

    ctx = Context(tenant=tenant_name(args.graph_tenant), home=str(home), policy_path=str(DEFAULT_POLICY_PATH),
                  embedding_model=embedding_model_for(args.dims))
    get_resources(ctx)
    for name, fn in (("load_policy", lambda: load_policy(ctx.policy_path)), ("get_resources", lambda: get_resources(ctx)),
                     ("governance_filter", lambda: governance_filter(ctx.tenant))):
        t0 = time.perf_counter()
        for _ in range(2000):
            fn()
        out[f"{name}_us"] = (time.perf_counter() - t0) / 2000 * 1e6

    if args.graph_rounds > 0:
        out["langgraph"] = langgraph_floor(home, args)
    return out


def hydrate_variants(index: EdgeVectorIndex, shard, qs, gates, args, n: int = 12) -> dict:
    from qdrant_edge import Filter, HasIdCondition, Query, QueryRequest, SearchParams

    from graph.providers.vectorstore import DENSE

    t = {"fetch": [], "retrieve": [], "query": []}
    for i, q in enumerate(qs):
        gate = gates[q["tenant"]]
        dense = q["dense"].tolist()
        ids = [p.id for p in shard.query(QueryRequest(query=Query.Nearest(dense, using=DENSE), limit=n, filter=gate,
                                                      with_payload=False, params=SearchParams(exact=True)))]
        t0 = time.perf_counter()
        a = index.fetch(COLLECTION, tenant_name(q["tenant"]), [str(x) for x in ids])
        t1 = time.perf_counter()
        b = {str(r.id): dict(r.payload or {}) for r in shard.retrieve(ids, with_payload=True, with_vector=False)}
        b = {k: v for k, v in b.items() if payload_passes_gates(v, tenant_name(q["tenant"]))}
        t2 = time.perf_counter()
        c = {str(p.id): dict(p.payload or {}) for p in shard.query(QueryRequest(
            query=Query.Nearest(dense, using=DENSE), limit=len(ids), with_payload=True, params=SearchParams(exact=True),
            filter=Filter(must=[*gate.must, HasIdCondition(set(ids))])))}
        t3 = time.perf_counter()
        if set(a) != set(b) or set(b) != set(c):
            raise AssertionError("hydrate variants disagree")
        if i >= 20:
            t["fetch"].append((t1 - t0) * 1000)
            t["retrieve"].append((t2 - t1) * 1000)
            t["query"].append((t3 - t2) * 1000)
    return {"n": n, **{k: pct(v, 50) for k, v in t.items()}}


def langgraph_floor(home: Path, args) -> list[tuple[int, float]]:
    """The graph with each node replaced by a replay of the update it returned in a real run:
    LangGraph's scheduling, channels and fan-out with the real state sizes, node bodies ~0."""
    import copy

    from graph.graph import NODES

    recorded: dict[str, dict] = {}

    def key_of(name, state):
        return f"retrieve[{state['index']}]" if name == "retrieve" else name

    def recording(name, fn):
        @functools.wraps(fn)
        def wrapper(state, runtime):
            update = fn(state, runtime)
            recorded[key_of(name, state)] = copy.deepcopy(update)
            return update
        return wrapper

    def replaying(name, fn):
        @functools.wraps(fn)
        def wrapper(state, runtime):
            return dict(recorded[key_of(name, state)])
        return wrapper

    real, ctx = graph_setup(home, args.graph_tenant, args.dims, nodes={k: recording(k, v) for k, v in NODES.items()})
    replay, _ = graph_setup(home, args.graph_tenant, args.dims, nodes={k: replaying(k, v) for k, v in NODES.items()})
    out = []
    for q in GRAPH_QUESTIONS:
        recorded.clear()
        real.invoke({"question": q}, context=ctx)
        branches = sum(1 for k in recorded if k.startswith("retrieve["))
        for _ in range(10):
            replay.invoke({"question": q}, context=ctx)
        ts = []
        for _ in range(50):
            t0 = time.perf_counter()
            replay.invoke({"question": q}, context=ctx)
            ts.append((time.perf_counter() - t0) * 1000)
        out.append((branches, pct(ts, 50)))
    return out


def explore_report(ex: dict, args) -> str:
    d = ex["dense"]
    lines = [
        "", "What-ifs measured on the same collection and process (`--explore`, cmd B), p50:", "",
        "| Measurement | p50 |", "|---|---:|",
        f"| Engine: dense + BM25 `query_batch`, gated, ids and scores only | {fmt(ex['ids'])} |",
        f"| Engine: the same with the payload fields the graph reads ({', '.join(GRAPH_FIELDS)}) | {fmt(ex['payload'])} "
        f"(≈ {ex['per_point_payload_us']:.0f} µs per hit, {ex['hits']:.0f} hits) |",
        *([f"| Engine: the same with the light payload `search` asks for today ({len(vs_light)} small fields) | "
           f"{fmt(ex['light'])} |"] if (vs_light := ex.get("light_fields")) else []),
        f"| Engine: cosine to the question for the union of both lists ({ex['union']:.0f} ids, `HasIdCondition`) | "
        f"{fmt(ex['similarity'])} |",
    ]
    for name, (lat, p95, rmean, rmin) in d.items():
        lines.append(f"| Dense list alone, {name}: latency p50 / p95 · recall@{args.limit} mean / min | {fmt(lat)} / "
                     f"{fmt(p95)} · {rmean:.4f} / {rmin:.2f} |")
    lines += [
        f"| Rerank's lexical input done in Python (the earlier approach): `Analyzer` terms of the {ex['union']:.0f} candidates' header + text (no cache) | "
        f"{fmt(ex['analyze'])} |",
        f"| Alternative: the engine says which candidates hold each question term ({ex['q_terms']:.1f} one-term sparse "
        f"queries over the candidate ids, one `query_batch`) | {fmt(ex['presence'])} |",
        f"| … agreement of the two on same-language chunks ({ex['pairs']:,} term × chunk pairs) | {ex['agreement']:.4f} |",
        *([f"| Texts of {h['n']} chunks: `index.fetch` / bare `shard.retrieve(ids)` + gate check inline / gated "
           f"exact `query` over the ids | {fmt(h['fetch'])} / "
           f"{fmt(h['retrieve'])} / {fmt(h['query'])} |"] if (h := ex.get("hydrate")) else []),
        f"| Per call: `load_policy` (stat + cache) / `get_resources` / `governance_filter` | "
        f"{ex['load_policy_us']:.0f} / {ex['get_resources_us']:.0f} / {ex['governance_filter_us']:.0f} µs |",
    ]
    if ex.get("langgraph"):
        by_b: dict[int, list[float]] = {}
        for b, v in ex["langgraph"]:
            by_b.setdefault(b, []).append(v)
        cells = ", ".join(f"{b} branch{'es' if b > 1 else ''}: {np.median(v):.2f} ms" for b, v in sorted(by_b.items()))
        lines.append(f"| LangGraph alone: the real graph with every node replaced by a replay of its recorded update "
                     f"(real state sizes) | {cells} |")
    return "\n".join(lines) + "\n"


# --- 4. report -----------------------------------------------------------------------------


def fmt(v: float, unit: str = "ms") -> str:
    return f"{v:.2f} {unit}" if unit else f"{v:.3f}"


def load_note(ret: dict, gr: dict | None) -> str:
    parts = []
    for label, d in (("retrieval", ret), ("graph", gr)):
        v = (d or {}).get("other_load")
        if v is not None:
            parts.append(f"{v:.0%} during the {label} phase")
    if not parts:
        return "Background load: not measured (no /proc/stat)."
    worst = max((d or {}).get("other_load") or 0 for d in (ret, gr))
    warn = " ⚠️ the machine was not quiet: figures are pessimistic, rerun when idle." if worst > 0.05 else ""
    return f"Background load from other processes (share of all cores): {', '.join(parts)}.{warn}"


def report(args, stored: dict, ret: dict, gr: dict | None, embed_rate: float | None, started: str) -> str:
    b = stored["build"]
    m = machine_info()
    ok = lambda cond: "✅" if cond else "❌"  # noqa: E731
    lines = [
        f"Run {started} · code `{code_fingerprint()}` (sha256 of graph/, nodes/, policies/) · machine: nproc "
        f"{m['nproc']}, {m['cpu']}, {m['ram']} RAM · Python {m['python']}, qdrant-edge-py {m['qdrant-edge-py']}, "
        f"langgraph {m['langgraph']}, numpy {m['numpy']} · {m['os']} · proactive memory reclaim: {m['reclaim']}",
        "",
        load_note(ret, gr),
        "",
        f"- **[A]** build, {b['date']}: `{b['command']}`",
        f"- **[B]** this run, {started}: `{command_line()}`",
        "",
        f"Collection `{COLLECTION}`: {b['chunks']:,} chunks in {b['docs']:,} documents, {args.dims} dims, "
        f"{args.tenants} tenants (median {ret['gated_per_tenant']:,} chunks per tenant pass the gates), "
        f"~{args.words} words per chunk, {b['segments']} segments after `optimize()`, {b['disk_mb']:,} MB on disk.",
        "",
        "| Figure | Value | Target | Cmd |",
        "|---|---:|---:|:--:|",
        f"| Synthetic load, end to end (text + BM25 document vectors + payload + `replace_document` per "
        f"document + flush; **no embedding**) | {b['chunks'] / b['load_s']:,.0f} chunks/s ({b['load_s']:.0f} s) | | A |",
        f"| … `replace_document` calls alone | {b['chunks'] / b['write_s']:,.0f} chunks/s ({b['write_s']:.0f} s) | | A |",
        f"| `optimize()` after the load (HNSW build; {b['indexed_vectors']:,} indexed vectors) | {b['optimize_s']:.0f} s | | A |",
    ]
    if embed_rate:
        lines.append(f"| For comparison: embedding with {USE_MODEL} (batch of {args.embed_sample} chunks; not in the "
                     f"load figure) | {embed_rate:,.0f} chunks/s | | B |")
    sim = "".join(f"with `{k}`, " for k, on in (("similarity_to", ret["with_similarity"]),
                                               ("match_terms", ret.get("with_terms")),
                                               ("flags", ret.get("with_flags"))) if on)
    lines += [
        f"| **Retrieval, one sub-query, all gates**: `index.search` (dense + BM25 lists, limit {args.limit})"
        f"{' + `index.features` (' + sim.rstrip(', ') + ')' if sim else ''}"
        f", p50 | **{fmt(ret['p50'])}** | ≤ 4 ms {ok(ret['p50'] <= 4.0)} | B |",
        f"| Retrieval p95 / p99 | {fmt(ret['p95'])} / {fmt(ret['p99'])} | | B |",
        *([f"| … queries over 10 ms: {ret['slow']} of {ret['n']}, all for tenants {', '.join(ret['slow_tenants'])}; "
           f"p50 over the other tenants | {fmt(ret['fast_p50'])} | | B |"] if ret["slow"] else []),
        f"| Retrieval p50 of the first {ret['cold_n']} queries after opening the collection, before the pre-warm "
        f"(payload and vector pages not in memory yet, as a one-shot `ragate ask` process sees them) | "
        f"{fmt(ret['cold_p50'])} | | B |",
        f"| … inside engine calls ({ret['engine_calls']:.0f} per search), p50 | {fmt(ret['engine_p50'])} | | B |",
        f"| … outside engine calls (payload → Python conversion, gate filter, hit objects), p50 | {fmt(ret['python_p50'])} | | B |",
        *([f"| Pre-warm before the timed queries: every payload and vector (dense and BM25) read once (`scroll`) | "
           f"{ret['prewarm_s']:.1f} s | | B |"] if ret.get("prewarm_s") is not None else []),
        f"| Dense recall@{args.limit} vs exact numpy brute force over the tenant's gated vectors (mean / min) | "
        f"{ret['recall_mean']:.4f} / {ret['recall_min']:.4f} | | B |",
        f"| Gate check on every hit: stored brandId / isApprovedForAI / status read back, and the generator's ground truth | {ret['n']} queries × "
        f"({ret['dense_hits_mean']:.0f} dense + {ret['lex_hits_mean']:.0f} lexical), 0 violations | | B |",
        f"| Largest error of the reported cosine (score / similarity) vs numpy | "
        f"{max(ret['max_score_err'], ret['max_similarity_err']):.1e} | | B |",
    ]
    if gr:
        a, w = gr["all"], gr["warm"]
        lines += [
            f"| **Whole-graph overhead** (wall − `index.search` − `embed_query` − the reader), p50 / p95, "
            f"{len(GRAPH_QUESTIONS)} questions | **{fmt(a['overhead_p50'])}** / {fmt(a['overhead_p95'])} | "
            f"≤ 8 ms {ok(a['overhead_p50'] <= 8)} | B |",
        ]
        for label, key in (("simple (1 retrieve branch)", "simple"), ("decomposed (2–4 sub-queries)", "decomposed")):
            s = gr.get(key)
            if s:
                lines.append(f"| … {label}, {s['branches_mean']:.1f} branches on average: overhead p50 / p95 | "
                             f"{fmt(s['overhead_p50'])} / {fmt(s['overhead_p95'])} | | B |")
        lines += [
            f"| … same questions repeated, per-text caches left warm: overhead p50 / p95 | "
            f"{fmt(w['overhead_p50'])} / {fmt(w['overhead_p95'])} | | B |",
            f"| Whole graph wall time (query embeddings cached), p50 / p95 | {fmt(a['wall_p50'])} / {fmt(a['wall_p95'])} | | B |",
            f"| … inside `index.search` per run (union over branches), p50 | {fmt(a['search_p50'])} | | B |",
            f"| … of which inside engine calls, p50 | {fmt(a['engine_p50'])} | | B |",
            *([f"| … inside `index.fetch` (texts of the contenders, from rerank; counted as overhead above), p50 | "
               f"{fmt(a['fetch_p50'])} | | B |"] if a["fetch_p50"] > 0 else []),
            f"| … wall − every engine call − embedding − the reader (Python + LangGraph only), p50 / p95 | "
            f"{fmt(a['python_p50'])} / {fmt(a['python_p95'])} | | B |",
            f"| … inside `embed_query` (warm LRU), p50 | {fmt(a['embed_p50'], 'ms')} | | B |",
            f"| … inside the reader's model calls (a direct answer read, or the reader's own span), p50 / p95 | "
            f"{fmt(a['reader_p50'])} / {fmt(a['reader_p95'])} | | B |",
        ]
    out = "\n".join(lines) + "\n"
    if gr:
        cold_note = ("the analyzer's term cache is cleared before each run, as for a new question"
                     if gr["cold_caches"] else "no per-text cache found to clear")
        rows = ["", f"Per-node p50 (ms) from the result's `timings_ms`: {gr['all']['n']} graph runs "
                    f"({args.graph_rounds} × {len(GRAPH_QUESTIONS)} questions) as tenant `{gr['tenant']}`; {cold_note}.", "",
                "| Node | all | simple | decomposed | all, warm caches |", "|---|---:|---:|---:|---:|"]
        keys = ("all", "simple", "decomposed", "warm")
        for name in gr["all"]["nodes_p50"]:
            cells = []
            for key in keys:
                s = gr.get(key)
                v = s["nodes_p50"].get(name) if s else None
                cells.append(f"{v:.2f}" if v is not None else "–")
            rows.append(f"| {name} | " + " | ".join(cells) + " |")
        for label, k in (("retrieve branches minus their `index.search` (Σ)", "retrieve_minus_search_p50"),
                         ("LangGraph scheduling (wall − node critical path)", "framework_p50"),
                         ("**overhead** (wall − search − embed − reader)", "overhead_p50"),
                         ("wall − every engine call − embed − reader", "python_p50"),
                         ("wall", "wall_p50")):
            rows.append(f"| {label} | " + " | ".join(f"{gr[key][k]:.2f}" if gr.get(key) else "–" for key in keys) + " |")
        rows += ["", "Per question (p50 ms, cold per-text caches):", "",
                 "| Question | intent | branches | fused | wall | search | overhead | overhead, warm | coverage / verdict |",
                 "|---|---|---:|---:|---:|---:|---:|---:|---|"]
        for q in gr["per_question"]:
            rows.append(f"| {q['question']} | {q['intent']} | {q['branches']} | {q['fused']} | {q['wall_p50']:.1f} | "
                        f"{q['search_p50']:.1f} | {q['overhead_p50']:.1f} | {q['warm_overhead_p50']:.1f} | "
                        f"{q['coverage']} / {q['verdict']} |")
        out += "\n".join(rows) + "\n"
    return out


def write_results(block: str, begin: str = BEGIN, end: str = END, heading: str = "") -> None:
    """Replace the block between `begin` and `end` in bench/RESULTS.md (appended, after `heading`, when the file
    has no such markers yet); everything outside them is kept."""
    text = RESULTS_PATH.read_text() if RESULTS_PATH.exists() else (
        "# ragate latency benchmark — results\n\nProduced by `bench/latency.py --write-results` "
        "(see bench/README.md). The block between the markers is regenerated; notes outside it are kept.\n\n"
        f"{BEGIN}\n{END}\n")
    if begin not in text or end not in text:
        text = text.rstrip() + f"\n\n{heading}{begin}\n{end}\n"
    head, rest = text.split(begin, 1)
    _, tail = rest.split(end, 1)
    RESULTS_PATH.write_text(f"{head}{begin}\n{block.rstrip()}\n{end}{tail}")


def main(argv: list[str] | None = None) -> int:
    tune_garbage_collector()  # as ragate's own entry points do (graph/entrypoints/process.py)
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--chunks", type=int, default=100_000, help="synthetic chunks in the collection (default 100000)")
    ap.add_argument("--dims", type=int, default=512, help="dense dimensions (512 = the default embedder's)")
    ap.add_argument("--queries", type=int, default=200, help="timed retrieval sub-queries (default 200)")
    ap.add_argument("--tenants", type=int, default=20, help="tenants the chunks are spread over (default 20)")
    ap.add_argument("--home", default=os.environ.get("RAGATE_BENCH_HOME", "/tmp/ragate-bench-home"),
                    help="data folder holding the synthetic collection (reused when the parameters match)")
    ap.add_argument("--words", type=int, default=150, help="mean words per chunk (default 150)")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--limit", type=int, default=50, help="hits per list (the default policy profile's k)")
    ap.add_argument("--warmup", type=int, default=50,
                    help="retrieval queries run first, right after opening the collection (reported as the cold figure)")
    ap.add_argument("--no-prewarm", dest="prewarm", action="store_false",
                    help="skip reading every payload and vector once before the timed queries")
    ap.add_argument("--explore", action="store_true",
                    help="also measure the alternatives behind the recommendations (engine-level what-ifs)")
    ap.add_argument("--graph-rounds", type=int, default=20,
                    help=f"timed graph runs per question ({len(GRAPH_QUESTIONS)} questions); 0 skips the graph")
    ap.add_argument("--graph-tenant", type=int, default=3, help="tenant index the graph questions run as")
    ap.add_argument("--embed-sample", type=int, default=256,
                    help="chunks embedded with the default model to show embedding throughput (0 skips)")
    ap.add_argument("--profile", type=int, default=0, metavar="ROUNDS",
                    help="also cProfile ROUNDS rounds of the graph questions; written to bench/out/profile.txt")
    ap.add_argument("--rebuild", action="store_true", help="rebuild the collection even if a matching one exists")
    ap.add_argument("--write-results", action="store_true", help="update bench/RESULTS.md with this run's figures")
    args = ap.parse_args(argv)
    if not 0 <= args.graph_tenant < args.tenants:
        ap.error("--graph-tenant must be below --tenants")

    started = _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")
    home = Path(args.home).expanduser().resolve()
    home.mkdir(parents=True, exist_ok=True)
    analyzer = get_analyzer(load_policy(DEFAULT_POLICY_PATH))
    vocab = make_vocab(args.seed)
    t0 = time.perf_counter()
    corpus = make_corpus(args.chunks, args.dims, args.tenants, args.seed)
    log(f"corpus structure and vectors in {time.perf_counter() - t0:.1f} s "
        f"({len(corpus.docs):,} documents, {corpus.gated.mean():.1%} of chunks pass the gates)")
    index, stored = ensure_built(args, home, corpus, vocab, analyzer)

    log(f"retrieval: {args.queries} timed sub-queries (+{args.warmup} warm-up)")
    ret = measured_retrieval(index, corpus, vocab, analyzer, args)
    log(f"retrieval p50 {ret['p50']:.2f} ms, p95 {ret['p95']:.2f} ms, recall@{args.limit} {ret['recall_mean']:.4f}")

    gr = None
    if args.graph_rounds > 0:
        log(f"graph: {args.graph_rounds} rounds × {len(GRAPH_QUESTIONS)} questions")
        cpu = CpuMonitor()
        gr = graph_phase(index, args, home)
        gr["other_load"] = cpu.other_load()
        log(f"graph overhead p50 {gr['all']['overhead_p50']:.2f} ms, wall p50 {gr['all']['wall_p50']:.2f} ms")
    embed_rate = embed_sample(corpus, vocab, args, args.embed_sample) if args.dims == 512 else None

    ex = None
    if args.explore:
        log("what-ifs (--explore)")
        ex = explore(index, corpus, vocab, analyzer, args, home)
    block = report(args, stored, ret, gr, embed_rate, started)
    if ex:
        block += explore_report(ex, args)
    print(block)
    if args.profile:
        log(f"profiling {args.profile} rounds")
        OUT_DIR.mkdir(exist_ok=True)
        text = profile_graph(args, home, args.profile)
        (OUT_DIR / "profile.txt").write_text(text)
        log(f"profile written to {OUT_DIR / 'profile.txt'}")
    if args.write_results:
        write_results(block)
        log(f"updated {RESULTS_PATH}")
    index.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
