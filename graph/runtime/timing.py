"""Per-node timings: every node is wrapped so its wall time lands in `State.timings_ms`."""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from typing import Any

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
