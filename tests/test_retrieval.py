"""retrieve / rrf: Reciprocal Rank Fusion by hand, dedupe, a really parallel fan-out,
performance injection, and the reranker's weighing of questions over text in another language."""

from __future__ import annotations

import threading
import time

import pytest
from conftest import SAMPLES

import nodes.retrieve as retrieve_mod
from graph.algorithms.fusion import RRF_K, reciprocal_rank_fusion
from graph.algorithms.passages import best_sentence_match
from graph.algorithms.rerank_scores import base_scores, blend, on_score_scale, sentence_evidence
from graph.algorithms.text import get_analyzer
from graph.indexing.ingest import render_performance_snapshot
from graph.policy import LongQuestions, RerankSettings, load_policy
from graph.providers.embeddings import get_embeddings
from graph.providers.resources import Resources
from graph.providers.vectorstore import open_index, point_id
from graph.state import OTHER_LANGUAGE_FLAG
from nodes.rrf import rrf


def chunk(cid: str, engine: float = 0.5) -> dict:
    return {"id": cid, "docId": cid.split("#")[0], "content": f"text of {cid}", "metadata": {},
            "scores": {"engine": engine}}


# --- RRF --------------------------------------------------------------------------------------


def test_rrf_k_is_sixty():
    assert RRF_K == 60


def test_rrf_matches_hand_computed_scores_and_order():
    a, b, c, d = chunk("a#0"), chunk("b#0"), chunk("c#0"), chunk("d#0")
    lists = [[a, b, c], [c, a], [d]]
    # a: ranks 1 and 2; b: rank 2; c: ranks 3 and 1; d: rank 1
    expected = {
        "a#0": 1 / 61 + 1 / 62,
        "b#0": 1 / 62,
        "c#0": 1 / 63 + 1 / 61,
        "d#0": 1 / 61,
    }
    fused = reciprocal_rank_fusion(lists)
    assert [ch["id"] for ch in fused] == sorted(expected, key=lambda k: -expected[k])
    assert [ch["id"] for ch in fused] == ["a#0", "c#0", "d#0", "b#0"]  # 1/61 > 1/62
    for ch in fused:
        assert ch["scores"]["fused"] == pytest.approx(expected[ch["id"]], abs=1e-6)


def test_rrf_custom_k():
    fused = reciprocal_rank_fusion([[chunk("x#0"), chunk("y#0")]], k=1)
    assert [c["scores"]["fused"] for c in fused] == pytest.approx([1 / 2, 1 / 3], abs=1e-6)


def test_rrf_ties_break_by_id():
    fused = reciprocal_rank_fusion([[chunk("zeta#0")], [chunk("alpha#0")]])
    assert [c["id"] for c in fused] == ["alpha#0", "zeta#0"]
    assert fused[0]["scores"]["fused"] == fused[1]["scores"]["fused"]


def test_rrf_dedupes_by_chunk_id():
    lists = [[chunk("a#0"), chunk("b#0")], [chunk("b#0"), chunk("a#0")], [chunk("a#1")]]
    fused = reciprocal_rank_fusion(lists)
    ids = [c["id"] for c in fused]
    assert sorted(ids) == ["a#0", "a#1", "b#0"]
    assert len(ids) == len(set(ids))


