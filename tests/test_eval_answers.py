"""`ragate eval answers`: the answer metrics on hand-computed cases, and one end-to-end run of the
whole graph over a tiny MultiHop-RAG-format corpus written here (with a null query). Nothing here
reads ../shared or the network."""

from __future__ import annotations

import json
import statistics

import pytest
from test_eval_direct_answers import with_direct_answers

from graph.evaluation.answers import (
    answer_prose,
    citation_hits,
    cited_chunks,
    gold_in_answer,
    gold_kind,
    summarize,
    upstream_correct,
)

# --- accuracy: upstream qa_evaluate.py and the stricter phrase rule -------------------------------


def test_upstream_rule_is_one_shared_lowercased_whitespace_token():
    assert upstream_correct("Sam Bankman-Fried was convicted in November", "Sam Bankman-Fried")
    assert upstream_correct("SAM was there", "Sam Bankman-Fried")          # one token of the gold suffices
    assert upstream_correct("Yes it did", "Yes") and upstream_correct("yes", "Yes")
    assert not upstream_correct("Yes, it did", "Yes")                      # "yes," is not "yes"
    assert not upstream_correct("eyes on the prize", "Yes")                # tokens, not substrings
    # The null gold "Insufficient information." keeps its period in its second token.
    assert not upstream_correct("There is not enough information here", "Insufficient information.")
    assert upstream_correct("I lack information.", "Insufficient information.")
    # Upstream compares only the quoted part of 'The answer to the question is "..."'.
    assert not upstream_correct('The answer to the question is "Google". Apple agreed.', "Apple")
    assert upstream_correct('The answer to the question is "Google". Apple agreed.', "google")
    assert not upstream_correct("", "Yes")


def test_gold_in_answer_is_a_word_bounded_case_insensitive_phrase():
    assert gold_in_answer("Reports say sam  Bankman-Fried\nwas convicted.", "Sam Bankman-Fried")
    assert not gold_in_answer("Sam was there", "Sam Bankman-Fried")
    assert gold_in_answer("No, it was not.", "no") and not gold_in_answer("It was not known", "no")
    assert not gold_in_answer("eyes", "Yes") and not gold_in_answer("Googleplex opened", "Google")
    assert gold_in_answer("Insufficient information.", "Insufficient information.")
    assert not gold_in_answer("anything", "   ")


def test_gold_kind():
    assert [gold_kind(g) for g in ("Yes", "no", "Insufficient information.", "Sam Bankman-Fried", "Nope")] == [
        "yes", "no", "insufficient", "entity", "entity"]


def test_citation_markers_are_not_scored_as_answer_text():
    answer = "- The court ruled against the search firm [google-antitrust-ruling-0a1b2c3d4e]."
    prose = answer_prose(answer)
    assert prose == "- The court ruled against the search firm."
    assert not gold_in_answer(prose, "Google") and not upstream_correct(prose, "Google")
    assert gold_in_answer(answer, "Google")  # what the markers would have "found"


# --- citation precision ---------------------------------------------------------------------------

FACT_A = "Orbital Dynamics landed its reusable booster on a floating barge."
CHUNKS = [
    {"id": "a#0", "docId": "a", "content": "Title | TechDaily\n" + FACT_A + " Engineers  cheered."},
    {"id": "a#1", "docId": "a", "content": "The booster will fly again within a month."},
    {"id": "b#0", "docId": "b", "content": "A solar farm opened in Nevada."},
]


def test_a_citation_maps_to_the_chunk_holding_its_claim_else_to_the_whole_document():
    answer = ("Based on the retrieved documents:\n\n"
              "- Engineers cheered [a].\n"                          # in a#0 only (whitespace differs)
              "- The booster will fly again within a month [a].\n"  # in a#1
              "The sources disagree about “x”: [b] was preferred (higher relevance) over [a].\n"  # no chunk holds it
              "- Invented [zzz].")                                  # never retrieved
    cited = cited_chunks(answer, CHUNKS)
    assert [(d, c["id"] if c else None) for d, c in cited] == [("a", "a#0"), ("a", "a#1"), ("b", "b#0"),
                                                               ("zzz", None)]
    hits = citation_hits(answer, CHUNKS, [FACT_A.replace(" ", "  ")])
    assert [h["has_fact"] for h in hits] == [True, False, False, False]
    # One claim only: only its chunk is cited, not every chunk of the document.
    assert [h["chunk"] for h in citation_hits("- Engineers cheered [a].", CHUNKS, [FACT_A])] == ["a#0"]
    assert citation_hits("No citation here.", CHUNKS, [FACT_A]) == []


