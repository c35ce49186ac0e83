"""Fault mode of bench/load.py (`--faults embedding=0.1,chat=0.1`): the provider, the accounting, the report.

`bench/load.py --faults ...` starts `bench/fault_provider.py` (a child process in its own session, on a
free loopback port) and the ragate server with `RAGATE_EMBEDDING_MODEL=openai/<m>` (when `embedding` is
in the spec) and `RAGATE_CHAT_MODEL=openai/<m>` (when `chat` is), `OPENAI_BASE_URL` at the provider, and a
bounded `RAGATE_PROVIDER_TIMEOUT` / `RAGATE_PROVIDER_RETRIES`. Faults are off while the server ingests the
samples and during the warm-up and the one-client pass; they are on for the timed phase only.

Each timed question carries a unique tag (`rq03x00042`: client 3, its 42nd request) appended after the
question, so that (1) no query vector, sub-query vector or LLM decomposition comes from the server's
caches: every request calls the provider as a new question would, and (2) the provider's calls can be
traced to the request they served (the tag is in the embedded text and in every chat prompt). The tag
holds digits, so the composer never lists it among the question's words missing from the documents.

The accounting, per timed request with a tag, from the provider's call log (one entry per HTTP attempt):

- a call that failed (an injected fault) is *recovered* when its retry (the same body, with a higher
  `x-stainless-retry-count`) succeeded later, within the provider timeout;
- otherwise its node must name the failure in the answer's `errors`: the embedding of the question or
  of a sub-query → an entry of a `retrieve[...]` branch; the embedding of a reworded claim (the
  groundedness checks' semantic rescue) → an entry of compose (its draft check) or of the judge;
  compose / judge / decompose chat calls → an entry starting with that node's name;
- a request that hit a fault is "retried success" (every faulted call recovered), "reported" (the
  unrecovered ones named by their node) or "NOT reported" (a failure the user is not told about).

PASS: zero 5xx, zero other failures (non-200, exception, client timeout, 200 without the output
contract), zero "NOT reported", and at least one fault injected in each class with a rate above 0.
Latency is reported, not targeted: a timeout fault costs the provider timeout, a retry the SDK's
back-off (0.4–0.5 s), and the server's admission limit (RAGATE_MAX_CONCURRENT_RUNS) makes the queue
wait for runs that are waiting on the provider.
"""

from __future__ import annotations

import collections
import json
import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
if str(BENCH) not in sys.path:
    sys.path.insert(0, str(BENCH))

from fault_provider import CLASSES, FAULT_KINDS
from latency import run_header, stop_process_group  # noqa: E402

EMBEDDING_MODEL = "openai/use-multilingual"  # the provider computes ragate's own USE-multilingual vectors
ECHO_CHAT_MODEL = "openai/echo"
# The nodes that may name a failed call in `errors`: an embedding of the question or a sub-query fails a
# retrieve branch; an embedding of a reworded claim (the groundedness checks' semantic rescue) is asked by
# compose's draft check and, if not cached by then, by the judge.
NODES_OF_CALL = {"embeddings": {"retrieve"}, "claim_embeddings": {"compose", "judge"}, "compose": {"compose"},
                 "judge": {"judge"}, "decompose": {"decompose"}}
# `errors` entries that say a provider call failed (as opposed to, e.g., a draft the checks refused).
PROVIDER_FAILURE = re.compile(r"embeddings unavailable|chat model failed|chat model unusable|verdict unusable|"
                              r"answer empty")


def tag(stream: int, seq: int) -> str:
    """The request tag of client `stream`'s `seq`-th timed request (matches fault_provider.TAG_RE)."""
    return f"rq{stream:02d}x{seq:05d}"


def tagged(question: str, request_tag: str) -> str:
    return f"{question} {request_tag}"


