"""route_gate and the policy: allow / deny / unlisted intents, intent inference, fallback, broken
policies (which must disable retrieval without ever crashing the graph) and the tenant gate."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from conftest import matches_phrase, runtime_for
from langgraph.store.memory import InMemoryStore

from graph.algorithms.decomposition import validate_sub_queries
from graph.algorithms.judging import quality_score, utility_score
from graph.algorithms.routing import infer_intent
from graph.context import Context
from graph.graph import compile_graph
from graph.policy import PolicyError, load_policy
from graph.prompts import phrases
from graph.providers.vectorstore import GATE_FIELDS, TenantRequiredError, governance_filter
from nodes.route_gate import route_gate


def gate(question: str, ctx: Context, **payload) -> dict:
    """Run the route_gate node alone; returns its `rag` record."""
    return route_gate({"question": question, **payload}, runtime_for(ctx))["rag"]


@pytest.fixture
def ctx(tmp_path):
    return Context(home=str(tmp_path / "home"), tenant="acme")


# --- allow / deny / unlisted ------------------------------------------------------------------


def test_allowed_intent_enables_retrieval_with_route_details(ctx):
    rag = gate("Quanto cresceram as vendas de inverno em 2025?", ctx, intent="sales")
    policy = load_policy(ctx.policy_path)
    assert rag["enabled"] is True
    assert rag["error"] is None
    assert rag["intent"] == "sales" and rag["intent_source"] == "caller"
    assert rag["collections"] == list(policy.raw["rag"]["default"]["collections"])
    assert rag["profile"]["k"] == policy.raw["profiles"][policy.raw["rag"]["default"]["profile"]]["k"]
    assert rag["policy"]["allow_intents"] == list(policy.routing.allow_intents)
    assert "disabled_reason" not in rag


def test_allowed_intent_via_compiled_graph_retrieves(ask):
    state = ask("Quanto cresceram as vendas de inverno em 2025?", intent="sales")
    assert state["rag"]["enabled"] is True
    assert state["hits"], "an allowed intent must reach the retrieve branches"
    assert state["reranked"]


def test_denied_intent_disables_retrieval(ctx):
    rag = gate("Oi, tudo bem?", ctx, intent="smalltalk")
    assert rag["enabled"] is False
    assert rag["disabled_reason"] == "intent_denied"
    assert "deny_intents" in rag["error"]


def test_deny_wins_when_intent_is_in_both_lists(ctx, write_policy):
    def both(raw):
        raw["routing"]["allow_intents"].append("smalltalk")
        assert "smalltalk" in raw["routing"]["deny_intents"]

    ctx.policy_path = str(write_policy(both))
    rag = gate("Oi, tudo bem?", ctx, intent="smalltalk")
    assert rag["enabled"] is False
    assert rag["disabled_reason"] == "intent_denied"


def test_unlisted_intent_is_off_with_clear_error(ctx):
    rag = gate("Qual o signo do fundador?", ctx, intent="astrology")
    assert rag["enabled"] is False
    assert rag["disabled_reason"] == "intent_unlisted"
    assert "astrology" in rag["error"] and "allow_intents" in rag["error"]


def test_unlisted_intent_via_graph_answers_that_retrieval_is_off(compiled, tmp_path):
    ctx = Context(home=str(tmp_path / "home"), tenant="acme")
    state = compiled.invoke({"question": "What is the horoscope for Acme?", "intent": "astrology"}, context=ctx)
    assert state["rag"]["disabled_reason"] == "intent_unlisted"
    assert "hits" not in state or not state["hits"]
    assert matches_phrase(state["answer"], "en", "retrieval_disabled")
    assert "astrology" in state["answer"]
    assert state["coverage_level"] == "none"
    # the suggestions point at an allowed intent
    allowed = load_policy(ctx.policy_path).routing.allow_intents
    assert any(a in " ".join(state["suggestions"]) for a in allowed)


def test_fallback_intent_outside_allow_list_is_unlisted(ctx, write_policy):
    ctx.policy_path = str(write_policy(lambda raw: raw["routing"].__setitem__("fallback_intent", "misc")))
    rag = gate("Conte algo interessante sobre a empresa", ctx)
    assert rag["intent"] == "misc" and rag["intent_source"] == "fallback"
    assert rag["disabled_reason"] == "intent_unlisted"


def test_no_intent_and_no_fallback_disables_retrieval(ctx, write_policy):
    ctx.policy_path = str(write_policy(lambda raw: raw["routing"].__setitem__("fallback_intent", None)))
    rag = gate("Conte algo interessante sobre a empresa", ctx)
    assert rag["intent"] is None
    assert rag["enabled"] is False and rag["disabled_reason"] == "no_intent"


def test_empty_question_disables_retrieval(ctx):
    rag = gate("   ", ctx)
    assert rag["enabled"] is False and rag["disabled_reason"] == "empty_question"


# --- intent inference -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("question", "intent"),
    [
        ("Qual foi o ROAS da campanha e o CPC médio?", "performance"),
        ("What did the court decide in the lawsuit?", "legal"),
        ("Quantos seguidores temos no Instagram?", "social"),
        ("Qual foi o faturamento e a margem do trimestre?", "sales"),
        ("Bom dia! Tudo bem?", "smalltalk"),
    ],
)
def test_intent_inferred_from_keyword_rules(ctx, question, intent):
    rag = gate(question, ctx)
    assert rag["intent"] == intent
    assert rag["intent_source"] == "rule"


def test_intent_rule_with_most_hits_wins(ctx):
    # one "legal" keyword (processo) vs two "social" keywords (instagram, seguidores)
    intent, source = infer_intent("O processo afetou o Instagram e os seguidores?", load_policy(ctx.policy_path))
    assert (intent, source) == ("social", "rule")


def test_intent_rule_tie_goes_to_first_listed(ctx):
    policy = load_policy(ctx.policy_path)
    order = [r.intent for r in policy.routing.intent_rules]
    assert order.index("legal") < order.index("social")
    intent, _ = infer_intent("O processo no Instagram", policy)  # one hit each
    assert intent == "legal"


def test_keywords_match_on_word_boundaries_only(ctx):
    # "oi" (smalltalk) inside "Oito", "roas" inside "Roastery": no rule matches -> fallback
    policy = load_policy(ctx.policy_path)
    intent, source = infer_intent("Oito cafés da Roastery abriram", policy)
    assert source == "fallback" and intent == policy.routing.fallback_intent


def test_fallback_intent_when_no_rule_matches(ctx):
    rag = gate("Conte algo interessante sobre a empresa", ctx)
    assert rag["intent_source"] == "fallback"
    assert rag["intent"] == load_policy(ctx.policy_path).routing.fallback_intent
    assert rag["enabled"] is True


def test_caller_intent_overrides_rules(ctx):
    rag = gate("Qual foi o ROAS da campanha?", ctx, intent="marketing")
    assert rag["intent"] == "marketing" and rag["intent_source"] == "caller"


def test_an_inferred_intents_filter_ranks_and_a_named_ones_gates(ctx):
    social = load_policy(ctx.policy_path).routing.intent_filters["social"]
    inferred = gate("Quantos seguidores temos no Instagram?", ctx)
    assert inferred["intent_source"] == "rule" and inferred["filters"] == {} and inferred["preferred_filters"] == social
    assert inferred["policy"]["intent_filter_applies_as"] == "boost"
    named = gate("Quantos seguidores temos no Instagram?", ctx, intent="social")
    assert named["filters"] == social and named["preferred_filters"] == {}
    assert named["policy"]["intent_filter_applies_as"] == "gate"


def test_a_word_that_infers_an_intent_hides_no_answer(ask):
    # "TikTok" infers `social`, whose filter keeps social documents only; the answer is in a performance report.
    question = "A campanha do TikTok Provador Virtual segue ativa?"
    state = ask(question)
    assert state["rag"]["intent"] == "social" and state["rag"]["intent_source"] == "rule"
    ranked = {c["docId"]: c for c in state["reranked"]}
    assert "acme-perf-tiktok-provador-2026" in ranked
    # The social documents that were kept got the inferred intent's boost; the performance report did not.
    boosted = {c["docId"] for c in state["reranked"] if any(b["name"] == "intent" for b in c["scores"]["boosts"])}
    assert boosted and all(d.startswith("acme-social-") for d in boosted), boosted
    # Named by the caller, the intent is a gate: only social documents are searched.
    gated = ask(question, intent="social")
    assert gated["rag"]["filters"] == {"category": "social"}
    assert gated["reranked"] and all(c["docId"].startswith("acme-social-") for c in gated["reranked"])


# --- broken policies --------------------------------------------------------------------------


def test_missing_policy_file_raises_policy_error(tmp_path):
    with pytest.raises(PolicyError, match="file not found"):
        load_policy(tmp_path / "nope.yaml")


def test_invalid_yaml_raises_policy_error(write_policy):
    path = write_policy(text="routing: [unclosed\n  allow: {")
    with pytest.raises(PolicyError, match="not valid YAML"):
        load_policy(path)


@pytest.mark.parametrize(
    ("mutate", "field"),
    [
        (lambda r: r["profiles"]["default"].__setitem__("k", "x"), "profiles.default.k"),
        (lambda r: r["rag"]["default"].__setitem__("profile", "ghost"), "rag.default.profile"),
        (lambda r: r["decomposition"].__setitem__("max_subqueries", 9), "decomposition.max_subqueries"),
        (lambda r: r["decomposition"].__setitem__("min_clause_words", "four"), "decomposition.min_clause_words"),
        (lambda r: r["routing"].__setitem__("allow_intents", "knowledge"), "routing.allow_intents"),
        (lambda r: r["judge"].__setitem__("thresholds", {"ok": 0.3, "block": 0.6}), "judge.thresholds"),
        (lambda r: r.pop("languages"), "languages"),
        (lambda r: r["languages"]["analyzers"].__setitem__("pt", "klingon"), "languages.analyzers.pt"),
        (lambda r: r.__setitem__("retrieval", ["ctr"]), "retrieval"),
        (lambda r: r["judge"].__setitem__("empty_closers", "bye"), "judge.empty_closers"),
        (lambda r: r["rerank"]["long_questions"].update(short_terms=30, long_terms=20), "rerank.long_questions"),
        (lambda r: r["rerank"]["long_questions"].__setitem__("sentence_weight", 1.5),
         "rerank.long_questions.sentence_weight"),
        (lambda r: r["judge"].__setitem__("quality", {"short_penalty": 1.5}), "judge.quality.short_penalty"),
        (lambda r: r["judge"].__setitem__("utility", {"coverage": {"high": 2}}), "judge.utility.coverage.high"),
        (lambda r: r["compose"]["direct"].__setitem__("focus_weight", 0.5), "compose.direct.focus_weight"),
        (lambda r: r["decomposition"].__setitem__("max_subquery_overlap", "most"),
         "decomposition.max_subquery_overlap"),
    ],
    ids=["k-not-a-number", "unknown-profile", "too-many-subqueries", "clause-words-not-a-number", "allow-not-a-list",
         "block-above-ok", "missing-section", "unknown-stemmer", "retrieval-not-a-mapping", "closers-not-a-list",
         "long-below-short", "sentence-weight-above-one", "quality-penalty-above-one", "coverage-utility-above-one",
         "focus-weight-below-one", "overlap-not-a-number"],
)
def test_bad_field_raises_policy_error_naming_it(write_policy, mutate, field):
    path = write_policy(mutate)
    with pytest.raises(PolicyError) as info:
        load_policy(path)
    assert field in str(info.value)
    assert str(path) in str(info.value)


def test_the_judges_and_the_splitters_numbers_are_read_from_the_policy(write_policy):
    """The judge's penalties and bonuses (`judge.quality`, `judge.utility`) and the overlap that refuses a chat
    model's sub-queries (`decomposition.max_subquery_overlap`) are the policy's: defaults when the file leaves
    them out, its values when it gives them."""
    def tune(raw):
        raw["judge"]["quality"] = {"short_chars": 50, "short_penalty": 0.5}
        raw["judge"]["utility"] = {"coverage": {"low": 0.7}, "numbers_bonus": 0.1}
        raw["decomposition"]["max_subquery_overlap"] = 0.5

    default, tuned = load_policy(), load_policy(write_policy(tune))
    assert tuned.judge.quality.short_chars == 50 and tuned.judge.quality.uncited_penalty == 0.4
    answer = "A receita foi de R$ 2 milhões [acme-2025]."
    assert quality_score(answer, "low", "pt", default) == (1.0, "structured, cited, in the question's language")
    assert quality_score(answer, "low", "pt", tuned) == (0.5, "very short")
    assert utility_score(answer, "low", default.judge)[0] == 0.65
    assert utility_score(answer, "low", tuned.judge)[0] == 0.8
    subs = ["Qual foi a receita da Acme em 2025?", "Qual foi a margem da Acme em 2025?"]  # 7 of their 9 words shared
    question = "Qual foi a receita e a margem da Acme em 2025?"
    assert validate_sub_queries(subs, question, "pt", 4, default) == subs
    with pytest.raises(ValueError, match="overlap"):
        validate_sub_queries(subs, question, "pt", 4, tuned)


def _assert_well_formed_disabled(state: dict, language: str) -> None:
    assert state["rag"]["enabled"] is False
    assert state["rag"]["error"]
    assert state["rag"]["disabled_reason"] == "policy_invalid"
    assert matches_phrase(state["answer"], language, "retrieval_disabled")
    assert state["coverage_level"] == "none"
    assert len(state["suggestions"]) == 3 and len(set(state["suggestions"])) == 3
    assert state["verdict"]["final_decision"] in ("OK", "WARNING", "BLOCK")
    assert state["citations_used"] == []
    assert "hits" not in state or not state["hits"]


@pytest.mark.parametrize(
    "make",
    [
        lambda wp, tmp: tmp / "missing.yaml",
        lambda wp, tmp: wp(text="routing: [unclosed\n"),
        lambda wp, tmp: wp(lambda r: r["profiles"]["default"].__setitem__("k", "x")),
        lambda wp, tmp: wp(lambda r: r["rag"]["default"].__setitem__("profile", "ghost")),
        lambda wp, tmp: wp(text="just a string\n"),
    ],
    ids=["missing-file", "invalid-yaml", "bad-k", "unknown-profile", "not-a-mapping"],
)
def test_broken_policy_graph_returns_well_formed_result(write_policy, tmp_path, make):
    path = make(write_policy, tmp_path)
    ctx = Context(home=str(tmp_path / "home"), tenant="acme", policy_path=str(path))
    graph = compile_graph(store=InMemoryStore())
    state = graph.invoke({"question": "What does the winter playbook recommend?"}, context=ctx)
    _assert_well_formed_disabled(state, "en")
    assert str(path) in state["rag"]["error"]


# Fields that are wrong in a valid YAML file, where validation lets a non-PolicyError escape (or
# lets the field through) and the graph then raises instead of disabling retrieval.
_ESCAPING_FIELDS = [
    pytest.param(lambda r: r["rag"]["default"].__setitem__("profile", ["default"]), "rag.default.profile"),
    pytest.param(lambda r: r["decomposition"]["lexicons"].__setitem__("pt", ["e", "ou"]), "decomposition.lexicons.pt"),
    pytest.param(lambda r: r["judge"].__setitem__("thresholds", {"ok": "high", "block": 0.5}), "judge.thresholds"),
    pytest.param(lambda r: r["languages"]["markers"].__setitem__("pt", 5), "languages.markers"),
    pytest.param(lambda r: r["languages"]["question_cues"]["en"].__setitem__("qualifier_side", "left"),
                 "languages.question_cues.en.qualifier_side"),
    pytest.param(lambda r: r["rerank"]["cross_lingual"].__setitem__("meaning_margin", 2), "rerank.cross_lingual"),
    pytest.param(lambda r: r["languages"].__setitem__("period_units", ["quarter", "half"]), "languages.period_units"),
]


@pytest.mark.parametrize(("mutate", "field"), _ESCAPING_FIELDS,
                         ids=["profile-list", "lexicon-list", "threshold-str", "markers-int", "qualifier-side",
                              "meaning-margin", "period-units-list"])
def test_bad_field_type_is_a_policy_error_and_graph_survives(write_policy, tmp_path, mutate, field):
    path = write_policy(mutate)
    with pytest.raises(PolicyError, match=field.replace(".", r"\.")):
        load_policy(path)
    ctx = Context(home=str(tmp_path / "home"), tenant="acme", policy_path=str(path))
    state = compile_graph(store=InMemoryStore()).invoke({"question": "What does the playbook recommend?"},
                                                        context=ctx)
    _assert_well_formed_disabled(state, "en")


def test_policy_is_reloaded_when_the_file_changes(write_policy, monkeypatch):
    import graph.policy

    path = write_policy()
    assert load_policy(path).routing.fallback_intent == "knowledge"
    text = path.read_text(encoding="utf-8").replace("fallback_intent: knowledge", "fallback_intent: news")
    path.write_text(text + "\n# changed\n", encoding="utf-8")
    # Within the re-check interval the file is not even looked at...
    assert load_policy(path).routing.fallback_intent == "knowledge"
    # ...after it, the change is picked up.
    monkeypatch.setattr(graph.policy, "RECHECK_SECONDS", 0.0)
    assert load_policy(path).routing.fallback_intent == "news"


# --- the tenant gate --------------------------------------------------------------------------


def test_no_tenant_disables_retrieval_in_node(tmp_path):
    rag = gate("Quanto cresceram as vendas de inverno em 2025?", Context(home=str(tmp_path), tenant=None))
    assert rag["enabled"] is False and rag["disabled_reason"] == "no_tenant"


def test_no_tenant_graph_does_not_search(ask):
    state = ask("Quanto cresceram as vendas de inverno em 2025?", tenant=None)
    assert state["rag"]["disabled_reason"] == "no_tenant"
    assert not state.get("hits") and not state.get("reranked")
    assert matches_phrase(state["answer"], "pt", "retrieval_disabled")
    assert phrases("pt")["reasons"]["no_tenant"] in state["answer"]


@pytest.mark.parametrize("tenant", [None, "", "   "])
def test_governance_filter_requires_a_tenant(tenant):
    with pytest.raises(TenantRequiredError):
        governance_filter(tenant)


@pytest.mark.parametrize("field", sorted(GATE_FIELDS))
def test_governance_filter_refuses_extra_filter_on_gate_field(field):
    with pytest.raises(ValueError, match=field):
        governance_filter("acme", {field: "globex" if field == "brandId" else "true"})


def test_governance_filter_refuses_unknown_field_but_accepts_filterable():
    with pytest.raises(ValueError):
        governance_filter("acme", {"sourceUrl": "x"})
    flt = governance_filter("acme", {"docType": "legal"})
    assert len(flt.must) == 4


def test_policy_intent_filter_on_tenant_field_cannot_widen_search(ask, corpus, write_policy):
    """A policy that tries to filter on brandId gets its searches refused, never another tenant's chunks."""
    path = write_policy(lambda r: r["routing"]["intent_filters"].__setitem__("sales", {"brandId": "globex"}))
    ctx = corpus.context("acme", policy_path=str(path))
    state = ask("How much did sales grow in Q1 2026?", context=ctx, intent="sales")
    assert state["rag"]["filters"] == {"brandId": "globex"}
    assert any("brandId" in e for e in state["errors"])
    assert not state["reranked"]
    assert "globex" not in " ".join(c["docId"] for r in state["hits"].values() for c in r["dense"] + r["lexical"])


