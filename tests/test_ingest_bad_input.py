"""Bad input for ingest (graph/indexing/ingest.py), beyond what tests/test_ingest_cli.py covers (invalid JSON,
a missing id or content, a non-object line, duplicate ids, a bad isApprovedForAI, --strict, brandId
claims): wrong encodings, binary files, NUL bytes and unpaired surrogates, huge documents and lines,
ids and fields of the wrong type or shape, a folder mixing good and bad files, empty files, and
failures of the embedder or the engine in the middle of a write.

What every case checks is the contract the README's ingest section states:
* each problem is one error naming the file, the line (JSONL, and where an encoding error sits in
  a Markdown/text file) and the field;
* everything else in the batch is ingested (with `strict`, nothing is);
* a document is stored whole (every chunk) or not at all, also when the embedder or the engine
  fails part way: the ingest stops with IngestWriteError, and running it again finishes the job and
  leaves exactly what a clean ingest leaves.

Bugs these cases caught: a UTF-8 byte-order mark made line 1 invalid JSON and hid a Markdown file's
front matter (as Windows line ends did); U+2028 inside a JSON string split the line in two; an
escaped unpaired surrogate crashed the whole batch (UnicodeEncodeError) after earlier batches were
written; a 1 MB word-less line became one 1 MB chunk; a Latin-1 file was one error with a byte
offset and no line; numbers, lists and objects as content were "missing or empty".

Most cases use the embedded model on a shared data folder, one tenant per test (the tenants never
see each other's points). The huge-document and embedder-failure cases use the OpenAI-compatible
scripted server on 127.0.0.1 (tests/scripted_server.py): hashed vectors, fast enough for thousands of
chunks, and a 500 can be served to exactly the request that carries a marker word. The engine
failures are injected into the embedded shard (its n-th write raises) and, on the Qdrant-server
path (tests/qdrant_server.py), as a 500 to the next write request.
"""

from __future__ import annotations

import base64
import dataclasses
import gzip
import itertools
import json
import os
import random
import shutil
import signal
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from scripted_server import Reply

from graph.context import CHUNK_TOKENS, Context
from graph.entrypoints.cli import main
from graph.indexing.ingest import (
    EMBED_BATCH_CHUNKS,
    MAX_CHARS_PER_WORD,
    MAX_ID_CHARS,
    TOKENS_PER_WORD,
    IngestError,
    IngestWriteError,
    chunk_text,
    ingest_path,
)
from graph.providers.resources import vector_index_for
from graph.providers.vectorstore import open_index

COLLECTION = "bad"
REMOTE = "remote"  # the collection the scripted embedder writes (another model: another collection)
EMB = "/v1/embeddings"
REMOTE_MODEL = "openai/text-embedding-3-small"
_tenants = itertools.count()


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    """One data folder for the module, in RAM when the machine has /dev/shm: the huge-document
    cases write thousands of vectors to the embedding cache, one fsync'd SQLite commit each."""
    shm = Path("/dev/shm")
    in_ram = shm.is_dir() and os.access(shm, os.W_OK)
    path = Path(tempfile.mkdtemp(prefix="ragate-bad-input-", dir=shm)) if in_ram else tmp_path_factory.mktemp("bad-input")
    yield path
    open_index(path).close()  # the process-wide engine lets go before the folder goes
    if in_ram:
        shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def ctx(home):
    return Context(home=str(home), tenant=f"t{next(_tenants)}")


def line(doc_id, content="Texto de exemplo sobre vendas.", **fields) -> str:
    meta = {"status": "approved", "isApprovedForAI": True, **fields.pop("meta", {})}
    return json.dumps({"id": doc_id, "content": content, "metadata": meta, **fields}, ensure_ascii=False)


def ingest(path, ctx, collection=COLLECTION, **kw):
    return ingest_path(path, collection=collection, tenant=ctx.tenant, context=ctx, **kw)


def served(ctx, collection=COLLECTION) -> set[str]:
    """Doc ids the tenant's gated reads can reach."""
    return set(vector_index_for(ctx).values(collection, ctx.tenant, "docId"))


def hashes(ctx, doc_id, collection=COLLECTION) -> set[str]:
    """The content hashes stored for a document: one per chunk position (empty: not stored)."""
    return vector_index_for(ctx).existing_hashes(collection, ctx.tenant, doc_id)


def expected_chunks(content: str, ctx: Context) -> int:
    return len(chunk_text(content, ctx.chunk_tokens, ctx.overlap_tokens))


def errors_at(report, where: str) -> list[str]:
    return [e for e in report.errors if e.startswith(f"{where}:")]


# --- encodings and binary data ----------------------------------------------------------------


