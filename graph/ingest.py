"""Ingest documents (JSONL, Markdown, plain text) into a collection for one tenant.

- The tenant always comes from the caller (`--tenant`), never from the document: a document
  whose metadata claims another `brandId` is stored under the ingesting tenant and reported.
- Sentence-aware chunking (~450 tokens, 40 overlap; Context.chunk_tokens / overlap_tokens) with a title/source/date header that is
  indexed with the text.
- Idempotent: a document whose chunks hash the same as what is stored is skipped; a changed one
  is replaced whole. Vectors are cached by content hash, so unchanged text is never re-embedded.
- Bad lines are reported by file and line and skipped (or, with `strict`, reject the batch
  before anything is written).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from graph.context import CHUNK_TOKENS, OVERLAP_TOKENS, Context
from graph.policy import load_policy
from graph.resources import get_analyzer, get_resources
from graph.text import detect_language, json_lines, split_sentences
from graph.vectorstore import TENANT_FIELD, ChunkRecord

TOKENS_PER_WORD = 1.3  # sub-word tokens per whitespace word, Portuguese and English news text
SUPPORTED_SUFFIXES = (".jsonl", ".md", ".markdown", ".txt")
# Chunks embedded per call: large enough that a remote provider sees few requests, small enough
# that one failed call loses little work (OpenAI accepts up to 2,048 inputs a request).
EMBED_BATCH_CHUNKS = 128


class IngestError(ValueError):
    """The batch cannot be ingested (with the reasons)."""


@dataclass
class Document:
    id: str
    content: str
    assetId: str
    assetName: str
    metadata: dict[str, Any]
    source: str  # "file:line", for error messages


@dataclass
class IngestReport:
    collection: str
    tenant: str
    documents_seen: int = 0
    documents_written: int = 0
    documents_unchanged: int = 0
    chunks_written: int = 0
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return self.__dict__.copy()


# --- reading -------------------------------------------------------------------------------


def _as_bool(value: Any) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().casefold() in ("true", "false"):
        return value.strip().casefold() == "true"
    return None


def _jsonl_documents(path: Path, errors: list[str]) -> Iterable[Document]:
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        errors.append(f"{path}: not UTF-8 text (byte {exc.start}); file skipped")
        return
    for lineno, obj, exc in json_lines(text.splitlines()):
        where = f"{path}:{lineno}"
        if exc is not None:
            errors.append(f"{where}: invalid JSON ({exc.msg} at column {exc.colno})")
            continue
        if not isinstance(obj, dict):
            errors.append(f"{where}: a line must be a JSON object")
            continue
        doc_id, content = obj.get("id"), obj.get("content")
        if not isinstance(doc_id, str) or not doc_id.strip():
            errors.append(f"{where}: field 'id' is missing or not a non-empty string")
            continue
        if not isinstance(content, str) or not content.strip():
            errors.append(f"{where}: field 'content' is missing or empty (id {doc_id!r})")
            continue
        metadata = obj.get("metadata") or {}
        if not isinstance(metadata, dict):
            errors.append(f"{where}: field 'metadata' must be an object (id {doc_id!r})")
            continue
        yield Document(id=doc_id.strip(), content=content, assetId=str(obj.get("assetId") or doc_id),
                       assetName=str(obj.get("assetName") or doc_id), metadata=metadata, source=where)


def _front_matter(text: str) -> tuple[dict[str, Any], str]:
    import yaml

    if text.startswith("---\n"):
        end = text.find("\n---", 4)
        if end != -1:
            meta = yaml.safe_load(text[4:end]) or {}
            if isinstance(meta, dict):
                return meta, text[end + 4 :].lstrip("\n")
    return {}, text


def _text_document(path: Path, root: Path, errors: list[str]) -> Iterable[Document]:
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        errors.append(f"{path}: not UTF-8 text (byte {exc.start}); file skipped")
        return
    try:
        meta, body = _front_matter(text)
    except Exception as exc:
        errors.append(f"{path}: invalid front matter ({exc})")
        return
    if not body.strip():
        errors.append(f"{path}: empty document")
        return
    rel = path.relative_to(root) if root.is_dir() else Path(path.name)
    doc_id = str(meta.pop("id", rel.with_suffix("").as_posix()))
    title = meta.pop("assetName", None) or next(
        (ln.lstrip("# ").strip() for ln in body.splitlines() if ln.startswith("#")), path.stem)
    yield Document(id=doc_id, content=body, assetId=str(meta.pop("assetId", doc_id)), assetName=str(title),
                   metadata=meta, source=str(path))


def read_documents(path: Path) -> tuple[list[Document], list[str]]:
    """Every document under `path` (a file or a folder), with the errors that named a file or line."""
    errors: list[str] = []
    if not path.exists():
        raise IngestError(f"{path}: no such file or folder")
    files = sorted(p for p in path.rglob("*") if p.is_file() and p.suffix.lower() in SUPPORTED_SUFFIXES) \
        if path.is_dir() else [path]
    if path.is_file() and path.suffix.lower() not in SUPPORTED_SUFFIXES:
        raise IngestError(f"{path}: unsupported file type (use {', '.join(SUPPORTED_SUFFIXES)})")
    docs: list[Document] = []
    seen: dict[str, str] = {}
    for f in files:
        reader = _jsonl_documents(f, errors) if f.suffix.lower() == ".jsonl" else _text_document(f, path, errors)
        for doc in reader:
            if doc.id in seen:
                errors.append(f"{doc.source}: duplicate id {doc.id!r} (first seen at {seen[doc.id]}); skipped")
                continue
            seen[doc.id] = doc.source
            docs.append(doc)
    return docs, errors


# --- chunking ------------------------------------------------------------------------------


def chunk_text(text: str, chunk_tokens: int = CHUNK_TOKENS, overlap_tokens: int = OVERLAP_TOKENS) -> list[str]:
    """Sentence-aware chunks of about `chunk_tokens`; each chunk repeats the previous chunk's last
    sentences up to `overlap_tokens`. A sentence longer than a chunk is cut at word boundaries.
    Line breaks between sentences are kept, so titles and bullets stay on their own lines."""
    max_words = max(1, int(chunk_tokens / TOKENS_PER_WORD))
    overlap_words = int(overlap_tokens / TOKENS_PER_WORD)
    sentences: list[tuple[int, str]] = []  # (line number, sentence)
    for lineno, line in enumerate(text.splitlines()):
        for s in split_sentences(line):
            ws = s.split()
            sentences.extend((lineno, " ".join(ws[i : i + max_words])) for i in range(0, len(ws), max_words))
    chunks: list[list[tuple[int, str]]] = []
    current: list[tuple[int, str]] = []
    size = 0
    for item in sentences:
        n = len(item[1].split())
        if current and size + n > max_words:
            chunks.append(current)
            carry: list[tuple[int, str]] = []
            carried = 0
            for prev in reversed(current):
                k = len(prev[1].split())
                if carried + k > overlap_words:
                    break
                carry.insert(0, prev)
                carried += k
            # The overlap must still leave room for the sentence that opens the new chunk.
            while carry and carried + n > max_words:
                carried -= len(carry.pop(0)[1].split())
            current, size = carry, carried
        current.append(item)
        size += n
    if current:
        chunks.append(current)
    return [_join_lines(c) for c in chunks]


def _join_lines(sentences: list[tuple[int, str]]) -> str:
    out = ""
    for i, (lineno, s) in enumerate(sentences):
        if i:
            out += " " if lineno == sentences[i - 1][0] else "\n"
        out += s
    return out


def render_performance_snapshot(snapshot: dict) -> str:
    """A campaign's `performance_snapshot` as one sentence, indexed with the document's text so
    the lexical index, the reranker and the composer all read it."""
    parts = []
    for key in ("ctr", "cvr"):
        if isinstance(snapshot.get(key), (int, float)):
            parts.append(f"{key.upper()} {snapshot[key] * 100:.2f}%".replace(".00%", "%"))
    if isinstance(snapshot.get("cpc"), (int, float)):
        parts.append(f"CPC {snapshot['cpc']:.2f}")
    if isinstance(snapshot.get("roas"), (int, float)):
        parts.append(f"ROAS {snapshot['roas']:g}")
    head = "Performance snapshot"
    if snapshot.get("period"):
        head += f" ({snapshot['period']})"
    tail = f"; status {snapshot['status']}" if snapshot.get("status") else ""
    return f"{head}: {', '.join(parts)}{tail}."


def header_for(doc: Document) -> str:
    """Title | source | date, indexed with every chunk: questions name titles, publishers and dates
    ("the 2026 playbook", "as TechCrunch reported in October") that the chunk's own text may not."""
    meta = doc.metadata
    source = meta.get("source") or meta.get("sourceUrl") or meta.get("docType") or ""
    parts = [doc.assetName, str(source), str(meta.get("date") or meta.get("version") or "")]
    return " | ".join(p for p in parts if p)


