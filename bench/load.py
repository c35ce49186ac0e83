#!/usr/bin/env python
"""Load benchmark of ragate's HTTP API: N concurrent clients on POST /api/chat (loopback only).

What it measures (see bench/README.md):

- Starts `python -m graph.entrypoints.cli serve --samples --port <free port>` as a child process (the LangGraph dev
  server with ragate's routes; the bundled samples ingested into its own temporary RAGATE_HOME, one
  generated API key per sample tenant, acme and globex), waits for GET /ok, and always stops it (its
  process group: SIGTERM, then SIGKILL), also on Ctrl-C. Or, with --url and --key-acme/--key-globex, it
  targets a server that is already running on this machine.
- Questions: every question of samples/questions.md (numbered rows, gate probes, cross-tenant probes) for
  acme; for globex the cross-tenant probes and the questions that do not name Acme. Each request picks a
  tenant, then a question, seeded-randomly, and sends it with that tenant's own key.
- Warm-up (not counted): one request, then --warmup requests per question, concurrently; after it the
  embedding model is loaded and every question's query vector is in the embedder's LRU (the timed
  requests repeat the same texts, so they measure ragate minus embedding). Then a one-client pass over
  the questions (the unloaded latency, for comparison), then the timed phase: --clients threads, each
  with its own keep-alive `httpx.Client`, sending requests back to back for --duration seconds.
- Counted as an error: a non-200, an exception or timeout, a 200 whose body is not the output contract
  (no request_id / verdict). A 200 whose `errors` list is not empty is counted as "degraded" (not an
  error). Reported: requests, throughput, latency p50/p90/p99/max, errors and degraded answers by kind,
  verdicts, the server-side graph time (sum of `timings_ms`), the server's and the client's CPU, the
  machine's load average, and PASS/FAIL against the target: zero errors and p99 <= 1000 ms.

    python bench/load.py --clients 20 --duration 60 --write-results      # the acceptance run (~90 s)
    python bench/load.py --clients 4 --duration 10                       # a smoke run
    python bench/load.py --url http://127.0.0.1:2024 --key-acme KA --key-globex KG --server-pid PID

Fault mode (`--faults embedding=0.1,chat=0.1`, bench/load_faults.py): the started server's embeddings and/or
chat model go through bench/fault_provider.py, an OpenAI-compatible provider on 127.0.0.1 (real embeddings by
ragate's own model, an "echo" chat model) that fails that share of its calls during the timed phase; each timed
question carries a unique tag, and the report checks, per request, that every failed provider call was retried
to success or named in the answer's `errors`, and that no request got a 5xx. Without --faults nothing changes.

    python bench/load.py --faults embedding=0.1,chat=0.1 --clients 20 --duration 60 --write-results

Exit status: 0 PASS, 1 FAIL, 2 bad flags or the server did not start, 130 interrupted.
"""

from __future__ import annotations

import argparse
import collections
import datetime as _dt
import ipaddress
import json
import os
import random
import re
import secrets
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import httpx

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
if str(BENCH) not in sys.path:  # the sibling benches, when imported rather than run
    sys.path.insert(0, str(BENCH))

from latency import CpuMonitor, code_fingerprint, git_commit, log, machine_info, pct, run_header, stop_process_group  # noqa: E402
from llm_paths import sample_questions  # noqa: E402

RESULTS_PATH = BENCH / "RESULTS.md"
QUESTIONS_PATH = ROOT / "samples" / "questions.md"
SECTION_TITLE = "# Load: 20 concurrent clients on /api/chat (issue 6)"
BEGIN, END = "<!-- load:begin -->", "<!-- load:end -->"
TENANTS = ("acme", "globex")
TARGET_P99_MS = 1000.0
CLK_TCK = os.sysconf("SC_CLK_TCK")


# --- questions ----------------------------------------------------------------------------------


def load_questions(path: Path = QUESTIONS_PATH) -> dict[str, list[str]]:
    """{tenant: questions} from samples/questions.md (which is written for acme): acme gets every
    question, globex the cross-tenant probes (written for both) and the questions not naming Acme."""
    text = path.read_text(encoding="utf-8")
    numbered = [q for row, (q, _) in sample_questions(path).items() if row != "DEMO"]
    gate, cross, section = [], [], ""
    for line in text.splitlines():
        if line.startswith("## "):
            section = line[3:].casefold()
        elif section.startswith("gate probes") and line.startswith("|"):
            cell = line.strip().strip("|").split("|")[0].strip()
            if cell and cell != "Question" and not set(cell) <= set("-: "):
                gate.append(cell)
        elif section.startswith("cross-tenant") and line.startswith("- "):
            m = re.match(r'- "([^"]+)"', line)
            if m:
                cross.append(m.group(1))
    acme = list(dict.fromkeys(numbered + gate + cross))
    globex = list(dict.fromkeys(cross + [q for q in numbered + gate if "acme" not in q.casefold()]))
    if not acme or not globex:
        raise SystemExit(f"load.py: no questions found in {path}")
    return {"acme": acme, "globex": globex}


