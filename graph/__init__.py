"""ragate: a governed retrieval-augmented answering agent built as a LangGraph graph.

Public API:
    build_graph, compile_graph  — the StateGraph (uncompiled / compiled)
    Context                     — runtime settings (tenant, policy, providers, budgets)
    State, InputState           — the typed state
    Ragate                      — compiled graph + memory store, `ask()` returns the output contract
    to_output                   — final state -> output contract

Where things live (imports run one way, top to bottom; tests/test_layers.py holds the contracts):
    graph.entrypoints   CLI, Python API, HTTP app, LangServe app, LangGraph server auth, the web page
    graph.evaluation    `ragate eval`: retrieval, answers, groundedness on labelled data
    graph.graph         the wiring;  graph.indexing: ingest (files -> chunks -> engine)
    nodes               one module per node
    graph.runtime       what every node uses: the tenant rule (tenant_binding), timings, the run's policy
    graph.governance    API keys and tenants, request records, feedback, the request log
    graph.providers     chat, rerank, embeddings, both vector engines, persistence, resources
    graph.context       Context;  graph.algorithms: text, groundedness, fusion, scoping, decomposition, judging
    graph.policy        the typed policy;  graph.prompts, graph.output, graph.state, graph.settings, graph.assets
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # what the names below are, for type checkers and editors; nothing is loaded at run time
    from graph.context import Context
    from graph.entrypoints.api import Ragate
    from graph.graph import build_graph, compile_graph
    from graph.output import to_output
    from graph.state import InputState, State

# The public API, loaded on first use (PEP 562): importing any part of ragate, say `graph.algorithms.fusion`,
# loads that part and what it imports, never the wiring, LangGraph, the engine or a model.
_EXPORTS = {
    "Context": "graph.context",
    "InputState": "graph.state",
    "Ragate": "graph.entrypoints.api",
    "State": "graph.state",
    "build_graph": "graph.graph",
    "compile_graph": "graph.graph",
    "to_output": "graph.output",
}

__all__ = ["Context", "InputState", "Ragate", "State", "build_graph", "compile_graph", "to_output"]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'graph' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
