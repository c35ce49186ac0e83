"""bridge: a split question that asks for a name it never gives is searched again, each part with the name
its best chunks give (multi-hop retrieval's bridge entity)."""

from __future__ import annotations

import json

import pytest
from langgraph.runtime import Runtime

from graph.algorithms.bridging import bridge_name, named_by_every_part
from graph.context import Context
from graph.graph import compile_graph
from graph.indexing.ingest import ingest_path
from nodes.bridge import bridge

STOPWORDS = {"the", "a", "on", "of", "in", "and", "it", "its", "this", "that"}


def is_stopword(token: str) -> bool:
    return token.casefold() in STOPWORDS


def test_the_name_most_documents_give_that_the_question_does_not():
    chunks = [("tc", "Apple plans to appeal the ITC decision, TechCrunch reported."),
              ("verge", "Apple has spent years listening to consumers. Tim Cook agreed."),
              ("verge", "Tim Cook spoke on Monday.")]
    question = "Which company, reported by TechCrunch, plans to appeal an ITC decision?"
    # "Apple" is in two documents; "Tim Cook" in one (twice); TechCrunch and ITC are the question's own.
    assert bridge_name(question, chunks, is_stopword) == "Apple"
    assert bridge_name("Which company did Apple sue?", chunks, is_stopword) == "Tim Cook"
    assert bridge_name(question, [("x", "nothing here is named.")], is_stopword) is None
    assert bridge_name(question, [], is_stopword) is None


DOCS = [
    ("itc", "TechCrunch", ("Apple will appeal the ITC decision in the patent dispute over its watch sensors, the "
                          "company said on Tuesday.")),
    ("ruling", "TechCrunch", ("Apple lawyers filed to appeal the ITC patent decision, the latest step in a dispute "
                             "over its watches.")),
    ("listening", "The Verge", ("Apple has spent the last decade listening to its buyers in a way it had not "
                               "before.")),
    ("surface", "The Verge", ("Microsoft is more responsive to consumer feedback in recent years: the Surface team "
                             "reads consumer feedback every week and answers consumer forums.")),
    ("cars", "Wired", "Electric car makers face consumer feedback on charging networks."),
]
QUESTION = ("Which company, reported by TechCrunch to be planning to appeal an ITC decision on a patent dispute, "
            "is also known for being more responsive to consumer feedback in recent years, and is covered by The "
            "Verge?")


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    home = tmp_path_factory.mktemp("bridge")
    src = home / "docs.jsonl"
    src.write_text("\n".join(json.dumps({"id": i, "assetName": f"{s} {i}", "content": text,
                                         "metadata": {"source": s, "status": "ready", "isApprovedForAI": True}})
                             for i, s, text in DOCS), encoding="utf-8")
    ingest_path(src, collection="documents", tenant="news", context=Context(home=str(home)))
    return home


def run(home, question, **context):
    return compile_graph(retrieval_only=True).invoke(
        {"question": question}, context=Context(home=str(home), tenant="news", top_n=10, **context))


def test_each_part_is_searched_again_with_the_name_the_evidence_gives(home, write_policy):
    state = run(home, QUESTION)
    parts = [p for p in state["sub_queries"] if p != QUESTION]
    assert len(parts) >= 2 and state["bridge_name"] == "Apple"
    bridged = [r for r in state["hits"].values() if r["kind"] == "bridge"]
    assert sorted(r["sub_query"] for r in bridged) == sorted(f"{p} Apple" for p in parts)
    # The paraphrase of "more responsive to consumer feedback" ("listening to its buyers") is found through the
    # name: the part's own words rank it lower.
    part = next(p for p in parts if "consumer feedback" in p)
    own = next(r for r in state["hits"].values() if r["kind"] == "sub_query" and r["sub_query"] == part)
    again = next(r for r in bridged if r["sub_query"] == f"{part} Apple")
    order = lambda result: [_doc_of(state, c["pointId"]) for c in result["lexical"]]
    place = lambda result: order(result).index("listening") if "listening" in order(result) else len(DOCS)
    assert place(again) < place(own)
    assert "listening" in [c["docId"] for c in state["reranked"][:3]]
    off = run(home, QUESTION, policy_path=str(write_policy(lambda raw: raw["retrieval"].update(bridge_from_chunks=0))))
    assert off["bridge_name"] == "" and not any(r["kind"] == "bridge" for r in off["hits"].values())


def _doc_of(state, point_id):
    return next(c["docId"] for c in state["reranked"] if c["pointId"] == point_id)