def test_rrf_node_fuses_every_branch_and_keeps_best_engine_scores():
    hits = {
        "retrieve[0]": {"sub_query": "q0", "kind": "sub_query",
                        "dense": [chunk("a#0", 0.9), chunk("b#0", 0.8)], "lexical": [chunk("b#0", 7.0)]},
        "retrieve[1]": {"sub_query": "q1", "kind": "sub_query",
                        "dense": [chunk("a#0", 0.95)], "lexical": [chunk("c#0", 3.0), chunk("a#0", 2.0)]},
    }
    out = rrf({"hits": hits}, None)["fused"]
    by_id = {c["id"]: c for c in out}
    assert set(by_id) == {"a#0", "b#0", "c#0"}
    # a: dense r1 (branch 0), dense r1 (branch 1), lexical r2 (branch 1)
    assert by_id["a#0"]["scores"]["fused"] == pytest.approx(2 / 61 + 1 / 62, abs=1e-6)
    assert by_id["a#0"]["scores"]["dense"] == 0.95 and by_id["a#0"]["scores"]["lexical"] == 2.0
    assert by_id["b#0"]["scores"]["lexical"] == 7.0
    assert by_id["c#0"]["scores"]["dense"] is None
    assert out[0]["id"] == "a#0"


# --- parallel fan-out -------------------------------------------------------------------------


class SlowIndex:
    """Delegates to the real index, but every search sleeps first and records when it ran."""

    def __init__(self, inner, delay: float):
        self.inner, self.delay = inner, delay
        self.calls: list[tuple[int, float, float]] = []
        self._lock = threading.Lock()

    def search(self, collection, **kw):
        start = time.perf_counter()
        time.sleep(self.delay)
        result = self.inner.search(collection, **kw)
        end = time.perf_counter()
        with self._lock:
            self.calls.append((threading.get_ident(), start, end))
        return result

    def __getattr__(self, name):
        return getattr(self.inner, name)


def test_fan_out_runs_branches_in_parallel(ask, corpus, monkeypatch):
    delay = 0.4
    slow = SlowIndex(open_index(corpus.home), delay)

    def slow_resources(ctx):
        return Resources(index=slow, embeddings=get_embeddings(ctx.embedding_model, ctx.home_path))

    monkeypatch.setattr(retrieve_mod, "get_resources", slow_resources)
    q = "Compare as vendas de inverno de 2025 e 2026 e quais ações o playbook recomenda?"
    started = time.perf_counter()
    state = ask(q)
    wall = time.perf_counter() - started

    assert len(state["sub_queries"]) == 3
    assert state["rag"]["performance_injection"] is False
    assert len(slow.calls) == 4  # the whole question and each of its three sub-queries
    starts, ends = [c[1] for c in slow.calls], [c[2] for c in slow.calls]
    assert max(starts) < min(ends), "every search interval overlaps every other one"
    assert len({c[0] for c in slow.calls}) == 4, "each branch ran on its own thread"
    serial = delay * len(slow.calls)
    assert wall < 0.75 * serial, f"wall {wall:.2f}s vs serial sum {serial:.2f}s"
    # the slow index still served real results
    assert state["reranked"] and state["citations_used"]


def test_the_question_and_each_subquery_get_their_own_branch(ask):
    q = "Compare as vendas de inverno de 2025 e 2026 e quais ações o playbook recomenda?"
    state = ask(q)
    n = len(state["sub_queries"]) + 1
    assert sorted(state["hits"]) == [f"retrieve[{i}]" for i in range(n)]
    assert [state["hits"][f"retrieve[{i}]"]["sub_query"] for i in range(n)] == [q, *state["sub_queries"]]
    assert all(f"retrieve[{i}]" in state["timings_ms"] for i in range(n))


def test_fused_has_no_duplicate_chunks_across_branches(ask):
    state = ask("Compare as vendas de inverno de 2025 e 2026 e quais ações o playbook recomenda?")
    ids = [c["id"] for c in state["fused"]]
    assert len(ids) == len(set(ids))
    all_ids = {c["id"] for r in state["hits"].values() for c in r["dense"] + r["lexical"]}
    assert set(ids) == all_ids
    fused_scores = [c["scores"]["fused"] for c in state["fused"]]
    assert fused_scores == sorted(fused_scores, reverse=True)


