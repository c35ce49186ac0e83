"""Searches scoped to the sources a question names (policy retrieval.mention_fields)."""

from __future__ import annotations

import json

import pytest

from graph.context import Context
from graph.graph import compile_graph
from graph.indexing.ingest import ingest_path
from graph.providers.vectorstore import open_index, point_id

DOCS = [
    ("tc-1", "TechCrunch", True, "ready", "FTX founder trial opens; prosecutors describe fraud and conspiracy charges."),
    ("tc-2", "TechCrunch", True, "ready", "Startup funding fell in the third quarter as investors pulled back."),
    ("vg-1", "The Verge", True, "ready", "The FTX trial is bigger than one founder, says the reporting on crypto fraud."),
    ("vg-2", "The Verge", True, "ready", "A new phone launched with a brighter screen and a bigger battery."),
    ("sn-1", "Sporting News", True, "ready", "The team won the final after a penalty shootout."),
    ("wire-draft", "Secret Wire", True, "draft", "An unpublished wire story about the FTX trial."),
]


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    home = tmp_path_factory.mktemp("mentions")
    src = home / "docs.jsonl"
    src.write_text("\n".join(json.dumps({"id": i, "assetName": f"{s} story {i}", "content": text,
                                         "metadata": {"source": s, "isApprovedForAI": ok, "status": st,
                                                      "date": "2023-10-01"}})
                             for i, s, ok, st, text in DOCS), encoding="utf-8")
    ctx = Context(home=str(home))
    ingest_path(src, collection="documents", tenant="news", context=ctx)
    other = home / "other.jsonl"
    other.write_text(json.dumps({"id": "gd-1", "content": "Globex Daily covers the FTX trial too.",
                                 "metadata": {"source": "Globex Daily", "isApprovedForAI": True, "status": "ready"}}),
                     encoding="utf-8")
    ingest_path(other, collection="documents", tenant="other", context=ctx)
    return home


def _ask(home, question, **ctx):
    return compile_graph(retrieval_only=True).invoke(
        {"question": question}, context=Context(home=str(home), tenant="news", top_n=10, **ctx))


def test_values_are_the_tenants_servable_ones(home):
    values = set(open_index(home).values("documents", "news", "source"))
    assert values == {"TechCrunch", "The Verge", "Sporting News"}  # not the draft's, not the other tenant's
    assert set(open_index(home).values("documents", "other", "source")) == {"Globex Daily"}


def test_each_named_source_gets_its_own_search(home):
    state = _ask(home, "What did TechCrunch and The Verge report about the FTX trial?")
    assert sorted(s["filters"]["source"] for s in state["scoped_queries"]) == ["TechCrunch", "The Verge"]
    scoped = [r for r in state["hits"].values() if r["kind"] == "scoped"]
    assert len(scoped) == 2
    by_point = {str(point_id("news", d[0], 0)): d[1] for d in DOCS}
    for result, source in zip(scoped, [s["filters"]["source"] for s in state["scoped_queries"]]):
        chunks = result["dense"] + result["lexical"]
        assert chunks and {by_point[c["pointId"]] for c in chunks} == {source}
    kept = {c["docId"] for c in state["reranked"]}
    assert {"tc-1", "vg-1"} <= kept


def test_unnamed_draft_and_foreign_sources_are_not_scoped(home):
    state = _ask(home, "Did Secret Wire or Globex Daily write about the FTX trial?")
    assert state.get("scoped_queries") == []
    assert not {"wire-draft"} & {c["docId"] for c in state["reranked"]}


def test_no_mention_no_scoped_search(home):
    state = _ask(home, "Who won the final?")
    assert state.get("scoped_queries") == [] and all(r["kind"] != "scoped" for r in state["hits"].values())


def test_decompose_switch_also_turns_scoping_off(home):
    state = _ask(home, "What did TechCrunch and The Verge report about the FTX trial?", decompose=False)
    assert not state.get("scoped_queries") and len(state["hits"]) == 1


def test_a_source_gated_by_a_reingest_is_no_longer_scoped(tmp_path):
    """The tenant's source values are cached (30 s): a re-ingest through the same engine that gates the
    only document of a source must not leave that source named in the next question's scoped searches
    (found by the isolation soak on the Qdrant server path, where one engine object outlives corpora)."""
    src = tmp_path / "docs.jsonl"

    def ingest(approved: bool) -> None:
        src.write_text(json.dumps({"id": "val-1", "content": "Valor reported that winter sales grew 12% in 2025.",
                                   "metadata": {"source": "Valor", "isApprovedForAI": approved, "status": "ready"}}),
                       encoding="utf-8")
        ingest_path(src, collection="documents", tenant="news", context=Context(home=str(tmp_path)))

    question = "What did Valor report about winter sales and growth in 2025?"
    ingest(True)
    assert [s["filters"]["source"] for s in _ask(tmp_path, question)["scoped_queries"]] == ["Valor"]
    ingest(False)
    state = _ask(tmp_path, question)
    assert state["scoped_queries"] == [] and state["reranked"] == []
