"""`ragate eval groundedness`: the judge's deterministic checks on labelled answers.

Input, one JSON object per line:
    {"id": "...", "question": "..."?, "context": [{"doc_id": "...", "text": "..."}], "answer": "...",
     "label": 1 | 0 | true | false?, "relevant": 1 | 0 | true | false?, "language": "en" | "pt"?, "perturbation": "..."?}
label 1 = faithful, 0 = not; relevant 1 = the answer addresses the question, 0 = it does not
(bench/make_relevance_set.py). Every line is judged by `judge_answer` (graph/algorithms/judging.py),
the function the graph's judge node runs, with the question and the context as the retrieved chunks.
An answer file says nothing of retrieval coverage, which the utility score depends on: every line is
judged as coverage "medium".

An unfaithful answer counts as caught when the judge BLOCKs it (what keeps it from a user and from
memory); the positive class of precision / recall / F1 is "unfaithful". Also reported: the share of
unfaithful answers whose groundedness is below 0.3, faithful answers passed (not BLOCK), the same
per perturbation and per language, and the check time per line (p50 / p95, and p50 for 5-chunk
answers). Where lines carry `relevant`: irrelevant answers flagged (WARNING or BLOCK: not passed as
OK) and relevant answers passed as OK, overall and per language.
"""

from __future__ import annotations

import json
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from graph.algorithms.groundedness import Source
from graph.algorithms.judging import judge_answer
from graph.algorithms.text import detect_language, json_lines
from graph.evaluation.metrics import percentiles
from graph.evaluation.report import _fmt, _table, write_jsonl
from graph.policy import Policy
from graph.providers.relevance import judge_scorer

INVENTED_BELOW = 0.3  # the bar: an invented value scores groundedness < 0.3
COVERAGE = "medium"


class GroundednessInputError(ValueError):
    """A line of the input file is not a valid item (the message names the line and the field)."""


def load_items(path: Path, *, max_errors: int = 10) -> list[dict[str, Any]]:
    """Every item of the file, validated. The whole file is refused when any line is bad, with up
    to `max_errors` problems listed, so a run never reports figures over half a file."""
    if not path.is_file():
        raise GroundednessInputError(f"{path}: no such file")
    items: list[dict[str, Any]] = []
    problems: list[str] = []
    seen: set[str] = set()
    with open(path, encoding="utf-8", errors="strict") as fh:
        try:
            lines = fh.read().splitlines()
        except UnicodeDecodeError as exc:
            raise GroundednessInputError(f"{path}: not UTF-8 text ({exc})") from None
    for number, item, exc in json_lines(lines):
        if exc is not None:
            problems.append(f"line {number}: not JSON ({exc.msg})")
            continue
        problem = _item_problem(item)
        if problem is None and str(item["id"]) in seen:
            problem = f"duplicate id {item['id']!r}"
        if problem:
            problems.append(f"line {number}: {problem}")
            continue
        seen.add(str(item["id"]))
        items.append(item)
    if problems:
        shown = problems[:max_errors]
        more = f" (and {len(problems) - max_errors} more)" if len(problems) > max_errors else ""
        raise GroundednessInputError(f"{path}: {len(problems)} bad line(s){more}, nothing judged:\n  " + "\n  ".join(shown))
    if not items:
        raise GroundednessInputError(f"{path}: no items")
    return items


def _item_problem(item: Any) -> str | None:
    if not isinstance(item, dict):
        return "must be a JSON object"
    if not isinstance(item.get("id"), (str, int)) or str(item.get("id")).strip() == "":
        return "field 'id' is missing or empty"
    if not isinstance(item.get("answer"), str):
        return "field 'answer' must be a string"
    context = item.get("context")
    if not isinstance(context, list):
        return "field 'context' must be a list of {doc_id, text}"
    for i, chunk in enumerate(context):
        if not isinstance(chunk, dict) or not isinstance(chunk.get("doc_id"), str) or not isinstance(chunk.get("text"), str):
            return f"field 'context[{i}]' must be an object with string 'doc_id' and 'text'"
    for name, meaning in (("label", "1 or true (faithful), 0 or false (not)"),
                          ("relevant", "1 or true (answers the question), 0 or false (does not)")):
        if name not in item:
            continue
        if type(item[name]) not in (int, bool) or item[name] not in (0, 1):
            return f"field '{name}' must be {meaning}, not {json.dumps(item[name])}"
        item[name] = int(item[name])  # JSON's true / false, as written by most tools, read as 1 / 0
    if "question" in item and not isinstance(item["question"], str):
        return "field 'question' must be a string"
    return None


