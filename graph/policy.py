"""The YAML policy (`policies/rag.yaml`), typed and validated.

The policy is the single source of truth for routing, budgets, lexicons and thresholds. Each section
is a frozen dataclass below, and each default is written once, as that dataclass's field default: a
key the YAML leaves out takes it, a key it gives is checked against the field's type and rule. Nodes
read typed settings (`policy.compose.relevance_floor`), never `dict.get` with a literal default.

A language is one file: the policy names a pack per language (`languages.packs`, e.g.
policies/languages/pt.yaml, relative to the policy), holding every word list and phrase of that
language (`LanguagePack`). Loading checks each pack and assembles them into `Languages` (each kind a
mapping of languages) and into the sections that list every language's words (`period_units`,
`retrieval.date_relations`, `decomposition.lexicons`, the judge's closers and action words);
`Policy.raw` holds that assembled form, which a policy may also write itself. `Languages.shared` is
what every text is read with whatever its language (scale words, abbreviations, connectors, name
joiners); readers called without it take the current run's (`run_languages`).

`load_policy()` returns a validated `Policy` or raises `PolicyError`, whose message names the file
and the field that is wrong. A run reads one policy from its first node to its last, wherever it is
resumed (graph/runtime/run_policy.py: the version is kept in the data folder as `kept_version_text`
writes it); `Policy.digest` (the file's sha256, with its packs') names that version in the request
record. `Policy.raw` is the YAML as parsed, with the packs assembled into it.
"""

from __future__ import annotations

import contextvars
import dataclasses
import datetime
import functools
import hashlib
import os
import re
import threading
import time
import types
import typing
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
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


def rule(check: typing.Callable[[Any], bool], text: str) -> dict[str, Any]:
    """Field metadata: a value must pass `check`; `text` completes "<field> must be ..."."""
    return {"check": check, "rule": text}


def _between(low: float, high: float) -> dict[str, Any]:
    return rule(lambda v: low <= v <= high, f"between {low:g} and {high:g}")


_POSITIVE = rule(lambda v: v > 0, "positive")
_SHARE = _between(0, 1)
_AT_LEAST_1 = rule(lambda v: v >= 1, "at least 1")
_NOT_NEGATIVE = rule(lambda v: v >= 0, "0 or more")
_INCREASING_PAIR = rule(lambda v: len(v) == 2 and v[0] < v[1], "two increasing numbers [low, high]")


# --- routing ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class IntentRule:
    """Keywords that infer an intent when the caller gives none (the rule with most hits wins)."""

    intent: str
    keywords: tuple[str, ...]


@dataclass(frozen=True)
class Routing:
    allow_intents: tuple[str, ...] = ()        # intents that may use retrieval
    deny_intents: tuple[str, ...] = ()         # deny wins over allow
    fallback_intent: str | None = None         # when no intent is given and no rule matches
    intent_rules: tuple[IntentRule, ...] = ()
    intent_filters: Mapping[str, Mapping[str, str | int]] = field(default_factory=dict)  # engine filters per intent
    # An intent the caller names filters inside the engine (a gate). One inferred from the question's words
    # can be wrong ("tiktok" in a question about a TikTok ad campaign), so its filters only rank: the
    # chunks meeting them have their rerank score multiplied by this, and none is hidden.
    inferred_intent_boost: float = field(default=1.2, metadata=rule(lambda v: v >= 1, "1 or more"))

    def intent_allowed(self, intent: str) -> tuple[bool, str]:
        """Deny wins over allow; an intent in neither list is off."""
        if intent in self.deny_intents:
            return False, f"intent '{intent}' is denied by policy (routing.deny_intents)"
        if intent in self.allow_intents:
            return True, ""
        return False, f"intent '{intent}' is not listed in routing.allow_intents"


@dataclass(frozen=True)
class Profile:
    """A retrieval budget."""

    k: int = field(metadata=_POSITIVE)                  # candidates per search list
    min_score: float                                    # rerank score below which a chunk is dropped
    max_context_chars: int = field(metadata=_POSITIVE)  # characters of chunk text handed to the composer
    # Candidates the relevance model (cross-encoder, Cohere) scores; None: rerank.relevance's `candidates`,
    # 0: none (a latency-critical intent keeps ragate's own reranker only). Set above 0, it also asks for
    # the cross-encoder under `auto` (English) on the profile's intents.
    rerank_depth: int | None = field(default=None, metadata=_between(0, 1000))


@dataclass(frozen=True)
class RouteSpec:
    profile: str
    collections: tuple[str, ...] = field(metadata=rule(bool, "a non-empty list"))
    max_chunks: int = field(metadata=_POSITIVE)


@dataclass(frozen=True)
class RagRoutes:
    default: RouteSpec                                  # for any entity not listed (and no entity)
    entities: Mapping[str, RouteSpec] = field(default_factory=dict)


@dataclass(frozen=True)
class EntityRoute:
    """Where and how much one entity's questions search (`Policy.entity_route`)."""

    entity: str
    profile_name: str
    profile: Profile
    collections: tuple[str, ...]
    max_chunks: int


# --- retrieval and decomposition ----------------------------------------------------------------


PART_VECTORS = ("auto", "always", "never")


@dataclass(frozen=True)
class RetrievalSettings:
    performance_keywords: tuple[str, ...] = ()  # a question with one also searches the performance chunks
    performance_doc_type: str = "performance"
    mention_fields: tuple[str, ...] = ()        # indexed fields whose named values scope a search
    max_mentions: int = 4
    date_window_days: int = 1
    # phrases before a date that make it a bound: {"before": [...], "after": [...]}
    date_relations: Mapping[str, tuple[str, ...]] = field(
        default_factory=dict, metadata=rule(lambda v: set(v) <= {"before", "after"}, "a mapping of 'before' / 'after' to lists of phrases"))
    # Whether the parts of a split question are searched by meaning too (embedded), or by their words only:
    # "auto" embeds them only where words cannot match, over a collection in another or several languages.
    part_vectors: str = field(default="auto", metadata=rule(lambda v: v in PART_VECTORS, "one of " + ", ".join(PART_VECTORS)))
    # A split question that asks for a name is searched again part by part with the name its best chunks give
    # (nodes/bridge.py): how many of them are read for it (0: never).
    bridge_from_chunks: int = field(default=3, metadata=_NOT_NEGATIVE)
    # ... unless each part's own search already ranked a chunk naming it among its first `bridge_named_depth`
    # (the parts found the name's evidence; 0: always searched again).
    bridge_named_depth: int = field(default=1, metadata=_NOT_NEGATIVE)


@dataclass(frozen=True)
class DecompositionWeights:
    connective: float = 1.0       # per connective word found (capped at 2 hits)
    perspectives: float = 2.0     # two or more perspectives named, or "all perspectives"
    questions: float = 2.0        # two or more question marks
    complexity: float = 1.0       # per complexity word found (capped at 2 hits)
    question_words: float = 1.0   # two or more different question words


@dataclass(frozen=True)
class Lexicon:
    """One language's word lists for the complexity score and the splitter."""

    connectives: tuple[str, ...] = ()
    complexity: tuple[str, ...] = ()
    question_words: tuple[str, ...] = ()
    perspectives: tuple[str, ...] = ()
    all_perspectives: tuple[str, ...] = ()
    comparison_markers: tuple[str, ...] = ()
    default_perspectives: tuple[str, ...] = ()


