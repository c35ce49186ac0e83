"""decompose: the complexity score (should_decompose), the deterministic splitter and the fallback."""

from __future__ import annotations

import pytest
from conftest import runtime_for

import nodes.decompose as decompose_mod
from graph.algorithms.decomposition import complexity, should_decompose, split_question
from graph.algorithms.text import fold
from graph.context import Context
from graph.policy import load_policy


@pytest.fixture(scope="module")
def policy():
    return load_policy()


@pytest.fixture(scope="module")
def weights(policy):
    return policy.raw["decomposition"]["weights"]


def test_should_decompose_returns_bool_and_score(policy):
    result = should_decompose("Compare as vendas de inverno de 2025 e 2026", policy)
    assert isinstance(result, tuple) and len(result) == 2
    decide, score = result
    assert isinstance(decide, bool) and isinstance(score, float)


# --- "é" is not "e" ---------------------------------------------------------------------------


def test_accented_e_is_not_a_connective(policy):
    q = "A meta de inverno é ambiciosa, é arriscada, é cara, é difícil demais?"
    assert " e " not in q and q.count(" é ") == 4 and len(q) >= policy.raw["decomposition"]["min_length"]
    decide, score, reasons = complexity(q, policy)
    assert not any(r.startswith("connectives") for r in reasons)
    assert score == 0.0 and decide is False


def test_plain_e_counts_as_connective(policy, weights):
    q = "A meta de inverno é ambiciosa e o orçamento é alto"
    _, score, reasons = complexity(q, policy)
    assert any(r.startswith("connectives") and "e" in r.split(": ")[1].split(", ") for r in reasons)
    assert score == pytest.approx(weights["connective"])


def test_decomposed_e_with_combining_accent_is_still_not_e(policy):
    # "é" written as "e" + U+0301 must normalise to "é", not be read as the connective "e"
    q = "A meta e\u0301 ambiciosa porque a campanha e\u0301 cara demais"
    _, _, reasons = complexity(q, policy)
    assert not any(r.startswith("connectives") for r in reasons)


def test_connectives_are_capped_at_two(policy, weights):
    q = "Margem e estoque e frete e prazo e preço e entrega no inverno de 2025"
    _, score, _ = complexity(q, policy)
    assert score == pytest.approx(2 * weights["connective"])


# --- signals ----------------------------------------------------------------------------------


def test_several_question_marks(policy, weights):
    q = "Qual foi a receita do inverno? Qual foi a meta do playbook?"
    decide, score, reasons = complexity(q, policy)
    assert any("question marks" in r for r in reasons)
    assert score >= weights["questions"] and decide is True


@pytest.mark.parametrize("q", [
    "Explique o impacto financeiro e operacional da nova loja de Recife",
    "Explain the financial and marketing impact of the Recife store opening",
])
def test_named_perspectives_count(policy, weights, q):
    _, _, reasons = complexity(q, policy)
    assert any(r.startswith("perspectives") for r in reasons)


@pytest.mark.parametrize("q", [
    "Analise o inverno de 2025 de todas as perspectivas",
    "Analyze the 2025 winter season from all perspectives",
])
def test_all_perspectives_phrase(policy, weights, q):
    decide, score, reasons = complexity(q, policy)
    assert any(r.startswith("perspectives") for r in reasons)
    assert score >= weights["perspectives"] and decide is True


def test_single_perspective_does_not_count(policy):
    _, _, reasons = complexity("Qual foi o resultado financeiro da Acme no inverno de 2025?", policy)
    assert not any(r.startswith("perspectives") for r in reasons)


@pytest.mark.parametrize(("q", "words"), [
    ("Compare a evolução das vendas de inverno da Acme Moda", 2),
    ("Explain the impact of the TikTok Shop launch on Acme Moda", 2),
    ("Analise as vendas de inverno da Acme Moda no Nordeste", 1),
])
def test_complexity_words(policy, weights, q, words):
    _, score, reasons = complexity(q, policy)
    assert any(r.startswith("complexity words") for r in reasons)
    assert score == pytest.approx(words * weights["complexity"])


