"""ragate's reader: which words of a passage answer a question, whether it says yes or no, whether it entails a claim.

The model is ragate's own (``training/reader/``, its card ``training/reader/MODEL_CARD.md``): multilingual-e5-small
with an English + Portuguese vocabulary, cut to its first layers, with three heads trained here. It ships as int8
ONNX beside this module (``reader_files/``) with its tokenizer and a manifest holding both files' SHA-256, and runs
offline on onnxruntime. This module is the only one that loads it.

    reader = load_reader()                      # ReaderUnavailable (one line naming the file) when it cannot load
    spans, yesno = reader.read(question, passages)        # one pass over every window: both readings
    reader.entailment([(premise, claim), ...])

A passage longer than a window (``max_length`` tokens with the question) is read in overlapping windows; its span
is the best over them, its no-answer score the lowest, its yes/no the window most sure of a yes or a no.
"""

from __future__ import annotations

import functools
import json
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from graph.providers.local_models import file_sha256
from graph.providers.specs import ProviderError

READER_FOLDER = Path(__file__).resolve().parent / "reader_files"
MANIFEST = "manifest.json"
# The longest answer the span head may return, in tokens: SQuAD-style answers are short phrases.
MAX_ANSWER_TOKENS = 30


class ReaderUnavailable(ProviderError):
    """The reader's files are missing, corrupt or do not load: ragate answers without it."""


@dataclass(frozen=True)
class SpanReading:
    """The best answer span of one passage. `score` is the span's logit sum minus the no-answer score: above 0,
    the model finds the span likelier than "this passage does not answer"."""

    passage: int
    text: str
    start: int  # character offsets in the passage
    end: int
    score: float
    probability: float  # the span's share of the window's span distribution (start x end), no-answer included
    no_answer_probability: float


@dataclass(frozen=True)
class Choice:
    label: str
    probabilities: dict[str, float]

    @property
    def confidence(self) -> float:
        return self.probabilities[self.label]


def _softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


