"""The name a which/who-question's evidence is about, to search each of its parts with.

"Which company, reported by TechCrunch to be appealing an ITC decision and known for listening to
consumers, …?" never names the company, and each part is one fact about it in a different article: a
part searched by its own words ("known for being more responsive to consumer feedback") misses the
sentence that says it in other words ("Apple has spent the last few years listening to consumers").
The best chunks found for the whole question name the company; searched again with that name, each part
finds its fact (multi-hop retrieval's bridge entity). The name is the one the most of the best chunks'
documents mention, the question does not, and the best chunks mention most.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Sequence

from graph.algorithms.direct_answer import names_in
from graph.algorithms.text import fold, holds_words


def bridge_name(question: str, chunks: Sequence[tuple[str, str]], is_stopword: Callable[[str], bool]) -> str | None:
    """The name the `chunks` ((document id, text), best first) are about that `question` does not name: held
    by the most documents, then weighted by rank (the k-th chunk's mention counts 1/√k); None when they
    name nothing new. A name opening a sentence counts (a sentence opens with its subject more often than
    not); `is_stopword` trims function words off a name's ends ("On Amazon’s" → "Amazon")."""
    asked = fold(question)
    documents: dict[str, set[str]] = defaultdict(set)
    weight: dict[str, float] = defaultdict(float)
    surface: dict[str, str] = {}
    for rank, (doc_id, text) in enumerate(chunks, start=1):
        for name in dict.fromkeys(name for name, _ in names_in(text, is_stopword)):
            key = fold(name)
            if holds_words(asked, key):
                continue
            documents[key].add(doc_id)
            weight[key] += 1 / math.sqrt(rank)
            surface.setdefault(key, name)
    if not weight:
        return None
    best = max(weight, key=lambda k: (len(documents[k]), weight[k], k))
    return surface[best]


def named_by_every_part(name: str, part_texts: Sequence[Sequence[str]]) -> bool:
    """Whether each part's own best chunks (`part_texts`, one list per part) already name `name`: each part
    found chunks about it, so searching it again with the name adds little (what bridge skips)."""
    key = fold(name)
    return bool(part_texts) and all(any(holds_words(fold(text), key) for text in texts) for texts in part_texts)
