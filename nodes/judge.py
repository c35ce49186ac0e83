"""judge: score the answer's quality, utility and groundedness (0–1) and decide OK / WARNING / BLOCK.

The deterministic checks always run, whoever composed the answer (graph/algorithms/judging.py). When
an LLM judge is configured (`RAGATE_CHAT_MODEL`, prompts/judge.yaml) its verdict is bounded by the
deterministic one: its groundedness never exceeds it, its decision is never more permissive.
"""

from __future__ import annotations

from string import Template
from typing import Any

from langgraph.constants import TAG_NOSTREAM
from langgraph.runtime import Runtime

from graph.algorithms.answer_reading import cited_texts, verdict_with_reading, yes_no_said
from graph.algorithms.judging import combine_with_llm, deterministic_verdict, parse_llm_verdict
from graph.context import Context
from graph.output import failure_reason
from graph.policy import run_language
from graph.prompts import llm_prompt
from graph.providers.chat import chat_model
from graph.providers.relevance import judge_scorer
from graph.providers.resources import embeddings_for
from graph.providers.specs import ProviderError
from graph.runtime.direct_reading import reader_check
from graph.runtime.run_policy import run_policy
from graph.runtime.tenant_binding import run_context
from graph.runtime.timing import timed
from graph.state import State, Verdict


def llm_verdict(llm: Any, state: State) -> tuple[Verdict | None, list[str]]:
    """Ask the chat model; one repair on an unusable reply; None (and why) when it cannot be used."""
    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage

    prompt = llm_prompt("judge")
    documents = "\n\n".join(f"[{c['docId']}] {c.get('content', '')}" for c in state.get("reranked") or []) or "(none)"
    messages: list[Any] = [
        SystemMessage(prompt["system"]),
        HumanMessage(Template(prompt["user"]).safe_substitute(question=state.get("question", ""), documents=documents,
                                                              answer=state.get("answer", ""))),
    ]
    notes: list[str] = []
    for attempt in (1, 2):
        try:
            # Tagged "nostream": the verdict JSON is not answer text for stream_mode="messages".
            reply = llm.invoke(messages, config={"tags": [TAG_NOSTREAM]})
        except Exception as exc:  # timeouts, 429/5xx after the client's retries, connection errors
            return None, notes + [f"judge: chat model failed ({failure_reason(exc)}); deterministic verdict"]
        try:
            return parse_llm_verdict(reply.content), notes
        except ValueError as exc:
            if attempt == 2:
                return None, notes + [f"judge: chat model verdict unusable after one repair ({exc}); deterministic verdict"]
            notes.append(f"judge: chat model verdict repaired ({exc})")
            messages += [AIMessage(str(reply.content)), HumanMessage(Template(prompt["repair"]).safe_substitute(error=str(exc)))]
    return None, notes


@timed("judge")
def judge(state: State, runtime: Runtime[Context]) -> dict:
    """Score the answer 0–1 on quality, utility and groundedness and decide OK / WARNING / BLOCK.

    Reads `answer`, `reranked` (the text each citation must be supported by), `coverage_level`,
    `language`, `question` and `direct_answer` (what the answer must address and open with),
    `direct_check` (what the reader made of it in compose: a contradicted direct answer is BLOCK; one
    compose did not read is read here), `citations_used` and `rag` (the run's policy). Writes `verdict`
    (scores, reasoning, final_decision, per-claim checks, method) and `errors`."""
    ctx = run_context(runtime)
    try:
        policy = run_policy(state.get("rag"), ctx)
    except Exception as exc:
        # Without a policy there are no thresholds to pass: nothing is vouched for.
        return {"verdict": Verdict(scores={"quality": 0.0, "utility": 0.0, "groundedness": 0.0},
                                   reasoning={"quality": "not judged", "utility": "not judged",
                                              "groundedness": f"policy unavailable: {exc}"},
                                   final_decision="BLOCK" if state.get("citations_used") else "WARNING",
                                   checks=[], method="unavailable")}
    errors: list[str] = []
    try:
        embeddings = embeddings_for(ctx)
    except Exception as exc:  # no semantic rescue for paraphrases, the hard checks still hold
        embeddings = None
        errors.append(f"judge: embeddings unavailable, lexical support only: {exc}")
    try:
        scorer = judge_scorer(policy, run_language(state, policy))
    except ProviderError as exc:  # the cross-encoder's package or files: relevance is judged lexically
        scorer = None
        errors.append(f"judge: relevance model unavailable, lexical relevance only: {exc}")
    try:
        verdict = deterministic_verdict(state, policy, embeddings, scorer)
    except Exception as exc:
        if embeddings is None:
            raise
        # The embedder is asked only to rescue a paraphrase; when it fails (a remote provider timing
        # out, garbage vectors), the claims are judged on their lexical support, and that is said.
        errors.append(f"judge: embeddings unavailable, lexical support only: {failure_reason(exc)}")
        verdict = deterministic_verdict(state, policy, None, scorer)
    try:
        llm = chat_model(ctx)
    except ProviderError as exc:
        llm = None
        errors.append(f"judge: {exc}; deterministic verdict")
    if llm is not None:
        llm_result, notes = llm_verdict(llm, state)
        errors += notes
        if llm_result is not None:
            verdict = combine_with_llm(verdict, llm_result, policy.judge.thresholds)
    # The direct answer is read, not only matched: one the reader contradicts is blocked. Compose has read the
    # one it gave; one it did not read (a judge called on its own) is read here, in the chunks it cites.
    check = state.get("direct_check")
    direct = state.get("direct_answer")
    if direct and not check:
        language = run_language(state, policy)
        check = reader_check(state.get("question") or "", direct, yes_no_said(direct, language),
                             cited_texts(state.get("answer") or "", state.get("reranked") or []), policy,
                             errors).as_record()
    verdict = verdict_with_reading(verdict, check, direct, policy.judge.invented_value_groundedness)
    return {"verdict": verdict, **({"errors": errors} if errors else {})}