@dataclass(frozen=True)
class DecompositionSettings:
    min_length: int                     # characters; shorter questions are never decomposed
    threshold: float                    # decompose when the complexity score reaches this
    max_subqueries: int = field(metadata=_between(2, 4))
    weights: DecompositionWeights
    lexicons: Mapping[str, Lexicon] = field(metadata=rule(bool, "a mapping of languages to word lists"))
    min_clause_words: int = field(default=4, metadata=_POSITIVE)
    # A chat model's two sub-queries sharing more than this share of their words (Jaccard) overlap: refused.
    max_subquery_overlap: float = field(default=0.8, metadata=_SHARE)

    def words(self, key: str) -> list[str]:
        """Union of one word list over every language (questions mix languages: "vs", "ROAS")."""
        out: list[str] = []
        for lexicon in self.lexicons.values():
            out.extend(w for w in getattr(lexicon, key) if w not in out)
        return out


# --- rerank -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RerankWeights:
    dense: float = 0.45
    lexical: float = 0.45
    bm25: float = 0.0
    fused: float = 0.1


@dataclass(frozen=True)
class DenseCalibration:
    floor: float = 0.1     # cosine counted as 0
    ceiling: float = 0.6   # cosine counted as 1


@dataclass(frozen=True)
class Diversity:
    weight: float = 0.0       # 0 turns the xQuAD diversification off
    rank_decay: float = 2.0   # how fast an aspect's list stops counting
    # How much of an aspect the chunk first in its list answers (less for the chunks after it): 1 is xQuAD's
    # "answered once picked"; less leaves the aspect room for its next chunk.
    coverage: float = field(default=1.0, metadata=_SHARE)


@dataclass(frozen=True)
class RecencyBoost:
    factor: float = 1.0
    current_year: int | None = None   # None: the current calendar year


@dataclass(frozen=True)
class PlaybookBoost:
    factor: float = 1.0
    doc_types: tuple[str, ...] = ()


@dataclass(frozen=True)
class Boosts:
    recency: RecencyBoost | None = None
    playbook: PlaybookBoost | None = None


@dataclass(frozen=True)
class ModelRerankSettings:
    """The embedded reranker's weights and cosine scale for one embedding model's chunks."""

    weights: RerankWeights = RerankWeights()
    dense_calibration: DenseCalibration = DenseCalibration()
    # The compose floor (`compose.relevance_floor`) on this model's score scale; None: the compose one.
    relevance_floor: float | None = field(default=None, metadata=_SHARE)
    # `weights` order a short question's candidates, `long_question_weights` a long one's
    # (`rerank.long_questions`; None: `weights` for every length). `score_weights` give the scores the
    # chunks carry, in that order (the k-th place the k-th best): the scale the composer's relevance floor,
    # the coverage levels and the profiles' min_score were set on. None: `weights`.
    long_question_weights: RerankWeights | None = None
    score_weights: RerankWeights | None = None


@dataclass(frozen=True)
class CrossLingual:
    """How the embedded reranker weighs a question whose nearest chunks are in another language. Words
    cannot match across languages, so there the lexical signals only ever favour the question's own
    language: their weight is scaled by the share of the question's language among its `neighbours`
    most similar chunks (never below `lexical_floor`), the dense weight takes the rest, and a chunk in
    another language counts its dense relevance as its lexical one (evidence missing, not against)."""

    neighbours: int = field(default=10, metadata=_POSITIVE)
    lexical_floor: float = field(default=0.5, metadata=_SHARE)
    # All of it only when the chunks in the question's language hold this share of its words (IDF-weighted)
    # between them, or there are none: a subject nothing in its own language speaks of ("carbon emissions")
    # is more likely absent than written in the other language.
    attested_share: float = field(default=0.6, metadata=_SHARE)
    # Or when the chunk nearest the question in meaning is in another language, by at least this much cosine
    # over the nearest in its own: a Portuguese question over an English report ("vendas líquidas da Globex
    # no primeiro trimestre") has no own-language chunk holding its words, but its meaning points elsewhere.
    meaning_margin: float = field(default=0.06, metadata=_SHARE)


@dataclass(frozen=True)
class LongQuestions:
    """How the embedded reranker weighs a long, many-part question. One vector sums a question up: for a
    question of a dozen content words it finds passages worded otherwise, for one of thirty it blurs the
    parts together, while their exact words (names, sources) still pick out the passages that answer.
    A question's length share runs from 0 at `short_terms` distinct content terms to 1 at `long_terms`;
    its weights move from the model's `weights` to its `long_question_weights` by that share, and that
    share of `sentence_weight` goes to the candidates' best single-sentence match to one of its parts
    (graph/algorithms/passages.py `best_sentence_match`), read from the best `candidates` by the blend."""

    short_terms: int = field(default=12, metadata=_POSITIVE)
    long_terms: int = field(default=24, metadata=_POSITIVE)
    sentence_weight: float = field(default=0.0, metadata=_SHARE)  # 0: no sentence is read
    candidates: int = field(default=30, metadata=_between(1, 1000))


@dataclass(frozen=True)
class RelevanceModelSettings:
    """How the rerank step uses one kind of relevance model."""

    candidates: int = field(metadata=_between(1, 1000))  # the best ones by ragate's own score are scored
    weight: float = field(metadata=_SHARE)  # its share of the score; the rest is ragate's own
    window_words: int = field(default=50, metadata=_between(8, 1000))  # a local model reads each one's best window
    max_tokens: int = field(default=128, metadata=_between(16, 512))  # question + window, for a local model
    # True: the model only reorders the candidates, and the k-th place keeps the k-th best of ragate's own
    # scores, so the composer's relevance floor and coverage levels (set on that scale) still hold.
    keep_scale: bool = False


@dataclass(frozen=True)
class RelevanceModels:
    # The local cross-encoder (`local/ms-marco-minilm`): cost grows with what it reads.
    cross_encoder: RelevanceModelSettings = RelevanceModelSettings(candidates=12, weight=0.3, keep_scale=True)
    # Whether `auto` scores an English question over English collections with the cross-encoder for every
    # intent. False: only where a profile's `rerank_depth` asks for it (ragate's own reranker elsewhere).
    auto_cross_encoder: bool = False
    # A relevance server (`cohere/<model>`): reads whole chunks; a strong model's score can stand alone.
    server: RelevanceModelSettings = RelevanceModelSettings(candidates=25, weight=1.0)


@dataclass(frozen=True)
class RerankSettings:
    weights: RerankWeights = RerankWeights()
    dense_calibration: DenseCalibration = DenseCalibration()
    top_n: int = field(default=5, metadata=_POSITIVE)
    # How many of the fused list's first chunks are scored; the rest placed too low to be kept (never fewer
    # than twice the chunks a run may keep).
    candidates: int = field(default=100, metadata=_POSITIVE)
    relevance: RelevanceModels = RelevanceModels()
    # Embedding models differ in how far their cosine can be trusted and on what scale it runs
    # (bge-small's unrelated pairs sit near 0.6, USE's near 0.2): a model listed here has its own
    # weights and calibration for the chunks of its collections; any other uses the two above.
    models: Mapping[str, ModelRerankSettings] = field(default_factory=dict)

    def for_model(self, embedding_model: str | None) -> ModelRerankSettings:
        """The weights and cosine calibration for chunks embedded by `embedding_model`."""
        return self.models.get(embedding_model or "") or ModelRerankSettings(self.weights, self.dense_calibration)

    diversity: Diversity = Diversity()
    boosts: Boosts = Boosts()
    cross_lingual: CrossLingual = CrossLingual()
    long_questions: LongQuestions = LongQuestions()

    def length_share(self, question_terms: int) -> float:
        """0 for a short question, 1 for a long one (`long_questions`), linear in between."""
        lq = self.long_questions
        return min(1.0, max(0.0, (question_terms - lq.short_terms) / (lq.long_terms - lq.short_terms)))


