"""Loading and validating the YAML policy (`policies/rag.yaml`).

The policy is the single source of truth for routing, budgets, lexicons and thresholds. Nodes
never read YAML themselves: they call `load_policy()` and get a validated `Policy` or a
`PolicyError` whose message names the file and the field that is wrong.
"""

from __future__ import annotations

import datetime
import os
import re
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from graph.assets import DEFAULT_POLICY_PATH

# Stemmers the engine's BM25 encoders know (qdrant-edge `Bm25Config(language=...)`).
SNOWBALL_LANGUAGES = frozenset({
    "arabic", "danish", "dutch", "english", "finnish", "french", "german", "greek", "hungarian",
    "italian", "norwegian", "portuguese", "romanian", "russian", "spanish", "swedish", "turkish",
})


class PolicyError(ValueError):
    """The policy file is missing, unreadable or invalid."""


@dataclass(frozen=True)
class Profile:
    name: str
    k: int
    min_score: float
    max_context_chars: int


@dataclass(frozen=True)
class EntityRoute:
    entity: str
    profile: Profile
    collections: tuple[str, ...]
    max_chunks: int


@dataclass(frozen=True)
class Policy:
    """A validated policy. `raw` is the parsed YAML, kept as the snapshot shown to users."""

    path: str
    raw: dict[str, Any]

    # --- routing -------------------------------------------------------------------------
    @property
    def routing(self) -> dict[str, Any]:
        return self.raw["routing"]

    def intent_allowed(self, intent: str) -> tuple[bool, str]:
        """Deny wins over allow; an intent in neither list is off."""
        if intent in self.routing.get("deny_intents", []):
            return False, f"intent '{intent}' is denied by policy (routing.deny_intents)"
        if intent in self.routing.get("allow_intents", []):
            return True, ""
        return False, f"intent '{intent}' is not listed in routing.allow_intents"

    def entity_route(self, entity: str | None) -> EntityRoute:
        rag = self.raw["rag"]
        name = entity if entity in rag.get("entities", {}) else "default"
        spec = rag["entities"][entity] if name != "default" else rag["default"]
        profile_name = spec["profile"]
        p = self.raw["profiles"][profile_name]
        return EntityRoute(
            entity=name,
            profile=Profile(profile_name, int(p["k"]), float(p["min_score"]), int(p["max_context_chars"])),
            collections=tuple(spec["collections"]),
            max_chunks=int(spec["max_chunks"]),
        )

    def section(self, name: str) -> dict[str, Any]:
        return self.raw.get(name) or {}

    @property
    def instruction_patterns(self) -> tuple[str, ...]:
        """Regular expressions for document text addressed to a model (`documents.instruction_patterns`)."""
        return tuple((self.section("documents")).get("instruction_patterns") or ())

    def boosts(self, current_year: int | None = None) -> dict[str, tuple[float, dict[str, Any]]]:
        """Each rerank boost as (factor, condition on indexed payload fields): recency applies to
        chunks whose `year` is the current year, playbook to chunks whose `docType` is listed."""
        cfg = self.section("rerank").get("boosts") or {}
        out: dict[str, tuple[float, dict[str, Any]]] = {}
        if cfg.get("recency"):
            year = current_year or cfg["recency"].get("current_year") or datetime.date.today().year
            out["recency"] = (float(cfg["recency"].get("factor", 1.0)), {"year": int(year)})
        if (cfg.get("playbook") or {}).get("doc_types"):
            out["playbook"] = (float(cfg["playbook"].get("factor", 1.0)), {"docType": list(cfg["playbook"]["doc_types"])})
        return out


def _fail(path: str, msg: str) -> PolicyError:
    return PolicyError(f"policy {path}: {msg}")


def _require(cond: bool, path: str, msg: str) -> None:
    if not cond:
        raise _fail(path, msg)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_str_list(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) and v for v in value)


