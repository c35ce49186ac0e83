"""The CLI's provider flags (`--chat-model`, `--rerank-model`, `--vector-store`, `--provider-timeout`,
`--provider-retries`, `--memory-url`): each overrides its environment variable, a misconfigured one
stops the command at start-up with one line naming the setting, and `ask --stream` prints the LLM
composer's tokens as they come (scripted OpenAI-compatible server on 127.0.0.1)."""

from __future__ import annotations

import json

import pytest
from scripted_server import Reply

from graph.entrypoints.cli import _context, build_parser, main

CHAT = "/v1/chat/completions"
DOC = "acme-bi-2025-inverno-sales"
COMPOSED = f"As vendas do inverno 2025 cresceram 7,9% sobre o inverno 2024 [{DOC}]."
VERDICT = {"scores": {"quality": 0.9, "utility": 0.9, "groundedness": 0.95},
           "reasoning": {"quality": "q", "utility": "u", "groundedness": "g"}, "final_decision": "OK"}


def test_flags_override_the_environment(monkeypatch):
    monkeypatch.setenv("RAGATE_CHAT_MODEL", "none")
    monkeypatch.setenv("RAGATE_PROVIDER_TIMEOUT", "30")
    args = build_parser().parse_args(["ask", "q", "--tenant", "acme", "--chat-model", "openai/gpt-4o-mini",
                                      "--rerank-model", "cohere/rerank-v3.5", "--vector-store", "qdrant",
                                      "--provider-timeout", "2.5", "--provider-retries", "0",
                                      "--memory-url", "postgresql://u@db/ragate"])
    ctx = _context(args)
    assert (ctx.chat_model, ctx.rerank_model, ctx.vector_store) == ("openai/gpt-4o-mini", "cohere/rerank-v3.5", "qdrant")
    assert (ctx.provider_timeout_s, ctx.provider_retries, ctx.memory_url) == (2.5, 0, "postgresql://u@db/ragate")
    env_only = _context(build_parser().parse_args(["ask", "q"]))
    assert env_only.chat_model == "none" and env_only.provider_timeout_s == 30


@pytest.mark.parametrize("argv, message", [
    (["--chat-model", "gpt-4o-mini"], "RAGATE_CHAT_MODEL='gpt-4o-mini': expected openai/<model> or none"),
    (["--rerank-model", "cohere/rerank-v3.5"], "RAGATE_RERANK_MODEL='cohere/rerank-v3.5' needs COHERE_API_KEY"),
    (["--embedding-model", "openai/text-embedding-3-small"], "RAGATE_EMBEDDING_MODEL='openai/text-embedding-3-small' needs OPENAI_API_KEY"),
    (["--vector-store", "qdrant"], "RAGATE_VECTOR_STORE='qdrant' needs QDRANT_URL"),
])
def test_a_misconfigured_provider_stops_ask_and_ingest_in_one_line(corpus, capsys, argv, message):
    for command in (["ask", "Quanto vendemos?", "--tenant", "acme"], ["ingest", "samples/acme", "--tenant", "acme"]):
        assert main([*command, "--home", str(corpus.home), *argv]) == 2
        err = capsys.readouterr().err.strip()
        assert message in err and len(err.splitlines()) == 1, err


@pytest.mark.parametrize("flag, value", [("--provider-timeout", "-1"), ("--provider-retries", "two"),
                                         ("--provider-timeout", "0"), ("--provider-timeout", "601"),
                                         ("--provider-retries", "50")])
def test_bad_numbers_are_refused_by_the_parser(capsys, flag, value):
    with pytest.raises(SystemExit) as exit_:
        main(["ask", "q", "--tenant", "acme", flag, value])
    assert exit_.value.code == 2 and flag in capsys.readouterr().err


@pytest.fixture
def llm_env(scripted_server, monkeypatch):
    server = scripted_server.reset()
    monkeypatch.setenv("OPENAI_BASE_URL", server.openai_base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    monkeypatch.setenv("RAGATE_LOG", "off")
    server.default(CHAT, lambda body: Reply.chat(json.dumps(VERDICT)))
    return server


def ask(corpus, *extra):
    return main(["ask", "Quanto cresceram as vendas de inverno em 2025?", "--tenant", "acme", "--home", str(corpus.home),
                 "--chat-model", "openai/composer", "--provider-retries", "0", *extra])


def test_ask_stream_prints_the_tokens_then_the_verdict(llm_env, corpus, capsys):
    llm_env.script(CHAT, Reply.chat(COMPOSED, chunk_chars=5))
    assert ask(corpus, "--stream") == 0
    out = capsys.readouterr().out
    assert out.startswith(COMPOSED) and out.count(COMPOSED) == 1
    assert "verdict: OK" in out and f"citations: {DOC}" in out
    assert llm_env.requests_to(CHAT)[0]["json"]["stream"] is True


def test_ask_stream_says_when_the_streamed_draft_was_replaced(llm_env, corpus, capsys):
    invented = f"As vendas do inverno 2025 cresceram 48,3% [{DOC}]."
    llm_env.script(CHAT, Reply.chat(invented))
    assert ask(corpus, "--stream") == 0
    out = capsys.readouterr().out
    assert out.startswith(invented) and "(the chat model's answer could not be used; the extractive answer:)" in out
    assert "7,9%" in out.split("extractive answer:)")[1] and "verdict: OK" in out


def test_ask_stream_says_when_the_judge_blocked_what_was_streamed(llm_env, corpus, capsys, monkeypatch):
    from nodes import compose

    monkeypatch.setattr(compose, "draft_failures", lambda *args: None)  # a draft the composer lets through
    invented = f"As vendas do inverno 2025 cresceram 48,3% [{DOC}]."
    llm_env.script(CHAT, Reply.chat(invented))
    assert ask(corpus, "--stream") == 0
    out = capsys.readouterr().out
    assert out.startswith(invented) and "(the judge blocked the answer above; instead:)" in out and "verdict: BLOCK" in out


def test_ask_json_carries_the_llm_answer_and_its_errors(llm_env, corpus, capsys):
    llm_env.script(CHAT, Reply.chat("Sem citação nenhuma."))
    assert ask(corpus, "--json") == 0
    out = json.loads(capsys.readouterr().out)
    assert any("cites no [doc_id]" in e for e in out["errors"]) and DOC in out["citations_used"]
