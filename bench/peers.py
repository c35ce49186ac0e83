#!/usr/bin/env python
"""Peer benchmark: ragate's retrieval next to a stock LangChain hybrid and plain BM25, on the same
chunks and the same queries, in one run.

Systems (rows of the table):

- `ragate full` — the retrieval-only graph with the `full` ablation, exactly as `ragate eval retrieval`
  runs it (`graph.evaluation.runner.run_retrieval`: the same ingest, context, intent, k, top_n and
  metrics); `ragate bm25` is the `bm25` ablation (the engine's own BM25 list), for reference.
- `LangChain hybrid` — `langchain_classic.retrievers.EnsembleRetriever` (weighted RRF, c=60, weights
  0.5/0.5, deduplicated by page_content: all its defaults) over `langchain_community`'s `BM25Retriever`
  (rank_bm25 `BM25Okapi`, its default whitespace tokenizer) and a `langchain_qdrant.QdrantVectorStore`
  retriever (in-memory `QdrantClient(":memory:")`, cosine, exact search) embedded with the collection's
  own embedder: ragate's `CachedEmbeddings` for the model the collection's manifest names, so the
  document vectors come from ragate's cache (checked equal to the vectors stored in the collection) and
  each query is embedded by the same model. Each retriever returns k (ragate's k, 50 by default).
- `BM25Retriever` — the same `BM25Retriever` alone (rank_bm25 defaults: k1 1.5, b 0.75, whitespace tokens).
- two diagnostic rows: `LangChain dense` (the QdrantVectorStore retriever alone) and
  `BM25Retriever, word tokens` (lowercased `\\w+` tokens instead of `str.split`; not a stock setting).

Same chunks: the peers' documents are the chunks ragate stored in the dataset's eval collection (read
back from the embedded engine with the governance gates of tenant "eval"), one LangChain Document per
chunk, page_content = the text as ragate embedded it (`header + "\\n" + text`), metadata docId,
chunk_index and text. Every system is scored by the harness's `score_query` on its first `top_n`
chunks (30, as the harness keeps), as {content: the chunk's text, docId}: MultiHop-RAG Hits@10, MRR@10,
fact recall@10, all-evidence@10 (non-null queries), BEIR nDCG@10 / R@10 / MRR@10. Latency is the wall
time of one retrieval call (the graph's invoke for ragate, `retriever.invoke` for the peers), with the
query-vector cache emptied before each system's pass, after one untimed warm-up query per system.

Paired latency: one pass apart from those, in which every query goes through ragate full, the LangChain hybrid
and BM25Retriever back to back, the order rotating from query to query (each system goes first, second and third
equally often) and the query-vector caches emptied before every call. A pass per system measures each one at
another moment, and on a shared VM the moments differ by more than the systems do (BM25Retriever alone has
given 51 to 77 ms p50 on quiet runs); side by side, a slow moment slows all three. It reports each system's
p50 / p95, ragate's p50 and p95 over each peer's with a 95% bootstrap interval (queries resampled), and the
share of queries ragate answered first. `--no-paired` skips it.

    python bench/peers.py --dataset multihop-rag --corpus ../shared/datasets/multihop_rag --home /tmp/peers-home \\
        --out /tmp/peers-mh [--limit 50]
    python bench/peers.py --dataset beir --corpus ../shared/datasets/scifact --home /tmp/peers-home --out /tmp/peers-sf

The flags are `ragate eval retrieval`'s (--data-dir/--corpus/--queries/--qrels, --limit, --k, --top-n,
--intent, --home, --policy, --embedding-model, --rerank-model, --chunk-tokens, --overlap-tokens, --quiet, --out), so a
`--home` that `ragate eval retrieval` already used reuses its collection. Needs `pip install -e ".[bench]"`.
Output: one Markdown table on stdout; `--out DIR` writes DIR/peers.json (figures and settings),
DIR/peers_per_query.jsonl (each system's top 10 chunk ids and metrics per query, and its paired latency) and,
as soon as the ragate passes end, DIR/ragate_results.json (the harness's own output).
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import platform
import re
import shlex
import sys
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
if str(ROOT) not in sys.path:  # `python bench/peers.py` from a checkout without `pip install -e .`
    sys.path.insert(0, str(ROOT))
if str(BENCH) not in sys.path:  # the sibling benches, when imported rather than run
    sys.path.insert(0, str(BENCH))

from latency import code_fingerprint

from graph import settings
from graph.entrypoints.process import tune_garbage_collector
from graph.evaluation.datasets import DatasetError, load_dataset
from graph.evaluation.ingest import EVAL_TENANT
from graph.evaluation.metrics import aggregate, percentiles
from graph.evaluation.runner import (
    ABLATIONS,
    EvalError,
    base_context,
    forget_query_vectors,
    freeze_policy,
    progress_bar,
    resolve_intent,
    run_retrieval,
    score_query,
)
from graph.graph import compile_graph
from graph.indexing.ingest import IngestError
from graph.policy import PolicyError, load_policy
from graph.providers.embeddings import get_embeddings
from graph.providers.resources import get_resources
from graph.providers.specs import ProviderError
from graph.providers.vectorstore import CollectionError

# What each row is, in table order. The ragate rows come from the harness; the others are built here.
SYSTEMS = {
    "ragate full": "ragate retrieval graph, `full` ablation (hybrid + decomposition + rerank + boosts)",
    "ragate bm25": "ragate retrieval graph, `bm25` ablation (the engine's BM25 list only)",
    "LangChain hybrid": "EnsembleRetriever([BM25Retriever, QdrantVectorStore retriever], weights [0.5, 0.5], c 60)",
    "BM25Retriever": "langchain_community BM25Retriever (rank_bm25 BM25Okapi, str.split tokens)",
    "LangChain dense": "QdrantVectorStore retriever alone (in-memory Qdrant, cosine), the collection's embedder",
    "BM25Retriever, word tokens": "BM25Retriever with lowercased \\w+ tokens (diagnostic, not a stock setting)",
}
RAGATE_ROWS = {"ragate full": "full", "ragate bm25": "bm25"}
TABLE_METRICS = {
    "multihop-rag": [("hits@10", "Hits@10"), ("mrr@10", "MRR@10"), ("fact_recall@10", "fact recall@10"),
                     ("all_evidence@10", "all-evidence@10")],
    "beir": [("ndcg@10", "nDCG@10"), ("recall@10", "R@10"), ("mrr@10", "MRR@10")],
    "squad": [("recall@1", "R@1"), ("recall@5", "R@5"), ("mrr@10", "MRR@10")],
}
WEIGHTS = (0.5, 0.5)
# The systems of the paired latency pass, ragate first: the one the others are compared with.
PAIRED = ("ragate full", "LangChain hybrid", "BM25Retriever")
BOOTSTRAP_SAMPLES = 2000


def word_tokens(text: str) -> list[str]:
    return re.findall(r"\w+", text.lower())


# --- the chunks ragate stored ----------------------------------------------------------------


@dataclass
class Chunk:
    doc_id: str
    chunk_index: int
    text: str
    header: str
    dense: list[float] | None = None

    @property
    def id(self) -> str:  # ragate's chunk id (rerank's `id`)
        return f"{self.doc_id}#{self.chunk_index}"

    @property
    def embedded_text(self) -> str:  # what graph/indexing/ingest.py embedded and indexed
        return f"{self.header}\n{self.text}"


def stored_chunks(index, collection: str, tenant: str = EVAL_TENANT, with_vectors: bool = True) -> list[Chunk]:
    """Every chunk of `collection` that `tenant` may be served (the engine's governance gates), read
    back from the embedded engine's shard, in (docId, chunk_index) order."""
    from qdrant_edge import ScrollRequest

    from graph.providers.vectorstore import DENSE, governance_filter

    shard_of = getattr(index, "_shard", None)
    if shard_of is None:
        raise SystemExit("bench/peers.py reads the chunks back from the embedded engine (vector_store 'embedded')")
    shard = shard_of(collection)
    if shard is None:
        raise SystemExit(f"collection '{collection}' not found under {index.home}")
    gate = governance_filter(tenant)
    out: list[Chunk] = []
    offset = None
    while True:
        records, offset = shard.scroll(ScrollRequest(offset=offset, limit=1000, filter=gate,
                                                     with_payload=["docId", "chunk_index", "text", "header"],
                                                     with_vector=[DENSE] if with_vectors else False))
        for r in records:
            p = r.payload or {}
            vec = None
            if with_vectors and r.vector is not None:
                vec = r.vector.get(DENSE) if isinstance(r.vector, dict) else r.vector
            out.append(Chunk(str(p["docId"]), int(p.get("chunk_index", 0)), str(p["text"]), str(p.get("header", "")),
                             list(vec) if vec is not None else None))
        if offset is None:
            break
    out.sort(key=lambda c: (c.doc_id, c.chunk_index))
    return out


def to_documents(chunks: list[Chunk]):
    from langchain_core.documents import Document

    return [Document(page_content=c.embedded_text,
                     metadata={"docId": c.doc_id, "chunk_index": c.chunk_index, "text": c.text, "chunk_id": c.id})
            for c in chunks]


def ranked_for_scoring(docs, top_n: int) -> list[dict[str, str]]:
    """A peer's documents as the harness's chunks: {id, docId, content = the chunk's text} (what
    ragate's rerank hands `score_query`), the first `top_n`."""
    return [{"id": d.metadata["chunk_id"], "docId": d.metadata["docId"], "content": d.metadata["text"]}
            for d in docs[:top_n]]


def vectors_check(chunks: list[Chunk], vectors: list[list[float]]) -> dict[str, Any]:
    """How many vectors the peers' embedder gave equal (cosine ≥ 0.9999) the ones in the collection."""
    import numpy as np

    pairs = [(c.dense, v) for c, v in zip(chunks, vectors) if c.dense is not None]
    if not pairs:
        return {"compared": 0, "equal": 0, "min_cosine": None}
    a = np.asarray([p[0] for p in pairs], dtype=np.float64)
    b = np.asarray([p[1] for p in pairs], dtype=np.float64)
    cos = (a * b).sum(1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1) + 1e-12)
    return {"compared": len(pairs), "equal": int((cos >= 0.9999).sum()), "min_cosine": round(float(cos.min()), 6)}


