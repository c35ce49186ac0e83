#!/usr/bin/env python
"""The bundled samples asked as a user asks them: how many direct answers are right, wrong or absent.

Issue "Never confidently wrong" sets its first targets on `samples/questions.md`, asked as tenant `acme`: no
confidently wrong answer (a wrong direct answer with verdict OK), at least 80% of the answerable questions with
the right direct answer, and none for the questions the corpus does not answer. This prints every question's
direct answer, verdict and coverage beside what the file expects, then those three figures.

What counts as right, from the file's own columns (nothing here is written for one question):

- "Yes/no and before/after questions" (Y…) name the right direct answer: a direct answer is right when its words
  and the right one's are one within the other ("8" or "8 business days" for "8 business days").
- The answerable and multi-part questions (1…, C…) list their key facts: a direct answer is right when each of
  its values (numbers, with their unit or currency left aside) occurs among the key facts' values, and each of
  its words without a digit occurs in the key facts (or abbreviated there: "Nov" for "November"). One that gives no value and no such word cannot be checked,
  and is counted apart.
- The questions the corpus does not answer (N…) are right with no direct answer and coverage `none`.
- The gate probes are left out: tests/test_governance.py and the isolation tests hold what they may not reveal.

    python bench/samples.py                 # ingests the samples into a throwaway data folder
    python bench/samples.py --home DIR      # or into DIR (reused when already there)
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from graph.algorithms.text import fold  # noqa: E402
from graph.context import Context  # noqa: E402
from graph.graph import compile_graph  # noqa: E402
from graph.indexing.ingest import ingest_path  # noqa: E402

QUESTIONS = ROOT / "samples" / "questions.md"
_ROW = re.compile(r"^\| *([0-9]+|[CNY][0-9]+) *\| *(.+?) *\|(.*)\|\s*$")
_VALUE = re.compile(r"\d+(?:[.,]\d+)*")
_WORD = re.compile(r"[^\W\d_]+")


@dataclass(frozen=True)
class Sample:
    id: str
    question: str
    expected: str   # the right direct answer (Y…), the key facts (1…, C…), or why none (N…)

    @property
    def kind(self) -> str:
        return {"Y": "right", "N": "unanswerable", "C": "facts"}.get(self.id[0], "facts")


def read_samples(path: Path = QUESTIONS) -> list[Sample]:
    """The numbered rows of the file's tables (the gate probes have no number)."""
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        m = _ROW.match(line)
        if m:
            cells = [c.strip() for c in m.group(3).split("|")]
            # Answerable rows: sources, then key facts; Y rows: right answer, then source; N rows: why; C rows: parts.
            expected = cells[0] if m.group(1)[0] in "YNC" else cells[-1]
            out.append(Sample(m.group(1), m.group(2), expected))
    return out


def _values(text: str) -> set[str]:
    return {re.sub(r"[.,]", "", v) for v in _VALUE.findall(text)}


def verdict_of(sample: Sample, direct: str | None, coverage: str) -> str:
    """right, wrong, none (no direct answer) or unchecked (a direct answer the key facts cannot decide)."""
    if sample.kind == "unanswerable":
        return "right" if direct is None and coverage == "none" else "wrong"
    if direct is None:
        return "none"
    said = fold(direct)
    if sample.kind == "right":
        a, b = set(_WORD.findall(said)) | _values(said), set(_WORD.findall(fold(sample.expected))) | _values(sample.expected)
        return "right" if a <= b or b <= a else "wrong"
    facts = fold(sample.expected)
    values = _values(said)
    words = [w for w in _WORD.findall(re.sub(r"\d\S*", " ", said)) if len(w) > 2 and w not in ("mil", "milhões", "million")]
    if not values and not words:
        return "unchecked"
    # A word is in the key facts as written, or abbreviated there ("Nov" for "November").
    abbreviations = [f for f in _WORD.findall(facts) if len(f) >= 3]
    ok = values <= _values(facts) and all(re.search(rf"\b{re.escape(w)}", facts) or any(w.startswith(f) for f in abbreviations)
                                          for w in words)
    return "right" if ok else "wrong"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--home", help="data folder for the samples (default: a throwaway one)")
    ap.add_argument("--tenant", default="acme")
    args = ap.parse_args(argv)
    home = args.home or tempfile.mkdtemp(prefix="ragate-samples-")
    for tenant in ("acme", "globex"):
        ingest_path(ROOT / "samples" / tenant, collection="documents", tenant=tenant, context=Context(home=home, tenant=None))
    graph = compile_graph()
    samples = read_samples()
    rows, started = [], time.perf_counter()
    for s in samples:
        state = graph.invoke({"question": s.question}, context=Context(home=home, tenant=args.tenant))
        direct, decision = state.get("direct_answer"), state["verdict"]["final_decision"]
        rows.append((s, direct, decision, state["coverage_level"], verdict_of(s, direct, state["coverage_level"])))
    print(f"# Bundled samples, tenant {args.tenant}: {len(rows)} questions of {QUESTIONS.relative_to(ROOT)} "
          f"({time.perf_counter() - started:.1f} s)\n")
    print("| # | question | direct answer | verdict | coverage | expected | reading |")
    print("|---|---|---|---|---|---|---|")
    for s, direct, decision, coverage, reading in rows:
        print(f"| {s.id} | {s.question} | {direct or '—'} | {decision} | {coverage} | {s.expected[:80]} | {reading} |")
    answerable = [r for r in rows if r[0].kind != "unanswerable"]
    unanswerable = [r for r in rows if r[0].kind == "unanswerable"]
    count = lambda group, reading: sum(r[4] == reading for r in group)  # noqa: E731
    confidently_wrong = sum(r[4] == "wrong" and r[2] == "OK" for r in answerable)
    print(f"\n- answerable: {len(answerable)}; right direct answer {count(answerable, 'right')} "
          f"({count(answerable, 'right') / len(answerable):.0%}; target ≥ 80%), wrong {count(answerable, 'wrong')}, "
          f"none {count(answerable, 'none')}, not decidable from the key facts {count(answerable, 'unchecked')}")
    print(f"- confidently wrong (wrong direct answer, verdict OK): {confidently_wrong} (target 0)")
    print(f"- unanswerable: {len(unanswerable)}; no direct answer and coverage none {count(unanswerable, 'right')} "
          f"(target: all)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
