"""retrieve: one branch per sub-query (fanned out with `Send`, run in parallel).

Each branch asks the vector engine for two ranked lists, dense and lexical (BM25), with the
governance gates evaluated inside the engine: the caller's tenant, approved for AI, status
ready/approved, plus the filters of an intent the caller named (an inferred intent's only rank, in
rerank); a part of a split question over a collection in its own language gets the lexical list only
(`retrieval.part_vectors`). A "performance" branch searches the tenant's performance chunks (whose
`performance_snapshot` was rendered into their text at ingest). A "bridge" branch is a part searched
again with the name its question's best chunks give (nodes/bridge.py, `fan_out_bridge`).

Hits are light: point ids and scores. What rerank scores the candidates by (their similarity to the
whole question, which of its terms they hold) it asks the engine once for all branches' candidates;
texts and metadata it fetches for the few chunks that can still be kept.

When the embedder fails (a remote provider timing out or erroring, or vectors of another dimension
than the collection's), the branch still searches the lexical list, which needs no model, and records
why in `errors`: fewer good answers, not none. So with the other parts of a branch: a failed lookup of
the values a question names leaves its searches unscoped, a failed scoped search leaves the main one,
and hits the engine returns malformed (no id, a score that is not a finite number) are dropped; each
is recorded. Engine reads are held to the provider timeout wherever one can be (`bounded_index`). A process that cannot
open the embedded engine at all (its data folder is held by another process: `DataFolderBusy`) is not a
degradation: the run stops with that error rather than answering from nothing.
"""

from __future__ import annotations

from langgraph.runtime import Runtime
from langgraph.types import Send

from graph.algorithms.scoping import mentioned_filters, scope_to_mentions, unheld_sources
from graph.algorithms.text import get_analyzer, is_number
from graph.context import Context
from graph.output import failure_reason
from graph.policy import run_language
from graph.providers.resources import bounded_index, get_resources
from graph.providers.vectorstore import DataFolderBusy, SearchHit, TenantRequiredError
from graph.runtime.query_vectors import collection_manifest, vectors_by_collection
from graph.runtime.run_policy import run_policy
from graph.runtime.tenant_binding import run_context
from graph.runtime.timing import timed
from graph.state import Chunk, RetrieveTask, SearchResult, State, question_parts


def fan_out(state: State) -> list[Send]:
    """One `Send` per sub-query, plus one performance search when the policy asks for it."""
    rag = state["rag"]
    queries = list(state.get("sub_queries") or [state["question"]])
    if state["question"] not in queries:
        # A split question is searched whole too: sub-queries find each part's evidence, the whole
        # question keeps the chunks that answer it at once (and the parts a fragment lost).
        queries.insert(0, state["question"])
    tasks = [Send("retrieve", RetrieveTask(question=state["question"], sub_query=q, index=i, kind="sub_query", rag=rag))
             for i, q in enumerate(queries)]
    if rag.get("performance_injection"):
        tasks.append(Send("retrieve", RetrieveTask(question=state["question"], sub_query=state["question"],
                                                   index=len(tasks), kind="performance", rag=rag)))
    return tasks


def fan_out_bridge(state: State) -> list[Send]:
    """One `Send` per part of the question, the part followed by the bridging name (nodes/bridge.py); none
    when there is no name, or the parts were searched with it already."""
    name = state.get("bridge_name")
    if not name or any(r.get("kind") == "bridge" for r in (state.get("hits") or {}).values()):
        return []
    first = len(state.get("hits") or {})  # keys after the first round's: retrieve[first], ...
    return [Send("retrieve", RetrieveTask(question=state["question"], sub_query=f"{part} {name}", index=first + i,
                                          kind="bridge", rag=state["rag"]))
            for i, part in enumerate(question_parts(state))]


def to_chunk(hit: SearchHit, collection: str) -> Chunk:
    """A hit as a chunk of the state: identity and list score only; rerank adds the rest."""
    return Chunk(
        id=hit.point_id,  # until rerank fetches it and names it "<docId>#<chunk index>"
        pointId=hit.point_id,
        collection=collection,
        scores={"engine": hit.score, "list_rank": hit.rank},
    )


