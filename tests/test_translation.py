"""Machine translation of a question into its evidence's language (graph/providers/translation.py), and the
composer reading that evidence by the translated question's words (nodes/compose.py)."""

from __future__ import annotations

import dataclasses

import pytest
from conftest import matches_phrase

from graph.providers.specs import ProviderError
from graph.providers.translation import translator_for


def test_the_local_model_translates_both_ways_offline():
    translator = translator_for("local/bergamot-tiny")
    assert translator.supports("en", "pt") and translator.supports("pt", "en")
    assert not translator.supports("en", "es")
    assert "orçamento" in translator.translate("What is the media budget of the 2026 winter playbook?", "en", "pt")
    assert "return rate" in translator.translate("Qual é a taxa de devolução online da Acme?", "pt", "en").lower()


def test_a_wrong_translation_setting_is_one_clear_error():
    assert translator_for("none") is None and translator_for("") is None
    with pytest.raises(ProviderError, match="translation_model='deepl/x'"):
        translator_for("deepl/x")
    with pytest.raises(ProviderError, match="bergamot-tiny"):
        translator_for("local/marian-big")
    with pytest.raises(ProviderError, match="not en→es"):
        translator_for("local/bergamot-tiny").translate("hello", "en", "es")


MEDIA_BUDGET = "What is the media budget of the 2026 winter playbook?"


def test_an_english_question_over_portuguese_evidence_is_read_by_its_words(ask):
    # By meaning alone the composer quoted "Esta versão substitui o playbook de inverno 2025" and a TikTok
    # report's recommendation; put into Portuguese, the question's words find the budget sentence.
    state = ask(MEDIA_BUDGET)
    assert state["direct_answer"] == "R$ 3,9 milhões", state["answer"]
    assert "Esta versão substitui" not in state["answer"]
    assert state["citations_used"] == ["acme-playbook-inverno-2026"], state["answer"]
    assert state["verdict"]["final_decision"] == "OK", state["verdict"]
    assert not state.get("errors"), state["errors"]


def test_without_a_translator_the_evidence_is_ranked_by_meaning(ask, corpus):
    state = ask(MEDIA_BUDGET, context=dataclasses.replace(corpus.context("acme"), translation_model="none"))
    assert state["answer"] and "acme-playbook-inverno-2026" in state["citations_used"]
    assert not state.get("errors"), state["errors"]


def test_a_failing_translator_costs_no_answer(ask, corpus, monkeypatch):
    from nodes import compose

    class Broken:
        name = "broken"

        def supports(self, source, target):
            return True

        def translate(self, text, source, target):
            raise RuntimeError("engine crashed")

    monkeypatch.setattr(compose, "translator_for", lambda spec: Broken())
    state = ask(MEDIA_BUDGET)
    assert state["answer"] and "acme-playbook-inverno-2026" in state["citations_used"]
    assert any("translation unavailable (RuntimeError: engine crashed)" in e for e in state["errors"]), state["errors"]


def test_each_part_is_read_in_the_evidence_s_language_and_answered_in_the_question_s(ask):
    state = ask("What is the media budget of the 2026 winter playbook and how many microinfluencers does it plan?")
    assert state["direct_answer"] == "R$ 3,9 milhões", state["answer"]
    assert "40 microinfluenciadores" in state["answer"], state["answer"]
    # The composer's own words stay English: no Portuguese phrase for a part, whatever it reads.
    assert not any(matches_phrase(line, "pt", name) for line in state["answer"].splitlines()
                   for name in ("missing_part", "part_in_other_language", "missing")), state["answer"]
