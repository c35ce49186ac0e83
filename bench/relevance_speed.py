#!/usr/bin/env python
"""Speed of the English relevance models of the embedded default, against the ceilings of the issue
"Relevance models in the embedded default":

    ingest            >= 25 chunks/s of ~250-token chunks embedded with bge-small (and written)
    question embedding <= 15 ms p50 (bge-small, the query instruction included)
    cross-encoder      <= 120 ms p50 per question (the rerank step's depth and windows, from the policy)
    whole answer       <= 250 ms p50 on a 10k-chunk English collection (the whole graph, embedded default)

The collection is real English text: SciFact abstracts and MultiHop-RAG articles (../shared/datasets),
chunked at `--chunk-tokens` (250) until `--chunks` (10,000) chunks, ingested with `ragate`'s own
`ingest_path` under `auto` (which picks bge-small for it). Questions are MultiHop-RAG dev queries and
SciFact claims, alternating. Nothing is cached between the measured questions: the query-vector cache
is emptied before each one (a production question is new).

    python bench/relevance_speed.py --home /tmp/ragate-speed --questions 200 --out /tmp/ragate-speed/speed.json

The first run ingests the collection (the ingest figure is measured then; a later run over the same
home reuses it and reports the ingest of a fresh 500-chunk sample instead). Run it on an idle machine:
the ceilings are for 2 idle cores, and the load average is printed with the figures.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import platform
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from graph.context import Context  # noqa: E402
from graph.entrypoints.process import tune_garbage_collector  # noqa: E402
from graph.evaluation.datasets import load_dataset  # noqa: E402
from graph.graph import compile_graph  # noqa: E402
from graph.indexing.ingest import ingest_path  # noqa: E402
from graph.policy import load_policy  # noqa: E402
from graph.providers.local_models import BgeSmallEmbeddings  # noqa: E402
from graph.providers.relevance import CrossEncoderRelevance  # noqa: E402
from graph.providers.resources import collection_embeddings, get_resources  # noqa: E402

CEILINGS = {"ingest_chunks_per_s": (">=", 25.0), "question_embedding_p50_ms": ("<=", 15.0),
            "cross_encoder_p50_ms": ("<=", 120.0), "answer_p50_ms": ("<=", 250.0)}
COLLECTION, TENANT = "english", "bench"


def pct(values: list[float], q: float) -> float:
    return round(float(np.percentile(values, q)), 2) if values else float("nan")


def documents(data_dir: Path, limit_words: int) -> list[dict]:
    """SciFact abstracts and MultiHop-RAG articles as ragate JSONL documents, interleaved."""
    sci = load_dataset("beir", data_dir=str(data_dir / "scifact"))
    mh = load_dataset("multihop-rag", data_dir=str(data_dir / "multihop_rag"))
    docs, words = [], 0
    for pair in itertools.zip_longest(sci.documents, mh.documents):
        for d in (x for x in pair if x is not None):
            if d.text.strip():
                docs.append({"id": d.id, "assetName": d.title or d.id, "content": d.text,
                             "metadata": {"status": "approved", "isApprovedForAI": True}})
                words += len(d.text.split())
        if words >= limit_words:
            break
    return docs


def ingest(ctx: Context, docs: list[dict], collection: str) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "docs.jsonl"
        path.write_text("".join(json.dumps(d, ensure_ascii=False) + "\n" for d in docs), encoding="utf-8")
        BgeSmallEmbeddings()  # model load is not ingest work
        started = time.perf_counter()
        report = ingest_path(path, collection=collection, tenant=TENANT, context=ctx, default_status="approved",
                             default_approved=True)
        seconds = time.perf_counter() - started
    return {"chunks": report.chunks_written, "seconds": round(seconds, 1), "embedding_model": report.embedding_model,
            "chunks_per_s": round(report.chunks_written / seconds, 1) if report.chunks_written else None}


def questions(data_dir: Path, n: int) -> list[str]:
    mh = [q.text for q in load_dataset("multihop-rag", data_dir=str(data_dir / "multihop_rag")).queries]
    sci = [q.text for q in load_dataset("beir", data_dir=str(data_dir / "scifact")).queries]
    random.Random(7).shuffle(mh)
    random.Random(7).shuffle(sci)
    return [q for pair in zip(mh, sci) for q in pair][:n]


def main(argv: list[str] | None = None) -> int:
    tune_garbage_collector()  # as ragate's own entry points do (graph/entrypoints/process.py)
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data-dir", default=str(ROOT.parent / "shared" / "datasets"))
    ap.add_argument("--home", default="/tmp/ragate-speed")
    ap.add_argument("--chunks", type=int, default=10_000, help="chunks in the English collection")
    ap.add_argument("--chunk-tokens", type=int, default=250)
    ap.add_argument("--questions", type=int, default=200)
    ap.add_argument("--out", help="write the figures as JSON here")
    args = ap.parse_args(argv)
    data_dir, home = Path(args.data_dir), Path(args.home)
    ctx = Context(home=str(home), tenant=TENANT, collections=[COLLECTION], chunk_tokens=args.chunk_tokens,
                  overlap_tokens=20)
    figures: dict = {"machine": f"{platform.machine()}, {os.cpu_count()} cores", "python": platform.python_version()}
    try:
        figures["commit"] = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                                           capture_output=True, text=True).stdout.strip()
    except OSError:
        pass

    # 1. Ingest: the collection (first run), or a fresh sample into a throwaway collection.
    index = get_resources(ctx).index
    words = int(args.chunks * args.chunk_tokens / 1.3)  # ingest's estimate: 1.3 tokens a word
    docs = documents(data_dir, words)
    if index.count(COLLECTION) < args.chunks:  # first run, or a collection still short of its size
        figures["ingest"] = ingest(ctx, docs, COLLECTION)
    if not (figures.get("ingest") or {}).get("chunks"):  # nothing new was written: time a fresh sample
        sample = docs[-400:]
        for d in sample:  # new text: nothing cached
            d["id"] = f"{d['id']}-sample-{time.time_ns()}"
            d["content"] = f"Sample {time.time_ns()}. {d['content']}"
        index.drop_collection("ingest-sample")
        figures["ingest"] = ingest(ctx, sample, "ingest-sample")
        index.drop_collection("ingest-sample")
    figures["collection_chunks"] = index.count(COLLECTION)
    manifest = index.manifest(COLLECTION)
    figures["collection_model"] = manifest["embedding_model"]
    print(f"ingest: {figures['ingest']}; collection {figures['collection_chunks']} chunks, {manifest['embedding_model']}")

    asked = questions(data_dir, args.questions)
    embeddings = collection_embeddings(ctx, COLLECTION, manifest)

    # 2. Question embedding, the cache emptied before each one.
    times = []
    for q in asked:
        embeddings.clear_query_cache()
        t = time.perf_counter()
        embeddings.embed_query(q)
        times.append((time.perf_counter() - t) * 1000)
    figures["question_embedding_ms"] = {"p50": pct(times, 50), "p95": pct(times, 95)}

    # 3. The whole answer (the cross-encoder's share read from the rerank node's own timing is not
    # separable, so it is measured alone below on the same candidates' windows).
    graph = compile_graph()
    graph.invoke({"question": asked[0]}, context=ctx)  # loads the models, policy and shards
    totals, nodes, candidates = [], {}, []
    for q in asked:
        embeddings.clear_query_cache()
        t = time.perf_counter()
        state = graph.invoke({"question": q}, context=ctx)
        totals.append((time.perf_counter() - t) * 1000)
        for node, ms in (state.get("timings_ms") or {}).items():
            nodes.setdefault(node.split("[")[0], []).append(ms)
        if state.get("errors"):
            figures.setdefault("errors", []).extend(state["errors"][:2])
    figures["answer_ms"] = {"p50": pct(totals, 50), "p95": pct(totals, 95)}
    print(f"question embedding {figures['question_embedding_ms']}; whole answer {figures['answer_ms']}", flush=True)
    figures["nodes_p50_ms"] = {n: pct(v, 50) for n, v in sorted(nodes.items())}

    # 4. The cross-encoder alone, at the policy's depth and window, on real candidates' windows.
    policy = load_policy(ctx.policy_path)
    cfg = policy.rerank.relevance.cross_encoder
    scorer = CrossEncoderRelevance(cfg.max_tokens)
    texts = [d["content"] for d in docs]
    rng = random.Random(3)
    times = []
    for q in asked:
        passages = [" ".join(t.split()[: cfg.window_words]) for t in rng.sample(texts, cfg.candidates)]
        t = time.perf_counter()
        scorer.score(q, passages)
        times.append((time.perf_counter() - t) * 1000)
        candidates.append(len(passages))
    figures["cross_encoder_ms"] = {"p50": pct(times, 50), "p95": pct(times, 95), "candidates": cfg.candidates,
                                   "window_words": cfg.window_words, "max_tokens": cfg.max_tokens}
    figures["load_average"] = [round(x, 2) for x in os.getloadavg()]

    measured = {"ingest_chunks_per_s": figures["ingest"]["chunks_per_s"],
                "question_embedding_p50_ms": figures["question_embedding_ms"]["p50"],
                "cross_encoder_p50_ms": figures["cross_encoder_ms"]["p50"], "answer_p50_ms": figures["answer_ms"]["p50"]}
    figures["checks"] = {}
    print("\n| figure | measured | ceiling | |\n|---|---:|---:|---|")
    for name, (op, limit) in CEILINGS.items():
        value = measured[name]
        passed = value is not None and (value >= limit if op == ">=" else value <= limit)
        figures["checks"][name] = {"value": value, "ceiling": f"{op} {limit:g}", "pass": passed}
        print(f"| {name} | {value} | {op} {limit:g} | {'PASS' if passed else 'FAIL'} |")
    print(f"\nwhole answer p95 {figures['answer_ms']['p95']} ms; nodes p50 {figures['nodes_p50_ms']}")
    print(f"load average {figures['load_average']}, {figures['machine']}, commit {figures.get('commit')}")
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(figures, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
