"""Passages within a chunk: the part of it that answers.

A cross-encoder's cost grows with the length of what it reads, and a 450-token chunk usually answers a
question in two or three of its sentences. `best_window` picks the run of consecutive sentences, at most
`max_words` long, that holds the most of the question's terms (each counted once, rarer terms first
among ties by position), so the model scores the chunk's best part instead of its first 128 tokens.
`best_sentence_match` scores each chunk by its one sentence that best matches one part of a question.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence

from graph.algorithms.text import split_sentences


def best_window(text: str, question_terms: set, terms_of: Callable[[str], Iterable], max_words: int) -> str:
    """The window of `text` (whole sentences, at most `max_words` words; a longer first sentence is cut)
    holding the most distinct `question_terms` (`terms_of(sentence)` gives a sentence's terms); the
    earliest such window on a tie. `text` itself when it is short enough."""
    words = text.split()
    if len(words) <= max_words:
        return text
    sentences = [s for s in split_sentences(text) if s.strip()]
    if not sentences:
        return " ".join(words[:max_words])
    lengths = [len(s.split()) for s in sentences]
    held = [set(terms_of(s)) & question_terms for s in sentences]
    best, best_score = (0, 1), -1
    for start in range(len(sentences)):
        end, used, found = start, 0, set()
        while end < len(sentences) and (end == start or used + lengths[end] <= max_words):
            used += lengths[end]
            found |= held[end]
            end += 1
        if len(found) > best_score:
            best, best_score = (start, end), len(found)
        if end == len(sentences):
            break  # later starts only drop sentences from this window
    window = " ".join(sentences[best[0]:best[1]])
    cut = window.split()
    return window if len(cut) <= max_words else " ".join(cut[:max_words])


def best_sentence_match(texts: Sequence[str], parts: Sequence[set],
                        sentence_terms: Callable[[str], Sequence[frozenset]]) -> list[float]:
    """For each text, 0–1: the largest share of one part's terms that one of its sentences holds, each term
    weighted by its IDF over all the texts' sentences (a rare name counts more than "report").

    A many-part question is answered a part at a time, each part by a sentence or two somewhere in a
    document: a chunk whose one sentence holds most of a part is likelier to answer than one whose
    words match the whole question thinly, spread over 450 tokens. `parts`: each part's terms (the whole
    question's, for a question not split); `sentence_terms(text)`: the terms of each of its sentences."""
    sentences = [sentence_terms(text) for text in texts]
    # Only the parts' terms are counted or weighed: each sentence is cut to them first (a set
    # intersection), so a question reads ~500 sentences' worth of small sets, not their every term. A sentence
    # that holds none of them counts for the IDF, and is not looked at again.
    wanted = frozenset().union(*parts)
    held = [[h for h in (s & wanted for s in chunk) if h] for chunk in sentences]
    df = Counter(t for chunk in held for sentence in chunk for t in sentence)
    n = sum(len(chunk) for chunk in sentences)
    idf = {t: math.log(1 + n / (1 + df[t])) for t in wanted}
    totals = [(part, sum(idf[t] for t in part)) for part in parts]
    weighed = [(part, total) for part, total in totals if total]  # a part without terms matches nothing
    best = []
    for chunk in held:
        # A sentence's sum over its own terms: each holds a few of the part's.
        score = max((sum(idf[t] for t in s if t in part) / total for s in chunk for part, total in weighed), default=0.0)
        best.append(score)
    return best


# A list marker: a dash, a heading's hashes, or an enumerator followed by a space ("2. Abrir a loja"); a number
# opening a sentence is none ("152.67 -- After missing …" is not item 152 of a list saying "67 -- After").
_BULLET = re.compile(r"^\s*(?:[-*•]+|#+|\d{1,3}[.)](?=\s))\s*")


def block_after(text: str, start: int) -> str:
    """What a heading ending at `start` introduces: the bulleted or numbered lines that follow it, one
    after another ("Ações recomendadas:" then "1. …", "2. …"), or, when the next line is not an item,
    that line alone. Blank lines before it are skipped; the block ends at the first line of another kind."""
    block: list[str] = []
    for line in text[start:].splitlines():
        if not line.strip():
            if block:
                break
            continue
        if block and not (_BULLET.match(line) and _BULLET.match(block[0])):
            break
        block.append(line.strip())
    return "\n".join(block)


def is_title(line: str) -> bool:
    """A heading line: no bullet, no closing punctuation, short. It names a topic, it claims nothing."""
    return not _BULLET.match(line) and line.rstrip()[-1:] not in ".!?:;" and len(line.split()) < 15


def claim_sentences(text: str) -> list[tuple[int, str]]:
    """(position, sentence) for each sentence of `text` that can be quoted as a claim: headings, lead-ins
    ending in a colon ("Here are the details:" states nothing), bare markup and fragments (under 20
    characters) or walls of text (over 600) are left out; bullets and runs of whitespace are cleaned."""
    out = []
    for pos, raw in enumerate(split_sentences(text)):
        if is_title(raw):
            continue
        sentence = re.sub(r"\s+", " ", _BULLET.sub("", raw).strip())
        if len(sentence) < 20 or sentence.startswith("#") or len(sentence) > 600 or sentence.endswith(":"):
            continue
        out.append((pos, sentence))
    return out
