"""Text utilities: value readings, citations, sentence splitting, language detection."""

from __future__ import annotations

import re

import pytest

from graph.algorithms.text import (
    citations_in,
    count_phrases,
    detect_language,
    extract_fields,
    extract_values,
    holds_words,
    split_sentences,
    strip_citations,
    value_pool,
    value_supported,
)
from graph.policy import load_policy


def readings(text: str) -> set[float]:
    (only,) = extract_values(text)
    return only[1]


def supported(claim: str, source: str) -> bool:
    return all(value_supported(r, value_pool([source])) for _, r in extract_values(claim))


# --- extract_values ---------------------------------------------------------------------------


def test_brazilian_amount_reads_as_decimal():
    assert readings("R$ 1.234,56") == {1234.56}


def test_large_brazilian_amount():
    assert readings("R$ 93.587.114,46") == {93587114.46}


def test_english_amount_with_thousands_comma():
    assert 1418.6 in readings("$1,418.6 million") and 1418.6e6 in readings("$1,418.6 million")


def test_scale_word_matches_written_out_number():
    assert 1_200_000 in readings("1,2 milhão")
    assert supported("R$ 1.200.000", "receita de R$ 1,2 milhão")
    assert supported("1,2 milhão", "receita de R$ 1.200.000,00")
    assert not supported("1,3 milhão", "receita de R$ 1.200.000,00")


def test_percentage_reads_its_number():
    surface, r = extract_values("cresceu 10,5% no ano")[0]
    assert surface == "10,5%" and r == {10.5}


def test_ambiguous_separator_keeps_both_readings():
    assert readings("1.234") == {1234.0, 1.234}
    assert readings("3.200") == {3200.0, 3.2}


def test_en_and_pt_decimals_match():
    assert supported("CTR of 3.4%", "CTR de 3,4%")
    assert not supported("CTR of 3.5%", "CTR de 3,4%")


def test_dates_are_split_into_numbers():
    assert [s for s, _ in extract_values("em 31/07/2026")] == ["31", "07", "2026"]


def test_numbers_inside_words_are_not_values():
    assert extract_values("versão v2 do modelo") == []


def test_extract_fields():
    assert extract_fields("the `roas_target` and isApprovedForAI and cpc_medio fields") == [
        "roas_target", "isApprovedForAI", "cpc_medio"]


# --- citations --------------------------------------------------------------------------------


def test_citations_in_reads_ids_in_order_without_duplicates():
    text = "Sales grew [doc-a]. Both [doc-b, doc-c] agree; again [doc-a]."
    assert citations_in(text) == ["doc-a", "doc-b", "doc-c"]


def test_citations_in_ignores_empty_brackets():
    assert citations_in("nothing [] here [ x]") == []


def test_strip_citations_tidies_punctuation():
    assert strip_citations("Sales grew 10% [doc-a]. Ok [x, y].") == "Sales grew 10%. Ok."


# --- sentences --------------------------------------------------------------------------------


@pytest.mark.parametrize("text, phrase", [
    ("which company, known for sam bankman-fried's trial", "sam bankman-fried"),
    ("who is the ceo of openai?", "openai"),
    ("a_b c", "c"), ("é o são paulo fc", "são paulo"), ("(apple)", "apple"), ("apple apples", "apples"),
    ("apples apple", "apple"), ("x", "x"), ("", "x"), ("openai's", "openai"), ("abc", ""), ("x y", "x y "),
])
def test_holds_words_is_the_word_bounded_pattern(text, phrase):
    expected = bool(phrase) and bool(re.search(rf"(?<!\w){re.escape(phrase)}(?!\w)", text))
    assert holds_words(text, phrase) is expected


def test_holds_words_needs_word_bounds():
    assert holds_words("is it amazon's?", "amazon")
    assert not holds_words("the amazonian forest", "amazon")
    assert not holds_words("são_paulo", "paulo")  # "_" is a word character, as for re's \w
    assert holds_words("amazonian forests, and amazon", "amazon")  # found after an occurrence that is not one
    # Only the start bounded: a focus word's phrase ("region" of "regions", "regional").
    assert holds_words("the regional sales", "region", ends_word=False)
    assert not holds_words("subregional sales", "region", ends_word=False)


def test_split_sentences_basic():
    assert split_sentences("As vendas cresceram 10%. O app cresceu 38%! E agora?") == [
        "As vendas cresceram 10%.", "O app cresceu 38%!", "E agora?"]


