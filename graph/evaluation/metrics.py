"""Retrieval metrics, as pure functions of a ranking and its gold.

MultiHop-RAG (chunk level, the official rule of upstream `retrieval_evaluate.py`): a retrieved chunk
is a *hit* when it contains a gold evidence fact, both compared with all whitespace removed.
Upstream removes only spaces and newlines; we remove every whitespace character (tabs, no-break
spaces, ...) because the chunker re-joins words with plain spaces, so a fact holding a no-break space
would otherwise never match. On this corpus the two rules agree on every fact.

- Hits@k: the query has a hit among the first k chunks.
- MRR@10: 1 / rank of the first hit within the first 10 (0 if none).
- MAP@10, upstream's definition (not textbook AP): walking the first 10 chunks, a chunk that holds
  gold facts not found higher up adds (number of those newly found facts) / rank; the sum is divided
  by min(number of gold facts, 10). A chunk that only repeats facts already found adds nothing, and
  a fact that spans two chunks is never found. (Textbook AP would add precision@rank — hits so far /
  rank — at each relevant rank and divide by the number of relevant items.)
- fact recall@10: share of all gold facts, over all queries, found in the first 10 chunks (micro).
- all-evidence@10: share of queries whose every gold fact is found in the first 10 chunks.

BEIR and SQuAD (document level): chunks are first deduplicated to documents in rank order.
- nDCG@10: gain = the qrel grade (linear, as trec_eval / pytrec_eval, which BEIR uses), discount
  1 / log2(rank + 1), ideal DCG from the query's qrels sorted by grade; grades <= 0 count as 0.
- Recall@k: share of the query's relevant documents (grade > 0) among the first k documents.
- MRR@10: 1 / rank of the first relevant document within the first 10.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence

import numpy as np

_WS = re.compile(r"\s+")


def strip_ws(text: str) -> str:
    return _WS.sub("", text)


# --- MultiHop-RAG (chunk level) -----------------------------------------------------------------


def facts_in_chunks(chunks: Sequence[str], facts: Sequence[str]) -> list[set[int]]:
    """For each chunk, the indexes of the gold facts it contains (whitespace-insensitive)."""
    gold = [strip_ws(f) for f in facts]
    out = []
    for chunk in chunks:
        text = strip_ws(chunk)
        out.append({i for i, g in enumerate(gold) if g and g in text})
    return out


def multihop_query_metrics(chunks: Sequence[str], facts: Sequence[str], k: int = 10) -> dict[str, float]:
    """One query's MultiHop-RAG metrics from its ranked chunk texts (best first) and gold facts."""
    top = list(chunks)[:k]
    per_chunk = facts_in_chunks(top, facts)
    gold = [strip_ws(f) for f in facts]
    first_hit = next((rank for rank, found in enumerate(per_chunk, start=1) if found), None)
    found_strings: list[str] = []
    ap_sum = 0.0
    for rank, found in enumerate(per_chunk, start=1):
        if not found:
            continue
        # Upstream counts gold items by string, in gold-list order: a repeated fact counts once.
        new = 0
        for i in sorted(found):
            if gold[i] not in found_strings:
                found_strings.append(gold[i])
                new += 1
        ap_sum += new / rank
    found_any = set().union(*per_chunk) if per_chunk else set()
    n_facts = len(facts)
    return {
        "hits@4": float(any(per_chunk[:4])),
        "hits@10": float(first_hit is not None),
        "mrr@10": 1.0 / first_hit if first_hit else 0.0,
        "map@10": ap_sum / min(n_facts, 10) if n_facts else 0.0,
        "facts_found@10": float(len(found_any)),
        "n_facts": float(n_facts),
        "all_evidence@10": float(n_facts > 0 and len(found_any) == n_facts),
    }


# --- document level (BEIR, SQuAD) -------------------------------------------------------------


def dedupe(doc_ids: Iterable[str]) -> list[str]:
    """Document ids in order of their first appearance (a document ranks where its best chunk does)."""
    return list(dict.fromkeys(doc_ids))


def dcg(gains: Sequence[float]) -> float:
    return sum(g / math.log2(rank + 1) for rank, g in enumerate(gains, start=1))


def ndcg_at_k(ranked_docs: Sequence[str], qrels: Mapping[str, float], k: int = 10) -> float:
    ideal = dcg(sorted((max(0.0, float(g)) for g in qrels.values()), reverse=True)[:k])
    if ideal <= 0:
        return 0.0
    gains = [max(0.0, float(qrels.get(d, 0))) for d in list(ranked_docs)[:k]]
    return dcg(gains) / ideal


def recall_at_k(ranked_docs: Sequence[str], relevant: Iterable[str], k: int) -> float:
    rel = set(relevant)
    if not rel:
        return 0.0
    return len(rel & set(list(ranked_docs)[:k])) / len(rel)


def mrr_at_k(ranked_docs: Sequence[str], relevant: Iterable[str], k: int = 10) -> float:
    rel = set(relevant)
    for rank, d in enumerate(list(ranked_docs)[:k], start=1):
        if d in rel:
            return 1.0 / rank
    return 0.0


def doc_query_metrics(ranked_docs: Sequence[str], qrels: Mapping[str, float],
                      ks: Sequence[int] = (1, 5, 10)) -> dict[str, float]:
    """One query's document-level metrics; `ranked_docs` must already be deduplicated."""
    relevant = [d for d, g in qrels.items() if g > 0]
    out = {"ndcg@10": ndcg_at_k(ranked_docs, qrels, 10), "mrr@10": mrr_at_k(ranked_docs, relevant, 10)}
    for k in ks:
        out[f"recall@{k}"] = recall_at_k(ranked_docs, relevant, k)
    return out


# --- aggregation ------------------------------------------------------------------------------


def aggregate(per_query: Sequence[Mapping[str, float]]) -> dict[str, float]:
    """Mean of every per-query metric; `facts_found@10` / `n_facts` become the micro fact recall."""
    if not per_query:
        return {}
    keys = [k for k in per_query[0] if k not in ("facts_found@10", "n_facts")]
    out = {k: float(np.mean([q[k] for q in per_query])) for k in keys}
    if "n_facts" in per_query[0]:
        total = sum(q["n_facts"] for q in per_query)
        out["fact_recall@10"] = sum(q["facts_found@10"] for q in per_query) / total if total else 0.0
    return out


def percentiles(values: Sequence[float], qs: Sequence[int] = (50, 95)) -> dict[str, float]:
    """Latency percentiles (linear interpolation, as numpy's default)."""
    if not values:
        return {}
    arr = np.asarray(values, dtype=float)
    out = {f"p{q}": round(float(np.percentile(arr, q)), 3) for q in qs}
    out["n"] = len(values)
    return out