def test_denied_intent_via_graph_even_if_also_allowed(write_policy, tmp_path):
    path = write_policy(lambda raw: raw["routing"]["allow_intents"].append("smalltalk"))
    ctx = Context(home=str(tmp_path / "home"), tenant="acme", policy_path=str(path))
    state = compile_graph().invoke({"question": "Bom dia! Tudo bem com vocês?"}, context=ctx)
    assert state["rag"]["intent"] == "smalltalk" and state["rag"]["intent_source"] == "rule"
    assert state["rag"]["disabled_reason"] == "intent_denied"
    assert not state.get("hits")
    assert matches_phrase(state["answer"], "pt", "retrieval_disabled")
    assert len(state["suggestions"]) == 3


@pytest.mark.parametrize("question, language", [
    ("Quantas lojas fazem ship-from-store?", "pt"),  # an English term of the trade in a Portuguese question
    ("Quanta receita a Acme fez no app?", "pt"),
    ("How many stores ship from store?", "en"),
])
def test_the_questions_language_is_read_from_its_function_words(ctx, question, language):
    assert route_gate({"question": question}, runtime_for(ctx))["language"] == language


# --- language packs ---------------------------------------------------------------------------


def _policy_with_packs(tmp_path, pt_pack: dict) -> Path:
    """The shipped policy copied into tmp_path with its packs beside it; `pt_pack` replaces pt.yaml."""
    import shutil

    from graph.assets import DEFAULT_POLICY_PATH, LANGUAGES_DIR

    (tmp_path / "languages").mkdir()
    shutil.copy(LANGUAGES_DIR / "en.yaml", tmp_path / "languages" / "en.yaml")
    (tmp_path / "languages" / "pt.yaml").write_text(yaml.safe_dump(pt_pack, allow_unicode=True), encoding="utf-8")
    path = tmp_path / "rag.yaml"
    shutil.copy(DEFAULT_POLICY_PATH, path)
    return path