class Reader:
    """The loaded model: an onnxruntime session over every core (up to 4) and the tokenizer."""

    def __init__(self, folder: Path = READER_FOLDER, threads: int | None = None):
        import os

        import onnxruntime as ort
        from tokenizers import Tokenizer

        manifest_path = folder / MANIFEST
        if not manifest_path.is_file():
            raise ReaderUnavailable(f"reader: {manifest_path} is missing (reinstall ragate, or rebuild the model: "
                                    "make reader)")
        try:
            manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
            files = manifest["files"]
        except (json.JSONDecodeError, KeyError, TypeError) as exc:
            raise ReaderUnavailable(f"reader: {manifest_path} is not a reader manifest ({exc})") from None
        for name, entry in files.items():
            path = folder / name
            if not path.is_file():
                raise ReaderUnavailable(f"reader: {path} is missing (reinstall ragate, or rebuild it: make reader)")
            if file_sha256(path) != entry["sha256"]:
                raise ReaderUnavailable(f"reader: {path} is corrupt (its SHA-256 is not the one in {MANIFEST}); "
                                        "reinstall ragate")
        onnx_name = next(name for name in files if name.endswith(".onnx"))
        try:
            options = ort.SessionOptions()
            options.intra_op_num_threads = threads or max(1, min(4, os.cpu_count() or 1))
            options.inter_op_num_threads = 1
            self._session = ort.InferenceSession(str(folder / onnx_name), options,
                                                 providers=["CPUExecutionProvider"])
            self._tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        except Exception as exc:  # a file that hashes right but does not load: one line
            raise ReaderUnavailable(f"reader: {folder / onnx_name} did not load: {type(exc).__name__}: "
                                    f"{str(exc)[:200]}") from None
        self._tokenizer.no_padding()
        self.manifest = manifest
        self.max_length = int(manifest["max_length"])
        self.stride = int(manifest["stride"])
        self.nli_length = int(manifest["nli_length"])
        # Files exported before the manifest named it were trained with 64 (training/reader/features.py).
        self.max_question = int(manifest.get("max_question", 64))
        self.pad_id = int(manifest["pad_id"])
        self.yesno_labels = tuple(manifest["labels"]["yesno"])
        self.nli_labels = tuple(manifest["labels"]["nli"])
        self._lock = threading.Lock()  # truncation settings are the tokenizer's state

    # ------------------------------------------------------------------ windows and runs

    def question_read(self, question: str) -> str:
        """The question as the model reads it: cut to its first `max_question` tokens, as in training
        (training/reader/features.py MAX_QUESTION). A longer one would leave its passage less room than the
        window stride, which the tokenizer refuses (it panics: not an Exception)."""
        with self._lock:
            encoding = self._tokenizer.encode(question, add_special_tokens=False)
        if len(encoding.ids) <= self.max_question:
            return question
        return question[: encoding.offsets[self.max_question - 1][1]]

    def windows(self, question: str, passages: Sequence[str]) -> list[tuple[int, object]]:
        """(passage index, encoding) for every window of every passage."""
        question = self.question_read(question)
        with self._lock:
            self._tokenizer.enable_truncation(self.max_length, stride=self.stride, strategy="only_second")
            try:
                encodings = self._tokenizer.encode_batch([(question, p) for p in passages])
            finally:
                self._tokenizer.no_truncation()
        return [(i, w) for i, enc in enumerate(encodings) for w in [enc, *enc.overflowing]]

    def run_padded(self, encodings: list, width: int) -> list[np.ndarray]:
        """The model's four outputs for encodings padded to `width` tokens, in one call."""
        ids = np.full((len(encodings), width), self.pad_id, dtype=np.int64)
        mask = np.zeros_like(ids)
        for row, encoding in enumerate(encodings):
            n = len(encoding.ids)
            ids[row, :n] = encoding.ids
            mask[row, :n] = 1
        return self._session.run(None, {"input_ids": ids, "attention_mask": mask})

    def _run(self, encodings: list) -> list[list[np.ndarray]]:
        """The four outputs of each encoding, each window in a call of its own. The model's int8 matrix products
        scale their inputs by the range of the whole call (onnxruntime's dynamic quantisation), so a window read
        beside others, or padded, would read slightly differently from the same window alone; alone, a (question,
        passage) always reads the same, and no work goes to padding."""
        out = []
        for encoding in encodings:
            start, end, yesno, nli = self.run_padded([encoding], len(encoding.ids))
            out.append([start[0], end[0], yesno[0], nli[0]])
        return out

    # ------------------------------------------------------------------ readings

    def read(self, question: str, passages: Sequence[str]) -> tuple[list[SpanReading], list[Choice]]:
        """The best span and the yes/no reading of each passage, from one pass over their windows."""
        if not passages:
            return [], []
        windows = self.windows(question, passages)
        outputs = self._run([w for _, w in windows])
        spans: list[SpanReading | None] = [None] * len(passages)
        yesno: list[Choice | None] = [None] * len(passages)
        for (index, window), (start, end, yesno_logits, _) in zip(windows, outputs):
            reading = self._best_span(index, passages[index], window, start, end)
            kept = spans[index]
            if kept is None or reading.score > kept.score:
                spans[index] = reading
            choice = self._choice(yesno_logits, self.yesno_labels)
            held = yesno[index]
            decided = 1 - choice.probabilities["not_stated"]
            if held is None or decided > 1 - held.probabilities["not_stated"]:
                yesno[index] = choice
        return [s for s in spans if s is not None], [c for c in yesno if c is not None]

    def spans(self, question: str, passages: Sequence[str]) -> list[SpanReading]:
        return self.read(question, passages)[0]

    def yes_no(self, question: str, passages: Sequence[str]) -> list[Choice]:
        return self.read(question, passages)[1]

    def entailment(self, pairs: Sequence[tuple[str, str]]) -> list[Choice]:
        """Entails / contradicts / neither, for each (premise, claim); the longer text gives way when a pair is
        longer than the model's entailment length."""
        if not pairs:
            return []
        with self._lock:
            self._tokenizer.enable_truncation(self.nli_length, strategy="longest_first")
            try:
                encodings = self._tokenizer.encode_batch(list(pairs))
            finally:
                self._tokenizer.no_truncation()
        return [self._choice(out[3], self.nli_labels) for out in self._run(encodings)]

    @staticmethod
    def _choice(logits: np.ndarray, labels: tuple[str, ...]) -> Choice:
        probabilities = _softmax(logits.astype(np.float64))
        return Choice(labels[int(probabilities.argmax())], {label: float(p) for label, p in zip(labels, probabilities)})

    @staticmethod
    def _best_span(index: int, passage: str, window, start: np.ndarray, end: np.ndarray) -> SpanReading:
        context = np.array([s == 1 for s in window.sequence_ids])
        null = float(start[0] + end[0])
        start_c = np.where(context, start, -np.inf)
        end_c = np.where(context, end, -np.inf)
        scores = start_c[:, None] + end_c[None, :]
        n = len(start)
        allowed = np.triu(np.ones((n, n), dtype=bool)) & ~np.triu(np.ones((n, n), dtype=bool), MAX_ANSWER_TOKENS)
        scores = np.where(allowed, scores, -np.inf)
        flat = int(np.argmax(scores))
        i, j = divmod(flat, n)
        best = float(scores[i, j])
        # Probabilities over every (start, end) pair and "no answer", as the two softmaxes make them.
        start_p, end_p = _softmax(start.astype(np.float64)), _softmax(end.astype(np.float64))
        if not np.isfinite(best):
            return SpanReading(index, "", 0, 0, float("-inf"), 0.0, float(start_p[0] * end_p[0]))
        char_start, char_end = window.offsets[i][0], window.offsets[j][1]
        return SpanReading(index, passage[char_start:char_end].strip(), char_start, char_end, best - null,
                           float(start_p[i] * end_p[j]), float(start_p[0] * end_p[0]))


@functools.lru_cache(maxsize=1)
def _loaded(folder: str) -> Reader:
    return Reader(Path(folder))


def load_reader(folder: Path = READER_FOLDER) -> Reader:
    """The process's reader (loaded once). ReaderUnavailable, one line naming the file, when it cannot be."""
    return _loaded(str(folder))


def reader_status(folder: Path = READER_FOLDER) -> str:
    """"ok: <model>" or the one-line reason the reader is unavailable (for `ragate doctor`)."""
    try:
        reader = load_reader(folder)
    except ReaderUnavailable as exc:
        return str(exc)
    return f"ok: {reader.manifest.get('model', 'reader')}"