# --- compose and judge --------------------------------------------------------------------------


@dataclass(frozen=True)
class CoverageLevel:
    min_docs: int
    min_mean_score: float


@dataclass(frozen=True)
class Coverage:
    high: CoverageLevel = CoverageLevel(3, 0.7)
    medium: CoverageLevel = CoverageLevel(2, 0.5)


@dataclass(frozen=True)
class DirectAnswerSettings:
    """How the composer finds the direct answer (graph/algorithms/direct_answer.py)."""

    # A sentence holding less than this IDF-weighted share of the question's words (times its chunk's
    # 0.5 + score/2) cannot give a value or a date.
    sentence_floor: float = field(default=0.3, metadata=_SHARE)
    depth: int = field(default=5, metadata=_POSITIVE)          # best sentences looked at for a value or a date
    # Names are counted in every sentence scoring at least this share of the best one (the entity the
    # evidence is about is named across it, not only in the best sentence).
    name_floor: float = field(default=0.1, metadata=_SHARE)
    # The chosen name must weigh this many times the next one, else no name is given (two equally
    # central names: the evidence does not single one out).
    name_margin: float = field(default=1.0, metadata=_AT_LEAST_1)
    # A name question whose retrieved chunks all score below the relevance floor is still answered (coverage
    # low) when its direct answer is a name that at least this many of those chunks' documents write; 0: never.
    converging_documents: int = field(default=3, metadata=_between(0, 50))
    part_floor: float = field(default=0.7, metadata=_SHARE)     # share of a yes/no part's words one document must hold
    # Supporting points after a direct answer: one per part of the question, at most this many.
    max_points: int = field(default=3, metadata=_POSITIVE)
    # A supporting point holds at least this share of the best sentence's score (the rest is off-topic), and so
    # does the sentence where a name answer is read.
    point_floor: float = field(default=0.5, metadata=_SHARE)
    # An open question whose words are at least this share its best document's title ("What does the
    # 2026 winter playbook recommend?") asks what that document says: its sentences, in its order.
    document_share: float = field(default=0.6, metadata=_SHARE)
    # An open question ("O que a Justiça decidiu …?") is explained where its best sentence is: that
    # sentence and up to this many of the ones after it in its chunk lead the points.
    passage_sentences: int = field(default=3, metadata=_between(0, 20))
    # A sentence is read in its document: the question's words its chunk's title holds count this much
    # of a word the sentence holds ("ROAS 4,2" in "Campanha TikTok Provador" answers "o ROAS da campanha
    # do TikTok").
    header_weight: float = field(default=0.5, metadata=_SHARE)
    # A value or date is read from a sentence in the question's language that holds what the question
    # asks about and scores at least this share of a better one in another language: no word of the
    # other language's sentence can say which of its values is asked for, the question's own words can.
    own_language_margin: float = field(default=0.75, metadata=_SHARE)
    # A value or date is read first from the sentences holding what the question asks about (its focus word),
    # or in another language: their score counts this many times.
    focus_weight: float = field(default=1.5, metadata=_AT_LEAST_1)
    # A name's mentions count this many times in the clause holding the focus word ("which region": the clause
    # about a region) ...
    focus_clause_weight: float = field(default=2.0, metadata=_AT_LEAST_1)
    # ... and this many times right after the focus word's phrase ("a diretora de expansão, Carla Menezes").
    focus_phrase_weight: float = field(default=2.5, metadata=_AT_LEAST_1)
    # A name a longer one contains lends it this share of its weight ("Bankman-Fried" to "Sam Bankman-Fried").
    contained_name_share: float = field(default=0.5, metadata=_SHARE)
    # A name is given only when one of this many best sentences (scoring point_floor of the best) holds it.
    name_holders: int = field(default=3, metadata=_POSITIVE)
    # A value within this many characters of the month the question names, and nearer it than the value found,
    # is that month's and is given instead ("ao fim de junho (315 mil)"); 0: never.
    month_reach: int = field(default=20, metadata=_between(0, 200))


@dataclass(frozen=True)
class ComposeSettings:
    coverage: Coverage = Coverage()
    direct: DirectAnswerSettings = DirectAnswerSettings()
    relevance_floor: float = 0.25         # below this best rerank score the text is treated as irrelevant
    max_sentences: int = field(default=6, metadata=_POSITIVE)
    max_answer_chars: int = field(default=1600, metadata=_POSITIVE)
    llm_max_tokens: int = field(default=600, metadata=_between(16, 32_000))
    draft_value_context_floor: float = field(default=0.3, metadata=_SHARE)
    # A part with at least this many words (its cue's aside) is answered when the answer holds all of them but one.
    long_part_words: int = field(default=8, metadata=_POSITIVE)
    # Two versions of one asset whose scores differ by at most this are a tie: the newer one is kept.
    conflict_tie_margin: float = field(default=0.05, metadata=_SHARE)
    # When the answer's points are chosen, a question word an earlier point holds counts this share of its weight.
    covered_word_weight: float = field(default=0.35, metadata=_SHARE)
    # "Not found" names at most this many of the question's terms.
    max_missing_terms: int = field(default=6, metadata=_POSITIVE)


@dataclass(frozen=True)
class DecisionThresholds:
    ok: float      # OK when every score >= ok
    block: float   # BLOCK when any score < block; WARNING otherwise


@dataclass(frozen=True)
class GroundednessThresholds:
    """How much support a claim needs (graph/algorithms/groundedness.py)."""

    claim_support_floor: float = field(default=0.5, metadata=_SHARE)   # a claim below this is unsupported
    semantic_band: tuple[float, float] = field(default=(0.2, 0.75), metadata=_INCREASING_PAIR)  # asks the embedder
    semantic_scale: tuple[float, float] = field(default=(0.45, 0.85), metadata=_INCREASING_PAIR)  # cosine -> 0..1
    negation_min_overlap: float = field(default=0.5, metadata=_SHARE)  # before a source's polarity counts


@dataclass(frozen=True)
class RelevanceSettings:
    """Whether an answer addresses its question (graph/algorithms/answer_relevance.py). Relevance (0–1)
    compares the question's share held by the best passage the answer cites, and by its best claim,
    with the best source's; an answer below its floor is off-topic (quality at most WARNING)."""

    answer_floor: float = field(default=0.8, metadata=_SHARE)       # a one-part question
    multi_part_floor: float = field(default=0.4, metadata=_SHARE)   # a question of several parts
    passage_weight: float = field(default=0.8, metadata=_SHARE)     # the cited passage's; the rest: the best claim's
    # Relevance lost when the opening lacks what the question asks (a value, a date, a name, yes/no).
    indirect_penalty: float = field(default=0.05, metadata=_SHARE)
    part_floor: float = field(default=0.25, metadata=_SHARE)        # a part held less than this is missing
    missing_part_utility: float = field(default=0.05, metadata=_SHARE)  # utility lost, times the share missing
    repeat_overlap: float = field(default=0.8, metadata=_SHARE)     # a claim this much held by an earlier one repeats
    redundancy_penalty: float = field(default=0.4, metadata=_SHARE)  # quality lost, times the share repeating
    # English: the local cross-encoder scores each part of the question against the claims, and that
    # score takes `model_weight` of the relevance (~10 ms a pair).
    cross_encoder: bool = False
    model_weight: float = field(default=0.25, metadata=_SHARE)


