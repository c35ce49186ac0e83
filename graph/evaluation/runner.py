"""Ablations in one run: every query through the retrieval-only graph once per ablation.

Each ablation is a `Context` (the pipeline switches); everything else is shared: the collection,
tenant "eval", `top_n` chunks kept (>= 10 for the @10 metrics; more, so that document-level
metrics still see 10 distinct documents), `min_score` 0 and an unlimited character budget so that
nothing is cut, and `k` candidates per list (the policy's, 50 by default).

Routing: the graph infers an intent from keywords, and some intents add engine filters
(`legal` → docType legal, `social` → category social) or disable retrieval (smalltalk, ...). A
benchmark corpus carries none of that metadata, so by default every query is asked with the
policy's fallback intent (`knowledge`, no filter); `intent="auto"` measures the production routing.
"""

from __future__ import annotations

import time
from collections import defaultdict
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from graph.context import Context
from graph.evaluation.datasets import Dataset, EvalQuery
from graph.evaluation.ingest import EVAL_TENANT, ingest_dataset
from graph.evaluation.metrics import (
    aggregate,
    dedupe,
    doc_query_metrics,
    multihop_query_metrics,
    percentiles,
)
from graph.graph import compile_graph
from graph.policy import load_policy
from graph.providers.resources import collection_embeddings, get_resources

ABLATIONS: dict[str, dict[str, Any]] = {
    "bm25": {"retrieval_mode": "lexical", "decompose": False, "rerank": False, "boosts": False},
    "dense": {"retrieval_mode": "dense", "decompose": False, "rerank": False, "boosts": False},
    "hybrid": {"retrieval_mode": "hybrid", "decompose": False, "rerank": False, "boosts": False},
    "+decomposition": {"retrieval_mode": "hybrid", "decompose": True, "rerank": False, "boosts": False},
    "+rerank": {"retrieval_mode": "hybrid", "decompose": True, "rerank": True, "boosts": False},
    "full": {"retrieval_mode": "hybrid", "decompose": True, "rerank": True, "boosts": True},
    # The full pipeline without decomposition (no split, no searches scoped to what the question
    # names): what decomposition adds where it is not the last switch turned on.
    "full-decomposition": {"retrieval_mode": "hybrid", "decompose": False, "rerank": True, "boosts": True},
}

# Every metric key results.json carries per ablation; the ones a dataset cannot have are null.
MULTIHOP_METRICS = ("hits@4", "hits@10", "mrr@10", "map@10", "fact_recall@10", "all_evidence@10", "doc_recall@10")
DOC_METRICS = ("ndcg@10", "recall@1", "recall@5", "recall@10", "mrr@10")
METRIC_KEYS = ("hits@4", "hits@10", "mrr@10", "map@10", "fact_recall@10", "all_evidence@10", "doc_recall@10",
               "ndcg@10", "recall@1", "recall@5", "recall@10")
NODES = ("route_gate", "decompose", "retrieve", "rrf", "rerank", "bridge", "total")
MIN_TOP_N = 10


class EvalError(ValueError):
    """The evaluation cannot run as asked (bad ablation name, top_n below 10, ...)."""


def parse_ablations(spec: str | None) -> list[str]:
    if not spec:
        return list(ABLATIONS)
    names = [s.strip() for s in spec.split(",") if s.strip()]
    unknown = [n for n in names if n not in ABLATIONS]
    if unknown:
        raise EvalError(f"--ablations: unknown {', '.join(unknown)} (choose from {', '.join(ABLATIONS)})")
    return list(dict.fromkeys(names))


def metric_keys(dataset_name: str) -> tuple[str, ...]:
    return MULTIHOP_METRICS if dataset_name == "multihop-rag" else DOC_METRICS


def score_query(dataset_name: str, query: EvalQuery, ranked: list[dict]) -> dict[str, float]:
    """One query's metrics from the graph's `reranked` chunks (best first)."""
    if dataset_name == "multihop-rag":
        out = multihop_query_metrics([c.get("content", "") for c in ranked[:10]], query.facts, 10)
        docs = dedupe(c.get("docId", "") for c in ranked[:10])
        gold_docs = [d for d, g in query.docs.items() if g > 0]
        out["doc_recall@10"] = len(set(docs) & set(gold_docs)) / len(gold_docs) if gold_docs else 0.0
        return out
    return doc_query_metrics(dedupe(c.get("docId", "") for c in ranked), query.docs)


def _node_key(name: str) -> str:
    return "retrieve" if name.startswith("retrieve[") else name


@dataclass
class AblationRun:
    name: str
    switches: dict[str, Any]
    per_query: list[dict[str, float]] = field(default_factory=list)
    types: list[str | None] = field(default_factory=list)
    latency: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    decomposition: list[dict[str, Any]] = field(default_factory=list)
    empty: int = 0
    errors: list[str] = field(default_factory=list)
    rankings: list[list[str]] = field(default_factory=list)


