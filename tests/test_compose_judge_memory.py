"""compose (coverage, language, citations, suggestions), judge (invented numbers and citations) and
memory_shield (only vetted answers are remembered, by tenant)."""

from __future__ import annotations

import json

import pytest
from conftest import matches_phrase, runtime_for, suggestion_language
from langgraph.runtime import Runtime
from langgraph.store.memory import InMemoryStore

from graph.algorithms.coverage import coverage_level, is_relevant
from graph.algorithms.judging import decide, deterministic_verdict
from graph.algorithms.text import (
    citations_in,
    detect_language,
    extract_values,
    strip_citations,
    value_pool,
    value_supported,
)
from graph.context import Context
from graph.graph import compile_graph
from graph.policy import DecisionThresholds, load_policy
from graph.prompts import phrases
from nodes.compose import compose
from nodes.memory_shield import memory_namespace


@pytest.fixture(scope="module")
def policy():
    return load_policy()


@pytest.fixture(scope="module")
def cfg(policy):
    return policy.compose


def mk(doc: str, score: float, n: int = 0, content: str = "", **meta) -> dict:
    return {"id": f"{doc}#{n}", "docId": doc, "assetId": doc, "assetName": doc.title(), "rerankScore": score,
            "content": content or f"Content of {doc}.", "metadata": {"language": "en", **meta}, "scores": {}}


# --- coverage levels --------------------------------------------------------------------------


def test_coverage_high(cfg):
    high = cfg.coverage.high
    m = high.min_mean_score
    chunks = [mk(f"d{i}", m + 0.05) for i in range(high.min_docs)]
    assert coverage_level(chunks, cfg) == "high"


def test_coverage_high_needs_enough_docs(cfg):
    high, medium = cfg.coverage.high, cfg.coverage.medium
    chunks = [mk(f"d{i}", 0.99) for i in range(high.min_docs - 1)]
    assert len(chunks) >= medium.min_docs
    assert coverage_level(chunks, cfg) == "medium"


def test_coverage_high_needs_mean_score(cfg):
    high = cfg.coverage.high
    chunks = [mk(f"d{i}", high.min_mean_score - 0.02) for i in range(high.min_docs + 1)]
    assert coverage_level(chunks, cfg) == "medium"


def test_coverage_medium(cfg):
    medium = cfg.coverage.medium
    chunks = [mk(f"d{i}", medium.min_mean_score + 0.01) for i in range(medium.min_docs)]
    assert coverage_level(chunks, cfg) == "medium"


def test_coverage_low_when_mean_below_medium(cfg):
    medium = cfg.coverage.medium
    floor = cfg.relevance_floor
    score = (floor + medium.min_mean_score) / 2
    chunks = [mk(f"d{i}", score) for i in range(5)]
    assert coverage_level(chunks, cfg) == "low"


def test_coverage_low_with_one_relevant_doc(cfg):
    assert coverage_level([mk("only", 0.99)], cfg) == "low"


def test_coverage_counts_documents_not_chunks(cfg):
    chunks = [mk("same", 0.99, n) for n in range(5)]
    assert coverage_level(chunks, cfg) == "low"


def test_coverage_none_below_relevance_floor(cfg):
    floor = cfg.relevance_floor
    assert coverage_level([mk(f"d{i}", floor - 0.01) for i in range(4)], cfg) == "none"
    assert coverage_level([], cfg) == "none"


def test_irrelevant_chunks_do_not_drag_the_mean_down(cfg):
    high = cfg.coverage.high
    chunks = [mk(f"d{i}", 0.9) for i in range(high.min_docs)] + [mk("noise", cfg.relevance_floor - 0.01)]
    assert coverage_level(chunks, cfg) == "high"


# --- compose through the graph ----------------------------------------------------------------


UNANSWERABLE = [("Qual a cor favorita do gato do presidente?", "pt"),
                ("What is the CEO's favourite football team?", "en")]


@pytest.mark.parametrize(("question", "lang"), UNANSWERABLE)
def test_unanswerable_question_gives_none_and_three_suggestions_in_its_language(ask, question, lang):
    state = ask(question)
    assert state["language"] == lang
    assert state["coverage_level"] == "none"
    s = state["suggestions"]
    assert len(s) == 3 and len(set(s)) == 3
    assert all(suggestion_language(x) == {lang} for x in s), s
    assert state["citations_used"] == []
    assert matches_phrase(state["answer"], lang, "missing") or matches_phrase(state["answer"], lang,
                                                                               "missing_generic")


