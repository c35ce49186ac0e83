"""ragate: a governed retrieval-augmented answering agent built as a LangGraph graph.

Public API:
    build_graph, compile_graph  — the StateGraph (uncompiled / compiled)
    Context                     — runtime settings (tenant, policy, providers, budgets)
    State, InputState           — the typed state
    Ragate                      — compiled graph + memory store, `ask()` returns the output contract
    to_output                   — final state -> output contract

Names are resolved lazily: the nodes import `graph.*` modules, and `graph.graph` imports the
nodes, so importing everything here eagerly would make the import order matter.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "Context": "graph.context",
    "InputState": "graph.state",
    "State": "graph.state",
    "Ragate": "graph.api",
    "build_graph": "graph.graph",
    "compile_graph": "graph.graph",
    "to_output": "graph.output",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'graph' has no attribute {name!r}")
