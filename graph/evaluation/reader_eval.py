"""`ragate eval reader`: the reader measured alone, on the parts of its sets that training never saw.

Span sets (SQuAD format): exact match and F1 of the best span (the official SQuAD 1.1 scoring, the best over the
gold answers), and where a set has unanswerable questions, the no-answer decision's accuracy over every question
(the span's score against the no-answer score, threshold 0), with its recall on the unanswerable ones.
Yes/no sets: accuracy of yes against no (BoolQ's measure), and how often the reader says "not stated" instead.
Entailment sets: 3-way accuracy, and ASSIN 2's 2-way (entailment against the rest); each label's recall.
Speed: milliseconds a window of the reader's full length takes alone (p50, p95), and a whole question read over
four passages in one call.

The held-aside parts come from `graph.evaluation.reader_sets` (the rule the training uses). BoolQ's held-aside part
is also read in Portuguese, put there sentence by sentence with the bundled Bergamot model; the translation is kept
in the output folder and reused.
"""

from __future__ import annotations

import json
import random
import statistics
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from graph.evaluation.answers import squad_scores
from graph.evaluation.reader_sets import (
    CONTRADICTION,
    ENTAILMENT,
    NO,
    NOT_ENTAILMENT,
    YES,
    PairExample,
    ReaderDataError,
    SpanExample,
    read_nli_jsonl,
    read_squad,
    reader_sets,
)
from graph.providers.reader import Reader

SPEED_RUNS = 200
QUESTION_PASSAGES = 4


def _rate(part: int, whole: int) -> float | None:
    return round(part / whole, 4) if whole else None


def score_spans(reader: Reader, examples: list[SpanExample]) -> dict[str, Any]:
    """EM / F1 over answerable questions (best span, forced), and the no-answer decision where there are
    unanswerable ones. Questions about one context are read together."""
    by_context: dict[str, list[SpanExample]] = {}
    for ex in examples:
        by_context.setdefault(ex.context, []).append(ex)
    em = f1 = 0.0
    answerable = unanswerable = right_decisions = abstained_right = 0
    for context, group in by_context.items():
        for ex in group:
            reading = reader.spans(ex.question, [context])[0]
            says_answer = reading.score > 0
            if ex.answers:
                answerable += 1
                e, f = squad_scores(reading.text, [text for text, _ in ex.answers])
                em, f1 = em + e, f1 + f
                right_decisions += says_answer
            else:
                unanswerable += 1
                right_decisions += not says_answer
                abstained_right += not says_answer
    out: dict[str, Any] = {"questions": len(examples), "answerable": answerable,
                           "em": _rate(em, answerable), "f1": _rate(f1, answerable)}
    if unanswerable:
        out |= {"unanswerable": unanswerable,
                "noanswer_acc": _rate(right_decisions, answerable + unanswerable),
                "noanswer_recall": _rate(abstained_right, unanswerable)}
    return out


def score_yesno(reader: Reader, examples: list[PairExample]) -> dict[str, Any]:
    right = not_stated = 0
    for ex in examples:
        choice = reader.yes_no(ex.first, [ex.second])[0]
        p = choice.probabilities
        right += (YES if p[YES] >= p[NO] else NO) == ex.label
        not_stated += choice.label == "not_stated"
    counts = Counter(ex.label for ex in examples)
    return {"questions": len(examples), "acc": _rate(right, len(examples)),
            "majority_acc": _rate(max(counts.values()), len(examples)) if examples else None,
            "not_stated_rate": _rate(not_stated, len(examples))}


def score_nli(reader: Reader, examples: list[PairExample]) -> dict[str, Any]:
    """3-way accuracy when the set has three labels; 2-way (entailment or not) when it has "not entailment"."""
    choices = []
    for at in range(0, len(examples), 64):
        part = examples[at : at + 64]
        choices += reader.entailment([(ex.first, ex.second) for ex in part])
    two_way = any(ex.label == NOT_ENTAILMENT for ex in examples)
    right, recall = 0, Counter()
    for ex, choice in zip(examples, choices):
        predicted = choice.label
        if two_way:
            predicted = ENTAILMENT if predicted == ENTAILMENT else NOT_ENTAILMENT
        right += predicted == ex.label
        recall[ex.label] += predicted == ex.label
    counts = Counter(ex.label for ex in examples)
    return {"pairs": len(examples), "acc": _rate(right, len(examples)),
            "recall": {label: _rate(recall[label], n) for label, n in sorted(counts.items())},
            "predicted": dict(Counter(c.label for c in choices))}


def translated_boolq(examples: list[PairExample], out_dir: Path) -> list[PairExample]:
    """BoolQ's held-aside items in Portuguese (question and passage, sentence by sentence), cached in out_dir."""
    from graph.algorithms.text import split_sentences
    from graph.providers.translation import translator_for

    cache_path = out_dir / "boolq_pt.jsonl"
    cached: dict[str, dict] = {}
    if cache_path.is_file():
        for line in cache_path.read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            cached[row["id"]] = row
    translator = None
    out = []
    with cache_path.open("a", encoding="utf-8") as sink:
        for ex in examples:
            row = cached.get(ex.id)
            if row is None:
                translator = translator or translator_for("local/bergamot-tiny")
                question = translator.translate(ex.first, "en", "pt")
                passage = " ".join(translator.translate(s, "en", "pt") for s in split_sentences(ex.second))
                row = {"id": ex.id, "question": question, "passage": passage}
                sink.write(json.dumps(row, ensure_ascii=False) + "\n")
            out.append(PairExample(f"{ex.id}-pt", row["question"], row["passage"], ex.label, "pt", "boolq-pt"))
    return out


