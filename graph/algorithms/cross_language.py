"""Evidence in another language than the question: telling it, and ranking it by meaning."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from graph.policy import DenseCalibration
from graph.state import Chunk


def in_another_language(chunk: Chunk, language: str) -> bool:
    """The chunk's text is in another language than the question (its metadata says which)."""
    return ((chunk.get("metadata") or {}).get("language") or language) != language


def answered_by_meaning(chunks: list[Chunk], language: str) -> bool:
    """The best evidence is in another language than the question: the answer is chosen by meaning."""
    return bool(chunks) and in_another_language(chunks[0], language)


def nearest_in_another_language(chunks: list[Chunk], language: str) -> bool:
    """The chunk nearest the question in meaning (its dense `similarity`) is in another language than the question."""
    nearest = max(chunks, key=lambda c: c.get("similarity") or 0.0, default=None)
    return nearest is not None and bool(nearest.get("similarity")) and in_another_language(nearest, language)


def own_language_close(chunks: list[Chunk], language: str, margin: float) -> bool:
    """Whether evidence in the question's language scores within `margin` of the best chunk
    (`compose.direct.own_language_margin`, as for the direct answer): the question is then read as it is first,
    and wins where that evidence holds what is asked. "Quantos seguidores … ao fim do 3º trimestre de 2025" is
    answered by the Portuguese report's 412 mil, not by the English one's later count, read with the question in
    English."""
    if not answered_by_meaning(chunks, language):
        return True  # the best evidence is in the question's language (or there is none)
    own = max((c["rerankScore"] for c in chunks if not in_another_language(c, language)), default=0.0)
    return own >= margin * chunks[0]["rerankScore"]


def meaning_relevance(question: str, embeddings: Any,
                      calibration: DenseCalibration) -> Callable[[list[str]], list[float]]:
    """Each sentence's relevance to the question by meaning: the multilingual sentence embedder's cosine,
    scaled 0–1 like the reranker's dense signal (`calibration`). Words cannot match across languages,
    so this is how an English question finds its answer in a Portuguese sentence, and the reverse."""
    import numpy as np  # here, not at the top: a module of the bottom layer loads no numpy on import

    span = max(1e-9, calibration.ceiling - calibration.floor)

    def score(texts: list[str]) -> list[float]:
        q = np.asarray(embeddings.embed_query(question), dtype=np.float64)
        m = np.asarray(embeddings.embed_documents(texts), dtype=np.float64).reshape(len(texts), -1)
        cosine = (m @ q) / np.maximum(1e-9, np.linalg.norm(m, axis=1) * np.linalg.norm(q))
        return [min(1.0, max(0.0, (c - calibration.floor) / span)) for c in cosine.tolist()]

    return score
