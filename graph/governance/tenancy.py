"""Who is calling, and which tenant they may read: API keys mapped to tenants.

Every server ragate runs in (the LangGraph server with its custom routes, the LangServe app) asks
this module, so a key means the same tenant everywhere:

* `RAGATE_API_KEYS="key1:tenant1,key2:tenant2"` and/or `RAGATE_API_KEYS_FILE` (one `key:tenant`
  per line, `#` comments; re-read when the file changes, so keys rotate without a restart);
* callers send `Authorization: Bearer KEY`; the tenant is the key's, never a field of the body;
* a request without credentials is refused, unless the server runs in the explicit local
  development mode `RAGATE_LOCAL_DEV=1`: then it is served as the tenant it names, or
  `RAGATE_TENANT`.

A key is never logged or echoed: a caller is named by the key's fingerprint (`key_id`).

Inside the graph the tenant of an authenticated caller wins over anything the run's context says
(`caller_tenant`, used by `graph.runtime.tenant_binding.run_context`): the LangGraph server puts the caller
in `config["configurable"]["langgraph_auth_user"]`, and ragate's LangServe app puts it under the
same key, so the graph needs no knowledge of which server it runs in.
"""

from __future__ import annotations

import dataclasses
import hashlib
import hmac
import re
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from graph import settings
from graph.context import Context

KEYS_SETTING = "RAGATE_API_KEYS"
KEYS_FILE_SETTING = "RAGATE_API_KEYS_FILE"
LOCAL_DEV_SETTING = "RAGATE_LOCAL_DEV"
AUTH_USER_KEY = "langgraph_auth_user"  # where LangGraph's server puts the authenticated caller
LOCAL_DEV_ID = "local-dev"

TENANT_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
MIN_KEY_CHARS = 8

# Context fields a caller may set per request. Everything else (tenant, policy file, data folder,
# providers, timeouts, memory URL) is the server's: a caller choosing them could read another
# folder or another policy. In local development mode every field may be set (Studio's context form).
CALLER_SETTABLE = ("collections", "k", "top_n", "current_year", "min_score", "max_context_chars", "retrieval_mode",
                   "decompose", "rerank", "boosts")


class AccessError(Exception):
    """A request that may not proceed: `status` 401 (no or unknown credentials), 403 (not allowed),
    or 500 (the server's key configuration is broken: said without the keys)."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status
        self.message = message


class KeyConfigError(ValueError):
    """RAGATE_API_KEYS / RAGATE_API_KEYS_FILE / RAGATE_LOCAL_DEV cannot be read."""


@dataclass(frozen=True)
class Caller:
    """An authenticated caller: the tenant it may read, and how it was identified."""

    tenant: str | None
    key_id: str          # sha256 fingerprint of the key, or LOCAL_DEV_ID for a keyless local caller
    local_dev: bool = False   # the server runs in local development mode

    @property
    def has_key(self) -> bool:
        return self.key_id != LOCAL_DEV_ID

    def as_auth_user(self) -> dict[str, Any]:
        """The caller as LangGraph's `langgraph_auth_user` (MinimalUserDict plus `tenant`). A keyless
        local caller is bound to no tenant: its run's context names one (resolve_tenant)."""
        return {"identity": self.key_id, "is_authenticated": self.has_key,
                "tenant": self.tenant if self.has_key else None,
                "permissions": ["local-dev"] if self.local_dev else []}


def fingerprint(key: str) -> str:
    return "key-" + hashlib.sha256(key.encode("utf-8")).hexdigest()[:12]


def parse_key_entries(text: str, source: str) -> dict[str, str]:
    """`key:tenant` entries separated by commas or new lines; `#` starts a comment. Errors name the
    entry by position, never by its key."""
    keys: dict[str, str] = {}
    entries = [e.split("#", 1)[0].strip() for line in text.splitlines() for e in line.split(",")]
    for position, entry in enumerate((e for e in entries if e), start=1):
        key, sep, tenant = entry.rpartition(":")
        key, tenant = key.strip(), tenant.strip()
        if not sep or not key:
            raise KeyConfigError(f"{source}: entry {position} is not 'key:tenant'")
        if len(key) < MIN_KEY_CHARS:
            raise KeyConfigError(f"{source}: entry {position}: a key has at least {MIN_KEY_CHARS} characters")
        if not TENANT_RE.match(tenant):
            raise KeyConfigError(f"{source}: entry {position}: tenant {tenant!r} is not a tenant id "
                                 "(letters, digits, '.', '_', '-'; at most 64)")
        if keys.get(key, tenant) != tenant:
            raise KeyConfigError(f"{source}: entry {position}: the same key is given to two tenants")
        keys[key] = tenant
    return keys


def local_dev_enabled(env: Mapping[str, str] | None = None) -> bool:
    try:
        return settings.flag(LOCAL_DEV_SETTING, env)
    except ValueError as exc:
        raise KeyConfigError(str(exc)) from None