def _row(type_, correct, gold_in, coverage, verdict, cited, ms):
    return {"type": type_, "correct": correct, "gold_in_answer": gold_in, "coverage": coverage, "verdict": verdict,
            "cited_chunks": [{"has_fact": h} for h in cited], "latency_ms": ms, "gold_answer": "Nevada",
            "direct_answer": None, "direct_correct": False, "answer_words": 10}


def test_summarize_shares_micro_citation_precision_without_null_queries():
    rows = [
        _row("inference_query", True, True, "low", "OK", [True, False, True], 10.0),
        _row("comparison_query", True, False, "medium", "WARNING", [False], 20.0),
        _row("temporal_query", False, False, "none", "BLOCK", [], 30.0),
        _row("null_query", False, False, "none", "WARNING", [False, False], 40.0),  # not in the precision
    ]
    m = summarize(rows)
    assert (m["n"], m["accuracy"], m["gold_in_answer"], m["coverage_none"]) == (4, 0.5, 0.25, 0.5)
    assert m["citation_precision"] == 0.5 and m["cited_chunks"] == 4  # 2 of 4, micro (not the mean 0.33)
    assert m["queries_citing"] == 2
    assert m["verdicts"] == {"OK": 1, "WARNING": 2, "BLOCK": 1}
    assert m["latency_ms"]["p50"] == pytest.approx(25.0) and m["latency_ms"]["p95"] == pytest.approx(38.5)
    assert summarize(rows[3:])["citation_precision"] is None


# --- end to end, on a corpus written here ------------------------------------------------------------

DOCS = [
    ("Orbital Dynamics lands reusable booster", "TechDaily", "technology", "https://techdaily.example/booster",
     "2023-10-03T09:00:00+00:00",
     FACT_A + " The company said the booster will fly again within a month."),
    ("Solar farm opens in the Nevada desert", "Energy Wire", "business", "https://energywire.example/solar",
     "2023-09-12T14:30:00+00:00",
     ("The largest solar farm in Nevada began delivering power to the grid on September 12. "
      "The operator expects it to supply about 200,000 homes.")),
    ("Glacier melt speeds up, study finds", "Science Now", "science", "https://sciencenow.example/glacier",
     "2023-11-20T08:00:00+00:00",
     ("Alpine glaciers lost ten percent of their volume in two years, a study published on November 20 found. "
      "Researchers blamed record summer heat waves.")),
    ("Baker wins national championship", "Food Times", "entertainment", "https://foodtimes.example/baker",
     "2023-08-01T10:00:00+00:00",
     ("A home baker from Ohio won the national baking championship with a lemon meringue tart. "
      "The judges praised its balance of sweet and sour.")),
]


def _evidence(i: int, fact: str) -> dict:
    title, source, category, url, date, _ = DOCS[i]
    return {"title": title, "source": source, "category": category, "url": url, "published_at": date,
            "author": "Staff", "fact": fact}


QUERIES = [
    {"query": "Which company landed its reusable booster on a floating barge, according to TechDaily?",
     "answer": "Orbital Dynamics", "question_type": "inference_query", "evidence_list": [_evidence(0, FACT_A)]},
    {"query": "Which state's largest solar farm began delivering power to the grid on September 12?",
     "answer": "Nevada", "question_type": "inference_query",
     "evidence_list": [_evidence(1, "The largest solar farm in Nevada began delivering power to the grid on "
                                    "September 12.")]},
    {"query": "Did the Nevada solar farm start delivering power before the glacier study was published?",
     "answer": "Yes", "question_type": "temporal_query",
     "evidence_list": [_evidence(1, "The largest solar farm in Nevada began delivering power to the grid on "
                                    "September 12."),
                       _evidence(2, "Alpine glaciers lost ten percent of their volume in two years, a study "
                                    "published on November 20 found.")]},
    {"query": "What did the chief executive of Quuxly Corp say about Martian colonies?",
     "answer": "Insufficient information.", "question_type": "null_query", "evidence_list": []},
]