# --- writing -------------------------------------------------------------------------------

# Bumped when the payload layout changes, so that re-ingesting rewrites documents stored the old way.
PAYLOAD_SCHEMA = 3


def year_of(meta: dict[str, Any]) -> int | None:
    """The year a document belongs to (its version, else its date), for the recency boost."""
    for key in ("version", "date"):
        value = str(meta.get(key) or "")
        if len(value) >= 4 and value[:4].isdigit():
            return int(value[:4])
    return None


def chunk_record(tenant: str, doc: Document, meta: dict[str, Any], header: str, language: str, index: int,
                 piece: str) -> ChunkRecord:
    """One chunk with the payload the engine stores (vectors are added by the caller)."""
    digest = hashlib.sha256(json.dumps([PAYLOAD_SCHEMA, tenant, doc.id, doc.assetId, doc.assetName, header, piece, meta],
                                       sort_keys=True, default=str).encode()).hexdigest()
    payload = {
        "docId": doc.id, "assetId": doc.assetId, "assetName": doc.assetName, "text": piece, "header": header,
        "language": language, "metadata": meta, "chunk_index": index, "content_hash": digest,
        "status": meta["status"], "isApprovedForAI": "true" if meta["isApprovedForAI"] else "false",
        "docType": str(meta.get("docType") or ""), "category": str(meta.get("category") or ""),
        "date": str(meta.get("date") or ""), "version": str(meta.get("version") or ""),
        "source": str(meta.get("source") or ""),
    }
    year = year_of(meta)
    if year is not None:
        payload["year"] = year
    return ChunkRecord(doc_id=doc.id, chunk_index=index, text=piece, header=header, payload=payload, content_hash=digest)