@dataclass(frozen=True)
class QualityScoring:
    """What lowers an answer's quality for its form (graph/algorithms/judging.py `quality_score`; it starts at 1)."""

    uncited_penalty: float = field(default=0.4, metadata=_SHARE)   # no citation, the coverage not none
    short_chars: int = field(default=30, metadata=_NOT_NEGATIVE)   # fewer characters (citations aside): very short
    short_penalty: float = field(default=0.3, metadata=_SHARE)     # a very short answer
    long_factor: float = field(default=1.5, metadata=_POSITIVE)    # over this times compose.max_answer_chars: long
    long_penalty: float = field(default=0.2, metadata=_SHARE)      # a long answer
    repeated_penalty: float = field(default=0.2, metadata=_SHARE)  # a sentence said twice
    other_language_penalty: float = field(default=0.1, metadata=_SHARE)  # partly in another language than the question


@dataclass(frozen=True)
class CoverageUtility:
    """The utility an answer starts from, by the composer's coverage level."""

    high: float = field(default=0.95, metadata=_SHARE)
    medium: float = field(default=0.85, metadata=_SHARE)
    low: float = field(default=0.6, metadata=_SHARE)
    none: float = field(default=0.5, metadata=_SHARE)   # also any other level

    def of(self, level: str) -> float:
        return {"high": self.high, "medium": self.medium, "low": self.low}.get(level, self.none)


@dataclass(frozen=True)
class UtilityScoring:
    """How much the reader can act on (graph/algorithms/judging.py `utility_score`), kept within 0..1."""

    coverage: CoverageUtility = CoverageUtility()
    numbers_bonus: float = field(default=0.05, metadata=_SHARE)        # the answer gives concrete numbers
    action_bonus: float = field(default=0.05, metadata=_SHARE)         # it says a trend or an action (`action_words`)
    structure_bonus: float = field(default=0.03, metadata=_SHARE)      # it is structured in items or paragraphs
    structure_items: int = field(default=2, metadata=_POSITIVE)        # list items that structure it (or a blank line)
    empty_closer_penalty: float = field(default=0.3, metadata=_SHARE)  # a phrase that adds nothing (`empty_closers`)


@dataclass(frozen=True)
class JudgeSettings:
    thresholds: DecisionThresholds
    invented_value_groundedness: float = field(default=0.2, metadata=_SHARE)
    invented_citation_groundedness: float = field(default=0.2, metadata=_SHARE)
    unsupported_claim_groundedness: float = field(default=0.25, metadata=_SHARE)
    groundedness: GroundednessThresholds = GroundednessThresholds()
    relevance: RelevanceSettings = RelevanceSettings()
    empty_closers: tuple[str, ...] = ()    # phrases that add nothing (lower utility)
    action_words: tuple[str, ...] = ()     # a trend or a recommended action (raise utility)
    quality: QualityScoring = QualityScoring()
    utility: UtilityScoring = UtilityScoring()


@dataclass(frozen=True)
class ReaderChecks:
    """How the reader (graph/providers/reader.py) checks a direct answer against the sentences it was read from
    (graph/algorithms/answer_reading.py): only what it confirms is given, and the judge blocks what it
    contradicts. Set on dev data (bench/RESULTS.md, "The reader in compose and judge")."""

    enabled: bool = True   # false: direct answers are given unchecked, as without the reader
    # A yes/no answer is confirmed when the reader reads the same with at least this probability ...
    yes_no_floor: float = field(default=0.7, metadata=_SHARE)
    # ... and contradicted when it reads the other with at least this one.
    contradiction_floor: float = field(default=0.6, metadata=_SHARE)
    # A value, date, name or phrase is confirmed when it and the reader's best span share at least this token F1 ...
    span_agreement: float = field(default=0.6, metadata=_SHARE)
    # ... and contradicted when it shares none with a span the reader finds likelier than "no answer here" by
    # this (logits).
    span_margin: float = 0.0
    # Given only when the reader confirms it: a yes/no answer (else: one it does not contradict) ...
    confirm_yes_no: bool = True
    # ... a value, date, name or phrase (off: one the reader does not contradict).
    confirm_values: bool = False
    # A one-part question the extractor gives no (kept) direct answer gets the reader's best span over this many
    # of the best chunks (0: never) ...
    span_chunks: int = field(default=2, metadata=_NOT_NEGATIVE)
    # ... when the reader finds it likelier than "no answer here" by this (logits). On the 143 FaQuAD questions its
    # training held aside, margin 6 lifts direct F1 from 0.16 to 0.31: of the 29 direct answers it adds, 25 share
    # words with the gold, 2 wrong ones pass as OK. Margin 2 reaches 0.49, with 11 more wrong ones passed as OK
    # (bench/RESULTS.md, "Answers", run n).
    answer_margin: float = 6.0


# --- languages, documents, memory ---------------------------------------------------------------


@dataclass(frozen=True)
class QuestionCues:
    """One language's cue phrases for what a question asks (graph/algorithms/question_form.py). A cue
    counts at the start of the question or of a clause (after a comma or colon); the earliest wins."""

    how_much: tuple[str, ...] = ()        # a value: "how much", "quanto"
    when: tuple[str, ...] = ()            # a date or period: "when", "em que ano"
    who: tuple[str, ...] = ()             # a person or organisation: "who", "quem"
    which: tuple[str, ...] = ()           # an entity of a named kind: "which", "qual"
    yes_no: tuple[str, ...] = ()          # auxiliaries that open a yes/no question: "does", "é verdade que"
    # A question with no cue at all and a question mark asks yes or no: Portuguese asks "A campanha segue ativa?"
    # in the order of a statement.
    bare_yes_no: bool = False
    open: tuple[str, ...] = ()            # an explanation or description: "how", "why", "o que"
    compare: tuple[str, ...] = ()         # anywhere: the question sets two things side by side
    # A question asking how to do something ("how to lower the CPC", "como otimizar o CPC"): its cues, and the
    # form the first word after one must have to be the act asked about (a regular expression on the folded
    # word: Portuguese infinitives; empty: any word). Nothing said about that act means the part is missing.
    method: tuple[str, ...] = ()
    method_verb: str | None = None
    quantity_words: tuple[str, ...] = ()  # "which/what <budget>" asks for a value
    time_words: tuple[str, ...] = ()      # "which <year>" asks for a date or period
    share_words: tuple[str, ...] = ()     # anywhere: the value asked is a percentage ("what share")
    count_cues: tuple[str, ...] = ()      # how-much cues that ask for a count ("how many"): no percentage, no amount
    amount_words: tuple[str, ...] = ()    # quantity words whose value is an amount ("revenue"), not a percentage
    # Words of change ("grow", "cresceram", "fell"): a how-much question holding one asks for the size of that
    # change wherever the language puts the verb ("Quanto as vendas de inverno cresceram?" asks about the
    # growth, as "Quanto cresceram as vendas de inverno?" does, not about any sales figure).
    change_words: tuple[str, ...] = ()
    # Where the word that says which kind of a measure is asked stands: after it in Portuguese ("taxa de
    # devolução", "receita bruta"), before it in English ("return rate", "gross revenue").
    qualifier_side: str = field(default="after", metadata=rule(lambda v: v in ("before", "after"), "before or after"))
    # A which-question asks for a name when its cue always does ("which" in English: `name_cues`) or when
    # it is about a kind of entity ("what company", "qual região": `entity_nouns`, or a kind of person:
    # `person_nouns`); about anything else ("Qual a duração …", "What is the purpose …") its answer is a
    # phrase, and no name is given for it. Each word is in one of the two lists.
    name_cues: tuple[str, ...] = ()
    entity_nouns: tuple[str, ...] = ()
    # Kinds of entity that are people ("the individual", "which pop star", "qual atleta"): a question about
    # one asks for a person, whom an acronym does not name ("FTX", "FTC"; "SBF" only as the initials of a
    # full name the evidence gives).
    person_nouns: tuple[str, ...] = ()
    # Cues that ask where ("where", "onde"): the words after them are the question's subject, so a person noun
    # there ("Onde o candidato realiza a prova?") does not make it a question about a person.
    place_cues: tuple[str, ...] = ()
    # Words that say the same thing in a document as in a question, one ring of equivalents each (the stems
    # of "dividido" and "divisão" differ): a part is covered, or answered by the list under a heading, through
    # them ("what changed afterwards" by "Actions taken by Legal and Operations:"), and the composer's sentences
    # hold a question word through them ("decide" by "ordered"). Never used to search.
    synonyms: tuple[tuple[str, ...], ...] = ()