@pytest.mark.parametrize(("question", "lang"), [
    ("Quanto cresceram as vendas de inverno em 2025?", "pt"),
    ("Qual é o prazo médio de entrega do e-commerce no Nordeste?", "pt"),
    ("What is Acme's online return rate and the main reason for returns?", "en"),
    ("What were the ROAS and CPC of the Google Performance Max campaign?", "en"),
])
def test_answer_opens_with_a_direct_answer_in_the_question_language(ask, question, lang):
    """The first line is the cited direct answer (no preamble), and the composer's own words are in the
    question's language."""
    state = ask(question)
    other = "en" if lang == "pt" else "pt"
    assert state["language"] == lang
    direct = state["direct_answer"]
    assert direct and len(direct.split()) <= 12, state["answer"]
    first_line = state["answer"].splitlines()[0]
    assert strip_citations(first_line).rstrip(".").casefold() == direct.rstrip(".").casefold()
    assert citations_in(first_line) and set(citations_in(first_line)) <= set(state["citations_used"])
    for key in ("missing", "missing_generic", "missing_part", "part_in_other_language"):
        assert not any(matches_phrase(line, other, key) for line in state["answer"].splitlines())


@pytest.mark.parametrize("question", [
    "Quanto cresceram as vendas de inverno em 2025?",
    "Compare as vendas de inverno de 2025 e 2026 e quais ações o playbook recomenda?",
    "What were the ROAS and CPC of the Google Performance Max campaign?",
    "Qual foi o ROAS da campanha no TikTok e como otimizar o CPC?",
])
def test_every_citation_was_retrieved(ask, question):
    state = ask(question)
    retrieved = {c["docId"] for c in state["reranked"]}
    assert state["citations_used"], "an answerable question gets citations"
    assert set(state["citations_used"]) <= retrieved
    assert set(citations_in(state["answer"])) <= retrieved
    assert state["coverage_level"] in ("high", "medium", "low")


@pytest.mark.parametrize(("question", "lang"), UNANSWERABLE)
def test_no_document_under_the_relevance_floor_is_offered_as_the_closest(ask, question, lang):
    """Nothing the tenant holds is about the question: the suggestions say to check what was ingested, and name
    no "closest document" (the best chunk is under the relevance floor: not close)."""
    state = ask(question)
    assert state["reranked"] and not any(is_relevant(c, load_policy().compose) for c in state["reranked"])
    assert not any(matches_phrase(x, lang, "suggestion_closest_doc") for x in state["suggestions"])
    assert any(matches_phrase(x, lang, "suggestion_ingest") for x in state["suggestions"])


def test_a_relevant_document_is_offered_when_a_part_is_not_covered(ask):
    state = ask("Qual foi o ROAS da campanha no TikTok e como otimizar o CPC?")
    assert state["coverage_level"] == "low"
    assert any(matches_phrase(x, "pt", "suggestion_closest_doc") and "[acme-perf-tiktok-provador-2026]" in x
               for x in state["suggestions"]), state["suggestions"]


def test_answerable_question_has_no_suggestions_unless_coverage_is_low(ask):
    state = ask("Quanto cresceram as vendas de inverno em 2025?")
    if state["coverage_level"] in ("high", "medium"):
        assert state["suggestions"] == []
    else:
        assert len(state["suggestions"]) == 3


def test_compose_node_without_chunks_says_what_is_missing(tmp_path):
    ctx = Context(home=str(tmp_path), tenant="acme")
    rag = {"enabled": True, "language": "en", "collections": ["documents"], "intent_source": "rule"}
    out = compose({"question": "What is the CEO's favourite football team?", "rag": rag, "reranked": [],
                   "language": "en"}, runtime_for(ctx))
    assert out["coverage_level"] == "none"
    assert matches_phrase(out["answer"], "en", "missing")
    assert "football" in out["answer"]
    assert len(out["suggestions"]) == 3


# --- judge ------------------------------------------------------------------------------------

SOURCE = "Winter sales grew 7.9% in 2025, reaching R$ 118,4 million across 412 stores."


