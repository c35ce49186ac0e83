"""Ingest documents (JSONL, Markdown, plain text) into a collection for one tenant.

- The tenant always comes from the caller (`--tenant`), never from the document: a document
  whose metadata claims another `brandId` is stored under the ingesting tenant and reported.
- Sentence-aware chunking (~650 tokens, 50 overlap; Context.chunk_tokens / overlap_tokens) with a title/source/date header that is
  indexed with the text.
- Idempotent: a document whose chunks hash the same as what is stored is skipped; a changed one
  is replaced whole. Vectors are cached by content hash, so unchanged text is never re-embedded.
- Bad input is reported by file, line and field and skipped: a bad JSONL line, a document whose
  fields have the wrong type, a file that is not UTF-8 text, a document over `max_document_mb`.
  With `strict`, any of these rejects the whole batch before anything is written.
- All or nothing per document: a document's chunks are written in one engine operation, so after
  a crash, a kill or a provider failure each document is either wholly stored or absent. A failure
  while writing stops the ingest (`IngestWriteError`) with the documents before it written; running
  the same ingest again finishes the rest. `on_written` hears of each batch once the engine has it.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
import unicodedata
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, BinaryIO

from graph import settings
from graph.algorithms.text import corpus_language, detect_language, get_analyzer, split_sentences
from graph.context import CHUNK_TOKENS, OVERLAP_TOKENS, Context
from graph.policy import load_policy
from graph.providers.embeddings import MULTILINGUAL_MODEL, is_auto, model_for_language
from graph.providers.resources import collection_model, embeddings_named, get_resources
from graph.providers.vectorstore import APPROVED_STATUSES, TENANT_FIELD, ChunkRecord

TOKENS_PER_WORD = 1.3  # sub-word tokens per whitespace word, Portuguese and English news text
SUPPORTED_SUFFIXES = (".jsonl", ".md", ".markdown", ".txt")
# Chunks embedded per call: large enough that a remote provider sees few requests, small enough
# that one failed call loses little work (OpenAI accepts up to 2,048 inputs a request).
EMBED_BATCH_CHUNKS = 128
FLUSH_INTERVAL_S = 5.0  # the engine's files are flushed this often during an ingest, and at its end
MAX_ID_CHARS = 512  # an id is a key, not a document: a longer one is almost surely a wrong field
# A chunk holds at most this many characters per word of its budget. Prose never gets near it (~6);
# text without spaces (base64, minified JSON, glued URLs) does, and is then cut by characters so
# that no chunk grows past what an embedding endpoint accepts.
MAX_CHARS_PER_WORD = 24
SNIFF_BYTES = 8192  # how much of a file is looked at to tell text from binary data
_UTF8_BOM = b"\xef\xbb\xbf"
_WIDE_BOMS = ((b"\xff\xfe\x00\x00", "UTF-32"), (b"\x00\x00\xfe\xff", "UTF-32"), (b"\xff\xfe", "UTF-16"),
              (b"\xfe\xff", "UTF-16"))
# Dates the engine's datetime index reads (and date filters therefore match): ISO 8601 day, optional
# time and zone. "2025-03" or "2025" are not dates to it: a year or month belongs in `version`.
_ISO_DATE = re.compile(r"\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d{1,6})?)?(?:Z|[+-]\d{2}:\d{2})?)?")
_NOT_TEXT = re.compile("[\x00\ud800-\udfff]")  # NUL (binary data) or half a surrogate pair (no character)
# Metadata fields that become indexed keywords or the chunk header: one value each, not a structure.
SCALAR_METADATA = ("docType", "category", "source", "sourceUrl", "version")
# Statuses that are stored without a warning. Only APPROVED_STATUSES are ever served; any other
# value is stored and never served, so one outside this list (a typo of "approved"?) is reported.
KNOWN_STATUSES = (*APPROVED_STATUSES, "draft", "review", "pending", "archived", "deprecated", "superseded",
                  "expired", "retired", "rejected")


class IngestError(ValueError):
    """The batch cannot be ingested (with the reasons)."""


class IngestWriteError(IngestError):
    """Embedding or writing failed part way. `report` counts what was written before (each of those
    documents whole); `not_written` lists the ids that were not, none of them partly."""

    def __init__(self, message: str, report: IngestReport, not_written: list[str]):
        super().__init__(message)
        self.report, self.not_written = report, not_written


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
    embedding_model: str | None = None  # the collection's (chosen at its first ingest, recorded in its manifest)
    index_build_s: float | None = None  # seconds the search index took to build after the write (large collections)

    def as_dict(self) -> dict[str, Any]:
        return self.__dict__.copy()


def max_document_bytes(max_document_mb: float | None = None) -> int:
    """The size limit in bytes: the argument, else $RAGATE_MAX_DOCUMENT_MB, else its default
    (graph/settings.py says why). A document over it is refused unread, naming it."""
    if max_document_mb is None:
        try:
            max_document_mb = settings.number("RAGATE_MAX_DOCUMENT_MB")
        except ValueError as exc:
            raise IngestError(str(exc)) from None
    if not max_document_mb > 0:
        raise IngestError(f"max_document_mb must be above 0, not {max_document_mb}")
    return int(max_document_mb * 1024 * 1024)


# --- reading -------------------------------------------------------------------------------


def _as_bool(value: Any) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().casefold() in ("true", "false"):
        return value.strip().casefold() == "true"
    return None


def _kind(value: Any) -> str:
    """A JSON value's type in JSON's words, for messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    return {dict: "an object", list: "a list", str: "a string"}.get(type(value), type(value).__name__)