def judge_item(item: dict[str, Any], policy: Policy, embeddings: Any) -> dict[str, Any]:
    sources = [Source(doc_id=c["doc_id"], text=c["text"], chunk_id=f"{c['doc_id']}#{i}")
               for i, c in enumerate(item["context"])]
    language = item.get("language") or detect_language(item.get("question") or item["answer"],
                                                       policy.languages.markers,
                                                       policy.languages.default)
    started = time.perf_counter()
    verdict = judge_answer(item["answer"], sources, language=language, coverage=COVERAGE, policy=policy,
                           embeddings=embeddings, question=item.get("question") or "",
                           scorer=judge_scorer(policy, language))
    elapsed = (time.perf_counter() - started) * 1000
    return {
        "id": str(item["id"]),
        "label": item.get("label"),
        "relevant": item.get("relevant"),
        "perturbation": item.get("perturbation"),
        "language": language,
        "n_chunks": len(sources),
        "decision": verdict["final_decision"],
        "scores": verdict["scores"],
        "reasoning": verdict["reasoning"],
        "unsupported_claims": [{"claim": c["claim"], "chunk": c["chunk"], "reasons": c["reasons"]}
                               for c in verdict["checks"] if not c["supported"]],
        "check_ms": round(elapsed, 3),
    }


