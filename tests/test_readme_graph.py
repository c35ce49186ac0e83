"""The README carries the graph's Mermaid diagram exactly as the compiled graph draws it; the
graph's wiring matches the documented flow."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest
from conftest import ROOT

from graph.graph import NODES, build_graph, graph

MERMAID_BLOCK = re.compile(r"^```mermaid[ \t]*\n(.*?)^```[ \t]*$", re.S | re.M)


def readme_text() -> str:
    path = ROOT / "README.md"
    if not path.exists():
        pytest.fail("README.md does not exist yet; it must contain the graph's Mermaid diagram")
    return path.read_text(encoding="utf-8")


def test_readme_contains_the_exact_mermaid_diagram():
    expected = graph.get_graph().draw_mermaid()
    blocks = MERMAID_BLOCK.findall(readme_text())
    assert blocks, "README.md has no ```mermaid block"
    assert any(b.rstrip("\n") == expected.rstrip("\n") for b in blocks), (
        "README's mermaid block differs from `ragate graph` (graph.get_graph().draw_mermaid())")


def test_mermaid_diagram_names_every_node():
    diagram = graph.get_graph().draw_mermaid()
    for name in NODES:
        assert f"\t{name}({name})" in diagram


def test_graph_edges_follow_the_documented_flow():
    g = graph.get_graph()
    edges = {(e.source, e.target, e.conditional) for e in g.edges}
    assert ("__start__", "route_gate", False) in edges
    assert ("route_gate", "decompose", True) in edges and ("route_gate", "compose", True) in edges
    assert ("decompose", "retrieve", True) in edges
    for a, b in [("retrieve", "rrf"), ("rrf", "rerank"), ("compose", "judge"),
                 ("safe_response", "memory_shield"), ("memory_shield", "__end__")]:
        assert (a, b, False) in edges, (a, b)
    assert ("rerank", "bridge", True) in edges and ("rerank", "compose", True) in edges
    assert ("bridge", "compose", True) in edges and ("bridge", "retrieve", True) in edges
    assert ("judge", "safe_response", True) in edges and ("judge", "memory_shield", True) in edges


def test_build_graph_replaces_a_node_by_name():
    def other_compose(state, runtime):
        return {}

    builder = build_graph({"compose": other_compose})
    assert set(builder.nodes) == set(NODES)
    assert builder.nodes["compose"].runnable.func is other_compose


@pytest.mark.parametrize("module", ["nodes.retrieve", "nodes.compose"])
def test_node_modules_import_first(module, tmp_path):
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    proc = subprocess.run([sys.executable, "-c", f"import {module}"], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr[-500:]
