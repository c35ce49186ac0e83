"""Shared fixtures: the bundled samples ingested ONCE per session into a tmp home, a compiled graph,
helpers to run questions and to build tmp policies.

Nothing here writes to the repository or to ./.ragate: every Context gets an explicit tmp `home`,
and RAGATE_HOME points at a tmp folder for any code path that builds a default Context.
"""

from __future__ import annotations

import copy
import importlib.util
import json
import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent

# The LangServe app's tests run in their own environment (make test-langserve): langserve pins
# sse-starlette<2, the LangGraph server of the test extra needs >=2.1.3.
collect_ignore_glob = [] if importlib.util.find_spec("langserve") else ["langserve_app/*"]
SAMPLES = ROOT / "samples"
TENANTS = ("acme", "globex")

# Keep the environment from steering the code under test (a developer's RAGATE_TENANT, a policy
# override, ...). Set before any Context is built.
for _var in ("RAGATE_TENANT", "RAGATE_POLICY", "RAGATE_EMBEDDING_MODEL", "RAGATE_VECTOR_STORE", "RAGATE_CHUNK_TOKENS",
             "RAGATE_CHAT_MODEL", "RAGATE_RERANK_MODEL", "RAGATE_PROVIDER_TIMEOUT", "RAGATE_PROVIDER_RETRIES",
             "RAGATE_MEMORY_URL", "RAGATE_LOG", "OPENAI_BASE_URL", "OPENAI_API_KEY", "COHERE_API_KEY", "COHERE_BASE_URL",
             "RAGATE_OVERLAP_TOKENS", "QDRANT_URL", "QDRANT_API_KEY", "CO_API_URL"):
    os.environ.pop(_var, None)



@pytest.fixture(scope="session", autouse=True)
def _isolated_default_home(tmp_path_factory):
    """Any default Context() lands in a tmp folder, never in ./.ragate."""
    home = tmp_path_factory.mktemp("default-home")
    old = os.environ.get("RAGATE_HOME")
    os.environ["RAGATE_HOME"] = str(home)
    yield home
    if old is None:
        os.environ.pop("RAGATE_HOME", None)
    else:
        os.environ["RAGATE_HOME"] = old


# --- sample corpus ----------------------------------------------------------------------------


def load_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def sample_documents(tenant: str) -> dict[str, dict]:
    """Every sample document of a tenant, by id (read straight from the files, not from the code)."""
    docs: dict[str, dict] = {}
    for f in sorted((SAMPLES / tenant).glob("*.jsonl")):
        for d in load_jsonl(f):
            docs[d["id"]] = d
    return docs


def is_servable(doc: dict) -> bool:
    meta = doc.get("metadata") or {}
    return meta.get("isApprovedForAI") is True and meta.get("status") in ("ready", "approved")


@dataclass
class Corpus:
    home: Path
    reports: dict[str, Any]
    docs: dict[str, dict[str, dict]] = field(default_factory=dict)

    def ids(self, tenant: str) -> set[str]:
        return set(self.docs[tenant])

    def servable_ids(self, tenant: str) -> set[str]:
        return {i for i, d in self.docs[tenant].items() if is_servable(d)}

    def gated_ids(self, tenant: str) -> set[str]:
        return self.ids(tenant) - self.servable_ids(tenant)

    def context(self, tenant: str | None = "acme", **kw):
        from graph.context import Context

        return Context(home=str(self.home), tenant=tenant, **kw)


@pytest.fixture(scope="session")
def corpus(tmp_path_factory) -> Corpus:
    from graph.context import Context
    from graph.indexing.ingest import ingest_path

    home = tmp_path_factory.mktemp("ragate-home")
    ctx = Context(home=str(home), tenant=None)
    reports = {t: ingest_path(SAMPLES / t, collection="documents", tenant=t, context=ctx) for t in TENANTS}
    return Corpus(home=home, reports=reports, docs={t: sample_documents(t) for t in TENANTS})


# --- running the graph ------------------------------------------------------------------------


@pytest.fixture(scope="session")
def compiled():
    """A compiled graph without a store (memory_shield then saves nothing)."""
    from graph.graph import compile_graph

    return compile_graph()


@pytest.fixture
def ask(corpus, compiled):
    """ask(question, tenant="acme", **input) -> final state, against the session corpus."""

    def _ask(question: str, tenant: str | None = "acme", *, graph=None, context=None, **payload):
        ctx = context or corpus.context(tenant)
        return (graph or compiled).invoke({"question": question, **payload}, context=ctx)

    return _ask


def load_script(path: Path, name: str):
    """A script outside the packages (bench/, examples/), imported as module `name` (registered in sys.modules:
    its dataclasses look their module up there)."""
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def runtime_for(ctx) -> SimpleNamespace:
    """What a node reads from LangGraph's Runtime: `.context` (and `.store`)."""
    return SimpleNamespace(context=ctx, store=None)