def test_the_engine_scores_every_branchs_candidates_once_against_the_whole_question(ask, corpus, monkeypatch):
    import graph.providers.resources as resources_mod

    real = open_index(corpus.home)
    calls: list[tuple[str, dict]] = []

    class Counting:
        def __getattr__(self, name):
            return getattr(real, name)

        def search(self, *a, **k):
            calls.append(("search", k))
            return real.search(*a, **k)

        def features(self, *a, **k):
            calls.append(("features", k))
            return real.features(*a, **k)

    monkeypatch.setattr(resources_mod, "vector_index_for", lambda ctx: Counting())
    q = "Compare as vendas de inverno de 2025 e 2026 e quais ações o playbook recomenda?"
    state = ask(q)
    searches = [k for name, k in calls if name == "search"]
    features = [k for name, k in calls if name == "features"]
    assert len(searches) == len(state["sub_queries"]) + 1 and len(features) == 1  # one collection, one request
    assert set(features[0]["point_ids"]) == {c["pointId"] for c in state["fused"]}
    # The boosts' conditions, and (the sample collection mixes languages) the other-language flag.
    assert set(features[0]["flags"]) == {"recency", "playbook", OTHER_LANGUAGE_FLAG}
    # The whole question's own branch searched the dense list with the vector the features were scored
    # against: there, a chunk's dense score is its similarity.
    whole = state["hits"]["retrieve[0]"]
    assert whole["sub_query"] == q
    similarity = {c["pointId"]: c["similarity"] for c in state["fused"]}
    assert whole["dense"] and all(abs(similarity[c["pointId"]] - c["scores"]["engine"]) < 1e-4 for c in whole["dense"])
    analyzer = get_analyzer(load_policy())
    question_terms = set(analyzer.terms(q, "pt"))
    assert all(set(c["matchedTerms"]) <= question_terms for c in state["fused"])
    assert any(c["matchedTerms"] for c in state["reranked"])


def test_rerank_scores_only_the_first_candidates_of_the_fused_list(ask, corpus, write_policy, monkeypatch):
    import graph.providers.resources as resources_mod

    real = open_index(corpus.home)
    asked: list[str] = []

    class Counting:
        def __getattr__(self, name):
            return getattr(real, name)

        def features(self, *a, **k):
            asked.extend(k["point_ids"])
            return real.features(*a, **k)

    monkeypatch.setattr(resources_mod, "vector_index_for", lambda ctx: Counting())
    q = "Compare as vendas de inverno de 2025 e 2026 e quais ações o playbook recomenda?"
    policy = write_policy(lambda raw: raw["rerank"].update(candidates=1))
    state = ask(q, context=corpus.context("acme", policy_path=str(policy), top_n=3))
    # Never fewer than twice the chunks a run keeps: the 3 of top_n here.
    first = [c["pointId"] for c in state["fused"][:6]]
    assert len(state["fused"]) > 6 and sorted(asked) == sorted(first)
    assert state["reranked"] and {c["pointId"] for c in state["reranked"]} <= set(first)
    asked.clear()
    everything = ask(q, context=corpus.context("acme", top_n=3))  # the default, 100: all of them here
    assert sorted(asked) == sorted(c["pointId"] for c in everything["fused"])


@pytest.mark.parametrize("setting, language, collections, embedded", [
    ("auto", "en", ["en"], False),           # words match the documents': the part is searched by them
    ("auto", "pt", ["pt", "pt"], False),
    ("auto", "en", ["pt"], True),            # across languages only meaning can match
    ("auto", "pt", ["mixed"], True),
    ("auto", "en", ["en", None], True),      # a collection that records no language
    ("always", "en", ["en"], True),
    ("never", "en", ["pt"], False),
])
def test_a_part_is_embedded_only_where_its_words_may_not_match(setting, language, collections, embedded):
    assert retrieve_mod.part_needs_vector(setting, language, collections) is embedded


