"""kill -9 during memory and feedback writes: on restart every acknowledged write is there.

tests/test_persistence.py shows that one `store.put` survives SIGKILL. These tests do it end to
end, the way ragate is used:

* Python API (graph/entrypoints/api.py), on the embedded SQLite store and on a real PostgreSQL
  (tests/pg_server.py; skipped without its binaries). A child process (`python -c`) answers
  questions in a loop with `Ragate.ask` and prints each finished request id (its acknowledgement:
  `ask` has returned, so memory_shield has written the memory entry and the request record). A
  second child rates those requests in a loop with graph/governance/feedback.py's `record_feedback` (what
  `Ragate.feedback` calls) and prints each rating it got back. Both are killed with SIGKILL at
  seeded random moments, three times over the same data, and both write to the same store at once
  (two processes, one SQLite file). Then a new process checks that every acknowledged request has
  its request record and, unless the judge said BLOCK, its memory entry (a BLOCK answer never has
  one, acknowledged or cut off); that every acknowledged rating is there, attached to its request
  (or a later rating of the same request the child wrote before it died); that the SQLite files
  pass `PRAGMA integrity_check`; and that the graph still answers and remembers.
* HTTP: `ragate serve` (tests/ragate_server.py) is killed with SIGKILL while /api/chat and
  /api/feedback requests are in flight; after a restart on the same data folder every request
  answered 200 has its record (/ops/rag_debug) and every rating answered 200 is stored.

The questions include a tenant id with a period (`acme.br`, valid for graph/governance/tenancy.py's
TENANT_RE): such a tenant used to lose every memory entry, request record and rating silently,
because a period is not allowed in a LangGraph store namespace label (graph/providers/persistence.py,
"Namespace labels").

Each run prints its figures (requests and ratings acknowledged vs found, kills that landed while a
write was in flight). The PostgreSQL test server runs with fsync off: what is killed here is
ragate's process, not the database server.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml
from conftest import SAMPLES, TENANTS, default_policy_raw

from graph.governance.audit import FEEDBACK, REQUESTS, namespace
from graph.providers.persistence import close_all, open_store

ROOT = Path(__file__).resolve().parent.parent
SEEDS = (11, 23, 37)
RATINGS = ("up", "down", "1", "2", "3", "4", "5")  # the feedback child's rating for its n-th write: RATINGS[n % 7]
START_TIMEOUT_S = 90  # a child's first acknowledgement (imports, model load) on a busy 2-core machine

# (tenant, strict policy?, question). The strict policy's judge blocks nearly everything, so the
# loop has BLOCK answers (never remembered) beside OK and WARNING ones (remembered).
PLAN = [
    ("acme", False, "Quanto cresceram as vendas de inverno em 2025?"),
    ("globex", False, "How much did sales grow in Q1 2026?"),
    ("acme.br", False, "Qual é o prazo médio de entrega no Nordeste?"),
    ("acme", True, "What were the ROAS and CPC of the Google Performance Max campaign?"),
    ("acme", False, "What is Acme's online return rate and the main reason for returns?"),
]

ASK_CHILD = textwrap.dedent("""
    import dataclasses, json, sys
    from graph.entrypoints.api import Ragate
    from graph.context import Context

    home, url, strict, prefix = sys.argv[1:5]
    plan = json.loads(sys.argv[5])
    base = Context(home=home, tenant="acme", memory_url=url or None)
    rag = Ragate(base)
    n = 0
    while True:
        tenant, is_strict, question = plan[n % len(plan)]
        ctx = dataclasses.replace(base, tenant=tenant, **({"policy_path": strict} if is_strict else {}))
        cid = f"{prefix}-{n}"  # the request id is ragate's: a request cut off by the kill is found by this one
        print(json.dumps({"event": "begin", "cid": cid, "tenant": tenant}), flush=True)
        out = rag.ask(question, correlation_id=cid, context=ctx)
        print(json.dumps({"event": "ack", "rid": out["request_id"], "cid": cid, "tenant": tenant,
                          "decision": out["verdict"]["final_decision"], "saved": out["memory"].get("saved"),
                          "errors": out["errors"]}), flush=True)
        n += 1
