"""A language is one file: Spanish is added by its pack (policies/languages/es.yaml) and a policy that names
it, with no code for it. A few Spanish documents (tests/fixtures/spanish: retail BI notes, a returns policy, a
Christmas plan, a logistics report) are ingested into a fresh embedded collection (in-process engine, the
multilingual embedded model, no LLM) and Spanish questions get a cited answer holding the right value, a
coverage level, the judge's verdict, the language "es" and, where the documents do not answer, the three
suggestions written in Spanish. No translation model knows Spanish: none is configured here, and a
translator asked for one it does not support is skipped (nodes/compose.py asks `supports` first)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from conftest import template_regex

from graph.algorithms.text import citations_in, detect_language
from graph.assets import DEFAULT_POLICY_PATH, LANGUAGES_DIR
from graph.context import Context
from graph.graph import compile_graph
from graph.indexing.ingest import ingest_path
from graph.policy import load_policy
from graph.prompts import phrases

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "spanish"
TENANT = "lumen"


@pytest.fixture(scope="module")
def spanish(tmp_path_factory):
    """(policy path, home) of the shipped policy with the Spanish pack named too, the fixtures ingested."""
    folder = tmp_path_factory.mktemp("spanish")
    raw = yaml.safe_load(DEFAULT_POLICY_PATH.read_text(encoding="utf-8"))
    raw["languages"]["packs"] = {lang: str(LANGUAGES_DIR / f"{lang}.yaml") for lang in ("en", "pt", "es")}
    policy = folder / "rag.yaml"
    policy.write_text(yaml.safe_dump(raw, allow_unicode=True, sort_keys=False), encoding="utf-8")
    home = folder / "home"
    report = ingest_path(FIXTURES, collection="documents", tenant=TENANT,
                         context=Context(home=str(home), tenant=None, policy_path=str(policy)))
    assert not report.errors, report.errors
    return str(policy), str(home)


@pytest.fixture(scope="module")
def ask(spanish):
    graph = compile_graph()
    policy, home = spanish

    def _ask(question: str) -> dict:
        return graph.invoke({"question": question}, context=Context(home=home, tenant=TENANT, policy_path=policy))

    return _ask


def written_in(text: str) -> set[str]:
    """The languages whose suggestion_* phrase `text` is."""
    return {lang for lang in ("en", "pt", "es") for key, template in phrases(lang).items()
            if key.startswith("suggestion_") and template_regex(template).match(text)}


def test_the_spanish_pack_is_assembled_into_the_policy(spanish):
    languages = load_policy(spanish[0]).languages
    assert languages.analyzers["es"] == "spanish" and languages.names["es"] == "Spanish"
    assert languages.question_cues["es"].how_much[0] == "cuánto"
    assert "julio" in languages.months["es"] and "trimestre" in languages.period_units["quarter"]
    assert detect_language("¿Cuál es el plazo para devolver un producto comprado en la tienda online?",
                           languages.markers, languages.default) == "es"
    # Naming a pack adds its words and touches no other language's.
    shipped = load_policy().languages
    for kind in ("markers", "months", "negations", "number_words", "question_cues", "source_cues"):
        assert {k: v for k, v in getattr(languages, kind).items() if k != "es"} == dict(getattr(shipped, kind))


@pytest.mark.parametrize(("question", "value", "doc_id"), [
    ("¿Cuánto crecieron las ventas del verano 2025?", "6,3", "lumen-bi-2025-verano"),
    ("¿Cuál es el presupuesto de medios de la campaña de Navidad 2025?", "1,8 millones", "lumen-plan-navidad-2025"),
    ("¿En cuántos días se puede devolver un producto?", "30", "lumen-politica-devoluciones"),
    ("¿Cuál fue la tasa de conversión de la tienda online en el primer semestre de 2025?", "2,4", "lumen-bi-2025-online"),
])
def test_a_spanish_question_gets_a_cited_answer_and_a_verdict(ask, question, value, doc_id):
    state = ask(question)
    assert state["language"] == "es"
    assert state["coverage_level"] in ("high", "medium", "low")
    first_line = state["answer"].splitlines()[0]
    assert value in first_line and doc_id in citations_in(first_line), state["answer"]
    assert doc_id in state["citations_used"] and set(state["citations_used"]) <= {c["docId"] for c in state["reranked"]}
    verdict = state["verdict"]
    assert verdict["final_decision"] in ("OK", "WARNING"), verdict
    assert set(verdict["scores"]) == {"quality", "utility", "groundedness"}
    assert all(0 <= s <= 1 for s in verdict["scores"].values()) and verdict["scores"]["groundedness"] >= 0.8, verdict


def test_an_unanswered_spanish_question_gets_three_spanish_suggestions(ask):
    state = ask("¿Cuál es el color favorito del gato del presidente de la empresa?")
    assert state["language"] == "es"
    assert state["coverage_level"] == "none"
    assert state["citations_used"] == []
    suggestions = state["suggestions"]
    assert len(suggestions) == 3 and len(set(suggestions)) == 3
    assert all(written_in(s) == {"es"} for s in suggestions), suggestions
    es = phrases("es")
    assert any(template_regex(es[key]).match(state["answer"]) for key in ("missing", "missing_generic")), state["answer"]
    assert state["verdict"]["final_decision"] in ("OK", "WARNING", "BLOCK")
