#!/usr/bin/env python
"""The scale curve: what ragate costs as one embedded collection grows (10k, 100k and 1M chunks by default),
next to issue 17's LangChain peers on the same chunks.

**Synthetic data.** Every collection is bench/latency.py's (`make_corpus`, `doc_records`, `ensure_built`): seeded
random unit vectors of --dims (384) dimensions, no embedding model, and ~150-word Portuguese/English texts, written
through the real `EdgeVectorIndex.replace_document` with the payload ingest writes, then the search index (HNSW)
built with `optimize()`: what `ragate ingest` leaves, since it runs `build_search_index` (that same call) once a
collection holds SEARCH_INDEX_MIN_POINTS (10,000) chunks. Sizes below that (the test's) are indexed all the same.

At each size, each part runs in a process of its own (so that its peak RSS is its own, and a peer that blows a cap
ends only its part):

1. **build**: ingest throughput without embedding (chunks/s: text, BM25 document vectors, payload, one
   `replace_document` per document, flush), the index build seconds, the bytes of the collection's folder (du),
   the building process's peak RSS (it also holds the generator's ground truth).
2. **ragate**: latency.py's retrieval phase, unchanged (one sub-query, every governance gate, `index.features`
   included; every hit checked against the stored gates and the generator's ground truth; dense recall@50 against
   exact search) and its graph phase (the compiled graph end to end; the query vectors come from the
   `CachedEmbeddings` LRU, filled by a deterministic stand-in of the collection's dimensions, so no model embeds).
3. **serve**: the memory a process serving the collection holds: it opens it, answers --queries gated searches,
   then reads every payload and vector once (a long-running server's steady state); its peak RSS.
4. **peers**: LangChain's BM25Retriever and the EnsembleRetriever hybrid (that BM25Retriever + an in-memory Qdrant
   dense retriever, weights 0.5/0.5), built by bench/peers.py's `build_peers` over the chunks some tenant may be
   served (read back from the collection; the peers have no gates, so drafts and unapproved chunks are left out),
   with the collection's own synthetic vectors; queried with the same words and vectors as ragate, over the whole
   index (no tenant filter). Build seconds, query p50/p95, peak RSS, within --peer-build-minutes and --peer-rss-gb:
   a peer past a cap is stopped, and the table says where.

And once, **many tenants**: --many-tenants tenants in one collection of --tenants-chunks chunks, filtered search
p50 (the same retrieval phase), and an isolation sweep: a new query for every tenant, every hit of both lists
checked one by one against its stored payload and the generator's ground truth, violations counted.

Each part's figures are saved to --out (bench/out/scale) as JSON the moment it ends: an interrupted run resumes at
the next part, and --report-only rebuilds the table, the plot and the RESULTS block from the saved figures. A
part is measured again only when its parameters change (or with --redo). Collections live in --home, one folder
per size, reused while their parameters match (latency.py's manifest).

    python bench/scale.py --write-results       # table on stdout, bench/scale.png, the Scale block of RESULTS.md
    python bench/scale.py --sizes 10000,100000 --no-peers
    python bench/scale.py --report-only --write-results
    make bench-scale
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import shlex
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
from langchain_core.embeddings import Embeddings

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
if str(ROOT) not in sys.path:  # `python bench/scale.py` from a checkout without `pip install -e .`
    sys.path.insert(0, str(ROOT))
if str(BENCH) not in sys.path:  # the sibling benches, when imported rather than run
    sys.path.insert(0, str(BENCH))

from latency import (
    COLLECTION,
    GRAPH_QUESTIONS,
    MANIFEST,
    OUT_DIR,
    CpuMonitor,
    GateViolation,
    build_params,
    check_hits,
    code_fingerprint,
    command_line,
    ensure_built,
    git_commit,
    graph_phase,
    log,
    machine_info,
    make_corpus,
    make_vocab,
    measured_retrieval,
    pct,
    prewarm,
    random_queries,
    tenant_name,
    write_results,
)

from graph.algorithms.text import get_analyzer
from graph.assets import DEFAULT_POLICY_PATH
from graph.entrypoints.process import tune_garbage_collector
from graph.policy import load_policy
from graph.providers.vectorstore import SEARCH_INDEX_MIN_POINTS, open_index

BEGIN, END = "<!-- scale:begin -->", "<!-- scale:end -->"
HEADING = "## Scale: one collection from 10k to 1M chunks (`bench/scale.py`)\n\n"
PLOT_PATH = BENCH / "scale.png"
PEERS = ("BM25Retriever", "LangChain hybrid")
CAPPED_EXIT = 3  # a peer part stopped at a cap: its JSON says which
DRIVER_ENV = "RAGATE_SCALE_COMMAND"  # the driver's command line, handed to the parts it runs


# --- saved figures --------------------------------------------------------------------------


def part_name(part: str, size: int, tenants: int) -> str:
    return f"{part}-{size}" if part != "tenants" else f"tenants-{size}x{tenants}"


def part_params(args, part: str, size: int) -> dict[str, Any]:
    """What a part's figures depend on: saved figures with other parameters are measured again."""
    tenants = args.many_tenants if part == "tenants" else args.tenants
    p = {"part": part, "size": size, "build": build_params(collection_args(args, size, tenants))}
    if part in ("ragate", "tenants"):
        p.update(queries=args.tenant_queries if part == "tenants" else args.queries, warmup=args.warmup,
                 limit=args.limit, graph_rounds=args.graph_rounds if part == "ragate" else 0)
    if part == "serve":
        p.update(queries=args.queries, limit=args.limit)
    if part == "peers":
        p.update(queries=args.peer_queries, query_seconds=args.peer_query_seconds, limit=args.limit,
                 build_minutes=args.peer_build_minutes, rss_gb=args.peer_rss_gb)
    return p


