"""Keep SICK's test pairs out of training, even when they come back in another language.

ASSIN 2 was built from SICK-BR, a Portuguese translation of all of SICK, and split anew: its training file holds
translations of pairs that are in SICK's TEST part, on which `ragate eval reader` measures the reader. A training
pair is dropped (in both languages) when its English translation matches a SICK TEST pair: both sentences share at
least MATCH of their words with the test pair's (Jaccard over lower-cased words), in either order.
"""

from __future__ import annotations

import re
from pathlib import Path

from graph.evaluation.reader_sets import PairExample, read_sick

MATCH = 0.6
_WORDS = re.compile(r"[a-z0-9]+")
_STOP = {"a", "an", "the", "is", "are", "of", "in", "on", "and", "with", "to", "by", "at", "some", "there", "be",
         "being", "it", "its", "into", "for"}


def _words(text: str) -> frozenset[str]:
    return frozenset(w for w in _WORDS.findall(text.lower()) if w not in _STOP)


def _jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    return len(a & b) / len(a | b) if a or b else 1.0


def drop_sick_test_pairs(pairs: list[PairExample], data: Path) -> list[PairExample]:
    """`pairs` without those whose English side matches a SICK TEST pair; a translated pair's id is its source's
    id plus "-en" or "-pt", and both go together."""
    sick_path = data / "reader" / "sick" / "SICK.txt"
    if not sick_path.is_file():
        return pairs
    test = [(_words(ex.first), _words(ex.second)) for ex in read_sick(sick_path, "TEST")]
    index: dict[str, list[int]] = {}
    for number, (a, b) in enumerate(test):
        for word in a | b:
            index.setdefault(word, []).append(number)
    dropped: set[str] = set()
    for ex in pairs:
        if ex.language != "en":
            continue
        a, b = _words(ex.first), _words(ex.second)
        rare = sorted(a | b, key=lambda w: len(index.get(w, ())))[:3]
        candidates = {n for w in rare for n in index.get(w, ())}
        for n in candidates:
            ta, tb = test[n]
            if min(_jaccard(a, ta), _jaccard(b, tb)) >= MATCH or min(_jaccard(a, tb), _jaccard(b, ta)) >= MATCH:
                dropped.add(ex.id.rsplit("-", 1)[0] if ex.source.endswith("-mt") else ex.id)
                break
    return [ex for ex in pairs if (ex.id.rsplit("-", 1)[0] if ex.source.endswith("-mt") else ex.id) not in dropped]
