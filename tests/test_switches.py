"""Pipeline switches in the Context (the evaluation's ablations) and the retrieval-only graph."""

from __future__ import annotations

from dataclasses import replace

import pytest

from graph.context import Context
from graph.graph import compile_graph

COMPLEX = "Compare as vendas de inverno de 2025 e 2026 e quais ações o playbook recomenda?"
SIMPLE = "O que o playbook de campanhas de inverno recomenda?"


@pytest.fixture(scope="module")
def retrieval_graph():
    return compile_graph(retrieval_only=True)


def _run(graph, corpus, question, **switches):
    switches.setdefault("top_n", 10)
    ctx = replace(corpus.context("acme"), **switches)
    return graph.invoke({"question": question}, context=ctx)


def test_retrieval_only_graph_ends_after_rerank(retrieval_graph, corpus):
    state = _run(retrieval_graph, corpus, SIMPLE)
    assert state["reranked"] and all(c["content"] for c in state["reranked"])
    assert not state.get("answer") and not state.get("verdict")  # never composed nor judged
    assert set(state["timings_ms"]) >= {"route_gate", "rrf", "rerank"}
    assert not {"compose", "judge", "memory_shield"} & set(state["timings_ms"])


def test_retrieval_only_graph_with_retrieval_off_ends_cleanly(retrieval_graph, corpus):
    state = retrieval_graph.invoke({"question": SIMPLE, "intent": "smalltalk"}, context=corpus.context("acme"))
    assert state["rag"]["enabled"] is False and not state.get("reranked")


@pytest.mark.parametrize(("mode", "empty"), [("lexical", "dense"), ("dense", "lexical")])
def test_retrieval_mode_keeps_one_list(retrieval_graph, corpus, mode, empty):
    state = _run(retrieval_graph, corpus, SIMPLE, retrieval_mode=mode)
    results = list(state["hits"].values())
    assert results and all(r[empty] == [] for r in results)
    assert any(r["lexical" if empty == "dense" else "dense"] for r in results)


def test_unknown_retrieval_mode_is_refused():
    with pytest.raises(ValueError, match="retrieval_mode"):
        Context(retrieval_mode="sparse")


def test_decompose_switch(retrieval_graph, corpus):
    on = _run(retrieval_graph, corpus, COMPLEX)
    off = _run(retrieval_graph, corpus, COMPLEX, decompose=False)
    assert len(on["sub_queries"]) >= 2 and "decompose" in on["timings_ms"]
    assert "decompose" not in off["timings_ms"] and len(off["hits"]) == 1
    assert off["decomposition"]["score"] == on["decomposition"]["score"]  # still scored, just not split


def test_rerank_switch_keeps_the_fused_order(retrieval_graph, corpus):
    state = _run(retrieval_graph, corpus, SIMPLE, rerank=False, boosts=False)
    fused_rank = {c["id"]: i for i, c in enumerate(state["fused"])}
    ranks = [fused_rank[c["pointId"]] for c in state["reranked"]]
    assert ranks == sorted(ranks)


def test_boosts_switch(retrieval_graph, corpus):
    on = _run(retrieval_graph, corpus, SIMPLE, current_year=2026)
    off = _run(retrieval_graph, corpus, SIMPLE, current_year=2026, boosts=False)
    assert any(c["scores"]["boosts"] for c in on["reranked"])
    assert all(c["scores"]["boosts"] == [] for c in off["reranked"])


def test_min_score_and_context_overrides(retrieval_graph, corpus):
    state = _run(retrieval_graph, corpus, SIMPLE, min_score=0.0, max_context_chars=10**9, top_n=25)
    assert state["rag"]["profile"]["min_score"] == 0.0
    assert len(state["reranked"]) == min(25, len(state["fused"]))
