"""The scripted API server (tests/scripted_server.py) driven by the REAL clients over loopback HTTP:
langchain_openai.ChatOpenAI / OpenAIEmbeddings and langchain_cohere.CohereRerank."""

from __future__ import annotations

import json
import socket
import threading
import time
import urllib.error
import urllib.request

import cohere
import openai
import pytest
from langchain_cohere import CohereRerank
from langchain_core.documents import Document
from langchain_openai import ChatOpenAI, OpenAIEmbeddings
from pydantic import BaseModel
from scripted_server import (
    CHAT_PATH,
    EMBEDDINGS_PATH,
    RERANK_PATH,
    Reply,
    ScriptedServer,
    cohere_client,
    hash_vector,
)
from typing_extensions import TypedDict


class Person(BaseModel):
    name: str
    age: int


class PersonDict(TypedDict):
    name: str
    age: int


@pytest.fixture
def server(scripted_server):
    """The session's server (tests/conftest.py), reset for every test."""
    scripted_server.reset()
    yield scripted_server
    assert scripted_server.errors == []


def chat(srv: ScriptedServer, **kw) -> ChatOpenAI:
    kw.setdefault("max_retries", 0)
    return ChatOpenAI(model="m", base_url=srv.openai_base_url, api_key="test", **kw)


# --- chat completions -------------------------------------------------------------------------


def test_base_urls(server):
    assert server.url == f"http://127.0.0.1:{server.port}"
    assert server.openai_base_url == server.url + "/v1"


def test_chat_invoke_returns_scripted_content_and_records_the_request(server):
    server.script(CHAT_PATH, Reply.chat("scripted answer"))
    msg = chat(server).invoke("hi")
    assert msg.content == "scripted answer"
    assert msg.response_metadata["model_name"] == "m"  # the request's model is echoed
    assert msg.usage_metadata["total_tokens"] > 0

    [req] = server.requests
    assert (req["method"], req["path"]) == ("POST", CHAT_PATH)
    assert req["headers"]["authorization"] == "Bearer test"
    assert req["json"]["model"] == "m"
    assert req["json"]["messages"] == [{"role": "user", "content": "hi"}]
    assert req["json"]["stream"] is False


def test_chat_default_answer_is_ok(server):
    assert chat(server).invoke("anything").content == "ok"
    assert server.pending(CHAT_PATH) == 0


def test_chat_replies_are_served_in_order_then_default(server):
    server.script(CHAT_PATH, Reply.chat("one"), Reply.chat("two"))
    llm = chat(server)
    assert [llm.invoke("x").content for _ in range(3)] == ["one", "two", "ok"]


def test_chat_stream_yields_several_chunks(server):
    text = "Streaming through the scripted server works."
    server.script(CHAT_PATH, Reply.chat(text))
    chunks = [c.content for c in chat(server).stream("hi")]
    assert "".join(chunks) == text
    assert len([c for c in chunks if c]) >= 5
    assert all(len(c) <= 10 for c in chunks)
    assert server.requests[-1]["json"]["stream"] is True


def test_chat_stream_with_usage_chunk(server):
    server.script(CHAT_PATH, Reply.chat("counted words here"))
    chunks = list(chat(server, stream_usage=True).stream("hi"))
    assert "".join(c.content for c in chunks) == "counted words here"
    assert server.requests[-1]["json"]["stream_options"] == {"include_usage": True}
    total = chunks[0]
    for c in chunks[1:]:
        total += c
    assert total.usage_metadata["output_tokens"] == 3


@pytest.mark.parametrize("schema", [Person, PersonDict], ids=["pydantic", "typeddict"])
@pytest.mark.parametrize("method", ["json_mode", "function_calling", "json_schema"])
def test_structured_output(server, method, schema):
    args = {"name": "Ada", "age": 36}
    reply = Reply.chat_tool_call(None, args) if method == "function_calling" else Reply.chat_json(args)
    server.script(CHAT_PATH, reply)
    out = chat(server).with_structured_output(schema, method=method).invoke("who?")
    assert (out == Person(**args)) if schema is Person else (out == args)

    body = server.requests[-1]["json"]
    if method == "function_calling":
        assert body["tool_choice"]["function"]["name"] == schema.__name__
        assert body["tools"][0]["function"]["name"] == schema.__name__
    elif method == "json_mode":
        assert body["response_format"] == {"type": "json_object"}
    else:
        assert body["response_format"]["type"] == "json_schema"


