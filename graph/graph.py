"""Wiring only: the nodes, their edges and the conditions between them.

route_gate → decompose? → retrieve ×N (parallel, Send) → rrf → rerank → bridge? → compose → judge
→ memory_shield, with BLOCK → safe_response → memory_shield, and retrieval disabled → compose.
Only questions route_gate scored as complex go through decompose, and only split ones through bridge. A
split question asking for a name goes once more from bridge through retrieve ×parts → rrf → rerank (each
part searched with the name its best chunks give), and then on to compose.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from langgraph.graph import END, START, StateGraph

from graph.context import Context
from graph.state import InputState, State
from nodes.bridge import bridge, may_bridge
from nodes.compose import compose
from nodes.decompose import decompose
from nodes.judge import judge
from nodes.memory_shield import memory_shield
from nodes.rerank import rerank
from nodes.retrieve import fan_out, fan_out_bridge, retrieve
from nodes.route_gate import route_gate
from nodes.rrf import rrf
from nodes.safe_response import safe_response

NODES: dict[str, Callable[..., Any]] = {
    "route_gate": route_gate,
    "decompose": decompose,
    "retrieve": retrieve,
    "rrf": rrf,
    "rerank": rerank,
    "bridge": bridge,
    "compose": compose,
    "judge": judge,
    "safe_response": safe_response,
    "memory_shield": memory_shield,
}


def after_route_gate(state: State) -> str | list:
    if not state["rag"].get("enabled"):
        return "compose"
    if (state.get("decomposition") or {}).get("complex"):
        return "decompose"
    return fan_out(state)


def _after_gate_retrieval_only(state: State) -> str | list:
    route = after_route_gate(state)
    return END if route == "compose" else route


def after_rerank(state: State) -> str:
    return "bridge" if may_bridge(state) else "compose"


def _after_rerank_retrieval_only(state: State) -> str:
    return "bridge" if may_bridge(state) else END


def after_bridge(state: State) -> str | list:
    return fan_out_bridge(state) or "compose"


def _after_bridge_retrieval_only(state: State) -> str | list:
    return fan_out_bridge(state) or END


def after_judge(state: State) -> str:
    return "safe_response" if state["verdict"]["final_decision"] == "BLOCK" else "memory_shield"


RETRIEVAL_NODES = ("route_gate", "decompose", "retrieve", "rrf", "rerank", "bridge")


def build_graph(nodes: dict[str, Callable[..., Any]] | None = None, *, retrieval_only: bool = False) -> StateGraph:
    """The uncompiled graph. `nodes` replaces nodes by name (e.g. another composer). With
    `retrieval_only`, the graph ends after rerank and bridge (what the evaluation harness measures)."""
    impl = {**NODES, **(nodes or {})}
    if retrieval_only:
        impl = {name: impl[name] for name in RETRIEVAL_NODES}
    builder = StateGraph(State, context_schema=Context, input_schema=InputState)
    for name, fn in impl.items():
        builder.add_node(name, fn)
    builder.add_edge(START, "route_gate")
    after_gate = ["decompose", "retrieve", END if retrieval_only else "compose"]
    builder.add_conditional_edges("route_gate", after_route_gate if not retrieval_only else _after_gate_retrieval_only,
                                  after_gate)
    builder.add_conditional_edges("decompose", fan_out, ["retrieve"])
    builder.add_edge("retrieve", "rrf")
    builder.add_edge("rrf", "rerank")
    if retrieval_only:
        builder.add_conditional_edges("rerank", _after_rerank_retrieval_only, ["bridge", END])
        builder.add_conditional_edges("bridge", _after_bridge_retrieval_only, ["retrieve", END])
        return builder
    builder.add_conditional_edges("rerank", after_rerank, ["bridge", "compose"])
    builder.add_conditional_edges("bridge", after_bridge, ["retrieve", "compose"])
    builder.add_edge("compose", "judge")
    builder.add_conditional_edges("judge", after_judge, ["safe_response", "memory_shield"])
    builder.add_edge("safe_response", "memory_shield")
    builder.add_edge("memory_shield", END)
    return builder


def compile_graph(*, checkpointer=None, store=None, nodes=None, retrieval_only: bool = False, name: str = "ragate"):
    return build_graph(nodes, retrieval_only=retrieval_only).compile(checkpointer=checkpointer, store=store, name=name)


# The graph LangGraph Studio / `langgraph dev` loads (see langgraph.json).
graph = compile_graph()
