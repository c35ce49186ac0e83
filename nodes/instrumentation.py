"""Per-node timings: every node is wrapped so its wall time lands in `State.timings_ms`."""

from __future__ import annotations

import dataclasses
import functools
import time
from collections.abc import Callable
from typing import Any

from langgraph.config import get_config
from langgraph.types import Overwrite


def timed(name: str | Callable[[Any], str]):
    """Record the node's wall time under `name` (or `name(state)` for fan-out branches)."""

    def decorate(fn):
        @functools.wraps(fn)
        def wrapper(state, runtime):
            started = time.perf_counter()
            update = fn(state, runtime) or {}
            key = name(state) if callable(name) else name
            elapsed = round((time.perf_counter() - started) * 1000, 3)
            previous = update.get("timings_ms", {})
            if isinstance(previous, Overwrite):  # route_gate starts a thread's new turn from empty timings
                update["timings_ms"] = Overwrite({**previous.value, key: elapsed})
            else:
                update["timings_ms"] = {**previous, key: elapsed}
            return update

        return wrapper

    return decorate


def context_of(runtime) -> Any:
    """The run's Context; a default one when the caller passed none. When a server authenticated the
    caller (graph/tenancy.py), the caller's tenant replaces whatever tenant the context names:
    the servers refuse such a request before it runs, and this keeps the graph safe if one did not."""
    from graph.context import Context
    from graph.tenancy import caller_tenant

    ctx = getattr(runtime, "context", None)
    if ctx is None:
        ctx = Context()
    elif isinstance(ctx, dict):  # the server and RemoteGraph may hand a plain mapping
        ctx = Context(**ctx)
    try:
        configurable = get_config().get("configurable")
    except RuntimeError:  # called outside a run (tests calling a node directly)
        return ctx
    tenant = caller_tenant(configurable)
    if tenant and tenant != ctx.tenant:
        ctx = dataclasses.replace(ctx, tenant=tenant)
    return ctx
