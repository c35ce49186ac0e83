"""One policy per run: every node reads the version route_gate read, from its first node to its last.

route_gate loads the policy (graph/policy.py `load_policy`) and writes its digest, the sha256 of the
file, into the route record (`rag.policy.digest`), which the request record keeps. Every later node
asks `run_policy` for that version, so an edit of the file takes effect at the next run, never in the
middle of one. When route_gate found the policy broken, the run has none: the later nodes get the
same PolicyError and take their no-policy path (retrieval disabled, nothing vouched for).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from graph.context import Context
from graph.policy import Policy, PolicyError, load_policy, policy_version, use_languages
from graph.prompts import add_languages


def run_policy(rag: Mapping[str, Any] | None, ctx: Context) -> Policy:
    """The policy of the run whose route record is `rag`. A node called on its own (no route record
    naming a version) reads the policy file of `ctx`. Its languages become the run's: the readers the
    node calls take their words from them (graph/policy.py `use_languages`), and the phrases of a language
    no shipped pack has are taken from it (graph/prompts.py `add_languages`)."""
    policy = _run_policy(rag, ctx)
    use_languages(policy.languages)
    add_languages(policy.languages.phrases, policy.languages.names)
    return policy


def _run_policy(rag: Mapping[str, Any] | None, ctx: Context) -> Policy:
    rag = rag or {}
    if rag.get("disabled_reason") == "policy_invalid":
        raise PolicyError(rag.get("error") or "the policy of this run could not be loaded")
    digest = (rag.get("policy") or {}).get("digest")
    if digest:
        policy = policy_version(digest)
        if policy is not None:
            return policy
    # Not kept any more (64 versions loaded since), or another process's run: the file as it is now.
    return load_policy(ctx.policy_path)