def _mb(size: int) -> str:
    return f"{size / (1024 * 1024):.2f}".rstrip("0").rstrip(".") + " MB"


def _sniff(head: bytes) -> str | None:
    """Why a file is not UTF-8 text, judged from its first bytes (None: it may be)."""
    for bom, name in _WIDE_BOMS:
        if head.startswith(bom):
            return (f"{name} text (byte-order mark {bom.hex(' ').upper()}); ragate reads UTF-8: convert it "
                    f"(e.g. iconv -f {name} -t UTF-8)")
    if (nul := head.find(b"\x00")) != -1:
        return f"binary data or UTF-16 text, not UTF-8 (NUL byte at offset {nul})"
    sample = head.decode("utf-8", errors="replace")
    if len(sample) > 64:
        odd = sum(1 for ch in sample if ch == "\ufffd" or (unicodedata.category(ch) == "Cc" and ch not in "\t\n\r\f"))
        if odd > len(sample) // 4:
            return "binary data, not UTF-8 text"
    return None


def _not_utf8(raw: bytes, exc: UnicodeDecodeError) -> str:
    """What is wrong with a line (or file) that is not UTF-8, and how to fix it."""
    byte = raw[exc.start]
    try:
        raw.decode("cp1252")
        guess = "it looks like Latin-1/Windows-1252: convert it (e.g. iconv -f WINDOWS-1252 -t UTF-8)"
    except UnicodeDecodeError:
        guess = "convert it to UTF-8"
    column = exc.start - (raw.rfind(b"\n", 0, exc.start) + 1) + 1
    return f"not UTF-8 text (byte 0x{byte:02X} at column {column}); {guess}"


def _text_problem(value: Any, name: str) -> str | None:
    """An unpaired surrogate (JSON "\\ud800": no character, cannot be stored) or a NUL (binary data)
    in any string under `value`, as "field 'name' holds ..."."""
    if isinstance(value, str):
        if (found := _NOT_TEXT.search(value)) is None:
            return None
        i, ch = found.start(), found.group()
        if ch == "\x00":
            return f"field '{name}' holds a NUL character (\\u0000) at character {i + 1}: binary data, not text"
        return (f"field '{name}' holds an unpaired surrogate (\\u{ord(ch):04x}) at character {i + 1}: "
                "not a Unicode character")
    elif isinstance(value, dict):
        for key, item in value.items():
            if problem := _text_problem(key, f"{name} key") or _text_problem(item, f"{name}.{key}"):
                return problem
    elif isinstance(value, list):
        for i, item in enumerate(value):
            if problem := _text_problem(item, f"{name}[{i}]"):
                return problem
    return None


def _id_problem(doc_id: str) -> str | None:
    """Why a (stripped) id cannot be a key: empty, too long, or holding a control character."""
    if not doc_id:
        return "field 'id' is empty"
    if len(doc_id) > MAX_ID_CHARS:
        return f"field 'id' is {len(doc_id)} characters long (at most {MAX_ID_CHARS})"
    for i, ch in enumerate(doc_id):
        if unicodedata.category(ch) in ("Cc", "Cs", "Zl", "Zp"):
            return f"field 'id' holds a control character (U+{ord(ch):04X}) at character {i + 1}"
    return None