def error_node(entry: str) -> str | None:
    """The node an `errors` entry comes from: retrieve (any branch), compose, judge, decompose, …"""
    m = re.match(r"(retrieve)\[|(\w+):", str(entry))
    return (m.group(1) or m.group(2)) if m else None


# --- the provider process -----------------------------------------------------------------------


class ProviderProcess:
    """bench/fault_provider.py in a child process (own session), stopped by its process group."""

    def __init__(self, rates: dict[str, float], seed: int, provider_timeout: float, paraphrase: float,
                 chat_url: str | None, chat_model: str | None, log_path: Path, startup_timeout: float = 60.0):
        self.argv = [sys.executable, str(BENCH / "fault_provider.py"), "--port", "0",
                     "--faults", ",".join(f"{k}={v:g}" for k, v in rates.items()), "--seed", str(seed),
                     "--provider-timeout", f"{provider_timeout:g}", "--paraphrase", f"{paraphrase:g}"]
        if chat_url:
            self.argv += ["--chat-url", chat_url] + (["--chat-model", chat_model] if chat_model else [])
        self.log_path, self.startup_timeout = log_path, startup_timeout
        self.proc: subprocess.Popen | None = None
        self.url = self.openai_base_url = ""

    def start(self) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("RAGATE_", "OPENAI_"))}
        env["PYTHONUNBUFFERED"] = "1"
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(self.argv, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=self._log,
                                     stdin=subprocess.DEVNULL, start_new_session=True)
        ready: list[str] = []
        reader = threading.Thread(target=lambda: ready.append(self.proc.stdout.readline().decode()), daemon=True)
        reader.start()
        reader.join(self.startup_timeout)
        if not ready or not ready[0].strip():
            raise RuntimeError(f"the fault provider did not start within {self.startup_timeout:.0f} s "
                               f"(exit status {self.proc.poll()}; log {self.log_path})")
        info = json.loads(ready[0])
        self.url, self.openai_base_url = info["url"], info["openai_base_url"]

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc else None

    def _call(self, method: str, path: str, **kw: Any) -> Any:
        r = httpx.request(method, f"{self.url}{path}", timeout=30.0, **kw)
        r.raise_for_status()
        return r.json()

    def set_faults(self, enabled: bool) -> dict[str, Any]:
        return self._call("POST", "/_bench/faults", json={"enabled": enabled})

    def stats(self) -> dict[str, Any]:
        return self._call("GET", "/_bench/stats")

    def wait_idle(self, limit_s: float) -> None:
        """Until no model call is being answered (a timeout fault is still sleeping), at most `limit_s`."""
        deadline = time.monotonic() + limit_s
        while time.monotonic() < deadline and self.stats().get("inflight", 0) > 0:
            time.sleep(0.2)

    def calls(self, since: int = 0) -> list[dict[str, Any]]:
        return self._call("GET", f"/_bench/calls?since={since}")["calls"]

    def stop(self) -> None:
        stop_process_group(self.proc, (10, 5))


def server_env(rates: dict[str, float], provider: ProviderProcess, provider_timeout: float, retries: int,
               chat_model: str | None) -> dict[str, str]:
    """The ragate server's provider settings: each class named in the spec goes through the provider."""
    env = {"OPENAI_BASE_URL": provider.openai_base_url, "OPENAI_API_KEY": "bench-fault-provider",
           "RAGATE_PROVIDER_TIMEOUT": f"{provider_timeout:g}", "RAGATE_PROVIDER_RETRIES": str(retries)}
    if "embedding" in rates:
        env["RAGATE_EMBEDDING_MODEL"] = EMBEDDING_MODEL
    if "chat" in rates:
        env["RAGATE_CHAT_MODEL"] = f"openai/{chat_model}" if chat_model else ECHO_CHAT_MODEL
    return env


