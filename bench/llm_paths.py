"""The LLM paths end to end on a real (small) model: how often each LLM step falls back, and latency.

Runs the whole graph with `chat_model=openai/<model>` against an OpenAI-compatible server (by default
`../shared/tools/local-llm`: Qwen2.5-Coder-1.5B-Instruct on llama.cpp, http://127.0.0.1:8088/v1) on sample
questions of `samples/questions.md` in Portuguese and English, after ingesting `samples/` into a fresh home
on the embedded default. Per question it records which LLM steps were used and which fell back (and why),
the verdict, whether the expected source was cited, and the end-to-end time.

    bash ../shared/tools/local-llm start
    python bench/llm_paths.py                      # 9 questions, ~2 min each on 2 CPU cores
    python bench/llm_paths.py --limit 2 --out bench/out/llm_paths.json

A decomposition is only asked for questions the complexity score calls complex; a composer only when
coverage is not "none". "fallback" counts a step that asked the model and could not use the reply.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

DEFAULT_QUESTIONS = ("1", "2", "4", "7", "8", "9", "N1", "C1", "C2")
DEMO = ("Compare as vendas de inverno de 2025 e 2026 e quais ações o playbook recomenda?", ["acme-bi-2025-inverno-sales"])


def sample_questions(path: Path) -> dict[str, tuple[str, list[str]]]:
    """{row id: (question, expected source ids)} from the tables of samples/questions.md."""
    found: dict[str, tuple[str, list[str]]] = {"DEMO": DEMO}
    for line in path.read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")] if line.startswith("|") else []
        if len(cells) >= 2 and re.fullmatch(r"[A-Z]?\d+", cells[0]):
            expected = re.findall(r"`([a-z0-9-]+)`", cells[2]) if len(cells) > 2 else []
            found[cells[0]] = (cells[1], expected)
    return found


def step_outcomes(state: dict) -> dict[str, str]:
    """For each LLM step: "llm" (the model's output was used), "fallback: why", or "not asked"."""
    errors = state.get("errors") or []

    def failure(prefix: str) -> str | None:
        return next((e for e in errors if e.startswith(prefix)), None)

    decomposition = state.get("decomposition") or {}
    if decomposition.get("method") == "llm":
        decompose = "llm"
    elif decomposition.get("llm_error"):
        decompose = f"fallback: {decomposition['llm_error'][:120]}"
    else:
        decompose = "not asked"
    compose_error = failure("compose:")
    compose = (f"fallback: {compose_error[9:130]}" if compose_error
               else "not asked" if state.get("coverage_level") == "none" else "llm")
    judge_error = failure("judge: chat model verdict unusable") or failure("judge: chat model failed")
    judge = "llm" if (state.get("verdict") or {}).get("method") == "llm+deterministic" else (
        f"fallback: {judge_error[7:130]}" if judge_error else "not asked")
    return {"decompose": decompose, "compose": compose, "judge": judge}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base-url", default=os.environ.get("OPENAI_BASE_URL", "http://127.0.0.1:8088/v1"))
    parser.add_argument("--model", default="local", help="model name the server knows (local-llm: 'local')")
    parser.add_argument("--questions", default=",".join(DEFAULT_QUESTIONS),
                        help="row ids of samples/questions.md (and DEMO), comma-separated")
    parser.add_argument("--limit", type=int, help="only the first N of them")
    parser.add_argument("--timeout", type=float, default=600, help="seconds per model call (a 1.5B model on CPU is slow)")
    parser.add_argument("--out", help="write the per-question records as JSON here")
    args = parser.parse_args(argv)

    os.environ["OPENAI_BASE_URL"] = args.base_url
    os.environ.setdefault("OPENAI_API_KEY", "local")
    os.environ.setdefault("RAGATE_LOG", "off")
    from graph.context import Context
    from graph.graph import compile_graph
    from graph.indexing.ingest import ingest_path
    from graph.providers.resources import check_providers

    catalogue = sample_questions(ROOT / "samples" / "questions.md")
    wanted = [q.strip() for q in args.questions.split(",") if q.strip()][: args.limit]
    unknown = [q for q in wanted if q not in catalogue]
    if unknown:
        print(f"llm_paths: unknown question ids {unknown} (known: {sorted(catalogue)})", file=sys.stderr)
        return 2
    home = Path(tempfile.mkdtemp(prefix="ragate-llm-bench-"))
    for tenant in ("acme", "globex"):
        ingest_path(ROOT / "samples" / tenant, collection="documents", tenant=tenant, context=Context(home=str(home)))
    ctx = Context(home=str(home), tenant="acme", chat_model=f"openai/{args.model}", provider_timeout_s=args.timeout,
                  provider_retries=0)
    check_providers(ctx)
    graph = compile_graph()
    graph.invoke({"question": "warm-up"}, context=Context(home=str(home), tenant="acme"))  # load the embedder

    records = []
    for qid in wanted:
        question, expected = catalogue[qid]
        started = time.perf_counter()
        state = graph.invoke({"question": question}, context=ctx)
        elapsed = time.perf_counter() - started
        record = {"id": qid, "question": question, "language": state.get("language"), **step_outcomes(state),
                  "verdict": state["verdict"]["final_decision"], "scores": state["verdict"]["scores"],
                  "coverage": state.get("coverage_level"), "expected": expected,
                  "expected_cited": bool(set(expected) & set(state.get("citations_used") or [])) if expected else None,
                  "seconds": round(elapsed, 1), "timings_ms": state.get("timings_ms"), "answer": state.get("answer"),
                  "errors": state.get("errors")}
        records.append(record)
        print(f"[{qid}] {elapsed:6.1f} s  decompose={record['decompose'][:40]!r} compose={record['compose'][:40]!r} "
              f"judge={record['judge'][:40]!r} verdict={record['verdict']} expected cited={record['expected_cited']}",
              flush=True)

    print()
    print("| step | asked | used the model's output | fell back | fallback rate |")
    print("|---|---:|---:|---:|---:|")
    for step in ("decompose", "compose", "judge"):
        asked = [r for r in records if r[step] != "not asked"]
        used = sum(1 for r in asked if r[step] == "llm")
        rate = f"{(len(asked) - used) / len(asked):.2f}" if asked else "-"
        print(f"| {step} | {len(asked)} | {used} | {len(asked) - used} | {rate} |")
    seconds = sorted(r["seconds"] for r in records)
    print()
    print(f"end-to-end: p50 {statistics.median(seconds):.1f} s, max {seconds[-1]:.1f} s over {len(seconds)} questions "
          f"({', '.join(sorted({r['language'] or '?' for r in records}))})")
    answered = [r for r in records if r["expected"]]
    verdicts = ", ".join(f"{v} {sum(1 for r in records if r['verdict'] == v)}" for v in ("OK", "WARNING", "BLOCK"))
    cited = sum(1 for r in answered if r["expected_cited"])
    print(f"verdicts: {verdicts}; expected source cited: {cited}/{len(answered)}")
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(records, ensure_ascii=False, indent=2), encoding="utf-8")
        print(f"records: {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
