"""bench/cross_lingual.py: its question file and how it counts (the run itself is a benchmark)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

import cross_lingual  # noqa: E402 (found through the sys.path entry above)


def test_every_question_names_a_sample_document_or_is_unanswerable():
    documents = {json.loads(line)["id"] for tenant in cross_lingual.TENANTS
                 for line in (ROOT / "samples" / tenant / "documents.jsonl").read_text(encoding="utf-8").splitlines()
                 if line.strip()}
    items = [json.loads(line) for line in cross_lingual.QUESTIONS.read_text(encoding="utf-8").splitlines() if line]
    assert items and all(i["tenant"] in cross_lingual.TENANTS for i in items)
    for item in items:
        if "document" in item:
            assert item["document"] in documents and item["pt"] and item["en"], item
        else:
            assert set(item) == {"tenant", "unanswerable"}, item
    assert any("unanswerable" in i for i in items) and any("document" in i for i in items)


def _row(question, language, document, best, cited, coverage):
    return {"tenant": "acme", "question": question, "language": language, "document": document, "best": best,
            "cited": cited, "coverage": coverage, "direct_answer": None, "verdict": "OK", "first_line": ""}


def test_shares_are_counted_per_language_and_per_document_language():
    # acme-ops-returns-2026 is English, acme-playbook-inverno-2026 Portuguese.
    rows = [
        _row("q1", "pt", "acme-ops-returns-2026", "acme-ops-returns-2026", ["acme-ops-returns-2026"], "medium"),
        _row("q2", "pt", "acme-ops-returns-2026", "acme-legal-arrependimento-2025", [], "none"),
        _row("q3", "pt", "acme-playbook-inverno-2026", "acme-playbook-inverno-2026", [], "low"),
        _row("q4", "en", None, "acme-bi-2026-q1-sales", ["acme-bi-2026-q1-sales"], "low"),
        _row("q5", "en", None, None, [], "none"),
    ]
    groups = cross_lingual.summarize(rows)["groups"]
    assert groups["pt question, other-language document"] == {
        "n": 2, "best_chunk_is_the_document": 0.5, "cites_the_document": 0.5, "answered": 0.5}
    assert groups["pt question, same-language document"]["cites_the_document"] == 0.0
    assert groups["en question, unanswerable"] == {"n": 2, "coverage_none": 0.5}