def test_minimum_length(policy):
    cfg = policy.raw["decomposition"]
    short = "Compare 2025 e 2026?"
    assert len(short) < cfg["min_length"]
    decide, score = should_decompose(short, policy)
    assert score >= cfg["threshold"], "complex enough by score"
    assert decide is False, "but shorter than min_length"
    longer = "Compare as vendas de inverno de 2025 e 2026"
    assert len(longer) >= cfg["min_length"]
    assert should_decompose(longer, policy)[0] is True


@pytest.mark.parametrize("q", [
    "Compare as vendas de inverno de 2025 e 2026 e quais ações o playbook recomenda?",
    "What was the revenue in Q1 2026 and how did the app grow compared to 2025?",
    "Qual foi o ROAS da campanha no TikTok? E como otimizar o CPC das campanhas?",
    # The same question word twice, the second opening a clause after a connective: two questions.
    "Qual é o orçamento de mídia do playbook de inverno 2026 e qual é a taxa de devolução online da Acme?",
    "What is the media budget of the 2026 winter playbook and what is Acme's online return rate?",
])
def test_complex_questions_are_decomposed(policy, q):
    assert should_decompose(q, policy)[0] is True


@pytest.mark.parametrize("q", [
    "Qual é o prazo médio de entrega do e-commerce no Nordeste?",
    "Which region grew fastest in the first half of 2025?",
    "Quanto a categoria casacos e jaquetas vendeu no inverno de 2025?",
    # A question word repeated, but not after a connective: a relative pronoun, one question.
    "Which store, which opened in 2025, sold the most jackets?",
])
def test_simple_questions_are_not_decomposed(policy, q):
    assert should_decompose(q, policy)[0] is False


# --- split_question ---------------------------------------------------------------------------


@pytest.mark.parametrize(("q", "lang"), [
    ("Compare as vendas de inverno de 2025 e 2026 e quais ações o playbook recomenda?", "pt"),
    ("Qual foi a receita do inverno? Qual foi a meta do playbook?", "pt"),
    ("Analise o inverno de 2025 de todas as perspectivas", "pt"),
    ("Explain the financial and marketing impact of the Recife store opening", "en"),
    ("What was the revenue in Q1 2026 and how did the app grow compared to 2025?", "en"),
    ("Analyze the 2025 winter season from all perspectives", "en"),
])
def test_split_gives_two_to_four_distinct_non_empty_subqueries(policy, q, lang):
    subs = split_question(q, policy, lang)
    assert 2 <= len(subs) <= policy.raw["decomposition"]["max_subqueries"] <= 4
    assert all(s.strip() for s in subs)
    assert all(fold(s).strip(" ?.") != fold(q).strip(" ?.") for s in subs)
    assert len({fold(s) for s in subs}) == len(subs)


def test_split_compare_years_mentions_each_year_separately(policy):
    subs = split_question("Compare as vendas de inverno de 2025 e 2026", policy, "pt")
    with_2025 = [s for s in subs if "2025" in s]
    with_2026 = [s for s in subs if "2026" in s]
    assert with_2025 and with_2026
    assert not any("2025" in s and "2026" in s for s in subs)
    # the second year inherits the subject of the first clause
    assert all("vendas" in s and "inverno" in s for s in with_2025 + with_2026)


@pytest.mark.parametrize("q, lang, sides", [
    ("Compare o ROAS das campanhas do TikTok e do Google.", "pt",
     ["o ROAS das campanhas do TikTok", "o ROAS das campanhas do Google"]),
    ("Compare the ROAS of the TikTok and Google campaigns.", "en", ["the ROAS of the TikTok", "the ROAS of Google campaigns"]),
])
def test_a_requested_comparison_of_names_gets_one_part_per_side(policy, q, lang, sides):
    assert split_question(q, policy, lang) == sides