def well_formed(hits, problems: list[str]) -> list[SearchHit]:
    """The hits a ranking can use: an id and a finite score. What was dropped is added to `problems`."""
    if not isinstance(hits, (list, tuple)):
        problems.append(f"the vector engine returned {type(hits).__name__} instead of a list of hits")
        return []
    kept, dropped = [], 0
    for hit in hits:
        pid, score = getattr(hit, "point_id", None), getattr(hit, "score", None)
        if type(pid) is str and pid and is_number(score):
            kept.append(hit)  # the engine's own hits take this path: no copy
            continue
        if isinstance(pid, int) and not isinstance(pid, bool):
            pid = str(pid)
        if not isinstance(pid, str) or not pid or not is_number(score):
            dropped += 1
            continue
        kept.append(SearchHit(point_id=pid, score=float(score), rank=len(kept) + 1))
    if dropped:
        problems.append(f"the vector engine returned {dropped} malformed hit(s) (no id or no finite score): dropped")
    return kept


def merge_lists(per_collection: list[tuple[str, list[SearchHit]]], limit: int) -> list[Chunk]:
    """One ranked list from several collections (scores of one list type are comparable)."""
    merged = sorted(((h, c) for c, hits in per_collection for h in hits), key=lambda hc: -hc[0].score)[:limit]
    chunks = []
    for rank, (hit, coll) in enumerate(merged, start=1):
        chunk = to_chunk(hit, coll)
        chunk["scores"]["list_rank"] = rank
        chunks.append(chunk)
    return chunks


_RANGE_SIGNS = {"gte": ">=", "gt": ">", "lte": "<=", "lt": "<"}


def filter_label(filters: dict) -> str:
    """A scoped search's name in `hits`: "source=TechCrunch,date=>=2023-10-17 <=2023-10-19" (distinct
    filters, distinct names: "before" and "after" the same day are two searches)."""
    return ",".join(f"{k}={' '.join(_RANGE_SIGNS[op] + d for op, d in v.items()) if isinstance(v, dict) else v}"
                    for k, v in filters.items())


def _task_key(task: RetrieveTask) -> str:
    return f"retrieve[{task['index']}]"


def _search(ctx: Context, index, rag: dict, *, vectors: dict[str, list[float] | None], sparse, filters, limit: int,
            kind: str, sub_query: str, problems: list[str]) -> SearchResult:
    """One search (every collection of the route): the dense and the lexical list, as the mode keeps them.
    `vectors`: each collection's vector to search the dense list with (None: lexical only). Malformed hits
    are dropped, and said so in `problems`."""
    dense_lists, lexical_lists = [], []
    for collection in rag["collections"]:
        found = index.search(collection, dense=vectors.get(collection), sparse=sparse, tenant=ctx.tenant,
                             filters=filters, limit=limit)
        dense, lexical = found if isinstance(found, (list, tuple)) and len(found) == 2 else ([], found)
        dense_lists.append((collection, well_formed(dense, problems)))
        lexical_lists.append((collection, well_formed(lexical, problems)))
    result = SearchResult(sub_query=sub_query, kind=kind, dense=[], lexical=[])
    # Both lists are always searched (one engine call); the mode decides which ones count.
    if ctx.retrieval_mode != "lexical":
        result["dense"] = merge_lists(dense_lists, limit)
    if ctx.retrieval_mode != "dense":
        result["lexical"] = merge_lists(lexical_lists, limit)
    return result