""")

FEEDBACK_CHILD = textwrap.dedent("""
    import json, queue, sys, threading
    from graph.governance.feedback import record_feedback
    from graph.providers.persistence import open_store

    home, url = sys.argv[1:3]
    ratings = json.loads(sys.argv[3])
    store = open_store(home, url or None)  # what Ragate.feedback writes to, without the graph's imports
    incoming = queue.Queue()  # (tenant, request id) acknowledged by the ask child, fed by the test

    def read():
        for line in sys.stdin:
            incoming.put(json.loads(line))

    threading.Thread(target=read, daemon=True).start()
    known, n = [], 0
    while True:
        while not known or not incoming.empty():  # wait for the first id, then take what has come
            known.append(tuple(incoming.get()))
        tenant, rid = known[n % len(known)]  # round robin: ids are rated again and again
        print(json.dumps({"event": "begin", "rid": rid, "seq": n}), flush=True)
        stored = record_feedback(store, tenant, rid, ratings[n % len(ratings)], comment=f"seq {n}")
        print(json.dumps({"event": "ack", "rid": rid, "tenant": tenant, "seq": n,
                          "rating": stored["rating"]}), flush=True)
        n += 1
""")

VERIFY_CHILD = textwrap.dedent("""
    import json, sqlite3, sys
    from pathlib import Path
    from graph.entrypoints.api import Ragate
    from graph.governance.audit import FEEDBACK, REQUESTS, namespace
    from graph.context import Context

    home, url, wanted_file, question = sys.argv[1:5]
    integrity = {}
    if not url:
        # The files as the kills left them (opening replays the write-ahead log), before ragate opens them.
        for name in ("memory.sqlite", "checkpoints.sqlite"):
            conn = sqlite3.connect(Path(home) / name)
            integrity[name] = [row[0] for row in conn.execute("PRAGMA integrity_check")]
            conn.close()
    rag = Ragate(Context(home=home, tenant="acme", memory_url=url or None))

    def get(kind, tenant, rid):
        item = rag.store.get(namespace(kind, tenant), rid)
        return item.value if item is not None else None

    def by_correlation(tenant, cid):
        items = rag.store.search(namespace(REQUESTS, tenant), filter={"correlation_id": cid}, limit=2)
        assert len(items) <= 1, (cid, items)
        return items[0].key if items else None

    wanted = json.loads(Path(wanted_file).read_text())
    found = {rid: {kind: get(kind, tenant, rid) for kind in (REQUESTS, "memory", FEEDBACK)}
             for tenant, rid in wanted["acknowledged"]}
    cut_off = {}
    for tenant, cid in wanted["cut_off"]:
        rid = by_correlation(tenant, cid)
        cut_off[cid] = {kind: get(kind, tenant, rid) if rid else None for kind in (REQUESTS, "memory")}
    out = rag.ask(question, correlation_id="after-the-kills")
    after = {"decision": out["verdict"]["final_decision"], "saved": out["memory"].get("saved"),
             "sources": len(out["sources"]), "errors": out["errors"],
             "record": get(REQUESTS, "acme", out["request_id"]) is not None}
    print(json.dumps({"integrity": integrity, "found": found, "cut_off": cut_off, "after": after}))
