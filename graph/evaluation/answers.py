"""Answer evaluation on MultiHop-RAG: every query through the WHOLE graph (`compile_graph()`: route,
decompose, retrieve, rrf, rerank, compose, judge, safe_response, memory_shield), as production runs it.

The corpus is ingested (or its cached collection reused) by `ingest.ingest_dataset`, exactly as for
`ragate eval retrieval`. The graph gets a throwaway `InMemoryStore`, so memory_shield does its real
work but nothing an evaluation answers is ever remembered in a user's memory (no memory.sqlite is
opened). Routing, as in the retrieval evaluation: every query is asked with the policy's fallback
intent unless `intent` says otherwise ("auto": inferred by route_gate). Everything else — top_n,
k, min_score, the context budget — is the policy's, so the figures are those of the shipped default.

Metrics (per query, then overall and per question type):

- **accuracy**: the rule of MultiHop-RAG's evaluation code, upstream `qa_evaluate.py`
  (github.com/yixuantt/MultiHop-RAG; its `has_intersection` / `extract_answer` /
  `calculate_metrics`, the same rule at commits 5fc39838 and 33d3ad09 of that file): when the generated answer holds
  `The answer to the question is "..."` only the quoted part is compared; prediction and gold are
  lowercased and split on whitespace, and the answer is correct when the two sets of tokens share
  at least one token. Upstream's precision, recall, F1 and accuracy are all this one share. Note
  that this is NOT "the gold string appears in the answer": one shared token suffices ("the",
  "no", "Sam" of "Sam Bankman-Fried"), and tokens keep their punctuation ("information." of the
  null gold "Insufficient information." does not match "information").
- **gold_in_answer**: the stricter reading — the whole gold answer appears in the answer,
  case-insensitively, as a phrase bounded by non-word characters (whitespace runs compared as
  one space), so the gold "no" does not match "not" or "know".
  Both are computed on the answer without its `[doc_id]` markers: the ids are slugs of article
  urls and would otherwise "contain" gold entity names ("[google-antitrust-…]").
- **null queries** (gold "Insufficient information."): the share given coverage_level "none"
  (null_coverage_none); and the share of the other queries wrongly given "none" (false_none).
- **citation_precision**: share of the cited chunks that contain a gold evidence fact (the rule
  of `metrics.facts_in_chunks`: whitespace removed, MultiHop-RAG's retrieval rule), micro over
  the non-null queries. The answer cites documents (`[doc_id]`, see nodes/compose.py); a citation
  is mapped to the chunk of `state["reranked"]` the claim was taken from — the chunk of that
  document whose text contains the claim (the answer line without its citation, bullet and final
  punctuation, whitespace removed) — and, when no chunk contains it (a conflict note, a
  paraphrasing composer), to every chunk of that document in `reranked`. An id that was not
  retrieved counts as one cited chunk without a fact. Citations are those of the final answer:
  a BLOCKed answer is replaced by safe_response, which cites nothing.
- accuracy and gold_in_answer per kind of gold answer (entity, yes, no, insufficient): an extractive composer never
  says "yes", and any "no" in its answer (e.g. "I found no sufficient information") matches the
  gold "no" under both rules, so the overall accuracy must be read with this split.
- **verdict** distribution (OK / WARNING / BLOCK) and **latency** p50/p95 of the whole graph
  (wall time of `graph.invoke`), with the per-node p50/p95 from `timings_ms`.
"""

from __future__ import annotations

import json
import re
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from graph.algorithms.text import citations_in, strip_citations
from graph.evaluation.datasets import NULL_TYPE, Dataset, EvalQuery
from graph.evaluation.ingest import ingest_dataset
from graph.evaluation.metrics import facts_in_chunks, percentiles, strip_ws
from graph.evaluation.report import _fmt, _table, ingest_lines, write_jsonl
from graph.evaluation.runner import (
    EvalError,
    _node_key,
    eval_context,
    forget_query_vectors,
    freeze_policy,
    resolve_intent,
)
from graph.graph import compile_graph
from graph.policy import load_policy

SUPPORTED = ("multihop-rag",)
DECISIONS = ("OK", "WARNING", "BLOCK")
# Node order of the per-node latency table (retrieve is per branch).
ANSWER_NODES = ("route_gate", "decompose", "retrieve", "rrf", "rerank", "compose", "judge", "safe_response",
                "memory_shield")

_UPSTREAM_ANSWER = re.compile(r'The answer to the question is "(.*?)"')
_BULLET = re.compile(r"^\s*(?:[-*•]+|\d+[.)])\s*")