def judged(policy, answer: str, chunks=None, coverage="low", language="en") -> dict:
    chunks = chunks if chunks is not None else [mk("doc-a", 0.8, content=SOURCE)]
    return deterministic_verdict({"answer": answer, "reranked": chunks, "language": language,
                                  "coverage_level": coverage}, policy)


def test_invented_number_blocks(policy):
    pool = value_pool([SOURCE])
    assert not value_supported(extract_values("31.5%")[0][1], pool)
    v = judged(policy, "Winter sales grew 31.5% in 2025 [doc-a].")
    assert v["scores"]["groundedness"] < 0.3
    assert v["final_decision"] == "BLOCK"
    assert any("31.5%" in c["unsupported_values"] for c in v["checks"])


def test_invented_citation_is_caught(policy):
    v = judged(policy, "Winter sales grew 7.9% in 2025 [doc-invented].")
    assert any(c["unknown_citations"] == ["doc-invented"] for c in v["checks"])
    assert v["scores"]["groundedness"] <= policy.judge.invented_citation_groundedness
    assert v["final_decision"] == "BLOCK"


def test_value_cited_to_the_wrong_document_is_unsupported(policy):
    chunks = [mk("doc-a", 0.8, content=SOURCE), mk("doc-b", 0.8, content="Returns fell to 9.8% in 2025.")]
    v = judged(policy, "Winter sales grew 7.9% in 2025 [doc-b].", chunks)
    assert v["final_decision"] == "BLOCK"


def test_faithful_extractive_answer_is_not_blocked(policy):
    v = judged(policy, f"{SOURCE[:-1]} [doc-a].", coverage="medium")
    assert v["final_decision"] != "BLOCK"
    assert v["scores"]["groundedness"] >= policy.judge.thresholds.ok
    assert all(c["supported"] for c in v["checks"])


def test_same_value_in_other_notation_is_supported(policy):
    # "R$ 118.400.000" is "R$ 118,4 million" written out
    v = judged(policy, "Winter sales reached R$ 118.400.000 in 2025 [doc-a].", coverage="medium")
    assert v["checks"][0]["unsupported_values"] == []


def test_decide_thresholds():
    t = DecisionThresholds(ok=0.8, block=0.5)
    assert decide({"a": 0.9, "b": 0.8}, t) == "OK"
    assert decide({"a": 0.9, "b": 0.79}, t) == "WARNING"
    assert decide({"a": 0.9, "b": 0.49}, t) == "BLOCK"


def test_honest_no_answer_to_question_with_a_year_is_not_blocked(policy, tmp_path):
    ctx = Context(home=str(tmp_path), tenant="acme")
    rag = {"enabled": True, "language": "en", "collections": ["documents"], "intent_source": "rule"}
    question = "Who won the football cup in 2019?"
    out = compose({"question": question, "rag": rag, "reranked": [], "language": "en"}, runtime_for(ctx))
    assert out["coverage_level"] == "none"
    verdict = deterministic_verdict({**out, "reranked": [], "language": "en"}, policy)
    assert verdict["final_decision"] == "WARNING"


# --- BLOCK -> safe_response -> nothing remembered ---------------------------------------------

INVENTED = "987,65%"


def compose_with_invented_number(state, runtime: Runtime[Context]):
    update = compose(state, runtime)
    doc = (update["citations_used"] or [state["reranked"][0]["docId"]])[0]
    update["answer"] += f"\n- As vendas cresceram {INVENTED} no período [{doc}]."
    return update