def _shipped_pack(language: str) -> dict:
    from graph.assets import LANGUAGES_DIR

    return yaml.safe_load((LANGUAGES_DIR / f"{language}.yaml").read_text(encoding="utf-8"))


@pytest.mark.parametrize(("change", "field"), [
    (lambda p: p.__setitem__("analyzer", "klingon"), "languages.packs.pt.analyzer"),
    (lambda p: p.__setitem__("months", p["months"][:11]), "languages.packs.pt.months"),
    (lambda p: p["question_cues"].__setitem__("qualifier_side", "left"), "languages.packs.pt.question_cues.qualifier_side"),
    (lambda p: p.__setitem__("colour_words", ["azul"]), "languages.packs.pt.colour_words"),
])
def test_a_bad_language_pack_names_the_policy_the_pack_and_the_field(tmp_path, change, field):
    pack = _shipped_pack("pt")
    change(pack)
    path = _policy_with_packs(tmp_path, pack)
    with pytest.raises(PolicyError) as info:
        load_policy(path)
    assert field in str(info.value) and str(path) in str(info.value)
    assert str(tmp_path / "languages" / "pt.yaml") in str(info.value)


def test_a_missing_pack_is_a_policy_error(tmp_path):
    path = _policy_with_packs(tmp_path, _shipped_pack("pt"))
    text = path.read_text(encoding="utf-8").replace("languages/pt.yaml", "languages/pt-br.yaml")
    path.write_text(text, encoding="utf-8")
    with pytest.raises(PolicyError, match=r"languages\.packs\.pt: language pack .*pt-br\.yaml not found"):
        load_policy(path)


