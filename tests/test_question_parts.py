"""Parts of a question: dates it writes out, values it names, how it is split, and how the top
places are shared between its parts (xQuAD)."""

from __future__ import annotations

import json
from datetime import date

import numpy as np
import pytest

from graph.algorithms.decomposition import split_question
from graph.algorithms.diversity import aspect_relevance, diversify
from graph.algorithms.scoping import date_ranges
from graph.algorithms.text import find_dates
from graph.context import Context
from graph.graph import compile_graph
from graph.indexing.ingest import ingest_path
from graph.policy import load_policy
from graph.providers.vectorstore import point_id
from graph.state import OTHER_LANGUAGE_FLAG


@pytest.fixture(scope="module")
def policy():
    return load_policy()


def _dates(policy, text):
    return [(m.day, m.relation) for m in find_dates(text, policy.languages.months, policy.retrieval.date_relations)]


# --- dates ------------------------------------------------------------------------------------


def test_dates_in_english_portuguese_and_iso(policy):
    assert _dates(policy, "the report published on October 18, 2023 and the one of Nov 2023") == [(date(2023, 10, 18), "on")]
    assert _dates(policy, "publicado em 3 de março de 2024") == [(date(2024, 3, 3), "on")]
    assert _dates(policy, "filed 2023-09-01, reviewed September 2nd, 2023") == [
        (date(2023, 9, 1), "on"), (date(2023, 9, 2), "on")]


def test_date_relations_come_from_the_words_before(policy):
    assert _dates(policy, "as reported before October 4, 2023, and after November 1, 2023") == [
        (date(2023, 10, 4), "before"), (date(2023, 11, 1), "after")]
    assert _dates(policy, "o que mudou depois de 18 de outubro de 2023?") == [(date(2023, 10, 18), "after")]


def test_impossible_dates_and_bare_months_are_not_dates(policy):
    assert _dates(policy, "February 30, 2023 and May we ask about 2023?") == []


def test_date_ranges_use_the_policy_window(policy):
    window = policy.retrieval.date_window_days
    (on,) = date_ranges("published on October 18, 2023", policy)
    assert on == {"gte": f"2023-10-{18 - window:02d}", "lte": f"2023-10-{18 + window:02d}"}
    assert date_ranges("before October 4, 2023", policy) == [{"lt": "2023-10-04"}]
    assert date_ranges("no date here", policy) == []


# --- splitting --------------------------------------------------------------------------------


def test_split_keeps_dates_numbers_and_named_values_whole(policy):
    q = ("Between the Sporting News report on prop bets published on September 28, 2023, and the "
         "Sporting News report on the nature of prop bets published on November 6, 2023, was there "
         "consistency in how bettors were described?")
    subs = split_question(q, policy, "en", ["Sporting News"])
    assert any("September 28, 2023" in s for s in subs) and any("November 6, 2023" in s for s in subs)
    q2 = "Did The Roar | Sports Writers Blog and Procter and Gamble both report a $1,500 fine, and who paid it?"
    subs2 = split_question(q2, policy, "en", ["The Roar | Sports Writers Blog", "Procter and Gamble"])
    joined = " ".join(subs2)
    assert "The Roar | Sports Writers Blog" in joined and "Procter and Gamble" in joined and "$1,500" in joined


def test_short_clauses_join_their_neighbour_and_nothing_is_dropped(policy):
    q = ("Which company was depicted as an antagonist by Epic Games in a legal case reported by The Verge, "
         "is considered by Apple as the only viable search engine according to a court defense also covered by "
         "The Verge, and is accused in an antitrust suit reported by TechCrunch of harming news publishers, "
         "and is fined by regulators in Europe for its advertising business?")
    subs = split_question(q, policy, "en", ["The Verge", "TechCrunch"])
    assert 2 <= len(subs) <= policy.raw["decomposition"]["max_subqueries"]
    assert not any(s.strip().lower() in {"covered by the verge", "the verge"} for s in subs)
    for needle in ("Epic Games", "Apple", "TechCrunch", "regulators in Europe"):  # every part survives the cap
        assert any(needle in s for s in subs), needle