def test_block_verdict_gives_safe_response_and_is_never_remembered(corpus):
    store = InMemoryStore()
    graph = compile_graph(store=store, nodes={"compose": compose_with_invented_number})
    ctx = corpus.context("acme")
    state = graph.invoke({"question": "Quanto cresceram as vendas de inverno em 2025?"}, context=ctx)

    pool = value_pool(c["content"] for c in state["reranked"])
    assert not value_supported(extract_values(INVENTED)[0][1], pool), "the number really is invented"
    assert state["verdict"]["final_decision"] == "BLOCK"
    assert state["verdict"]["scores"]["groundedness"] < 0.3
    assert INVENTED in state["blocked_answer"]
    # the safe response, in Portuguese, replaced the answer
    assert state["answer"].startswith(phrases("pt")["safe_intro"])
    assert detect_language(state["answer"], load_policy().raw["languages"]["markers"]) == "pt"
    assert state["citations_used"] == []
    assert f"«{INVENTED}»" in state["answer"]  # named as unconfirmed, not asserted
    # nothing remembered
    assert state["memory"]["saved"] is False
    assert store.search(memory_namespace("acme")) == []
    # only the request record (for feedback and audit), which holds no answer text
    records = store.search(("ragate",))
    assert [tuple(r.namespace) for r in records] == [("ragate", "requests", "acme")]
    record = json.dumps(records[0].value, ensure_ascii=False)
    assert records[0].value["final_decision"] == "BLOCK" and INVENTED in records[0].value["reasoning"]["groundedness"]
    assert all(c["content"][:60] not in record for c in state["reranked"])


def test_ok_verdict_is_remembered_under_tenant_namespace(corpus):
    store = InMemoryStore()
    graph = compile_graph(store=store)
    state = graph.invoke({"question": "Quanto cresceram as vendas de inverno em 2025?"}, context=corpus.context("acme"))
    assert state["verdict"]["final_decision"] == "OK"
    assert state["memory"]["saved"] is True and state["memory"]["tag"] is None
    item = store.get(("ragate", "memory", "acme"), state["request_id"])
    assert item is not None
    assert item.value["answer"] == state["answer"]
    assert item.value["final_decision"] == "OK" and item.value["tags"] == []
    assert store.search(("ragate", "memory", "globex")) == []


def test_warning_verdict_is_remembered_with_warning_tag(corpus):
    store = InMemoryStore()
    graph = compile_graph(store=store)
    state = graph.invoke({"question": "What is the CEO's favourite football team?"}, context=corpus.context("acme"))
    assert state["coverage_level"] == "none"
    assert state["verdict"]["final_decision"] == "WARNING"
    assert state["memory"]["saved"] is True and state["memory"]["tag"] == "warning"
    item = store.get(("ragate", "memory", "acme"), state["request_id"])
    assert item.value["tags"] == ["warning"] and item.value["final_decision"] == "WARNING"


def test_memory_is_namespaced_by_tenant(corpus):
    store = InMemoryStore()
    graph = compile_graph(store=store)
    q = "What is the CEO's favourite football team?"
    a1 = graph.invoke({"question": q}, context=corpus.context("acme"))["request_id"]
    g1 = graph.invoke({"question": q}, context=corpus.context("globex"))["request_id"]
    assert [i.key for i in store.search(("ragate", "memory", "acme"))] == [a1]
    assert [i.key for i in store.search(("ragate", "memory", "globex"))] == [g1]


def test_no_store_means_nothing_saved(ask):
    state = ask("What is the CEO's favourite football team?")
    assert state["memory"]["saved"] is False


def test_no_tenant_means_nothing_remembered(tmp_path):
    store = InMemoryStore()
    state = compile_graph(store=store).invoke({"question": "What is the CEO's favourite football team?"},
                                              context=Context(home=str(tmp_path), tenant=None))
    assert state["rag"]["disabled_reason"] == "no_tenant"
    assert state["memory"]["saved"] is False
    assert store.search(("ragate",)) == []


def test_blank_tenant_means_nothing_remembered(tmp_path):
    store = InMemoryStore()
    state = compile_graph(store=store).invoke({"question": "What is the CEO's favourite football team?"},
                                              context=Context(home=str(tmp_path), tenant="   "))
    assert state["rag"]["disabled_reason"] == "no_tenant"
    assert state["memory"]["saved"] is False
    assert store.search(("ragate",)) == []


# --- a part answered by the list a heading names ----------------------------------------------

PLAYBOOK = ("Winter campaign playbook 2026\n"
            "Goal: reach R$ 132 million in winter sales, 11.5% above the R$ 118.4 million of winter 2025.\n"
            "Recommended actions:\n"
            "1. Launch a light-knit capsule for the Northeast in 14 stores.\n"
            "2. Keep the weekly TikTok fitting-room livestreams on Thursdays.\n"
            "3. Hold eight weeks of jacket stock in the South stores.\n"
            "Discount rules: at most 30% until 15 July; clearance from 27 July.")


