"""The embedded index answers rerank's reads (`features`, `fetch`) from the points it keeps in memory
(graph/providers/vectorstore.py `StoredPoints`): the same answers as the engine's own queries, behind the
same gates, and never a point as it was before a write."""

from __future__ import annotations

import random
import threading
import time

import numpy as np
import pytest
from qdrant_edge import SparseVector

from graph.context import Context
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


def engine_features(index, tenant, point_ids, similarity_to, match_terms, flags=None):
    """`features` as the engine alone answers them: asked with nothing kept in memory (the points kept are set
    aside meanwhile, and put back)."""
    kept, index.stored = index.stored, StoredPoints()
    try:
        return index.features("docs", tenant=tenant, point_ids=point_ids, similarity_to=similarity_to,
                              match_terms=match_terms, flags=flags)
    finally:
        index.stored = kept


@pytest.mark.parametrize("tenant", TENANTS)
def test_features_from_memory_are_the_engines(index, tenant):
    rng = np.random.default_rng(3)
    asked = _ids("acme") + _ids("globex") + ["12345", "not-an-id"]
    index.fetch("docs", tenant, asked)  # every point asked is now kept in memory, both tenants' and the gated-out
    for _ in range(5):
        query = rng.uniform(-1, 1, DIMS).tolist()
        terms = sorted(rng.choice(range(1, 60), 8, replace=False).tolist())
        kept = index.features("docs", tenant=tenant, point_ids=asked, similarity_to=query, match_terms=terms, flags=FLAGS)
        engine = engine_features(index, tenant, asked, query, terms, FLAGS)
        assert set(kept) == set(engine) == {i for i in _ids(tenant) if i in engine}
        assert set(kept) == set(_ids(tenant, docs=[0, 3, 4, 5, 6, 7, 8]))  # not the draft, not the unapproved
        for pid, features in kept.items():
            assert features.matched_terms == engine[pid].matched_terms
            assert sorted(features.flags) == sorted(engine[pid].flags)
            assert features.similarity == pytest.approx(engine[pid].similarity, abs=1e-5)
    # The flags as the engine matches them: a listed stored value counts, "2026" is not 2026.
    flags = kept[_ids(tenant, docs=[6])[0]].flags
    assert "playbook" in flags and "recency" not in kept[_ids(tenant, docs=[7])[0]].flags


@pytest.mark.parametrize("tenant", TENANTS)
def test_kept_and_new_candidates_together_are_the_engines_and_features_reads_nothing(index, tenant):
    """Candidates rerank fetched before are answered from memory, the others by the engine, in one answer that is
    the engine's for them all; `features` itself keeps nothing new (only `fetch` reads points into memory)."""
    asked = _ids("acme") + _ids("globex")
    # A draft among them: kept as stored, and left out of every answer by the gates.
    index.fetch("docs", tenant, _ids(tenant, docs=[0, 3, 6]) + _ids(tenant, docs=[1], chunks=[0]))
    kept_before = set(index.stored._points)
    assert len(kept_before) == 10
    rng = np.random.default_rng(5)
    for _ in range(5):
        query = rng.uniform(-1, 1, DIMS).tolist()
        terms = sorted(rng.choice(range(1, 60), 8, replace=False).tolist())
        found = index.features("docs", tenant=tenant, point_ids=asked, similarity_to=query, match_terms=terms, flags=FLAGS)
        engine = engine_features(index, tenant, asked, query, terms, FLAGS)
        assert set(found) == set(engine) == set(_ids(tenant, docs=[0, 3, 4, 5, 6, 7, 8]))
        for pid, features in found.items():
            assert (features.matched_terms, sorted(features.flags)) == (engine[pid].matched_terms,
                                                                        sorted(engine[pid].flags)), pid
            assert features.similarity == pytest.approx(engine[pid].similarity, abs=1e-5)
        terms_only = index.features("docs", tenant=tenant, point_ids=asked, similarity_to=None, match_terms=terms)
        assert {k: v.matched_terms for k, v in terms_only.items() if v.matched_terms} == \
               {k: v.matched_terms for k, v in engine.items() if v.matched_terms}
    assert set(index.stored._points) == kept_before