def saved(args, part: str, size: int) -> dict[str, Any] | None:
    path = Path(args.out) / f"{part_name(part, size, args.many_tenants)}.json"
    if not path.exists():
        return None
    data = json.loads(path.read_text())
    return data if data.get("params") == part_params(args, part, size) else None


def save(args, part: str, size: int, figures: dict[str, Any], started: float, cpu: CpuMonitor) -> None:
    """A part's figures, with when, which code and how busy the machine was, written atomically."""
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    data = {
        "params": part_params(args, part, size), "figures": figures,
        "started": _dt.datetime.fromtimestamp(started, _dt.UTC).isoformat(timespec="seconds"),
        "seconds": round(time.time() - started, 1), "other_load": cpu.other_load(),
        "loadavg": [round(x, 2) for x in os.getloadavg()], "commit": git_commit(("graph", "nodes", "policies", "bench")), "code": code_fingerprint(),
        # The command that asked for the part (the driver's, when a driver ran it), not the part's own.
        "command": os.environ.get(DRIVER_ENV) or command_line(),
    }
    path = out / f"{part_name(part, size, args.many_tenants)}.json"
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=2, default=float))
    tmp.replace(path)


# --- shared set-up --------------------------------------------------------------------------


def collection_args(args, size: int, tenants: int) -> SimpleNamespace:
    """The arguments latency.py's build, retrieval and graph phases read, for one collection."""
    return SimpleNamespace(chunks=size, dims=args.dims, tenants=tenants, seed=args.seed, words=args.words,
                           rebuild=False, queries=args.queries, warmup=args.warmup, limit=args.limit, prewarm=True,
                           graph_rounds=args.graph_rounds, graph_tenant=min(3, tenants - 1))


def collection_home(args, size: int, tenants: int) -> Path:
    return Path(args.home).expanduser().resolve() / f"chunks-{size}-tenants-{tenants}"


def open_collection(args, size: int, tenants: int):
    """The generator's corpus and the collection built from it (built now if the home holds no match)."""
    ns = collection_args(args, size, tenants)
    home = collection_home(args, size, tenants)
    home.mkdir(parents=True, exist_ok=True)
    analyzer = get_analyzer(load_policy(DEFAULT_POLICY_PATH))
    vocab = make_vocab(args.seed)
    corpus = make_corpus(size, args.dims, tenants, args.seed)
    index, stored = ensure_built(ns, home, corpus, vocab, analyzer)
    return ns, home, corpus, vocab, analyzer, index, stored


def memory() -> dict[str, float]:
    """This process's resident memory now and at its peak, in MB; anon (heap) and file-backed (mapped files)."""
    out = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM", "RssAnon", "RssFile"):
            out[key] = round(int(value.split()[0]) / 1024, 1)
    return out


def folder_bytes(folder: Path) -> int:
    """Bytes the folder takes on disk (allocated blocks, as du counts them)."""
    return sum(f.stat().st_blocks * 512 for f in folder.rglob("*") if f.is_file())


# --- the parts, each run in its own process ---------------------------------------------------


def part_build(args, size: int) -> dict[str, Any]:
    home = collection_home(args, size, args.tenants)
    ns = collection_args(args, size, args.tenants)
    manifest = home / MANIFEST
    reused = manifest.exists() and json.loads(manifest.read_text()).get("params") == build_params(ns)
    _, _, _, _, _, index, stored = open_collection(args, size, args.tenants)
    b = stored["build"]
    index.close()
    return {
        "chunks": b["chunks"], "docs": b["docs"], "load_s": b["load_s"], "write_s": b["write_s"],
        "index_s": b["optimize_s"], "built": b["date"], "build_command": b["command"],
        "ingest_chunks_s": b["chunks"] / b["load_s"], "write_chunks_s": b["chunks"] / b["write_s"],
        "indexed_vectors": b["indexed_vectors"], "segments": b["segments"],
        "disk_bytes": folder_bytes(home / "collections" / COLLECTION),
        # The peak of a process that only reopened an earlier build says nothing about building.
        "build_rss": None if reused else memory(),
    }