def _label(obj: dict[str, Any], key: str, default: str) -> str | None:
    """assetId / assetName: a string, or a number written as one (None: neither)."""
    value = obj.get(key)
    if value is None or value == "":
        return default
    if isinstance(value, str):
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    return None


def _json_document(obj: Any, where: str) -> Document | str:
    """The document on one JSONL line, or what is wrong with it."""
    if not isinstance(obj, dict):
        return f"{where}: a line must be a JSON object, not {_kind(obj)}"
    raw_id = obj.get("id")
    if raw_id is None:
        return f"{where}: field 'id' is missing"
    if not isinstance(raw_id, str):
        return f"{where}: field 'id' must be a string, not {_kind(raw_id)} ({json.dumps(raw_id)[:40]})"
    if problem := _text_problem(raw_id, "id") or _id_problem(raw_id.strip()):
        return f"{where}: {problem}"
    doc_id = raw_id.strip()
    content = obj.get("content")
    if content is None:
        return f"{where}: field 'content' is missing (id {doc_id!r})"
    if not isinstance(content, str):
        return f"{where}: field 'content' must be a string, not {_kind(content)} (id {doc_id!r})"
    if not content.strip():
        return f"{where}: field 'content' is empty (id {doc_id!r})"
    metadata = obj.get("metadata")
    metadata = {} if metadata is None else metadata
    if not isinstance(metadata, dict):
        return f"{where}: field 'metadata' must be an object, not {_kind(metadata)} (id {doc_id!r})"
    labels = {}
    for key in ("assetId", "assetName"):
        labels[key] = _label(obj, key, doc_id)
        if labels[key] is None:
            return f"{where}: field '{key}' must be a string, not {_kind(obj[key])} (id {doc_id!r})"
    for key in ("content", "assetId", "assetName", "metadata"):
        if problem := _text_problem(obj.get(key), key):
            return f"{where}: {problem} (id {doc_id!r})"
    return Document(id=doc_id, content=content, assetId=labels["assetId"], assetName=labels["assetName"],
                    metadata=metadata, source=where)


def _skip_rest_of_line(f: BinaryIO) -> int:
    """Read past the end of an overlong line without holding it; its remaining length in bytes."""
    skipped = 0
    while block := f.readline(1 << 20):
        skipped += len(block)
        if block.endswith(b"\n"):
            break
    return skipped


def _jsonl_documents(path: Path, errors: list[str], warnings: list[str], limit: int) -> Iterable[Document]:
    """Each line is read, decoded and checked on its own: a bad line is reported (file:line, field)
    and skipped, the other lines still count. Lines are split on "\\n" only: a U+2028 or U+0085
    inside a JSON string is text, not a line break. A line over `limit` bytes is skipped unread."""
    with path.open("rb") as f:
        if problem := _sniff(f.read(SNIFF_BYTES)):
            errors.append(f"{path}: {problem}; file skipped")
            return
        f.seek(0)
        lineno, documents = 0, 0
        while raw := f.readline(limit + 1):
            lineno += 1
            where = f"{path}:{lineno}"
            if len(raw) > limit and not raw.endswith(b"\n"):
                documents += 1
                size = len(raw) + _skip_rest_of_line(f)
                errors.append(f"{where}: the line is {_mb(size)}, over the {_mb(limit)} document limit "
                              "(max_document_mb, RAGATE_MAX_DOCUMENT_MB); skipped unread")
                continue
            if lineno == 1 and raw.startswith(_UTF8_BOM):
                raw = raw[len(_UTF8_BOM):]  # a UTF-8 byte-order mark (Windows editors write one) is not content
            raw = raw.rstrip(b"\r\n")
            if not raw.strip():
                continue
            documents += 1
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                errors.append(f"{where}: {_not_utf8(raw, exc)}; line skipped")
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                errors.append(f"{where}: invalid JSON ({exc.msg} at column {exc.colno})")
                continue
            doc = _json_document(obj, where)
            if isinstance(doc, str):
                errors.append(doc)
                continue
            yield doc
        if documents == 0:
            warnings.append(f"{path}: {'empty file' if lineno == 0 else 'only blank lines'}, no documents")