def eval_context(*, home: str, **settings: Any) -> Context:
    """A Context for an evaluation run, as tenant "eval"; `settings` are further Context fields
    (None or "": the default)."""
    return Context(tenant=EVAL_TENANT, home=home, **{name: v for name, v in settings.items() if v not in (None, "")})


def base_context(*, home: str, collection: str | None, top_n: int, k: int | None, policy_path: str | None,
                 embedding_model: str | None, **settings: Any) -> Context:
    """The context every ablation starts from: nothing cut (min_score 0, no context budget). Without
    a `collection` yet (it is named by the ingest), the policy's collections until it is set."""
    return eval_context(home=home, collections=[collection] if collection else None, top_n=top_n, k=k, min_score=0.0, max_context_chars=10**9,
                        policy_path=policy_path, embedding_model=embedding_model, **settings)


def freeze_policy(ctx: Context) -> None:
    """Point `ctx` at a copy of its policy, taken now and validated (PolicyError before any ingest): a
    run reads its policy again on every question, so an edit of the file during a long evaluation would
    otherwise change the rules half-way (or, mid-edit, disable retrieval for the rest of the run)."""
    policy = load_policy(ctx.policy_path)
    folder = ctx.home_path / "policy-snapshots"
    # The language packs it names are copied beside it, where its relative names find them.
    if policy.packs:
        folder = folder / policy.digest[:16]
    folder.mkdir(parents=True, exist_ok=True)
    frozen = folder / (f"{policy.digest[:16]}.yaml" if not policy.packs else Path(policy.path).name)
    for pack in policy.packs:
        target = folder / pack.name
        if Path(pack.name).is_absolute() or ".." in Path(pack.name).parts:
            continue  # named by an absolute path (read where it is) or outside the policy's folder
        if not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            tmp = target.with_suffix(".tmp")
            tmp.write_bytes(Path(pack.path).read_bytes())
            tmp.replace(target)
    if not frozen.exists():
        tmp = frozen.with_suffix(".tmp")
        tmp.write_bytes(Path(policy.path).read_bytes())
        tmp.replace(frozen)
    if load_policy(str(frozen)).digest != policy.digest:  # the file changed between the two reads
        raise EvalError(f"the policy {ctx.policy_path} changed while the evaluation started; run it again")
    ctx.policy_path = str(frozen)


def resolve_intent(intent: str | None, policy) -> str | None:
    """The intent every query is asked with: the policy's fallback intent unless one is given;
    "auto": none, so that route_gate infers it as in production."""
    if intent is None:
        return policy.routing.fallback_intent
    return None if intent == "auto" else intent


def forget_query_vectors(ctx: Context) -> None:
    """Empty the embedder's in-memory query-vector cache, so that every ablation pays for embedding
    its questions as a production run would (otherwise the first ablation pays for all of them)."""
    res = get_resources(ctx)
    res.embeddings.clear_query_cache()
    for collection in ctx.collections or ():
        if (manifest := res.index.manifest(collection)) is not None:
            collection_embeddings(ctx, collection, manifest).clear_query_cache()


def progress_bar(total: int, label: str, shown: bool):
    """A progress bar over `total` questions, labelled `label`, or None when it is not `shown` (tqdm is
    only imported then)."""
    if not shown:
        return None
    from tqdm import tqdm

    return tqdm(total=total, desc=label, unit="q", leave=True)


def run_ablation(graph, dataset: Dataset, queries: list[EvalQuery], ctx: Context, name: str, intent: str | None,
                 progress: bool) -> AblationRun:
    run = AblationRun(name=name, switches=dict(ABLATIONS[name]))
    forget_query_vectors(ctx)
    bar = progress_bar(len(queries), f"{name:>15}", progress)
    for q in queries:
        payload: dict[str, Any] = {"question": q.text}
        if intent:
            payload["intent"] = intent
        started = time.perf_counter()
        state = graph.invoke(payload, context=ctx)
        total = (time.perf_counter() - started) * 1000
        ranked = state.get("reranked") or []
        if not ranked:
            run.empty += 1
        run.errors.extend(state.get("errors") or [])
        if not (state.get("rag") or {}).get("enabled"):
            run.errors.append(f"{q.id}: {(state.get('rag') or {}).get('error')}")
        run.per_query.append(score_query(dataset.name, q, ranked))
        run.types.append(q.type)
        run.rankings.append([c.get("id", "") for c in ranked[:10]])
        for node, ms in (state.get("timings_ms") or {}).items():
            run.latency[_node_key(node)].append(ms)
        run.latency["total"].append(round(total, 3))
        info = state.get("decomposition") or {}
        run.decomposition.append({"complex": bool(info.get("complex")), "decomposed": bool(info.get("decomposed")),
                                  "sub_queries": list(state.get("sub_queries") or [q.text])})
        if bar:
            bar.update(1)
    if bar:
        bar.close()
    return run


def _metrics(per_query: list[dict[str, float]]) -> dict[str, float | None]:
    agg = aggregate(per_query)
    return {k: (round(agg[k], 4) if k in agg else None) for k in METRIC_KEYS}