# --- the server ---------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def group_cpu(pgid: int) -> tuple[float, int, int] | None:
    """(CPU seconds: utime + stime, processes, threads) of every live process in group `pgid`, from /proc."""
    cpu, procs, threads = 0, 0, 0
    try:
        entries = os.listdir("/proc")
    except OSError:
        return None
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        # fields[0] is stat field 3 (state): pgrp is field 5, utime 14, stime 15, num_threads 20
        if int(fields[2]) != pgid:
            continue
        cpu += int(fields[11]) + int(fields[12])
        procs += 1
        threads += int(fields[17])
    return (cpu / CLK_TCK, procs, threads) if procs else None


class Server:
    """`ragate serve --samples` in a child process (own session) with its own home and keys."""

    def __init__(self, home: Path, keys: dict[str, str], startup_timeout: float, extra_env: dict[str, str] | None = None):
        self.home = home
        self.keys = keys  # tenant -> key
        self.startup_timeout = startup_timeout
        self.extra_env = dict(extra_env or {})  # fault mode: the providers' settings
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = home / "server.log"
        self.proc: subprocess.Popen | None = None

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("RAGATE_", "LANGSMITH_", "LANGCHAIN_"))}
        if self.extra_env:  # the provider settings come from the bench only
            env = {k: v for k, v in env.items() if not k.startswith("OPENAI_")}
        env.update({"RAGATE_HOME": str(self.home), "PYTHONUNBUFFERED": "1",
                    "RAGATE_API_KEYS": ",".join(f"{key}:{tenant}" for tenant, key in self.keys.items())})
        env.update(self.extra_env)
        return env

    def start(self) -> None:
        self.home.mkdir(parents=True, exist_ok=True)
        argv = [sys.executable, "-m", "graph.entrypoints.cli", "serve", "--samples", "--port", str(self.port)]
        with open(self.log_path, "wb") as out:
            self.proc = subprocess.Popen(argv, cwd=ROOT, env=self.env(), stdout=out, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + self.startup_timeout
        with httpx.Client(timeout=2.0) as client:
            while time.monotonic() < deadline:
                if self.proc.poll() is not None:
                    raise StartupError(f"ragate serve exited with status {self.proc.returncode}")
                try:
                    if client.get(f"{self.url}/ok").status_code == 200:
                        return
                except httpx.HTTPError:
                    pass
                time.sleep(0.3)
        raise StartupError(f"ragate serve did not answer GET /ok within {self.startup_timeout:.0f} s")

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc else None

    def stop(self) -> None:
        stop_process_group(self.proc, (15, 10))

    def log_tail(self, lines: int = 60) -> str:
        try:
            text = self.log_path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return "(no server log)"
        return "\n".join(text.splitlines()[-lines:])


class StartupError(RuntimeError):
    pass


# --- the clients --------------------------------------------------------------------------------


@dataclass
class Result:
    tenant: str
    question: str
    start: float  # perf_counter, seconds
    ms: float
    kind: str  # "ok" or the error's kind
    verdict: str | None = None
    graph_ms: float | None = None
    degraded: list[str] = field(default_factory=list)
    # Fault mode only (not in the no-fault JSON): the request's tag, HTTP status and raw `errors`.
    tag: str | None = None
    status: int | None = None
    errors: list[str] = field(default_factory=list)


FAULT_FIELDS = ("tag", "status", "errors")
FAULT_ARGS = ("faults", "provider_timeout", "provider_retries", "paraphrase", "chat_url", "chat_model")


def _error_kind(exc: Exception) -> str:
    if isinstance(exc, httpx.TimeoutException):
        return f"timeout ({type(exc).__name__})"
    if isinstance(exc, httpx.ConnectError):
        return "connect error"
    if isinstance(exc, (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError)):
        return f"connection dropped ({type(exc).__name__})"
    return f"exception {type(exc).__name__}"


def _degraded_kind(message: str) -> str:
    """A short, countable form of one `errors` entry: its prefix and the start of the message, digits masked."""
    return re.sub(r"\d+", "N", str(message))[:70]


def ask(client: httpx.Client, tenant: str, key: str, question: str, tag: str | None = None) -> Result:
    """One POST /api/chat. With a `tag` (fault mode) the correlation id names it too, for the server log."""
    t0 = time.perf_counter()
    payload = {"question": question} if tag is None else {"question": question, "correlation_id": f"load-{tag}"}
    try:
        r = client.post("/api/chat", json=payload, headers={"Authorization": f"Bearer {key}"})
        ms = (time.perf_counter() - t0) * 1000
    except Exception as exc:  # any exception is an error of the run, counted by kind
        return Result(tenant, question, t0, (time.perf_counter() - t0) * 1000, _error_kind(exc), tag=tag)
    if r.status_code != 200:
        return Result(tenant, question, t0, ms, f"HTTP {r.status_code}", tag=tag, status=r.status_code)
    try:
        body = r.json()
    except ValueError:
        return Result(tenant, question, t0, ms, "200 without JSON", tag=tag, status=200)
    if not isinstance(body, dict) or not body.get("request_id") or not isinstance(body.get("verdict"), dict):
        return Result(tenant, question, t0, ms, "200 without the output contract", tag=tag, status=200)
    timings = body.get("timings_ms") or {}
    graph_ms = sum(v for v in timings.values() if isinstance(v, (int, float))) if isinstance(timings, dict) else None
    errors = body.get("errors") or []
    return Result(tenant, question, t0, ms, "ok", str(body["verdict"].get("final_decision")), graph_ms,
                  [_degraded_kind(e) for e in errors] if isinstance(errors, list) else ["errors is not a list"],
                  tag=tag, status=200, errors=[str(e) for e in errors] if isinstance(errors, list) else [])


class Plan:
    """Seeded-random (tenant, question) draws: a tenant uniformly, then one of its questions. With
    `tagged` (fault mode), each question gets its unique request tag (see bench/load_faults.py)."""

    def __init__(self, questions: dict[str, list[str]], keys: dict[str, str], seed: int, stream: int,
                 tagged: bool = False):
        self.questions, self.keys = questions, keys
        self.rng = random.Random(f"{seed}:{stream}")
        self.stream, self.tagged, self.sent = stream, tagged, 0

    def next(self) -> tuple[str, str, str] | tuple[str, str, str, str]:
        tenant = self.rng.choice(TENANTS)
        question = self.rng.choice(self.questions[tenant])
        if not self.tagged:
            return tenant, self.keys[tenant], question
        from load_faults import tag, tagged

        self.sent += 1
        request_tag = tag(self.stream, self.sent)
        return tenant, self.keys[tenant], tagged(question, request_tag), request_tag


def client_loop(base_url: str, plan: Plan, timeout: float, go: threading.Event, stop_at: list[float],
                stop: threading.Event, out: list[Result]) -> None:
    with httpx.Client(base_url=base_url, timeout=timeout) as client:
        go.wait()
        while not stop.is_set() and time.perf_counter() < stop_at[0]:
            out.append(ask(client, *plan.next()))


def run_pool(base_url: str, jobs: list[tuple[str, str, str]], workers: int, timeout: float,
             stop: threading.Event) -> list[Result]:
    """`jobs` (tenant, key, question) over `workers` threads, each with its own client."""
    todo = collections.deque(jobs)
    lock = threading.Lock()
    out: list[Result] = []

    def work():
        with httpx.Client(base_url=base_url, timeout=timeout) as client:
            while not stop.is_set():
                with lock:
                    if not todo:
                        return
                    job = todo.popleft()
                out.append(ask(client, *job))

    threads = [threading.Thread(target=work, daemon=True) for _ in range(max(1, min(workers, len(jobs))))]
    for t in threads:
        t.start()
    _join(threads)
    return out


def _join(threads: list[threading.Thread]) -> None:
    for t in threads:  # join with a timeout: Ctrl-C reaches the main thread meanwhile
        while t.is_alive():
            t.join(0.2)


# --- figures ------------------------------------------------------------------------------------


def summarize(results: list[Result], wall_s: float) -> dict[str, Any]:
    lat = [r.ms for r in results]
    ok = [r for r in results if r.kind == "ok"]
    graph = [r.graph_ms for r in ok if r.graph_ms is not None]
    queue = [r.ms - r.graph_ms for r in ok if r.graph_ms is not None]
    degraded = collections.Counter(k for r in ok for k in r.degraded)
    per_question: dict[tuple[str, str], list[Result]] = collections.defaultdict(list)
    for r in ok:
        per_question[(r.tenant, r.question)].append(r)
    slowest = sorted(({"tenant": t, "question": q, "n": len(rs), "p50_ms": pct([r.ms for r in rs], 50),
                       "graph_p50_ms": pct([r.graph_ms for r in rs if r.graph_ms is not None], 50)}
                      for (t, q), rs in per_question.items()), key=lambda d: -d["p50_ms"])
    return {
        "requests": len(results),
        "wall_s": wall_s,
        "throughput_rps": len(results) / wall_s if wall_s > 0 else float("nan"),
        "ok_throughput_rps": len(ok) / wall_s if wall_s > 0 else float("nan"),
        "latency_ms": {"p50": pct(lat, 50), "p90": pct(lat, 90), "p99": pct(lat, 99),
                       "max": max(lat) if lat else float("nan"), "mean": sum(lat) / len(lat) if lat else float("nan")},
        "errors": len(results) - len(ok),
        "errors_by_kind": dict(collections.Counter(r.kind for r in results if r.kind != "ok").most_common()),
        "degraded": sum(1 for r in ok if r.degraded),
        "degraded_by_kind": dict(degraded.most_common()),
        "verdicts": dict(collections.Counter(r.verdict for r in ok).most_common()),
        "by_tenant": dict(collections.Counter(r.tenant for r in results)),
        "graph_ms": {"p50": pct(graph, 50), "p90": pct(graph, 90), "p99": pct(graph, 99)},
        "outside_graph_ms": {"p50": pct(queue, 50), "p90": pct(queue, 90), "p99": pct(queue, 99)},
        "slowest_questions": slowest[:3],
        "share_over_target": sum(1 for r in results if r.ms > TARGET_P99_MS) / len(results) if results else 0.0,
    }


# What the served figures depend on: the code, the policy and the server's own configuration.
LOAD_PATHS = ("graph", "nodes", "policies", "langgraph.json", "pyproject.toml")

SECRET_FLAGS = ("--key-acme", "--key-globex")


def command_line(argv: list[str]) -> str:
    """The command as run, API keys replaced by KEY (the line goes into bench/RESULTS.md)."""
    shown, hide = [], False
    for arg in argv:
        flag = arg.split("=", 1)[0]
        if hide:
            shown.append("KEY")
        elif flag in SECRET_FLAGS and "=" in arg:
            shown.append(f"{flag}=KEY")
        else:
            shown.append(arg)
        hide = arg in SECRET_FLAGS
    return shlex.join([sys.executable, "bench/load.py", *shown])


def fmt_ms(v: float) -> str:
    return f"{v:,.1f} ms" if v == v else "–"


def _counts(d: dict[str, int]) -> str:
    return ", ".join(f"{k}: {v:,}" for k, v in d.items()) if d else "none"


def report(run: dict[str, Any]) -> str:
    s, a = run["timed"], run["args"]
    lat, passed = s["latency_ms"], run["pass"]
    cpu, base = run["cpu"], run.get("baseline")
    ok = lambda cond: "✅" if cond else "❌"  # noqa: E731
    la0, la1 = run["loadavg_before"], run["loadavg_after"]
    lines = [
        *run_header(run),
        f"Server: {run['server']}. {a['clients']} clients (threads, one keep-alive `httpx.Client` each) for "
        f"{a['duration']:g} s, request timeout {a['timeout']:g} s, seed {a['seed']}; {run['questions']['acme']} acme "
        f"and {run['questions']['globex']} globex questions from samples/questions.md, each tenant with its own key; "
        f"warm-up {run['warmup']['requests']} requests (not counted, {run['warmup']['errors']} errors).",
        "",
        f"Load average (1/5/15 min) before {la0[0]:.2f} / {la0[1]:.2f} / {la0[2]:.2f}, after {la1[0]:.2f} / "
        f"{la1[1]:.2f} / {la1[2]:.2f}; other processes used {_share(cpu.get('other_share'))} of all cores during "
        f"the timed phase" + (" ⚠️ the machine was not quiet: figures are pessimistic." if (cpu.get("other_share") or 0)
                              > 0.05 else "."),
        "",
        "| Figure | Value | Target |",
        "|---|---:|---:|",
        f"| **Result** | **{'PASS' if passed else 'FAIL'}** | zero errors, p99 ≤ {TARGET_P99_MS:,.0f} ms |",
        f"| Requests completed in the timed phase ({s['wall_s']:.1f} s) | {s['requests']:,} "
        f"(acme {s['by_tenant'].get('acme', 0):,}, globex {s['by_tenant'].get('globex', 0):,}) | |",
        f"| **Throughput** | **{s['throughput_rps']:,.1f} req/s** | |",
        f"| **Latency p50** / p90 / **p99** / max | **{fmt_ms(lat['p50'])}** / {fmt_ms(lat['p90'])} / "
        f"**{fmt_ms(lat['p99'])}** / {fmt_ms(lat['max'])} | p99 ≤ {TARGET_P99_MS:,.0f} ms {ok(lat['p99'] <= TARGET_P99_MS)} |",
        f"| Requests slower than {TARGET_P99_MS:,.0f} ms | {s['share_over_target']:.1%} | ≤ 1% |",
        f"| **Errors** (non-200, exception/timeout, 200 without the contract) | **{s['errors']:,}** "
        f"({_counts(s['errors_by_kind'])}) | 0 {ok(s['errors'] == 0)} |",
        f"| Degraded answers (200 with a non-empty `errors` list) | {s['degraded']:,} | |",
        f"| Verdicts | {_counts(s['verdicts'])} | |",
        f"| Server-side graph time (sum of `timings_ms`), p50 / p90 / p99 | {fmt_ms(s['graph_ms']['p50'])} / "
        f"{fmt_ms(s['graph_ms']['p90'])} / {fmt_ms(s['graph_ms']['p99'])} | |",
        f"| Latency − graph time (HTTP, waits for a worker thread; a request already inside the graph waits for the "
        f"CPU there, so that wait counts as graph time), p50 / p99 | "
        f"{fmt_ms(s['outside_graph_ms']['p50'])} / {fmt_ms(s['outside_graph_ms']['p99'])} | |",
        f"| Server CPU during the timed phase (100% = one core) | {_cpu(cpu.get('server_pct'))}"
        f"{_per_req(cpu.get('server_ms_per_request'))} | |",
        f"| Client (this process) CPU (100% = one core) | {_cpu(cpu.get('client_pct'))} | |",
    ]
    if cpu.get("server_threads"):
        lines.append(f"| Server threads at the end of the timed phase | {cpu['server_threads']} | |")
    if base:
        bl = base["latency_ms"]
        lines.append(f"| One client, one pass over the questions ({base['requests']} requests, after the warm-up): "
                     f"latency p50 / p99, graph time p50, throughput | {fmt_ms(bl['p50'])} / {fmt_ms(bl['p99'])}, "
                     f"{fmt_ms(base['graph_ms']['p50'])}, {base['throughput_rps']:.1f} req/s"
                     f"{_per_req(base.get('server_ms_per_request'))} | |")
    if s["slowest_questions"]:
        lines += ["", "Slowest questions under load (latency p50 / graph time p50, requests):", ""]
        lines += [f"- {d['tenant']}: \"{d['question'][:90]}{'…' if len(d['question']) > 90 else ''}\" — "
                  f"{fmt_ms(d['p50_ms'])} / {fmt_ms(d['graph_p50_ms'])}, {d['n']}" for d in s["slowest_questions"]]
    if s["degraded_by_kind"]:
        lines += ["", "Degraded answers by kind (`errors` entries, digits masked):", ""]
        lines += [f"- {v:,} × `{k}`" for k, v in list(s["degraded_by_kind"].items())[:10]]
    return "\n".join(lines) + "\n"


def _share(v: float | None) -> str:
    return f"{v:.0%}" if v is not None else "(not measured)"


def _cpu(v: float | None) -> str:
    return f"{v:.0f}%" if v is not None else "not measured"


def _per_req(v: float | None) -> str:
    return f" ({v:.1f} ms CPU per request)" if v is not None else ""


def write_results(block: str) -> None:
    """Replace the load section's block (between its markers) in bench/RESULTS.md, or append the
    section at the end; everything else, including notes after the end marker, is kept."""
    text = RESULTS_PATH.read_text(encoding="utf-8") if RESULTS_PATH.exists() else ""
    if BEGIN in text and END in text:
        head, rest = text.split(BEGIN, 1)
        _, tail = rest.split(END, 1)
    else:
        head, tail = text.rstrip() + f"\n\n{SECTION_TITLE}\n\nProduced by `bench/load.py --write-results` (see " \
                                     "bench/README.md). The block between the markers is regenerated; notes " \
                                     "outside it are kept.\n\n", "\n"
    RESULTS_PATH.write_text(f"{head}{BEGIN}\n{block.rstrip()}\n{END}{tail}", encoding="utf-8")


# --- main ---------------------------------------------------------------------------------------


def _loopback(url: str) -> bool:
    host = urllib.parse.urlsplit(url).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def parse_args(argv: list[str]) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], epilog="See bench/README.md.",
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--clients", type=int, default=20, help="concurrent clients (default 20)")
    ap.add_argument("--duration", type=float, default=60.0, help="seconds of the timed phase (default 60)")
    ap.add_argument("--warmup", type=int, default=2, help="warm-up requests per question, not counted (default 2)")
    ap.add_argument("--timeout", type=float, default=30.0, help="seconds per request before it counts as an error "
                                                                "(default 30)")
    ap.add_argument("--seed", type=int, default=13, help="seed of the question draws (default 13)")
    ap.add_argument("--home", help="RAGATE_HOME of the started server (default: a new temporary folder, removed "
                                   "after a passing run)")
    ap.add_argument("--startup-timeout", type=float, default=120.0, help="seconds to wait for GET /ok (default 120)")
    ap.add_argument("--url", help="target this running server (loopback only) instead of starting one")
    ap.add_argument("--key-acme", help="with --url: an API key of tenant acme")
    ap.add_argument("--key-globex", help="with --url: an API key of tenant globex")
    ap.add_argument("--server-pid", type=int, help="with --url: the server's pid, to measure its CPU (its process group)")
    ap.add_argument("--no-baseline", dest="baseline", action="store_false",
                    help="skip the one-client pass over the questions before the timed phase")
    ap.add_argument("--write-results", action="store_true", help="update the load section of bench/RESULTS.md")
    ap.add_argument("--json", metavar="PATH", help="write the raw figures (and every request's latency) as JSON")
    faults = ap.add_argument_group("fault mode (see bench/load_faults.py)")
    faults.add_argument("--faults", metavar="SPEC",
                        help="e.g. embedding=0.1,chat=0.1: the server's embeddings and/or chat model go through a "
                             "fault-injecting OpenAI-compatible provider started by the bench, failing that share of "
                             "its calls during the timed phase (a class given with 0: through the provider, no faults)")
    faults.add_argument("--provider-timeout", type=float, default=2.0,
                        help="RAGATE_PROVIDER_TIMEOUT of the server in fault mode, seconds (default 2)")
    faults.add_argument("--provider-retries", type=int, default=1,
                        help="RAGATE_PROVIDER_RETRIES of the server in fault mode (default 1)")
    faults.add_argument("--paraphrase", type=float, default=0.5,
                        help="share of the echo composer's answers with a reworded claim (default 0.5)")
    faults.add_argument("--chat-url", help="proxy the chat calls to this OpenAI-compatible base URL (…/v1, loopback) "
                                           "instead of the echo model")
    faults.add_argument("--chat-model", help="with --chat-url: the model name to ask for")
    ap.add_argument("--max-runs", type=int, help="RAGATE_MAX_CONCURRENT_RUNS of the started server (default: the "
                                                 "server's own default)")
    args = ap.parse_args(argv)
    if not 1 <= args.clients <= 500:
        ap.error(f"--clients must be 1-500, not {args.clients}")
    if not 1 <= args.duration <= 3600:
        ap.error(f"--duration must be 1-3600 seconds, not {args.duration:g}")
    if not 0 <= args.warmup <= 100:
        ap.error(f"--warmup must be 0-100 requests per question, not {args.warmup}")
    if not 0 < args.timeout <= 600:
        ap.error(f"--timeout must be above 0 and at most 600 seconds, not {args.timeout:g}")
    if not 1 <= args.startup_timeout <= 1800:
        ap.error(f"--startup-timeout must be 1-1800 seconds, not {args.startup_timeout:g}")
    if args.url:
        if not (args.key_acme and args.key_globex):
            ap.error("--url needs --key-acme and --key-globex (an API key of each sample tenant)")
        if args.home:
            ap.error("--home is for the server this bench starts; it cannot be used with --url")
        if urllib.parse.urlsplit(args.url).scheme not in ("http", "https"):
            ap.error(f"--url must be an http:// or https:// URL, not {args.url!r}")
        if not _loopback(args.url):
            ap.error(f"--url must point to this machine (127.0.0.1, ::1 or localhost), not {args.url!r}")
        args.url = args.url.rstrip("/")
    elif args.key_acme or args.key_globex or args.server_pid:
        ap.error("--key-acme, --key-globex and --server-pid go with --url (without --url the bench starts its own server)")
    if args.json and Path(args.json).is_dir():
        ap.error(f"--json {args.json!r} is a folder; give a file path")
    if args.max_runs is not None and (args.url or not 1 <= args.max_runs <= 256):
        ap.error("--max-runs must be 1-256 and is for the server this bench starts (not with --url)")
    if args.faults is not None:
        from fault_provider import parse_faults

        try:
            args.fault_rates = parse_faults(args.faults)
        except ValueError as exc:
            ap.error(f"--faults: {exc}")
        if args.url:
            ap.error("--faults starts its own server (with the provider settings); it cannot be used with --url")
        if not 0 < args.provider_timeout <= 60:
            ap.error(f"--provider-timeout must be above 0 and at most 60 seconds, not {args.provider_timeout:g}")
        if not 0 <= args.provider_retries <= 10:
            ap.error(f"--provider-retries must be 0-10, not {args.provider_retries}")
        if not 0 <= args.paraphrase <= 1:
            ap.error(f"--paraphrase must be between 0 and 1, not {args.paraphrase:g}")
        if args.chat_url and ("chat" not in args.fault_rates or not _loopback(args.chat_url)):
            ap.error("--chat-url needs chat in --faults and a loopback URL")
    elif args.chat_url or args.chat_model:
        ap.error("--chat-url and --chat-model go with --faults")
    return args