ROW_FIELDS = {"id", "type", "question", "gold_answer", "answer", "coverage", "citations", "cited_chunks", "verdict",
              "correct", "gold_in_answer", "latency_ms", "scores", "direct_answer", "direct_correct", "answer_words"}
DIRECT_KEYS = {"direct_accuracy", "direct_given", "direct_precision", "yes_no_balanced_accuracy", "null_to_none",
               "answerable_to_none", "citation_precision", "median_answer_words"}
# The composer's direct answers, fixed here (see with_direct_answers): right, none for the second
# question (the key missing), "No" to a gold "Yes", none for the null query.
DIRECT = {QUERIES[0]["query"]: "Orbital Dynamics [orbital-dynamics]", QUERIES[2]["query"]: "No [x].",
          QUERIES[3]["query"]: None}


def write_dataset(folder):
    folder.mkdir(parents=True, exist_ok=True)
    corpus = [{"title": t, "author": "Staff", "source": s, "category": c, "url": u, "published_at": d, "body": b}
              for t, s, c, u, d, b in DOCS]
    (folder / "corpus.json").write_text(json.dumps(corpus), encoding="utf-8")
    (folder / "queries_dev.json").write_text(json.dumps(QUERIES), encoding="utf-8")
    return folder


def test_eval_answers_end_to_end(tmp_path, capsys, monkeypatch):
    from graph.entrypoints.cli import main

    data = write_dataset(tmp_path / "mh")
    with_direct_answers(monkeypatch, DIRECT)
    home, out = tmp_path / "home", tmp_path / "out"
    code = main(["eval", "answers", "--dataset", "multihop-rag", "--corpus", str(data / "corpus.json"),
                 "--queries", str(data / "queries_dev.json"), "--home", str(home), "--out", str(out)])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert "answers: 100%" in captured.err and "4/4" in captured.err  # the progress bar

    res = json.loads((out / "answers.json").read_text(encoding="utf-8"))
    assert res["dataset"] == "multihop-rag" and res["n_queries"] == 4
    assert res["ingest"]["documents"] == 4 and res["ingest"]["collection"].startswith("eval-multihop-rag-")
    assert set(res["per_type"]) == {"inference_query", "temporal_query", "null_query"}
    assert res["per_type"]["inference_query"]["n"] == 2
    rows = [json.loads(line) for line in (out / "answers_per_query.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [r["gold_answer"] for r in rows] == [q["answer"] for q in QUERIES]
    assert all(ROW_FIELDS <= set(r) for r in rows)

    # The two entity questions: the extractive answer holds the gold phrase, from the evidence chunk.
    for r in rows[:2]:
        assert r["correct"] and r["gold_in_answer"], r["answer"]
        assert r["coverage"] != "none" and r["citations"]
        assert r["cited_chunks"] and all(c["has_fact"] for c in r["cited_chunks"]), r
    assert res["per_type"]["inference_query"]["accuracy"] == 1.0
    assert res["per_type"]["inference_query"]["citation_precision"] == 1.0
    assert {k: m["n"] for k, m in res["per_gold_kind"].items()} == {"entity": 2, "yes": 1, "insufficient": 1}
    assert res["per_gold_kind"]["entity"]["accuracy"] == 1.0 and res["per_gold_kind"]["yes"]["accuracy"] == 0.0
    # A yes/no question: an extractive composer never says "Yes".
    assert rows[2]["gold_in_answer"] is False and rows[2]["correct"] is False
    # The null query: nothing in the corpus is about it, so coverage none and nothing is cited.
    null = rows[3]
    assert null["coverage"] == "none" and null["citations"] == [] and null["cited_chunks"] == []
    assert res["null_queries"] == {"n": 1, "coverage_none": 1, "null_coverage_none": 1.0}
    assert res["non_null_queries"]["n"] == 3 and res["non_null_queries"]["false_none"] == 0.0

    # Direct answers: the null query is right (coverage none, none given), the entity one too.
    assert [r["direct_answer"] for r in rows] == [DIRECT[QUERIES[0]["query"]], None, "No [x].", None]
    assert [r["direct_correct"] for r in rows] == [True, False, False, True]
    assert all(DIRECT_KEYS <= set(m) for m in [res["metrics"], *res["per_type"].values()])
    m = res["metrics"]
    assert (m["direct_accuracy"], m["direct_given"], m["direct_precision"]) == (0.5, 0.6667, 0.5)
    assert m["null_to_none"] == 1.0 and m["answerable_to_none"] == 0.0
    assert m["yes_no_balanced_accuracy"] is None  # a gold "yes", no gold "no"
    assert m["median_answer_words"] == statistics.median(r["answer_words"] for r in rows) > 0
    inference, temporal = res["per_type"]["inference_query"], res["per_type"]["temporal_query"]
    assert (inference["direct_accuracy"], inference["direct_given"], inference["direct_precision"]) == (0.5, 0.5, 1.0)
    assert (temporal["direct_accuracy"], temporal["direct_precision"]) == (0.0, 0.0)
    null_type = res["per_type"]["null_query"]
    assert null_type["direct_given"] is None and null_type["null_to_none"] == 1.0

    m = res["metrics"]
    assert m["n"] == 4 and m["accuracy"] == pytest.approx(sum(r["correct"] for r in rows) / 4)
    assert m["coverage_none"] == 0.25
    assert sum(m["verdicts"].values()) == 4 and set(m["verdicts"]) == {"OK", "WARNING", "BLOCK"}
    assert [m["verdicts"][d] for d in ("OK", "WARNING", "BLOCK")] == [
        sum(r["verdict"] == d for r in rows) for d in ("OK", "WARNING", "BLOCK")]
    lat = res["latency_ms"]
    assert {"route_gate", "retrieve", "rerank", "compose", "judge", "memory_shield", "total"} <= set(lat)
    assert 0 < lat["total"]["p50"] <= lat["total"]["p95"] and lat["total"]["n"] == 4
    assert res["settings"]["intent"] == "knowledge" and res["settings"]["queries_answered"] == 4

    # The printed report.
    printed = captured.out
    assert "## Answer evaluation: multihop-rag" in printed and "| all | 4 |" in printed
    assert "| null_query | 1 |" in printed and "null queries given coverage none: 1 of 1" in printed
    assert "### Latency per node" in printed and "| entity | 2 | 1.000 | 1.000 | 0.500 |" in printed
    assert "### Direct answers, overall and per question type" in printed
    wrong_ok = sum(r["verdict"] == "OK" and r["direct_answer"] is not None and not r["direct_correct"]
                   for r in rows if r["type"] != "null_query")
    assert m["confidently_wrong"] == wrong_ok
    assert f"| all | 4 | 0.500 | 0.667 | 0.500 | {wrong_ok} | – | 1.000 | 0.000 |" in printed

    # Eval answers are never remembered: no memory database in the eval home or the default home.
    assert not (home / "memory.sqlite").exists()
    assert not list(tmp_path.rglob("memory.sqlite"))

    # A second run reuses the collection; --limit and a folder standing for the files.
    code = main(["eval", "answers", "--data-dir", str(data), "--home", str(home), "--out", str(out), "--quiet",
                 "--limit", "1"])
    assert code == 0
    again = json.loads((out / "answers.json").read_text(encoding="utf-8"))
    assert again["n_queries"] == 1 and again["ingest"]["reused"] is True
    assert again["ingest"]["collection"] == res["ingest"]["collection"]


def test_eval_answers_bad_input_is_a_clear_error(tmp_path, capsys):
    from graph.entrypoints.cli import main

    home = str(tmp_path / "home")
    assert main(["eval", "answers", "--dataset", "beir", "--data-dir", str(tmp_path), "--home", home]) == 2
    assert "--dataset beir: answers need gold answers, which only multihop-rag and squad have" in capsys.readouterr().err
    assert main(["eval", "answers", "--corpus", str(tmp_path / "nope.json"), "--queries", str(tmp_path / "q.json"),
                 "--home", home]) == 2
    assert "--corpus: no such file" in capsys.readouterr().err
    (tmp_path / "empty").mkdir()
    assert main(["eval", "answers", "--data-dir", str(tmp_path / "empty"), "--home", home]) == 2
    assert "no corpus file" in capsys.readouterr().err
    data = write_dataset(tmp_path / "mh")
    assert main(["eval", "answers", "--data-dir", str(data), "--home", home, "--limit", "0", "--quiet"]) == 2
    assert "--limit must be a positive number" in capsys.readouterr().err
    assert not (tmp_path / "home").exists()  # nothing was ingested for a bad request