def part_ragate(args, size: int) -> dict[str, Any]:
    ns, home, corpus, vocab, analyzer, index, stored = open_collection(args, size, args.tenants)
    ret = measured_retrieval(index, corpus, vocab, analyzer, ns)
    log(f"{size:,} chunks: retrieval p50 {ret['p50']:.2f} ms, p95 {ret['p95']:.2f} ms")
    graph = None
    if args.graph_rounds > 0:
        cpu = CpuMonitor()
        gr = graph_phase(index, ns, home)
        graph = {"all": gr["all"], "simple": gr["simple"], "decomposed": gr["decomposed"],
                 "other_load": cpu.other_load(), "tenant": gr["tenant"], "nodes": sorted(gr["all"]["nodes_p50"])}
        log(f"{size:,} chunks: graph wall p50 {gr['all']['wall_p50']:.2f} ms")
    index.close()
    return {"retrieval": ret, "graph": graph, "hits_checked": round(ret["n"] * (ret["dense_hits_mean"] +
                                                                               ret["lex_hits_mean"])),
            "rss": memory()}


def part_serve(args, size: int) -> dict[str, Any]:
    """Opens the collection as a server does and reads it as queries do, measuring nothing but memory: no
    ground truth in this process (random_queries reads only the dimensions of the corpus it is handed)."""
    home = collection_home(args, size, args.tenants)
    analyzer = get_analyzer(load_policy(DEFAULT_POLICY_PATH))
    vocab = make_vocab(args.seed)
    dims_only = SimpleNamespace(vectors=np.empty((0, args.dims), dtype=np.float32))
    queries = random_queries(args.queries, dims_only, vocab, analyzer, args.tenants, args.seed + 2000)
    before = memory()
    index = open_index(home)
    index._shard(COLLECTION)
    opened = memory()
    for q in queries:
        index.search(COLLECTION, dense=q["dense"].tolist(), sparse=q["sparse"], tenant=tenant_name(q["tenant"]),
                     filters=None, limit=args.limit)
    searched = memory()
    prewarm(index)
    everything = memory()
    index.close()
    return {"before": before, "opened": opened, "searched": searched, "everything": everything}


class SyntheticEmbeddings(Embeddings):
    """The peers' embedder: each chunk's text maps to the collection's own synthetic vector, each query's words to
    the query vector ragate searched with. No model runs, as on ragate's side."""

    def __init__(self, matrix: np.ndarray, row_of_text: dict[int, int], query_vectors: dict[str, np.ndarray]):
        # Keyed by the text's hash: a million ~1 KB texts as keys would be another copy of the corpus.
        self.matrix, self.row_of_text, self.query_vectors = matrix, row_of_text, query_vectors

    def embed_documents(self, texts: list[str]) -> Sequence[list[float]]:
        if texts == ["dummy_text"]:  # QdrantVectorStore embeds this once to learn the vectors' size
            return [[0.0] * self.matrix.shape[1]]
        return VectorRows(self.matrix, [self.row_of_text[hash(t)] for t in texts])

    def embed_query(self, text: str) -> list[float]:
        return self.query_vectors[text].tolist()


class VectorRows(Sequence):
    """Rows of a matrix handed out as lists one at a time: `build_peers` embeds every chunk in one call, and a
    million 384-float lists at once would take ~12 GB of Python floats, more than the peers themselves."""

    def __init__(self, matrix: np.ndarray, rows: list[int]):
        self.matrix, self.rows = matrix, rows

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return VectorRows(self.matrix, self.rows[i])
        return self.matrix[self.rows[i]].tolist()


class CapWatch:
    """Stops the process when the peers outgrow a cap: RSS above `rss_mb`, or a build longer than `build_s`.
    It saves the part first, with the cap, the stage and the figures so far, and exits CAPPED_EXIT."""

    def __init__(self, rss_mb: float, build_s: float, on_cap):
        self.rss_mb, self.build_s, self.on_cap = rss_mb, build_s, on_cap
        self.stage, self.stage_started, self.peak_mb = "start", time.perf_counter(), 0.0
        threading.Thread(target=self._watch, daemon=True).start()

    def enter(self, stage: str) -> None:
        self.stage, self.stage_started = stage, time.perf_counter()

    def _watch(self) -> None:
        while True:
            rss = memory()["VmRSS"]
            self.peak_mb = max(self.peak_mb, rss)
            elapsed = time.perf_counter() - self.stage_started
            if rss > self.rss_mb:
                self._stop(f"RSS {rss / 1024:.1f} GB > cap {self.rss_mb / 1024:.0f} GB during {self.stage}, "
                           f"after {elapsed:.0f} s of it")
            if self.stage == "build" and elapsed > self.build_s:
                self._stop(f"build not done after the cap of {self.build_s / 60:.0f} min")
            time.sleep(0.2)

    def _stop(self, reason: str) -> None:
        log(f"peers stopped: {reason}")
        try:
            self.on_cap(reason)
        finally:
            os._exit(CAPPED_EXIT)


