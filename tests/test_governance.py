"""Governance: nothing unapproved, nothing draft and nothing of another tenant ever reaches any part
of the final state or the output contract; and the engine itself only returns the caller's
servable chunks."""

from __future__ import annotations

import re

import pytest
from conftest import SAMPLES, dump_state

from graph.algorithms.text import get_analyzer
from graph.output import to_output
from graph.policy import load_policy
from graph.providers.resources import get_resources
from graph.providers.vectorstore import APPROVED_STATUSES, open_index, point_id


def _sample_ids(tenant: str) -> list[str]:
    import json

    return [json.loads(line)["id"] for f in sorted((SAMPLES / tenant).glob("*.jsonl"))
            for line in f.read_text(encoding="utf-8").splitlines() if line.strip()]

# Distinctive "canary" facts of each gated document (samples/README.md). The tests check that each
# canary really is in its document and in no servable document, so a stale list cannot pass quietly.
CANARIES = {
    "acme-fin-margens-inverno-2025": ["63,8%", "57,1%", "148,30", "Vale do Itajaí", "67,8%"],
    "acme-ops-reestruturacao-cd-2026": ["140 colaboradores", "7,4 milhões", "11,2 milhões"],
    "acme-pricing-inverno-2026": ["899,90", "849,90", "649,90", "979,90", "489,90"],
    "acme-playbook-inverno-2026-rascunho": ["4,6 milhões", "140 milhões", "45% de desconto", "@lia.veste"],
    "acme-bi-2026-q2-forecast-draft": ["97,4 million", "ShopNorte"],
    "acme-social-crise-brisa-2026-rascunho": ["3.200 pares", "lote 2601", "870 mil", "239,90"],
}
BRAND_CLAIM_DOC = "acme-social-instagram-2025-q4"


def _questions_md() -> dict[str, list[str]]:
    """Every question in samples/questions.md, by section."""
    sections: dict[str, list[str]] = {}
    current = ""
    for line in (SAMPLES / "questions.md").read_text(encoding="utf-8").splitlines():
        if line.startswith("## "):
            current = line[3:].strip()
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")] if line.startswith("|") else []
        if cells and not set(cells[0]) <= set("-") and cells[0] not in ("#", "Question"):
            q = cells[1] if re.fullmatch(r"[A-Z]?\d+", cells[0]) else cells[0]
            sections.setdefault(current, []).append(q)
        m = re.match(r'^- "(.+?)"', line)
        if m:
            sections.setdefault(current, []).append(m.group(1))
    return sections


QUESTIONS = _questions_md()
ALL_QUESTIONS = [q for qs in QUESTIONS.values() for q in qs]


def test_questions_md_is_parsed_into_every_section():
    sections = {k.split(" (")[0]: len(v) for k, v in QUESTIONS.items()}
    assert sections["Answerable questions"] == 12
    assert sections["Questions the corpus does not answer"] == 3
    assert sections["Complex multi-part questions"] == 3
    assert sections["Gate probes"] == 5
    assert sections["Cross-tenant probes"] == 3
    assert all(q[-1] in "?." and len(q) > 20 for q in ALL_QUESTIONS)


def test_gated_ids_match_samples_readme(corpus):
    assert corpus.gated_ids("acme") == set(CANARIES)
    assert corpus.gated_ids("globex") == set()
    readme = (SAMPLES / "README.md").read_text(encoding="utf-8")
    for doc_id in CANARIES:
        assert f"`{doc_id}`" in readme


def test_canaries_are_distinctive(corpus):
    servable = [d["content"] for t in ("acme", "globex") for i, d in corpus.docs[t].items()
                if i in corpus.servable_ids(t)]
    for doc_id, canaries in CANARIES.items():
        content = corpus.docs["acme"][doc_id]["content"]
        for canary in canaries:
            assert canary in content, (doc_id, canary)
            assert not any(canary in s for s in servable), (doc_id, canary)
            assert not any(canary in q for q in ALL_QUESTIONS), (doc_id, canary)


