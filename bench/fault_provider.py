#!/usr/bin/env python
"""A fault-injecting OpenAI-compatible provider on 127.0.0.1, for `bench/load.py --faults`.

It answers what ragate's OpenAI clients send (`langchain_openai.OpenAIEmbeddings` and `ChatOpenAI`,
through `OPENAI_BASE_URL`):

- `POST /v1/embeddings`: REAL vectors, from ragate's own embedded model (`graph.providers.embeddings.
  UseMultilingualEmbeddings`, 512 dims), so that the samples `ragate serve --samples` ingests through
  this provider and the questions asked later are embedded by the same model as in the embedded
  default, and retrieval quality under load is the real one. JSON floats, or little-endian float32 in
  base64 when the request asks for `encoding_format: "base64"` (the openai SDK does).
- `POST /v1/chat/completions`: by default a fast deterministic "echo" model that reads ragate's own
  prompts (prompts/*.yaml, recognised by the start of their system message) and gives a valid reply:
    * compose (streamed as server-sent events when `"stream": true`): one sentence of the first
      document block that shares most words with the question, quoted, with its `[doc_id]`; for a
      seeded share of the requests (`--paraphrase`, default 0.5) a second, "paraphrased" claim: another
      quoted sentence behind a few filler words of the answer's language, as a model that rewords
      would write it (its wording is only partly in the cited chunk, so the judge's groundedness checks
      ask the embedding model about it, as they would for a real model's paraphrase);
    * judge: a plausible JSON verdict (scores from whether the answer cites and states figures);
    * decompose: the question split in two at a connective near its middle (or at a second "?"),
      each part keeping the request tag the load bench appends to its questions;
    * anything else: "ok".
  With `--chat-url URL` chat requests go to that OpenAI-compatible server instead (e.g. the local LLM
  of ../shared/tools/local-llm; far too slow for 20 clients), faults still injected here first.
- A seeded share of the calls fails (`--faults embedding=0.1,chat=0.1`: the probability per HTTP
  attempt, retries included), the kind drawn evenly from: HTTP 500, HTTP 503, a hang-up (connection
  closed without a response), a timeout (no answer for `--provider-timeout` + 1 s, then a hang-up) and
  a garbage body (200 with a body that is not JSON, or a broken event stream). Whether a call fails is
  a hash of the seed, the request body and how many times that body came before (a retry, or another
  caller asking the same), so the same calls fail in every run with the same questions.

Control (loopback, for the bench): faults are OFF at start (the server's ingest and warm-up are not
faulted); `POST /_bench/faults {"enabled": true|false}` switches them; `GET /_bench/stats` gives the
counters; `GET /_bench/calls?since=N` the call log (one entry per HTTP attempt: time, call kind, the
request tags found in it, body hash, retry count, fault, status, duration). An embeddings call holding
a reworded claim this provider wrote is traced to the request it was written for (kind
`claim_embeddings`): the groundedness checks embed the claim without the request's tag.

    python bench/fault_provider.py --port 0 --faults embedding=0.1,chat=0.1 --seed 13 --provider-timeout 2

prints one JSON line `{"url": ..., "openai_base_url": ...}` when it listens, then serves until SIGTERM.
"""

from __future__ import annotations

import os

# One BLAS thread: USE-multilingual's small matrix products run ~5x faster on this 2-core machine than
# with OpenBLAS's thread pool (3 ms against 15 ms per query, measured), whose threads spin against the
# ragate server for the same cores. Set before numpy is imported.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse
import base64
import hashlib
import json
import math
import random
import re
import signal
import struct
import sys
import threading
import time
import urllib.parse
from collections import OrderedDict
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
if str(ROOT) not in sys.path:  # `python bench/fault_provider.py` from a checkout without `pip install -e .`
    sys.path.insert(0, str(ROOT))

import yaml

from graph.algorithms.text import split_sentences

