"""Prompts and phrasing live as files under `prompts/`; this module only reads them."""

from __future__ import annotations

import functools
from typing import Any

import yaml

from graph.assets import PROMPTS_DIR


@functools.cache
def _phrasebook() -> dict[str, dict[str, str]]:
    with open(PROMPTS_DIR / "deterministic.yaml", encoding="utf-8") as fh:
        return yaml.safe_load(fh)


def phrases(language: str) -> dict[str, str]:
    """The deterministic phrasing for `language`, falling back to English."""
    book = _phrasebook()
    return book.get(language) or book["en"]


def phrase(language: str, key: str, **values: Any) -> str:
    return phrases(language)[key].format(**values)


@functools.cache
def all_templates() -> tuple[str, ...]:
    """Every phrase the deterministic composer and safe response write, in every language: the
    judge does not mistake the composer's own framing for claims about the documents."""
    found: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, str):
            found.append(node)
        elif isinstance(node, dict):
            for value in node.values():
                walk(value)

    walk(_phrasebook())
    return tuple(found)


@functools.cache
def llm_prompt(name: str) -> dict[str, str]:
    """An LLM prompt file, `prompts/<name>.yaml`: its `system`, `user` (and other) templates."""
    with open(PROMPTS_DIR / f"{name}.yaml", encoding="utf-8") as fh:
        return yaml.safe_load(fh)