# One run in order (check the arguments, ingest or reuse, search per ablation, score): its settings are read
# in one place and reported as they were used.
def run_retrieval(dataset: Dataset, *, home: str, ablations: list[str] | None = None, limit: int | None = None,
                  top_n: int = 30, k: int | None = None, intent: str | None = None, policy_path: str | None = None,
                  embedding_model: str | None = None, rerank_model: str | None = None, chunk_tokens: int | None = None,
                  overlap_tokens: int | None = None, progress: bool = True) -> dict[str, Any]:
    """Ingest (or reuse) the corpus and run every ablation; the results (results.json's content
    under "results", plus the per-query rankings and run settings)."""
    ablations = ablations or list(ABLATIONS)
    if top_n < MIN_TOP_N:
        raise EvalError(f"--top-n must be at least {MIN_TOP_N} (the metrics look at the first 10 chunks)")
    if limit is not None and limit <= 0:
        raise EvalError("--limit must be a positive number")

    read = dataset.queries[:limit] if limit else list(dataset.queries)
    queries = [q for q in read if q.has_gold]  # null queries (no evidence) are not scored for retrieval
    if not queries:
        raise EvalError(f"no query with retrieval gold among the {len(read)} read")

    ctx = base_context(home=home, collection=None, top_n=top_n, k=k, policy_path=policy_path,
                       embedding_model=embedding_model, rerank_model=rerank_model, chunk_tokens=chunk_tokens,
                       overlap_tokens=overlap_tokens)
    policy_file = ctx.policy_path
    freeze_policy(ctx)
    ingest = ingest_dataset(dataset, ctx, progress=progress)
    ctx.collections = [ingest["collection"]]
    policy = load_policy(ctx.policy_path)
    intent = resolve_intent(intent, policy)

    graph = compile_graph(retrieval_only=True)
    # One untimed run loads what every node loads lazily (policy, analyzers, shards), so the first
    # ablation's latencies are not charged for it.
    graph.invoke({"question": queries[0].text, **({"intent": intent} if intent else {})}, context=ctx)
    runs = {name: run_ablation(graph, dataset, queries, replace(ctx, **ABLATIONS[name]), name, intent, progress)
            for name in ablations}

    types = sorted({t for t in (q.type for q in queries) if t})
    metrics = {name: _metrics(r.per_query) for name, r in runs.items()}
    for name, r in runs.items():
        metrics[name]["n"] = len(r.per_query)
        metrics[name]["empty"] = r.empty
    per_type: dict[str, dict[str, dict[str, float | None]]] = {}
    if types:
        for name, r in runs.items():
            per_type[name] = {}
            for t in types:
                rows = [m for m, qt in zip(r.per_query, r.types) if qt == t]
                per_type[name][t] = {**_metrics(rows), "n": len(rows)}
    latency = {name: {node: percentiles(r.latency[node]) for node in NODES if r.latency.get(node)}
               for name, r in runs.items()}
    decomposed: dict[str, dict[str, Any]] = {}
    source = next((r for r in runs.values() if r.switches["decompose"]), None)
    if source is not None:
        groups: dict[str, list[dict]] = defaultdict(list)
        for t, info in zip(source.types, source.decomposition):
            groups[t or "all"].append(info)
        for t in sorted(groups):
            infos = groups[t]
            split = [i for i in infos if i["decomposed"]]
            decomposed[t] = {
                "queries": len(infos), "complex": sum(i["complex"] for i in infos), "decomposed": len(split),
                "mean_sub_queries": round(sum(len(i["sub_queries"]) for i in split) / len(split), 2) if split else 0.0,
            }

    results = {
        "dataset": dataset.name,
        "n_queries": len(queries),
        "metrics": metrics,
        "latency_ms": latency,
        "per_type": per_type,
        "ingest": ingest,
        "decomposed_per_type": decomposed,
    }
    settings = {
        "files": {k: str(v) for k, v in dataset.files.items()},
        "queries_read": len(read), "queries_scored": len(queries), "excluded_without_gold": len(read) - len(queries),
        "limit": limit, "top_n": top_n, "k": k or policy.entity_route(None).profile.k, "intent": intent or "auto (inferred)",
        "min_score": 0.0, "max_context_chars": 10**9, "ablations": {n: ABLATIONS[n] for n in ablations},
        "policy": policy_file, "policy_digest": policy.digest, "embedding_model": ingest["embedding_model"],
        "rerank_model": ctx.rerank_model,
    }
    per_query = [
        {"id": q.id, "type": q.type, "query": q.text,
         **{name: {"metrics": runs[name].per_query[i], "top10": runs[name].rankings[i],
                   "sub_queries": runs[name].decomposition[i]["sub_queries"]} for name in runs}}
        for i, q in enumerate(queries)
    ]
    errors = {name: r.errors for name, r in runs.items() if r.errors}
    return {"results": results, "settings": settings, "per_query": per_query, "errors": errors,
            "warnings": dataset.warnings}