def test_a_part_a_heading_names_is_answered_by_the_list_under_it(policy):
    from graph.algorithms.extractive_answer import extractive_answer
    from graph.algorithms.text import get_analyzer

    chunks = [mk("playbook-2026", 0.9, content=PLAYBOOK, header="Winter campaign playbook 2026")]
    question = "What is the 2026 winter sales goal and which actions does the playbook recommend?"
    parts = ["What is the 2026 winter sales goal", "which actions does the playbook recommend"]
    lines = extractive_answer(question, parts, "en", chunks, get_analyzer(policy), policy).lines
    answer = "\n".join(lines)
    # Every item of the list, in order, the first one introduced by its heading; nothing after the list.
    items = ["Launch a light-knit capsule", "Keep the weekly TikTok", "Hold eight weeks of jacket stock"]
    assert "- Recommended actions: Launch a light-knit capsule" in answer
    assert [answer.index(i) for i in items] == sorted(answer.index(i) for i in items)
    assert "Discount rules" not in answer
    assert "R$ 132 million" in answer
    # The judge sees the part answered.
    verdict = deterministic_verdict({"answer": answer, "reranked": chunks, "language": "en", "question": question,
                                     "coverage_level": "medium"}, policy)
    assert verdict["final_decision"] == "OK", verdict["reasoning"]
    assert "not addressed" not in json.dumps(verdict["reasoning"])


def test_no_list_when_no_heading_names_the_part(policy):
    from graph.algorithms.extractive_answer import extractive_answer
    from graph.algorithms.text import get_analyzer

    chunks = [mk("playbook-2026", 0.9, content=PLAYBOOK, header="Winter campaign playbook 2026")]
    question = "What is the 2026 winter sales goal and what was the budget of the launch event?"
    parts = ["What is the 2026 winter sales goal", "what was the budget of the launch event"]
    lines = extractive_answer(question, parts, "en", chunks, get_analyzer(policy), policy).lines
    assert not any("Recommended actions:" in line for line in lines)


# --- what follows the direct answer, coverage the answer earns, versions of one asset ---------------

REGIONS = ("The Northeast was the fastest-growing region, up 19.3% year over year.\n"
           "Apparel retail sales in the country grew 6.2% in the first half of 2025, says the trade bulletin.")
RETURNS = ("The online return rate was 9.8% of orders in 2025, down from 11.2% in 2024.\n"
           "The main return reason online was size and fit, 54% of returns.")


def _compose(tmp_path, question, chunks, **state):
    ctx = Context(home=str(tmp_path), tenant="acme")
    rag = {"enabled": True, "language": "en", "collections": ["documents"], "intent_source": "rule"}
    return compose({"question": question, "rag": rag, "reranked": chunks, "language": "en", **state},
                   runtime_for(ctx))


def test_a_direct_answer_is_followed_by_its_evidence_not_by_what_merely_shares_words(tmp_path):
    chunks = [mk("regional", 0.95, content=REGIONS.split("\n")[0], header="H1 2025 regional sales"),
              mk("bulletin", 0.9, content=REGIONS.split("\n")[1], header="Retail bulletin, September")]
    out = _compose(tmp_path, "Which region grew fastest in the first half of 2025?", chunks)
    assert out["direct_answer"] == "Northeast"
    assert "6.2%" not in out["answer"] and out["citations_used"] == ["regional"]


def test_a_part_the_direct_answer_leaves_open_keeps_its_point(tmp_path):
    chunks = [mk("returns", 0.95, content=RETURNS, header="Returns process and return rates 2025")]
    out = _compose(tmp_path, "What is the online return rate and the main reason for returns?", chunks)
    assert out["direct_answer"] == "9.8%"
    assert "size and fit" in out["answer"]
    # One strong document answering every part is not low coverage, and needs no suggestions.
    assert out["coverage_level"] == "medium" and out["suggestions"] == []


def test_a_part_nothing_covers_keeps_coverage_low(tmp_path):
    chunks = [mk("returns", 0.95, content=RETURNS.split("\n")[0], header="Returns process 2025"),
              mk("other", 0.9, content="Store openings continued in the Northeast.", header="Stores")]
    out = _compose(tmp_path, "What is the online return rate and which carrier delivers the parcels?", chunks)
    assert out["coverage_level"] == "low" and len(out["suggestions"]) == 3