FAULT_KINDS = ("http_500", "http_503", "hangup", "timeout", "garbage")
CLASSES = ("embedding", "chat")
# The tag bench/load.py appends to each timed question ("rq03x00042": client 3, its 42nd request).
TAG_RE = re.compile(r"\brq\d{2}x\d{5}\b")
EMBED_MODEL_DIMS = 512


def parse_faults(spec: str) -> dict[str, float]:
    """"embedding=0.1,chat=0.1" -> {"embedding": 0.1, "chat": 0.1}; ValueError says what is wrong.
    A class given with 0 goes through the provider without faults."""
    rates: dict[str, float] = {}
    for part in (p.strip() for p in (spec or "").split(",")):
        if not part:
            continue
        name, sep, value = part.partition("=")
        name = name.strip()
        if not sep or name not in CLASSES:
            raise ValueError(f"{part!r}: expected {' or '.join(c + '=RATE' for c in CLASSES)}")
        try:
            rate = float(value)
        except ValueError:
            raise ValueError(f"{part!r}: the rate must be a number from 0 to 1") from None
        if not 0 <= rate <= 1:
            raise ValueError(f"{part!r}: the rate must be a number from 0 to 1")
        if name in rates:
            raise ValueError(f"{name} is given twice")
        rates[name] = rate
    if not rates:
        raise ValueError("no rate given: e.g. embedding=0.1,chat=0.1")
    return rates


