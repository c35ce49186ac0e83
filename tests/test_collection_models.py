"""Each collection's own embedding model: chosen at ingest from the corpus language (`auto`), recorded in
the manifest, used for every search of it, never mixed with another (clear errors), and changed with
one command (`ragate reembed`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from graph.context import Context
from graph.entrypoints.cli import main
from graph.graph import compile_graph
from graph.indexing.ingest import ingest_path
from graph.providers.resources import get_resources
from graph.providers.vectorstore import CollectionError

ENGLISH = [
    ("returns", "Online returns in 2025", "Online orders were returned at a rate of 9.8% in 2025. The main reason "
                                          "for returns was size and fit, ahead of damaged goods and late delivery."),
    ("stores", "Store openings", "The company opened twelve new stores in the north of the country during the "
                                 "first half of the year, and closed three that were losing money."),
    ("energy", "Energy costs", "Electricity costs of the warehouses rose by a fifth after the new contract with "
                               "the utility took effect in the spring."),
]
PORTUGUESE = [
    ("devolucoes", "Devoluções online", "As devoluções de pedidos online foram de 9,8% em 2025. O principal motivo "
                                        "das devoluções foi o tamanho e o caimento das peças."),
    ("lojas", "Abertura de lojas", "A empresa abriu doze lojas novas no norte do país no primeiro semestre e "
                                   "fechou três que davam prejuízo."),
]


def write_corpus(folder: Path, docs) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "docs.jsonl"
    with path.open("w", encoding="utf-8") as fh:
        for doc_id, title, text in docs:
            fh.write(json.dumps({"id": doc_id, "assetName": title, "content": text,
                                 "metadata": {"status": "approved", "isApprovedForAI": True}}, ensure_ascii=False) + "\n")
    return path


def manifest(home: Path, collection: str) -> dict:
    return json.loads((home / "collections" / collection / "ragate.json").read_text())


@pytest.fixture
def home(tmp_path) -> Path:
    return tmp_path / "home"


def test_auto_gives_an_english_corpus_bge_small_and_a_portuguese_one_use(home, tmp_path):
    ctx = Context(home=str(home))
    report = ingest_path(write_corpus(tmp_path / "en", ENGLISH), collection="english", tenant="t", context=ctx)
    assert report.embedding_model == "local/bge-small"
    recorded = manifest(home, "english")
    assert (recorded["embedding_model"], recorded["dimensions"], recorded["language"]) == ("local/bge-small", 384, "en")
    report = ingest_path(write_corpus(tmp_path / "pt", PORTUGUESE), collection="portuguese", tenant="t", context=ctx)
    assert report.embedding_model == "local/use-multilingual"
    assert manifest(home, "portuguese")["language"] == "pt"
    assert manifest(home, "portuguese")["dimensions"] == 512


def test_a_named_model_is_used_and_recorded(home, tmp_path):
    ctx = Context(home=str(home), embedding_model="local/use-multilingual")
    ingest_path(write_corpus(tmp_path / "en", ENGLISH), collection="c", tenant="t", context=ctx)
    assert manifest(home, "c")["embedding_model"] == "local/use-multilingual"


def test_each_collection_is_searched_with_its_own_model(home, tmp_path):
    ctx = Context(home=str(home), tenant="t", collections=["english", "portuguese"])
    ingest_path(write_corpus(tmp_path / "en", ENGLISH), collection="english", tenant="t", context=ctx)
    ingest_path(write_corpus(tmp_path / "pt", PORTUGUESE), collection="portuguese", tenant="t", context=ctx)
    state = compile_graph(retrieval_only=True).invoke({"question": "What was the main reason for online returns?"},
                                                      context=ctx)
    assert not state.get("errors"), state.get("errors")
    top = state["reranked"][0]
    assert top["docId"] == "returns"
    dense = [h for r in state["hits"].values() for h in r["dense"]]
    assert {h["collection"] for h in dense} == {"english", "portuguese"}  # both searched by meaning


def test_a_run_naming_another_model_gets_a_clear_error_and_lexical_search(home, tmp_path):
    ctx = Context(home=str(home), tenant="t", collections=["english"])
    ingest_path(write_corpus(tmp_path / "en", ENGLISH), collection="english", tenant="t", context=ctx)
    other = Context(home=str(home), tenant="t", collections=["english"], embedding_model="local/use-multilingual")
    state = compile_graph(retrieval_only=True).invoke({"question": "What was the main reason for online returns?"},
                                                      context=other)
    errors = " ".join(state.get("errors") or [])
    assert "collection 'english' was embedded with local/bge-small, not local/use-multilingual" in errors
    assert "ragate reembed --collection english" in errors and "lexical search only" in errors
    assert all(not r["dense"] for r in state["hits"].values())
    assert state["reranked"][0]["docId"] == "returns"  # still answered, lexically
    # Ingesting into it with another model is refused before anything is written.
    with pytest.raises(CollectionError, match="was embedded with local/bge-small"):
        ingest_path(write_corpus(tmp_path / "more", PORTUGUESE), collection="english", tenant="t", context=other)


def test_appending_another_language_warns_with_the_reembed_command(home, tmp_path):
    ctx = Context(home=str(home))
    ingest_path(write_corpus(tmp_path / "en", ENGLISH), collection="c", tenant="t", context=ctx)
    report = ingest_path(write_corpus(tmp_path / "pt", PORTUGUESE), collection="c", tenant="t", context=ctx)
    assert report.documents_written == 2 and report.embedding_model == "local/bge-small"
    assert any("ragate reembed --collection c --embedding-model local/use-multilingual" in w for w in report.warnings)


def test_reembed_swaps_the_model_and_keeps_every_tenants_chunks(home, tmp_path, capsys):
    ctx = Context(home=str(home), embedding_model="local/use-multilingual")
    ingest_path(write_corpus(tmp_path / "en", ENGLISH), collection="c", tenant="t1", context=ctx)
    ingest_path(write_corpus(tmp_path / "en2", ENGLISH[:1]), collection="c", tenant="t2", context=ctx)
    before = get_resources(ctx).index.count("c")
    assert main(["reembed", "--collection", "c", "--home", str(home), "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "re-embedded with local/bge-small (was local/use-multilingual; corpus language en)" in out
    assert manifest(home, "c")["embedding_model"] == "local/bge-small"
    assert not (home / "collections" / "c.reembed").exists()
    auto = Context(home=str(home), tenant="t2", collections=["c"])
    assert get_resources(auto).index.count("c") == before
    state = compile_graph(retrieval_only=True).invoke({"question": "What was the main reason for online returns?"},
                                                      context=auto)
    assert not state.get("errors"), state.get("errors")
    assert {c["docId"] for c in state["reranked"]} == {"returns"}  # t2's one document, never t1's
    assert any(r["dense"] for r in state["hits"].values())
    # Unchanged documents stay unchanged for a later ingest (payloads and hashes were kept).
    again = ingest_path(write_corpus(tmp_path / "en", ENGLISH), collection="c", tenant="t1", context=Context(home=str(home)))
    assert again.documents_unchanged == 3 and again.documents_written == 0
    # Errors are one line, exit 2.
    assert main(["reembed", "--collection", "c", "--home", str(home), "--quiet"]) == 2
    assert "already embedded with local/bge-small" in capsys.readouterr().err
    assert main(["reembed", "--collection", "nope", "--home", str(home), "--quiet"]) == 2
    assert "does not exist" in capsys.readouterr().err


# --- the cross-encoder in the rerank step -----------------------------------------------------


@pytest.fixture
def english_home(tmp_path) -> Path:
    home = tmp_path / "home"
    ingest_path(write_corpus(tmp_path / "en", ENGLISH), collection="english", tenant="t", context=Context(home=str(home)))
    return home


def ask_retrieval(home: Path, question: str, **context):
    ctx = Context(home=str(home), tenant="t", collections=["english"], **context)
    return compile_graph(retrieval_only=True).invoke({"question": question}, context=ctx)


def cross_encoder_in_auto(raw):
    raw["rerank"]["relevance"]["auto_cross_encoder"] = True


def test_auto_reranks_with_ragates_own_reranker_unless_the_policy_asks_for_the_cross_encoder(english_home):
    state = ask_retrieval(english_home, "What was the main reason for online returns?")
    assert not state.get("errors"), state.get("errors")
    assert state["reranked"][0]["docId"] == "returns"
    assert all(c["scores"].get("provider_rerank") is None for c in state["reranked"])
    # Named, the cross-encoder is used whatever the policy says.
    state = ask_retrieval(english_home, "What was the main reason for online returns?",
                          rerank_model="local/ms-marco-minilm")
    assert state["reranked"][0]["scores"]["provider_rerank"] is not None


def test_auto_reranks_an_english_question_over_an_english_collection_with_the_cross_encoder(english_home,
                                                                                             write_policy):
    state = ask_retrieval(english_home, "What was the main reason for online returns?",
                          policy_path=str(write_policy(cross_encoder_in_auto)))
    assert not state.get("errors"), state.get("errors")
    top = state["reranked"][0]
    assert top["docId"] == "returns"
    s = top["scores"]
    assert s["provider_rerank"] > 0.5  # the cross-encoder's P(relevant)
    assert s["blended"] == pytest.approx(0.3 * s["provider_rerank"] + 0.7 * s["local_rerank"])
    # The model orders, ragate's scale scores: the scored places hold the scored chunks' own local scores.
    scored = [c for c in state["reranked"] if c["scores"].get("provider_rerank") is not None]
    assert [c["scores"]["blended"] for c in scored] == sorted((c["scores"]["blended"] for c in scored), reverse=True)
    assert sorted(c["scores"]["rerank_base"] for c in scored) == sorted(c["scores"]["local_rerank"] for c in scored)
    # Every chunk it did not score keeps its place below the scored ones.
    assert all("provider_rerank" in c["scores"] for c in state["reranked"])


def test_no_cross_encoder_for_a_portuguese_question_or_when_switched_off(english_home, write_policy):
    asked = str(write_policy(cross_encoder_in_auto))
    state = ask_retrieval(english_home, "Qual foi o principal motivo das devoluções online?", policy_path=asked)
    assert all(c["scores"].get("provider_rerank") is None for c in state["reranked"])
    state = ask_retrieval(english_home, "What was the main reason for online returns?", rerank_model="none",
                          policy_path=asked)
    assert all(c["scores"].get("provider_rerank") is None for c in state["reranked"])

    def no_depth(raw):
        cross_encoder_in_auto(raw)
        for profile in raw["profiles"].values():
            profile["rerank_depth"] = 0

    state = ask_retrieval(english_home, "What was the main reason for online returns?",
                          policy_path=str(write_policy(no_depth)))
    assert not state.get("errors"), state.get("errors")
    assert all(c["scores"].get("provider_rerank") is None for c in state["reranked"])
    assert state["reranked"][0]["docId"] == "returns"


def test_a_profile_depth_asks_for_the_cross_encoder_and_limits_the_scored_candidates(english_home, write_policy):
    # The policy leaves the cross-encoder out of `auto`; a profile's depth asks for it on its intents.
    def depth_one(raw):
        for profile in raw["profiles"].values():
            # No floor: the unrelated chunks stay, to show where the unscored ones rank.
            profile.update(rerank_depth=1, min_score=0.0)

    state = ask_retrieval(english_home, "What was the main reason for online returns?",
                          policy_path=str(write_policy(depth_one)))
    scored = [c for c in state["reranked"] if c["scores"].get("provider_rerank") is not None]
    assert len(scored) == 1 and len(state["reranked"]) > 1
    # The unscored ones rank under it, as if the model gave them its lowest score.
    assert state["reranked"][0] is not None and state["reranked"][0]["scores"]["provider_rerank"] is not None
