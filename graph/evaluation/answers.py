"""Answer evaluation on MultiHop-RAG and SQuAD-format data (e.g. FaQuAD): every query through the
WHOLE graph (`compile_graph()`: route, decompose, retrieve, rrf, rerank, bridge, compose, judge,
safe_response, memory_shield), as production runs it.

The corpus is ingested (or its cached collection reused) by `ingest.ingest_dataset`, exactly as for
`ragate eval retrieval`. The graph gets a throwaway `InMemoryStore`, so memory_shield does its real
work but nothing an evaluation answers is ever remembered in a user's memory (no memory.sqlite is
opened). Routing, as in the retrieval evaluation: every query is asked with the policy's fallback
intent unless `intent` says otherwise ("auto": inferred by route_gate). Everything else — top_n,
k, min_score, the context budget — is the policy's, so the figures are those of the shipped default.
BEIR is refused: it has relevance judgments but no gold answers.

The **direct answer** is the final state's `direct_answer`: the short answer (≤ 12 words, citations
aside) the answer opens with, or None when the composer abstains. It is scored without its
`[doc_id]` markers; a missing key, None, or a text that is nothing but markers is an abstention.

MultiHop-RAG metrics (per query, then overall and per question type):

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
- **direct_accuracy**: the same upstream rule on the direct answer alone; an abstention is wrong,
  and a null query is right when it gets coverage_level "none" and no direct answer.
  **direct_given**: share of the answerable (non-null) queries given a direct answer;
  **direct_precision**: direct accuracy among those.
- **yes_no_balanced_accuracy**: mean of the recall on gold "yes" and on gold "no", the prediction
  read from the direct answer's first word (yes/sim, no/não); an abstention is wrong for both. A
  composer that always says "no" scores 0.5, not the share of "no" golds. None unless the group
  has both a gold "yes" and a gold "no".
- **null queries** (gold "Insufficient information."): the share given coverage_level "none"
  (null_to_none; also null_coverage_none); and the share of the answerable queries given "none"
  (answerable_to_none; also false_none).
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

SQuAD-format metrics (every query is answerable; its gold is a list of answer spans and its paragraph):

- **direct_em** / **direct_f1**: SQuAD v1.1's official `evaluate-v1.1.py` on the direct answer —
  exact match and token F1 after its normalisation (lowercase, ASCII punctuation removed, the
  articles a/an/the removed, whitespace collapsed), the best over the gold answers; an abstention
  scores 0.
- **first_sentence_has_gold**: the answer's first sentence (without markers) holds a normalised
  gold answer as a run of whole normalised tokens.
- **citation_precision**: share of the cited documents (each once per answer) that are the
  query's gold paragraph, micro over the queries whose paragraph is in the corpus.
- direct_given and answerable_to_none as above (over every query).

Both: **median_answer_words** (words of the whole answer without its markers: whitespace tokens
holding a letter or digit), the **verdict** distribution (OK / WARNING / BLOCK) and **latency**
p50/p95 of the whole graph (wall time of `graph.invoke`), with the per-node p50/p95 from `timings_ms`.
"""

from __future__ import annotations

import json
import re
import string
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from graph.algorithms.text import citations_in, fold, split_sentences, strip_citations, tokens_f1
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
    progress_bar,
    resolve_intent,
)
from graph.graph import compile_graph
from graph.policy import load_policy

SUPPORTED = ("multihop-rag", "squad")
DECISIONS = ("OK", "WARNING", "BLOCK")
# Node order of the per-node latency table (retrieve is per branch).
ANSWER_NODES = ("route_gate", "decompose", "retrieve", "rrf", "rerank", "bridge", "compose", "judge", "safe_response",
                "memory_shield")
# The first word of a direct answer that says yes or no (English and Portuguese), folded.
YES_NO_WORDS = {"yes": "yes", "sim": "yes", "no": "no", "não": "no"}
ACCURACY_RULES = {
    "multihop-rag": "upstream qa_evaluate.py: lowercased whitespace tokens of answer and gold intersect",
    "squad": "SQuAD v1.1 evaluate-v1.1.py: normalised exact match and token F1 of the direct answer, best gold",
}