# --- policies ---------------------------------------------------------------------------------


def default_policy_raw() -> dict:
    """The default policy with its language packs assembled into it (`Policy.raw`): one self-contained
    mapping a test can change and write anywhere."""
    from graph.policy import load_policy

    return copy.deepcopy(dict(load_policy().raw))


@pytest.fixture
def write_policy(tmp_path):
    """write_policy(mutate) -> path of a copy of the default policy changed by `mutate(raw)`."""
    counter = {"n": 0}

    def _write(mutate=None, *, text: str | None = None) -> Path:
        counter["n"] += 1
        path = tmp_path / f"policy-{counter['n']}.yaml"
        if text is not None:
            path.write_text(text, encoding="utf-8")
            return path
        raw = copy.deepcopy(default_policy_raw())
        if mutate:
            mutate(raw)
        path.write_text(yaml.safe_dump(raw, allow_unicode=True, sort_keys=False), encoding="utf-8")
        return path

    return _write


# --- phrasing ---------------------------------------------------------------------------------


def template_regex(template: str) -> re.Pattern[str]:
    """A language pack's phrase (policies/languages/<language>.yaml `phrases`) as a regex: literal text, any text for {placeholders}."""
    parts = re.split(r"\{[a-z_]+\}", template)
    return re.compile("^" + "(.+?)".join(re.escape(p) for p in parts) + "$", re.S)


def matches_phrase(text: str, language: str, key: str) -> bool:
    from graph.prompts import phrases

    return bool(template_regex(phrases(language)[key]).match(text))


def suggestion_language(text: str) -> set[str]:
    """Languages whose suggestion_* templates match `text`."""
    from graph.prompts import phrases

    out = set()
    for lang in ("pt", "en"):
        for key, tpl in phrases(lang).items():
            if key.startswith("suggestion_") and isinstance(tpl, str) and template_regex(tpl).match(text):
                out.add(lang)
    return out


def dump_state(state: dict) -> str:
    return json.dumps(state, ensure_ascii=False, default=str)


# --- a real PostgreSQL, started by the tests (tests/pg_server.py) ------------------------------


@pytest.fixture(scope="session")
def postgres():
    """One private PostgreSQL server for the session (skips when the binaries are not installed)."""
    import pg_server

    from graph.providers.persistence import close_all

    reason = pg_server.unavailable_reason()
    if reason:
        pytest.skip(reason)
    server = pg_server.PostgresServer()
    try:
        server.start()
        yield server
    finally:
        close_all()  # pools first: a fast shutdown would otherwise cut them
        server.stop()


@pytest.fixture
def pg_url(postgres):
    """A fresh empty database on the session's server, for one test."""
    import uuid

    return postgres.create_database(f"t_{uuid.uuid4().hex[:12]}")


# --- a scripted OpenAI / Cohere-compatible server on 127.0.0.1 (tests/scripted_server.py) ---------


@pytest.fixture(scope="session")
def scripted_server():
    """One server for the session (langchain_openai caches its HTTP client per base_url, so one port
    keeps clients cheap); tests `reset()` it before use. Loopback never goes through a proxy."""
    from scripted_server import ScriptedServer

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("NO_PROXY", "127.0.0.1,localhost")
        mp.setenv("no_proxy", "127.0.0.1,localhost")
        with ScriptedServer() as srv:
            yield srv


# --- the real ragate server (`ragate serve`: LangGraph dev server + ragate's routes) --------------

SERVER_KEYS = {"acme-test-key-0001": "acme", "globex-test-key-0001": "globex"}


@pytest.fixture(scope="session")
def served(tmp_path_factory):
    """`ragate serve` with API keys for acme and globex (no local development mode), the samples
    ingested into its own data folder. Skips when the serve extra is not installed."""
    pytest.importorskip("langgraph_api", reason="the LangGraph server is the serve extra: pip install -e '.[serve]'")
    from ragate_server import RagateServer

    with RagateServer(tmp_path_factory.mktemp("served-home"), keys=SERVER_KEYS) as srv:
        yield srv


@pytest.fixture(scope="session")
def served_dev(tmp_path_factory, scripted_server):
    """`ragate serve --local-dev`: keyless requests allowed (any context field), with the scripted
    OpenAI-compatible server as its chat server (a run picks it with context chat_model)."""
    pytest.importorskip("langgraph_api", reason="the LangGraph server is the serve extra: pip install -e '.[serve]'")
    from ragate_server import RagateServer

    env = {"OPENAI_BASE_URL": scripted_server.openai_base_url, "OPENAI_API_KEY": "test-key",
           "NO_PROXY": "127.0.0.1,localhost"}
    with RagateServer(tmp_path_factory.mktemp("served-dev-home"), keys=SERVER_KEYS, local_dev=True, env=env) as srv:
        yield srv