class KeyRing:
    """The server's keys. `authenticate()` turns an Authorization header into a `Caller`."""

    def __init__(self, env: Mapping[str, str] | None = None):
        """The keys of `env` (default: the process's environment), read now."""
        self._lock = threading.Lock()
        self._file_state: tuple[float, int] | None = None
        self._file_keys: dict[str, str] = {}
        self.local_dev = local_dev_enabled(env)
        self.default_tenant = settings.text("RAGATE_TENANT", env)
        self._inline = parse_key_entries(settings.text(KEYS_SETTING, env) or "", KEYS_SETTING)
        self._file = settings.path(KEYS_FILE_SETTING, env)
        self._load_file()

    def _load_file(self) -> dict[str, str]:
        """The key file's entries, re-read when its modification time or size changes."""
        if self._file is None:
            return {}
        try:
            st = self._file.stat()
        except OSError as exc:
            raise KeyConfigError(f"{KEYS_FILE_SETTING}={str(self._file)!r} cannot be read: {exc.strerror}") from None
        state = (st.st_mtime, st.st_size)
        with self._lock:
            if state != self._file_state:
                keys = parse_key_entries(self._file.read_text(encoding="utf-8"), KEYS_FILE_SETTING)
                self._file_keys, self._file_state = keys, state
            return self._file_keys

    def keys(self) -> dict[str, str]:
        return {**self._load_file(), **self._inline}

    @property
    def configured(self) -> bool:
        return bool(self._inline) or self._file is not None

    def authenticate(self, authorization: str | None) -> Caller:
        """The caller of a request with this Authorization header. Raises AccessError."""
        header = (authorization or "").strip()
        if not header:
            if self.local_dev:
                return Caller(tenant=self.default_tenant, key_id=LOCAL_DEV_ID, local_dev=True)
            raise AccessError(401, "missing credentials: send 'Authorization: Bearer <API key>' "
                                   f"(keys are configured in {KEYS_SETTING} or {KEYS_FILE_SETTING})")
        scheme, _, token = header.partition(" ")
        token = token.strip()
        if scheme.casefold() != "bearer" or not token:
            raise AccessError(401, "the Authorization header must be 'Bearer <API key>'")
        try:
            keys = self.keys()
        except KeyConfigError as exc:
            raise unreadable_keys(exc) from None
        tenant = None
        for key, key_tenant in keys.items():  # compare with every key: the time taken says nothing
            if hmac.compare_digest(key.encode("utf-8"), token.encode("utf-8")):
                tenant = key_tenant
        if tenant is None:
            raise AccessError(401, "unknown API key")
        return Caller(tenant=tenant, key_id=fingerprint(token), local_dev=self.local_dev)


def unreadable_keys(exc: KeyConfigError) -> AccessError:
    """A broken key configuration, as the 500 every server answers with (naming the setting, never a key)."""
    return AccessError(500, f"the server's API keys cannot be read: {exc}")


_server_keyring: KeyRing | None = None
_server_keyring_lock = threading.Lock()


def server_keyring() -> KeyRing:
    """The process's keys, from its environment: one KeyRing for every server in the process (the
    LangGraph server's auth and ragate's routes share it; the key file is re-read when it changes).
    Raises AccessError (500) while the configuration cannot be read, and tries again next time."""
    global _server_keyring
    with _server_keyring_lock:
        if _server_keyring is None:
            try:
                _server_keyring = KeyRing()
            except KeyConfigError as exc:
                raise unreadable_keys(exc) from None
        return _server_keyring


def resolve_tenant(caller: Caller, requested: str | None) -> str:
    """The tenant a request runs as. A caller with a key gets its key's tenant, and naming another
    one is refused (403); in local development a request without a key may name its tenant."""
    requested = (requested or "").strip() or None
    if requested is not None and not TENANT_RE.match(requested):
        raise AccessError(403, f"tenant {requested!r} is not a tenant id")
    if caller.has_key:
        if requested is not None and requested != caller.tenant:
            raise AccessError(403, f"this API key is for tenant {caller.tenant!r}; it cannot read tenant {requested!r}")
        return caller.tenant  # type: ignore[return-value]
    tenant = requested or caller.tenant
    if not tenant:
        raise AccessError(403, "no tenant: local development mode serves the tenant the request names, "
                               "or RAGATE_TENANT; neither is set")
    return tenant


def caller_context(caller: Caller, overrides: Mapping[str, Any] | None, base: Context | None = None) -> Context:
    """The Context one request runs with: the server's `base`, the caller's tenant, and the
    per-request settings the caller may choose (`CALLER_SETTABLE`; any field in local development).
    Raises AccessError (403) for a setting the caller may not choose, ValueError for a bad value."""
    overrides = dict(overrides or {})
    tenant = resolve_tenant(caller, overrides.pop("tenant", None))
    known = {f.name for f in dataclasses.fields(Context)}
    unknown = sorted(set(overrides) - known)
    if unknown:
        raise ValueError(f"unknown context field(s): {', '.join(unknown)}; known: {', '.join(sorted(known))}")
    if not caller.local_dev:
        forbidden = sorted(set(overrides) - set(CALLER_SETTABLE))
        if forbidden:
            raise AccessError(403, f"context field(s) {', '.join(forbidden)} are the server's settings; a caller may set "
                                   f"only {', '.join(CALLER_SETTABLE)}")
    try:
        return dataclasses.replace(base or Context(), tenant=tenant, **overrides)
    except TypeError as exc:  # a wrongly typed value the dataclass cannot take
        raise ValueError(f"bad context: {exc}") from None


def caller_tenant(configurable: Mapping[str, Any] | None) -> str | None:
    """The tenant of the authenticated caller a server put in the run's config, if any."""
    user = (configurable or {}).get(AUTH_USER_KEY)
    if user is None:
        return None
    try:
        tenant = user["tenant"]
    except (KeyError, TypeError, IndexError):
        tenant = getattr(user, "tenant", None)
    return str(tenant).strip() or None if tenant else None