def test_parts_searched_by_words_only_ask_the_model_for_the_whole_question_alone(ask, corpus, write_policy,
                                                                                 monkeypatch):
    from graph.runtime import query_vectors

    embedded: list[str] = []
    real_embed = query_vectors._embed
    monkeypatch.setattr(query_vectors, "_embed", lambda ctx, model, text, problems, cached_only:
                        (embedded.append(text) if not cached_only else None)
                        or real_embed(ctx, model, text, problems, cached_only))
    q = "Compare as vendas de inverno de 2025 e 2026 e quais ações o playbook recomenda?"
    policy = write_policy(lambda raw: raw["retrieval"].update(part_vectors="never"))
    state = ask(q, context=corpus.context("acme", policy_path=str(policy)))
    parts = state["sub_queries"]
    assert len(parts) == 3 and embedded == [q]
    for i in range(1, len(parts) + 1):
        branch = state["hits"][f"retrieve[{i}]"]
        assert branch["dense"] == [] and branch["lexical"] and "error" not in branch
    assert state["reranked"] and not state.get("errors")
    # The sample collection mixes languages: under the default ("auto") every part is embedded too.
    embedded.clear()
    ask(q, context=corpus.context("acme"))
    assert sorted(embedded) == sorted([q, *parts])


def test_failing_branch_is_recorded_and_graph_finishes(ask, corpus, monkeypatch):
    class Broken:
        def search(self, *a, **k):
            raise RuntimeError("engine down")

    monkeypatch.setattr(retrieve_mod, "get_resources",
                        lambda ctx: Resources(index=Broken(), embeddings=get_embeddings(ctx.embedding_model,
                                                                                        ctx.home_path)))
    state = ask("Quanto cresceram as vendas de inverno em 2025?")
    assert any("engine down" in e for e in state["errors"])
    assert state["coverage_level"] == "none"
    assert state["answer"]


# --- performance injection --------------------------------------------------------------------


def test_render_performance_snapshot_reads_the_numbers():
    text = render_performance_snapshot({"ctr": 0.034, "cvr": 0.021, "cpc": 1.85, "roas": 4.2,
                                        "period": "2026-Q1", "status": "active"})
    assert "(2026-Q1)" in text
    assert "CTR 3.40%" in text and "CVR 2.10%" in text
    assert "CPC 1.85" in text and "ROAS 4.2" in text
    assert "status active" in text


def test_performance_question_adds_performance_branch(ask, corpus):
    state = ask("Qual foi o ROAS da campanha no TikTok e como otimizar o CPC?")
    assert state["rag"]["performance_injection"] is True
    perf = [r for r in state["hits"].values() if r["kind"] == "performance"]
    assert len(perf) == 1
    chunks = perf[0]["dense"] + perf[0]["lexical"]
    assert chunks
    perf_docs = {i for i, d in corpus.docs["acme"].items() if d["metadata"].get("docType") == "performance"}
    perf_points = {str(point_id("acme", d, i)) for d in perf_docs for i in range(8)}
    for c in chunks:
        assert c["pointId"] in perf_points
    # the snapshot is rendered into the indexed text, so what compose sees carries it
    kept = [c for c in state["reranked"] if c["docId"] in perf_docs]
    assert kept
    for c in kept:
        snap = corpus.docs["acme"][c["docId"]]["metadata"]["performance_snapshot"]
        assert render_performance_snapshot(snap) in c["content"]


def test_question_without_performance_words_has_no_performance_branch(ask):
    state = ask("Qual é o prazo médio de entrega do e-commerce no Nordeste?")
    assert state["rag"]["performance_injection"] is False
    assert all(r["kind"] == "sub_query" for r in state["hits"].values())


# --- boosts -----------------------------------------------------------------------------------