def test_a_policy_copied_without_its_packs_reads_the_shipped_ones(tmp_path):
    """`cp policies/rag.yaml my.yaml` and edit: the packs it names are ragate's own, unless it has its own beside it."""
    from graph.assets import DEFAULT_POLICY_PATH

    copied = tmp_path / "my.yaml"
    copied.write_text(DEFAULT_POLICY_PATH.read_text(encoding="utf-8"), encoding="utf-8")
    assert load_policy(copied).languages.negations == load_policy(DEFAULT_POLICY_PATH).languages.negations
    (tmp_path / "own").mkdir()
    path = _policy_with_packs(tmp_path / "own", _shipped_pack("pt"))
    pack = tmp_path / "own" / "languages" / "pt.yaml"
    pack.write_text(pack.read_text(encoding="utf-8").replace("não", "nao"), encoding="utf-8")
    assert load_policy(path).languages.negations["pt"][0] == "nao"


def test_packs_assemble_into_the_languages_and_an_edited_pack_is_reloaded(tmp_path, monkeypatch):
    import graph.policy

    path = _policy_with_packs(tmp_path, _shipped_pack("pt"))
    policy = load_policy(path)
    assert policy.languages.analyzers == {"en": "english", "pt": "portuguese"}
    assert policy.raw["languages"]["negations"]["pt"][0] == "não" and "packs" not in policy.raw["languages"]
    assert policy.retrieval.date_relations["before"] == ("before", "prior to", "earlier than", "until", "antes de", "antes do",
                                                        "antes da", "antes dos", "antes das", "até")
    pack = _shipped_pack("pt")
    pack["negations"].append("nenhures")
    (tmp_path / "languages" / "pt.yaml").write_text(yaml.safe_dump(pack, allow_unicode=True), encoding="utf-8")
    monkeypatch.setattr(graph.policy, "RECHECK_SECONDS", 0.0)
    edited = load_policy(path)
    assert "nenhures" in edited.languages.negations["pt"] and edited.digest != policy.digest
