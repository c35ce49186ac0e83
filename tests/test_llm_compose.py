"""The LLM composer (nodes/compose.py, prompts/compose.yaml): the real ChatOpenAI client streaming
over HTTP from a scripted server on 127.0.0.1, tokens reaching LangGraph's `stream_mode="messages"`
(and the judge's JSON not), and every unusable reply or failing model giving the extractive answer
with the reason recorded."""

from __future__ import annotations

import json
import time

import pytest
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from scripted_server import Reply

from graph.algorithms.chat_draft import llm_answer
from graph.graph import compile_graph
from nodes import compose as compose_module

CHAT = "/v1/chat/completions"
QUESTION = "Quanto cresceram as vendas de inverno em 2025?"
DOC = "acme-bi-2025-inverno-sales"
COMPOSED = (f"As vendas do inverno 2025 cresceram 7,9% sobre o inverno 2024 [{DOC}].\n\n"
            f"- A receita bruta foi de R$ 118.430.227,35 [{DOC}].\n"
            f"- Casacos e jaquetas lideraram com 26,9% do total [{DOC}].")
VERDICT = {"scores": {"quality": 0.9, "utility": 0.9, "groundedness": 0.95},
           "reasoning": {"quality": "q", "utility": "u", "groundedness": "g"}, "final_decision": "OK"}


def chunk(doc_id, content, score=0.8, date="2025-09-10"):
    return {"id": f"{doc_id}#0", "docId": doc_id, "content": content, "rerankScore": score,
            "metadata": {"date": date, "language": "pt"}}


CHUNKS = [chunk("d1", "As vendas de inverno cresceram 7,9% em 2025."), chunk("d2", "O Sul concentrou 34% das vendas.", 0.6)]


class Recording(FakeListChatModel):
    """Replies in turn (streamed: the composer streams), and keeps every list of messages it was sent."""

    seen: list = []

    def _stream(self, messages, *args, **kwargs):
        self.seen.append(messages)
        yield from super()._stream(messages, *args, **kwargs)


# --- llm_answer on its own ------------------------------------------------------------------------


def test_a_cited_answer_is_used_and_the_prompt_carries_the_rules_documents_and_language():
    llm = Recording(responses=["As vendas cresceram 7,9% [d1]; o Sul teve 34% [d2]."], seen=[])
    answer, problem = llm_answer(llm, "Quanto cresceram as vendas?", "pt", "medium", CHUNKS, 300)
    assert problem is None and answer == "As vendas cresceram 7,9% [d1]; o Sul teve 34% [d2]."
    system, user = llm.seen[0]
    assert "ONLY from" in system.content and '"<the fact> [d1]."' in system.content  # the example cites a real id
    assert "Brazilian Portuguese" in system.content
    assert "Document [d1]:\nAs vendas de inverno cresceram 7,9% em 2025." in user.content
    assert "score" not in user.content and "2025-09-10" not in user.content  # nothing a model could copy as a fact
    assert "Quanto cresceram as vendas?" in user.content and "Answer in Brazilian Portuguese" in user.content


def test_low_coverage_tells_the_model_to_answer_only_the_covered_part():
    llm = Recording(responses=["x [d1]."], seen=[])
    llm_answer(llm, "Q?", "en", "low", CHUNKS, 300)
    assert "cover only part of the question" in llm.seen[0][1].content and "English" in llm.seen[0][0].content


def test_visible_reasoning_is_removed():
    reply = "<think>The user wants sales. d1 says 7,9%.</think>\nAs vendas cresceram 7,9% [d1]."
    answer, problem = llm_answer(FakeListChatModel(responses=[reply]), "Q?", "pt", "medium", CHUNKS, 300)
    assert problem is None and answer == "As vendas cresceram 7,9% [d1]."


@pytest.mark.parametrize("reply, why", [
    ("  \n", "empty"),
    ("<think>still thinking when the budget ran out", "empty"),
    ("As vendas cresceram 7,9%.", "cites no [doc_id]"),
    ("As vendas cresceram 7,9% [d1] e 12% [d9].", "not retrieved (d9)"),
])
def test_unusable_replies_are_refused_with_the_reason(reply, why):
    answer, problem = llm_answer(FakeListChatModel(responses=[reply]), "Q?", "pt", "medium", CHUNKS, 300)
    assert answer is None and why in problem


# --- the node in the graph, over HTTP ---------------------------------------------------------------


