"""API keys and tenants (graph/governance/tenancy.py), the Context's own checks of values that arrive as JSON,
and the graph taking the tenant from an authenticated caller whatever its context says."""

from __future__ import annotations

import os
import time

import pytest

from graph.context import Context
from graph.governance.tenancy import (
    AccessError,
    Caller,
    KeyConfigError,
    KeyRing,
    caller_context,
    caller_tenant,
    parse_key_entries,
    resolve_tenant,
)


def test_keys_map_to_tenants_from_the_variable_and_the_file(tmp_path):
    keys_file = tmp_path / "keys"
    keys_file.write_text("# rotated monthly\nfile-key-0001:globex  # ops\n\n", encoding="utf-8")
    ring = KeyRing({"RAGATE_API_KEYS": "inline-key-001:acme, other-key-0001:acme", "RAGATE_API_KEYS_FILE": str(keys_file)})
    assert ring.authenticate("Bearer inline-key-001").tenant == "acme"
    assert ring.authenticate("bearer   file-key-0001 ").tenant == "globex"
    caller = ring.authenticate("Bearer other-key-0001")
    assert caller.key_id.startswith("key-") and "other-key" not in caller.key_id and caller.has_key


def test_the_key_file_is_reread_when_it_changes(tmp_path):
    keys_file = tmp_path / "keys"
    keys_file.write_text("first-key-0001:acme\n", encoding="utf-8")
    ring = KeyRing({"RAGATE_API_KEYS_FILE": str(keys_file)})
    assert ring.authenticate("Bearer first-key-0001").tenant == "acme"
    keys_file.write_text("second-key-0001:acme\n", encoding="utf-8")
    os.utime(keys_file, (time.time() + 5, time.time() + 5))
    assert ring.authenticate("Bearer second-key-0001").tenant == "acme"
    with pytest.raises(AccessError) as err:
        ring.authenticate("Bearer first-key-0001")  # revoked without a restart
    assert err.value.status == 401


@pytest.mark.parametrize("header, says", [
    (None, "missing credentials"), ("", "missing credentials"), ("Basic abc", "must be 'Bearer <API key>'"),
    ("Bearer", "must be 'Bearer <API key>'"), ("Bearer nope-nope-nope", "unknown API key"),
])
def test_missing_or_unknown_credentials_are_401(header, says):
    with pytest.raises(AccessError) as err:
        KeyRing({"RAGATE_API_KEYS": "good-key-0001:acme"}).authenticate(header)
    assert err.value.status == 401 and says in err.value.message


@pytest.mark.parametrize("text, says", [
    ("no-colon-here", "entry 1 is not 'key:tenant'"),
    ("short:acme", "at least 8 characters"),
    ("good-key-0001:bad tenant!", "is not a tenant id"),
    ("good-key-0001:acme,good-key-0001:globex", "entry 2: the same key is given to two tenants"),
])
def test_broken_key_settings_are_refused_without_echoing_a_key(text, says):
    with pytest.raises(KeyConfigError) as err:
        parse_key_entries(text, "RAGATE_API_KEYS")
    assert says in str(err.value) and "good-key-0001" not in str(err.value)


def test_local_development_mode_must_be_asked_for_explicitly():
    assert KeyRing({"RAGATE_LOCAL_DEV": "1", "RAGATE_TENANT": "acme"}).authenticate(None).tenant == "acme"
    with pytest.raises(KeyConfigError):
        KeyRing({"RAGATE_LOCAL_DEV": "maybe"})
    with pytest.raises(AccessError):
        KeyRing({"RAGATE_LOCAL_DEV": "0"}).authenticate(None)


def test_a_key_binds_its_tenant_and_a_keyless_local_caller_names_one():
    keyed = Caller(tenant="acme", key_id="key-abc")
    assert resolve_tenant(keyed, None) == "acme" and resolve_tenant(keyed, "acme") == "acme"
    with pytest.raises(AccessError) as err:
        resolve_tenant(keyed, "globex")
    assert err.value.status == 403
    local = Caller(tenant=None, key_id="local-dev", local_dev=True)
    assert resolve_tenant(local, "globex") == "globex"
    with pytest.raises(AccessError):
        resolve_tenant(local, None)
    with pytest.raises(AccessError):
        resolve_tenant(local, "../acme")


def test_a_caller_sets_only_per_request_settings():
    keyed = Caller(tenant="acme", key_id="key-abc")
    ctx = caller_context(keyed, {"top_n": 3, "retrieval_mode": "lexical"}, Context(home="/srv/ragate"))
    assert (ctx.tenant, ctx.top_n, ctx.retrieval_mode, ctx.home) == ("acme", 3, "lexical", "/srv/ragate")
    for field in ("policy_path", "home", "chat_model", "memory_url", "vector_store", "embedding_model"):
        with pytest.raises(AccessError) as err:
            caller_context(keyed, {field: "x"})
        assert err.value.status == 403 and field in err.value.message
    with pytest.raises(ValueError, match="unknown context field"):
        caller_context(keyed, {"colour": "red"})
    local = Caller(tenant=None, key_id="local-dev", local_dev=True)
    assert caller_context(local, {"tenant": "globex", "chat_model": "openai/m"}).chat_model == "openai/m"


@pytest.mark.parametrize("values, says", [
    ({"top_n": "3"}, "top_n must be an integer or null"), ({"k": True}, "k must be an integer"),
    ({"k": 0}, "k must be at least 1"), ({"decompose": "no"}, "decompose must be true or false"),
    ({"collections": "documents"}, "collections must be a list"), ({"collections": [""]}, "collections must be a list"),
    ({"min_score": 1.5}, "min_score must be between 0 and 1"), ({"tenant": 7}, "tenant must be a string"),
    ({"provider_timeout_s": "30"}, "provider_timeout_s must be a number"),
])
def test_the_context_refuses_values_of_the_wrong_kind(values, says):
    with pytest.raises(ValueError, match=says):
        Context(**values)
    assert Context(provider_timeout_s=5).provider_timeout_s == 5.0  # an integer is a number


def test_caller_tenant_reads_the_servers_authenticated_user():
    assert caller_tenant({"langgraph_auth_user": {"identity": "k", "tenant": "globex"}}) == "globex"
    assert caller_tenant({"langgraph_auth_user": Caller("acme", "key-1").as_auth_user()}) == "acme"
    assert caller_tenant({"langgraph_auth_user": Caller(None, "local-dev", True).as_auth_user()}) is None
    assert caller_tenant({}) is None and caller_tenant(None) is None


def test_the_graph_serves_the_authenticated_callers_tenant_whatever_the_context_says(corpus, compiled):
    config = {"configurable": {"langgraph_auth_user": {"identity": "key-x", "tenant": "globex"}}}
    state = compiled.invoke({"question": "Quanto cresceram as vendas de inverno em 2025?"}, config=config,
                            context=corpus.context("acme"))
    assert state["tenant"] == "globex"
    docs = {c["docId"] for c in state["reranked"]}
    assert docs and not any(d.startswith("acme-") for d in docs)