def test_latin1_jsonl_line_is_rejected_naming_line_column_and_encoding(tmp_path, ctx):
    f = tmp_path / "latin1.jsonl"
    f.write_bytes(line("a", "Vendas subiram em maio.").encode() + b"\n"
                  + line("b", "Promoção de inverno.").encode("latin-1") + b"\n"
                  + line("c", "Estoque caiu.").encode() + b"\n")
    report = ingest(f, ctx)
    (error,) = report.errors
    assert error.startswith(f"{f}:2: not UTF-8 text (byte 0xE7 at column ")
    assert "Latin-1/Windows-1252" in error and "iconv" in error
    assert served(ctx) == {"a", "c"}


@pytest.mark.parametrize("name", ["legado.md", "legado.txt"])
def test_windows_1252_text_file_is_skipped_naming_the_line(tmp_path, ctx, name):
    f = tmp_path / name
    f.write_bytes("Relatório mensal\n\nAs vendas “de inverno” cresceram 12%.\n".encode("cp1252"))
    report = ingest(f, ctx, default_approved=True)
    (error,) = report.errors
    assert error.startswith(f"{f}:1: not UTF-8 text (byte 0xF3 at column 6)") and error.endswith("file skipped")
    assert "Windows-1252" in error
    assert report.documents_seen == 0 and hashes(ctx, "legado") == set()


@pytest.mark.parametrize(("name", "encoding", "bom"), [("u16.jsonl", "utf-16", "FF FE"), ("u16.md", "utf-16", "FF FE"),
                                                       ("u16be.txt", "utf-16-be", None), ("u32.jsonl", "utf-32", None)])
def test_utf16_and_utf32_files_are_skipped_with_one_error(tmp_path, ctx, name, encoding, bom):
    f = tmp_path / name
    text = "\n".join(line(f"d{i}", "Vendas de inverno.") for i in range(3)) if name.endswith(".jsonl") else "Vendas."
    f.write_bytes((("\ufeff" if encoding == "utf-16-be" else "") + text).encode(encoding))
    report = ingest(f, ctx, default_approved=True)
    (error,) = report.errors
    assert error.startswith(f"{f}: ") and error.endswith("file skipped")
    assert ("UTF-32" if "32" in encoding else "UTF-16") in error
    if bom:
        assert f"byte-order mark {bom}" in error
    assert report.documents_seen == 0 and served(ctx) == set()


def test_utf8_bom_and_windows_line_ends_just_work(tmp_path, ctx):
    folder = tmp_path / "bom"
    folder.mkdir()
    (folder / "docs.jsonl").write_bytes(b"\xef\xbb\xbf" + (line("j1") + "\r\n" + line("j2") + "\r\n").encode())
    # With the BOM and CRLF the front matter must still be read: id, status and approval come from it.
    (folder / "nota.md").write_bytes(b"\xef\xbb\xbf" + b"---\r\nid: nota-7\r\nstatus: approved\r\nisApprovedForAI: true\r\n"
                                     b"---\r\n# Nota de vendas\r\n\r\nAs vendas cresceram.\r\n")
    report = ingest(folder, ctx)
    assert report.errors == [] and report.warnings == []
    assert served(ctx) == {"j1", "j2", "nota-7"}


def test_binary_files_with_text_names_are_one_error_each(tmp_path, ctx):
    folder = tmp_path / "bin"
    folder.mkdir()
    (folder / "dump.jsonl").write_bytes(random.Random(7).randbytes(20_000))
    (folder / "notes.txt").write_bytes(gzip.compress(b"Vendas de inverno. " * 500))
    (folder / "ok.jsonl").write_text(line("ok"), encoding="utf-8")
    report = ingest(folder, ctx)
    assert len(report.errors) == 2
    for name in ("dump.jsonl", "notes.txt"):
        (error,) = errors_at(report, folder / name)
        assert "binary data" in error and error.endswith("file skipped")
    assert served(ctx) == {"ok"}


def test_nul_bytes_raw_and_escaped(tmp_path, ctx):
    early = tmp_path / "early.jsonl"  # a raw NUL in the first 8 KB: binary data, the file is skipped
    early.write_bytes(line("e1").encode() + b"\n" + b'{"id": "e2", "content": "a\x00b"}\n')
    late = tmp_path / "late.jsonl"  # further in: just that line (JSON forbids raw control characters)
    lines = [line(f"l{i}", "Texto de exemplo sobre vendas de inverno. " * 3) for i in range(60)]
    lines.insert(50, '{"id": "nul", "content": "a\x00b"}')
    lines.insert(55, line("escaped", "metade\u0000metade"))  # written as \u0000: valid JSON, still binary
    late.write_text("\n".join(lines), encoding="utf-8")
    assert len(late.read_bytes().split(b"\x00")[0]) > 8192
    report = ingest(early, ctx)
    (error,) = report.errors
    assert error.startswith(f"{early}: binary data or UTF-16 text, not UTF-8 (NUL byte at offset ")
    report = ingest(late, ctx)
    assert len(report.errors) == 2
    (raw,) = errors_at(report, f"{late}:51")
    assert "invalid JSON (Invalid control character" in raw
    (escaped,) = errors_at(report, f"{late}:56")
    assert "field 'content' holds a NUL character (\\u0000) at character 7" in escaped and "'escaped'" in escaped
    assert served(ctx) == {f"l{i}" for i in range(60)}