def _front_matter(text: str) -> tuple[dict[str, Any], str]:
    import yaml

    if text.startswith("---\n"):
        end = text.find("\n---", 4)
        if end != -1:
            meta = yaml.safe_load(text[4:end])
            if meta is None:
                meta = {}
            if not isinstance(meta, dict):
                raise ValueError(f"front matter must be a mapping of fields, not {_kind(meta)}")
            return meta, text[end + 4 :].lstrip("\n")
    return {}, text


def _text_document(path: Path, root: Path, errors: list[str], limit: int) -> Iterable[Document]:
    """A Markdown or text file is one document: any problem skips the file, naming it (and the line)."""
    size = path.stat().st_size
    if size > limit:
        errors.append(f"{path}: {_mb(size)}, over the {_mb(limit)} document limit (max_document_mb, "
                      "RAGATE_MAX_DOCUMENT_MB); file skipped unread")
        return
    data = path.read_bytes()
    if problem := _sniff(data[:SNIFF_BYTES]):
        errors.append(f"{path}: {problem}; file skipped")
        return
    data = data.removeprefix(_UTF8_BOM)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        errors.append(f"{path}:{line}: {_not_utf8(data, exc)}; file skipped")
        return
    if (nul := text.find("\x00")) != -1:
        line = text.count("\n", 0, nul) + 1
        errors.append(f"{path}:{line}: a NUL character: binary data, not text; file skipped")
        return
    text = text.replace("\r\n", "\n")  # Windows line ends: the front matter fence is "---\n"
    try:
        meta, body = _front_matter(text)
    except Exception as exc:
        errors.append(f"{path}: invalid front matter ({exc})")
        return
    if not body.strip():
        errors.append(f"{path}: empty document")
        return
    rel = path.relative_to(root) if root.is_dir() else Path(path.name)
    raw_id = meta.pop("id", rel.with_suffix("").as_posix())
    # YAML reads `id: 2024` as a number: any scalar is taken as written.
    if isinstance(raw_id, bool) or not isinstance(raw_id, (str, int, float)):
        errors.append(f"{path}: front matter 'id' must be a string, not {_kind(raw_id)}")
        return
    doc_id = str(raw_id).strip()
    if problem := _text_problem(doc_id, "id") or _id_problem(doc_id):
        errors.append(f"{path}: front matter {problem.removeprefix('field ')}")
        return
    title = meta.pop("assetName", None) or next(
        (ln.lstrip("# ").strip() for ln in body.splitlines() if ln.startswith("#")), path.stem)
    asset_id = meta.pop("assetId", doc_id)
    for key, value in (("assetName", title), ("assetId", asset_id)):
        if isinstance(value, (dict, list)):
            errors.append(f"{path}: front matter '{key}' must be a string, not {_kind(value)}")
            return
    yield Document(id=doc_id, content=body, assetId=str(asset_id), assetName=str(title), metadata=meta,
                   source=str(path))


def read_documents(paths: Path | Sequence[Path], *, max_document_mb: float | None = None,
                   warnings: list[str] | None = None) -> tuple[list[Document], list[str]]:
    """Every document under `paths` (files or folders, as a shell glob gives them), with the errors that
    named a file or line (and, into `warnings`, folders that held no document). A path that does not
    exist, or a file of a type ragate does not read, refuses them all before anything is read: a typo
    in one of several paths must not ingest the others half-way. A file given twice is read once."""
    errors: list[str] = []
    warnings = [] if warnings is None else warnings
    limit = max_document_bytes(max_document_mb)
    roots = [Path(paths)] if isinstance(paths, (str, Path)) else [Path(p) for p in paths]
    if not roots:
        raise IngestError("no file or folder given")
    for path in roots:
        if not path.exists():
            raise IngestError(f"{path}: no such file or folder")
        if path.is_file() and path.suffix.lower() not in SUPPORTED_SUFFIXES:
            raise IngestError(f"{path}: unsupported file type (use {', '.join(SUPPORTED_SUFFIXES)})")
    files: dict[Path, tuple[Path, Path]] = {}  # by resolved path: (the file as named, the root it was found under)
    for path in roots:
        found = sorted(p for p in path.rglob("*") if p.is_file() and p.suffix.lower() in SUPPORTED_SUFFIXES) \
            if path.is_dir() else [path]
        if path.is_dir() and not found:
            warnings.append(f"{path}: no {', '.join(SUPPORTED_SUFFIXES)} files in this folder")
        for f in found:
            files.setdefault(f.resolve(), (f, path))
    docs: list[Document] = []
    seen: dict[str, str] = {}
    for f, root in files.values():
        reader = _jsonl_documents(f, errors, warnings, limit) if f.suffix.lower() == ".jsonl" else \
            _text_document(f, root, errors, limit)
        try:
            for doc in reader:
                if doc.id in seen:
                    errors.append(f"{doc.source}: duplicate id {doc.id!r} (first seen at {seen[doc.id]}); skipped")
                    continue
                seen[doc.id] = doc.source
                docs.append(doc)
        except OSError as exc:  # unreadable (permissions, a file that vanished mid-walk)
            errors.append(f"{f}: cannot be read ({exc.strerror or exc}); file skipped")
    return docs, errors