def test_a_question_about_sources_the_caller_lacks_is_answered_with_none(tmp_path):
    chunks = [mk("returns", 0.95, content=RETURNS)]
    out = _compose(tmp_path, "What did the Bloomberg article say about the return rate?", chunks,
                   sources_named=["Bloomberg"], sources_unheld=["Bloomberg"])
    assert out["coverage_level"] == "none" and out["citations_used"] == [] and out["direct_answer"] is None
    assert out["answer"] == "None of the authorised documents comes from: Bloomberg."
    assert len(out["suggestions"]) == 3


def test_the_version_of_another_year_than_the_question_names_is_dropped_without_a_conflict_note(tmp_path):
    chunks = [mk("playbook-2026", 0.9, content="The 2026 media budget is R$ 3.9 million.", date="2026-02-01",
                 header="Winter playbook 2026"),
              mk("playbook-2025", 0.8, content="The 2025 media budget was R$ 3.2 million.", date="2025-02-01",
                 header="Winter playbook 2025")]
    for chunk in chunks:
        chunk["assetId"] = "winter-playbook"
    out = _compose(tmp_path, "What is the media budget of the 2026 winter playbook?", chunks)
    assert "3.2" not in out["answer"] and "disagree" not in out["answer"]
    # Without a year in the question the two versions do disagree, and the answer says which it kept.
    out = _compose(tmp_path, "What is the media budget of the winter playbook?", chunks)
    assert "disagree" in out["answer"] and "[playbook-2026]" in out["answer"]


def test_a_value_question_about_a_measure_no_document_holds_gets_coverage_none(tmp_path):
    sellers = "The spring campaign boosts videos recorded by the stores' sellers and by creators."
    chunks = [mk("campaign", 0.8, content=sellers, header="TikTok Spark Ads campaign")]
    out = _compose(tmp_path, "What is the average salary of the store sellers?", chunks)
    assert out["coverage_level"] == "none" and out["citations_used"] == []
    assert "salary" in out["answer"] and len(out["suggestions"]) == 3
    # The measure held by the evidence: answered as before.
    paid = [mk("pay", 0.8, content="The average salary of store sellers was R$ 2.900,00 in 2025.", header="Pay")]
    out = _compose(tmp_path, "What is the average salary of the store sellers?", paid)
    assert out["direct_answer"] == "R$ 2.900,00" and out["coverage_level"] != "none"


def test_a_part_no_text_in_the_questions_language_covers_is_pointed_to_or_named_by_its_own_lead(policy):
    from graph.algorithms.extractive_answer import extractive_answer
    from graph.algorithms.text import get_analyzer

    sales = mk("vendas-2025", 0.9, content="As vendas de inverno de 2025 somaram R$ 118 milhões, alta de 7,9%.",
               language="pt")
    report = mk("returns-2025", 0.6, content="Returns reached 9.8% of web orders in 2025.", language="en")
    question = "Quanto somaram as vendas de inverno de 2025 e qual foi a taxa de devolução online?"
    parts = ["Quanto somaram as vendas de inverno de 2025", "qual foi a taxa de devolução online"]

    def answer(lead: dict | None) -> list[str]:
        leads = {parts[1]: lead} if lead else {}
        return extractive_answer(question, parts, "pt", [sales, report], get_analyzer(policy), policy,
                                 part_leads=leads).lines

    # The rate part's own search ranked the English report first by meaning: the answer points to it.
    pointed = answer(report)
    assert matches_phrase(pointed[-1], "pt", "part_in_other_language") and "[returns-2025]" in pointed[-1]
    assert not any(matches_phrase(line, "pt", "missing_part") for line in pointed)
    # It ranked Portuguese text first, and none holds its words: the part is named missing.
    named = answer(sales)
    assert matches_phrase(named[-1], "pt", "missing_part") and "«qual foi a taxa de devolução online»" in named[-1]
    # No search of its own to go by, with text in another language at hand: nothing is claimed either way.
    silent = answer(None)
    assert not any(matches_phrase(line, "pt", k) for line in silent for k in ("missing_part", "part_in_other_language"))