def _normalise_metadata(doc: Document, tenant: str, defaults: dict[str, Any], report: IngestReport) -> dict[str, Any] | None:
    # Front matter may hold YAML dates and other non-JSON values: store their text form.
    meta = json.loads(json.dumps(doc.metadata, default=str))
    claimed = meta.pop(TENANT_FIELD, None)
    if claimed is not None and claimed != tenant:
        report.warnings.append(f"{doc.source}: metadata claims {TENANT_FIELD}={claimed!r}; stored under the ingesting tenant {tenant!r}")
    approved = _as_bool(meta.get("isApprovedForAI", defaults["isApprovedForAI"]))
    if approved is None:
        report.errors.append(f"{doc.source}: metadata.isApprovedForAI must be true or false (id {doc.id!r})")
        return None
    status = meta.get("status", defaults["status"])
    if not isinstance(status, str) or not status.strip():
        report.errors.append(f"{doc.source}: metadata.status must be a non-empty string (id {doc.id!r})")
        return None
    meta["isApprovedForAI"] = approved
    meta["status"] = status.strip().casefold()
    return meta


def ingest_path(path: str | Path, *, collection: str, tenant: str, context: Context | None = None,
                default_status: str = "ready", default_approved: bool = False, strict: bool = False,
                progress: bool = False) -> IngestReport:
    if not tenant or not tenant.strip():
        raise IngestError("a tenant is required (--tenant): documents are always stored under the ingesting tenant")
    ctx = context or Context()
    policy = load_policy(ctx.policy_path)
    docs, errors = read_documents(Path(path))
    report = IngestReport(collection=collection, tenant=tenant, errors=errors)
    defaults = {"status": default_status, "isApprovedForAI": default_approved}
    prepared = [(doc, meta) for doc in docs if (meta := _normalise_metadata(doc, tenant, defaults, report)) is not None]
    report.documents_seen = len(docs)
    if strict and report.errors:
        raise IngestError("batch rejected, nothing written:\n  " + "\n  ".join(report.errors))

    res = get_resources(ctx)
    analyzer = get_analyzer(policy)
    markers, default_lang = policy.raw["languages"]["markers"], policy.raw["languages"].get("default", "en")
    dims = len(res.embeddings.embed_query("dimension probe"))
    res.index.ensure_collection(collection, dims, ctx.embedding_model)

    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=len(prepared), unit="doc", desc=f"ingest {collection}")
    pending: list[tuple[Document, list[ChunkRecord]]] = []  # changed documents waiting for their vectors

    def write_pending() -> None:
        # One embedding call for several documents: a remote provider gets a few large requests
        # instead of one per document. A failure here leaves the earlier batches written.
        texts = [f"{r.header}\n{r.text}" for _, records in pending for r in records]
        vectors = iter(res.embeddings.embed_documents(texts))
        for doc, records in pending:
            for r in records:
                r.dense = next(vectors)
            res.index.replace_document(collection, tenant, doc.id, records)
            report.documents_written += 1
            report.chunks_written += len(records)
            if bar:
                bar.update(1)
        pending.clear()

    for doc, meta in prepared:
        language = detect_language(doc.content, markers, default_lang)
        header = header_for(doc)
        content = doc.content
        if isinstance(meta.get("performance_snapshot"), dict):
            content = f"{content.rstrip()}\n{render_performance_snapshot(meta['performance_snapshot'])}"
        pieces = chunk_text(content, ctx.chunk_tokens, ctx.overlap_tokens)
        records = [chunk_record(tenant, doc, meta, header, language, i, piece) for i, piece in enumerate(pieces)]
        if res.index.existing_hashes(collection, tenant, doc.id) == {r.content_hash for r in records}:
            report.documents_unchanged += 1
            if bar:
                bar.update(1)
            continue
        for r in records:
            sv = analyzer.document_vector(f"{r.header}\n{r.text}", language)
            r.sparse = (list(sv.indices), list(sv.values))
        pending.append((doc, records))
        if sum(len(recs) for _, recs in pending) >= EMBED_BATCH_CHUNKS:
            write_pending()
    if pending:
        write_pending()
    if bar:
        bar.close()
    res.index.flush()
    return report
