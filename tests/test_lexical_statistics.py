"""A tenant's lexical statistics are its own (graph/providers/vectorstore.py, LEXICAL_TERMS_PER_TENANT): the IDF of
its BM25 list counts only the chunks it may be answered from, and its terms are stored in dimensions of its own, read
back as the analyzer gave them."""

from __future__ import annotations

import json
import random

import pytest
from qdrant_edge import SparseVector

from graph.providers.vectorstore import (
    LEXICAL_TERMS_PER_TENANT,
    SPARSE,
    ChunkRecord,
    EdgeVectorIndex,
    StoredPoints,
    point_id,
    tenant_term_key,
)

DIMS = 8
QUESTION = SparseVector([3, 5, 8], [1.0, 1.0, 1.0])


def _record(doc_id: str, terms: list[int], rng: random.Random, **payload) -> ChunkRecord:
    fields = {"docId": doc_id, "chunk_index": 0, "text": doc_id, "header": doc_id, "status": "approved",
              "isApprovedForAI": "true", "language": "en", **payload}
    return ChunkRecord(doc_id=doc_id, chunk_index=0, text=doc_id, header=doc_id, payload=fields,
                       content_hash=doc_id, dense=[rng.uniform(-1, 1) for _ in range(DIMS)],
                       sparse=(terms, [1.0 + 0.1 * i for i in range(len(terms))]))


def _write(index: EdgeVectorIndex, tenant: str, docs: dict[str, list[int]], rng: random.Random, **payload) -> None:
    for doc_id, terms in docs.items():
        index.replace_document("docs", tenant, doc_id, [_record(doc_id, terms, rng, **payload)])


ACME = {"a1": [3, 5, 11], "a2": [5, 8, 12], "a3": [3, 8, 13, 14], "a4": [8, 15], "a5": [3, 16]}


@pytest.fixture
def index(tmp_path):
    idx = EdgeVectorIndex(tmp_path)
    idx.ensure_collection("docs", DIMS, "test/model", "en")
    _write(idx, "acme", ACME, random.Random(1))
    yield idx
    idx.close()


def _lexical(index: EdgeVectorIndex, tenant: str = "acme") -> list[tuple[str, float]]:
    _, lexical = index.search("docs", dense=None, sparse=QUESTION, tenant=tenant, filters=None, limit=20)
    return [(h.point_id, round(h.score, 6)) for h in lexical]


def test_a_tenants_lexical_scores_do_not_move_with_what_others_store_nor_with_its_gated_chunks(index):
    alone = _lexical(index)
    assert len(alone) == 5
    # Another tenant's chunks, holding term 3 everywhere and term 8 nowhere: under collection-wide statistics term 3
    # would weigh less for acme, and term 8 more.
    _write(index, "globex", {f"g{i}": [3, 20 + i] for i in range(12)}, random.Random(2))
    assert _lexical(index) == alone
    # Nor do acme's own chunks that no answer may come from (a draft, one not approved for AI).
    _write(index, "acme", {"draft": [3, 5, 8]}, random.Random(3), status="draft")
    _write(index, "acme", {"unapproved": [5, 8]}, random.Random(4), isApprovedForAI="false")
    assert _lexical(index) == alone
    assert {pid for pid, _ in _lexical(index, "globex")} == {str(point_id("globex", f"g{i}", 0)) for i in range(12)}


def test_each_tenant_stores_its_terms_in_dimensions_of_its_own_and_reads_them_back_as_given(index):
    _write(index, "globex", {"g1": [3, 5, 11]}, random.Random(2))
    manifest = json.loads((index.root / "docs" / "ragate.json").read_text())
    assert manifest["lexical_terms"] == LEXICAL_TERMS_PER_TENANT
    shard = index._shard("docs")
    stored = {}
    for tenant, doc in (("acme", "a1"), ("globex", "g1")):
        [record] = shard.retrieve([point_id(tenant, doc, 0)], with_payload=False, with_vector=[SPARSE])
        stored[tenant] = sorted(record.vector[SPARSE].indices)
    assert stored["acme"] == sorted(t ^ tenant_term_key("acme") for t in [3, 5, 11])
    assert stored["globex"] == sorted(t ^ tenant_term_key("globex") for t in [3, 5, 11])
    assert not set(stored["acme"]) & set(stored["globex"])
    # What re-embedding reads back is what the analyzer gave, whichever the tenant.
    read_back = {payload["docId"]: sorted(terms) for _, payload, (terms, _) in index.stored_chunks("docs")}
    assert read_back == {**{d: sorted(t) for d, t in ACME.items()}, "g1": [3, 5, 11]}


@pytest.mark.parametrize("kept", [False, True], ids=["from the engine", "from memory"])
def test_features_name_the_question_terms_each_candidate_holds(index, kept):
    ids = [str(point_id("acme", d, 0)) for d in ACME]
    if kept:
        index.fetch("docs", "acme", ids)
    else:
        index.stored = StoredPoints()
    asked = [3, 8, 12, 40]
    found = index.features("docs", tenant="acme", point_ids=ids, similarity_to=[0.1] * DIMS, match_terms=asked)
    assert {pid: f.matched_terms for pid, f in found.items()} == {
        str(point_id("acme", d, 0)): [t for t in asked if t in terms] for d, terms in ACME.items()}


def test_a_collection_made_before_keeps_the_shared_dimensions(tmp_path):
    index = EdgeVectorIndex(tmp_path)
    index.ensure_collection("docs", DIMS, "test/model", "en")
    path = index.root / "docs" / "ragate.json"
    manifest = json.loads(path.read_text())
    del manifest["lexical_terms"]
    path.write_text(json.dumps(manifest))
    index.close()
    index = EdgeVectorIndex(tmp_path)
    try:
        _write(index, "acme", ACME, random.Random(1))
        [record] = index._shard("docs").retrieve([point_id("acme", "a1", 0)], with_payload=False, with_vector=[SPARSE])
        assert sorted(record.vector[SPARSE].indices) == [3, 5, 11]
        assert len(_lexical(index)) == 5
        found = index.features("docs", tenant="acme", point_ids=[str(point_id("acme", "a3", 0))],
                               similarity_to=None, match_terms=[3, 8, 9])
        assert found[str(point_id("acme", "a3", 0))].matched_terms == [3, 8]
    finally:
        index.close()