# --- the peers -------------------------------------------------------------------------------


def build_peers(chunks: list[Chunk], embeddings, k: int,
                diagnostics: bool = True) -> tuple[dict[str, Any], dict[str, Any]]:
    """The LangChain retrievers over the same chunks; (retrievers by row name, build report). Without
    `diagnostics`, only the peers themselves (the hybrid, its dense retriever and BM25Retriever): no
    second BM25 index for the word-token row."""
    with warnings.catch_warnings():  # langchain-community announces its sunset on import
        warnings.simplefilter("ignore", DeprecationWarning)
        from langchain_community.retrievers import BM25Retriever
    from langchain_classic.retrievers import EnsembleRetriever
    from langchain_qdrant import QdrantVectorStore
    from qdrant_client import QdrantClient
    from qdrant_client.models import Distance, VectorParams

    docs = to_documents(chunks)
    report: dict[str, Any] = {"documents": len(docs)}
    started = time.perf_counter()
    vectors = embeddings.embed_documents([d.page_content for d in docs])  # ragate's cache: no model call
    report["embed_documents_s"] = round(time.perf_counter() - started, 2)
    report["vectors_vs_collection"] = vectors_check(chunks, vectors)

    started = time.perf_counter()
    client = QdrantClient(":memory:")
    client.create_collection("peers", vectors_config=VectorParams(size=len(vectors[0]), distance=Distance.COSINE))
    store = QdrantVectorStore(client=client, collection_name="peers", embedding=embeddings)
    # add_documents embeds through the same CachedEmbeddings: every text is a cache hit by now.
    store.add_documents(docs)
    report["qdrant_build_s"] = round(time.perf_counter() - started, 2)
    dense = store.as_retriever(search_kwargs={"k": k})

    started = time.perf_counter()
    bm25 = BM25Retriever.from_documents(docs, k=k)
    report["bm25_build_s"] = round(time.perf_counter() - started, 2)
    hybrid = EnsembleRetriever(retrievers=[bm25, dense], weights=list(WEIGHTS))
    retrievers = {"LangChain hybrid": hybrid, "BM25Retriever": bm25, "LangChain dense": dense}
    if diagnostics:
        retrievers["BM25Retriever, word tokens"] = BM25Retriever.from_documents(docs, k=k, preprocess_func=word_tokens)
    return retrievers, report