def test_terms_alone_and_a_date_range_the_engine_evaluates(index):
    asked = _ids("acme")
    index.fetch("docs", "acme", asked)
    terms = list(range(1, 60, 3))
    alone = index.features("docs", tenant="acme", point_ids=asked, similarity_to=None, match_terms=terms)
    engine = engine_features(index, "acme", asked, None, terms)
    assert {k: v.matched_terms for k, v in alone.items() if v.matched_terms} == \
           {k: v.matched_terms for k, v in engine.items()}
    assert all(v.similarity is None and not v.flags for v in alone.values())
    ranged = {"recent": {"date": {"gte": "2026-01-01T00:00:00Z"}}}
    query = [0.5] * DIMS
    assert payload_test(ranged["recent"]) is None
    found = index.features("docs", tenant="acme", point_ids=asked, similarity_to=query, match_terms=terms, flags=ranged)
    assert found.keys() == engine_features(index, "acme", asked, query, terms, ranged).keys()


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
    assert kept.get(Shard(), "c", [3])[3].terms.size == 0 and kept.get(Shard(), "c", [3])[3].payload == {"n": 3}


def test_the_engine_keeps_the_gil_for_a_whole_read(index):
    """What `READS_HOLD_GIL` rests on: no other Python thread runs while the engine answers a read, so none can
    give up waiting on it. Should a qdrant-edge release the GIL, this fails, and the deadline can come back."""
    shard = index._shard("docs")
    ids = [int(i) for i in _ids("acme") + _ids("globex")]
    ticks: list[float] = []
    stop = threading.Event()

    def tick():
        while not stop.is_set():
            ticks.append(time.perf_counter())
            time.sleep(0.0001)

    ticker = threading.Thread(target=tick)
    ticker.start()
    try:
        spans = []
        while len(spans) < 5:
            time.sleep(0.002)
            start = time.perf_counter()
            for _ in range(200):  # one read is ~50 µs here: many in one call to the engine is not possible
                shard.retrieve(ids, with_payload=True, with_vector=True)
            spans.append((start, time.perf_counter()))
    finally:
        stop.set()
        ticker.join()
    # Between two reads the ticker may run, about once per switch interval (5 ms): ~6 times in a span here. A read
    # that let it run would give it a tick or more per read, 200 or more a span.
    assert all(sum(start < t < end for t in ticks) < 100 for start, end in spans)


def test_the_embedded_engines_reads_run_in_the_callers_thread(index, monkeypatch):
    from graph.providers import resources

    def no_pool():
        raise AssertionError("a read of the embedded engine went to the pool")

    monkeypatch.setattr(resources, "_engine_pool", no_pool)
    bounded = resources.bounded_index(Context(home=str(index.home), tenant="acme", provider_timeout_s=5.0), index)
    asked = _ids("acme", docs=[0, 3])
    assert len(bounded.fetch("docs", "acme", asked)) == len(asked)
    found = bounded.features("docs", tenant="acme", point_ids=asked, similarity_to=[0.1] * DIMS, match_terms=[1, 2],
                             flags={**FLAGS, "recent": {"date": {"gte": "2026-01-01T00:00:00Z"}}})
    assert set(found) == set(asked)
    dense, _ = bounded.search("docs", dense=[0.1] * DIMS, sparse=SparseVector([1, 2], [1.0, 1.0]),
                              tenant="acme", filters=None, limit=5)
    assert dense and bounded.values("docs", "acme", "docType") == ["bi_note", "playbook"]


class _SlowIndex:
    """An index whose reads wait with the GIL released (a server's client, a test double)."""

    def search(self, *args, **kwargs):
        time.sleep(2.0)
        return [], []


def test_a_read_that_lets_other_threads_run_is_given_the_deadline():
    from graph.providers import resources

    start = time.perf_counter()
    with pytest.raises(resources.EngineTimeout, match="search took longer than 0.2 s"):
        resources.BoundedIndex(_SlowIndex(), 0.2).search("docs")
    assert time.perf_counter() - start < 1.5


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
    assert not kept._points
    kept.get(WrittenMeanwhile(lambda: kept.forget()), "c", [1])  # the index closed meanwhile
    assert not kept._points
    kept.get(WrittenMeanwhile(lambda: kept.forget("other")), "c", [1])  # another collection's write
    assert ("c", 1) in kept._points