def check_keys(url: str, keys: dict[str, str]) -> None:
    """Each key must authenticate as its tenant (GET /api/session): a wrong key would make every request a 401."""
    with httpx.Client(base_url=url, timeout=10.0) as client:
        for tenant, key in keys.items():
            try:
                r = client.get("/api/session", headers={"Authorization": f"Bearer {key}"})
            except httpx.HTTPError as exc:
                raise StartupError(f"GET {url}/api/session failed: {exc}") from None
            if r.status_code != 200:
                raise StartupError(f"the {tenant} key is refused by {url}: HTTP {r.status_code} {r.text[:200]}")
            if r.json().get("tenant") != tenant:
                raise StartupError(f"the {tenant} key belongs to tenant {r.json().get('tenant')!r}")


# --- fault mode (bench/load_faults.py) ------------------------------------------------------------


def start_provider(args: argparse.Namespace, home: Path):
    from load_faults import ProviderProcess

    provider = ProviderProcess(args.fault_rates, args.seed, args.provider_timeout, args.paraphrase, args.chat_url,
                               args.chat_model, home / "provider.log")
    log(f"starting the fault provider ({args.faults}, log {provider.log_path})")
    try:
        provider.start()
    except RuntimeError as exc:
        provider.stop()
        raise StartupError(str(exc)) from None
    log(f"fault provider at {provider.url} (pid {provider.pid}), faults off until the timed phase")
    return provider


