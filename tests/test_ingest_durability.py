"""kill -9 during ingest: on restart every acknowledged document is there whole, the collection opens
and answers, and re-running the same ingest finishes the rest and is then idempotent.

A child process (`python -c`) runs graph.indexing.ingest.ingest_path on a corpus of ~450 documents (1 to 5
chunks each, ~1,100 chunks, about ten write batches) and prints one line per batch from
`on_written`, which ingest calls only once the batch's documents are written and flushed: that line is
the acknowledgement. The child is killed with SIGKILL at several points, one run after another on the
same data folder:

* "create": right after the engine created the collection's shard, before ragate wrote the manifest
  that marks it finished (the first ingest into a new collection spends ~2 s there). The next run
  must start the collection again; it used to fail for good ("path already contains segment data").
* "timer": at a seeded random moment after the first acknowledgement, wherever the child is.
* "acks": as soon as the child acknowledged its second batch.
* "update": inside a batch, right after the engine deleted a document's old chunks and before it
  wrote the new ones (replace_document's two operations).

After each kill a new process (this one) opens the data folder and checks that every document is
either whole (exactly the chunk hashes a clean ingest stores, one per chunk position) or absent,
never partial; that every acknowledged document is whole; that the collection answers a search for an
acknowledged document's own code. Then a run to the end writes exactly the documents that were not
whole, a third run writes nothing, the final state equals a clean ingest's, and the graph
(graph/entrypoints/api.py) answers a question from the corpus with the right source.

The same is done on the Qdrant-server path (tests/qdrant_server.py, a Qdrant REST server in this
process that outlives the killed child) with the "timer" and "acks" kills.

Vectors come from the scripted OpenAI-compatible server (tests/scripted_server.py): hashed, fast, so
a run is dominated by ingest's own work. Data folders live in /dev/shm when there is one: a SIGKILL
ends the process, not the machine, so the page cache is all that has to hold what was written, and
RAM keeps the many small SQLite commits of the embedding cache from costing seconds. The test prints
its figures (kills, documents acknowledged, whole, absent, lost).
"""

from __future__ import annotations

import dataclasses
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import threading
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from qdrant_edge import ScrollRequest
from scripted_server import Reply

from graph.context import Context
from graph.indexing.ingest import ingest_path
from graph.providers.vectorstore import TENANT_FIELD, open_index

ROOT = Path(__file__).resolve().parent.parent
EMB = "/v1/embeddings"
MODEL = "openai/text-embedding-3-small"
TENANT = "acme"
COLLECTION = "docs"
BATCH_CHUNKS = 32  # chunks a write batch gathers in the child (128 by default): a small corpus, many batches
RUN_TIMEOUT_S = 90  # one child run, on a busy 2-core machine
WORDS = ("vendas estoque inverno campanha margem loja canal cliente produto preço região norte sul frete "
         "devolução prazo").split()

CHILD = textwrap.dedent("""
    import json, os, signal, sys
    import graph.indexing.ingest
    import graph.providers.vectorstore as vs
    from graph.context import Context
    from graph.indexing.ingest import ingest_path

    path, home, tenant, collection, store, kill = sys.argv[1:7]
    graph.indexing.ingest.EMBED_BATCH_CHUNKS = int(os.environ["BATCH_CHUNKS"])  # more, smaller batches: more kill points

    def die():
        os.kill(os.getpid(), signal.SIGKILL)

    if kill == "create":  # the shard exists, its indexes and ragate's manifest do not yet
        real = vs.EdgeShard

        class EdgeShard:
            load = staticmethod(real.load)

            @staticmethod
            def create(*args, **kwargs):
                real.create(*args, **kwargs)
                die()

        vs.EdgeShard = EdgeShard
    elif kill.startswith("update:"):  # right after the n-th engine write of this run
        n, calls, real_shard = int(kill.split(":")[1]), [0], vs.EdgeVectorIndex._shard

        class Counted:
            def __init__(self, shard):
                self.shard = shard

            def update(self, operation):
                self.shard.update(operation)
                calls[0] += 1
                if calls[0] == n:
                    die()

            def __getattr__(self, name):
                return getattr(self.shard, name)

        def _shard(self, name):
            shard = real_shard(self, name)
            return None if shard is None else Counted(shard)

        vs.EdgeVectorIndex._shard = _shard

    ctx = Context(home=home, tenant=tenant, embedding_model=os.environ["MODEL"], provider_retries=0, vector_store=store)
    report = ingest_path(path, collection=collection, tenant=tenant, context=ctx,
                         on_written=lambda ids: print("ACK " + json.dumps(ids), flush=True))
    print("DONE " + json.dumps(report.as_dict()), flush=True)
""")