def test_a_part_that_only_says_which_documents_is_never_named_missing(policy):
    """"as reported by both The Verge and TechCrunch" points at documents (their `source`, a mention field);
    an answer citing both must not say the documents do not cover it. A part that asks something no
    document holds still is named."""
    from graph.algorithms.extractive_answer import extractive_answer
    from graph.algorithms.text import get_analyzer

    verge = mk("verge-sbf", 0.9, content="Sam Bankman-Fried faces a criminal trial for fraud and conspiracy.",
               source="The Verge")
    techcrunch = mk("tc-sbf", 0.8, content="Prosecutors say Sam Bankman-Fried committed fraud for personal gain.",
                    source="TechCrunch")
    question = ("Who is the individual facing a criminal trial for fraud, as reported by both The Verge and "
                "TechCrunch on October 30, 2023, and accused by prosecutors of fraud for personal gain?")
    parts = ["Who is the individual facing a criminal trial for fraud",
             "as reported by both The Verge and TechCrunch on October 30, 2023",
             "accused by prosecutors of fraud for personal gain"]
    analyzer = get_analyzer(policy)
    lines = extractive_answer(question, parts, "en", [verge, techcrunch], analyzer, policy).lines
    assert not any(matches_phrase(line, "en", "missing_part") for line in lines)
    asked = [*parts, "whose sentencing hearing was postponed"]
    lines = extractive_answer(question + " whose sentencing hearing was postponed", asked, "en",
                              [verge, techcrunch], analyzer, policy).lines
    assert matches_phrase(lines[-1], "en", "missing_part") and "sentencing hearing" in lines[-1]
    assert "The Verge" not in lines[-1]


def test_what_was_not_found_is_what_the_question_says_not_how_it_points(policy):
    from graph.algorithms.missing_parts import asked_kind, missing_terms, pointing_words
    from graph.algorithms.text import get_analyzer

    chunks = [mk("verge-sales", 0.2, content="Quarterly sales rose at the retailer.", source="The Verge")]
    question = "Which individual, featured in articles by The Verge in October, praised the glacier?"
    unsaid = pointing_words(policy, "en", chunks) | asked_kind(question, "en", policy.languages.question_cues)
    missing = missing_terms(question, "en", chunks, get_analyzer(policy), unsaid)
    assert missing == ["praised", "glacier"]


def test_weak_chunks_that_agree_on_a_name_answer_a_name_question_at_low_coverage(tmp_path):
    """Every chunk scores below the relevance floor, yet three documents write the one name the question
    asks for: the answer gives it, at coverage low. Two documents are not enough."""
    question = "Who is the individual accused of taking customer money from a crypto exchange?"
    texts = ["Prosecutors say Sam Bankman-Fried took customer money from the exchange.",
             "Sam Bankman-Fried denied taking customer money in court.",
             "The jury heard Sam Bankman-Fried spend customer money on property."]
    weak = [mk(f"d{i}", 0.2, content=text, source="Wire") for i, text in enumerate(texts)]
    out = _compose(tmp_path, question, weak)
    assert out["direct_answer"] == "Sam Bankman-Fried" and out["coverage_level"] == "low"
    assert len(out["suggestions"]) == 3
    out = _compose(tmp_path, question, weak[:2])
    assert out["coverage_level"] == "none" and out["direct_answer"] is None
    # Nor when the question names a source the caller holds nothing from.
    out = _compose(tmp_path, question, weak, sources_named=["Bloomberg", "Wire"], sources_unheld=["Bloomberg"])
    assert out["direct_answer"] is None


def test_a_question_about_a_document_is_read_from_where_it_asks_more_than_the_title(tmp_path):
    content = ("From an educational point of view, every stage of a course has a purpose behind it. "
               "When a teacher grades by seminars, it is because seminars teach that subject best. "
               "Complementary activities are no different. "
               "As the name says, they deal with activities outside the curriculum that add to the student's training.")
    chunks = [mk("guide", 0.9, content=content, header="Complementary activities")]
    out = _compose(tmp_path, "What do complementary activities deal with?", chunks)
    lines = [line for line in out["answer"].splitlines() if line.startswith("- ")]
    # The document is the one asked about, so it is what answers; read from the sentence on what it deals with.
    assert lines[0].startswith("- As the name says, they deal with activities outside the curriculum")
    assert len(lines) >= 2 and all(line.endswith("[guide].") for line in lines)