def _unit(*parts: Any) -> float:
    """A uniform number in [0, 1) from a hash of `parts`: the seeded draw of one call."""
    digest = hashlib.sha256("\x1f".join(str(p) for p in parts).encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


# --- the echo chat model ------------------------------------------------------------------------


def _system_prefix(name: str) -> str:
    """The fixed start of a prompt's system message (up to its first $placeholder): how a request is
    recognised as ragate's compose, judge or decompose call."""
    with open(ROOT / "prompts" / f"{name}.yaml", encoding="utf-8") as fh:
        system = yaml.safe_load(fh)["system"]
    return " ".join(system.split("$", 1)[0].split())[:60]


PROMPT_PREFIXES = {name: _system_prefix(name) for name in ("compose", "judge", "decompose")}

FILLERS = {
    "en": ["broadly", "overall", "notably", "clearly", "meaningful", "consistent", "substantial", "practical",
           "relevant", "evident", "important", "steady", "coherent", "remarkable", "solid", "favourable"],
    "pt": ["basicamente", "claramente", "notavelmente", "relevante", "consistente", "importante", "evidente",
           "significativo", "sólido", "coerente", "favorável", "prático", "nítido", "marcante", "substancial",
           "expressivo"],
}
_BULLET = re.compile(r"^\s*(?:[-*•]+|#+|\d+[.)])\s*")
_WORDS = re.compile(r"\w+", re.UNICODE)
_CONNECTIVES = re.compile(r",\s+|;\s+|\s+(?:and|e|with|com|from|de|versus|vs\.?)\s+", re.IGNORECASE)


def _words(text: str) -> set[str]:
    return {w for w in _WORDS.findall(text.casefold()) if len(w) > 3}


def request_kind(body: dict) -> str:
    """compose, judge, decompose or chat (anything else), from the system message."""
    for message in body.get("messages") or []:
        if message.get("role") == "system":
            text = " ".join(str(_content(message)).split())
            for name, prefix in PROMPT_PREFIXES.items():
                if text.startswith(prefix):
                    return name
    return "chat"


def _content(message: dict) -> str:
    content = message.get("content")
    if isinstance(content, list):  # content parts
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return str(content or "")


def _user_text(body: dict) -> str:
    users = [_content(m) for m in body.get("messages") or [] if m.get("role") == "user"]
    return users[0] if users else ""


def _usable_sentences(text: str) -> list[str]:
    """Sentences the deterministic composer could also quote: no headings, no fragments."""
    out = []
    for raw in split_sentences(text):
        line = raw.strip()
        if not line or (not _BULLET.match(line) and line[-1:] not in ".!?:;" and len(line.split()) < 15):
            continue  # a title
        sentence = " ".join(_BULLET.sub("", line).split())
        if 20 <= len(sentence) <= 600 and not sentence.startswith("#") and "[" not in sentence and "|" not in sentence:
            out.append(sentence.rstrip(":;"))
    return out


def _cite(sentence: str, doc_id: str) -> str:
    body = sentence[:-1] if sentence[-1:] in ".!?" else sentence
    return f"{body.rstrip()} [{doc_id}]."


def claim_key(text: str) -> str:
    """The first words of a claim, lower-cased: how an embeddings input is matched to a reworded claim
    written here. The groundedness checks embed the claim without its citation, and a long one in parts,
    the first of which starts with the lead and the fillers that make it unique."""
    return " ".join(_WORDS.findall(text.casefold())[:8])


def echo_compose(body: dict, paraphrase_share: float, seed: int) -> tuple[str, list[str]]:
    """(the answer, its reworded claims without citations)."""
    user = _user_text(body)
    m = re.search(r"Question:\n(.*?)\n\n", user, re.DOTALL)
    question = m.group(1).strip() if m else ""
    language = "pt" if "Portuguese" in (re.search(r"Answer in ([^,\n]+)", user) or [None, ""])[1] else "en"
    docs = re.findall(r"Document \[([^\]\n]+)\]:\n(.*?)(?=\n\nDocument \[|\n\nAnswer in |\Z)", user, re.DOTALL)
    q_words = _words(question)
    quoted: list[tuple[str, str]] = []
    for doc_id, text in docs:
        sentences = _usable_sentences(text)
        if sentences:
            best = max(sentences, key=lambda s: (len(_words(s) & q_words), -sentences.index(s)))
            quoted.append((doc_id, best))
            if len(sentences) > 1:
                second = next(s for s in sentences if s != best)
                quoted.append((doc_id, second))
    if not quoted:
        return "The documents do not answer this question.", []
    lines = [_cite(quoted[0][1], quoted[0][0])]
    reworded: list[str] = []
    if len(quoted) > 1 and _unit(seed, "paraphrase", question) < paraphrase_share:
        # A reworded claim: the sentence behind filler words that are not in the chunk. The number of
        # fillers puts the claim's lexical support near 2/3, inside the judge's semantic band; their
        # choice and order, drawn per question (and so per tagged request), make each claim a new text
        # for the server's embedding cache.
        doc_id, sentence = quoted[1]
        n = min(max(3, math.ceil(len(_words(sentence)) / 2)), len(FILLERS[language]))
        fillers = random.Random(f"{seed}:{question}:{sentence}").sample(FILLERS[language], n)
        lead = "Em resumo" if language == "pt" else "In short"
        claim = f"{lead} ({', '.join(fillers)}): {sentence}"
        reworded.append(claim)
        lines.append(_cite(claim, doc_id))
    return "\n".join(lines), reworded


def echo_judge(body: dict) -> str:
    user = _user_text(body)
    answer = user.split("Answer to audit:", 1)[1] if "Answer to audit:" in user else ""
    cited = bool(re.search(r"\[[^\[\]\s][^\[\]]*\]", answer))
    figures = bool(re.search(r"\d", re.sub(r"\[[^\]]*\]", "", answer)))
    if cited:
        scores = {"quality": 0.88, "utility": 0.86 if figures else 0.8, "groundedness": 0.92}
        reasons = ("cited and structured", "gives concrete figures" if figures else "actionable but few figures",
                   "claims restate the cited documents")
    elif figures:  # figures nobody vouches for
        scores = {"quality": 0.5, "utility": 0.6, "groundedness": 0.2}
        reasons = ("no citations", "figures without sources", "figures cite no document")
    else:  # "I found no information about ...": nothing claimed, little to act on
        scores = {"quality": 0.75, "utility": 0.6, "groundedness": 0.9}
        reasons = ("clear but says the documents do not answer", "little to act on", "claims nothing")
    decision = "OK" if min(scores.values()) >= 0.8 else ("BLOCK" if min(scores.values()) < 0.5 else "WARNING")
    return json.dumps({"scores": scores, "reasoning": dict(zip(("quality", "utility", "groundedness"), reasons)),
                       "final_decision": decision})


def echo_decompose(body: dict) -> str:
    question = _user_text(body).strip()
    tags = TAG_RE.findall(question)
    bare = TAG_RE.sub("", question).strip()
    if bare.count("?") >= 2:
        parts = [p.strip() for p in re.findall(r"[^?]+\?", bare)][:2]
    else:
        cuts = [m for m in _CONNECTIVES.finditer(bare) if 0 < m.start() and m.end() < len(bare)]
        if cuts:
            cut = min(cuts, key=lambda m: abs(m.start() - len(bare) / 2))
            parts = [bare[:cut.start()], bare[cut.end():]]
        else:
            words = bare.split()
            parts = [" ".join(words[: len(words) // 2]), " ".join(words[len(words) // 2:])]
    parts = [" ".join(p.strip(" ,;").split()) for p in parts if p.strip(" ,;?.")]
    if tags:
        parts = [f"{p} {tags[0]}" for p in parts]
    return json.dumps({"sub_queries": parts}, ensure_ascii=False)


# --- replies ------------------------------------------------------------------------------------


def chat_completion(body: dict, content: str) -> dict:
    return {"id": "chatcmpl-bench-" + hashlib.sha1(content.encode()).hexdigest()[:12], "object": "chat.completion",
            "created": int(time.time()), "model": body.get("model") or "echo",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content, "refusal": None},
                         "logprobs": None, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 0, "completion_tokens": len(content.split()),
                      "total_tokens": len(content.split())}}


def chat_events(body: dict, content: str, piece_chars: int = 24) -> bytes:
    cid, created, model = "chatcmpl-bench-" + hashlib.sha1(content.encode()).hexdigest()[:12], int(time.time()), \
        body.get("model") or "echo"

    def chunk(delta: dict, finish: str | None = None) -> bytes:
        data = {"id": cid, "object": "chat.completion.chunk", "created": created, "model": model,
                "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]}
        return b"data: " + json.dumps(data).encode() + b"\n\n"

    out = [chunk({"role": "assistant", "content": ""})]
    out += [chunk({"content": content[i:i + piece_chars]}) for i in range(0, len(content), piece_chars)]
    out.append(chunk({}, "stop"))
    if (body.get("stream_options") or {}).get("include_usage"):
        usage = {"prompt_tokens": 0, "completion_tokens": len(content.split()), "total_tokens": len(content.split())}
        out.append(b"data: " + json.dumps({"id": cid, "object": "chat.completion.chunk", "created": created,
                                           "model": model, "choices": [], "usage": usage}).encode() + b"\n\n")
    out.append(b"data: [DONE]\n\n")
    return b"".join(out)


class Provider:
    """The provider's state: the models, the fault plan, the counters and the call log."""

    def __init__(self, rates: dict[str, float], seed: int, provider_timeout: float, paraphrase: float = 0.5,
                 chat_url: str | None = None, chat_model: str | None = None, chat_key: str = "none"):
        self.rates, self.seed, self.provider_timeout = rates, seed, provider_timeout
        self.paraphrase = paraphrase
        self.chat_url, self.chat_model, self.chat_key = (chat_url.rstrip("/") if chat_url else None), chat_model, chat_key
        self.enabled = False
        self.lock = threading.Lock()
        self.calls: list[dict[str, Any]] = []
        self.t0 = time.monotonic()
        self.stopping = threading.Event()
        self._embedder = None
        self._embedder_lock = threading.Lock()
        self._attempts: dict[str, int] = {}
        self.inflight = 0  # model calls being answered (a timeout fault is one for provider_timeout + 1 s)
        self._claims: OrderedDict[str, list[str]] = OrderedDict()  # reworded claim -> tags of its request

    @property
    def embedder(self):
        with self._embedder_lock:
            if self._embedder is None:
                from graph.providers.embeddings import UseMultilingualEmbeddings

                self._embedder = UseMultilingualEmbeddings()
            return self._embedder

    def decide(self, cls: str, body_hash: str, attempt: int) -> str | None:
        """The injected fault for this attempt, or None."""
        rate = self.rates.get(cls, 0.0)
        if not self.enabled or rate <= 0 or _unit(self.seed, cls, body_hash, attempt) >= rate:
            return None
        return FAULT_KINDS[int(_unit(self.seed, "kind", cls, body_hash, attempt) * len(FAULT_KINDS))]

    def attempt_number(self, body_hash: str) -> int:
        """How many times this exact body came before: a client's retry, or another caller asking the
        same (the judge re-embedding a claim compose's check could not): each gets its own draw."""
        with self.lock:
            seen = self._attempts.get(body_hash, 0)
            self._attempts[body_hash] = seen + 1
            if len(self._attempts) > 200_000:
                self._attempts.clear()
        return seen

    def record(self, entry: dict[str, Any]) -> None:
        with self.lock:
            entry["n"] = len(self.calls)
            self.calls.append(entry)
            self.inflight += 1

    def stats(self) -> dict[str, Any]:
        with self.lock:
            calls = list(self.calls)
        out: dict[str, Any] = {"enabled": self.enabled, "rates": self.rates, "seed": self.seed, "calls": len(calls),
                               "inflight": self.inflight,
                               "by_kind": {}, "faults": {c: {k: 0 for k in FAULT_KINDS} for c in CLASSES}}
        for c in calls:
            slot = out["by_kind"].setdefault(c["kind"], {"calls": 0, "faulted_phase_calls": 0, "faults": 0})
            slot["calls"] += 1
            slot["faulted_phase_calls"] += bool(c["faults_on"])
            if c["fault"]:
                slot["faults"] += 1
                out["faults"][c["class"]][c["fault"]] += 1
        return out

    def embed(self, body: dict) -> dict:
        inputs = body.get("input")
        if isinstance(inputs, str):
            inputs = [inputs]
        if not isinstance(inputs, list) or not all(isinstance(t, str) for t in inputs):
            raise ValueError("input must be a string or a list of strings (token ids are not supported)")
        vectors = self.embedder.embed_documents(inputs) if inputs else []
        b64 = body.get("encoding_format") == "base64"
        data = [{"object": "embedding", "index": i,
                 "embedding": base64.b64encode(struct.pack(f"<{len(v)}f", *v)).decode() if b64 else v}
                for i, v in enumerate(vectors)]
        tokens = sum(len(t.split()) for t in inputs)
        return {"object": "list", "data": data, "model": body.get("model") or "use-multilingual",
                "usage": {"prompt_tokens": tokens, "total_tokens": tokens}}

    def remember_claims(self, claims: list[str], tags: list[str]) -> None:
        with self.lock:
            for claim in claims:
                self._claims[claim_key(claim)] = list(tags)
                self._claims.move_to_end(claim_key(claim))
            while len(self._claims) > 100_000:
                self._claims.popitem(last=False)

    def claim_tags(self, texts: list[str]) -> list[str]:
        """Tags of the requests whose reworded claims are among `texts` (an embeddings call of the
        groundedness checks, in compose's draft check or in the judge)."""
        with self.lock:
            return sorted({t for text in texts for t in self._claims.get(claim_key(text), [])})

    def chat(self, body: dict, kind: str) -> str:
        if self.chat_url:
            return self.upstream_chat(body)
        if kind == "compose":
            content, claims = echo_compose(body, self.paraphrase, self.seed)
            if claims:
                self.remember_claims(claims, TAG_RE.findall(_user_text(body)))
            return content
        if kind == "judge":
            return echo_judge(body)
        if kind == "decompose":
            return echo_decompose(body)
        return "ok"

    def upstream_chat(self, body: dict) -> str:
        import httpx

        forward = {k: v for k, v in body.items() if k not in ("stream", "stream_options")}
        if self.chat_model:
            forward["model"] = self.chat_model
        r = httpx.post(f"{self.chat_url}/chat/completions", json=forward, timeout=600.0,
                       headers={"Authorization": f"Bearer {self.chat_key}"})
        r.raise_for_status()
        return r.json()["choices"][0]["message"]["content"] or ""


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as the openai SDK's connection pool expects
    server: ProviderServer

    def log_message(self, format: str, *args: Any) -> None:  # quiet: the call log says what happened
        pass

    def _send(self, status: int, body: bytes, content_type: str = "application/json") -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _json(self, status: int, obj: Any) -> None:
        self._send(status, json.dumps(obj).encode())

    def _read_body(self) -> bytes:
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def do_GET(self) -> None:
        provider = self.server.provider
        url = urllib.parse.urlsplit(self.path)
        if url.path == "/_bench/stats":
            self._json(200, provider.stats())
        elif url.path == "/_bench/calls":
            since = int((urllib.parse.parse_qs(url.query).get("since") or ["0"])[0])
            with provider.lock:
                calls = [dict(c) for c in provider.calls[since:]]
            self._json(200, {"calls": calls, "next": since + len(calls)})
        elif url.path in ("/_bench/health", "/health"):
            self._json(200, {"ok": True})
        else:
            self._json(404, {"error": {"message": f"no route {url.path}"}})

    def do_POST(self) -> None:
        provider = self.server.provider
        path = urllib.parse.urlsplit(self.path).path
        raw = self._read_body()
        if path == "/_bench/faults":
            try:
                provider.enabled = bool(json.loads(raw or b"{}").get("enabled"))
            except (ValueError, AttributeError):
                self._json(400, {"error": "send {\"enabled\": true|false}"})
                return
            self._json(200, provider.stats())
            return
        if path not in ("/v1/embeddings", "/v1/chat/completions"):
            self._json(404, {"error": {"message": f"no route {path}", "type": "invalid_request_error"}})
            return
        started = time.monotonic()
        try:
            body = json.loads(raw)
            if not isinstance(body, dict):
                raise ValueError("the body is not a JSON object")
        except ValueError as exc:
            self._json(400, {"error": {"message": f"bad request body: {exc}", "type": "invalid_request_error"}})
            return
        cls = "embedding" if path == "/v1/embeddings" else "chat"
        kind = "embeddings" if cls == "embedding" else request_kind(body)
        body_hash = hashlib.sha256(raw).hexdigest()[:16]
        attempt = provider.attempt_number(body_hash)
        retry_header = (self.headers.get("x-stainless-retry-count") or "").strip()
        retry = int(retry_header) if retry_header.isdigit() else attempt  # the client's own retry count
        text = " ".join(body.get("input") if isinstance(body.get("input"), list) and all(
            isinstance(t, str) for t in body["input"]) else [str(body.get("input") or "")]) if cls == "embedding" \
            else _user_text(body)
        tags = sorted(set(TAG_RE.findall(text)))
        if cls == "embedding" and not tags and isinstance(body.get("input"), list):
            tags = provider.claim_tags([t for t in body["input"] if isinstance(t, str)])
            kind = "claim_embeddings" if tags else kind
        entry: dict[str, Any] = {"t": round(started - provider.t0, 4), "class": cls, "kind": kind,
                                 "tags": tags, "hash": body_hash, "retry": retry, "attempt": attempt,
                                 "faults_on": provider.enabled, "fault": provider.decide(cls, body_hash, attempt),
                                 "status": None, "ms": None, "client_gone": False, "error": None,
                                 "inputs": len(body["input"]) if cls == "embedding" and isinstance(body.get("input"), list) else 1,
                                 # an untraced call says what it was (the log never holds prompts otherwise)
                                 "text": None if tags else text[:160]}
        provider.record(entry)  # logged on arrival (the log's order), completed below
        try:
            self._answer(provider, body, cls, kind, entry)
        except (TimeoutError, BrokenPipeError, ConnectionResetError):
            entry["client_gone"] = True
            self.close_connection = True
        finally:
            entry["ms"] = round((time.monotonic() - started) * 1000, 1)
            with provider.lock:
                provider.inflight -= 1

    def _answer(self, provider: Provider, body: dict, cls: str, kind: str, entry: dict[str, Any]) -> None:
        fault = entry["fault"]
        if fault in ("http_500", "http_503"):
            status = int(fault[-3:])
            entry["status"] = status
            self._json(status, {"error": {"message": f"injected fault ({fault})", "type": "server_error"}})
            return
        if fault == "hangup":
            self.close_connection = True  # closed without a response: the client sees a dropped connection
            return
        if fault == "timeout":
            provider.stopping.wait(provider.provider_timeout + 1.0)  # past the client's timeout, then hang up
            self.close_connection = True
            return
        stream = cls == "chat" and bool(body.get("stream"))
        if fault == "garbage":
            entry["status"] = 200
            if stream:
                self._send(200, b"data: {\"choices\": [{\"delta\": {\"content\": \"tru\n\n", "text/event-stream")
            else:
                self._send(200, b"<html><body>502 Bad Gateway (injected garbage)</body></html>")
            return
        try:
            if cls == "embedding":
                reply = json.dumps(provider.embed(body)).encode()
                content_type = "application/json"
            else:
                content = provider.chat(body, kind)
                reply = chat_events(body, content) if stream else json.dumps(chat_completion(body, content)).encode()
                content_type = "text/event-stream" if stream else "application/json"
        except Exception as exc:  # a real failure of this provider (bad input, upstream down): said, not hidden
            entry["status"], entry["error"] = 500, f"{type(exc).__name__}: {str(exc)[:200]}"
            self._json(500, {"error": {"message": f"provider failure: {type(exc).__name__}: {exc}", "type": "server_error"}})
            return
        entry["status"] = 200
        self._send(200, reply, content_type)


class ProviderServer(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256  # the ragate server opens up to ~20 connections at once

    def __init__(self, provider: Provider, port: int = 0):
        super().__init__(("127.0.0.1", port), Handler)
        self.provider = provider

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (default: a free one)")
    ap.add_argument("--faults", default="embedding=0.1,chat=0.1", help="rates per call class (default %(default)s)")
    ap.add_argument("--seed", type=int, default=13, help="seed of the fault draws (default 13)")
    ap.add_argument("--provider-timeout", type=float, default=2.0,
                    help="the ragate server's RAGATE_PROVIDER_TIMEOUT: a timeout fault answers nothing for this + 1 s")
    ap.add_argument("--paraphrase", type=float, default=0.5, help="share of compose replies with a reworded claim")
    ap.add_argument("--chat-url", help="proxy chat requests to this OpenAI-compatible base URL (…/v1)")
    ap.add_argument("--chat-model", help="with --chat-url: the model name to ask for")
    ap.add_argument("--chat-key", default="none", help="with --chat-url: its API key")
    ap.add_argument("--enable", action="store_true", help="start with faults on (default: off until POST /_bench/faults)")
    args = ap.parse_args(argv)
    try:
        rates = parse_faults(args.faults)
    except ValueError as exc:
        ap.error(f"--faults: {exc}")
    provider = Provider(rates, args.seed, args.provider_timeout, args.paraphrase, args.chat_url, args.chat_model,
                        args.chat_key)
    provider.enabled = args.enable
    provider.embedder.embed_query("warm up")  # load the weights now, not inside the server's first (timed) call
    server = ProviderServer(provider, args.port)

    def stop(signum, frame):
        provider.stopping.set()
        threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    print(json.dumps({"url": server.url, "openai_base_url": f"{server.url}/v1"}), flush=True)
    try:
        server.serve_forever(poll_interval=0.2)
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