def test_unpaired_surrogates_are_rejected_per_line_and_the_rest_is_written(tmp_path, ctx):
    # JSON lets a line escape half a surrogate pair ("\ud800"): Python reads it into a str no
    # engine, hash or HTTP client can encode. It used to crash the whole batch with a
    # UnicodeEncodeError from the embedding cache, after earlier batches were written.
    f = tmp_path / "surrogates.jsonl"
    f.write_text("\n".join([
        line("before"),
        '{"id": "s1", "content": "texto \\ud800 quebrado"}',
        '{"id": "s2", "content": "ok", "metadata": {"nota": "fim \\udc00"}}',
        '{"id": "s\\ud83d", "content": "ok"}',
        '{"id": "s4", "content": "ok", "assetName": "\\udfff"}',
        line("after"),
    ]), encoding="utf-8")
    report = ingest(f, ctx)
    expected = {2: "field 'content' holds an unpaired surrogate (\\ud800) at character 7",
                3: "field 'metadata.nota' holds an unpaired surrogate (\\udc00) at character 5",
                4: "field 'id' holds an unpaired surrogate (\\ud83d) at character 2",
                5: "field 'assetName' holds an unpaired surrogate (\\udfff) at character 1"}
    assert len(report.errors) == len(expected)
    for n, words in expected.items():
        (error,) = errors_at(report, f"{f}:{n}")
        assert words in error
    assert served(ctx) == {"before", "after"}


def test_unicode_line_separators_inside_a_json_string_do_not_split_the_line(tmp_path, ctx):
    # U+2028 and U+0085 are legal unescaped inside JSON strings (ensure_ascii=False writes them so);
    # str.splitlines() treats them as line breaks and used to cut the line in two.
    f = tmp_path / "seps.jsonl"
    f.write_text(line("seps", "Primeira parte.\u2028Segunda parte.\x85Terceira.\x0cQuarta.") + "\n" + line("next"),
                 encoding="utf-8")
    report = ingest(f, ctx)
    assert report.errors == []
    assert served(ctx) == {"seps", "next"}


# --- ids -----------------------------------------------------------------------------------------


BAD_IDS = [
    ('{"content": "x", "id": null}', "field 'id' is missing"),
    ('{"content": "x", "id": ""}', "field 'id' is empty"),
    ('{"content": "x", "id": "   "}', "field 'id' is empty"),
    ('{"content": "x", "id": 42}', "field 'id' must be a string, not a number (42)"),
    ('{"content": "x", "id": ["a"]}', "field 'id' must be a string, not a list"),
    ('{"content": "x", "id": {"k": 1}}', "field 'id' must be a string, not an object"),
    ('{"content": "x", "id": true}', "field 'id' must be a string, not a boolean"),
    (json.dumps({"content": "x", "id": "x" * (MAX_ID_CHARS + 1)}),
     f"field 'id' is {MAX_ID_CHARS + 1} characters long (at most {MAX_ID_CHARS})"),
    (json.dumps({"content": "x", "id": "a\nb"}), "field 'id' holds a control character (U+000A) at character 2"),
    (json.dumps({"content": "x", "id": "a\tb"}), "field 'id' holds a control character (U+0009) at character 2"),
    (json.dumps({"content": "x", "id": "a\u2028b"}), "field 'id' holds a control character (U+2028) at character 2"),
    (json.dumps({"content": "x", "id": "nul\u0000"}), "field 'id' holds a NUL character"),
]
ODD_GOOD_IDS = ["relatório/2025 Q1 \"final\" ✓ 😀", "../../etc/passwd", "a:b;c,d", "x" * MAX_ID_CHARS, "Ünïcødé", "1"]


def test_ids_missing_empty_of_the_wrong_type_overlong_or_with_control_characters(tmp_path, ctx):
    f = tmp_path / "ids.jsonl"
    rows = [bad for bad, _ in BAD_IDS] + [line(i) for i in ODD_GOOD_IDS] + [line("  padded  ")]
    f.write_text("\n".join(rows), encoding="utf-8")
    report = ingest(f, ctx)
    assert len(report.errors) == len(BAD_IDS), report.errors
    for n, (_, words) in enumerate(BAD_IDS, start=1):
        (error,) = errors_at(report, f"{f}:{n}")
        assert words in error, error
    # Any other character is kept exactly (ids are payload values and hash input, never paths);
    # surrounding spaces are not part of an id.
    assert served(ctx) == {*ODD_GOOD_IDS, "padded"}


