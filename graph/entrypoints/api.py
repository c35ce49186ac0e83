"""The Python API: build the graph once, ask questions with a `Context`.

    from graph import Ragate, Context
    rag = Ragate(Context(tenant="acme"))
    result = rag.ask("Quanto cresceram as vendas de inverno?", thread_id="t1", correlation_id="desk-42")
    print(result["answer"], result["citations_used"], result["request_id"])  # the id is ragate's, new every time
    rag.ask("E em 2025?", thread_id="t1")            # the thread's history comes from the checkpointer
    rag.feedback(result["request_id"], rating="up", comment="useful")
    for kind, item in rag.stream("Quais ações o playbook recomenda?"):  # ids, tokens (with a chat model), output
        print(item if kind == "token" else "", end="")
    rag.ask("")                                       # QuestionError: question is empty

Memory, request records, feedback and thread history live in SQLite files under `Context.home`,
or in PostgreSQL when `Context.memory_url` (RAGATE_MEMORY_URL) is set (graph/providers/persistence.py).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from langchain_core.runnables.config import var_child_runnable_config
from langgraph.types import Overwrite

from graph.context import Context
from graph.governance.feedback import record_feedback
from graph.graph import compile_graph
from graph.output import to_output
from graph.providers.persistence import open_checkpointer, open_store
from graph.state import REQUEST_ID_REFUSED, QuestionError, check_correlation_id, check_question  # noqa: F401 -- QuestionError: callers catch it from here


def open_memory_store(ctx: Context):
    """The LangGraph store of `ctx`: SQLite under `home` or PostgreSQL at `memory_url`."""
    return open_store(ctx.home_path, ctx.memory_url)


def memory_store_from_env():
    """The LangGraph server's store (langgraph.json `store`): the same one ragate's own routes and
    CLI use (RAGATE_HOME / RAGATE_MEMORY_URL), so memory, request records and feedback of runs made
    through /runs, /mcp and /api/chat live in one place."""
    return open_memory_store(Context())


# Where LangGraph keeps a run's store and runtime in a config's `configurable`.
_STORE_KEYS = ("__pregel_runtime", "__pregel_store")


def _drop_ambient_store() -> None:
    """Keep this Ragate's own store for the run about to start. LangGraph merges an ambient parent
    config (a context variable) into every run, and the LangGraph server sets one, holding its own
    in-memory store, around every request its custom routes serve: without this, /api/chat's
    memory, request records and feedback would land there instead of in ragate's store. The rest of
    the parent config (callbacks, tracing, tags) is kept. The change lives in the caller's context:
    a worker thread's copy for a server's request, the calling frame's context otherwise."""
    parent = var_child_runnable_config.get()
    configurable = (parent or {}).get("configurable") or {}
    if any(key in configurable for key in _STORE_KEYS):
        kept = {k: v for k, v in configurable.items() if k not in _STORE_KEYS}
        var_child_runnable_config.set({**parent, "configurable": kept})


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

    def _run(self, question: str, *, intent: str | None = None, entity: str | None = None,
             correlation_id: str | None = None, history: list[dict] | None = None, thread_id: str | None = None,
             context: Context | None = None, **unknown: Any) -> tuple[Any, dict[str, Any], dict[str, Any], Context]:
        """(graph, input, config, context) of one question. QuestionError (a ValueError naming the
        problem) for a question no entry point takes: empty, too long, not text, not valid Unicode,
        control characters (graph/state.py `check_question`), or a malformed correlation id; nothing
        runs and nothing is stored. The request id is ragate's (route_gate gives each request a new
        one): `request_id=` is a TypeError that says to send `correlation_id` instead."""
        if "request_id" in unknown:
            raise TypeError(f"Ragate: {REQUEST_ID_REFUSED}")
        if unknown:
            raise TypeError(f"Ragate: unexpected keyword argument(s): {', '.join(sorted(unknown))}")
        payload: dict[str, Any] = {"question": check_question(question)}
        correlation_id = check_correlation_id(correlation_id)
        if correlation_id:
            payload["correlation_id"] = correlation_id
        if intent:
            payload["intent"] = intent
        if entity:
            payload["entity"] = entity
        if history is not None:
            payload["history"] = history
        ctx = context or self.context
        if not thread_id:
            return self.graph, payload, {}, ctx
        # Threads are per tenant: the same thread id of two tenants are two threads.
        return self.thread_graph, payload, {"configurable": {"thread_id": f"{ctx.tenant or '-'}:{thread_id}"}}, ctx

    def invoke(self, question: str, **kwargs: Any) -> dict[str, Any]:
        """The graph's final state. With `thread_id` the thread's earlier turns (checkpointed) are the
        history; without one the question stands alone and nothing is checkpointed. Keywords: intent,
        entity, correlation_id (your own id for the request, kept beside it), history, thread_id, context."""
        graph, payload, config, ctx = self._run(question, **kwargs)
        _drop_ambient_store()
        return graph.invoke(payload, config=config or None, context=ctx)

    def stream(self, question: str, **kwargs: Any) -> Iterator[tuple[str, Any]]:
        """("start", {request_id, correlation_id}) as soon as route_gate has given the request its id,
        ("token", text) as the LLM composer writes the answer (none on the deterministic path), then
        ("output", the output contract). The tokens are a preview: the output's `answer` is the
        judged one (a BLOCK verdict replaces it with the safe response)."""
        graph, payload, config, ctx = self._run(question, **kwargs)
        _drop_ambient_store()
        final: dict[str, Any] = {}
        modes = ["updates", "messages", "values"]
        for mode, item in graph.stream(payload, config=config or None, context=ctx, stream_mode=modes):
            if mode == "values":
                final = item
                continue
            if mode == "updates":
                gate = item.get("route_gate")
                if gate:  # the first node gives the request its id (written as an Overwrite, see graph/state.py)
                    request_id = gate["request_id"]
                    yield "start", {"request_id": request_id.value if isinstance(request_id, Overwrite) else request_id,
                                    "correlation_id": gate["rag"].get("correlation_id")}
                continue
            message, meta = item
            if meta.get("langgraph_node") == "compose" and message.text:
                yield "token", message.text
        yield "output", to_output(final)

    def ask(self, question: str, **kwargs: Any) -> dict[str, Any]:
        """The output contract (answer, citations, coverage, suggestions, verdict, rag, sources, ...)."""
        return to_output(self.invoke(question, **kwargs))

    def feedback(self, request_id: str, rating: Any, comment: str | None = None,
                 context: Context | None = None) -> dict[str, Any]:
        """Store feedback on an answer of this tenant; FeedbackError for an unknown request id."""
        return record_feedback(self.store, (context or self.context).tenant, request_id, rating, comment)