# --- chunking ------------------------------------------------------------------------------


def _cut(piece: str, max_chars: int) -> list[str]:
    """`piece` in parts of at most `max_chars`, cut at a space when one is in the second half."""
    parts = []
    while len(piece) > max_chars:
        at = piece.rfind(" ", max_chars // 2, max_chars + 1)
        at = at if at > 0 else max_chars
        parts.append(piece[:at])
        piece = piece[at:].lstrip(" ")
    return [*parts, piece] if piece else parts


def chunk_text(text: str, chunk_tokens: int = CHUNK_TOKENS, overlap_tokens: int = OVERLAP_TOKENS) -> list[str]:
    """Sentence-aware chunks of about `chunk_tokens`; each chunk repeats the previous chunk's last
    sentences up to `overlap_tokens`. A sentence longer than a chunk is cut at word boundaries, and
    text without spaces by characters (at most MAX_CHARS_PER_WORD per word of the budget).
    Line breaks between sentences are kept, so titles and bullets stay on their own lines."""
    max_words = max(1, int(chunk_tokens / TOKENS_PER_WORD))
    overlap_words = int(overlap_tokens / TOKENS_PER_WORD)
    max_chars = max_words * MAX_CHARS_PER_WORD

    def cost(s: str) -> int:  # words, unless the words are so long that characters say more
        return max(len(s.split()), -(-len(s) // MAX_CHARS_PER_WORD))

    sentences: list[tuple[int, str, int]] = []  # (line number, sentence, cost)
    for lineno, line in enumerate(text.splitlines()):
        for s in split_sentences(line):
            ws = s.split()
            for i in range(0, len(ws), max_words):
                sentences.extend((lineno, part, cost(part)) for part in _cut(" ".join(ws[i : i + max_words]), max_chars))
    chunks: list[list[tuple[int, str, int]]] = []
    current: list[tuple[int, str, int]] = []
    size = 0
    for item in sentences:
        n = item[2]
        if current and size + n > max_words:
            chunks.append(current)
            carry: list[tuple[int, str, int]] = []
            carried = 0
            for prev in reversed(current):
                if carried + prev[2] > overlap_words:
                    break
                carry.insert(0, prev)
                carried += prev[2]
            # The overlap must still leave room for the sentence that opens the new chunk.
            while carry and carried + n > max_words:
                carried -= carry.pop(0)[2]
            current, size = carry, carried
        current.append(item)
        size += n
    if current:
        chunks.append(current)
    return [_join_lines(c) for c in chunks]


def _join_lines(sentences: list[tuple[int, str, int]]) -> str:
    out = ""
    for i, (lineno, s, _) in enumerate(sentences):
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
    """One chunk with the payload the engine stores (vectors are added by the caller). The content
    hash covers the chunk's position too: the stored hashes of a document equal the new ones only if
    every position holds the same text, so two identical chunks, or two chunks that swapped places,
    never pass for an unchanged document."""
    digest = hashlib.sha256(json.dumps([PAYLOAD_SCHEMA, tenant, doc.id, doc.assetId, doc.assetName, header, index, piece,
                                        meta], sort_keys=True, default=str).encode()).hexdigest()
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


def _check_date(value: Any) -> str | None:
    """Why metadata.date is not a date the engine's date filters can match (None: it is)."""
    if not isinstance(value, str):
        return f"must be an ISO date string (YYYY-MM-DD), not {_kind(value)}"
    if _ISO_DATE.fullmatch(value.strip()):
        try:
            datetime.fromisoformat(value.strip())
            return None
        except ValueError:
            pass
    return (f"{value[:40]!r} is not a date (use YYYY-MM-DD or an ISO 8601 date-time; a year or a month "
            "alone belongs in metadata.version)")


def _normalise_metadata(doc: Document, tenant: str, defaults: dict[str, Any], report: IngestReport) -> dict[str, Any] | None:
    # Front matter may hold YAML dates and other non-JSON values: store their text form.
    meta = json.loads(json.dumps(doc.metadata, default=str))
    where = f"{doc.source}: metadata"
    claimed = meta.pop(TENANT_FIELD, None)
    if claimed is not None and claimed != tenant:
        report.warnings.append(f"{doc.source}: metadata claims {TENANT_FIELD}={claimed!r}; stored under the ingesting tenant {tenant!r}")
    approved = _as_bool(meta.get("isApprovedForAI", defaults["isApprovedForAI"]))
    if approved is None:
        report.errors.append(f"{where}.isApprovedForAI must be true or false (id {doc.id!r})")
        return None
    status = meta.get("status", defaults["status"])
    if not isinstance(status, str) or not status.strip():
        report.errors.append(f"{where}.status must be a non-empty string (id {doc.id!r})")
        return None
    for key in SCALAR_METADATA:
        if isinstance(meta.get(key), (dict, list)):
            report.errors.append(f"{where}.{key} must be a string, not {_kind(meta[key])} (id {doc.id!r})")
            return None
    if meta.get("date") not in (None, ""):
        if problem := _check_date(meta["date"]):
            report.errors.append(f"{where}.date {problem} (id {doc.id!r})")
            return None
        meta["date"] = meta["date"].strip()
    meta["isApprovedForAI"] = approved
    meta["status"] = status.strip().casefold()
    if meta["status"] not in KNOWN_STATUSES:
        report.warnings.append(f"{where}.status {meta['status']!r} is not a known status; stored but never served: "
                               f"only {' and '.join(APPROVED_STATUSES)} are (id {doc.id!r})")
    return meta


# One pass in order (check, read, chunk, embed, write in batches, report): each step is a function of its own;
# what stays here is their order and the accounting of bad input, which must see every step.
def ingest_path(path: str | Path | Sequence[str | Path], *, collection: str, tenant: str, context: Context | None = None,
                default_status: str = "ready", default_approved: bool = False, strict: bool = False,
                progress: bool = False, max_document_mb: float | None = None,
                on_written: Callable[[list[str]], None] | None = None) -> IngestReport:
    """Ingest a file or folder, or several (`read_documents`), for `tenant`. Bad input is reported in the report's errors and
    skipped (`strict`: IngestError before anything is written). `on_written(doc_ids)` is called
    after each batch of documents is written: the engine has them in its write-ahead log, and they
    survive the process dying from then on. A failure of the embedder or the engine raises
    IngestWriteError."""
    if not tenant or not tenant.strip():
        raise IngestError("a tenant is required (--tenant): documents are always stored under the ingesting tenant")
    ctx = context or Context()
    policy = load_policy(ctx.policy_path)
    report = IngestReport(collection=collection, tenant=tenant)
    docs, report.errors = read_documents(path, max_document_mb=max_document_mb, warnings=report.warnings)
    defaults = {"status": default_status, "isApprovedForAI": default_approved}
    prepared = [(doc, meta) for doc in docs if (meta := _normalise_metadata(doc, tenant, defaults, report)) is not None]
    report.documents_seen = len(docs)
    if strict and report.errors:
        raise IngestError("batch rejected, nothing written:\n  " + "\n  ".join(report.errors))

    res = get_resources(ctx)
    analyzer = get_analyzer(policy)
    markers, default_lang = policy.languages.markers, policy.languages.default
    languages = {doc.id: detect_language(doc.content, markers, default_lang) for doc, _ in prepared}
    corpus = corpus_language([(languages[doc.id], len(doc.content)) for doc, _ in prepared],
                             policy.languages.monolingual_share)
    manifest = res.index.manifest(collection)
    if manifest is not None:
        model = collection_model(ctx, collection, manifest)
        if manifest.get("language") not in (None, "mixed") and corpus not in (None, manifest["language"]):
            report.warnings.append(
                f"collection '{collection}' is embedded with {model}, chosen for {manifest['language']} text; these "
                f"documents are {corpus}: they are searched less well by meaning. Re-embed it with the multilingual "
                f"model: ragate reembed --collection {collection} --embedding-model {MULTILINGUAL_MODEL}")
    else:
        model = model_for_language(corpus) if is_auto(ctx.embedding_model) else ctx.embedding_model.strip()
    embeddings = embeddings_named(ctx, model)
    report.embedding_model = model
    dims = len(embeddings.embed_query("dimension probe"))
    res.index.ensure_collection(collection, dims, model, language=corpus)

    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=len(prepared), unit="doc", desc=f"ingest {collection}")
    pending: list[tuple[Document, list[ChunkRecord]]] = []  # changed documents waiting for their vectors

    position = {doc.id: i for i, (doc, _) in enumerate(prepared)}

    def failed(step: str, doc: Document, exc: Exception, unwritten: list[Document]) -> IngestWriteError:
        # Not written: `unwritten` (the rest of the batch) and every document not reached yet.
        reached = max([position[doc.id]] + [position[d.id] for d, _ in pending])
        ids = list(dict.fromkeys([d.id for d in unwritten] + [d.id for d, _ in prepared[reached + 1 :]]))
        return IngestWriteError(
            f"{step} failed at {doc.source} (id {doc.id!r}): {type(exc).__name__}: {str(exc).strip()[:300]}\n"
            f"{report.documents_written} documents were written before it, each whole; {len(ids)} were not written "
            "(none of them in part). Run the same ingest again to write them: written documents are skipped as "
            "unchanged.", report, ids)

    last_flush = [time.monotonic()]

    def flush(doc: Document | None, every_s: float = FLUSH_INTERVAL_S) -> None:
        # A write the engine has returned from is in its write-ahead log: it survives the process
        # dying (a crash, kill -9). Its files are flushed every few seconds and at the end, as a
        # Qdrant server does; a flush per batch would double the time of an ingest on disk.
        if time.monotonic() - last_flush[0] < every_s:
            return
        try:
            res.index.flush()
        except Exception as exc:
            raise failed("flushing the vector store", doc or prepared[-1][0], exc, []) from exc
        last_flush[0] = time.monotonic()

    def write_pending() -> None:
        # One embedding call for several documents: a remote provider gets a few large requests
        # instead of one per document. A document's chunks are always in one call, so a failure
        # here writes none of this batch and leaves the earlier batches written.
        texts = [f"{r.header}\n{r.text}" for _, records in pending for r in records]
        try:
            vectors = iter(embeddings.embed_documents(texts))
        except Exception as exc:
            raise failed("embedding", pending[0][0], exc, [d for d, _ in pending]) from exc
        for i, (doc, records) in enumerate(pending):
            for r in records:
                r.dense = next(vectors)
            try:
                # One engine operation per document (all its chunks): it is stored whole or not at all.
                res.index.replace_document(collection, tenant, doc.id, records)
            except Exception as exc:
                raise failed("writing to the vector store", doc, exc, [d for d, _ in pending[i:]]) from exc
            report.documents_written += 1
            report.chunks_written += len(records)
        flush(pending[-1][0])
        if bar:
            bar.update(len(pending))
        if on_written:
            on_written([doc.id for doc, _ in pending])
        pending.clear()

    for doc, meta in prepared:
        language = languages[doc.id]
        header = header_for(doc)
        content = doc.content
        if isinstance(meta.get("performance_snapshot"), dict):
            content = f"{content.rstrip()}\n{render_performance_snapshot(meta['performance_snapshot'])}"
        pieces = chunk_text(content, ctx.chunk_tokens, ctx.overlap_tokens)
        records = [chunk_record(tenant, doc, meta, header, language, i, piece) for i, piece in enumerate(pieces)]
        try:
            stored = res.index.existing_hashes(collection, tenant, doc.id)
        except Exception as exc:
            raise failed("reading the stored version", doc, exc, [d for d, _ in pending] + [doc]) from exc
        if stored == {r.content_hash for r in records}:
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
    if report.documents_written:
        flush(None, every_s=0)
        try:
            report.index_build_s = res.index.build_search_index(collection)
        except Exception as exc:  # written and durable: only searches stay slower, and the report says why
            report.warnings.append(f"the search index of '{collection}' was not built ({type(exc).__name__}: "
                                   f"{str(exc)[:200]}); searches scan every chunk until the next ingest builds it")
    if bar:
        bar.close()
    return report