def test_a_name_after_a_name_is_no_side_unless_a_comparison_is_requested(policy):
    # Without "Compare …" the short name joins its clause: "TechCrunch" is a source the question names.
    q = "Which company was reported on by both The Verge and TechCrunch?"
    assert split_question(q, policy, "en") == [q]


def test_split_by_question_marks_keeps_each_question(policy):
    subs = split_question("Qual foi a receita do inverno? Qual foi a meta do playbook?", policy, "pt")
    assert subs == ["Qual foi a receita do inverno?", "Qual foi a meta do playbook?"]


def test_split_all_perspectives_uses_default_perspectives(policy):
    default = policy.raw["decomposition"]["lexicons"]["pt"]["default_perspectives"]
    subs = split_question("Analise o inverno de 2025 de todas as perspectivas", policy, "pt")
    assert len(subs) == min(len(default), 4)
    for sub, perspective in zip(subs, default):
        assert perspective in sub


def test_a_short_clause_that_asks_stands_alone_and_one_that_does_not_joins_its_neighbour(policy):
    # "what changed afterwards" opens with a question word: a question of its own, however short.
    assert split_question("How much was Acme fined by Procon-PR over its exchange policy, and what changed afterwards?",
                          policy, "en") == ["How much was Acme fined by Procon-PR over its exchange policy",
                                            "what changed afterwards"]
    assert split_question("Quanto a Acme pagou de multa ao Procon-PR e o que mudou depois?", policy, "pt")[-1] \
        == "o que mudou depois"
    # "then fined twice" asks nothing: it stays with the clause before it.
    assert len(split_question("Which company was sued by the FTC and then fined twice?", policy, "en")) == 1


def test_split_of_simple_question_returns_it_unchanged(policy):
    q = "Qual é o prazo médio de entrega do e-commerce no Nordeste?"
    assert split_question(q, policy, "pt") == [q]


# --- the node ---------------------------------------------------------------------------------


@pytest.fixture
def node_ctx(tmp_path):
    return Context(home=str(tmp_path), tenant="acme")


def test_node_decomposes_complex_question(node_ctx):
    q = "Compare as vendas de inverno de 2025 e 2026 e quais ações o playbook recomenda?"
    out = decompose_mod.decompose({"question": q, "language": "pt"}, runtime_for(node_ctx))
    assert out["decomposition"]["decomposed"] is True
    assert out["decomposition"]["method"] == "rules"
    assert 2 <= len(out["sub_queries"]) <= 4 and q not in out["sub_queries"]


def test_node_keeps_simple_question(node_ctx):
    q = "Qual é o prazo médio de entrega do e-commerce no Nordeste?"
    out = decompose_mod.decompose({"question": q, "language": "pt"}, runtime_for(node_ctx))
    assert out["sub_queries"] == [q]
    assert out["decomposition"]["decomposed"] is False


def test_node_falls_back_to_original_question_when_split_fails(node_ctx, monkeypatch):
    def boom(*_a, **_k):
        raise ValueError("splitter exploded")

    monkeypatch.setattr(decompose_mod, "split_question", boom)
    q = "Compare as vendas de inverno de 2025 e 2026 e quais ações o playbook recomenda?"
    out = decompose_mod.decompose({"question": q, "language": "pt"}, runtime_for(node_ctx))
    assert out["sub_queries"] == [q]
    assert out["decomposition"]["decomposed"] is False
    assert out["decomposition"]["method"] == "fallback"
    assert "splitter exploded" in out["decomposition"]["error"]


def test_graph_answers_when_split_fails(ask, monkeypatch):
    monkeypatch.setattr(decompose_mod, "split_question", lambda *a, **k: (_ for _ in ()).throw(ValueError("x")))
    q = "Compare as vendas de inverno de 2025 e 2026 e quais ações o playbook recomenda?"
    state = ask(q)
    assert state["sub_queries"] == [q]
    assert list(state["hits"]) == ["retrieve[0]"]
    assert state["answer"] and state["verdict"]["final_decision"]