@dataclass(frozen=True)
class SourceCues:
    """One language's words that attribute what a question asks about to a source of the documents
    (graph/algorithms/scoping.py `attributed_names`): "a Bloomberg article", "a report by Reuters",
    "according to The Wall Street Journal", "segundo a Folha"."""

    nouns: tuple[str, ...] = ()     # what a source publishes, right after its name: "article", "reportagem"
    links: tuple[str, ...] = ()     # between such a noun and the source's name: "by", "from", "da"
    before: tuple[str, ...] = ()    # phrases the source's name follows: "according to", "segundo"
    articles: tuple[str, ...] = ()  # words before a name that are not part of it: "the", "o"
    # How a question says a source spoke of something ("discussed in TechCrunch articles", "mencionado pela
    # Folha"): like the nouns, words that point at documents, not what the question asks about.
    verbs: tuple[str, ...] = ()


@dataclass(frozen=True)
class NameJoiners:
    """One language's small words a name may hold between its capitalised words ("Bank of America", "Banco do
    Brasil"). Three readers have each kept their own list, and they differ (a change of one would change what
    they find): kept apart, by reader."""

    answers: tuple[str, ...] = ()   # the direct answer's names (graph/algorithms/direct_answer.py)
    sources: tuple[str, ...] = ()   # a source a question names ("Times of India"; graph/algorithms/scoping.py)
    claims: tuple[str, ...] = ()    # the names of a judged claim (graph/algorithms/groundedness.py)
    splits: tuple[str, ...] = ()    # where a named source is two ("TechCrunch and The Verge"; scoping.py)


@dataclass(frozen=True)
class SharedWords:
    """The words of every named language read together, where a text is read before (or whatever) its
    language is known: numbers, dates, sentence ends and names (`Languages.shared`)."""

    scale_words: tuple[tuple[str, float], ...] = ()  # "1,2 milhão": the word (folded) and what it multiplies by
    abbreviations: frozenset[str] = frozenset()      # "Dr.", "e.g.": a dot that ends no sentence (folded)
    date_connectors: tuple[str, ...] = ()            # "18 de outubro de 2023": between day, month and year
    range_connectors: tuple[str, ...] = ()           # "24 to 30 November", "de 24 a 30 de novembro"
    change_connectors: tuple[str, ...] = ()          # "fell from 16 to 8", "caiu de 16 para 8": between two values
    # A state and its opposite, by sense: each word with its sense and side ("below": attainment, 1).
    opposites: tuple[tuple[str, str, int], ...] = ()
    conditionals: tuple[str, ...] = ()               # "if", "caso": what follows, to the clause's end, is supposed
    percent_words: tuple[str, ...] = ()              # "dez por cento": a percent sign written out
    number_joiners: tuple[str, ...] = ()             # "vinte e cinco": between the words of one number
    name_joiners: NameJoiners = NameJoiners()


@dataclass(frozen=True)
class Languages:
    """What ragate knows about each language, by kind (each a mapping of languages): what the policy's
    language packs (`languages.packs`, one file per language) assemble into, or a policy writes in this
    form itself."""

    markers: Mapping[str, tuple[str, ...]] = field(metadata=rule(bool, "a mapping of languages to word lists"))
    analyzers: Mapping[str, str] = field(metadata=rule(bool, "a mapping of languages to stemmer names"))
    default: str = "en"
    months: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    negations: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    # Verbs that carry a question's tense or action, not its subject (never named as missing).
    light_verbs: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    # Spans of a year, each with its words in every language ("half": semestre, H1, …): a question about one
    # is not answered by a sentence that names only others (graph/algorithms/periods.py `off_period`).
    period_units: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    number_words: Mapping[str, Mapping[str, float]] = field(default_factory=dict)
    # A corpus is in one language when at least this share of its text is; ingest then gives a new
    # collection that language's own embedding model if there is one (else the multilingual one).
    monolingual_share: float = field(default=0.9, metadata=_SHARE)
    question_cues: Mapping[str, QuestionCues] = field(default_factory=dict)
    source_cues: Mapping[str, SourceCues] = field(default_factory=dict)
    # The words read in every text whatever its language (`shared`), per language.
    scale_words: Mapping[str, Mapping[str, float]] = field(default_factory=dict)
    abbreviations: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    date_connectors: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    range_connectors: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    change_connectors: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    # Words of a state and of its opposite, by sense, each sense two lists: "attainment": [[met, reached, …],
    # [below, missed, …]] (graph/algorithms/opposites.py reads yes or no with them).
    opposites: Mapping[str, Mapping[str, tuple[tuple[str, ...], tuple[str, ...]]]] = field(default_factory=dict)
    conditionals: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    percent_words: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    number_joiners: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    name_joiners: Mapping[str, NameJoiners] = field(default_factory=dict)
    # The language's name in English, for the LLM composer's prompt ("Answer in Brazilian Portuguese").
    names: Mapping[str, str] = field(default_factory=dict)
    # The sentences the deterministic composer and the safe response write (graph/prompts.py `phrase`).
    phrases: Mapping[str, Mapping[str, str | Mapping[str, str]]] = field(default_factory=dict)

    def synonyms(self, language: str) -> tuple[tuple[str, ...], ...]:
        """The language's synonym rings (`question_cues.<language>.synonyms`); none for a language without cues."""
        cues = self.question_cues.get(language)
        return cues.synonyms if cues else ()

    @functools.cached_property
    def shared(self) -> SharedWords:
        """Every language's words of each kind `SharedWords` holds, in one list (languages in order, each
        word once)."""
        def union(kind: Mapping[str, Sequence[str]]) -> tuple[str, ...]:
            return tuple(dict.fromkeys(w for words in kind.values() for w in words))

        scales: dict[str, float] = {}
        for words in self.scale_words.values():
            for word, factor in words.items():
                scales.setdefault(word.casefold(), factor)
        joiners = self.name_joiners.values()
        return SharedWords(
            scale_words=tuple(scales.items()),
            abbreviations=frozenset(a.casefold() for a in union(self.abbreviations)),
            date_connectors=union(self.date_connectors), range_connectors=union(self.range_connectors),
            change_connectors=union(self.change_connectors),
            opposites=tuple(dict.fromkeys((word, sense, side) for senses in self.opposites.values()
                                          for sense, sides in senses.items()
                                          for side, words in enumerate(sides) for word in words)),
            conditionals=union(self.conditionals),
            percent_words=union(self.percent_words), number_joiners=union(self.number_joiners),
            name_joiners=NameJoiners(*(tuple(dict.fromkeys(w for j in joiners for w in getattr(j, f.name)))
                                       for f in dataclasses.fields(NameJoiners))))


