"""ragate: a governed retrieval-augmented answering agent built as a LangGraph graph.

Public API:
    build_graph, compile_graph  — the StateGraph (uncompiled / compiled)
    Context                     — runtime settings (tenant, policy, providers, budgets)
    State, InputState           — the typed state
    Ragate                      — compiled graph + memory store, `ask()` returns the output contract
    to_output                   — final state -> output contract
"""

from graph.api import Ragate
from graph.context import Context
from graph.graph import build_graph, compile_graph
from graph.output import to_output
from graph.state import InputState, State

__all__ = ["Context", "InputState", "Ragate", "State", "build_graph", "compile_graph", "to_output"]
