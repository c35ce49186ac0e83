"""Examples turned into model inputs: token ids and the label of each head, in windows of at most MAX_LENGTH.

- span: (question, context) windows with a stride; the answer's first and last tokens, or (0, 0), the ``<s>``
  token, when the window does not hold the whole answer (SQuAD 2.0's convention for "no answer").
- yes/no: (question, passage), the passage cut to the window.
- entailment: (premise, hypothesis), each cut so that the pair fits NLI_LENGTH.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from graph.evaluation.reader_sets import NOT_ENTAILMENT, PairExample, SpanExample
from training.reader.model import NLI_LABELS, YESNO_LABELS

MAX_LENGTH = 256
STRIDE = 96  # tokens two consecutive windows share
MAX_QUESTION = 64
NLI_LENGTH = 160
TASKS = ("span", "yesno", "nli")
# The partial label "not entailment" (ASSIN's "None"): the loss is taken over contradiction and neutral together.
NLI_PARTIAL = len(NLI_LABELS)


@dataclass
class Feature:
    task: str
    ids: list[int]
    label: tuple[int, ...]  # span: (start, end); yes/no and entailment: (class,)


def _pair_tokenizer(tokenizer, max_length: int, stride: int = 0, strategy: str = "only_second"):
    tok = tokenizer.__class__.from_str(tokenizer.to_str())
    tok.enable_truncation(max_length=max_length, stride=stride, strategy=strategy)
    return tok


class Featurizer:
    def __init__(self, tokenizer):
        self.span_tokenizer = _pair_tokenizer(tokenizer, MAX_LENGTH, STRIDE)
        self.yesno_tokenizer = _pair_tokenizer(tokenizer, MAX_LENGTH)
        self.nli_tokenizer = _pair_tokenizer(tokenizer, NLI_LENGTH, strategy="longest_first")
        self.question_tokenizer = _pair_tokenizer(tokenizer, MAX_QUESTION + 2, strategy="longest_first")

    def _question(self, question: str) -> str:
        """The question cut to MAX_QUESTION tokens (a long one would leave no room for the context)."""
        enc = self.question_tokenizer.encode(question)
        content = [o for o, s in zip(enc.offsets, enc.sequence_ids) if s == 0]
        return question[: content[-1][1]] if content else question

    def span_windows(self, ex: SpanExample):
        """Every window of the example: (encoding, start token, end token), (0, 0) where it holds no answer."""
        enc = self.span_tokenizer.encode(self._question(ex.question), ex.context)
        out = []
        for window in [enc, *enc.overflowing]:
            start_token = end_token = 0
            if ex.answers:
                text, start = ex.answers[0]
                end = start + len(text)
                context_tokens = [i for i, s in enumerate(window.sequence_ids) if s == 1]
                first, last = context_tokens[0], context_tokens[-1]
                if window.offsets[first][0] <= start and window.offsets[last][1] >= end:
                    start_token = next(i for i in context_tokens if window.offsets[i][1] > start)
                    end_token = next(i for i in reversed(context_tokens) if window.offsets[i][0] < end)
            out.append((window, start_token, end_token))
        return out

    def spans(self, examples: list[SpanExample], rng: random.Random, empty_window_share: float = 0.3):
        """Training features: every window holding the answer, every window of an unanswerable question, and
        about `empty_window_share` of the windows of an answerable question that miss its answer."""
        out = []
        for ex in examples:
            for window, start, end in self.span_windows(ex):
                if ex.answers and start == 0 and rng.random() > empty_window_share:
                    continue
                out.append(Feature("span", window.ids, (start, end)))
        return out

    def yesno(self, examples: list[PairExample]):
        return [Feature("yesno", self.yesno_tokenizer.encode(ex.first, ex.second).ids,
                        (YESNO_LABELS.index(ex.label),)) for ex in examples]

    def nli(self, examples: list[PairExample]):
        return [Feature("nli", self.nli_tokenizer.encode(ex.first, ex.second).ids,
                        (NLI_PARTIAL if ex.label == NOT_ENTAILMENT else NLI_LABELS.index(ex.label),))
                for ex in examples]


def batches(features: list[Feature], rng: random.Random, max_tokens: int = 4096, max_batch: int = 96):
    """Features of one task grouped by length (padding wasted is small), each batch at most `max_tokens` padded
    tokens; the batches in random order."""
    by_task: dict[str, list[Feature]] = {}
    for f in features:
        by_task.setdefault(f.task, []).append(f)
    out = []
    for items in by_task.values():
        items = items[:]
        rng.shuffle(items)
        chunk = max_batch * 50
        for at in range(0, len(items), chunk):
            part = sorted(items[at : at + chunk], key=lambda f: len(f.ids))
            batch: list[Feature] = []
            for f in part:
                longest = max([len(f.ids)] + [len(b.ids) for b in batch[-1:]])
                if batch and (longest * (len(batch) + 1) > max_tokens or len(batch) >= max_batch):
                    out.append(batch)
                    batch = []
                batch.append(f)
            if batch:
                out.append(batch)
    rng.shuffle(out)
    return out