# --- language packs ----------------------------------------------------------------------------


@dataclass(frozen=True)
class PackJudgeWords:
    empty_closers: tuple[str, ...] = ()   # phrases that add nothing (judge.empty_closers)
    action_words: tuple[str, ...] = ()    # a trend or a recommended action (judge.action_words)


@dataclass(frozen=True)
class LanguagePack:
    """One language, in one file (`languages.packs.<language>`, e.g. policies/languages/pt.yaml): every word
    list and phrase ragate reads or writes in it. Loading assembles the packs into `Languages` (each kind a
    mapping of languages) and adds their entries to the sections that list words of every language at once
    (period_units, retrieval.date_relations, decomposition.lexicons, judge's closers and action words)."""

    markers: tuple[str, ...] = field(metadata=rule(bool, "a non-empty list"))
    analyzer: str = field(metadata=rule(lambda v: v in SNOWBALL_LANGUAGES,
                                        "one of " + ", ".join(sorted(SNOWBALL_LANGUAGES))))
    name: str | None = None
    months: tuple[str, ...] = field(default=(), metadata=rule(lambda v: len(v) in (0, 12), "the 12 month names"))
    negations: tuple[str, ...] = ()
    light_verbs: tuple[str, ...] = ()
    number_words: Mapping[str, float] = field(default_factory=dict)
    scale_words: Mapping[str, float] = field(default_factory=dict)
    number_joiners: tuple[str, ...] = ()
    abbreviations: tuple[str, ...] = ()
    date_connectors: tuple[str, ...] = ()
    range_connectors: tuple[str, ...] = ()
    change_connectors: tuple[str, ...] = ()
    opposites: Mapping[str, tuple[tuple[str, ...], tuple[str, ...]]] = field(
        default_factory=dict, metadata=rule(lambda v: all(isinstance(sides, (list, tuple)) and len(sides) == 2
                                                          for sides in v.values()),
                                            "a mapping of senses to two word lists (a state, its opposite)"))
    conditionals: tuple[str, ...] = ()
    percent_words: tuple[str, ...] = ()
    name_joiners: NameJoiners | None = None
    question_cues: QuestionCues | None = None
    source_cues: SourceCues | None = None
    period_units: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    date_relations: Mapping[str, tuple[str, ...]] = field(
        default_factory=dict, metadata=rule(lambda v: set(v) <= {"before", "after"}, "a mapping of 'before' / 'after' to lists of phrases"))
    decomposition: Lexicon | None = None
    judge: PackJudgeWords | None = None
    phrases: Mapping[str, str | Mapping[str, str]] = field(default_factory=dict)


# Where each key of a pack goes in the policy: under `languages`, as <kind>.<language> (the pack's `analyzer`
# as `analyzers`, its `name` as `names`); the others are merged into the sections that hold every language.
_PACK_KINDS = {"markers": "markers", "analyzer": "analyzers", "name": "names", "months": "months",
               "negations": "negations", "light_verbs": "light_verbs", "number_words": "number_words",
               "scale_words": "scale_words", "number_joiners": "number_joiners", "abbreviations": "abbreviations",
               "date_connectors": "date_connectors", "range_connectors": "range_connectors",
               "change_connectors": "change_connectors", "opposites": "opposites",
               "conditionals": "conditionals",
               "percent_words": "percent_words", "name_joiners": "name_joiners", "question_cues": "question_cues",
               "source_cues": "source_cues", "phrases": "phrases"}


@dataclass(frozen=True)
class PackFile:
    """A language pack the policy names by a file: what it wrote, where that is, and the file's sha256."""

    name: str
    path: str
    digest: str


def _read_packs(raw: dict, path: str) -> tuple[dict, tuple[PackFile, ...]]:
    """The policy `raw` with its language packs (`languages.packs`) assembled into it: the `languages`
    section by kind, as `Languages` reads it, and the shared sections' lists with each pack's words added
    (after the policy's own, each word once). Pack files are read relative to the policy's folder, else
    among the packs ragate ships (policies/languages/)."""
    languages = raw.get("languages")
    if not isinstance(languages, dict) or "packs" not in languages:
        return raw, ()
    packs = languages["packs"]
    if not isinstance(packs, dict) or not packs:
        raise PolicyError(f"policy {path}: languages.packs must be a mapping of languages to pack files")
    out = {**raw, "languages": {k: v for k, v in languages.items() if k != "packs"}}
    files: list[PackFile] = []
    for language, named in packs.items():
        where = f"languages.packs.{language}"
        if isinstance(named, dict):  # written in the policy itself
            pack, source = named, path
        elif isinstance(named, str) and named:
            source = str(Path(path).parent / named)
            if not Path(source).exists() and (DEFAULT_POLICY_PATH.parent / named).is_file():
                # A policy copied elsewhere without its packs ("cp policies/rag.yaml my.yaml") reads the packs
                # ragate ships; a pack beside it, written by its owner, wins.
                source = str(DEFAULT_POLICY_PATH.parent / named)
            try:
                data = Path(source).read_bytes()
                pack = yaml.safe_load(data.decode("utf-8"))
            except FileNotFoundError:
                raise PolicyError(f"policy {path}: {where}: language pack {source} not found") from None
            except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
                reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
                raise PolicyError(f"policy {path}: {where}: language pack {source} cannot be read ({reason})") from None
            files.append(PackFile(named, str(Path(source).resolve()), _sha256(data)))
        else:
            raise PolicyError(f"policy {path}: {where} must name a pack file (or be the pack's mapping)")
        _Reader(f"{path} (language pack {source})").section(LanguagePack, pack, where)  # names the bad field
        _add_pack(out, str(language), pack, lambda field, where=where: PolicyError(
            f"policy {path}: {where}: {field} is given twice (by the policy or another pack)"))
    return out, tuple(files)


def _add_pack(policy: dict, language: str, pack: Mapping[str, Any], twice: typing.Callable[[str], PolicyError]) -> None:
    """Add one pack (its raw mapping, already checked) to the policy `policy` (raw, changed in place)."""
    def extend(section: dict, key: str, words: Any) -> None:
        section[key] = list(dict.fromkeys([*(section.get(key) or []), *(words or [])]))

    def add(section: dict, kind: str, where: str, value: Any) -> None:
        mapping = section[kind] = dict(section.get(kind) or {})
        if language in mapping:
            raise twice(f"{where}.{language}")
        mapping[language] = value

    langs = policy["languages"]
    for key, kind in _PACK_KINDS.items():
        if key in pack:
            add(langs, kind, kind, pack[key])
    if pack.get("period_units"):
        units = langs["period_units"] = dict(langs.get("period_units") or {})
        for unit, words in pack["period_units"].items():
            extend(units, unit, words)
    if pack.get("date_relations"):
        retrieval = policy["retrieval"] = dict(policy.get("retrieval") or {})
        relations = retrieval["date_relations"] = dict(retrieval.get("date_relations") or {})
        for relation, phrases in pack["date_relations"].items():
            extend(relations, relation, phrases)
    if "decomposition" in pack:
        decomposition = policy["decomposition"] = dict(policy.get("decomposition") or {})
        add(decomposition, "lexicons", "decomposition.lexicons", pack["decomposition"])
    if pack.get("judge"):
        judge = policy["judge"] = dict(policy.get("judge") or {})
        for key, phrases in pack["judge"].items():
            extend(judge, key, phrases)


