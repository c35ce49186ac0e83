"""The Python API: build the graph once, ask questions with a `Context`.

    from graph import Ragate, Context
    rag = Ragate(Context(tenant="acme"))
    result = rag.ask("Quanto cresceram as vendas de inverno?", thread_id="t1")
    print(result["answer"], result["citations_used"])
    rag.ask("E em 2025?", thread_id="t1")            # the thread's history comes from the checkpointer
    rag.feedback(result["request_id"], rating="up", comment="useful")

Memory, request records, feedback and thread history live in SQLite files under `Context.home`,
or in PostgreSQL when `Context.memory_url` (RAGATE_MEMORY_URL) is set (graph/persistence.py).
"""

from __future__ import annotations

import uuid
from typing import Any

from graph.context import Context
from graph.feedback import record_feedback
from graph.graph import compile_graph
from graph.output import to_output
from graph.persistence import open_checkpointer, open_store


def open_memory_store(ctx: Context):
    """The LangGraph store of `ctx`: SQLite under `home` or PostgreSQL at `memory_url`."""
    return open_store(ctx.home_path, ctx.memory_url)


class Ragate:
    """A compiled graph with its persistent store and checkpointer, bound to a default `Context`."""

    def __init__(self, context: Context | None = None, *, store: Any = None, checkpointer: Any = None):
        self.context = context or Context()
        self.store = store if store is not None else open_memory_store(self.context)
        self.checkpointer = (checkpointer if checkpointer is not None
                             else open_checkpointer(self.context.home_path, self.context.memory_url))
        # A question without a thread leaves no checkpoint behind: it runs on a graph without one.
        self.graph = compile_graph(store=self.store)
        self.thread_graph = compile_graph(store=self.store, checkpointer=self.checkpointer)

    def invoke(self, question: str, *, intent: str | None = None, entity: str | None = None,
               request_id: str | None = None, history: list[dict] | None = None, thread_id: str | None = None,
               context: Context | None = None) -> dict[str, Any]:
        """The graph's final state. With `thread_id` the thread's earlier turns (checkpointed) are the
        history; without one the question stands alone and nothing is checkpointed."""
        payload: dict[str, Any] = {"question": question, "request_id": request_id or uuid.uuid4().hex}
        if intent:
            payload["intent"] = intent
        if entity:
            payload["entity"] = entity
        if history is not None:
            payload["history"] = history
        ctx = context or self.context
        if not thread_id:
            return self.graph.invoke(payload, context=ctx)
        # Threads are per tenant: the same thread id of two tenants are two threads.
        config = {"configurable": {"thread_id": f"{ctx.tenant or '-'}:{thread_id}"}}
        return self.thread_graph.invoke(payload, config=config, context=ctx)

    def ask(self, question: str, **kwargs: Any) -> dict[str, Any]:
        """The output contract (answer, citations, coverage, suggestions, verdict, rag, sources, ...)."""
        return to_output(self.invoke(question, **kwargs))

    def feedback(self, request_id: str, rating: Any, comment: str | None = None,
                 context: Context | None = None) -> dict[str, Any]:
        """Store feedback on an answer of this tenant; FeedbackError for an unknown request id."""
        return record_feedback(self.store, (context or self.context).tenant, request_id, rating, comment)
