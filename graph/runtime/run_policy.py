"""One policy per run: every node reads the version route_gate read, from its first node to its last,
in whatever process the run is resumed.

route_gate loads the policy (graph/policy.py `load_policy`, the file and its language packs) and writes
its digest into the route record (`rag.policy.digest`), which the run's checkpointed state and the
request record keep. It also keeps that version, as validated and assembled, in the data folder:
`<home>/policy-versions/<digest>.yaml` (`keep_run_version`), written once per version. Every later node
asks `run_policy` for the version its run names: from this process's recent versions, else from that
folder, never from the file as it is now. So an edit of the policy takes effect at the next run, never in
the middle of one, also for a run resumed in another worker or after many edits.

The version lives beside the run's checkpoints rather than in its state: a caller may read and update
its own thread's state (the LangGraph server lets it), and a policy carried there could be read (its
instruction patterns) or replaced (its thresholds) by the caller. A digest that names no kept version
gives PolicyError, as a broken policy does: the later nodes take their no-policy path (retrieval
disabled, nothing vouched for).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from graph.context import Context
from graph.policy import (
    Policy,
    PolicyError,
    kept_version_text,
    load_policy,
    policy_from_kept_version,
    policy_version,
    use_languages,
)
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
    if not digest:
        return load_policy(ctx.policy_path)
    policy = policy_version(digest)
    if policy is not None:
        return policy
    try:
        text = _version_path(ctx, digest).read_text(encoding="utf-8")
    except (OSError, ValueError):
        raise PolicyError(f"the policy version this run started with (sha256 {str(digest)[:12]}) is not kept in "
                          f"{ctx.home_path / VERSIONS_FOLDER}: the run cannot go on under another") from None
    return policy_from_kept_version(text, digest)


VERSIONS_FOLDER = "policy-versions"


def _version_path(ctx: Context, digest: str) -> Path:
    if not (len(digest) == 64 and all(c in "0123456789abcdef" for c in digest)):
        raise ValueError(f"not a sha256: {digest!r}")  # a digest names a file: nothing else may
    return ctx.home_path / VERSIONS_FOLDER / f"{digest}.yaml"


def keep_run_version(policy: Policy, ctx: Context) -> None:
    """Keep `policy` in the data folder, once per version, so that a run that names it can be resumed in any
    process (`run_policy`). A folder that cannot be written leaves the version in this process only: a run
    resumed elsewhere then gets PolicyError, never another version."""
    try:
        path = _version_path(ctx, policy.digest)
        if path.exists():
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        # Written whole or not at all: another worker may read it at any moment.
        fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=".version-", suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(kept_version_text(policy))
        os.replace(temporary, path)
    except (OSError, ValueError):
        pass