@dataclass(frozen=True)
class DocumentSettings:
    instruction_patterns: tuple[str, ...] = ()   # document text addressed to a model (prompt injection)


@dataclass(frozen=True)
class MemorySettings:
    namespace: str = "memory"
    history_turns: int = field(default=5, metadata=_between(0, 100))


@dataclass(frozen=True, eq=False)
class Policy:
    """A validated policy: one typed attribute per section of the YAML. Compared and hashed by
    identity: `load_policy` hands out one object per version of a file."""

    path: str
    raw: Mapping[str, Any] = field(repr=False)
    digest: str            # sha256 of the file's bytes: the version a request record names
    version: Any
    routing: Routing
    profiles: Mapping[str, Profile]
    rag: RagRoutes
    retrieval: RetrievalSettings
    decomposition: DecompositionSettings
    rerank: RerankSettings
    compose: ComposeSettings
    judge: JudgeSettings
    languages: Languages
    documents: DocumentSettings
    memory: MemorySettings
    reader: ReaderChecks = ReaderChecks()
    # The language pack files the policy names (`languages.packs`); `raw` holds them assembled.
    packs: tuple[PackFile, ...] = ()

    def entity_route(self, entity: str | None) -> EntityRoute:
        name = entity if entity in self.rag.entities else "default"
        spec = self.rag.entities[name] if name != "default" else self.rag.default
        return EntityRoute(entity=name, profile_name=spec.profile, profile=self.profiles[spec.profile],
                           collections=spec.collections, max_chunks=spec.max_chunks)

    def boosts(self, current_year: int | None = None,
               preferred: Mapping[str, Any] | None = None) -> dict[str, tuple[float, dict[str, Any]]]:
        """Each rerank boost as (factor, condition on indexed payload fields): recency applies to
        chunks whose `year` is the current year, playbook to chunks whose `docType` is listed, intent to
        chunks meeting `preferred` (an inferred intent's filters: the route's `preferred_filters`)."""
        cfg = self.rerank.boosts
        out: dict[str, tuple[float, dict[str, Any]]] = {}
        if preferred:
            out["intent"] = (self.routing.inferred_intent_boost, dict(preferred))
        if cfg.recency is not None:
            year = current_year or cfg.recency.current_year or datetime.date.today().year
            out["recency"] = (cfg.recency.factor, {"year": int(year)})
        if cfg.playbook is not None and cfg.playbook.doc_types:
            out["playbook"] = (cfg.playbook.factor, {"docType": list(cfg.playbook.doc_types)})
        return out


# The sections of the file, in the order they are checked; the required ones have no default.
SECTIONS: dict[str, tuple[type, bool]] = {
    "routing": (Routing, True), "profiles": (Mapping[str, Profile], True), "rag": (RagRoutes, True),
    "decomposition": (DecompositionSettings, True), "rerank": (RerankSettings, True), "compose": (ComposeSettings, True),
    "judge": (JudgeSettings, True), "languages": (Languages, True), "retrieval": (RetrievalSettings, False),
    "documents": (DocumentSettings, False), "memory": (MemorySettings, False), "reader": (ReaderChecks, False),
}


# --- reading a section against its dataclass ----------------------------------------------------


class _Reader:
    """Turns parsed YAML into the typed sections, naming the first field that is wrong."""

    def __init__(self, path: str):
        self.path = path

    def fail(self, where: str, message: str) -> PolicyError:
        return PolicyError(f"policy {self.path}: {where} {message}")

    def value(self, hint: Any, raw: Any, where: str) -> Any:
        origin, args = typing.get_origin(hint), typing.get_args(hint)
        if origin in (typing.Union, types.UnionType):
            if raw is None and type(None) in args:
                return None
            inner = [a for a in args if a is not type(None)]
            if len(inner) == 1:
                return self.value(inner[0], raw, where)
            for option in inner:  # str | int: the first type the value is
                try:
                    return self.value(option, raw, where)
                except PolicyError:
                    continue
            raise self.fail(where, f"must be one of {' or '.join(_type_name(a) for a in inner)}")
        if dataclasses.is_dataclass(hint):
            return self.section(hint, raw, where)
        if origin in (Mapping, dict):
            if not isinstance(raw, dict):
                raise self.fail(where, f"must be a mapping of names to {_type_name(args[1])}")
            return types.MappingProxyType({str(k): self.value(args[1], v, f"{where}.{k}") for k, v in raw.items()})
        if origin is tuple:
            if not isinstance(raw, list):
                raise self.fail(where, f"must be a list of {_type_name(args[0])}")
            if args[-1] is Ellipsis:
                return tuple(self.value(args[0], v, f"{where}[{i}]") for i, v in enumerate(raw))
            if len(raw) != len(args):
                raise self.fail(where, f"must be a list of {len(args)} {_type_name(args[0])}")
            return tuple(self.value(a, v, f"{where}[{i}]") for i, (a, v) in enumerate(zip(args, raw)))
        if hint is bool:
            if not isinstance(raw, bool):
                raise self.fail(where, "must be true or false")
            return raw
        if hint is int:
            if not isinstance(raw, int) or isinstance(raw, bool):
                raise self.fail(where, "must be an integer")
            return raw
        if hint is float:
            if not isinstance(raw, (int, float)) or isinstance(raw, bool):
                raise self.fail(where, "must be a number")
            return float(raw)
        if hint is str:
            if not isinstance(raw, str) or not raw:
                raise self.fail(where, "must be a non-empty string")
            return raw
        if hint is Any:
            return raw
        raise TypeError(f"policy schema: no reader for {hint!r} at {where}")

    def section(self, cls: type, raw: Any, where: str) -> Any:
        if not isinstance(raw, dict):
            raise self.fail(where, "must be a mapping")
        hints = typing.get_type_hints(cls)
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(map(str, raw)) - known)
        if unknown:
            raise self.fail(f"{where}.{unknown[0]}", f"is not a setting of {where} (known: {', '.join(sorted(known))})")
        values: dict[str, Any] = {}
        for f in dataclasses.fields(cls):
            name = f"{where}.{f.name}"
            if f.name not in raw:
                if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                    raise self.fail(name, "is missing")
                continue  # the dataclass's own default
            value = self.value(hints[f.name], raw[f.name], name)
            check = f.metadata.get("check")
            if check is not None and value is not None and not check(value):
                raise self.fail(name, f"must be {f.metadata['rule']}, not {raw[f.name]!r}")
            values[f.name] = value
        return cls(**values)


def _type_name(hint: Any) -> str:
    names = {str: "strings", int: "integers", float: "numbers", bool: "true/false values"}
    if hint in names:
        return names[hint]
    if typing.get_origin(hint) is tuple:
        return f"lists of {_type_name(typing.get_args(hint)[0])}"
    if typing.get_origin(hint) in (Mapping, dict):
        return "mappings"
    return getattr(hint, "__name__", str(hint)).lower() + " settings"


