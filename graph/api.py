"""The Python API: build the graph once, ask questions with a `Context`.

    from graph import Ragate, Context
    rag = Ragate(Context(tenant="acme"))
    result = rag.ask("Quanto cresceram as vendas de inverno?")
    print(result["answer"], result["citations_used"])
"""

from __future__ import annotations

import sqlite3
import uuid
from typing import Any

from langgraph.store.sqlite import SqliteStore

from graph.context import Context
from graph.graph import compile_graph
from graph.output import to_output


def open_memory_store(ctx: Context) -> SqliteStore:
    """The embedded default's LangGraph store: SQLite under `$RAGATE_HOME/memory.sqlite`."""
    ctx.home_path.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(str(ctx.home_path / "memory.sqlite"), check_same_thread=False, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    store = SqliteStore(conn)
    store.setup()
    return store


class Ragate:
    """A compiled graph with its persistent memory store, bound to a default `Context`."""

    def __init__(self, context: Context | None = None, *, store: Any = None, checkpointer: Any = None):
        self.context = context or Context()
        self.store = store if store is not None else open_memory_store(self.context)
        self.graph = compile_graph(store=self.store, checkpointer=checkpointer)

    def invoke(self, question: str, *, intent: str | None = None, entity: str | None = None,
               request_id: str | None = None, history: list[dict] | None = None,
               context: Context | None = None) -> dict[str, Any]:
        """The graph's final state."""
        payload: dict[str, Any] = {"question": question, "request_id": request_id or uuid.uuid4().hex}
        if intent:
            payload["intent"] = intent
        if entity:
            payload["entity"] = entity
        if history:
            payload["history"] = history
        return self.graph.invoke(payload, context=context or self.context)

    def ask(self, question: str, **kwargs: Any) -> dict[str, Any]:
        """The output contract (answer, citations, coverage, suggestions, verdict, rag, sources, ...)."""
        return to_output(self.invoke(question, **kwargs))