def test_tool_call_reply_streams_and_binds_tools(server):
    server.script(CHAT_PATH, Reply.chat_tool_call("Person", {"name": "Bob", "age": 7}))
    assert list(chat(server).with_structured_output(Person, method="function_calling").stream("x")) == [
        Person(name="Bob", age=7)]

    server.script(CHAT_PATH, Reply.chat_tool_call("lookup", {"q": "refunds"}))
    msg = chat(server).bind_tools([{"type": "function", "function": {
        "name": "lookup", "parameters": {"type": "object", "properties": {"q": {"type": "string"}}}}}]).invoke("x")
    assert msg.tool_calls[0]["name"] == "lookup"
    assert msg.tool_calls[0]["args"] == {"q": "refunds"}
    assert msg.response_metadata["finish_reason"] == "tool_calls"


def test_default_factory_sees_the_request(server):
    server.default(CHAT_PATH, lambda req: Reply.chat("echo: " + req["messages"][-1]["content"]))
    assert chat(server).invoke("ping").content == "echo: ping"


# --- embeddings -------------------------------------------------------------------------------


def embeddings(srv: ScriptedServer, **kw) -> OpenAIEmbeddings:
    # check_embedding_ctx_length=False: send raw strings (True would tokenize with tiktoken, which
    # downloads its BPE file).
    return OpenAIEmbeddings(model="e", base_url=srv.openai_base_url, api_key="test", max_retries=0,
                            check_embedding_ctx_length=False, **kw)


def test_embeddings_scripted_vectors(server):
    vectors = [[0.5, -0.25, 1.0], [0.0, 0.125, -2.0]]  # float32-exact: the SDK asks for base64 float32
    server.script(EMBEDDINGS_PATH, Reply.embeddings(vectors))
    assert embeddings(server).embed_documents(["alpha", "beta"]) == vectors
    body = server.requests[-1]["json"]
    assert body["input"] == ["alpha", "beta"]
    assert body["model"] == "e"
    assert body["encoding_format"] == "base64"


def test_embeddings_default_is_deterministic_and_honours_dimensions(server):
    emb = embeddings(server)
    docs = ["refund policy for acme", "holiday schedule", "refund policy for acme"]
    vecs = emb.embed_documents(docs)
    assert len(vecs) == 3 and all(len(v) == 8 for v in vecs)
    assert vecs[0] == vecs[2] == hash_vector(docs[0], 8)
    assert vecs[0] != vecs[1]
    assert emb.embed_query("refund policy for acme") == vecs[0]

    v16 = embeddings(server, dimensions=16).embed_query("hello")
    assert len(v16) == 16
    assert server.requests[-1]["json"]["dimensions"] == 16


def test_embeddings_float_encoding(server):
    emb = embeddings(server, model_kwargs={"encoding_format": "float"})
    assert emb.embed_documents(["x y"]) == [hash_vector("x y", 8)]
    assert server.requests[-1]["json"]["encoding_format"] == "float"


# --- rerank -----------------------------------------------------------------------------------


def test_rerank_scripted_order_and_scores(server):
    server.script(RERANK_PATH, Reply.rerank([0.1, 0.9, 0.5]), Reply.rerank([0.3, 0.2, 0.8]))
    rr = CohereRerank(model="rerank-v3.5", cohere_api_key="test", base_url=server.url, top_n=2)
    docs = [Document("first", metadata={"i": 0}), Document("second", metadata={"i": 1}),
            Document("third", metadata={"i": 2})]

    out = rr.compress_documents(docs, "which one?")
    assert [d.metadata["i"] for d in out] == [1, 2]
    assert [d.metadata["relevance_score"] for d in out] == pytest.approx([0.9, 0.5])

    assert rr.rerank(["a", "b", "c"], "q") == [{"index": 2, "relevance_score": 0.8},
                                                {"index": 0, "relevance_score": 0.3}]
    req = server.requests_to(RERANK_PATH)[0]
    assert req["json"]["model"] == "rerank-v3.5"
    assert req["json"]["query"] == "which one?"
    assert req["json"]["documents"] == ["first", "second", "third"]
    assert req["json"]["top_n"] == 2
    assert req["headers"]["authorization"] == "Bearer test"


def test_rerank_default_overlap_scores(server):
    rr = CohereRerank(model="rerank-v3.5", cohere_api_key="test", base_url=server.url, top_n=3)
    out = rr.rerank(["apple pie", "banana split", "apple banana bread", "cherry"], "apple banana")
    assert out == [{"index": 2, "relevance_score": 1.0}, {"index": 0, "relevance_score": 0.5},
                   {"index": 1, "relevance_score": 0.5}]