def ingest_through_provider(server: Server) -> None:
    from load_faults import ingest_samples

    log("ingesting the samples through the provider (a long provider timeout for the batches)")
    t0 = time.perf_counter()
    server.home.mkdir(parents=True, exist_ok=True)
    try:
        ingest_samples(server.env(), server.home)
    except (RuntimeError, subprocess.TimeoutExpired) as exc:
        raise StartupError(str(exc)) from None
    log(f"samples ingested in {time.perf_counter() - t0:.1f} s")


def fault_server_env(args: argparse.Namespace, provider) -> dict[str, str]:
    from load_faults import server_env

    return server_env(args.fault_rates, provider, args.provider_timeout, args.provider_retries, args.chat_model)


def fault_figures(args, argv, provider, results, timed, cpu, started, where, questions, warm, warm_errors,
                  loadavg_before, loadavg_after, baseline, wall) -> bool:
    """Fault mode's accounting, report, JSON and RESULTS block; returns PASS."""
    import load_faults

    provider.wait_idle(args.provider_timeout + 5)  # a timeout fault answers late: its log entry then completes
    calls = provider.calls()
    acc = load_faults.account(results, calls, args.provider_timeout)
    timed["http_5xx"] = sum(1 for r in results if r.status is not None and 500 <= r.status <= 599)
    ok, why = load_faults.passed(timed, acc, args.fault_rates)
    rates = args.fault_rates
    settings = ", ".join(f"{k}={v}" for k, v in load_faults.server_env(rates, provider, args.provider_timeout,
                                                                        args.provider_retries, args.chat_model).items()
                         if k.startswith("RAGATE_")) + (f", RAGATE_MAX_CONCURRENT_RUNS={args.max_runs}" if args.max_runs
                                                         else ", RAGATE_MAX_CONCURRENT_RUNS default")
    chat = (f"chat proxied to {args.chat_url}" if args.chat_url else
            f"echo chat model, reworded claims in {args.paraphrase:.0%} of the answers") if "chat" in rates else "no chat"
    figures = {
        "started": started, "command": command_line(argv), "commit": git_commit(LOAD_PATHS), "code": code_fingerprint(),
        "machine": machine_info(), "server": where,
        "args": {k: v for k, v in vars(args).items()},
        "questions": {t: len(q) for t, q in questions.items()},
        "warmup": {"requests": len(warm), "errors": warm_errors},
        "loadavg_before": list(loadavg_before), "loadavg_after": list(loadavg_after),
        "cpu": cpu, "baseline": baseline, "timed": timed, "pass": ok, "why": why, "accounting": acc,
        "faults": {"rates": rates, "server_settings": "`" + settings.replace(", ", "`, `") + "`",
                   "provider": ("embeddings: ragate's USE-multilingual" if "embedding" in rates else
                                "embeddings: the server's own embedded model") + "; " + chat},
    }
    block = load_faults.report(figures, pct)
    print(block)
    if args.json:
        raw = dict(figures, requests=[{**asdict(r), "start": r.start - results[0].start if results else 0}
                                      for r in results], provider_calls=calls)
        raw["accounting"] = {k: v for k, v in acc.items() if not k.startswith("latency_")}
        Path(args.json).expanduser().parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).expanduser().write_text(json.dumps(raw, indent=1, default=str), encoding="utf-8")
        log(f"raw figures written to {args.json}")
    if args.write_results:
        load_faults.write_results(RESULTS_PATH, SECTION_TITLE, load_faults.spec_of(rates), block)
        log(f"updated {RESULTS_PATH}")
    return ok


