"""Ingest (idempotency, malformed JSONL, strict mode, Markdown/text, chunking) and the CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from conftest import SAMPLES

from graph.algorithms.text import get_analyzer
from graph.context import Context
from graph.entrypoints.cli import main
from graph.indexing.ingest import (
    CHUNK_TOKENS,
    OVERLAP_TOKENS,
    TOKENS_PER_WORD,
    IngestError,
    chunk_text,
    ingest_path,
)
from graph.output import SNIPPET_CHARS
from graph.policy import load_policy
from graph.providers.resources import embeddings_named, get_resources
from graph.providers.vectorstore import open_index


def doc_line(doc_id: str, content: str, **meta) -> str:
    meta = {"status": "approved", "isApprovedForAI": True, **meta}
    return json.dumps({"id": doc_id, "assetId": doc_id, "assetName": doc_id, "content": content, "metadata": meta},
                      ensure_ascii=False)


# Creating a collection costs about a second (engine indexes + fsync), so the ingest tests share one
# home and one collection "c", and each test writes under its own tenant: tenants never see each
# other's points, which is exactly the isolation these tests rely on.
COLLECTION = "c"


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    return tmp_path_factory.mktemp("ingest-home")


_tenants = iter(range(10_000))


@pytest.fixture
def ctx(home):
    return Context(home=str(home), tenant=f"t{next(_tenants)}")


def count(ctx: Context) -> int:
    return open_index(ctx.home_path).count(COLLECTION)


def served_doc_ids(ctx: Context, text: str = "texto", tenant: str | None = None) -> set[str]:
    """Doc ids the engine serves to a tenant (dense list, limit large enough to return all of them)."""
    res = get_resources(ctx)
    sparse = get_analyzer(load_policy()).query_vector(text, "pt")
    manifest = res.index.manifest(COLLECTION)
    if manifest is None:  # nothing was ever written
        return set()
    # The query is embedded by the model the collection was written with, whichever test made it.
    embedder = embeddings_named(ctx, manifest["embedding_model"])
    dense, _ = res.index.search(COLLECTION, dense=embedder.embed_query(text), sparse=sparse,
                                tenant=tenant or ctx.tenant, filters=None, limit=1000)
    return {p["docId"] for p in res.index.fetch(COLLECTION, tenant or ctx.tenant, [h.point_id for h in dense]).values()}


def ingest(path, ctx: Context, **kw):
    return ingest_path(path, collection=COLLECTION, tenant=ctx.tenant, context=ctx, **kw)


def stored(ctx: Context, doc_id: str) -> set[str]:
    return open_index(ctx.home_path).existing_hashes(COLLECTION, ctx.tenant, doc_id)


# --- idempotency ------------------------------------------------------------------------------


def test_reingesting_the_samples_writes_nothing(corpus):
    index = open_index(corpus.home)
    before = index.count("documents")
    report = ingest_path(SAMPLES / "acme", collection="documents", tenant="acme", context=corpus.context("acme"))
    assert report.documents_written == 0 and report.chunks_written == 0
    assert report.documents_unchanged == len(corpus.docs["acme"])
    assert index.count("documents") == before


def test_reingest_same_file_is_idempotent(tmp_path, ctx):
    f = tmp_path / "docs.jsonl"
    f.write_text("\n".join(doc_line(f"d{i}", f"Documento número {i}. As vendas cresceram {i}%.") for i in range(4)))
    before = count(ctx)
    first = ingest(f, ctx)
    after_first = count(ctx)
    second = ingest(f, ctx)
    assert first.documents_written == 4 and after_first == before + 4
    assert second.documents_written == 0 and second.chunks_written == 0 and second.documents_unchanged == 4
    assert count(ctx) == after_first


def test_changing_one_document_rewrites_only_that_one(tmp_path, ctx):
    f = tmp_path / "docs.jsonl"
    lines = [doc_line(f"d{i}", f"Documento número {i}. As vendas cresceram {i}%.") for i in range(4)]
    f.write_text("\n".join(lines))
    ingest(f, ctx)
    old = {f"d{i}": stored(ctx, f"d{i}") for i in range(4)}
    before = count(ctx)
    lines[2] = doc_line("d2", "Documento dois mudou. As vendas caíram 3%.")
    f.write_text("\n".join(lines))
    report = ingest(f, ctx)
    assert report.documents_written == 1 and report.documents_unchanged == 3
    assert count(ctx) == before
    assert stored(ctx, "d2") != old["d2"] and len(stored(ctx, "d2")) == 1
    assert all(stored(ctx, f"d{i}") == old[f"d{i}"] for i in (0, 1, 3))


def test_same_doc_id_in_two_tenants_does_not_collide(tmp_path, home):
    f = tmp_path / "docs.jsonl"
    f.write_text(doc_line("shared", "Texto compartilhado sobre vendas de inverno."))
    a, b = Context(home=str(home), tenant=f"a{next(_tenants)}"), Context(home=str(home), tenant=f"b{next(_tenants)}")
    before = count(a)
    ingest(f, a)
    ingest(f, b)
    assert count(a) == before + 2
    assert served_doc_ids(a) == {"shared"} == served_doc_ids(b)


def test_ingest_requires_a_tenant(tmp_path, ctx):
    f = tmp_path / "docs.jsonl"
    f.write_text(doc_line("a", "Texto."))
    with pytest.raises(IngestError, match="tenant"):
        ingest_path(f, collection=COLLECTION, tenant="  ", context=ctx)


# --- malformed JSONL --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def bad_jsonl(tmp_path_factory):
    lines = [
        doc_line("ok1", "Primeiro documento válido. Fala de vendas."),          # 1
        "{this is not json",                                                      # 2
        json.dumps({"content": "sem id"}),                                        # 3
        json.dumps({"id": "empty", "content": "   "}),                            # 4
        json.dumps(["not", "an", "object"]),                                      # 5
        doc_line("ok1", "Duplicado."),                                            # 6
        json.dumps({"id": "badflag", "content": "Flag ruim.", "metadata": {"isApprovedForAI": "yes"}}),  # 7
        "",                                                                       # 8 (blank: ignored)
        doc_line("ok2", "Segundo documento válido. Fala de estoque."),            # 9
        json.dumps({"id": "intflag", "content": "Flag inteira.", "metadata": {"isApprovedForAI": 1}}),  # 10
    ]
    f = tmp_path_factory.mktemp("bad") / "bad.jsonl"
    f.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return f


@pytest.fixture(scope="module")
def bad_ingest(bad_jsonl, home):
    ctx = Context(home=str(home), tenant=f"bad{next(_tenants)}")
    return ctx, ingest(bad_jsonl, ctx)


@pytest.mark.parametrize(("line", "words"), [
    (2, "invalid JSON"),
    (3, "'id'"),
    (4, "'content'"),
    (5, "JSON object"),
    (6, "duplicate id 'ok1'"),
    (7, "isApprovedForAI"),
    (10, "isApprovedForAI"),
])
def test_malformed_line_reported_with_its_line_number(bad_jsonl, bad_ingest, line, words):
    _, report = bad_ingest
    matching = [e for e in report.errors if e.startswith(f"{bad_jsonl}:{line}:")]
    assert len(matching) == 1, report.errors
    assert words in matching[0]


def test_valid_lines_still_ingested(bad_ingest):
    ctx, report = bad_ingest
    assert len(report.errors) == 7
    assert report.documents_written == 2
    assert served_doc_ids(ctx) == {"ok1", "ok2"}
    for rejected in ("empty", "badflag", "intflag"):
        assert stored(ctx, rejected) == set()


def test_duplicate_id_keeps_the_first_line(bad_ingest):
    ctx, _ = bad_ingest
    res = get_resources(ctx)
    dense, _ = res.index.search(COLLECTION, dense=res.embeddings.embed_query("vendas"),
                                sparse=get_analyzer(load_policy()).query_vector("vendas", "pt"), tenant=ctx.tenant,
                                filters={"docId": "ok1"}, limit=10)
    full = res.index.fetch(COLLECTION, ctx.tenant, [h.point_id for h in dense])
    assert [p["text"] for p in full.values()] == ["Primeiro documento válido. Fala de vendas."]


def test_strict_rejects_whole_batch_and_writes_nothing(bad_jsonl, ctx):
    before = count(ctx)
    with pytest.raises(IngestError) as info:
        ingest(bad_jsonl, ctx, strict=True)
    assert f"{bad_jsonl}:2:" in str(info.value) and f"{bad_jsonl}:7:" in str(info.value)
    assert count(ctx) == before
    assert stored(ctx, "ok1") == set() and stored(ctx, "ok2") == set()


def test_strict_never_creates_the_collection(bad_jsonl, ctx):
    with pytest.raises(IngestError):
        ingest_path(bad_jsonl, collection="never", tenant=ctx.tenant, context=ctx, strict=True)
    assert not (ctx.home_path / "collections" / "never").exists()


def test_strict_accepts_a_clean_batch(tmp_path, ctx):
    f = tmp_path / "ok.jsonl"
    f.write_text(doc_line("a", "Texto válido."), encoding="utf-8")
    assert ingest(f, ctx, strict=True).documents_written == 1


def test_string_booleans_are_accepted(tmp_path, ctx):
    f = tmp_path / "s.jsonl"
    f.write_text(doc_line("a", "Texto aprovado.", isApprovedForAI="true") + "\n"
                 + doc_line("b", "Texto não aprovado.", isApprovedForAI="false"), encoding="utf-8")
    report = ingest(f, ctx)
    assert report.errors == []
    assert served_doc_ids(ctx) == {"a"}


def test_draft_status_is_stored_but_not_served(tmp_path, ctx):
    f = tmp_path / "s.jsonl"
    f.write_text(doc_line("pronto", "Texto pronto.", status="Ready") + "\n"
                 + doc_line("rascunho", "Texto rascunho.", status="draft"), encoding="utf-8")
    ingest(f, ctx)
    assert stored(ctx, "rascunho")
    assert served_doc_ids(ctx) == {"pronto"}


def test_document_brand_claim_never_overrides_ingesting_tenant(tmp_path, ctx):
    f = tmp_path / "claim.jsonl"
    f.write_text(doc_line("claim", "Documento que diz ser de outra marca.", brandId="other"), encoding="utf-8")
    report = ingest(f, ctx)
    assert any("brandId" in w and "other" in w for w in report.warnings)
    assert served_doc_ids(ctx) == {"claim"}
    assert served_doc_ids(ctx, tenant="other") == set()


# --- Markdown and text ------------------------------------------------------------------------


def test_markdown_with_front_matter_and_plain_text(tmp_path, ctx):
    docs = tmp_path / "notes"
    (docs / "sub").mkdir(parents=True)
    (docs / "sub" / "nota.md").write_text(
        "---\nid: nota-1\nassetName: Nota de teste\nstatus: approved\nisApprovedForAI: true\n"
        "docType: bi_note\ndate: '2026-01-05'\n---\n# Título ignorado\n\nAs vendas de cachecóis cresceram 12% em janeiro.\n",
        encoding="utf-8")
    (docs / "guarda-chuva.txt").write_text("Umbrella sales rose 5% in March. Stores ran out of stock.\n",
                                           encoding="utf-8")
    (docs / "ignored.csv").write_text("a,b\n1,2\n")
    report = ingest(docs, ctx, default_approved=True)
    assert report.errors == [] and report.documents_written == 2
    assert served_doc_ids(ctx) == {"nota-1", "guarda-chuva"}
    res = get_resources(ctx)
    sparse = get_analyzer(load_policy()).query_vector("cachecóis", "pt")
    dense, _ = res.index.search(COLLECTION, dense=res.embeddings.embed_query("cachecóis"), sparse=sparse,
                                tenant=ctx.tenant, filters={"docId": "nota-1"}, limit=5)
    p = res.index.fetch(COLLECTION, ctx.tenant, [dense[0].point_id])[dense[0].point_id]
    assert p["assetName"] == "Nota de teste"
    assert p["docType"] == "bi_note" and p["status"] == "approved" and p["date"] == "2026-01-05"
    text = res.index.fetch(COLLECTION, ctx.tenant, [dense[0].point_id])[dense[0].point_id]["text"]
    assert "---" not in text and "cachecóis" in text


def test_markdown_title_comes_from_first_heading(tmp_path, ctx):
    f = tmp_path / "relatorio.md"
    f.write_text("# Relatório de estoque\n\nO estoque de botas caiu 8% em julho.\n", encoding="utf-8")
    ingest(f, ctx, default_approved=True)
    res = get_resources(ctx)
    dense, _ = res.index.search(COLLECTION, dense=res.embeddings.embed_query("estoque"),
                                sparse=get_analyzer(load_policy()).query_vector("estoque", "pt"), tenant=ctx.tenant,
                                filters=None, limit=5)
    p = res.index.fetch(COLLECTION, ctx.tenant, [dense[0].point_id])[dense[0].point_id]
    assert p["assetName"] == "Relatório de estoque"
    assert p["docId"] == "relatorio"


def test_text_files_default_to_not_approved(tmp_path, ctx):
    f = tmp_path / "plain.txt"
    f.write_text("Texto sem metadados sobre vendas.\n", encoding="utf-8")
    report = ingest(f, ctx)
    assert report.documents_written == 1
    assert stored(ctx, "plain")
    assert served_doc_ids(ctx) == set()


def test_front_matter_with_unquoted_date(tmp_path, ctx):
    f = tmp_path / "datada.md"
    f.write_text("---\nid: datada\nstatus: approved\nisApprovedForAI: true\ndate: 2026-01-05\n---\n"
                 "As vendas de luvas cresceram 4% em janeiro.\n", encoding="utf-8")
    report = ingest(f, ctx)
    assert report.documents_written == 1
    assert served_doc_ids(ctx) == {"datada"}


def test_unsupported_file_type_is_refused(tmp_path, ctx):
    f = tmp_path / "x.csv"
    f.write_text("a,b\n")
    with pytest.raises(IngestError, match="unsupported"):
        ingest(f, ctx)


# --- chunking ---------------------------------------------------------------------------------


def sentences(n: int, words: int, prefix: str = "S") -> list[str]:
    return [" ".join([f"{prefix}{i}w{j}" for j in range(words - 1)] + [f"fim{i}."]) for i in range(n)]


def test_chunk_text_respects_size_and_overlap():
    sents = sentences(30, 10)
    chunks = chunk_text(" ".join(sents), chunk_tokens=65, overlap_tokens=26)
    max_words, overlap_words = int(65 / TOKENS_PER_WORD), int(26 / TOKENS_PER_WORD)
    assert (max_words, overlap_words) == (50, 20)
    assert len(chunks) > 1
    for c in chunks:
        assert len(c.split()) <= max_words
    for prev, nxt in zip(chunks, chunks[1:]):
        # the next chunk starts with the previous chunk's last two 10-word sentences (20 words)
        assert nxt.split()[:overlap_words] == prev.split()[-overlap_words:]
    # every sentence is somewhere, in order
    joined = " ".join(chunks)
    positions = [joined.find(s) for s in sents]
    assert all(p >= 0 for p in positions) and positions == sorted(positions)


def test_chunk_text_default_sizes():
    text = " ".join(sentences(120, 12))
    chunks = chunk_text(text)
    max_words = int(CHUNK_TOKENS / TOKENS_PER_WORD)
    assert all(len(c.split()) <= max_words for c in chunks)
    assert all(len(c.split()) > max_words - 24 for c in chunks[:-1]), "chunks are filled close to the size"
    overlap_words = int(OVERLAP_TOKENS / TOKENS_PER_WORD)
    carried = overlap_words // 12 * 12  # whole 12-word sentences that fit in the overlap
    assert carried >= 12
    for prev, nxt in zip(chunks, chunks[1:]):
        assert nxt.split()[:carried] == prev.split()[-carried:]
        assert nxt.split()[: carried + 12] != prev.split()[-(carried + 12):]  # and not one sentence more


def test_chunk_text_cuts_overlong_sentence_at_word_boundaries():
    long = " ".join(f"palavra{i}" for i in range(400)) + "."
    chunks = chunk_text(long, chunk_tokens=130, overlap_tokens=0)
    assert all(len(c.split()) <= 100 for c in chunks)
    assert " ".join(chunks).split() == long.split()


def test_chunk_text_keeps_titles_and_bullets_on_their_own_lines():
    text = "Título do relatório\n\n- Primeiro ponto importante.\n- Segundo ponto importante.\nFrase final do texto."
    (chunk,) = chunk_text(text)
    assert chunk.splitlines() == ["Título do relatório", "- Primeiro ponto importante.",
                                  "- Segundo ponto importante.", "Frase final do texto."]


def test_chunk_never_exceeds_size_when_overlap_precedes_long_sentence():
    short, long = sentences(1, 10, "A")[0], sentences(1, 45, "B")[0]
    chunks = chunk_text(f"{short} {long}", chunk_tokens=65, overlap_tokens=26)  # 50 words max, 20 overlap
    assert all(len(c.split()) <= 50 for c in chunks), [len(c.split()) for c in chunks]


# --- CLI --------------------------------------------------------------------------------------

CONTRACT_KEYS = {"request_id", "answer", "direct_answer", "citations_used", "coverage_level", "suggestions", "verdict", "rag",
                 "sources"}
SOURCE_KEYS = {"id", "assetId", "assetName", "similarity", "rerankScore", "rank", "metadata", "snippet", "scores"}


def test_cli_ask_json_prints_the_output_contract(corpus, capsys):
    rc = main(["ask", "Quanto cresceram as vendas de inverno em 2025?", "--json", "--home", str(corpus.home),
               "--tenant", "acme"])
    assert rc == 0
    out = json.loads(capsys.readouterr().out)  # exactly one JSON object
    assert CONTRACT_KEYS <= set(out)
    assert out["rag"]["enabled"] is True
    assert out["verdict"]["final_decision"] in ("OK", "WARNING", "BLOCK")
    assert out["sources"]
    full = {d["id"]: d["content"] for d in corpus.docs["acme"].values()}
    for src in out["sources"]:
        assert SOURCE_KEYS <= set(src)
        assert "content" not in src
        assert len(src["snippet"]) <= SNIPPET_CHARS
        assert len(src["snippet"]) < len(full[src["docId"]])
        assert {"dense", "lexical", "fused", "rerank", "boosts"} <= set(src["scores"])
        assert isinstance(src["scores"]["boosts"], list)
        assert src["metadata"].get("status") in ("approved", "ready")
    assert [s["rank"] for s in out["sources"]] == list(range(1, len(out["sources"]) + 1))
    assert set(out["citations_used"]) <= {s["docId"] for s in out["sources"]}


def test_cli_ask_text_output(corpus, capsys):
    rc = main(["ask", "What is the CEO's favourite football team?", "--home", str(corpus.home), "--tenant", "acme"])
    assert rc == 0
    out = capsys.readouterr().out
    assert "coverage: none" in out and out.count("suggestion:") == 3


def test_cli_ask_without_tenant_exits_2(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("RAGATE_TENANT", raising=False)
    rc = main(["ask", "Quanto cresceram as vendas?", "--home", str(tmp_path / "h")])
    assert rc == 2
    err = capsys.readouterr().err
    assert "--tenant is required" in err
    assert not (tmp_path / "h").exists(), "nothing is created before the tenant check"


def test_ragate_ask_without_tenant_process_exit_code(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "RAGATE_TENANT"}
    env["RAGATE_HOME"] = str(tmp_path / "h")
    proc = subprocess.run([sys.executable, "-m", "graph.entrypoints.cli", "ask", "Quanto cresceram as vendas?"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert "--tenant is required" in proc.stderr
    assert proc.stdout == ""


def test_cli_ingest_reports_rejected_lines(bad_jsonl, home, capsys):
    rc = main(["ingest", str(bad_jsonl), "--tenant", f"cli{next(_tenants)}", "--collection", COLLECTION,
               "--home", str(home), "--quiet"])
    assert rc == 1
    captured = capsys.readouterr()
    assert f"{bad_jsonl}:2:" in captured.err
    assert "7 rejected" in captured.out


def test_cli_ingest_with_every_line_rejected_exits_2(tmp_path, home, capsys):
    f = tmp_path / "all-bad.jsonl"
    f.write_text('{"id": "x"}\nnot json\n', encoding="utf-8")
    rc = main(["ingest", str(f), "--tenant", f"cli{next(_tenants)}", "--collection", COLLECTION,
               "--home", str(home), "--quiet"])
    assert rc == 2
    assert "0 written" in capsys.readouterr().out


def test_cli_ingest_strict_exits_2(bad_jsonl, tmp_path, capsys):
    rc = main(["ingest", str(bad_jsonl), "--tenant", "t1", "--home", str(tmp_path / "h"), "--strict", "--quiet"])
    assert not (tmp_path / "h" / "collections").exists()
    assert rc == 2
    assert "nothing written" in capsys.readouterr().err


def test_cli_graph_prints_mermaid(capsys):
    assert main(["graph"]) == 0
    out = capsys.readouterr().out
    assert "route_gate" in out and "memory_shield" in out and "graph TD" in out


def test_cli_ingest_missing_path_exits_2(tmp_path, capsys):
    rc = main(["ingest", str(tmp_path / "nope.jsonl"), "--tenant", "t1", "--home", str(tmp_path / "h"), "--quiet"])
    assert rc == 2
    assert "no such file" in capsys.readouterr().err


def test_python_api_remembers_in_sqlite_under_home(corpus):
    from graph.entrypoints.api import Ragate, open_memory_store

    ctx = corpus.context("acme")
    out = Ragate(ctx).ask("What is the CEO's favourite football team?", correlation_id="api-warn")
    assert out["verdict"]["final_decision"] == "WARNING" and out["memory"]["saved"] is True
    assert (corpus.home / "memory.sqlite").exists()
    item = open_memory_store(ctx).get(("ragate", "memory", "acme"), out["request_id"])
    assert item is not None and item.value["tags"] == ["warning"]


def test_chunk_size_is_a_setting(tmp_path, capsys):
    src = tmp_path / "long.md"
    src.write_text(" ".join(f"Sentence number {i} talks about winter sales in the north." for i in range(200)),
                   encoding="utf-8")
    counts = {}
    for size in (100, 400):
        rc = main(["ingest", str(src), "--tenant", "t", "--home", str(tmp_path / f"h{size}"), "--chunk-tokens", str(size),
                   "--overlap-tokens", "10", "--quiet"])
        assert rc == 0
        counts[size] = open_index(tmp_path / f"h{size}").count("documents")
    assert counts[100] > 3 * counts[400] >= 3


@pytest.mark.parametrize("flags", [["--chunk-tokens", "5"], ["--chunk-tokens", "100", "--overlap-tokens", "60"]])
def test_impossible_chunking_is_a_usage_error(tmp_path, capsys, flags):
    with pytest.raises(SystemExit) as exit_:
        main(["ingest", str(tmp_path), "--tenant", "t", "--home", str(tmp_path / "h"), *flags])
    assert exit_.value.code == 2
    assert "chunk_tokens" in capsys.readouterr().err or "overlap_tokens" in capsys.readouterr().err
    assert not (tmp_path / "h").exists()  # nothing was written


def test_a_collection_held_by_another_engine_is_a_clear_error(tmp_path, capsys):
    from graph.providers.vectorstore import CollectionError, EdgeVectorIndex, close_all

    src = tmp_path / "a.md"
    src.write_text("Winter sales grew in the north.", encoding="utf-8")
    home = tmp_path / "h"
    assert main(["ingest", str(src), "--tenant", "t", "--home", str(home), "--quiet"]) == 0
    close_all()  # the CLI's engine lets go of the folder
    holder = EdgeVectorIndex(home)
    assert holder.count("documents") == 1  # opens the shard and holds its write-ahead log
    try:
        with pytest.raises(CollectionError, match="open in another process"):
            EdgeVectorIndex(home).count("documents")
        assert main(["ingest", str(src), "--tenant", "t", "--home", str(home), "--quiet"]) == 2
        assert "open in another process" in capsys.readouterr().err
    finally:
        holder.close()
        close_all()


def test_cli_ingest_takes_the_paths_a_shell_glob_gives(tmp_path, home, capsys):
    # `ragate ingest samples/acme/*.jsonl --tenant acme`: several files, and a folder, in one call.
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "a.md").write_text("# Nota A\n\nTexto da nota A.\n", encoding="utf-8")
    one, two = tmp_path / "one.jsonl", tmp_path / "two.jsonl"
    one.write_text(doc_line("d1", "texto um") + "\n", encoding="utf-8")
    two.write_text(doc_line("d2", "texto dois") + "\n" + doc_line("d1", "texto repetido") + "\n", encoding="utf-8")
    tenant = f"cli{next(_tenants)}"
    rc = main(["ingest", str(one), str(two), str(folder), str(one), "--tenant", tenant, "--collection", COLLECTION,
               "--home", str(home), "--default-approved", "true", "--quiet"])
    captured = capsys.readouterr()
    # One file given twice is read once; the same id in another file is rejected as before, naming its line.
    assert rc == 1, captured
    assert "3 documents read, 3 written" in captured.out and "1 rejected" in captured.out, captured.out
    assert f"{two}:2: duplicate id 'd1'" in captured.err, captured.err
    served = served_doc_ids(Context(home=str(home), tenant=tenant), "texto nota", tenant)
    assert len(served) == 3 and {"d1", "d2"} <= served, served


def test_cli_ingest_refuses_every_path_when_one_is_missing(tmp_path, home, capsys):
    good = tmp_path / "good.jsonl"
    good.write_text(doc_line("g1", "texto bom") + "\n", encoding="utf-8")
    tenant = f"cli{next(_tenants)}"
    rc = main(["ingest", str(good), str(tmp_path / "typo.jsonl"), "--tenant", tenant, "--collection", COLLECTION,
               "--home", str(home), "--quiet"])
    assert rc == 2
    assert f"{tmp_path / 'typo.jsonl'}: no such file or folder" in capsys.readouterr().err
    assert not served_doc_ids(Context(home=str(home), tenant=tenant), "texto", tenant)


def test_only_the_tenant_field_gets_search_graph_links_of_its_own(tmp_path):
    # Every search filters by one tenant. A field indexed with its HNSW links on gets a graph for each value holding
    # enough points, and the gates' few values each cover most of the collection: bench/latency.py's 100k build
    # took 173.5 s with them, 92.5 s without, at the same recall.
    from graph.providers.vectorstore import TENANT_FIELD, EdgeVectorIndex

    index = EdgeVectorIndex(tmp_path)
    index.ensure_collection("documents", 8, "local/test", None)
    schema = index._shard("documents").info().payload_schema
    assert {name for name, info in schema.items() if info.params.enable_hnsw is not False} == {TENANT_FIELD}
    assert {"status", "isApprovedForAI", "docId", "year", "date"} <= set(schema)  # still indexed, for the filters
    index.close()


def test_the_search_graph_walks_int8_vectors_and_answers_exact_cosines(tmp_path, monkeypatch):
    # A new collection keeps its dense vectors as int8 too: its search graph is built and walked on those (the 1M
    # scale build and its filtered search faster), and the best 2 x limit are scored again with the full vectors,
    # so the hits and their scores are the exact search's. The engine builds a graph for segments over ~10 MB of
    # vectors (7,000 of 384 dims here), and a full-scan threshold of 1 KB makes every search walk it.
    import numpy as np

    import graph.providers.vectorstore as vectorstore
    from graph.providers.vectorstore import ChunkRecord, EdgeVectorIndex, HnswIndexConfig, point_id

    monkeypatch.setattr(vectorstore, "HNSW", HnswIndexConfig(m=16, ef_construct=100, full_scan_threshold=1))
    rng, dims, docs, per_doc = np.random.default_rng(3), 384, 700, 10
    # Like embeddings, and unlike random vectors, these have few directions of their own (8), which a graph walks well.
    vectors = (rng.standard_normal((docs * per_doc, 8)) @ rng.standard_normal((8, dims))
               + 0.05 * rng.standard_normal((docs * per_doc, dims))).astype(np.float32)
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    index = EdgeVectorIndex(tmp_path)
    index.ensure_collection("documents", dims, "local/test", None)
    config = json.loads((tmp_path / "collections" / "documents" / "shard" / "edge_config.json").read_text())
    assert config["vectors"]["dense"]["quantization_config"]["scalar"]["type"] == "int8"
    row_of = {}
    for d in range(docs):
        tenant = ("acme", "globex")[d % 2]
        payload = {"docId": f"d{d}", "text": "t", "status": "approved", "isApprovedForAI": "true"}
        index.replace_document("documents", tenant, f"d{d}", [
            ChunkRecord(doc_id=f"d{d}", chunk_index=i, text="t", header="h", content_hash=f"{d}-{i}",
                        payload={**payload, "chunk_index": i}, dense=vectors[d * per_doc + i].tolist(),
                        sparse=([1], [1.0])) for i in range(per_doc)])
        row_of.update({str(point_id(tenant, f"d{d}", i)): d * per_doc + i for i in range(per_doc)})
    index.optimize("documents")
    acme_rows = np.array([row for row in row_of.values() if (row // per_doc) % 2 == 0])
    for _ in range(10):
        query = vectors[rng.integers(len(vectors))] + 0.3 * rng.standard_normal(dims).astype(np.float32)
        dense, _ = index.search("documents", dense=query.tolist(), sparse=vectorstore.SparseVector([1], [1.0]),
                                tenant="acme", filters=None, limit=10)
        cosines = unit[acme_rows] @ (query / np.linalg.norm(query))
        assert [row_of[h.point_id] for h in dense] == acme_rows[np.argsort(-cosines)[:10]].tolist()
        assert [h.score for h in dense] == pytest.approx(np.sort(cosines)[::-1][:10].tolist(), abs=1e-5)
    index.close()


def test_an_ingest_that_leaves_a_large_collection_builds_its_search_index(tmp_path, monkeypatch, capsys):
    # The embedded engine searches what was written point by point until its index is built (`optimize`): 14.6 ms
    # a search at 50,000 chunks, 3.0 ms built. ragate builds it once a collection holds SEARCH_INDEX_MIN_POINTS.
    import graph.providers.vectorstore as vectorstore

    f = tmp_path / "docs.jsonl"
    f.write_text("".join(doc_line(f"d{i}", f"winter sales report number {i}") + "\n" for i in range(6)), encoding="utf-8")
    home = tmp_path / "home"
    small = ingest_path(f, collection="big", tenant="acme", context=Context(home=str(home), tenant="acme"))
    assert small.documents_written == 6 and small.index_build_s is None  # below the size: no build
    monkeypatch.setattr(vectorstore, "SEARCH_INDEX_MIN_POINTS", 5)
    f.write_text("".join(doc_line(f"d{i}", f"winter sales report number {i}, revised") + "\n" for i in range(6)), encoding="utf-8")
    rc = main(["ingest", str(f), "--tenant", "acme", "--collection", "big", "--home", str(home), "--quiet"])
    out = capsys.readouterr().out
    assert rc == 0 and "s building the search index" in out, out
    ctx = Context(home=str(home), tenant="acme", collections=["big"])
    query = embeddings_named(ctx, small.embedding_model).embed_query("winter sales report")
    sparse = get_analyzer(load_policy()).query_vector("winter sales report", "en")
    dense, lexical = get_resources(ctx).index.search("big", dense=query, sparse=sparse, tenant="acme", filters=None,
                                                     limit=10)
    assert len(dense) == 6 and lexical  # searched as before, now through the index
    # Nothing new written: nothing built.
    again = ingest_path(f, collection="big", tenant="acme", context=Context(home=str(home), tenant="acme"))
    assert again.documents_unchanged == 6 and again.index_build_s is None
