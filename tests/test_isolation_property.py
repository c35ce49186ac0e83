"""Tenant isolation, property-based (hypothesis): whatever the corpus and whatever the question, a
request sees only its own tenant's servable chunks, everywhere it leaves a trace.

The generated worlds are adversarial on purpose:
- 2-4 random tenants (ids of graph/tenancy.TENANT_RE), often near-twins of each other ("acme",
  "ACME", "acme-", "acm"), plus an outsider that ingests nothing but is claimed by documents;
- every document has a random approval (true / false / missing / "true" / "false"), a random
  status (ready / approved / draft / archived / missing, in any case) and text built from one small
  shared Portuguese/English vocabulary, so a question matches documents of every tenant: retrieval
  WOULD find other tenants' (and gated) documents if a gate failed;
- every document carries a unique marker word in each sentence and in its title, so a leaked chunk
  is seen wherever its text lands (hits are point ids: they are checked against the stored points);
- some documents claim another tenant's `brandId` (in their metadata, or as a top-level field);
- questions come from the same vocabulary, sometimes several clauses joined with "e" / "and" and
  several question marks (decompose fans out into parallel branches), sometimes naming a source
  (scoped searches over the tenant's facet values) or a date, with a random intent and entity of
  the policy or none, and sometimes a thread id shared by several tenants.

Each hypothesis example ingests its corpus with graph.indexing.ingest.ingest_path into a data folder of its
own, in RAM where there is /dev/shm (the embedding model is loaded once per process; a folder costs a
shard and three SQLite files; a shared folder would flush every earlier example's shard at each ingest),
and runs its questions through the real graph (graph.entrypoints.api.Ragate with that folder's SQLite store and
checkpointer, so memory_shield writes memory and request records). Every case checks the
final state (hits of every branch, fused, reranked, citations, scoped searches, thread history, the
answer and everything else in it), the output contract, the request log line, the stored request
record (what /ops/rag_debug returns) and memory, feedback from every other tenant, and at the end of
the example every item of the store. The HTTP test runs generated questions through `ragate serve`
with each key.

Settings are derandomized with no example database: CI runs the same cases every time. The number
of generated examples and graph runs is printed (`-s` not needed) and recorded in bench/RESULTS.md.
"""

from __future__ import annotations

import itertools
import json
import logging
import os
import re
import shutil
import string
import tempfile
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from graph.algorithms.text import get_analyzer
from graph.assets import DEFAULT_POLICY_PATH
from graph.context import Context
from graph.entrypoints.api import Ragate
from graph.governance.audit import FEEDBACK, REQUESTS, namespace
from graph.governance.feedback import UnknownRequestError, record_feedback
from graph.governance.tenancy import TENANT_RE
from graph.indexing.ingest import ingest_path
from graph.output import to_output
from graph.policy import load_policy
from graph.providers.persistence import label_text, open_checkpointer, open_store
from graph.providers.resources import get_resources
from graph.providers.vectorstore import APPROVED_STATUSES, TENANT_FIELD, open_index

# --- budgets: the file takes ~90 s on 2 cores (graph ~45 s, Qdrant server ~20 s, ingest ~9 s, HTTP ~15 s
# + the server's start). RAGATE_ISOLATION_SCALE multiplies every budget: the soak run of bench/README.md
# ("Isolation soak") generates thousands of graph runs with the same properties.

SCALE = max(1, int(os.environ.get("RAGATE_ISOLATION_SCALE") or 1))
GRAPH_EXAMPLES = 60 * SCALE        # corpora generated and ingested, each asked 1-5 questions
SERVER_EXAMPLES = 10 * SCALE       # the same on the Qdrant server path (real qdrant_client over HTTP)
INGEST_EXAMPLES = 20 * SCALE       # corpora where every document claims another tenant
HTTP_EXAMPLES = 40 * SCALE         # questions through `ragate serve`, each with a random key

SETTINGS = dict(deadline=None, derandomize=True, database=None, print_blob=False,
                suppress_health_check=list(HealthCheck))

POLICY = load_policy(DEFAULT_POLICY_PATH)
INTENTS = sorted(set(POLICY.routing.allow_intents) | set(POLICY.routing.deny_intents)
                 | {r.intent for r in POLICY.routing.intent_rules})
ENTITIES = sorted(set(POLICY.raw["rag"].get("entities") or {}) | {"default"})
MEMORY_KINDS = ("memory", REQUESTS, FEEDBACK)
COLLECTION = "documents"   # the policy's collection for every entity
INGEST_CHUNK_TOKENS, INGEST_OVERLAP_TOKENS = 40, 8   # small chunks: most documents have several

# --- vocabulary shared by every tenant's documents and by the questions --------------------------