def _rates(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Detection figures where labels exist; positive class = unfaithful (label 0), caught = BLOCK."""
    labelled = [r for r in rows if r["label"] in (0, 1)]
    unfaithful = [r for r in labelled if r["label"] == 0]
    faithful = [r for r in labelled if r["label"] == 1]
    tp = sum(r["decision"] == "BLOCK" for r in unfaithful)
    fp = sum(r["decision"] == "BLOCK" for r in faithful)
    out: dict[str, Any] = {"n": len(rows), "n_labelled": len(labelled), "n_faithful": len(faithful),
                           "n_unfaithful": len(unfaithful)}
    recall = tp / len(unfaithful) if unfaithful else None
    specificity = (len(faithful) - fp) / len(faithful) if faithful else None
    precision = tp / (tp + fp) if tp + fp else None
    out.update({
        "unfaithful_caught": recall,
        "unfaithful_groundedness_below_0.3": (sum(r["scores"]["groundedness"] < INVENTED_BELOW for r in unfaithful)
                                              / len(unfaithful)) if unfaithful else None,
        "faithful_passed": specificity,
        "precision": precision,
        "recall": recall,
        "f1": (2 * precision * recall / (precision + recall)) if precision and recall else (0.0 if precision is not None and recall is not None else None),
        "balanced_accuracy": (recall + specificity) / 2 if recall is not None and specificity is not None else None,
    })
    # Relevance: an irrelevant answer is flagged when it is not passed as OK (the judge caps it at
    # WARNING); a relevant one passes when it is OK.
    relevant = [r for r in rows if r.get("relevant") == 1]
    irrelevant = [r for r in rows if r.get("relevant") == 0]
    if relevant or irrelevant:
        out.update({
            "n_relevant": len(relevant), "n_irrelevant": len(irrelevant),
            "irrelevant_flagged": (sum(r["decision"] != "OK" for r in irrelevant) / len(irrelevant)
                                   if irrelevant else None),
            "relevant_ok": sum(r["decision"] == "OK" for r in relevant) / len(relevant) if relevant else None,
        })
    return out


def run_groundedness(items: list[dict[str, Any]], policy: Policy, embeddings: Any = None,
                     progress: bool = False) -> dict[str, Any]:
    if items:  # the first check loads the stemmers and the embedding model: not part of any line's time
        judge_item(items[0], policy, embeddings)
    iterator = items
    if progress:
        from tqdm import tqdm

        iterator = tqdm(items, desc="judging", unit="answer")
    rows = [judge_item(item, policy, embeddings) for item in iterator]
    by_perturbation: dict[str, list] = defaultdict(list)
    by_language: dict[str, list] = defaultdict(list)
    for r in rows:
        if r["perturbation"]:
            by_perturbation[r["perturbation"]].append(r)
        by_language[r["language"]].append(r)
    times = [r["check_ms"] for r in rows]
    five = [r["check_ms"] for r in rows if r["n_chunks"] == 5]
    return {
        "n_items": len(rows),
        "metrics": _rates(rows),
        "by_language": {k: _rates(v) for k, v in sorted(by_language.items())},
        "by_perturbation": {k: {"n": len(v), "blocked": sum(r["decision"] == "BLOCK" for r in v) / len(v),
                                "groundedness_below_0.3": sum(r["scores"]["groundedness"] < INVENTED_BELOW for r in v) / len(v)}
                            for k, v in sorted(by_perturbation.items())},
        "latency_ms": {"check": percentiles(times), "check_5_chunks": percentiles(five) if five else {},
                       "n_5_chunks": len(five)},
        "items": rows,
    }


def item_line(r: dict[str, Any]) -> str:
    s = r["scores"]
    label = {1: "faithful", 0: "unfaithful", None: "-"}[r["label"]]
    if r.get("relevant") is not None:
        label += ", relevant" if r["relevant"] else ", irrelevant"
    # Why it is not OK: its first unsupported claim, else what quality or utility found (relevance).
    first = r["unsupported_claims"][0]["reasons"][0] if r["unsupported_claims"] else ""
    if not first and r["decision"] != "OK":
        first = next(r["reasoning"][k] for k in ("quality", "utility") if s[k] == min(s["quality"], s["utility"]))
    return (f"{r['id']}\t{label}\t{r['decision']}\tg={s['groundedness']:.2f} q={s['quality']:.2f} "
            f"u={s['utility']:.2f}\t{first}")


def markdown(out: dict[str, Any]) -> str:
    m = out["metrics"]
    lines = [f"# Groundedness: {out.get('input', '')}", "", f"{out['n_items']} answers, judged as coverage {COVERAGE}.", ""]
    keys = ["unfaithful_caught", "unfaithful_groundedness_below_0.3", "faithful_passed", "precision", "recall", "f1",
            "balanced_accuracy"]
    if m["n_labelled"]:
        header = ["set", "n", *keys]
        rows = [["all", str(m["n_labelled"]), *(_fmt(m[k]) for k in keys)]]
        rows += [[lang, str(v["n_labelled"]), *(_fmt(v[k]) for k in keys)] for lang, v in out["by_language"].items()]
        lines += [_table(header, rows), ""]
    if "n_relevant" in m:
        keys = ["n_irrelevant", "irrelevant_flagged", "n_relevant", "relevant_ok"]
        rows = [["all", *(_fmt(m[k]) for k in keys)]]
        rows += [[lang, *(_fmt(v.get(k)) for k in keys)] for lang, v in out["by_language"].items()]
        lines += ["Relevance: irrelevant answers flagged (WARNING or BLOCK), relevant answers passed as OK.", "",
                  _table(["set", "irrelevant", "irrelevant_flagged", "relevant", "relevant_ok"], rows), ""]
    if out["by_perturbation"]:
        rows = [[k, str(v["n"]), _fmt(v["blocked"]), _fmt(v["groundedness_below_0.3"])]
                for k, v in out["by_perturbation"].items()]
        lines += [_table(["perturbation", "n", "blocked", "groundedness < 0.3"], rows), ""]
    lat = out["latency_ms"]
    five = lat.get("check_5_chunks") or {}
    lines.append(f"check time p50 {_fmt(lat['check'].get('p50'), 2)} ms, p95 {_fmt(lat['check'].get('p95'), 2)} ms; "
                 f"5-chunk answers ({lat['n_5_chunks']}): p50 {_fmt(five.get('p50'), 2)} ms")
    return "\n".join(lines)


def write_outputs(out: dict[str, Any], out_dir: Path) -> list[Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / "results.json"
    path.write_text(json.dumps(out, ensure_ascii=False, indent=2), encoding="utf-8")
    (out_dir / "results.md").write_text(markdown(out) + "\n", encoding="utf-8")
    return [path, out_dir / "results.md", write_jsonl(out_dir / "per_item.jsonl", out["items"])]