@dataclass
class Run:
    kill: str
    acked: list[str] = field(default_factory=list)
    report: dict | None = None
    returncode: int | None = None
    stderr: str = ""


def write_corpus(path: Path, n: int, seed: int, sizes=(25, 50, 80, 120, 160)) -> dict[str, str]:
    """`n` documents of `sizes` sentences (1 to 6 chunks); each opens with a code of its own
    ("Z0042Q") to ask for."""
    rng = random.Random(seed)
    docs = {}
    for d in range(n):
        body = " ".join(" ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 16))).capitalize() + "."
                        for _ in range(rng.choice(sizes)))
        docs[f"doc-{d:04d}"] = f"O código da loja {d:04d} é Z{d:04d}Q. {body}"
    path.write_text("".join(json.dumps({"id": k, "assetName": f"Loja {k[4:]}", "content": v,
                                        "metadata": {"status": "approved", "isApprovedForAI": True, "date": "2025-06-01"}}, ensure_ascii=False)
                            + "\n" for k, v in docs.items()), encoding="utf-8")
    return docs


def run_child(corpus: Path, home: Path, env: dict, kill: str, *, store: str = "embedded", after_acks: int = 0,
              after_s: float = 0.0) -> Run:
    """One ingest run. `after_acks`: SIGKILL once this many batches are acknowledged; `after_s`:
    SIGKILL this long after the first acknowledgement (or at `after_acks`, if that comes first, so
    that a fast machine cannot finish the run first); `kill` "create" / "update:n": the child kills
    itself there (see CHILD)."""
    run = Run(kill)
    proc = subprocess.Popen([sys.executable, "-c", CHILD, str(corpus), str(home), TENANT, COLLECTION, store, kill],
                            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    guard = threading.Timer(RUN_TIMEOUT_S, proc.kill)
    guard.start()
    timer, batches = None, 0
    try:
        for out in proc.stdout:
            if out.startswith("ACK "):
                run.acked += json.loads(out[4:])  # a line read is acknowledged, even one read after the kill
                batches += 1
                if after_acks and batches == after_acks:  # (with after_s: the kill's latest point)
                    proc.send_signal(signal.SIGKILL)
                if after_s and timer is None:
                    timer = threading.Timer(after_s, proc.send_signal, (signal.SIGKILL,))
                    timer.start()
            elif out.startswith("DONE "):
                run.report = json.loads(out[5:])
        run.returncode = proc.wait()
        run.stderr = proc.stderr.read()
    finally:
        guard.cancel()
        if timer:
            timer.cancel()
    return run


def stored_chunks(index, collection: str) -> dict[str, set[str]]:
    """{docId: its stored content hashes} of the whole collection, read in one pass (a scroll of the
    embedded shard or of the server), without the gates: drafts and partial documents count too."""
    out: dict[str, set[str]] = {}
    fields = ["docId", "content_hash", TENANT_FIELD]
    offset, records = None, []
    while True:
        if hasattr(index, "client"):  # the Qdrant server
            page, offset = index.client.scroll(collection, limit=2048, offset=offset, with_payload=fields,
                                               with_vectors=False)
        else:
            shard = index._shard(collection)
            if shard is None:
                return out
            page, offset = shard.scroll(ScrollRequest(offset=offset, limit=2048, with_payload=fields))
        records += page
        if offset is None:
            break
    for r in records:
        assert r.payload[TENANT_FIELD] == TENANT
        out.setdefault(r.payload["docId"], set()).add(r.payload["content_hash"])
    return out


def stored_state(index, collection: str, reference: dict[str, set[str]]) -> dict[str, str]:
    """Each document's state: "whole" (the reference's hashes exactly), "absent", or "partial"."""
    stored = stored_chunks(index, collection)
    assert set(stored) <= set(reference)
    return {d: "whole" if stored.get(d) == expected else "partial" if d in stored else "absent"
            for d, expected in reference.items()}


def check_after_kill(index, collection: str, reference: dict[str, set[str]], acked: set[str], run: Run) -> dict:
    """The invariants after a kill; returns the figures."""
    assert run.returncode == -signal.SIGKILL, (run.kill, run.returncode, run.stderr[-2000:])
    state = stored_state(index, collection, reference)
    partial = [d for d, s in state.items() if s == "partial"]
    whole = {d for d, s in state.items() if s == "whole"}
    assert partial == [], f"kill at {run.kill}: partly written documents {partial[:5]}"
    assert acked <= whole, f"kill at {run.kill}: acknowledged but not whole: {sorted(acked - whole)[:5]}"
    assert index.count(collection) == sum(len(reference[d]) for d in whole)  # nothing stray beside them
    return {"kill": run.kill, "acked_this_run": len(run.acked), "acked_total": len(acked), "whole": len(whole),
            "absent": len(state) - len(whole), "lost": len(acked - whole)}


def answers_for_code(ctx: Context, collection: str, doc_id: str) -> bool:
    """The collection answers a gated search for a document's own code with that document first."""
    from graph.algorithms.text import get_analyzer
    from graph.policy import load_policy
    from graph.providers.resources import get_resources

    res = get_resources(ctx)
    code = f"Z{doc_id[4:]}Q"
    sparse = get_analyzer(load_policy()).query_vector(f"código {code}", "pt")
    _, lexical = res.index.search(collection, dense=None, sparse=sparse, tenant=TENANT, filters=None, limit=3)
    top = res.index.fetch(collection, TENANT, [lexical[0].point_id]) if lexical else {}
    return [p["docId"] for p in top.values()] == [doc_id]


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    shm = Path("/dev/shm")
    in_ram = shm.is_dir() and os.access(shm, os.W_OK)
    root = Path(tempfile.mkdtemp(prefix="ragate-ingest-kill-", dir=shm)) if in_ram else tmp_path_factory.mktemp("kill")
    yield root
    for home in root.iterdir():  # this process's engine lets go before the folders go
        if (home / "collections").is_dir():
            open_index(home).close()
    if in_ram:
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def embedder(scripted_server, monkeypatch):
    server = scripted_server.reset()
    server.default(EMB, lambda body: Reply.embeddings(dims=64))
    monkeypatch.setenv("OPENAI_BASE_URL", server.openai_base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    return {**os.environ, "MODEL": MODEL, "BATCH_CHUNKS": str(BATCH_CHUNKS), "OPENAI_BASE_URL": server.openai_base_url, "OPENAI_API_KEY": "k",
            "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost"}


def test_killed_embedded_ingest_loses_no_acknowledged_document(lab, embedder, capsys):
    corpus = lab / "corpus.jsonl"
    docs = write_corpus(corpus, n=160, seed=5)
    ref_ctx = Context(home=str(lab / "clean"), tenant=TENANT, embedding_model=MODEL)
    assert ingest_path(corpus, collection=COLLECTION, tenant=TENANT, context=ref_ctx).documents_written == len(docs)
    ref_index = open_index(ref_ctx.home_path)
    reference = stored_chunks(ref_index, COLLECTION)
    ref_index.close()
    assert len(reference) == len(docs) and sum(map(len, reference.values())) > 12 * BATCH_CHUNKS

    home = lab / "killed"
    ctx = Context(home=str(home), tenant=TENANT, embedding_model=MODEL)
    index = open_index(home)
    acked: set[str] = set()
    figures = []
    rng = random.Random(29)
    plan = [dict(kill="create"), dict(kill="timer", after_s=rng.uniform(0.1, 0.6), after_acks=5), dict(kill="acks", after_acks=2),
            dict(kill="update:41")]  # 41: after the delete of this run's 21st document, before its upsert
    for step in plan:
        run = run_child(corpus, home, embedder, **step)
        acked |= set(run.acked)
        try:
            figures.append(check_after_kill(index, COLLECTION, reference, acked, run))
            if step["kill"] == "create":
                assert not (home / "collections" / COLLECTION / "ragate.json").exists()  # cut off where meant
            elif acked:
                assert answers_for_code(ctx, COLLECTION, sorted(acked)[len(acked) // 2])
        finally:
            index.close()  # let the next child open the folder
    whole_before = figures[-1]["whole"]
    assert 0 < whole_before < len(docs), figures  # the kills left work for the next run

    finish = run_child(corpus, home, embedder, "none")
    assert finish.returncode == 0, finish.stderr[-2000:]
    assert (finish.report["documents_unchanged"], finish.report["documents_written"]) == (whole_before,
                                                                                          len(docs) - whole_before)
    again = run_child(corpus, home, embedder, "none")
    assert (again.report["documents_unchanged"], again.report["documents_written"]) == (len(docs), 0)
    try:
        assert set(stored_state(index, COLLECTION, reference).values()) == {"whole"}
        assert index.count(COLLECTION) == sum(map(len, reference.values()))
        from graph.entrypoints.api import Ragate

        out = Ragate(dataclasses.replace(ctx, collections=[COLLECTION])).ask("Qual é o código da loja 0123?")
        assert "doc-0123" in [s["docId"] for s in out["sources"]], out["sources"]
    finally:
        index.close()
    with capsys.disabled():
        print(f"\n[ingest kill -9, embedded] {len(docs)} documents, {sum(map(len, reference.values()))} chunks; "
              f"after each kill: {figures}; final run wrote {finish.report['documents_written']}, "
              f"re-run wrote {again.report['documents_written']}")


def test_killed_ingest_on_a_qdrant_server_loses_no_acknowledged_document(lab, embedder, capsys):
    from qdrant_server import QdrantTestServer

    corpus = lab / "server-corpus.jsonl"
    docs = write_corpus(corpus, n=40, seed=8)
    with QdrantTestServer() as qdrant:
        env = {**embedder, "QDRANT_URL": qdrant.url, "BATCH_CHUNKS": "16"}  # each request costs more here: fewer docs
        home = lab / "server-home"  # the embedding cache; the points live on the server
        with pytest.MonkeyPatch.context() as mp:
            mp.setenv("QDRANT_URL", qdrant.url)
            ctx = Context(home=str(home), tenant=TENANT, embedding_model=MODEL, vector_store="qdrant")
            assert ingest_path(corpus, collection="clean", tenant=TENANT, context=ctx).documents_written == len(docs)
            from graph.providers.resources import get_resources

            index = get_resources(ctx).index
            reference = stored_chunks(index, "clean")
            acked: set[str] = set()
            figures = []
            for step in (dict(kill="timer", after_s=random.Random(31).uniform(0.1, 0.5), after_acks=4), dict(kill="acks", after_acks=2)):
                run = run_child(corpus, home, env, store="qdrant", **step)
                acked |= set(run.acked)
                figures.append(check_after_kill(index, COLLECTION, reference, acked, run))
                assert answers_for_code(ctx, COLLECTION, min(acked))
            whole_before = figures[-1]["whole"]
            assert 0 < whole_before < len(docs), figures
            finish = run_child(corpus, home, env, "none", store="qdrant")
            assert finish.returncode == 0, finish.stderr[-2000:]
            assert finish.report["documents_written"] == len(docs) - whole_before
            again = run_child(corpus, home, env, "none", store="qdrant")
            assert (again.report["documents_unchanged"], again.report["documents_written"]) == (len(docs), 0)
            assert set(stored_state(index, COLLECTION, reference).values()) == {"whole"}
            assert index.count(COLLECTION) == index.count("clean")
            assert qdrant.errors == []
    with capsys.disabled():
        print(f"\n[ingest kill -9, qdrant server] {len(docs)} documents, {sum(map(len, reference.values()))} chunks; "
              f"after each kill: {figures}; final run wrote {finish.report['documents_written']}, "
              f"re-run wrote {again.report['documents_written']}")