def test_front_matter_ids(tmp_path, ctx):
    folder = tmp_path / "fm"
    folder.mkdir()
    (folder / "numero.md").write_text("---\nid: 2024\n---\nVendas de 2024.\n", encoding="utf-8")
    (folder / "lista.md").write_text("---\nid: [a, b]\n---\nVendas.\n", encoding="utf-8")
    (folder / "vazio.md").write_text("---\nid: '  '\n---\nVendas.\n", encoding="utf-8")
    (folder / "lista-fm.md").write_text("---\n- a\n- b\n---\nVendas.\n", encoding="utf-8")
    report = ingest(folder, ctx, default_approved=True)
    assert sorted(report.errors) == sorted([
        f"{folder / 'lista.md'}: front matter 'id' must be a string, not a list",
        f"{folder / 'vazio.md'}: front matter 'id' is empty",
        f"{folder / 'lista-fm.md'}: invalid front matter (front matter must be a mapping of fields, not a list)",
    ])
    assert served(ctx) == {"2024"}  # YAML reads `id: 2024` as a number: taken as written


# --- fields of the wrong type --------------------------------------------------------------------

BAD_FIELDS = [
    ('{"id": "c1", "content": 42}', "field 'content' must be a string, not a number (id 'c1')"),
    ('{"id": "c2", "content": ["a", "b"]}', "field 'content' must be a string, not a list (id 'c2')"),
    ('{"id": "c3", "content": {"text": "a"}}', "field 'content' must be a string, not an object (id 'c3')"),
    ('{"id": "c4", "content": null}', "field 'content' is missing (id 'c4')"),
    ('{"id": "m1", "content": "x", "metadata": "approved"}', "field 'metadata' must be an object, not a string"),
    ('{"id": "m2", "content": "x", "metadata": [1]}', "field 'metadata' must be an object, not a list"),
    ('{"id": "a1", "content": "x", "assetName": {"pt": "x"}}', "field 'assetName' must be a string, not an object"),
    (line("d1", meta={"date": "March 2025"}), "metadata.date 'March 2025' is not a date (use YYYY-MM-DD"),
    (line("d2", meta={"date": "2025-13-45"}), "metadata.date '2025-13-45' is not a date"),
    (line("d3", meta={"date": "2025-03"}), "a year or a month alone belongs in metadata.version"),
    (line("d4", meta={"date": 20250101}), "metadata.date must be an ISO date string (YYYY-MM-DD), not a number"),
    (line("s1", meta={"status": 5}), "metadata.status must be a non-empty string (id 's1')"),
    (line("t1", meta={"docType": ["bi", "note"]}), "metadata.docType must be a string, not a list (id 't1')"),
]
GOOD_DATES = ["2025-03-04", "2025-03-04T10:20:30Z", "2025-03-04 10:20", "2025-03-04T10:20:30.5+02:00"]


def test_fields_of_the_wrong_type_name_the_field(tmp_path, ctx):
    f = tmp_path / "fields.jsonl"
    good = [line(f"date{i}", meta={"date": d}) for i, d in enumerate(GOOD_DATES)]
    good += [line("asset-number", assetId=7), line("archived", meta={"status": "Archived"})]
    f.write_text("\n".join([bad for bad, _ in BAD_FIELDS] + good), encoding="utf-8")
    report = ingest(f, ctx)
    assert len(report.errors) == len(BAD_FIELDS), report.errors
    for n, (_, words) in enumerate(BAD_FIELDS, start=1):
        (error,) = errors_at(report, f"{f}:{n}")
        assert words in error, error
    assert report.warnings == []
    assert served(ctx) == {f"date{i}" for i in range(len(GOOD_DATES))} | {"asset-number"}
    assert hashes(ctx, "archived")  # stored, never served


def test_unknown_status_is_stored_unserved_with_a_warning(tmp_path, ctx):
    f = tmp_path / "status.jsonl"
    f.write_text(line("typo", meta={"status": "aproved"}) + "\n" + line("draft", meta={"status": "draft"}), encoding="utf-8")
    report = ingest(f, ctx)
    assert report.errors == []
    (warning,) = report.warnings
    assert warning.startswith(f"{f}:1: metadata.status 'aproved' is not a known status; stored but never served")
    assert hashes(ctx, "typo") and hashes(ctx, "draft") and served(ctx) == set()


# --- folders and empty files ---------------------------------------------------------------------


@pytest.fixture
def mixed_folder(tmp_path):
    folder = tmp_path / "mixed"
    (folder / "notas").mkdir(parents=True)
    (folder / "good.jsonl").write_text(line("g1") + "\n" + line("g2"), encoding="utf-8")
    (folder / "notas" / "relatorio.md").write_text("---\nstatus: approved\nisApprovedForAI: true\n---\n# Relatório\n\n"
                                                   "As vendas cresceram.\n", encoding="utf-8")
    (folder / "legacy.md").write_bytes("Relatório antigo.\n".encode("cp1252"))
    (folder / "dump.jsonl").write_bytes(random.Random(3).randbytes(4096))
    (folder / "half.jsonl").write_text(line("h1") + "\n{broken\n" + line("h2", content=17), encoding="utf-8")
    (folder / "empty.jsonl").write_bytes(b"")
    (folder / "blank.jsonl").write_text("\n   \n\r\n", encoding="utf-8")
    (folder / "empty.md").write_text("---\nid: vazio\n---\n", encoding="utf-8")
    (folder / "ignored.csv").write_text("a,b\n1,2\n", encoding="utf-8")
    return folder