def gold_kind(gold: str) -> str:
    """yes / no / insufficient (the null gold) / entity: the shape of a gold answer. Per kind the
    accuracy shows what a rule rewards: e.g. any "no" in an answer matches the gold "no"."""
    g = gold.strip().rstrip(".").casefold()
    if g in ("yes", "no"):
        return g
    return "insufficient" if g == "insufficient information" else "entity"


def check_dataset(name: str) -> None:
    """Only MultiHop-RAG has both gold answers and gold evidence facts."""
    if name not in SUPPORTED:
        raise EvalError(f"--dataset {name}: only multihop-rag is supported for answers (the one dataset with gold "
                        f"answers, evidence facts and null queries); use `ragate eval retrieval` for beir and squad")


# --- per-query metrics (pure functions) ---------------------------------------------------------


def extract_answer(text: str) -> str:
    """Upstream `extract_answer`: the quoted part of 'The answer to the question is "..."', else all."""
    m = _UPSTREAM_ANSWER.search(text)
    return m.group(1) if m else text


def upstream_correct(prediction: str, gold: str) -> bool:
    """Upstream `has_intersection(pred.lower(), gold.lower())`: the whitespace tokens intersect."""
    return bool(set(extract_answer(prediction).lower().split()) & set(gold.lower().split()))


def gold_in_answer(prediction: str, gold: str) -> bool:
    """The whole gold answer appears in the prediction as a phrase (case-insensitive, word-bounded)."""
    words = gold.split()
    if not words:
        return False
    pattern = r"(?<!\w)" + r"\s+".join(re.escape(w) for w in words) + r"(?!\w)"
    return re.search(pattern, prediction, flags=re.IGNORECASE) is not None


def answer_prose(answer: str) -> str:
    """The answer as scored: each line without its `[doc_id]` markers."""
    return "\n".join(strip_citations(line) for line in answer.splitlines())


def cited_chunks(answer: str, chunks: list[dict]) -> list[tuple[str, dict | None]]:
    """(doc_id, chunk) for every chunk the answer cites, each once; chunk is None for an id that was
    not retrieved. See the module docstring for how a `[doc_id]` maps to chunks."""
    by_doc: dict[str, list[dict]] = defaultdict(list)
    for c in chunks:
        by_doc[c.get("docId", "")].append(c)
    out: list[tuple[str, dict | None]] = []
    seen: set[str] = set()
    for line in answer.splitlines():
        ids = citations_in(line)
        if not ids:
            continue
        claim = strip_ws(_BULLET.sub("", strip_citations(line)).rstrip(".!?"))
        for doc_id in ids:
            members = by_doc.get(doc_id, [])
            if not members:
                key = f"unretrieved:{doc_id}"
                if key not in seen:
                    seen.add(key)
                    out.append((doc_id, None))
                continue
            source = [c for c in members if claim and claim in strip_ws(c.get("content", ""))] or members
            for c in source:
                if c["id"] not in seen:
                    seen.add(c["id"])
                    out.append((doc_id, c))
    return out


def citation_hits(answer: str, chunks: list[dict], facts: list[str]) -> list[dict[str, Any]]:
    """The cited chunks with whether each holds a gold evidence fact."""
    cited = cited_chunks(answer, chunks)
    found = facts_in_chunks([c.get("content", "") if c else "" for _, c in cited], facts)
    return [{"docId": doc_id, "chunk": c["id"] if c else None, "has_fact": bool(f)}
            for (doc_id, c), f in zip(cited, found)]


def score_answer(query: EvalQuery, state: dict[str, Any]) -> dict[str, Any]:
    """One query's answer metrics from the graph's final state."""
    answer = state.get("answer") or ""
    prose = answer_prose(answer)
    gold = str(query.answer or "")
    cited = citation_hits(answer, state.get("reranked") or [], query.facts)
    return {
        "correct": upstream_correct(prose, gold),
        "gold_in_answer": gold_in_answer(prose, gold),
        "coverage": state.get("coverage_level", "none"),
        "verdict": (state.get("verdict") or {}).get("final_decision"),
        "cited_chunks": cited,
    }


# --- aggregation ----------------------------------------------------------------------------------


def _share(part: int, whole: int) -> float | None:
    return round(part / whole, 4) if whole else None


