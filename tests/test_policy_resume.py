"""A run reads the policy it started with to its end, wherever it is resumed (graph/runtime/run_policy.py).

A run is stopped partway with its state in a SQLite checkpointer (graph/providers/persistence.py), the
policy file is edited so that two decisions change visibly (the performance search's document type,
which leaves that branch without hits; the judge's thresholds, which block the answer), and a fresh
process resumes the same thread: the resumed nodes read the first version, which route_gate kept in the
data folder (`<home>/policy-versions/`); a new run in that process reads the edited one. In process: a
run whose version this process no longer keeps (many versions read since) still reads its own, and a run
naming a version nobody kept (or a kept file that is not that version) gets a PolicyError, never another
version.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml
from child_processes import child_env, output_lines
from conftest import ROOT, SAMPLES, default_policy_raw, runtime_for

import graph.policy as policy_module
from graph.context import Context
from graph.policy import PolicyError, load_policy, policy_version
from graph.runtime.run_policy import run_policy
from nodes.route_gate import route_gate

CHILD_TIMEOUT = 120
# Names performance words (ROAS, CPC): the run searches the performance documents in a branch of its own.
QUESTION = "What were the ROAS and CPC of the Google Performance Max campaign?"

# "start": a thread stopped before `stop`; "resume": that thread resumed, then a new run. Prints each state.
CHILD = textwrap.dedent("""
    import json, sys
    from graph.context import Context
    from graph.graph import compile_graph
    from graph.providers.persistence import open_checkpointer

    home, policy, stop, mode, question = sys.argv[1:6]
    ctx = Context(home=home, tenant="acme", policy_path=policy)
    graph = compile_graph(checkpointer=open_checkpointer(home))

    def report(state, thread):
        print(json.dumps({"next": list(graph.get_state(thread).next), "digest": state["rag"]["policy"]["digest"],
                          "decision": (state.get("verdict") or {}).get("final_decision"),
                          "hits": {k: len(v["dense"]) + len(v["lexical"]) for k, v in state["hits"].items()},
                          "kinds": {k: v["kind"] for k, v in state["hits"].items()}}), flush=True)

    thread = {"configurable": {"thread_id": stop}}
    if mode == "start":
        report(graph.invoke({"question": question}, config=thread, context=ctx, interrupt_before=[stop]), thread)
    else:
        report(graph.invoke(None, config=thread, context=ctx), thread)
        fresh = {"configurable": {"thread_id": stop + "-new"}}
        report(graph.invoke({"question": question}, config=fresh, context=ctx), fresh)
""")

STOPS = ("retrieve", "judge")  # before the retrieve branches (each reads the policy from its task), before judge


def run_child(home: Path, policy: Path, stop: str, mode: str) -> list[dict]:
    done = subprocess.run([sys.executable, "-c", CHILD, str(home), str(policy), stop, mode, QUESTION], cwd=ROOT,
                          env=child_env(home), capture_output=True, text=True, encoding="utf-8",
                          timeout=CHILD_TIMEOUT)
    assert done.returncode == 0, "\n".join(output_lines(done)[-30:])
    return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]


def edited(raw: dict) -> dict:
    """The second version: the performance branch searches a document type no document has, and the
    judge's thresholds block nearly every answer."""
    raw["retrieval"]["performance_doc_type"] = "no-such-doc-type"
    raw["judge"]["thresholds"] = {"ok": 1.0, "block": 0.999}
    return raw


def dump(raw: dict) -> str:
    return yaml.safe_dump(raw, allow_unicode=True, sort_keys=False)


@pytest.fixture(scope="module")
def stopped(tmp_path_factory) -> SimpleNamespace:
    """The acme samples in a data folder of this module (the children open its embedded engine, which
    allows one process at a time: this process closes it again), one thread per STOPS entry stopped
    there under the first policy version, and then the policy file edited."""
    from graph.indexing.ingest import ingest_path
    from graph.providers.vectorstore import open_index

    home = tmp_path_factory.mktemp("resumed-home")
    ctx = Context(home=str(home), tenant=None)
    ingest_path(SAMPLES / "acme", collection="documents", tenant="acme", context=ctx)
    open_index(ctx.home_path).close()
    policy = home / "rag.yaml"
    policy.write_text(dump(default_policy_raw()), encoding="utf-8")
    first = hashlib.sha256(policy.read_bytes()).hexdigest()
    started = {stop: run_child(home, policy, stop, "start")[0] for stop in STOPS}
    policy.write_text(dump(edited(default_policy_raw())), encoding="utf-8")
    return SimpleNamespace(home=home, policy=policy, first=first, second=hashlib.sha256(policy.read_bytes()).hexdigest(),
                           started=started)