def run(args: argparse.Namespace, argv: list[str]) -> int:
    started = _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")
    loadavg_before = os.getloadavg()
    questions = load_questions()
    stop = threading.Event()
    server: Server | None = None
    provider = None  # fault mode: load_faults.ProviderProcess
    made_home: Path | None = None
    passed = False
    try:
        if args.url:
            url, keys, pgid = args.url, {"acme": args.key_acme, "globex": args.key_globex}, args.server_pid
            where = f"already running at {url}" + (f" (pid {pgid})" if pgid else " (CPU not measured: no --server-pid)")
        else:
            if args.home:
                home = Path(args.home).expanduser().resolve()
            else:
                home = made_home = Path(tempfile.mkdtemp(prefix="ragate-load-"))
            keys = {tenant: f"load-{tenant}-{secrets.token_hex(12)}" for tenant in TENANTS}
            extra_env = {"RAGATE_MAX_CONCURRENT_RUNS": str(args.max_runs)} if args.max_runs else {}
            if args.faults is not None:
                provider = start_provider(args, home)
                extra_env.update(fault_server_env(args, provider))
            server = Server(home, keys, args.startup_timeout, extra_env)
            if provider is not None:
                ingest_through_provider(server)
            log(f"starting ragate serve --samples on {server.url} (home {home}, log {server.log_path})")
            t0 = time.perf_counter()
            server.start()
            url, pgid = server.url, server.pid
            where = (f"`ragate serve --samples` started by the bench (LangGraph dev server, "
                     f"{'providers below' if provider else 'embedded default'}, "
                     f"ready in {time.perf_counter() - t0:.0f} s)")
            log(f"server ready in {time.perf_counter() - t0:.1f} s (pid {pgid})")
        check_keys(url, keys)

        # Warm-up: the first request alone (it loads the models), then every question --warmup times.
        jobs = [(t, keys[t], q) for _ in range(args.warmup) for t in TENANTS for q in questions[t]]
        log(f"warm-up: 1 + {len(jobs)} requests")
        first = run_pool(url, [(TENANTS[0], keys[TENANTS[0]], questions[TENANTS[0]][0])], 1, max(args.timeout, 120), stop)
        if first[0].kind != "ok":
            print(f"load.py: the first request failed ({first[0].kind}); see the server log"
                  + (f":\n{server.log_tail()}" if server else ""), file=sys.stderr)
            return 2
        warm = first + run_pool(url, jobs, args.clients, args.timeout, stop)
        warm_errors = sum(r.kind != "ok" for r in warm)
        if warm_errors:
            log(f"warm-up: {warm_errors} of {len(warm)} requests failed: "
                f"{dict(collections.Counter(r.kind for r in warm if r.kind != 'ok'))}")

        baseline = None
        if args.baseline:
            jobs = [(t, keys[t], q) for t in TENANTS for q in questions[t]]
            log(f"one client, one pass: {len(jobs)} requests")
            c0, t0 = group_cpu(pgid) if pgid else None, time.perf_counter()
            res = run_pool(url, jobs, 1, args.timeout, stop)
            baseline = summarize(res, time.perf_counter() - t0)
            c1 = group_cpu(pgid) if pgid else None
            if c0 and c1 and res:
                baseline["server_ms_per_request"] = (c1[0] - c0[0]) * 1000 / len(res)
            log(f"one client: p50 {baseline['latency_ms']['p50']:.1f} ms, graph p50 {baseline['graph_ms']['p50']:.1f} ms")

        # The timed phase.
        log(f"timed: {args.clients} clients for {args.duration:g} s")
        go, stop_at = threading.Event(), [float("inf")]
        outs: list[list[Result]] = [[] for _ in range(args.clients)]
        threads = [threading.Thread(target=client_loop, args=(url, Plan(questions, keys, args.seed, i,
                                                                        tagged=provider is not None),
                                                              args.timeout, go, stop_at, stop, outs[i]), daemon=True)
                   for i in range(args.clients)]
        for t in threads:
            t.start()
        time.sleep(0.2)  # let every thread build its client
        if provider is not None:
            provider.set_faults(True)
            p0 = group_cpu(provider.pid)
        machine = CpuMonitor()
        s0, cl0 = group_cpu(pgid) if pgid else None, time.process_time()
        t0 = time.perf_counter()
        stop_at[0] = t0 + args.duration
        go.set()
        _join(threads)
        wall = time.perf_counter() - t0
        s1, cl1 = group_cpu(pgid) if pgid else None, time.process_time()
        if provider is not None:
            p1 = group_cpu(provider.pid)
            provider.set_faults(False)
        other = machine.other_load()  # busy share of all cores, minus this process
        results = sorted((r for out in outs for r in out), key=lambda r: r.start)
        timed = summarize(results, wall)
        ncpu = os.cpu_count() or 1
        cpu: dict[str, Any] = {"client_pct": (cl1 - cl0) / wall * 100}
        if s0 and s1:
            server_s = s1[0] - s0[0]
            cpu.update(server_pct=server_s / wall * 100, server_threads=s1[2], server_processes=s1[1],
                       server_ms_per_request=server_s * 1000 / len(results) if results else None)
            if other is not None:
                other = max(0.0, other - server_s / (wall * ncpu))
        if provider is not None and p0 and p1:
            cpu["provider_pct"] = (p1[0] - p0[0]) / wall * 100
            if other is not None:
                other = max(0.0, other - (p1[0] - p0[0]) / (wall * ncpu))
        cpu["other_share"] = other
        loadavg_after = os.getloadavg()
        if provider is not None:
            passed = fault_figures(args, argv, provider, results, timed, cpu, started, where, questions, warm,
                                   warm_errors, loadavg_before, loadavg_after, baseline, wall)
            if server and not passed:
                log(f"server log: {server.log_path}")
            return 0 if passed else 1
        passed = timed["errors"] == 0 and timed["latency_ms"]["p99"] <= TARGET_P99_MS and timed["requests"] > 0
        figures = {
            "started": started, "command": command_line(argv), "commit": git_commit(LOAD_PATHS), "code": code_fingerprint(),
            "machine": machine_info(), "server": where,
            "args": {k: ("KEY" if v and k in ("key_acme", "key_globex") else v) for k, v in vars(args).items()
                     if not (k in FAULT_ARGS or k == "max_runs" and v is None)},
            "questions": {t: len(q) for t, q in questions.items()},
            "warmup": {"requests": len(warm), "errors": warm_errors},
            "loadavg_before": list(loadavg_before), "loadavg_after": list(loadavg_after),
            "cpu": cpu, "baseline": baseline, "timed": timed, "pass": passed,
            "target": {"errors": 0, "p99_ms": TARGET_P99_MS},
        }
        block = report(figures)
        print(block)
        if args.json:
            raw = dict(figures, requests=[{**{k: v for k, v in asdict(r).items() if k not in FAULT_FIELDS},
                                           "start": r.start - t0} for r in results])
            Path(args.json).expanduser().parent.mkdir(parents=True, exist_ok=True)
            Path(args.json).expanduser().write_text(json.dumps(raw, indent=1, default=str), encoding="utf-8")
            log(f"raw figures written to {args.json}")
        if args.write_results:
            write_results(block)
            log(f"updated {RESULTS_PATH}")
        if server and timed["errors"]:
            log(f"server log: {server.log_path}")
        return 0 if passed else 1
    except StartupError as exc:
        print(f"load.py: {exc}" + (f"\n--- last lines of {server.log_path} ---\n{server.log_tail()}" if server else ""),
              file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        stop.set()
        print("load.py: interrupted", file=sys.stderr)
        return 130
    finally:
        stop.set()
        if server:
            server.stop()
            log("server stopped")
        if provider is not None:
            provider.stop()
            log("fault provider stopped")
        if made_home is not None:
            if passed:
                shutil.rmtree(made_home, ignore_errors=True)
            else:
                log(f"kept {made_home} (server log: {made_home / 'server.log'})")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = parse_args(argv)

    def terminated(signum, frame):  # a SIGTERM stops the run like Ctrl-C: the server is stopped too
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, terminated)
    return run(args, argv)


if __name__ == "__main__":
    sys.exit(main())