_UPSTREAM_ANSWER = re.compile(r'The answer to the question is "(.*?)"')
_BULLET = re.compile(r"^\s*(?:[-*•]+|\d{1,3}[.)](?=\s))\s*")  # as graph/algorithms/passages.py's
_FIRST_WORD = re.compile(r"\W*(\w+)")
_HAS_WORD = re.compile(r"\w")
_PUNCTUATION = frozenset(string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b")


def gold_kind(gold: str) -> str:
    """yes / no / insufficient (the null gold) / entity: the shape of a gold answer. Per kind the
    accuracy shows what a rule rewards: e.g. any "no" in an answer matches the gold "no"."""
    g = gold.strip().rstrip(".").casefold()
    if g in ("yes", "no"):
        return g
    return "insufficient" if g == "insufficient information" else "entity"


def check_dataset(name: str) -> None:
    """MultiHop-RAG and SQuAD-format data have gold answers; BEIR has only relevance judgments."""
    if name not in SUPPORTED:
        raise EvalError(f"--dataset {name}: answers need gold answers, which only multihop-rag and squad have; "
                        f"use `ragate eval retrieval` for {name}")


def gold_answers(query: EvalQuery) -> list[str]:
    """The query's gold answers as strings: MultiHop-RAG's one, SQuAD's list; blank ones dropped."""
    golds = query.answer if isinstance(query.answer, list) else [query.answer]
    return [str(g) for g in golds if g is not None and str(g).strip()]


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


def direct_text(direct_answer: str | None) -> str:
    """The direct answer as scored: without its `[doc_id]` markers; "" for an abstention (None,
    empty, or nothing but markers)."""
    return answer_prose(direct_answer or "").strip()


def answer_words(answer: str) -> int:
    """How many words the answer has without its `[doc_id]` markers: whitespace tokens holding a
    letter or digit (a bullet's "-" is not a word, "Bankman-Fried" is one)."""
    return sum(1 for token in answer_prose(answer).split() if _HAS_WORD.search(token))


def direct_correct(direct: str, gold: str, *, null: bool, coverage: str) -> bool:
    """MultiHop-RAG's upstream rule on the direct answer alone (`direct` as `direct_text` gives it).
    An abstention is wrong; a null query is right when it gets coverage "none" and no direct answer."""
    if null:
        return coverage == "none" and not direct
    return bool(direct) and upstream_correct(direct, gold)


def yes_no(direct: str) -> str | None:
    """"yes" or "no" when the direct answer's first word says so (yes/sim, no/não, any case, quotes
    and punctuation aside); None otherwise, an abstention included."""
    m = _FIRST_WORD.match(direct)
    return YES_NO_WORDS.get(fold(m.group(1))) if m else None


def normalize_squad(text: str) -> str:
    """SQuAD v1.1's official `normalize_answer`: lowercase, remove ASCII punctuation
    (`string.punctuation`), remove the English articles a/an/the, collapse whitespace. Accented
    letters are letters and stay ("não", "à")."""
    text = "".join(ch for ch in text.lower() if ch not in _PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", text).split())


def squad_f1(prediction: str, gold: str) -> float:
    """SQuAD v1.1's token F1 of one prediction against one gold answer (normalised tokens, counted
    with multiplicity)."""
    return tokens_f1(normalize_squad(prediction).split(), normalize_squad(gold).split())


def squad_scores(direct: str, golds: list[str]) -> tuple[float, float]:
    """(exact match, F1) of the direct answer, each the best over the gold answers (SQuAD's
    `metric_max_over_ground_truths`); an abstention scores (0, 0)."""
    if not direct or not golds:
        return 0.0, 0.0
    em = max(float(normalize_squad(direct) == normalize_squad(g)) for g in golds)
    return em, max(squad_f1(direct, g) for g in golds)


def first_sentence(answer: str) -> str:
    """The answer's first sentence without its `[doc_id]` markers ("" for an empty answer)."""
    sentences = split_sentences(answer_prose(answer))
    return sentences[0] if sentences else ""


def has_gold_tokens(text: str, golds: list[str]) -> bool:
    """A gold answer, normalised as SQuAD does, occurs in the normalised text as a run of whole
    tokens ("campo grande" in "sediada em campo grande", not "cem" in "cemitério")."""
    padded = f" {normalize_squad(text)} "
    return any(g and f" {g} " in padded for g in map(normalize_squad, golds))


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


def cited_docs(answer: str, gold_docs: dict[str, int]) -> list[dict[str, Any]]:
    """The documents the answer cites, each once, with whether each is a gold document (grade > 0)."""
    return [{"docId": d, "gold": gold_docs.get(d, 0) > 0} for d in citations_in(answer)]


def _answer_fields(state: dict[str, Any]) -> dict[str, Any]:
    """What every dataset's row keeps of the final state: the direct answer (None for an
    abstention), coverage, verdict and the answer's length."""
    raw = state.get("direct_answer")
    return {"direct_answer": raw if direct_text(raw) else None,
            "coverage": state.get("coverage_level", "none"),
            "verdict": (state.get("verdict") or {}).get("final_decision"),
            "answer_words": answer_words(state.get("answer") or "")}


def score_answer(query: EvalQuery, state: dict[str, Any]) -> dict[str, Any]:
    """One MultiHop-RAG query's answer metrics from the graph's final state."""
    answer = state.get("answer") or ""
    prose = answer_prose(answer)
    gold = str(query.answer or "")
    fields = _answer_fields(state)
    return {
        "correct": upstream_correct(prose, gold),
        "gold_in_answer": gold_in_answer(prose, gold),
        **fields,
        "direct_correct": direct_correct(direct_text(fields["direct_answer"]), gold, null=query.type == NULL_TYPE,
                                         coverage=fields["coverage"]),
        "cited_chunks": citation_hits(answer, state.get("reranked") or [], query.facts),
    }


def score_squad(query: EvalQuery, state: dict[str, Any]) -> dict[str, Any]:
    """One SQuAD-format query's answer metrics from the graph's final state."""
    answer = state.get("answer") or ""
    golds = gold_answers(query)
    fields = _answer_fields(state)
    em, f1 = squad_scores(direct_text(fields["direct_answer"]), golds)
    return {
        **fields,
        "direct_em": em,
        "direct_f1": round(f1, 4),
        "first_sentence_has_gold": has_gold_tokens(first_sentence(answer), golds),
        "gold_docs": sorted(d for d, g in query.docs.items() if g > 0),
        "cited_docs": cited_docs(answer, query.docs),
    }


# --- aggregation ----------------------------------------------------------------------------------


def _share(part: float, whole: int) -> float | None:
    """part / whole to 4 decimals; None for an empty group (a share of nothing is not 0)."""
    return round(part / whole, 4) if whole else None


def yes_no_balanced_accuracy(rows: list[dict[str, Any]]) -> float | None:
    """Mean of the recall on gold "yes" and the recall on gold "no" (gold compared as `gold_kind`
    does), a row's prediction read by `yes_no` from its direct answer; None when the rows lack a
    gold "yes" or a gold "no"."""
    recalls = []
    for kind in ("yes", "no"):
        group = [r for r in rows if gold_kind(str(r["gold_answer"])) == kind]
        if not group:
            return None
        recalls.append(sum(yes_no(direct_text(r["direct_answer"])) == kind for r in group) / len(group))
    return round(sum(recalls) / len(recalls), 4)


def _common_summary(rows: list[dict[str, Any]], answerable: list[dict[str, Any]]) -> dict[str, Any]:
    """What both datasets report: direct answers given and coverage "none" among the answerable
    rows, the answers' median length, verdicts and latency."""
    verdicts = Counter(r["verdict"] for r in rows)
    return {
        "direct_given": _share(sum(r["direct_answer"] is not None for r in answerable), len(answerable)),
        "answerable_to_none": _share(sum(r["coverage"] == "none" for r in answerable), len(answerable)),
        "median_answer_words": percentiles([r["answer_words"] for r in rows], (50,)).get("p50"),
        "verdicts": {d: verdicts.get(d, 0) for d in DECISIONS},
        "latency_ms": percentiles([r["latency_ms"] for r in rows]),
    }


def summarize(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """MultiHop-RAG: accuracy, direct answers, coverage none, citation precision, verdicts and
    latency over a group of per-query rows."""
    n = len(rows)
    scored = [r for r in rows if r["type"] != NULL_TYPE]  # answerable; citation precision needs evidence facts
    null = [r for r in rows if r["type"] == NULL_TYPE]
    given = [r for r in scored if r["direct_answer"] is not None]
    cited = [c for r in scored for c in r["cited_chunks"]]
    return {
        "n": n,
        "accuracy": _share(sum(r["correct"] for r in rows), n),
        "gold_in_answer": _share(sum(r["gold_in_answer"] for r in rows), n),
        "coverage_none": _share(sum(r["coverage"] == "none" for r in rows), n),
        "direct_accuracy": _share(sum(r["direct_correct"] for r in rows), n),
        "direct_precision": _share(sum(r["direct_correct"] for r in given), len(given)),
        # The worst answer ragate can give: a wrong direct answer the judge let through as OK.
        "confidently_wrong": sum(r["verdict"] == "OK" and not r["direct_correct"] for r in given),
        "yes_no_balanced_accuracy": yes_no_balanced_accuracy(rows),
        "null_to_none": _share(sum(r["coverage"] == "none" for r in null), len(null)),
        "citation_precision": _share(sum(c["has_fact"] for c in cited), len(cited)),
        "cited_chunks": len(cited),
        "queries_citing": sum(bool(r["cited_chunks"]) for r in scored),
        **_common_summary(rows, scored),
    }


def summarize_squad(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """SQuAD format: direct EM and F1, gold in the first sentence, direct answers given, coverage
    none, citation precision (gold paragraph), verdicts and latency over per-query rows."""
    n = len(rows)
    judged = [r for r in rows if r["gold_docs"]]  # citation precision needs the gold paragraph
    cited = [c for r in judged for c in r["cited_docs"]]
    return {
        "n": n,
        "direct_em": _share(sum(r["direct_em"] for r in rows), n),
        "direct_f1": _share(sum(r["direct_f1"] for r in rows), n),
        "first_sentence_has_gold": _share(sum(r["first_sentence_has_gold"] for r in rows), n),
        # A direct answer that shares no word with any gold answer, which the judge let through as OK.
        "confidently_wrong": sum(r["verdict"] == "OK" and r["direct_answer"] is not None and r["direct_f1"] == 0
                                 for r in rows),
        "citation_precision": _share(sum(c["gold"] for c in cited), len(cited)),
        "cited_docs": len(cited),
        "queries_citing": sum(bool(r["cited_docs"]) for r in judged),
        **_common_summary(rows, rows),
    }


# --- the run --------------------------------------------------------------------------------------


# One run in order (check the arguments, ingest or reuse, answer, score, summarise): its settings are read in
# one place and reported as they were used.
def run_answers(dataset: Dataset, *, home: str, limit: int | None = None, intent: str | None = None,
                top_n: int | None = None, k: int | None = None, policy_path: str | None = None,
                embedding_model: str | None = None, rerank_model: str | None = None, chunk_tokens: int | None = None,
                overlap_tokens: int | None = None, progress: bool = True) -> dict[str, Any]:
    """Ingest (or reuse) the corpus and answer every query with the whole graph; the results
    (answers.json's content under "results"), the per-query rows and the run's settings."""
    from langgraph.store.memory import InMemoryStore

    check_dataset(dataset.name)
    squad = dataset.name == "squad"
    score, summary = (score_squad, summarize_squad) if squad else (score_answer, summarize)
    if limit is not None and limit <= 0:
        raise EvalError("--limit must be a positive number")
    read = dataset.queries[:limit] if limit else list(dataset.queries)
    queries = [q for q in read if gold_answers(q)]  # upstream skips queries without a gold answer
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

    bar = progress_bar(len(queries), "answers", progress)
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
                     **score(q, state), "citations": citations_in(answer), "latency_ms": total,
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
    results: dict[str, Any] = {
        "dataset": dataset.name,
        "n_queries": len(rows),
        "metrics": summary(rows),
        "per_type": {t: summary([r for r in rows if r["type"] == t]) for t in types},
    }
    if not squad:  # gold kinds and null queries are MultiHop-RAG's
        results |= {
            "per_gold_kind": {kind: summarize(group) for kind in ("entity", "yes", "no", "insufficient")
                              if (group := [r for r in rows if gold_kind(str(r["gold_answer"])) == kind])},
            "null_queries": {"n": len(null_rows),
                             "coverage_none": sum(r["coverage"] == "none" for r in null_rows),
                             "null_coverage_none": _share(sum(r["coverage"] == "none" for r in null_rows),
                                                          len(null_rows))},
            "non_null_queries": {"n": len(other_rows),
                                 "coverage_none": sum(r["coverage"] == "none" for r in other_rows),
                                 "false_none": _share(sum(r["coverage"] == "none" for r in other_rows),
                                                      len(other_rows))},
        }
    results |= {"latency_ms": latency, "ingest": ingest}
    settings = {
        "files": {key: str(v) for key, v in dataset.files.items()},
        "queries_read": len(read), "queries_answered": len(rows), "limit": limit,
        "intent": intent or "auto (inferred)", "top_n": top_n or "policy", "k": k or "policy",
        "policy": policy_file, "embedding_model": ingest["embedding_model"], "rerank_model": ctx.rerank_model, "memory_store": "InMemoryStore (throwaway)",
        "accuracy_rule": ACCURACY_RULES[dataset.name],
    }
    return {"results": results, "settings": settings, "per_query": rows, "errors": errors,
            "warnings": dataset.warnings}


# --- output ---------------------------------------------------------------------------------------


def _verdict_cells(m: dict[str, Any]) -> list[str]:
    return [_fmt(_share(m["verdicts"][d], m["n"])) for d in DECISIONS]


def _latency_cells(m: dict[str, Any]) -> list[str]:
    return [_fmt(m["latency_ms"].get("p50"), 1), _fmt(m["latency_ms"].get("p95"), 1)]


def _multihop_tables(res: dict[str, Any]) -> list[str]:
    groups = [("all", res["metrics"]), *res["per_type"].items()]
    parts = ["- accuracy: upstream qa_evaluate.py rule (a shared lowercased whitespace token); gold in answer: "
             "the whole gold phrase appears (case-insensitive); both without the [doc_id] markers",
             "", "### Metrics, overall and per question type", ""]
    header = ["type", "n", "accuracy", "gold in answer", "citation precision", "cited chunks", "coverage none",
              "OK", "WARNING", "BLOCK", "p50 ms", "p95 ms"]
    parts.append(_table(header, [[name, str(m["n"]), _fmt(m["accuracy"]), _fmt(m["gold_in_answer"]),
                                  _fmt(m["citation_precision"]), str(m["cited_chunks"]), _fmt(m["coverage_none"]),
                                  *_verdict_cells(m), *_latency_cells(m)] for name, m in groups]))
    parts += ["", "### Direct answers, overall and per question type", ""]
    header = ["type", "n", "direct accuracy", "direct given", "direct precision", "confidently wrong",
              "yes/no balanced accuracy", "null → none", "answerable → none", "median answer words"]
    parts.append(_table(header, [[name, str(m["n"]), _fmt(m["direct_accuracy"]), _fmt(m["direct_given"]),
                                  _fmt(m["direct_precision"]), str(m["confidently_wrong"]),
                                  _fmt(m["yes_no_balanced_accuracy"]),
                                  _fmt(m["null_to_none"]), _fmt(m["answerable_to_none"]),
                                  _fmt(m["median_answer_words"], 1)] for name, m in groups]))
    parts += ["", "### Accuracy per kind of gold answer", ""]
    parts.append(_table(["gold answer", "n", "accuracy", "gold in answer", "direct accuracy", "coverage none"],
                        [[kind, str(m["n"]), _fmt(m["accuracy"]), _fmt(m["gold_in_answer"]),
                          _fmt(m["direct_accuracy"]), _fmt(m["coverage_none"])]
                         for kind, m in res["per_gold_kind"].items()]))
    null, other = res["null_queries"], res["non_null_queries"]
    parts += ["",
              (f"- null queries given coverage none: {null['coverage_none']} of {null['n']} "
               f"({_fmt(null['null_coverage_none'])})"),
              (f"- non-null queries wrongly given coverage none: {other['coverage_none']} of {other['n']} "
               f"({_fmt(other['false_none'])})"),
              ("- direct accuracy: the upstream rule on the direct answer alone (an abstention is wrong; a null "
               "query is right with coverage none and no direct answer); direct given / precision: answerable "
               "queries given a direct answer / right among those; confidently wrong: wrong direct answers the judge "
               "passed as OK; yes/no balanced accuracy: mean recall on gold "
               "yes and gold no, read from the direct answer's first word"),
              ("- citation precision: share of the cited chunks that contain a gold evidence fact (whitespace "
               "removed), non-null queries")]
    return parts


def _squad_tables(res: dict[str, Any]) -> list[str]:
    parts = ["- direct EM / F1: SQuAD v1.1's evaluate-v1.1.py on the direct answer (lowercase, no punctuation, no "
             "a/an/the; best gold; an abstention scores 0); first sentence has gold: a normalised gold answer in "
             "the answer's first sentence; confidently wrong: a direct answer sharing no word with any gold that the "
             "judge passed as OK; all without the [doc_id] markers",
             "", "### Metrics", ""]
    header = ["", "n", "direct EM", "direct F1", "first sentence has gold", "direct given", "confidently wrong",
              "answerable → none",
              "citation precision", "cited docs", "median answer words", "OK", "WARNING", "BLOCK", "p50 ms", "p95 ms"]
    parts.append(_table(header, [[name, str(m["n"]), _fmt(m["direct_em"]), _fmt(m["direct_f1"]),
                                  _fmt(m["first_sentence_has_gold"]), _fmt(m["direct_given"]),
                                  str(m["confidently_wrong"]), _fmt(m["answerable_to_none"]), _fmt(m["citation_precision"]), str(m["cited_docs"]),
                                  _fmt(m["median_answer_words"], 1), *_verdict_cells(m), *_latency_cells(m)]
                                 for name, m in [("all", res["metrics"]), *res["per_type"].items()]]))
    parts += ["", "- citation precision: share of the cited documents that are the question's gold paragraph"]
    return parts


def markdown(out: dict[str, Any]) -> str:
    res, settings = out["results"], out["settings"]
    parts = [f"## Answer evaluation: {res['dataset']} (whole graph)", ""]
    parts.append(f"- queries: {res['n_queries']} answered of the {settings['queries_read']} read"
                 + (f"; --limit {settings['limit']}" if settings["limit"] else ""))
    parts += ingest_lines(res["ingest"])
    parts.append(f"- settings: intent {settings['intent']}, top_n {settings['top_n']}, k {settings['k']}, "
                 f"embeddings {settings['embedding_model']}, memory in a throwaway store")
    parts += _squad_tables(res) if res["dataset"] == "squad" else _multihop_tables(res)
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
