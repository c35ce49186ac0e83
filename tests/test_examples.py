"""The examples in examples/ run as written: the Python API, ragate as a subgraph of another agent's
graph, and RemoteGraph against the running server."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def load(name: str):
    spec = importlib.util.spec_from_file_location(f"example_{name}", ROOT / "examples" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_python_api_example(tmp_path, capsys):
    result = load("python_api").main(str(tmp_path / "home"))
    assert result["verdict"]["final_decision"] == "OK" and "acme-bi-2025-inverno-sales" in result["citations_used"]
    assert "follow-up cited: acme-" in capsys.readouterr().out


def test_subgraph_example_keeps_the_callers_tenant(corpus):
    out = load("subgraph").main(corpus.context("acme"))
    assert out["memo"].startswith("For acme:") and out["citations_used"]
    assert all(doc.startswith("acme-") for doc in out["citations_used"])
    out = load("subgraph").main(corpus.context("globex"))
    assert not any(doc.startswith("acme-") for doc in out["citations_used"])


def test_remote_graph_example(served):
    state = load("remote_graph").main(served.url, "acme-test-key-0001")
    assert state["tenant"] == "acme" and state["citations_used"]