def test_rerank_bad_script_answers_500(server):
    server.script(RERANK_PATH, Reply.rerank([1.0]))  # one score for two documents
    rr = CohereRerank(model="r", client=cohere_client(server.url), top_n=2)
    with pytest.raises(cohere.errors.InternalServerError):
        rr.rerank(["a", "b"], "q")
    assert server.errors and "1 rerank scores for 2 documents" in server.errors[0]
    server.errors.clear()


def test_cohere_client_without_retries_and_with_timeout(server):
    server.script(RERANK_PATH, Reply.status(503), Reply.delay(2.0, Reply.rerank()))
    rr = CohereRerank(model="r", client=cohere_client(server.url, max_retries=0, timeout=0.3))
    t0 = time.monotonic()
    with pytest.raises(cohere.core.api_error.ApiError) as err:
        rr.rerank(["a"], "a")
    assert err.value.status_code == 503
    assert len(server.requests_to(RERANK_PATH)) == 1  # cohere would otherwise retry twice, sleeping ~1 s + ~2 s
    with pytest.raises(Exception, match="(?i)timed out|timeout"):
        rr.rerank(["a"], "a")
    assert time.monotonic() - t0 < 1.5


# --- failures ---------------------------------------------------------------------------------


def test_429_then_success_is_retried(server):
    server.script(CHAT_PATH, Reply.status(429), Reply.chat("after retry"))
    t0 = time.monotonic()
    assert chat(server, max_retries=1).invoke("x").content == "after retry"
    assert time.monotonic() - t0 < 1.0  # retry-after-ms: 1
    reqs = server.requests_to(CHAT_PATH)
    assert len(reqs) == 2
    assert [r["headers"]["x-stainless-retry-count"] for r in reqs] == ["0", "1"]


def test_500_without_retries_raises(server):
    server.script(CHAT_PATH, Reply.status(500))
    with pytest.raises(openai.InternalServerError):
        chat(server, max_retries=0).invoke("x")
    assert len(server.requests) == 1


def test_delay_longer_than_client_timeout_raises_fast_and_stop_is_quick(monkeypatch):
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    srv = ScriptedServer().start()
    try:
        srv.script(CHAT_PATH, Reply.delay(3.0, Reply.chat("too late")))
        t0 = time.monotonic()
        with pytest.raises(openai.APITimeoutError):
            chat(srv, timeout=0.5, max_retries=0).invoke("x")
        assert time.monotonic() - t0 < 2.0
    finally:
        t1 = time.monotonic()
        srv.stop()
        assert time.monotonic() - t1 < 1.0  # the delayed handler is woken, not waited for
    assert srv.errors == []


def test_delay_does_not_block_other_requests(server):
    server.script(CHAT_PATH, *[Reply.delay(0.4, Reply.chat(f"answer {i}")) for i in range(4)])
    llm = chat(server)
    out: list[str] = []
    threads = [threading.Thread(target=lambda: out.append(llm.invoke("x").content)) for _ in range(4)]
    t0 = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join(5)
    assert sorted(out) == [f"answer {i}" for i in range(4)]
    assert time.monotonic() - t0 < 1.2  # concurrent, not 4 x 0.4 s


def test_broken_json_raises_a_client_error(server):
    server.script(CHAT_PATH, Reply.raw(b'{"id": "x", "choices": [ broken'))
    with pytest.raises(json.JSONDecodeError):
        chat(server).invoke("x")


def test_hangup_is_a_connection_error(server):
    server.script(CHAT_PATH, Reply.hangup())
    with pytest.raises(openai.APIConnectionError):
        chat(server).invoke("x")


def test_unknown_path_is_404_and_any_path_can_be_scripted(server):
    with pytest.raises(urllib.error.HTTPError) as err:
        urllib.request.urlopen(server.url + "/v1/nothing", timeout=2)
    assert err.value.code == 404
    assert "no scripted route" in json.loads(err.value.read())["error"]["message"]

    server.script("/v1/models", Reply.raw(json.dumps({"object": "list", "data": []})))
    with urllib.request.urlopen(server.url + "/v1/models", timeout=2) as resp:
        assert json.loads(resp.read()) == {"object": "list", "data": []}
    assert [r["method"] for r in server.requests] == ["GET", "GET"]


def test_stop_frees_the_port():
    srv = ScriptedServer().start()
    port = srv.port
    srv.stop()
    srv.stop()  # idempotent
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", port))
    assert not [t for t in threading.enumerate() if t.name.startswith(f"scripted-server-{port}")]
