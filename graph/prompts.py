"""Prompts and phrasing live as files under `prompts/`; this module only reads them."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import yaml

PROMPTS_DIR = Path(__file__).resolve().parent.parent / "prompts"


@functools.lru_cache(maxsize=None)
def _phrasebook() -> dict[str, dict[str, str]]:
    with open(PROMPTS_DIR / "deterministic.yaml", encoding="utf-8") as fh:
        return yaml.safe_load(fh)


def phrases(language: str) -> dict[str, str]:
    """The deterministic phrasing for `language`, falling back to English."""
    book = _phrasebook()
    return book.get(language) or book["en"]


def phrase(language: str, key: str, **values: Any) -> str:
    return phrases(language)[key].format(**values)