@dataclass
class PeerRun:
    per_query: list[dict[str, float]] = field(default_factory=list)
    latency: list[float] = field(default_factory=list)
    top10: list[list[str]] = field(default_factory=list)
    empty: int = 0
    cpu: dict[str, float] = field(default_factory=dict)


def cpu_sample() -> tuple[float, float, float, float]:
    """(wall s, this process's CPU s, the machine's busy jiffies, its total jiffies) now."""
    busy = total = 0.0
    try:
        fields = [float(x) for x in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
        total = sum(fields[:8])
        busy = total - fields[3] - fields[4]  # idle, iowait
    except (OSError, ValueError, IndexError):
        pass
    t = os.times()
    return time.perf_counter(), t.user + t.system, busy, total


def cpu_report(before, after) -> dict[str, float]:
    wall = after[0] - before[0]
    total = after[3] - before[3]
    ncpu = os.cpu_count() or 1
    out = {"wall_s": round(wall, 2), "own_cpu_s": round(after[1] - before[1], 2)}
    if total > 0:
        machine = (after[2] - before[2]) / total  # share of all cores busy
        own = (after[1] - before[1]) / (wall * ncpu) if wall > 0 else 0.0
        out["machine_busy"] = round(machine, 3)
        out["others_busy"] = round(max(0.0, machine - own), 3)  # other processes' share of all cores
    return out


def run_peer(name: str, retriever, dataset_name: str, queries, embeddings, top_n: int, progress: bool) -> PeerRun:
    run = PeerRun()
    embeddings.clear_query_cache()  # every system pays for embedding its questions
    retriever.invoke(queries[0].text)  # untimed: first-call costs (imports, callbacks) as the harness's warm-up
    embeddings.clear_query_cache()
    bar = progress_bar(len(queries), f"{name:>26}", progress)
    before = cpu_sample()
    for q in queries:
        started = time.perf_counter()
        docs = retriever.invoke(q.text)
        run.latency.append(round((time.perf_counter() - started) * 1000, 3))
        ranked = ranked_for_scoring(docs, top_n)
        if not ranked:
            run.empty += 1
        run.per_query.append(score_query(dataset_name, q, ranked))
        run.top10.append([c["id"] for c in ranked[:10]])
        if bar:
            bar.update(1)
    run.cpu = cpu_report(before, cpu_sample())
    if bar:
        bar.close()
    return run


def paired_latency(callers: dict[str, Callable[[str], Any]], queries, forget: Callable[[], None],
                   progress: bool) -> dict[str, list[float]]:
    """Milliseconds of each system on each query, the systems run back to back per query. The order
    rotates (query i starts with system i mod n), so no system always runs first, or right after the
    one that warmed the caches; `forget()` empties the query-vector caches before every call, so every
    system pays for embedding its question."""
    names = list(callers)
    for name in names:  # untimed first calls (imports, callbacks, lazy loads)
        forget()
        callers[name](queries[0].text)
    latency: dict[str, list[float]] = {name: [] for name in names}
    bar = progress_bar(len(queries), f"{'paired latency':>26}", progress)
    for i, q in enumerate(queries):
        for j in range(len(names)):
            name = names[(i + j) % len(names)]
            forget()
            started = time.perf_counter()
            callers[name](q.text)
            latency[name].append(round((time.perf_counter() - started) * 1000, 3))
        if bar:
            bar.update(1)
    if bar:
        bar.close()
    return latency


def paired_summary(latency: dict[str, list[float]], seed: int = 0) -> dict[str, Any]:
    """Each system's p50 / p95 on the paired pass and, for each one after the first, the first's p50
    and p95 divided by its own, with 95% intervals from resampling the queries (the same resample for
    both systems: the pairs stay paired), and the share of queries the first answered sooner. `by_place`:
    each system's p50 over the queries where it ran 1st, 2nd, ... (`paired_latency`'s rotation): what
    ran just before a system changes its time, through the caches it left."""
    import numpy as np

    names = list(latency)
    first = np.asarray(latency[names[0]], dtype=float)
    rng = np.random.default_rng(seed)
    resamples = rng.integers(0, len(first), size=(BOOTSTRAP_SAMPLES, len(first)))
    out: dict[str, Any] = {"systems": {n: percentiles(latency[n]) for n in names}, "against": {}}
    # Query i starts with system i mod n, so system s runs in place (s - i) mod n.
    out["by_place"] = {}
    for s, name in enumerate(names):
        at = [[ms for i, ms in enumerate(latency[name]) if (s - i) % len(names) == place] for place in range(len(names))]
        out["by_place"][name] = [round(float(np.percentile(v, 50)), 3) if v else None for v in at]
    for name in names[1:]:
        other = np.asarray(latency[name], dtype=float)
        row: dict[str, Any] = {"faster_share": round(float((first < other).mean()), 3)}
        for q in (50, 95):
            ratio = np.percentile(first, q) / np.percentile(other, q)
            boot = np.percentile(first[resamples], q, axis=1) / np.percentile(other[resamples], q, axis=1)
            low, high = np.percentile(boot, [2.5, 97.5])
            row[f"p{q}_ratio"] = round(float(ratio), 3)
            row[f"p{q}_ratio_ci95"] = [round(float(low), 3), round(float(high), 3)]
        out["against"][name] = row
    return out


def rounded(per_query: list[dict[str, float]], keys) -> dict[str, float | None]:
    agg = aggregate(per_query)
    return {k: (round(agg[k], 4) if k in agg else None) for k in keys}


# --- report ----------------------------------------------------------------------------------


def package_versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    out = {}
    for pkg in ("langgraph", "langchain-core", "langchain-classic", "langchain-community", "langchain-qdrant",
                "qdrant-client", "rank-bm25", "qdrant-edge-py"):
        try:
            out[pkg] = version(pkg)
        except PackageNotFoundError:
            out[pkg] = "?"
    return out


def markdown(report: dict[str, Any]) -> str:
    ds = report["dataset"]
    cols = TABLE_METRICS.get(ds, [])
    lines = [f"## Peers on {ds} ({report['n_queries']} queries"
             f"{', --limit ' + str(report['settings']['limit']) if report['settings']['limit'] else ''}; "
             f"{report['chunks']} chunks of collection `{report['collection']}`, embedder "
             f"`{report['embedding_model']}`)", "",
             "| system | " + " | ".join(label for _, label in cols) + " | p50 ms | p95 ms |",
             "|---|" + "---:|" * (len(cols) + 2)]
    for name, row in report["systems"].items():
        m, lat = row["metrics"], row["latency_ms"]
        cells = [f"{m[k]:.4f}" if m.get(k) is not None else "—" for k, _ in cols]
        lines.append(f"| {name} | " + " | ".join(cells) + f" | {lat.get('p50', 0):.1f} | {lat.get('p95', 0):.1f} |")
    s = report["settings"]
    lines += ["", f"k {s['k']} per list (each peer retriever returns k), first {s['top_n']} chunks scored; intent "
                  f"{s['intent']}; ragate reranker {s.get('rerank_model') or 'default'}; ensemble weights "
                  f"{s['weights']}; code `{report['code']}`, {report['machine']['nproc']} cores, {report['date']}."]
    paired = report.get("paired_latency")
    if paired:
        first = next(iter(paired["systems"]))
        lines += ["", (f"Paired latency ({paired['n']} queries, every query through each system back to back, the "
                       "order rotating; ratios with 95% bootstrap intervals):"), "",
                  f"| system | p50 ms | p95 ms | {first} p50 ÷ this | {first} p95 ÷ this | {first} sooner on |",
                  "|---|---:|---:|---:|---:|---:|"]
        places = paired.get("by_place") or {}
        for name, lat in paired["systems"].items():
            row = paired["against"].get(name)
            cells = ["—", "—", "—"] if row is None else [
                f"{row['p50_ratio']:.2f} [{row['p50_ratio_ci95'][0]:.2f}, {row['p50_ratio_ci95'][1]:.2f}]",
                f"{row['p95_ratio']:.2f} [{row['p95_ratio_ci95'][0]:.2f}, {row['p95_ratio_ci95'][1]:.2f}]",
                f"{row['faster_share']:.0%}"]
            lines.append(f"| {name} | {lat['p50']:.1f} | {lat['p95']:.1f} | " + " | ".join(cells) + " |")
        if places:
            lines += ["", "p50 ms by place in the query's order (1st / 2nd / …; what ran just before a system changes "
                          "its time): " + "; ".join(f"{name} " + " / ".join("—" if v is None else f"{v:.1f}" for v in row)
                                                    for name, row in places.items()) + "."]
    busy = {n: r["cpu"].get("others_busy") for n, r in report["systems"].items() if r.get("cpu")}
    if any(v is not None and v > 0.15 for v in busy.values()):
        lines.append("Warning: other processes kept the machine busy ("
                     + ", ".join(f"{n} {v:.0%}" for n, v in busy.items() if v is not None) + " of all cores, during "
                     "each peer's pass and ragate's whole harness run): latencies are inflated; rerun on an idle "
                     "machine to compare them.")
    for name, errors in report["ragate_errors"].items():
        disabled = sum("retrieval disabled" in e for e in errors)
        lines.append(f"**ragate `{name}` recorded {len(errors)} error(s)**"
                     + (f", {disabled} with retrieval disabled (those queries score 0: the row does not measure the "
                        "pipeline)" if disabled else "") + f"; first: {(errors[0] if errors else '')[:200]} "
                     "(all in peers.json `ragate_errors`).")
    return "\n".join(lines)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--dataset", required=True, choices=["multihop-rag", "beir", "squad"])
    p.add_argument("--data-dir", dest="data_dir", help="folder standing for the files (default: $RAGATE_DATASETS or "
                                                        "../shared/datasets, then multihop_rag / scifact / faquad)")
    p.add_argument("--corpus", help="corpus file, or a folder holding the standard file names")
    p.add_argument("--queries", help="queries file")
    p.add_argument("--qrels", help="qrels .tsv (beir)")
    p.add_argument("--limit", type=int, help="only the first N queries")
    p.add_argument("--k", type=int, help="candidates per search list, ragate's and each peer retriever's "
                                         "(default: the policy profile's)")
    p.add_argument("--top-n", dest="top_n", type=int, default=30, help="chunks scored per query (>= 10; default 30)")
    p.add_argument("--intent", help="intent ragate asks every query with (default: the policy's fallback_intent)")
    p.add_argument("--home", help="data folder of the eval collections (default: $RAGATE_HOME/eval or .ragate/eval)")
    p.add_argument("--policy", dest="policy_path", help="policy YAML (default: $RAGATE_POLICY or policies/rag.yaml)")
    p.add_argument("--embedding-model", dest="embedding_model", help="'provider/model' (default: ragate's)")
    p.add_argument("--rerank-model", dest="rerank_model", help="ragate's reranker (default: ragate's)")
    p.add_argument("--chunk-tokens", dest="chunk_tokens", type=int, help="ingest: chunk size in tokens")
    p.add_argument("--overlap-tokens", dest="overlap_tokens", type=int, help="ingest: tokens repeated between chunks")
    p.add_argument("--no-paired", dest="paired", action="store_false",
                   help="skip the paired latency pass (ragate full, the hybrid and BM25Retriever back to back per query)")
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    p.add_argument("--out", help="write peers.json and peers_per_query.jsonl to this folder")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    tune_garbage_collector()  # as ragate's own entry points do (graph/entrypoints/process.py)
    args = parse_args(argv)
    home = args.home or str(settings.path("RAGATE_HOME") / "eval")
    progress = not args.quiet
    started_at = _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    try:
        dataset = load_dataset(args.dataset, data_dir=args.data_dir, corpus=args.corpus, queries=args.queries,
                               qrels=args.qrels)
        # 1. ragate, through the harness (ingest or reuse, warm-up, one pass per ablation).
        extra = {"rerank_model": args.rerank_model} if args.rerank_model else {}  # only where the harness takes it
        before = cpu_sample()
        ragate = run_retrieval(dataset, home=home, ablations=list(RAGATE_ROWS.values()), limit=args.limit,
                               top_n=args.top_n, k=args.k, intent=args.intent, policy_path=args.policy_path,
                               embedding_model=args.embedding_model, chunk_tokens=args.chunk_tokens,
                               overlap_tokens=args.overlap_tokens, progress=progress, **extra)
        ragate_cpu = cpu_report(before, cpu_sample())
    except (DatasetError, EvalError, IngestError, CollectionError, ProviderError, PolicyError) as exc:
        print(f"bench/peers.py: {exc}", file=sys.stderr)
        return 2
    if args.out:  # the harness's own output, kept at once: the peers' passes come after it
        Path(args.out).mkdir(parents=True, exist_ok=True)
        (Path(args.out) / "ragate_results.json").write_text(json.dumps(ragate, ensure_ascii=False) + "\n",
                                                            encoding="utf-8")
    results, run_settings = ragate["results"], ragate["settings"]
    collection = results["ingest"]["collection"]
    k = int(run_settings["k"])
    read = dataset.queries[:args.limit] if args.limit else list(dataset.queries)
    queries = [q for q in read if q.has_gold]  # the harness's rule: null queries are not scored
    assert [q.id for q in queries] == [row["id"] for row in ragate["per_query"]], "not the harness's queries"

    # 2. The same chunks, the collection's embedder.
    ctx = base_context(home=home, collection=collection, top_n=args.top_n, k=args.k, policy_path=args.policy_path,
                       embedding_model=args.embedding_model, chunk_tokens=args.chunk_tokens,
                       overlap_tokens=args.overlap_tokens)
    index = get_resources(ctx).index
    manifest = index.manifest(collection) or {}
    model = manifest.get("embedding_model") or ctx.embedding_model
    embeddings = get_embeddings(model, ctx.home_path, float(ctx.provider_timeout_s), int(ctx.provider_retries))
    chunks = stored_chunks(index, collection)
    if len(chunks) != results["ingest"]["chunks"]:
        print(f"warning: {len(chunks)} chunks read back, the collection counts {results['ingest']['chunks']}",
              file=sys.stderr)
    retrievers, build = build_peers(chunks, embeddings, k)
    if build["vectors_vs_collection"]["equal"] != build["vectors_vs_collection"]["compared"]:
        print(f"warning: the peers' document vectors differ from the collection's: {build['vectors_vs_collection']}",
              file=sys.stderr)

    # 3. The peers, one pass each.
    peer_runs = {name: run_peer(name, r, dataset.name, queries, embeddings, args.top_n, progress)
                 for name, r in retrievers.items()}

    # 4. Paired latency: ragate full and the two stock peers on each query back to back.
    paired = None
    if args.paired:
        ragate_ctx = replace(ctx, **ABLATIONS["full"], **extra)
        freeze_policy(ragate_ctx)  # the snapshot the harness ran on (the same digest, the same file)
        intent = resolve_intent(args.intent, load_policy(ragate_ctx.policy_path))
        graph = compile_graph(retrieval_only=True)
        payload = {"intent": intent} if intent else {}

        def forget() -> None:
            forget_query_vectors(ragate_ctx)
            embeddings.clear_query_cache()

        callers = {"ragate full": lambda text: graph.invoke({"question": text, **payload}, context=ragate_ctx),
                   **{name: retrievers[name].invoke for name in PAIRED[1:]}}
        paired_ms = paired_latency(callers, queries, forget, progress)
        paired = {"n": len(queries), **paired_summary(paired_ms)}

    keys = [k_ for k_, _ in TABLE_METRICS.get(dataset.name, [])]
    all_keys = ("hits@4", "hits@10", "mrr@10", "map@10", "fact_recall@10", "all_evidence@10", "doc_recall@10",
                "ndcg@10", "recall@1", "recall@5", "recall@10")
    systems: dict[str, dict[str, Any]] = {}
    for name in SYSTEMS:
        if name in RAGATE_ROWS:
            ab = RAGATE_ROWS[name]
            m = results["metrics"][ab]
            lat = results["latency_ms"][ab]["total"]
            systems[name] = {"description": SYSTEMS[name], "metrics": {k_: m.get(k_) for k_ in all_keys},
                             "n": m.get("n"), "empty": m.get("empty"),
                             "latency_ms": {"p50": lat["p50"], "p95": lat["p95"], "n": lat["n"]},
                             # ragate's: the whole harness run (ingest or reuse, warm-up, both ablations)
                             "cpu": ragate_cpu if name == "ragate full" else {}}
        else:
            r = peer_runs[name]
            systems[name] = {"description": SYSTEMS[name], "metrics": rounded(r.per_query, all_keys),
                             "n": len(r.per_query), "empty": r.empty, "latency_ms": percentiles(r.latency),
                             "cpu": r.cpu}
    assert all(systems[n]["metrics"].get(k_) is not None for n in systems for k_ in keys)
    report = {
        "dataset": dataset.name,
        "n_queries": len(queries),
        "collection": collection,
        "chunks": len(chunks),
        "embedding_model": model,
        "systems": systems,
        "settings": {"limit": args.limit, "k": k, "top_n": args.top_n, "intent": run_settings["intent"],
                     "weights": list(WEIGHTS), "files": run_settings["files"], "home": home,
                     "rerank_model": run_settings.get("rerank_model"),
                     "queries_read": run_settings["queries_read"],
                     "excluded_without_gold": run_settings["excluded_without_gold"]},
        "ingest": results["ingest"],
        "peer_build": build,
        "ragate_errors": ragate["errors"],
        "paired_latency": paired,
        "code": code_fingerprint(),
        "date": started_at,
        "command": shlex.join([sys.executable, "bench/peers.py", *(argv if argv is not None else sys.argv[1:])]),
        "machine": {"nproc": os.cpu_count(), "python": platform.python_version(), **package_versions()},
    }
    for w in dataset.warnings[:10]:
        print(f"warning: {w}", file=sys.stderr)
    print(markdown(report))
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "peers.json").write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        with (out / "peers_per_query.jsonl").open("w", encoding="utf-8") as fh:
            for i, (q, row) in enumerate(zip(queries, ragate["per_query"])):
                line: dict[str, Any] = {"id": q.id, "type": q.type, "query": q.text}
                for name, ab in RAGATE_ROWS.items():
                    line[name] = {"metrics": row[ab]["metrics"], "top10": row[ab]["top10"]}
                for name, r in peer_runs.items():
                    line[name] = {"metrics": r.per_query[i], "top10": r.top10[i]}
                if paired:
                    line["paired_latency_ms"] = {name: paired_ms[name][i] for name in paired_ms}
                fh.write(json.dumps(line, ensure_ascii=False) + "\n")
        print(f"wrote {out / 'peers.json'}, {out / 'peers_per_query.jsonl'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