def summarize(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Accuracy, coverage none, citation precision, verdicts and latency over a group of per-query rows."""
    n = len(rows)
    scored = [r for r in rows if r["type"] != NULL_TYPE]  # citation precision needs evidence facts
    cited = [c for r in scored for c in r["cited_chunks"]]
    verdicts = Counter(r["verdict"] for r in rows)
    return {
        "n": n,
        "accuracy": _share(sum(r["correct"] for r in rows), n),
        "gold_in_answer": _share(sum(r["gold_in_answer"] for r in rows), n),
        "coverage_none": _share(sum(r["coverage"] == "none" for r in rows), n),
        "citation_precision": _share(sum(c["has_fact"] for c in cited), len(cited)),
        "cited_chunks": len(cited),
        "queries_citing": sum(bool(r["cited_chunks"]) for r in scored),
        "verdicts": {d: verdicts.get(d, 0) for d in DECISIONS},
        "latency_ms": percentiles([r["latency_ms"] for r in rows]),
    }


# --- the run --------------------------------------------------------------------------------------


def run_answers(dataset: Dataset, *, home: str, limit: int | None = None, intent: str | None = None,
                top_n: int | None = None, k: int | None = None, policy_path: str | None = None,
                embedding_model: str | None = None, rerank_model: str | None = None, chunk_tokens: int | None = None,
                overlap_tokens: int | None = None, progress: bool = True) -> dict[str, Any]:
    """Ingest (or reuse) the corpus and answer every query with the whole graph; the results
    (answers.json's content under "results"), the per-query rows and the run's settings."""
    from langgraph.store.memory import InMemoryStore


    check_dataset(dataset.name)
    if limit is not None and limit <= 0:
        raise EvalError("--limit must be a positive number")
    read = dataset.queries[:limit] if limit else list(dataset.queries)
    queries = [q for q in read if str(q.answer or "").strip()]  # upstream skips queries without a gold answer
    if not queries:
        raise EvalError(f"no query with a gold answer among the {len(read)} read")

    ctx = eval_context(home=home, top_n=top_n, k=k, policy_path=policy_path, embedding_model=embedding_model,
                       rerank_model=rerank_model, chunk_tokens=chunk_tokens, overlap_tokens=overlap_tokens)
    policy_file = ctx.policy_path
    freeze_policy(ctx)  # as in run_retrieval
    ingest = ingest_dataset(dataset, ctx, progress=progress)
    ctx.collections = [ingest["collection"]]
    intent = resolve_intent(intent, load_policy(ctx.policy_path))  # as in run_retrieval
    extra = {"intent": intent} if intent else {}

    store = InMemoryStore()  # throwaway: memory_shield writes here, never to a user's memory.sqlite
    graph = compile_graph(store=store)
    # One untimed run loads what the nodes load lazily (policy, analyzers, shards, the model).
    graph.invoke({"question": queries[0].text, "correlation_id": "eval-warmup", **extra}, context=ctx)
    forget_query_vectors(ctx)

    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=len(queries), desc="answers", unit="q")
    rows: list[dict[str, Any]] = []
    node_ms: dict[str, list[float]] = defaultdict(list)
    errors: list[str] = []
    for i, q in enumerate(queries):
        started = time.perf_counter()
        state = graph.invoke({"question": q.text, "correlation_id": f"eval-{i}-{q.id}", **extra}, context=ctx)
        total = round((time.perf_counter() - started) * 1000, 3)
        for node, ms in (state.get("timings_ms") or {}).items():
            node_ms[_node_key(node)].append(ms)
        errors.extend(f"{q.id}: {e}" for e in state.get("errors") or [])
        if not (state.get("rag") or {}).get("enabled"):
            errors.append(f"{q.id}: retrieval disabled: {(state.get('rag') or {}).get('error')}")
        answer = state.get("answer") or ""
        rows.append({"id": q.id, "type": q.type, "question": q.text, "gold_answer": q.answer, "answer": answer,
                     **score_answer(q, state), "citations": citations_in(answer), "latency_ms": total,
                     "scores": (state.get("verdict") or {}).get("scores", {})})
        if bar:
            bar.update(1)
    if bar:
        bar.close()

    types = sorted({r["type"] for r in rows if r["type"]})
    null_rows = [r for r in rows if r["type"] == NULL_TYPE]
    other_rows = [r for r in rows if r["type"] != NULL_TYPE]
    latency = {node: percentiles(node_ms[node]) for node in ANSWER_NODES if node_ms.get(node)}
    latency["total"] = percentiles([r["latency_ms"] for r in rows])
    results = {
        "dataset": dataset.name,
        "n_queries": len(rows),
        "metrics": summarize(rows),
        "per_type": {t: summarize([r for r in rows if r["type"] == t]) for t in types},
        "per_gold_kind": {kind: summarize(group) for kind in ("entity", "yes", "no", "insufficient")
                          if (group := [r for r in rows if gold_kind(str(r["gold_answer"])) == kind])},
        "null_queries": {"n": len(null_rows),
                         "coverage_none": sum(r["coverage"] == "none" for r in null_rows),
                         "null_coverage_none": _share(sum(r["coverage"] == "none" for r in null_rows), len(null_rows))},
        "non_null_queries": {"n": len(other_rows),
                             "coverage_none": sum(r["coverage"] == "none" for r in other_rows),
                             "false_none": _share(sum(r["coverage"] == "none" for r in other_rows), len(other_rows))},
        "latency_ms": latency,
        "ingest": ingest,
    }
    settings = {
        "files": {key: str(v) for key, v in dataset.files.items()},
        "queries_read": len(read), "queries_answered": len(rows), "limit": limit,
        "intent": intent or "auto (inferred)", "top_n": top_n or "policy", "k": k or "policy",
        "policy": policy_file, "embedding_model": ingest["embedding_model"], "rerank_model": ctx.rerank_model, "memory_store": "InMemoryStore (throwaway)",
        "accuracy_rule": "upstream qa_evaluate.py: lowercased whitespace tokens of answer and gold intersect",
    }
    return {"results": results, "settings": settings, "per_query": rows, "errors": errors,
            "warnings": dataset.warnings}


# --- output ---------------------------------------------------------------------------------------


def _verdict_cells(m: dict[str, Any]) -> list[str]:
    return [_fmt(_share(m["verdicts"][d], m["n"])) for d in DECISIONS]


def markdown(out: dict[str, Any]) -> str:
    res, settings = out["results"], out["settings"]
    parts = [f"## Answer evaluation: {res['dataset']} (whole graph)", ""]
    parts.append(f"- queries: {res['n_queries']} answered of the {settings['queries_read']} read"
                 + (f"; --limit {settings['limit']}" if settings["limit"] else ""))
    parts += ingest_lines(res["ingest"])
    parts.append(f"- settings: intent {settings['intent']}, top_n {settings['top_n']}, k {settings['k']}, "
                 f"embeddings {settings['embedding_model']}, memory in a throwaway store")
    parts.append("- accuracy: upstream qa_evaluate.py rule (a shared lowercased whitespace token); gold in answer: "
                 "the whole gold phrase appears (case-insensitive); both without the [doc_id] markers")
    parts += ["", "### Metrics, overall and per question type", ""]
    header = ["type", "n", "accuracy", "gold in answer", "citation precision", "cited chunks", "coverage none",
              "OK", "WARNING", "BLOCK", "p50 ms", "p95 ms"]
    rows = []
    for name, m in [("all", res["metrics"]), *res["per_type"].items()]:
        lat = m["latency_ms"]
        rows.append([name, str(m["n"]), _fmt(m["accuracy"]), _fmt(m["gold_in_answer"]), _fmt(m["citation_precision"]),
                     str(m["cited_chunks"]), _fmt(m["coverage_none"]), *_verdict_cells(m),
                     _fmt(lat.get("p50"), 1), _fmt(lat.get("p95"), 1)])
    parts.append(_table(header, rows))
    parts += ["", "### Accuracy per kind of gold answer", ""]
    parts.append(_table(["gold answer", "n", "accuracy", "gold in answer", "coverage none"],
                        [[kind, str(m["n"]), _fmt(m["accuracy"]), _fmt(m["gold_in_answer"]), _fmt(m["coverage_none"])]
                         for kind, m in res["per_gold_kind"].items()]))
    null, other = res["null_queries"], res["non_null_queries"]
    parts += ["",
              (f"- null queries given coverage none: {null['coverage_none']} of {null['n']} "
               f"({_fmt(null['null_coverage_none'])})"),
              (f"- non-null queries wrongly given coverage none: {other['coverage_none']} of {other['n']} "
               f"({_fmt(other['false_none'])})"),
              ("- citation precision: share of the cited chunks that contain a gold evidence fact (whitespace "
               "removed), non-null queries")]
    parts += ["", "### Latency per node (ms, p50 / p95; retrieve is per branch)", ""]
    lat = res["latency_ms"]
    nodes = [n for n in (*ANSWER_NODES, "total") if n in lat]
    parts.append(_table(["", *nodes], [["whole graph"] + [f"{lat[n]['p50']:.1f} / {lat[n]['p95']:.1f}" for n in nodes]]))
    if out.get("errors"):
        parts += ["", f"### Degradations: {len(out['errors'])} (first: {out['errors'][0]})"]
    return "\n".join(parts) + "\n"


def write_outputs(out: dict[str, Any], out_dir: Path) -> tuple[list[Path], str | None]:
    """answers.json (results and settings) and answers_per_query.jsonl (question, gold answer,
    generated answer, coverage, citations, verdict, ... per query); (files, note) as
    `report.write_outputs`. The per-query file has its own name so that the retrieval evaluation's
    per_query.jsonl in the same folder is kept."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / "answers.json"
    path.write_text(json.dumps({**out["results"], "settings": out["settings"], "errors": out["errors"][:50],
                                "warnings": out["warnings"][:50]}, ensure_ascii=False, indent=2) + "\n",
                    encoding="utf-8")
    return [path, write_jsonl(out_dir / "answers_per_query.jsonl", out["per_query"])], None