def test_a_folder_mixing_good_and_bad_files(mixed_folder, ctx):
    report = ingest(mixed_folder, ctx)
    by_file = {Path(e.split(":")[0]).name for e in report.errors}
    assert by_file == {"legacy.md", "dump.jsonl", "half.jsonl", "empty.md"} and len(report.errors) == 5
    assert errors_at(report, f"{mixed_folder / 'half.jsonl'}:2")[0].endswith("invalid JSON (Expecting property name "
                                                                            "enclosed in double quotes at column 2)")
    assert "field 'content' must be a string" in errors_at(report, f"{mixed_folder / 'half.jsonl'}:3")[0]
    assert sorted(report.warnings) == [f"{mixed_folder / 'blank.jsonl'}: only blank lines, no documents",
                                       f"{mixed_folder / 'empty.jsonl'}: empty file, no documents"]
    assert served(ctx) == {"g1", "g2", "h1", "notas/relatorio"}
    assert report.documents_written == 4


def test_strict_rejects_the_mixed_folder_and_writes_nothing(mixed_folder, ctx):
    with pytest.raises(IngestError) as info:
        ingest(mixed_folder, ctx, strict=True)
    for name in ("legacy.md:1:", "dump.jsonl:", "half.jsonl:2:", "half.jsonl:3:"):
        assert f"{mixed_folder / name}" in str(info.value)
    assert served(ctx) == set() and hashes(ctx, "g1") == set()


def test_empty_inputs_are_warnings_not_documents(tmp_path, ctx, capsys):
    empty, blank, folder = tmp_path / "e.jsonl", tmp_path / "b.jsonl", tmp_path / "nothing"
    empty.write_bytes(b"")
    blank.write_text("\n\n \t\n", encoding="utf-8")
    folder.mkdir()
    (folder / "x.csv").write_text("a\n", encoding="utf-8")
    for path, words in ((empty, "empty file, no documents"), (blank, "only blank lines, no documents"),
                        (folder, "no .jsonl, .md, .markdown, .txt files in this folder")):
        report = ingest(path, ctx)
        assert report.errors == [] and report.warnings == [f"{path}: {words}"]
        assert report.documents_seen == report.documents_written == 0
    rc = main(["ingest", str(empty), "--tenant", ctx.tenant, "--collection", COLLECTION, "--home", ctx.home, "--quiet"])
    assert rc == 0
    assert f"warning: {empty}: empty file, no documents" in capsys.readouterr().err


# --- size limits ---------------------------------------------------------------------------------


def test_a_line_over_the_size_limit_is_skipped_unread(tmp_path, ctx):
    f = tmp_path / "big.jsonl"
    # Broken JSON too: the error must be about its size, which shows it was never parsed.
    f.write_text(line("small1") + "\n" + '{"id": "huge", "content": "' + "x" * 400_000 + "\n" + line("small2") + "\n",
                 encoding="utf-8")
    report = ingest(f, ctx, max_document_mb=0.25)
    (error,) = report.errors
    assert error == (f"{f}:2: the line is 0.38 MB, over the 0.25 MB document limit (max_document_mb, RAGATE_MAX_DOCUMENT_MB); "
                     "skipped unread")
    assert served(ctx) == {"small1", "small2"}


def test_a_text_file_over_the_limit_is_skipped_and_the_limit_is_a_setting(tmp_path, ctx, monkeypatch):
    f = tmp_path / "grande.md"
    f.write_text("Vendas de inverno cresceram. " * 40_000, encoding="utf-8")  # 1.1 MB
    monkeypatch.setenv("RAGATE_MAX_DOCUMENT_MB", "1")
    report = ingest(f, ctx, default_approved=True)
    assert report.errors == [f"{f}: 1.11 MB, over the 1 MB document limit (max_document_mb, RAGATE_MAX_DOCUMENT_MB); "
                             "file skipped unread"]
    monkeypatch.setenv("RAGATE_MAX_DOCUMENT_MB", "lots")
    with pytest.raises(IngestError, match="RAGATE_MAX_DOCUMENT_MB='lots' is not a number"):
        ingest(f, ctx)
    with pytest.raises(IngestError, match="max_document_mb must be above 0"):
        ingest(f, ctx, max_document_mb=0)


def test_a_single_1mb_line_without_sentence_breaks_is_chunked_to_size():
    words = " ".join(f"palavra{i % 997}" for i in range(110_000))  # ~1 MB, no period anywhere
    chunks = chunk_text(words)
    max_words = int(CHUNK_TOKENS / TOKENS_PER_WORD)
    assert len(words) > 1_000_000 and all(len(c.split()) <= max_words for c in chunks)
    assert " ".join(chunks).split() == words.split()  # cut at word boundaries, nothing lost or repeated