def validate_policy(raw: Any, path: str) -> Policy:
    """Check every field the graph relies on; raise `PolicyError` naming the first bad one."""
    _require(isinstance(raw, dict), path, "top level must be a mapping")
    for key in ("routing", "profiles", "rag", "decomposition", "rerank", "compose", "judge", "languages"):
        _require(isinstance(raw.get(key), dict), path, f"section '{key}' is missing or not a mapping")

    routing = raw["routing"]
    for key in ("allow_intents", "deny_intents"):
        _require(_is_str_list(routing.get(key, [])), path, f"routing.{key} must be a list of intent names")
    fallback = routing.get("fallback_intent")
    _require(fallback is None or isinstance(fallback, str), path, "routing.fallback_intent must be a string")
    for i, rule in enumerate(routing.get("intent_rules", []) or []):
        _require(isinstance(rule, dict) and isinstance(rule.get("intent"), str), path,
                 f"routing.intent_rules[{i}] needs an 'intent' string")
        _require(_is_str_list(rule.get("keywords")), path, f"routing.intent_rules[{i}].keywords must be a list of strings")
    filters = routing.get("intent_filters", {}) or {}
    _require(isinstance(filters, dict), path, "routing.intent_filters must be a mapping intent -> {field: value}")
    for intent, flt in filters.items():
        _require(isinstance(flt, dict) and all(isinstance(v, (str, int)) for v in flt.values()), path,
                 f"routing.intent_filters.{intent} must map field names to string or integer values")

    for name, prof in raw["profiles"].items():
        _require(isinstance(prof, dict), path, f"profiles.{name} must be a mapping")
        for key, typ in (("k", int), ("min_score", (int, float)), ("max_context_chars", int)):
            _require(isinstance(prof.get(key), typ) and not isinstance(prof.get(key), bool), path,
                     f"profiles.{name}.{key} is missing or not a number")
        _require(prof["k"] > 0 and prof["max_context_chars"] > 0, path, f"profiles.{name}: k and max_context_chars must be positive")

    rag = raw["rag"]
    _require(isinstance(rag.get("default"), dict), path, "rag.default is missing")
    entities = rag.get("entities", {}) or {}
    _require(isinstance(entities, dict), path, "rag.entities must be a mapping")
    rag["entities"] = entities
    for name, spec in [("default", rag["default"]), *entities.items()]:
        where = "rag.default" if name == "default" else f"rag.entities.{name}"
        _require(isinstance(spec, dict), path, f"{where} must be a mapping")
        _require(isinstance(spec.get("profile"), str) and spec["profile"] in raw["profiles"], path, f"{where}.profile '{spec.get('profile')}' is not a defined profile")
        _require(_is_str_list(spec.get("collections")) and spec["collections"], path, f"{where}.collections must be a non-empty list")
        _require(isinstance(spec.get("max_chunks"), int) and spec["max_chunks"] > 0, path, f"{where}.max_chunks must be a positive integer")

    dec = raw["decomposition"]
    for key in ("min_length", "threshold", "max_subqueries"):
        _require(isinstance(dec.get(key), (int, float)), path, f"decomposition.{key} must be a number")
    _require(2 <= int(dec["max_subqueries"]) <= 4, path, "decomposition.max_subqueries must be between 2 and 4")
    _require(isinstance(dec.get("min_clause_words", 4), int) and dec.get("min_clause_words", 4) >= 1, path,
             "decomposition.min_clause_words must be a positive integer")
    _require(isinstance(dec.get("weights"), dict), path, "decomposition.weights must be a mapping")
    lex = dec.get("lexicons")
    _require(isinstance(lex, dict) and lex, path, "decomposition.lexicons must map languages to word lists")
    for lang, words in lex.items():
        _require(isinstance(words, dict), path, f"decomposition.lexicons.{lang} must map list names to word lists")
        for key in ("connectives", "complexity", "perspectives", "all_perspectives"):
            _require(_is_str_list(words.get(key, [])), path, f"decomposition.lexicons.{lang}.{key} must be a list of strings")

    thresholds = raw["judge"].get("thresholds")
    _require(isinstance(thresholds, dict) and {"ok", "block"} <= set(thresholds), path, "judge.thresholds needs 'ok' and 'block'")
    _require(all(_is_number(thresholds[k]) for k in ("ok", "block")), path, "judge.thresholds.ok and .block must be numbers")
    _require(0 <= thresholds["block"] <= thresholds["ok"] <= 1, path, "judge.thresholds must satisfy 0 <= block <= ok <= 1")

    langs = raw["languages"]
    _require(isinstance(langs.get("markers"), dict) and langs["markers"], path, "languages.markers must map languages to word lists")
    for lang, words in langs["markers"].items():
        _require(_is_str_list(words), path, f"languages.markers.{lang} must be a list of words")
    analyzers = langs.get("analyzers")
    _require(isinstance(analyzers, dict) and analyzers, path, "languages.analyzers must map languages to stemmer names")
    for lang, stemmer in analyzers.items():
        _require(stemmer in SNOWBALL_LANGUAGES, path,
                 f"languages.analyzers.{lang}: unknown stemmer {stemmer!r} (one of {', '.join(sorted(SNOWBALL_LANGUAGES))})")
    for lang, names in (langs.get("months") or {}).items():
        _require(_is_str_list(names) and len(names) == 12, path, f"languages.months.{lang} must list the 12 month names")
    for key in ("retrieval", "memory"):
        _require(isinstance(raw.get(key, {}) or {}, dict), path, f"section '{key}' must be a mapping")
    relations = (raw.get("retrieval") or {}).get("date_relations") or {}
    _require(isinstance(relations, dict) and set(relations) <= {"before", "after"}
             and all(_is_str_list(v) for v in relations.values()), path,
             "retrieval.date_relations must map 'before' / 'after' to lists of phrases")
    _require(_is_str_list(raw.get("retrieval", {}).get("performance_keywords", []) if isinstance(raw.get("retrieval"), dict) else []),
             path, "retrieval.performance_keywords must be a list of strings")
    for key in ("empty_closers", "action_words"):
        _require(_is_str_list(raw["judge"].get(key, [])), path, f"judge.{key} must be a list of strings")
    for key in ("invented_value_groundedness", "invented_citation_groundedness", "unsupported_claim_groundedness"):
        value = raw["judge"].get(key, 0.2)
        _require(_is_number(value) and 0 <= value <= 1, path, f"judge.{key} must be a number between 0 and 1")
    grounding = raw["judge"].get("groundedness") or {}
    _require(isinstance(grounding, dict), path, "judge.groundedness must be a mapping")
    for key in ("claim_support_floor", "negation_min_overlap"):
        _require(_is_number(grounding.get(key, 0.5)) and 0 <= grounding.get(key, 0.5) <= 1, path,
                 f"judge.groundedness.{key} must be a number between 0 and 1")
    for key in ("semantic_band", "semantic_scale"):
        pair = grounding.get(key, [0, 1])
        _require(isinstance(pair, list) and len(pair) == 2 and all(_is_number(v) for v in pair) and pair[0] < pair[1],
                 path, f"judge.groundedness.{key} must be two increasing numbers [low, high]")
    candidates = raw["rerank"].get("provider_candidates", 25) if isinstance(raw.get("rerank"), dict) else 25
    _require(_is_int(candidates) and 1 <= candidates <= 1000, path,
             "rerank.provider_candidates must be an integer between 1 and 1000")
    max_tokens = raw["compose"].get("llm_max_tokens", 600)
    _require(_is_int(max_tokens) and 16 <= max_tokens <= 32_000, path,
             "compose.llm_max_tokens must be an integer between 16 and 32000")
    floor = raw["compose"].get("draft_value_context_floor", 0.3)
    _require(_is_number(floor) and 0 <= floor <= 1, path, "compose.draft_value_context_floor must be a number between 0 and 1")
    turns = (raw.get("memory") or {}).get("history_turns", 5)
    _require(_is_int(turns) and 0 <= turns <= 100, path,
             "memory.history_turns must be an integer between 0 and 100")
    for lang, ws in (langs.get("negations") or {}).items():
        _require(_is_str_list(ws), path, f"languages.negations.{lang} must be a list of words")
    for lang, ws in (langs.get("number_words") or {}).items():
        _require(isinstance(ws, dict) and all(isinstance(k, str) and _is_number(v) for k, v in ws.items()), path,
                 f"languages.number_words.{lang} must map words to numbers")
    documents = raw.get("documents") or {}
    _require(isinstance(documents, dict), path, "documents must be a mapping")
    patterns = documents.get("instruction_patterns") or []
    _require(_is_str_list(patterns), path, "documents.instruction_patterns must be a list of regular expressions")
    for i, pattern in enumerate(patterns):
        try:
            re.compile(pattern)
        except re.error as exc:
            raise _fail(path, f"documents.instruction_patterns[{i}] is not a valid regular expression ({exc})") from None
    return Policy(path=path, raw=raw)