def ingest_samples(env: dict[str, str], home: Path, timeout_s: float = 600.0) -> None:
    """The samples into the server's home before it starts, as `ragate serve --samples` would ingest them
    (the same function, the same settings) but with a provider timeout long enough for the provider to
    embed a batch of chunks on a busy machine: the server's own ingest then finds every document
    unchanged and only embeds its dimension probe, within the short timeout the benchmark sets."""
    env = dict(env, RAGATE_PROVIDER_TIMEOUT="300")
    code = ("from graph.entrypoints.cli import _ingest_samples; from graph.context import Context; "
            "_ingest_samples(Context(), progress=False)")
    with open(home / "ingest.log", "wb") as out:
        done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT,
                              stdin=subprocess.DEVNULL, timeout=timeout_s)
    if done.returncode != 0:
        raise RuntimeError(f"ingesting the samples through the provider failed (status {done.returncode}; log "
                           f"{home / 'ingest.log'})")


# --- accounting ---------------------------------------------------------------------------------


def account(results: list, calls: list[dict[str, Any]], provider_timeout: float) -> dict[str, Any]:
    """Per-request accounting of the injected faults (see the module docstring)."""
    timed_calls = [c for c in calls if c["faults_on"]]
    by_tag: dict[str, list[dict[str, Any]]] = collections.defaultdict(list)
    for c in timed_calls:
        for t in c["tags"]:
            by_tag[t].append(c)
    groups: dict[tuple[str, str], list[dict[str, Any]]] = collections.defaultdict(list)
    for c in calls:
        groups[(c["kind"], c["hash"])].append(c)
    limit_ms = provider_timeout * 1000

    def recovered(c: dict[str, Any]) -> bool:
        # A retry of this call (the same body, a higher retry count from the client) that succeeded in
        # time. The same body sent at once by a parallel branch (two retrieve branches embedding one
        # question) is another call: its success does not make up for this one's failure.
        return any(o["t"] > c["t"] and o["retry"] > c["retry"] and not o["fault"] and o["status"] == 200
                   and not o["client_gone"] and (o["ms"] or 0) <= limit_ms for o in groups[(c["kind"], c["hash"])])

    classes = collections.Counter()
    unreported: list[dict[str, Any]] = []
    node_faults = collections.Counter()  # call kind: requests with an unrecovered fault of that kind
    degraded_nodes = collections.Counter()  # node: requests with any `errors` entry of that node
    provider_errors_without_fault = collections.Counter()
    hit_ms, clean_ms = [], []
    known_tags = set()
    for r in results:
        if not r.tag:
            continue
        known_tags.add(r.tag)
        mine = by_tag.get(r.tag, [])
        faulted = [c for c in mine if c["fault"]]
        nodes_reported = {error_node(e) for e in r.errors}
        for n in nodes_reported:
            if n:
                degraded_nodes[n] += 1
        if r.kind != "ok":
            classes["failed request (non-200, exception or no contract)"] += 1
            continue
        (hit_ms if faulted else clean_ms).append(r.ms)
        faulted_nodes = set().union(*(NODES_OF_CALL.get(c["kind"], {c["kind"]}) for c in faulted))
        for e in r.errors:
            if PROVIDER_FAILURE.search(str(e)) and error_node(e) not in faulted_nodes:
                provider_errors_without_fault[error_node(e) or "?"] += 1
        if not faulted:
            classes["no fault"] += 1
            continue
        open_faults = [c for c in faulted if not recovered(c)]
        missing = [c for c in open_faults if not NODES_OF_CALL.get(c["kind"], {c["kind"]}) & nodes_reported]
        for kind in {c["kind"] for c in open_faults}:
            node_faults[kind] += 1
        if not open_faults:
            classes["retried success"] += 1
        elif not missing:
            classes["reported"] += 1
        else:
            classes["NOT reported"] += 1
            unreported.append({"tag": r.tag, "question": r.question, "errors": r.errors,
                               "faults": [{k: c[k] for k in ("kind", "fault", "retry", "t", "status")} for c in missing]})
    injected = collections.Counter()
    by_class = {cls: collections.Counter() for cls in CLASSES}
    for c in timed_calls:
        by_class[c["class"]]["calls"] += 1
        if c["fault"]:
            injected[(c["class"], c["fault"])] += 1
            by_class[c["class"]]["faults"] += 1
    untagged = [c for c in timed_calls if not c["tags"]]
    return {
        "requests_with_tag": len(known_tags),
        "classes": dict(classes),
        "unreported": unreported,
        "node_faults": dict(node_faults),
        "degraded_nodes": dict(degraded_nodes),
        "provider_errors_without_fault": dict(provider_errors_without_fault),
        "calls": {"total": len(timed_calls), "by_kind": dict(collections.Counter(c["kind"] for c in timed_calls)),
                  "retries": sum(1 for c in timed_calls if c["retry"] > 0),
                  "late": sum(1 for c in timed_calls if not c["fault"] and (c["ms"] or 0) > limit_ms),
                  "provider_failures": sum(1 for c in timed_calls if c.get("error"))},
        "by_class": {k: dict(v) for k, v in by_class.items()},
        "injected": {cls: {kind: injected[(cls, kind)] for kind in FAULT_KINDS} for cls in CLASSES},
        "injected_total": sum(injected.values()),
        "injected_by_call": dict(collections.Counter(c["kind"] for c in timed_calls if c["fault"])),
        "untagged": {"calls": len(untagged), "faults": sum(1 for c in untagged if c["fault"]),
                     "by_kind": dict(collections.Counter(c["kind"] for c in untagged))},
        "orphan_tags": sorted(set(by_tag) - known_tags)[:20],
        "latency_hit_ms": hit_ms, "latency_clean_ms": clean_ms,
    }