def speed(reader: Reader, spans: list[SpanExample]) -> dict[str, Any]:
    """ms for one window of the reader's full length alone (a shorter window padded to it: onnxruntime does the
    same work for padding), and for one question read over QUESTION_PASSAGES passages in one call: passages of at
    most one window (what a caller hands the reader: a chunk's best window), and, for the record, whole contexts."""
    rng = random.Random(7)
    contexts = sorted({ex.context for ex in spans}, key=len, reverse=True)
    if not contexts:
        return {}
    questions = [ex.question for ex in spans]
    windows = [reader.windows(rng.choice(questions), [c])[0][1] for c in contexts[: max(10, len(contexts) // 4)]]
    one_window = []
    for context in contexts:
        window = reader.windows(rng.choice(questions), [context])[0][1]
        last = max(i for i, s in enumerate(window.sequence_ids) if s == 1)
        one_window.append(context[: window.offsets[last][1]])
    for _ in range(5):  # warm-up
        reader.run_padded([windows[0]], reader.max_length)
    window_ms, question_ms, whole_ms = [], [], []
    for _ in range(SPEED_RUNS):
        window = rng.choice(windows)
        begin = time.perf_counter()
        reader.run_padded([window], reader.max_length)
        window_ms.append((time.perf_counter() - begin) * 1000)
    for _ in range(SPEED_RUNS // 4):
        for pool, times in ((one_window, question_ms), (contexts, whole_ms)):
            passages = rng.sample(pool, min(QUESTION_PASSAGES, len(pool)))
            begin = time.perf_counter()
            reader.read(rng.choice(questions), passages)
            times.append((time.perf_counter() - begin) * 1000)

    def p95(values: list[float]) -> float:
        return round(statistics.quantiles(values, n=100)[94], 2)

    return {"window_ms_p50": round(statistics.median(window_ms), 2), "window_ms_p95": p95(window_ms),
            "window_tokens": reader.max_length, "question_passages": QUESTION_PASSAGES,
            "question_ms_p50": round(statistics.median(question_ms), 2), "question_ms_p95": p95(question_ms),
            "question_whole_contexts_ms_p50": round(statistics.median(whole_ms), 2)}


def run_reader_eval(reader: Reader, data_dir: Path | None, out_dir: Path, *, squad_files: list[Path] = (),
                    nli_files: list[Path] = (), language: str = "en",
                    progress: Callable[[str], None] = lambda _: None) -> dict[str, Any]:
    """Every measure the sets found allow; `metrics` holds the issue's keys, `sets` the details."""
    sets_out: dict[str, Any] = {}
    metrics: dict[str, Any] = {}
    spans_for_speed: list[SpanExample] = []
    if data_dir is not None:
        sets = reader_sets(data_dir)
        for name, examples in sets.eval_spans.items():
            progress(f"span: {name} ({len(examples)} questions)")
            sets_out[name] = score_spans(reader, examples)
            spans_for_speed += examples
        for name, examples in sets.eval_yesno.items():
            progress(f"yes/no: {name} ({len(examples)} questions)")
            sets_out[name] = score_yesno(reader, examples)
            progress(f"yes/no: {name} in Portuguese (translating once, kept in {out_dir})")
            sets_out[f"{name}_pt"] = score_yesno(reader, translated_boolq(examples, out_dir))
        for name, examples in sets.eval_nli.items():
            progress(f"entailment: {name} ({len(examples)} pairs)")
            sets_out[name] = score_nli(reader, examples)
        metrics = {
            "faquad_f1": sets_out.get("faquad", {}).get("f1"),
            "xquad_en_f1": sets_out.get("xquad_en", {}).get("f1"),
            "squad2pt_noanswer_acc": sets_out.get("squad2_pt", {}).get("noanswer_acc"),
            "boolq_acc": sets_out.get("boolq", {}).get("acc"),
            "boolq_pt_acc": sets_out.get("boolq_pt", {}).get("acc"),
            "assin2_acc": sets_out.get("assin2", {}).get("acc"),
            "sick_acc": sets_out.get("sick", {}).get("acc"),
            "sick_contradiction_recall": sets_out.get("sick", {}).get("recall", {}).get(CONTRADICTION),
        }
    for path in squad_files:
        progress(f"span: {path}")
        examples = [ex for _, ex in read_squad(path, language, path.stem)]
        if not examples:
            raise ReaderDataError(f"{path}: no questions")
        sets_out[f"squad:{path}"] = score_spans(reader, examples)
        spans_for_speed += examples
    for path in nli_files:
        progress(f"entailment: {path}")
        sets_out[f"nli:{path}"] = score_nli(reader, read_nli_jsonl(path))
    progress("speed")
    timing = speed(reader, spans_for_speed)
    metrics |= {key: timing.get(key) for key in ("window_ms_p50", "window_ms_p95", "question_ms_p50")}
    return {"metrics": metrics, "sets": sets_out, "speed": timing, "model": reader.manifest}


def markdown(result: dict[str, Any]) -> str:
    lines = ["| measure | value |", "|---|---:|"]
    lines += [f"| {key} | {value if value is not None else '—'} |" for key, value in result["metrics"].items()]
    lines += ["", "| set | figures |", "|---|---|"]
    for name, figures in result["sets"].items():
        lines.append(f"| {name} | " + ", ".join(f"{k} {v}" for k, v in figures.items()) + " |")
    return "\n".join(lines) + "\n"
