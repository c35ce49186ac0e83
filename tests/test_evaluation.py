"""The evaluation harness: metric functions on hand-computed cases, the dataset loaders on tiny
fixture files, and one end-to-end `ragate eval retrieval` run on a synthetic MultiHop-shaped corpus.
Nothing here reads ../shared or the network."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from graph.evaluation.datasets import DatasetError, load_dataset, url_doc_id
from graph.evaluation.metrics import (
    aggregate,
    dedupe,
    doc_query_metrics,
    mrr_at_k,
    multihop_query_metrics,
    ndcg_at_k,
    percentiles,
    recall_at_k,
)

# --- metrics: MultiHop-RAG (chunk level) ----------------------------------------------------------

F_CAT = "The cat sat on the mat."
F_DOG = "Dogs bark loudly"


def test_multihop_hits_mrr_map_on_a_hand_computed_ranking():
    chunks = [
        "An unrelated intro.",
        "Yesterday The cat sat on the mat. Then it slept.",   # rank 2: F_CAT (new)  -> 1/2
        "noise",
        "Dogs  bark\nloudly at night",                        # rank 4: F_DOG, whitespace differs -> 1/4
        "The cat sat on the mat again",                       # no period: not F_CAT
    ]
    m = multihop_query_metrics(chunks, [F_CAT, F_DOG])
    assert m["hits@4"] == 1.0 and m["hits@10"] == 1.0
    assert m["mrr@10"] == pytest.approx(0.5)
    assert m["map@10"] == pytest.approx((1 / 2 + 1 / 4) / 2)  # 0.375
    assert m["facts_found@10"] == 2 and m["n_facts"] == 2 and m["all_evidence@10"] == 1.0


def test_multihop_first_hit_below_four_and_beyond_ten():
    late = ["x"] * 4 + [F_CAT]  # rank 5
    m = multihop_query_metrics(late, [F_CAT, F_DOG])
    assert (m["hits@4"], m["hits@10"], m["mrr@10"]) == (0.0, 1.0, pytest.approx(0.2))
    assert m["map@10"] == pytest.approx((1 / 5) / 2)
    assert m["all_evidence@10"] == 0.0 and m["facts_found@10"] == 1

    too_late = ["x"] * 10 + [F_CAT]  # rank 11: outside @10
    m = multihop_query_metrics(too_late, [F_CAT])
    assert m["hits@10"] == 0.0 and m["mrr@10"] == 0.0 and m["map@10"] == 0.0 and m["facts_found@10"] == 0


def test_multihop_map_counts_only_newly_found_facts_upstream_style():
    # The same fact twice (ranks 1 and 2), the second fact never: (1/1 + 0) / 2.
    m = multihop_query_metrics([F_CAT, "again: " + F_CAT, "x"], [F_CAT, F_DOG])
    assert m["map@10"] == pytest.approx(0.5)
    # Two facts in one chunk at rank 3: (2/3) / 2.
    m = multihop_query_metrics(["a", "b", F_CAT + " and " + F_DOG], [F_CAT, F_DOG])
    assert m["map@10"] == pytest.approx(1 / 3)
    assert m["mrr@10"] == pytest.approx(1 / 3) and m["all_evidence@10"] == 1.0


def test_multihop_no_hit_and_empty_facts_never_match():
    m = multihop_query_metrics(["a", "b"], [F_CAT])
    assert all(m[k] == 0.0 for k in ("hits@4", "hits@10", "mrr@10", "map@10", "all_evidence@10"))
    m = multihop_query_metrics(["anything"], ["  \n "])  # an empty fact is not "contained" everywhere
    assert m["hits@10"] == 0.0


def test_aggregate_fact_recall_is_micro_and_all_evidence_is_per_query():
    q1 = multihop_query_metrics([F_CAT, F_DOG], [F_CAT, F_DOG])           # 2 / 2
    q2 = multihop_query_metrics([F_CAT], [F_CAT, F_DOG, "Birds sing"])   # 1 / 3
    agg = aggregate([q1, q2])
    assert agg["fact_recall@10"] == pytest.approx(3 / 5)  # not the mean of 1 and 1/3
    assert agg["all_evidence@10"] == pytest.approx(0.5)
    assert agg["hits@10"] == 1.0 and agg["mrr@10"] == 1.0
    assert "facts_found@10" not in agg and "n_facts" not in agg


# --- metrics: document level ----------------------------------------------------------------------


def test_ndcg_binary_and_graded():
    assert ndcg_at_k(["d3", "d1", "d9"], {"d1": 1, "d2": 1}) == pytest.approx(
        (1 / math.log2(3)) / (1 + 1 / math.log2(3)))  # 0.3869
    assert ndcg_at_k(["d3", "d1", "d9"], {"d1": 1, "d2": 1}) == pytest.approx(0.386853, abs=1e-6)
    # Graded, linear gain: DCG = 1 + 2/log2(3), ideal = 2 + 1/log2(3).
    assert ndcg_at_k(["b", "a"], {"a": 2, "b": 1}) == pytest.approx(0.859719, abs=1e-6)
    assert ndcg_at_k(["a", "b"], {"a": 2, "b": 1}) == pytest.approx(1.0)
    assert ndcg_at_k(["a", "b"], {"a": 0, "b": 1}) == pytest.approx(1 / math.log2(3))  # grade 0 gains nothing
    assert ndcg_at_k(["x"], {"a": 1}) == 0.0
    # Only the first k count.
    assert ndcg_at_k(["x"] * 10 + ["a"], {"a": 1}, k=10) == 0.0


def test_recall_mrr_and_dedupe():
    assert dedupe(["a", "a", "b", "a", "c"]) == ["a", "b", "c"]
    assert recall_at_k(["a", "b", "c"], {"c", "d"}, 2) == 0.0
    assert recall_at_k(["a", "b", "c"], {"c", "d"}, 3) == pytest.approx(0.5)
    assert mrr_at_k(["x", "y", "g"], {"g"}) == pytest.approx(1 / 3)
    assert mrr_at_k(["x"] * 10 + ["g"], {"g"}, 10) == 0.0
    m = doc_query_metrics(["p2", "p1", "p3"], {"p1": 1})
    assert (m["recall@1"], m["recall@5"], m["mrr@10"]) == (0.0, 1.0, pytest.approx(0.5))
    assert m["ndcg@10"] == pytest.approx(1 / math.log2(3))


def test_percentiles():
    p = percentiles([1.0, 2.0, 3.0, 4.0])
    assert p["p50"] == pytest.approx(2.5) and p["p95"] == pytest.approx(3.85) and p["n"] == 4


# --- loaders ----------------------------------------------------------------------------------


MH_DOCS = [
    {"title": "Acme Rockets lands reusable booster", "author": "Ana Lima", "source": "TechDaily",
     "published_at": "2023-10-03T09:00:00+00:00", "category": "technology",
     "url": "https://techdaily.example/2023/10/03/acme-booster-landing",
     "body": "Acme Rockets landed its reusable booster on a floating platform for the first time on Tuesday. "
             "The company said the booster will fly again within a month.\n"
             "Engineers cheered in the control room as the vehicle touched down."},
    {"title": "Solar farm opens in the Nevada desert", "author": "Bo Chen", "source": "Energy Wire",
     "published_at": "2023-09-12 14:30:00.000000000Z", "category": "business",
     "url": "https://energywire.example/news/nevada-solar-farm-opens",
     "body": "The largest solar farm in Nevada began delivering power to the grid on September 12. "
             "It will supply electricity to about 200,000 homes, according to the operator."},
    {"title": "Glacier melt speeds up, study finds", "author": "None", "source": "Science Now",
     "published_at": "2023-11-20T08:00:00+00:00", "category": "science",
     "url": "https://sciencenow.example/glacier-melt-study",
     "body": "Alpine glaciers lost ten percent of their volume in two years, a study published on November 20 found. "
             "Researchers blamed record summer heat waves for the loss."},
    {"title": "Baker wins national championship", "author": "Cy Dove", "source": "Food Times",
     "published_at": "2023-08-01T10:00:00+00:00", "category": "entertainment",
     "url": "https://foodtimes.example/baker-championship",
     "body": "A home baker from Ohio won the national baking championship with a lemon meringue tart. "
             "The judges praised its balance of sweet and sour."},
    {"title": "Teen chess prodigy stuns grandmaster", "author": "Di Eng", "source": "Sports Daily",
     "published_at": "2023-12-02T18:00:00+00:00", "category": "sports",
     "url": "https://sportsdaily.example/chess-prodigy-grandmaster",
     "body": "A fourteen-year-old chess prodigy defeated a reigning grandmaster in the final round of the open. "
             "The win lifted her into the tournament's top three."},
    {"title": "City council approves new bike lanes", "author": "Ed Fox", "source": "Metro News",
     "published_at": "2023-07-15T12:00:00+00:00", "category": "politics",
     "url": "https://metronews.example/bike-lanes-approved",
     "body": "The city council approved forty kilometres of protected bike lanes on Monday. "
             "Construction is expected to start next spring."},
]


def _ev(doc: dict, fact: str) -> dict:
    return {k: doc[k] for k in ("title", "author", "source", "published_at", "url", "category")} | {"fact": fact}


MH_QUERIES = [
    {"query": "Which company landed a reusable booster on a floating platform, according to TechDaily?",
     "answer": "Acme Rockets", "question_type": "inference_query",
     "evidence_list": [_ev(MH_DOCS[0], "Acme Rockets landed its reusable booster on a floating platform for the "
                                       "first time on Tuesday.")]},
    {"query": "Did the Nevada solar farm start delivering power before the glacier melt study was published?",
     "answer": "Yes", "question_type": "temporal_query",
     "evidence_list": [_ev(MH_DOCS[1], "The largest solar farm in Nevada began delivering power to the grid on "
                                       "September 12."),
                       _ev(MH_DOCS[2], "Alpine glaciers lost ten percent of their volume in two years, a study "
                                       "published on November 20 found.")]},
    {"query": "What did the Chief Executive of Foo Corp say about Mars colonies?", "answer": "Insufficient information.",
     "question_type": "null_query", "evidence_list": []},
    {"query": "Who defeated a reigning grandmaster in the final round, and how old is the chess prodigy?",
     "answer": "A fourteen-year-old prodigy", "question_type": "comparison_query",
     "evidence_list": [_ev(MH_DOCS[4], "A fourteen-year-old chess prodigy defeated a reigning grandmaster in the "
                                       "final round of the open.")]},
]


def write_multihop(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "corpus.json").write_text(json.dumps(MH_DOCS), encoding="utf-8")
    (folder / "queries_dev.json").write_text(json.dumps(MH_QUERIES), encoding="utf-8")
    return folder


def test_load_multihop_from_a_folder(tmp_path):
    ds = load_dataset("multihop-rag", data_dir=write_multihop(tmp_path / "mh"))
    assert len(ds.documents) == 6 and len(ds.queries) == 4
    doc = ds.documents[0]
    assert doc.id == url_doc_id(MH_DOCS[0]["url"]) == load_dataset("multihop-rag", data_dir=tmp_path / "mh").documents[0].id
    assert doc.id.startswith("acme-booster-landing-")
    assert doc.title == MH_DOCS[0]["title"] and doc.text == MH_DOCS[0]["body"]
    assert doc.metadata["date"] == "2023-10-03" and ds.documents[1].metadata["date"] == "2023-09-12"
    assert doc.metadata["source"] == "TechDaily" and doc.metadata["sourceUrl"] == MH_DOCS[0]["url"]
    assert "author" not in ds.documents[2].metadata  # the corpus's "None" string is dropped
    q = ds.queries[1]
    assert q.type == "temporal_query" and len(q.facts) == 2 and q.answer == "Yes"
    assert set(q.docs) == {ds.documents[1].id, ds.documents[2].id}
    null = ds.queries[2]
    assert null.type == "null_query" and not null.has_gold and null.answer  # kept, for answers
    # `--corpus FOLDER` stands for the files too
    assert [d.id for d in load_dataset("multihop-rag", corpus=tmp_path / "mh").documents] == [d.id for d in ds.documents]
    assert ds.types == ["comparison_query", "inference_query", "null_query", "temporal_query"]


def test_load_beir_keeps_only_judged_queries(tmp_path):
    d = tmp_path / "beir"
    (d / "qrels").mkdir(parents=True)
    (d / "corpus.jsonl").write_text("\n".join(json.dumps(x) for x in [
        {"_id": "10", "title": "Aspirin and stroke", "text": "Aspirin lowers stroke risk."},
        {"_id": "11", "title": "Vitamin D", "text": "Vitamin D does not prevent fractures."},
        {"_id": "12", "title": "Coffee", "text": "Coffee intake and sleep."},
    ]) + "\n", encoding="utf-8")
    (d / "queries.jsonl").write_text("\n".join(json.dumps(x) for x in [
        {"_id": "1", "text": "Aspirin prevents stroke."}, {"_id": "2", "text": "Coffee helps sleep."},
        {"_id": "3", "text": "Vitamin D prevents fractures."},
    ]) + "\n", encoding="utf-8")
    (d / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n1\t10\t1\n3\t11\t2\n3\t12\t0\n", encoding="utf-8")
    ds = load_dataset("beir", data_dir=d)
    assert [q.id for q in ds.queries] == ["1", "3"]
    assert ds.queries[1].docs == {"11": 2, "12": 0} and ds.queries[1].type is None
    assert [doc.id for doc in ds.documents] == ["10", "11", "12"] and ds.documents[0].title == "Aspirin and stroke"
    # Explicit files win over the folder.
    (d / "qrels" / "one.tsv").write_text("query-id\tcorpus-id\tscore\n2\t12\t1\n", encoding="utf-8")
    ds = load_dataset("beir", data_dir=d, qrels=d / "qrels" / "one.tsv")
    assert [q.id for q in ds.queries] == ["2"]


SQUAD = {"version": "1.0", "data": [
    {"title": "UFMS", "paragraphs": [
        {"context": "A UFMS é uma universidade federal sediada em Campo Grande.",
         "qas": [{"id": "a1", "question": "Onde é sediada a UFMS?", "answers": [{"text": "Campo Grande", "answer_start": 45}]},
                 {"id": "a2", "question": "O que é a UFMS?", "answers": [{"text": "uma universidade federal", "answer_start": 9}]}]},
        {"context": "A universidade mantém campi em nove cidades.",
         "qas": [{"id": "a3", "question": "Em quantas cidades há campi?", "answers": [{"text": "nove", "answer_start": 31}]}]},
    ]},
    {"title": "Vestibular", "paragraphs": [
        {"context": "O vestibular acontece uma vez por ano.",
         "qas": [{"id": "b1", "question": "Quantas vezes por ano ocorre o vestibular?", "answers": []}]},
    ]},
]}


def test_load_squad_same_file_and_separate_files(tmp_path):
    path = tmp_path / "faquad" / "train.json"
    path.parent.mkdir()
    path.write_text(json.dumps(SQUAD, ensure_ascii=False), encoding="utf-8")
    ds = load_dataset("squad", data_dir=path.parent)
    assert [d.id for d in ds.documents] == ["0-0", "0-1", "1-0"]
    assert ds.documents[2].title == "Vestibular"
    assert {q.id: list(q.docs) for q in ds.queries} == {"a1": ["0-0"], "a2": ["0-0"], "a3": ["0-1"], "b1": ["1-0"]}
    assert ds.queries[0].answer == ["Campo Grande"]
    assert load_dataset("squad", corpus=path, queries=path).files["queries"] == path
    # Questions from another file find their paragraph in the corpus by its text.
    sub = {"data": [{"title": "x", "paragraphs": [SQUAD["data"][1]["paragraphs"][0]]}]}
    qpath = tmp_path / "dev.json"
    qpath.write_text(json.dumps(sub, ensure_ascii=False), encoding="utf-8")
    ds = load_dataset("squad", corpus=path, queries=qpath)
    assert [(q.id, list(q.docs)) for q in ds.queries] == [("b1", ["1-0"])]


def test_loader_errors_name_the_flag(tmp_path):
    with pytest.raises(DatasetError, match=r"--corpus: no such file .*nope\.json"):
        load_dataset("multihop-rag", corpus=tmp_path / "nope.json", queries=tmp_path / "q.json")
    with pytest.raises(DatasetError, match="--data-dir: no such folder .*; beir expects a BEIR folder with corpus.jsonl, "
                                           r"queries\*.jsonl and qrels/\*.tsv"):
        load_dataset("beir", data_dir=tmp_path / "missing")
    # Outside this repository's set-up there is no ../shared: the message says what the folder must hold.
    with pytest.raises(DatasetError, match="multihop-rag expects a folder with corpus.json and queries_dev.json"):
        load_dataset("multihop-rag", data_dir=tmp_path / "missing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(DatasetError, match=r"no corpus file .*pass --corpus"):
        load_dataset("multihop-rag", data_dir=tmp_path / "empty")
    with pytest.raises(DatasetError, match="--qrels: only the beir"):
        (tmp_path / "q.tsv").write_text("query-id\tcorpus-id\tscore\n")
        load_dataset("squad", corpus=tmp_path / "q.tsv", qrels=tmp_path / "q.tsv")
    bad = tmp_path / "bad.json"
    bad.write_text("[{", encoding="utf-8")
    with pytest.raises(DatasetError, match=r"--corpus .*bad\.json: invalid JSON"):
        load_dataset("multihop-rag", corpus=bad, queries=bad)


# --- the command line, end to end ------------------------------------------------------------------

RESULT_KEYS = {"dataset", "n_queries", "metrics", "latency_ms", "per_type", "ingest", "decomposed_per_type"}


def test_cli_missing_file_is_a_clear_error(tmp_path, capsys):
    from graph.entrypoints.cli import main

    code = main(["eval", "retrieval", "--dataset", "beir", "--corpus", str(tmp_path / "corpus.jsonl"),
                 "--home", str(tmp_path / "home")])
    assert code == 2
    assert "--corpus: no such file" in capsys.readouterr().err
    code = main(["eval", "retrieval", "--dataset", "multihop-rag", "--data-dir", str(tmp_path),
                 "--ablations", "bm25,best", "--home", str(tmp_path / "home")])
    assert code == 2 and "--ablations: unknown best" in capsys.readouterr().err


def test_eval_retrieval_end_to_end(tmp_path, capsys):
    from graph.entrypoints.cli import main

    data = write_multihop(tmp_path / "mh")
    home, out = tmp_path / "home", tmp_path / "out"
    code = main(["eval", "retrieval", "--dataset", "multihop-rag", "--data-dir", str(data), "--home", str(home),
                 "--out", str(out), "--quiet"])
    printed = capsys.readouterr().out
    assert code == 0, printed
    results = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert set(results) == RESULT_KEYS
    assert results["dataset"] == "multihop-rag" and results["n_queries"] == 3  # the null query is not scored
    assert list(results["metrics"]) == ["bm25", "dense", "hybrid", "+decomposition", "+rerank", "full", "full-decomposition"]
    for name, m in results["metrics"].items():
        for key in ("hits@4", "hits@10", "mrr@10", "map@10", "fact_recall@10", "all_evidence@10"):
            assert 0.0 <= m[key] <= 1.0, (name, key)
        assert m["ndcg@10"] is None  # a BEIR metric: not for this dataset
    # Six short documents, six chunks: every gold fact is in the top 10 of the hybrid ablations,
    # and BM25 finds each query's words.
    for name in ("bm25", "hybrid", "full"):
        assert results["metrics"][name]["hits@10"] == 1.0
    assert results["metrics"]["full"]["all_evidence@10"] == 1.0
    assert results["metrics"]["full"]["fact_recall@10"] == 1.0
    assert set(results["per_type"]["full"]) == {"comparison_query", "inference_query", "temporal_query"}
    assert results["per_type"]["full"]["temporal_query"]["n"] == 1
    assert {"route_gate", "retrieve", "rrf", "rerank", "total"} <= set(results["latency_ms"]["full"])
    assert set(results["latency_ms"]["full"]["rerank"]) == {"p50", "p95", "n"}
    assert "decompose" not in results["latency_ms"]["bm25"]
    assert sum(d["queries"] for d in results["decomposed_per_type"].values()) == 3
    ingest = results["ingest"]
    assert ingest["documents"] == 6 and ingest["documents_written"] == 6 and ingest["chunks"] >= 6
    assert ingest["chunk_tokens"] > ingest["overlap_tokens"] > 0 and ingest["chunks_per_s"] > 0
    assert ingest["collection"].startswith("eval-multihop-rag-")
    # The printed report: ablation rows, the per-type and latency tables.
    assert "| bm25 |" in printed and "| full |" in printed and "### Per question type" in printed
    assert "### Latency per node" in printed
    rows = [json.loads(line) for line in (out / "per_query.jsonl").read_text().splitlines()]
    assert len(rows) == 3 and len(rows[0]["full"]["top10"]) == 6
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        assert "plots skipped" in printed
    else:
        assert (out / "metrics_by_ablation.png").stat().st_size > 0 and (out / "latency_by_node.png").exists()

    # A second run over the same corpus reuses the collection: nothing is written or embedded again.
    code = main(["eval", "retrieval", "--dataset", "multihop-rag", "--data-dir", str(data), "--home", str(home),
                 "--out", str(out), "--quiet", "--ablations", "bm25,full", "--limit", "2"])
    assert code == 0
    again = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert again["ingest"]["collection"] == ingest["collection"]
    assert again["ingest"]["documents_unchanged"] == 6 and again["ingest"]["chunks_written"] == 0
    assert again["ingest"]["reused"] is True and again["ingest"]["chunks_per_s"] is None
    assert list(again["metrics"]) == ["bm25", "full"] and again["n_queries"] == 2
    assert "reused" in capsys.readouterr().out


def test_each_chunking_gets_its_own_eval_collection(tmp_path, monkeypatch):
    from graph.context import CHUNK_TOKENS, OVERLAP_TOKENS, Context

    monkeypatch.delenv("RAGATE_CHUNK_TOKENS", raising=False)
    monkeypatch.delenv("RAGATE_OVERLAP_TOKENS", raising=False)
    from graph.evaluation.ingest import collection_name

    ds = load_dataset("multihop-rag", data_dir=write_multihop(tmp_path / "mh"))
    names = {collection_name(ds, Context(chunk_tokens=c, overlap_tokens=o)) for c, o in [(230, 20), (450, 20), (450, 40)]}
    assert len(names) == 3
    assert collection_name(ds, Context()) == collection_name(ds, Context(chunk_tokens=CHUNK_TOKENS,
                                                                         overlap_tokens=OVERLAP_TOKENS))


def test_eval_context_keeps_given_settings_and_defaults_the_rest():
    from graph.context import Context
    from graph.evaluation.runner import eval_context

    ctx = eval_context(home="h", overlap_tokens=0, chunk_tokens=None, policy_path=None, top_n=7)
    assert ctx.tenant == "eval" and ctx.overlap_tokens == 0 and ctx.top_n == 7  # 0 is a setting, not "unset"
    assert ctx.chunk_tokens == Context().chunk_tokens and ctx.policy_path == Context().policy_path