def performance_hits(report: dict) -> int:
    [branch] = [key for key, kind in report["kinds"].items() if kind == "performance"]
    return report["hits"][branch]


@pytest.mark.parametrize("stop", STOPS)
def test_a_run_resumed_in_a_fresh_process_reads_the_policy_it_started_with(stopped, stop):
    started = stopped.started[stop]
    assert started["next"] and set(started["next"]) == {stop} and started["digest"] == stopped.first
    resumed, new = run_child(stopped.home, stopped.policy, stop, "resume")
    assert resumed["next"] == [] and resumed["digest"] == stopped.first
    # The first version's performance search finds the performance documents, and its judge lets the answer through.
    assert performance_hits(resumed) > 0, resumed
    assert resumed["decision"] in ("OK", "WARNING"), resumed
    # The edit is visible: a new run reads the second version.
    assert new["digest"] == stopped.second
    assert performance_hits(new) == 0 and new["decision"] == "BLOCK", new


@pytest.fixture
def edit_in_place(monkeypatch):
    """edit_in_place(path, raw): the policy file at `path` rewritten, and read anew by the next load."""
    monkeypatch.setattr(policy_module, "RECHECK_SECONDS", 0.0)

    def _edit(path: Path, raw: dict) -> None:
        path.write_text(dump(raw), encoding="utf-8")
        future = time.time() + 5
        os.utime(path, (future, future))

    return _edit


@pytest.fixture
def run_then_edit(tmp_path, monkeypatch, edit_in_place) -> SimpleNamespace:
    """A run started (route_gate) under the first policy version, then the file edited and read again, in a
    process that keeps one version only: the run's is no longer among them."""
    monkeypatch.setattr(policy_module, "KEPT_VERSIONS", 1)
    path = tmp_path / "rag.yaml"
    path.write_text(dump(default_policy_raw()), encoding="utf-8")
    ctx = Context(home=str(tmp_path / "home"), tenant="acme", policy_path=str(path))
    run = route_gate({"question": QUESTION}, runtime_for(ctx))
    first = run["rag"]["policy"]["digest"]
    kept = tmp_path / "home" / "policy-versions" / f"{first}.yaml"
    assert kept.is_file()
    edit_in_place(path, edited(default_policy_raw()))
    assert load_policy(path).digest != first and policy_version(first) is None  # the only version kept is the new one
    return SimpleNamespace(path=path, ctx=ctx, run=run, first=first, kept=kept)


def test_a_run_keeps_its_policy_when_the_process_no_longer_keeps_that_version(run_then_edit):
    run, ctx, first = run_then_edit.run, run_then_edit.ctx, run_then_edit.first
    policy = run_policy(run["rag"], ctx)
    assert policy.digest == first
    assert policy.judge.thresholds.ok == default_policy_raw()["judge"]["thresholds"]["ok"] != 1.0
    assert policy.retrieval.performance_doc_type == "performance"


def test_a_run_whose_version_is_kept_nowhere_gets_no_policy_never_the_file(run_then_edit):
    path, ctx, run, first, kept = (run_then_edit.path, run_then_edit.ctx, run_then_edit.run, run_then_edit.first,
                                   run_then_edit.kept)
    kept.write_text(kept.read_text(encoding="utf-8").replace(first, "0" * 64), encoding="utf-8")
    with pytest.raises(PolicyError, match="is not that version"):
        run_policy(run["rag"], ctx)
    kept.unlink()
    with pytest.raises(PolicyError, match="is not kept in"):
        run_policy(run["rag"], ctx)
    # A digest is never a path: a route record naming anything else gets no policy either.
    with pytest.raises(PolicyError, match="is not kept in"):
        run_policy({**run["rag"], "policy": {"digest": "../../rag"}}, ctx)
    # A node called on its own reads the file.
    assert run_policy({}, ctx).digest == load_policy(path).digest