# --- diversification --------------------------------------------------------------------------


def _chunks(scores):
    return [{"id": f"c{i}", "scores": {"rerank": s}} for i, s in enumerate(scores)]


def test_diversify_gives_each_part_a_top_place():
    # c0..c2 answer part A (and are the most relevant overall), c3 answers part B.
    aspects = np.array([[1, 0], [0.9, 0], [0.8, 0], [0, 1]], dtype=float)
    out = diversify(_chunks([1.0, 0.95, 0.9, 0.6]), aspects, weight=0.8, n=4)
    assert [c["id"] for c in out[:2]] == ["c0", "c3"]
    assert out[1]["scores"]["diversity_rank"] == 2


def test_a_part_whose_first_chunk_only_partly_answers_it_keeps_a_claim_on_the_next_places():
    # c0 is part A's first chunk, c1 part B's; c2 is A's second (often the one that states the fact), c3
    # answers neither part but is a little more relevant than c2.
    aspects = np.array([[1, 0], [0, 1], [0.61, 0], [0, 0]], dtype=float)
    order = lambda coverage: [c["id"] for c in diversify(_chunks([1.0, 0.5, 0.3, 0.35]), aspects, weight=0.8, n=4,
                                                         coverage=coverage)]
    assert order(1.0) == ["c0", "c1", "c3", "c2"]  # xQuAD's own: A was answered by c0
    assert order(0.4) == ["c0", "c1", "c2", "c3"]


def test_a_part_whose_nearest_chunk_is_in_another_language_is_ordered_by_meaning():
    # "… e qual é a taxa de devolução online?" over a mixed collection: the part's dense list finds the English
    # returns report first, its words a Portuguese note that holds "devolução" and "online". The words cannot
    # reach across languages, so the part's own order is its dense list's; a part whose nearest chunk is in the
    # question's language keeps both lists fused.
    hit = lambda pid: {"id": pid, "pointId": pid}
    hits = {"retrieve[1]": {"kind": "sub_query", "sub_query": "qual é a taxa de devolução online",
                            "dense": [hit("en-returns"), hit("pt-legal")], "lexical": [hit("pt-legal"), hit("pt-ops")]},
            "retrieve[2]": {"kind": "sub_query", "sub_query": "qual é o orçamento de mídia",
                            "dense": [hit("pt-plan"), hit("pt-legal")], "lexical": [hit("pt-legal"), hit("pt-plan")]}}
    chunks = [{"pointId": "pt-plan"}, {"pointId": "pt-legal"}, {"pointId": "pt-ops"},
              {"pointId": "en-returns", "flags": [OTHER_LANGUAGE_FLAG]}]
    rel = aspect_relevance(hits, "the whole question", chunks, rank_decay=2.0)
    returns, legal, plan = 3, 1, 0
    assert rel[returns, 0] == 1.0 and rel[legal, 0] < rel[returns, 0] and rel[2, 0] == 0.0  # dense alone
    # The budget part's nearest chunk is Portuguese: both lists, fused (the plan and the note tie, one first).
    assert sorted([rel[plan, 1], rel[legal, 1]]) == pytest.approx([np.exp(-0.5), 1.0]) and rel[returns, 1] == 0.0


def test_diversify_off_or_single_aspect_keeps_relevance_order():
    chunks = _chunks([1.0, 0.95, 0.9, 0.6])
    aspects = np.array([[1, 0], [0.9, 0], [0.8, 0], [0, 1]], dtype=float)
    assert [c["id"] for c in diversify(chunks, aspects, weight=0.0, n=4)] == ["c0", "c1", "c2", "c3"]
    assert [c["id"] for c in diversify(chunks, aspects[:, :1], weight=0.8, n=4)] == ["c0", "c1", "c2", "c3"]


# --- parts searched within what they name -----------------------------------------------------