def part_peers(args, size: int, save_capped) -> dict[str, Any]:
    import peers as peer_bench  # the LangChain peers; bench/peers.py imports them itself

    figures: dict[str, Any] = {"capped": None}
    watch = CapWatch(args.peer_rss_gb * 1024, args.peer_build_minutes * 60,
                     lambda reason: save_capped({**figures, "capped": reason, "peak_rss_mb": watch.peak_mb}))
    watch.enter("reading the chunks")
    ns, home, corpus, vocab, analyzer, index, _ = open_collection(args, size, args.tenants)
    chunks = [c for t in range(args.tenants)
              for c in peer_bench.stored_chunks(index, COLLECTION, tenant_name(t), with_vectors=False)]
    index.close()
    row_of_text = {hash(c.embedded_text): corpus.row_of[(c.doc_id, c.chunk_index)] for c in chunks}
    if len(row_of_text) != len(chunks):
        raise SystemExit("two chunks share a text (or its hash): the peers' vectors would be ambiguous")
    queries = random_queries(args.peer_queries + 1, corpus, vocab, analyzer, args.tenants, args.seed)
    embeddings = SyntheticEmbeddings(corpus.vectors, row_of_text, {q["text"]: q["dense"] for q in queries})
    figures.update(documents=len(chunks), rss_before_build=memory())

    watch.enter("build")
    started = time.perf_counter()
    retrievers, report = peer_bench.build_peers(chunks, embeddings, args.limit, diagnostics=False)
    figures.update(build_s=time.perf_counter() - started, build=report, rss_after_build=memory())
    figures["build_s_of"] = {"BM25Retriever": report["bm25_build_s"],
                             "LangChain hybrid": report["bm25_build_s"] + report["qdrant_build_s"]}
    log(f"{size:,} chunks: peers built in {figures['build_s']:.0f} s ({len(chunks):,} documents)")

    for name in PEERS:
        watch.enter(f"queries of {name}")
        retriever = retrievers[name]
        retriever.invoke(queries[0]["text"])  # untimed: first-call costs, as peers.py's warm-up
        latency, empty, deadline = [], 0, time.perf_counter() + args.peer_query_seconds
        for q in queries[1:]:
            t0 = time.perf_counter()
            docs = retriever.invoke(q["text"])
            latency.append((time.perf_counter() - t0) * 1000)
            empty += not docs
            if time.perf_counter() > deadline:
                break  # at large sizes a peer is measured on fewer queries: the count is reported
        figures[name] = {"p50": pct(latency, 50), "p95": pct(latency, 95), "n": len(latency), "empty": empty}
        log(f"{size:,} chunks: {name} p50 {figures[name]['p50']:.1f} ms over {len(latency)} queries")
    figures["peak_rss_mb"] = max(watch.peak_mb, memory()["VmHWM"])
    return figures


def isolation_sweep(index, corpus, vocab, analyzer, tenants: int, seed: int, limit: int) -> dict[str, Any]:
    """One new query for every tenant; every hit of both lists checked on its own (latency.py's `check_hits`:
    the stored payload read back, and the generator's ground truth), so that violations are counted rather
    than ending the run at the first."""
    shard = index._shard(COLLECTION)
    queries = random_queries(tenants, corpus, vocab, analyzer, tenants, seed)
    hits = violations = tenants_with_hits = 0
    examples: list[str] = []
    for q in queries:
        dense_hits, lex_hits = index.search(COLLECTION, dense=q["dense"].tolist(), sparse=q["sparse"],
                                            tenant=tenant_name(q["tenant"]), filters=None, limit=limit)
        tenants_with_hits += bool(dense_hits or lex_hits)
        for where, hit_list in (("dense list", dense_hits), ("lexical list", lex_hits)):
            for h in hit_list:
                hits += 1
                try:
                    check_hits([h], q["tenant"], corpus, where, None, shard)
                except GateViolation as exc:
                    violations += 1
                    examples = (examples + [str(exc)])[:5]
    return {"tenants": len({q["tenant"] for q in queries}), "tenants_with_hits": tenants_with_hits, "hits": hits,
            "violations": violations, "examples": examples}


def part_tenants(args, size: int) -> dict[str, Any]:
    many = args.many_tenants
    ns, home, corpus, vocab, analyzer, index, stored = open_collection(args, size, many)
    ns.queries = args.tenant_queries
    ret = measured_retrieval(index, corpus, vocab, analyzer, ns)  # fails on the first gate violation
    log(f"{many} tenants: filtered search p50 {ret['p50']:.2f} ms")

    sweep = isolation_sweep(index, corpus, vocab, analyzer, many, args.seed + 1000, args.limit)
    index.close()
    gated = [int(((corpus.tenant == t) & corpus.gated).sum()) for t in range(many)]
    return {"retrieval": ret, "tenants": many, "gated_per_tenant": int(np.median(gated)),
            "sweep": sweep,
            "build": {"load_s": stored["build"]["load_s"], "index_s": stored["build"]["optimize_s"]}}


def run_part(args, part: str, size: int) -> int:
    """The --part entry: measure, save, exit status."""
    started, cpu = time.time(), CpuMonitor()
    if part == "peers":
        figures = part_peers(args, size, lambda f: save(args, part, size, f, started, cpu))
    else:
        figures = {"build": part_build, "ragate": part_ragate, "serve": part_serve,
                   "tenants": part_tenants}[part](args, size)
    save(args, part, size, figures, started, cpu)
    return 0


# --- the driver --------------------------------------------------------------------------------


