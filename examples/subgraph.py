"""ragate inside another agent's graph, as a subgraph node.

The parent graph shares the keys `question`, `answer` and `citations_used` with ragate's state, so
the compiled ragate graph is added as a node as it is. The parent's runtime context (a ragate
`Context`) reaches the subgraph, so the tenant is still the caller's.

    python examples/subgraph.py
"""

from __future__ import annotations

from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime
from typing_extensions import TypedDict

from graph import Context, compile_graph


class DeskState(TypedDict, total=False):
    question: str
    answer: str
    citations_used: list[str]
    memo: str


def write_memo(state: DeskState, runtime: Runtime[Context]) -> dict:
    sources = ", ".join(state.get("citations_used") or []) or "no sources"
    return {"memo": f"For {runtime.context.tenant}: {state['answer']}\n\nSources: {sources}"}


def build_desk():
    desk = StateGraph(DeskState, context_schema=Context)
    desk.add_node("ragate", compile_graph())      # the whole governed pipeline as one node
    desk.add_node("write_memo", write_memo)
    desk.add_edge(START, "ragate")
    desk.add_edge("ragate", "write_memo")
    desk.add_edge("write_memo", END)
    return desk.compile()


def main(context: Context | None = None) -> dict:
    out = build_desk().invoke({"question": "What does the 2026 winter campaign playbook recommend?"},
                              context=context or Context(tenant="acme"))
    print(out["memo"])
    return out


if __name__ == "__main__":
    main()