def test_abbreviations_do_not_end_sentences():
    assert split_sentences("O Sr. Silva falou com a Dra. Ana. Depois saiu.") == [
        "O Sr. Silva falou com a Dra. Ana.", "Depois saiu."]
    assert split_sentences("See e.g. the report. Then stop.") == ["See e.g. the report.", "Then stop."]
    # "v." of a case name: "Martinez v. Globex Electronics Inc." is one party against another, not two sentences.
    assert split_sentences("Martinez v. Globex Electronics Inc., Case No. 25-CV-01873. Judgment entered.") == [
        "Martinez v. Globex Electronics Inc., Case No. 25-CV-01873.", "Judgment entered."]


def test_a_citation_after_an_abbreviation_stays_with_its_sentence():
    # "a.C." ends the sentence, and the "[2-3]." after it cites that sentence: alone it would leave it uncited.
    assert split_sentences("A invenção do ábaco data de 2700–2300 a.C. [2-3]. Depois veio Napier [2-4].") == [
        "A invenção do ábaco data de 2700–2300 a.C. [2-3].", "Depois veio Napier [2-4]."]


def test_decimal_numbers_do_not_end_sentences():
    assert split_sentences("Preço R$ 1.234,56. Depois 3.5% a mais.") == ["Preço R$ 1.234,56.", "Depois 3.5% a mais."]


def test_titles_stay_on_their_own_line():
    assert split_sentences("Título do relatório\nAs vendas cresceram 10%. O app cresceu 38%.") == [
        "Título do relatório", "As vendas cresceram 10%.", "O app cresceu 38%."]


def test_bullets_are_separate_sentences():
    assert split_sentences("Ações:\n- reforçar estoque\n- ampliar lives\n• testar anúncios") == [
        "Ações:", "- reforçar estoque", "- ampliar lives", "• testar anúncios"]


def test_inline_enumerators_do_not_end_sentences():
    assert split_sentences("Passo 1. Abrir a loja. Passo 2. Fechar.") == ["Passo 1. Abrir a loja.", "Passo 2. Fechar."]


def test_split_sentences_keeps_closing_quotes():
    text = 'Ele disse "Vamos crescer." Depois foi embora.'
    parts = split_sentences(text)
    assert re.sub(r"\s", "", "".join(parts)) == re.sub(r"\s", "", text)


# --- language ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def markers():
    return load_policy().raw["languages"]["markers"]


@pytest.mark.parametrize("text", [
    "Quanto cresceram as vendas de inverno em 2025?",
    "Qual é o prazo médio de entrega do e-commerce no Nordeste?",
    "Há planos de mudança nos centros de distribuição da Acme em 2026?",
])
def test_detect_portuguese(markers, text):
    assert detect_language(text, markers) == "pt"


@pytest.mark.parametrize("text", [
    "What is Acme's online return rate and the main reason for returns?",
    "Which region grew fastest in the first half of 2025?",
    "How much was Acme fined by Procon-PR over its exchange policy?",
])
def test_detect_english(markers, text):
    assert detect_language(text, markers) == "en"


def test_detect_language_defaults_without_markers(markers):
    assert detect_language("ROAS CPC CTR", markers) == "en"
    assert detect_language("ROAS CPC CTR", markers, default="pt") == "pt"


def test_detect_portuguese_question_with_shared_markers(markers):
    assert detect_language("A Acme vai fazer recall do Tênis Brisa?", markers) == "pt"


# --- phrases ----------------------------------------------------------------------------------


def test_count_phrases_word_boundaries_and_accents():
    assert count_phrases("A meta é alta e o custo é baixo", ["e", "é"]) == {"e": 1, "é": 2}
    assert count_phrases("todas  as\nperspectivas", ["todas as perspectivas"]) == {"todas as perspectivas": 1}
    assert count_phrases("Roastery", ["roas"]) == {}


def test_a_lead_in_ending_in_a_colon_is_no_claim():
    from graph.algorithms.passages import claim_sentences

    text = ("Here are details explaining how the Caesars Sportsbook welcome offer works:\n"
            "New users get up to $1,000 back in bonus bets if their first wager loses.")
    assert [s for _, s in claim_sentences(text)] == [
        "New users get up to $1,000 back in bonus bets if their first wager loses."]


def test_a_number_opening_a_sentence_is_no_list_marker():
    from graph.algorithms.passages import claim_sentences

    # Quoted without its "152." the sentence would claim a "67" its source never says.
    text = ("18 -- Puka Nacua needs 18 more catches to set the rookie record. 152.67 -- After missing last week's "
            "game, Tyreek Hill now needs to average almost 153 yards per game.\n2. Abrir a loja às nove horas.")
    assert [s for _, s in claim_sentences(text)] == [
        "18 -- Puka Nacua needs 18 more catches to set the rookie record.",
        "152.67 -- After missing last week's game, Tyreek Hill now needs to average almost 153 yards per game.",
        "Abrir a loja às nove horas."]
