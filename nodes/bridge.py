"""bridge: the name the evidence of a split which/who-question is about, so that each part is searched again
with it (graph/algorithms/bridging.py).

It runs after rerank, once per turn and only for a question split into parts (`may_bridge`: any other goes
from rerank to compose). For a question that asks for a name ("Which company …", "Who is the individual …"),
it reads the best reranked chunks, takes the name most of their documents give that the question does not,
and the graph then searches each part with that name added (retrieve, kind "bridge"), fuses every list
again (rrf), reranks and goes on to compose. Any other question, or none of the chunks naming anything
new, goes on to compose.
"""

from __future__ import annotations

from langgraph.runtime import Runtime

from graph.algorithms.bridging import bridge_name
from graph.algorithms.question_form import question_form
from graph.algorithms.text import get_analyzer
from graph.context import Context
from graph.runtime.run_policy import run_policy
from graph.runtime.tenant_binding import run_context
from graph.runtime.timing import timed
from graph.state import State, question_parts


def may_bridge(state: State) -> bool:
    """Whether bridge has anything to look at: a question split into parts, not looked at yet this turn.
    The rest go from rerank straight on (one graph step fewer), and keep `bridge_name` None."""
    return state.get("bridge_name") is None and len(question_parts(state)) >= 2


@timed("bridge")
def bridge(state: State, runtime: Runtime[Context]) -> dict:
    """Find the bridging name once per question.

    Reads `question`, `sub_queries`, `reranked` (the first `retrieval.bridge_from_chunks`) and `rag`
    (language, policy). Writes `bridge_name`: the name, or "" when the question asks for none, was not split,
    the switch is off (the policy's 0, or Context.decompose / rerank off) or the chunks name nothing new.
    Left as it is when already written this turn (the second pass)."""
    if state.get("bridge_name") is not None:
        return {}
    ctx = run_context(runtime)
    rag = state["rag"]
    policy = run_policy(rag, ctx)
    depth = policy.retrieval.bridge_from_chunks
    language = rag.get("language", "en")
    if not (depth and ctx.decompose and ctx.rerank and len(question_parts(state)) >= 2):
        return {"bridge_name": ""}
    if not question_form(state["question"], language, policy.languages.question_cues).wants_name:
        return {"bridge_name": ""}
    analyzer = get_analyzer(policy)
    chunks = [(c.get("docId", ""), c.get("content", "")) for c in (state.get("reranked") or [])[:depth]]
    name = bridge_name(state["question"], chunks, lambda token: not analyzer.terms(token, language))
    return {"bridge_name": name or ""}
