"""bridge: the name the evidence of a split which/who-question is about, so that each part is searched again
with it (graph/algorithms/bridging.py).

It runs after rerank, once per turn and only for a question split into parts that asks for a name
(`may_bridge`: any other goes from rerank to compose). For such a question ("Which company …", "Who is the
individual …"), it reads the best reranked chunks, takes the name most of their documents give that the
question does not, and the graph then searches each part with that name added (retrieve, kind "bridge"),
fuses every list again (rrf), reranks and goes on to compose. Any other question, none of the chunks naming anything
new, or every part's own search having ranked a chunk that names it first already
(`retrieval.bridge_named_depth`: the parts found its evidence), goes on to compose.
"""

from __future__ import annotations

from langgraph.runtime import Runtime

from graph.algorithms.bridging import bridge_name, named_by_every_part
from graph.algorithms.fusion import fused_ids
from graph.algorithms.question_form import question_form
from graph.algorithms.text import get_analyzer
from graph.context import Context
from graph.output import failure_reason
from graph.policy import run_language
from graph.providers.resources import bounded_index
from graph.runtime.request_reads import read_payloads, request_reads
from graph.runtime.run_policy import run_policy
from graph.runtime.tenant_binding import run_context
from graph.runtime.timing import timed
from graph.state import State, question_parts


def may_bridge(state: State) -> bool:
    """Whether bridge has anything to look at: a question split into parts, not looked at yet this turn, that
    asks for a name (decompose's `asks_for_name`; assumed when not recorded). The rest go from rerank straight
    on (one graph step fewer), and keep `bridge_name` None."""
    return (state.get("bridge_name") is None and len(question_parts(state)) >= 2
            and (state.get("decomposition") or {}).get("asks_for_name", True))


@timed("bridge")
def bridge(state: State, runtime: Runtime[Context]) -> dict:
    """Find the bridging name once per question.

    Reads `question`, `sub_queries`, `reranked` (the first `retrieval.bridge_from_chunks`), `hits` (each
    part's own lists, for their first `retrieval.bridge_named_depth` chunks), `request_id` (the texts this
    request read already) and `rag` (language, policy). Writes `bridge_name`: the name the parts are searched
    again with, or "" when the question asks for none, was not split, the switch is off (the policy's 0, or
    Context.decompose / rerank off), the chunks name nothing new or every part's own best chunks name it
    already; and `errors` when those chunks could not be read (the parts are then searched again). Left as
    it is when already written this turn (the second pass)."""
    if state.get("bridge_name") is not None:
        return {}
    ctx = run_context(runtime)
    rag = state["rag"]
    policy = run_policy(rag, ctx)
    depth = policy.retrieval.bridge_from_chunks
    language = run_language(state, policy)
    if not (depth and ctx.decompose and ctx.rerank and len(question_parts(state)) >= 2):
        return {"bridge_name": ""}
    if not question_form(state["question"], language, policy.languages.question_cues).wants_name:
        return {"bridge_name": ""}
    analyzer = get_analyzer(policy)
    chunks = [(c.get("docId", ""), c.get("content", "")) for c in (state.get("reranked") or [])[:depth]]
    name = bridge_name(state["question"], chunks, lambda token: not analyzer.terms(token, language))
    if not name or not policy.retrieval.bridge_named_depth:
        return {"bridge_name": name or ""}
    try:
        texts = part_lead_texts(state, ctx, policy.retrieval.bridge_named_depth)
    except Exception as exc:  # not knowing, the parts are searched again
        reason = failure_reason(exc)
        return {"bridge_name": name,
                "errors": [f"bridge: the parts' best chunks could not be read ({reason}); each part searched again"]}
    return {"bridge_name": "" if named_by_every_part(name, texts) else name}


def part_lead_texts(state: State, ctx: Context, depth: int) -> list[list[str]]:
    """The texts of the first `depth` chunks of each part's own search (its lists fused), one list per part:
    read from what this request read already (rerank's reads), the rest from the engine (gated)."""
    hits = state.get("hits") or {}
    parts = set(question_parts(state))
    leads: list[list[tuple[str, str]]] = []
    for key in sorted(hits):
        result = hits[key]
        if result.get("kind") != "sub_query" or result.get("sub_query") not in parts:
            continue
        lists = [result.get("dense") or [], result.get("lexical") or []]
        collection_of = {c["pointId"]: c.get("collection", "") for ranked in lists for c in ranked}
        leads.append([(collection_of.get(pid, ""), pid) for pid, _ in fused_ids(lists)[:depth]])
    payloads = read_payloads(bounded_index(ctx), ctx.tenant, [lead for part in leads for lead in part],
                             request_reads(state.get("request_id"), "payloads"))
    return [[str((payloads.get(pid) or {}).get("text") or "") for _, pid in part] for part in leads]
