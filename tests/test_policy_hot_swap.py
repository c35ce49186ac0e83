"""The policy file replaced while the server runs: a broken one (invalid YAML, an invalid policy, a
deleted file) disables retrieval with the reason in the answer — every request still gets a
well-formed 200 — and a good one is picked up again without a restart."""

from __future__ import annotations

import os
import shutil
import time

import httpx
import pytest
from conftest import ROOT

KEY = "acme-test-key-0001"
QUESTION = "Quanto cresceram as vendas de inverno em 2025?"


@pytest.fixture(scope="module")
def policy_server(tmp_path_factory):
    pytest.importorskip("langgraph_api", reason="the LangGraph server is the serve extra: pip install -e '.[serve]'")
    from ragate_server import RagateServer

    folder = tmp_path_factory.mktemp("hot-policy")
    policy = folder / "rag.yaml"
    shutil.copy(ROOT / "policies" / "rag.yaml", policy)
    with RagateServer(folder / "home", keys={KEY: "acme"}, env={"RAGATE_POLICY": str(policy)}) as srv:
        yield srv, policy


def ask(srv, question: str = QUESTION, **body) -> dict:
    r = httpx.post(f"{srv.url}/api/chat", headers={"Authorization": f"Bearer {KEY}"}, timeout=60,
                   json={"question": question, **body})
    assert r.status_code == 200, r.text
    return r.json()


def replace(path, text: str) -> None:
    """Write the new policy the way an editor or a deploy does: a new file moved into place, with a
    modification time the policy cache cannot mistake for the old one's."""
    tmp = path.with_suffix(".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)
    future = time.time() + 5
    os.utime(path, (future, future))
    time.sleep(1.1)  # the policy cache looks at the file at most once a second


@pytest.mark.parametrize("broken, says", [
    ("routing: [unclosed\n  - : :", "is not valid YAML"),
    ("version: 1\nrouting: {}\n", "retrieval disabled"),
    (None, "file not found"),
])
def test_a_broken_policy_disables_retrieval_and_a_good_one_brings_it_back(policy_server, broken, says):
    srv, policy = policy_server
    good = policy.read_text(encoding="utf-8")
    assert ask(srv)["rag"]["enabled"] is True
    try:
        if broken is None:
            policy.unlink()
            time.sleep(1.1)
        else:
            replace(policy, broken)
        for _ in range(3):  # every request keeps getting a well-formed answer
            out = ask(srv, intent="sales")  # a broken policy cannot vet intents: they are not refused either
            assert out["rag"]["enabled"] is False and says in out["rag"]["error"]
            assert out["sources"] == [] and out["verdict"]["final_decision"] in ("OK", "WARNING", "BLOCK")
    finally:
        replace(policy, good)
    out = ask(srv)
    assert out["rag"]["enabled"] is True and "acme-bi-2025-inverno-sales" in out["citations_used"]
