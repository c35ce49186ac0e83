"""Authentication and tenant scoping for the LangGraph server (`"auth"` in langgraph.json).

The same API keys as ragate's own routes (graph/governance/tenancy.py): `Authorization: Bearer KEY` names
the caller and the key names the tenant. On LangGraph's own API (/assistants, /threads, /runs,
/store, /mcp):

* a run's context is checked before the run is created: a tenant other than the key's is refused
  (403), and so is a server setting (policy file, data folder, providers); the key's tenant is
  written into the context, and the graph also takes it from the authenticated caller
  (`graph.runtime.tenant_binding.run_context`), so a run cannot read another tenant even if a check here
  were skipped;
* threads carry their tenant in their metadata and a caller sees only its tenant's threads;
* the store is readable only under the caller's tenant's namespaces (`("ragate", kind, tenant)`);
* assistants can be read by everyone with a key, created or changed only in local development
  mode (an assistant's saved context could otherwise carry server settings);
* without a key, requests are refused unless the server runs with `RAGATE_LOCAL_DEV=1`; a keyless
  run then reads the tenant its context names, or `RAGATE_TENANT`, as on ragate's own routes.
"""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

from langgraph_sdk import Auth

from graph.context import Context
from graph.governance.tenancy import LOCAL_DEV_ID, AccessError, Caller, caller_context, server_keyring
from graph.providers.persistence import namespace_label

auth = Auth()
TENANT_META = "ragate_tenant"
CONTEXT_FIELDS = frozenset(f.name for f in dataclasses.fields(Context))


def _http_error(exc: AccessError) -> Auth.exceptions.HTTPException:
    return Auth.exceptions.HTTPException(status_code=exc.status, detail=exc.message)


@auth.authenticate
async def authenticate(authorization: str | None) -> Auth.types.MinimalUserDict:
    try:
        caller = await asyncio.to_thread(lambda: server_keyring().authenticate(authorization))  # the key file is read from disk
    except AccessError as exc:
        raise _http_error(exc) from None
    return caller.as_auth_user()


def _user(ctx: Auth.types.AuthContext) -> dict[str, Any]:
    user = ctx.user
    return {"tenant": user["tenant"] if "tenant" in user else None, "local_dev": "local-dev" in (ctx.permissions or [])}


def _scope(ctx: Auth.types.AuthContext) -> dict[str, str] | None:
    """The metadata filter of a keyed caller; none for a keyless caller in local development."""
    tenant = _user(ctx)["tenant"]
    return {TENANT_META: tenant} if tenant else None


def _caller(ctx: Auth.types.AuthContext) -> Caller:
    """The request's caller as ragate's own routes see it (`KeyRing.authenticate`). A keyless caller
    (authenticate let it in: local development) carries no tenant in its auth user, so that the
    tenant its run names wins inside the graph; it gets the server's default tenant (RAGATE_TENANT)
    here, as on /api/chat. Raises AccessError (500) while the key configuration cannot be read."""
    user = _user(ctx)
    if user["tenant"]:
        return Caller(tenant=user["tenant"], key_id=ctx.user.identity, local_dev=user["local_dev"])
    return Caller(tenant=server_keyring().default_tenant, key_id=LOCAL_DEV_ID, local_dev=user["local_dev"])


@auth.on.threads.create
async def on_thread_create(ctx: Auth.types.AuthContext, value: Auth.types.on.threads.create.value):
    scope = _scope(ctx)
    if scope:
        value.setdefault("metadata", {}).update(scope)
    return scope


@auth.on.threads.create_run
async def on_run_create(ctx: Auth.types.AuthContext, value: Auth.types.on.threads.create_run.value):
    """The run's context, checked and bound to the caller's tenant."""
    kwargs = value.get("kwargs") or {}
    context = kwargs.get("context")
    if context is None or not isinstance(context, dict):
        context = {}
    try:
        caller = _caller(ctx)
        # Keys that are not Context fields are dropped by the server itself (it filters the context by
        # the graph's context schema, and mirrors `configurable` into it when no context is given).
        bound = caller_context(caller, {k: v for k, v in context.items() if k in CONTEXT_FIELDS})
    except AccessError as exc:
        raise _http_error(exc) from None
    except ValueError as exc:
        raise Auth.exceptions.HTTPException(status_code=422, detail=str(exc)) from None
    context["tenant"] = bound.tenant
    kwargs["context"] = context
    configurable = (kwargs.get("config") or {}).get("configurable")
    if isinstance(configurable, dict) and "tenant" in configurable:
        configurable["tenant"] = bound.tenant
    scope = _scope(ctx)
    if scope:
        value.setdefault("metadata", {}).update(scope)
    return scope


@auth.on.threads
async def on_threads(ctx: Auth.types.AuthContext, value: Any):
    """Read, search, update, delete: only the caller's tenant's threads."""
    return _scope(ctx)


@auth.on.assistants
async def on_assistants(ctx: Auth.types.AuthContext, value: Any):
    if ctx.action in ("read", "search") or _user(ctx)["local_dev"]:
        return None
    raise Auth.exceptions.HTTPException(status_code=403, detail="assistants are created and changed in local development "
                                                                "mode only (RAGATE_LOCAL_DEV=1)")


@auth.on.store()
async def on_store(ctx: Auth.types.AuthContext, value: Any):
    tenant = _user(ctx)["tenant"]
    if tenant is None:
        return None
    ns = tuple(value.get("namespace") or ())
    # search/list may name a prefix: ("ragate", kind) is too wide, it must reach the tenant.
    # The tenant's label as graph.governance.audit.namespace writes it (a period is percent-encoded).
    if len(ns) < 3 or ns[0] != "ragate" or ns[2] != namespace_label(tenant):
        raise Auth.exceptions.HTTPException(status_code=403,
                                            detail=f"this API key reads only namespaces ('ragate', <kind>, {tenant!r}, ...)")
    return None


@auth.on
async def on_anything_else(ctx: Auth.types.AuthContext, value: Any):
    """Crons and anything not named above: local development only."""
    if _user(ctx)["local_dev"] and not _user(ctx)["tenant"]:
        return None
    raise Auth.exceptions.HTTPException(status_code=403, detail=f"{ctx.resource}.{ctx.action} is not open to API keys")