def test_boosts_follow_the_year_and_doc_type_of_each_chunk(ask, corpus):
    from dataclasses import replace

    ctx = replace(corpus.context("acme"), current_year=2026, top_n=10)
    state = ask("O que o playbook de campanhas de inverno recomenda?", context=ctx)
    assert state["reranked"]
    seen_playbook = seen_other_year = False
    for c in state["reranked"]:
        meta = corpus.docs["acme"][c["docId"]]["metadata"]
        year = int(str(meta.get("version") or meta.get("date"))[:4])
        names = {b["name"] for b in c["scores"]["boosts"]}
        assert ("recency" in names) == (year == 2026), c["docId"]
        assert ("playbook" in names) == (meta.get("docType") == "playbook"), c["docId"]
        factor = 1.0
        for b in c["scores"]["boosts"]:
            factor *= b["factor"]
        assert abs(c["scores"]["rerank"] - c["scores"]["rerank_base"] * factor) < 1e-3
        seen_playbook |= "playbook" in names
        seen_other_year |= year != 2026
    assert seen_playbook and seen_other_year


def test_recency_boost_moves_with_the_current_year(ask, corpus):
    from dataclasses import replace

    q = "O que o playbook de campanhas de inverno recomenda?"
    for year in (2025, 2026):
        state = ask(q, context=replace(corpus.context("acme"), current_year=year, top_n=10))
        boosted = {c["docId"] for c in state["reranked"] if any(b["name"] == "recency" for b in c["scores"]["boosts"])}
        for doc_id in boosted:
            meta = corpus.docs["acme"][doc_id]["metadata"]
            assert str(meta.get("version") or meta.get("date")).startswith(str(year))


# --- questions in one language over text in another ---------------------------------------------


def _candidate(cid: str, similarity: float, terms: list[int], bm25: float, same_language: bool) -> dict:
    return {"id": cid, "pointId": cid, "collection": "documents", "similarity": similarity, "matchedTerms": terms,
            "flags": [] if same_language else [OTHER_LANGUAGE_FLAG],
            "scores": {"fused": 0.03, "lexical": bm25}}


def test_other_language_chunk_is_ranked_by_meaning_when_the_neighbours_are_mixed():
    # An English question; the chunk that answers it is Portuguese (dense 0.8, no word in common), an
    # English one only shares its words. Half of the nearest chunks are in the question's language.
    answer = _candidate("pt-answer", 0.50, [], 0.0, same_language=False)
    words_only = _candidate("en-words", 0.11, [1, 2, 3], 9.0, same_language=True)
    others = [_candidate(f"n{i}", 0.2, [1], 1.0, same_language=i % 2 == 0) for i in range(8)]
    settings = load_policy().rerank  # the shipped weights for USE's collections: lexical-heavy
    ranked = base_scores({1, 2, 3, 4}, [words_only, answer, *others], settings)
    assert ranked[0]["id"] == "pt-answer"
    assert ranked[0]["scores"]["question_language_share"] == 0.5
    # Without the language flags the same numbers rank the word match first: the flags made the difference.
    for c in (answer, words_only, *others):
        c["flags"] = []
    assert base_scores({1, 2, 3, 4}, [words_only, answer, *others], settings)[0]["id"] == "en-words"


def test_one_language_questions_keep_their_scores():
    settings = RerankSettings()
    chunks = [_candidate(f"c{i}", 0.1 * i, [1, 2][: i % 3], float(i), same_language=True) for i in range(1, 7)]
    before = {c["id"]: c["scores"]["rerank_base"] for c in base_scores({1, 2}, [dict(c) for c in chunks], settings)}
    w = settings.weights
    for c in base_scores({1, 2}, chunks, settings):
        s = c["scores"]
        assert "question_language_share" not in s
        assert s["rerank_base"] == pytest.approx(w.dense * s["dense_relevance"] + w.lexical * s["lexical_relevance"]
                                                 + w.bm25 * s["bm25_relevance"] + w.fused * s["fused_relevance"])
        assert s["rerank_base"] == before[c["id"]]
    # No dense search (no similarity, no flags): nothing to compare languages by, scores unchanged.
    lexical_only = [dict(c, similarity=0.0, flags=[OTHER_LANGUAGE_FLAG]) for c in chunks]
    assert all("question_language_share" not in c["scores"] for c in base_scores({1, 2}, lexical_only, settings))


