"""A speed probe for this machine: LangGraph alone, running a graph of ragate's shape whose nodes do
nothing. Its p50 moves with the VM's speed, so run it next to `latency.py` to tell a slow machine
from slow code (bench/RESULTS.md, "Run-to-run spread").

    python bench/probe_langgraph.py            # prints the p50 in ms of 500 invocations
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from langgraph.graph import END, START, StateGraph  # noqa: E402
from langgraph.types import Send  # noqa: E402

from graph.context import Context  # noqa: E402
from graph.state import InputState, State  # noqa: E402

SEQUENTIAL = ["route_gate", "decompose", "rrf", "rerank", "compose", "judge", "safe_response", "memory_shield"]


def no_op(name: str):
    def node(state, runtime):
        return {"timings_ms": {name: 0.0}}

    return node


def build():
    b = StateGraph(State, context_schema=Context, input_schema=InputState)
    for name in SEQUENTIAL:
        b.add_node(name, no_op(name))
    b.add_node("retrieve", lambda task, runtime: {"hits": {"retrieve[0]": {}}})
    b.add_edge(START, "route_gate")
    b.add_conditional_edges("route_gate", lambda s: [Send("retrieve", {"index": 0})], ["decompose", "retrieve", "compose"])
    for a, c in [("retrieve", "rrf"), ("rrf", "rerank"), ("rerank", "compose"), ("compose", "judge"),
                 ("judge", "memory_shield"), ("memory_shield", END)]:
        b.add_edge(a, c)
    return b.compile()


def main() -> None:
    graph, ctx = build(), Context(tenant="probe")
    times = []
    for _ in range(500):
        t = time.perf_counter()
        graph.invoke({"question": "probe"}, context=ctx)
        times.append((time.perf_counter() - t) * 1000)
    print(f"LangGraph no-op graph p50: {statistics.median(times):.2f} ms")


if __name__ == "__main__":
    main()