def plan(args) -> list[tuple[str, int]]:
    """The parts in the order they run: each size's build, ragate and serve parts, its peers, then the tenants;
    every size's ragate figures before the next size, so a run cut short still has the smaller sizes whole."""
    parts = []
    for size in args.sizes:
        parts += [("build", size), ("ragate", size), ("serve", size)]
        if args.peers:
            parts.append(("peers", size))
    if args.many_tenants:
        parts.append(("tenants", args.tenants_chunks))
    return parts


def part_command(args, part: str, size: int) -> list[str]:
    return [sys.executable, str(Path(__file__).resolve()), "--part", part, "--part-size", str(size),
            *(a for a in args.passthrough)]


def run_all(args) -> None:
    for part, size in plan(args):
        if not args.redo and saved(args, part, size):
            log(f"{part} {size:,}: saved figures match, not measured again")
            continue
        if part == "peers" and not peers_importable():
            log("peers: langchain_community / langchain_qdrant not importable (pip install -e '.[bench]'): skipped")
            continue
        log(f"{part} {size:,}: measuring")
        t0 = time.perf_counter()
        rc = subprocess.run(part_command(args, part, size), cwd=ROOT,
                            env={**os.environ, DRIVER_ENV: args.command}).returncode
        if rc not in (0, CAPPED_EXIT):
            raise SystemExit(f"{part} at {size:,} chunks failed (exit {rc}); its figures were not saved")
        log(f"{part} {size:,}: {time.perf_counter() - t0:.0f} s")


def peers_importable() -> bool:
    import importlib.util

    return all(importlib.util.find_spec(m) for m in ("langchain_community", "langchain_qdrant", "rank_bm25"))


# --- the report ----------------------------------------------------------------------------


def gb(mb: float | None) -> str:
    return "–" if mb is None else f"{mb / 1024:.2f} GB" if mb >= 1024 else f"{mb:.0f} MB"


def serving(sv: dict | None) -> str:
    """Peak RSS of the serving process, and how much of it opening and reading the collection added."""
    if not sv:
        return "–"
    return f"{gb(sv['everything']['VmHWM'])} (+{gb(sv['everything']['VmHWM'] - sv['before']['VmRSS'])})"


def ms(v: float | None) -> str:
    return "–" if v is None or v != v else (f"{v:.2f}" if v < 100 else f"{v:,.0f}")


def load_of(*parts: dict | None) -> str:
    """How busy other processes kept the machine during the parts: share of all cores, and the 1-min load average
    at their end."""
    shares = [p["other_load"] for p in parts if p and p.get("other_load") is not None]
    avgs = [p["loadavg"][0] for p in parts if p]
    if not avgs:
        return "–"
    share = f"{max(shares):.0%}" if shares else "?"
    return f"{share} (loadavg {max(avgs):.2f})"


def collect(args) -> dict[str, Any]:
    figures = {"sizes": {}}
    for size in args.sizes:
        figures["sizes"][size] = {part: saved(args, part, size) for part in ("build", "ragate", "serve", "peers")}
    figures["tenants"] = saved(args, "tenants", args.tenants_chunks) if args.many_tenants else None
    return figures


def peer_cells(p: dict | None, name: str, measured: bool) -> list[str]:
    """build s / p50 / p95 cells of one peer; a capped or missing peer says why instead of leaving a hole."""
    if p is None:
        return ["not measured" if measured else "off", "", ""]
    f = p["figures"]
    if f.get("capped") and name not in f:
        if "build_s" in f:  # built, stopped during the other peer's queries or this one's
            return [f"{f['build_s_of'][name]:.0f} s", f"stopped: {f['capped']}", ""]
        return [f"stopped: {f['capped']}", "", ""]
    q = f[name]
    fewer = f" (n={q['n']})" if q["n"] < p["params"]["queries"] else ""
    return [f"{f['build_s_of'][name]:.0f} s", ms(q["p50"]) + fewer, ms(q["p95"])]


def commands_of(runs: list[dict]) -> list[str]:
    """Each command that measured saved figures, with what it measured and when."""
    by_command: dict[str, list[dict]] = {}
    for r in runs:
        by_command.setdefault(r["command"], []).append(r)
    lines = []
    for command, rs in by_command.items():
        parts = ", ".join(part_name(r["params"]["part"], r["params"]["size"], r["params"]["build"]["tenants"])
                          for r in rs)
        lines.append(f"- `{command}` ({parts}; {min(r['started'] for r in rs)} – {max(r['started'] for r in rs)})")
    return lines


