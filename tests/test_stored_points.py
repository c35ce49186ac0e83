"""The embedded index answers rerank's reads (`features`, `fetch`) from the points it keeps in memory
(graph/providers/vectorstore.py `StoredPoints`): the same answers as the engine's own queries, behind the
same gates, and never a point as it was before a write."""

from __future__ import annotations

import random

import numpy as np
import pytest

from graph.providers.vectorstore import ChunkRecord, EdgeVectorIndex, StoredPoints, payload_test, point_id

DIMS = 8
TENANTS = ("acme", "globex")


def _record(doc_id: str, index: int, rng: random.Random, **payload) -> ChunkRecord:
    terms = sorted(rng.sample(range(1, 60), rng.randint(0, 12)))
    fields = {"docId": doc_id, "chunk_index": index, "text": f"{doc_id} chunk {index}", "header": doc_id,
              "status": "approved", "isApprovedForAI": "true", "docType": "bi_note", "year": 2025,
              "language": "pt", "metadata": {"source": "test"}, **payload}
    return ChunkRecord(doc_id=doc_id, chunk_index=index, text=fields["text"], header=doc_id, payload=fields,
                       content_hash=f"{doc_id}-{index}", dense=[rng.uniform(-1, 1) for _ in range(DIMS)],
                       sparse=(terms, [1.0] * len(terms)))


@pytest.fixture
def index(tmp_path):
    """A collection of both tenants' chunks with every kind of payload a flag or a gate reads."""
    rng = random.Random(7)
    idx = EdgeVectorIndex(tmp_path)
    idx.ensure_collection("docs", DIMS, "test/model", "pt")
    variants = [{}, {"status": "draft"}, {"isApprovedForAI": "false"}, {"docType": "playbook"}, {"year": 2026},
                {"language": "en"}, {"docType": ["playbook", "bi_note"]}, {"year": "2026"}, {"status": "ready"}]
    for tenant in TENANTS:
        for d, variant in enumerate(variants):
            doc = f"{tenant}-doc-{d}"
            idx.replace_document("docs", tenant, doc, [_record(doc, i, rng, **variant) for i in range(3)])
    yield idx
    idx.close()


def _ids(tenant: str, docs=range(9), chunks=range(3)) -> list[str]:
    return [str(point_id(tenant, f"{tenant}-doc-{d}", i)) for d in docs for i in chunks]


FLAGS = {"recency": {"year": 2026}, "playbook": {"docType": ["playbook"]}, "other_language": {"language": ["en", "es"]}}


@pytest.mark.parametrize("tenant", TENANTS)
def test_features_from_memory_are_the_engines(index, tenant):
    shard = index._shard("docs")
    rng = np.random.default_rng(3)
    asked = _ids("acme") + _ids("globex") + ["12345", "not-an-id"]
    for _ in range(5):
        query = rng.uniform(-1, 1, DIMS).tolist()
        terms = sorted(rng.choice(range(1, 60), 8, replace=False).tolist())
        kept = index.features("docs", tenant=tenant, point_ids=asked, similarity_to=query, match_terms=terms, flags=FLAGS)
        engine = index._engine_features(shard, tenant, [int(i) for i in asked if i.isdigit()], query, terms, FLAGS)
        assert set(kept) == set(engine) == {i for i in _ids(tenant) if i in engine}
        assert set(kept) == set(_ids(tenant, docs=[0, 3, 4, 5, 6, 7, 8]))  # not the draft, not the unapproved
        for pid, features in kept.items():
            assert features.matched_terms == engine[pid].matched_terms
            assert sorted(features.flags) == sorted(engine[pid].flags)
            assert features.similarity == pytest.approx(engine[pid].similarity, abs=1e-5)
    # The flags as the engine matches them: a listed stored value counts, "2026" is not 2026.
    flags = kept[_ids(tenant, docs=[6])[0]].flags
    assert "playbook" in flags and "recency" not in kept[_ids(tenant, docs=[7])[0]].flags


def test_terms_alone_and_a_date_range_the_engine_evaluates(index):
    shard = index._shard("docs")
    asked = _ids("acme")
    terms = list(range(1, 60, 3))
    alone = index.features("docs", tenant="acme", point_ids=asked, similarity_to=None, match_terms=terms)
    engine = index._engine_features(shard, "acme", [int(i) for i in asked], None, terms, None)
    assert {k: v.matched_terms for k, v in alone.items() if v.matched_terms} == \
           {k: v.matched_terms for k, v in engine.items()}
    assert all(v.similarity is None and not v.flags for v in alone.values())
    ranged = {"recent": {"date": {"gte": "2026-01-01T00:00:00Z"}}}
    query = [0.5] * DIMS
    assert payload_test(ranged["recent"]) is None
    found = index.features("docs", tenant="acme", point_ids=asked, similarity_to=query, match_terms=terms, flags=ranged)
    assert found.keys() == index._engine_features(shard, "acme", [int(i) for i in asked], query, terms, ranged).keys()