@pytest.fixture
def llm_env(scripted_server, monkeypatch):
    server = scripted_server.reset()
    monkeypatch.setenv("OPENAI_BASE_URL", server.openai_base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    # the judge asks second: a valid verdict unless a test scripts otherwise
    server.default(CHAT, lambda body: Reply.chat(json.dumps(VERDICT)))
    return server


@pytest.fixture(scope="module")
def graph():
    return compile_graph()


def context(corpus, **overrides):
    return corpus.context("acme", chat_model="openai/composer", **{"provider_retries": 0, **overrides})


def test_the_answer_streams_token_by_token_and_is_judged(llm_env, graph, corpus):
    llm_env.script(CHAT, Reply.chat(COMPOSED, chunk_chars=6))
    tokens, final = [], None
    for mode, item in graph.stream({"question": QUESTION}, context=context(corpus), stream_mode=["messages", "values"]):
        if mode == "messages":
            message, meta = item
            tokens.append((meta["langgraph_node"], message.content))
        else:
            final = item
    assert {node for node, _ in tokens} == {"compose"}  # the judge's JSON is tagged nostream
    assert len([t for _, t in tokens if t]) >= 10 and "".join(t for _, t in tokens) == COMPOSED
    assert final["answer"] == COMPOSED and final["citations_used"] == [DOC]
    assert final["verdict"]["final_decision"] == "OK" and final["errors"] == []
    compose_req, judge_req = llm_env.requests_to(CHAT)
    body = compose_req["json"]
    assert body["model"] == "composer" and body["stream"] is True and body["max_completion_tokens"] == 600
    system, user = body["messages"]
    assert system["role"] == "system" and "Brazilian Portuguese" in system["content"]
    assert QUESTION in user["content"] and f"Document [{DOC}]:" in user["content"]
    assert "senior retail-data auditor" in judge_req["json"]["messages"][0]["content"]


@pytest.mark.parametrize("draft, why", [
    (f"As vendas do inverno 2025 cresceram 48,3% sobre 2024 [{DOC}].", "values not found in the cited chunks: 48,3%"),
    (f"As vendas cresceram 7,9% [{DOC}]. A receita bruta foi de R$ 118.430.227,35.", "states facts without citing"),
    (f"As vendas do inverno 2025 não cresceram 7,9% sobre o inverno 2024 [{DOC}].", "a negation in one is not in the other"),
])
def test_a_draft_the_judge_would_block_gives_the_extractive_answer(llm_env, graph, corpus, draft, why):
    # The draft is well formed, and the LLM judge would approve anything: the composer's own run of the
    # hard checks catches it, and the user gets a grounded answer instead of a refusal.
    llm_env.script(CHAT, Reply.chat(draft), Reply.chat(json.dumps(
        {**VERDICT, "scores": {"quality": 1, "utility": 1, "groundedness": 1}})))
    state = graph.invoke({"question": QUESTION}, context=context(corpus))
    (error,) = [e for e in state["errors"] if e.startswith("compose:")]
    assert "failed the groundedness checks" in error and why in error, error
    assert draft not in state["answer"] and "7,9%" in state["answer"] and state["verdict"]["final_decision"] == "OK"


@pytest.mark.parametrize("reply, why", [
    (Reply.status(500, {"error": {"message": "boom"}}), "chat model failed"),
    (Reply.chat("As vendas cresceram muito no inverno."), "cites no [doc_id]"),
    (Reply.chat("As vendas cresceram 7,9% [acme-inventado]."), "not retrieved (acme-inventado)"),
])
def test_a_failing_or_unusable_model_gives_the_extractive_answer(llm_env, graph, corpus, reply, why):
    llm_env.script(CHAT, reply)
    state = graph.invoke({"question": QUESTION}, context=context(corpus))
    assert any(e.startswith("compose: ") and why in e and e.endswith("extractive answer") for e in state["errors"])
    assert DOC in state["citations_used"] and "7,9%" in state["answer"]
    assert state["verdict"]["final_decision"] == "OK"


def test_a_timeout_gives_the_extractive_answer_within_the_configured_time(llm_env, graph, corpus):
    llm_env.script(CHAT, Reply.delay(5, Reply.chat(COMPOSED)))
    started = time.perf_counter()
    state = graph.invoke({"question": QUESTION}, context=context(corpus, provider_timeout_s=0.5))
    assert time.perf_counter() - started < 4.5
    assert any(e.startswith("compose: chat model failed") for e in state["errors"]) and state["citations_used"]


def test_without_coverage_the_model_is_not_asked(llm_env, graph, corpus):
    state = graph.invoke({"question": "Qual é a política de férias dos astronautas lunares em Marte?"},
                         context=context(corpus))
    assert state["coverage_level"] == "none" and len(state["suggestions"]) == 3
    # invoke() runs the judge unstreamed; the composer always streams: no streamed request, no composer call
    assert not any(r["json"].get("stream") for r in llm_env.requests_to(CHAT))


def test_a_superseded_version_is_explained_after_the_llm_answer(monkeypatch, corpus):
    old = {**chunk("pb-2025", "O playbook recomenda 20% de desconto.", 0.70, "2025-03-01"), "assetId": "pb",
           "assetName": "Playbook de inverno"}
    new = {**chunk("pb-2026", "O playbook recomenda 15% de desconto.", 0.72, "2026-03-01"), "assetId": "pb",
           "assetName": "Playbook de inverno"}
    llm = Recording(responses=["O playbook recomenda 15% de desconto [pb-2026]."], seen=[])
    monkeypatch.setattr(compose_module, "chat_model", lambda ctx: llm)
    from conftest import runtime_for

    out = compose_module.compose({"question": "Qual desconto o playbook recomenda?", "language": "pt",
                                  "rag": {"enabled": True}, "reranked": [new, old]},
                                 runtime_for(corpus.context("acme")))
    assert "[pb-2025]" not in llm.seen[0][1].content  # the superseded version is not offered to the model
    first, note = out["answer"].split("\n\n")
    assert first == "O playbook recomenda 15% de desconto [pb-2026]." and "pb-2025" in note and "pb-2026" in note


def test_a_real_value_put_in_the_wrong_context_gives_the_extractive_answer(llm_env, graph, corpus):
    # found by bench/llm_paths.py: "o salário médio … é de R$ 1,85" where R$ 1,85 is the document's CPC
    draft = "A receita bruta do inverno 2025 foi de 26,9% das vendas de inverno 2024 [acme-bi-2025-inverno-sales]."
    llm_env.script(CHAT, Reply.chat(draft))
    state = graph.invoke({"question": QUESTION}, context=context(corpus))
    (error,) = [e for e in state["errors"] if e.startswith("compose:")]
    assert "puts 26,9% (claim 1) in a context its cited sentences do not give it" in error, error
    assert draft not in state["answer"] and "7,9%" in state["answer"]


# --- the draft's direct answer ------------------------------------------------------------------


@pytest.mark.parametrize("draft, question, language, direct", [
    (COMPOSED, QUESTION, "pt", "As vendas do inverno 2025 cresceram 7,9% sobre o inverno 2024"),
    ("7,9% [d1].\n\n- As vendas de inverno cresceram 7,9% em 2025 [d1].", QUESTION, "pt", "7,9%"),
    ("Yes, both articles report a rise [d1].\n- ...", "Did both articles report a rise?", "en",
     "Yes, both articles report a rise"),
    ("Sim [d1].", "Houve crescimento das vendas em 2025?", "pt", "Sim"),
    # Not a direct answer: a bullet first, a long opening, an uncited one, a yes/no to another question.
    ("- As vendas cresceram 7,9% [d1].", QUESTION, "pt", None),
    ("As vendas de inverno da Acme Moda cresceram 7,9% em 2025, puxadas pelo Sul e pelo app [d1].", QUESTION,
     "pt", None),
    ("As vendas cresceram 7,9%.\n- Fonte [d1].", QUESTION, "pt", None),
    ("Yes [d1].", "How much did sales grow?", "en", None),
    ("No. The documents do not cover this question.\n- Sales grew [d1].", "Did both articles report a rise?", "en", None),
    ("Yes and no [d1].", "Did both articles report a rise?", "en", None),
])
def test_the_direct_answer_a_draft_opens_with(draft, question, language, direct):
    from graph.algorithms.chat_draft import draft_direct_answer
    from graph.policy import load_policy

    assert draft_direct_answer(draft, question, language, load_policy()) == direct


def test_a_draft_without_a_direct_answer_gets_the_deterministic_one_on_top(llm_env, graph, corpus):
    bullets = (f"- A receita bruta do inverno 2025 foi de R$ 118.430.227,35 [{DOC}].\n"
               f"- As vendas cresceram 7,9% sobre o inverno 2024 [{DOC}].")
    llm_env.script(CHAT, Reply.chat(bullets))
    final = graph.invoke({"question": QUESTION}, context=context(corpus))
    assert final["direct_answer"] == "7,9%"
    assert final["answer"].startswith(f"7,9% [{DOC}].\n\n- A receita bruta") and final["answer"].endswith(bullets)