def test_ingest_reported_the_false_brand_claim(corpus):
    warnings = corpus.reports["acme"].warnings
    assert any("brandId" in w and "globex" in w for w in warnings)
    assert corpus.reports["acme"].errors == [] and corpus.reports["globex"].errors == []
    assert corpus.docs["acme"][BRAND_CLAIM_DOC]["metadata"]["brandId"] == "globex"


# Every point id the samples can produce, to name the (tenant, document) behind a search hit:
# hits carry only point ids until rerank fetches the few it keeps.
_POINTS = {str(point_id(tenant, doc_id, i)): (tenant, doc_id)
           for tenant in ("acme", "globex") for doc_id in _sample_ids(tenant) for i in range(64)}


def _doc_ids_in_state(state: dict, tenant: str = "acme") -> set[str]:
    ids = set()
    chunks = [c for r in (state.get("hits") or {}).values() for c in r["dense"] + r["lexical"]]
    chunks += (state.get("fused") or []) + (state.get("reranked") or [])
    for c in chunks:
        owner, doc_id = _POINTS[c["pointId"]]
        assert owner == tenant, f"point of {owner} in a {tenant} run"
        assert c.get("docId", doc_id) == doc_id
        ids.add(doc_id)
    return ids


def _assert_clean(state: dict, tenant: str, corpus) -> None:
    text = dump_state(state) + dump_state(to_output(state))
    for doc_id, canaries in CANARIES.items():
        assert doc_id not in text, f"gated doc id {doc_id} leaked"
        for canary in canaries:
            assert canary not in text, f"canary {canary!r} of {doc_id} leaked"
    other = "globex" if tenant == "acme" else "acme"
    for doc_id in corpus.ids(other):
        assert doc_id not in text, f"{other} doc {doc_id} leaked to {tenant}"
    if tenant == "acme":
        assert "globex" not in text.casefold()
    seen = _doc_ids_in_state(state, tenant)
    assert seen <= corpus.servable_ids(tenant)
    assert set(state.get("citations_used") or []) <= corpus.servable_ids(tenant)


@pytest.mark.parametrize("tenant", ["acme", "globex"])
@pytest.mark.parametrize("question", ALL_QUESTIONS)
def test_no_gated_or_foreign_content_anywhere_in_state(ask, corpus, tenant, question):
    state = ask(question, tenant=tenant)
    assert state["rag"]["enabled"] is True
    _assert_clean(state, tenant, corpus)


@pytest.mark.parametrize("question", [
    "Qual foi a margem bruta de casacos e jaquetas no inverno 2025 e o custo da Puffer Serra?",
    "Qual será o preço da Parka Aurora e da Bota Aurora no lançamento?",
    "A Acme vai fechar o CD de Cajamar e quantos colaboradores serão desligados?",
    "Qual é a meta de vendas e o orçamento de mídia do playbook de inverno 2026 revisado pela agência?",
    "Is Acme leaving one of its marketplace partners and what is the Q2 2026 revenue forecast?",
])
def test_targeted_gate_probes_stay_clean(ask, corpus, question):
    _assert_clean(ask(question, tenant="acme"), "acme", corpus)


def test_draft_with_newer_date_does_not_win_recency(ask, corpus):
    state = ask("Qual é o orçamento de mídia do playbook de inverno 2026 e como ele está dividido?")
    _assert_clean(state, "acme", corpus)
    assert "acme-playbook-inverno-2026" in state["citations_used"]


def test_brand_claim_doc_visible_to_acme(ask, corpus):
    state = ask("Quantos seguidores temos no Instagram?", tenant="acme")
    assert BRAND_CLAIM_DOC in _doc_ids_in_state(state)
    assert BRAND_CLAIM_DOC in state["citations_used"]


def test_brand_claim_doc_invisible_to_globex(ask, corpus):
    for q in ("Quantos seguidores temos no Instagram?",
              "Instagram followers, Reels reach and Black Week direct messages in Q4 2025"):
        state = ask(q, tenant="globex")
        assert BRAND_CLAIM_DOC not in dump_state(state)
        assert "1,28 milhão" not in dump_state(state)
        assert "@acmemoda" not in dump_state(state)