def passed(timed: dict[str, Any], acc: dict[str, Any], rates: dict[str, float]) -> tuple[bool, list[str]]:
    """(PASS?, why not)."""
    why = []
    if timed["requests"] == 0:
        why.append("no request completed")
    if timed["http_5xx"]:
        why.append(f"{timed['http_5xx']} answers with a 5xx status")
    if timed["errors"] - timed["http_5xx"]:
        why.append(f"{timed['errors'] - timed['http_5xx']} other failed requests")
    if acc["classes"].get("NOT reported"):
        why.append(f"{acc['classes']['NOT reported']} requests hit a fault their `errors` do not name")
    for cls, rate in rates.items():
        if rate > 0 and not acc["by_class"].get(cls, {}).get("faults"):
            why.append(f"no {cls} fault was injected (rate {rate:g}): nothing was tested")
    return not why, why


# --- report -------------------------------------------------------------------------------------


def _pct_line(pct, values: list[float]) -> str:
    if not values:
        return "–"
    return f"{pct(values, 50):,.0f} / {pct(values, 99):,.0f} ms ({len(values):,})"


def report(run: dict[str, Any], pct) -> str:
    s, a, acc, f = run["timed"], run["args"], run["accounting"], run["faults"]
    lat, cpu = s["latency_ms"], run["cpu"]
    ok = lambda cond: "✅" if cond else "❌"
    la0, la1 = run["loadavg_before"], run["loadavg_after"]
    classes = acc["classes"]
    hit = classes.get("retried success", 0) + classes.get("reported", 0) + classes.get("NOT reported", 0)
    inj = acc["injected"]
    rates = f["rates"]

    def injected(cls: str) -> str:
        counts = inj.get(cls, {})
        calls = acc["by_class"].get(cls, {}).get("calls", 0)
        total = sum(counts.values())
        if cls not in rates:
            return "not configured"
        detail = ", ".join(f"{k.replace('_', ' ')} {v:,}" for k, v in counts.items())
        return f"{total:,} of {calls:,} attempts ({total / calls:.1%}): {detail}" if calls else "no calls"

    lines = [
        *run_header(run),
        f"Server: {run['server']}, with {f['server_settings']}. Provider: `bench/fault_provider.py` on 127.0.0.1 "
        f"({f['provider']}), faults {', '.join(f'{k} {v:.0%}' for k, v in rates.items())} of the HTTP attempts "
        f"(retries included), seed {a['seed']}, only during the timed phase. {a['clients']} clients for "
        f"{a['duration']:g} s, request timeout {a['timeout']:g} s; each timed question carries a unique tag "
        f"(no server cache answers for the provider); warm-up {run['warmup']['requests']} requests "
        f"({run['warmup']['errors']} errors).",
        "",
        f"Load average (1/5/15 min) before {la0[0]:.2f} / {la0[1]:.2f} / {la0[2]:.2f}, after {la1[0]:.2f} / "
        f"{la1[1]:.2f} / {la1[2]:.2f}; other processes used {_share(cpu.get('other_share'))} of all cores during "
        f"the timed phase" + (" ⚠️ the machine was not quiet." if (cpu.get("other_share") or 0) > 0.05 else "."),
        "",
        "| Figure | Value | Target |",
        "|---|---:|---:|",
        f"| **Result** | **{'PASS' if run['pass'] else 'FAIL'}** | zero 5xx, every fault reported or retried |",
        f"| Requests sent in the timed phase ({s['wall_s']:.1f} s) | {s['requests']:,} "
        f"({s['throughput_rps']:.1f} req/s) | |",
        f"| **Served** (200 with the output contract) | **{s['requests'] - s['errors']:,}** | |",
        f"| **5xx** | **{s['http_5xx']:,}** | 0 {ok(s['http_5xx'] == 0)} |",
        f"| Other failures (non-200 other than 5xx, exception, client timeout, 200 without the contract) | "
        f"{s['errors'] - s['http_5xx']:,} ({_counts({k: v for k, v in s['errors_by_kind'].items() if not k.startswith('HTTP 5')})}) "
        f"| 0 {ok(s['errors'] - s['http_5xx'] == 0)} |",
        f"| Provider calls (HTTP attempts) in the timed phase | {acc['calls']['total']:,} "
        f"({_counts(acc['calls']['by_kind'])}); retries {acc['calls']['retries']:,} | |",
        f"| **Faults injected**, embeddings | {injected('embedding')} | |",
        f"| **Faults injected**, chat | {injected('chat')} | |",
        f"| … by call | {_counts(acc['injected_by_call'])} | |",
        f"| Requests that hit ≥ 1 injected fault | {hit:,} ({hit / max(1, s['requests']):.1%}) | |",
        f"| … every faulted call recovered by the client's retry (nothing to report) | "
        f"{classes.get('retried success', 0):,} | |",
        f"| … **answered degraded, the failure named in `errors`** by its node | **{classes.get('reported', 0):,}** "
        f"(by failed call: {_counts(acc['node_faults'])}) | |",
        f"| … **hit a fault that `errors` does not name** | **{classes.get('NOT reported', 0):,}** | "
        f"0 {ok(not classes.get('NOT reported'))} |",
        f"| Answers with an `errors` entry, by node (any cause) | {_counts(acc['degraded_nodes'])} | |",
        f"| Provider failures reported with no fault injected in that node's calls (real timeouts under load) | "
        f"{_counts(acc['provider_errors_without_fault'])} | |",
        f"| Provider calls not traced to a request | {acc['untagged']['calls']:,} "
        f"({_counts(acc['untagged']['by_kind'])}), of which faulted {acc['untagged']['faults']:,} | |",
        f"| Verdicts | {_counts(s['verdicts'])} | |",
        f"| Latency p50 / p90 / **p99** / max (all requests) | {fmt_ms(lat['p50'])} / {fmt_ms(lat['p90'])} / "
        f"**{fmt_ms(lat['p99'])}** / {fmt_ms(lat['max'])} | reported |",
        f"| … requests without a fault, p50 / p99 (n) | {_pct_line(pct, acc['latency_clean_ms'])} | |",
        f"| … requests that hit a fault, p50 / p99 (n) | {_pct_line(pct, acc['latency_hit_ms'])} | |",
        f"| Requests slower than 1,000 ms | {s['share_over_target']:.1%} | |",
        f"| Server-side graph time (sum of `timings_ms`), p50 / p99 | {fmt_ms(s['graph_ms']['p50'])} / "
        f"{fmt_ms(s['graph_ms']['p99'])} | |",
        f"| CPU (100% = one core): server / provider / this client | {_cpu(cpu.get('server_pct'))} / "
        f"{_cpu(cpu.get('provider_pct'))} / {_cpu(cpu.get('client_pct'))} | |",
    ]
    base = run.get("baseline")
    if base:
        bl = base["latency_ms"]
        lines.append(f"| One client, one pass over the questions, no faults ({base['requests']} requests, after the "
                     f"warm-up): latency p50 / p99 | {fmt_ms(bl['p50'])} / {fmt_ms(bl['p99'])} | |")
    if run["why"]:
        lines += ["", "Why FAIL: " + "; ".join(run["why"]) + "."]
    if s["degraded_by_kind"]:
        lines += ["", "`errors` entries by kind (digits masked):", ""]
        lines += [f"- {v:,} × `{k}`" for k, v in list(s["degraded_by_kind"].items())[:14]]
    if acc["unreported"]:
        lines += ["", "Faults not named in `errors` (first 5):", ""]
        lines += [f"- `{u['tag']}` {json.dumps(u['faults'])[:300]} — errors: {json.dumps(u['errors'])[:300]}"
                  for u in acc["unreported"][:5]]
    return "\n".join(lines) + "\n"