def test_a_question_that_asks_no_name_or_is_not_split_or_has_it_off_goes_on(home):
    # Split, but asks a date and a manner, not a name: decompose says so, and bridge never runs.
    state = run(home, "When did Apple appeal the ITC decision on a patent dispute, as TechCrunch reported, and how "
                      "has it become more responsive to consumer feedback according to The Verge?")
    assert len(state["sub_queries"]) == 2 and state["decomposition"]["asks_for_name"] is False
    assert "bridge" not in state["timings_ms"] and state["bridge_name"] is None
    assert not any(r["kind"] == "bridge" for r in state["hits"].values())
    asked_anyway = Runtime(context=Context(home=str(home), tenant="news", top_n=10))
    assert bridge({**state, "bridge_name": None}, asked_anyway)["bridge_name"] == ""  # nothing to look for
    # A question not split goes from rerank to compose: bridge never runs.
    state = run(home, "Which company appealed the ITC decision?")
    assert state["bridge_name"] is None and len(state["hits"]) == 1 and "bridge" not in state["timings_ms"]
    state = run(home, QUESTION, decompose=False)
    assert state["bridge_name"] is None and not any(r["kind"] == "bridge" for r in state["hits"].values())


def test_the_second_rerank_reads_from_the_engine_only_what_the_first_did_not(home, monkeypatch):
    import graph.providers.resources as resources_mod
    import nodes.rerank as rerank_mod
    from graph.providers.vectorstore import open_index

    real = open_index(home)
    asked: list[tuple[str, list[str]]] = []

    class Counting:
        def __getattr__(self, name):
            return getattr(real, name)

        def features(self, *a, **k):
            asked.append(("features", list(k["point_ids"])))
            return real.features(*a, **k)

        def fetch(self, collection, tenant, point_ids, *a, **k):
            asked.append(("fetch", list(point_ids)))
            return real.fetch(collection, tenant, point_ids, *a, **k)

    monkeypatch.setattr(resources_mod, "vector_index_for", lambda ctx: Counting())
    state = run(home, QUESTION)
    assert state["bridge_name"] == "Apple"
    for kind in ("features", "fetch"):
        ids = [pid for k, pids in asked if k == kind for pid in pids]
        assert ids and len(ids) == len(set(ids)), kind  # no candidate read twice in the request
    # The same ranking as when every rerank reads everything again.
    asked.clear()
    monkeypatch.setattr(rerank_mod, "request_reads", lambda request_id, kind: {})
    again = run(home, QUESTION)
    assert [c["id"] for c in again["reranked"]] == [c["id"] for c in state["reranked"]]
    assert len([pid for k, pids in asked if k == "features" for pid in pids]) > len(
        {pid for k, pids in asked if k == "features" for pid in pids})


def test_named_by_every_part_reads_each_parts_best_chunks():
    assert named_by_every_part("Apple", [["Apple will appeal."], ["Ask Apple's buyers.", "Nothing."]])
    assert not named_by_every_part("Apple", [["Apple will appeal."], ["Microsoft listens."]])
    assert not named_by_every_part("Apple", [["Pineapples."]])  # a name, not a word's letters
    assert not named_by_every_part("Apple", [])


NAMED_QUESTION = ("Which company, reported by TechCrunch to be planning to appeal an ITC decision on a patent dispute, "
                  "is also known for listening to its buyers over the last decade, and is covered by The Verge?")


def test_parts_whose_own_best_chunk_names_it_are_not_searched_again(home, write_policy):
    state = run(home, NAMED_QUESTION)
    parts = [p for p in state["sub_queries"] if p != NAMED_QUESTION]
    assert len(parts) >= 2 and "bridge" in state["timings_ms"]
    # Each part's own search ranked an Apple chunk first ("Apple will appeal …", "Apple has spent …", the
    # Verge's Apple story).
    assert state["bridge_name"] == "" and not any(r["kind"] == "bridge" for r in state["hits"].values())
    always = run(home, NAMED_QUESTION,
                 policy_path=str(write_policy(lambda raw: raw["retrieval"].update(bridge_named_depth=0))))
    assert always["bridge_name"] == "Apple"
    assert sorted(r["sub_query"] for r in always["hits"].values() if r["kind"] == "bridge") == sorted(
        f"{p} Apple" for p in parts)


def test_parts_best_chunks_unreadable_means_searched_again(home, monkeypatch):
    import nodes.bridge as bridge_mod

    def failing(*_a, **_k):
        raise TimeoutError("the engine is slow")

    monkeypatch.setattr(bridge_mod, "part_lead_texts", failing)
    state = run(home, NAMED_QUESTION)
    assert state["bridge_name"] == "Apple" and any(r["kind"] == "bridge" for r in state["hits"].values())
    assert any("bridge: the parts' best chunks could not be read" in e for e in state["errors"])