""")


# --- fixtures -------------------------------------------------------------------------------------


@pytest.fixture(autouse=True)
def _close_after():
    yield
    close_all()


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> SimpleNamespace:
    """The bundled samples ingested into a data folder of this module (children open its embedded
    engine, which allows one process at a time: this process closes it again), and the strict policy."""
    from graph.context import Context
    from graph.indexing.ingest import ingest_path
    from graph.providers.vectorstore import open_index

    home = tmp_path_factory.mktemp("durable-home")
    ctx = Context(home=str(home), tenant=None)
    for tenant in TENANTS:
        ingest_path(SAMPLES / tenant, collection="documents", tenant=tenant, context=ctx)
    open_index(ctx.home_path).close()
    raw = default_policy_raw()
    raw["judge"]["thresholds"] = {"ok": 1.0, "block": 0.999}
    strict = home / "strict-policy.yaml"
    strict.write_text(yaml.safe_dump(raw, allow_unicode=True, sort_keys=False), encoding="utf-8")
    return SimpleNamespace(home=home, strict=strict)


@pytest.fixture(params=["sqlite", "postgres"])
def backend(request, data):
    url = request.getfixturevalue("pg_url") if request.param == "postgres" else None
    # Set the store up once before two processes race to create its tables.
    open_store(data.home, url)
    close_all()
    return SimpleNamespace(name=request.param, url=url)


# --- the kill rounds ------------------------------------------------------------------------------


@dataclass(eq=False)
class Child:
    """A child process whose stdout lines are JSON events, read by a thread as they come."""

    proc: subprocess.Popen
    log: Path
    events: list[dict] = field(default_factory=list)
    acks: int = 0
    on_ack: object = None

    def pump(self) -> None:
        for line in self.proc.stdout:
            if not line.endswith("\n"):  # cut off by the kill: never an acknowledgement
                break
            event = json.loads(line)
            self.events.append(event)
            if event["event"] == "ack":
                self.acks += 1
                if self.on_ack is not None:
                    self.on_ack(event)

    def in_flight(self) -> bool:
        """The last thing it said was 'begin': the kill landed inside a request."""
        return bool(self.events) and self.events[-1]["event"] == "begin"


def spawn(code: str, args: list[str], log: Path, stdin=subprocess.DEVNULL) -> Child:
    proc = subprocess.Popen([sys.executable, "-c", code, *args], cwd=ROOT, stdin=stdin, stdout=subprocess.PIPE,
                            stderr=open(log, "wb"), text=True, encoding="utf-8")
    return Child(proc, log)


def tail(path: Path) -> str:
    return "\n".join(path.read_text(errors="replace").splitlines()[-30:])


def kill_round(data, backend, seed: int, tmp_path: Path) -> tuple[Child, Child]:
    """One round: the ask child and the feedback child run against the store until each is killed
    (SIGKILL) at a moment drawn from `seed`."""
    rng = random.Random(seed)
    ask = spawn(ASK_CHILD, [str(data.home), backend.url or "", str(data.strict), f"{backend.name}-s{seed}",
                            json.dumps(PLAN)], tmp_path / f"ask-{seed}.log")
    rate = spawn(FEEDBACK_CHILD, [str(data.home), backend.url or "", json.dumps(RATINGS)], tmp_path / f"rate-{seed}.log",
                 stdin=subprocess.PIPE)
    feed_lock = threading.Lock()

    def forward(event: dict) -> None:  # an acknowledged request becomes one to rate
        with feed_lock:
            try:
                rate.proc.stdin.write(json.dumps([event["tenant"], event["rid"]]) + "\n")
                rate.proc.stdin.flush()
            except (BrokenPipeError, ValueError, OSError):
                pass  # the feedback child is already dead

    ask.on_ack = forward
    pumps = [threading.Thread(target=c.pump, daemon=True) for c in (ask, rate)]
    for p in pumps:
        p.start()
    # Kill points: after the n-th acknowledgement (enough for every kind of request in PLAN and a
    # few rounds of ratings) plus a random delay, so the kill lands anywhere in the next write.
    plan = {ask: (rng.randint(len(PLAN), 2 * len(PLAN)), rng.uniform(0, 0.3)),
            rate: (rng.randint(20, 400), rng.uniform(0, 0.05))}
    kill_at: dict[Child, float] = {}
    deadline = time.monotonic() + START_TIMEOUT_S
    try:
        while len(kill_at) < 2 or any(c.proc.poll() is None for c in kill_at):
            now = time.monotonic()
            for child, (acks, delay) in plan.items():
                if child not in kill_at and child.acks >= acks:
                    kill_at[child] = now + delay
                if child in kill_at and now >= kill_at[child] and child.proc.poll() is None:
                    os.kill(child.proc.pid, signal.SIGKILL)
                assert child in kill_at or child.proc.poll() is None, f"a child died before its kill:\n{tail(child.log)}"
            assert now < deadline, f"acknowledged {ask.acks} requests and {rate.acks} ratings in {START_TIMEOUT_S} s:\n" \
                                   f"{tail(ask.log)}\n{tail(rate.log)}"
            time.sleep(0.002)
    finally:
        for child in (ask, rate):
            if child.proc.poll() is None:
                child.proc.kill()
            child.proc.wait(30)
        for p in pumps:
            p.join(30)
        try:
            rate.proc.stdin.close()
        except OSError:
            pass
    assert ask.proc.returncode == -signal.SIGKILL and rate.proc.returncode == -signal.SIGKILL, \
        (ask.proc.returncode, rate.proc.returncode, tail(ask.log), tail(rate.log))
    return ask, rate


def test_killed_api_processes_lose_no_acknowledged_write(data, backend, tmp_path, capsys):
    started = time.monotonic()
    requests: dict[str, dict] = {}      # acknowledged: rid -> ack event
    cut_off: dict[str, str] = {}        # begun, never acknowledged: correlation id -> tenant
    rated: dict[str, int] = {}          # rid -> last acknowledged feedback seq
    stats: Counter = Counter()
    for seed in SEEDS:
        ask, rate = kill_round(data, backend, seed, tmp_path)
        begun = {e["cid"]: e["tenant"] for e in ask.events if e["event"] == "begin"}
        acks = [e for e in ask.events if e["event"] == "ack"]
        requests.update({e["rid"]: e for e in acks})
        acknowledged = {e["cid"] for e in acks}
        cut_off.update({cid: t for cid, t in begun.items() if cid not in acknowledged})
        for e in rate.events:
            if e["event"] == "ack":
                rated[e["rid"]] = max(rated.get(e["rid"], -1), e["seq"])
                stats["rating writes acknowledged"] += 1
        stats["kills inside a request"] += ask.in_flight()
        stats["kills inside a rating"] += rate.in_flight()

    # Every acknowledged answer said it was remembered (BLOCK: never) without a store error.
    for rid, ack in requests.items():
        assert ack["errors"] == [], (rid, ack["errors"])
        assert ack["saved"] is (ack["decision"] != "BLOCK"), ack
    decisions = Counter(a["decision"] for a in requests.values())
    assert decisions["BLOCK"] and decisions["OK"] + decisions["WARNING"], decisions  # both kinds were written
    assert {a["tenant"] for a in requests.values()} == {t for t, _, _ in PLAN}
    assert rated, "nothing was rated"

    wanted = tmp_path / "wanted.json"
    wanted.write_text(json.dumps({"acknowledged": [[a["tenant"], rid] for rid, a in requests.items()],
                                  "cut_off": [[t, cid] for cid, t in cut_off.items()]}))
    proc = subprocess.run([sys.executable, "-c", VERIFY_CHILD, str(data.home), backend.url or "", str(wanted), PLAN[0][2]],
                          cwd=ROOT, capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    seen = json.loads(proc.stdout.strip().splitlines()[-1])
    found = seen["found"]

    assert all(result == ["ok"] for result in seen["integrity"].values()), seen["integrity"]
    if backend.name == "sqlite":
        assert set(seen["integrity"]) == {"memory.sqlite", "checkpoints.sqlite"}
    for rid, ack in requests.items():
        record, memory = found[rid][REQUESTS], found[rid]["memory"]
        assert record is not None, f"acknowledged request {rid} ({ack['tenant']}) has no request record"
        assert (record["request_id"], record["tenant"], record["final_decision"]) == (rid, ack["tenant"], ack["decision"])
        if ack["decision"] == "BLOCK":
            assert memory is None, f"BLOCK answer {rid} was remembered"
        else:
            assert memory is not None, f"acknowledged {ack['decision']} answer {rid} ({ack['tenant']}) is not in memory"
            assert memory["request_id"] == rid and memory["final_decision"] == ack["decision"]
            assert memory["tags"] == (["warning"] if ack["decision"] == "WARNING" else [])
        stats["requests found"] += 1
        stats["memory entries found"] += memory is not None
    for cid in cut_off:  # cut off by a kill: may or may not be there, but a BLOCK one is never remembered
        record = seen["cut_off"][cid][REQUESTS]
        assert record is None or record["final_decision"] != "BLOCK" or seen["cut_off"][cid]["memory"] is None, cid
    for rid, seq in rated.items():
        feedback = found[rid][FEEDBACK]
        assert feedback is not None, f"acknowledged feedback on {rid} (seq {seq}) is missing"
        stored_seq = int(feedback["comment"].removeprefix("seq "))
        # The acknowledged rating, or a later one of the same request written just before the kill.
        assert stored_seq >= seq, (rid, seq, feedback)
        assert feedback["request_id"] == rid and feedback["rating"] == RATINGS[stored_seq % len(RATINGS)], feedback
        assert feedback["final_decision"] == found[rid][REQUESTS]["final_decision"]
        stats["rated requests found"] += 1
    after = seen["after"]
    assert after == {"decision": after["decision"], "saved": True, "sources": after["sources"], "errors": [],
                     "record": True} and after["decision"] in ("OK", "WARNING") and after["sources"] > 0, after

    stats.update({"kills": 2 * len(SEEDS), "requests acknowledged": len(requests), "requests cut off": len(cut_off),
                  "rated requests acknowledged": len(rated), "BLOCK answers": decisions["BLOCK"], "lost": 0})
    with capsys.disabled():
        print(f"\n[durability] api/{backend.name}: " + ", ".join(f"{k} {v}" for k, v in sorted(stats.items()))
              + f"; {time.monotonic() - started:.1f} s")


# --- HTTP: kill -9 the server while requests are in flight ----------------------------------------

HTTP_KEYS = {"acme-durable-key-0001": "acme", "acmebr-durable-key-01": "acme.br"}


def test_a_killed_server_keeps_every_answered_request_and_rating(tmp_path, capsys):
    pytest.importorskip("langgraph_api", reason="the LangGraph server is the serve extra: pip install -e '.[serve]'")
    import httpx
    from ragate_server import RagateServer

    started = time.monotonic()
    rng = random.Random(SEEDS[0])
    home = tmp_path / "served"
    answered: dict[str, tuple[str, str]] = {}   # rid -> (key, final decision): /api/chat said 200
    rated: dict[str, tuple[str, str]] = {}      # rid -> (key, rating): /api/feedback said 200
    refused: list[str] = []
    busy = Counter()                            # requests in flight, by client
    stop = threading.Event()

    def client(i: int, url: str) -> None:
        key = list(HTTP_KEYS)[i % len(HTTP_KEYS)]
        headers = {"Authorization": f"Bearer {key}"}
        with httpx.Client(base_url=url, headers=headers, timeout=60) as http:
            for n in range(10_000):
                if stop.is_set():
                    return
                question = PLAN[n % len(PLAN)][2]
                try:
                    busy[i] += 1
                    r = http.post("/api/chat", json={"question": question, "correlation_id": f"http-{i}-{n}"})
                    if r.status_code != 200:
                        refused.append(f"chat {r.status_code} {r.text[:200]}")
                        return
                    rid = r.json()["request_id"]  # the server's
                    answered[rid] = (key, r.json()["verdict"]["final_decision"])
                    rating = RATINGS[n % len(RATINGS)]
                    r = http.post("/api/feedback", json={"request_id": rid, "rating": rating, "comment": rid})
                    if r.status_code != 200:
                        refused.append(f"feedback {r.status_code} {r.text[:200]}")
                        return
                    rated[rid] = (key, r.json()["rating"])
                except httpx.TransportError:  # the kill: nothing more is acknowledged
                    return
                finally:
                    busy[i] -= 1

    srv = RagateServer(home, keys=HTTP_KEYS)
    with srv:
        clients = [threading.Thread(target=client, args=(i, srv.url), daemon=True) for i in range(3)]
        for c in clients:
            c.start()
        deadline = time.monotonic() + START_TIMEOUT_S
        while len(rated) < 3 and time.monotonic() < deadline and not refused:
            time.sleep(0.05)
        assert len(rated) >= 3 and not refused, (refused, srv.log_tail())
        time.sleep(rng.uniform(0.2, 1.0))
        in_flight = sum(busy.values())
        os.killpg(srv.proc.pid, signal.SIGKILL)  # the server and anything it started: no shutdown, no flush
        assert srv.proc.wait(30) == -signal.SIGKILL
        stop.set()
        for c in clients:
            c.join(60)
    assert not refused, refused
    assert in_flight > 0, "the kill landed while no request was in flight"

    # The restarted server (same data folder, nothing ingested again) has every answered request.
    with RagateServer(home, keys=HTTP_KEYS, samples=False) as again:
        for rid, (key, decision) in answered.items():
            r = httpx.get(f"{again.url}/ops/rag_debug/{rid}", headers=again.auth(key), timeout=30)
            assert r.status_code == 200, (rid, r.status_code, r.text)
            assert r.json()["final_decision"] == decision and r.json()["tenant"] == HTTP_KEYS[key]
        # SQLite allows readers beside the server: the ratings, read straight from its store.
        store = open_store(home)
        for rid, (key, rating) in rated.items():
            item = store.get(namespace(FEEDBACK, HTTP_KEYS[key]), rid)
            assert item is not None, f"rating of {rid} answered 200 before the kill is missing"
            assert (item.value["request_id"], item.value["rating"], item.value["comment"]) == (rid, rating, rid)
        for rid, (key, decision) in answered.items():
            memory = store.get(namespace("memory", HTTP_KEYS[key]), rid)
            assert (memory is not None) == (decision != "BLOCK"), (rid, decision)
        # And it answers and records again.
        r = httpx.post(f"{again.url}/api/chat", headers=again.auth("acmebr-durable-key-01"),
                       json={"question": PLAN[0][2], "correlation_id": "after-restart"}, timeout=60)
        assert r.status_code == 200, r.text
        r = httpx.post(f"{again.url}/api/feedback", headers=again.auth("acmebr-durable-key-01"),
                       json={"request_id": r.json()["request_id"], "rating": "up"}, timeout=60)
        assert r.status_code == 200, r.text
    with capsys.disabled():
        print(f"\n[durability] http: requests answered {len(answered)}, found {len(answered)}; ratings answered "
              f"{len(rated)}, found {len(rated)}; in flight at the kill {in_flight}; lost 0; "
              f"{time.monotonic() - started:.1f} s")
