#!/usr/bin/env python
"""Questions asked in both languages over the mixed sample tenants (issue 18, point 3: "an English
question over Portuguese documents, and the reverse, finds and cites them as the same question asked in
their language does").

`bench/cross_lingual_questions.jsonl` holds, per line, either a question asked in Portuguese and in
English with the sample document that answers it (`tenant`, `document`, `pt`, `en`), or a question no
sample document answers (`tenant`, `unanswerable`). Each is run through the whole graph, embedded
default, over `samples/` ingested into `--home` (done on the first run). Printed, per language of the
question: the share of answerable questions whose best chunk is the document, whose answer cites it and
that get an answer (coverage not none); and the share of unanswerable ones given coverage none and no
citation. A question in one language over a document in the other is counted apart.

    python bench/cross_lingual.py --home /tmp/ragate-cross-lingual --out /tmp/cross-lingual.json
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from graph.algorithms.text import detect_language
from graph.context import Context
from graph.graph import compile_graph
from graph.indexing.ingest import ingest_path
from graph.policy import load_policy

SAMPLES = ROOT / "samples"
QUESTIONS = Path(__file__).resolve().parent / "cross_lingual_questions.jsonl"
TENANTS = ("acme", "globex")


def ensure_samples(home: Path) -> None:
    """Ingest both sample tenants into `home` unless it already holds them."""
    marker = home / "cross-lingual-ingested"
    if marker.exists():
        return
    ctx = Context(home=str(home), tenant=None)
    for tenant in TENANTS:
        ingest_path(SAMPLES / tenant, collection="documents", tenant=tenant, context=ctx)
    marker.write_text("samples ingested\n", encoding="utf-8")


def run(home: Path, questions: Path) -> dict:
    ensure_samples(home)
    graph = compile_graph()
    rows = []
    for line in questions.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        item = json.loads(line)
        ctx = Context(home=str(home), tenant=item["tenant"])
        asked = ([("pt", item["pt"]), ("en", item["en"])] if "document" in item
                 else [(None, item["unanswerable"])])
        for _language, question in asked:
            state = graph.invoke({"question": question}, context=ctx)
            best = state["reranked"][0]["docId"] if state.get("reranked") else None
            rows.append({"tenant": item["tenant"], "question": question, "language": state.get("language"),
                         "document": item.get("document"), "best": best,
                         "cited": sorted(state.get("citations_used") or []),
                         "coverage": state.get("coverage_level"), "direct_answer": state.get("direct_answer"),
                         "verdict": (state.get("verdict") or {}).get("final_decision"),
                         "first_line": (state.get("answer") or "").split("\n")[0]})
    return summarize(rows)


def summarize(rows: list[dict]) -> dict:
    doc_language = _document_languages()
    groups: dict[str, list[dict]] = {}
    for r in rows:
        if r["document"]:
            other = doc_language.get(r["document"], r["language"]) != r["language"]
            key = f"{r['language']} question, {'other' if other else 'same'}-language document"
        else:
            key = f"{r['language']} question, unanswerable"
        groups.setdefault(key, []).append(r)
    table = {}
    for key, group in sorted(groups.items()):
        n = len(group)
        if "unanswerable" in key:
            table[key] = {"n": n, "coverage_none": round(sum(r["coverage"] == "none" and not r["cited"]
                                                             for r in group) / n, 3)}
        else:
            table[key] = {"n": n,
                          "best_chunk_is_the_document": round(sum(r["best"] == r["document"] for r in group) / n, 3),
                          "cites_the_document": round(sum(r["document"] in r["cited"] for r in group) / n, 3),
                          "answered": round(sum(r["coverage"] != "none" for r in group) / n, 3)}
    return {"groups": table, "rows": rows}


def _document_languages() -> dict[str, str]:
    """Each sample document's language: its own field, else detected from its text as ingest does."""
    markers = load_policy().languages.markers
    out = {}
    for tenant in TENANTS:
        for line in (SAMPLES / tenant / "documents.jsonl").read_text(encoding="utf-8").splitlines():
            if line.strip():
                doc = json.loads(line)
                out[doc["id"]] = doc.get("language") or detect_language(doc.get("content") or "", markers)
    return out


def print_table(summary: dict) -> None:
    print("| questions | n | best chunk is the document | cites it | answered | unanswerable: coverage none |")
    print("|---|---:|---:|---:|---:|---:|")
    for key, m in summary["groups"].items():
        if "coverage_none" in m:
            print(f"| {key} | {m['n']} | | | | {m['coverage_none']:.3f} |")
        else:
            print(f"| {key} | {m['n']} | {m['best_chunk_is_the_document']:.3f} | {m['cites_the_document']:.3f} "
                  f"| {m['answered']:.3f} | |")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--home", default="/tmp/ragate-cross-lingual", help="ragate home for the sample tenants")
    parser.add_argument("--questions", default=str(QUESTIONS), help="questions file (JSON lines, see above)")
    parser.add_argument("--out", help="write the figures and every question's outcome here (JSON)")
    args = parser.parse_args(argv)
    summary = run(Path(args.home), Path(args.questions))
    print_table(summary)
    if args.out:
        Path(args.out).write_text(json.dumps(summary, ensure_ascii=False, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