WORDS = [
    # Portuguese
    "vendas", "inverno", "verão", "receita", "campanha", "loja", "lojas", "estoque", "margem", "crescimento",
    "playbook", "estratégia", "clientes", "instagram", "engajamento", "desempenho", "conversão", "frete",
    "entrega", "região", "Sul", "Sudeste", "meta", "temporada", "coleção", "processo", "tribunal", "decisão",
    "notícias", "mercado", "concorrente", "casacos", "devoluções", "faturamento", "plano", "recomendação",
    # English
    "sales", "winter", "summer", "revenue", "campaign", "store", "stores", "inventory", "margin", "growth",
    "strategy", "customers", "engagement", "performance", "conversion", "shipping", "delivery", "region",
    "target", "season", "collection", "lawsuit", "court", "ruling", "news", "market", "competitor", "returns",
    "ctr", "roas", "optimize", "playbook", "recommendation",
]
NUMBERS = ["2024", "2025", "2026", "7,9%", "12%", "3,5%", "R$ 118 milhões", "US$ 4.2 million", "3.200", "Q1", "Q2",
           "1º trimestre", "140"]
QUESTION_WORDS = ["", "", "Quanto", "Quais", "Como", "Qual", "O que", "What", "How", "Which", "How much", "Why"]
JOINERS = [" e ", " and ", "? E ", "? And ", ", e também ", "; ", " versus ", "? "]
ENDINGS = ["?", "??", "? ", ".", ""]
# Values of the policy's mention field (`source`): a question naming one is also searched within it,
# among the values of the tenant's servable chunks (the engine's facet, gated like every read).
SOURCES = ["Valor", "Reuters", "TechCrunch", "Exame"]
# Dates documents carry and questions write out (date-scoped searches).
DATES = ["2023-10-18", "2024-03-03", "2025-06-01", "2026-01-15"]
DATE_PHRASES = ["em 18 de outubro de 2023", "on October 18, 2023", "before March 3, 2024",
                "antes de 3 de março de 2024", "after January 15, 2026", "desde 1 de junho de 2025"]
DOC_TYPES = ["bi_note", "playbook", "legal", "performance", "news", "social"]
CATEGORIES = ["sales", "social", "marketing", "operations", "legal"]

MISSING = "<missing>"
# Weighted towards servable so most tenants have something to find.
APPROVALS = [True, True, True, True, "true", False, "false", MISSING]
STATUSES = ["ready", "ready", "ready", "approved", "Ready", " APPROVED ", "draft", "archived", MISSING]
TENANT_CHARS = string.ascii_letters + string.digits + "._-"
LETTERS = string.ascii_lowercase


def letters(n: int, width: int = 2) -> str:
    out = ""
    for _ in range(width):
        n, r = divmod(n, 26)
        out = LETTERS[r] + out
    return out


# --- the generated world ------------------------------------------------------------------------


@dataclass(frozen=True)
class Doc:
    id: str             # DOC<tenant><doc>Z: no marker inside, so ids and text are checked apart
    tenant: str         # the ingesting tenant
    marker: str         # zq<tenant><doc>x: in every sentence and in the title
    approval: Any       # as written in the file (MISSING: left out)
    status: Any
    claim: str | None   # a brandId the document claims (never its tenant)
    claim_top_level: bool
    source: str
    sentences: tuple[str, ...]
    doc_type: str
    category: str
    date: str

    @property
    def servable(self) -> bool:
        approved = self.approval is True or (isinstance(self.approval, str) and self.approval.casefold() == "true")
        status = "ready" if self.status == MISSING else str(self.status).strip().casefold()
        return approved and status in APPROVED_STATUSES

    def line(self) -> dict[str, Any]:
        meta: dict[str, Any] = {"docType": self.doc_type, "category": self.category, "date": self.date,
                                "source": self.source, "version": self.date[:4]}
        if self.approval != MISSING:
            meta["isApprovedForAI"] = self.approval
        if self.status != MISSING:
            meta["status"] = self.status
        obj: dict[str, Any] = {"id": self.id, "assetId": f"asset-{self.id}", "assetName": f"Relatório {self.marker}",
                               "content": " ".join(self.sentences), "metadata": meta}
        if self.claim is not None:
            if self.claim_top_level:
                obj[TENANT_FIELD] = self.claim
            else:
                meta[TENANT_FIELD] = self.claim
        return obj


@dataclass(frozen=True)
class Case:
    asker: int          # index into World.askers
    question: str
    intent: str | None
    entity: str | None
    thread: str | None


@dataclass(frozen=True)
class World:
    tenants: tuple[str, ...]   # tenants that ingest
    outsider: str              # claimed by documents, ingests nothing
    docs: tuple[Doc, ...]

    @property
    def askers(self) -> tuple[str, ...]:
        return (*self.tenants, self.outsider)

    def servable(self, tenant: str) -> set[str]:
        return {d.id for d in self.docs if d.tenant == tenant and d.servable}

    def forbidden_markers(self, tenant: str) -> set[str]:
        return {d.marker for d in self.docs if not (d.tenant == tenant and d.servable)}

    def servable_sources(self, tenant: str) -> set[str]:
        return {d.source for d in self.docs if d.tenant == tenant and d.servable}

    def by_id(self) -> dict[str, Doc]:
        return {d.id: d for d in self.docs}


