"""The tenant rule: the authenticated caller's tenant replaces whatever tenant a run names.

Every node gets its Context from `run_context` and nowhere else (tests/test_layers.py fails when a
node reads `runtime.context` itself). A server that authenticated the caller (graph/governance/tenancy.py)
puts the caller in `config["configurable"]["langgraph_auth_user"]`; the servers refuse a run that
names another tenant before it starts, and this rule keeps the graph safe if one did not.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from langgraph.config import get_config

from graph.context import Context
from graph.governance.tenancy import caller_tenant


def run_context(runtime: Any) -> Context:
    """The run's Context (a default one when the caller passed none; a plain mapping, as the server
    and RemoteGraph may hand, becomes a Context), bound to the authenticated caller's tenant."""
    ctx = getattr(runtime, "context", None)
    if ctx is None:
        ctx = Context()
    elif isinstance(ctx, dict):
        ctx = Context(**ctx)
    try:
        configurable = get_config().get("configurable")
    except RuntimeError:  # called outside a run (tests calling a node directly)
        return ctx
    tenant = caller_tenant(configurable)
    if tenant and tenant != ctx.tenant:
        ctx = dataclasses.replace(ctx, tenant=tenant)
    return ctx