def report(args, figures: dict[str, Any]) -> str:
    m = machine_info()
    sizes = figures["sizes"]
    runs = [p for s in sizes.values() for p in s.values() if p] + ([figures["tenants"]] if figures["tenants"] else [])
    if not runs:
        return "No saved figures yet: run bench/scale.py without --report-only first.\n"
    first = min(r["started"] for r in runs)
    last = max(r["started"] for r in runs)
    commits = sorted({r["commit"] for r in runs})
    lines = [
        f"Runs {first} – {last} (UTC) · commit {', '.join(f'`{c}`' for c in commits)} · machine: nproc {m['nproc']}, "
        f"{m['cpu']}, {m['ram']} RAM · Python {m['python']}, qdrant-edge-py {m['qdrant-edge-py']}, langgraph "
        f"{m['langgraph']} · {m['os']} · proactive memory reclaim: {m['reclaim']}",
        "",
        *commands_of(runs),
        "",
        f"**Synthetic data**: seeded random {args.dims}-d unit vectors (no embedding model) and ~{args.words}-word "
        f"Portuguese/English texts from bench/latency.py's generator; {args.tenants} tenants, ~80% of the chunks "
        "approved and ready (the rest drafts or not approved for AI). Each collection written with "
        "`replace_document` as ingest writes it, then indexed with `optimize()`, the call `ragate ingest` makes "
        f"from {SEARCH_INDEX_MIN_POINTS:,} chunks (`build_search_index`).",
        "",
        "| chunks | ingest, no embedding | index build | disk | RSS serving (+ the collection) | RSS building "
        "| **retrieval p50 / p95** | whole graph wall p50 / p95 | graph overhead p50 | load: building / measuring | minutes |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|",
    ]
    for size, s in sizes.items():
        b, r, sv = (s[k]["figures"] if s[k] else None for k in ("build", "ragate", "serve"))
        if not (b and r):
            lines.append(f"| {size:,} | " + " | ".join(["not measured: no saved figures (the same command resumes "
                                                        "there)"] + [""] * 9) + " |")
            continue
        ret, gr = r["retrieval"], (r["graph"] or {}).get("all")
        minutes = sum(s[k]["seconds"] for k in ("build", "ragate", "serve") if s[k]) / 60
        lines.append(
            f"| {size:,} | {b['ingest_chunks_s']:,.0f} chunks/s | {b['index_s']:,.0f} s | "
            f"{gb(b['disk_bytes'] / 2**20)} | {serving(sv)} | "
            f"{gb(b['build_rss']['VmHWM']) if b['build_rss'] else 'reused build'} | "
            f"**{ms(ret['p50'])}** / {ms(ret['p95'])} ms | "
            f"{(ms(gr['wall_p50']) + ' / ' + ms(gr['wall_p95']) + ' ms') if gr else 'off'} | "
            f"{(ms(gr['overhead_p50']) + ' ms') if gr else 'off'} | {load_of(s['build'])} / "
            f"{load_of(s['ragate'], s['serve'])} | "
            f"{minutes:.1f} |")
    lines += [
        "",
        "Peers on the same chunks (those some tenant may be served, one index for all tenants, searched without a "
        f"tenant filter), the same query words and vectors; caps: build ≤ {args.peer_build_minutes:g} min, RSS ≤ "
        f"{args.peer_rss_gb:g} GB; at most {args.peer_queries} timed queries or {args.peer_query_seconds:g} s per "
        "peer (n is given when fewer ran):",
        "",
        "| chunks | documents | BM25Retriever build / p50 / p95 (ms) | EnsembleRetriever build / p50 / p95 (ms) | "
        "peers' peak RSS (the harness's chunks and vectors before building) | ragate retrieval p50 | load | minutes |",
        "|---:|---:|---|---|---:|---:|---|---:|",
    ]
    for size, s in sizes.items():
        p = s["peers"]
        r = s["ragate"]["figures"]["retrieval"]["p50"] if s["ragate"] else None
        cells = [" / ".join(c for c in peer_cells(p, name, args.peers) if c) for name in PEERS]
        docs = f"{p['figures']['documents']:,}" if p and "documents" in p["figures"] else "–"
        before = (p["figures"].get("rss_before_build") or {}).get("VmRSS") if p else None
        rss = f"{gb(p['figures'].get('peak_rss_mb'))} ({gb(before)} before building)" if before else "–"
        lines.append(f"| {size:,} | {docs} | {cells[0]} | {cells[1]} | {rss} | {ms(r) + ' ms' if r else '–'} | "
                     f"{load_of(p)} | "
                     f"{(p['seconds'] / 60) if p else 0:.1f} |")
    t = figures["tenants"]
    if t:
        f = t["figures"]
        ret, sw = f["retrieval"], f["sweep"]
        lines += [
            "",
            f"**{f['tenants']:,} tenants in one collection** of {args.tenants_chunks:,} chunks (median "
            f"{f['gated_per_tenant']} chunks a tenant may be served): filtered search (the retrieval above) p50 "
            f"**{ms(ret['p50'])} ms**, p95 {ms(ret['p95'])} ms over {ret['n']} queries; dense recall@{args.limit} "
            f"{ret['recall_mean']:.4f}. Isolation sweep: {sw['tenants']:,} tenants asked once each "
            f"({sw['tenants_with_hits']:,} got hits), **{sw['hits']:,} hits checked** one by one against the "
            f"stored brandId / isApprovedForAI / status and the generator's ground truth: **{sw['violations']} "
            f"violations**; plus the retrieval phase's own check of its {ret['n']} queries' "
            f"{round(ret['n'] * (ret['dense_hits_mean'] + ret['lex_hits_mean'])):,} hits (fatal at the first). "
            f"Build {f['build']['load_s']:.0f} s + index {f['build']['index_s']:.0f} s; load {load_of(t)}; "
            f"{t['seconds'] / 60:.1f} min.",
        ]
    any_ragate = next((s["ragate"]["figures"] for s in sizes.values() if s["ragate"]), None)
    if any_ragate:
        ret = any_ragate["retrieval"]
        gr = any_ragate["graph"]
        lines += [
            "",
            f"How to read it. **Retrieval** is latency.py's: `index.search` (the dense and BM25 lists, limit "
            f"{args.limit}, every governance gate) + `index.features` over their union, after every payload and "
            f"vector was read once; every hit of the {ret['n']} timed queries at each size checked against the gates "
            "(0 violations, or the run stops), dense recall@50 against exact search. **Whole graph** is the "
            f"compiled graph with the default policy, as {gr['tenant'] if gr else 'one tenant'}, on latency.py's "
            f"{len(GRAPH_QUESTIONS)} questions × {args.graph_rounds} rounds: every node "
            f"({', '.join(sorted({n.split(' (')[0] for n in gr['nodes']})) if gr else '–'}) with the default models, but the question's vector "
            "comes from the embedding cache (a stand-in of the collection's dimensions fills it first), so no "
            "embedding model runs: the model costs do not depend on the collection size. **Overhead** = wall − "
            "`index.search` − embedding. **Ingest** excludes embedding (the default model embeds ~84 chunks/s "
            "on this machine: at any size it, not the engine, bounds a real ingest). **RSS serving**: peak of a "
            "process that opened the collection, ran the searches, then read every payload and vector once (in "
            "brackets, how much of that the collection added to a process that had imported ragate); "
            "**building**: peak of the process that generated and wrote the collection (it also holds the "
            "generator's vectors and ground truth). **Disk**: the collection's folder, allocated bytes.",
        ]
    return "\n".join(lines) + "\n"