def tenant_id() -> st.SearchStrategy[str]:
    return st.builds(lambda first, rest: first + rest, st.sampled_from(string.ascii_letters + string.digits),
                     st.text(TENANT_CHARS, max_size=63))


@st.composite
def tenant_ids(draw, n: int) -> list[str]:
    """`n` distinct tenant ids, often near-twins (case, a suffix, a prefix) of one another."""
    ids = [draw(tenant_id())]
    for _ in range(40):
        if len(ids) == n:
            break
        src = draw(st.sampled_from(ids))
        kind = draw(st.sampled_from(["fresh", "case", "suffix", "prefix"]))
        if kind == "fresh":
            cand = draw(tenant_id())
        elif kind == "case":
            cand = src.swapcase()
        elif kind == "suffix":
            cand = src + draw(st.sampled_from(["-", "_", "0", "x", "-br"]))
        else:
            cand = src[:-1]
        if cand and TENANT_RE.match(cand) and cand not in ids:
            ids.append(cand)
    ids += [f"tenant{i}" for i in range(n - len(ids))]  # hardly ever: the draws kept colliding
    assert all(TENANT_RE.match(t) for t in ids) and len(set(ids)) == n
    return ids


@st.composite
def sentences(draw, marker: str) -> str:
    words = draw(st.lists(st.sampled_from(WORDS + NUMBERS), min_size=4, max_size=14))
    words.insert(draw(st.integers(0, len(words))), marker)
    text = " ".join(words)
    return text[0].upper() + text[1:] + "."


@st.composite
def worlds(draw, claim: str = "sometimes") -> World:
    n = draw(st.integers(2, 4))
    tenants = draw(tenant_ids(n + 1))
    tenants, outsider = tenants[:n], tenants[n]
    docs = []
    for ti, tenant in enumerate(tenants):
        for di in range(draw(st.integers(1, 5))):
            marker = f"zq{letters(ti)}{letters(di)}x"
            others = [t for t in (*tenants, outsider) if t != tenant]
            claims = st.sampled_from(others) if claim == "always" else \
                st.one_of(st.none(), st.none(), st.sampled_from(others))
            docs.append(Doc(
                id=f"DOC{ti:02d}{di:02d}Z", tenant=tenant, marker=marker,
                approval=draw(st.sampled_from(APPROVALS)), status=draw(st.sampled_from(STATUSES)),
                claim=draw(claims), claim_top_level=draw(st.booleans()),
                source=draw(st.sampled_from(SOURCES + [f"Gazeta{letters(ti)}{letters(di)}"])),
                sentences=tuple(draw(st.lists(sentences(marker), min_size=1, max_size=4))),
                doc_type=draw(st.sampled_from(DOC_TYPES)), category=draw(st.sampled_from(CATEGORIES)),
                date=draw(st.sampled_from(DATES))))
    return World(tuple(tenants), outsider, tuple(docs))


@st.composite
def questions(draw, sources: list[str]) -> str:
    clauses = []
    for _ in range(draw(st.integers(1, 3))):
        parts = [draw(st.sampled_from(QUESTION_WORDS)),
                 *draw(st.lists(st.sampled_from(WORDS + NUMBERS), min_size=2, max_size=7)),
                 draw(st.sampled_from(["", "", "", *DATE_PHRASES, *(f"segundo {s}" for s in sources),
                                       *(f"as {s} reported" for s in sources)]))]
        clauses.append(" ".join(p for p in parts if p))
    joined = clauses[0]
    for clause in clauses[1:]:
        joined += draw(st.sampled_from(JOINERS)) + clause
    return joined + draw(st.sampled_from(ENDINGS))


@st.composite
def scenarios(draw) -> tuple[World, list[Case]]:
    world = draw(worlds())
    sources = sorted({d.source for d in world.docs})  # every tenant's, gated ones too
    cases = draw(st.lists(st.builds(
        Case, asker=st.integers(0, len(world.askers) - 1), question=questions(sources),
        intent=st.one_of(st.none(), st.none(), st.sampled_from(INTENTS)),
        entity=st.one_of(st.none(), st.none(), st.sampled_from(ENTITIES)),
        thread=st.sampled_from([None, None, "t1", "t2"])), min_size=1, max_size=5))
    return world, cases


