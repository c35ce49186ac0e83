"""A benchmark corpus as ragate documents, ingested with `graph.indexing.ingest.ingest_path`.

The collection is named after the dataset and a hash of (corpus file content, chunk size, overlap,
embedding model, this converter's version), under tenant "eval": a second run over the same corpus
finds its collection, every document unchanged (ingest is idempotent) and every vector cached.
"""

from __future__ import annotations

import hashlib
import json
import tempfile
import time
from pathlib import Path
from typing import Any

from graph.context import Context
from graph.evaluation.datasets import Dataset, EvalDocument
from graph.indexing.ingest import ingest_path
from graph.providers.resources import get_resources

EVAL_TENANT = "eval"
# Bumped when `to_ragate` changes what is stored, so that an old collection is not reused.
CONVERTER_VERSION = 2  # 2: `auto` embedding models (each collection's own)


def collection_name(dataset: Dataset, ctx: Context) -> str:
    h = hashlib.sha256()
    for path in dataset.corpus_files:
        with open(path, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
    h.update(f"\x1f{ctx.chunk_tokens}\x1f{ctx.overlap_tokens}\x1f{ctx.embedding_model}\x1f{CONVERTER_VERSION}".encode())
    return f"eval-{dataset.name}-{h.hexdigest()[:12]}"


def to_ragate(doc: EvalDocument, doc_type: str) -> dict[str, Any] | None:
    """One JSONL line of `ragate ingest` (None for a document without text)."""
    if not doc.text.strip():
        return None
    meta = {"docType": doc_type, "status": "approved", "isApprovedForAI": True}
    for key in ("date", "sourceUrl", "source", "category"):
        if doc.metadata.get(key):
            meta[key] = doc.metadata[key]
    return {"id": doc.id, "assetId": doc.id, "assetName": doc.title or doc.id, "content": doc.text, "metadata": meta}


def ingest_dataset(dataset: Dataset, ctx: Context, *, progress: bool = True) -> dict[str, Any]:
    """Ingest (or find already ingested) the dataset's documents; the ingest report as a dict."""
    name = collection_name(dataset, ctx)
    lines = [line for d in dataset.documents if (line := to_ragate(d, dataset.doc_type)) is not None]
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="ragate-eval-") as tmp:
        path = Path(tmp) / f"{dataset.name}.jsonl"
        with path.open("w", encoding="utf-8") as fh:
            for line in lines:
                fh.write(json.dumps(line, ensure_ascii=False) + "\n")
        report = ingest_path(path, collection=name, tenant=EVAL_TENANT, context=ctx, default_status="approved",
                             default_approved=True, progress=progress)
    seconds = time.perf_counter() - started
    chunks = get_resources(ctx).index.count(name)
    return {
        "collection": name,
        "tenant": EVAL_TENANT,
        "home": str(ctx.home_path),
        "embedding_model": report.embedding_model,
        "documents": len(dataset.documents),
        "documents_skipped_empty": len(dataset.documents) - len(lines),
        "documents_written": report.documents_written,
        "documents_unchanged": report.documents_unchanged,
        "documents_rejected": len(report.errors),
        "errors": report.errors[:20],
        "chunks": chunks,
        "chunks_written": report.chunks_written,
        "seconds": round(seconds, 2),
        # Embedding throughput of this run; null when everything was already there.
        "chunks_per_s": round(report.chunks_written / seconds, 1) if report.chunks_written and seconds > 0 else None,
        "reused": report.documents_written == 0 and report.documents_unchanged > 0,
        "chunk_tokens": ctx.chunk_tokens,
        "overlap_tokens": ctx.overlap_tokens,
    }
