"""The LLM judge path (nodes/judge.py) and provider settings (graph/providers/): structured verdicts,
one repair, fallback to the deterministic judge, and the deterministic bound on groundedness."""

from __future__ import annotations

import json

import pytest
from langchain_core.language_models.fake_chat_models import FakeListChatModel

from graph.algorithms.judging import combine_with_llm, deterministic_verdict, parse_llm_verdict
from graph.context import Context
from graph.policy import load_policy
from graph.providers.chat import chat_model
from graph.providers.rerankers import reranker
from graph.providers.resources import check_providers
from graph.providers.specs import ProviderError, parse_spec
from nodes.judge import llm_verdict

CHUNK = {"id": "d1#0", "docId": "d1", "content": "Winter sales grew 7.9% in 2025, reaching R$ 118 million.", "rerankScore": 0.9}
GOOD = json.dumps({"scores": {"quality": 0.9, "utility": 0.85, "groundedness": 0.95},
                   "reasoning": {"quality": "clear", "utility": "numbers", "groundedness": "supported"},
                   "final_decision": "OK"})


def state(answer: str) -> dict:
    return {"question": "Quanto cresceram as vendas?", "answer": answer, "reranked": [CHUNK], "language": "en",
            "coverage_level": "medium"}


class Failing(FakeListChatModel):
    def _call(self, *args, **kwargs):  # what a timeout or a 500 after the client's retries looks like
        raise TimeoutError("Request timed out.")


def test_a_good_verdict_is_used_and_bounded():
    v, notes = llm_verdict(FakeListChatModel(responses=[GOOD]), state("Winter sales grew 7.9% in 2025 [d1]."))
    assert notes == [] and v["scores"] == {"quality": 0.9, "utility": 0.85, "groundedness": 0.95}


def test_a_fenced_reply_is_read():
    assert parse_llm_verdict(f"```json\n{GOOD}\n```")["scores"]["quality"] == 0.9


def test_broken_json_is_repaired_once():
    llm = FakeListChatModel(responses=['{"scores": {"quality": 0.9,}}', GOOD])
    v, notes = llm_verdict(llm, state("Winter sales grew 7.9% in 2025 [d1]."))
    assert v is not None and v["scores"]["utility"] == 0.85
    assert len(notes) == 1 and "repaired (invalid JSON" in notes[0]


@pytest.mark.parametrize("replies, why", [
    (["not json", "still not json"], "no JSON object"),
    (['{"scores": {"quality": 2}}', '{"scores": {"quality": 0.5, "utility": 0.5}}'], "scores.groundedness"),
])
def test_twice_unusable_falls_back(replies, why):
    v, notes = llm_verdict(FakeListChatModel(responses=replies), state("x [d1]."))
    assert v is None and "unusable after one repair" in notes[-1] and why in notes[-1]


def test_a_failing_model_falls_back_and_says_why():
    v, notes = llm_verdict(Failing(responses=[]), state("x [d1]."))
    assert v is None and "TimeoutError" in notes[0] and "deterministic verdict" in notes[0]


def test_an_invented_value_stays_below_0_3_whatever_the_llm_says():
    policy = load_policy()
    s = state("Winter sales grew 31.5% in 2025 [d1].")
    det = deterministic_verdict(s, policy)
    v, _ = llm_verdict(FakeListChatModel(responses=[GOOD]), s)
    combined = combine_with_llm(det, v, policy.judge.thresholds)
    assert combined["scores"]["groundedness"] < 0.3 and combined["final_decision"] == "BLOCK"
    assert combined["method"] == "llm+deterministic"


def test_the_prompt_carries_question_documents_and_answer():
    seen = []

    class Recording(FakeListChatModel):
        def _call(self, messages, *args, **kwargs):
            seen.append(messages)
            return super()._call(messages, *args, **kwargs)

    llm_verdict(Recording(responses=[GOOD]), state("Winter sales grew 7.9% in 2025 [d1]."))
    system, user = seen[0]
    assert "senior retail-data auditor" in system.content and "below 0.3" in system.content
    assert "[d1] Winter sales grew 7.9%" in user.content and "Quanto cresceram" in user.content
    assert "Answer to audit:\nWinter sales grew 7.9% in 2025 [d1]." in user.content


