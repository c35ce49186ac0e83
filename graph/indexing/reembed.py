"""Re-embed a collection with another embedding model, in place: `ragate reembed --collection C
--embedding-model M` (M `auto`: the model its corpus language calls for).

Every stored chunk (all tenants) keeps its text, payload and lexical vector; only its dense vector is
computed again, by the new model. The chunks are written into a new collection beside the old one,
which is then swapped in (graph/providers/vectorstore.py, `replace_collection`): until the swap the old
collection answers, and a crash leaves one of the two whole. Needs the embedded engine (a Qdrant server
keeps its collections by name: ingest into a new one with `--embedding-model` and route to it).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from graph.algorithms.text import corpus_language
from graph.context import Context
from graph.policy import load_policy
from graph.providers.embeddings import is_auto, model_for_language
from graph.providers.resources import embeddings_named, vector_index_for
from graph.providers.vectorstore import ChunkRecord, CollectionError, EdgeVectorIndex

EMBED_BATCH_CHUNKS = 128


@dataclass
class ReembedReport:
    collection: str
    old_model: str
    new_model: str
    language: str | None
    chunks: int = 0
    documents: int = 0
    seconds: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return self.__dict__.copy()


def reembed_collection(collection: str, *, context: Context | None = None, progress: bool = False) -> ReembedReport:
    """Re-embed every chunk of `collection` with `context.embedding_model` (`auto`: the model for the
    stored chunks' language). CollectionError when the collection does not exist, is not in the
    embedded engine, or already uses that model."""
    ctx = context or Context()
    index = vector_index_for(ctx)
    if not isinstance(index, EdgeVectorIndex):
        raise CollectionError("reembed works on the embedded engine; on a Qdrant server, ingest into a new collection "
                              "with --embedding-model and route the policy to it")
    manifest = index.manifest(collection)
    if manifest is None:
        raise CollectionError(f"collection '{collection}' does not exist in {index.root}")
    started = time.perf_counter()
    chunks = list(index.stored_chunks(collection))
    policy = load_policy(ctx.policy_path)
    language = corpus_language([(p.get("language") or policy.languages.default, len(p.get("text") or ""))
                                for _, p, _ in chunks], policy.languages.monolingual_share)
    model = model_for_language(language) if is_auto(ctx.embedding_model) else ctx.embedding_model.strip()
    report = ReembedReport(collection=collection, old_model=manifest["embedding_model"], new_model=model,
                           language=language)
    if model == manifest["embedding_model"]:
        raise CollectionError(f"collection '{collection}' is already embedded with {model}")
    embeddings = embeddings_named(ctx, model)
    dims = len(embeddings.embed_query("dimension probe"))
    staging = f"{collection}.reembed"
    index.drop_collection(staging)  # a re-embedding cut off earlier
    index.ensure_collection(staging, dims, model, language=language)

    documents: dict[tuple[str, str], list[ChunkRecord]] = {}
    for tenant, payload, lexical in chunks:
        record = ChunkRecord(doc_id=payload.get("docId", ""), chunk_index=int(payload.get("chunk_index", 0)),
                             text=payload.get("text", ""), header=payload.get("header", ""), payload=payload,
                             content_hash=payload.get("content_hash", ""), sparse=lexical)
        documents.setdefault((tenant, record.doc_id), []).append(record)
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=len(chunks), unit="chunk", desc=f"reembed {collection}")
    pending: list[tuple[str, str, list[ChunkRecord]]] = []

    def write() -> None:
        records = [r for _, _, rs in pending for r in rs]
        for record, vector in zip(records, embeddings.embed_documents([f"{r.header}\n{r.text}" for r in records])):
            record.dense = vector
        for tenant, doc_id, rs in pending:
            index.replace_document(staging, tenant, doc_id, sorted(rs, key=lambda r: r.chunk_index))
        if bar:
            bar.update(len(records))
        pending.clear()

    for (tenant, doc_id), records in documents.items():
        pending.append((tenant, doc_id, records))
        if sum(len(rs) for _, _, rs in pending) >= EMBED_BATCH_CHUNKS:
            write()
    if pending:
        write()
    if bar:
        bar.close()
    index.flush()
    index.build_search_index(staging)
    index.replace_collection(collection, staging)
    report.chunks, report.documents = len(chunks), len(documents)
    report.seconds = round(time.perf_counter() - started, 2)
    return report
