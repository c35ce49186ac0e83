"""bench/peers.py: ragate and the LangChain peers on the same chunks, on a tiny MultiHop-RAG corpus (that
run needs the `bench` extra and is skipped without it; the harness's own functions are tested without)."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parent.parent / "bench" / "peers.py"

ARTICLES = [
    ("https://news.example/acme-booster", "Acme Rockets lands reusable booster",
     "Acme Rockets landed its reusable booster on a floating platform for the first time on Tuesday. "
     "The company said the booster will fly again within a month."),
    ("https://news.example/nevada-solar", "Solar farm opens in Nevada",
     "The largest solar farm in Nevada began delivering power to the grid on September 12. "
     "It will supply electricity to about 200,000 homes."),
    ("https://news.example/glacier-melt", "Glacier melt speeds up",
     "Alpine glaciers lost ten percent of their volume in two years, a study published on November 20 found."),
    ("https://news.example/bike-lanes", "City approves bike lanes",
     "The city council approved forty kilometres of protected bike lanes on Monday."),
]


@pytest.fixture
def bench_extra():
    """The peers themselves (the `bench` extra)."""
    for module in ("langchain_community", "langchain_classic", "rank_bm25"):
        pytest.importorskip(module)


@pytest.fixture(scope="module")
def peers():
    spec = importlib.util.spec_from_file_location("peers_bench", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    yield module
    sys.modules.pop(spec.name, None)


def write_corpus(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    docs = [{"url": u, "title": t, "body": b, "source": "News", "published_at": "2023-10-03T09:00:00+00:00",
             "category": "science", "author": "A"} for u, t, b in ARTICLES]
    ev = lambda i, fact: {"url": ARTICLES[i][0], "title": ARTICLES[i][1], "fact": fact}  # noqa: E731
    queries = [
        {"query": "Which company landed a reusable booster on a floating platform?", "question_type": "inference_query",
         "answer": "Acme Rockets", "evidence_list": [ev(0, "Acme Rockets landed its reusable booster on a floating "
                                                           "platform for the first time on Tuesday.")]},
        {"query": "Did the Nevada solar farm deliver power before the glacier study was published?",
         "question_type": "temporal_query", "answer": "Yes",
         "evidence_list": [ev(1, "The largest solar farm in Nevada began delivering power to the grid on "
                                 "September 12."),
                           ev(2, "Alpine glaciers lost ten percent of their volume in two years")]},
        {"query": "What did Foo Corp say about Mars?", "question_type": "null_query", "answer": "Insufficient "
         "information.", "evidence_list": []},
    ]
    (folder / "corpus.json").write_text(json.dumps(docs), encoding="utf-8")
    (folder / "queries_dev.json").write_text(json.dumps(queries), encoding="utf-8")
    return folder


def test_documents_are_the_chunks_as_embedded_and_scored_on_their_text(peers):
    chunk = peers.Chunk("doc-1", 2, "Body text.", "Title | News | 2023-10-03")
    (doc,) = peers.to_documents([chunk])
    assert doc.page_content == "Title | News | 2023-10-03\nBody text."
    assert peers.ranked_for_scoring([doc], 30) == [{"id": "doc-1#2", "docId": "doc-1", "content": "Body text."}]
    assert peers.word_tokens("Acme's BOOSTER, landed.") == ["acme", "s", "booster", "landed"]


def test_every_system_on_the_same_chunks_and_queries(peers, bench_extra, tmp_path, capsys):
    data, home, out = write_corpus(tmp_path / "mh"), tmp_path / "home", tmp_path / "out"
    code = peers.main(["--dataset", "multihop-rag", "--data-dir", str(data), "--home", str(home), "--out", str(out),
                       "--quiet"])
    printed = capsys.readouterr().out
    assert code == 0, printed
    report = json.loads((out / "peers.json").read_text(encoding="utf-8"))
    assert list(report["systems"]) == list(peers.SYSTEMS)
    assert report["n_queries"] == 2  # the null query is not scored
    assert report["chunks"] == report["ingest"]["chunks"] >= len(ARTICLES)
    build = report["peer_build"]
    assert build["documents"] == report["chunks"]
    assert build["vectors_vs_collection"]["equal"] == build["vectors_vs_collection"]["compared"] == report["chunks"]
    for name, row in report["systems"].items():
        assert row["n"] == 2, name
        for key in ("hits@10", "mrr@10", "fact_recall@10", "all_evidence@10"):
            assert 0.0 <= row["metrics"][key] <= 1.0, (name, key)
        assert row["latency_ms"]["p50"] > 0 and row["latency_ms"]["n"] == 2
    # Four short articles: every chunk is in every system's top 10, so every fact is found.
    for name in ("ragate full", "LangChain hybrid", "LangChain dense"):
        assert report["systems"][name]["metrics"]["fact_recall@10"] == 1.0, name
    assert "| ragate full |" in printed and "| LangChain hybrid |" in printed and "| BM25Retriever |" in printed
    paired = report["paired_latency"]
    assert paired["n"] == 2 and list(paired["systems"]) == list(peers.PAIRED)
    assert set(paired["against"]) == set(peers.PAIRED[1:])
    for row in paired["against"].values():
        low, high = row["p50_ratio_ci95"]
        assert low <= row["p50_ratio"] <= high and 0.0 <= row["faster_share"] <= 1.0
    assert "Paired latency (2 queries" in printed
    assert set(paired["by_place"]) == set(peers.PAIRED) and "p50 ms by place in the query's order" in printed
    rows = [json.loads(line) for line in (out / "peers_per_query.jsonl").read_text().splitlines()]
    assert len(rows) == 2 and set(peers.SYSTEMS) <= set(rows[0])
    assert set(rows[0]["paired_latency_ms"]) == set(peers.PAIRED)
    assert all(cid.split("#")[0] for cid in rows[0]["LangChain hybrid"]["top10"])


def test_paired_latency_rotates_the_order_and_forgets_query_vectors_before_every_call(peers):
    calls: list[str] = []
    forgotten: list[int] = []

    def caller(name):
        return lambda text: calls.append(f"{name}:{text}")

    queries = [type("Q", (), {"text": t})() for t in ("q0", "q1", "q2")]
    latency = peers.paired_latency({n: caller(n) for n in "abc"}, queries, lambda: forgotten.append(len(calls)), False)
    assert calls[:3] == ["a:q0", "b:q0", "c:q0"]  # untimed first calls
    assert calls[3:] == ["a:q0", "b:q0", "c:q0", "b:q1", "c:q1", "a:q1", "c:q2", "a:q2", "b:q2"]
    assert forgotten == list(range(len(calls)))  # emptied before each call, never twice in a row
    assert {n: len(v) for n, v in latency.items()} == {"a": 3, "b": 3, "c": 3}


def test_paired_summary_ratios_and_intervals(peers):
    fast = [10.0, 20.0, 30.0, 40.0, 50.0]
    slow = [20.0, 40.0, 60.0, 80.0, 100.0]
    summary = peers.paired_summary({"ragate full": fast, "BM25Retriever": slow})
    row = summary["against"]["BM25Retriever"]
    assert row["p50_ratio"] == 0.5 and row["faster_share"] == 1.0
    low, high = row["p50_ratio_ci95"]
    assert low == high == 0.5  # every pair is exactly half: every resample is too
    assert summary["systems"]["ragate full"]["p50"] == 30.0
    # Query i starts with system i mod 2: ragate ran 1st on queries 0, 2, 4 and 2nd on 1, 3.
    assert summary["by_place"] == {"ragate full": [30.0, 30.0], "BM25Retriever": [60.0, 60.0]}
    three = peers.paired_summary({"a": [1.0, 2.0, 3.0], "b": [4.0, 5.0, 6.0], "c": [7.0, 8.0, 9.0]})
    assert three["by_place"] == {"a": [1.0, 3.0, 2.0], "b": [5.0, 4.0, 6.0], "c": [9.0, 8.0, 7.0]}
    mixed = peers.paired_summary({"ragate full": [10.0, 50.0, 30.0, 70.0], "BM25Retriever": [20.0, 40.0, 40.0, 60.0]})
    row = mixed["against"]["BM25Retriever"]
    assert row["faster_share"] == 0.5
    low, high = row["p50_ratio_ci95"]
    assert low < row["p50_ratio"] < high  # pairs that disagree: the interval has width