def test_text_without_spaces_is_cut_by_characters():
    blob = base64.b64encode(random.Random(5).randbytes(750_000)).decode()  # 1 MB, no space, no line break
    chunks = chunk_text(blob, overlap_tokens=0)
    max_chars = int(CHUNK_TOKENS / TOKENS_PER_WORD) * MAX_CHARS_PER_WORD
    assert max(map(len, chunks)) <= max_chars and "".join(chunks) == blob
    # A long token in prose (a URL) is far below the cap: it is not cut.
    url = "https://example.com/relatorios/" + "a" * 150
    assert chunk_text(f"Veja {url} para detalhes.") == [f"Veja {url} para detalhes."]


def _alarm(seconds: float):
    def expire(*_):
        raise TimeoutError(f"took more than {seconds} s")

    signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)


def test_chunking_time_grows_linearly_with_numbered_sentences():
    """Sentences ending in a 1-2 digit number ("Item 7.") are joined to the next one (enumerators);
    graph/algorithms/text.py used to re-read the whole joined text at each: 130 KB took ~18 s, 1 MB hours. The
    alarm turns a regression into a failure in seconds instead of a hung run."""
    text = " ".join(f"Item número {i % 50}." for i in range(64_000))  # 1 MB
    _alarm(10)
    try:
        started = time.perf_counter()
        chunks = chunk_text(text)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
    assert len(chunks) > 100 and time.perf_counter() - started < 10


# --- the scripted embedder: huge documents, failures part way -----------------------------------


@dataclass
class Remote:
    ctx: Context
    server: object
    marker: dict

    def fail_on(self, word: str | None) -> None:
        """Every embedding request whose input holds `word` answers 500 (None: none does)."""
        self.marker["word"] = word

    def chunked(self, **settings) -> Context:
        return dataclasses.replace(self.ctx, **settings)