# --- provider settings ---------------------------------------------------------------------------


@pytest.mark.parametrize("spec, expected", [("none", None), ("", None), ("openai/gpt-4o-mini", ("openai", "gpt-4o-mini")),
                                            ("openai/qwen2.5:1.5b", ("openai", "qwen2.5:1.5b"))])
def test_parse_spec(spec, expected):
    assert parse_spec("RAGATE_CHAT_MODEL", spec, ("openai",)) == expected


@pytest.mark.parametrize("spec", ["gpt-4o", "anthropic/claude", "openai/", "openai"])
def test_bad_specs_name_the_setting(spec):
    with pytest.raises(ProviderError, match=r"^RAGATE_CHAT_MODEL='.*': expected openai/<model> or none$"):
        parse_spec("RAGATE_CHAT_MODEL", spec, ("openai",))


def test_missing_keys_fail_at_start_up(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("COHERE_API_KEY", raising=False)
    with pytest.raises(ProviderError, match="RAGATE_CHAT_MODEL='openai/m' needs OPENAI_API_KEY"):
        check_providers(Context(chat_model="openai/m"))
    with pytest.raises(ProviderError, match="RAGATE_RERANK_MODEL='cohere/rerank-v3.5' needs COHERE_API_KEY"):
        check_providers(Context(rerank_model="cohere/rerank-v3.5"))
    check_providers(Context())  # the embedded default needs nothing


def test_clients_are_configured_from_context_and_environment(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("COHERE_API_KEY", "c")
    monkeypatch.setenv("COHERE_BASE_URL", "http://127.0.0.1:9")
    ctx = Context(chat_model="openai/local", rerank_model="cohere/rerank-v3.5", provider_timeout_s=2.5, provider_retries=3)
    llm = chat_model(ctx)
    assert (llm.model_name, llm.openai_api_base, llm.request_timeout, llm.max_retries) == ("local", "http://127.0.0.1:9/v1", 2.5, 3)
    assert chat_model(ctx) is llm  # built once per configuration
    rr = reranker(ctx, top_n=7)
    assert (rr.model, rr.top_n) == ("rerank-v3.5", 7)
    assert chat_model(Context()) is None and reranker(Context()) is None


@pytest.mark.parametrize("name, value, message", [
    ("RAGATE_PROVIDER_TIMEOUT", "abc", "RAGATE_PROVIDER_TIMEOUT='abc' is not a number"),
    ("RAGATE_PROVIDER_RETRIES", "1.5", "RAGATE_PROVIDER_RETRIES='1.5' is not an integer"),
    ("RAGATE_PROVIDER_TIMEOUT", "0", "provider_timeout_s must be in"),
])
def test_bad_numeric_settings_name_the_variable(monkeypatch, name, value, message):
    monkeypatch.setenv(name, value)
    with pytest.raises(ValueError, match=message):
        Context()


@pytest.mark.parametrize("reply", [
    '{"scores": {"quality": 0.0, "utility": 0.0, "groundedness": 0.0}, "reasoning": {}, "final_decision": "OK"}',
    '{"scores": {"quality": 0.9, "utility": 0.9, "groundedness": 0.9}, "reasoning": {"quality": "<why, one sentence>",'
    ' "utility": "<why, one sentence>", "groundedness": "<why, one sentence>"}, "final_decision": "OK"}',
])
def test_a_reply_that_echoes_the_shape_is_not_a_judgement(reply):
    # a 1.5B model answered with the prompt's example object (all zeros), which BLOCKed grounded answers
    with pytest.raises(ValueError, match="in your own words"):
        parse_llm_verdict(reply)
