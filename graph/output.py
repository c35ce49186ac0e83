"""The output contract: what `ragate ask --json`, the HTTP API and Python callers receive."""

from __future__ import annotations

import re
from typing import Any

from graph.state import Chunk, State

SNIPPET_CHARS = 240
SOURCE_METADATA = ("docType", "sourceUrl", "pageNumber", "category", "status", "date", "version", "language")


def failure_reason(exc: BaseException) -> str:
    """How a failed provider call is told in `errors`: the exception's type and the start of its message."""
    return f"{type(exc).__name__}: {str(exc)[:200]}"


def snippet(text: str, limit: int = SNIPPET_CHARS) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rsplit(" ", 1)[0] + "…"


def _rounded(value: Any) -> Any:
    return round(value, 4) if isinstance(value, float) else value


def source_of(chunk: Chunk) -> dict[str, Any]:
    """A retrieved chunk without its full content, with the breakdown of why it ranked where it did."""
    meta = chunk.get("metadata") or {}
    return {
        "id": chunk["id"],
        "docId": chunk["docId"],
        "assetId": chunk.get("assetId"),
        "assetName": chunk.get("assetName"),
        "similarity": _rounded(chunk.get("similarity")),
        "rerankScore": _rounded(chunk.get("rerankScore")),
        "rank": chunk.get("rank"),
        "metadata": {k: meta[k] for k in SOURCE_METADATA if meta.get(k) not in (None, "")},
        "snippet": snippet(chunk.get("content", "")),
        "scores": {k: _rounded(v) for k, v in (chunk.get("scores") or {}).items()},
    }


# A broken policy's reason, as route_gate records it: graph/policy.py's "policy <file>: <problem>".
_BROKEN_POLICY = re.compile(r"\bpolicy (?P<path>.+?): ")


def _file_name(path: str) -> str:
    return re.split(r"[\\/]", path)[-1]


def _hide(value: Any, path: str) -> Any:
    if isinstance(value, str):
        return value.replace(path, _file_name(path))
    if isinstance(value, dict):
        return {k: _hide(v, path) for k, v in value.items()}
    if isinstance(value, list):
        return [_hide(v, path) for v in value]
    return value


def without_server_paths(output: dict[str, Any]) -> dict[str, Any]:
    """The contract without the server's policy file path: a caller of any tenant gets it, and where the
    server keeps its files is none of theirs (the policy's `version` and `digest` say which policy
    answered; the request record keeps the path for the operator). A broken policy is named by its
    file name in the reason (rag.error, errors, the verdict's reasoning)."""
    rag = output.get("rag") or {}
    if isinstance(rag.get("policy"), dict) and "path" in rag["policy"]:
        rag = {**rag, "policy": {k: v for k, v in rag["policy"].items() if k != "path"}}
        output = {**output, "rag": rag}
    broken = _BROKEN_POLICY.search(rag.get("error") or "") if rag.get("disabled_reason") == "policy_invalid" else None
    if broken and broken["path"] != _file_name(broken["path"]):
        output = _hide(output, broken["path"])
    return output


def to_output(state: State) -> dict[str, Any]:
    verdict = state.get("verdict") or {}
    return without_server_paths({
        "request_id": state.get("request_id"),
        "correlation_id": (state.get("rag") or {}).get("correlation_id"),
        "answer": state.get("answer", ""),
        "direct_answer": state.get("direct_answer"),
        "citations_used": state.get("citations_used", []),
        "coverage_level": state.get("coverage_level", "none"),
        "suggestions": state.get("suggestions", []),
        "verdict": {
            "final_decision": verdict.get("final_decision"),
            "scores": verdict.get("scores", {}),
            "reasoning": verdict.get("reasoning", {}),
            "checks": verdict.get("checks", []),
        },
        "rag": state.get("rag", {}),
        "sub_queries": state.get("sub_queries", []),
        "decomposition": state.get("decomposition", {}),
        "sources": [source_of(c) for c in state.get("reranked") or []],
        "memory": state.get("memory", {}),
        "timings_ms": state.get("timings_ms", {}),
        "errors": state.get("errors", []),
        "language": state.get("language"),
    })


def answer_report(out: dict[str, Any], *, with_direct: bool = False) -> str:
    """The output contract as a person reads it: the answer (unless `out["answer"]` is None: already shown as it
    streamed), then its coverage and verdict, the direct answer (`with_direct`) and why one was withheld, the
    documents cited, the suggestions, a note when retrieval was off, and the request id. `ragate ask` prints it;
    the LangServe playground shows it."""
    lines = [out["answer"], ""] if out.get("answer") is not None else []
    verdict = out.get("verdict") or {}
    scores = ", ".join(f"{k} {v:.2f}" for k, v in (verdict.get("scores") or {}).items())
    lines.append(f"coverage: {out.get('coverage_level')} · verdict: {verdict.get('final_decision')} ({scores})")
    if with_direct:
        why = (verdict.get("reasoning") or {}).get("direct_answer")
        lines.append(f"direct answer: {out.get('direct_answer') or 'none'}" + (f" ({why})" if why else ""))
    if out.get("citations_used"):
        lines.append("citations: " + ", ".join(out["citations_used"]))
    lines += [f"  suggestion: {s}" for s in out.get("suggestions") or []]
    if (out.get("rag") or {}).get("error"):
        lines.append(f"note: {out['rag']['error']}")
    lines.append(f"request id: {out.get('request_id')}"
                 + (f" (correlation id {out['correlation_id']})" if out.get("correlation_id") else ""))
    return "\n".join(lines)