def fmt_ms(v: float) -> str:
    return f"{v:,.1f} ms" if v == v else "–"


def _counts(d: dict[str, int]) -> str:
    return ", ".join(f"{k}: {v:,}" for k, v in d.items()) if d else "none"


def _share(v: float | None) -> str:
    return f"{v:.0%}" if v is not None else "(not measured)"


def _cpu(v: float | None) -> str:
    return f"{v:.0f}%" if v is not None else "not measured"


# --- bench/RESULTS.md ---------------------------------------------------------------------------

FAULTS_HEADING = "## Load with injected provider faults (issue \"Reliability and security\")"


def markers(spec: str) -> tuple[str, str]:
    return f"<!-- load-faults {spec}:begin -->", f"<!-- load-faults {spec}:end -->"


def write_results(path: Path, section_title: str, spec: str, block: str) -> None:
    """Replace this fault spec's block in bench/RESULTS.md; a new spec's block goes at the end of the
    load section (before the next top-level heading), under FAULTS_HEADING. Everything else is kept."""
    begin, end = markers(spec)
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    body = f"{begin}\n{block.rstrip()}\n{end}"
    if begin in text and end in text:
        head, rest = text.split(begin, 1)
        _, tail = rest.split(end, 1)
        path.write_text(f"{head}{body}{tail}", encoding="utf-8")
        return
    start = text.find(section_title)
    nxt = text.find("\n# ", start + 1) if start >= 0 else -1
    insert_at = nxt + 1 if nxt >= 0 else len(text)
    head, tail = text[:insert_at].rstrip() + "\n\n", text[insert_at:]
    if FAULTS_HEADING not in head:
        head += (f"{FAULTS_HEADING}\n\nProduced by `bench/load.py --faults SPEC --write-results` (see bench/README.md); one "
                 "block per fault spec, regenerated; notes outside the blocks are kept.\n\n")
    head += f"### Faults {spec}\n\n{body}\n"
    path.write_text(head + ("\n" + tail if tail else ""), encoding="utf-8")


def spec_of(rates: dict[str, float]) -> str:
    return ",".join(f"{k}={v:g}" for k, v in rates.items())

