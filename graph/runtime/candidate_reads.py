"""What rerank reads of its candidates from the vector engine: their features (similarity, matched terms, flags), asked once per collection, and their texts, gated again; each collection's rerank settings by its embedding model."""

from __future__ import annotations

from collections.abc import Mapping

from graph.algorithms.text import is_number
from graph.context import Context
from graph.output import failure_reason
from graph.policy import ModelRerankSettings, RerankSettings
from graph.providers.vectorstore import VectorIndex, payload_passes_gates
from graph.runtime.query_vectors import collection_manifest, vectors_by_collection
from graph.runtime.request_reads import read_payloads
from graph.state import OTHER_LANGUAGE_FLAG, Chunk


def model_settings(index: VectorIndex, collections: list[str], cfg: RerankSettings) -> dict[str, ModelRerankSettings]:
    """Each collection's weights and cosine scale: its embedding model's (the manifest names it)."""
    out = {}
    for collection in collections:
        try:
            model = (index.manifest(collection) or {}).get("embedding_model")
        except Exception:  # the engine failed: retrieve has said so; the defaults stand
            model = None
        out[collection] = cfg.for_model(model)
    return out


def engine_features(chunks: list[Chunk], ctx: Context, index: VectorIndex, policy, rag: dict, question: str,
                    question_terms: set[int], boosts: Mapping[str, tuple[float, dict]], problems: list[str],
                    known: dict | None = None) -> bool:
    """Give each candidate `similarity` (cosine to the whole question), `matchedTerms` (the question's
    terms it holds) and `flags` (the `boosts` — rerank's, `Policy.boosts` — and OTHER_LANGUAGE_FLAG whose
    conditions it meets), asked
    of the engine once per collection for every branch's candidates together. The question's vector is
    the one retrieve embedded (never a second model call: a model that failed there is not waited on
    again); without it there is no similarity and no flag. Whether the engine answered for every
    collection: a failure says so in `problems` (the candidates are then ranked by their lists);
    malformed values are ignored, and counted. `known`: this request's earlier answers, by (collection,
    point id): those candidates are not asked again, and the new answers are added."""
    known = {} if known is None else known
    language = rag.get("language", "en")
    boost_flags = {name: condition for name, (_, condition) in boosts.items()}
    other_languages = [lang for lang in policy.languages.markers if lang != language]
    by_collection: dict[str, list[Chunk]] = {}
    for chunk in chunks:
        chunk.update(similarity=0.0, matchedTerms=[], flags=[])
        answered_before = known.get((chunk.get("collection", ""), chunk["pointId"]))
        if answered_before is not None:
            similarity, matched, met = answered_before
            chunk.update(similarity=similarity, matchedTerms=list(matched), flags=list(met))
            continue
        by_collection.setdefault(chunk.get("collection", ""), []).append(chunk)
    # Any reason the question has no vector was given by retrieve, which embedded it.
    vectors = vectors_by_collection(ctx, index, list(by_collection), question, [], cached_only=True)
    terms, malformed, answered = sorted(question_terms), 0, True
    for collection, group in by_collection.items():
        flags = boost_flags
        # The manifest records the language of all the collection's text ("mixed" when several).
        if other_languages and collection_manifest(index, collection).get("language") != language:
            flags = {**boost_flags, OTHER_LANGUAGE_FLAG: {"language": other_languages}}
        try:
            found = index.features(collection, tenant=ctx.tenant, point_ids=[c["pointId"] for c in group],
                                   similarity_to=vectors.get(collection), match_terms=terms, flags=flags)
        except Exception as exc:
            problems.append(f"rerank: the vector engine could not score the candidates against the question "
                            f"({failure_reason(exc)}); ranked by their lists")
            answered = False
            continue
        if not isinstance(found, dict):
            found, malformed = {}, malformed + len(group)
        for chunk in group:
            features = found.get(chunk["pointId"])
            if features is None:
                continue
            similarity = getattr(features, "similarity", None)
            matched, met = getattr(features, "matched_terms", None), getattr(features, "flags", None)
            if similarity is not None and not (is_number(similarity) and -1.0001 <= similarity <= 1.0001):
                similarity, malformed = None, malformed + 1
            # Set tests, not a loop per term: this runs for every candidate of every question.
            if not isinstance(matched, list) or not question_terms.issuperset(matched):
                matched, malformed = [], malformed + 1
            if not isinstance(met, list) or (met and not flags.keys() >= set(met)):
                met, malformed = [], malformed + 1
            chunk.update(similarity=float(similarity or 0.0), matchedTerms=matched, flags=met)
            known[(collection, chunk["pointId"])] = (chunk["similarity"], tuple(matched), tuple(met))
    if malformed:
        problems.append(f"rerank: the vector engine returned {malformed} malformed candidate feature(s) "
                        "(similarity, terms, flags): ignored")
    return answered


def fetch_texts(chunks: list[Chunk], tenant: str, index: VectorIndex, problems: list[str] | None = None,
                known: dict | None = None) -> list[Chunk]:
    """Name each chunk and give it its text and metadata (one engine call per collection, gated);
    a chunk whose payload is gone (re-ingested or re-gated since the search) is dropped, one that
    already has its text keeps it. A payload the engine should not have returned (another tenant's,
    not approved) or cannot have stored (no text, no document id) is dropped too, and counted in
    `problems`: the gates are checked here once more, whatever index answered. `known`: payloads this
    request read before, by (collection, point id): not read again, and the new ones are added."""
    # A chunk fetched already (for a provider reranker) is not read twice.
    payloads = read_payloads(index, tenant, [(c["collection"], c["pointId"]) for c in chunks if "content" not in c],
                             {} if known is None else known)
    out, refused = [], 0
    for c in chunks:
        p = payloads.get(c["pointId"])
        if p is not None and not (isinstance(p, dict) and payload_passes_gates(p, tenant)
                                  and isinstance(p.get("text"), str) and isinstance(p.get("docId"), str) and p["docId"]):
            p, refused = None, refused + 1
        if p is None:
            if "content" in c:
                out.append(c)
            continue
        c.update(id=f"{p.get('docId')}#{p.get('chunk_index', 0)}", docId=p.get("docId", ""),
                 assetId=p.get("assetId") or p.get("docId", ""), assetName=p.get("assetName") or p.get("docId", ""),
                 content=p.get("text", ""),
                 metadata={**(p.get("metadata") or {}), "header": p.get("header", ""), "language": p.get("language")})
        out.append(c)
    if refused and problems is not None:
        problems.append(f"rerank: the vector engine returned {refused} payload(s) that fail the gates or have no "
                        "text / document id: dropped")
    return out