@timed(_task_key)
def retrieve(task: RetrieveTask, runtime: Runtime[Context]) -> dict:
    """One branch: the dense and the lexical list for one sub-query, gated inside the engine.

    Reads the `Send` payload `task` (question, sub_query, index, kind, rag), not the state. Writes
    `hits` (this branch's lists, keyed `retrieve[i]`, plus one per scoped search the first branch
    runs), `scoped_queries`, `sources_named` and `sources_unheld` (first branch only) and `errors`
    (degradations: lexical-only search, unscoped search, malformed hits)."""
    ctx = run_context(runtime)
    rag = task["rag"]
    key = _task_key(task)
    results: dict[str, SearchResult] = {}
    update: dict = {}
    problems: list[str] = []
    try:
        policy = run_policy(rag, ctx)
        language = run_language(task, policy)
        index = bounded_index(ctx, get_resources(ctx).index)
        analyzer = get_analyzer(policy)
        filters = dict(rag.get("filters") or {})
        if task["kind"] == "performance":
            filters = {"docType": policy.retrieval.performance_doc_type}
        is_part = task["kind"] in ("sub_query", "bridge") and task["sub_query"] != task["question"]
        if is_part and ctx.decompose:
            # A part of a split question that names a source ("... reported by TechCrunch") is
            # searched within it: that is where its evidence is.
            filters.update(_mentions(mentioned_filters, task["sub_query"], policy, rag, ctx.tenant, index, problems) or {})
        # Each branch embeds only its own text: the parts of a split question at the same time (a local model
        # runs one call per core), the whole question in its own branch. A part is searched by its words
        # alone where they can match the collection's (`retrieval.part_vectors`).
        if is_part and not part_needs_vector(policy.retrieval.part_vectors, language, _languages(index, rag)):
            vectors = {collection: None for collection in rag["collections"]}
        else:
            vectors = vectors_by_collection(ctx, index, rag["collections"], task["sub_query"], problems)
        limit = int(rag["profile"]["k"])
        results[key] = _search(ctx, index, rag, vectors=vectors, sparse=analyzer.query_vector(task["sub_query"], language),
                               filters=filters, limit=limit, kind=task["kind"], sub_query=task["sub_query"],
                               problems=problems)
        if task["index"] == 0 and task["kind"] == "sub_query":
            # Which sources the question names that the caller holds nothing from (compose says so).
            checked = _mentions(lambda q, *a: unheld_sources(q, language, *a), task["question"], policy, rag,
                                ctx.tenant, index, problems)
            if checked is not None:
                update["sources_named"], update["sources_unheld"] = checked
            if ctx.decompose:
                # Sources the question names each get a search restricted to them, here in the first
                # branch rather than in a node of their own (no extra step for the many questions that
                # name none).
                scoped = _mentions(scope_to_mentions, task["question"], policy, rag, ctx.tenant, index, problems) or []
                update["scoped_queries"] = scoped
                if scoped and task["sub_query"] != task["question"]:
                    vectors = vectors_by_collection(ctx, index, rag["collections"], task["question"], problems)
                for s in scoped:
                    label = f"{key}:{filter_label(s['filters'])}"
                    try:
                        # Searched by meaning with the whole question's vector, by words with the scoped query.
                        results[label] = _search(
                            ctx, index, rag, vectors=vectors, sparse=analyzer.query_vector(s["query"], language),
                            filters={**filters, **s["filters"]}, limit=limit, kind="scoped", sub_query=s["query"],
                            problems=problems)
                    except Exception as exc:  # the main search stands; this one is recorded
                        results[label] = SearchResult(sub_query=s["query"], kind="scoped", dense=[], lexical=[],
                                                      error=f"{type(exc).__name__}: {exc}")
    except DataFolderBusy:
        raise  # this process cannot open the engine at all: the run stops, it never answers from nothing
    except TenantRequiredError as exc:
        results[key] = SearchResult(sub_query=task["sub_query"], kind=task["kind"], dense=[], lexical=[], error=str(exc))
    except Exception as exc:  # the engine or the embedder failed: record it, let the graph finish
        results[key] = SearchResult(sub_query=task["sub_query"], kind=task["kind"], dense=[], lexical=[],
                                    error=f"{type(exc).__name__}: {exc}")
    update["hits"] = results
    errors = [f"{key}: {p}" for p in dict.fromkeys(problems)]
    errors += [f"{k} ({r['sub_query']!r}): {r['error']}" for k, r in results.items() if "error" in r]
    if errors:
        update["errors"] = errors
    return update


def part_needs_vector(setting: str, language: str, collection_languages: list[str | None]) -> bool:
    """Whether a part of a split question is searched by meaning too (`retrieval.part_vectors`): always,
    never, or under "auto" when some collection is in another language than the question, or in several
    ("mixed"), or says none: there its words may not match the documents'."""
    if setting != "auto":
        return setting == "always"
    return any(lang != language for lang in collection_languages)


def _languages(index, rag: dict) -> list[str | None]:
    """The language each collection of the route records in its manifest (None: unknown)."""
    return [collection_manifest(index, collection).get("language") for collection in rag["collections"]]


def _mentions(find, text: str, policy, rag: dict, tenant: str | None, index, problems: list[str]):
    """`find(text, ...)` (the filters or scoped searches for the values `text` names), or None, with the
    reason in `problems`, when the engine cannot list the values: the searches go unscoped."""
    try:
        return find(text, policy, rag, tenant, index)
    except TenantRequiredError:
        raise
    except Exception as exc:
        problems.append(f"values the question names unavailable ({failure_reason(exc)}); searched unscoped")
        return None