def test_english_question_finds_the_portuguese_playbook(ask):
    state = ask("What does the 2026 winter campaign playbook recommend?")
    assert state["reranked"][0]["docId"] == "acme-playbook-inverno-2026"
    assert "acme-playbook-inverno-2026" in state["citations_used"]


def test_a_subject_nothing_in_the_questions_language_speaks_of_is_not_imputed():
    # The English chunks hold none of the question's rarer words, and the nearest chunk in meaning is
    # Portuguese by less than the margin: the Portuguese chunk's missing words are not taken for a match,
    # and the scores are the one-language ones.
    settings = load_policy().rerank
    margin = settings.cross_lingual.meaning_margin
    foreign = _candidate("pt", 0.2 + margin / 2, [], 0.0, same_language=False)
    english = [_candidate(f"en{i}", 0.2, [1], 1.0, same_language=True) for i in range(4)]
    others = [_candidate(f"pt{i}", 0.18, [], 0.0, same_language=False) for i in range(5)]
    ranked = base_scores({1, 2, 3, 4, 5}, [foreign, *english, *others], settings)
    assert all("question_language_share" not in c["scores"] for c in ranked)
    # Once the English chunks attest the subject, the same Portuguese chunk is weighed by meaning.
    english = [_candidate(f"en{i}", 0.2, [1, 2, 3, 4, 5], 1.0, same_language=True) for i in range(4)]
    ranked = base_scores({1, 2, 3, 4, 5}, [foreign, *english, *others], settings)
    assert "question_language_share" in ranked[0]["scores"]


def test_a_question_whose_meaning_is_nearest_to_the_other_language_is_weighed_by_meaning():
    # "Quais foram as vendas líquidas da Globex no primeiro trimestre de 2026?" over an English report: the
    # Portuguese chunks share a few of its words only, but the English report is nearest in meaning by more
    # than the margin. Its missing words are missing across languages, not evidence against it.
    settings = load_policy().rerank
    margin = settings.cross_lingual.meaning_margin
    report = _candidate("en-report", 0.40 + margin + 0.01, [5], 1.0, same_language=False)
    portuguese = [_candidate(f"pt{i}", 0.40, [1, 2], 4.0, same_language=True) for i in range(4)]
    others = [_candidate(f"en{i}", 0.3, [], 0.0, same_language=False) for i in range(5)]
    ranked = base_scores({1, 2, 3, 4, 5}, [report, *portuguese, *others], settings)
    assert ranked[0]["id"] == "en-report" and "question_language_share" in ranked[0]["scores"]
    # Nearer by less than the margin: the word matches in the question's language keep the lead.
    report["similarity"] = 0.40 + margin - 0.01
    ranked = base_scores({1, 2, 3, 4, 5}, [report, *portuguese, *others], settings)
    assert ranked[0]["id"] != "en-report" and "question_language_share" not in ranked[0]["scores"]


def test_a_portuguese_question_finds_the_english_report_of_the_samples(ask):
    state = ask("Quais foram as vendas líquidas da Globex no primeiro trimestre de 2026?", tenant="globex")
    assert state["reranked"][0]["docId"] == "globex-bi-2026-q1-sales"
    assert state["coverage_level"] != "none" and "$968.3 million" in state["answer"].split("\n")[0], state["answer"]


def test_a_null_question_in_english_over_the_mixed_samples_still_finds_nothing(ask):
    state = ask("What is Acme Moda's carbon-emissions reduction target for 2030?")
    assert state["coverage_level"] == "none" and not state["citations_used"], state["answer"]