DOCS = [
    ("sn-sep", "Sporting News", "2023-09-28", "Prop bets on Travis Kelce props for Chiefs-Jets week four offered bettors value."),
    ("sn-nov", "Sporting News", "2023-11-06", "Prop bets remain a fun way for bettors to find value in odd markets."),
    ("sn-oct", "Sporting News", "2023-10-15", "Prop bets were everywhere this week as bettors chased value."),
    ("tc-oct", "TechCrunch", "2023-10-18", "Prop bets apps raised funding as bettors flocked to value markets."),
]


@pytest.fixture(scope="module")
def news_home(tmp_path_factory):
    home = tmp_path_factory.mktemp("parts")
    src = home / "docs.jsonl"
    src.write_text("\n".join(json.dumps({"id": i, "assetName": f"{s} {d}", "content": text,
                                         "metadata": {"source": s, "date": d, "status": "ready", "isApprovedForAI": True}})
                             for i, s, d, text in DOCS), encoding="utf-8")
    ingest_path(src, collection="documents", tenant="news", context=Context(home=str(home)))
    return home


def _doc_of(point):
    return {str(point_id("news", d[0], 0)): d[0] for d in DOCS}[point]


def test_dated_mentions_get_searches_restricted_to_those_days(news_home):
    q = ("Compare the Sporting News report on prop bets published on September 28, 2023, and the Sporting News "
         "report on prop bets published on November 6, 2023: was there consistency in how bettors were described?")
    state = compile_graph(retrieval_only=True).invoke(
        {"question": q}, context=Context(home=str(news_home), tenant="news", top_n=10))
    dated = {k: r for k, r in state["hits"].items() if r["kind"] == "scoped" and "date=" in k}
    found = sorted({_doc_of(c["pointId"]) for r in dated.values() for c in r["dense"] + r["lexical"]})
    assert len(dated) == 2 and found == ["sn-nov", "sn-sep"]
    # the parts naming one date each are searched within that day's Sporting News reports
    assert state["decomposition"]["decomposed"]
    parts = [r for r in state["hits"].values() if r["kind"] == "sub_query" and r["sub_query"] != q]
    per_part = [{_doc_of(c["pointId"]) for c in r["dense"] + r["lexical"]} for r in parts]
    assert {"sn-sep"} in per_part and {"sn-nov"} in per_part
    assert {c["docId"] for c in state["reranked"][:2]} == {"sn-sep", "sn-nov"}


def test_before_and_after_are_open_ranges(news_home):
    state = compile_graph(retrieval_only=True).invoke(
        {"question": "Which prop bets stories did Sporting News publish before October 20, 2023?"},
        context=Context(home=str(news_home), tenant="news", top_n=10))
    (dated,) = [r for k, r in state["hits"].items() if "date=" in k]
    assert {_doc_of(c["pointId"]) for c in dated["dense"] + dated["lexical"]} == {"sn-sep", "sn-oct"}


def test_diversify_keeps_the_most_relevant_chunk_first():
    # c1 covers both parts, but c0 answers the whole question best: it keeps the first place.
    aspects = np.array([[0.2, 0.2], [1, 1], [0, 0]], dtype=float)
    out = diversify(_chunks([1.0, 0.5, 0.4]), aspects, weight=0.9, n=3)
    assert [c["id"] for c in out] == ["c0", "c1", "c2"]


def test_before_and_after_the_same_day_are_two_searches_and_a_repeated_date_one(news_home):
    state = compile_graph(retrieval_only=True).invoke(
        {"question": "Which prop bets stories did Sporting News publish before October 15, 2023, or after "
                     "October 15, 2023, and which on October 15, 2023 and October 15, 2023?"},
        context=Context(home=str(news_home), tenant="news", top_n=10))
    dated = {k: {_doc_of(c["pointId"]) for c in r["dense"] + r["lexical"]}
             for k, r in state["hits"].items() if r["kind"] == "scoped" and "date=" in k}
    # before: sn-sep; after: sn-nov; on (± the window): sn-oct, searched once
    assert sorted(map(sorted, dated.values())) == [["sn-nov"], ["sn-oct"], ["sn-sep"]]