# --- running: a data folder per example ---------------------------------------------------------


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """The examples' data folders: in RAM when the machine has /dev/shm. Every ingest flushes the
    engine and every stored record is an fsync'd SQLite commit (synchronous=FULL): on a disk that
    other processes keep busy this doubles the run, and durability is not what these tests test."""
    shm = Path("/dev/shm")
    if shm.is_dir() and os.access(shm, os.W_OK):
        root = Path(tempfile.mkdtemp(prefix="ragate-isolation-", dir=shm))
        yield Lab(root)
        # The engines opened under it are closed first: a later close_all() would flush shards whose files are gone.
        from graph.providers.vectorstore import close_all

        close_all()
        shutil.rmtree(root, ignore_errors=True)
    else:
        yield Lab(tmp_path_factory.mktemp("isolation"))


@dataclass
class Lab:
    root: Path
    counter: itertools.count = field(default_factory=itertools.count)

    def ingest(self, world: World, engine: str = "embedded") -> Example:
        """A fresh data folder with the world's documents ingested, tenant by tenant, into the
        policy's collection. (One folder per example: the engine flushes every shard a folder holds
        after each ingest, so a shared folder with a collection per example grows quadratically. On
        the Qdrant server the collection is dropped first: the folder holds the store only.)"""
        home = self.root / f"x{next(self.counter)}"
        if engine == "qdrant":
            get_resources(context(home, None, engine)).index.client.delete_collection(COLLECTION)
        reports = {}
        for ti, tenant in enumerate(world.tenants):
            files = home / "docs" / f"t{ti}"
            files.mkdir(parents=True)
            lines = [json.dumps(d.line(), ensure_ascii=False) for d in world.docs if d.tenant == tenant]
            (files / "docs.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
            reports[tenant] = ingest_path(files, collection=COLLECTION, tenant=tenant,
                                          context=context(home, None, engine))
        return Example(home, engine, reports, stored_points(context(home, None, engine)))


@dataclass
class Example:
    home: Path
    engine: str                          # "embedded" | "qdrant" (a Qdrant server over HTTP)
    reports: dict[str, Any]              # IngestReport by tenant
    points: dict[str, tuple[str, str]]   # every stored point: {point id: (brandId, docId)}

    def context(self, tenant: str | None) -> Context:
        return context(self.home, tenant, self.engine)

    def close(self) -> None:
        if self.engine == "embedded":
            open_index(self.home).close()


def context(home: Path, tenant: str | None, engine: str = "embedded") -> Context:
    # One named model: the checks below embed with `res.embeddings` themselves (the property is isolation).
    return Context(home=str(home), tenant=tenant, chunk_tokens=INGEST_CHUNK_TOKENS, overlap_tokens=INGEST_OVERLAP_TOKENS,
                   vector_store=engine, embedding_model="local/use-multilingual")


def stored_points(ctx: Context) -> dict[str, tuple[str, str]]:
    """Every point of the collection as the engine holds it, read without any gate."""
    index = get_resources(ctx).index
    if ctx.vector_store == "qdrant":
        records, _ = index.client.scroll(COLLECTION, limit=100_000, with_payload=[TENANT_FIELD, "docId"])
    else:
        from qdrant_edge import ScrollRequest

        records, _ = index._shard(COLLECTION).scroll(ScrollRequest(limit=100_000, with_payload=[TENANT_FIELD, "docId"]))
    return {str(r.id): (r.payload[TENANT_FIELD], r.payload["docId"]) for r in records}


class RequestLog(logging.Handler):
    """The `ragate.requests` lines, parsed, while attached."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.lines: list[dict] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(json.loads(record.getMessage()))


@pytest.fixture
def request_log():
    logger = logging.getLogger("ragate.requests")
    handler, level = RequestLog(), logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    yield handler
    logger.removeHandler(handler)
    logger.setLevel(level)


def dump(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def leaked(text: str, markers: set[str]) -> list[str]:
    return sorted(m for m in markers if m in text)


# --- the checks (module functions, so a scratch run can switch one off to see the next catch) -------


def check_ingest(world: World, ex: Example) -> None:
    check_storage(world, ex)
    check_searches(world, ex)


def check_storage(world: World, ex: Example) -> None:
    """Every document is stored, under its ingesting tenant only, whatever brandId it claims (and the
    claim in its metadata is reported)."""
    by_id = world.by_id()
    for pid, (brand, doc_id) in ex.points.items():
        assert doc_id in by_id, f"point {pid} of unknown document {doc_id!r}"
        assert brand == by_id[doc_id].tenant, f"{doc_id} of {by_id[doc_id].tenant!r} stored under {brand!r}"
    assert {doc_id for _, doc_id in ex.points.values()} == set(by_id), "some documents were not stored"
    for doc in world.docs:
        if doc.claim is not None and not doc.claim_top_level:
            warnings = ex.reports[doc.tenant].warnings
            assert any(repr(doc.claim) in w and repr(doc.tenant) in w for w in warnings), (doc.id, warnings)


def check_searches(world: World, ex: Example) -> None:
    """The engine, asked with each document's own text (its best possible match) as every tenant,
    the claimed ones and the outsider included, returns that tenant's servable documents only; and
    returns the document to its own tenant when it is servable (so the search does work)."""
    points = ex.points
    res, analyzer = get_resources(ex.context(None)), get_analyzer(POLICY)
    for doc in world.docs:
        text = " ".join(doc.sentences)
        dense, sparse = res.embeddings.embed_query(text), analyzer.query_vector(text, "pt")
        for tenant in world.askers:
            hits = res.index.search(COLLECTION, dense=dense, sparse=sparse, tenant=tenant, filters=None, limit=50)
            assert all(h.point_id in points for lst in hits for h in lst)
            found = {points[h.point_id][1] for lst in hits for h in lst}
            assert found <= world.servable(tenant), (
                f"searching as {tenant!r} returned {sorted(found - world.servable(tenant))}")
            if tenant == doc.tenant and doc.servable:
                assert doc.id in found, f"{doc.id} not found by its own tenant {tenant!r} (search broken?)"
            if ex.engine == "qdrant":
                # LangChain's retriever over the same collection, with a call that would drop a
                # filter kept in its search_kwargs.
                retriever = res.index.governed_retriever(COLLECTION, tenant, res.embeddings, k=50)
                got = {points[str(d.metadata["_id"])][1] for d in retriever.invoke(text, filter=None)}
                assert got <= world.servable(tenant), f"governed retriever of {tenant!r}: {sorted(got)}"


def check_state(world: World, tenant: str, case: Case, state: dict, ctx: dict) -> None:
    """Every branch's hits, fused, reranked, citations, scoped searches and history: the asking
    tenant's servable chunks only."""
    allowed, points = world.servable(tenant), ctx["points"]
    for key, result in (state.get("hits") or {}).items():
        for lst in ("dense", "lexical"):
            for chunk in result.get(lst) or []:
                pid = chunk["pointId"]
                assert pid in points, f"{key}.{lst}: unknown point {pid}"
                assert points[pid][1] in allowed, (
                    f"{key}.{lst} of {tenant!r} holds {points[pid][1]} of {points[pid][0]!r} (servable: {sorted(allowed)})")
                assert chunk["collection"] == COLLECTION
    for chunk in state.get("fused") or []:
        assert points.get(chunk["pointId"], ("", ""))[1] in allowed, f"fused holds {chunk['pointId']}"
    for chunk in state.get("reranked") or []:
        assert chunk["docId"] in allowed, f"reranked holds {chunk['docId']}"
        assert points[chunk["pointId"]] == (tenant, chunk["docId"])
        assert chunk["id"].startswith(chunk["docId"] + "#")
        meta = chunk["metadata"]
        assert meta["isApprovedForAI"] is True and meta["status"] in APPROVED_STATUSES, meta
    assert set(state.get("citations_used") or []) <= allowed, state.get("citations_used")
    sources = world.servable_sources(tenant)
    for scoped in state.get("scoped_queries") or []:
        named = scoped.get("filters", {}).get("source")
        assert named is None or named in sources, f"scoped search on {named!r}, not a source of {tenant!r}'s documents"
    # The thread's earlier turns (of this tenant and thread id only), then this one (memory_shield appends it).
    earlier = ctx["threads"].get((tenant, case.thread), []) if case.thread else []
    for turn in state.get("history") or []:
        assert turn["request_id"] in [*earlier, state["request_id"]], (
            f"history of {tenant!r}:{case.thread} holds {turn['request_id']}")


def check_text(world: World, tenant: str, case: Case, state: dict, ctx: dict) -> None:
    """No marker of a document the tenant may not read, anywhere in the state: the answer, the
    blocked answer, suggestions, sources, errors, history..."""
    forbidden = world.forbidden_markers(tenant)
    answer = state.get("answer") or ""
    assert not leaked(answer, forbidden), f"answer to {tenant!r} leaks {leaked(answer, forbidden)}: {answer!r}"
    assert not leaked(dump(state), forbidden), f"state of {tenant!r} leaks {leaked(dump(state), forbidden)}"


def check_output(world: World, tenant: str, case: Case, state: dict, ctx: dict) -> None:
    """The output contract: sources and citations of the tenant's servable documents only."""
    out, allowed = to_output(state), world.servable(tenant)
    assert out["request_id"] == state["request_id"]
    assert {s["docId"] for s in out["sources"]} <= allowed, [s["docId"] for s in out["sources"]]
    assert all(s["metadata"].get("status") in APPROVED_STATUSES for s in out["sources"])
    assert set(out["citations_used"]) <= allowed
    assert not leaked(dump(out), world.forbidden_markers(tenant))


def _check_record(world: World, tenant: str, record: dict, where: str) -> None:
    allowed = world.servable(tenant)
    assert record["tenant"] == tenant, f"{where}: tenant {record['tenant']!r}, asked by {tenant!r}"
    assert {r["docId"] for r in record["retrieved"]} <= allowed, f"{where}: retrieved {record['retrieved']}"
    assert set(record["citations_used"]) <= allowed, f"{where}: cites {record['citations_used']}"
    every_marker = {d.marker for d in world.docs}
    assert not leaked(dump(record), every_marker), f"{where} holds document text: {leaked(dump(record), every_marker)}"


def check_log(world: World, tenant: str, case: Case, state: dict, ctx: dict) -> None:
    """One request log line, of the asking tenant, with its servable ids and no document text."""
    lines = [r for r in ctx["log"].lines if r.get("request_id") == state["request_id"]]
    assert len(lines) == 1, f"{len(lines)} log lines for request {state['request_id']}"
    _check_record(world, tenant, lines[0], "log line")


def check_store(world: World, tenant: str, case: Case, state: dict, ctx: dict) -> None:
    """The request record (what /ops/rag_debug returns) and memory under the asking tenant only."""
    store, rid = ctx["store"], state["request_id"]
    item = store.get(namespace(REQUESTS, tenant), rid)
    assert item is not None, f"no request record for {tenant!r}"
    _check_record(world, tenant, item.value, "request record")
    lines = [r for r in ctx["log"].lines if r.get("request_id") == rid]
    assert [json.loads(dump(item.value))] == lines, "the stored request record is not the logged one"
    memory = store.get(namespace("memory", tenant), rid)
    assert (memory is not None) == bool((state.get("memory") or {}).get("saved")), state.get("memory")
    if memory is not None:
        assert set(memory.value["citations_used"]) <= world.servable(tenant)
        assert not leaked(dump(memory.value), world.forbidden_markers(tenant))
    for other in ctx["strangers"](tenant):
        for kind in MEMORY_KINDS:
            assert store.get(namespace(kind, other), rid) is None, f"request of {tenant!r} stored under {other!r}/{kind}"


def check_feedback(world: World, tenant: str, case: Case, state: dict, ctx: dict) -> None:
    """Another tenant's feedback on this request is refused as an unknown request; the tenant's own
    is stored (so the refusals are not for another reason)."""
    store, rid = ctx["store"], state["request_id"]
    for other in ctx["strangers"](tenant):
        with pytest.raises(UnknownRequestError):
            record_feedback(store, other, rid, "down", "not mine")
    assert record_feedback(store, tenant, rid, "up")["request_id"] == rid
    for other in ctx["strangers"](tenant):
        assert store.get(namespace(FEEDBACK, other), rid) is None


CASE_CHECKS = [check_state, check_text, check_output, check_log, check_store, check_feedback]


def check_whole_store(world: World, ctx: dict) -> None:
    """After the example: every item under ("ragate", kind, T) is a request T made, and refers only to
    T's servable documents."""
    items = ctx["store"].search(("ragate",), limit=100_000)
    for item in items:
        assert len(item.namespace) == 3 and item.namespace[1] in MEMORY_KINDS, item.namespace
        owner = label_text(item.namespace[2])  # the tenant id (a period is encoded in the label)
        assert item.key in ctx["rids"].get(owner, set()), f"{item.key} under {owner!r} was not asked by {owner!r}"
        assert not leaked(dump(item.value), world.forbidden_markers(owner)), (owner, item.namespace)
        assert set(item.value.get("citations_used") or []) <= world.servable(owner)
    assert len(items) >= sum(len(r) for r in ctx["rids"].values())  # at least one request record each


# --- the properties -----------------------------------------------------------------------------


def report(capsys, name: str, stats: Counter) -> None:
    with capsys.disabled():
        print(f"\n[isolation] {name}: " + ", ".join(f"{k} {v}" for k, v in sorted(stats.items())))


def check_graph_property(lab: Lab, request_log: RequestLog, capsys, engine: str, examples: int) -> None:
    """`examples` generated scenarios on `engine`: ingest, then every case through the real graph and
    every check; the stats printed and required to show the cases exercised what they claim to."""
    stats: Counter = Counter()

    @settings(max_examples=examples, **SETTINGS)
    @given(scenarios())
    def prop(scenario):
        world, cases = scenario
        ex = lab.ingest(world, engine)
        check_ingest(world, ex)
        store = open_store(ex.home, None)
        rag = Ragate(ex.context(world.tenants[0]), store=store, checkpointer=open_checkpointer(ex.home, None))
        near = {t.swapcase() for t in world.askers} | {t + "-" for t in world.askers} | {t[:-1] for t in world.askers}
        everyone = {t for t in (*world.askers, *near) if t}
        ctx = {"points": ex.points, "store": store, "log": request_log,
               "threads": defaultdict(list), "rids": defaultdict(set),
               "strangers": lambda tenant: sorted(everyone - {tenant})}
        stats["examples"] += 1
        stats["documents"] += len(world.docs)
        stats["gated documents"] += sum(not d.servable for d in world.docs)
        stats["brand claims"] += sum(d.claim is not None for d in world.docs)
        stats["engine searches"] += len(world.docs) * len(world.askers) * (2 if engine == "qdrant" else 1)
        for case in cases:
            tenant = world.askers[case.asker]
            state = rag.invoke(case.question, intent=case.intent, entity=case.entity, thread_id=case.thread,
                               context=ex.context(tenant))
            for check in CASE_CHECKS:
                check(world, tenant, case, state, ctx)
            ctx["rids"][tenant].add(state["request_id"])
            if case.thread:
                ctx["threads"][(tenant, case.thread)].append(state["request_id"])
            stats["graph runs"] += 1
            stats["decomposed"] += bool((state.get("decomposition") or {}).get("decomposed"))
            stats["3+ retrieve branches"] += len(state.get("hits") or {}) >= 3
            stats["scoped searches"] += bool(state.get("scoped_queries"))
            stats["with sources"] += bool(state.get("reranked"))
            stats["in a thread"] += bool(case.thread)
        check_whole_store(world, ctx)
        ex.close()

    prop()
    report(capsys, f"graph ({engine})", stats)
    # The generated cases must exercise what they claim to: fan-out, scoped searches, answers, threads.
    assert stats["examples"] == examples
    for key in ("decomposed", "3+ retrieve branches", "scoped searches", "in a thread"):
        assert stats[key] >= 0.05 * stats["graph runs"], (key, stats)
    assert stats["with sources"] >= 0.2 * stats["graph runs"], stats


def test_no_request_ever_sees_what_its_tenant_may_not_read(lab, request_log, capsys):
    check_graph_property(lab, request_log, capsys, "embedded", GRAPH_EXAMPLES)


@pytest.fixture(scope="module")
def qdrant_server():
    """A Qdrant-REST server on 127.0.0.1 (tests/qdrant_server.py): ragate reaches it with the real
    `qdrant_client` and `langchain_qdrant`, as it reaches a production server."""
    from qdrant_server import QdrantTestServer

    with QdrantTestServer() as srv, pytest.MonkeyPatch.context() as mp:
        mp.setenv("QDRANT_URL", srv.url)
        yield srv


def test_the_qdrant_server_path_keeps_the_same_promises(lab, request_log, capsys, qdrant_server):
    """The same generated worlds and checks with `vector_store="qdrant"`: the gates travel in every
    request's filter and the server evaluates them; the LangChain retriever over the same collection
    (`governed_retriever`, asked with `filter=None`) is checked in `check_searches` too."""
    check_graph_property(lab, request_log, capsys, "qdrant", SERVER_EXAMPLES)
    assert qdrant_server.errors == []


def test_a_claimed_brand_id_never_moves_a_document(lab, capsys):
    """Every document claims another tenant (or an outsider): each is stored under the tenant that
    ingested it, and no search as any other tenant, the claimed one included, returns it."""
    stats: Counter = Counter()

    @settings(max_examples=INGEST_EXAMPLES, **SETTINGS)
    @given(worlds(claim="always"))
    def prop(world):
        ex = lab.ingest(world)
        check_ingest(world, ex)
        ex.close()
        stats["examples"] += 1
        stats["documents"] += len(world.docs)
        stats["searches"] += len(world.docs) * len(world.askers)

    prop()
    report(capsys, "ingest", stats)
    assert stats["examples"] == INGEST_EXAMPLES


def test_a_tenant_id_with_a_period_keeps_its_records(lab, tmp_path):
    world = World(("acme.br", "acme"), "globex", tuple(
        Doc(id=f"DOC{i:02d}00Z", tenant=t, marker=f"zq{letters(i)}aax", approval=True, status="ready", claim=None,
            claim_top_level=False, source="Valor", sentences=("Vendas de inverno cresceram 12% em 2025.",),
            doc_type="bi_note", category="sales", date="2025-06-01") for i, t in enumerate(("acme.br", "acme"))))
    ex = lab.ingest(world)
    store = open_store(ex.home, None)
    rag = Ragate(ex.context("acme.br"), store=store, checkpointer=open_checkpointer(ex.home, None))
    state = rag.invoke("Quanto cresceram as vendas de inverno?", context=ex.context("acme.br"))
    assert store.get(namespace(REQUESTS, "acme.br"), state["request_id"]) is not None
    record_feedback(store, "acme.br", state["request_id"], "up")


# --- over HTTP: `ragate serve` with the bundled samples ----------------------------------------------


def _sample_world():
    from conftest import TENANTS, is_servable, sample_documents

    docs = {t: sample_documents(t) for t in TENANTS}
    servable = {t: {i for i, d in docs[t].items() if is_servable(d)} for t in TENANTS}
    # Words of every sample document, gated ones and the other tenant's included: questions aim at them.
    words = sorted({w.strip(".,;:()\"'") for t in TENANTS for d in docs[t].values()
                    for w in d["content"].split() if len(w.strip(".,;:()\"'")) > 3})
    return docs, servable, words


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in re.split(r"(?<=[.!?])\s+", text) if len(s.strip()) >= 40]