def test_a_document_written_again_is_read_again(index):
    pid = _ids("acme", docs=[0], chunks=[0])[0]
    before = index.fetch("docs", "acme", [pid])[pid]
    assert before["text"] == "acme-doc-0 chunk 0" and index.features(
        "docs", tenant="acme", point_ids=[pid], similarity_to=[1.0] * DIMS, match_terms=[99])[pid].matched_terms == []
    record = _record("acme-doc-0", 0, random.Random(1), text="rewritten", year=2026)
    record.sparse = ([99], [1.0])
    index.replace_document("docs", "acme", "acme-doc-0", [record])
    assert index.fetch("docs", "acme", [pid])[pid]["text"] == "rewritten"
    now = index.features("docs", tenant="acme", point_ids=[pid], similarity_to=[1.0] * DIMS, match_terms=[99],
                         flags=FLAGS)[pid]
    assert now.matched_terms == [99] and now.flags == ["recency"]
    index.replace_document("docs", "acme", "acme-doc-0", [_record("acme-doc-0", 0, random.Random(1), status="draft")])
    assert index.fetch("docs", "acme", [pid]) == {}
    assert index.features("docs", tenant="acme", point_ids=[pid], similarity_to=[1.0] * DIMS, match_terms=[1]) == {}


def test_fetch_hands_out_copies_and_the_fields_asked_for(index):
    pid = _ids("acme", docs=[0], chunks=[1])[0]
    first = index.fetch("docs", "acme", [pid])[pid]
    first["metadata"]["source"] = "changed by a caller"
    first["text"] = "changed too"
    again = index.fetch("docs", "acme", [pid])[pid]
    assert again["metadata"] == {"source": "test"} and again["text"] == "acme-doc-0 chunk 1"
    assert set(index.fetch("docs", "acme", [pid], fields=["text"])[pid]) == {"text", "brandId", "isApprovedForAI",
                                                                             "status"}
    assert index.fetch("docs", "globex", [pid]) == {}


def test_a_dropped_or_closed_collection_is_forgotten(index, tmp_path):
    asked = _ids("acme")
    index.fetch("docs", "acme", asked)
    assert len(index.stored._points) == len(asked)
    index.close()
    assert not index.stored._points
    index.fetch("docs", "acme", asked)
    index.drop_collection("docs")
    assert not index.stored._points and index.fetch("docs", "acme", asked) == {}


def test_the_least_recently_used_points_go_first():
    class Shard:
        def retrieve(self, ids, **_):
            class Record:
                def __init__(self, pid):
                    self.id, self.payload, self.vector = pid, {"n": pid}, {}
            return [Record(pid) for pid in ids]

    kept = StoredPoints(capacity=3)
    kept.get(Shard(), "c", [1, 2, 3])
    kept.get(Shard(), "c", [1])  # used again: 2 is now the oldest
    kept.get(Shard(), "c", [4])
    assert [pid for _, pid in kept._points] == [3, 1, 4]
    assert kept.get(Shard(), "c", [3])[3].vector is None and kept.get(Shard(), "c", [3])[3].terms.size == 0


def test_reads_of_kept_points_run_in_the_callers_thread(index, monkeypatch):
    from graph.providers import resources

    asked = _ids("acme", docs=[0, 3])
    assert not index.answers_from_memory("docs", asked)  # nothing read yet
    bounded = resources.BoundedIndex(index, 5.0)
    bounded.fetch("docs", "acme", asked)  # read through the pool, under the deadline
    assert index.answers_from_memory("docs", asked) and index.answers_from_memory("docs", asked, FLAGS)
    assert not index.answers_from_memory("docs", asked + _ids("acme", docs=[4]))
    assert not index.answers_from_memory("docs", asked, {"recent": {"date": {"gte": "2026-01-01T00:00:00Z"}}})
    assert not index.answers_from_memory("elsewhere", asked)

    def no_pool():
        raise AssertionError("a read of kept points went to the engine's pool")

    monkeypatch.setattr(resources, "_engine_pool", no_pool)
    assert len(bounded.fetch("docs", "acme", asked)) == len(asked)
    found = bounded.features("docs", tenant="acme", point_ids=asked, similarity_to=[0.1] * DIMS, match_terms=[1, 2],
                             flags=FLAGS)
    assert set(found) == set(asked)
    with pytest.raises(AssertionError, match="went to the engine's pool"):
        bounded.fetch("docs", "acme", _ids("acme", docs=[4]))


def test_a_condition_on_a_field_holding_a_mapping_or_a_list_of_lists_is_not_met():
    test = payload_test({"docType": ["playbook"]})
    assert test({"docType": "playbook"}) and test({"docType": ["x", "playbook"]})
    assert not test({"docType": {"playbook": 1}}) and not test({"docType": [["playbook"]]}) and not test({})
    assert payload_test({"year": 2026})({"year": 2026}) and not payload_test({"year": 2026})({"year": "2026"})
    assert not payload_test({"flag": 1})({"flag": True})


def test_a_read_that_spans_a_write_keeps_nothing():
    """The engine answered a read before a write changed the points; the write forgot the collection while the read
    was under way: what the read saw is not kept for later reads."""
    kept = StoredPoints()

    class WrittenMeanwhile:
        def __init__(self, forget):
            self.forget = forget

        def retrieve(self, ids, **_):
            class Record:
                def __init__(self, pid):
                    self.id, self.payload, self.vector = pid, {"text": "before the write"}, {}
            records = [Record(pid) for pid in ids]
            self.forget()  # the write lands while the read is under way
            return records

    assert kept.get(WrittenMeanwhile(lambda: kept.forget("c")), "c", [1, 2])[1].payload["text"] == "before the write"
    assert not kept.holds("c", [1]) and not kept._points
    kept.get(WrittenMeanwhile(lambda: kept.forget()), "c", [1])  # the index closed meanwhile
    assert not kept._points
    kept.get(WrittenMeanwhile(lambda: kept.forget("other")), "c", [1])  # another collection's write
    assert kept.holds("c", [1])