@pytest.fixture
def remote(scripted_server, monkeypatch, home):
    """The scripted OpenAI-compatible embeddings server: hashed 64-dim vectors, no retries."""
    server = scripted_server.reset()
    monkeypatch.setenv("OPENAI_BASE_URL", server.openai_base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    marker: dict[str, str | None] = {"word": None}

    def reply(body):
        if marker["word"] and marker["word"] in json.dumps(body.get("input"), ensure_ascii=False):
            return Reply.status(500)
        return Reply.embeddings(dims=64)

    server.default(EMB, reply)
    ctx = Context(home=str(home), tenant=f"r{next(_tenants)}", embedding_model=REMOTE_MODEL, provider_retries=0)
    return Remote(ctx, server, marker)


def prose(n_sentences: int, seed: int, tag: str = "") -> str:
    rng = random.Random(seed)
    words = "vendas estoque inverno campanha margem loja canal cliente produto preço região norte sul".split()
    return " ".join(" ".join(rng.choice(words) for _ in range(rng.randint(8, 16))).capitalize() + f" {tag}fim."
                    for _ in range(n_sentences))


def test_a_several_mb_document_is_stored_whole(tmp_path, remote):
    content = prose(36_000, seed=1)  # ~3 MB, ~1,500 chunks: one document, several embedding requests
    f = tmp_path / "huge.jsonl"
    f.write_text(line("small") + "\n" + line("huge", content) + "\n", encoding="utf-8")
    assert 2_500_000 < f.stat().st_size < 8 * 1024 * 1024
    ctx = remote.ctx
    report = ingest(f, ctx, collection=REMOTE)
    n = expected_chunks(content, ctx)
    assert report.errors == [] and report.documents_written == 2 and n > 1000
    assert len(hashes(ctx, "huge", REMOTE)) == n  # every chunk, each at its own position
    assert len([r for r in remote.server.requests_to(EMB) if len(r["json"]["input"]) > 1]) >= 2  # several requests
    again = ingest(f, ctx, collection=REMOTE)
    assert again.documents_written == 0 and again.documents_unchanged == 2


def test_embedder_failing_part_way_writes_no_document_in_part(tmp_path, remote):
    """Several batches; the embedder answers 500 to the one holding d24. The batches before it are
    stored, each document whole; nothing of that batch or later; the error names where it stopped.
    Once the embedder is back, a re-run writes exactly the rest, the state equals a clean ingest's,
    and a third run writes nothing."""
    ctx = remote.chunked(chunk_tokens=40, overlap_tokens=0)  # ~10 chunks a document: several batches
    contents = {f"d{i:02d}": prose(12 + 7 * (i % 5), seed=i, tag="quebra " if i == 24 else "") for i in range(40)}
    assert sum(expected_chunks(c, ctx) for c in contents.values()) > 3 * EMBED_BATCH_CHUNKS
    f = tmp_path / "batches.jsonl"
    f.write_text("\n".join(line(k, v) for k, v in contents.items()), encoding="utf-8")
    remote.fail_on("quebra")
    with pytest.raises(IngestWriteError) as info:
        ingest(f, ctx, collection=REMOTE)
    err, ids = info.value, list(contents)
    written = [k for k in ids if hashes(ctx, k, REMOTE)]
    assert 0 < len(written) < 24 and written == ids[: len(written)]
    for k in written:
        assert len(hashes(ctx, k, REMOTE)) == expected_chunks(contents[k], ctx), k
    assert err.report.documents_written == len(written) and err.not_written == ids[len(written):]
    assert str(err).startswith(f"embedding failed at {f}:{len(written) + 1} (id 'd{len(written):02d}'): InternalServerError")
    assert f"{len(written)} documents were written before it, each whole; {40 - len(written)} were not written" in str(err)
    assert "Run the same ingest again" in str(err)

    remote.fail_on(None)
    rerun = ingest(f, ctx, collection=REMOTE)
    assert (rerun.documents_unchanged, rerun.documents_written) == (len(written), 40 - len(written))
    assert ingest(f, ctx, collection=REMOTE + "-clean").documents_written == 40  # the same tenant, a clean collection
    assert all(hashes(ctx, k, REMOTE) == hashes(ctx, k, REMOTE + "-clean") for k in ids)
    assert ingest(f, ctx, collection=REMOTE).documents_written == 0


def test_one_document_split_across_embedding_requests_is_all_or_nothing(tmp_path, remote):
    """The client sends at most 1,000 texts a request: a 1,100-chunk document takes two. When the
    second fails, none of the document (nor the small one batched with it) is stored."""
    ctx = remote.chunked(chunk_tokens=20, overlap_tokens=0)
    small = prose(3, seed=9)
    big = " ".join(f"Frase {'quebra' if i == 1050 else 'normal'} número {i} do relatório de vendas do inverno inteiro."
                   for i in range(1100))
    f = tmp_path / "split.jsonl"
    f.write_text(line("small", small) + "\n" + line("big", big), encoding="utf-8")
    assert expected_chunks(big, ctx) > 1000
    remote.fail_on("quebra")
    with pytest.raises(IngestWriteError) as info:
        ingest(f, ctx, collection=REMOTE)
    assert info.value.not_written == ["small", "big"]
    sent = [r["json"]["input"] for r in remote.server.requests_to(EMB)]
    assert len(sent[-2]) == 1000 and "quebra" in json.dumps(sent[-1], ensure_ascii=False)  # the first request went through
    assert hashes(ctx, "big", REMOTE) == set() and hashes(ctx, "small", REMOTE) == set()
    remote.fail_on(None)
    assert ingest(f, ctx, collection=REMOTE).documents_written == 2
    assert len(hashes(ctx, "big", REMOTE)) == expected_chunks(big, ctx)


def test_cli_reports_a_failed_embedder_and_how_to_resume(tmp_path, remote, capsys):
    f = tmp_path / "cli.jsonl"
    f.write_text(line("c1", prose(5, 1)) + "\n" + line("c2", prose(5, 2, tag="quebra ")), encoding="utf-8")
    remote.fail_on("quebra")
    rc = main(["ingest", str(f), "--tenant", remote.ctx.tenant, "--collection", REMOTE, "--home", remote.ctx.home,
               "--embedding-model", REMOTE_MODEL, "--quiet"])
    assert rc == 2
    err = capsys.readouterr().err
    assert f"ragate ingest: embedding failed at {f}:1 (id 'c1')" in err and "Run the same ingest again" in err


# --- the engine failing part way ---------------------------------------------------------------------


class FailingShard:
    """The real embedded shard, except that update number `fail_at` (counting from 1) raises."""

    def __init__(self, shard, fail_at: int):
        self.shard, self.fail_at, self.calls = shard, fail_at, 0

    def update(self, operation):
        self.calls += 1
        if self.calls == self.fail_at:
            raise OSError(28, "No space left on device")
        return self.shard.update(operation)

    def __getattr__(self, name):
        return getattr(self.shard, name)


def test_engine_failing_part_way_leaves_each_document_whole_or_absent(tmp_path, ctx):
    """Version 1 of five documents is stored; writing version 2 fails at the sixth engine operation:
    the delete of d2's old chunks went through, the upsert of its new ones did not. d0 and d1 hold
    version 2, d2 is absent (not old chunks mixed with new), d3 and d4 still hold version 1."""
    f = tmp_path / "v.jsonl"
    v1 = {f"d{i}": prose(30 + 5 * i, seed=i) for i in range(5)}
    v2 = {k: prose(12, seed=100 + i) for i, k in enumerate(v1)}  # shorter: fewer chunks than version 1
    f.write_text("\n".join(line(k, v) for k, v in v1.items()), encoding="utf-8")
    ingest(f, ctx)
    old = {k: hashes(ctx, k) for k in v1}
    assert all(len(old[k]) == expected_chunks(v1[k], ctx) for k in v1)
    f.write_text("\n".join(line(k, v) for k, v in v2.items()), encoding="utf-8")
    index = open_index(ctx.home_path)
    real = index._shard(COLLECTION)
    index._shards[COLLECTION] = FailingShard(real, fail_at=6)  # delete+upsert per document: d2's upsert
    try:
        with pytest.raises(IngestWriteError) as info:
            ingest(f, ctx)
    finally:
        index._shards[COLLECTION] = real
    assert str(info.value).startswith(f"writing to the vector store failed at {f}:3 (id 'd2'): OSError")
    assert info.value.not_written == ["d2", "d3", "d4"]
    assert [len(hashes(ctx, k)) for k in ("d0", "d1")] == [expected_chunks(v2[k], ctx) for k in ("d0", "d1")]
    assert hashes(ctx, "d2") == set()
    assert hashes(ctx, "d3") == old["d3"] and hashes(ctx, "d4") == old["d4"]
    rerun = ingest(f, ctx)
    assert (rerun.documents_unchanged, rerun.documents_written) == (2, 3)
    assert all(len(hashes(ctx, k)) == expected_chunks(v2[k], ctx) for k in v2)


# --- the Qdrant-server path --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def qdrant():
    from qdrant_server import QdrantTestServer

    with QdrantTestServer() as srv:
        yield srv


def write_path(qdrant) -> str:
    """The request a document's write goes through, as recorded: one batch (upsert + delete of the
    old version's leftovers), or, in an older layout, the upsert (PUT .../points)."""
    return "/points/batch" if qdrant.requests_to("/points/batch") else "/points"


@pytest.fixture
def on_server(qdrant, monkeypatch, home):
    monkeypatch.setenv("QDRANT_URL", qdrant.url)
    qdrant.reset()
    yield Context(home=str(home), tenant=f"q{next(_tenants)}", vector_store="qdrant")
    assert qdrant.errors == []


def test_server_write_failing_part_way_leaves_each_document_whole_or_absent(tmp_path, on_server, qdrant, monkeypatch):
    """Batches of two chunks; once the first batch is acknowledged the server answers the next
    write with a 500: the acknowledged documents are whole, the rest absent, and a re-run writes
    exactly the rest."""
    monkeypatch.setattr("graph.indexing.ingest.EMBED_BATCH_CHUNKS", 2)
    contents = {f"s{i}": prose(3 + 20 * (i % 3), seed=40 + i) for i in range(6)}
    f = tmp_path / "server.jsonl"
    f.write_text("\n".join(line(k, v) for k, v in contents.items()), encoding="utf-8")
    acked: list[str] = []

    def on_written(ids):
        acked.extend(ids)
        if len(acked) == len(ids):  # after the first batch: the next write request answers 500
            qdrant.fail_next(1, status=500, path=write_path(qdrant))

    with pytest.raises(IngestWriteError) as info:
        ingest(f, on_server, collection="srv", on_written=on_written)
    assert str(info.value).startswith(f"writing to the vector store failed at {f}:{len(acked) + 1}")
    assert info.value.not_written == list(contents)[len(acked):]
    for k in contents:
        assert len(hashes(on_server, k, "srv")) == (expected_chunks(contents[k], on_server) if k in acked else 0), k
    rerun = ingest(f, on_server, collection="srv")
    assert (rerun.documents_unchanged, rerun.documents_written) == (len(acked), len(contents) - len(acked))
    assert all(len(hashes(on_server, k, "srv")) == expected_chunks(v, on_server) for k, v in contents.items())


def test_server_changed_document_stays_whole_when_its_write_fails(tmp_path, on_server, qdrant):
    """Version 1 of a document (4+ chunks), then version 2 (1 chunk) while the server answers the
    write with a 500. The new chunks and the delete of the old version's leftovers go in one request
    (graph/providers/vectorstore_server.py replace_document): the document is still version 1, whole, never
    version 2's chunk beside version 1's tail (as when they were two requests and the second failed).
    A re-run writes version 2."""
    ctx = dataclasses.replace(on_server, chunk_tokens=40, overlap_tokens=0)
    f = tmp_path / "changed.jsonl"
    f.write_text(line("x", prose(20, seed=1)), encoding="utf-8")
    ingest(f, ctx, collection="srv")
    v1 = hashes(ctx, "x", "srv")
    f.write_text(line("x", prose(2, seed=2)), encoding="utf-8")
    ingest(f, ctx, collection="srv-clean")
    v2 = hashes(ctx, "x", "srv-clean")
    assert len(v1) >= 4 and len(v2) == 1
    qdrant.fail_next(1, status=500, path=write_path(qdrant))
    with pytest.raises(IngestWriteError, match="writing to the vector store failed"):
        ingest(f, ctx, collection="srv")
    assert hashes(ctx, "x", "srv") == v1
    assert ingest(f, ctx, collection="srv").documents_written == 1
    assert hashes(ctx, "x", "srv") == v2