def _check_cross_fields(policy: Policy, fail: typing.Callable[[str, str], PolicyError]) -> None:
    """The rules that relate fields to each other or to the outside world."""
    for name, spec in [("default", policy.rag.default), *policy.rag.entities.items()]:
        where = "rag.default" if name == "default" else f"rag.entities.{name}"
        if spec.profile not in policy.profiles:
            raise fail(f"{where}.profile", f"'{spec.profile}' is not a defined profile")
    lq = policy.rerank.long_questions
    if lq.short_terms >= lq.long_terms:
        raise fail("rerank.long_questions", f"short_terms ({lq.short_terms}) must be below long_terms ({lq.long_terms})")
    t = policy.judge.thresholds
    if not 0 <= t.block <= t.ok <= 1:
        raise fail("judge.thresholds", "must satisfy 0 <= block <= ok <= 1")
    for lang, stemmer in policy.languages.analyzers.items():
        if stemmer not in SNOWBALL_LANGUAGES:
            raise fail(f"languages.analyzers.{lang}:",
                       f"unknown stemmer {stemmer!r} (one of {', '.join(sorted(SNOWBALL_LANGUAGES))})")
    for lang, months in policy.languages.months.items():
        if len(months) != 12:
            raise fail(f"languages.months.{lang}", "must list the 12 month names")
    for i, pattern in enumerate(policy.documents.instruction_patterns):
        try:
            re.compile(pattern)
        except re.error as exc:
            raise fail(f"documents.instruction_patterns[{i}]", f"is not a valid regular expression ({exc})") from None


def validate_policy(raw: Any, path: str, digest: str = "") -> Policy:
    """Check every field the graph relies on and build the typed policy; `PolicyError` names the
    first bad field (and the language pack it is in). `digest` is the file's sha256 (empty for a policy
    built in memory); the packs' files count in the policy's digest. Pack files are read relative to
    `path`'s folder."""
    reader = _Reader(path)
    if not isinstance(raw, dict):
        raise PolicyError(f"policy {path}: top level must be a mapping")
    raw, packs = _read_packs(raw, path)
    if digest and packs:
        digest = _sha256("\n".join([digest, *(f"{p.name} {p.digest}" for p in packs)]).encode())
    unknown = sorted(set(map(str, raw)) - set(SECTIONS) - {"version"})
    if unknown:
        raise reader.fail(f"section '{unknown[0]}'", f"is not a policy section (known: {', '.join(sorted(SECTIONS))})")
    sections: dict[str, Any] = {}
    for name, (hint, required) in SECTIONS.items():
        if raw.get(name) is None:
            if required:
                raise reader.fail(f"section '{name}'", "is missing")
            sections[name] = hint()
            continue
        sections[name] = reader.value(hint, raw[name], name)
    policy = Policy(path=path, raw=raw, digest=digest or _sha256(repr(raw).encode()), version=raw.get("version"),
                    packs=packs, **sections)
    _check_cross_fields(policy, reader.fail)
    return policy


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


_cache: dict[str, tuple[tuple[tuple[int, int], ...], Policy]] = {}
# The versions read lately, by digest: a speed-up for the runs that name one (graph/runtime/run_policy.py), whose
# source is the version kept in the data folder, never this cache.
_versions: OrderedDict[str, Policy] = OrderedDict()
KEPT_VERSIONS = 64
_checked_at: dict[str, float] = {}
_cache_lock = threading.Lock()
# The file is looked at (stat) at most this often per path.
RECHECK_SECONDS = 1.0


def _stamp(path: str) -> tuple[int, int]:
    try:
        st = os.stat(path)
    except OSError:
        return (-1, -1)
    return (st.st_mtime_ns, st.st_size)


def load_policy(path: str | os.PathLike[str] | None = None) -> Policy:
    """Load and validate a policy, cached until the file or one of its language packs changes (mtime and
    size, looked at no more than once a second)."""
    resolved = str(Path(path) if path else DEFAULT_POLICY_PATH)
    now = time.monotonic()
    with _cache_lock:
        hit = _cache.get(resolved)
        if hit and now - _checked_at.get(resolved, 0.0) < RECHECK_SECONDS:
            return hit[1]
    fail = lambda msg: PolicyError(f"policy {resolved}: {msg}")  # noqa: E731
    try:
        st = os.stat(resolved)
    except FileNotFoundError:
        raise fail("file not found") from None
    except OSError as exc:
        raise fail(f"cannot be read ({exc.strerror})") from None
    stamp = (st.st_mtime_ns, st.st_size)
    with _cache_lock:
        hit = _cache.get(resolved)
        if hit and hit[0] == (stamp, *(_stamp(p.path) for p in hit[1].packs)):
            _checked_at[resolved] = now
            return hit[1]
    try:
        with open(resolved, "rb") as fh:
            data = fh.read()
        raw = yaml.safe_load(data.decode("utf-8"))
    except UnicodeDecodeError:
        raise fail("is not UTF-8 text") from None
    except yaml.YAMLError as exc:
        raise fail(f"is not valid YAML ({str(exc).splitlines()[0]})") from None
    except OSError as exc:
        raise fail(f"cannot be read ({exc.strerror})") from None
    policy = validate_policy(raw, resolved, _sha256(data))
    with _cache_lock:
        _cache[resolved] = ((stamp, *(_stamp(p.path) for p in policy.packs)), policy)
        _checked_at[resolved] = now
        _keep_version(policy)
    return policy


def _keep_version(policy: Policy) -> None:
    """Keep `policy` among this process's recent versions (under `_cache_lock`)."""
    _versions[policy.digest] = policy
    _versions.move_to_end(policy.digest)
    while len(_versions) > KEPT_VERSIONS:
        _versions.popitem(last=False)


def kept_version_text(policy: Policy) -> str:
    """`policy` as one self-contained YAML document (its packs assembled into it, `Policy.raw`), from which
    `policy_from_kept_version` rebuilds the same version in any process."""
    return yaml.safe_dump({"path": policy.path, "digest": policy.digest, "policy": policy.raw},
                          allow_unicode=True, sort_keys=False)


def policy_from_kept_version(text: str, digest: str) -> Policy:
    """The version `kept_version_text` wrote, validated as a policy file is; `PolicyError` when the text is
    not that of the version `digest`."""
    try:
        kept = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise PolicyError(f"kept policy version {digest[:12]}: is not valid YAML ({str(exc).splitlines()[0]})") from None
    if not isinstance(kept, dict) or kept.get("digest") != digest or not isinstance(kept.get("policy"), dict):
        raise PolicyError(f"kept policy version {digest[:12]}: is not that version")
    policy = validate_policy(kept["policy"], str(kept.get("path") or ""), digest)
    with _cache_lock:
        _keep_version(policy)
    return policy


@functools.cache
def shipped_languages() -> Languages:
    """The languages of the policy ragate ships (policies/rag.yaml and its packs)."""
    return load_policy(DEFAULT_POLICY_PATH).languages


# The languages of the policy the current run reads (graph/runtime/run_policy.py sets it as a node reads
# its policy): a reader whose caller passes no words of its own takes the run's (`run_languages`).
_run_languages: contextvars.ContextVar[Languages | None] = contextvars.ContextVar("ragate_run_languages", default=None)


def use_languages(languages: Languages) -> None:
    """The languages the readers called from here on, in this context (a node's run), take by default."""
    _run_languages.set(languages)


def run_languages() -> Languages:
    """The languages of the current run's policy; outside a run (ingest, a reader called alone), the
    shipped policy's."""
    return _run_languages.get() or shipped_languages()


def run_language(state: Mapping[str, Any], policy: Policy | None = None) -> str:
    """The language of the run's question: route_gate's reading (the state's `language`, also kept in the
    route record `rag`), else the default of `policy` (a node called on its own; the current run's policy's
    when None, `run_languages`)."""
    rag = state.get("rag") or {}
    return state.get("language") or rag.get("language") or (policy.languages if policy else run_languages()).default


def policy_version(digest: str) -> Policy | None:
    """The policy read lately whose digest is this one, if this process still keeps it."""
    with _cache_lock:
        return _versions.get(digest)
