"""Prompts and phrasing: the LLM prompts live as files under `prompts/`; the sentences the deterministic
composer and the safe response write in a language are that language's pack's `phrases`
(policies/languages/<language>.yaml). This module only reads them.

`phrase(language, key)` takes no policy (a run whose policy is broken still says so in the question's
language): the phrases of a language are its shipped pack's, read from the packs folder; a language no
shipped pack has takes them from the first policy that names a pack for it (`add_languages`, called as
a run reads its policy). A key a pack leaves out is said in English.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Mapping
from typing import Any

import yaml

from graph.assets import LANGUAGES_DIR, PROMPTS_DIR

_added: dict[str, tuple[Mapping[str, Any], str | None]] = {}
_added_lock = threading.Lock()


@functools.cache
def _shipped() -> dict[str, tuple[Mapping[str, Any], str | None]]:
    """(phrases, name) of every pack in the packs folder, by language (the file's name)."""
    out = {}
    for path in sorted(LANGUAGES_DIR.glob("*.yaml")):
        with open(path, encoding="utf-8") as fh:
            pack = yaml.safe_load(fh)
        if isinstance(pack, dict):
            out[path.stem] = (pack.get("phrases") or {}, pack.get("name"))
    return out


def _packs() -> dict[str, tuple[Mapping[str, Any], str | None]]:
    with _added_lock:
        return {**_added, **_shipped()}


def add_languages(phrases: Mapping[str, Mapping[str, Any]], names: Mapping[str, str]) -> None:
    """Make the phrases and names of a policy's packs (`Languages.phrases`, `.names`) known, for the
    languages no shipped pack has (the first policy to name one is kept)."""
    shipped = _shipped()
    with _added_lock:
        for language in {*phrases, *names}:
            if language not in shipped and language not in _added:
                _added[language] = (phrases.get(language) or {}, names.get(language))
                all_templates.cache_clear()


def phrases(language: str) -> dict[str, Any]:
    """The deterministic phrasing for `language`; a key its pack does not give is the English one."""
    packs = _packs()
    return {**packs["en"][0], **(packs.get(language) or ({}, None))[0]}


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
        elif isinstance(node, Mapping):
            for value in node.values():
                walk(value)

    walk({language: book for language, (book, _) in _packs().items()})
    return tuple(found)


@functools.cache
def _prompt_file(name: str) -> dict[str, Any]:
    with open(PROMPTS_DIR / f"{name}.yaml", encoding="utf-8") as fh:
        return yaml.safe_load(fh)


def llm_prompt(name: str) -> dict[str, Any]:
    """An LLM prompt file, `prompts/<name>.yaml`: its `system`, `user` (and other) templates. A
    `language_names` mapping in it is completed with each language pack's `name` ("Answer in $language_name")."""
    prompt = _prompt_file(name)
    if "language_names" not in prompt:
        return prompt
    names = {language: name for language, (_, name) in _packs().items() if name}
    return {**prompt, "language_names": {**names, **(prompt["language_names"] or {})}}