def chunks_label(size: int) -> str:
    return f"{size / 1e6:g}M" if size >= 1_000_000 else f"{size / 1e3:g}k" if size >= 1000 else str(size)


def plot(args, figures: dict[str, Any], path: Path) -> bool:
    """Latency against collection size (log–log), ragate and the peers, and memory; False without matplotlib."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        import matplotlib.ticker
    except ImportError:
        return False
    sizes = figures["sizes"]
    fig, (lat, mem) = plt.subplots(1, 2, figsize=(12, 4.8))
    series = {"ragate retrieval (one sub-query, all gates)": [], "ragate whole graph (wall)": [],
              "BM25Retriever": [], "EnsembleRetriever (BM25 + dense)": []}
    memory_series = {"ragate, serving": [], "peers (both, one process)": []}
    for size, s in sizes.items():
        if s["ragate"]:
            f = s["ragate"]["figures"]
            series["ragate retrieval (one sub-query, all gates)"].append((size, f["retrieval"]["p50"],
                                                                         f["retrieval"]["p95"]))
            if f["graph"]:
                series["ragate whole graph (wall)"].append((size, f["graph"]["all"]["wall_p50"],
                                                            f["graph"]["all"]["wall_p95"]))
        if s["peers"]:
            f = s["peers"]["figures"]
            for name, label in zip(PEERS, ("BM25Retriever", "EnsembleRetriever (BM25 + dense)")):
                if name in f:
                    series[label].append((size, f[name]["p50"], f[name]["p95"]))
            if not f.get("capped"):
                memory_series["peers (both, one process)"].append((size, f["peak_rss_mb"] / 1024))
        if s["serve"]:
            memory_series["ragate, serving"].append((size, s["serve"]["figures"]["everything"]["VmHWM"] / 1024))
    for (label, pts), style in zip(series.items(), ("o-", "s-", "^--", "v--")):
        if pts:
            x, p50, p95 = zip(*pts)
            line, = lat.plot(x, p50, style, label=f"{label}, p50")
            lat.plot(x, p95, ":", color=line.get_color(), alpha=0.7)
    for (label, pts), style in zip(memory_series.items(), ("o-", "^--")):
        if pts:
            x, y = zip(*pts)
            mem.plot(x, y, style, label=label)
    capped = [f"{size:,}" for size, s in sizes.items() if s["peers"] and s["peers"]["figures"].get("capped")]
    lat.set(xscale="log", yscale="log", xlabel="chunks in the collection", ylabel="ms per query (p50; dotted: p95)",
            title="Latency by collection size")
    mem.set(xscale="log", yscale="log", xlabel="chunks in the collection", ylabel="peak RSS, GB", title="Memory")
    missing = [chunks_label(size) for size, s in sizes.items() if not s["ragate"]]
    notes = ([f"peers stopped at a cap at {', '.join(capped)} chunks"] if capped else []) + (
        [f"not measured: {', '.join(missing)}"] if missing else [])
    if notes:
        lat.text(0.02, 0.98, "; ".join(notes), transform=lat.transAxes, fontsize=8, va="top")
    for ax in (lat, mem):
        ax.set_xticks(list(sizes), [chunks_label(size) for size in sizes])
        ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
        ax.yaxis.set_major_formatter(matplotlib.ticker.FormatStrFormatter("%g"))
        ax.yaxis.set_minor_formatter(matplotlib.ticker.FormatStrFormatter("%g") if ax is mem
                                     else matplotlib.ticker.NullFormatter())
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle(f"ragate vs LangChain peers, synthetic {args.dims}-d vectors and texts ({args.tenants} tenants)",
                 fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


# --- main ----------------------------------------------------------------------------------


def sizes_arg(text: str) -> list[int]:
    try:
        sizes = sorted({int(x.replace("_", "")) for x in text.split(",") if x.strip()})
    except ValueError:
        raise argparse.ArgumentTypeError(f"--sizes takes chunk counts separated by commas, not {text!r}") from None
    if not sizes or min(sizes) < 100:
        raise argparse.ArgumentTypeError("--sizes: at least one size, each of 100 chunks or more")
    return sizes


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", type=sizes_arg, default=sizes_arg("10000,100000,1000000"),
                    help="collection sizes in chunks, separated by commas (default 10000,100000,1000000)")
    ap.add_argument("--dims", type=int, default=384, help="dense dimensions of the synthetic vectors (default 384)")
    ap.add_argument("--tenants", type=int, default=20, help="tenants the chunks of the size curve are spread over")
    ap.add_argument("--queries", type=int, default=200, help="timed retrieval sub-queries at each size (default 200)")
    ap.add_argument("--warmup", type=int, default=50, help="retrieval queries before the pre-warm (latency.py's)")
    ap.add_argument("--graph-rounds", type=int, default=5,
                    help=f"timed rounds of the {len(GRAPH_QUESTIONS)} graph questions at each size; 0 skips the graph")
    ap.add_argument("--limit", type=int, default=50, help="hits per list (the default policy profile's k)")
    ap.add_argument("--words", type=int, default=150, help="mean words per synthetic chunk")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--no-peers", dest="peers", action="store_false", help="skip the LangChain peers")
    ap.add_argument("--peer-queries", type=int, default=100, help="timed queries per peer at each size (default 100)")
    ap.add_argument("--peer-query-seconds", type=float, default=120,
                    help="stop a peer's timed queries after this long (its p50 is then over fewer queries)")
    ap.add_argument("--peer-build-minutes", type=float, default=20, help="cap on building the peers (default 20)")
    ap.add_argument("--peer-rss-gb", type=float, default=10,
                    help="cap on the peers' process RSS in GB (default 10: the machine is shared)")
    ap.add_argument("--many-tenants", type=int, default=1000,
                    help="tenants in the one-collection isolation run (default 1000; 0 skips it)")
    ap.add_argument("--tenants-chunks", type=int, default=100_000, help="chunks of that collection (default 100000)")
    ap.add_argument("--tenant-queries", type=int, default=2000,
                    help="timed filtered searches in it, rotating over the tenants (default 2000)")
    ap.add_argument("--home", default=os.environ.get("RAGATE_SCALE_HOME", "/tmp/ragate-scale-home"),
                    help="folder of the collections, one sub-folder per size (reused while parameters match)")
    ap.add_argument("--out", default=str(OUT_DIR / "scale"), help="folder of the saved figures, one JSON per part")
    ap.add_argument("--plot", default=str(PLOT_PATH), help="where the PNG goes (default bench/scale.png)")
    ap.add_argument("--redo", action="store_true", help="measure every part again, even with matching saved figures")
    ap.add_argument("--report-only", action="store_true", help="measure nothing: report the saved figures")
    ap.add_argument("--write-results", action="store_true", help="update the Scale block of bench/RESULTS.md")
    ap.add_argument("--part", choices=("build", "ragate", "serve", "peers", "tenants"), help=argparse.SUPPRESS)
    ap.add_argument("--part-size", type=int, help=argparse.SUPPRESS)
    return ap


def main(argv: list[str] | None = None) -> int:
    tune_garbage_collector()  # as ragate's own entry points do
    argv = sys.argv[1:] if argv is None else argv
    ap = parser()
    args = ap.parse_args(argv)
    if args.tenants < 1 or args.many_tenants < 0 or args.queries < 1:
        ap.error("--tenants and --queries must be 1 or more, --many-tenants 0 or more")
    if args.part:
        return run_part(args, args.part, args.part_size)
    args.command = shlex.join([sys.executable, "bench/scale.py", *argv])  # as typed, even when called in-process
    # Each part runs as this script with the same arguments: the driver's own flags mean nothing there.
    args.passthrough = [a for a in argv if a not in ("--write-results", "--report-only", "--redo")]
    if not args.report_only:
        run_all(args)
    figures = collect(args)
    block = report(args, figures)
    plotted = plot(args, figures, Path(args.plot))
    if plotted:
        shown = Path(args.plot).resolve()
        block += f"\nPlot: `{shown.relative_to(ROOT) if shown.is_relative_to(ROOT) else shown}`.\n"
    else:
        log("no plot: matplotlib is not installed (pip install -e '.[eval]')")
    print(block)
    if args.write_results:
        write_results(block, BEGIN, END, HEADING)
        log("updated bench/RESULTS.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