_cache: dict[str, tuple[tuple[int, int], Policy]] = {}
_checked_at: dict[str, float] = {}
_cache_lock = threading.Lock()
# Every node asks for the policy; the file is looked at (stat) at most this often per path.
RECHECK_SECONDS = 1.0


def load_policy(path: str | os.PathLike[str] | None = None) -> Policy:
    """Load and validate a policy, cached until the file changes (mtime and size, looked at no more
    than once a second)."""
    resolved = str(Path(path) if path else DEFAULT_POLICY_PATH)
    now = time.monotonic()
    with _cache_lock:
        hit = _cache.get(resolved)
        if hit and now - _checked_at.get(resolved, 0.0) < RECHECK_SECONDS:
            return hit[1]
    try:
        st = os.stat(resolved)
    except FileNotFoundError:
        raise _fail(resolved, "file not found") from None
    except OSError as exc:
        raise _fail(resolved, f"cannot be read ({exc.strerror})") from None
    stamp = (st.st_mtime_ns, st.st_size)
    with _cache_lock:
        hit = _cache.get(resolved)
        if hit and hit[0] == stamp:
            _checked_at[resolved] = now
            return hit[1]
    try:
        with open(resolved, encoding="utf-8") as fh:
            raw = yaml.safe_load(fh)
    except UnicodeDecodeError:
        raise _fail(resolved, "is not UTF-8 text") from None
    except yaml.YAMLError as exc:
        raise _fail(resolved, f"is not valid YAML ({str(exc).splitlines()[0]})") from None
    except OSError as exc:
        raise _fail(resolved, f"cannot be read ({exc.strerror})") from None
    policy = validate_policy(raw, resolved)
    with _cache_lock:
        _cache[resolved] = (stamp, policy)
        _checked_at[resolved] = now
    return policy