def test_the_null_question_finds_nothing_over_its_tenants_documents_alone_too(tmp_path, compiled):
    """What a tenant is told must not lean on what another tenant stores. Over acme's documents alone (whose
    term statistics are then acme's own) the Black Week playbook's revenue target reached the relevance floor and
    was given as a low-coverage answer; globex's documents beside them had kept it under. No acme document speaks
    of 2030: the question is unanswered either way."""
    from graph.context import Context
    from graph.indexing.ingest import ingest_path

    ingest_path(SAMPLES / "acme", collection="documents", tenant="acme", context=Context(home=str(tmp_path), tenant=None))
    state = compiled.invoke({"question": "What is Acme Moda's carbon-emissions reduction target for 2030?"},
                            context=Context(home=str(tmp_path), tenant="acme"))
    assert state["coverage_level"] == "none" and not state["citations_used"], state["answer"]
    assert "2030" in state["answer"], state["answer"]  # named as what the documents do not speak of


# --- long, many-part questions ---------------------------------------------------------------------


def test_a_questions_length_share_moves_its_weights_from_short_to_long():
    policy = load_policy()
    settings = policy.rerank
    lq = settings.long_questions
    assert settings.length_share(lq.short_terms) == 0.0 and settings.length_share(lq.long_terms) == 1.0
    assert settings.length_share(lq.short_terms - 5) == 0.0 and settings.length_share(lq.long_terms + 9) == 1.0
    assert 0 < settings.length_share((lq.short_terms + lq.long_terms) // 2) < 1
    model = settings.for_model("local/bge-small")
    assert blend(model.weights, model.long_question_weights, 0.0) == model.weights
    assert blend(model.weights, model.long_question_weights, 1.0) == model.long_question_weights
    assert blend(model.weights, None, 1.0) == model.weights  # a model without long weights keeps its own
    half = blend(model.weights, model.long_question_weights, 0.5)
    assert half.dense == pytest.approx((model.weights.dense + model.long_question_weights.dense) / 2)
    # The same candidates rank otherwise for a long question: bge-small's long weights lean on BM25.
    close_in_meaning = dict(_candidate("meaning", 0.85, [1], 1.0, True), collection="en")
    exact_words = dict(_candidate("words", 0.62, [1, 2, 3, 4], 9.0, True), collection="en")
    by_collection = {"en": model}
    short = base_scores({1, 2, 3, 4}, [dict(close_in_meaning), dict(exact_words)], settings, by_collection, 0.0)
    long = base_scores({1, 2, 3, 4}, [dict(close_in_meaning), dict(exact_words)], settings, by_collection, 1.0)
    assert short[0]["id"] == "meaning" and long[0]["id"] == "words"


def test_best_sentence_match_scores_one_sentence_holding_a_part_above_words_spread_thin():
    analyzer = get_analyzer(load_policy())
    terms_of = lambda text: analyzer.terms(text, "en")
    parts = [set(terms_of("Britney Spears was forced to take lithium")), set(terms_of("Kevin Federline praised her"))]
    one_sentence = ("The singer spoke at a hearing in Los Angeles. In court, Spears said she had been forced to take "
                    "lithium against her will. The judge adjourned.")
    spread = ("Spears released an album. Critics were forced to revise their views. Lithium prices rose this year. "
              "Federline moved to Hawaii.")
    unrelated = "Electricity costs rose by a fifth after the new contract took effect."
    sentence_terms = lambda text: analyzer.sentence_terms(text, "en")
    scores = best_sentence_match([one_sentence, spread, unrelated], parts, sentence_terms)
    assert scores[0] > 0.6 and scores[0] > scores[1] > scores[2] == 0.0
    assert best_sentence_match([one_sentence], [set()], sentence_terms) == [0.0]
    assert best_sentence_match([], parts, sentence_terms) == []


def test_sentence_evidence_reads_the_best_candidates_of_a_long_question_only():
    settings = LongQuestions(short_terms=5, long_terms=10, sentence_weight=0.5, candidates=2)
    texts = {"a": "Nothing here matches.", "b": "Spears said she was forced to take lithium.",
             "c": "Spears was forced to take lithium, she said."}
    chunks = [{"id": cid, "content": texts[cid], "flags": [], "scores": {"rerank_base": base, "dense_relevance": 0.5}}
              for cid, base in (("a", 0.9), ("b", 0.8), ("c", 0.7))]
    read: list[list[str]] = []

    def read_texts(head):
        read.append([c["id"] for c in head])
        return head

    analyzer = get_analyzer(load_policy())
    terms_of = lambda text: analyzer.terms(text, "en")
    parts = [set(terms_of("forced to take lithium"))]
    sentence_terms = lambda text: analyzer.sentence_terms(text, "en")
    ranked = sentence_evidence([dict(c, scores=dict(c["scores"])) for c in chunks], parts, 1.0, settings,
                               read_texts, sentence_terms)
    assert read == [["a", "b"]]  # only the best `candidates`
    assert [c["id"] for c in ranked] == ["b", "a", "c"]  # b's sentence lifts it; c was not read
    assert ranked[0]["scores"]["sentence_relevance"] == pytest.approx(1.0)
    assert "sentence_relevance" not in ranked[2]["scores"]
    # A short question (length share 0), or a weight of 0: nothing is read, the order stands.
    read.clear()
    same = sentence_evidence([dict(c, scores=dict(c["scores"])) for c in chunks], parts, 0.0, settings, read_texts,
                             sentence_terms)
    assert read == [] and [c["id"] for c in same] == ["a", "b", "c"]


def test_a_long_questions_order_carries_the_score_blends_values():
    # Ordered by the long-question weights, scored on the blend the composer's floors were set on: the
    # k-th place gets the k-th best score, so a floor passes as many chunks as before, in the new order.
    model = load_policy().rerank.for_model("local/bge-small")
    assert model.score_weights is not None and model.score_weights != model.long_question_weights
    settings = load_policy().rerank
    chunks = [dict(_candidate("meaning", 0.85, [1], 1.0, True), collection="en"),
              dict(_candidate("words", 0.62, [1, 2, 3, 4], 9.0, True), collection="en"),
              dict(_candidate("neither", 0.55, [2], 2.0, True), collection="en")]
    scored = base_scores({1, 2, 3, 4}, chunks, settings, {"en": model}, 1.0)
    scale = sorted((c["scores"]["scale_base"] for c in scored), reverse=True)
    order = [c["id"] for c in scored]
    ranked = on_score_scale(scored)
    assert [c["id"] for c in ranked] == order == ["words", "meaning", "neither"]
    assert [c["scores"]["rerank_base"] for c in ranked] == scale
    assert all("order_base" in c["scores"] for c in ranked)
    # A short question under a model without score weights: the scores are its own.
    plain = base_scores({1, 2, 3, 4}, [dict(c) for c in chunks], RerankSettings(), None, 0.0)
    own = [c["scores"]["rerank_base"] for c in plain]
    assert [c["scores"]["rerank_base"] for c in on_score_scale(plain)] == own


def test_request_reads_are_one_requests_own_and_only_the_last_requests_are_kept():
    from graph.runtime import request_reads as reads_mod

    first = reads_mod.request_reads("req-a", "features")
    first[("documents", "1")] = (0.5, (), ())
    assert reads_mod.request_reads("req-a", "features") is first
    assert reads_mod.request_reads("req-b", "features") == {} and reads_mod.request_reads("req-a", "payloads") == {}
    # A node run on its own has no request id: nothing is kept for it.
    unnamed = reads_mod.request_reads(None, "features")
    unnamed["x"] = 1
    assert reads_mod.request_reads(None, "features") == {}
    for i in range(reads_mod.KEPT_REQUESTS):
        reads_mod.request_reads(f"later-{i}", "features")
    assert reads_mod.request_reads("req-a", "features") == {}  # over: read again if ever asked