def test_served_answers_only_the_keys_tenants_servable_documents(served, capsys):
    import httpx
    from conftest import SERVER_KEYS, TENANTS

    docs, servable, words = _sample_world()
    # Sentences of documents a tenant may not read (another tenant's, its own gated ones) that none of
    # its servable documents holds: an extractive answer holding one has leaked it.
    forbidden = {t: {s for u in TENANTS for i, d in docs[u].items() if not (u == t and i in servable[t])
                     for s in _sentences(d["content"])
                     if not any(s in docs[t][j]["content"] for j in servable[t])} for t in TENANTS}
    all_ids = {i for t in TENANTS for i in docs[t]}
    keys = sorted(SERVER_KEYS)
    stats: Counter = Counter()
    asked: list[tuple[str, str]] = []

    def call(method: str, path: str, key: str, **kw) -> httpx.Response:
        return httpx.request(method, f"{served.url}{path}", headers=served.auth(key), timeout=60, **kw)

    @settings(max_examples=HTTP_EXAMPLES, **SETTINGS)
    @given(key=st.sampled_from(keys),
           clauses=st.lists(st.tuples(st.sampled_from(QUESTION_WORDS),
                                      st.lists(st.sampled_from(words + NUMBERS), min_size=2, max_size=8)),
                            min_size=1, max_size=3),
           joiner=st.sampled_from(JOINERS), ending=st.sampled_from(ENDINGS),
           intent=st.one_of(st.none(), st.sampled_from(INTENTS)), entity=st.one_of(st.none(), st.sampled_from(ENTITIES)),
           thread=st.sampled_from([None, "t1", "t2"]))
    def prop(key, clauses, joiner, ending, intent, entity, thread):
        tenant = SERVER_KEYS[key]
        other = next(k for k in keys if SERVER_KEYS[k] != tenant)
        question = joiner.join(" ".join([qw, *c] if qw else c) for qw, c in clauses) + ending
        body = {"question": question, **{k: v for k, v in (("intent", intent), ("entity", entity),
                                                          ("thread_id", thread)) if v}}
        r = call("POST", "/api/chat", key, json=body)
        assert r.status_code == 200, r.text
        out = r.json()
        rid = out["request_id"]
        asked.append((rid, tenant))
        assert {s["docId"] for s in out["sources"]} <= servable[tenant], [s["docId"] for s in out["sources"]]
        assert set(out["citations_used"]) <= servable[tenant], out["citations_used"]
        text = dump(out)
        assert not [i for i in all_ids - servable[tenant] if i in text], "another document's id in the output"
        assert not [s for s in forbidden[tenant] if s in out["answer"]], out["answer"]
        debug = call("GET", f"/ops/rag_debug/{rid}", key)
        assert debug.status_code == 200, debug.text
        record = debug.json()
        assert record["tenant"] == tenant and record["request_id"] == rid
        assert {c["docId"] for c in record["retrieved"]} <= servable[tenant]
        assert set(record["citations_used"]) <= servable[tenant]
        assert record["citations_used"] == out["citations_used"]
        assert call("GET", f"/ops/rag_debug/{rid}", other).status_code == 404
        assert call("POST", "/api/feedback", other, json={"request_id": rid, "rating": "down"}).status_code == 404
        assert call("POST", "/api/feedback", key, json={"request_id": rid, "rating": "up"}).status_code == 200
        stats["requests"] += 1
        stats["with sources"] += bool(out["sources"])
        stats["decomposed"] += bool(out["decomposition"].get("decomposed"))

    prop()
    # The server's request log (stderr, in its log file, inside the LangGraph server's own log format):
    # one line per request, of the key's tenant.
    decoder, lines = json.JSONDecoder(), []
    for ln in served.log_text().splitlines():
        if "ragate.requests" in ln and '{"ts": ' in ln:
            lines.append(decoder.raw_decode(ln, ln.index('{"ts": '))[0])
    for rid, tenant in asked:
        mine = [ln for ln in lines if ln.get("request_id") == rid]
        assert len(mine) == 1 and mine[0]["tenant"] == tenant, (rid, mine)
        assert {c["docId"] for c in mine[0]["retrieved"]} <= servable[tenant]
    report(capsys, "http", stats)
    assert stats["requests"] == HTTP_EXAMPLES and stats["with sources"] >= HTTP_EXAMPLES // 3, stats