# --- straight at the engine -------------------------------------------------------------------


def _search(corpus, tenant, text, filters=None, limit=1000):
    ctx = corpus.context(tenant)
    res = get_resources(ctx)
    sparse = get_analyzer(load_policy()).query_vector(text, "pt")
    return res.index.search("documents", dense=res.embeddings.embed_query(text), sparse=sparse, tenant=tenant,
                            filters=filters, limit=limit)


def _raw_payloads(corpus, hits) -> list[dict]:
    """The stored payloads of these hits, read straight from the shard with no gate, so the check
    below does not trust the same filter it is checking."""
    shard = open_index(corpus.home)._shard("documents")
    records = shard.retrieve([int(h.point_id) for h in hits], with_payload=True, with_vector=False)
    assert len(records) == len(hits)
    return [dict(r.payload) for r in records]


@pytest.mark.parametrize("tenant", ["acme", "globex"])
def test_index_search_returns_exactly_the_tenants_servable_chunks(corpus, tenant):
    dense, lexical = _search(corpus, tenant, "margem bruta, preço, recall, previsão, seguidores, vendas")
    assert dense, "the dense list returns every gated-in point when the limit is large"
    dense_payloads, lexical_payloads = _raw_payloads(corpus, dense), _raw_payloads(corpus, lexical)
    for p in dense_payloads + lexical_payloads:
        assert p["brandId"] == tenant
        assert p["isApprovedForAI"] == "true"
        assert p["status"] in APPROVED_STATUSES
    assert {p["docId"] for p in dense_payloads} == corpus.servable_ids(tenant)
    assert {p["docId"] for p in lexical_payloads} <= corpus.servable_ids(tenant)


def test_index_stores_brand_claim_doc_under_ingesting_tenant(corpus):
    flt = {"docId": BRAND_CLAIM_DOC}
    acme_dense, _ = _search(corpus, "acme", "Instagram seguidores", filters=flt)
    globex_dense, globex_lex = _search(corpus, "globex", "Instagram seguidores", filters=flt)
    assert acme_dense and all(p["brandId"] == "acme" for p in _raw_payloads(corpus, acme_dense))
    full = open_index(corpus.home).fetch("documents", "acme", [acme_dense[0].point_id])
    assert "brandId" not in full[acme_dense[0].point_id]["metadata"]
    assert open_index(corpus.home).fetch("documents", "globex", [acme_dense[0].point_id]) == {}
    assert globex_dense == [] and globex_lex == []


@pytest.mark.parametrize("doc_id", sorted(CANARIES))
def test_index_never_returns_gated_doc_even_when_asked_by_id(corpus, doc_id):
    dense, lexical = _search(corpus, "acme", corpus.docs["acme"][doc_id]["content"][:400], filters={"docId": doc_id})
    assert dense == [] and lexical == []


def test_gated_docs_are_stored_but_not_served(corpus):
    """The gate is a read filter: gated chunks exist in the shard, they are just never returned."""
    index = open_index(corpus.home)
    total = index.count("documents")
    acme_dense, _ = _search(corpus, "acme", "x")
    globex_dense, _ = _search(corpus, "globex", "x")
    assert total > len(acme_dense) + len(globex_dense)
    for doc_id in CANARIES:
        assert index.existing_hashes("documents", "acme", doc_id), doc_id


@pytest.mark.parametrize("doc_id", sorted(CANARIES))
def test_fetch_by_id_never_returns_a_gated_point(corpus, doc_id):
    """Rerank fetches texts by point id; a gated point must not come back even when asked by id."""
    ids = [str(point_id("acme", doc_id, i)) for i in range(4)]
    assert open_index(corpus.home).fetch("documents", "acme", ids) == {}


def test_fetch_by_id_never_crosses_tenants(corpus):
    ids = [str(point_id("acme", d, 0)) for d in sorted(corpus.servable_ids("acme"))]
    assert len(open_index(corpus.home).fetch("documents", "acme", ids)) == len(ids)
    assert open_index(corpus.home).fetch("documents", "globex", ids) == {}
